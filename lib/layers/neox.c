/* SPDX-License-Identifier: MIT */
/* The parallel-residual code path (transformers v4.50): GPT-NeoX / Pythia
 * (modeling_gpt_neox.py: fused query_key_value chunked into q, k, v, partial
 * rotary with the rest catted back, two LayerNorms, use_parallel_residual or
 * not) and Phi-1/1.5/2 (modeling_phi.py: q, k, v projections with biases, an
 * optional qk_layernorm, partial rotary, one LayerNorm feeding attention and
 * MLP, resid_dropout). */
#include "layers/common.h"

/* GPTNeoXAttention.forward: its qkv local (the fused output) lives until it
 * returns. */
static tid neox_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                          const shared_tensors *sh)
{
    /* heads x head_dim is hidden, or its share under tensor parallelism */
    uint64_t H = m->hidden, T = b->tokens, W = m->heads * m->head_dim;
    tid qkv = llmem_seg_linear(b, s, h, H, 3 * W, m->qkv_bias,
                               LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    tid q = op_view_part(b, qkv, T * W), k = op_view_part(b, qkv, T * W);
    tid v = op_view_part(b, qkv, T * W);
    q = llmem_seg_partial_rotary(b, m, q, m->heads, sh->cos, sh->sin);
    k = llmem_seg_partial_rotary(b, m, k, m->heads, sh->cos, sh->sin);
    tid o = llmem_seg_attention(b, m, q, k, v, sh->mask);
    o = llmem_seg_linear(b, s, o, W, H, m->out_bias, LLMEM_LORA_O);
    llmem_graph_hold(b->g, qkv);
    llmem_graph_hold(b->g, q);
    llmem_graph_hold(b->g, k);
    return o;
}

/* PhiAttention.forward: q, k, v views of their projections, q_layernorm and
 * k_layernorm over head_dim (saving their input, a view of the projection),
 * partial rotary, eager attention with repeat_kv, dense. */
static tid phi_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                         const shared_tensors *sh)
{
    uint64_t H = m->hidden, T = b->tokens, D = m->head_dim;
    uint64_t qw = m->heads * D, kvw = m->kv_heads * D;
    tid q = op_view_part(b, llmem_seg_linear(b, s, h, H, qw, m->qkv_bias, LLMEM_LORA_Q), T * qw);
    tid k = op_view_part(b, llmem_seg_linear(b, s, h, H, kvw, m->qkv_bias, LLMEM_LORA_K), T * kvw);
    tid v = op_view_part(b, llmem_seg_linear(b, s, h, H, kvw, m->qkv_bias, LLMEM_LORA_V), T * kvw);
    if (m->qk_norm) {
        q = op_layer_norm(b, q, D, s->norms_trainable, m->norm_bias);
        k = op_layer_norm(b, k, D, s->norms_trainable, m->norm_bias);
    }
    q = llmem_seg_partial_rotary(b, m, q, m->heads, sh->cos, sh->sin);
    k = llmem_seg_partial_rotary(b, m, k, m->kv_heads, sh->cos, sh->sin);
    tid o = llmem_seg_attention(b, m, q, k, v, sh->mask);
    o = llmem_seg_linear(b, s, o, qw, H, m->out_bias, LLMEM_LORA_O);
    llmem_graph_hold(b->g, q);
    llmem_graph_hold(b->g, k);
    llmem_graph_hold(b->g, v);
    return o;
}

/* GPTNeoXMLP / PhiMLP: dense_h_to_4h (fc1), the activation, dense_4h_to_h (fc2). */
static tid plain_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid x = llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    return llmem_seg_linear(b, s, llmem_seg_activation(b, m, x), I, H, m->mlp_bias,
                            LLMEM_LORA_DOWN);
}

/* GPTNeoXLayer.forward: the norms' outputs are call arguments, alive until
 * the call returns; mlp_output + attn_output + hidden_states adds left to
 * right. */
static tid neox_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                      const shared_tensors *sh)
{
    llmem_region(b, "norm");
    tid h = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    tid a = neox_attention(b, m, s, h, sh);
    llmem_graph_hold(b->g, h);
    a = op_dropout(b, a, DROPOUT_HIDDEN); /* post_attention_dropout */
    llmem_region(b, "norm");
    if (!m->parallel_block)
        a = op_add(b, a, x);
    h = llmem_seg_norm(b, m, s, m->parallel_block ? x : a);
    llmem_region(b, "mlp");
    tid f = plain_mlp(b, m, s, h);
    llmem_graph_hold(b->g, h);
    f = op_dropout(b, f, DROPOUT_HIDDEN); /* post_mlp_dropout */
    tid out = op_add(b, f, a);
    if (!m->parallel_block)
        return out;
    out = op_add(b, out, x);
    llmem_graph_hold(b->g, f); /* mlp_output and attn_output: locals through both sums */
    llmem_graph_hold(b->g, a);
    return out;
}

/* PhiDecoderLayer.forward: one norm, its output (the hidden_states local)
 * feeds attention and MLP; attn_outputs + feed_forward_hidden_states +
 * residual. */
static tid phi_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                     const shared_tensors *sh)
{
    llmem_region(b, "norm");
    tid h = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    tid a = op_dropout(b, phi_attention(b, m, s, h, sh), DROPOUT_HIDDEN); /* resid_dropout */
    llmem_region(b, "mlp");
    tid f = op_dropout(b, plain_mlp(b, m, s, h), DROPOUT_HIDDEN);
    tid out = op_add(b, op_add(b, a, f), x);
    llmem_graph_hold(b->g, h);
    /* attn_outputs, feed_forward_hidden_states: locals through both sums */
    llmem_graph_hold(b->g, a);
    llmem_graph_hold(b->g, f);
    return out;
}

static tid parallel_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                          const shared_tensors *sh)
{
    return m->family == LLMEM_FAMILY_PHI ? phi_block(b, m, s, x, sh) : neox_block(b, m, s, x, sh);
}

/* GPT-NeoX: query_key_value is 3 x hidden wide (no grouped kv heads), with or
 * without the parallel residual; Phi: its parallel block only. */
static int parallel_unsupported(const model_shape *m, const char **why)
{
    int phi = m->family == LLMEM_FAMILY_PHI;
    unsigned accept = ACCEPT_PARTIAL_ROTARY | ACCEPT_ACTIVATION | (phi ? 0 : ACCEPT_PARALLEL);
    int key = llmem_layers_fixed(m, accept, why);
    if (key != 0)
        return key;
    if (!phi && (m->kv_heads != m->heads || m->heads * m->head_dim != m->hidden)) {
        *why = "head-dim (GPT-NeoX has hidden / heads per head and no grouped kv heads)";
        return LLMEM_MODEL_HEAD_DIM;
    }
    return 0;
}

const layer_path llmem_path_neox = { parallel_block, parallel_unsupported, NULL, 0 };
