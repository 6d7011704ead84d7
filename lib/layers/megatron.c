/* SPDX-License-Identifier: MIT */
/*
 * The Megatron-LM GPT code path (megatron/core/transformer/transformer_layer.py
 * with the local layer spec: attention.py SelfAttention, dot_product_attention.py
 * DotProductAttention, mlp.py MLP), in 16-bit: the layer Korthikanti et al.
 * (2022, "Reducing Activation Recomputation in Large Transformer Models",
 * section 4.1) count 34sbh + 5as^2b bytes of activations for. What each op
 * saves follows their count: the norms' inputs, the fused qkv projection's
 * input, q and k (views of its output, which they keep whole with v), the
 * softmax output, the attention-dropout mask and output, the projection's
 * input, the MLP's input, GeLU's input and output, and two dropout masks.
 */
#include "layers/common.h"

static tid megatron_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                          const shared_tensors *sh)
{
    uint64_t H = m->hidden, width = m->heads * m->head_dim, I = m->intermediate;
    uint64_t tokens_w = b->tokens * width, scores = b->batch * m->heads * b->seq * b->seq;
    (void)sh;
    /* input_layernorm, linear_qkv (column-parallel), split into views */
    llmem_region(b, "norm");
    tid h = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    tid qkv = llmem_seg_linear(b, s, h, H, 3 * width, m->qkv_bias,
                               LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    tid q = op_view_part(b, qkv, tokens_w), k = op_view_part(b, qkv, tokens_w);
    tid v = op_view_part(b, qkv, tokens_w);
    /* baddbmm on [b x np, sq, hn] views; FusedScaleMaskSoftmax scales, masks
     * and returns the probabilities in the input dtype; attention_dropout. */
    tid p = op_softmax(b, op_bmm(b, q, k, scores), b->g->t[q].dt);
    p = op_dropout(b, p, DROPOUT_ATTENTION);
    /* bmm with v, then permute(2, 0, 1, 3).contiguous() for linear_proj */
    tid ctx = op_copy(b, op_bmm(b, p, v, tokens_w));
    tid o = llmem_seg_linear(b, s, ctx, width, H, m->out_bias, LLMEM_LORA_O);
    /* bias_dropout_add into the residual */
    tid mid = op_add(b, op_dropout(b, o, DROPOUT_HIDDEN), x);
    /* pre_mlp_layernorm, linear_fc1, bias_gelu (saves its input), linear_fc2 */
    llmem_region(b, "norm");
    h = llmem_seg_norm(b, m, s, mid);
    llmem_region(b, "mlp");
    tid up = llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    tid down = llmem_seg_linear(b, s, op_gelu(b, up), I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    return op_add(b, op_dropout(b, down, DROPOUT_HIDDEN), mid);
}

/* The layer splits q, k and v alike: one head size, no grouped key/value heads. */
static int megatron_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(m, 0, why);
    if (key != 0)
        return key;
    if (m->kv_heads != m->heads) {
        *why = "kv-heads (the Megatron GPT path has no grouped key/value heads)";
        return LLMEM_MODEL_KV_HEADS;
    }
    return 0;
}

const layer_path llmem_path_megatron = { megatron_block, megatron_unsupported, NULL, 0 };
