/* SPDX-License-Identifier: MIT */
#include "sim/graph.h"

#include <string.h>

void llmem_graph_reset(graph *g, int grad_enabled)
{
    g->nt = 0;
    g->nop = 0;
    g->overflow = 0;
    g->grad_enabled = grad_enabled;
    g->hold_input = 0;
    g->nmade = 0;
    g->params_rg = -1;
    g->output = -1;
    g->mark.nt = 0;
    g->nevents = 0;
    g->region = NULL;
    g->ninputs = 0;
    g->fate.valid = 0;
}

tid llmem_graph_tensor(graph *g, uint64_t elems, int dt, tensor_role role, int rg)
{
    if (g->nt >= GRAPH_MAX_TENSORS) {
        g->overflow = 1;
        return 0;
    }
    tid id = (tid)g->nt++;
    g->t[id] = (g_tensor){ .bytes = elems * (uint64_t)dt, .last_use = -1, .base = id,
                           .role = (uint8_t)role, .rg = (uint8_t)(rg && g->grad_enabled),
                           .dt = (uint8_t)dt, .cached = (uint8_t)(role == ROLE_PARAM && rg) };
    if (role == ROLE_INPUT) {
        if (g->ninputs < GRAPH_MAX_INPUTS)
            g->inputs[g->ninputs] = id;
        g->ninputs++;
    }
    return id;
}

/* An op that does not fit or saves an input past its own (a builder's bug,
 * reported as such): its output made as a plain tensor, so that the builder
 * can go on. */
tid llmem_graph_op_overflow(graph *g, uint64_t out_elems, int out_dt, const tid *in, int nin)
{
    int any_rg = 0;
    for (int j = 0; j < nin && j < GRAPH_MAX_IN; j++)
        any_rg |= graph_rg(g, in[j]);
    tid out = llmem_graph_tensor(g, out_elems, out_dt, ROLE_ACT, any_rg);
    g->overflow = 1;
    return out;
}

/* With grad enabled what requires grad follows the tape's rg (retargets
 * included); a tape recorded under no_grad keeps the parameter's flag. */
void llmem_graph_cached(graph *g, tid c, tid w)
{
    g->fate.valid = 0;
    g->t[c].cached = g->grad_enabled ? CAST_CACHED : g->t[w].cached ? CAST_CACHED_NO_GRAD : 0;
}

void llmem_graph_made_to_save(graph *g, tid t)
{
    if (g->nop < 2 || g->op[g->nop - 2].out != t || g->nmade == GRAPH_MAX_MADE) {
        g->overflow = 1; /* a builder's bug, reported as such */
        return;
    }
    g->fate.valid = 0;
    g->op[g->nop - 2].alloc -= g->t[t].bytes; /* made only when saved: see simulate_forward */
    g->t[t].last_use = -1; /* never freed in forward: saved, or never made */
    g->made[g->nmade++] = t;
}

void llmem_graph_view(graph *g, tid v, tid x)
{
    if (g->t[v].role != ROLE_VIEW && g->nop > 0 && g->op[g->nop - 1].out == v)
        g->op[g->nop - 1].alloc -= g->t[v].bytes;
    g->t[v].role = ROLE_VIEW;
    g->t[v].base = g->t[x].base;
    g->fate.valid = 0;
}

static int owns_storage(const g_tensor *t)
{
    return t->role == ROLE_ACT || t->role == ROLE_INPUT;
}

/* The events a run logs (graph's events), kept in a local while it runs:
 * stores to the tape cannot then alias its count. */
typedef struct event_log {
    uint64_t *live;
    int16_t *ops;
    uint64_t *grads;
    int n;
} event_log;

static event_log log_open(const graph *g)
{
    return (event_log){ g->events, g->event_ops, g->event_grads, g->nevents };
}

/* How a run logs its steps: not at all, their live bytes (the cache's
 * fits), or each with its op and the parameter gradients then (the
 * timeline). The run is written once and compiled for each kind, so that
 * its loops test nothing about the log. */
