/* SPDX-License-Identifier: MIT */
/*
 * Compiled segments: the cost of a segment as polynomials in batch and seq.
 *
 * Which tensors are live at each step of a segment's simulation does not
 * depend on batch (B) or sequence length (S), and every tensor's size is a
 * sum of the monomials 1, S, B, B*S and B*S^2 (weights, rotary tables,
 * activations, attention scores). So are the live totals at every step. A
 * segment simulated at five (B, S) points gives each step's polynomial
 * exactly; a sixth point checks it. A later estimate with other B and S then
 * evaluates the few steps that can hold the peak instead of simulating.
 */
#ifndef LLMEM_ESTIMATE_COMPILED_H
#define LLMEM_ESTIMATE_COMPILED_H

#include "sim/graph.h"

#define MONOMIALS 5          /* 1, S, B, B*S, B*S^2 */
#define COMPILED_EVENTS 40   /* steps kept per phase after dropping dominated ones */
#define COMPILED_FIELDS 8    /* persist, out, bwd_start, param_grads, input_grad, bwd_end,
                                input_saved, param_grads_wide */
#define COMPILE_POINTS 6     /* five to solve, one to check */
#define COMPILE_LOG 1024     /* steps one sampled simulation may record */

typedef struct poly {
    int64_t c[MONOMIALS];
} poly;

typedef struct compiled_seg {
    poly fwd[COMPILED_EVENTS], bwd[COMPILED_EVENTS];
    int nfwd, nbwd;
    poly field[COMPILED_FIELDS];
} compiled_seg;

/* One sampled simulation: its seg_cost, and its log of live bytes split into
 * forward and backward steps. */
typedef struct sample {
    uint64_t b, s;
    seg_cost cost;
    uint64_t log[COMPILE_LOG];
    int nlog, nfwd;
} sample;

/* The (B, S) points to simulate at. */
void llmem_compile_points(uint64_t *batch, uint64_t *seq);
/* Solve, check and prune; 0 when the samples do not fit the model (then the
 * caller keeps simulating). */
int llmem_compile_segment(const sample *samples, compiled_seg *out, poly *scratch /* COMPILE_LOG */);
/* The segment's cost at (batch, seq). */
void llmem_compiled_eval(const compiled_seg *c, uint64_t batch, uint64_t seq, seg_cost *out);

#endif
