/* SPDX-License-Identifier: MIT */
#include "estimate/ops.h"

#include <stddef.h>

#define BIT(j) (1u << (j))
#define FP32 4

static int dt_of(const build *b, tid x)
{
    return b->g->t[x].dt;
}

static int rg(const build *b, tid x)
{
    return graph_rg(b->g, x);
}

static tid unary(build *b, tid x, uint64_t out_elems, int out_dt, unsigned save, unsigned alias)
{
    return graph_op(b->g, out_elems, out_dt, &x, 1, save, alias, 0, 0, 0);
}

tid op_param(build *b, uint64_t elems, int trainable)
{
    return graph_tensor(b->g, elems, b->param_dt, ROLE_PARAM, trainable);
}

tid op_cast(build *b, tid x, int dt)
{
    if (dt_of(b, x) == dt)
        return x;
    return unary(b, x, tensor_elems(b, x), dt, 0, 0);
}

/* Autocast's lower_precision_fp list: cast a parameter for a matmul. */
static tid cast_param(build *b, tid w)
{
    if (!b->autocast)
        return w;
    return unary(b, w, tensor_elems(b, w), b->compute, 0, 0);
}

tid op_linear(build *b, tid x, uint64_t in_f, uint64_t out_f, int trainable, int bias)
{
    tid w = op_param(b, in_f * out_f, trainable);
    tid bp = bias ? op_param(b, out_f, trainable) : -1;
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid wc = cast_param(b, w);
    tid bc = bias ? cast_param(b, bp) : -1;
    tid in[3] = { xc, wc, bc };
    /* mm saves the input for the weight's gradient and the weight for the input's. */
    unsigned save = (rg(b, wc) ? BIT(0) : 0) | (rg(b, xc) ? BIT(1) : 0);
    uint64_t rows = tensor_elems(b, x) / in_f;
    return graph_op(b->g, rows * out_f, dt_of(b, xc), in, bias ? 3 : 2, save, 0, 0, 0, 0);
}

static uint64_t max_u64(uint64_t a, uint64_t c)
{
    return a > c ? a : c;
}

/* The gradient of an input that was broadcast or promoted is computed at
 * the output's size and dtype first, then reduced or cast. */
static uint64_t reduce_extra(const build *b, tid x, tid y, uint64_t out_bytes)
{
    uint64_t extra = 0;
    const g_tensor *tx = &b->g->t[x], *ty = &b->g->t[y];
    if (rg(b, x) && tx->bytes != out_bytes)
        extra = out_bytes;
    if (rg(b, y) && ty->bytes != out_bytes)
        extra = out_bytes;
    return extra;
}

tid op_mul(build *b, tid x, tid y)
{
    int dt = max_u64((uint64_t)dt_of(b, x), (uint64_t)dt_of(b, y)) == FP32 ? FP32 : dt_of(b, x);
    uint64_t elems = max_u64(tensor_elems(b, x), tensor_elems(b, y));
    tid in[2] = { x, y };
    unsigned save = (rg(b, y) ? BIT(0) : 0) | (rg(b, x) ? BIT(1) : 0);
    return graph_op(b->g, elems, dt, in, 2, save, 0, 0, 0,
                    reduce_extra(b, x, y, elems * (uint64_t)dt));
}

tid op_add(build *b, tid x, tid y)
{
    int dt = (dt_of(b, x) == FP32 || dt_of(b, y) == FP32) ? FP32 : dt_of(b, x);
    uint64_t elems = max_u64(tensor_elems(b, x), tensor_elems(b, y));
    uint64_t bytes = elems * (uint64_t)dt;
    tid in[2] = { x, y };
    /* AddBackward hands the output gradient to both inputs; the engine only
     * copies it for an input of another dtype or shape. */
    unsigned alias = (b->g->t[x].bytes == bytes && dt_of(b, x) == dt ? BIT(0) : 0) |
                     (b->g->t[y].bytes == bytes && dt_of(b, y) == dt ? BIT(1) : 0);
    return graph_op(b->g, elems, dt, in, 2, 0, alias, 0, 0, 0);
}

tid op_scale(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), 0, 0);
}

tid op_add_scalar(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), 0, BIT(0));
}

tid op_pow(build *b, tid x)
{
    tid xf = b->autocast ? op_cast(b, x, FP32) : x;
    return unary(b, xf, tensor_elems(b, xf), dt_of(b, xf), BIT(0), 0);
}

tid op_mean_last(build *b, tid x, uint64_t dim)
{
    return unary(b, x, tensor_elems(b, x) / dim, dt_of(b, x), 0, 0);
}

