/* SPDX-License-Identifier: MIT */
#include "sim/compiled.h"

#include <string.h>

int llmem_form_terms(int kind)
{
    return kind == FORM_ROW ? 2 : kind == FORM_COL ? 3 : 6;
}

/* ---- exact division by a divisor shared by every value of a fit ---------- */

/* d = 2^shift x odd: x / d is exact iff x has shift low zero bits and
 * (x >> shift) x odd^-1 (mod 2^64) lies within +-INT64_MAX / odd (Granlund
 * and Montgomery, "Division by invariant integers using multiplication",
 * 1994, section 9): a multiply instead of a hardware division per value. */
typedef struct divisor {
    uint64_t inv;
    int64_t lim;
    unsigned shift;
} divisor;

static divisor make_divisor(uint64_t d)
{
    divisor v;
    v.shift = 0;
    while ((d & 1) == 0) {
        d >>= 1;
        v.shift++;
    }
    uint64_t x = d; /* Newton's iteration for the inverse mod 2^64: 3, 6, ..., 96 bits */
    for (int i = 0; i < 5; i++)
        x *= 2 - d * x;
    v.inv = x;
    v.lim = (int64_t)(INT64_MAX / d);
    return v;
}

/* Values are byte counts below 2^62 (estimate.c's llmem_step_overflows
 * bounds every step) and their differences; anything else fails. */
static int exact_div(const divisor *v, int64_t x, int64_t *q)
{
    uint64_t mag = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    if (mag >> 62 || (mag & (((uint64_t)1 << v->shift) - 1)) != 0)
        return 0;
    mag >>= v->shift;
    int64_t r = (int64_t)(mag * v->inv);
    if (r > v->lim || r < -v->lim)
        return 0;
    *q = x < 0 ? -r : r;
    return 1;
}

/* Wrapping arithmetic: exact whenever the true value fits, which the checks
 * at the samples confirm. */
static int64_t wsub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static int64_t wmul(int64_t a, uint64_t b)
{
    return (int64_t)((uint64_t)a * b);
}

/* ---- monomials and evaluation -------------------------------------------- */

void llmem_form_monomials(int kind, uint64_t batch, uint64_t seq, uint64_t m[6])
{
    switch (kind) {
    case FORM_ROW:
        m[0] = 1;
        m[1] = batch;
        break;
    case FORM_COL:
        m[0] = 1;
        m[1] = seq;
        m[2] = seq * seq;
        break;
    default:
        m[0] = 1;
        m[1] = seq;
        m[2] = batch;
        m[3] = batch * seq;
        m[4] = batch * seq * seq;
        m[5] = seq * seq;
        break;
    }
}


/* ---- the frontier of steps that can hold a phase's peak ------------------ */

/* A step never holds the peak when another's coefficients around the
 * domain's corner (llmem_form_shift) are all at least its own. */
#define SHIFTED 6
#define SHIFT_BOUND ((int64_t)1 << 56) /* no overflow below this */

int llmem_form_shift(int kind, const int64_t *c, int64_t t[6])
{
    int terms = llmem_form_terms(kind);
    for (int k = 0; k < terms; k++)
        if (c[k] > SHIFT_BOUND || c[k] < -SHIFT_BOUND)
            return 0;
    switch (kind) {
    case FORM_ROW: /* B = 2 + x */
        t[0] = c[0] + 2 * c[1];
        t[1] = c[1];
        t[2] = t[3] = t[4] = t[5] = 0;
        break;
    case FORM_COL: /* S = 4 + y */
        t[0] = c[0] + 4 * c[1] + 16 * c[2];
        t[1] = c[1] + 8 * c[2];
        t[2] = c[2];
        t[3] = t[4] = t[5] = 0;
        break;
    default: /* B = 2 + x, S = 4 + y: 1, y, x, xy, y^2, xy^2 */
        t[0] = c[0] + 4 * c[1] + 2 * c[2] + 8 * c[3] + 32 * c[4] + 16 * c[5];
        t[1] = c[1] + 2 * c[3] + 16 * c[4] + 8 * c[5];
        t[2] = c[2] + 4 * c[3] + 16 * c[4];
        t[3] = c[3] + 8 * c[4];
        t[4] = 2 * c[4] + c[5];
        t[5] = c[4];
        break;
    }
    return 1;
}

static int at_most(const int64_t *p, const int64_t *q)
{
    for (int k = 0; k < SHIFTED; k++)
        if (p[k] > q[k])
            return 0;
    return 1;
}

