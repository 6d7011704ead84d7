/* SPDX-License-Identifier: MIT */
/*
 * The pieces every code path shares: linear layers with LoRA and NF4, norms,
 * rotary embeddings, eager, SDPA or FlashAttention-2 attention. Each follows
 * the forward of Hugging Face transformers (v4.48 eager; 5.x SDPA) op by op, because what autograd saves
 * depends on each op and its dtype. Python locals that outlive their last use
 * (query_states in LlamaAttention.forward, say) are held with
 * llmem_graph_hold until the function that owns them returns.
 */
#include "layers/common.h"

/* A frozen QLoRA linear: bitsandbytes dequantizes the NF4 weight to the
 * compute dtype for the matmul (forward and again in backward), so the
 * transient is one dense weight; nothing weight-sized is saved. */
static tid nf4_linear(build *b, tid x, uint64_t in_f, uint64_t out_f)
{
    tid xc = op_cast(b, x, b->compute);
    uint64_t dense = in_f * out_f * (uint64_t)b->compute;
    uint64_t rows = tensor_elems(b, x) / in_f;
    /* MatMul4Bit saves its input only for a weight gradient, which a frozen base has none of. */
    return llmem_graph_op(b->g, rows * out_f, b->compute, &xc, 1, 0, 0, 0, dense, dense);
}

/* Megatron-LM's linears under sequence parallelism (tensor_parallel/layers.py,
 * linear_with_grad_accumulation_and_async_allreduce; Korthikanti et al. 2022,
 * section 4.2.2): a column-parallel linear all-gathers its sequence-split
 * input for the matmul and saves only its own split, gathering it again in
 * backward, whose input gradient is reduce-scattered back; a row-parallel
 * linear reduce-scatters its output to the sequence split. */
tid llmem_seg_linear_sp(build *b, tid x, uint64_t in_f, uint64_t out_f, int trainable, int bias,
                        int column)
{
    tid w = op_param(b, in_f * out_f, trainable);
    tid bp = bias ? op_param(b, out_f, trainable) : -1;
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid wc = op_cast_param(b, w);
    tid bc = bias ? op_cast_param(b, bp) : -1;
    tid in[3] = { xc, wc, bc };
    int dt = b->g->t[xc].dt;
    uint64_t rows = tensor_elems(b, xc) / in_f;
    uint64_t out_rows = column ? rows * b->sp : rows / b->sp;
    uint64_t gathered = column ? rows * b->sp * in_f * (uint64_t)dt : rows * out_f * (uint64_t)dt;
    /* column: the gathered input in forward, it and the input's unreduced
     * gradient in backward; row: the unreduced output, the gathered gradient. */
    return llmem_graph_op(b->g, out_rows * out_f, dt, in, bias ? 3 : 2, SAVE_CROSS, 0, 0,
                          gathered, column ? 2 * gathered : gathered);
}

/* PEFT's LoRA Linear: base(x) + lora_B(lora_A(dropout(x))) * scaling, with x
 * cast to the adapters' dtype first, and the sum cast back to the base's
 * result dtype. With lora_dropout > 0 the module's own nn.Dropout runs on the
 * cast input (native_dropout: its output, and a bool mask saved), and lora_A
 * saves that output instead of the input the base layer shares. */
tid llmem_seg_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f, int bias,
               unsigned target)
{
    /* The compressions too: their input is the gathered sequence as well. */
    unsigned column = LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V | LLMEM_LORA_GATE | LLMEM_LORA_UP |
                      LLMEM_LORA_Q_A | LLMEM_LORA_KV_A;
    if (b->sp > 1) /* the layout refuses adapters and NF4 with sequence parallelism */
        return llmem_seg_linear_sp(b, x, in_f, out_f, s->weights_trainable, bias,
                                   (target & column) != 0);
    tid base = s->nf4 ? nf4_linear(b, x, in_f, out_f)
                      : op_linear(b, x, in_f, out_f, s->weights_trainable, bias);
    return llmem_seg_lora(b, s, x, base, in_f, out_f, target);
}

tid llmem_seg_lora(build *b, const seg_spec *s, tid x, tid base, uint64_t in_f, uint64_t out_f,
                   unsigned target)
{
    if (!(s->lora_targets & target))
        return base;
    int result_dt = b->g->t[base].dt, saved_param_dt = b->param_dt;
    b->param_dt = LORA_DT;
    tid cast = op_cast(b, x, LORA_DT);
    tid a = op_linear(b, op_dropout_p(b, cast, b->lora_dropout), in_f, s->lora_rank, 1, 0);
    tid up = op_linear(b, a, s->lora_rank, out_f, 1, 0);
    b->param_dt = saved_param_dt;
    tid sum = op_add(b, base, op_scale(b, up));
    tid out = op_cast(b, sum, result_dt);
    llmem_graph_hold(b->g, cast); /* x = self._cast_input_dtype(x, ...): rebound to the end */
    llmem_graph_hold(b->g, x); /* the argument of LoraLayer.forward lives until it returns */
    llmem_graph_hold(b->g, base);
    return out;
}

