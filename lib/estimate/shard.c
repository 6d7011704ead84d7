/* SPDX-License-Identifier: MIT */
/* One rank's share of a step (shard.h). docs/partitioning.md cites the
 * engines' code for each rule. */
#include "estimate/shard.h"

#include "core/checked.h"
#include "core/compiler.h"
#include "model/families.h"

#include <string.h>

/* DeepSpeed's default reduce_bucket_size (runtime/zero/config.py), in elements;
 * with ZeRO-3 the HF Trainer's "auto" sets it to hidden^2 and
 * stage3_prefetch_bucket_size to 0.9 x hidden^2 (integrations/deepspeed.py,
 * trainer_config_finalize). */
#define DS_REDUCE_BUCKET UINT64_C(500000000)
#define PREFETCH_NUM 9
#define PREFETCH_DEN 10

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

void llmem_rank_recipe(const setup *s, const layout *l, rank_recipe *out)
{
    const sharding_desc *sh = l->sharding;
    out->run = *s;
    out->master_dt = s->param_dt;
    out->grad_dt = s->param_dt;
    out->master_copy = 0;
    out->cast = 0;
    if (s->autocast && (sh->deepspeed || sh->fsdp)) {
        /* A 16-bit model; the optimizer updates fp32 copies: DeepSpeed's master
         * partitions, or FSDP's fp32 parameter shards (whose gradients are cast
         * up to fp32 after the reduce-scatter). No autocast: the weights
         * themselves are 16-bit. */
        out->run.param_dt = s->compute_dt;
        out->run.autocast = 0;
        out->master_dt = 4;
        out->grad_dt = sh->fsdp ? 4 : s->compute_dt;
        out->master_copy = sh->deepspeed;
        out->cast = 1;
    }
    llmem_rank_point(l, s->batch, s->seq, &out->run);
}

void llmem_rank_point(const layout *l, uint64_t batch, uint64_t seq, setup *run)
{
    run->batch = batch;
    run->seq = seq / l->cp; /* context parallelism: each rank its share of the sequence */
}

void llmem_rank_shape(const model_shape *m, const layout *l, model_shape *out)
{
    *out = *m;
    out->heads = m->heads / l->tp;
    out->kv_heads = m->kv_heads / l->tp;
    out->intermediate = m->intermediate / l->tp;
    out->shared_intermediate = m->shared_intermediate / l->tp;
    /* Megatron pads the vocabulary to a multiple of tp (make_vocab_size_divisible_by). */
    out->vocab = ceil_div(m->vocab, l->tp);
    /* Ring attention (TransformerEngine) takes a sliding window as an argument:
     * no transformers mask reaches a context-parallel rank's kernel. */
    if (l->cp > 1)
        out->sliding_window = 0;
}

/* The classes this rank holds, each divided by tensor and expert parallelism.
 * A tied embedding is also held by the last stage, which computes the logits
 * with it (Megatron's shared embedding, its gradients all-reduced between the
 * two ends). Returns 0, or 1 when the list overflows. */
static int rank_classes(const tensor_list *all, const model_shape *m, const layout *l,
                        const rank_class *r, tensor_list *out)
{
    out->n = 0;
    out->overflow = 0;
    for (int i = 0; i < all->n; i++) {
        tensor_class x = all->c[i];
        if (x.segment == SEG_LAYER) {
            uint64_t n = llmem_rank_overlap(r, x.layer_first, x.layers);
            if (n == 0)
                continue;
            x.count = x.count / x.layers * n;
            /* its classes' place (optimizer.c's order, segment_bytes): the same
             * for every class of the model's place */
            x.layer_first = x.layer_first > r->layer_first ? x.layer_first : r->layer_first;
            x.layers = n;
        } else if (x.segment == SEG_EMBEDDING && !r->embedding) {
            if (!(m->tie && r->head && x.role == PARAM_EMBEDDING && x.axis == SPLIT_VOCAB))
                continue;
        } else if (x.segment == SEG_HEAD && !r->head) {
            continue;
        }
        switch ((enum split_axis)x.axis) {
        case SPLIT_NONE: break;
        case SPLIT_COLUMN: x.rows /= l->tp; break;
        case SPLIT_ROW: x.cols /= l->tp; break;
        case SPLIT_VOCAB: x.rows = ceil_div(x.rows, l->tp); break;
        case SPLIT_EXPERT: x.count /= l->ep; break;
        case SPLIT_EXPERT_STACKED: x.rows /= l->ep; break;
        }
        if (out->n >= TENSOR_CLASSES_MAX)
            return 1;
        out->c[out->n++] = x;
    }
    return 0;
}

/* Whether rank r holds every class of the model whole (one GPU, data
 * parallelism alone): rank_classes would copy the list as it is (a layer
 * class's count is its layers times a count per layer). */
