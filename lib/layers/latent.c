/* SPDX-License-Identifier: MIT */
/* The DeepSeek code path (modeling_deepseek_v2.py and modeling_deepseek_v3.py
 * in transformers v4.54): multi-head latent attention (the query projection
 * or its compression q_a_proj, q_a_layernorm, q_b_proj; kv_a_proj_with_mqa
 * split into the latent kv and one rotary key head, kv_a_layernorm, kv_b_proj
 * split into the keys' non-rotary part and the values; the rotary parts
 * catted on), the dense first layers, and the routed and shared experts.
 * DeepSeek-V3's code (router-bias 1: DeepseekV3TopkRouter with its
 * e_score_correction_bias buffer, sigmoid scores, group-limited top-k under
 * no_grad, gathered and renormalized weights; interleaved rotary) and
 * DeepSeek-V2's (DeepseekV2MoEGate: fp32 softmax scores, greedy top-k; the
 * experts run over tokens sorted by expert; complex rotary) differ. */
#include "layers/common.h"

static int v3(const model_shape *m)
{
    return m->router_bias;
}

/* The rotary part of q or k (a view of width rope per head): V3 reshapes the
 * interleaved pairs (a copy) then runs apply_rotary_pos_emb; V2 multiplies
 * view_as_complex(x.float()) by the complex freqs_cis (the fp32 copy only
 * for a low-precision x; a complex64 product of the same bytes as fp32, then
 * type_as(x)). */
static tid latent_rotary(build *b, tid x, const shared_tensors *sh, const model_shape *m)
{
    if (v3(m))
        return llmem_seg_rotary(b, op_copy(b, x), sh->cos, sh->sin);
    tid xf = op_cast(b, x, FP32);
    tid in[2] = { xf, sh->cos }; /* freqs_cis, saved for x's gradient, needs none */
    tid prod = llmem_graph_op(b->g, tensor_elems(b, xf), FP32, in, 2, SAVE_CROSS, 0, 0, 0, 0);
    return op_cast(b, prod, op_dt(b, x));
}

/* k_rot.expand(*k_pass.shape[:-1], -1): no storage; its gradient is summed
 * back over the heads into a tensor of its own size. */
static tid expand_heads(build *b, tid x, uint64_t heads)
{
    tid v = llmem_graph_op(b->g, tensor_elems(b, x) * heads, op_dt(b, x), &x, 1, 0, 0, 0, 0, 0);
    llmem_graph_view(b->g, v, x);
    return v;
}

/* DeepseekV2Attention / DeepseekV3Attention.forward. Its locals (the query
 * projection, compressed_kv, the kv_b_proj output and its views, the rotary
 * parts, query_states and key_states) live until it returns. */
static tid latent_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                            const shared_tensors *sh)
{
    uint64_t H = m->hidden, T = b->tokens, nh = m->heads, qk = m->head_dim;
    uint64_t rope = m->rotary_dim, nope = qk - rope, vd = m->v_head_dim, kvr = m->kv_lora_rank;
    unsigned kv_target = LLMEM_LORA_K | LLMEM_LORA_V;
    tid qs;
    if (m->q_lora_rank > 0) {
        uint64_t qr = m->q_lora_rank;
        tid qa = llmem_seg_linear(b, s, h, H, qr, m->qkv_bias, LLMEM_LORA_Q_A);
        qs = llmem_seg_linear(b, s, llmem_seg_rms_norm(b, s, qa, qr), qr, nh * qk, 0,
                              LLMEM_LORA_Q);
    } else {
        qs = llmem_seg_linear(b, s, h, H, nh * qk, 0, LLMEM_LORA_Q);
    }
    tid q_pass = op_view_part(b, qs, T * nh * nope), q_rot = op_view_part(b, qs, T * nh * rope);
    tid ckv = llmem_seg_linear(b, s, h, H, kvr + rope, m->qkv_bias, LLMEM_LORA_KV_A);
    tid k_latent = op_view_part(b, ckv, T * kvr), k_rot = op_view_part(b, ckv, T * rope);
    tid kvb = llmem_seg_linear(b, s, llmem_seg_rms_norm(b, s, k_latent, kvr), kvr,
                               nh * (nope + vd), 0, kv_target);
    tid k_pass = op_view_part(b, kvb, T * nh * nope), v = op_view_part(b, kvb, T * nh * vd);
    tid q_r = latent_rotary(b, q_rot, sh, m), k_r = latent_rotary(b, k_rot, sh, m);
    tid query = llmem_seg_cat(b, q_pass, q_r);
    tid key = llmem_seg_cat(b, k_pass, expand_heads(b, k_r, nh));
    tid o = llmem_seg_attention(b, m, query, key, v, sh->mask);
    o = llmem_seg_linear(b, s, o, nh * vd, H, m->out_bias, LLMEM_LORA_O);
    tid held[] = { qs, ckv, kvb, q_r, k_r, query, key };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        llmem_graph_hold(b->g, held[i]);
    return o;
}

