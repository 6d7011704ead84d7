/* SPDX-License-Identifier: MIT */
#include "sim/compiled.h"

#include <math.h>
#include <string.h>

/* Points away from the small values where two different sizes could meet
 * (a broadcast operand as large as the output at S = 1, say). */
static const uint64_t point_b[COMPILE_POINTS] = { 3, 3, 3, 5, 5, 4 };
static const uint64_t point_s[COMPILE_POINTS] = { 7, 11, 13, 7, 11, 17 };

void llmem_compile_points(uint64_t *batch, uint64_t *seq)
{
    memcpy(batch, point_b, sizeof point_b);
    memcpy(seq, point_s, sizeof point_s);
}

static void monomials(uint64_t b, uint64_t s, uint64_t m[MONOMIALS])
{
    m[0] = 1;
    m[1] = s;
    m[2] = b;
    m[3] = b * s;
    m[4] = b * s * s;
}

static uint64_t eval(const poly *p, const uint64_t m[MONOMIALS])
{
    uint64_t v = 0;
    for (int i = 0; i < MONOMIALS; i++)
        v += (uint64_t)p->c[i] * m[i];
    return v;
}

/* Solve M c = y for the five solving points by Gaussian elimination (the
 * values are small integers, exact in doubles), and round. */
static int solve(const double y[MONOMIALS], poly *out)
{
    double a[MONOMIALS][MONOMIALS + 1];
    for (int r = 0; r < MONOMIALS; r++) {
        uint64_t m[MONOMIALS];
        monomials(point_b[r], point_s[r], m);
        for (int k = 0; k < MONOMIALS; k++)
            a[r][k] = (double)m[k];
        a[r][MONOMIALS] = y[r];
    }
    for (int col = 0; col < MONOMIALS; col++) {
        int pivot = col;
        for (int r = col + 1; r < MONOMIALS; r++)
            if (fabs(a[r][col]) > fabs(a[pivot][col]))
                pivot = r;
        if (fabs(a[pivot][col]) < 1e-9)
            return 0;
        for (int k = 0; k <= MONOMIALS; k++) {
            double t = a[col][k];
            a[col][k] = a[pivot][k];
            a[pivot][k] = t;
        }
        for (int r = 0; r < MONOMIALS; r++) {
            if (r == col)
                continue;
            double f = a[r][col] / a[col][col];
            for (int k = col; k <= MONOMIALS; k++)
                a[r][k] -= f * a[col][k];
        }
    }
    for (int k = 0; k < MONOMIALS; k++) {
        double c = a[k][MONOMIALS] / a[k][k];
        if (c < -0.5 || c > 9.0e15)
            return 0; /* sizes never have negative terms */
        out->c[k] = (int64_t)llround(c);
    }
    return 1;
}

/* The polynomial through the five solving points, checked at the sixth. */
static int fit(const sample *samples, int index_of(const sample *, int), int i, poly *out)
{
    double y[MONOMIALS];
    for (int p = 0; p < MONOMIALS; p++)
        y[p] = (double)samples[p].log[index_of(&samples[p], i)];
    if (!solve(y, out))
        return 0;
    uint64_t m[MONOMIALS];
    const sample *check = &samples[COMPILE_POINTS - 1];
    monomials(check->b, check->s, m);
    return eval(out, m) == check->log[index_of(check, i)];
}

static int forward_index(const sample *s, int i)
{
    (void)s;
    return i;
}

static int backward_index(const sample *s, int i)
{
    return s->nfwd + i;
}

static uint64_t field_of(const seg_cost *c, int k)
{
    switch (k) {
    case 0: return c->persist;
    case 1: return c->out_bytes;
    case 2: return c->bwd_start;
    case 3: return c->param_grads;
    case 4: return c->input_grad;
    case 5: return c->bwd_end;
    case 6: return (uint64_t)c->input_saved;
    default: return c->param_grads_wide;
    }
}

static int dominated(const poly *p, const poly *q)
{
    for (int k = 0; k < MONOMIALS; k++)
        if (p->c[k] > q->c[k])
            return 0;
    return 1;
}

/* Keep only the steps that can hold the phase's peak for some B and S: a
 * step whose every coefficient is at most another's never does. */
static int prune(poly *events, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        int drop = 0;
        for (int j = 0; j < n && !drop; j++)
            if (j != i && dominated(&events[i], &events[j]) &&
                (memcmp(&events[i], &events[j], sizeof events[i]) != 0 || j < i))
                drop = 1;
        if (!drop)
            events[kept++] = events[i];
    }
    return kept;
}

int llmem_compile_segment(const sample *samples, compiled_seg *out, poly *steps)
{
    const int max_steps = COMPILE_LOG;
    int nfwd = samples[0].nfwd, nbwd = samples[0].nlog - samples[0].nfwd;
    for (int p = 0; p < COMPILE_POINTS; p++)
        if (samples[p].nfwd != nfwd || samples[p].nlog != samples[0].nlog ||
            samples[p].nlog > max_steps)
            return 0; /* the structure changed with B or S */

    for (int i = 0; i < nfwd; i++)
        if (!fit(samples, forward_index, i, &steps[i]))
            return 0;
    nfwd = prune(steps, nfwd);
    if (nfwd > COMPILED_EVENTS)
        return 0;
    memcpy(out->fwd, steps, (size_t)nfwd * sizeof steps[0]);
    out->nfwd = nfwd;

    for (int i = 0; i < nbwd; i++)
        if (!fit(samples, backward_index, i, &steps[i]))
            return 0;
    nbwd = prune(steps, nbwd);
    if (nbwd > COMPILED_EVENTS)
        return 0;
    memcpy(out->bwd, steps, (size_t)nbwd * sizeof steps[0]);
    out->nbwd = nbwd;

    for (int k = 0; k < COMPILED_FIELDS; k++) {
        double y[MONOMIALS];
        uint64_t m[MONOMIALS];
        for (int p = 0; p < MONOMIALS; p++)
            y[p] = (double)field_of(&samples[p].cost, k);
        if (!solve(y, &out->field[k]))
            return 0;
        monomials(samples[COMPILE_POINTS - 1].b, samples[COMPILE_POINTS - 1].s, m);
        if (eval(&out->field[k], m) != field_of(&samples[COMPILE_POINTS - 1].cost, k))
            return 0;
    }
    return 1;
}

static uint64_t max_of(const poly *events, int n, const uint64_t m[MONOMIALS])
{
    uint64_t best = 0;
    for (int i = 0; i < n; i++) {
        uint64_t v = eval(&events[i], m);
        if (v > best)
            best = v;
    }
    return best;
}

void llmem_compiled_eval(const compiled_seg *c, uint64_t batch, uint64_t seq, seg_cost *out)
{
    uint64_t m[MONOMIALS];
    monomials(batch, seq, m);
    out->fwd_peak = max_of(c->fwd, c->nfwd, m);
    out->bwd_peak = max_of(c->bwd, c->nbwd, m);
    out->persist = eval(&c->field[0], m);
    out->out_bytes = eval(&c->field[1], m);
    out->bwd_start = eval(&c->field[2], m);
    out->param_grads = eval(&c->field[3], m);
    out->input_grad = eval(&c->field[4], m);
    out->bwd_end = eval(&c->field[5], m);
    out->input_saved = (int)eval(&c->field[6], m);
    out->param_grads_wide = eval(&c->field[7], m);
}