/* LlamaRMSNorm: upcast, pow(2).mean, * rsqrt(var + eps), cast back, * weight.
 * Its locals live until the function returns: variance, and hidden_states,
 * rebound to the normalized fp32 tensor, through the cast and the product. */
tid llmem_seg_rms_norm(build *b, const seg_spec *s, tid x, uint64_t dim)
{
    int in_dt = b->g->t[x].dt;
    tid xf = op_cast(b, x, FP32);
    tid var = op_mean_last(b, op_pow(b, xf), dim);
    tid inv = op_rsqrt(b, op_add_scalar(b, var));
    tid hidden = op_mul(b, xf, inv);
    tid w = op_param(b, dim, s->norms_trainable);
    tid out = op_mul(b, w, op_cast(b, hidden, in_dt));
    llmem_graph_hold(b->g, var);
    llmem_graph_hold(b->g, hidden);
    return out;
}

/* GemmaRMSNorm / Gemma2RMSNorm: x.float(), x * rsqrt(mean(x^2) + eps), times
 * (1 + weight.float()), cast back with type_as(x): x, the argument, lives to
 * the end (LlamaRMSNorm rebinds its own to the upcast). */
static tid gemma_rms_norm(build *b, const seg_spec *s, tid x, uint64_t dim)
{
    int in_dt = b->g->t[x].dt;
    tid xf = op_cast(b, x, FP32);
    tid var = op_mean_last(b, op_pow(b, xf), dim);
    tid normed = op_mul(b, xf, op_rsqrt(b, op_add_scalar(b, var)));
    tid w = op_add_scalar(b, op_cast(b, op_param(b, dim, s->norms_trainable), FP32));
    tid out = op_cast(b, op_mul(b, normed, w), in_dt);
    llmem_graph_hold(b->g, x);
    return out;
}

tid llmem_seg_nf4_linear(build *b, tid x, uint64_t in_f, uint64_t out_f)
{
    return nf4_linear(b, x, in_f, out_f);
}

tid llmem_seg_norm(build *b, const model_shape *m, const seg_spec *s, tid x)
{
    if (m->traits & TRAIT_OFFSET_NORM)
        return gemma_rms_norm(b, s, x, m->hidden);
    if (m->norm == LLMEM_NORM_RMSNORM)
        return llmem_seg_rms_norm(b, s, x, m->hidden);
    return op_layer_norm(b, x, m->hidden, s->norms_trainable, m->norm_bias);
}

/* apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, evaluated left to
 * right (x * cos lives while rotate_half and its product are made). */
tid llmem_seg_rotary(build *b, tid x, tid cos, tid sin)
{
    if (cos < 0)
        return x; /* no rotary tables: phased_unsupported refuses such models */
    tid with_cos = op_mul(b, x, cos);
    tid rotated = op_cat_halves(b, op_neg(b, x), x);
    return op_add(b, with_cos, op_mul(b, rotated, sin));
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
    return llmem_graph_op(b->g, tensor_elems(b, x) * n_rep, dt, &x, 1, 0, 0, 0, 0, 0);
}

/* repeat_kv: a copy of x at every query head (eager attention, and SDPA given
 * a mask), materialize_repeat's view for a single kv head. */
static tid repeat_kv(build *b, const model_shape *m, tid x)
{
    uint64_t n_rep = m->heads / m->kv_heads;
    if (m->kv_heads == 1 && n_rep > 1)
        return materialize_repeat(b, x, n_rep);
    return op_expand_copy(b, x, n_rep);
}

/* torch.matmul folds a 4-D operand to 3-D for bmm. A head view of a fused
 * projection ([B, S, heads, D] transposed) folds without a copy only when
 * batch is 1; otherwise bmm gets, and saves, a contiguous copy, and the
 * fused projection's storage is no longer kept for it. */
tid llmem_seg_matmul_operand(build *b, tid x)
{
    if (b->g->t[x].role != ROLE_VIEW || b->batch == 1)
        return x;
    return op_copy(b, x);
}

/*
 * torch.matmul of two 4-D activations in eager attention (aten's matmul,
 * _matmul_impl: both operands expand(...).reshape(batch * heads, ...) for
 * bmm). Autocast casts each operand first (to(dtype) keeps its strides); an
 * operand in a projection's [B, S, heads, D] memory order (x_strided, or a
 * recorded view) then cannot fold batch and heads when batch > 1, so reshape
 * clones it and bmm saves the clone. The casts are matmul's arguments: they
 * live until it returns.
 */
static tid eager_matmul(build *b, tid x, int x_strided, tid y, int y_strided, uint64_t out_elems)
{
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid yc = b->autocast ? op_cast(b, y, b->compute) : y;
    int fold = b->batch > 1;
    tid xf = fold && (x_strided || b->g->t[x].role == ROLE_VIEW) ? op_copy(b, xc) : xc;
    tid yf = fold && (y_strided || b->g->t[y].role == ROLE_VIEW) ? op_copy(b, yc) : yc;
    tid in[2] = { xf, yf };
    tid out = llmem_graph_op(b->g, out_elems, op_dt(b, xf), in, 2, SAVE_CROSS, 0, 0, 0, 0);
    llmem_graph_hold(b->g, xc);
    llmem_graph_hold(b->g, yc);
    return out;
}

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