/* The router's logits: F.linear(hidden.type(float32), weight.type(float32)).
 * Under autocast the linear still runs in the low dtype (both arguments cast,
 * the weight's cast cached); in bf16 both .type() calls copy. */
static tid router_logits(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, E = m->experts;
    tid w = op_param(b, E * H, s->weights_trainable);
    tid x32 = op_cast(b, h, FP32), w32 = op_cast(b, w, FP32);
    tid xc = b->autocast ? op_cast(b, x32, b->compute) : x32;
    tid wc = b->autocast ? op_cast_param(b, w32) : w32;
    return llmem_graph_op(b->g, b->tokens * E, op_dt(b, xc), (tid[]){ xc, wc }, 2, SAVE_CROSS, 0,
                          0, 0, 0);
}

/* The routed experts over the T x k rows, in aggregate: their gate, up and
 * down projections against the experts this rank holds (gate_proj, up_proj,
 * down_proj: PEFT adapts every expert's when the name is targeted). */
static tid experts(build *b, const model_shape *m, const seg_spec *s, tid rows)
{
    uint64_t H = m->hidden, I = m->expert_intermediate, held = m->experts / b->ep;
    tid gate = llmem_seg_expert_linear(b, s, rows, H, I, held, LLMEM_LORA_GATE);
    tid act = op_silu(b, gate);
    tid up = llmem_seg_expert_linear(b, s, rows, H, I, held, LLMEM_LORA_UP);
    return llmem_seg_expert_linear(b, s, op_mul(b, act, up), I, H, held, LLMEM_LORA_DOWN);
}

/* DeepseekV3MoE: the router (sigmoid scores saved; top-k indices chosen
 * under no_grad; the weights gathered, divided in place by their sum + 1e-20,
 * which saves the sum and a clone of the weights, and scaled), then per
 * expert torch.where on the one-hot mask (int64 indices kept by the index
 * ops), the gathered weights and rows, the expert, the weighted output
 * (kept by index_add_) into zeros in the weights' dtype, cast back to the
 * input's dtype. */
static tid v3_route(build *b, const model_shape *m, const seg_spec *s, tid h, tid *index)
{
    uint64_t E = m->experts, K = m->experts_per_token, T = b->tokens;
    tid logits = router_logits(b, m, s, h);
    tid scores = op_unary(b, logits, T * E, op_dt(b, logits), SAVE_OUT, 0); /* sigmoid */
    int wdt = op_dt(b, scores);
    *index = llmem_graph_op(b->g, T * K, INT64, NULL, 0, 0, 0, 0, 0, 0);
    tid weights = llmem_graph_op(b->g, T * K, wdt, (tid[]){ scores, *index }, 2, BIT(0) | BIT(1),
                                 0, 0, 0, 0); /* gather saves self and index */
    tid sum = op_add_scalar(b, llmem_graph_op(b->g, T, wdt, &weights, 1, 0, 0, 0, 0, 0));
    weights = llmem_graph_op(b->g, T * K, wdt, (tid[]){ weights, sum }, 2, BIT(0) | BIT(1), 0, 0,
                             0, 0); /* topk_weights /= denominator */
    return op_scale(b, weights); /* * routed_scaling_factor */
}

