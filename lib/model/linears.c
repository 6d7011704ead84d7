/* SPDX-License-Identifier: MIT */
#include "model/model.h"

int model_layer_linears(const model_shape *s, model_linear *lin)
{
    uint64_t H = s->hidden, qw = s->heads * s->head_dim, kvw = s->kv_heads * s->head_dim;
    uint64_t I = s->intermediate;
    int n = 0;
    if (s->family == LLMEM_FAMILY_GPT2) {
        /* Conv1D c_attn holds q, k and v; LoRA on any of them wraps it. */
        lin[n++] = (model_linear){ H, qw + 2 * kvw, LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V,
                                   s->qkv_bias };
    } else {
        lin[n++] = (model_linear){ H, qw, LLMEM_LORA_Q, s->qkv_bias };
        lin[n++] = (model_linear){ H, kvw, LLMEM_LORA_K, s->qkv_bias };
        lin[n++] = (model_linear){ H, kvw, LLMEM_LORA_V, s->qkv_bias };
    }
    lin[n++] = (model_linear){ qw, H, LLMEM_LORA_O, s->out_bias };
    if (s->mlp == LLMEM_MLP_GATED)
        lin[n++] = (model_linear){ H, I, LLMEM_LORA_GATE, s->mlp_bias };
    lin[n++] = (model_linear){ H, I, LLMEM_LORA_UP, s->mlp_bias };
    lin[n++] = (model_linear){ I, H, LLMEM_LORA_DOWN, s->mlp_bias };
    return n;
}
