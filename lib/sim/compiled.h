/* SPDX-License-Identifier: MIT */
/*
 * Compiled segments: the cost of a segment as polynomials in batch (B) and
 * seq (S), fitted from simulations the caller asked for anyway.
 *
 * Within a regime (B = 1 or B >= 2, crossed with S = 1, 2, 3 or S >= 4) a
 * segment's tape records the same tensors and operations whatever B and S:
 * builders branch on B = 1 only, and two sizes can only coincide (a
 * broadcast operand as large as the output) below S = 4. Every size is a sum
 * of the monomials 1, S, S^2, B, B*S and B*S^2 with nonnegative integer
 * coefficients (weights, rotary tables, SDPA's math path's causal mask,
 * activations, attention scores), so
 * the live bytes at every step of the simulation are too, and so is every
 * field of its seg_cost. Each step's polynomial is then found exactly from a
 * few samples:
 *
 * - a row: S fixed, linear in B, from two batches, checked at a third;
 * - a column: B fixed, quadratic in S, from three seqs, checked at a fourth;
 * - the whole regime: from three rows (or two columns), checked at a sample
 *   off them.
 *
 * Every division is exact (checked) and every coefficient nonnegative, or the
 * fit fails and the caller keeps simulating. A form keeps, per phase, only
 * the steps that can hold its peak somewhere in its domain (a Pareto
 * frontier of the polynomials shifted to the domain's corner), so an
 * estimate evaluates a handful of polynomials instead of simulating.
 */
#ifndef LLMEM_SIM_COMPILED_H
#define LLMEM_SIM_COMPILED_H

#include "sim/graph.h"

#define COST_FIELDS 9   /* persist, out, bwd_start, param_grads, input_grad, bwd_end,
                           input_saved, param_grads_wide, cached */
#define FORM_FRONTIER 48 /* steps a form may keep per phase */
#define FIT_MAX_CHECKS 8 /* samples llmem_fit_rows and llmem_fit_cols check a form at */

/* Regimes: where the tape's structure is fixed (see above). From a sliding
 * window on, the layers' mask is padded to a multiple of 8 and SDPA's
 * log-sum-exp to one of 32 (layers/common.c): sizes are not polynomials in S
 * there, but at one seq they still are lines in B, so such a step takes the
 * regimes of one seq (the caller keys them by it). */
enum regime {
    REGIME_GENERAL = 0,  /* B >= 2, S >= 4: polynomials in 1, S, S^2, B, BS, BS^2 */
    REGIME_SEQ1 = 1,     /* B >= 2, S = 1, 2, 3 (REGIME_SEQ1 - 1 + S): lines in B */
    REGIME_BATCH1 = 4,   /* B = 1, S >= 4: quadratics in S */
    REGIME_ROW_AT = 5,   /* B >= 2 at one seq the caller names: lines in B */
    REGIME_POINT1 = 6,   /* B = 1, S = 1, 2, 3 (REGIME_POINT1 - 1 + S): one value each */
    REGIME_POINT_AT = 9  /* B = 1 at one seq the caller names: one value */
};

static inline int llmem_regime(uint64_t batch, uint64_t seq)
{
    int small = seq < 4 ? (int)seq : 0;
    if (batch == 1)
        return small ? REGIME_POINT1 - 1 + small : REGIME_BATCH1;
    return small ? REGIME_SEQ1 - 1 + small : REGIME_GENERAL;
}

/* The regime of (batch, seq) when the tape's structure may change at every
 * seq (at_one_seq): a row or a point of that seq; else llmem_regime's. */
static inline int llmem_regime_of(uint64_t batch, uint64_t seq, int at_one_seq)
{
    if (at_one_seq)
        return batch == 1 ? REGIME_POINT_AT : REGIME_ROW_AT;
    return llmem_regime(batch, seq);
}

/* Whether a regime holds one point (its cost is all there is to keep). */
static inline int llmem_regime_is_point(int regime)
{
    return regime >= REGIME_POINT1;
}

/* One simulated sample: the seg_cost fields, then the live bytes of each
 * forward step, then of each backward step (graph.h's events). */
typedef struct sample_view {
    uint64_t batch, seq;
    const uint64_t *y;
} sample_view;

enum form_kind {
    FORM_NONE = 0,
    FORM_ROW,  /* S = at: c0 + c1 B */
    FORM_COL,  /* B = at: c0 + c1 S + c2 S^2 */
    FORM_FULL  /* c0 + c1 S + c2 B + c3 BS + c4 BS^2 + c5 S^2 */
};

/* A compiled form of a segment with n = COST_FIELDS + nfwd + nbwd values. */
typedef struct compiled_form {
    int kind;
    uint64_t at;
    int64_t *coef;   /* n x llmem_form_terms(kind) coefficients, room of the caller's */
    int16_t *front;  /* the steps kept: nf forward, then nb backward (value indices) */
    int nf, nb;
} compiled_form;

