/* SPDX-License-Identifier: MIT */
/*
 * What the walk (walk.c) shares with its pieces: the runs of identical
 * layers it walks (walkgroups.c), the segments' costs that reduce each run
 * to per-layer numbers (walksegs.c), and the timeline's expansion of a walk
 * (walktrace.c). A private header; the helpers that every walk runs and
 * more than one piece calls are static inline here, so that splitting the
 * file costs a walk no call.
 */
#ifndef LLMEM_ESTIMATE_WALKPARTS_H
#define LLMEM_ESTIMATE_WALKPARTS_H

#include "estimate/cache.h"
#include "estimate/trace.h"
#include "estimate/walkscratch.h"
#include "model/families.h"
#include "parallel/parallel.h"
#include "train/setup.h"

#include <stdint.h>

/* Defined in walk.h, whose unit (walk.c) includes this header: named here,
 * not included, as the layers test refuses a circle of includes (the
 * scratch room is walkscratch.h's). */
struct walk_input;

/* Runs of identical layers: frozen, first trainable, the rest, plus one
 * split where dense layers give way to experts or, in a model without
 * experts (OPT's post-norm), after a first layer fed in another dtype. */
#define MAX_GROUPS LAYER_RUNS_MAX
/* A rank's runs once alternate layers take the window
 * (llmem_walk_alternate_runs): each run may become two interleaved ones and
 * a last layer alone. */
#define MAX_RUNS (3 * MAX_GROUPS)

/* One run of identical decoder layers, reduced to per-layer numbers. */
typedef struct layer_group {
    uint64_t count;
    seg_spec spec;
    uint64_t x_bytes;                       /* a layer's input (layer_input_dt) */
    uint64_t fwd_growth;                    /* forward: what each layer adds */
    uint64_t bwd_start, bwd_end;            /* backward: from its saved set + output grad */
    uint64_t param_grads, param_grads_wide;
    uint64_t cached;                        /* autocast's cached casts held past a layer
                                               until it exits (checkpointing: cache) */
    uint64_t grad_out, held_input;          /* checkpointing: the recomputation's footing */
    int input_saved;                        /* a plain layer saves its input for backward */
    /* Two runs interleaved (Gemma-2's sliding and full layers): PAIR_FIRST,
     * whose layers come first in each pair, and the next group, PAIR_SECOND;
     * each counts the pairs. */
    int pair;
    /* The peaks as their segments give them (a moment is a base plus one
     * segment's peak: walkform.h): forward, the run's segment's forward
     * peak (checkpointing's counting autocast's casts as it makes them);
     * backward, its backward peak, or under
     * checkpointing the recomputation's forward peak (which counts its
     * input) plus grad_out and its backward peak plus held_input. */
    int pos_fwd, pos_bwd;                   /* the segments' positions in the walk */
    uint64_t seg_fwd_peak, seg_bwd_fwd_peak, seg_bwd_peak;
} layer_group;

enum { PAIR_NONE, PAIR_FIRST, PAIR_SECOND };

/* Whether a layer's output requires grad: its input does, or it trains. */
static inline int output_rg(const seg_spec *s)
{
    return s->input_rg || s->weights_trainable || s->norms_trainable || s->lora_targets;
}

/* A checkpointed layer's first forward: reentrant, under no_grad;
 * non-reentrant, with grad enabled and its saves packed (what autograd
 * makes only to save is made there). */
static inline int checkpointed_forward(int recompute)
{
    return recompute == SIM_EARLY_STOP ? SIM_PACKED : SIM_NO_GRAD;
}

/* How a checkpointed layer is recomputed in backward (SIM_PLAIN: not checkpointed). */
static inline int recompute_mode(const setup *s)
{
    if (s->grad_ckpt == LLMEM_GRAD_CKPT_NONE)
        return SIM_PLAIN;
    return s->grad_ckpt == LLMEM_GRAD_CKPT_REENTRANT ? SIM_HOLD_OUTPUT : SIM_EARLY_STOP;
}

/* A layer's change of the live bytes in backward (kept: its gradients kept). */
static inline int64_t backward_delta(const layer_group *g, uint64_t kept, uint64_t held)
{
    return (int64_t)(g->bwd_end - g->param_grads + kept) - (int64_t)g->bwd_start - (int64_t)held;
}

/* Segments: a segment's cost from the handle's cache of segments, or
 * simulated on the scratch graph and taught to the cache. Inline here, as
 * they were in one file: the walk asks for its embedding's and head's,
 * walksegs.c for its layers' (out of line they cost a first run more
 * instructions, callgrind). */

/* Record a segment on the scratch graph (the layer's tape, if any, is gone). */
static inline void record(walk_scratch *e, build *b, segment_builder fn, const model_shape *m,
                          const seg_spec *spec, int grad_enabled)
{
    llmem_graph_reset(&e->graph, grad_enabled);
    b->g = &e->graph;
    fn(b, m, spec);
    e->graph_overflow |= e->graph.overflow;
    e->taped = 0;
}

/* A segment's cost: from the handle's cache of segments when it knows this
 * one (estimate/cache.h), 1; else 0, and the caller runs sim_cached. */