typedef struct frontier {
    int16_t *index;
    int n;
    int64_t shifted[FORM_FRONTIER][SHIFTED];
    int bounded[FORM_FRONTIER]; /* shifted is valid (coefficients under SHIFT_BOUND) */
} frontier;

/* Add value i with coefficients c; 0 when the frontier overflows. */
static int frontier_add(frontier *f, int kind, int16_t i, const int64_t *c)
{
    int64_t t[SHIFTED];
    int ok = llmem_form_shift(kind, c, t);
    if (ok)
        for (int j = 0; j < f->n; j++)
            if (f->bounded[j] && at_most(t, f->shifted[j]))
                return 1; /* never above step j */
    int kept = 0;
    for (int j = 0; j < f->n; j++) {
        if (ok && f->bounded[j] && at_most(f->shifted[j], t))
            continue;
        if (kept != j) {
            f->index[kept] = f->index[j];
            f->bounded[kept] = f->bounded[j];
            memcpy(f->shifted[kept], f->shifted[j], sizeof t);
        }
        kept++;
    }
    if (kept == FORM_FRONTIER)
        return 0;
    f->index[kept] = i;
    f->bounded[kept] = ok;
    memcpy(f->shifted[kept], t, sizeof t);
    f->n = kept + 1;
    return 1;
}

/* A product of two int64 as a sign and a 128-bit magnitude, exactly (C99
 * has no 128-bit type). */
typedef struct wide {
    int neg;
    uint64_t hi, lo;
} wide;

static wide mul_wide(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    uint64_t x0 = x & 0xffffffffu, x1 = x >> 32, y0 = y & 0xffffffffu, y1 = y >> 32;
    uint64_t p00 = x0 * y0, p01 = x0 * y1, p10 = x1 * y0;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    wide w = { (a < 0) != (b < 0), x1 * y1 + (p01 >> 32) + (p10 >> 32) + (mid >> 32),
               (p00 & 0xffffffffu) | (mid << 32) };
    w.neg &= (w.hi | w.lo) != 0;
    return w;
}

/* Whether a x b < c x d. */
static int product_below(int64_t a, int64_t b, int64_t c, int64_t d)
{
    wide p = mul_wide(a, b), q = mul_wide(c, d);
    if (p.neg != q.neg)
        return p.neg;
    int less = p.hi != q.hi ? p.hi < q.hi : p.lo < q.lo; /* magnitudes */
    int equal = p.hi == q.hi && p.lo == q.lo;
    return !equal && (p.neg ? !less : less);
}

/* Whether step k lies, everywhere in the domain, at or below a mix
 * lambda i + (1 - lambda) j of two others (0 <= lambda <= 1), coefficient
 * by coefficient around the corner: it is then never above the larger of
 * the two. lambda's bounds are fractions n / d, d > 0. */
static int below_mix(const int64_t *k, const int64_t *i, const int64_t *j)
{
    int64_t lo_n = 0, lo_d = 1, hi_n = 1, hi_d = 1;
    for (int m = 0; m < SHIFTED; m++) {
        int64_t a = i[m] - j[m], b = k[m] - j[m]; /* lambda a >= b; under 2^62: no wrap */
        if (a == 0) {
            if (b > 0)
                return 0;
        } else if (a > 0) {
            if (product_below(lo_n, a, b, lo_d)) { /* lambda >= b / a */
                lo_n = b;
                lo_d = a;
            }
        } else if (product_below(-b, hi_d, hi_n, -a)) { /* lambda <= -b / -a */
            hi_n = -b;
            hi_d = -a;
        }
    }
    return !product_below(hi_n, lo_d, lo_n, hi_d);
}

/* Frontiers this small are reduced to steps no mix of two others covers
 * (their cubic cost stays a few microseconds); larger ones keep the pairwise
 * test alone. */
#define MIX_FRONTIER 12

/* Drop the steps under a mix of two kept others: an estimate evaluates
 * fewer polynomials, and the maximum is the same. Each is tested against
 * the steps kept so far, so the dropped always have kept ones above. */
static void frontier_mix(frontier *f)
{
    if (f->n > MIX_FRONTIER)
        return;
    for (int k = 0; k < f->n;) {
        int covered = 0;
        for (int i = 0; i < f->n && !covered; i++)
            for (int j = i + 1; j < f->n && !covered; j++)
                covered = i != k && j != k && f->bounded[i] && f->bounded[j] && f->bounded[k] &&
                          below_mix(f->shifted[k], f->shifted[i], f->shifted[j]);
        if (!covered) {
            k++;
            continue;
        }
        f->n--;
        memmove(&f->index[k], &f->index[k + 1], (size_t)(f->n - k) * sizeof f->index[0]);
        memmove(&f->bounded[k], &f->bounded[k + 1], (size_t)(f->n - k) * sizeof f->bounded[0]);
        memmove(f->shifted[k], f->shifted[k + 1], (size_t)(f->n - k) * sizeof f->shifted[0]);
    }
}

