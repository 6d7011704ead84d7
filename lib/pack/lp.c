/* SPDX-License-Identifier: MIT */
/*
 * The configuration linear program (Gilmore-Gomory): with fillings F_j (class
 * counts one GPU holds) and class demands n,
 *
 *     minimize sum_j x_j  subject to  sum_j F_j x_j >= n,  x >= 0.
 *
 * Any layout is an integer solution, so the optimum is a lower bound on the
 * GPUs. It is solved by the revised simplex method over the classes (a K x K
 * basis), from the basis of each class's singleton filling. The bound is
 * taken from the dual, not the primal: y = max(pi, 0), scaled so that every
 * filling has F_j . y <= 1, is feasible for the dual, and by weak duality
 * n . y is a lower bound however the simplex ended; it is rounded up after
 * a relative tolerance of 1e-9 against floating-point error.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <math.h>
#include <string.h>

#define EPS 1e-9

typedef struct lp {
    uint32_t k;          /* active classes (demand > 0) */
    uint32_t *cls;       /* [k]: their class indices */
    size_t m;            /* fillings */
    double *a;           /* [m][k]: F_j restricted to the active classes */
    double *binv;        /* [k][k] */
    double *xb;          /* [k] */
    size_t *basis;       /* [k]: column (j < m a filling, m + i the surplus of row i) */
    double *pi, *d, *n;  /* [k] */
} lp;

static void column(const lp *l, size_t j, double *out)
{
    if (j < l->m) {
        memcpy(out, l->a + j * l->k, l->k * sizeof *out);
    } else {
        memset(out, 0, l->k * sizeof *out);
        out[j - l->m] = -1.0;
    }
}

/* binv = B^-1 by Gauss-Jordan with partial pivoting; 0 when singular. */
static int invert(lp *l, double *work)
{
    uint32_t k = l->k;
    double *b = work; /* [k][2k] */
    double *col = work + 2 * (size_t)k * k;
    for (uint32_t i = 0; i < k; i++) {
        column(l, l->basis[i], col);
        for (uint32_t r = 0; r < k; r++) {
            b[r * 2 * k + i] = col[r];
            b[r * 2 * k + k + i] = r == i;
        }
    }
    for (uint32_t c = 0; c < k; c++) {
        uint32_t piv = c;
        for (uint32_t r = c + 1; r < k; r++)
            if (fabs(b[r * 2 * k + c]) > fabs(b[piv * 2 * k + c]))
                piv = r;
        if (fabs(b[piv * 2 * k + c]) < 1e-12)
            return 0;
        if (piv != c)
            for (uint32_t j = 0; j < 2 * k; j++) {
                double t = b[c * 2 * k + j];
                b[c * 2 * k + j] = b[piv * 2 * k + j];
                b[piv * 2 * k + j] = t;
            }
        double p = b[c * 2 * k + c];
        for (uint32_t j = 0; j < 2 * k; j++)
            b[c * 2 * k + j] /= p;
        for (uint32_t r = 0; r < k; r++) {
            double f = b[r * 2 * k + c];
            if (r == c || f == 0)
                continue;
            for (uint32_t j = 0; j < 2 * k; j++)
                b[r * 2 * k + j] -= f * b[c * 2 * k + j];
        }
    }
    for (uint32_t r = 0; r < k; r++)
        for (uint32_t j = 0; j < k; j++)
            l->binv[r * k + j] = b[r * 2 * k + k + j];
    for (uint32_t r = 0; r < k; r++) {
        double s = 0;
        for (uint32_t j = 0; j < k; j++)
            s += l->binv[r * k + j] * l->n[j];
        l->xb[r] = s;
    }
    return 1;
}

