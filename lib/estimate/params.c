/* SPDX-License-Identifier: MIT */
/* The parameters and data terms. */
#include "estimate/statics.h"

#include "model/families.h"

/* QLoRA (Dettmers et al. 2023, section 3): NF4 weights, one 8-bit absmax per
 * 64-weight block (double quantization), one fp32 constant per 256 blocks. */
#define NF4_BLOCK 64
#define NF4_DQ_BLOCK 256

void llmem_statics_params(const tensor_list *l, const model_shape *m, const setup *s, step_static *st)
{
    st->weights = st->quant_constants = st->adapters = st->trainable = st->param_tensors = 0;
    for (int i = 0; i < l->n; i++) {
        const tensor_class *c = &l->c[i];
        uint64_t elems = class_elems(c) * c->count;
        int adapter = (s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA) &&
                      c->trainable;
        st->param_tensors += c->count;
        if (c->trainable)
            st->trainable += elems;
        if (c->dt == DT_NF4) {
            uint64_t blocks = (class_elems(c) + NF4_BLOCK - 1) / NF4_BLOCK;
            st->weights += class_tensor_bytes(c) * c->count;
            st->quant_constants +=
                (blocks + (blocks + NF4_DQ_BLOCK - 1) / NF4_DQ_BLOCK * 4) * c->count;
        } else if (adapter) {
            st->adapters += elems * (uint64_t)c->dt;
        } else {
            st->weights += elems * (uint64_t)c->dt;
        }
    }
    /* Buffers: GPT-2 registers a bool causal mask [1, 1, n_positions, n_positions]
     * per attention layer (GPT2Attention.bias); the rotary inv_freq is
     * rotary_dim / 2 fp32 values (LlamaRotaryEmbedding; partial rotary and
     * DeepSeek's rope dims included). */
    if (m->traits & TRAIT_CAUSAL_BUFFER)
        st->buffers = m->layers * m->max_positions * m->max_positions;
    else if (m->positions == LLMEM_POSITIONS_ROTARY || (m->traits & TRAIT_ROTARY_TABLES))
        st->buffers = m->rotary_dim / 2 * 4;
    else
        st->buffers = 0;
}

uint64_t llmem_statics_data(const setup *s)
{
    return s->batch * llmem_statics_data_sample(s->seq);
}