static tid moe_v3(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, E = m->experts, K = m->experts_per_token, T = b->tokens;
    tid index, weights = v3_route(b, m, s, h, &index);
    int wdt = op_dt(b, weights);
    tid final = llmem_graph_op(b->g, T * H, wdt, NULL, 0, 0, 0, 0, 0, 0); /* zeros_like */
    tid mask = llmem_graph_op(b->g, T * K * E, INT64, &index, 1, 0, 0, 0, 0, 0); /* one_hot */
    tid where = llmem_graph_op(b->g, T * K * 2, INT64, &mask, 1, 0, 0, 0, 0, 0);
    tid row_weights = llmem_graph_op(b->g, T * K, wdt, (tid[]){ weights, where }, 2, BIT(1), 0, 0,
                                     0, 0);
    tid rows = llmem_graph_op(b->g, T * K * H, op_dt(b, h), (tid[]){ h, where }, 2, BIT(1), 0, 0,
                              0, 0);
    tid y = experts(b, m, s, rows);
    tid weighted = op_mul(b, y, row_weights);
    /* final.index_add_(0, token_indices, weighted), in place: IndexAddBackward
     * keeps the index and the source */
    tid out = llmem_graph_op(b->g, T * H, wdt, (tid[]){ final, weighted, where }, 3,
                             BIT(1) | BIT(2), 0, 0, 0, 0);
    llmem_graph_view(b->g, out, final);
    llmem_graph_hold(b->g, mask);
    return op_cast(b, out, op_dt(b, h)); /* .type(hidden_states.dtype) */
}

/* DeepseekV2MoE: the gate (fp32 softmax scores saved; greedy top-k, which
 * keeps its indices; scaled), then the tokens sorted by expert
 * (hidden_states[argsort // k], int64 indices kept), each expert over its
 * slice, the outputs held in a list and catted, put back in token order
 * (index_put_, indices kept), cast to the weights' dtype, multiplied in
 * place by the weights (mul_ saves them and a clone of its input), summed
 * over k and cast back. The forward's locals stay to the end: the top-k
 * indices and weights (topk_indices, topk_weights), tokens_per_expert (int64 [E]) and the loop's
 * start_idx (an int64 0-dim tensor once a first expert ran). */
static tid v2_route(build *b, const model_shape *m, const seg_spec *s, tid h, tid *index)
{
    uint64_t K = m->experts_per_token, T = b->tokens;
    tid logits = router_logits(b, m, s, h);
    tid scores = op_softmax(b, logits, FP32);
    tid top = op_topk(b, scores, T * K, index);
    return op_scale(b, top); /* * routed_scaling_factor */
}

static tid moe_v2(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    uint64_t H = m->hidden, E = m->experts, K = m->experts_per_token, T = b->tokens;
    int hdt = op_dt(b, h);
    tid index, weights = v2_route(b, m, s, h, &index);
    tid counts = llmem_graph_op(b->g, T * E, INT64, &index, 1, 0, 0, 0, 0, 0); /* cnts */
    tid per_expert = llmem_graph_op(b->g, E, INT64, &counts, 1, 0, 0, 0, 0, 0); /* .sum(0) */
    tid order = llmem_graph_op(b->g, T * K, INT64, &index, 1, 0, 0, 0, 0, 0);  /* argsort */
    tid token = llmem_graph_op(b->g, T * K, INT64, &order, 1, 0, 0, 0, 0, 0);  /* // k */
    tid sorted = llmem_graph_op(b->g, T * K * H, hdt, (tid[]){ h, token }, 2, BIT(1), 0, 0, 0, 0);
    tid start = llmem_graph_op(b->g, 1, INT64, &per_expert, 1, 0, 0, 0, 0, 0); /* start_idx */
    tid y = experts(b, m, s, sorted);
    tid outs = op_copy(b, y); /* torch.cat(outputs) */
    tid put = llmem_graph_op(b->g, T * K * H, op_dt(b, outs), (tid[]){ outs, order }, 2, BIT(1),
                             0, 0, 0, 0); /* new_x[indicies] = outs */
    tid wide = op_cast(b, put, op_dt(b, weights));
    /* mul_, in place: saves the weights and a clone of its input
     * (gen_variable_type's original_self); the weights' gradient is computed
     * at the product's size, then summed */
    uint64_t wide_bytes = b->g->t[wide].bytes;
    tid clone = llmem_graph_op(b->g, T * K * H, op_dt(b, wide), NULL, 0, 0, 0, 0, 0, 0);
    tid prod = llmem_graph_op(b->g, T * K * H, op_dt(b, wide), (tid[]){ wide, weights, clone }, 3,
                              BIT(1) | BIT(2), 0, 0, 0, wide_bytes);
    llmem_graph_view(b->g, prod, wide);
    llmem_graph_made_to_save(b->g, clone); /* no clone under no_grad */
    tid sum = llmem_graph_op(b->g, T * H, op_dt(b, prod), &prod, 1, 0, 0, 0, 0, 0);
    tid out = op_cast(b, sum, op_dt(b, put)); /* .type(new_x.dtype) */
    tid held[] = { index, weights, counts, per_expert, start, order, sorted, y, outs, put };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        llmem_graph_hold(b->g, held[i]);
    return out;
}