static int holds_all(const model_shape *m, const layout *l, const rank_class *r)
{
    return l->tp == 1 && l->ep == 1 && r->chunks == 1 && r->layer_first == 0 &&
           r->layers == m->layers && r->embedding && r->head;
}

static int retyped(const tensor_class *c, int dt)
{
    return c->trainable && c->role != PARAM_ADAPTER && c->dt != DT_NF4 && c->dt != dt;
}

/* The list with its trainable weights in dt; 0 when that changes nothing
 * (out is then not written: most setups train in the master dtype). */
static int retype(const tensor_list *in, int dt, tensor_list *out)
{
    int i = 0;
    while (i < in->n && !retyped(&in->c[i], dt))
        i++;
    if (i == in->n)
        return 0;
    out->n = in->n; /* the classes in use only: a list is kilobytes */
    out->overflow = in->overflow;
    memcpy(out->c, in->c, (size_t)in->n * sizeof in->c[0]);
    for (; i < out->n; i++)
        if (retyped(&out->c[i], dt))
            out->c[i].dt = dt;
    return 1;
}

/* Bytes of one decoder layer's parameters as stored (the largest kind of
 * layer), and of the embedding and head segments. */
static void segment_bytes(const tensor_list *l, uint64_t *layer, uint64_t *embedding,
                          uint64_t *head)
{
    uint64_t per_range[TENSOR_CLASSES_MAX] = { 0 }, first[TENSOR_CLASSES_MAX];
    int ranges = 0;
    *layer = *embedding = *head = 0;
    for (int i = 0; i < l->n; i++) {
        const tensor_class *c = &l->c[i];
        uint64_t bytes = class_tensor_bytes(c) * c->count;
        if (c->segment == SEG_EMBEDDING)
            *embedding += bytes;
        else if (c->segment == SEG_HEAD)
            *head += bytes;
        else {
            int k = 0;
            while (k < ranges && first[k] != c->layer_first)
                k++;
            if (k == ranges)
                first[ranges++] = c->layer_first;
            per_range[k] += bytes / c->layers;
        }
    }
    for (int k = 0; k < ranges; k++)
        if (per_range[k] > *layer)
            *layer = per_range[k];
}

/* The expert tensors of a list (expert parallelism's split axis). */
static void only_experts(const tensor_list *in, tensor_list *out)
{
    out->n = 0;
    out->overflow = in->overflow;
    for (int i = 0; i < in->n; i++)
        if (in->c[i].axis == SPLIT_EXPERT || in->c[i].axis == SPLIT_EXPERT_STACKED)
            out->c[out->n++] = in->c[i];
}

/* A trained MoE layer's expert gradients, as its backward makes them
 * (bytes in each tensor's dtype; wide: of 4-byte tensors). */
static void expert_grads_per_layer(const tensor_list *experts, uint64_t *bytes, uint64_t *wide)
{
    *bytes = *wide = 0;
    for (int i = 0; i < experts->n; i++) {
        const tensor_class *c = &experts->c[i];
        if (!c->trainable || c->segment != SEG_LAYER)
            continue;
        uint64_t b = class_elems(c) * (c->count / c->layers) * (uint64_t)c->dt;
        *bytes += b;
        *wide += c->dt >= 4 ? b : 0;
    }
}

/* `all` bytes of which `experts` shard over `div_e` ranks, the rest over `div`. */
static uint64_t split_div(uint64_t all, uint64_t experts, uint64_t div, uint64_t div_e)
{
    if (experts == 0) /* no expert parallelism: no second division */
        return ceil_div(all, div);
    return ceil_div(all - experts, div) + ceil_div(experts, div_e);
}

/* Out of line (expert parallelism only): its lists stay off the common
 * path's stack frame. */
static LLMEM_NOINLINE void expert_sums_of(const tensor_list *mine, const model_shape *m,
                                          const rank_recipe *rc, expert_sums *out)
{
    tensor_list experts, experts_master;
    only_experts(mine, &experts);
    llmem_statics_params(&experts, m, &rc->run, &out->s16);
    llmem_statics_optimizer(&experts, &rc->run, &out->s16);
    if (retype(&experts, rc->master_dt, &experts_master)) {
        llmem_statics_params(&experts_master, m, &rc->run, &out->sm);
        llmem_statics_optimizer(&experts_master, &rc->run, &out->sm);
    } else {
        out->sm = out->s16;
    }
    expert_grads_per_layer(&experts, &out->grads, &out->wide);
}

int llmem_rank_sums_parts(const layout *l)
{
    const sharding_desc *sh = l->sharding;
    return (l->ep > 1 && l->shard > 1 ? SUMS_EXPERTS : 0) | (sh->params ? SUMS_SEGMENTS : 0) |
           (sh->states ? 0 : SUMS_ROUNDING);
}