static inline int cached(walk_scratch *e, const build *b, const model_shape *m,
                         const seg_query *q, seg_cost *c)
{
    e->positions++;
    if (!e->uncached && llmem_segcache_lookup(&e->cache, m, b, q, c))
        return 1;
    e->cache.walk_full = 0;
    return 0;
}

/* Run the tape on the scratch graph in `mode`, the simulation teaching the
 * cache what `cached` just missed. */
static inline void sim_cached(walk_scratch *e, const build *b, const seg_query *q, int mode,
                              seg_cost *c)
{
    graph *g = &e->graph;
    g->events = e->cache.log;
    g->event_ops = NULL;
    g->event_grads = NULL;
    g->events_cap = SEG_LOG;
    llmem_graph_simulate(g, mode, c);
    e->simulated++;
    g->events = NULL;
    if (!e->uncached && !g->overflow && g->nevents <= SEG_LOG)
        llmem_segcache_learn(&e->cache, q, b->batch, b->seq, c, g->nevents_forward, g->nevents);
}

/* From a sliding window on, the layers take a mask padded to a multiple of
 * 8 and SDPA's log-sum-exp rounds to 32: segments are cached one seq at a
 * time (rows in the batch) there, their seq in the key. */
static inline seg_query query(const build *b, segment_builder fn, const model_shape *m,
                              const seg_spec *spec, int grad_enabled, int mode)
{
    int at_one_seq = llmem_model_window_reached(m, b->attention, b->seq);
    return (seg_query){ fn, spec, grad_enabled, mode, b->hold_input,
                        llmem_regime_of(b->batch, b->seq, at_one_seq),
                        at_one_seq ? b->seq : 0, llmem_layers_piece(b, m, spec) };
}

/* A segment's cost, from the cache or simulated. */
static inline void simulate(walk_scratch *e, build *b, segment_builder fn, const model_shape *m,
                            const seg_spec *spec, int grad_enabled, int mode, seg_cost *c)
{
    seg_query q = query(b, fn, m, spec, grad_enabled, mode);
    if (cached(e, b, m, &q, c))
        return;
    record(e, b, fn, m, spec, grad_enabled);
    sim_cached(e, b, &q, mode, c);
}

/* walksegs.c: a segment's cost simulated now, never cached (the
 * timeline's events). */
void llmem_walk_simulate_now(walk_scratch *e, build *b, segment_builder fn,
                             const model_shape *m, const seg_spec *spec, int grad_enabled,
                             int mode, seg_cost *c);
/* A run's per-layer numbers (grp->x_bytes and spec set), from its
 * segments: plain, or checkpointed. */
void llmem_walk_reduce_group(walk_scratch *e, build *b, const model_shape *m,
                             const setup *s, layer_group *grp);

/* Runs of identical layers (walkgroups.c). The step's runs for a method:
 * at most MAX_GROUPS; returns how many. */
int llmem_walk_groups(const model_shape *m, const setup *s, layer_group *g);
/* The runs of the layers a rank runs (in), in order, from all n of the
 * step's: at most n. */
int llmem_walk_clip_groups(const layer_group *all, int n, const struct walk_input *in,
                           layer_group *out);
/* A one-stage rank's runs as interleaved pairs once alternate layers take
 * the window: at most MAX_RUNS. */
int llmem_walk_alternate_runs(const layer_group *in, int n, layer_group *out);
/* Where a second mask goes (*before), splitting a run: the runs' count. */
int llmem_walk_place_other_mask(layer_group *g, int n, uint64_t chunks, int *before);

/* The timeline (walktrace.c): a segment's events, and the layers of a run
 * or of two interleaved runs, forward and backward, op by op or by the
 * live bytes after each. */
void llmem_walk_trace_simulate(walk_scratch *e, walk_trace *t, build *b,
                               segment_builder fn, const model_shape *m, const seg_spec *spec,
                               int grad_enabled, int mode);
void llmem_walk_trace_forward(walk_scratch *e, walk_trace *t, build *b,
                              const model_shape *m, const layer_group *g,
                              const struct walk_input *in, uint64_t first, uint64_t live,
                              uint64_t growth, uint64_t gathered, uint64_t grads, int mode);
void llmem_walk_trace_backward(walk_scratch *e, walk_trace *t, build *b,
                               const model_shape *m, const layer_group *g,
                               const struct walk_input *in, uint64_t first, uint64_t live,
                               int64_t delta, uint64_t grads, uint64_t kept, uint64_t gathered,
                               int mode);
void llmem_walk_trace_forward_pairs(walk_scratch *e, walk_trace *t, build *b,
                                    const model_shape *m, const layer_group *g,
                                    const struct walk_input *in, uint64_t first, uint64_t live,
                                    uint64_t held, uint64_t gathered, uint64_t grads, int mode,
                                    int first_alone, uint64_t held_first);
void llmem_walk_trace_backward_pairs(walk_scratch *e, walk_trace *t, build *b,
                                     const model_shape *m, const layer_group *g,
                                     const struct walk_input *in, uint64_t first,
                                     uint64_t live, uint64_t grads, uint64_t kept_first,
                                     uint64_t kept, uint64_t held, uint64_t gathered, int mode);

#endif
