/* SPDX-License-Identifier: MIT */
/* The Falcon code path (modeling_falcon.py in transformers v4.50, rotary
 * positions, eager attention): FalconLinear (x @ weight.T, then + bias), the
 * fused query_key_value split three ways (multi-query: one key and value head
 * indexed out; new_decoder_architecture: kv groups indexed out and broadcast
 * to every head by flatten copies; otherwise per-head q, k, v views),
 * attention without dropout and with softmax in the layer norm's dtype, and
 * the parallel (one or two LayerNorms) or sequential decoder layer. */
#include "layers/common.h"

/* FalconLinear: input @ self.weight.T (autocast casts the transposed view at
 * every use), then a separate + bias (which promotes a low-precision product
 * to the fp32 bias's dtype under autocast); PEFT's LoRA wraps it as any Linear. */
static tid falcon_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f,
                         int bias, unsigned target)
{
    if (b->sp > 1) /* sequence parallelism: Megatron's parallel linears instead */
        return llmem_seg_linear(b, s, x, in_f, out_f, bias, target);
    b->uncached_casts = 1; /* its weight.T is a view, not a leaf: autocast caches no copy */
    tid y = s->nf4 ? llmem_seg_nf4_linear(b, x, in_f, out_f)
                   : op_linear(b, x, in_f, out_f, s->weights_trainable, 0);
    b->uncached_casts = 0; /* PEFT's adapters on it are plain nn.Linear leaves */
    if (bias)
        y = op_add(b, y, op_param(b, out_f, s->weights_trainable));
    return llmem_seg_lora(b, s, x, y, in_f, out_f, target);
}

/* A copy of rows elements per token taken out of fused_qkv by advanced
 * indexing (qkv[..., [-2], :]) or by flatten() of a non-contiguous view. */
static tid copy_out(build *b, tid x, uint64_t elems)
{
    return llmem_graph_op(b->g, elems, op_dt(b, x), &x, 1, 0, 0, 0, 0, 0);
}

/* 1 < kv heads < heads: new_decoder_architecture's grouped layout. */
static int grouped(const model_shape *m)
{
    return m->kv_heads > 1 && m->kv_heads < m->heads;
}

/* What FalconAttention.forward hands SDPA: ALiBi in a [batch, heads, seq,
 * seq] float mask; otherwise its own call without enable_gqa, the grouped
 * layout's keys and values already broadcast to every head (multi-query's
 * single head is not, which sends it to the math kernel). */
int llmem_falcon_sdpa_quadratic(const model_shape *m, int dt)
{
    if (m->positions == LLMEM_POSITIONS_ALIBI)
        return 1;
    model_shape heads = *m;
    if (grouped(m))
        heads.kv_heads = m->heads;
    return llmem_seg_sdpa_math(&heads, dt, 0);
}

/* The eager ALiBi branch of FalconAttention.forward (Falcon-RW): q @ k^T,
 * cast to fp32 when low-precision, + alibi, *= inv_norm_factor in place,
 * softmax(+ mask, dtype=hidden_states.dtype) with the mask [batch, heads,
 * seq, seq] that holds ALiBi, attention dropout, @ v, merge of the heads.
 * Its locals keep the product, its fp32 copy and the logits to the end. */
static tid alibi_attention(build *b, const model_shape *m, tid q, tid k, tid v, tid h,
                           const shared_tensors *sh)
{
    uint64_t scores = b->batch * m->heads * b->seq * b->seq;
    uint64_t out_elems = b->tokens * m->heads * m->head_dim;
    tid prod = op_bmm(b, llmem_seg_matmul_operand(b, q), llmem_seg_matmul_operand(b, k), scores);
    tid sf = op_cast(b, prod, FP32);
    tid logits = op_add(b, sf, sh->alibi);
    tid p = op_softmax(b, op_add(b, logits, sh->mask), op_dt(b, h));
    p = op_dropout(b, p, DROPOUT_ATTENTION);
    tid o = op_copy(b, op_bmm(b, p, llmem_seg_matmul_operand(b, v), out_elems)); /* _merge_heads */
    llmem_graph_hold(b->g, prod);
    llmem_graph_hold(b->g, sf);
    llmem_graph_hold(b->g, logits);
    llmem_graph_hold(b->g, p);
    return o;
}

