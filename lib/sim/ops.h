/* SPDX-License-Identifier: MIT */
/*
 * The operations a Hugging Face decoder runs, recorded on a graph with what
 * autograd saves for each (PyTorch's derivatives.yaml) and the dtype rules of
 * CUDA autocast (torch/amp: matmuls in the low dtype, the fp32 list for
 * softmax, log_softmax, layer_norm, pow, rsqrt; other ops promote).
 */
#ifndef LLMEM_SIM_OPS_H
#define LLMEM_SIM_OPS_H

#include "sim/graph.h"

#include <stddef.h>

/* Kinds of dropout site, in model/dropout.h's order (lib/layers checks the count). */
#define BUILD_DROPOUT_SITES 3

typedef struct build {
    graph *g;
    uint64_t batch, seq, tokens; /* tokens = batch x seq */
    int autocast;     /* mixed precision: matmuls cast to `compute` bytes */
    int compute;      /* bytes of the compute dtype */
    int param_dt;     /* bytes of the parameters' storage dtype */
    int uncached_casts; /* autocast casts the parameters at every use: set around a
                           FalconLinear, whose weight.T is a view (TRAIT_UNCACHED_CAST) */
    double dropout[BUILD_DROPOUT_SITES]; /* the model's dropout layers' probability by site */
    double lora_dropout; /* PEFT's lora_dropout: each adapter's own nn.Dropout */
    int attention;    /* the llmem_attention value: the kernel lib/layers builds */
    int experts;      /* the llmem_experts_impl value: how routed experts run */
    int hold_input;   /* the segment's input stays referenced (checkpoint recompute) */
    uint64_t sp;      /* sequence parallelism: residual-stream tokens split over sp ranks */
    uint64_t ep;      /* expert parallelism: experts of a layer split over ep ranks */
    uint64_t model_locals; /* the head: bytes the model's forward keeps bound until it
                            * returns after the final norm (lib/layers/segments.c) */
    uint64_t loss_chunk; /* 0: the fused loss's chunk follows the tokens; else fixed at this
                          * (LOSS_CHUNK_ALL: all the tokens), as a compiled walk's samples
                          * take their caller's (lib/layers/segments.c) */
} build;

#define LOSS_CHUNK_ALL UINT64_MAX

static inline uint64_t tensor_elems(const build *b, tid x)
{
    return b->g->t[x].bytes / b->g->t[x].dt;
}

#define FP32 4
#define INT64 8

static inline int op_dt(const build *b, tid x)
{
    return b->g->t[x].dt;
}

static inline tid op_unary(build *b, tid x, uint64_t out_elems, int out_dt, unsigned save, unsigned alias)
{
    return llmem_graph_op(b->g, out_elems, out_dt, &x, 1, save, alias, 0, 0, 0);
}

/* A parameter of elems elements; trainable ones get a .grad of grad_dt bytes. */
static inline tid op_param(build *b, uint64_t elems, int trainable)
{
    return llmem_graph_tensor(b->g, elems, b->param_dt, ROLE_PARAM, trainable);
}

/* Cast x to dt bytes (a no-op, returning x, when it already is). */
static inline tid op_cast(build *b, tid x, int dt)
{
    if (op_dt(b, x) == dt)
        return x;
    return op_unary(b, x, tensor_elems(b, x), dt, 0, 0);
}

/* Autocast's lower_precision_fp list: cast a parameter for a matmul.
 * cached_cast returns a weight already in the compute dtype as it is, and
 * caches the copy of one that requires grad (a leaf: not FalconLinear's
 * transposed view). */
static inline tid op_cast_param(build *b, tid w)
{
    if (!b->autocast)
        return w;
    tid c = op_cast(b, w, b->compute);
    if (c != w && b->g->t[w].role == ROLE_PARAM && !b->uncached_casts)
        llmem_graph_cached(b->g, c, w);
    return c;
}

/* x @ W^T (+ bias) on the last dimension: nn.Linear and GPT-2's Conv1D.
 * Under autocast the input is cast for this op alone; a trainable weight's
 * cast copy is cached by autocast and saved. */
static inline tid op_linear(build *b, tid x, uint64_t in_f, uint64_t out_f, int trainable, int bias)
{
    tid w = op_param(b, in_f * out_f, trainable);
    tid bp = bias ? op_param(b, out_f, trainable) : -1;
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid wc = op_cast_param(b, w);
    tid bc = bias ? op_cast_param(b, bp) : -1;
    tid in[3] = { xc, wc, bc };
    /* mm saves the input for the weight's gradient and the weight for the input's. */
    uint64_t rows = tensor_elems(b, x) / in_f;
    tid out = llmem_graph_op(b->g, rows * out_f, op_dt(b, xc), in, bias ? 3 : 2, SAVE_CROSS, 0, 0,
                             0, 0);
    llmem_graph_hold(b->g, x); /* the module's argument, through the mm */
    return out;
}

