/* SPDX-License-Identifier: MIT */
/* The BLOOM code path (modeling_bloom.py in transformers v4.50): the fused
 * query_key_value viewed as [batch, seq, heads, 3, head_dim], ALiBi added by
 * baddbmm, the merge of the heads, dropout_add, and BloomGelu, the custom
 * autograd function that saves its input. */
#include "layers/common.h"

/* reshape(batch x heads, seq, head_dim) of a head slice of fused_qkv: a view
 * when batch is 1, else a copy (the batch and head strides do not merge). */
static tid heads_first(build *b, tid x)
{
    return b->batch == 1 ? x : op_copy(b, x);
}

/* BloomAttention.forward. Its locals hold fused_qkv, the scores and the
 * masked scores until it returns. */
static tid bloom_attention(build *b, const model_shape *m, const seg_spec *s, tid h, tid residual,
                           const shared_tensors *sh)
{
    /* heads x head_dim is hidden, or its share under tensor parallelism */
    uint64_t H = m->hidden, T = b->tokens, W = m->heads * m->head_dim;
    uint64_t scores_elems = b->batch * m->heads * b->seq * b->seq;
    tid qkv = llmem_seg_linear(b, s, h, H, 3 * W, m->qkv_bias,
                               LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    tid q = heads_first(b, op_view_part(b, qkv, T * W));
    tid k = heads_first(b, op_view_part(b, qkv, T * W));
    tid v = heads_first(b, op_view_part(b, qkv, T * W));
    tid o, held[3] = { -1, -1, -1 };
    if (b->attention == LLMEM_ATTENTION_FLASH) {
        o = llmem_seg_attention(b, m, q, k, v, -1);
    } else {
        /* alibi.baddbmm(q, k^T, beta, alpha): autocast casts all three
         * arguments; only q and k are saved (alibi needs no gradient). */
        tid alibi = b->autocast ? op_cast(b, sh->alibi, b->compute) : sh->alibi;
        tid qc = b->autocast ? op_cast(b, q, b->compute) : q;
        tid kc = b->autocast ? op_cast(b, k, b->compute) : k;
        tid scores = llmem_graph_op(b->g, scores_elems, op_dt(b, qc), (tid[]){ qc, kc, alibi }, 3,
                                    SAVE_CROSS, 0, 0, 0, 0);
        tid w = op_add(b, scores, sh->mask);
        tid p = op_cast(b, op_softmax(b, w, FP32), op_dt(b, q)); /* .to(query_layer.dtype) */
        p = op_dropout(b, p, DROPOUT_ATTENTION); /* attention_dropout */
        o = op_bmm(b, p, v, T * W);
        o = op_copy(b, o); /* _merge_heads: view, permute, reshape */
        held[0] = scores;
        held[1] = w;
        held[2] = p;
    }
    o = llmem_seg_linear(b, s, o, W, H, m->out_bias, LLMEM_LORA_O);
    o = op_add(b, residual, op_dropout(b, o, DROPOUT_HIDDEN)); /* dropout_add */
    for (int i = 0; i < 3; i++)
        llmem_graph_hold(b->g, held[i]);
    llmem_graph_hold(b->g, qkv);
    llmem_graph_hold(b->g, q);
    llmem_graph_hold(b->g, k);
    llmem_graph_hold(b->g, v);
    return o;
}

/* GeLUFunction: saves its input; its forward and backward are Python
 * expressions run outside autograd, whose temporaries are [tokens, I] each:
 * at most four live at once in forward (x * 0.5, 0.79788456 * x,
 * 0.044715 * x, and its product with x) and five in backward (bloom_gelu_back:
 * tanh_out, 0.5 * x, 1 - tanh_out^2, 0.1070322243 * x and its product with x). */
static tid bloom_gelu(build *b, tid x)
{
    uint64_t t = b->g->t[x].bytes;
    /* forward: the output is one of the four; backward: the input's gradient is */
    return llmem_graph_op(b->g, tensor_elems(b, x), op_dt(b, x), &x, 1, BIT(0), 0, 0, 3 * t, 4 * t);
}

/* BloomBlock.forward: LN, attention (its dropout_add adds the input),
 * LN, BloomMLP (dense_h_to_4h, BloomGelu, dense_4h_to_h, dropout_add). */
static tid bloom_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                       const shared_tensors *sh)
{
    uint64_t H = m->hidden, I = m->intermediate;
    llmem_region(b, "norm");
    tid h1 = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    tid a = bloom_attention(b, m, s, h1, x, sh);
    llmem_region(b, "norm");
    tid h2 = llmem_seg_norm(b, m, s, a);
    llmem_graph_hold(b->g, h1); /* layernorm_output, until reassigned */
    llmem_region(b, "mlp");
    tid f = llmem_seg_linear(b, s, h2, H, I, m->mlp_bias, LLMEM_LORA_UP);
    tid g = bloom_gelu(b, f);
    f = llmem_seg_linear(b, s, g, I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    tid out = op_add(b, a, op_dropout(b, f, DROPOUT_HIDDEN));
    llmem_graph_hold(b->g, g); /* BloomMLP's hidden_states local */
    llmem_graph_hold(b->g, h2);
    return out;
}

static int bloom_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(m, 0, why);
    if (key != 0)
        return key;
    if (m->kv_heads != m->heads || m->heads * m->head_dim != m->hidden) {
        *why = "head-dim (BLOOM has hidden / heads per head and no grouped kv heads)";
        return LLMEM_MODEL_HEAD_DIM;
    }
    return 0;
}

const layer_path llmem_path_bloom = { bloom_block, bloom_unsupported, NULL, 0 };
