/* SPDX-License-Identifier: MIT */
#include "estimate/tensors.h"

#include "layers/layers.h"
#include "model/families.h"

/* What add() records besides the shape: where and what. */
typedef struct place {
    int segment, role, axis;
    uint64_t layer_first, layers;
} place;

static void add(tensor_list *l, const place *at, uint64_t rows, uint64_t cols, uint64_t count,
                int dt, int trainable)
{
    if (count == 0 || rows == 0 || cols == 0)
        return;
    if (l->n >= TENSOR_CLASSES_MAX) {
        l->overflow = 1;
        return;
    }
    l->c[l->n++] = (tensor_class){ rows, cols, count, dt, trainable,
                                   (uint8_t)at->segment, (uint8_t)at->role, (uint8_t)at->axis,
                                   at->layer_first, at->layers };
}

/* The same place with another role and axis. */
static place as(const place *at, int role, int axis)
{
    place p = *at;
    p.role = role;
    p.axis = axis;
    return p;
}

static int is_attention(const model_linear *lin)
{
    return (lin->lora_target & LORA_ATTENTION_ROLES) != 0;
}

/* A linear layer and, when LoRA targets it, its two adapters. A column-split
 * linear keeps its bias split with its outputs; a row-split one adds its bias
 * after the all-reduce, whole. LoRA's A reads the input and B writes the
 * output, so each splits where its side of the base weight does. */
static void add_linear(tensor_list *l, const place *at, const model_linear *lin, const setup *s,
                       uint64_t count, int trainable, int adapters)
{
    int weight_dt = s->method == LLMEM_METHOD_QLORA ? DT_NF4 : s->param_dt;
    int column = lin->axis == SPLIT_COLUMN, row = lin->axis == SPLIT_ROW;
    place w = as(at, PARAM_WEIGHT, lin->axis), b = as(at, PARAM_BIAS, column ? SPLIT_COLUMN : SPLIT_NONE);
    place a_in = as(at, PARAM_ADAPTER, row ? SPLIT_ROW : SPLIT_NONE);
    place b_out = as(at, PARAM_ADAPTER, column ? SPLIT_COLUMN : SPLIT_NONE);
    add(l, &w, lin->out, lin->in, count, weight_dt, trainable);
    if (lin->bias)
        add(l, &b, lin->out, 1, count, s->param_dt, trainable);
    if (adapters && (lin->lora_target & s->lora_targets)) {
        add(l, &a_in, s->lora_rank, lin->in, count, LORA_DT, 1);
        add(l, &b_out, lin->out, s->lora_rank, count, LORA_DT, 1);
    }
}

/* LoRA's two adapters of a linear in x out, count of them. */
static void add_adapters(tensor_list *l, const place *a_in, const place *b_out, uint64_t in,
                         uint64_t out, uint64_t count, const setup *s)
{
    add(l, a_in, s->lora_rank, in, count, LORA_DT, 1);
    add(l, b_out, out, s->lora_rank, count, LORA_DT, 1);
}

/* A MoE layer's router: its weight, and its bias where it has one. */
static void add_router(tensor_list *l, const place *router, const model_shape *m, const setup *s,
                       uint64_t count, int trainable)
{
    add(l, router, m->experts, m->hidden, count, s->param_dt, trainable);
    /* DeepSeek-V3's e_score_correction_bias is a buffer, never trained; on
     * Llama's path the bias is the router linear's, trained with its weight
     * (as the layer builds it, lib/layers/llama.c) */
    if (m->router_bias)
        add(l, router, m->experts, 1, count, s->param_dt, m->path == PATH_LATENT ? 0 : trainable);
}

/* Routed experts (no biases in any supported family), the router, and the
 * shared expert with its gate. LoRA targeting gate, up or down adapts every
 * routed expert's projection and the shared expert's. */
