/* SPDX-License-Identifier: MIT */
/*
 * The walk (walk.h). Each segment (embedding, decoder layer, head and loss)
 * is simulated once on the scratch graph; identical layers are then combined
 * in closed form, because the live set grows (forward) or changes (backward)
 * by the same amount per layer, so within a run of identical layers the peak
 * is at one of its ends. The runs come from walkgroups.c, each run's
 * per-layer numbers from its segments (walksegs.c), and the timeline's
 * layer by layer expansion from walktrace.c (walkparts.h).
 */
#include "estimate/walk.h"
#include "estimate/walkparts.h"

#include "core/compiler.h"
#include "model/families.h"
#include "parallel/parallel.h"

#include <string.h>

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

    int nall = llmem_walk_groups(m, s, all);
    int ngroups = llmem_walk_clip_groups(all, nall, in, groups);
    if (llmem_model_window_alternates(m, b.attention, b.seq)) {
        layer_group one_kind[MAX_GROUPS];
        memcpy(one_kind, groups, (size_t)ngroups * sizeof *groups);
        ngroups = llmem_walk_alternate_runs(one_kind, ngroups, groups);
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
        llmem_walk_reduce_group(e, &b, m, s, &groups[i]);
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
        ngroups = llmem_walk_place_other_mask(groups, ngroups, in->chunks, &other_before);
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
            llmem_walk_trace_simulate(e, t, &b, llmem_layers_embedding, m, &emb_spec, 1,
                                      SIM_PLAIN);
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
                llmem_walk_trace_forward_pairs(e, t, &b, m, g, in, first, w.live, held,
                                               gather->layer_fwd, w.grads, fwd_mode,
                                               i == 0 && first_alone, first_held);
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
            llmem_walk_trace_forward(e, t, &b, m, g, in, first, w.live, growth,
                                     gather->layer_fwd, w.grads, fwd_mode);
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
            llmem_walk_trace_simulate(e, t, &b, llmem_layers_head, m, &head_spec, 1, SIM_PLAIN);
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
            llmem_walk_trace_simulate(e, t, &b, llmem_layers_head, m, &head_spec, 1, SIM_PLAIN);
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
                llmem_walk_trace_backward_pairs(e, t, &b, m, g, in, first, w.live, w.grads,
                                                kept_first, kept, held, gather->layer_bwd,
                                                recompute_mode(s));
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
            llmem_walk_trace_backward(e, t, &b, m, g, in, first, w.live, delta, w.grads, kept,
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
            llmem_walk_trace_simulate(e, t, &b, llmem_layers_embedding, m, &emb_spec, 1,
                                      SIM_PLAIN);
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
