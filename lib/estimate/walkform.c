/* SPDX-License-Identifier: MIT */
#include "estimate/walkform.h"

#include <string.h>

/* Grid points first, then the checks: small, so that every value is far
 * from 64 bits, and the checks at odd points (a wrong halving shows there). */
int llmem_walkform_grid(int regime, uint64_t seq, uint64_t batch[WALK_GRID + WALK_CHECKS],
                        uint64_t seqs[WALK_GRID + WALK_CHECKS])
{
    static const uint64_t full_b[] = { 2, 3, 2, 3, 2, 3, 5, 7 }, full_s[] = { 4, 4, 5, 5, 6, 6, 9, 13 };
    static const uint64_t row_b[] = { 2, 3, 5, 11 }, col_s[] = { 4, 5, 6, 9, 17 };
    if (regime == REGIME_GENERAL) {
        memcpy(batch, full_b, sizeof full_b);
        memcpy(seqs, full_s, sizeof full_s);
        return 6;
    }
    if (regime == REGIME_BATCH1) {
        for (int i = 0; i < 5; i++) {
            batch[i] = 1;
            seqs[i] = col_s[i];
        }
        return 3;
    }
    if ((regime >= REGIME_SEQ1 && regime < REGIME_SEQ1 + 3) || regime == REGIME_ROW_AT) {
        for (int i = 0; i < 4; i++) {
            batch[i] = row_b[i];
            seqs[i] = seq;
        }
        return 2;
    }
    return 0; /* a point: nothing to fit */
}

static int form_kind(int regime)
{
    return regime == REGIME_GENERAL ? FORM_FULL : regime == REGIME_BATCH1 ? FORM_COL : FORM_ROW;
}

/* A log's values as one vector (WALK_VALUES). */
static uint64_t log_value(const walk_log *l, int i)
{
    if (i < l->n)
        return l->base[i];
    if (i < 2 * l->n)
        return l->grads[i - l->n];
    return i == 2 * l->n ? l->fixed : i == 2 * l->n + 1 ? l->stash : l->end_of_backward;
}

/* The line c0 + c1 B through values at B = 2 and 3 (wrapping). */
static void line(uint64_t at2, uint64_t at3, int64_t c[2])
{
    uint64_t slope = at3 - at2;
    c[0] = (int64_t)(at2 - 2 * slope);
    c[1] = (int64_t)slope;
}

/* One value's coefficients from the grid's values y (llmem_walkform_grid's
 * order), with sim/compiled.c's exact interpolation in S. */
static int fit_value(int kind, const uint64_t *y, int64_t c[6])
{
    static const uint64_t seqs[3] = { 4, 5, 6 };
    if (kind == FORM_ROW) { /* B = 2, 3 */
        line(y[0], y[1], c);
        return 1;
    }
    if (kind == FORM_COL) /* S = 4, 5, 6 */
        return llmem_quadratic_through(4, 5, 6, (int64_t)y[0], (int64_t)y[1], (int64_t)y[2], c);
    /* a line in B at each of S = 4, 5, 6, then the full form through them */
    int64_t icpt[3], slope[3];
    for (int k = 0; k < 3; k++) {
        int64_t l[2];
        line(y[2 * k], y[2 * k + 1], l);
        icpt[k] = l[0];
        slope[k] = l[1];
    }
    return llmem_full_through_rows(seqs, icpt, slope, c);
}

/* The moments are the same in every log: count, phases, sources and the
 * parameters gathered at each (bytes of parameters: no batch or seq in them). */
static int same_moments(const walk_log *a, const walk_log *b)
{
    return !a->overflow && !b->overflow && a->n == b->n && a->positions == b->positions &&
           memcmp(a->phase, b->phase, (size_t)a->n) == 0 && memcmp(a->src, b->src, (size_t)a->n) == 0 &&
           memcmp(a->gathered, b->gathered, (size_t)a->n * sizeof a->gathered[0]) == 0;
}

/* The log's values fitted: base[n], grads[n], fixed, stash, end. */
typedef struct fitted {
    int n, kind;
    int64_t c[WALK_VALUES(WALK_MOMENTS)][6];
} fitted;