/* Simplex iterations; 1 at an optimum, 0 when it gave up. */
static int simplex(lp *l, double *work)
{
    uint32_t k = l->k;
    size_t limit = 50 * (l->m + k) + 1000;
    int degenerate = 0;
    for (size_t iter = 0; iter < limit; iter++) {
        if (iter % 64 == 63 && !invert(l, work))
            return 0;
        for (uint32_t j = 0; j < k; j++) {
            double s = 0;
            for (uint32_t i = 0; i < k; i++)
                s += (l->basis[i] < l->m ? 1.0 : 0.0) * l->binv[i * k + j];
            l->pi[j] = s;
        }
        /* Entering column: the most negative reduced cost (Dantzig), or the
         * first negative one after a run of degenerate pivots (Bland). */
        size_t enter = SIZE_MAX;
        double best = -EPS;
        for (size_t j = 0; j < l->m + k; j++) {
            double rc;
            if (j < l->m) {
                rc = 1.0;
                for (uint32_t i = 0; i < k; i++)
                    rc -= l->pi[i] * l->a[j * k + i];
            } else {
                rc = l->pi[j - l->m];
            }
            if (rc < best) {
                best = rc;
                enter = j;
                if (degenerate > 50)
                    break;
            }
        }
        if (enter == SIZE_MAX)
            return 1;
        double *col = work;
        column(l, enter, col);
        for (uint32_t i = 0; i < k; i++) {
            double s = 0;
            for (uint32_t j = 0; j < k; j++)
                s += l->binv[i * k + j] * col[j];
            l->d[i] = s;
        }
        uint32_t leave = UINT32_MAX;
        double ratio = INFINITY;
        for (uint32_t i = 0; i < k; i++) {
            if (l->d[i] <= EPS)
                continue;
            double q = l->xb[i] / l->d[i];
            if (q < ratio - EPS || (q <= ratio + EPS && leave != UINT32_MAX &&
                                     l->basis[i] < l->basis[leave])) {
                ratio = q;
                leave = i;
            }
        }
        if (leave == UINT32_MAX)
            return 0; /* unbounded: impossible with a positive objective */
        degenerate = ratio <= EPS ? degenerate + 1 : 0;
        double p = l->d[leave];
        for (uint32_t i = 0; i < k; i++)
            if (i != leave)
                l->xb[i] -= ratio * l->d[i];
        l->xb[leave] = ratio;
        for (uint32_t j = 0; j < k; j++)
            l->binv[leave * k + j] /= p;
        for (uint32_t i = 0; i < k; i++) {
            if (i == leave || l->d[i] == 0)
                continue;
            for (uint32_t j = 0; j < k; j++)
                l->binv[i * k + j] -= l->d[i] * l->binv[leave * k + j];
        }
        l->basis[leave] = enter;
    }
    return 0;
}

int llmem_pack_lp(pack_run *r, const uint64_t *demand, uint64_t *bound, double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    lp l;
    int solved = 0;
    memset(&l, 0, sizeof l);
    *bound = 0;
    for (uint32_t c = 0; c < r->nclasses; c++)
        l.k += demand[c] > 0;
    l.m = r->nfill;
    if (l.k == 0 || l.m == 0)
        return 0;
    uint32_t k = l.k;
    l.cls = llmem__alloc(ctx, k * sizeof *l.cls);
    l.a = llmem__calloc(ctx, l.m * k * sizeof *l.a);
    l.binv = llmem__calloc(ctx, (size_t)k * k * sizeof *l.binv);
    l.xb = llmem__alloc(ctx, k * sizeof *l.xb);
    l.basis = llmem__alloc(ctx, k * sizeof *l.basis);
    l.pi = llmem__alloc(ctx, 3 * (size_t)k * sizeof *l.pi);
    double *work = llmem__alloc(ctx, (2 * (size_t)k * k + k) * sizeof *work);
    uint32_t *row_of = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *row_of);
    if (l.cls == NULL || l.a == NULL || l.binv == NULL || l.xb == NULL || l.basis == NULL ||
        l.pi == NULL || work == NULL || row_of == NULL)
        goto done;
    l.d = l.pi + k;
    l.n = l.pi + 2 * (size_t)k;
    for (uint32_t c = 0, i = 0; c < r->nclasses; c++) {
        row_of[c] = UINT32_MAX;
        if (demand[c] > 0) {
            row_of[c] = i;
            l.cls[i] = c;
            l.n[i] = (double)demand[c];
            i++;
        }
    }
    for (size_t j = 0; j < l.m; j++)
        for (int u = 0; u < r->fill[j].nunits; u++) {
            uint32_t row = row_of[r->fill[j].unit[u].cls];
            if (row != UINT32_MAX)
                l.a[j * k + row] += 1.0;
        }
    /* Start: each row's singleton, the filling with the most units of its class. */
    for (uint32_t i = 0; i < k; i++) {
        size_t best = SIZE_MAX;
        double most = 0;
        for (size_t j = 0; j < l.m; j++) {
            double others = 0;
            for (uint32_t q = 0; q < k; q++)
                others += q == i ? 0 : l.a[j * k + q];
            if (others == 0 && l.a[j * k + i] > most) {
                most = l.a[j * k + i];
                best = j;
            }
        }
        if (best == SIZE_MAX)
            goto done; /* a class no filling holds alone: cannot happen */
        l.basis[i] = best;
    }
    if (!invert(&l, work) || !simplex(&l, work))
        goto done;
    /* The primal, for rounding. */
    memset(x, 0, l.m * sizeof *x);
    for (uint32_t i = 0; i < k; i++)
        if (l.basis[i] < l.m && l.xb[i] > 0)
            x[l.basis[i]] += l.xb[i];
    /* The bound, from a dual-feasible y. */
    double worst = 0, value = 0;
    for (uint32_t i = 0; i < k; i++)
        l.pi[i] = l.pi[i] > 0 ? l.pi[i] : 0;
    for (size_t j = 0; j < l.m; j++) {
        double s = 0;
        for (uint32_t i = 0; i < k; i++)
            s += l.a[j * k + i] * l.pi[i];
        if (s > worst)
            worst = s;
    }
    if (worst <= 0)
        goto done;
    for (uint32_t i = 0; i < k; i++)
        value += l.n[i] * (l.pi[i] / worst);
    value -= 1e-9 * (value > 1 ? value : 1);
    *bound = value > 0 ? (uint64_t)ceil(value) : 0;
    solved = 1;
