/* SPDX-License-Identifier: MIT */
/*
 * One rank's share of a step under a layout: its setup (the dtypes its
 * engine runs), its model shape (divided by tensor parallelism), what it
 * holds of the parameter tensors (by tensor, pipeline and expert
 * parallelism, then by its sharding engine) and what its walk is given
 * (layers, micro-batches in flight, parameters gathered around each segment).
 */
#ifndef LLMEM_ESTIMATE_SHARD_H
#define LLMEM_ESTIMATE_SHARD_H

#include "estimate/walk.h"
#include "parallel/parallel.h"

/* The dtypes an engine holds a mixed-precision model in. */
typedef struct rank_recipe {
    setup run;       /* the setup the rank's walk runs (16-bit model under ZeRO/FSDP) */
    int master_dt;   /* bytes of what the optimizer updates (fp32 master or the weights) */
    int grad_dt;     /* bytes of the gradients the rank keeps */
    int master_copy; /* DeepSpeed mixed precision: a separate fp32 master partition */
    int cast;        /* run is the setup with its model cast to the compute dtype
                        (else the setup itself), but batch and seq */
} rank_recipe;

/* What a rank holds beyond the walk's own: the statics, the host side, and
 * the inputs of its walk. */
typedef struct rank_share {
    step_static st;
    uint64_t host;        /* host bytes (offload) */
    walk_gather gather;
    walk_keep keep;       /* what stays of each backward's gradients */
    uint64_t overhead;    /* what reserved adds to allocated: rounding, cuBLAS workspace */
} rank_share;

void llmem_rank_recipe(const setup *s, const layout *l, rank_recipe *out);
/* A rank's run at another batch and seq of the same setup: its share of them. */
void llmem_rank_point(const layout *l, uint64_t batch, uint64_t seq, setup *run);
/* m divided by tensor parallelism: heads, key/value heads, inner sizes, vocabulary. */
void llmem_rank_shape(const model_shape *m, const layout *l, model_shape *out);
/* The rank's share, from the tensor list of the whole model under the
 * recipe's setup. Returns 0, LLMEM_ENOTSUP when its classes overflow, or
 * LLMEM_EOVERFLOW when DeepSpeed's reduce bucket is beyond 2^62 bytes. */
int llmem_rank_share(const tensor_list *all, const model_shape *m, const rank_recipe *rc,
                     const layout *l, const rank_class *r, rank_share *out);

#endif