static int check_at(const fitted *f, const walk_log *l, uint64_t batch, uint64_t seq)
{
    uint64_t m[6];
    int terms = llmem_form_terms(f->kind);
    llmem_form_monomials(f->kind, batch, seq, m);
    for (int i = 0; i < WALK_VALUES(f->n); i++)
        if (llmem_form_value(f->c[i], m, terms) != log_value(l, i))
            return 0;
    return 1;
}

static int constant(const int64_t c[6])
{
    return c[1] == 0 && c[2] == 0 && c[3] == 0 && c[4] == 0 && c[5] == 0;
}

/* Coefficients of real byte counts are far below this (64 PiB a unit of a
 * monomial): beyond it a fit is refused, so a stored coefficient is the
 * true one and differences and shifts below cannot wrap. */
#define COEF_BOUND ((int64_t)1 << 56)

static int bounded(const int64_t c[6])
{
    for (int i = 0; i < 6; i++)
        if (c[i] > COEF_BOUND || c[i] < -COEF_BOUND)
            return 0;
    return 1;
}

/* Each moment with each step of its segment's frontier. */
static int expand(walk_form *f, const fitted *v, const walk_log *at,
                  const compiled_form *const seg[SEG_HINTS])
{
    int terms = llmem_form_terms(f->kind);
    f->n = 0;
    for (int k = 0; k < v->n; k++) {
        const int64_t *base = v->c[k];
        if (!constant(v->c[v->n + k]))
            return 0;
        int first = 0, last = 0, src = at->src[k];
        const compiled_form *g = NULL;
        if (src >= 0) {
            g = seg[src / 2];
            if (g == NULL || g->kind != f->kind)
                return 0;
            first = src % 2 ? g->nf : 0;
            last = src % 2 ? g->nf + g->nb : g->nf;
        }
        /* no step: a segment without a backward peaks at 0, the base alone */
        for (int j = first; j < (last > first ? last : first + 1); j++) {
            if (f->n == WALK_TERMS)
                return 0;
            int64_t *t = f->total[f->n];
            memset(t, 0, 6 * sizeof *t);
            for (int i = 0; i < terms; i++) {
                uint64_t step = last > first ? (uint64_t)g->coef[(size_t)g->front[j] * (size_t)terms + (size_t)i] : 0;
                t[i] = (int64_t)((uint64_t)base[i] + step);
            }
            if (!bounded(t))
                return 0;
            f->phase[f->n] = at->phase[k];
            f->grads[f->n] = (uint64_t)v->c[v->n + k][0];
            f->gathered[f->n] = at->gathered[k];
            f->n++;
        }
    }
    /* phase by phase, in time order, as the walk runs */
    for (int p = 0; p < 4; p++)
        f->phase_end[p] = 0;
    for (int k = 0; k < f->n; k++) {
        if (f->phase[k] < 1 || f->phase[k] > 4 || (k > 0 && f->phase[k] < f->phase[k - 1]))
            return 0;
        f->phase_end[f->phase[k] - 1] = k + 1;
    }
    for (int p = 1; p < 4; p++)
        if (f->phase_end[p] < f->phase_end[p - 1])
            f->phase_end[p] = f->phase_end[p - 1];
    memcpy(f->fixed, v->c[2 * v->n], sizeof f->fixed);
    memcpy(f->stash, v->c[2 * v->n + 1], sizeof f->stash);
    memcpy(f->end_of_backward, v->c[2 * v->n + 2], sizeof f->end_of_backward);
    return 1;
}

/* Moment j less moment k, written around the regime's corner
 * (llmem_form_shift): 0 when a coefficient is too large to shift. */
static int shifted_gap(const walk_form *f, int j, int k, int64_t t[6])
{
    int64_t d[6];
    for (int i = 0; i < 6; i++)
        d[i] = f->total[j][i] - f->total[k][i]; /* bounded: no wrap */
    return llmem_form_shift(f->kind, d, t);
}

