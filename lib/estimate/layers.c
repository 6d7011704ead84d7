/* SPDX-License-Identifier: MIT */
/*
 * Segment builders: the embedding, the decoder layer (dispatching to the
 * family files layers_gpt2.c and layers_llama.c), the head and the loss, and
 * the pieces every family shares (linear layers with LoRA, norms, rotary,
 * eager or fused attention). Each follows the eager forward of Hugging Face
 * transformers (v4.48) op by op, because what autograd saves depends on each
 * op and its dtype. Python locals that outlive their last use (query_states
 * in LlamaAttention.forward, say) are held with graph_hold until the function
 * that owns them returns.
 */
#include "estimate/layers_common.h"

#define FP32 4
#define INT64 8

/* A frozen QLoRA linear: bitsandbytes dequantizes the NF4 weight to the
 * compute dtype for the matmul (forward and again in backward), so the
 * transient is one dense weight; nothing weight-sized is saved. */
static tid nf4_linear(build *b, tid x, uint64_t in_f, uint64_t out_f)
{
    tid xc = op_cast(b, x, b->compute);
    uint64_t dense = in_f * out_f * (uint64_t)b->compute;
    uint64_t rows = tensor_elems(b, x) / in_f;
    /* MatMul4Bit saves its input only for a weight gradient, which a frozen base has none of. */
    return graph_op(b->g, rows * out_f, b->compute, &xc, 1, 0, 0, 0, dense, dense);
}

/* PEFT's LoRA Linear: base(x) + lora_B(lora_A(x)) * scaling, with x cast to
 * the adapters' dtype first, and the sum cast back to the base's result dtype. */
tid seg_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f, int bias,
               unsigned target)
{
    tid base = s->nf4 ? nf4_linear(b, x, in_f, out_f)
                      : op_linear(b, x, in_f, out_f, s->weights_trainable, bias);
    if (!(s->lora_targets & target))
        return base;
    int result_dt = b->g->t[base].dt, saved_param_dt = b->param_dt;
    b->param_dt = LORA_DT;
    tid xl = op_cast(b, x, LORA_DT);
    tid a = op_linear(b, xl, in_f, s->lora_rank, 1, 0);
    tid up = op_linear(b, a, s->lora_rank, out_f, 1, 0);
    b->param_dt = saved_param_dt;
    tid sum = op_add(b, base, op_scale(b, up));
    tid out = op_cast(b, sum, result_dt);
    graph_hold(b->g, x); /* the argument of LoraLayer.forward lives until it returns */
    graph_hold(b->g, base);
    return out;
}

/* LlamaRMSNorm: upcast, pow(2).mean, * rsqrt(var + eps), cast back, * weight. */
tid seg_rms_norm(build *b, const seg_spec *s, tid x, uint64_t dim)
{
    int in_dt = b->g->t[x].dt;
    tid xf = op_cast(b, x, FP32);
    tid var = op_mean_last(b, op_pow(b, xf), dim);
    tid inv = op_rsqrt(b, op_add_scalar(b, var));
    tid normed = op_cast(b, op_mul(b, xf, inv), in_dt);
    tid w = op_param(b, dim, s->norms_trainable);
    return op_mul(b, w, normed);
}

/* GemmaRMSNorm / Gemma2RMSNorm: x.float(), x * rsqrt(mean(x^2) + eps), times
 * (1 + weight.float()), cast back with type_as. */
static tid gemma_rms_norm(build *b, const seg_spec *s, tid x, uint64_t dim)
{
    int in_dt = b->g->t[x].dt;
    tid xf = op_cast(b, x, FP32);
    tid var = op_mean_last(b, op_pow(b, xf), dim);
    tid normed = op_mul(b, xf, op_rsqrt(b, op_add_scalar(b, var)));
    tid w = op_add_scalar(b, op_cast(b, op_param(b, dim, s->norms_trainable), FP32));
    return op_cast(b, op_mul(b, normed, w), in_dt);
}

int seg_gemma_like(const model_shape *m)
{
    return m->family == LLMEM_FAMILY_GEMMA || m->family == LLMEM_FAMILY_GEMMA2;
}

