/* SPDX-License-Identifier: MIT */
/* The OPT code path (modeling_opt.py in transformers v4.50): separate q, k, v
 * projections with the query scaled before the scores, eager attention
 * without a scaling of the scores, dropout on the attention and MLP outputs,
 * the activation (ReLU), and the layer norms before the sublayers or, with
 * do_layer_norm_before false (OPT-350m), after the residual additions. */
#include "layers/common.h"

/* OPTAttention.forward: q_proj(h) * scaling, views of q, k, v, eager
 * attention (matmul, + mask, softmax in fp32 cast back to the query's dtype,
 * dropout, matmul), transpose(1, 2).contiguous(), out_proj. */
static tid opt_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                         const shared_tensors *sh)
{
    static const attn_opts opts = { 0, 1, 0, 1, 0 }; /* the query was scaled: no * scaling */
    /* heads x head_dim is hidden, or its share under tensor parallelism */
    uint64_t H = m->hidden, T = b->tokens, W = m->heads * m->head_dim;
    tid q = op_scale(b, llmem_seg_linear(b, s, h, H, W, m->qkv_bias, LLMEM_LORA_Q));
    tid k = llmem_seg_linear(b, s, h, H, W, m->qkv_bias, LLMEM_LORA_K);
    tid v = llmem_seg_linear(b, s, h, H, W, m->qkv_bias, LLMEM_LORA_V);
    /* .view(bsz, -1, heads, head_dim).transpose(1, 2): views the matmuls fold */
    tid qv = op_view_part(b, q, T * W), kv = op_view_part(b, k, T * W);
    tid vv = op_view_part(b, v, T * W);
    tid o = llmem_seg_attention_opts(b, m, qv, kv, vv, sh->mask, &opts);
    o = llmem_seg_linear(b, s, o, W, H, m->out_bias, LLMEM_LORA_O);
    llmem_graph_hold(b->g, q); /* query_states, key_states, value_states locals */
    llmem_graph_hold(b->g, k);
    llmem_graph_hold(b->g, v);
    return o;
}

/* fc1, the activation, fc2, dropout. */
static tid opt_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid x = llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    x = llmem_seg_linear(b, s, llmem_seg_activation(b, m, x), I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    return op_dropout(b, x, DROPOUT_HIDDEN);
}

/* OPTDecoderLayer.forward. The pre-norm layer holds each norm's output in
 * its hidden_states local until the attention returns, or fc1 (which the
 * MLP's hidden_states then rebinds to its output). */
static tid opt_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                     const shared_tensors *sh)
{
    llmem_region(b, "norm");
    tid h = m->post_norm ? x : llmem_seg_norm(b, m, s, x); /* self_attn_layer_norm */
    llmem_region(b, "attention");
    tid a = op_dropout(b, opt_attention(b, m, s, h, sh), DROPOUT_HIDDEN);
    llmem_graph_hold(b->g, h);
    llmem_region(b, "norm");
    tid mid = op_add(b, x, a);
    if (m->post_norm)
        mid = llmem_seg_norm(b, m, s, mid);
    h = m->post_norm ? mid : llmem_seg_norm(b, m, s, mid); /* final_layer_norm */
    llmem_region(b, "mlp");
    tid f = opt_mlp(b, m, s, h);
    tid out = op_add(b, mid, f);
    if (!m->post_norm)
        return out;
    llmem_region(b, "norm");
    return llmem_seg_norm(b, m, s, out);
}

static int opt_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(m, ACCEPT_POST_NORM | ACCEPT_EMBED_DIM | ACCEPT_ACTIVATION, why);
    if (key != 0)
        return key;
    if (m->kv_heads != m->heads || m->heads * m->head_dim != m->hidden) {
        *why = "head-dim (OPT has hidden / heads per head and no grouped kv heads)";
        return LLMEM_MODEL_HEAD_DIM;
    }
    return 0;
}

const layer_path llmem_path_opt = { opt_block, opt_unsupported, NULL, 0 };
