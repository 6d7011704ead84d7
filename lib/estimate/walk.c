/* SPDX-License-Identifier: MIT */
/*
 * The walk (walk.h). Each segment (embedding, decoder layer, head and loss)
 * is simulated once on the scratch graph; identical layers are then combined
 * in closed form, because the live set grows (forward) or changes (backward)
 * by the same amount per layer, so within a run of identical layers the peak
 * is at one of its ends.
 */
#include "estimate/walk.h"

#include "core/compiler.h"
#include "model/families.h"
#include "parallel/parallel.h"

#include <string.h>

/* Runs of identical layers: frozen, first trainable, the rest, plus one
 * split where dense layers give way to experts or, in a model without
 * experts (OPT's post-norm), after a first layer fed in another dtype. */
#define MAX_GROUPS LAYER_RUNS_MAX
/* A rank's runs once alternate layers take the window (alternate_runs):
 * each run may become two interleaved ones and a last layer alone. */
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

/* The maxima of a walk. Moments of forward and backward are recorded for
 * this micro-batch alone; the other micro-batches in flight add one stash
 * each to all of them at the end (a constant shift keeps which moment is the
 * largest), while the optimizer step runs once, after every micro-batch. */
typedef struct moment {
    uint64_t total, grads, gathered; /* gathered: parameters gathered (ZeRO-3, FSDP) */
    int phase;
} moment;

typedef struct walk {
    uint64_t live, grads;       /* bytes live, and how many of them are gradients */
    uint64_t fixed;             /* weights, buffers, states, batch: live throughout */
    moment step, opt;           /* the largest moment of forward/backward, of the optimizer */
    uint64_t temp_max;          /* temporaries' maximum over forward and backward */
    uint64_t phase_peak[PHASE_COUNT];
    walk_log *log;              /* the moments, for a compiled walk (walkform.h), or NULL */
} walk;

static inline void candidate(walk *w, int phase, uint64_t total, uint64_t grads,
                             uint64_t gathered)
{
    moment *best = phase == LLMEM_PHASE_OPTIMIZER ? &w->opt : &w->step;
    if (total > w->phase_peak[phase - 1])
        w->phase_peak[phase - 1] = total;
    if (total > best->total)
        *best = (moment){ total, grads, gathered, phase };
    if (phase != LLMEM_PHASE_OPTIMIZER && total - w->fixed - grads > w->temp_max)
        w->temp_max = total - w->fixed - grads;
}

/* A moment: base bytes plus a segment's peak (src: its position x 2 + 1 for
 * backward, or -1 for none), gradients and gathered parameters among them,
 * logged for a compiled walk when asked. */
static inline void moment_at(walk *w, int phase, uint64_t base, uint64_t peak, int src,
                             uint64_t grads, uint64_t gathered)
{
    walk_log *l = w->log;
    if (l != NULL) {
        if (l->n < WALK_MOMENTS) {
            l->phase[l->n] = (int8_t)phase;
            l->src[l->n] = (int8_t)src;
            l->base[l->n] = base;
            l->grads[l->n] = grads;
            l->gathered[l->n] = gathered;
            l->n++;
        } else {
            l->overflow = 1;
        }
    }
    candidate(w, phase, base + peak, grads, gathered);
}

#define FWD_OF(pos) (2 * (pos)) /* a moment's source (walk_log.src) */
#define BWD_OF(pos) (2 * (pos) + 1)

/* The peak over both, with `stash` more bytes live in forward and backward. */
static inline void finish(const walk *w, uint64_t stash, walk_result *r)
{
    uint64_t opt_temp = w->opt.total - w->fixed - w->opt.grads;
    moment step = w->step;
    step.total += stash;
    /* A tie goes to the earlier moment: the optimizer step comes last. */
    const moment *peak = w->opt.total > step.total ? &w->opt : &step;
    r->peak = peak->total;
    r->peak_phase = peak->phase;
    r->peak_grads = peak->grads;
    r->peak_gathered = peak->gathered;
    r->fixed = w->fixed;
    r->temp_max = w->temp_max + stash > opt_temp ? w->temp_max + stash : opt_temp;
    for (int i = 0; i < PHASE_COUNT; i++)
        r->phase_peak[i] = w->phase_peak[i] + (i + 1 != LLMEM_PHASE_OPTIMIZER && w->phase_peak[i] ? stash : 0);
}

static void record(walk_scratch *e, build *b, segment_builder fn, const model_shape *m,
                   const seg_spec *spec, int grad_enabled)
{
    llmem_graph_reset(&e->graph, grad_enabled);
    b->g = &e->graph;
    fn(b, m, spec);
    e->graph_overflow |= e->graph.overflow;
    e->taped = 0;
}

static void simulate_now(walk_scratch *e, build *b, segment_builder fn, const model_shape *m,
                         const seg_spec *spec, int grad_enabled, int mode, seg_cost *c)
{
    record(e, b, fn, m, spec, grad_enabled);
    llmem_graph_simulate(&e->graph, mode, c);
}

/* Whether a walk's segments are simulated at every point, never cached:
 * the cache fits a segment's bytes as polynomials of batch and seq from
 * small samples (sim/compiled.h), which these are not. Under sequence
 * parallelism a rank holds batch x seq / sp tokens, a floor division (with
 * 128 ranks small samples hold 0 tokens and a polynomial of zeros fits
 * them: found by the estimate fuzzer). */
static int uncached(const build *b)
{
    return b->sp > 1;
}

/* A segment's cost: from the handle's cache of segments when it knows this
 * one (estimate/cache.h), 1; else 0, and the caller runs sim_cached. */
static int cached(walk_scratch *e, const build *b, const model_shape *m, const seg_query *q,
                  seg_cost *c)
{
    e->positions++;
    if (!e->uncached && llmem_segcache_lookup(&e->cache, m, b, q, c))
        return 1;
    e->cache.walk_full = 0;
    return 0;
}

/* Run the tape on the scratch graph in `mode`, the simulation teaching the
 * cache what `cached` just missed. */
static void sim_cached(walk_scratch *e, const build *b, const seg_query *q, int mode, seg_cost *c)
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
static seg_query query(const build *b, segment_builder fn, const model_shape *m,
                       const seg_spec *spec, int grad_enabled, int mode)
{
    int at_one_seq = llmem_model_window_reached(m, b->attention, b->seq);
    return (seg_query){ fn, spec, grad_enabled, mode, b->hold_input,
                        llmem_regime_of(b->batch, b->seq, at_one_seq),
                        at_one_seq ? b->seq : 0, llmem_layers_piece(b, m, spec) };
}

/* A segment's cost, from the cache or simulated. */
static void simulate(walk_scratch *e, build *b, segment_builder fn, const model_shape *m,
                     const seg_spec *spec, int grad_enabled, int mode, seg_cost *c)
{
    seg_query q = query(b, fn, m, spec, grad_enabled, mode);
    if (cached(e, b, m, &q, c))
        return;
    record(e, b, fn, m, spec, grad_enabled);
    sim_cached(e, b, &q, mode, c);
}

/* Autocast caches the low-precision copy of each trainable fp32 leaf weight
 * until it exits, even under no_grad: checkpointed layers keep theirs to the
 * end of the forward pass. Weights already in the compute dtype (bf16-autocast)
 * are not cast, so not cached; LoRA's fp32 adapters are. */
