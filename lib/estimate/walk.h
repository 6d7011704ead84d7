/* SPDX-License-Identifier: MIT */
/*
 * The walk through the phases of one training step on one rank: forward,
 * the loss's backward, backward through the layers, the optimizer step. It
 * takes what the rank runs (a model shape, already divided by tensor
 * parallelism when there is some; a layer range with or without the
 * embedding and the head; the micro-batches in flight; the parameters
 * gathered around each segment) and returns the peak, its phase and what is
 * live then. It knows nothing of the public handles.
 */
#ifndef LLMEM_ESTIMATE_WALK_H
#define LLMEM_ESTIMATE_WALK_H

#include "estimate/cache.h"
#include "estimate/results.h"
#include "estimate/statics.h"
#include "estimate/trace.h"
#include "estimate/walkform.h"
#include "estimate/walkscratch.h"

/* Bytes gathered while a segment runs and released after it (ZeRO-3, FSDP),
 * or held from a layer's forward to its backward (parameters not resharded). */
typedef struct walk_gather {
    uint64_t layer_fwd, layer_bwd; /* around each decoder layer's forward and backward */
    uint64_t embedding, head;      /* around the embedding and the head */
    uint64_t layer_held;           /* per layer, from its forward to the end of its backward */
    uint64_t backward;             /* through the whole backward (a gradient bucket) */
} walk_gather;

/* What stays of the parameter gradients a segment's backward makes: kept
 * bytes = (narrow x k16 + wide x k32) / den, narrow and wide being the
 * gradients of 16-bit and of 4-byte parameters. One GPU keeps them all
 * (1, 1, 1: llmem_walk_single). A rank's share (llmem_rank_share) keeps a
 * 16-bit parameter's as k16 = its gradient dtype's bytes an element (FSDP's
 * fp32 shards of a 16-bit model twice the bytes) and a 4-byte one's as
 * itself (k32 = 2), over den = 2 x the gradient shards: den > 2 where the
 * gradients shard; offload keeps none (den = 0). */
typedef struct walk_keep {
    uint64_t k16, k32, den;
    /* A trained MoE layer's expert gradients (bytes as its backward makes
     * them, and the wide part), kept over expert_den instead: under expert
     * parallelism ZeRO-2 shards them over dp / ep ranks (shard.c). */
    uint64_t expert, expert_wide, expert_den;
} walk_keep;

/* Whether more micro-batches than this one hold their forward state while
 * it runs (in_flight / den of them, den 0 read as 1): a pipeline's stash. */
static inline int llmem_walk_stashes(uint64_t in_flight, uint64_t den)
{
    return in_flight > (den ? den : 1);
}

typedef struct walk_input {
    const model_shape *model;
    const setup *setup;
    const step_static *statics;
    /* The decoder layers this rank runs: `chunks` ranges of layer_count /
     * chunks layers, the first at layer_first, each chunk_stride after the
     * previous (the interleaved schedule's model chunks; otherwise one). */
    uint64_t layer_first, layer_count, chunks, chunk_stride;
    int embedding, head;               /* whether it runs the embedding, the head and loss */
    uint64_t in_flight, in_flight_den; /* micro-batches whose forward state is live together */
    int grads_persist;      /* gradients live from the step's start (accumulation) */
    walk_gather gather;
    walk_keep keep;
    uint64_t sp;            /* sequence parallelism: the residual stream is split over sp ranks */
    uint64_t ep;            /* expert parallelism: a rank holds experts / ep of each layer */
    walk_trace *trace;      /* the timeline's points, or NULL */
} walk_input;

/* The whole model on one GPU. */
void llmem_walk_single(walk_input *in, const model_shape *m, const setup *s,
                       const step_static *st);
/* Walk the step (callers ask llmem_walk_known first); with a walk_key, log
 * the moments when the walk may be compiled next (in ws->log: walkform.h),
 * and remember the result. 0, or LLMEM_ENOTSUP when a segment overflowed
 * the graph. */
int llmem_walk(walk_scratch *ws, const walk_input *in, walk_result *out);
/* Where the step's runs of identical decoder layers after the first start
 * (at most LAYER_RUNS_MAX - 1, ascending); returns how many. */
int llmem_walk_layer_bounds(const model_shape *m, const setup *s, uint64_t *bounds);
/* The walk of ws's walk_key at (batch, seq) when it is known without
 * walking (the last result at that point, or a compiled walk): 1 and r, or
 * 0. Asked before llmem_walk. */
int llmem_walk_known(walk_scratch *ws, uint64_t batch, uint64_t seq, uint64_t in_flight,
                     uint64_t in_flight_den, walk_result *r);
/* What a sweep needs of a walk: its peak, and the white-box check's bytes. */
typedef struct walk_peak {
    uint64_t peak, end_of_backward;
} walk_peak;
/* The peak of ws's walk_key at (batch, seq) from its compiled walk, exactly
 * llmem_walk_known's: 1 and r, or 0 when there is no compiled walk (nothing
 * is remembered either way). */
int llmem_walk_known_peak(walk_scratch *ws, uint64_t batch, uint64_t seq,
                          uint64_t in_flight, uint64_t in_flight_den, walk_peak *r);
/* Walk the step, logging its moments (never a compiled walk). */
int llmem_walk_logged(walk_scratch *ws, const walk_input *in, walk_result *out, walk_log *log);
/* The compiled walk slot of ws's walk_key at (batch, seq), or NULL (no key,
 * or a regime of one point). A walk key with WALK_KEY_WINDOW takes the
 * regimes of one seq (sim/compiled.h): its slot is of one seq at a time,
 * and one of another seq is forgotten (its key cleared) when asked for. */
walk_form *llmem_walk_form(walk_scratch *ws, uint64_t batch, uint64_t seq);

#endif