static inline uint64_t op_max(uint64_t a, uint64_t c)
{
    return a > c ? a : c;
}

/* Elementwise binary ops with type promotion. */
static inline tid op_mul(build *b, tid x, tid y)
{
    int dt = op_max((uint64_t)op_dt(b, x), (uint64_t)op_dt(b, y)) == FP32 ? FP32 : op_dt(b, x);
    uint64_t elems = op_max(tensor_elems(b, x), tensor_elems(b, y));
    tid in[2] = { x, y };
    return llmem_graph_op(b->g, elems, dt, in, 2, SAVE_CROSS | BWD_REDUCE, 0, 0, 0, 0);
}

static inline tid op_add(build *b, tid x, tid y)
{
    int dt = (op_dt(b, x) == FP32 || op_dt(b, y) == FP32) ? FP32 : op_dt(b, x);
    uint64_t elems = op_max(tensor_elems(b, x), tensor_elems(b, y));
    uint64_t bytes = elems * (uint64_t)dt;
    tid in[2] = { x, y };
    /* AddBackward hands the output gradient to both inputs; the engine only
     * copies it for an input of another dtype or shape. */
    unsigned alias = (b->g->t[x].bytes == bytes && op_dt(b, x) == dt ? BIT(0) : 0) |
                     (b->g->t[y].bytes == bytes && op_dt(b, y) == dt ? BIT(1) : 0);
    return llmem_graph_op(b->g, elems, dt, in, 2, 0, alias, 0, 0, 0);
}

/* x * or / a Python scalar: only the scalar saved, on the host. */
static inline tid op_scale(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), SAVE_SCALAR, 0);
}

/* x + scalar: the gradient passes through unchanged. */
static inline tid op_add_scalar(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), 0, BIT(0));
}

/* Unary ops: what each saves for backward. */
/* x.pow(n): saves x. Its backward, grad * (n * x.pow(n - 1))
 * (FunctionsManual.cpp, pow_backward), holds the C++ temporaries x.pow(n - 1)
 * and n * it, each x's size, until the product is made. */
static inline tid op_pow(build *b, tid x)
{
    tid xf = b->autocast ? op_cast(b, x, FP32) : x;
    uint64_t elems = tensor_elems(b, xf);
    int dt = op_dt(b, xf);
    return llmem_graph_op(b->g, elems, dt, &xf, 1, BIT(0), 0, 0, 0, 2 * elems * (uint64_t)dt);
}

static inline tid op_mean_last(build *b, tid x, uint64_t dim)
{
    return op_unary(b, x, tensor_elems(b, x) / dim, op_dt(b, x), 0, 0);
}

/* saves its output */
static inline tid op_rsqrt(build *b, tid x)
{
    tid xf = b->autocast ? op_cast(b, x, FP32) : x;
    return op_unary(b, xf, tensor_elems(b, xf), op_dt(b, xf), SAVE_OUT, 0);
}

/* saves its output */
static inline tid op_tanh(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), SAVE_OUT, 0);
}

/* saves its input */
static inline tid op_silu(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), BIT(0), 0);
}

/* saves its input (native gelu) */
static inline tid op_gelu(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), BIT(0), 0);
}

/* saves its output */
static inline tid op_relu(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), SAVE_OUT, 0);
}

static inline tid op_neg(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x) / 2, op_dt(b, x), 0, 0);
}

static inline tid op_copy(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), 0, BIT(0));
}

/* cat((-x2, x1)) of rotate_half: x1 the negated half, x2 the tensor whose half is viewed. */
static inline tid op_cat_halves(build *b, tid x1, tid x2)
{
    /* x1 is a half-size tensor; x2 stands for a view of half of a full one
     * (views are not recorded), so the result has twice x1's elements. */
    tid in[2] = { x1, x2 };
    uint64_t elems = 2 * tensor_elems(b, x1);
    return llmem_graph_op(b->g, elems, op_dt(b, x2), in, 2, 0, 0, 0, 0, 0);
}

/* repeat_kv: expand + reshape */
static inline tid op_expand_copy(build *b, tid x, uint64_t factor)
{
    if (factor == 1)
        return x;
    return op_unary(b, x, tensor_elems(b, x) * factor, op_dt(b, x), 0, 0);
}

static inline tid op_softmax(build *b, tid x, int dt)
{
    /* softmax(x, dtype=...) converts inside the call: x stays referenced. */
    tid xc = op_cast(b, x, dt);
    tid out = op_unary(b, xc, tensor_elems(b, xc), dt, SAVE_OUT, 0);
    llmem_graph_hold(b->g, x);
    return out;
}