/* transformers 5.x: the router as above, then the experts as grouped_mm runs
 * them on the top-k index and fp32 weights (DeepseekV3NaiveMoe; V2's taken
 * alike), the router's locals held to the experts' end. */
static tid moe_grouped(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    tid index, weights = v3(m) ? v3_route(b, m, s, h, &index) : v2_route(b, m, s, h, &index);
    tid out = llmem_seg_grouped_experts(b, m, s, h, index, weights);
    llmem_graph_hold(b->g, index);
    llmem_graph_hold(b->g, weights);
    return out;
}

/* DeepseekV2MoE / DeepseekV3MoE.forward: the routed experts plus the shared
 * experts (gate_proj, up_proj, down_proj too) on the same input. */
static tid latent_moe(build *b, const model_shape *m, const seg_spec *s, tid h)
{
    tid (*routed_fn)(build *, const model_shape *, const seg_spec *, tid) =
        b->experts != LLMEM_EXPERTS_IMPL_LOOP ? moe_grouped : v3(m) ? moe_v3 : moe_v2;
    tid routed = llmem_seg_routed_sp(b, m, s, h, routed_fn);
    tid shared = llmem_seg_gated_mlp(b, s, h, m->hidden, m->shared_intermediate, 0);
    return op_add(b, routed, shared);
}

/* The layer from its MLP on (carry: the residual mid, the normed h): the
 * dense MLP, or past the dense layers the experts, and the residual. */
static tid latent_tail(build *b, const model_shape *m, const seg_spec *s, const tid *carry)
{
    tid mid = carry[0], h = carry[1];
    llmem_region(b, "mlp");
    tid f = s->moe ? latent_moe(b, m, s, h)
                   : llmem_seg_gated_mlp(b, s, h, m->hidden, m->intermediate, m->mlp_bias);
    llmem_graph_hold(b->g, h);
    return op_add(b, mid, f);
}

/* DeepseekV2DecoderLayer / DeepseekV3DecoderLayer: Llama's layer with latent
 * attention and, past the dense layers, the experts. Where the model has
 * both kinds of layer the tape is marked before the MLP: the other kind's
 * tape is this one's up to there (walksegs.c). */
static tid latent_block(build *b, const model_shape *m, const seg_spec *s, tid x,
                        const shared_tensors *sh)
{
    llmem_region(b, "norm");
    tid h = llmem_seg_norm(b, m, s, x);
    llmem_region(b, "attention");
    tid a = latent_attention(b, m, s, h, sh);
    llmem_graph_hold(b->g, h);
    llmem_region(b, "norm");
    tid mid = op_add(b, x, a);
    tid carry[2] = { mid, llmem_seg_norm(b, m, s, mid) };
    if (m->experts > 0 && m->dense_layers > 0)
        llmem_graph_mark(b->g, carry, 2);
    return latent_tail(b, m, s, carry);
}

/* Latent attention needs its kv compression, and kv_b_proj gives every head
 * its own key and value (the published configs set num_key_value_heads to the
 * heads; other kv heads would make transformers' repeat_kv multiply them); the
 * shared experts are part of every MoE layer in both versions' code. */
static int latent_unsupported(const model_shape *m, const char **why)
{
    int key = llmem_layers_fixed(m, ACCEPT_LATENT | ACCEPT_PARTIAL_ROTARY, why);
    if (key != 0)
        return key;
    if (m->kv_lora_rank == 0) {
        *why = "kv-lora-rank (DeepSeek's attention is latent: it must be set)";
        return LLMEM_MODEL_KV_LORA_RANK;
    }
    if (m->kv_heads != m->heads) {
        *why = "kv-heads (DeepSeek's latent attention has a key and value per head)";
        return LLMEM_MODEL_KV_HEADS;
    }
    if (m->experts > 0 && m->shared_intermediate == 0) {
        *why = "shared-expert-intermediate (DeepSeek's MoE layers have shared experts)";
        return LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE;
    }
    if (m->shared_gate) {
        *why = "shared-expert-gate (DeepSeek's shared experts have no gate)";
        return LLMEM_MODEL_SHARED_EXPERT_GATE;
    }
    return 0;
}

const layer_path llmem_path_latent = { latent_block, latent_unsupported, latent_tail,
                                        offsetof(seg_spec, moe) };
