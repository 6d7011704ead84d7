/* SPDX-License-Identifier: MIT */
#include "model/model.h"

#include "model/families.h"

/* Multi-head latent attention (DeepseekV2Attention): q_a_proj and q_b_proj (or
 * q_proj), kv_a_proj_with_mqa and kv_b_proj, o_proj. The q, k and v roles
 * are the projections that make queries, keys and values (q_b_proj or q_proj,
 * kv_b_proj); the compressions have roles of their own. Megatron's MLA keeps the
 * down projections whole on every tensor-parallel rank and splits the up
 * projections by heads. */
static int latent_attention(const model_shape *s, model_linear *lin)
{
    uint64_t H = s->hidden, q_out = s->heads * s->head_dim;
    uint64_t kv_a = s->kv_lora_rank + s->rotary_dim;
    uint64_t kv_b = s->heads * (s->head_dim - s->rotary_dim + s->v_head_dim);
    unsigned kv = LLMEM_LORA_K | LLMEM_LORA_V;
    int n = 0;
    if (s->q_lora_rank > 0) {
        lin[n++] = (model_linear){ H, s->q_lora_rank, LLMEM_LORA_Q_A, s->qkv_bias, SPLIT_NONE };
        lin[n++] = (model_linear){ s->q_lora_rank, q_out, LLMEM_LORA_Q, 0, SPLIT_COLUMN };
    } else {
        lin[n++] = (model_linear){ H, q_out, LLMEM_LORA_Q, 0, SPLIT_COLUMN };
    }
    lin[n++] = (model_linear){ H, kv_a, LLMEM_LORA_KV_A, s->qkv_bias, SPLIT_NONE };
    lin[n++] = (model_linear){ s->kv_lora_rank, kv_b, kv, 0, SPLIT_COLUMN };
    lin[n++] = (model_linear){ s->heads * s->v_head_dim, H, LLMEM_LORA_O, s->out_bias, SPLIT_ROW };
    return n;
}

int llmem_model_layer_linears(const model_shape *s, model_linear *lin)
{
    uint64_t H = s->hidden, qw = s->heads * s->head_dim, kvw = s->kv_heads * s->head_dim;
    uint64_t vw = s->kv_heads * s->v_head_dim, ow = s->heads * s->v_head_dim;
    uint64_t I = s->intermediate;
    int n = 0;
    if (s->kv_lora_rank > 0) {
        n = latent_attention(s, lin);
    } else {
        /* One fused q, k, v linear: LoRA on any of q, k, v wraps the fused layer. */
        if (s->traits & TRAIT_FUSED_QKV) {
            lin[n++] = (model_linear){ H, qw + kvw + vw, LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V,
                                       s->qkv_bias, SPLIT_COLUMN };
        } else {
            lin[n++] = (model_linear){ H, qw, LLMEM_LORA_Q, s->qkv_bias, SPLIT_COLUMN };
            lin[n++] = (model_linear){ H, kvw, LLMEM_LORA_K, s->qkv_bias, SPLIT_COLUMN };
            lin[n++] = (model_linear){ H, vw, LLMEM_LORA_V, s->qkv_bias, SPLIT_COLUMN };
        }
        lin[n++] = (model_linear){ ow, H, LLMEM_LORA_O, s->out_bias, SPLIT_ROW };
    }
    if ((s->traits & TRAIT_FUSED_GATE_UP) && s->mlp == LLMEM_MLP_GATED) {
        /* Phi3MLP: one gate_up_proj (a plain MLP has no gate to fuse) */
        lin[n++] = (model_linear){ H, 2 * I, LLMEM_LORA_GATE | LLMEM_LORA_UP, s->mlp_bias,
                                   SPLIT_COLUMN };
    } else {
        if (s->mlp == LLMEM_MLP_GATED)
            lin[n++] = (model_linear){ H, I, LLMEM_LORA_GATE, s->mlp_bias, SPLIT_COLUMN };
        lin[n++] = (model_linear){ H, I, LLMEM_LORA_UP, s->mlp_bias, SPLIT_COLUMN };
    }
    lin[n++] = (model_linear){ I, H, LLMEM_LORA_DOWN, s->mlp_bias, SPLIT_ROW };
    return n;
}