tid op_rsqrt(build *b, tid x)
{
    tid xf = b->autocast ? op_cast(b, x, FP32) : x;
    return unary(b, xf, tensor_elems(b, xf), dt_of(b, xf), SAVE_OUT, 0);
}

tid op_tanh(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), SAVE_OUT, 0);
}

tid op_silu(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), BIT(0), 0);
}

tid op_gelu(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), BIT(0), 0);
}

tid op_relu(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), SAVE_OUT, 0);
}

tid op_neg(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x) / 2, dt_of(b, x), 0, 0);
}

tid op_copy(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), 0, BIT(0));
}

tid op_cat_halves(build *b, tid x1, tid x2)
{
    /* x1 is a half-size tensor; x2 stands for a view of half of a full one
     * (views are not recorded), so the result has twice x1's elements. */
    tid in[2] = { x1, x2 };
    uint64_t elems = 2 * tensor_elems(b, x1);
    return graph_op(b->g, elems, dt_of(b, x2), in, 2, 0, 0, 0, 0, 0);
}

tid op_expand_copy(build *b, tid x, uint64_t factor)
{
    if (factor == 1)
        return x;
    return unary(b, x, tensor_elems(b, x) * factor, dt_of(b, x), 0, 0);
}

tid op_softmax(build *b, tid x, int dt)
{
    /* softmax(x, dtype=...) converts inside the call: x stays referenced. */
    tid xc = op_cast(b, x, dt);
    tid out = unary(b, xc, tensor_elems(b, xc), dt, SAVE_OUT, 0);
    graph_hold(b->g, x);
    return out;
}

tid op_dropout(build *b, tid x)
{
    if (b->dropout <= 0.0)
        return x; /* F.dropout with p = 0 returns its input */
    uint64_t elems = tensor_elems(b, x);
    return graph_op(b->g, elems, dt_of(b, x), &x, 1, SAVE_AUX, 0, elems, 0, 0);
}

tid op_bmm(build *b, tid x, tid y, uint64_t out_elems)
{
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid yc = b->autocast ? op_cast(b, y, b->compute) : y;
    tid in[2] = { xc, yc };
    unsigned save = (rg(b, yc) ? BIT(0) : 0) | (rg(b, xc) ? BIT(1) : 0);
    return graph_op(b->g, out_elems, dt_of(b, xc), in, 2, save, 0, 0, 0, 0);
}

tid op_where(build *b, tid x)
{
    return unary(b, x, tensor_elems(b, x), dt_of(b, x), 0, 0);
}

tid op_layer_norm(build *b, tid x, uint64_t dim, int trainable, int bias)
{
    tid xf = b->autocast ? op_cast(b, x, FP32) : x;
    tid w = op_param(b, dim, trainable);
    tid bp = bias ? op_param(b, dim, trainable) : -1;
    tid in[3] = { xf, w, bp };
    uint64_t rows = tensor_elems(b, xf) / dim;
    /* native_layer_norm saves input, weight, bias, mean and rstd (fp32 on CUDA). */
    return graph_op(b->g, tensor_elems(b, xf), dt_of(b, xf), in, bias ? 3 : 2,
                    BIT(0) | SAVE_AUX, 0, 2 * rows * FP32, 0, 0);
}

tid op_embedding(build *b, uint64_t rows, uint64_t dim, int trainable, tid *weight)
{
    tid w = op_param(b, rows * dim, trainable);
    if (weight != NULL)
        *weight = w;
    /* Saves only the indices, which are the batch (counted as data). */
    return graph_op(b->g, b->tokens * dim, b->param_dt, &w, 1, 0, 0, 0, 0, 0);
}

tid op_flash_attention(build *b, tid q, tid k, tid v, uint64_t heads)
{
    tid in[3] = { q, k, v };
    uint64_t lse = b->batch * heads * b->seq * FP32;
    /* Backward accumulates dq in fp32 (FlashAttention-2's dq_accum). */
    uint64_t dq_accum = tensor_elems(b, q) * FP32;
    return graph_op(b->g, tensor_elems(b, q), dt_of(b, q), in, 3,
                    BIT(0) | BIT(1) | BIT(2) | SAVE_OUT | SAVE_AUX, 0, lse, 0, dq_accum);
}

tid op_view_part(build *b, tid x, uint64_t elems)
{
    /* Whoever uses or saves the view keeps the base alive (graph_op). */
    tid v = graph_op(b->g, elems, dt_of(b, x), &x, 1, 0, 0, 0, 0, 0);
    b->g->t[v].role = ROLE_VIEW;
    b->g->t[v].base = b->g->t[x].base;
    return v;
}
