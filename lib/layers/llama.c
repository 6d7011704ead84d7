/* SPDX-License-Identifier: MIT */
/* The Llama code path and its relatives (modeling_llama.py, modeling_qwen3.py,
 * modeling_mixtral.py, modeling_qwen2_moe.py, modeling_phi3.py,
 * modeling_gemma*.py in transformers v4.48; the routed experts also as 5.x
 * runs them): attention with GQA and rotary, the gated MLP,
 * mixture-of-experts, Phi-3's fused projections, GeGLU, and the decoder
 * layer with Gemma-2's sandwich norms. */
#include "layers/common.h"

/* The tensors a marked layer hands its tail (llama_tail): the layer's
 * input, the normed h, the rotated q and k, v, and the sliding window's
 * mask (shared_tensors' window: the tail's kind decides whether it takes
 * it). */
enum { CARRY_X, CARRY_H, CARRY_Q, CARRY_K, CARRY_V, CARRY_WINDOW, CARRY_COUNT };

/* The attention's projections and rotary: q, k and v in carry. */
static void llama_qkv(build *b, const model_shape *m, const seg_spec *s, tid h,
                      const shared_tensors *sh, tid *carry)
{
    uint64_t H = m->hidden, qw = m->heads * m->head_dim, kvw = m->kv_heads * m->head_dim;
    tid q, k, v;
    if (m->traits & TRAIT_FUSED_QKV) {
        /* Phi3Attention: one qkv_proj, sliced into views */
        tid qkv = llmem_seg_linear(b, s, h, H, qw + 2 * kvw, m->qkv_bias,
                             LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
        q = op_view_part(b, qkv, b->tokens * qw);
        k = op_view_part(b, qkv, b->tokens * kvw);
        v = op_view_part(b, qkv, b->tokens * kvw);
    } else {
        q = llmem_seg_linear(b, s, h, H, qw, m->qkv_bias, LLMEM_LORA_Q);
        if (m->qk_norm) /* Qwen3: q_norm over head_dim before the transpose */
            q = llmem_seg_rms_norm(b, s, q, m->head_dim);
        k = llmem_seg_linear(b, s, h, H, kvw, m->qkv_bias, LLMEM_LORA_K);
        if (m->qk_norm)
            k = llmem_seg_rms_norm(b, s, k, m->head_dim);
        v = llmem_seg_linear(b, s, h, H, kvw, m->qkv_bias, LLMEM_LORA_V);
    }
    carry[CARRY_Q] = llmem_seg_rotary(b, q, sh->cos, sh->sin);
    carry[CARRY_K] = llmem_seg_rotary(b, k, sh->cos, sh->sin);
    carry[CARRY_V] = v;
}

/* The attention from its kernel on (q, k, v rotated), with mask. */
static tid llama_attention(build *b, const model_shape *m, const seg_spec *s, tid q, tid k,
                           tid v, tid mask)
{
    uint64_t H = m->hidden, qw = m->heads * m->head_dim;
    /* q, k and v are the projections' .view(...).transpose(1, 2): rotary's
     * q * cos + rotate_half(q) * sin takes its memory order from q (a
     * TensorIterator follows its first operand's strides), so all three stay
     * in [B, S, heads, D] order for eager's matmul. */
    tid o = llmem_seg_attention_strided(b, m, q, k, v, mask, ATTN_Q | ATTN_K | ATTN_V);
    o = llmem_seg_linear(b, s, o, qw, H, m->out_bias, LLMEM_LORA_O);
    if (m->traits & TRAIT_RESID_DROPOUT) /* Starcoder2Attention's residual_dropout */
        o = op_dropout(b, o, DROPOUT_HIDDEN);
    llmem_graph_hold(b->g, q);
    llmem_graph_hold(b->g, k);
    llmem_graph_hold(b->g, v);
    return o;
}

/* MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock: router, fp32 softmax, top-k,
 * a one-hot expert mask (int64, tokens x k x experts) held through the loop,
 * each expert's rows gathered, run, scaled by their routing weight and
 * index_add-ed back. The loop over experts is taken in aggregate: the saved
 * tensors of all experts add up to those of one MLP over tokens x k rows. */
static tid moe_routed(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, E = m->experts, k = m->experts_per_token, T = b->tokens;
    int h_dt = b->g->t[h].dt;
    tid logits = op_linear(b, h, H, E, s->weights_trainable, m->router_bias);
    tid probs = op_softmax(b, logits, FP32);
    tid top = op_topk(b, probs, T * k, NULL);
    /* routing_weights /= routing_weights.sum(-1, keepdim=True): div_ saves the
     * sum and its result */
    tid sum = llmem_graph_op(b->g, T, FP32, &top, 1, 0, 0, 0, 0, 0);
    top = llmem_graph_op(b->g, T * k, FP32, (tid[]){ top, sum }, 2, BIT(1) | SAVE_OUT, 0, 0, 0, 0);
    tid weights = op_cast(b, top, h_dt);
    tid mask = llmem_graph_op(b->g, T * k * E, INT64, NULL, 0, 0, 0, 0, 0, 0);
    /* torch.where(expert_mask[e]) per expert: (idx, top_x), int64 [rows, 2] in
     * all, kept by the index ops that gather with it */
    tid where = llmem_graph_op(b->g, T * k * 2, INT64, &mask, 1, 0, 0, 0, 0, 0);
    tid rows = llmem_graph_op(b->g, T * k * H, h_dt, (tid[]){ h, where }, 2, BIT(1), 0, 0, 0, 0);
    uint64_t held = E / b->ep, I = m->expert_intermediate; /* the experts this rank holds */
    tid gate = llmem_seg_expert_linear(b, s, rows, H, I, held, LLMEM_LORA_GATE);
    tid act = op_silu(b, gate);
    tid up = llmem_seg_expert_linear(b, s, rows, H, I, held, LLMEM_LORA_UP);
    tid y = llmem_seg_expert_linear(b, s, op_mul(b, act, up), I, H, held, LLMEM_LORA_DOWN);
    tid row_weights = llmem_graph_op(b->g, T * k, h_dt, &weights, 1, 0, 0, 0, 0, 0);
    tid scaled = op_cast(b, op_mul(b, y, row_weights), h_dt);
    /* index_add_ into zeros; IndexAddBackward keeps the added source */
    tid out = llmem_graph_op(b->g, T * H, h_dt, &scaled, 1, BIT(0), 0, 0, 0, 0);
    llmem_graph_hold(b->g, mask);
    llmem_graph_hold(b->g, logits); /* returned as router_logits to the decoder layer */
    return out;
}

/* transformers 5.x: MixtralTopKRouter (Qwen2-MoE's alike): the logits, an
 * fp32 softmax, top-k (its indices saved), renormalised in place (div_
 * saves the sum and a clone of the values it divides); the scores stay fp32.
 * The block binds the returned logits to `_`, a local to its end. Then the
 * experts as grouped_mm runs them (llmem_seg_grouped_experts). */
static tid moe_routed_grouped(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, E = m->experts, k = m->experts_per_token, T = tensor_elems(b, h) / H;
    tid logits = op_linear(b, h, H, E, s->weights_trainable, m->router_bias);
    tid probs = op_softmax(b, logits, FP32);
    tid index;
    tid top = op_topk(b, probs, T * k, &index);
    tid sum = llmem_graph_op(b->g, T, FP32, &top, 1, 0, 0, 0, 0, 0);
    tid clone = llmem_graph_op(b->g, T * k, FP32, NULL, 0, 0, 0, 0, 0, 0);
    tid div = llmem_graph_op(b->g, T * k, FP32, (tid[]){ top, sum, clone }, 3, BIT(1) | BIT(2), 0,
                             0, 0, 0);
    llmem_graph_view(b->g, div, top);
    llmem_graph_made_to_save(b->g, clone); /* no clone where nothing requires grad */
    tid out = llmem_seg_grouped_experts(b, m, s, h, index, top);
    llmem_graph_hold(b->g, logits);
    llmem_graph_hold(b->g, index);
    llmem_graph_hold(b->g, top);
    return out;
}

/* Qwen2-MoE's shared expert output times sigmoid(shared_expert_gate(h)),
 * where the model has the gate (F.sigmoid saves its output). */
static tid gate_shared(build *b, const model_shape *m, const seg_spec *s, tid h, tid shared)
{
    if (!m->shared_gate)
        return shared;
    tid g = op_linear(b, h, m->hidden, 1, s->weights_trainable, 0);
    tid sig = llmem_graph_op(b->g, tensor_elems(b, g), b->g->t[g].dt, &g, 1, SAVE_OUT, 0, 0, 0, 0);
    return op_mul(b, sig, shared);
}

/* Qwen2MoeSparseMoeBlock of transformers 5.x: the shared expert first, then
 * the routed experts, the sigmoid gate, and the shared output added in place
 * to the routed one. */
static tid moe_mlp_grouped(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    if (m->shared_intermediate == 0)
        return llmem_seg_routed_sp(b, m, s, h, moe_routed_grouped);
    tid shared = llmem_seg_gated_mlp(b, s, h, m->hidden, m->shared_intermediate, 0);
    tid out = llmem_seg_routed_sp(b, m, s, h, moe_routed_grouped);
    tid sum = op_add(b, out, gate_shared(b, m, s, h, shared)); /* expert_output += ... */
    llmem_graph_view(b->g, sum, out);
    return sum;
}

/* The routed experts, plus the shared expert with its sigmoid gate on the
 * same (rank's) input. */
static tid moe_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    if (b->experts != LLMEM_EXPERTS_IMPL_LOOP)
        return moe_mlp_grouped(b, m, s, h);
    tid out = llmem_seg_routed_sp(b, m, s, h, moe_routed);
    if (m->shared_intermediate > 0) {
        /* the shared expert's gate_proj, up_proj and down_proj match PEFT's targets too */
        tid shared = llmem_seg_gated_mlp(b, s, h, m->hidden, m->shared_intermediate, 0);
        out = op_add(b, out, gate_shared(b, m, s, h, shared));
    }
    return out;
}

