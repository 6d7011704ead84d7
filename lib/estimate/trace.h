/* SPDX-License-Identifier: MIT */
/*
 * The timeline of a step: points the walk emits as it goes, when asked (a
 * handle with llmem_estimate_timeline() on), each with the phase, the part
 * of the model it is in ("attention", "mlp", "loss", ...), the decoder layer,
 * and the live bytes and gradients then. One layer of each run of identical
 * layers is shown op by op (the one that holds the run's peak), the others
 * by one point each, unless expanded. The room is the handle's: nothing is
 * allocated during a run.
 */
#ifndef LLMEM_ESTIMATE_TRACE_H
#define LLMEM_ESTIMATE_TRACE_H

#include "sim/graph.h"

#include <stddef.h>
#include <stdint.h>

#define TRACE_EVENTS GRAPH_MAX_EVENTS /* events one segment's simulation may log */

typedef struct trace_point {
    uint64_t total;   /* live bytes (of this rank) */
    uint64_t grads;   /* of them, parameter gradients */
    const char *part; /* static */
    int32_t layer;    /* decoder layer; -1 outside the layers */
    uint8_t phase;    /* llmem_phase */
} trace_point;

typedef struct walk_trace {
    trace_point *points;
    size_t cap, n;
    int expand;       /* every layer op by op */
    int truncated;    /* more points than room: the last ones were dropped */
    uint64_t events[TRACE_EVENTS], grads[TRACE_EVENTS];
    int16_t ops[TRACE_EVENTS];
} walk_trace;

void llmem_trace_reset(walk_trace *t);
void llmem_trace_point(walk_trace *t, int phase, const char *part, int64_t layer, uint64_t total,
                       uint64_t grads);
/* The events [from, to) of the segment just simulated on g, each at base +
 * its live bytes, with grads_base + the parameter gradients it logged. */
void llmem_trace_events(walk_trace *t, const graph *g, int from, int to, int phase,
                        const char *fallback, int64_t layer, uint64_t base, uint64_t grads_base);
/* Add the other micro-batches' stash to every point of forward and backward. */
void llmem_trace_shift(walk_trace *t, uint64_t extra);
/* Index of the first point holding the largest total. */
size_t llmem_trace_peak(const walk_trace *t);

#endif