/* ---- fitting --------------------------------------------------------------- */

/* What every fit shares: the values it walks through, the frontiers it
 * builds, the samples it is checked at. */
typedef struct fit {
    compiled_form *out;
    int n, nfwd, terms;
    frontier fwd, bwd;
    const sample_view *checks;
    int nchecks;
    uint64_t check_m[FIT_MAX_CHECKS][6]; /* the checks' monomials */
} fit;

static void fit_begin(fit *f, compiled_form *out, int kind, uint64_t at, int nfwd, int nbwd,
                      const sample_view *checks, int nchecks)
{
    f->out = out;
    out->kind = FORM_NONE;
    out->at = at;
    f->n = COST_FIELDS + nfwd + nbwd;
    f->nfwd = nfwd;
    f->terms = llmem_form_terms(kind);
    f->fwd.index = out->front;
    f->fwd.n = 0;
    f->bwd.index = out->front + nfwd;
    f->bwd.n = 0;
    f->checks = checks;
    f->nchecks = nchecks > FIT_MAX_CHECKS ? FIT_MAX_CHECKS : nchecks;
    for (int s = 0; s < f->nchecks; s++)
        llmem_form_monomials(kind, checks[s].batch, checks[s].seq, f->check_m[s]);
}

/* Value i's coefficients c are in: check them, store them, keep the step
 * if it can hold a peak. */
static int fit_value(fit *f, int kind, int i, const int64_t *c)
{
    for (int k = 0; k < f->terms; k++)
        if (c[k] < 0)
            return 0; /* sizes never have negative terms */
    for (int s = 0; s < f->nchecks; s++)
        if (llmem_form_value(c, f->check_m[s], f->terms) != f->checks[s].y[i])
            return 0;
    memcpy(f->out->coef + (size_t)i * (size_t)f->terms, c, (size_t)f->terms * sizeof *c);
    if (i < COST_FIELDS)
        return 1;
    if (i < COST_FIELDS + f->nfwd)
        return frontier_add(&f->fwd, kind, (int16_t)i, c);
    return frontier_add(&f->bwd, kind, (int16_t)i, c);
}

static int fit_end(fit *f, int kind)
{
    compiled_form *out = f->out;
    frontier_mix(&f->fwd);
    frontier_mix(&f->bwd);
    /* The backward frontier sits right after the forward one. */
    memmove(out->front + f->fwd.n, f->bwd.index, (size_t)f->bwd.n * sizeof *out->front);
    out->nf = f->fwd.n;
    out->nb = f->bwd.n;
    out->kind = kind;
    return 1;
}

int llmem_fit_row(const sample_view *a, const sample_view *b, const sample_view *check,
                  int nfwd, int nbwd, compiled_form *out)
{
    fit f;
    if (a->batch > b->batch) {
        const sample_view *t = a;
        a = b;
        b = t;
    }
    if (a->batch == b->batch || a->seq != b->seq || check->seq != a->seq)
        return 0;
    fit_begin(&f, out, FORM_ROW, a->seq, nfwd, nbwd, check, 1);
    divisor d = make_divisor(b->batch - a->batch);
    for (int i = 0; i < f.n; i++) {
        int64_t c[2], ya = (int64_t)a->y[i];
        if (!exact_div(&d, (int64_t)b->y[i] - ya, &c[1]))
            return 0;
        c[0] = wsub(ya, wmul(c[1], a->batch));
        if (!fit_value(&f, FORM_ROW, i, c))
            return 0;
    }
    return fit_end(&f, FORM_ROW);
}

/* Newton's divided differences through (x_k, y_k), k = 0, 1, 2, x ascending:
 * y = c0 + c1 x + c2 x^2. */
typedef struct quadratic {
    uint64_t x0, x1;
    divisor d01, d12, d02;
} quadratic;

static void quadratic_begin(quadratic *q, uint64_t x0, uint64_t x1, uint64_t x2)
{
    q->x0 = x0;
    q->x1 = x1;
    q->d01 = make_divisor(x1 - x0);
    q->d12 = make_divisor(x2 - x1);
    q->d02 = make_divisor(x2 - x0);
}