enum log_kind { LOG_NONE, LOG_LIVE, LOG_FULL };

GRAPH_INLINE void record(event_log *l, int kind, uint64_t live, int op, uint64_t grads)
{
    if (kind == LOG_NONE)
        return;
    l->live[l->n] = live; /* room for every step (llmem_graph_simulate) */
    if (kind == LOG_FULL) {
        l->ops[l->n] = (int16_t)op;
        l->grads[l->n] = grads;
    }
    l->n++;
}

/* The op whose save ends a recomputation that stops early, or -1. */
static int last_save(const graph *g)
{
    for (int i = g->nop - 1; i >= 0; i--)
        if (g->op[i].save != 0)
            return i;
    return -1;
}

/* Where a tensor that owns its storage goes in forward: kept for backward
 * (when saves count: not under no_grad), held by autocast past the segment
 * (under no_grad too), freed after its last use, or kept to the end (the
 * output, or a tensor no op uses). The tensor passes below all ask this. */
enum tensor_way { GOES_SAVED, GOES_CACHED, GOES_FREED, GOES_NOWHERE };

static inline enum tensor_way tensor_goes(const g_tensor *x, int t, tid output, int saves)
{
    if (x->saved > 0 && saves)
        return GOES_SAVED;
    if (x->cached && (x->rg || x->cached == CAST_CACHED_NO_GRAD))
        return GOES_CACHED;
    if (t != output && x->last_use >= 0)
        return GOES_FREED;
    return GOES_NOWHERE;
}

/* The tensor pass of a run without grad, kept as graph's fate for the
 * tape's later runs (a checkpointed layer's recomputation follows its
 * first forward): with grad, where each tensor that owns its storage
 * goes; without, the saved tensors too (extra). */
static void place_tensors(graph *g)
{
    struct tensor_fate *f = &g->fate;
    uint64_t persist = 0, cached = 0;
    tid output = g->output;
    int nextra = 0;
    memset(f->freed, 0, (size_t)g->nop * sizeof f->freed[0]);
    memset(f->release, 0, (size_t)g->nop * sizeof f->release[0]);
    for (int t = 0; t < g->nt; t++) {
        const g_tensor *x = &g->t[t];
        if (!owns_storage(x))
            continue;
        switch (tensor_goes(x, t, output, 1)) {
        case GOES_SAVED:
            persist += x->bytes;
            f->release[x->first_save] += x->bytes;
            f->extra[nextra++] = (tid)t;
            break;
        case GOES_CACHED:
            cached += x->bytes;
            break;
        case GOES_FREED:
            f->freed[x->last_use] += x->bytes;
            break;
        case GOES_NOWHERE:
            break;
        }
    }
    f->persist = persist;
    f->cached = g->grad_enabled ? cached : 0;
    f->nextra = nextra;
    f->output = output;
    f->nt = g->nt;
    f->nop = g->nop;
    f->valid = 1;
}

/* Forward, and what backward releases after each op (*release_at: the
 * saved tensors whose first save it is, in release or the tape's fate;
 * not under no_grad). */