tid seg_norm(build *b, const model_shape *m, const seg_spec *s, tid x)
{
    if (seg_gemma_like(m))
        return gemma_rms_norm(b, s, x, m->hidden);
    if (m->norm == LLMEM_NORM_RMSNORM)
        return seg_rms_norm(b, s, x, m->hidden);
    return op_layer_norm(b, x, m->hidden, s->norms_trainable, m->norm_bias);
}

/* apply_rotary_pos_emb: x * cos + rotate_half(x) * sin. */
tid seg_rotary(build *b, tid x, tid cos, tid sin)
{
    if (cos < 0)
        return x; /* no rotary tables: phased_unsupported refuses such models */
    tid rotated = op_cat_halves(b, op_neg(b, x), x);
    return op_add(b, op_mul(b, x, cos), op_mul(b, rotated, sin));
}

/* repeat_kv with a single kv head: expand + reshape is a stride-0 view. The
 * first op that needs real memory materializes it: autocast's cast (dtype
 * change), or matmul's reshape to 3-D when batch > 1 (the batch and head
 * strides can no longer merge). With batch 1 and no cast it stays a view. */
static tid materialize_repeat(build *b, tid x, uint64_t n_rep)
{
    int dt = b->g->t[x].dt;
    if (b->autocast && dt != b->compute)
        dt = b->compute;
    else if (b->batch == 1)
        return x;
    return graph_op(b->g, tensor_elems(b, x) * n_rep, dt, &x, 1, 0, 0, 0, 0, 0);
}

/* torch.matmul folds a 4-D operand to 3-D for bmm. A head view of a fused
 * projection ([B, S, heads, D] transposed) folds without a copy only when
 * batch is 1; otherwise bmm gets, and saves, a contiguous copy, and the
 * fused projection's storage is no longer kept for it. */
static tid matmul_operand(build *b, tid x)
{
    if (b->g->t[x].role != ROLE_VIEW || b->batch == 1)
        return x;
    return op_copy(b, x);
}

tid seg_attention(build *b, const model_shape *m, tid q, tid k, tid v, tid mask)
{
    uint64_t n_rep = m->heads / m->kv_heads;
    uint64_t scores = b->batch * m->heads * b->seq * b->seq;
    uint64_t out_elems = b->tokens * m->heads * m->head_dim;
    if (b->flash) {
        /* FlashAttention-2 takes grouped kv heads natively and the compute dtype. */
        tid qc = op_cast(b, q, b->compute), kc = op_cast(b, k, b->compute);
        tid vc = op_cast(b, v, b->compute);
        return op_flash_attention(b, qc, kc, vc, m->heads);
    }
    /* eager_attention_forward */
    tid ks, vs;
    if (m->kv_heads == 1 && n_rep > 1) {
        ks = materialize_repeat(b, k, n_rep);
        vs = materialize_repeat(b, v, n_rep);
    } else {
        ks = op_expand_copy(b, k, n_rep);
        vs = op_expand_copy(b, v, n_rep);
    }
    tid w = op_bmm(b, matmul_operand(b, q), matmul_operand(b, ks), scores);
    if (m->family == LLMEM_FAMILY_GPT2) {
        w = op_where(b, op_scale(b, w)); /* / sqrt(d), then the causal bias buffer */
    } else {
        w = op_scale(b, w); /* * scaling */
        if (m->family == LLMEM_FAMILY_GEMMA2) /* attn_logit_softcapping: / cap, tanh, * cap */
            w = op_scale(b, op_tanh(b, op_scale(b, w)));
    }
    if (mask >= 0)
        w = op_add(b, w, mask);
    /* Llama asks softmax for fp32; GPT-2 gets fp32 only from autocast's fp32 list. */
    int softmax_dt = m->family == LLMEM_FAMILY_GPT2 && !b->autocast ? b->g->t[w].dt : FP32;
    tid p = op_softmax(b, w, softmax_dt);
    p = op_cast(b, p, b->g->t[m->family == LLMEM_FAMILY_GPT2 ? v : q].dt);
    p = op_dropout(b, p);
    tid o = op_copy(b, op_bmm(b, p, matmul_operand(b, vs), out_elems)); /* transpose(1, 2).contiguous() */
    graph_hold(b->g, ks);
    graph_hold(b->g, vs);
    graph_hold(b->g, p);
    return o;
}

