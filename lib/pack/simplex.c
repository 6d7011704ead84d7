/* SPDX-License-Identifier: MIT */
/* The revised simplex method of the packer's linear programs (simplex.h). */
#include "pack/simplex.h"

#include "core/ctx.h"

#include <math.h>
#include <string.h>

#define EPS 1e-9

int llmem_simplex_alloc(llmem_ctx *ctx, simplex *s)
{
    size_t m = s->m;
    s->binv = llmem__calloc(ctx, m * m * sizeof *s->binv);
    s->xb = llmem__alloc(ctx, 3 * m * sizeof *s->xb);
    s->basis = llmem__alloc(ctx, m * sizeof *s->basis);
    s->work = llmem__alloc(ctx, (2 * m * m + m) * sizeof *s->work);
    if (s->binv == NULL || s->xb == NULL || s->basis == NULL || s->work == NULL)
        return 0;
    s->pi = s->xb + m;
    s->d = s->xb + 2 * m;
    return 1;
}

void llmem_simplex_free(llmem_ctx *ctx, simplex *s)
{
    llmem__free(ctx, s->binv);
    llmem__free(ctx, s->xb);
    llmem__free(ctx, s->basis);
    llmem__free(ctx, s->work);
}

/* Column j as a dense vector. */
static void column(const simplex *s, size_t j, double *out)
{
    memset(out, 0, s->m * sizeof *out);
    if (j >= s->n) {
        out[j - s->n] = s->logical;
        return;
    }
    for (size_t e = s->start[j]; e < s->start[j + 1]; e++)
        out[s->row[e]] += s->val[e];
}

static double cost(const simplex *s, size_t j)
{
    return j < s->n ? s->cost[j] : 0.0;
}

int llmem_simplex_invert(simplex *s)
{
    uint32_t m = s->m;
    size_t w = 2 * (size_t)m;
    double *a = s->work, *col = s->work + w * m;
    for (uint32_t i = 0; i < m; i++) {
        column(s, s->basis[i], col);
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
        double sum = 0;
        for (uint32_t j = 0; j < m; j++) {
            s->binv[r * m + j] = a[r * w + m + j];
            sum += s->binv[r * m + j] * s->b[j];
        }
        s->xb[r] = !s->clamp || sum > 0 ? sum : 0;
    }
    return 1;
}

void llmem_simplex_duals(simplex *s)
{
    uint32_t m = s->m;
    for (uint32_t j = 0; j < m; j++) {
        double sum = 0;
        for (uint32_t i = 0; i < m; i++)
            sum += cost(s, s->basis[i]) * s->binv[i * m + j];
        s->pi[j] = sum;
    }
}

int llmem_simplex_run(simplex *s)
{
    uint32_t m = s->m;
    size_t limit = 50 * (s->n + m) + 1000;
    int degenerate = 0;
    for (size_t iter = 0; iter < limit; iter++) {
        if (iter % 64 == 63 && !llmem_simplex_invert(s))
            return 0;
        llmem_simplex_duals(s);
        /* Entering: the largest reduced cost, or the first positive one
         * after a run of degenerate pivots (Bland). */
        size_t enter = SIZE_MAX;
        double best = EPS;
        for (size_t j = 0; j < s->n + m; j++) {
            double rc = cost(s, j);
            if (j < s->n)
                for (size_t e = s->start[j]; e < s->start[j + 1]; e++)
                    rc -= s->pi[s->row[e]] * s->val[e];
            else
                rc -= s->pi[j - s->n] * s->logical;
            if (rc > best) {
                best = rc;
                enter = j;
                if (degenerate > 50)
                    break;
            }
        }
        if (enter == SIZE_MAX)
            return 1;
        double *col = s->work;
        column(s, enter, col);
        for (uint32_t i = 0; i < m; i++) {
            double sum = 0;
            for (uint32_t j = 0; j < m; j++)
                sum += s->binv[i * m + j] * col[j];
            s->d[i] = sum;
        }
        uint32_t leave = UINT32_MAX;
        double ratio = INFINITY;
        for (uint32_t i = 0; i < m; i++) {
            if (s->d[i] <= EPS)
                continue;
            double q = s->xb[i] / s->d[i];
            if (q < ratio - EPS || (q <= ratio + EPS && leave != UINT32_MAX &&
                                     s->basis[i] < s->basis[leave])) {
                ratio = q;
                leave = i;
            }
        }
        if (leave == UINT32_MAX)
            return 0; /* unbounded */
        degenerate = ratio <= EPS ? degenerate + 1 : 0;
        double p = s->d[leave];
        for (uint32_t i = 0; i < m; i++)
            if (i != leave) {
                s->xb[i] -= ratio * s->d[i];
                if (s->clamp && s->xb[i] < 0)
                    s->xb[i] = 0;
            }
        s->xb[leave] = ratio;
        for (uint32_t j = 0; j < m; j++)
            s->binv[leave * m + j] /= p;
        for (uint32_t i = 0; i < m; i++) {
            if (i == leave || s->d[i] == 0)
                continue;
            for (uint32_t j = 0; j < m; j++)
                s->binv[i * m + j] -= s->d[i] * s->binv[leave * m + j];
        }
        s->basis[leave] = enter;
    }
    return 0;
}

int llmem_simplex_drive_out(simplex *s, size_t lo, size_t hi)
{
    uint32_t m = s->m;
    for (uint32_t p = 0; p < m; p++) {
        if (s->basis[p] < lo || s->basis[p] >= hi)
            continue;
        uint32_t pick = 0;
        for (uint32_t i = 1; i < m; i++)
            if (fabs(s->binv[p * m + i]) > fabs(s->binv[p * m + pick]))
                pick = i;
        s->basis[p] = s->n + pick;
        if (!llmem_simplex_invert(s))
            return 0;
    }
    return 1;
}
