/* SPDX-License-Identifier: MIT */
/* The GPT-2 code path (modeling_gpt2.py in transformers v4.48): fused Conv1D
 * c_attn split into views, eager attention with the causal bias buffer,
 * NewGELUActivation written out in Python ops. */
#include "estimate/layers_common.h"

/* GPT2Attention: fused c_attn, split into views, eager attention, c_proj. */
tid gpt2_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                   const shared_tensors *sh)
{
    uint64_t H = m->hidden, tokens_h = b->tokens * H;
    tid qkv = seg_linear(b, s, h, H, 3 * H, m->qkv_bias, LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    tid q = op_view_part(b, qkv, tokens_h), k = op_view_part(b, qkv, tokens_h);
    tid v = op_view_part(b, qkv, tokens_h);
    tid o = seg_attention(b, m, q, k, v, sh->mask);
    o = seg_linear(b, s, o, H, H, m->out_bias, LLMEM_LORA_O);
    return op_dropout(b, o); /* resid_dropout */
}

/* GPT2MLP: c_fc, NewGELUActivation written out in Python ops
 * (0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))), c_proj, dropout. */
tid gpt2_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid x = seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    tid half = op_scale(b, x); /* Python evaluates 0.5 * input first */
    tid inner = op_add(b, x, op_scale(b, op_pow(b, x)));
    tid t = op_add_scalar(b, op_tanh(b, op_scale(b, inner)));
    tid y = op_mul(b, half, t);
    y = seg_linear(b, s, y, I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    return op_dropout(b, y);
}