/*
 * The fused 16-bit kernels' backward workspace, as cuDNN's SDPA backward holds
 * it (cudnn-frontend's SDPA backward node: softmax_sum fp32 [B, H, S, 1],
 * dQ_accum fp32 [B, H, S, D], and with grouped kv heads dK and dV at the query
 * heads' count in the inputs' dtype until they are summed over each group).
 * FlashAttention-2's mha_bwd (flash_api.cpp) holds the same terms (softmax_d,
 * dq_accum, dk/dv_expanded) with S rounded up to 128 and D to 32; the rounding
 * is left out, which keeps every size a polynomial in batch and seq (what the
 * compiled segments need) and is exact when seq is a multiple of 128.
 */
static uint64_t fused_bwd_workspace(const build *b, const model_shape *m, int dt)
{
    uint64_t rows = b->batch * m->heads * b->seq;
    uint64_t bytes = rows * FP32 + rows * m->head_dim * FP32;
    if (m->kv_heads != m->heads)
        bytes += 2 * rows * m->head_dim * (uint64_t)dt;
    return bytes;
}

/* FlashAttention-2 and SDPA's 16-bit fused kernels: the log-sum-exp is fp32
 * [B, H, S] (flash's softmax_lse, cuDNN's stats [B, H, S, 1]); kv heads stay
 * grouped. */
static tid fused_kernel(build *b, const model_shape *m, tid q, tid k, tid v)
{
    uint64_t rows = b->batch * m->heads * b->seq;
    return op_fused_attention(b, q, k, v, rows * m->head_dim, rows * FP32,
                              fused_bwd_workspace(b, m, op_dt(b, q)));
}

/*
 * SDPA's memory-efficient backend (_efficient_attention_forward/_backward in
 * attention.cu / attention_backward.cu, xformers' CUTLASS kernels): the
 * log-sum-exp is fp32 [B, H, round32(S)] (kAlignLSE: lse_seq; the compiled
 * segments leave the rounding out, as above); the backward holds delta fp32
 * [B, H, S] and a workspace whose fp32 gradient-of-q accumulator is
 * [B, H, S, round64(D)] (kernel_backward.h, workspace_elements_gq, for the
 * split-key kernels).
 */
static tid efficient_kernel_lse(build *b, const model_shape *m, tid q, tid k, tid v,
                                uint64_t lse_seq)
{
    uint64_t rows = b->batch * m->heads * b->seq;
    uint64_t bwd = rows * FP32 + rows * round_up(m->head_dim, 64) * FP32;
    return op_fused_attention(b, q, k, v, rows * m->v_head_dim,
                              b->batch * m->heads * lse_seq * FP32, bwd);
}

static tid efficient_kernel(build *b, const model_shape *m, tid q, tid k, tid v)
{
    return efficient_kernel_lse(b, m, q, k, v, b->seq);
}

/* A matmul of two 4-D activations outside autocast (inside SDPA's math
 * function autocast is excluded): bmm saves each operand for the other's
 * gradient. */
static tid plain_bmm(build *b, tid x, tid y, uint64_t out_elems)
{
    tid in[2] = { x, y };
    return llmem_graph_op(b->g, out_elems, op_dt(b, x), in, 2, SAVE_CROSS, 0, 0, 0, 0);
}

/*
 * SDPA's math fallback (at::_scaled_dot_product_attention_math, PyTorch 2.11):
 * 16-bit inputs upcast to fp32; q * sqrt(scale) (the function's local until it
 * returns; matmul folds it with a copy when batch > 1, its memory order being
 * the projection's [B, S, H, D], as it does k^T and v without grouped kv
 * heads); the causal mask ones(S, S).tril() turned into
 * an fp32 additive mask, a local too; grouped kv heads repeat_interleave-d (the
 * keys a local); k^T * sqrt(scale); the scores, the mask added in place;
 * _safe_softmax (softmax, then where(all(x == -inf), 0, out): the softmax
 * output, the bool test and the row flags live until the where returns, whose
 * result is saved); dropout; the product with v; cast back.
 */