int llmem_rank_sums(const tensor_list *all, const model_shape *m, const rank_recipe *rc,
                    const layout *l, const rank_class *r, int parts, rank_sums *out)
{
    tensor_list own, master; /* filled by rank_classes and retype */
    const tensor_list *mine = all;
    if (!holds_all(m, l, r)) {
        if (rank_classes(all, m, l, r, &own))
            return LLMEM_ENOTSUP;
        mine = &own;
    }
    out->parts = parts;
    memset(&out->st16, 0, sizeof out->st16);
    int retyped_any = retype(mine, rc->master_dt, &master);
    llmem_statics_params(mine, m, &rc->run, &out->st16);
    llmem_statics_optimizer(mine, &rc->run, &out->st16);
    if (retyped_any) {
        memset(&out->stm, 0, sizeof out->stm);
        llmem_statics_params(&master, m, &rc->run, &out->stm);
        llmem_statics_optimizer(&master, &rc->run, &out->stm);
    } else {
        out->stm = out->st16; /* the same list: the same statics */
    }
    if (parts & SUMS_EXPERTS)
        expert_sums_of(mine, m, rc, &out->experts);
    if (parts & SUMS_SEGMENTS)
        segment_bytes(mine, &out->layer, &out->embedding, &out->head);
    if (parts & SUMS_ROUNDING)
        out->rounding = llmem_allocator_overhead(mine, &rc->run);
    return LLMEM_OK;
}