/* Phi3MLP: one gate_up_proj chunked into views; up * silu(gate). Its local
 * gate, a view, keeps the fused output alive until the MLP returns (what
 * shows where nothing saves it: a checkpointed forward, no_grad). */
static tid phi3_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid gate_up = llmem_seg_linear(b, s, h, H, 2 * I, m->mlp_bias, LLMEM_LORA_GATE | LLMEM_LORA_UP);
    tid gate = op_view_part(b, gate_up, b->tokens * I), up = op_view_part(b, gate_up, b->tokens * I);
    tid out = llmem_seg_linear(b, s, op_mul(b, up, op_silu(b, gate)), I, H, m->mlp_bias,
                               LLMEM_LORA_DOWN);
    llmem_graph_hold(b->g, gate);
    return out;
}

/* GemmaMLP: gelu_pytorch_tanh, a native gelu that saves its input. */
static tid geglu_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid act = op_gelu(b, llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_GATE));
    tid up = llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    return llmem_seg_linear(b, s, op_mul(b, act, up), I, H, m->mlp_bias, LLMEM_LORA_DOWN);
}

/* Starcoder2MLP: c_fc, the activation, c_proj, residual_dropout. */
static tid plain_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, I = m->intermediate;
    tid x = llmem_seg_linear(b, s, h, H, I, m->mlp_bias, LLMEM_LORA_UP);
    x = llmem_seg_linear(b, s, llmem_seg_activation(b, m, x), I, H, m->mlp_bias, LLMEM_LORA_DOWN);
    return (m->traits & TRAIT_RESID_DROPOUT) ? op_dropout(b, x, DROPOUT_HIDDEN) : x;
}

