/* SPDX-License-Identifier: MIT */
#ifndef LLMEM_TRAIN_TRAIN_H
#define LLMEM_TRAIN_TRAIN_H

#include "llmem.h"

#include <stdint.h>

/* One past the largest llmem_train_key. */
#define TRAIN_KEY_END 17

struct llmem_train {
    llmem_ctx *ctx;
    int64_t i[TRAIN_KEY_END]; /* integer and enumerated fields */
    double d[TRAIN_KEY_END];  /* real fields */
};

#endif