static uint64_t autocast_cache_bytes(const model_shape *m, const setup *s, const seg_spec *spec,
                                     const build *b)
{
    model_linear lin[MODEL_MAX_LINEARS];
    uint64_t bytes = 0, cdt = (uint64_t)s->compute_dt;
    if (!s->autocast)
        return 0;
    int n = llmem_model_layer_linears(m, lin);
    /* FalconLinear's weight.T is a view, not a leaf: cast at every use, never cached
     * (sequence parallelism builds Megatron's linears instead: lib/layers/falcon.c). */
    int falcon_linear = (m->traits & TRAIT_UNCACHED_CAST) && b->sp == 1;
    int cached = !falcon_linear && s->param_dt != s->compute_dt;
    for (int i = 0; i < n; i++) {
        if (spec->moe && !(lin[i].lora_target & LORA_ATTENTION_ROLES))
            continue; /* the experts replace the dense MLP */
        if (spec->weights_trainable && !spec->nf4 && cached) /* weight and bias: both leaves */
            bytes += (lin[i].in * lin[i].out + (lin[i].bias ? lin[i].out : 0)) * cdt;
        if (spec->lora_targets & lin[i].lora_target)
            bytes += spec->lora_rank * (lin[i].in + lin[i].out) * cdt;
    }
    if (!spec->moe)
        return bytes;
    uint64_t H = m->hidden, held = m->experts / b->ep, mats = m->mlp == LLMEM_MLP_GATED ? 3 : 2;
    uint64_t experts_inner = held * m->expert_intermediate + m->shared_intermediate;
    if (spec->weights_trainable && !spec->nf4 && s->param_dt != s->compute_dt)
        bytes += (mats * H * experts_inner + H * m->experts) * cdt;
    /* adapters on the experts' and the shared expert's projections */
    unsigned on = spec->lora_targets;
    uint64_t projections = (uint64_t)((on & LLMEM_LORA_GATE) && mats == 3) +
                           (uint64_t)((on & LLMEM_LORA_UP) != 0) +
                           (uint64_t)((on & LLMEM_LORA_DOWN) != 0);
    uint64_t adapted = held * (H + m->expert_intermediate) +
                       (m->shared_intermediate ? H + m->shared_intermediate : 0);
    return bytes + projections * spec->lora_rank * adapted * cdt;
}

/* Whether autocast casts the weights and caches the casts of those that
 * require grad: under no_grad too, so that a layer's trainable weights
 * then still matter. */
static int casts_cached(const build *b)
{
    return b->autocast && b->param_dt != b->compute;
}

/* Whether every parameter of a layer of this spec trains, or none: a
 * layer without adapters whose weights and norms train together. */
static int params_uniform(const seg_spec *s)
{
    return s->lora_targets == 0 && s->weights_trainable == s->norms_trainable;
}

/* Whether a layer's tape of spec x serves spec y once retargeted: they
 * differ at most in what requires grad (the input, uniform parameters). */
static int retargetable(const seg_spec *x, const seg_spec *y)
{
    seg_spec a = *x;
    a.input_rg = y->input_rg;
    if (params_uniform(x) && params_uniform(y)) {
        a.weights_trainable = y->weights_trainable;
        a.norms_trainable = y->norms_trainable;
    }
    return !memcmp(&a, y, sizeof a);
}

/* The decoder layer of spec on the scratch graph, as recorded with grad
 * enabled and without the input's hold: the tape already there when it
 * serves (retargeted unless it is that spec's), else recorded. One
 * recording so serves a step's layers that differ only in what trains or
 * in their input (LoRA's first layer and the rest, freeze's frozen and
 * trainable ones), and a checkpointed layer's no_grad forward and
 * recomputation (SIM_NO_GRAD: graph.h). */
static void layer_tape(walk_scratch *e, build *b, const model_shape *m, const seg_spec *spec)
{
    if (e->taped && retargetable(&e->tape_spec, spec)) {
        if (memcmp(&e->tape_spec, spec, sizeof *spec))
            llmem_graph_retarget(&e->graph, spec->input_rg,
                                 params_uniform(spec) ? spec->weights_trainable : -1);
    } else {
        record(e, b, llmem_layers_decoder, m, spec, 1);
        e->taped = 1;
    }
    e->graph.hold_input = 0;
    e->tape_spec = *spec;
}

/* Whether a layer's output requires grad: its input does, or it trains. */
static int output_rg(const seg_spec *s)
{
    return s->input_rg || s->weights_trainable || s->norms_trainable || s->lora_targets;
}

/* A tape for a layer in which nothing requires grad (freeze's frozen
 * layers, run before the rest): autograd saves nothing there, so it runs
 * as under no_grad, on any tape that differs only in what requires grad
 * (but for autocast's cache: its own then). Recorded when none serves,
 * with its parameters training, as the trainable layers that follow run it. */
static void frozen_tape(walk_scratch *e, build *b, const model_shape *m, const seg_spec *spec)
{
    if (casts_cached(b)) {
        layer_tape(e, b, m, spec);
        return;
    }
    if (e->taped && retargetable(&e->tape_spec, spec))
        return;
    seg_spec trains = *spec;
    if (params_uniform(spec))
        trains.weights_trainable = trains.norms_trainable = 1;
    layer_tape(e, b, m, &trains);
}

/* A layer run plainly (not checkpointed). */
static void simulate_layer(walk_scratch *e, build *b, const model_shape *m, const seg_spec *spec,
                           seg_cost *c)
{
    seg_query q = query(b, llmem_layers_decoder, m, spec, 1, SIM_PLAIN);
    if (cached(e, b, m, &q, c))
        return;
    if (output_rg(spec))
        layer_tape(e, b, m, spec);
    else
        frozen_tape(e, b, m, spec);
    if (b->hold_input) /* the caller's reference: the model's loop variable */
        llmem_layers_hold_input(&e->graph);
    sim_cached(e, b, &q, output_rg(spec) ? SIM_PLAIN : SIM_NO_GRAD, c);
}

/* The cache key of a layer's forward under no_grad: what requires grad is
 * moot there (nothing is saved), so freeze's frozen and trainable layers
 * share it, unless autocast caches the trainable weights' casts. */
static seg_spec no_grad_key(const build *b, const seg_spec *s)
{
    seg_spec k = *s;
    k.input_rg = 0;
    if (params_uniform(s) && !casts_cached(b))
        k.weights_trainable = k.norms_trainable = 0;
    return k;
}

/* A checkpointed layer's first forward: reentrant, under no_grad;
 * non-reentrant, with grad enabled and its saves packed (what autograd
 * makes only to save is made there). */
static int checkpointed_forward(int recompute)
{
    return recompute == SIM_EARLY_STOP ? SIM_PACKED : SIM_NO_GRAD;
}

/* A checkpointed layer's two runs, each holding its input (the checkpoint
 * keeps it for the recomputation): its forward, nothing saved (fwd), and
 * its recomputation in backward (again, as mode). */
