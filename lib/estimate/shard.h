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

/* The experts' part of a rank's sums, apart (expert parallelism over
 * sharded ranks, shard.c): their statics (16-bit and master-typed), and a
 * trained MoE layer's expert gradients (bytes; wide: of 4-byte tensors). */
typedef struct expert_sums {
    step_static s16, sm;
    uint64_t grads, wide;
} expert_sums;

/* The parts of rank_sums that only some layouts read. */
enum rank_sums_part {
    SUMS_EXPERTS = 1,  /* expert parallelism over sharded ranks */
    SUMS_SEGMENTS = 2, /* parameters sharded: gathered around each segment */
    SUMS_ROUNDING = 4  /* states not sharded: the allocator rounds each tensor */
};

/* What a rank's parameter tensors add up to, whatever data parallelism and
 * its engine then divide: it depends on the tensor list (the model and the
 * recipe's setup), the rank's layers and ends, tensor and expert parallelism
 * and the recipe's master dtype alone, so a planner trying engines and
 * data-parallel sizes computes it once (estimate.c keeps the last ones). */
typedef struct rank_sums {
    int parts;                       /* rank_sums_part: those computed */
    step_static st16, stm;           /* the statics of its classes, and in the master dtype */
    expert_sums experts;             /* SUMS_EXPERTS */
    uint64_t layer, embedding, head; /* SUMS_SEGMENTS: bytes of a layer's (the largest
                                        kind's), the embedding's and the head's parameters */
    uint64_t rounding;               /* SUMS_ROUNDING: llmem_allocator_overhead of its classes */
} rank_sums;

void llmem_rank_recipe(const setup *s, const layout *l, rank_recipe *out);
/* A rank's run at another batch and seq of the same setup: its share of them. */
void llmem_rank_point(const layout *l, uint64_t batch, uint64_t seq, setup *run);
/* m divided by tensor parallelism: heads, key/value heads, inner sizes, vocabulary. */
void llmem_rank_shape(const model_shape *m, const layout *l, model_shape *out);
/* The parts of rank_sums a rank under l reads. */
int llmem_rank_sums_parts(const layout *l);
/* Rank r's sums with those parts, from the tensor list of the whole model
 * under the recipe's setup. Returns 0, or LLMEM_ENOTSUP when its classes
 * overflow. */
int llmem_rank_sums(const tensor_list *all, const model_shape *m, const rank_recipe *rc,
                    const layout *l, const rank_class *r, int parts, rank_sums *out);
/* The rank's share, from its sums (with llmem_rank_sums_parts(l) at least).
 * Returns 0, or LLMEM_EOVERFLOW when DeepSpeed's reduce bucket is beyond
 * 2^62 bytes. */
int llmem_rank_share(const rank_sums *sums, const model_shape *m, const rank_recipe *rc,
                     const layout *l, const rank_class *r, rank_share *out);

#endif