GRAPH_INLINE void simulate_forward(graph *g, int kind, int stop, int no_grad, int packed,
                                  uint64_t *release, const uint64_t **release_at, seg_cost *c)
{
    /* freed[i]: bytes whose last reference goes after op i. */
    uint64_t freed[GRAPH_MAX_OPS];
    uint64_t live = 0, peak = 0, persist = 0, cached = 0, made_first = 0;
    tid output = g->output; /* a local: not reloaded after each store to release */
    const struct tensor_fate *f = &g->fate;
    event_log log = log_open(g);
    int known = f->valid && f->output == output && f->nt == g->nt && f->nop == g->nop;
    if (no_grad && !known) {
        place_tensors(g);
        known = 1;
    }
    if (known) {
        memcpy(freed, f->freed, (size_t)g->nop * sizeof freed[0]);
        for (int k = 0; no_grad && k < f->nextra; k++) {
            const g_tensor *x = &g->t[f->extra[k]];
            if (tensor_goes(x, f->extra[k], output, 0) == GOES_FREED)
                freed[x->last_use] += x->bytes;
        }
        persist = no_grad ? 0 : f->persist;
        cached = no_grad ? 0 : f->cached;
        *release_at = f->release;
    } else {
        memset(freed, 0, (size_t)g->nop * sizeof freed[0]);
        memset(release, 0, (size_t)g->nop * sizeof release[0]);
        *release_at = release;
        /* One pass: what stays saved for backward, and when the rest goes. */
        for (int t = 0; t < g->nt; t++) {
            const g_tensor *x = &g->t[t];
            if (!owns_storage(x))
                continue;
            switch (tensor_goes(x, t, output, !no_grad)) {
            case GOES_SAVED:
                persist += x->bytes;
                release[x->first_save] += x->bytes;
                break;
            case GOES_CACHED: /* under no_grad the caller counts it, from the segment's end */
                cached += no_grad || !g->grad_enabled ? 0 : x->bytes;
                break;
            case GOES_FREED:
                freed[x->last_use] += x->bytes;
                break;
            case GOES_NOWHERE:
                break;
            }
        }
    }
    /* What exists only to be saved: made by the op before its saver when
     * that saves it, and kept (or, packed, dropped at once); else never. */
    for (int k = 0; k < g->nmade; k++) {
        const g_tensor *x = &g->t[g->made[k]];
        if (x->saved == 0 || (no_grad && !packed))
            continue;
        if (x->first_save >= 2)
            freed[x->first_save - 2] -= x->bytes; /* wraps back when applied */
        else
            made_first += x->bytes;
        if (packed)
            freed[x->first_save] += x->bytes;
    }
    /* The inputs are live from the start; a run that holds them frees
     * them after its last op instead. */
    c->input_saved = 0;
    for (int k = 0; k < graph_input_count(g); k++) {
        int id = graph_input_at(g, k);
        const g_tensor *x = &g->t[id];
        if (x->role != ROLE_INPUT)
            continue;
        int saved = x->saved > 0 && !no_grad;
        live += x->bytes;
        c->input_saved |= saved;
        if (g->hold_input && !saved && id != g->output && g->nop > 0) {
            if (x->last_use >= 0)
                freed[x->last_use] -= x->bytes;
            freed[g->nop - 1] += x->bytes;
        }
    }
    live += made_first;
    peak = live;
    record(&log, kind, live, -1, 0);
    /* The ops before the stop run whole; the stop's op runs when it saves
     * its output (packed once computed), not when it saves an input
     * (packed before the kernel runs). */
    int end = stop >= 0 ? stop : g->nop;
    if (stop >= 0 && (g->op[stop].save & (SAVE_OUT | SAVE_AUX)) != 0)
        end++;
    for (int i = 0; i < end; i++) {
        const g_op *op = &g->op[i];
        live += op->alloc;
        uint64_t now = live + op->fwd_extra;
        if (now > peak)
            peak = now;
        record(&log, kind, now, i, 0);
        live -= freed[i];
    }
    g->nevents = log.n;
    c->fwd_peak = peak;
    c->persist = persist;
    c->cached = cached;
    c->out_bytes = g->output >= 0 && (g->t[g->output].saved == 0 || no_grad)
                       ? g->t[g->output].bytes
                       : 0;
}

/* Gradient storages are reference-counted: an addition passes its output
 * gradient to both inputs without a copy. */
typedef struct grad_pool {
    uint64_t bytes[GRAPH_MAX_GRADS];
    uint16_t refs[GRAPH_MAX_GRADS];
    int n;
} grad_pool;

static int pool_new(grad_pool *p, uint64_t bytes, uint64_t *live)
{
    int s = p->n++;
    p->bytes[s] = bytes;
    p->refs[s] = 1;
    *live += bytes;
    return s;
}