done:
    llmem__free(ctx, l.cls);
    llmem__free(ctx, l.a);
    llmem__free(ctx, l.binv);
    llmem__free(ctx, l.xb);
    llmem__free(ctx, l.basis);
    llmem__free(ctx, l.pi);
    llmem__free(ctx, work);
    llmem__free(ctx, row_of);
    return solved;
}

/*
 * The jobs LP of a limited fleet:
 *
 *     maximize sum_c y_c  subject to  y_c <= n_c,  y_c - sum_j F_jc x_j <= 0,
 *     sum_{j of type t} x_j <= L_t (limited types),  sum_j x_j <= G (a cap),
 *     x, y >= 0.
 *
 * Any layout gives a feasible point (x_j the GPUs filled as F_j, y the jobs
 * placed), so the optimum bounds the jobs placed. Every right-hand side is
 * >= 0, so the slack basis is feasible: a revised simplex from it, with a
 * dense inverse of the (2K + T + 1)-row basis, sparse columns, Dantzig's rule
 * and Bland's after a run of degenerate pivots. The bound is not its
 * objective but llmem_pack_jobs_bound() of the duals of the rows
 * y_c - F x <= 0, valid whatever they are (bounds.c).
 */
typedef struct jlp {
    uint32_t m;          /* rows */
    size_t n;            /* structural columns: y (k), then the fillings */
    size_t *start;       /* [n + 1]: column j's entries in row/val */
    uint32_t *row;
    double *val, *cost, *b;
    double *binv;        /* [m][m] */
    double *xb, *pi, *d; /* [m] */
    size_t *basis;       /* [m]: j < n a column, n + i the slack of row i */
    double *work;        /* [m][2m] + [m] */
} jlp;

/* Column j as a dense vector. */
static void jcolumn(const jlp *l, size_t j, double *out)
{
    memset(out, 0, l->m * sizeof *out);
    if (j >= l->n) {
        out[j - l->n] = 1.0;
        return;
    }
    for (size_t e = l->start[j]; e < l->start[j + 1]; e++)
        out[l->row[e]] += l->val[e];
}

static double jcost(const jlp *l, size_t j)
{
    return j < l->n ? l->cost[j] : 0.0;
}

/* binv = B^-1 and xb = B^-1 b, by Gauss-Jordan; 0 when singular. */
static int jinvert(jlp *l)
{
    uint32_t m = l->m;
    size_t w = 2 * (size_t)m;
    double *a = l->work, *col = l->work + w * m;
    for (uint32_t i = 0; i < m; i++) {
        jcolumn(l, l->basis[i], col);
        for (uint32_t r = 0; r < m; r++) {
            a[r * w + i] = col[r];
            a[r * w + m + i] = r == i;
        }
    }
    for (uint32_t c = 0; c < m; c++) {
        uint32_t piv = c;
        for (uint32_t r = c + 1; r < m; r++)
            if (fabs(a[r * w + c]) > fabs(a[piv * w + c]))
                piv = r;
        if (fabs(a[piv * w + c]) < 1e-12)
            return 0;
        if (piv != c)
            for (size_t j = 0; j < w; j++) {
                double t = a[c * w + j];
                a[c * w + j] = a[piv * w + j];
                a[piv * w + j] = t;
            }
        double p = a[c * w + c];
        for (size_t j = 0; j < w; j++)
            a[c * w + j] /= p;
        for (uint32_t r = 0; r < m; r++) {
            double f = a[r * w + c];
            if (r == c || f == 0)
                continue;
            for (size_t j = 0; j < w; j++)
                a[r * w + j] -= f * a[c * w + j];
        }
    }
    for (uint32_t r = 0; r < m; r++) {
        double s = 0;
        for (uint32_t j = 0; j < m; j++) {
            l->binv[r * m + j] = a[r * w + m + j];
            s += l->binv[r * m + j] * l->b[j];
        }
        l->xb[r] = s > 0 ? s : 0;
    }
    return 1;
}