/* Whether moment j is, everywhere in the regime, at least moment k, and
 * at least as large net of its gradients (the temporaries' maximum);
 * strictly larger when j comes later, since the first of a phase's largest
 * moments is its peak, with its gradients. */
static int dominates(const walk_form *f, int j, int k)
{
    int64_t t[6];
    if (!shifted_gap(f, j, k, t))
        return 0;
    for (int i = 1; i < 6; i++)
        if (t[i] < 0)
            return 0;
    int64_t net = (int64_t)(f->grads[j] - f->grads[k]); /* gradients stay under 2^62 */
    return t[0] >= (net > 0 ? net : 0) && (j < k || t[0] > 0);
}

/* Drop the moments that never decide their phase's peak nor the
 * temporaries' maximum: an estimate then evaluates only the others.
 * Domination is transitive and never mutual, so every dropped moment has a
 * kept one above it. */
static void prune(walk_form *f)
{
    uint8_t keep[WALK_TERMS];
    for (int p = 0, start = 0; p < 4; start = f->phase_end[p++])
        for (int k = start; k < f->phase_end[p]; k++) {
            keep[k] = 1;
            for (int j = start; j < f->phase_end[p] && keep[k]; j++)
                keep[k] = j == k || !dominates(f, j, k);
        }
    int n = 0;
    for (int p = 0, k = 0; p < 4; p++) {
        for (; k < f->phase_end[p]; k++) {
            if (!keep[k])
                continue;
            if (n != k) {
                f->phase[n] = f->phase[k];
                f->grads[n] = f->grads[k];
                f->gathered[n] = f->gathered[k];
                memcpy(f->total[n], f->total[k], sizeof f->total[n]);
            }
            n++;
        }
        f->phase_end[p] = n;
    }
    f->n = n;
}

/* Whether moment j is at least moment k everywhere in the regime, and
 * above it somewhere or the first of the two (so that of equals one stays). */
static int peak_over(const walk_form *f, int j, int k)
{
    int64_t t[6];
    if (!shifted_gap(f, j, k, t))
        return 0;
    int above = 0;
    for (int i = 0; i < 6; i++) {
        if (t[i] < 0)
            return 0;
        above |= t[i] > 0;
    }
    return above || j < k;
}

void llmem_walkform_peak_set(walk_form *f)
{
    f->npeak = 0;
    for (int k = 0; k < f->n; k++) {
        int under = 0;
        for (int j = 0; j < f->n && !under; j++)
            under = j != k && peak_over(f, j, k);
        if (!under)
            f->peak[f->npeak++] = (int8_t)k;
    }
}

int llmem_walkform_fit(walk_form *f, int regime, const walk_log *logs, int nlogs,
                       const walk_log *at, uint64_t b, uint64_t s,
                       const compiled_form *const seg[SEG_HINTS])
{
    uint64_t batch[WALK_GRID + WALK_CHECKS], seq[WALK_GRID + WALK_CHECKS], y[WALK_GRID];
    int grid = llmem_walkform_grid(regime, s, batch, seq);
    if (grid == 0 || nlogs != grid + WALK_CHECKS)
        return 0;
    for (int k = 0; k < nlogs; k++)
        if (!same_moments(&logs[k], at))
            return 0;
    fitted v;
    v.n = at->n;
    v.kind = form_kind(regime);
    for (int i = 0; i < WALK_VALUES(v.n); i++) {
        for (int k = 0; k < grid; k++)
            y[k] = log_value(&logs[k], i);
        memset(v.c[i], 0, sizeof v.c[i]);
        if (!fit_value(v.kind, y, v.c[i]) || !bounded(v.c[i]))
            return 0;
    }
    for (int k = grid; k < nlogs; k++)
        if (!check_at(&v, &logs[k], batch[k], seq[k]))
            return 0;
    if (!check_at(&v, at, b, s))
        return 0;
    f->kind = v.kind;
    if (!expand(f, &v, at, seg))
        return 0;
    prune(f);
    f->npeak = -1; /* made by the first row that needs it */
    return 1;
}