int llmem_rank_share(const rank_sums *sums, const model_shape *m, const rank_recipe *rc,
                     const layout *l, const rank_class *r, rank_share *out)
{
    static const tensor_list empty;
    const step_static *st16 = &sums->st16, *stm = &sums->stm;
    const sharding_desc *sh = l->sharding;
    uint64_t n = l->shard;
    int offload_opt = l->offload != LLMEM_OFFLOAD_NONE;
    int offload_params = l->offload == LLMEM_OFFLOAD_PARAMETERS;
    memset(out, 0, sizeof *out);

    /* Under expert parallelism DeepSpeed shards the experts' MoE parameter
     * groups over their expert data-parallel group of dp / ep ranks
     * (runtime/zero/stage_1_and_2.py, _configure_moe_settings: each MoE
     * group's partition_count is that group's size), the rest over all dp
     * ranks: the experts' share of the statics (sums over the classes) is
     * divided apart. FSDP alike: torchtitan (models/llama4/infra/
     * parallelize.py, apply_fsdp) wraps each MoE layer's routed experts in
     * their own fully_shard over the "efsdp" mesh, the shard group's ranks
     * outside the expert group (shard / ep; layout.c checks ep divides it),
     * and the rest of the block, router and shared experts included, over
     * the whole shard group. A layer's gather below is then the rank's own
     * E / ep experts whole. ZeRO-3 with ep > 1 is refused (layout.c). */
    static const expert_sums no_experts; /* nothing apart */
    const expert_sums *x = &no_experts;
    uint64_t ne = n;
    if (l->ep > 1 && n > 1) {
        x = &sums->experts;
        ne = n / llmem_gcd(n, l->ep); /* the ranks they shard over */
    }
    const step_static *e16 = &x->s16, *em = &x->sm;

    step_static *st = &out->st;
    uint64_t pdiv = sh->params ? n : 1, sdiv = sh->states ? n : 1, gdiv = sh->grads ? n : 1;
    uint64_t pdiv_e = sh->params ? ne : 1, sdiv_e = sh->states ? ne : 1, gdiv_e = sh->grads ? ne : 1;
    /* FSDP keeps the fp32 shards the optimizer updates; ZeRO-3 its 16-bit partitions. */
    st->weights = sh->fsdp ? split_div(stm->weights, em->weights, pdiv, pdiv_e)
                           : split_div(st16->weights, e16->weights, pdiv, pdiv_e);
    st->quant_constants = split_div(st16->quant_constants, e16->quant_constants, pdiv, pdiv_e);
    st->adapters = split_div(st16->adapters, e16->adapters, pdiv, pdiv_e);
    /* GPT-2's causal masks are per layer: the stage's share; a rotary
     * inv_freq is one per model, so one per stage. */
    st->buffers = m->traits & TRAIT_CAUSAL_BUFFER ? st16->buffers / m->layers * r->layers
                                                  : st16->buffers;
    st->trainable = st16->trainable;
    st->param_tensors = st16->param_tensors;
    int narrow_grads = rc->grad_dt == rc->run.param_dt;
    uint64_t grads = narrow_grads ? st16->grads : stm->grads;
    uint64_t grad_shards = split_div(grads, narrow_grads ? e16->grads : em->grads, gdiv, gdiv_e);
    st->grads = offload_opt ? 0 : grad_shards;
    /* fp32, like its grads */
    uint64_t master_bytes = rc->master_copy ? split_div(stm->grads, em->grads, n, ne) : 0;
    uint64_t states = split_div(stm->states, em->states, sdiv, sdiv_e);
    uint64_t paged = split_div(stm->paged_states, em->paged_states, sdiv, sdiv_e);
    /* DeepSpeed's step: FusedAdam in place, on an fp32 gradient partition it
     * builds each step (mixed precision); torch's optimizers (DDP, FSDP) run
     * the row's step over the local shards. Offloaded, the step runs on the host. */
    uint64_t step = sh->deepspeed ? master_bytes : ceil_div(stm->optimizer_step, sdiv);
    if (offload_opt) {
        /* DeepSpeed's fp32 gradient partition is its step's (above); FSDP's
         * CPUOffloadPolicy copies each sharded gradient to the host in
         * backward (torch.distributed.fsdp.CPUOffloadPolicy), where the
         * optimizer steps on it. */
        out->host = master_bytes + states + paged + step + (sh->deepspeed ? 0 : grad_shards);
        master_bytes = states = paged = step = 0;
    }
    if (offload_params) {
        out->host += st->weights + st->adapters;
        st->weights = st->adapters = 0;
    }
    st->master = master_bytes;
    st->states = states;
    st->paged_states = paged;
    st->optimizer_step = step;
    /* Data parallelism's gradient buffers: DDP's flat buckets beside .grad
     * (Reducer, gradient_as_bucket_view=False), held throughout; ZeRO-3's
     * reduction bucket, made at initialization (stage3.py); ZeRO-1/2's
     * contiguous-gradient bucket, made at each backward (stage_1_and_2.py,
     * backward: torch.empty(reduce_bucket_size), contiguous_gradients on). */
    checked c = { 0 };
    uint64_t bucket = l->bucket_elements;
    if (bucket == 0)
        bucket = sh->params ? ck_mul(&c, m->hidden, m->hidden) : DS_REDUCE_BUCKET;
    uint64_t bucket_bytes = ck_mul(&c, bucket, (uint64_t)rc->run.param_dt);
    if (sh->deepspeed && (c.overflow || bucket_bytes > (UINT64_C(1) << 62)))
        return LLMEM_EOVERFLOW; /* a hidden size no GPU holds the square of */
    if (sh->deepspeed && sh->params)
        st->comm = bucket_bytes;
    else if (sh->deepspeed)
        out->gather.backward = bucket_bytes;
    else if (!sh->states && l->dp > 1)
        st->comm = st16->grads;
    st->batch = llmem_statics_data(&rc->run);
    /* The caching allocator rounds each tensor; sharded engines keep flat
     * buffers, where only the cuBLAS workspace remains. */
    out->overhead = sh->states ? llmem_allocator_overhead(&empty, &rc->run) : sums->rounding;

    /* What the walk keeps of each backward's gradients (walk.h): a 16-bit
     * parameter's gradient as grad_dt bytes an element, a 4-byte one's as
     * itself, each over the gradient shards; nothing when offloaded. */
    out->keep = (walk_keep){ (uint64_t)rc->grad_dt, 2, offload_opt ? 0 : 2 * gdiv,
                             x->grads, x->wide, offload_opt ? 0 : 2 * gdiv_e };

    /* Gathered parameters around each segment (in the model's 16-bit dtype). */
    if (sh->params) {
        uint64_t layer = sums->layer;
        walk_gather *g = &out->gather;
        g->embedding = sums->embedding;
        g->head = sums->head;
        if (sh->deepspeed) {
            /* ZeRO-3: the module's partitions, and the next ones up to the prefetch bucket. */
            uint64_t prefetch = m->hidden * m->hidden * PREFETCH_NUM / PREFETCH_DEN *
                                (uint64_t)rc->run.param_dt;
            g->layer_fwd = g->layer_bwd = layer + (prefetch < layer ? prefetch : layer);
        } else if (sh->keep_gathered) {
            /* reshard_after_forward=False: a layer's parameters stay from its
             * forward to its backward; the next layer's gather overlaps. */
            g->layer_held = layer;
            g->layer_fwd = layer;
            g->layer_bwd = 0;
        } else {
            /* FSDP2: the current block's all-gather and the next one's, issued
             * ahead; in backward also the reduce-scatter input in the reduce dtype. */
            g->layer_fwd = 2 * layer;
            g->layer_bwd = 2 * layer;
        }
        if (rc->grad_dt != rc->run.param_dt)
            g->layer_bwd += layer / (uint64_t)rc->run.param_dt * (uint64_t)rc->grad_dt;
    }
    return LLMEM_OK;
}
