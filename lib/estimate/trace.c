/* SPDX-License-Identifier: MIT */
#include "estimate/trace.h"

#include "llmem.h"

void llmem_trace_reset(walk_trace *t)
{
    t->n = 0;
    t->truncated = 0;
}

void llmem_trace_point(walk_trace *t, int phase, const char *part, int64_t layer, uint64_t total,
                       uint64_t grads)
{
    if (t->n == t->cap) {
        t->truncated = 1;
        return;
    }
    t->points[t->n++] = (trace_point){ total, grads, part, (int32_t)layer, (uint8_t)phase };
}

void llmem_trace_events(walk_trace *t, const graph *g, int from, int to, int phase,
                        const char *fallback, int64_t layer, uint64_t base, uint64_t grads_base)
{
    if (to > g->events_cap)
        to = g->events_cap;
    for (int k = from; k < to; k++) {
        int op = t->ops[k];
        const char *part = op >= 0 && g->op[op].region ? g->op[op].region : fallback;
        llmem_trace_point(t, phase, part, layer, base + t->events[k], grads_base + t->grads[k]);
    }
}

void llmem_trace_shift(walk_trace *t, uint64_t extra)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->points[i].phase != LLMEM_PHASE_OPTIMIZER)
            t->points[i].total += extra;
}

size_t llmem_trace_peak(const walk_trace *t)
{
    size_t best = 0;
    for (size_t i = 1; i < t->n; i++)
        if (t->points[i].total > t->points[best].total)
            best = i;
    return best;
}