/* FalconAttention.forward; its fused_qkv and q, k, v locals live until it returns. */
static tid falcon_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                            const shared_tensors *sh)
{
    uint64_t H = m->hidden, T = b->tokens, D = m->head_dim, nh = m->heads, kv = m->kv_heads;
    uint64_t width = grouped(m) ? (nh + 2 * kv) * D : kv == 1 ? (nh + 2) * D : 3 * nh * D;
    model_shape heads = *m;
    tid fused = falcon_linear(b, s, h, H, width, m->qkv_bias,
                              LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    tid q, k, v;
    if (grouped(m)) {
        /* key = qkv[:, :, :, [-2]] (a copy), broadcast to the group, and
         * [x.flatten(2, 3) for x in (query, key, value)]: three copies of
         * every head; the tuple keeps the indexed copies to the last one. */
        tid kg = copy_out(b, fused, T * kv * D), vg = copy_out(b, fused, T * kv * D);
        q = copy_out(b, op_view_part(b, fused, T * nh * D), T * nh * D);
        k = copy_out(b, kg, T * nh * D);
        v = copy_out(b, vg, T * nh * D);
        llmem_graph_hold(b->g, kg);
        heads.kv_heads = nh; /* the keys and values now have every head */
        q = op_view_part(b, q, T * nh * D);
        k = op_view_part(b, k, T * nh * D);
        v = op_view_part(b, v, T * nh * D);
    } else if (kv == 1) {
        /* multi_query: fused_qkv[..., [-2], :] and [..., [-1], :] are copies */
        q = op_view_part(b, fused, T * nh * D);
        k = copy_out(b, fused, T * D);
        v = copy_out(b, fused, T * D);
    } else {
        q = op_view_part(b, fused, T * nh * D);
        k = op_view_part(b, fused, T * nh * D);
        v = op_view_part(b, fused, T * nh * D);
    }
    tid qr = q, kr = k, o;
    if (m->positions == LLMEM_POSITIONS_ALIBI && b->attention == LLMEM_ATTENTION_EAGER) {
        o = alibi_attention(b, m, q, k, v, h, sh);
    } else if (m->positions == LLMEM_POSITIONS_ALIBI && b->attention == LLMEM_ATTENTION_SDPA) {
        /* With a mask on CUDA, q, k and v are made contiguous (copies of the
         * head views) before SDPA; its output's memory is [batch, seq, heads,
         * head_dim], so the merge of the heads copies nothing. */
        qr = op_copy(b, q);
        kr = op_copy(b, k);
        tid vc = op_copy(b, v);
        o = llmem_seg_sdpa_masked(b, &heads, qr, kr, vc, sh->mask);
        llmem_graph_hold(b->g, vc);
    } else {
        if (m->positions != LLMEM_POSITIONS_ALIBI) {
            qr = llmem_seg_rotary(b, q, sh->cos, sh->sin);
            kr = llmem_seg_rotary(b, k, sh->cos, sh->sin);
        }
        /* attention_scores /= sqrt(head_dim) is in place; softmax(scores + mask,
         * dtype=hidden_states.dtype), the layer norm's output dtype; no dropout.
         * SDPA is called directly, dropout_p 0, without enable_gqa. */
        attn_opts opts = { 0, 0, op_dt(b, h), 0, 1 };
        o = llmem_seg_attention_opts(b, &heads, qr, kr, v, sh->mask, &opts);
    }
    o = falcon_linear(b, s, o, nh * D, H, m->out_bias, LLMEM_LORA_O);
    llmem_graph_hold(b->g, fused);
    llmem_graph_hold(b->g, qr);
    llmem_graph_hold(b->g, kr);
    llmem_graph_hold(b->g, v);
    return o;
}

/* mlp_output += attention_output: in place, no new storage; the gradient
 * goes to both operands unchanged. */
static tid add_in_place(build *b, tid x, tid y)
{
    tid in[2] = { x, y };
    tid out = llmem_graph_op(b->g, tensor_elems(b, x), op_dt(b, x), in, 2, 0, BIT(0) | BIT(1), 0,
                             0, 0);
    llmem_graph_view(b->g, out, x);
    return out;
}

/* FalconDecoderLayer.forward: its layer-norm outputs and attention output
 * are locals to the end. */
static tid falcon_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                        const shared_tensors *sh)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid residual = x;
    llmem_region(b, "norm");
    tid attn_in = llmem_seg_norm(b, m, s, x); /* ln_attn or input_layernorm */
    tid mlp_in = attn_in;
    if (m->parallel_block && m->norms_per_layer == 2)
        mlp_in = llmem_seg_norm(b, m, s, x); /* ln_mlp */
    llmem_region(b, "attention");
    tid a = falcon_attention(b, m, s, attn_in, sh);
    if (!m->parallel_block) {
        llmem_region(b, "norm");
        /* dropout_add(attention_output, residual) */
        residual = op_add(b, x, op_dropout(b, a, DROPOUT_HIDDEN));
        mlp_in = llmem_seg_norm(b, m, s, residual); /* post_attention_layernorm */
    }
    llmem_region(b, "mlp");
    tid f = falcon_linear(b, s, mlp_in, H, I, m->mlp_bias, LLMEM_LORA_UP);
    f = falcon_linear(b, s, llmem_seg_activation(b, m, f), I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    if (m->parallel_block)
        f = add_in_place(b, f, a);
    /* dropout_add(mlp_output, residual) */
    tid out = op_add(b, residual, op_dropout(b, f, DROPOUT_HIDDEN));
    llmem_graph_hold(b->g, attn_in);
    llmem_graph_hold(b->g, mlp_in);
    llmem_graph_hold(b->g, a);
    return out;
}

/* Published layouts only: a parallel block with one norm, or with two in the
 * grouped (new_decoder_architecture) layout; a sequential block with two, not
 * grouped. */
static int falcon_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(
        m, ACCEPT_PARALLEL | ACCEPT_NORMS | ACCEPT_ACTIVATION | ACCEPT_ALIBI, why);
    if (key != 0)
        return key;
    if (m->heads * m->head_dim != m->hidden) {
        *why = "head-dim (Falcon has hidden / heads per head)";
        return LLMEM_MODEL_HEAD_DIM;
    }
    if (m->positions == LLMEM_POSITIONS_ALIBI && m->kv_heads != m->heads) {
        *why = "positions (Falcon's ALiBi with the per-head layout only, as Falcon-RW)";
        return LLMEM_MODEL_POSITIONS;
    }
    int ok = m->parallel_block ? (m->norms_per_layer == 1 ||
                                  (m->norms_per_layer == 2 && grouped(m)))
                               : (m->norms_per_layer == 2 && !grouped(m));
    if (!ok) {
        *why = "norms-per-layer (Falcon: 1 or, with grouped kv heads, 2 in a parallel block; "
               "2 without grouped kv heads in a sequential one)";
        return LLMEM_MODEL_NORMS_PER_LAYER;
    }
    return 0;
}

const layer_path llmem_path_falcon = { falcon_block, falcon_unsupported, NULL, 0 };