/* Elements of one rotary table ([1, seq, head_dim]; 0 without rotary) and of
 * the attention mask: Llama's eager path builds a 4-D additive mask
 * [batch, 1, seq, seq], GPT-2 broadcasts a padding mask [batch, 1, 1, seq],
 * and fused attention takes none. */
static uint64_t rope_elems(const build *b, const model_shape *m)
{
    return m->positions == LLMEM_POSITIONS_ROTARY ? b->seq * m->head_dim : 0;
}

static uint64_t mask_elems(const build *b, const model_shape *m)
{
    if (b->flash)
        return 0;
    return m->family == LLMEM_FAMILY_GPT2 ? b->batch * b->seq : b->batch * b->seq * b->seq;
}

/* LlamaRotaryEmbedding returns cos and sin in the hidden dtype. */
static shared_tensors shared_inputs(build *b, const model_shape *m)
{
    shared_tensors sh = { -1, -1, -1 };
    int dt = residual_dt(b);
    if (rope_elems(b, m) > 0) {
        sh.cos = graph_tensor(b->g, rope_elems(b, m), dt, ROLE_EXTERNAL, 0);
        sh.sin = graph_tensor(b->g, rope_elems(b, m), dt, ROLE_EXTERNAL, 0);
    }
    if (mask_elems(b, m) > 0)
        sh.mask = graph_tensor(b->g, mask_elems(b, m), dt, ROLE_EXTERNAL, 0);
    return sh;
}

shared_bytes shared_layer_bytes(const build *b, const model_shape *m)
{
    uint64_t dt = (uint64_t)residual_dt(b);
    shared_bytes sb;
    sb.rope = 2 * rope_elems(b, m) * dt;
    /* position ids (cache_position): int64 [seq] */
    sb.locals = b->seq * INT64 + mask_elems(b, m) * dt;
    return sb;
}

void build_layer(build *b, const model_shape *m, const seg_spec *s)
{
    shared_tensors sh = shared_inputs(b, m);
    tid x = graph_tensor(b->g, b->tokens * m->hidden, residual_dt(b), ROLE_INPUT, s->input_rg);
    tid a, mid, mlp_out;
    /* The decoder layer's hidden_states local keeps each norm's output until
     * the attention or MLP call that reads it returns. */
    tid h = seg_norm(b, m, s, x);
    if (m->family == LLMEM_FAMILY_GPT2) {
        a = gpt2_attention(b, m, s, h, &sh);
        graph_hold(b->g, h);
        mid = op_add(b, a, x);
        h = seg_norm(b, m, s, mid);
        mlp_out = gpt2_mlp(b, m, s, h);
    } else {
        a = llama_attention(b, m, s, h, &sh);
        graph_hold(b->g, h);
        if (m->family == LLMEM_FAMILY_GEMMA2) /* post_attention_layernorm */
            a = seg_norm(b, m, s, a);
        mid = op_add(b, x, a);
        h = seg_norm(b, m, s, mid);
        mlp_out = llama_mlp(b, m, s, h);
        if (m->family == LLMEM_FAMILY_GEMMA2) /* post_feedforward_layernorm */
            mlp_out = seg_norm(b, m, s, mlp_out);
    }
    graph_hold(b->g, h);
    b->g->output = op_add(b, mid, mlp_out);
    if (b->hold_input)
        graph_hold(b->g, x);
}

/* The token (and position) embedding. input_rg here means PEFT's
 * enable_input_require_grads hook: a frozen embedding's output is made a leaf
 * that requires grad, which its AccumulateGrad node keeps alive to the end. */