static void add_experts(tensor_list *l, const place *at, const model_shape *m, const setup *s,
                        uint64_t count, int trainable, int adapters)
{
    uint64_t H = m->hidden, Ie = m->expert_intermediate, Is = m->shared_intermediate;
    uint64_t up_mats = m->mlp == LLMEM_MLP_GATED ? 2 : 1, E = m->experts;
    int weight_dt = s->method == LLMEM_METHOD_QLORA ? DT_NF4 : s->param_dt;
    unsigned on = adapters ? s->lora_targets : 0;
    unsigned ups = (m->mlp == LLMEM_MLP_GATED ? LLMEM_LORA_GATE : 0) | LLMEM_LORA_UP;
    place expert = as(at, PARAM_EXPERT, SPLIT_EXPERT), router = as(at, PARAM_ROUTER, SPLIT_NONE);
    place up = as(at, PARAM_WEIGHT, SPLIT_COLUMN), down = as(at, PARAM_WEIGHT, SPLIT_ROW);
    place gate = as(at, PARAM_WEIGHT, SPLIT_NONE), lora_expert = as(at, PARAM_ADAPTER, SPLIT_EXPERT);
    place lora_in = as(at, PARAM_ADAPTER, SPLIT_NONE), lora_col = as(at, PARAM_ADAPTER, SPLIT_COLUMN);
    place lora_row = as(at, PARAM_ADAPTER, SPLIT_ROW);
    /* named_parameters() order, which the for-loop optimizer step follows:
     * Mixtral's and Qwen2-MoE's blocks define their gate before the experts,
     * DeepSeek's after them */
    int router_first = m->path != PATH_LATENT;
    if (router_first)
        add_router(l, &router, m, s, count, trainable);
    if (s->experts == LLMEM_EXPERTS_IMPL_LOOP) { /* a module per expert: its own linears */
        add(l, &expert, Ie, H, count * E * up_mats, weight_dt, trainable);
        add(l, &expert, H, Ie, count * E, weight_dt, trainable);
    } else { /* transformers 5.x: gate_up_proj [E, 2I, H] and down_proj [E, H, I] */
        place stacked = as(at, PARAM_EXPERT, SPLIT_EXPERT_STACKED);
        add(l, &stacked, E * up_mats * Ie, H, count, weight_dt, trainable);
        add(l, &stacked, E * H, Ie, count, weight_dt, trainable);
    }
    if (!router_first)
        add_router(l, &router, m, s, count, trainable);
    add(l, &up, Is, H, count * up_mats, weight_dt, trainable);
    add(l, &down, H, Is, count, weight_dt, trainable);
    if (m->shared_gate)
        add(l, &gate, 1, H, count, s->param_dt, trainable);
    /* count x experts of each targeted projection; one of the shared expert's */
    uint64_t targeted_ups = (uint64_t)((on & LLMEM_LORA_GATE) && (ups & LLMEM_LORA_GATE)) +
                            (uint64_t)((on & LLMEM_LORA_UP) != 0);
    if (targeted_ups) {
        add_adapters(l, &lora_expert, &lora_expert, H, Ie, count * E * targeted_ups, s);
        if (Is)
            add_adapters(l, &lora_in, &lora_col, H, Is, count * targeted_ups, s);
    }
    if (on & LLMEM_LORA_DOWN) {
        add_adapters(l, &lora_expert, &lora_expert, Ie, H, count * E, s);
        if (Is)
            add_adapters(l, &lora_row, &lora_in, Is, H, count, s);
    }
}

/* Layers [first, first + count), all dense or all experts. Attention
 * parameters outside the linear layers (q/k norms, MLA's latent norms) and
 * the layer norms are vectors: whatever the attention count has beyond its
 * linears. */
static void add_layers(tensor_list *l, const model_shape *m, const model_params *p,
                       const setup *s, const model_linear *lin, int n, uint64_t first,
                       uint64_t count, int trainable, int moe)
{
    if (count == 0)
        return; /* no layers of this kind (a dense model's experts): nothing to list */
    int adapters = s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA;
    uint64_t linear_params = 0;
    place at = { SEG_LAYER, PARAM_WEIGHT, SPLIT_NONE, first, count };
    place norm = as(&at, PARAM_NORM, SPLIT_NONE);
    for (int i = 0; i < n; i++) {
        if (!is_attention(&lin[i]) && moe)
            continue;
        add_linear(l, &at, &lin[i], s, count, trainable, adapters);
        if (is_attention(&lin[i]))
            linear_params += lin[i].in * lin[i].out + (lin[i].bias ? lin[i].out : 0);
    }
    if (moe)
        add_experts(l, &at, m, s, count, trainable, adapters);
    add(l, &norm, p->layer_attention - linear_params, 1, count, s->param_dt, trainable);
    add(l, &norm, m->hidden, 1, count * m->norms_per_layer * (uint64_t)(1 + m->norm_bias),
        s->param_dt, trainable);
}