static int quadratic_fit(const quadratic *q, int64_t y0, int64_t y1, int64_t y2, int64_t c[3])
{
    int64_t a, b;
    if (!exact_div(&q->d01, y1 - y0, &a) || !exact_div(&q->d12, y2 - y1, &b) ||
        !exact_div(&q->d02, b - a, &c[2]))
        return 0;
    c[1] = wsub(a, wmul(c[2], q->x0 + q->x1));
    c[0] = wsub(wsub(y0, wmul(c[1], q->x0)), wmul(c[2], q->x0 * q->x0));
    return 1;
}

/* The full form from rows at three seqs (each row c0 + c1 B): a quadratic
 * in S through their intercepts, another through their slopes, in the full
 * form's order 1, S, B, BS, BS^2, S^2. */
static int full_from_rows(const quadratic *q, const int64_t icpt[3], const int64_t slope[3],
                          int64_t k[6])
{
    int64_t alpha[3], beta[3];
    if (!quadratic_fit(q, icpt[0], icpt[1], icpt[2], alpha) ||
        !quadratic_fit(q, slope[0], slope[1], slope[2], beta))
        return 0;
    k[0] = alpha[0];
    k[1] = alpha[1];
    k[5] = alpha[2];
    k[2] = beta[0];
    k[3] = beta[1];
    k[4] = beta[2];
    return 1;
}

int llmem_full_through_rows(const uint64_t seq[3], const int64_t icpt[3], const int64_t slope[3],
                            int64_t k[6])
{
    quadratic q;
    if (!(seq[0] < seq[1] && seq[1] < seq[2]))
        return 0;
    quadratic_begin(&q, seq[0], seq[1], seq[2]);
    return full_from_rows(&q, icpt, slope, k);
}

int llmem_quadratic_through(uint64_t x0, uint64_t x1, uint64_t x2, int64_t y0, int64_t y1,
                            int64_t y2, int64_t c[3])
{
    quadratic q;
    if (!(x0 < x1 && x1 < x2))
        return 0;
    quadratic_begin(&q, x0, x1, x2);
    return quadratic_fit(&q, y0, y1, y2, c);
}

static void sort3(const sample_view **p)
{
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && p[j]->seq < p[j - 1]->seq; j--) {
            const sample_view *t = p[j];
            p[j] = p[j - 1];
            p[j - 1] = t;
        }
}

int llmem_fit_col(const sample_view *s, const sample_view *check, int nfwd, int nbwd,
                  compiled_form *out)
{
    fit f;
    quadratic q;
    const sample_view *p[3] = { &s[0], &s[1], &s[2] };
    sort3(p);
    if (p[0]->seq == p[1]->seq || p[1]->seq == p[2]->seq || p[0]->batch != p[1]->batch ||
        p[1]->batch != p[2]->batch || check->batch != p[0]->batch)
        return 0;
    fit_begin(&f, out, FORM_COL, p[0]->batch, nfwd, nbwd, check, 1);
    quadratic_begin(&q, p[0]->seq, p[1]->seq, p[2]->seq);
    for (int i = 0; i < f.n; i++) {
        int64_t c[3];
        if (!quadratic_fit(&q, (int64_t)p[0]->y[i], (int64_t)p[1]->y[i], (int64_t)p[2]->y[i], c) ||
            !fit_value(&f, FORM_COL, i, c))
            return 0;
    }
    return fit_end(&f, FORM_COL);
}

static void sort_forms(const compiled_form **p, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && p[j]->at < p[j - 1]->at; j--) {
            const compiled_form *t = p[j];
            p[j] = p[j - 1];
            p[j - 1] = t;
        }
}

/* Three rows alpha_k + beta_k B at seqs s_k: alpha(S) = c0 + c1 S + c5 S^2,
 * beta(S) = c2 + c3 S + c4 S^2 (the samples off the rows check both). */
int llmem_fit_rows(const compiled_form *rows[3], const sample_view *checks, int nchecks,
                   int nfwd, int nbwd, compiled_form *out)
{
    fit f;
    quadratic q;
    const compiled_form *r[3] = { rows[0], rows[1], rows[2] };
    sort_forms(r, 3);
    if (nchecks < 1 || r[0]->at == r[1]->at || r[1]->at == r[2]->at)
        return 0;
    fit_begin(&f, out, FORM_FULL, 0, nfwd, nbwd, checks, nchecks);
    quadratic_begin(&q, r[0]->at, r[1]->at, r[2]->at);
    for (int i = 0; i < f.n; i++) {
        const int64_t *a = r[0]->coef + 2 * i, *b = r[1]->coef + 2 * i, *c = r[2]->coef + 2 * i;
        int64_t icpt[3] = { a[0], b[0], c[0] }, slope[3] = { a[1], b[1], c[1] }, k[6];
        if (!full_from_rows(&q, icpt, slope, k) || !fit_value(&f, FORM_FULL, i, k))
            return 0;
    }
    return fit_end(&f, FORM_FULL);
}

