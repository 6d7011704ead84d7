/* SPDX-License-Identifier: MIT */
/* A training setup resolved against a model: what the estimators read. */
#ifndef LLMEM_TRAIN_SETUP_H
#define LLMEM_TRAIN_SETUP_H

#include "llmem.h"
#include "model/model.h"

#include <stdint.h>

typedef struct setup {
    uint64_t batch, seq;
    int precision, optimizer, method, attention, loss, formula;
    int grad_ckpt;      /* NONE, REENTRANT or NON_REENTRANT: "full" resolved to what
                         * transformers does by default (non-reentrant) */
    int optimizer_impl; /* llmem_optimizer_impl */
    int experts;        /* llmem_experts_impl: how routed experts run */
    /* The probability at each kind of dropout site: the setup's dropout when
     * set, else the model's (model/dropout.h). */
    double dropout[DROPOUT_SITES];
    double lora_dropout;
    uint64_t lora_rank, frozen_layers, grad_accum;
    unsigned lora_targets;
    int param_dt, compute_dt, autocast; /* from the precision's row */
    /* The GPU's architecture (LLMEM_TRAIN_GPU, else the default's): the
     * cuBLAS workspace the reserved level counts, the CUDA context the
     * device level adds. */
    uint64_t cublas_workspace, cuda_context;
} setup;

/* What trains beside the decoder layers, which the tensor list
 * (estimate/tensors.c) and the walk (estimate/walk.c) must agree on: full
 * fine-tuning trains all of it; frozen-layer fine-tuning freezes the
 * embeddings (a tied head goes with them) and trains the final norm and an
 * untied head; the adapters' methods train none of it. */
static inline int llmem_setup_embedding_trains(const setup *s)
{
    return s->method == LLMEM_METHOD_FULL;
}

static inline int llmem_setup_head_trains(const setup *s, const model_shape *m)
{
    return s->method == LLMEM_METHOD_FULL || (s->method == LLMEM_METHOD_FREEZE && !m->tie);
}

static inline int llmem_setup_final_norm_trains(const setup *s)
{
    return s->method == LLMEM_METHOD_FULL || s->method == LLMEM_METHOD_FREEZE;
}

/* The roles of the LoRA targets of t in model m: role bits as set, names
 * resolved in m's family ("all-linear": model/modules.h). On failure, the
 * status, the message naming the field. */
int llmem_setup_lora_roles(llmem_ctx *ctx, const llmem_train *t, const model_shape *m,
                           unsigned *roles);
/* Read t, check it against the model m; the message names the field. */
int llmem_setup_resolve(const llmem_train *t, const model_shape *m, llmem_ctx *ctx, setup *s);
/* The part of those checks that depends on s's batch and seq (a sweep
 * checks it again at each point): 0, or the status, the message naming the
 * field. */
int llmem_setup_check_point(llmem_ctx *ctx, const model_shape *m, const setup *s);

#endif
