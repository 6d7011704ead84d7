/* SPDX-License-Identifier: MIT */
/*
 * Compiled segments (lib/sim/compiled.h) on synthetic samples: steps whose
 * live bytes are known polynomials in batch and seq. Rows, columns and the
 * full forms lifted from them must reproduce every field and the largest
 * step at every point of their domain; samples that are not such
 * polynomials, or would need a negative or fractional coefficient, must not
 * fit. A compiled walk (estimate/walkform.h) keeps the moments that can
 * decide a phase's peak, with its gradients, or the temporaries' maximum.
 */
#include <criterion/criterion.h>

#include "estimate/walkform.h"
#include "sim/compiled.h"

#include <string.h>

#define NF 12
#define NB 10
#define NV (COST_FIELDS + NF + NB)

typedef struct truth {
    uint64_t c[NV][6]; /* 1, S, B, BS, BS^2, S^2 */
} truth;

static uint64_t rng = 88172645463325252u;

static uint64_t next(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

/* Sizes like a segment's: weights (constants), rotary tables (S),
 * activations (BS), attention scores (BS^2), SDPA's math path's causal mask
 * (S^2), and their sums. */
static void random_truth(truth *t)
{
    for (int i = 0; i < NV; i++)
        for (int k = 0; k < 6; k++)
            t->c[i][k] = next(3) == 0 ? 0 : next(k >= 4 ? 1000 : 1u << 20);
    memset(t->c[6], 0, sizeof t->c[6]); /* input_saved: 0 or 1 */
    t->c[6][0] = next(2);
}

static uint64_t value(const truth *t, int i, uint64_t b, uint64_t s)
{
    return t->c[i][0] + t->c[i][1] * s + t->c[i][2] * b + t->c[i][3] * b * s +
           t->c[i][4] * b * s * s + t->c[i][5] * s * s;
}

typedef struct sample {
    uint64_t y[NV];
    sample_view v;
} sample;

static void make_sample(const truth *t, uint64_t b, uint64_t s, sample *out)
{
    for (int i = 0; i < NV; i++)
        out->y[i] = value(t, i, b, s);
    out->v.batch = b;
    out->v.seq = s;
    out->v.y = out->y;
}

typedef struct room {
    int64_t coef[6 * NV];
    int16_t front[NF + NB];
    compiled_form f;
} room;

static compiled_form *empty_form(room *r)
{
    memset(r, 0, sizeof *r);
    r->f.coef = r->coef;
    r->f.front = r->front;
    return &r->f;
}

/* The form's answer at (b, s) against the truth's: every field, and the
 * largest forward and backward step. */
static void expect_truth(const compiled_form *f, const truth *t, uint64_t b, uint64_t s)
{
    seg_cost c;
    uint64_t fwd = 0, bwd = 0;
    llmem_form_eval(f, b, s, &c);
    for (int i = COST_FIELDS; i < COST_FIELDS + NF; i++)
        fwd = value(t, i, b, s) > fwd ? value(t, i, b, s) : fwd;
    for (int i = COST_FIELDS + NF; i < NV; i++)
        bwd = value(t, i, b, s) > bwd ? value(t, i, b, s) : bwd;
    cr_expect_eq(c.persist, value(t, 0, b, s), "persist at b%llu s%llu", (unsigned long long)b,
                 (unsigned long long)s);
    cr_expect_eq(c.out_bytes, value(t, 1, b, s));
    cr_expect_eq(c.bwd_start, value(t, 2, b, s));
    cr_expect_eq(c.param_grads, value(t, 3, b, s));
    cr_expect_eq(c.input_grad, value(t, 4, b, s));
    cr_expect_eq(c.bwd_end, value(t, 5, b, s));
    cr_expect_eq((uint64_t)c.input_saved, value(t, 6, b, s));
    cr_expect_eq(c.param_grads_wide, value(t, 7, b, s));
    cr_expect_eq(c.fwd_peak, fwd, "forward peak at b%llu s%llu", (unsigned long long)b,
                 (unsigned long long)s);
    cr_expect_eq(c.bwd_peak, bwd, "backward peak at b%llu s%llu", (unsigned long long)b,
                 (unsigned long long)s);
}

Test(compiled, regimes_of_batch_and_seq)
{
    cr_expect_eq(llmem_regime(2, 4), REGIME_GENERAL);
    cr_expect_eq(llmem_regime(64, 8192), REGIME_GENERAL);
    cr_expect_eq(llmem_regime(2, 1), REGIME_SEQ1);
    cr_expect_eq(llmem_regime(9, 3), REGIME_SEQ1 + 2);
    cr_expect_eq(llmem_regime(1, 4), REGIME_BATCH1);
    cr_expect_eq(llmem_regime(1, 1), REGIME_POINT1);
    cr_expect_eq(llmem_regime(1, 3), REGIME_POINT1 + 2);
}

Test(compiled, rows_columns_and_full_forms_reproduce_every_point)
{
    for (int trial = 0; trial < 50; trial++) {
        truth t;
        sample s[16];
        room rows[3], cols[2], full;
        random_truth(&t);
        /* rows at three seqs, each from two batches, checked at a third */
        uint64_t seqs[4] = { 4 + next(50), 100 + next(900), 2000 + next(2000), 5 + next(6000) };
        for (int r = 0; r < 3; r++) {
            make_sample(&t, 2 + next(3), seqs[r], &s[3 * r]);
            make_sample(&t, 6 + next(10), seqs[r], &s[3 * r + 1]);
            make_sample(&t, 17 + next(40), seqs[r], &s[3 * r + 2]);
            cr_assert(llmem_fit_row(&s[3 * r].v, &s[3 * r + 1].v, &s[3 * r + 2].v, NF, NB,
                                    empty_form(&rows[r])));
            for (uint64_t b = 2; b < 70; b += 7)
                expect_truth(&rows[r].f, &t, b, seqs[r]);
        }
        make_sample(&t, 3, seqs[3], &s[9]);
        const compiled_form *r3[3] = { &rows[2].f, &rows[0].f, &rows[1].f };
        cr_assert(llmem_fit_rows(r3, &s[9].v, 1, NF, NB, empty_form(&full)));
        for (int k = 0; k < 40; k++)
            expect_truth(&full.f, &t, 2 + next(100), 4 + next(9000));
        /* columns at two batches, each from three seqs, checked at a fourth */
        uint64_t batches[3] = { 2 + next(4), 7 + next(20), 30 + next(20) };
        for (int c = 0; c < 2; c++) {
            sample_view v[3];
            sample col[4];
            for (int k = 0; k < 4; k++)
                make_sample(&t, batches[c], 4 + 500 * (uint64_t)k + next(400), &col[k]);
            for (int k = 0; k < 3; k++)
                v[k] = col[k].v;
            cr_assert(llmem_fit_col(v, &col[3].v, NF, NB, empty_form(&cols[c])));
            for (uint64_t q = 4; q < 9000; q += 611)
                expect_truth(&cols[c].f, &t, batches[c], q);
        }
        make_sample(&t, batches[2], 77, &s[10]);
        const compiled_form *c2[2] = { &cols[1].f, &cols[0].f };
        cr_assert(llmem_fit_cols(c2, &s[10].v, 1, NF, NB, empty_form(&full)));
        for (int k = 0; k < 40; k++)
            expect_truth(&full.f, &t, 2 + next(100), 4 + next(9000));
    }
}

/* A value that jumps between samples (a size that is not a polynomial of
 * batch and seq, like a chunk rounded to a power of two) is caught by the
 * check sample. */
Test(compiled, a_step_that_is_no_polynomial_does_not_fit)
{
    truth t;
    sample a, b, c;
    room r;
    random_truth(&t);
    make_sample(&t, 2, 64, &a);
    make_sample(&t, 3, 64, &b);
    make_sample(&t, 9, 64, &c);
    c.y[COST_FIELDS + 3] += 4096; /* chunk 4096 bytes larger beyond batch 8 */
    cr_expect_not(llmem_fit_row(&a.v, &b.v, &c.v, NF, NB, empty_form(&r)));
    cr_expect_eq(r.f.kind, FORM_NONE);
}

Test(compiled, fractional_or_negative_coefficients_do_not_fit)
{
    truth t;
    sample a, b, c;
    room r;
    random_truth(&t);
    make_sample(&t, 2, 64, &a);
    make_sample(&t, 4, 64, &b);
    make_sample(&t, 6, 64, &c);
    b.y[0] += 1; /* slope 1/2 byte per batch ... */
    c.y[0] += 2; /* ... consistently: a line, but not of whole bytes */
    cr_expect_not(llmem_fit_row(&a.v, &b.v, &c.v, NF, NB, empty_form(&r)));
    make_sample(&t, 2, 64, &a);
    make_sample(&t, 4, 64, &b);
    make_sample(&t, 6, 64, &c);
    a.y[1] = 100; /* decreasing with batch: a negative term */
    b.y[1] = 90;
    c.y[1] = 80;
    cr_expect_not(llmem_fit_row(&a.v, &b.v, &c.v, NF, NB, empty_form(&r)));
}

/* The full form of a truth lifted from rows at seqs 4, 512 and 4096 (batches
 * 2, 5, 11), checked at batch 3, seq 77. */
static void fit_full_from_rows(const truth *t, room *full)
{
    sample s[9], check;
    room rows[3];
    uint64_t seqs[3] = { 4, 512, 4096 };
    for (int r = 0; r < 3; r++) {
        make_sample(t, 2, seqs[r], &s[3 * r]);
        make_sample(t, 5, seqs[r], &s[3 * r + 1]);
        make_sample(t, 11, seqs[r], &s[3 * r + 2]);
        cr_assert(llmem_fit_row(&s[3 * r].v, &s[3 * r + 1].v, &s[3 * r + 2].v, NF, NB,
                                empty_form(&rows[r])));
    }
    make_sample(t, 3, 77, &check);
    const compiled_form *r3[3] = { &rows[0].f, &rows[1].f, &rows[2].f };
    cr_assert(llmem_fit_rows(r3, &check.v, 1, NF, NB, empty_form(full)));
}

/* The frontier keeps, per phase, a step that holds the peak at every point:
 * steps crossing each other (a large constant against a large B S^2 term)
 * both stay. */
Test(compiled, the_frontier_keeps_every_step_that_can_peak)
{
    truth t;
    memset(&t, 0, sizeof t);
    for (int i = COST_FIELDS; i < NV; i++) {
        t.c[i][0] = (uint64_t)(NV - i) << 30;  /* weights-like: large, constant */
        t.c[i][3] = (uint64_t)i << 12;         /* activations */
        t.c[i][4] = (uint64_t)(i % 5) << 4;    /* scores */
        t.c[i][5] = (uint64_t)(i % 3) << 6;    /* a causal mask */
        if (i % 2 == 1 && i > COST_FIELDS)     /* half of the last step: never the peak */
            for (int k = 0; k < 6; k++)
                t.c[i][k] = t.c[i - 1][k] / 2;
    }
    room full;
    fit_full_from_rows(&t, &full);
    cr_expect_gt(full.f.nf, 1, "crossing steps are all kept");
    cr_expect_lt(full.f.nf, NF, "dominated steps are dropped");
    for (uint64_t b = 2; b <= 64; b *= 2)
        for (uint64_t q = 4; q <= 32768; q *= 2)
            expect_truth(&full.f, &t, b, q);
}

/* A step under a mix of two others (their average; a quarter of one and
 * three quarters of the other) never holds the peak, though neither of the
 * two is above it everywhere: it is dropped, while the two and a step above
 * every mix somewhere (the only S^2 term) stay, in forward and backward;
 * the largest step is the same at every point. */
Test(compiled, a_step_under_a_mix_of_two_others_is_dropped)
{
    truth t;
    memset(&t, 0, sizeof t);
    for (int first = COST_FIELDS; first < NV; first += NF) {
        uint64_t *a = t.c[first], *b = t.c[first + 1], *c = t.c[first + 2];
        a[0] = (uint64_t)1 << 34; /* weights-like */
        a[3] = 4096;
        b[0] = (uint64_t)1 << 24; /* scores-like */
        b[3] = 8192;
        b[4] = 256;
        c[0] = (uint64_t)1 << 20; /* a causal mask */
        c[5] = 4096;
        for (int k = 0; k < 6; k++) {
            t.c[first + 3][k] = (a[k] + b[k]) / 2;
            t.c[first + 4][k] = (a[k] + 3 * b[k]) / 4;
        }
    }
    room full;
    fit_full_from_rows(&t, &full);
    cr_expect_eq(full.f.nf, 3, "forward: the mixes dropped, the three others kept (%d)", full.f.nf);
    cr_expect_eq(full.f.nb, 3, "backward: the mixes dropped, the three others kept (%d)", full.f.nb);
    for (uint64_t b = 2; b <= 4096; b *= 2)
        for (uint64_t q = 4; q <= 65536; q *= 2)
            expect_truth(&full.f, &t, b, q);
}

/* A compiled walk's moments, each a line in B (a row at S = 1, no
 * segment), in one phase: */
enum { WALK_LOGS = 4 }; /* a row's grid and checks: B = 2, 3, 5, 11 */

static void walk_moment(walk_log *logs, const uint64_t *batch, int phase, uint64_t c0,
                        uint64_t c1, uint64_t grads)
{
    for (int k = 0; k <= WALK_LOGS; k++) {
        walk_log *l = &logs[k];
        l->phase[l->n] = (int8_t)phase;
        l->src[l->n] = -1;
        l->base[l->n] = c0 + c1 * batch[k];
        l->grads[l->n] = grads;
        l->n++;
    }
}

/* The first of a phase's largest moments is its peak, with its gradients,
 * and the temporaries' maximum counts each moment net of its gradients:
 * a moment goes only when another is above it everywhere, net of
 * gradients too, and strictly when that one comes later. */
Test(compiled, a_walk_keeps_the_moments_that_decide_a_phase)
{
    uint64_t batch[WALK_GRID + WALK_CHECKS], seq[WALK_GRID + WALK_CHECKS];
    cr_assert_eq(llmem_walkform_grid(REGIME_SEQ1, 1, batch, seq), 2);
    batch[WALK_LOGS] = 7; /* the caller's own walk, after the grid and checks */
    static walk_log logs[WALK_LOGS + 1];
    memset(logs, 0, sizeof logs);
    walk_moment(logs, batch, LLMEM_PHASE_BACKWARD, 1000, 10, 100); /* kept */
    walk_moment(logs, batch, LLMEM_PHASE_BACKWARD, 1000, 10, 50);  /* the same, less gradient: kept */
    walk_moment(logs, batch, LLMEM_PHASE_BACKWARD, 1000, 10, 100); /* the first again: dropped */
    walk_moment(logs, batch, LLMEM_PHASE_BACKWARD, 900, 10, 100);  /* below the first: dropped */
    walk_moment(logs, batch, LLMEM_PHASE_BACKWARD, 2000, 5, 10);   /* crosses the first: kept */
    walk_moment(logs, batch, LLMEM_PHASE_BACKWARD, 2000, 5, 20);   /* ties it, later: dropped */
    walk_moment(logs, batch, LLMEM_PHASE_OPTIMIZER, 3000, 0, 500); /* alone: kept */
    for (int k = 0; k <= WALK_LOGS; k++) {
        logs[k].fixed = 500;
        logs[k].positions = 0;
    }
    static walk_form f;
    const compiled_form *seg[SEG_HINTS] = { NULL };
    cr_assert(llmem_walkform_fit(&f, REGIME_SEQ1, logs, WALK_LOGS, &logs[WALK_LOGS],
                                 batch[WALK_LOGS], 1, seg));
    static const uint64_t kept_grads[] = { 100, 50, 10, 500 };
    cr_assert_eq(f.n, 4, "moments kept: %d", f.n);
    for (int k = 0; k < 4; k++)
        cr_expect_eq(f.grads[k], kept_grads[k], "moment %d: gradients %llu", k,
                     (unsigned long long)f.grads[k]);
    cr_expect_eq(f.phase_end[LLMEM_PHASE_BACKWARD - 1], 3);
    cr_expect_eq(f.phase_end[LLMEM_PHASE_OPTIMIZER - 1], 4);
    cr_expect_eq(f.total[2][0], 2000, "the earlier of the tied moments stays");
}

/* Three rows fix a quadratic in S through their seqs whatever the truth:
 * a term beyond the monomials (S^3 here) still gives rows, and the sample
 * off them must refuse the full form. */
Test(compiled, a_full_form_beyond_the_monomials_is_refused_off_its_rows)
{
    truth t;
    sample s[10];
    room rows[3], full;
    uint64_t seqs[4] = { 8, 64, 512, 100 };
    random_truth(&t);
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 3; k++) {
            make_sample(&t, 2 + 3 * (uint64_t)k, seqs[r], &s[3 * r + k]);
            s[3 * r + k].y[COST_FIELDS + 2] += seqs[r] * seqs[r] * seqs[r];
        }
        cr_assert(llmem_fit_row(&s[3 * r].v, &s[3 * r + 1].v, &s[3 * r + 2].v, NF, NB,
                                empty_form(&rows[r])));
    }
    make_sample(&t, 3, seqs[3], &s[9]);
    s[9].y[COST_FIELDS + 2] += seqs[3] * seqs[3] * seqs[3];
    const compiled_form *r3[3] = { &rows[0].f, &rows[1].f, &rows[2].f };
    cr_expect_not(llmem_fit_rows(r3, &s[9].v, 1, NF, NB, empty_form(&full)));
    cr_expect_eq(full.f.kind, FORM_NONE);
}
