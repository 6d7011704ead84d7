/* SPDX-License-Identifier: MIT */
#include "estimate/tensors.h"

#define NF4 0

static void add(tensor_list *l, uint64_t rows, uint64_t cols, uint64_t count, int dt,
                int trainable)
{
    if (count == 0 || rows == 0 || cols == 0)
        return;
    if (l->n >= TENSOR_CLASSES_MAX) {
        l->overflow = 1;
        return;
    }
    l->c[l->n++] = (tensor_class){ rows, cols, count, dt, trainable };
}

static int is_attention(const model_linear *lin)
{
    return (lin->lora_target & (LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V | LLMEM_LORA_O)) != 0;
}

/* A linear layer and, when LoRA targets it, its two adapters. */
static void add_linear(tensor_list *l, const model_linear *lin, const setup *s, uint64_t count,
                       int trainable, int adapters)
{
    int weight_dt = s->method == LLMEM_METHOD_QLORA ? NF4 : s->param_dt;
    add(l, lin->out, lin->in, count, weight_dt, trainable);
    if (lin->bias)
        add(l, lin->out, 1, count, s->param_dt, trainable);
    if (adapters && (lin->lora_target & s->lora_targets)) {
        add(l, s->lora_rank, lin->in, count, LORA_DT, 1);
        add(l, lin->out, s->lora_rank, count, LORA_DT, 1);
    }
}

/* Routed experts (no biases in any supported family), the router, and the
 * shared expert with its gate. LoRA adapters are not placed on experts. */
static void add_experts(tensor_list *l, const model_shape *m, const setup *s, uint64_t count,
                        int trainable)
{
    uint64_t H = m->hidden, up_mats = m->mlp == LLMEM_MLP_GATED ? 2 : 1;
    int weight_dt = s->method == LLMEM_METHOD_QLORA ? NF4 : s->param_dt;
    add(l, m->expert_intermediate, H, count * m->experts * up_mats, weight_dt, trainable);
    add(l, H, m->expert_intermediate, count * m->experts, weight_dt, trainable);
    add(l, m->experts, H, count, s->param_dt, trainable);
    if (m->router_bias)
        add(l, m->experts, 1, count, s->param_dt, trainable);
    add(l, m->shared_intermediate, H, count * up_mats, weight_dt, trainable);
    add(l, H, m->shared_intermediate, count, weight_dt, trainable);
    if (m->shared_gate)
        add(l, 1, H, count, s->param_dt, trainable);
}

/* One decoder layer's tensors, count times. Attention parameters outside the
 * linear layers (q/k norms, MLA's latent norms) and the layer norms are
 * vectors: whatever the attention count has beyond its linears. */
static void add_layers(tensor_list *l, const model_shape *m, const model_params *p,
                       const setup *s, uint64_t count, int trainable, int moe)
{
    model_linear lin[MODEL_MAX_LINEARS];
    int n = model_layer_linears(m, lin);
    int adapters = s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA;
    uint64_t linear_params = 0;
    for (int i = 0; i < n; i++) {
        if (!is_attention(&lin[i]) && moe)
            continue;
        add_linear(l, &lin[i], s, count, trainable, adapters);
        if (is_attention(&lin[i]))
            linear_params += lin[i].in * lin[i].out + (lin[i].bias ? lin[i].out : 0);
    }
    if (moe)
        add_experts(l, m, s, count, trainable);
    add(l, p->layer_attention - linear_params, 1, count, s->param_dt, trainable);
    add(l, m->hidden, 1, count * m->norms_per_layer * (uint64_t)(1 + m->norm_bias), s->param_dt,
        trainable);
}

/* Layers [first, first + count) of which the first `dense` of the model are dense. */
static void add_layer_range(tensor_list *l, const model_shape *m, const model_params *p,
                            const setup *s, uint64_t first, uint64_t count, int trainable)
{
    uint64_t dense_end = m->experts > 0 ? m->dense_layers : m->layers;
    uint64_t dense = first < dense_end ? (dense_end - first < count ? dense_end - first : count) : 0;
    add_layers(l, m, p, s, dense, trainable, 0);
    add_layers(l, m, p, s, count - dense, trainable, 1);
}

void step_tensors(const model_shape *m, const model_params *p, const setup *s, tensor_list *l)
{
    int full = s->method == LLMEM_METHOD_FULL;
    int freeze = s->method == LLMEM_METHOD_FREEZE;
    int dt = s->param_dt;
    uint64_t frozen = freeze ? s->frozen_layers : 0;
    /* Frozen-layer fine-tuning freezes the embeddings too; a tied head goes with them. */
    int embed_trains = full;
    int head_trains = full || (freeze && !m->tie);
    l->n = 0;
    l->overflow = 0;

    add(l, m->vocab, m->embed_dim, 1, dt, embed_trains);
    if (m->embed_dim != m->hidden)
        add(l, m->hidden, m->embed_dim, 2, dt, embed_trains);
    if (m->positions == LLMEM_POSITIONS_LEARNED)
        add(l, m->max_positions + m->position_offset, m->hidden, 1, dt, embed_trains);
    if (m->embed_norm)
        add(l, m->hidden, 1, (uint64_t)(1 + m->norm_bias), dt, embed_trains);

    add_layer_range(l, m, p, s, 0, frozen, 0);
    add_layer_range(l, m, p, s, frozen, m->layers - frozen, full || freeze);

    if (m->final_norm)
        add(l, m->hidden, 1, (uint64_t)(1 + m->norm_bias), dt, full || freeze);
    if (!m->tie) {
        add(l, m->vocab, m->embed_dim, 1, dt, head_trains);
        if (m->head_bias)
            add(l, m->vocab, 1, 1, dt, head_trains);
    }
}