/* Coefficients per value of a form kind (2, 3 or 6). */
int llmem_form_terms(int kind);

/* Fit a form into out, whose coef (n x terms) and front (nfwd + nbwd) the
 * caller provides. Rows: a, b at two batches, check at a third, all at one
 * seq. Columns: s[0..2] and check at four seqs, one batch. Returns 1, or 0
 * when the samples do not fit (out->kind is then FORM_NONE). */
int llmem_fit_row(const sample_view *a, const sample_view *b, const sample_view *check,
                  int nfwd, int nbwd, compiled_form *out);
int llmem_fit_col(const sample_view *s, const sample_view *check, int nfwd, int nbwd,
                  compiled_form *out);
/* The whole general regime from three rows at distinct seqs, or from two
 * columns at distinct batches, checked at every sample of checks (at least
 * one, off the rows or columns; at most FIT_MAX_CHECKS: past it only the
 * first FIT_MAX_CHECKS are checked, so a caller asserts its bound). */
int llmem_fit_rows(const compiled_form *rows[3], const sample_view *checks, int nchecks,
                   int nfwd, int nbwd, compiled_form *out);
int llmem_fit_cols(const compiled_form *cols[2], const sample_view *checks, int nchecks,
                   int nfwd, int nbwd, compiled_form *out);

/* The monomials of a form kind at (batch, seq), in its coefficients' order
 * (full: 1, S, B, BS, BS^2, S^2), and a value from them. */
void llmem_form_monomials(int kind, uint64_t batch, uint64_t seq, uint64_t m[6]);

static inline uint64_t llmem_form_value(const int64_t *c, const uint64_t *m, int terms)
{
    uint64_t v = (uint64_t)c[0];
    for (int k = 1; k < terms; k++)
        v += (uint64_t)c[k] * m[k];
    return v;
}

/* The same, written out for each kind (what compilers do not unroll at -O2). */
static inline uint64_t llmem_form_value2(const int64_t *c, const uint64_t *m)
{
    return (uint64_t)c[0] + (uint64_t)c[1] * m[1];
}

static inline uint64_t llmem_form_value3(const int64_t *c, const uint64_t *m)
{
    return (uint64_t)c[0] + (uint64_t)c[1] * m[1] + (uint64_t)c[2] * m[2];
}

static inline uint64_t llmem_form_value6(const int64_t *c, const uint64_t *m)
{
    return (uint64_t)c[0] + (uint64_t)c[1] * m[1] + (uint64_t)c[2] * m[2] +
           (uint64_t)c[3] * m[3] + (uint64_t)c[4] * m[4] + (uint64_t)c[5] * m[5];
}

/* A value of a row or a full form at one seq, as a line in the batch:
 * a + b B (wrapping, as the values). */
static inline void llmem_form_line(int kind, const int64_t *c, uint64_t seq, uint64_t *a,
                                   uint64_t *b)
{
    if (kind == FORM_ROW) {
        *a = (uint64_t)c[0];
        *b = (uint64_t)c[1];
        return;
    }
    uint64_t ss = seq * seq;
    *a = (uint64_t)c[0] + (uint64_t)c[1] * seq + (uint64_t)c[5] * ss;
    *b = (uint64_t)c[2] + (uint64_t)c[3] * seq + (uint64_t)c[4] * ss;
}

/* A polynomial of a form kind written around the corner of its domain
 * (rows: B = 2 + x; columns: S = 4 + y; full: both), as coefficients of
 * rows' 1, x; columns' 1, y, y^2; full forms' 1, y, x, xy, y^2, xy^2, the
 * rest 0 (x, y >= 0 there; forms of one kind compare slot by slot): where
 * all but the first are nonnegative, the first is its minimum over the
 * domain. 0 when a coefficient's magnitude passes 2^56 (the shift could
 * overflow). */
int llmem_form_shift(int kind, const int64_t *c, int64_t t[6]);

/* Newton's divided differences through (x_k, y_k), k = 0, 1, 2, x ascending:
 * c0 + c1 x + c2 x^2, every division exact (else 0). */
int llmem_quadratic_through(uint64_t x0, uint64_t x1, uint64_t x2, int64_t y0, int64_t y1,
                            int64_t y2, int64_t c[3]);

/* A full form's coefficients (1, S, B, BS, BS^2, S^2) from rows at three
 * seqs, ascending: intercepts and slopes in B; every division exact (else 0). */
int llmem_full_through_rows(const uint64_t seq[3], const int64_t icpt[3], const int64_t slope[3],
                            int64_t k[6]);

/* The segment's cost at (batch, seq), which must lie in the form's domain. */
void llmem_form_eval(const compiled_form *f, uint64_t batch, uint64_t seq, seg_cost *out);

/* A seg_cost and a simulation's events as one sample vector y. */
void llmem_sample_pack(const seg_cost *c, const uint64_t *events, int nevents, uint64_t *y);

#endif
