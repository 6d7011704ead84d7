/* SPDX-License-Identifier: MIT */
/*
 * The revised simplex method both of the packer's linear programs run
 * (lp.c): maximize c.x subject to A x + l s = b, x, s >= 0, one logical
 * column l e_i a row (+1 a slack, -1 a surplus), from a given feasible basis.
 * A dense inverse of the basis (Gauss-Jordan with partial pivoting, redone
 * every 64 pivots), sparse structural columns, Dantzig's rule and Bland's
 * after a run of degenerate pivots.
 */
#ifndef LLMEM_PACK_SIMPLEX_H
#define LLMEM_PACK_SIMPLEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct simplex {
    uint32_t m;            /* rows */
    size_t n;              /* structural columns */
    const size_t *start;   /* [n + 1]: column j's entries in row/val (a row may repeat: they add) */
    const uint32_t *row;
    const double *val;
    const double *cost;    /* [n]: the objective's coefficients (logicals cost 0) */
    double logical;        /* row i's logical column is logical x e_i */
    const double *b;       /* [m] */
    int clamp;             /* hold the basic values at >= 0 against rounding */
    double *binv;          /* [m][m] */
    double *xb, *pi, *d;   /* [m]: basic values, duals, the entering column in the basis */
    size_t *basis;         /* [m]: j < n a structural column, n + i row i's logical */
    double *work;          /* [m][2m] + [m] */
} simplex;

struct llmem_ctx;

/* The method's own arrays for s->m rows (binv zeroed; xb, pi, d, basis and
 * work): 1, or 0 when out of memory (what was allocated is still freed by
 * llmem_simplex_free). */
int llmem_simplex_alloc(struct llmem_ctx *ctx, simplex *s);
void llmem_simplex_free(struct llmem_ctx *ctx, simplex *s);

/* binv = B^-1 and xb = B^-1 b; 0 when the basis is singular. */
int llmem_simplex_invert(simplex *s);
/* pi = c_B B^-1. */
void llmem_simplex_duals(simplex *s);
/* Pivots from the current basis (binv and xb set); 1 at an optimum, 0 when
 * it gave up (an iteration limit, a singular basis, unbounded). pi holds the
 * duals of the last basis priced. */
int llmem_simplex_run(simplex *s);
/* After phase 1: each basic column in [lo, hi) (an artificial, left at 0)
 * swapped for the logical of the row where its row of the inverse is
 * largest (that logical is nonbasic: a basic one's entry there is 0), the
 * basis inverted again; 0 when singular. */
int llmem_simplex_drive_out(simplex *s, size_t lo, size_t hi);

#endif
