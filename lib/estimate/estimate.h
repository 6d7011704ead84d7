/* SPDX-License-Identifier: MIT */
#ifndef LLMEM_ESTIMATE_ESTIMATE_H
#define LLMEM_ESTIMATE_ESTIMATE_H

#include "estimate/cache.h"
#include "estimate/graph.h"
#include "llmem.h"
#include "model/model.h"
#include "train/train.h"

#define TERM_COUNT 4
#define TERM_MAX_COMPONENTS 6
#define PHASE_COUNT 4

struct llmem_term {
    int kind;
    uint64_t at_peak;
    uint64_t max;
    size_t ncomp;
    const char *comp_name[TERM_MAX_COMPONENTS];
    uint64_t comp_bytes[TERM_MAX_COMPONENTS];
};

/* The training setup, resolved into what the estimators read. */
typedef struct setup {
    uint64_t batch, seq;
    int precision, optimizer, method, grad_ckpt, attention, loss, formula;
    double dropout;
    uint64_t lora_rank, frozen_layers, grad_accum;
    unsigned lora_targets;
    int param_dt, compute_dt, autocast;
} setup;

/* Static memory of the step: weights, optimizer states, batch, gradients. */
typedef struct step_static {
    uint64_t weights, quant_constants, adapters, buffers;
    uint64_t grads, states, batch;
    uint64_t paged_states;    /* bitsandbytes paged states: unified memory, device level only */
    uint64_t optimizer_step;  /* transient of optimizer.step() */
    uint64_t trainable;       /* parameters that train */
    uint64_t param_tensors;   /* tensors of weights (allocator rounding) */
} step_static;

/* What a run produces; a failed run restores the previous one. */
typedef struct est_results {
    uint64_t params_total, params_trainable, params_active;
    uint64_t peak_allocated, peak_reserved, peak_device;
    int peak_phase;                   /* 0 in article mode: the terms are summed */
    uint64_t phase_peak[PHASE_COUNT]; /* indexed by llmem_phase - 1 */
    struct llmem_term term[TERM_COUNT];
} est_results;

struct llmem_estimate {
    llmem_ctx *ctx;
    int valid;
    est_results r;
    uint64_t end_of_backward;         /* live bytes the walk ends backward with (white-box check) */
    int graph_overflow;               /* a segment did not fit the scratch graph: a bug */
    graph scratch;                    /* reused by every run: no allocation */
    model_shape key_shape;            /* the cache's key: model and setup but batch and seq */
    setup key_setup;
    int key_static_valid;             /* key_static and key_overhead hold the key's values */
    step_static key_static;
    uint64_t key_overhead;
    seg_cache cache;
};



int setup_resolve(const llmem_train *t, const model_shape *m, llmem_ctx *ctx, setup *s);

/* The four term estimators (parameters and optimizer: see tensors.h). */
uint64_t data_term(const setup *s);
/* Temporaries: walks the phases of a step; fills the estimate's peaks and terms. */
void temporaries_term(llmem_estimate *e, const model_shape *m, const setup *s,
                      const step_static *st);

/* The source article's sum (LLMEM_FORMULA_ARTICLE). */
int article_estimate(llmem_estimate *e, const model_params *p, const llmem_train *t,
                     const setup *s);

/* Device level: reserved bytes, the CUDA context, and paged optimizer states
 * (the reserved overhead: see tensors.h). */
uint64_t allocator_device(uint64_t reserved, uint64_t paged);

void term_set(struct llmem_term *t, int kind, uint64_t at_peak, uint64_t max);
void term_add(struct llmem_term *t, const char *name, uint64_t bytes);

#endif