/* Layers [first, first + count) of which the first `dense` of the model are
 * dense; lin: a layer's n linears. */
static void add_layer_range(tensor_list *l, const model_shape *m, const model_params *p,
                            const setup *s, const model_linear *lin, int n, uint64_t first,
                            uint64_t count, int trainable)
{
    uint64_t dense_end = m->experts > 0 ? m->dense_layers : m->layers;
    uint64_t dense = first < dense_end ? (dense_end - first < count ? dense_end - first : count) : 0;
    add_layers(l, m, p, s, lin, n, first, dense, trainable, 0);
    add_layers(l, m, p, s, lin, n, first + dense, count - dense, trainable, 1);
}

void llmem_tensors_list(const model_shape *m, const model_params *p, const setup *s,
                        tensor_list *l)
{
    int full = s->method == LLMEM_METHOD_FULL;
    int freeze = s->method == LLMEM_METHOD_FREEZE;
    int dt = s->param_dt;
    uint64_t frozen = freeze ? s->frozen_layers : 0;
    int embed_trains = llmem_setup_embedding_trains(s);
    int head_trains = llmem_setup_head_trains(s, m);
    place embed = { SEG_EMBEDDING, PARAM_EMBEDDING, SPLIT_VOCAB, 0, 1 };
    place project_in = as(&embed, PARAM_EMBEDDING, SPLIT_NONE);
    place position = as(&embed, PARAM_POSITION, SPLIT_NONE);
    place embed_norm = as(&embed, PARAM_NORM, SPLIT_NONE);
    place head = { SEG_HEAD, PARAM_OUTPUT, SPLIT_VOCAB, 0, 1 };
    place final_norm = as(&head, PARAM_NORM, SPLIT_NONE);
    /* OPTDecoder applies project_out after the last layer: the last pipeline
     * stage holds it, as it computes its gradient. */
    place project_out = as(&head, PARAM_EMBEDDING, SPLIT_NONE);
    l->n = 0;
    l->overflow = 0;

    add(l, &embed, m->vocab, m->embed_dim, 1, dt, embed_trains);
    if (m->embed_dim != m->hidden) /* OPT-350m: project_in, embed-dim to hidden */
        add(l, &project_in, m->hidden, m->embed_dim, 1, dt, embed_trains);
    if (m->positions == LLMEM_POSITIONS_LEARNED)
        add(l, &position, m->max_positions + m->position_offset, m->hidden, 1, dt, embed_trains);
    if (m->embed_norm)
        add(l, &embed_norm, m->hidden, 1, (uint64_t)(1 + m->norm_bias), dt, embed_trains);

    /* Every layer has the same linears (the experts apart): listed once. */
    model_linear lin[MODEL_MAX_LINEARS];
    int n = llmem_model_layer_linears(m, lin);
    add_layer_range(l, m, p, s, lin, n, 0, frozen, 0);
    add_layer_range(l, m, p, s, lin, n, frozen, m->layers - frozen, full || freeze);

    if (m->final_norm)
        add(l, &final_norm, m->hidden, 1, (uint64_t)(1 + m->norm_bias), dt,
            llmem_setup_final_norm_trains(s));
    if (m->embed_dim != m->hidden) /* and project_out, back to embed-dim; it trains with them */
        add(l, &project_out, m->embed_dim, m->hidden, 1, dt, embed_trains);
    if (!m->tie)
        add(l, &head, m->vocab, m->embed_dim, 1, dt, head_trains);
    if (m->head_bias) /* its own even when the weight is tied */
        add(l, &head, m->vocab, 1, 1, dt, head_trains);
}