static void simulate_checkpointed(walk_scratch *e, build *b, const model_shape *m,
                                  layer_group *grp, int mode, seg_cost *fwd, seg_cost *again)
{
    seg_spec key = no_grad_key(b, &grp->spec);
    b->hold_input = 1;
    grp->pos_fwd = e->positions;
    int first = checkpointed_forward(mode);
    seg_query q = query(b, llmem_layers_decoder, m, &key, 0, first);
    if (!cached(e, b, m, &q, fwd)) {
        layer_tape(e, b, m, &grp->spec);
        llmem_layers_hold_input(&e->graph);
        sim_cached(e, b, &q, first, fwd);
    }
    grp->pos_bwd = e->positions;
    q = query(b, llmem_layers_decoder, m, &grp->spec, 1, mode);
    if (!cached(e, b, m, &q, again)) {
        layer_tape(e, b, m, &grp->spec);
        llmem_layers_hold_input(&e->graph);
        sim_cached(e, b, &q, mode, again);
    }
    b->hold_input = 0;
}

/* How a checkpointed layer is recomputed in backward (SIM_PLAIN: not checkpointed). */
static int recompute_mode(const setup *s)
{
    if (s->grad_ckpt == LLMEM_GRAD_CKPT_NONE)
        return SIM_PLAIN;
    return s->grad_ckpt == LLMEM_GRAD_CKPT_REENTRANT ? SIM_HOLD_OUTPUT : SIM_EARLY_STOP;
}

static void reduce_group(walk_scratch *e, build *b, const model_shape *m, const setup *s,
                         layer_group *grp)
{
    uint64_t x_bytes = grp->x_bytes;
    seg_cost c;
    if (s->grad_ckpt != LLMEM_GRAD_CKPT_NONE) {
        /* torch.utils.checkpoint: the layer keeps only its input (reentrant: run
         * under no_grad; non-reentrant: saved-tensor hooks pack placeholders) and
         * is recomputed in backward, whole and holding its output and incoming
         * gradient (reentrant), or up to its last saved tensor (non-reentrant). */
        seg_cost again;
        uint64_t cache = autocast_cache_bytes(m, s, &grp->spec, b);
        simulate_checkpointed(e, b, m, grp, recompute_mode(s), &c, &again);
        grp->seg_fwd_peak = c.fwd_peak;
        grp->seg_bwd_fwd_peak = again.fwd_peak;
        grp->seg_bwd_peak = again.bwd_peak;
        grp->fwd_growth = c.out_bytes + cache;
        uint64_t grad_out = again.out_bytes;
        uint64_t held_input = again.input_saved ? 0 : x_bytes;
        grp->cached = cache;
        grp->grad_out = grad_out;
        grp->held_input = held_input;
        grp->bwd_start = x_bytes + grad_out;
        grp->bwd_end = again.param_grads + again.input_grad;
        grp->param_grads = again.param_grads;
        grp->param_grads_wide = again.param_grads_wide;
        return;
    }
    grp->pos_fwd = grp->pos_bwd = e->positions;
    simulate_layer(e, b, m, &grp->spec, &c);
    grp->input_saved = c.input_saved;
    grp->seg_fwd_peak = c.fwd_peak;
    grp->seg_bwd_peak = c.bwd_peak;
    grp->fwd_growth = c.persist + c.out_bytes + c.cached - x_bytes;
    grp->cached = c.cached;
    grp->bwd_start = c.bwd_start;
    grp->bwd_end = c.param_grads + c.input_grad;
    grp->param_grads = c.param_grads;
    grp->param_grads_wide = c.param_grads_wide;
}

/* Split the run that crosses the layer `boundary` in two, the second's
 * input requiring grad as the first's output does (split_runs' reasons). */
static int split_at(layer_group *g, int n, uint64_t boundary)
{
    uint64_t first = 0;
    for (int i = 0; i < n; first += g[i].count, i++) {
        if (first < boundary && boundary < first + g[i].count) {
            memmove(&g[i + 1], &g[i], (size_t)(n - i) * sizeof *g);
            g[i].count = boundary - first;
            g[i + 1].count -= g[i].count;
            g[i + 1].spec.input_rg = output_rg(&g[i].spec);
            return n + 1;
        }
    }
    return n;
}

/* Where the layer runs of a method split further: in a mixture-of-experts
 * model the first dense_layers layers have a dense MLP (the runs that cross
 * that boundary split, and the MoE runs are marked); a first layer fed in
 * the embedding's dtype, not the stream's, runs alone. A model has one
 * reason at most (post-norm is OPT's alone, which has no experts), so with
 * the method's three runs at most LAYER_RUNS_MAX. */
static int split_runs(const model_shape *m, const setup *s, layer_group *g, int n)
{
    build b = { .autocast = s->autocast, .param_dt = s->param_dt };
    if (embedding_dt(&b, m) != residual_dt(&b, m)) {
        n = split_at(g, n, 1);
        g[0].spec.embedded_input = 1;
        return n;
    }
    if (m->experts == 0)
        return n; /* every run dense, as layer_groups made it */
    uint64_t boundary = m->dense_layers, first = 0;
    n = split_at(g, n, boundary);
    for (int i = 0; i < n; i++) {
        g[i].spec.moe = first >= boundary;
        first += g[i].count;
    }
    return n;
}

enum { PAIR_NONE, PAIR_FIRST, PAIR_SECOND };

/* The runs of a one-stage rank (the layouts check refuses pipelines here)
 * as runs of identical layers again: a run of n >= 2 layers becomes its
 * pairs, two interleaved runs of n / 2 layers each, the first's layers of
 * the kind its first layer is, and an odd last layer alone. */
static int alternate_runs(const layer_group *in, int n, layer_group *out)
{
    uint64_t at = 0; /* the model's index of the run's first layer */
    int k = 0;
    for (int i = 0; i < n; at += in[i].count, i++) {
        uint64_t pairs = in[i].count / 2;
        if (pairs > 0) {
            for (int j = 0; j < 2; j++) {
                out[k] = in[i];
                out[k].count = pairs;
                out[k].pair = j == 0 ? PAIR_FIRST : PAIR_SECOND;
                out[k++].spec.full_attention = (int)((at + (uint64_t)j) % 2);
            }
        }
        if (in[i].count % 2 != 0) {
            out[k] = in[i];
            out[k].count = 1;
            out[k++].spec.full_attention = (int)((at + in[i].count - 1) % 2);
        }
    }
    return k;
}

/* The runs of identical layers a method produces. */
static int layer_groups(const model_shape *m, const setup *s, layer_group *g)
{
    int ckpt = s->grad_ckpt != LLMEM_GRAD_CKPT_NONE, n = 0;
    int lora = s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA;
    seg_spec trainable = { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 };
    seg_spec adapters = { .input_rg = 1, .lora_targets = s->lora_targets,
                          .lora_rank = s->lora_rank,
                          .nf4 = s->method == LLMEM_METHOD_QLORA };
    seg_spec frozen = { .input_rg = ckpt };
    if (lora) {
        /* The frozen embedding's output needs no grad, so the first layer saves
         * less, unless PEFT's enable_input_require_grads (used with checkpointing). */
        g[n] = (layer_group){ .count = ckpt ? m->layers : 1, .spec = adapters };
        g[n++].spec.input_rg = ckpt;
        if (!ckpt && m->layers > 1)
            g[n++] = (layer_group){ .count = m->layers - 1, .spec = adapters };
    } else if (s->method == LLMEM_METHOD_FREEZE) {
        uint64_t rest = m->layers - s->frozen_layers;
        if (s->frozen_layers > 0)
            g[n++] = (layer_group){ .count = s->frozen_layers, .spec = frozen };
        if (rest > 0 && !ckpt) {
            /* its input comes from frozen layers or the frozen embedding */
            g[n] = (layer_group){ .count = 1, .spec = trainable };
            g[n++].spec.input_rg = 0;
            rest--;
        }
        if (rest > 0)
            g[n++] = (layer_group){ .count = rest, .spec = trainable };
    } else {
        g[n++] = (layer_group){ .count = m->layers, .spec = trainable };
    }
    return split_runs(m, s, g, n);
}