static void jduals(jlp *l)
{
    uint32_t m = l->m;
    for (uint32_t j = 0; j < m; j++) {
        double s = 0;
        for (uint32_t i = 0; i < m; i++)
            s += jcost(l, l->basis[i]) * l->binv[i * m + j];
        l->pi[j] = s;
    }
}

/* Simplex iterations; 1 at an optimum, 0 when it gave up. */
static int jsimplex(jlp *l)
{
    uint32_t m = l->m;
    size_t limit = 50 * (l->n + m) + 1000;
    int degenerate = 0;
    for (size_t iter = 0; iter < limit; iter++) {
        if (iter % 64 == 63 && !jinvert(l))
            return 0;
        jduals(l);
        /* Entering: the largest reduced cost, or the first positive one
         * after a run of degenerate pivots (Bland). */
        size_t enter = SIZE_MAX;
        double best = EPS;
        for (size_t j = 0; j < l->n + m; j++) {
            double rc = jcost(l, j);
            if (j < l->n)
                for (size_t e = l->start[j]; e < l->start[j + 1]; e++)
                    rc -= l->pi[l->row[e]] * l->val[e];
            else
                rc -= l->pi[j - l->n];
            if (rc > best) {
                best = rc;
                enter = j;
                if (degenerate > 50)
                    break;
            }
        }
        if (enter == SIZE_MAX)
            return 1;
        double *col = l->work;
        jcolumn(l, enter, col);
        for (uint32_t i = 0; i < m; i++) {
            double s = 0;
            for (uint32_t j = 0; j < m; j++)
                s += l->binv[i * m + j] * col[j];
            l->d[i] = s;
        }
        uint32_t leave = UINT32_MAX;
        double ratio = INFINITY;
        for (uint32_t i = 0; i < m; i++) {
            if (l->d[i] <= EPS)
                continue;
            double q = l->xb[i] / l->d[i];
            if (q < ratio - EPS || (q <= ratio + EPS && leave != UINT32_MAX &&
                                     l->basis[i] < l->basis[leave])) {
                ratio = q;
                leave = i;
            }
        }
        if (leave == UINT32_MAX)
            return 0; /* unbounded: impossible, y <= n */
        degenerate = ratio <= EPS ? degenerate + 1 : 0;
        double p = l->d[leave];
        for (uint32_t i = 0; i < m; i++)
            if (i != leave) {
                l->xb[i] -= ratio * l->d[i];
                if (l->xb[i] < 0)
                    l->xb[i] = 0;
            }
        l->xb[leave] = ratio;
        for (uint32_t j = 0; j < m; j++)
            l->binv[leave * m + j] /= p;
        for (uint32_t i = 0; i < m; i++) {
            if (i == leave || l->d[i] == 0)
                continue;
            for (uint32_t j = 0; j < m; j++)
                l->binv[i * m + j] -= l->d[i] * l->binv[leave * m + j];
        }
        l->basis[leave] = enter;
    }
    return 0;
}

