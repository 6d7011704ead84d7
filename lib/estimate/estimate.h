/* SPDX-License-Identifier: MIT */
/* The estimate handle: the top of the estimator. It resolves the model and
 * the setup, computes the statics (cached per model and setup), walks the
 * step and keeps the results. */
#ifndef LLMEM_ESTIMATE_ESTIMATE_H
#define LLMEM_ESTIMATE_ESTIMATE_H

#include "estimate/results.h"
#include "estimate/walk.h"
#include "llmem.h"
#include "model/model.h"
#include "train/setup.h"

struct llmem_estimate {
    llmem_ctx *ctx;
    int valid;
    est_results r;
    uint64_t end_of_backward;         /* live bytes the walk ends backward with (white-box check) */
    walk_scratch walk;                /* reused by every run: no allocation */
    model_shape key_shape;            /* the cache's key: model and setup but batch and seq */
    setup key_setup;
    int key_static_valid;             /* key_static and key_overhead hold the key's values */
    step_static key_static;
    uint64_t key_overhead;
};

#endif
