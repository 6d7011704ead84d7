/* SPDX-License-Identifier: MIT */
/*
 * The timeline of a walk (walkparts.h, trace.h): the walk's segments
 * simulated again with their events logged, and its runs of identical
 * layers expanded layer by layer, the layer holding a run's peak op by op.
 * Only a walk asked for its timeline comes here.
 */
#include "estimate/walk.h"
#include "estimate/walkparts.h"

/* Simulate a segment again with its events logged, for the timeline. */
void llmem_walk_trace_simulate(walk_scratch *e, walk_trace *t, build *b,
                               segment_builder fn, const model_shape *m, const seg_spec *spec,
                               int grad_enabled, int mode)
{
    seg_cost c;
    e->graph.events = t->events;
    e->graph.event_ops = t->ops;
    e->graph.event_grads = t->grads;
    e->graph.events_cap = TRACE_EVENTS;
    llmem_walk_simulate_now(e, b, fn, m, spec, grad_enabled, mode, &c);
    e->graph.events = NULL;
    e->graph.event_ops = NULL;
    e->graph.event_grads = NULL;
}

/* Whether the timeline's room is full: each layer left would add a point
 * that is dropped, so stop (a million layers expanded op by op would cost
 * seconds for nothing) and say the timeline was cut short. */
static int room_full(walk_trace *t)
{
    if (t->n < t->cap)
        return 0;
    t->truncated = 1;
    return 1;
}

/* The i-th decoder layer the rank runs (the timeline's labels). */
static int64_t layer_of(const walk_input *in, uint64_t i)
{
    uint64_t per = in->layer_count / in->chunks;
    return (int64_t)(in->layer_first + i / per * in->chunk_stride + i % per);
}

/* Forward through a run of identical layers starting at the rank's layer `first`, from
 * `live` bytes (its input included): the last layer, which holds the run's
 * peak, op by op, the others by the live bytes after each. mode: SIM_PLAIN,
 * or a checkpointed forward's (checkpointed_forward). */
void llmem_walk_trace_forward(walk_scratch *e, walk_trace *t, build *b,
                              const model_shape *m, const layer_group *g, const walk_input *in,
                              uint64_t first, uint64_t live, uint64_t growth, uint64_t gathered,
                              uint64_t grads, int mode)
{
    llmem_walk_trace_simulate(e, t, b, llmem_layers_decoder, m, &g->spec, 1, mode);
    for (uint64_t k = 0; k < g->count; k++) {
        if (room_full(t))
            break;
        uint64_t before = live + k * growth;
        if (t->expand || k + 1 == g->count)
            llmem_trace_events(t, &e->graph, 0, e->graph.nevents_forward, LLMEM_PHASE_FORWARD,
                               "layer", layer_of(in, first + k),
                               before - g->x_bytes + gathered, grads);
        else
            llmem_trace_point(t, LLMEM_PHASE_FORWARD, "layer", layer_of(in, first + k),
                              before + growth, grads);
    }
}

/* Backward through a run of identical layers, the top one first, from
 * `live` bytes: the layer holding the run's peak op by op (its
 * recomputation first, under checkpointing: mode, as recompute_mode), the
 * others by the live bytes after each. */
void llmem_walk_trace_backward(walk_scratch *e, walk_trace *t, build *b,
                               const model_shape *m, const layer_group *g, const walk_input *in,
                               uint64_t first, uint64_t live, int64_t delta, uint64_t grads,
                               uint64_t kept, uint64_t gathered, int mode)
{
    uint64_t shown = delta >= 0 ? g->count - 1 : 0;
    int ckpt = mode != SIM_PLAIN;
    b->hold_input = ckpt;
    llmem_walk_trace_simulate(e, t, b, llmem_layers_decoder, m, &g->spec, 1, mode);
    b->hold_input = 0;
    int nf = e->graph.nevents_forward, n = e->graph.nevents;
    for (uint64_t k = 0; k < g->count; k++) {
        if (room_full(t))
            break;
        uint64_t at = (uint64_t)((int64_t)live + (int64_t)k * delta), g_k = grads + k * kept;
        int64_t layer = layer_of(in, first + g->count - 1 - k);
        if (!t->expand && k != shown) {
            llmem_trace_point(t, LLMEM_PHASE_BACKWARD, "layer", layer,
                              (uint64_t)((int64_t)at + delta), g_k + kept);
            continue;
        }
        uint64_t base = at - g->bwd_start + gathered;
        if (ckpt)
            llmem_trace_events(t, &e->graph, 0, nf, LLMEM_PHASE_BACKWARD, "recompute", layer,
                               base + g->grad_out, g_k);
        llmem_trace_events(t, &e->graph, nf, n, LLMEM_PHASE_BACKWARD, "layer", layer,
                           base + (ckpt ? g->held_input : 0), g_k);
    }
}

/* The timeline of forward_pairs: each layer op by op, in turn. */
void llmem_walk_trace_forward_pairs(walk_scratch *e, walk_trace *t, build *b,
                                    const model_shape *m, const layer_group *g,
                                    const walk_input *in, uint64_t first, uint64_t live,
                                    uint64_t held, uint64_t gathered, uint64_t grads, int mode,
                                    int first_alone, uint64_t held_first)
{
    for (uint64_t k = 0; k < g->count && t->n < t->cap; k++) {
        for (int j = 0; j < 2; j++) {
            layer_group one = g[j];
            one.count = 1;
            b->hold_input = 1; /* the caller's reference, or the checkpoint's */
            llmem_walk_trace_forward(e, t, b, m, &one, in, first + 2 * k + (uint64_t)j, live,
                                     g[j].fwd_growth + held, gathered, grads, mode);
            live += g[j].fwd_growth + held + (k == 0 && j == 0 && first_alone ? held_first : 0);
        }
    }
    b->hold_input = 0;
}

/* The timeline of backward_pairs: each layer op by op, in turn. */
void llmem_walk_trace_backward_pairs(walk_scratch *e, walk_trace *t, build *b,
                                     const model_shape *m, const layer_group *g,
                                     const walk_input *in, uint64_t first, uint64_t live,
                                     uint64_t grads, uint64_t kept_first, uint64_t kept,
                                     uint64_t held, uint64_t gathered, int mode)
{
    const layer_group *run[2] = { g, g - 1 };
    uint64_t kept_of_run[2] = { kept, kept_first };
    for (uint64_t k = 0; k < g->count && t->n < t->cap; k++) {
        for (int j = 0; j < 2; j++) {
            layer_group one = *run[j];
            one.count = 1;
            int64_t delta = backward_delta(run[j], kept_of_run[j], held);
            llmem_walk_trace_backward(e, t, b, m, &one, in,
                                      first + 2 * (g->count - 1 - k) + 1 - (uint64_t)j, live,
                                      delta, grads, kept_of_run[j], gathered, mode);
            live = (uint64_t)((int64_t)live + delta);
            grads += kept_of_run[j];
        }
    }
}
