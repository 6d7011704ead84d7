/* SPDX-License-Identifier: MIT */
/*
 * The optimizers as data: one row an optimizer, saying what it keeps per
 * parameter, how its states are allocated, what its step holds for a moment,
 * and the source article's multiple. The estimator's optimizer term
 * (lib/estimate/optimizer.c) and the allocator model read only these rows.
 */
#ifndef LLMEM_TRAIN_OPTIMIZERS_H
#define LLMEM_TRAIN_OPTIMIZERS_H

#include "core/names.h"

/* How the states of one trainable tensor are sized. */
enum state_rule {
    STATES_LIKE_PARAM = 1, /* `states` tensors of the parameter's shape and dtype (torch) */
    STATES_FACTORED,       /* fp32 row and column second moments of matrices (Adafactor) */
    STATES_BLOCKWISE_8BIT, /* two 8-bit states with an fp32 absmax per block (bitsandbytes) */
    STATES_FP32            /* `states` fp32 tensors of the parameter's shape */
};

/* What optimizer.step() holds besides weights, gradients and states. */
enum step_rule {
    STEP_IN_PLACE = 1,   /* in-place updates, or one fused kernel */
    STEP_FOREACH_SQRT,   /* torch foreach Adam(W): the sqrt of a group's second moments */
    STEP_CLONE_AND_ADD,  /* lion-pytorch: a clone and an out-of-place add of one tensor */
    STEP_FACTORED_FP32   /* Adafactor: two fp32 tensors of the largest parameter */
};

typedef struct optimizer_desc {
    name_value id;          /* first member: the optimizers' name table steps over rows */
    int state_rule;
    int states;             /* state tensors a parameter gets */
    int paged;              /* states in CUDA unified memory: device level only */
    int step_rule;
    double article_multiple;/* the article's m_os as a multiple of m_p ... */
    double article_bytes;   /* ... or as bytes per parameter (fixed-size states) */
} optimizer_desc;

/* Row of an llmem_optimizer value, or NULL. */
const optimizer_desc *llmem_optimizer(int optimizer);

extern const name_table llmem_names_optimizer;

#endif