int llmem_pack_lp_jobs(pack_run *r, const uint64_t *demand, uint64_t total, uint64_t *bound,
                       double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    jlp l;
    int solved = 0;
    uint32_t k = 0, limited = 0;
    uint32_t type_row[PACK_MAX_TYPES];
    memset(&l, 0, sizeof l);
    *bound = UINT64_MAX;
    if (!r->fill_complete || r->nfill == 0)
        return 0;
    for (uint32_t c = 0; c < r->nclasses; c++)
        k += demand[c] > 0;
    if (k == 0)
        return 0;
    /* Rows: y_c - F x (k), y_c <= n_c (k), limited types, the cap. */
    for (int t = 0; t < r->ntypes; t++)
        type_row[t] = r->types[t].limit != 0 ? 2 * k + limited++ : UINT32_MAX;
    uint32_t cap_row = 2 * k + limited;
    l.m = cap_row + (total != PACK_NO_LIMIT);
    l.n = k + r->nfill;
    size_t entries = 2 * (size_t)k;
    for (size_t j = 0; j < r->nfill; j++)
        entries += (size_t)r->fill[j].nunits + 2;
    uint32_t m = l.m;
    uint32_t *row_of = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *row_of);
    uint32_t *cls = llmem__alloc(ctx, k * sizeof *cls);
    l.start = llmem__alloc(ctx, (l.n + 1) * sizeof *l.start);
    l.row = llmem__alloc(ctx, entries * sizeof *l.row);
    l.val = llmem__alloc(ctx, entries * sizeof *l.val);
    l.cost = llmem__calloc(ctx, l.n * sizeof *l.cost);
    l.b = llmem__alloc(ctx, 4 * (size_t)m * sizeof *l.b);
    l.binv = llmem__calloc(ctx, (size_t)m * m * sizeof *l.binv);
    l.basis = llmem__alloc(ctx, m * sizeof *l.basis);
    l.work = llmem__alloc(ctx, (2 * (size_t)m * m + m) * sizeof *l.work);
    double *p = llmem__calloc(ctx, (r->nclasses + 1) * sizeof *p);
    if (row_of == NULL || cls == NULL || l.start == NULL || l.row == NULL || l.val == NULL ||
        l.cost == NULL || l.b == NULL || l.binv == NULL || l.basis == NULL || l.work == NULL ||
        p == NULL)
        goto done;
    l.xb = l.b + m;
    l.pi = l.b + 2 * (size_t)m;
    l.d = l.b + 3 * (size_t)m;
    for (uint32_t c = 0, i = 0; c < r->nclasses; c++) {
        row_of[c] = UINT32_MAX;
        if (demand[c] > 0) {
            row_of[c] = i;
            cls[i++] = c;
        }
    }
    size_t e = 0;
    for (uint32_t i = 0; i < k; i++) {
        l.start[i] = e;
        l.row[e] = i;
        l.val[e++] = 1.0;
        l.row[e] = k + i;
        l.val[e++] = 1.0;
        l.cost[i] = 1.0;
        l.b[i] = 0;
        l.b[k + i] = (double)demand[cls[i]];
    }
    for (int t = 0; t < r->ntypes; t++)
        if (type_row[t] != UINT32_MAX)
            l.b[type_row[t]] = (double)r->types[t].limit;
    if (total != PACK_NO_LIMIT)
        l.b[cap_row] = (double)total;
    for (size_t j = 0; j < r->nfill; j++) {
        const pack_filling *f = &r->fill[j];
        l.start[k + j] = e;
        for (int u = 0; u < f->nunits; u++) {
            uint32_t row = row_of[f->unit[u].cls];
            if (row == UINT32_MAX)
                continue;
            l.row[e] = row;
            l.val[e++] = -1.0; /* repeated units add up in jcolumn */
        }
        if (type_row[f->type] != UINT32_MAX) {
            l.row[e] = type_row[f->type];
            l.val[e++] = 1.0;
        }
        if (total != PACK_NO_LIMIT) {
            l.row[e] = cap_row;
            l.val[e++] = 1.0;
        }
    }
    l.start[l.n] = e;
    for (uint32_t i = 0; i < m; i++) {
        l.basis[i] = l.n + i;
        l.binv[i * m + i] = 1.0;
        l.xb[i] = l.b[i];
    }
    if (!jsimplex(&l) || !jinvert(&l))
        goto done;
    jduals(&l);
    if (x != NULL) {
        memset(x, 0, r->nfill * sizeof *x);
        for (uint32_t i = 0; i < m; i++)
            if (l.basis[i] >= k && l.basis[i] < l.n && l.xb[i] > 0)
                x[l.basis[i] - k] += l.xb[i];
    }
    for (uint32_t i = 0; i < k; i++)
        p[cls[i]] = l.pi[i];
    *bound = llmem_pack_jobs_bound(r, demand, p, total);
    solved = *bound != UINT64_MAX;
done:
    llmem__free(ctx, row_of);
    llmem__free(ctx, cls);
    llmem__free(ctx, l.start);
    llmem__free(ctx, l.row);
    llmem__free(ctx, l.val);
    llmem__free(ctx, l.cost);
    llmem__free(ctx, l.b);
    llmem__free(ctx, l.binv);
    llmem__free(ctx, l.basis);
    llmem__free(ctx, l.work);
    llmem__free(ctx, p);
    return solved;
}