void build_embedding(build *b, const model_shape *m, const seg_spec *s)
{
    tid x = op_embedding(b, m->vocab, m->hidden, s->weights_trainable, NULL);
    int leaf = s->input_rg && !s->weights_trainable;
    if (leaf) {
        b->g->t[x].rg = (uint8_t)b->g->grad_enabled;
        /* An op after it (positions, Gemma's normalizer) puts an AccumulateGrad
         * node on the leaf, which keeps it alive through backward. */
        if (m->positions == LLMEM_POSITIONS_LEARNED || seg_gemma_like(m))
            graph_op(b->g, 0, b->param_dt, &x, 1, 1u, 0, 0, 0, 0);
    }
    if (seg_gemma_like(m)) /* hidden_states * normalizer (sqrt(hidden), a 0-dim tensor) */
        x = op_scale(b, x);
    if (m->positions == LLMEM_POSITIONS_LEARNED) {
        tid pos = graph_op(b->g, b->seq * m->hidden, b->param_dt,
                           (tid[]){ op_param(b, (m->max_positions + m->position_offset) * m->hidden,
                                             s->weights_trainable) },
                           1, 0, 0, 0, 0, 0);
        x = op_add(b, x, pos);
        x = op_dropout(b, x); /* embd_pdrop */
    }
    b->g->output = x;
}

/*
 * Fused linear cross-entropy (Liger-Kernel's fused_linear_cross_entropy.py):
 * the logits are computed chunk by chunk, chunk = next_pow2(ceil(tokens /
 * ceil(vocab / hidden))) rows, and the gradients of the input and of the
 * head's weight (zeros_like(weight)) are computed in forward and saved until
 * backward hands them over. No full logits exist.
 */
static void chunked_head_loss(build *b, const model_shape *m, const seg_spec *s, tid x)
{
    uint64_t inc = (m->vocab + m->hidden - 1) / m->hidden, rows = (b->tokens + inc - 1) / inc;
    uint64_t chunk = 1;
    while (chunk < rows)
        chunk <<= 1;
    if (chunk > b->tokens)
        chunk = b->tokens;
    tid w = op_param(b, m->vocab * m->hidden, s->weights_trainable);
    tid xc = op_cast(b, x, b->compute);
    uint64_t grad_in = graph_rg(b->g, xc) ? b->g->t[xc].bytes : 0;
    uint64_t grad_w = s->weights_trainable ? b->g->t[w].grad_bytes : 0;
    uint64_t workspace = chunk * m->vocab * (uint64_t)b->compute + chunk * m->hidden * FP32;
    tid in[2] = { xc, w };
    b->g->output = graph_op(b->g, 1, FP32, in, 2, SAVE_AUX, GRADS_IN_AUX, grad_in + grad_w,
                            workspace, 0);
}

/* Final norm, lm_head, and ForCausalLMLoss: logits.float(), labels padded
 * and shifted, cross_entropy = log_softmax + nll_loss. */
void build_head(build *b, const model_shape *m, const seg_spec *s)
{
    tid x = graph_tensor(b->g, b->tokens * m->hidden, residual_dt(b), ROLE_INPUT, s->input_rg);
    if (m->final_norm)
        x = seg_norm(b, m, s, x);
    if (s->chunked_loss) {
        chunked_head_loss(b, m, s, x);
        return;
    }
    tid logits = op_linear(b, x, m->hidden, m->vocab, s->weights_trainable, m->head_bias);
    if (m->family == LLMEM_FAMILY_GEMMA2) /* final_logit_softcapping: / cap, tanh, * cap */
        logits = op_scale(b, op_tanh(b, op_scale(b, logits)));
    tid lf = op_cast(b, logits, FP32);
    /* pad(labels, (0, 1), -100)[..., 1:].contiguous(): int64, saved by nll_loss. */
    tid padded = graph_op(b->g, b->batch * (b->seq + 1), INT64, NULL, 0, 0, 0, 0, 0, 0);
    tid target = graph_op(b->g, b->tokens, INT64, &padded, 1, 0, 0, 0, 0, 0);
    tid logp = graph_op(b->g, b->tokens * m->vocab, FP32, &lf, 1, SAVE_OUT, 0, 0, 0, 0);
    tid in[2] = { logp, target };
    b->g->output = graph_op(b->g, 1, FP32, in, 2, 2u, 0, 0, 0, 0);
    graph_hold(b->g, logits); /* the model output keeps the logits until the loss returns */
    graph_hold(b->g, lf);     /* ForCausalLMLoss's locals: the fp32 logits and padded labels */
    graph_hold(b->g, padded);
    graph_hold(b->g, x);      /* the CausalLM forward's hidden_states local */
}
