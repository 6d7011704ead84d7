/* SPDX-License-Identifier: MIT */
/*
 * The operations a Hugging Face decoder runs, recorded on a graph with what
 * autograd saves for each (PyTorch's derivatives.yaml) and the dtype rules of
 * CUDA autocast (torch/amp: matmuls in the low dtype, the fp32 list for
 * softmax, log_softmax, layer_norm, pow, rsqrt; other ops promote).
 */
#ifndef LLMEM_ESTIMATE_OPS_H
#define LLMEM_ESTIMATE_OPS_H

#include "estimate/graph.h"

typedef struct build {
    graph *g;
    uint64_t batch, seq, tokens; /* tokens = batch x seq */
    int autocast;     /* mixed precision: matmuls cast to `compute` bytes */
    int compute;      /* bytes of the compute dtype */
    int param_dt;     /* bytes of the parameters' storage dtype */
    double dropout;   /* dropout probability of the model's dropout layers */
    int flash;        /* fused attention kernel */
    int hold_input;   /* the segment's input stays referenced (checkpoint recompute) */
} build;

/* A parameter of elems elements; trainable ones get a .grad of grad_dt bytes. */
tid op_param(build *b, uint64_t elems, int trainable);
/* Cast x to dt bytes (a no-op, returning x, when it already is). */
tid op_cast(build *b, tid x, int dt);
/* x @ W^T (+ bias) on the last dimension: nn.Linear and GPT-2's Conv1D.
 * Under autocast the input is cast for this op alone; a trainable weight's
 * cast copy is cached by autocast and saved. */
tid op_linear(build *b, tid x, uint64_t in_f, uint64_t out_f, int trainable, int bias);
/* Elementwise binary ops with type promotion. */
tid op_mul(build *b, tid x, tid y);
tid op_add(build *b, tid x, tid y);
/* Ops with a Python scalar: nothing saved. */
tid op_scale(build *b, tid x);
/* x + scalar: the gradient passes through unchanged. */
tid op_add_scalar(build *b, tid x);
/* Unary ops: what each saves for backward. */
tid op_pow(build *b, tid x);      /* saves its input; fp32 under autocast */
tid op_mean_last(build *b, tid x, uint64_t dim);
tid op_rsqrt(build *b, tid x);    /* saves its output */
tid op_tanh(build *b, tid x);     /* saves its output */
tid op_silu(build *b, tid x);     /* saves its input */
tid op_gelu(build *b, tid x);     /* saves its input (native gelu) */
tid op_relu(build *b, tid x);     /* saves its output */
tid op_neg(build *b, tid x);
tid op_copy(build *b, tid x);
/* A view of part of x (split of a fused projection): no storage of its own,
 * a gradient of its own size; using or saving it keeps x alive. */
tid op_view_part(build *b, tid x, uint64_t elems);     /* .contiguous() of a transposed view */
/* cat((-x2, x1)) of rotate_half: x1 the negated half, x2 the tensor whose half is viewed. */
tid op_cat_halves(build *b, tid x1, tid x2);
tid op_expand_copy(build *b, tid x, uint64_t factor); /* repeat_kv: expand + reshape */
tid op_softmax(build *b, tid x, int dt);
tid op_dropout(build *b, tid x);  /* native_dropout: bool mask saved (identity at p = 0) */
/* Batched matmul of two activations (attention). */
tid op_bmm(build *b, tid x, tid y, uint64_t out_elems);
/* torch.where(bool buffer, x, scalar): saves only the buffer. */
tid op_where(build *b, tid x);
tid op_layer_norm(build *b, tid x, uint64_t dim, int trainable, int bias);
tid op_embedding(build *b, uint64_t rows, uint64_t dim, int trainable, tid *weight);
/* Fused attention (FlashAttention-2 / SDPA): saves q, k, v, out and the
 * fp32 log-sum-exp per row. */
tid op_flash_attention(build *b, tid q, tid k, tid v, uint64_t heads);

/* Bytes per element of the residual stream: fp32 under autocast (fp32
 * embedding plus low-precision branches promote), else the parameters'. */
static inline int residual_dt(const build *b)
{
    return b->autocast ? 4 : b->param_dt;
}

static inline uint64_t tensor_elems(const build *b, tid x)
{
    return b->g->t[x].bytes / b->g->t[x].dt;
}

#endif