static void pool_drop(grad_pool *p, int s, uint64_t *live)
{
    if (s >= 0 && --p->refs[s] == 0)
        *live -= p->bytes[s];
}

GRAPH_INLINE void simulate_backward(graph *g, int kind, int hold_output, int stop,
                                   const uint64_t *release, seg_cost *c, uint64_t *at_stop)
{
    grad_pool pool;
    /* The storage holding a tensor's gradient; -1 = none. A parameter's
     * .grad, which is not pooled, marks its existence with 0. */
    int16_t grad[GRAPH_MAX_TENSORS];
    uint64_t live, peak, param_grads = 0, param_grads_wide = 0;
    const g_tensor *t = g->t;
    tid out = g->output;

    event_log log = log_open(g);
    memset(grad, 0xff, (size_t)g->nt * sizeof grad[0]);
    pool.n = 0;
    live = c->persist + (hold_output ? c->out_bytes : 0);
    grad[out] = (int16_t)pool_new(&pool, t[out].bytes, &live);
    /* Reentrant checkpointing's backward holds the incoming gradient in its
     * arguments, so sums into that buffer go out of place. */
    int held_grad = hold_output ? grad[out] : -1;
    if (held_grad >= 0)
        pool.refs[held_grad]++;
    c->bwd_start = peak = live;
    record(&log, kind, live, -1, 0);

    /* Two passes: the ops after the stop, then (its live bytes noted) the rest. */
    int i = g->nop - 1;
    for (int pass = 0; pass < 2; pass++) {
        for (int lo = pass == 0 ? stop + 1 : 0; i >= lo; i--) {
            const g_op *op = &g->op[i];
            int gout = grad[op->out];
            uint64_t transient = 0;
            int deferred[GRAPH_MAX_IN], ndeferred = 0;
            if (!t[op->out].rg)
                continue;
            int from_aux = (op->grad_alias & GRADS_IN_AUX) != 0;
            for (int j = 0, nin = gout >= 0 ? op->nin : 0; j < nin; j++) {
                tid x = op->in[j];
                const g_tensor *xt = &t[x];
                if (!xt->rg)
                    continue;
                if (from_aux) {
                    /* Already live as the aux output: change the owner, not the bytes. */
                    if (xt->role == ROLE_PARAM) {
                        param_grads += xt->bytes;
                        param_grads_wide += xt->dt >= 4 ? xt->bytes : 0;
                    } else {
                        grad[x] = (int16_t)pool_new(&pool, xt->bytes, &live);
                        live -= xt->bytes;
                    }
                    continue;
                }
                if (xt->role == ROLE_PARAM) {
                    /* AccumulateGrad: the first gradient becomes .grad, later ones add in place. */
                    live += xt->bytes;
                    if (grad[x] >= 0) {
                        transient += xt->bytes;
                    } else {
                        param_grads += xt->bytes;
                        param_grads_wide += xt->dt >= 4 ? xt->bytes : 0;
                    }
                    grad[x] = 0;
                } else if ((op->grad_alias >> j) & 1u) {
                    if (grad[x] < 0) {
                        grad[x] = (int16_t)gout;
                        pool.refs[gout]++;
                    } else {
                        /* The buffer is shared, so autograd adds out of place. */
                        int s = pool_new(&pool, xt->bytes, &live);
                        deferred[ndeferred++] = grad[x];
                        grad[x] = (int16_t)s;
                    }
                } else if (grad[x] < 0) {
                    grad[x] = (int16_t)pool_new(&pool, xt->bytes, &live);
                } else if (pool.refs[grad[x]] == 1) {
                    live += xt->bytes; /* computed, then added in place */
                    transient += xt->bytes;
                } else {
                    int s = pool_new(&pool, xt->bytes, &live);
                    live += xt->bytes; /* the new term before the sum replaces both */
                    transient += xt->bytes;
                    deferred[ndeferred++] = grad[x];
                    grad[x] = (int16_t)s;
                }
            }
            /* A non-reentrant recomputation's saved tensors go when the
             * function returns, before the engine reduces or casts its
             * products (the unpacked tensor was the only reference); a
             * node's own saved tensors, when it is released, after. */
            uint64_t now = live + op->bwd_extra;
            if (op->bwd_final != 0 && pass == 1)
                now -= release[i] < op->bwd_final ? release[i] : op->bwd_final;
            if (now > peak)
                peak = now;
            record(&log, kind, now, i, param_grads);
            live -= transient;
            for (int k = 0; k < ndeferred; k++)
                pool_drop(&pool, deferred[k], &live);
            if (gout >= 0)
                pool_drop(&pool, gout, &live);
            live -= release[i];
            /* An aux output that held the input gradients is theirs now. */
            if (from_aux && (op->save & SAVE_AUX))
                live += t[op->aux].bytes;
        }
        if (pass == 0)
            *at_stop = live;
    }
    g->nevents = log.n;
    c->bwd_peak = peak;
    c->param_grads = param_grads;
    c->param_grads_wide = param_grads_wide;
    if (held_grad >= 0)
        pool_drop(&pool, held_grad, &live);
    c->bwd_end = live;
    c->input_grad = 0;
    for (int k = 0; k < graph_input_count(g); k++) {
        tid x = (tid)graph_input_at(g, k);
        if (t[x].role == ROLE_INPUT && grad[x] >= 0)
            c->input_grad = pool.bytes[grad[x]];
    }
}