static tid llama_mlp(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    if (m->mlp == LLMEM_MLP_PLAIN)
        return plain_mlp(b, m, s, h);
    if (s->moe)
        return moe_mlp(b, m, s, h);
    if (m->traits & TRAIT_FUSED_GATE_UP)
        return phi3_mlp(b, m, s, h);
    if (m->traits & TRAIT_GELU_GATE)
        return geglu_mlp(b, m, s, h);
    return llmem_seg_gated_mlp(b, s, h, m->hidden, m->intermediate, m->mlp_bias);
}

/* The layer from its attention kernel on (carry: CARRY_*): the kernel
 * with the window's mask or, on a full-attention layer, none (the causal
 * kernel), then LlamaDecoderLayer's rest (and Gemma2DecoderLayer's
 * post-attention and post-feedforward norms, Phi3DecoderLayer's
 * dropouts): residual, norm, MLP, residual. */
static tid llama_tail(build *b, const model_shape *m, const seg_spec *s, const tid *carry)
{
    int sandwich = (m->traits & TRAIT_SANDWICH_NORMS) != 0;
    tid x = carry[CARRY_X], h = carry[CARRY_H];
    tid mask = s->full_attention ? -1 : carry[CARRY_WINDOW];
    llmem_region(b, "attention");
    tid a = llama_attention(b, m, s, carry[CARRY_Q], carry[CARRY_K], carry[CARRY_V], mask);
    llmem_graph_hold(b->g, h);
    /* Phi-3: residual + resid_attn_dropout(hidden_states), the attention's
     * output referenced through the sum (and the MLP's below) */
    int layer_dropout = (m->traits & TRAIT_LAYER_DROPOUT) != 0;
    tid attn_out = a;
    if (layer_dropout)
        a = op_dropout(b, a, DROPOUT_HIDDEN);
    llmem_region(b, "norm");
    if (sandwich) /* post_attention_layernorm */
        a = llmem_seg_norm(b, m, s, a);
    tid mid = op_add(b, x, a);
    if (layer_dropout)
        llmem_graph_hold(b->g, attn_out);
    h = llmem_seg_norm(b, m, s, mid);
    llmem_region(b, "mlp");
    tid mlp_out = llama_mlp(b, m, s, h);
    llmem_region(b, "norm");
    if (sandwich) /* post_feedforward_layernorm */
        mlp_out = llmem_seg_norm(b, m, s, mlp_out);
    llmem_graph_hold(b->g, h);
    if (!layer_dropout)
        return op_add(b, mid, mlp_out);
    tid out = op_add(b, mid, op_dropout(b, mlp_out, DROPOUT_HIDDEN)); /* resid_mlp_dropout */
    llmem_graph_hold(b->g, mlp_out);
    return out;
}