/* native_dropout with probability p: bool mask saved (identity at p = 0) */
static inline tid op_dropout_p(build *b, tid x, double p)
{
    if (p <= 0.0)
        return x; /* F.dropout with p = 0 returns its input */
    uint64_t elems = tensor_elems(b, x);
    return llmem_graph_op(b->g, elems, op_dt(b, x), &x, 1, SAVE_AUX, 0, elems, 0, 0);
}

/* A dropout layer of the model at a kind of site (model/dropout.h's enum dropout_site). */
static inline tid op_dropout(build *b, tid x, int site)
{
    return op_dropout_p(b, x, b->dropout[site]);
}

/* torch.topk of k per row: the values (x's dtype; elems of them) and, as
 * aux output, their int64 indices, which TopkBackward saves for its
 * scatter. *index, when asked for: the indices. */
static inline tid op_topk(build *b, tid x, uint64_t elems, tid *index)
{
    tid top = llmem_graph_op(b->g, elems, op_dt(b, x), &x, 1, SAVE_AUX, 0, elems * INT64, 0, 0);
    if (index != NULL)
        *index = b->g->op[b->g->nop - 1].aux;
    return top;
}

/* Batched matmul of two activations (attention). */
static inline tid op_bmm(build *b, tid x, tid y, uint64_t out_elems)
{
    tid xc = b->autocast ? op_cast(b, x, b->compute) : x;
    tid yc = b->autocast ? op_cast(b, y, b->compute) : y;
    tid in[2] = { xc, yc };
    return llmem_graph_op(b->g, out_elems, op_dt(b, xc), in, 2, SAVE_CROSS, 0, 0, 0, 0);
}

/* torch.where(bool buffer, x, scalar): saves only the buffer. */
static inline tid op_where(build *b, tid x)
{
    return op_unary(b, x, tensor_elems(b, x), op_dt(b, x), 0, 0);
}

static inline tid op_layer_norm(build *b, tid x, uint64_t dim, int trainable, int bias)
{
    tid xf = b->autocast ? op_cast(b, x, FP32) : x;
    tid w = op_param(b, dim, trainable);
    tid bp = bias ? op_param(b, dim, trainable) : -1;
    /* The fp32 list casts 16-bit weights too: fresh fp32 copies (autocast
     * caches only casts down from fp32), which the op saves. */
    tid wf = b->autocast ? op_cast(b, w, FP32) : w;
    tid bf = bias && b->autocast ? op_cast(b, bp, FP32) : bp;
    tid in[3] = { xf, wf, bf };
    unsigned save = BIT(0) | (wf != w ? BIT(1) : 0) | (bias && bf != bp ? BIT(2) : 0);
    uint64_t rows = tensor_elems(b, xf) / dim;
    /* native_layer_norm saves input, weight, bias, mean and rstd (fp32 on CUDA). */
    return llmem_graph_op(b->g, tensor_elems(b, xf), op_dt(b, xf), in, bias ? 3 : 2,
                    save | SAVE_AUX, 0, 2 * rows * FP32, 0, 0);
}

static inline tid op_embedding(build *b, uint64_t rows, uint64_t dim, int trainable, tid *weight)
{
    tid w = op_param(b, rows * dim, trainable);
    if (weight != NULL)
        *weight = w;
    /* Saves only the indices, which are the batch (counted as data). Under
     * sequence parallelism the vocabulary-parallel output is reduce-scattered
     * to the rank's share of the tokens (Megatron's VocabParallelEmbedding). */
    uint64_t whole = b->sp > 1 ? b->tokens * dim * (uint64_t)b->param_dt : 0;
    return llmem_graph_op(b->g, b->tokens / b->sp * dim, b->param_dt, &w, 1, 0, 0, 0, whole, 0);
}

/* A fused attention kernel (FlashAttention-2, cuDNN, memory-efficient): the
 * output in the inputs' dtype and an fp32 row statistic of lse_bytes; saves
 * q, k, v, the output and the statistic; its backward holds bwd_workspace
 * besides the input gradients. */
static inline tid op_fused_attention(build *b, tid q, tid k, tid v, uint64_t out_elems,
                                     uint64_t lse_bytes, uint64_t bwd_workspace)
{
    tid in[3] = { q, k, v };
    return llmem_graph_op(b->g, out_elems, op_dt(b, q), in, 3,
                          BIT(0) | BIT(1) | BIT(2) | SAVE_OUT | SAVE_AUX, 0, lse_bytes, 0,
                          bwd_workspace);
}

/* A view of part of x (split of a fused projection): no storage of its own,
 * a gradient of its own size; using or saving it keeps x alive. */
static inline tid op_view_part(build *b, tid x, uint64_t elems)
{
    /* Whoever uses or saves the view keeps the base alive (llmem_graph_op). */
    tid v = llmem_graph_op(b->g, elems, op_dt(b, x), &x, 1, 0, 0, 0, 0, 0);
    llmem_graph_view(b->g, v, x);
    return v;
}

#endif