static tid sdpa_math(build *b, const model_shape *m, tid q, tid k, tid v, int dropout,
                     int enable_gqa)
{
    uint64_t n_rep = m->heads / m->kv_heads, ss = b->seq * b->seq;
    uint64_t scores = b->batch * m->heads * ss, rows = b->batch * m->heads * b->seq;
    int in_dt = op_dt(b, q);
    /* query_acc, key_acc, value_acc: the function's locals until it returns */
    tid qa = op_cast(b, q, FP32), ka = op_cast(b, k, FP32), va = op_cast(b, v, FP32);
    tid qs = op_scale(b, qa);
    tid qf = b->batch > 1 ? op_copy(b, qs) : qs;
    tid ones = llmem_graph_op(b->g, ss, 1, NULL, 0, 0, 0, 0, 0, 0);
    tid tril = llmem_graph_op(b->g, ss, 1, &ones, 1, 0, 0, 0, 0, 0);
    tid mask = llmem_graph_op(b->g, ss, FP32, &tril, 1, 0, 0, 0, 0, 0);
    tid ke = ka, ve = va, kf, vf; /* key_acc, value_acc: rebound by repeat_interleave */
    if (n_rep > 1 && !enable_gqa) {
        /* Without enable_gqa (Falcon's own call) no repeat_interleave: matmul
         * broadcasts the kv heads, its expand + reshape a stride-0 view at
         * batch 1 and a copy at the query heads' count (the one bmm saves)
         * otherwise; the scaled keys stay at the kv heads' count, a
         * temporary of the matmul's argument. */
        tid ks = op_scale(b, ke);
        kf = b->batch > 1 ? op_expand_copy(b, ks, n_rep) : ks;
        vf = b->batch > 1 ? op_expand_copy(b, ve, n_rep) : ve;
    } else {
        ke = op_expand_copy(b, ke, n_rep);
        ve = op_expand_copy(b, ve, n_rep);
        tid kts = op_scale(b, ke);
        /* Without repeat_interleave's contiguous copies, k and v keep the
         * projection's memory order too. */
        int fold = b->batch > 1 && n_rep == 1;
        kf = fold ? op_copy(b, kts) : kts;
        vf = fold ? op_copy(b, ve) : ve;
    }
    tid w = plain_bmm(b, qf, kf, scores);
    tid p = llmem_graph_op(b->g, scores, FP32, &w, 1, SAVE_OUT, 0, 0,
                           scores * FP32 + scores + rows, 0);
    if (dropout)
        p = op_dropout(b, p, DROPOUT_ATTENTION);
    tid o = plain_bmm(b, p, vf, b->tokens * m->heads * m->v_head_dim);
    o = op_cast(b, o, in_dt); /* .to(origin_dtype), before the locals go */
    llmem_graph_hold(b->g, qa);
    llmem_graph_hold(b->g, ka);
    llmem_graph_hold(b->g, va);
    llmem_graph_hold(b->g, qs);
    llmem_graph_hold(b->g, ke);
    llmem_graph_hold(b->g, mask);
    return op_copy(b, o); /* transformers' transpose(1, 2).contiguous() */
}

/* The backend PyTorch 2.11's SDPA dispatch (sdp_utils.cpp, select_sdp_backend)
 * picks on an sm80+ GPU for a call with no mask and is_causal. transformers'
 * sdpa_attention_forward passes enable_gqa = True (torch >= 2.5, mask None);
 * a family calling SDPA itself without it (Falcon) sends grouped kv heads to
 * the math path, the only one that broadcasts them. */
enum sdpa_backend { SDPA_FUSED, SDPA_EFFICIENT, SDPA_MATH };

static int sdpa_backend(const model_shape *m, int dt, int enable_gqa)
{
    int gqa = m->kv_heads != m->heads;
    int align = dt == 2 ? 8 : 4;
    if (gqa && !enable_gqa)
        return SDPA_MATH;
    /* cuDNN (preferred on sm90/sm100 with the cuDNN torch 2.11 bundles) and
     * flash take fp16/bf16 with one head size up to 256 for q, k and v and
     * grouped kv heads; both save the same tensors. */
    if (dt == 2 && m->head_dim <= 256 && m->v_head_dim == m->head_dim)
        return SDPA_FUSED;
    /* Memory-efficient: fp32 too, head sizes a multiple of 4 (fp32) or 8, the
     * value's may differ (check_head_dim_size_mem_efficient); no grouped kv
     * heads before torch 2.12 (check_batch_size_and_num_heads_dense). */
    if (!gqa && m->head_dim % align == 0 && m->v_head_dim % align == 0)
        return SDPA_EFFICIENT;
    return SDPA_MATH;
}

int llmem_seg_sdpa_math(const model_shape *m, int dt, int enable_gqa)
{
    return sdpa_backend(m, dt, enable_gqa) == SDPA_MATH;
}

/* The step's overflow bound (lib/estimate/estimate.c) asks this, so that it
 * charges the scores only where the kernel run forms them (no false refusal
 * under flash or SDPA's fused kernels, no wrap-around under its math path). */
int llmem_layers_quadratic_attention(const model_shape *m, int attention, int dt)
{
    if (attention == LLMEM_ATTENTION_EAGER)
        return 1;
    if (attention != LLMEM_ATTENTION_SDPA)
        return 0;
    if (m->path == PATH_FALCON)
        return llmem_falcon_sdpa_quadratic(m, dt);
    return llmem_seg_sdpa_math(m, dt, 1);
}

