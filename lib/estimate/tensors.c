/* SPDX-License-Identifier: MIT */
#include "estimate/tensors.h"

#define NF4 0

static void add(tensor_list *l, uint64_t rows, uint64_t cols, uint64_t count, int dt,
                int trainable)
{
    if (count == 0 || rows == 0 || cols == 0 || l->n >= TENSOR_CLASSES_MAX)
        return;
    l->c[l->n++] = (tensor_class){ rows, cols, count, dt, trainable };
}

/* One decoder layer's tensors, count times. */
static void add_layers(tensor_list *l, const model_shape *m, const setup *s, uint64_t count,
                       int trainable)
{
    model_linear lin[MODEL_MAX_LINEARS];
    int n = model_layer_linears(m, lin);
    int adapters = s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA;
    int weight_dt = s->method == LLMEM_METHOD_QLORA ? NF4 : s->param_dt;
    for (int i = 0; i < n; i++) {
        add(l, lin[i].out, lin[i].in, count, weight_dt, trainable);
        if (lin[i].bias)
            add(l, lin[i].out, 1, count, s->param_dt, trainable);
        if (adapters && (lin[i].lora_target & s->lora_targets)) {
            /* PEFT keeps adapters in fp32 (autocast_adapter_dtype). */
            add(l, s->lora_rank, lin[i].in, count, 4, 1);
            add(l, lin[i].out, s->lora_rank, count, 4, 1);
        }
    }
    add(l, m->hidden, 1, count * m->norms_per_layer * (uint64_t)(1 + m->norm_bias), s->param_dt,
        trainable);
}

void step_tensors(const model_shape *m, const setup *s, tensor_list *l)
{
    int full = s->method == LLMEM_METHOD_FULL;
    int freeze = s->method == LLMEM_METHOD_FREEZE;
    int dt = s->param_dt;
    uint64_t frozen = freeze ? s->frozen_layers : 0;
    /* Frozen-layer fine-tuning freezes the embeddings too; a tied head goes with them. */
    int embed_trains = full;
    int head_trains = full || (freeze && !m->tie);
    l->n = 0;

    add(l, m->vocab, m->embed_dim, 1, dt, embed_trains);
    if (m->embed_dim != m->hidden)
        add(l, m->hidden, m->embed_dim, 2, dt, embed_trains);
    if (m->positions == LLMEM_POSITIONS_LEARNED)
        add(l, m->max_positions + m->position_offset, m->hidden, 1, dt, embed_trains);
    if (m->embed_norm)
        add(l, m->hidden, 1, (uint64_t)(1 + m->norm_bias), dt, embed_trains);

    if (freeze) {
        add_layers(l, m, s, frozen, 0);
        add_layers(l, m, s, m->layers - frozen, 1);
    } else {
        add_layers(l, m, s, m->layers, full);
    }
    if (m->final_norm)
        add(l, m->hidden, 1, (uint64_t)(1 + m->norm_bias), dt, full || freeze);
    if (!m->tie) {
        add(l, m->vocab, m->embed_dim, 1, dt, head_trains);
        if (m->head_bias)
            add(l, m->vocab, 1, 1, dt, head_trains);
    }
}
