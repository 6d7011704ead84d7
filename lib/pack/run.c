/* SPDX-License-Identifier: MIT */
/*
 * One packing run (docs/mig.md, "The packing algorithm"):
 *  1. classes of interchangeable jobs (classes.c), and the fillings of every
 *     type (fillings.c);
 *  2. candidate layouts: first fit decreasing (greedy.c); the configuration
 *     LP's solution rounded down, its remainder by first fit (lp.c);
 *  3. the lower bound: memory and compute slices, counts (bounds.c) and the
 *     LP's dual;
 *  4. when the best candidate is above the bound and the demand is small, the
 *     exact optimum by dynamic programming (exact.c);
 *  5. the best candidate laid out at slots, jobs assigned (assign.c).
 * Candidates compare by jobs placed, then GPUs; ties keep the earlier one.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <math.h>
#include <string.h>

static size_t placed(const pack_plan *plan)
{
    size_t n = 0;
    for (size_t i = 0; i < plan->n; i++)
        n += plan->gpu[i].nunits;
    return n;
}

static int better(const pack_plan *a, const pack_plan *b)
{
    size_t pa = placed(a), pb = placed(b);
    return pa != pb ? pa > pb : a->n < b->n;
}

/* The LP's solution rounded down (within type limits and the demand), the
 * rest by first fit. */
static int rounded(pack_run *r, const double *x, const uint64_t *demand, pack_plan *plan)
{
    llmem_ctx *ctx = r->p->ctx;
    uint64_t *remain = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *remain);
    int rc = LLMEM_OK;
    if (remain == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    memcpy(remain, demand, r->nclasses * sizeof *remain);
    for (size_t j = 0; j < r->nfill && rc == LLMEM_OK; j++) {
        const pack_filling *f = &r->fill[j];
        const pack_type *t = &r->types[f->type];
        uint64_t copies = (uint64_t)floor(x[j] + 1e-9);
        for (uint64_t c = 0; c < copies && rc == LLMEM_OK; c++) {
            if (t->limit != 0 && plan->used[f->type] >= t->limit)
                break;
            pack_gpu g;
            memset(&g, 0, sizeof g);
            g.type = f->type;
            for (int u = 0; u < f->nunits; u++) {
                if (remain[f->unit[u].cls] == 0)
                    continue;
                remain[f->unit[u].cls]--;
                g.unit[g.nunits++] = f->unit[u];
                g.state += t->step[f->unit[u].kind];
            }
            if (g.nunits == 0)
                break;
            rc = llmem_pack_plan_push(ctx, plan, &g);
        }
    }
    if (rc == LLMEM_OK)
        rc = llmem_pack_first_fit(r, plan, remain);
    llmem__free(ctx, remain);
    return rc;
}

/* Demand of the jobs a plan placed. */
static void plan_demand(const pack_run *r, const pack_plan *plan, uint64_t *demand)
{
    memset(demand, 0, r->nclasses * sizeof *demand);
    for (size_t i = 0; i < plan->n; i++)
        for (int u = 0; u < plan->gpu[i].nunits; u++)
            demand[plan->gpu[i].unit[u].cls]++;
}

static void free_run(pack_run *r)
{
    llmem_ctx *ctx = r->p->ctx;
    llmem__free(ctx, r->classes);
    llmem__free(ctx, r->order);
    llmem__free(ctx, r->fill);
}