/*
 * F.scaled_dot_product_attention given a float attn_mask (FalconAttention's
 * ALiBi branch): flash declines masks; the memory-efficient kernel takes them
 * (cuDNN's, preferred where it runs, saves the same tensors and its backward
 * workspace is the same for head sizes that are multiples of 64). Autocast
 * casts the mask too, and the kernel saves it for backward (attn_bias): one
 * [batch, heads, seq, seq] copy per layer, in the compute dtype, until that
 * layer's backward. The saved copy is kept by a view op after the kernel.
 */
/* The memory-efficient kernel given an additive mask it saves (kept by a
 * view op after the kernel). */
static tid masked_kernel(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                         uint64_t lse_seq)
{
    tid o = efficient_kernel_lse(b, m, q, k, v, lse_seq);
    tid in[2] = { o, mask };
    tid out = llmem_graph_op(b->g, tensor_elems(b, o), op_dt(b, o), in, 2, BIT(1), BIT(0), 0, 0, 0);
    llmem_graph_view(b->g, out, o);
    return out;
}

tid llmem_seg_sdpa_masked(build *b, const model_shape *m, tid q, tid k, tid v, tid mask)
{
    if (b->autocast) {
        q = op_cast(b, q, b->compute);
        k = op_cast(b, k, b->compute);
        v = op_cast(b, v, b->compute);
        mask = op_cast(b, mask, b->compute);
    }
    return masked_kernel(b, m, q, k, v, mask, b->seq);
}

/*
 * sdpa_attention_forward given transformers 5.x's sliding-window mask (bool
 * [batch, 1, seq, seq]): repeat_kv copies k and v to every head (no
 * enable_gqa with a mask), is_causal is off, and F.scaled_dot_product_attention
 * turns the mask into a new additive bias in q's dtype at every call
 * (convert_boolean_attn_mask: where(logical_not(mask), -inf, 0), the negation
 * a bool temporary). Flash declines masks; the memory-efficient kernel takes
 * it (its preprocess_mask pads the last dimension to a multiple of 8 with a
 * copy) and saves the bias for backward, which makes it no gradient and no
 * seq x seq workspace (attention.cpp, sdp_utils.cpp; cuDNN, preferred where
 * its version allows, saves the same bias unpadded).
 */
static tid sdpa_windowed(build *b, const model_shape *m, tid q, tid k, tid v, tid mask)
{
    uint64_t cells = b->batch * b->seq * b->seq;
    model_shape heads = *m;
    heads.kv_heads = m->heads; /* the keys and values now have every head */
    tid kr = repeat_kv(b, m, k), vr = repeat_kv(b, m, v);
    if (b->autocast) {
        q = op_cast(b, q, b->compute);
        kr = op_cast(b, kr, b->compute);
        vr = op_cast(b, vr, b->compute);
    }
    int dt = op_dt(b, q);
    tid bias = op_unary(b, op_unary(b, mask, cells, 1, 0, 0), cells, dt, 0, 0);
    if (b->seq % 8 != 0) /* pad_bias<8>: a padded copy, sliced back */
        bias = op_unary(b, bias, b->batch * b->seq * round_up(b->seq, 8), dt, 0, 0);
    /* not a polynomial in seq (nor the log-sum-exp, rounded to 32): cached one
     * seq at a time (sim/compiled.h: REGIME_ROW_AT) */
    return masked_kernel(b, &heads, q, kr, vr, bias, round_up(b->seq, 32));
}

/* transformers' sdpa_attention_forward: no repeat_kv (enable_gqa), autocast
 * casts q, k, v to the compute dtype (scaled_dot_product_attention is on its
 * lower_precision_fp list). The fused kernels return [B, S, H, D] memory, so
 * transpose(1, 2).contiguous() copies nothing. Without padding it gets a mask
 * only from the sliding window on. */
static tid sdpa_attention(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                          const attn_opts *opts)
{
    if (mask >= 0)
        return sdpa_windowed(b, m, q, k, v, mask);
    if (b->autocast) {
        q = op_cast(b, q, b->compute);
        k = op_cast(b, k, b->compute);
        v = op_cast(b, v, b->compute);
    }
    tid o;
    switch (sdpa_backend(m, op_dt(b, q), !opts->own_sdpa_call)) {
    case SDPA_FUSED: o = fused_kernel(b, m, q, k, v); break;
    case SDPA_EFFICIENT: o = efficient_kernel(b, m, q, k, v); break;
    default: o = sdpa_math(b, m, q, k, v, opts->dropout, !opts->own_sdpa_call); break;
    }
    /* autocast's wrapper passes its casts as the op's arguments: they live
     * until the op returns (the math path's upcasts are taken from them) */
    llmem_graph_hold(b->g, q);
    llmem_graph_hold(b->g, k);
    llmem_graph_hold(b->g, v);
    return o;
}