/* Two columns q_b(S) at batches b0 < b1: q_b = A + b C, so C = (q_b1 - q_b0)
 * / (b1 - b0) gives c2, c3, c4 and A = q_b0 - b0 C gives c0, c1, c5. */
int llmem_fit_cols(const compiled_form *cols[2], const sample_view *checks, int nchecks,
                   int nfwd, int nbwd, compiled_form *out)
{
    fit f;
    const compiled_form *c[2] = { cols[0], cols[1] };
    sort_forms(c, 2);
    if (nchecks < 1 || c[0]->at == c[1]->at)
        return 0;
    fit_begin(&f, out, FORM_FULL, 0, nfwd, nbwd, checks, nchecks);
    divisor d = make_divisor(c[1]->at - c[0]->at);
    for (int i = 0; i < f.n; i++) {
        const int64_t *q0 = c[0]->coef + 3 * i, *q1 = c[1]->coef + 3 * i;
        int64_t k[6], a[3];
        for (int j = 0; j < 3; j++) {
            if (!exact_div(&d, q1[j] - q0[j], &k[2 + j]))
                return 0;
            a[j] = wsub(q0[j], wmul(k[2 + j], c[0]->at));
        }
        k[0] = a[0];
        k[1] = a[1];
        k[5] = a[2];
        if (!fit_value(&f, FORM_FULL, i, k))
            return 0;
    }
    return fit_end(&f, FORM_FULL);
}

/* ---- evaluation ------------------------------------------------------------ */

/* One loop per kind, so the compiler unrolls each polynomial; the frontier
 * split in two loops (forward, backward). */
#define EVAL_ROW(c) ((uint64_t)(c)[0] + (uint64_t)(c)[1] * batch)
#define EVAL_COL(c) ((uint64_t)(c)[0] + (uint64_t)(c)[1] * seq + (uint64_t)(c)[2] * ss)
#define EVAL_FULL(c)                                                                   \
    ((uint64_t)(c)[0] + (uint64_t)(c)[1] * seq + (uint64_t)(c)[2] * batch +             \
     (uint64_t)(c)[3] * bs + (uint64_t)(c)[4] * bss + (uint64_t)(c)[5] * ss)
#define EVAL_FORM(TERMS, EVAL)                                                          \
    do {                                                                                \
        for (int i = 0; i < COST_FIELDS; i++)                                           \
            v[i] = EVAL(f->coef + i * (TERMS));                                         \
        for (int j = 0; j < f->nf; j++) {                                               \
            uint64_t x = EVAL(f->coef + (size_t)f->front[j] * (TERMS));                 \
            fwd = x > fwd ? x : fwd;                                                    \
        }                                                                               \
        for (int j = f->nf; j < f->nf + f->nb; j++) {                                   \
            uint64_t x = EVAL(f->coef + (size_t)f->front[j] * (TERMS));                 \
            bwd = x > bwd ? x : bwd;                                                    \
        }                                                                               \
    } while (0)

void llmem_form_eval(const compiled_form *f, uint64_t batch, uint64_t seq, seg_cost *out)
{
    uint64_t v[COST_FIELDS], fwd = 0, bwd = 0;
    uint64_t bs = batch * seq, bss = bs * seq, ss = seq * seq;
    switch (f->kind) {
    case FORM_ROW:
        EVAL_FORM(2, EVAL_ROW);
        break;
    case FORM_COL:
        EVAL_FORM(3, EVAL_COL);
        break;
    default:
        EVAL_FORM(6, EVAL_FULL);
        break;
    }
    out->persist = v[0];
    out->out_bytes = v[1];
    out->bwd_start = v[2];
    out->param_grads = v[3];
    out->input_grad = v[4];
    out->bwd_end = v[5];
    out->input_saved = (int)v[6];
    out->param_grads_wide = v[7];
    out->cached = v[8];
    out->fwd_peak = fwd;
    out->bwd_peak = bwd;
}

void llmem_sample_pack(const seg_cost *c, const uint64_t *events, int nevents, uint64_t *y)
{
    y[0] = c->persist;
    y[1] = c->out_bytes;
    y[2] = c->bwd_start;
    y[3] = c->param_grads;
    y[4] = c->input_grad;
    y[5] = c->bwd_end;
    y[6] = (uint64_t)c->input_saved;
    y[7] = c->param_grads_wide;
    y[8] = c->cached;
    memcpy(y + COST_FIELDS, events, (size_t)nevents * sizeof *events);
}