/* Simulate a segment again with its events logged, for the timeline. */
static void trace_simulate(walk_scratch *e, walk_trace *t, build *b, segment_builder fn,
                           const model_shape *m, const seg_spec *spec, int grad_enabled,
                           int mode)
{
    seg_cost c;
    e->graph.events = t->events;
    e->graph.event_ops = t->ops;
    e->graph.event_grads = t->grads;
    e->graph.events_cap = TRACE_EVENTS;
    simulate_now(e, b, fn, m, spec, grad_enabled, mode, &c);
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
static void trace_forward(walk_scratch *e, walk_trace *t, build *b, const model_shape *m,
                          const layer_group *g, const walk_input *in, uint64_t first,
                          uint64_t live, uint64_t growth,
                          uint64_t gathered, uint64_t grads, int mode)
{
    trace_simulate(e, t, b, llmem_layers_decoder, m, &g->spec, 1, mode);
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
static void trace_backward(walk_scratch *e, walk_trace *t, build *b, const model_shape *m,
                           const layer_group *g, const walk_input *in, uint64_t first,
                           uint64_t live, int64_t delta,
                           uint64_t grads, uint64_t kept, uint64_t gathered, int mode)
{
    uint64_t shown = delta >= 0 ? g->count - 1 : 0;
    int ckpt = mode != SIM_PLAIN;
    b->hold_input = ckpt;
    trace_simulate(e, t, b, llmem_layers_decoder, m, &g->spec, 1, mode);
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

/* Where a second mask goes (Gemma-2 eager: a mask per layer type,
 * shared_bytes.mask_other). Under non-reentrant checkpointing each layer's
 * checkpoint holds its type's mask in its call until that layer's backward
 * (reentrant ones, to the end of backward: in_call), so the
 * mask that the stage's first layer in the graph (k) does not take goes
 * with the backward of layer k + 1: the group of k is split so that k
 * stands alone, and the walk releases the mask before that group's
 * backward (*before: its index). With no layer above k in the stage nothing
 * holds the mask past the forward (*before: -2). Interleaved chunks (their
 * layers not contiguous) keep it with the other to the end (*before: -1):
 * at most one mask high in layer k's backward. Returns the groups' count. */
static int place_other_mask(layer_group *g, int n, uint64_t chunks, int *before)
{
    int i = 0;
    *before = -1;
    while (i < n && g[i].bwd_start == 0) /* frozen layers outside the graph */
        i++;
    if (chunks != 1 || i == n)
        return n;
    if (g[i].count == 1) {
        *before = i + 1 < n ? i : -2;
        return n;
    }
    if (n == MAX_RUNS)
        return n; /* no room to split: kept to the end (not reached: runs are few) */
    memmove(&g[i + 1], &g[i], (size_t)(n - i) * sizeof *g);
    g[i].count = 1;
    g[i + 1].count -= 1;
    *before = i;
    return n + 1;
}

/* The groups of the layers a rank runs, in order: its chunks' in turn, a
 * group running on from one chunk to the next being one. The layers ascend,
 * so there are at most as many as the step's groups. */
static int clip_groups(const layer_group *all, int n, const walk_input *in, layer_group *out)
{
    uint64_t per = in->layer_count / in->chunks;
    int k = 0, last = -1;
    for (uint64_t c = 0; c < in->chunks; c++) {
        uint64_t begin = 0, first = in->layer_first + c * in->chunk_stride, end = first + per;
        for (int i = 0; i < n; i++) {
            uint64_t lo = begin > first ? begin : first;
            uint64_t hi = begin + all[i].count < end ? begin + all[i].count : end;
            begin += all[i].count;
            if (lo >= hi)
                continue;
            if (i == last) {
                out[k - 1].count += hi - lo;
                continue;
            }
            out[k] = all[i];
            out[k++].count = hi - lo;
            last = i;
        }
    }
    return k;
}

/* The bounds between the step's runs of identical layers: where each run
 * after the first starts (llmem_layout_ranks). Returns how many. */
int llmem_walk_layer_bounds(const model_shape *m, const setup *s, uint64_t *bounds)
{
    layer_group g[MAX_GROUPS];
    int n = layer_groups(m, s, g);
    uint64_t at = 0;
    for (int i = 0; i + 1 < n; i++)
        bounds[i] = at += g[i].count;
    return n > 0 ? n - 1 : 0;
}

void llmem_walk_single(walk_input *in, const model_shape *m, const setup *s,
                       const step_static *st)
{
    memset(in, 0, sizeof *in);
    in->model = m;
    in->setup = s;
    in->statics = st;
    in->layer_first = 0;
    in->layer_count = m->layers;
    in->chunks = 1;
    in->embedding = in->head = 1;
    in->in_flight = in->in_flight_den = 1;
    in->grads_persist = s->grad_accum > 1;
    in->keep = (walk_keep){ 1, 1, 1, 0, 0, 1 };
    in->sp = in->ep = 1;
}

/* Gradient bytes kept of `grads` made by a backward, `wide` of them of
 * 4-byte parameters (walk.h, walk_keep). */
static uint64_t kept_of(const walk_keep *k, uint64_t grads, uint64_t wide)
{
    if (k->den == 0)
        return 0;
    uint64_t kept = (grads - wide) * k->k16 + wide * k->k32;
    return k->den == 1 ? kept : kept / k->den; /* a division costs as much as the rest */
}

/* What stays of a layer's parameter gradients: its experts' over their
 * own shards when they shard apart (walk_keep). A layer whose gradients are
 * fewer than the experts' share made none for its experts (method freeze's
 * frozen layers under checkpointing): all of it shards as the rest does. The balance of backward's end
 * against the statics refuses any other case where this would be wrong. */
static uint64_t layer_kept(const walk_keep *k, const layer_group *g)
{
    uint64_t e = k->expert, ew = k->expert_wide;
    if (!g->spec.moe || e == 0 || k->expert_den == k->den || g->param_grads < e ||
        g->param_grads_wide < ew)
        return kept_of(k, g->param_grads, g->param_grads_wide);
    walk_keep experts = { k->k16, k->k32, k->expert_den, 0, 0, 0 };
    return kept_of(k, g->param_grads - e, g->param_grads_wide - ew) + kept_of(&experts, e, ew);
}

/* A layer's backward moment from `base` bytes (its input's place taken by
 * the segment's footing): its backward peak, or under checkpointing the
 * larger of its recomputation's forward and backward. */
static inline void layer_backward(walk *w, const layer_group *g, uint64_t base, uint64_t grads,
                                  uint64_t gathered, int ckpt)
{
    if (!ckpt) {
        moment_at(w, LLMEM_PHASE_BACKWARD, base, g->seg_bwd_peak, BWD_OF(g->pos_bwd), grads,
                  gathered);
        return;
    }
    moment_at(w, LLMEM_PHASE_BACKWARD, base + g->grad_out, g->seg_bwd_fwd_peak,
              FWD_OF(g->pos_bwd), grads, gathered);
    moment_at(w, LLMEM_PHASE_BACKWARD, base + g->held_input, g->seg_bwd_peak,
              BWD_OF(g->pos_bwd), grads, gathered);
}

/* What the other micro-batches in flight add: one stash each. */
static uint64_t in_flight_extra(uint64_t in_flight, uint64_t in_flight_den, uint64_t stash)
{
    uint64_t den = in_flight_den ? in_flight_den : 1;
    return llmem_walk_stashes(in_flight, in_flight_den) ? (in_flight - den) * stash / den : 0;
}

/* Forward through two interleaved runs, g (PAIR_FIRST) and g[1], of
 * g->count pairs each, from w->live (the input included): each run peaks in
 * its last layer, the live bytes only growing, the first's after count - 1
 * pairs, the second's one layer later. `held_first`: the first layer's
 * input, held from that layer's end on when a run of one pair simulated it
 * holding it (first_alone). held_all: the layers' held parameters before. */
static void forward_pairs(walk *w, const layer_group *g, uint64_t held, uint64_t gather,
                          uint64_t held_all, uint64_t held_first)
{
    const layer_group *h = g + 1;
    uint64_t ga = g->fwd_growth + held, pair = ga + h->fwd_growth + held;
    uint64_t before = w->live + (g->count - 1) * pair, layers = 2 * (g->count - 1);
    moment_at(w, LLMEM_PHASE_FORWARD, before - g->x_bytes + gather, g->seg_fwd_peak,
              FWD_OF(g->pos_fwd), w->grads, held_all + layers * held + gather);
    moment_at(w, LLMEM_PHASE_FORWARD, before + ga + held_first - h->x_bytes + gather,
              h->seg_fwd_peak, FWD_OF(h->pos_fwd), w->grads,
              held_all + (layers + 1) * held + gather);
}

/* The timeline of forward_pairs: each layer op by op, in turn. */
static void trace_forward_pairs(walk_scratch *e, walk_trace *t, build *b, const model_shape *m,
                                const layer_group *g, const walk_input *in, uint64_t first,
                                uint64_t live, uint64_t held, uint64_t gathered, uint64_t grads,
                                int mode, int first_alone, uint64_t held_first)
{
    for (uint64_t k = 0; k < g->count && t->n < t->cap; k++) {
        for (int j = 0; j < 2; j++) {
            layer_group one = g[j];
            one.count = 1;
            b->hold_input = 1; /* the caller's reference, or the checkpoint's */
            trace_forward(e, t, b, m, &one, in, first + 2 * k + (uint64_t)j, live,
                          g[j].fwd_growth + held, gathered, grads, mode);
            live += g[j].fwd_growth + held + (k == 0 && j == 0 && first_alone ? held_first : 0);
        }
    }
    b->hold_input = 0;
}

/* A layer's change of the live bytes in backward (kept: its gradients kept). */
static int64_t backward_delta(const layer_group *g, uint64_t kept, uint64_t held)
{
    return (int64_t)(g->bwd_end - g->param_grads + kept) - (int64_t)g->bwd_start - (int64_t)held;
}

/* Backward through two interleaved runs, g (PAIR_SECOND) and the group
 * before it, of g->count pairs each, from w->live: each pair's second layer
 * first. Each run's moments at its first and its last layer (a layer
 * changes the live bytes by the same amount each time). */
static void backward_pairs(walk *w, const layer_group *g, uint64_t kept_first, uint64_t kept,
                           uint64_t held, uint64_t gather, uint64_t *held_all, int ckpt)
{
    const layer_group *f = g - 1;
    int64_t d = backward_delta(g, kept, held), pair = d + backward_delta(f, kept_first, held);
    uint64_t kept_pair = kept + kept_first, n = g->count;
    for (int end = 0; end < 2; end++) {
        uint64_t k = end == 0 ? 0 : n - 1;
        uint64_t at = (uint64_t)((int64_t)w->live + (int64_t)k * pair);
        uint64_t grads = w->grads + k * kept_pair, gathered = *held_all - 2 * k * held + gather;
        layer_backward(w, g, at - g->bwd_start + gather, grads, gathered, ckpt);
        layer_backward(w, f, (uint64_t)((int64_t)at + d) - f->bwd_start + gather, grads + kept,
                       gathered - held, ckpt);
    }
    *held_all -= 2 * n * held;
    w->live = (uint64_t)((int64_t)w->live + (int64_t)n * pair);
    w->grads += n * kept_pair;
}

/* The timeline of backward_pairs: each layer op by op, in turn. */
static void trace_backward_pairs(walk_scratch *e, walk_trace *t, build *b, const model_shape *m,
                                 const layer_group *g, const walk_input *in, uint64_t first,
                                 uint64_t live, uint64_t grads, uint64_t kept_first,
                                 uint64_t kept, uint64_t held, uint64_t gathered, int mode)
{
    const layer_group *run[2] = { g, g - 1 };
    uint64_t kept_of_run[2] = { kept, kept_first };
    for (uint64_t k = 0; k < g->count && t->n < t->cap; k++) {
        for (int j = 0; j < 2; j++) {
            layer_group one = *run[j];
            one.count = 1;
            int64_t delta = backward_delta(run[j], kept_of_run[j], held);
            trace_backward(e, t, b, m, &one, in, first + 2 * (g->count - 1 - k) + 1 - (uint64_t)j,
                           live, delta, grads, kept_of_run[j], gathered, mode);
            live = (uint64_t)((int64_t)live + delta);
            grads += kept_of_run[j];
        }
    }
}

static int walk_step(walk_scratch *e, const walk_input *in, walk_result *r, walk_log *log)
{
    const model_shape *m = in->model;
    const setup *s = in->setup;
    const step_static *st = in->statics;
    const walk_gather *gather = &in->gather;
    const walk_keep *keep = &in->keep;
    layer_group all[MAX_GROUPS], groups[MAX_RUNS];
    seg_cost emb, head;
    walk w;
    build b;
    int ckpt = s->grad_ckpt != LLMEM_GRAD_CKPT_NONE;
    int accumulating = in->grads_persist;

    memset(&b, 0, sizeof b);
    memset(&emb, 0, sizeof emb);
    memset(&head, 0, sizeof head);
    e->graph_overflow = 0;
    e->positions = 0;
    e->taped = 0; /* a tape of another walk was built for its own batch and seq */
    llmem_segcache_begin(&e->cache, &e->context_name, e->walk_key);
    b.batch = s->batch;
    b.seq = s->seq;
    b.tokens = s->batch * s->seq;
    b.autocast = s->autocast;
    b.compute = s->compute_dt;
    b.param_dt = s->param_dt;
    memcpy(b.dropout, s->dropout, sizeof b.dropout);
    b.lora_dropout = s->lora_dropout;
    b.attention = s->attention;
    b.experts = s->experts;
    b.sp = in->sp;
    b.ep = in->ep;
    b.loss_chunk = e->loss_chunk;
    e->uncached = uncached(&b);
    /* The residual stream between layers (split over sp ranks under sequence parallelism). */
    uint64_t rank_tokens = b.sp == 1 ? b.tokens : b.tokens / b.sp;
    uint64_t x_bytes = rank_tokens * m->hidden * (uint64_t)residual_dt(&b, m);
    uint64_t held = gather->layer_held;

    int nall = layer_groups(m, s, all);
    int ngroups = clip_groups(all, nall, in, groups);
    if (llmem_model_window_alternates(m, b.attention, b.seq)) {
        layer_group one_kind[MAX_GROUPS];
        memcpy(one_kind, groups, (size_t)ngroups * sizeof *groups);
        ngroups = alternate_runs(one_kind, ngroups, groups);
    }
    int embed_trains = llmem_setup_embedding_trains(s);
    int head_trains = llmem_setup_head_trains(s, m);
    seg_spec emb_spec = { .input_rg = all[0].spec.input_rg && !embed_trains,
                          .weights_trainable = embed_trains, .norms_trainable = embed_trains,
                          .projections_trainable = embed_trains };
    /* The embedding step's locals, held until the model's forward returns;
     * the first layer's input among them unless a checkpoint holds it anyway. */
    int input_kept = 0;
    uint64_t locals =
        in->embedding ? llmem_layers_embedding_locals(&b, m, &emb_spec, &input_kept) : 0;
    int hold_first = input_kept && !ckpt && ngroups > 0;
    int first_alone = hold_first && groups[0].count == 1; /* held from its end on */
    /* Every layer's input stays referenced until the layer returns: the
     * model's loop variable (`hidden_states = decoder_layer(hidden_states,
     * ...)`) holds it through the call, whatever the layer saves. */
    for (int i = 0; i < ngroups; i++) {
        groups[i].x_bytes = rank_tokens * m->hidden * (uint64_t)layer_input_dt(&b, m, &groups[i].spec);
        b.hold_input = 1;
        reduce_group(e, &b, m, s, &groups[i]);
        b.hold_input = 0;
    }
    uint64_t first_held = hold_first && !groups[0].input_saved ? groups[0].x_bytes : 0;
    seg_spec head_spec = { .input_rg = output_rg(&all[nall - 1].spec),
                           .weights_trainable = head_trains,
                           .norms_trainable = llmem_setup_final_norm_trains(s),
                           .projections_trainable = embed_trains,
                           .chunked_loss = s->loss == LLMEM_LOSS_CHUNKED };
    int pos_emb = e->positions;
    if (in->embedding)
        simulate(e, &b, llmem_layers_embedding, m, &emb_spec, 1, SIM_PLAIN, &emb);

    shared_bytes sb = llmem_layers_shared_bytes(&b, m, &emb_spec);
    uint64_t ids_saved = in->embedding ? sb.ids_saved : 0;
    uint64_t shared = sb.rope + sb.locals, rope = sb.rope, mask = sb.locals;
    /* A reentrant checkpoint's node keeps the masks in its call until the
     * graph is freed, once backward ends. */
    uint64_t in_call = s->grad_ckpt == LLMEM_GRAD_CKPT_REENTRANT ? sb.in_call : 0;
    int other_before = -1; /* the group before whose backward the second mask goes */
    uint64_t other_mask = ckpt && in_call == 0 ? sb.mask_other : 0;
    if (other_mask > 0)
        ngroups = place_other_mask(groups, ngroups, in->chunks, &other_before);
    if (other_before == -1)
        other_mask = 0; /* held with the rest */
    /* The model's forward returns after the final norm: its locals (the
     * mask, unless checkpoints hold it) go then, inside the head segment.
     * Their bytes follow batch and seq; the cache's context (the model and
     * the build's settings) and the head's key (what else decides them)
     * fix the rest. */
    b.model_locals = locals + first_held + (ckpt ? sb.ids_unheld : mask - ids_saved) +
                     (other_before == -2 ? other_mask : 0);
    head_spec.model_locals =
        b.model_locals == 0
            ? 0
            : 1 | in->embedding << 1 | emb_spec.input_rg << 2 | emb_spec.weights_trainable << 3 |
                  (first_held > 0) << 4 | (other_before == -2) << 5 | (int)s->grad_ckpt << 6;
    int pos_head = e->positions;
    if (in->head)
        simulate(e, &b, llmem_layers_head, m, &head_spec, 1, SIM_PLAIN, &head);

    walk_trace *t = in->trace;
    int fwd_mode = ckpt ? checkpointed_forward(recompute_mode(s)) : SIM_PLAIN;
    if (t != NULL)
        llmem_trace_reset(t);
    memset(&w, 0, sizeof w);
    w.log = log;
    if (log != NULL) {
        log->n = log->overflow = 0;
        log->positions = e->positions;
    }
    w.fixed = statics_fixed(st);
    w.grads = accumulating ? st->grads : 0;
    w.live = w.fixed + w.grads;
    uint64_t start = w.live;

    /* Forward: the embedding, or the activation received from the previous stage. */
    uint64_t cache = 0; /* autocast's cached casts, held until it exits */
    if (in->embedding) {
        moment_at(&w, LLMEM_PHASE_FORWARD, w.live + gather->embedding, emb.fwd_peak,
                  FWD_OF(pos_emb), w.grads, gather->embedding);
        if (t != NULL) {
            trace_simulate(e, t, &b, llmem_layers_embedding, m, &emb_spec, 1, SIM_PLAIN);
            llmem_trace_events(t, &e->graph, 0, e->graph.nevents_forward, LLMEM_PHASE_FORWARD,
                               "embedding", -1, w.live + gather->embedding, w.grads);
        }
        w.live += emb.persist + emb.out_bytes + emb.cached + shared + locals;
        cache += emb.cached;
    } else {
        w.live += x_bytes + shared;
    }
    /* The first layer's input stays after it: a longer run peaks in its
     * last layer, which sees it held throughout; a run of one holds it
     * in its own simulation and from its end on. */
    uint64_t first = 0, held_all = 0; /* first: the rank's own count */
    if (!first_alone)
        w.live += first_held;
    for (int i = 0; i < ngroups; i++) {
        const layer_group *g = &groups[i];
        uint64_t growth = g->fwd_growth + held;
        if (g->pair == PAIR_FIRST) {
            forward_pairs(&w, g, held, gather->layer_fwd, held_all,
                          i == 0 && first_alone ? first_held : 0);
            if (t != NULL)
                trace_forward_pairs(e, t, &b, m, g, in, first, w.live, held, gather->layer_fwd,
                                    w.grads, fwd_mode, i == 0 && first_alone, first_held);
            uint64_t layers = 2 * g->count;
            held_all += layers * held;
            first += layers;
            w.live += g->count * (growth + g[1].fwd_growth + held);
            cache += g->count * (g->cached + g[1].cached);
            if (i == 0 && first_alone)
                w.live += first_held;
            i++;
            continue;
        }
        held_all += g->count * held;
        moment_at(&w, LLMEM_PHASE_FORWARD,
                  w.live + (g->count - 1) * growth - g->x_bytes + gather->layer_fwd,
                  g->seg_fwd_peak, FWD_OF(g->pos_fwd), w.grads,
                  held_all - held + gather->layer_fwd);
        if (t != NULL) {
            b.hold_input = 1; /* the caller's reference, or the checkpoint's */
            trace_forward(e, t, &b, m, g, in, first, w.live, growth, gather->layer_fwd,
                          w.grads, fwd_mode);
            b.hold_input = 0;
        }
        first += g->count;
        w.live += g->count * growth;
        cache += g->count * g->cached;
        if (i == 0 && first_alone)
            w.live += first_held;
    }
    /* the model's locals go when its forward returns: within the head's
     * segment, after the final norm (b.model_locals) */
    w.live -= b.model_locals;
    if (in->head) {
        moment_at(&w, LLMEM_PHASE_FORWARD, w.live - x_bytes + gather->head, head.fwd_peak,
                  FWD_OF(pos_head), w.grads, held_all + gather->head);
        if (t != NULL) {
            trace_simulate(e, t, &b, llmem_layers_head, m, &head_spec, 1, SIM_PLAIN);
            llmem_trace_events(t, &e->graph, 0, e->graph.nevents_forward, LLMEM_PHASE_FORWARD,
                               "head", -1, w.live - x_bytes + gather->head, w.grads);
        }
        w.live += head.persist + head.out_bytes + head.cached - x_bytes;
        cache += head.cached;
    } else {
        w.live -= x_bytes; /* sent to the next stage, then freed (deallocate_output_tensor) */
    }
    w.live -= cache; /* autocast exits after the loss */
    /* What this micro-batch's forward leaves for its backward: parameters
     * kept gathered are the stage's, gathered once for every micro-batch in
     * flight (FSDP's unsharded parameters are one buffer a module). */
    uint64_t stash = w.live - start - held_all;

    /* Backward: the loss and head (or the gradient received from the next
     * stage), then the layers top-down, then the embedding. Each segment's
     * parameter gradients appear whole, then what the layout keeps of them
     * stays (all of them, or a shard; nothing new when accumulating). */
    w.live += gather->backward;
    if (in->head) {
        uint64_t before = w.live - head.persist - head.out_bytes;
        uint64_t kept = accumulating ? 0 : kept_of(keep, head.param_grads, head.param_grads_wide);
        moment_at(&w, LLMEM_PHASE_LOSS_BACKWARD, before + gather->head, head.bwd_peak,
                  BWD_OF(pos_head), w.grads, held_all + gather->head);
        if (t != NULL) {
            trace_simulate(e, t, &b, llmem_layers_head, m, &head_spec, 1, SIM_PLAIN);
            llmem_trace_events(t, &e->graph, e->graph.nevents_forward, e->graph.nevents,
                               LLMEM_PHASE_LOSS_BACKWARD, "loss", -1, before + gather->head,
                               w.grads);
        }
        w.live = before + head.input_grad + kept;
        w.grads += kept;
    } else if (ngroups > 0 && output_rg(&groups[ngroups - 1].spec)) {
        w.live += x_bytes; /* the output's gradient, from the next stage */
    }
    /* else this stage's output needs no gradient (its layers are frozen and
     * take none): the next stage sends nothing back. */
    uint64_t unvisited = 0; /* parameters held from the forward of layers backward skips */
    for (int i = ngroups - 1; i >= 0; i--) {
        const layer_group *g = &groups[i];
        uint64_t layers = g->pair == PAIR_SECOND ? 2 * g->count : g->count;
        first -= layers;
        if (i == other_before)
            w.live -= other_mask; /* its last checkpoint, the layer above, is done */
        if (g->bwd_start == 0) { /* frozen layers outside the graph */
            unvisited += layers * held;
            /* Below a model chunk that took its input's gradient (the
             * interleaved schedule: frozen chunks come first): that
             * gradient goes to the previous stage, as a stage's first. */
            if (i + 1 < ngroups && groups[i + 1].bwd_start > 0 && groups[i + 1].spec.input_rg)
                w.live -= x_bytes;
            i -= g->pair == PAIR_SECOND; /* the pair's other run: frozen alike */
            continue;
        }
        if (g->pair == PAIR_SECOND) {
            uint64_t kept = accumulating ? 0 : layer_kept(keep, g);
            uint64_t kept_first = accumulating ? 0 : layer_kept(keep, g - 1);
            if (t != NULL)
                trace_backward_pairs(e, t, &b, m, g, in, first, w.live, w.grads, kept_first, kept,
                                     held, gather->layer_bwd, recompute_mode(s));
            backward_pairs(&w, g, kept_first, kept, held, gather->layer_bwd, &held_all, ckpt);
            i--;
            continue;
        }
        uint64_t kept = accumulating ? 0 : layer_kept(keep, g);
        int64_t delta = backward_delta(g, kept, held);
        uint64_t last = (uint64_t)((int64_t)w.live + (int64_t)(g->count - 1) * delta);
        layer_backward(&w, g, w.live - g->bwd_start + gather->layer_bwd, w.grads,
                       held_all + gather->layer_bwd, ckpt);
        layer_backward(&w, g, last - g->bwd_start + gather->layer_bwd,
                       w.grads + (g->count - 1) * kept,
                       held_all - (g->count - 1) * held + gather->layer_bwd, ckpt);
        held_all -= g->count * held; /* resharded after each layer's backward */
        if (t != NULL)
            trace_backward(e, t, &b, m, g, in, first, w.live, delta, w.grads, kept,
                           gather->layer_bwd, recompute_mode(s));
        w.live = (uint64_t)((int64_t)w.live + (int64_t)g->count * delta);
        w.grads += g->count * kept;
    }
    /* released with the first layer's saved tensors */
    w.live -= ckpt ? shared - ids_saved - sb.ids_unheld - other_mask - in_call : rope;
    if (in->embedding && emb.bwd_start > 0) {
        /* A tied head already holds the token embedding's gradient in the
         * AccumulateGrad buffer; torch 2.x adds the second one in place. */
        uint64_t tied = m->tie && embed_trains && in->head
                            ? m->vocab * m->embed_dim * (uint64_t)s->param_dt : 0;
        uint64_t tied_wide = s->param_dt >= 4 ? tied : 0;
        uint64_t before = w.live - emb.bwd_start;
        moment_at(&w, LLMEM_PHASE_BACKWARD, before + gather->embedding, emb.bwd_peak,
                  BWD_OF(pos_emb), w.grads, held_all + gather->embedding);
        if (t != NULL) {
            trace_simulate(e, t, &b, llmem_layers_embedding, m, &emb_spec, 1, SIM_PLAIN);
            llmem_trace_events(t, &e->graph, e->graph.nevents_forward, e->graph.nevents,
                               LLMEM_PHASE_BACKWARD, "embedding", -1,
                               before + gather->embedding, w.grads);
        }
        uint64_t kept = accumulating ? 0
                                     : kept_of(keep, emb.param_grads - tied,
                                               emb.param_grads_wide - tied_wide);
        w.live = before + kept + emb.input_grad - ids_saved; /* wpe's backward ran */
        w.grads += kept;
    } else if (!in->embedding && ngroups > 0 && groups[0].spec.input_rg) {
        w.live -= x_bytes; /* the input's gradient, sent to the previous stage */
    }
    /* FSDP reshards what a layer's backward would have, for layers used in
     * forward that backward never reached, once backward ends (its post-
     * backward final callback, _catch_all_reshard). */
    w.live -= unvisited;
    w.live -= gather->backward;
    w.live -= in_call;
    r->end_of_backward = w.live;

    /* The optimizer step: weights, states, gradients, and its own transient. */
    moment_at(&w, LLMEM_PHASE_OPTIMIZER, w.fixed + st->grads + st->optimizer_step, 0, -1,
              st->grads, 0);
    if (log != NULL) {
        log->fixed = w.fixed;
        log->stash = stash;
        log->end_of_backward = r->end_of_backward;
    }
    uint64_t extra = in_flight_extra(in->in_flight, in->in_flight_den, stash);
    finish(&w, extra, r);
    if (t != NULL) {
        llmem_trace_point(t, LLMEM_PHASE_OPTIMIZER, "optimizer", -1,
                          w.fixed + st->grads + st->optimizer_step, st->grads);
        llmem_trace_shift(t, extra);
    }
    return e->graph_overflow ? LLMEM_ENOTSUP : LLMEM_OK;
}

/* The compiled walk at the walk's batch and seq. Its moments come phase by
 * phase in time order (checked when it was fitted), so the walk's rules
 * (candidate: a phase's maximum, the first of the largest, the
 * temporaries' maximum) become one tight loop per phase; the whole written
 * once per kind, so that the compiler writes each polynomial out. */
#define COMPILED_WALK(VALUE)                                                            \
    do {                                                                                \
        w.fixed = VALUE(f->fixed, m);                                                   \
        for (int phase = 1, k = 0; phase <= PHASE_COUNT; phase++) {                     \
            uint64_t top = 0, top_grads = 0, top_gathered = 0, temp = 0;                \
            for (int end = f->phase_end[phase - 1]; k < end; k++) {                     \
                uint64_t t = VALUE(f->total[k], m), g = f->grads[k];                    \
                if (t > top) {                                                          \
                    top = t;                                                            \
                    top_grads = g;                                                      \
                    top_gathered = f->gathered[k];                                      \
                }                                                                       \
                if (t - w.fixed - g > temp)                                             \
                    temp = t - w.fixed - g;                                             \
            }                                                                           \
            moment *best = phase == LLMEM_PHASE_OPTIMIZER ? &w.opt : &w.step;           \
            w.phase_peak[phase - 1] = top;                                              \
            if (top > best->total)                                                      \
                *best = (moment){ top, top_grads, top_gathered, phase };                \
            if (phase != LLMEM_PHASE_OPTIMIZER && temp > w.temp_max)                    \
                w.temp_max = temp;                                                      \
        }                                                                               \
        r->end_of_backward = VALUE(f->end_of_backward, m);                              \
        stash = llmem_walk_stashes(in_flight, in_flight_den) ? VALUE(f->stash, m) : 0;  \
    } while (0)

static void walk_compiled(const walk_form *f, uint64_t batch, uint64_t seq, uint64_t in_flight,
                          uint64_t in_flight_den, walk_result *r)
{
    uint64_t m[6], stash;
    walk w;
    llmem_form_monomials(f->kind, batch, seq, m);
    memset(&w, 0, sizeof w);
    if (f->kind == FORM_FULL)
        COMPILED_WALK(llmem_form_value6);
    else if (f->kind == FORM_COL)
        COMPILED_WALK(llmem_form_value3);
    else
        COMPILED_WALK(llmem_form_value2);
    finish(&w, in_flight_extra(in_flight, in_flight_den, stash), r);
}

/* The peak alone of a compiled walk: the largest moment of forward and
 * backward with the stash of micro-batches in flight, or the optimizer's
 * (finish's peak, without which moment it was). */
#define COMPILED_PEAK(VALUE)                                                            \
    do {                                                                                \
        int k = 0;                                                                      \
        for (int end = f->phase_end[LLMEM_PHASE_OPTIMIZER - 2]; k < end; k++) {         \
            uint64_t t = VALUE(f->total[k], m);                                         \
            step = t > step ? t : step;                                                 \
        }                                                                               \
        for (; k < f->n; k++) {                                                         \
            uint64_t t = VALUE(f->total[k], m);                                         \
            opt = t > opt ? t : opt;                                                    \
        }                                                                               \
        r->end_of_backward = VALUE(f->end_of_backward, m);                              \
        stash = llmem_walk_stashes(in_flight, in_flight_den) ? VALUE(f->stash, m) : 0;  \
    } while (0)

int llmem_walk_known_peak(walk_scratch *e, uint64_t batch, uint64_t seq,
                          uint64_t in_flight, uint64_t in_flight_den, walk_peak *r)
{
    const walk_form *f = llmem_walk_form(e, batch, seq);
    if (!llmem_walkform_ready(f, e->walk_key))
        return 0;
    uint64_t m[6], stash, step = 0, opt = 0;
    llmem_form_monomials(f->kind, batch, seq, m);
    if (f->kind == FORM_FULL)
        COMPILED_PEAK(llmem_form_value6);
    else if (f->kind == FORM_COL)
        COMPILED_PEAK(llmem_form_value3);
    else
        COMPILED_PEAK(llmem_form_value2);
    step += in_flight_extra(in_flight, in_flight_den, stash);
    r->peak = opt > step ? opt : step;
    return 1;
}

/* The compiled walk of this walk's key and regime, if there is one. */
walk_form *llmem_walk_form(walk_scratch *e, uint64_t batch, uint64_t seq)
{
    int regime = llmem_regime_of(batch, seq, (e->walk_key & WALK_KEY_WINDOW) != 0);
    if (e->walk_key == 0 || regime >= WALK_REGIMES)
        return NULL;
    walk_form *f = &e->forms[llmem_walk_slot(e->walk_key)][regime];
    if (regime == REGIME_ROW_AT && f->at != seq) { /* another seq's: forgotten */
        f->key = 0;
        f->at = seq;
    }
    return f;
}

static void remember(walk_scratch *e, uint64_t batch, uint64_t seq, const walk_result *r)
{
    struct walk_memo *memo = &e->memo[llmem_walk_slot(e->walk_key)];
    memo->key = e->walk_key;
    memo->batch = batch;
    memo->seq = seq;
    memo->r = *r;
}

/* Out of line: inlined into its one caller, the run, it made
 * bench_estimate's sweeps cost 20 to 40 instructions more a call
 * (callgrind). */
LLMEM_NOINLINE int llmem_walk_known(walk_scratch *e, uint64_t batch, uint64_t seq,
                                    uint64_t in_flight, uint64_t in_flight_den, walk_result *r)
{
    const struct walk_memo *memo = &e->memo[llmem_walk_slot(e->walk_key)];
    if (e->walk_key == 0)
        return 0;
    if (memo->key == e->walk_key && memo->batch == batch && memo->seq == seq) {
        *r = memo->r; /* the same walk again */
        return 1;
    }
    const walk_form *f = llmem_walk_form(e, batch, seq);
    if (!llmem_walkform_ready(f, e->walk_key))
        return 0;
    walk_compiled(f, batch, seq, in_flight, in_flight_den, r);
    e->answered++;
    remember(e, batch, seq, r);
    return 1;
}

int llmem_walk(walk_scratch *e, const walk_input *in, walk_result *r)
{
    uint64_t batch = in->setup->batch, seq = in->setup->seq;
    e->logged = 0;
    if (e->walk_key == 0 || in->trace != NULL)
        return walk_step(e, in, r, NULL);
    /* Log the moments only for a walk that may be compiled next (the second
     * of its key and regime: estimate.c's compile_walk). */
    const walk_form *f = llmem_walk_form(e, batch, seq);
    e->logged = f != NULL && f->key == e->walk_key && f->state == 0;
    int rc = walk_step(e, in, r, e->logged ? &e->log : NULL);
    if (rc == LLMEM_OK)
        remember(e, batch, seq, r);
    return rc;
}

int llmem_walk_logged(walk_scratch *e, const walk_input *in, walk_result *r, walk_log *log)
{
    return walk_step(e, in, r, log);
}