static tid attention(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                     const attn_opts *opts, unsigned strided)
{
    uint64_t scores = b->batch * m->heads * b->seq * b->seq;
    uint64_t out_elems = b->tokens * m->heads * m->v_head_dim;
    if (b->attention == LLMEM_ATTENTION_FLASH) {
        /* FlashAttention-2 (flash-attn) takes grouped kv heads natively and the
         * compute dtype. */
        tid qc = op_cast(b, q, b->compute), kc = op_cast(b, k, b->compute);
        tid vc = op_cast(b, v, b->compute);
        if (m->v_head_dim == m->head_dim)
            return fused_kernel(b, m, qc, kc, vc);
        /* Values narrower than the keys (MLA): F.pad to head_dim, then
         * attn_output[..., :v_head_dim] and reshape(...).contiguous() copy. */
        vc = op_unary(b, vc, tensor_elems(b, kc), op_dt(b, vc), 0, BIT(0));
        tid o = fused_kernel(b, m, qc, kc, vc);
        return op_unary(b, o, out_elems, op_dt(b, o), 0, 0);
    }
    if (b->attention == LLMEM_ATTENTION_SDPA)
        return sdpa_attention(b, m, q, k, v, mask, opts);
    /* eager_attention_forward */
    tid ks = repeat_kv(b, m, k), vs = repeat_kv(b, m, v);
    /* repeat_kv's copies are contiguous; without one k and v keep their order */
    int q_strided = (strided & ATTN_Q) != 0;
    int k_strided = ks == k && (strided & ATTN_K);
    int v_strided = vs == v && (strided & ATTN_V);
    tid w = eager_matmul(b, q, q_strided, ks, k_strided, scores);
    int causal_buffer = (m->traits & TRAIT_CAUSAL_BUFFER) != 0;
    if (causal_buffer) {
        w = op_where(b, op_scale(b, w)); /* / sqrt(d), then the causal bias buffer */
    } else {
        if (opts->scale)
            w = op_scale(b, w); /* * scaling */
        if (m->traits & TRAIT_SOFTCAP) /* attn_logit_softcapping: / cap, tanh, * cap */
            w = op_scale(b, op_tanh(b, op_scale(b, w)));
    }
    if (mask >= 0)
        w = op_add(b, w, mask);
    /* Llama asks softmax for fp32; GPT-2 gets fp32 only from autocast's fp32 list. */
    int softmax_dt = causal_buffer && !b->autocast ? b->g->t[w].dt : FP32;
    if (opts->softmax_dt)
        softmax_dt = opts->softmax_dt;
    tid p = op_softmax(b, w, softmax_dt);
    if (opts->cast_back)
        p = op_cast(b, p, b->g->t[causal_buffer ? v : q].dt);
    if (opts->dropout)
        p = op_dropout(b, p, DROPOUT_ATTENTION);
    /* transpose(1, 2).contiguous() */
    tid o = op_copy(b, eager_matmul(b, p, 0, vs, v_strided, out_elems));
    llmem_graph_hold(b->g, ks);
    llmem_graph_hold(b->g, vs);
    llmem_graph_hold(b->g, p);
    return o;
}

static const attn_opts eager_opts = { 1, 1, 0, 1, 0 };

tid llmem_seg_attention(build *b, const model_shape *m, tid q, tid k, tid v, tid mask)
{
    return attention(b, m, q, k, v, mask, &eager_opts, 0);
}

tid llmem_seg_attention_strided(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                                unsigned strided)
{
    return attention(b, m, q, k, v, mask, &eager_opts, strided);
}

tid llmem_seg_attention_opts(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                             const attn_opts *opts)
{
    return attention(b, m, q, k, v, mask, opts, 0);
}

/* LlamaMLP: down(silu(gate(x)) * up(x)). */
tid llmem_seg_gated_mlp(build *b, const seg_spec *s, tid h, uint64_t H, uint64_t I, int bias)
{
    tid gate = llmem_seg_linear(b, s, h, H, I, bias, LLMEM_LORA_GATE);
    tid act = op_silu(b, gate);
    tid up = llmem_seg_linear(b, s, h, H, I, bias, LLMEM_LORA_UP);
    return llmem_seg_linear(b, s, op_mul(b, act, up), I, H, bias, LLMEM_LORA_DOWN);
}

/* The experts' projections: one weight per expert, run over the rows routed
 * to it; in total every token's top-k rows, against all experts' weights. */
static tid expert_matmul(build *b, tid x, uint64_t in_f, uint64_t out_f, uint64_t experts,
                         int trainable, int nf4)
{
    uint64_t rows = tensor_elems(b, x) / in_f;
    if (nf4) /* one expert dequantized at a time, as a frozen NF4 linear */
        return nf4_linear(b, x, in_f, out_f);
    tid w = op_param(b, experts * in_f * out_f, trainable);
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid wc = op_cast_param(b, w);
    tid in[2] = { xc, wc };
    return llmem_graph_op(b->g, rows * out_f, b->g->t[xc].dt, in, 2, SAVE_CROSS, 0, 0, 0, 0);
}

/* An expert projection, with PEFT's LoRA on every expert when its name is
 * targeted (Qwen2-MoE's and DeepSeek's experts are gate_proj, up_proj,
 * down_proj; Mixtral's w1, w3, w2): each expert's adapters see its own rows,
 * so all of them see every token's top-k rows, as the projection does. */