/* A recomputation that stops early runs when backward first unpacks a saved
 * tensor, at the stop's op: the gradients of the ops after it, which save
 * nothing, are live by then (a residual sum's cast for its low-precision
 * branch), or already freed. Its forward moves by that much. */
GRAPH_INLINE void shift_recomputation(graph *g, int kind, seg_cost *c, uint64_t at_stop)
{
    uint64_t up = at_stop > c->bwd_start ? at_stop - c->bwd_start : 0;
    uint64_t down = at_stop < c->bwd_start ? c->bwd_start - at_stop : 0;
    if (down > c->fwd_peak)
        down = c->fwd_peak;
    c->fwd_peak = c->fwd_peak + up - down;
    if (kind != LOG_NONE && (up | down) != 0) {
        uint64_t *ev = g->events; /* a local: the stores cannot alias it */
        int n = g->nevents_forward;
        if (down == 0) /* the usual shift: a plain add, which the compiler vectorizes */
            for (int k = 0; k < n; k++)
                ev[k] += up;
        else
            for (int k = 0; k < n; k++)
                ev[k] = ev[k] + up - (ev[k] < down ? ev[k] : down);
    }
}

GRAPH_INLINE void simulate(graph *g, int kind, int mode, seg_cost *c)
{
    int packed = mode == SIM_PACKED, no_grad = mode == SIM_NO_GRAD || packed;
    int stop = mode == SIM_EARLY_STOP ? last_save(g) : -1;
    uint64_t release[GRAPH_MAX_OPS], at_stop = 0;
    const uint64_t *release_at = release;
    memset(c, 0, sizeof *c);
    g->nevents = 0;
    simulate_forward(g, kind, stop, no_grad, packed, release, &release_at, c);
    g->nevents_forward = g->nevents;
    if (no_grad || !g->grad_enabled || g->output < 0 || !g->t[g->output].rg)
        return;
    simulate_backward(g, kind, mode == SIM_HOLD_OUTPUT, stop, release_at, c, &at_stop);
    if (stop >= 0)
        shift_recomputation(g, kind, c, at_stop);
}

void llmem_graph_simulate(graph *g, int mode, seg_cost *c)
{
    if (g->events != NULL && g->events_cap < GRAPH_MAX_EVENTS)
        g->overflow = 1;
    if (g->events == NULL || g->overflow)
        simulate(g, LOG_NONE, mode, c);
    else if (g->event_ops == NULL)
        simulate(g, LOG_LIVE, mode, c);
    else
        simulate(g, LOG_FULL, mode, c);
}