/* LlamaDecoderLayer: norm, attention, residual, norm, MLP, residual. Where
 * alternate layers take the sliding window's mask (Gemma-2 under SDPA from
 * the window on) the tape is marked after rotary: the other kind's tape is
 * this one's up to there (walksegs.c). */
static tid llama_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                       const shared_tensors *sh)
{
    tid carry[CARRY_COUNT];
    llmem_region(b, "norm");
    carry[CARRY_X] = x;
    carry[CARRY_H] = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    llama_qkv(b, m, s, carry[CARRY_H], sh, carry);
    carry[CARRY_WINDOW] = sh->window;
    if (llmem_model_window_alternates(m, b->attention, b->seq))
        llmem_graph_mark(b->g, carry, CARRY_COUNT);
    return llama_tail(b, m, s, carry);
}

/* Gated MLPs run one activation kernel (SiLU or GELU) that saves its input;
 * a plain MLP (StarCoder2) takes any activation. */
static int llama_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(m, ACCEPT_ACTIVATION, why);
    if (key != 0)
        return key;
    if (m->mlp == LLMEM_MLP_GATED && m->activation != LLMEM_ACTIVATION_SILU &&
        m->activation != LLMEM_ACTIVATION_GELU && m->activation != LLMEM_ACTIVATION_GELU_TANH) {
        *why = "activation (a gated MLP runs silu, gelu or gelu-tanh)";
        return LLMEM_MODEL_ACTIVATION;
    }
    return 0;
}

const layer_path llmem_path_llama = { llama_block, llama_unsupported, llama_tail,
                                       offsetof(seg_spec, full_attention) };