tid llmem_seg_expert_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f,
                         uint64_t experts, unsigned target)
{
    tid base = expert_matmul(b, x, in_f, out_f, experts, s->weights_trainable, s->nf4);
    if (!(s->lora_targets & target))
        return base;
    int result_dt = b->g->t[base].dt, saved_param_dt = b->param_dt;
    b->param_dt = LORA_DT;
    tid xl = op_cast(b, x, LORA_DT);
    tid a = expert_matmul(b, xl, in_f, s->lora_rank, experts, 1, 0);
    tid up = expert_matmul(b, a, s->lora_rank, out_f, experts, 1, 0);
    b->param_dt = saved_param_dt;
    tid out = op_cast(b, op_add(b, base, op_scale(b, up)), result_dt);
    llmem_graph_hold(b->g, x);
    llmem_graph_hold(b->g, base);
    return out;
}

/*
 * transformers 5.x's grouped_mm_experts_forward (integrations/moe.py): the
 * T tokens' k routed rows (R = T k) gathered, sorted by expert (argsort, and
 * argsort of that to undo it), run through the stacked gate_up_proj and
 * down_proj as one grouped matmul each (torch._grouped_mm saves each operand
 * for the other's gradient, autocast casting both), scaled by the router's
 * weights (fp32 in 5.x's routers: the product is fp32), put back in token
 * order, cast to the input's dtype and index_add-ed into zeros_like(input).
 * index: the router's top-k (int64 [T, k]); weights: its scores [T, k].
 * Every local lives until the function returns.
 */
tid llmem_seg_grouped_experts(build *b, const model_shape *m, const seg_spec *s, tid h, tid index,
                              tid weights)
{
    uint64_t H = m->hidden, k = m->experts_per_token, T = tensor_elems(b, h) / H, R = T * k;
    uint64_t E = m->experts / b->ep, I = m->expert_intermediate;
    int dt = op_dt(b, h), wdt = op_dt(b, weights);
    graph *g = b->g;
    tid final = llmem_graph_op(g, T * H, dt, NULL, 0, 0, 0, 0, 0, 0); /* zeros_like */
    /* arange(T).unsqueeze(1).expand(-1, k).reshape(-1): reshape copies the expansion */
    tid arange = llmem_graph_op(g, T, INT64, NULL, 0, 0, 0, 0, 0, 0);
    tid token_idx = llmem_graph_op(g, R, INT64, &arange, 1, 0, 0, 0, 0, 0);
    /* argsort: sort's sorted values are a temporary of the call */
    tid perm = llmem_graph_op(g, R, INT64, &index, 1, 0, 0, 0, R * INT64, 0);
    tid inv_perm = llmem_graph_op(g, R, INT64, &perm, 1, 0, 0, 0, R * INT64, 0);
    /* hidden_states[token_idx] and the [perm] gathers: IndexBackward keeps the indices */
    tid rows = llmem_graph_op(g, R * H, dt, (tid[]){ h, token_idx }, 2, BIT(1), 0, 0, 0, 0);
    tid ids_sorted = llmem_graph_op(g, R, INT64, (tid[]){ index, perm }, 2, 0, 0, 0, 0, 0);
    tid w_sorted = llmem_graph_op(g, R, wdt, (tid[]){ weights, perm }, 2, BIT(1), 0, 0, 0, 0);
    tid rows_sorted = llmem_graph_op(g, R * H, dt, (tid[]){ rows, perm }, 2, BIT(1), 0, 0, 0, 0);
    /* histc(expert_ids_g.float(), bins=E), then cumsum to int32 offsets */
    tid ids_float = llmem_graph_op(g, R, FP32, &ids_sorted, 1, 0, 0, 0, 0, 0);
    tid counts = llmem_graph_op(g, E, FP32, &ids_float, 1, 0, 0, 0, 0, 0);
    tid offsets = llmem_graph_op(g, E, 4, &counts, 1, 0, 0, 0, 0, 0);
    uint64_t up_mats = m->mlp == LLMEM_MLP_GATED ? 2 : 1;
    tid gate_up = expert_matmul(b, rows_sorted, H, up_mats * I, E, s->weights_trainable, 0);
    tid act;
    if (up_mats == 2) { /* gate_up_out.chunk(2, dim=-1), act_fn(gate) * up */
        tid gate = op_view_part(b, gate_up, R * I), up = op_view_part(b, gate_up, R * I);
        act = op_mul(b, op_silu(b, gate), up);
        llmem_graph_hold(b->g, gate);
        llmem_graph_hold(b->g, up);
    } else {
        act = llmem_seg_activation(b, m, gate_up);
    }
    tid down = expert_matmul(b, act, I, H, E, s->weights_trainable, 0);
    tid scaled = op_mul(b, down, w_sorted); /* * sample_weights_g.unsqueeze(-1) */
    tid restored = llmem_graph_op(g, R * H, op_dt(b, scaled), (tid[]){ scaled, inv_perm }, 2,
                                  BIT(1), 0, 0, 0, 0); /* [inv_perm] */
    tid source = op_cast(b, restored, dt);
    /* final.index_add_(0, token_idx, source), in place: IndexAddBackward keeps
     * the index and the source */
    tid out = llmem_graph_op(g, T * H, dt, (tid[]){ final, source, token_idx }, 3, BIT(1) | BIT(2),
                             0, 0, 0, 0);
    llmem_graph_view(g, out, final);
    /* the locals; down's product took its name (out_per_sample_g) */
    tid held[] = { h,        token_idx,   perm,   inv_perm, rows,    ids_sorted, w_sorted,
                   rows_sorted, counts, offsets,  gate_up, act,        scaled,   restored };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        llmem_graph_hold(g, held[i]);
    return out;
}