int llmem_pack_run(llmem_pack *p)
{
    pack_run r;
    pack_plan best, other;
    uint64_t *demand = NULL, *remain = NULL;
    double *x = NULL;
    int rc;
    if (p == NULL)
        return LLMEM_EINVAL;
    llmem_ctx *ctx = p->ctx;
    if (p->ntypes == 0)
        return llmem__fail(ctx, LLMEM_EINCONSISTENT, "pack: no GPU type in the fleet");
    llmem_pack_drop_result(p);
    memset(&r, 0, sizeof r);
    memset(&best, 0, sizeof best);
    memset(&other, 0, sizeof other);
    r.p = p;
    r.types = p->types;
    r.ntypes = p->ntypes;
    for (int t = 0; t < p->ntypes; t++)
        if ((rc = llmem_pack_type_init(ctx, &p->types[t], p->type_gpu[t], p->type_limit[t])) !=
            LLMEM_OK)
            goto fail;
    if ((rc = llmem_pack_classify(&r)) != LLMEM_OK || (rc = llmem_pack_fillings(&r)) != LLMEM_OK)
        goto fail;
    demand = llmem__alloc(ctx, (r.nclasses + 1) * sizeof *demand);
    remain = llmem__alloc(ctx, (r.nclasses + 1) * sizeof *remain);
    x = llmem__alloc(ctx, (r.nfill + 1) * sizeof *x);
    if (demand == NULL || remain == NULL || x == NULL) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        goto fail;
    }
    for (uint32_t c = 0; c < r.nclasses; c++)
        demand[c] = r.classes[c].count;

    memcpy(remain, demand, r.nclasses * sizeof *remain);
    if ((rc = llmem_pack_first_fit(&r, &best, remain)) != LLMEM_OK)
        goto fail;
    uint64_t lp_bound = 0;
    int lp_solved = r.fill_complete && llmem_pack_lp(&r, demand, &lp_bound, x);
    if (lp_solved) {
        if ((rc = rounded(&r, x, demand, &other)) != LLMEM_OK)
            goto fail;
        if (better(&other, &best)) {
            pack_plan t = best;
            best = other;
            other = t;
        }
        llmem_pack_plan_free(ctx, &other);
    }
    /* The bound is of the jobs the layout places (all of them unless the
     * fleet ran out of GPUs). */
    size_t nplaced = placed(&best);
    int all_placed = 1;
    for (uint32_t c = 0; c < r.nclasses; c++)
        remain[c] = demand[c];
    plan_demand(&r, &best, demand);
    for (uint32_t c = 0; c < r.nclasses; c++)
        all_placed &= demand[c] == remain[c];
    if (!all_placed)
        lp_solved = r.fill_complete && llmem_pack_lp(&r, demand, &lp_bound, x);
    uint64_t memory, compute, count;
    llmem_pack_bounds(&r, demand, &memory, &compute, &count);
    if (!lp_solved)
        lp_bound = 0;
    uint64_t bound = memory;
    bound = compute > bound ? compute : bound;
    bound = count > bound ? count : bound;
    bound = lp_bound > bound ? lp_bound : bound;
    int optimal = best.n <= bound;
    uint64_t limit = (uint64_t)p->i[LLMEM_PACK_EXACT_LIMIT];
    if (!optimal && all_placed && r.fill_complete && limit > 0) {
        int found = llmem_pack_exact(&r, demand, limit, &other);
        if (found) {
            optimal = 1;
            if (other.n < best.n) {
                pack_plan t = best;
                best = other;
                other = t;
            }
            if (best.n > bound)
                bound = best.n; /* the exact search proves it */
        }
        llmem_pack_plan_free(ctx, &other);
    }
    if ((rc = llmem_pack_assign(&r, &best)) != LLMEM_OK)
        goto fail;
    p->result[LLMEM_PACK_GPUS_USED] = best.n;
    p->result[LLMEM_PACK_LOWER_BOUND] = bound;
    p->result[LLMEM_PACK_BOUND_MEMORY] = memory;
    p->result[LLMEM_PACK_BOUND_COMPUTE] = compute;
    p->result[LLMEM_PACK_BOUND_COUNT] = count;
    p->result[LLMEM_PACK_BOUND_LP] = lp_bound;
    p->result[LLMEM_PACK_OPTIMAL] = (uint64_t)optimal;
    p->result[LLMEM_PACK_JOBS_PLACED] = nplaced;
    p->result[LLMEM_PACK_JOBS_UNPLACED] = p->njobs - nplaced;
    p->ran = 1;
    llmem_pack_plan_free(ctx, &best);
    llmem__free(ctx, demand);
    llmem__free(ctx, remain);
    llmem__free(ctx, x);
    free_run(&r);
    llmem__ok(ctx);
    return LLMEM_OK;
fail:
    llmem_pack_plan_free(ctx, &best);
    llmem_pack_plan_free(ctx, &other);
    llmem__free(ctx, demand);
    llmem__free(ctx, remain);
    llmem__free(ctx, x);
    free_run(&r);
    llmem_pack_drop_result(p);
    return rc;
}
