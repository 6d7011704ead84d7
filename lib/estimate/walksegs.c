/* SPDX-License-Identifier: MIT */
/*
 * The walk's decoder layers as segments (walkparts.h, whose simulate asks
 * the handle's cache of segments first): a layer's tape recorded once and
 * retargeted for the layers that differ only in what requires grad, and a
 * run of identical layers reduced to per-layer numbers from its segments,
 * plain or checkpointed.
 */
#include "estimate/walk.h"
#include "estimate/walkparts.h"

#include <string.h>

void llmem_walk_simulate_now(walk_scratch *e, build *b, segment_builder fn,
                             const model_shape *m, const seg_spec *spec, int grad_enabled,
                             int mode, seg_cost *c)
{
    record(e, b, fn, m, spec, grad_enabled);
    llmem_graph_simulate(&e->graph, mode, c);
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

/* Whether the tape there, marked where its two kinds of layer part (a
 * dense layer and an experts' one before the MLP, a sliding and a full
 * one before the attention kernel), serves spec up to its mark: they
 * differ at most in that kind and what requires grad. */
static int prefix_serves(const walk_scratch *e, const model_shape *m, const seg_spec *spec)
{
    seg_spec a = e->tape_spec;
    if (e->graph.mark.nt == 0)
        return 0;
    llmem_layers_take_kind(m, &a, spec);
    return retargetable(&a, spec);
}

/* The decoder layer of spec on the scratch graph, as recorded with grad
 * enabled and without the input's hold: the tape already there when it
 * serves (retargeted unless it is that spec's), or up to its mark with
 * spec's MLP recorded after, else recorded. One recording so serves a
 * step's layers that differ only in what trains or in their input (LoRA's
 * first layer and the rest, freeze's frozen and trainable ones), and a
 * checkpointed layer's no_grad forward and recomputation (SIM_NO_GRAD:
 * graph.h); DeepSeek's dense and experts' layers share their attention's,
 * Gemma-2's sliding and full ones theirs up to the kernel. */
static void layer_tape(walk_scratch *e, build *b, const model_shape *m, const seg_spec *spec)
{
    seg_spec from = e->tape_spec;
    int tail = 0;
    if (!e->taped || !retargetable(&from, spec)) {
        if (e->taped && prefix_serves(e, m, spec)) {
            llmem_graph_rewind(&e->graph);
            llmem_layers_take_kind(m, &from, spec);
            tail = 1;
        } else {
            record(e, b, llmem_layers_decoder, m, spec, 1);
            e->taped = 1;
            from = *spec;
        }
    }
    /* The retarget's one call site, so that LTO inlines it (with two, a
     * freeze run paid about 130 instructions more). */
    if (memcmp(&from, spec, sizeof *spec))
        llmem_graph_retarget(&e->graph, spec->input_rg,
                             params_uniform(spec) ? spec->weights_trainable : -1);
    if (tail) {
        b->g = &e->graph;
        llmem_layers_decoder_tail(b, m, spec);
        e->graph_overflow |= e->graph.overflow;
    }
    e->graph.hold_input = 0;
    e->tape_spec = *spec;
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

void llmem_walk_reduce_group(walk_scratch *e, build *b, const model_shape *m,
                             const setup *s, layer_group *grp)
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