/*
 * Routed experts under sequence parallelism: the experts see the tokens of
 * the whole tensor-parallel group. Megatron's all-gather token dispatcher
 * (core/transformer/moe/token_dispatcher.py) gathers the rank's share of the
 * hidden states before the experts and reduce-scatters their output back to
 * it; neither collective saves anything for backward, which runs them the
 * other way. The router runs on the gathered tokens here (Megatron runs it on
 * the rank's share and gathers its probabilities): tokens x (hidden +
 * experts) more a layer, small beside the experts' rows.
 */
tid llmem_seg_routed_sp(build *b, const model_shape *m, const seg_spec *s, tid h,
                        tid (*routed)(build *, const model_shape *, const seg_spec *, tid))
{
    if (b->sp <= 1)
        return routed(b, m, s, h);
    tid whole = llmem_graph_op(b->g, b->tokens * m->hidden, op_dt(b, h), &h, 1, 0, 0, 0, 0, 0);
    tid out = routed(b, m, s, whole);
    return llmem_graph_op(b->g, b->tokens / b->sp * m->hidden, op_dt(b, out), &out, 1, 0, 0, 0, 0,
                          0);
}

/* The MLP activation of m (transformers' ACT2FN): ReLU saves its output, the
 * native GELU and SiLU kernels their input; NewGELUActivation (GPT-2, Phi)
 * and FastGELUActivation are Python expressions, one op each. */
tid llmem_seg_activation(build *b, const model_shape *m, tid x)
{
    switch (m->activation) {
    case LLMEM_ACTIVATION_RELU:
        return op_relu(b, x);
    case LLMEM_ACTIVATION_GELU_NEW: {
        /* 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))):
         * Python evaluates 0.5 * x first; pow is on autocast's fp32 list. */
        tid half = op_scale(b, x);
        tid inner = op_add(b, x, op_scale(b, op_pow(b, x)));
        tid t = op_add_scalar(b, op_tanh(b, op_scale(b, inner)));
        tid out = op_mul(b, half, t);
        llmem_graph_hold(b->g, x); /* forward's input argument, to the end of the expression */
        return out;
    }
    case LLMEM_ACTIVATION_GELU_FAST: {
        /* 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x))) */
        tid half = op_scale(b, x);
        tid a = op_scale(b, x);                              /* x * 0.7978845608 */
        tid c = op_add_scalar(b, op_mul(b, op_scale(b, x), x)); /* 1 + 0.044715 * x * x */
        tid t = op_add_scalar(b, op_tanh(b, op_mul(b, a, c)));
        tid out = op_mul(b, half, t);
        llmem_graph_hold(b->g, x);
        return out;
    }
    default: /* silu, gelu, gelu-tanh: one kernel that saves its input */
        return op_gelu(b, x);
    }
}

/* torch.cat((x, y), dim=-1) of two parts of a head: a new tensor of the
 * promoted dtype; each input's gradient is a slice of the output's, copied
 * only to an input of another dtype. */
tid llmem_seg_cat(build *b, tid x, tid y)
{
    int dt = (op_dt(b, x) == FP32 || op_dt(b, y) == FP32) ? FP32 : op_dt(b, x);
    unsigned alias = (op_dt(b, x) == dt ? BIT(0) : 0) | (op_dt(b, y) == dt ? BIT(1) : 0);
    tid in[2] = { x, y };
    return llmem_graph_op(b->g, tensor_elems(b, x) + tensor_elems(b, y), dt, in, 2, 0, alias, 0,
                          0, 0);
}

/* Rotary on the first rotary_dim dimensions of each head (GPT-NeoX's
 * apply_rotary_pos_emb, Phi's query_rot / query_pass): the rotated part and
 * the untouched rest are views of x, catted back into a new tensor (also
 * when the rest is empty). */
tid llmem_seg_partial_rotary(build *b, const model_shape *m, tid x, uint64_t heads, tid cos,
                             tid sin)
{
    uint64_t rows = b->tokens * heads;
    tid rot = op_view_part(b, x, rows * m->rotary_dim);
    tid pass = op_view_part(b, x, rows * (m->head_dim - m->rotary_dim));
    return llmem_seg_cat(b, llmem_seg_rotary(b, rot, cos, sin), pass);
}
