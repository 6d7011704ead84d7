/* SPDX-License-Identifier: MIT */
/*
 * The layout of a job across GPUs: the llmem_parallel handle, its sharding
 * engines as rows, and the layout resolved against a model and a setup into
 * the classes of ranks whose memory differs (pipeline stages) with their
 * layer ranges and micro-batches in flight. docs/partitioning.md cites the
 * engines' code for every rule here.
 */
#ifndef LLMEM_PARALLEL_PARALLEL_H
#define LLMEM_PARALLEL_PARALLEL_H

#include "core/fields.h"
#include "llmem.h"
#include "model/model.h"
#include "train/setup.h"

#define PARALLEL_KEY_END (LLMEM_PARALLEL_BUCKET_ELEMENTS + 1)
/* Runs of identical decoder layers a step has at most (the walk's layer
 * groups): frozen, the first trainable (its input needs no grad), the rest,
 * plus one split where dense layers give way to experts. */
#define LAYER_RUNS_MAX 4
/* Rank classes: the first pipeline stage, the last, and the runs of middle
 * stages that hold the same kinds of layers. A stage's count of layers
 * below a run's start changes at most twice along the stages (at the stage
 * holding that start, and the next), and the layers a stage holds once
 * (the uneven split's remainder), so the middle stages form at most
 * 2 + 2 x (LAYER_RUNS_MAX - 1) runs (llmem_layout_ranks). */
#define RANKS_MAX (2 + 2 + 2 * (LAYER_RUNS_MAX - 1))

struct llmem_parallel {
    llmem_ctx *ctx;
    int64_t i[PARALLEL_KEY_END];
    double unused[PARALLEL_KEY_END]; /* no real fields: the engine's real slot */
};

extern const field_table llmem_parallel_fields;

/* A field set away from its default that the layout does not read (the
 * shard group without hybrid sharding, ...: parallel/parallel_unread.c),
 * refused naming it; else LLMEM_OK. */
int llmem_parallel_check_unread(llmem_ctx *ctx, const llmem_parallel *p);

/* A sharding engine: what it shards over its group, and how its step runs. */
typedef struct sharding_desc {
    name_value id;          /* first member: the name table steps over rows */
    int states, grads, params; /* sharded over the shard group */
    int deepspeed;          /* DeepSpeed's ZeRO: a 16-bit model with fp32 master partitions,
                               FusedAdam, an fp32 gradient partition made at each step */
    int fsdp;               /* PyTorch FSDP: fp32 parameter shards, 16-bit gathered copies */
    int keep_gathered;      /* parameters stay gathered from forward to backward */
    int hybrid;             /* sharded within shard-group ranks, replicated across */
} sharding_desc;

const sharding_desc *llmem_sharding(int sharding);
/* Whether the engine offloads that (llmem_offload): DeepSpeed the optimizer
 * at any ZeRO stage and parameters only at stage 3; FSDP's CPUOffload
 * parameter shards (and so their optimizer); nothing offloads nothing. */
static inline int llmem_sharding_offloads(const sharding_desc *sh, int offload)
{
    return offload == LLMEM_OFFLOAD_NONE ||
           (offload == LLMEM_OFFLOAD_OPTIMIZER ? sh->deepspeed : sh->params);
}
extern const name_table llmem_names_sharding, llmem_names_offload, llmem_names_schedule;

/* A layout resolved against a model and a setup. */
typedef struct layout {
    uint64_t dp, tp, pp, ep, cp;
    int sp;                       /* sequence parallelism over the tensor-parallel group */
    const sharding_desc *sharding;
    uint64_t shard;               /* ranks a shard is split over: dp or the shard group, times
                                     cp (1: nothing sharded) */
    int offload;                  /* llmem_offload */
    uint64_t micro_batches;
    int schedule;                 /* llmem_schedule */
    uint64_t virtual_stages;      /* 1 unless interleaved */
    uint64_t bucket_elements;     /* a ZeRO gradient bucket's elements (0: the engine's default) */
} layout;

/* Ranks whose memory differs. */
typedef struct rank_class {
    uint64_t stage;               /* pipeline stage: the first of `stages` alike */
    uint64_t stages;              /* consecutive stages holding the same kinds of layers;
                                     the first, with the most micro-batches in flight,
                                     stands for them */
    /* Its decoder layers: `chunks` ranges of layers / chunks layers, the
     * first at layer_first, each chunk_stride after the previous (the
     * interleaved schedule's model chunks; otherwise one range). */
    uint64_t layer_first, layers, chunks, chunk_stride;
    int embedding, head;          /* whether it holds the embedding, the head */
    uint64_t in_flight_num, in_flight_den; /* micro-batches whose forward state it holds */
    uint64_t gpus;                /* GPUs of the layout in this class */
} rank_class;

/* A layout from the handle (NULL: one GPU), checked against m and s. */
int llmem_layout_resolve(llmem_ctx *ctx, const llmem_parallel *p, const model_shape *m,
                         const setup *s, layout *out);
/* What those checks ask of s's batch and seq alone (a sweep checks it again
 * at each point): context and sequence parallelism's splits, and m's
 * sliding window on alternate layers, once reached, in one stage. */
int llmem_layout_check_point(llmem_ctx *ctx, const layout *l, const model_shape *m,
                             const setup *s);
/* The rank classes of l over m, whose layers change kind at the nbounds
 * layers bounds (ascending: where each run of identical layers after the
 * first starts); returns how many (1..RANKS_MAX). */
int llmem_layout_ranks(const layout *l, const model_shape *m, const uint64_t *bounds,
                       int nbounds, rank_class *out);
/* Layers of [first, first + count) that rank class r runs. */
uint64_t llmem_rank_overlap(const rank_class *r, uint64_t first, uint64_t count);
/* The i-th decoder layer rank class r runs (i < r->layers). */
static inline uint64_t llmem_rank_layer(const rank_class *r, uint64_t i)
{
    uint64_t per = r->layers / r->chunks;
    return r->layer_first + i / per * r->chunk_stride + i % per;
}
/* The greatest common divisor (of a split and a size: layouts, shard groups). */
uint64_t llmem_gcd(uint64_t a, uint64_t b);

#endif
