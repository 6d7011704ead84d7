/* SPDX-License-Identifier: MIT */
/*
 * The optimizers as data: one row an optimizer, saying what it keeps per
 * parameter, how its states are allocated, what its step holds for a moment
 * under each implementation (fused, foreach, forloop), and the source
 * article's multiple. The estimator's optimizer term (lib/estimate/optimizer.c)
 * and the allocator model read only these rows. The optimizers' names table
 * also accepts the Hugging Face Trainer's `optim` names, some of which say
 * which implementation runs.
 */
#ifndef LLMEM_TRAIN_OPTIMIZERS_H
#define LLMEM_TRAIN_OPTIMIZERS_H

#include "core/names.h"
#include "llmem.h"

/* How the states of one trainable tensor are sized. */
enum state_rule {
    STATES_LIKE_PARAM = 1, /* `states` tensors of the parameter's shape and dtype (torch) */
    STATES_FACTORED,       /* fp32 row and column second moments of matrices (Adafactor) */
    STATES_BLOCKWISE_8BIT, /* `states` 8-bit states with an fp32 absmax per block (bitsandbytes) */
    STATES_FP32            /* `states` fp32 tensors of the parameter's shape */
};

/* What optimizer.step() holds besides weights, gradients and states. */
enum step_rule {
    STEP_IN_PLACE = 1,   /* in-place updates, or one fused kernel */
    STEP_FOREACH_SQRT,   /* torch foreach Adam(W): the sqrt of a group's second moments */
    STEP_CLONE_AND_ADD,  /* lion-pytorch: a clone and an out-of-place add of one tensor */
    STEP_FACTORED_FP32,  /* Adafactor: two fp32 tensors of the largest parameter */
    STEP_FORLOOP_DENOM   /* torch forloop Adam(W): a parameter's sqrt and quotient while the
                          * previous parameter's denominator is still bound */
};

/* Implementations, indexed by llmem_optimizer_impl (0 unused). */
#define OPTIMIZER_IMPLS (LLMEM_OPTIMIZER_IMPL_FORLOOP + 1)

typedef struct optimizer_desc {
    name_value id;          /* first member: the optimizers' name table steps over rows */
    int state_rule;
    int states;             /* state tensors a parameter gets */
    int paged;              /* states in CUDA unified memory: device level only */
    int step_rule[OPTIMIZER_IMPLS]; /* by llmem_optimizer_impl */
    int step_counter;       /* keeps state['step'] per parameter, a 0-dim fp32 tensor on the
                             * GPU when fused (on the host otherwise) */
    double article_multiple;/* the article's m_os as a multiple of m_p ... */
    double article_bytes;   /* ... or as bytes per parameter (fixed-size states) */
} optimizer_desc;

/* Row of an llmem_optimizer value, or NULL. */
const optimizer_desc *llmem_optimizer(int optimizer);
/* The implementation a Trainer optim name runs ("adamw_torch": foreach), or 0
 * for a name that implies none (our own names among them). */
int llmem_optimizer_implied_impl(const char *name);

/* Our names, then the Trainer's. */
extern const name_table llmem_names_optimizer;

#endif
