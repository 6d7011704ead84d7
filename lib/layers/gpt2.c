/* SPDX-License-Identifier: MIT */
/* The GPT-2 code path (modeling_gpt2.py in transformers v4.48): fused Conv1D
 * c_attn split into views, eager attention with the causal bias buffer,
 * NewGELUActivation written out in Python ops, GPT2Block's residuals. */
#include "layers/common.h"

/* GPT2Attention: fused c_attn, split into views, eager attention, c_proj. */
static tid gpt2_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                   const shared_tensors *sh)
{
    /* heads x head_dim is the hidden size, or its share under tensor parallelism */
    uint64_t H = m->hidden, width = m->heads * m->head_dim, tokens_w = b->tokens * width;
    tid qkv = llmem_seg_linear(b, s, h, H, 3 * width, m->qkv_bias,
                               LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    tid q = op_view_part(b, qkv, tokens_w), k = op_view_part(b, qkv, tokens_w);
    tid v = op_view_part(b, qkv, tokens_w);
    tid o = llmem_seg_attention(b, m, q, k, v, sh->mask);
    o = llmem_seg_linear(b, s, o, width, H, m->out_bias, LLMEM_LORA_O);
    return op_dropout(b, o, DROPOUT_HIDDEN); /* resid_dropout */
}

/* GPT2MLP: c_fc, NewGELUActivation written out in Python ops
 * (0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))), c_proj, dropout. */
static tid gpt2_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid x = llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    tid y = llmem_seg_activation(b, m, x); /* gelu_new */
    y = llmem_seg_linear(b, s, y, I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    return op_dropout(b, y, DROPOUT_HIDDEN);
}

/* GPT2Block: ln_1, attention, residual, ln_2, MLP, residual. The block's
 * hidden_states local keeps each norm's output until the residual sum that
 * rebinds it has run; attn_output (and the attn_outputs tuple) stays bound
 * until the block returns. */
static tid gpt2_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                      const shared_tensors *sh)
{
    llmem_region(b, "norm");
    tid h = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    tid a = gpt2_attention(b, m, s, h, sh);
    llmem_region(b, "norm");
    tid mid = op_add(b, a, x); /* hidden_states = attn_output + residual */
    llmem_graph_hold(b->g, h);
    h = llmem_seg_norm(b, m, s, mid);
    llmem_region(b, "mlp");
    tid mlp_out = gpt2_mlp(b, m, s, h);
    tid out = op_add(b, mid, mlp_out); /* hidden_states = residual + feed_forward_hidden_states */
    llmem_graph_hold(b->g, h);
    llmem_graph_hold(b->g, a);
    return out;
}

/* GPT2Attention splits c_attn into three hidden-wide parts: one head size,
 * no grouped kv heads. */
static int gpt2_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(m, 0, why);
    if (key != 0)
        return key;
    if (m->kv_heads != m->heads || m->heads * m->head_dim != m->hidden) {
        *why = "head-dim (GPT-2 has hidden / heads per head and no grouped kv heads)";
        return LLMEM_MODEL_HEAD_DIM;
    }
    return 0;
}

const layer_path llmem_path_gpt2 = { gpt2_block, gpt2_unsupported, NULL, 0 };
