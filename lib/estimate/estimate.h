/* SPDX-License-Identifier: MIT */
/* The estimate handle: the top of the estimator. It resolves the model and
 * the setup, computes the statics (cached per model and setup), walks the
 * step and keeps the results. */
#ifndef LLMEM_ESTIMATE_ESTIMATE_H
#define LLMEM_ESTIMATE_ESTIMATE_H

#include "estimate/results.h"
#include "estimate/shard.h"
#include "estimate/walk.h"
#include "llmem.h"
#include "model/model.h"
#include "train/setup.h"

struct llmem_estimate {
    llmem_ctx *ctx;
    int valid;
    est_results r;                    /* the most loaded rank's: what the 0.1 getters read */
    size_t nranks, peak_rank;
    est_results rank[RANKS_MAX];      /* ranks whose memory differs */
    rank_class rank_class[RANKS_MAX];
    uint64_t rank_host[RANKS_MAX];
    step_static rank_static[RANKS_MAX]; /* what each rank held: the timeline's terms */
    walk_trace *trace;                /* NULL unless llmem_estimate_timeline() */
    trace_point *trace_room;          /* RANKS_MAX x trace->cap points */
    size_t trace_count[RANKS_MAX], trace_peak[RANKS_MAX];
    uint64_t end_of_backward;         /* live bytes the walk ends backward with (white-box check) */
    walk_scratch walk;                /* reused by every run: no allocation */
    model_shape key_shape;            /* the cache's key: model, setup but batch and seq, layout */
    setup key_setup;
    layout key_layout;
    int key_shares_valid;             /* the key's ranks' shares are below */
    rank_share key_share[RANKS_MAX];
    uint64_t key_overhead[RANKS_MAX];
    uint64_t key_trainable;
};

#endif
