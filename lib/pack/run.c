/* SPDX-License-Identifier: MIT */
/*
 * One packing run (docs/mig.md, "The packing algorithm"):
 *  1. classes of interchangeable jobs (classes.c), and the fillings of every
 *     type (fillings.c);
 *  2. candidate layouts: first fit decreasing (greedy.c); the configuration
 *     LP's solution rounded down, its remainder by first fit (lp.c);
 *  3. when a limited fleet leaves jobs without room: the most jobs it can
 *     place (limited() below), exactly for a small demand (exact.c), else
 *     the best of the smallest jobs first, the jobs LP rounded and the
 *     candidates above, with an upper bound on the jobs (bounds.c, lp.c);
 *  4. the lower bound: memory and compute slices, counts (bounds.c) and the
 *     LP's dual;
 *  5. when the best candidate is above the bound and the demand is small, the
 *     exact optimum by dynamic programming (exact.c);
 *  6. the best candidate laid out at slots, jobs assigned (assign.c).
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

/* Copies of the fillings the LP uses whole (x rounded down), within type
 * limits and the jobs left in remain (decremented). */
static int round_down(pack_run *r, const double *x, uint64_t *remain, pack_plan *plan)
{
    int rc = LLMEM_OK;
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
            rc = llmem_pack_plan_push(r->p->ctx, plan, &g);
        }
    }
    return rc;
}

static int plan_copy(llmem_ctx *ctx, pack_plan *dst, const pack_plan *src)
{
    dst->n = 0;
    memset(dst->used, 0, sizeof dst->used);
    for (size_t i = 0; i < src->n; i++)
        if (llmem_pack_plan_push(ctx, dst, &src->gpu[i]) != LLMEM_OK)
            return LLMEM_ENOMEM;
    return LLMEM_OK;
}

/* The LP's solution rounded down (within type limits and the demand), the
 * rest by first fit. With counts, where a count cuts fractions off, first fit
 * would give that type's last GPUs to the largest jobs, not to those that
 * save the most there: so the LP of the jobs left on the GPUs left is solved
 * and rounded down again, or, with no filling whole, one copy of its largest
 * part taken, while that adds GPUs. Each step's rest by first fit is a
 * candidate too; the best is kept, the earliest of equals. */
static int rounded(pack_run *r, const double *x, const uint64_t *demand, const uint64_t *counts,
                   pack_plan *plan)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t nc = r->nclasses;
    uint64_t *remain = llmem__alloc(ctx, 2 * (nc + 1) * sizeof *remain);
    double *again = counts != NULL ? llmem__alloc(ctx, (r->fill_max + 1) * sizeof *again) : NULL;
    pack_plan best, trial;
    int rc, have_best = 0;
    memset(&best, 0, sizeof best);
    memset(&trial, 0, sizeof trial);
    if (remain == NULL || (counts != NULL && again == NULL)) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        goto done;
    }
    uint64_t *rest = remain + nc + 1;
    memcpy(remain, demand, nc * sizeof *remain);
    rc = round_down(r, x, remain, plan);
    for (int round = 0; counts != NULL && rc == LLMEM_OK && round < 64; round++) {
        uint64_t left[PACK_MAX_TYPES], bound;
        size_t gpus = plan->n;
        memcpy(rest, remain, nc * sizeof *rest);
        if ((rc = plan_copy(ctx, &trial, plan)) != LLMEM_OK ||
            (rc = llmem_pack_first_fit(r, &trial, rest)) != LLMEM_OK)
            break;
        if (!have_best || better(&trial, &best)) {
            pack_plan t = best;
            best = trial;
            trial = t;
            have_best = 1;
        }
        for (int t = 0; t < r->ntypes; t++)
            left[t] = counts[t] == PACK_NO_LIMIT ? PACK_NO_LIMIT
                      : plan->used[t] < counts[t] ? counts[t] - plan->used[t]
                                                  : 0;
        if (!llmem_pack_lp(r, remain, left, &bound, again))
            break;
        size_t pick = SIZE_MAX;
        int whole = 0;
        for (size_t j = 0; j < r->nfill; j++) {
            if (left[r->fill[j].type] == 0 || again[j] <= 1e-9)
                continue;
            whole |= again[j] >= 1 - 1e-9;
            if (pick == SIZE_MAX || again[j] > again[pick])
                pick = j;
        }
        if (!whole && pick != SIZE_MAX) {
            memset(again, 0, r->nfill * sizeof *again);
            again[pick] = 1;
        }
        rc = round_down(r, again, remain, plan);
        if (plan->n == gpus)
            break;
    }
    if (rc == LLMEM_OK)
        rc = llmem_pack_first_fit(r, plan, remain);
    if (rc == LLMEM_OK && have_best && !better(plan, &best)) {
        pack_plan t = *plan;
        *plan = best;
        best = t;
    }
done:
    llmem_pack_plan_free(ctx, &best);
    llmem_pack_plan_free(ctx, &trial);
    llmem__free(ctx, remain);
    llmem__free(ctx, again);
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

/* Each class's demand, capped at what the fleet's limited GPUs can ever hold
 * of it (a class some type without a limit holds keeps its demand). */
static void cap_demand(const pack_run *r, const uint64_t *demand, uint64_t *cap)
{
    for (uint32_t c = 0; c < r->nclasses; c++) {
        uint64_t most = 0;
        cap[c] = demand[c];
        if (llmem_pack_unlimited(r, c))
            continue;
        for (int t = 0; t < r->ntypes; t++) {
            uint64_t per = llmem_pack_capacity(&r->types[t], r->classes[c].mask[t]);
            uint64_t add = per != 0 && r->types[t].limit > UINT64_MAX / per
                               ? UINT64_MAX
                               : r->types[t].limit * per;
            most = add > UINT64_MAX - most ? UINT64_MAX : most + add;
        }
        cap[c] = most < demand[c] ? most : demand[c];
    }
}

/* The first k jobs of from[] from the smallest class up (classes are ranked
 * large first). */
static void smallest(const pack_run *r, const uint64_t *from, uint64_t k, uint64_t *out)
{
    for (uint32_t c = r->nclasses; c-- > 0;) {
        out[c] = from[c] < k ? from[c] : k;
        k -= out[c];
    }
}

static void swap_if_better(pack_plan *best, pack_plan *other)
{
    if (better(other, best)) {
        pack_plan t = *best;
        *best = *other;
        *other = t;
    }
}

/* Scratch of the limited search: class vectors and a trial plan. */
typedef struct scratch {
    uint64_t *want, *left;
    double *cover;          /* [nfill]: an LP's primal; NULL without fillings */
    pack_plan trial;
} scratch;

/* Add jobs of remain (decremented) to plan: the most of the smallest that
 * first fit places in the room left (by bisection on their number, up to
 * hi: more of the smallest jobs rarely get easier to place), then first fit
 * decreasing of the rest into what room remains. From an empty plan, a
 * number first fit misses is tried again with the LP of those jobs rounded. */
static int extend(pack_run *r, pack_plan *plan, uint64_t *remain, uint64_t hi, scratch *w)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t nc = r->nclasses;
    uint64_t lo = 0, total = 0, bound, gpus = 0;
    int rc = LLMEM_OK, empty = plan->n == 0;
    for (uint32_t c = 0; c < nc; c++)
        total += remain[c];
    hi = hi < total ? hi : total;
    for (int t = 0; t < r->ntypes; t++)
        gpus = r->types[t].limit == 0 || gpus + r->types[t].limit < gpus ? UINT64_MAX
                                                                        : gpus + r->types[t].limit;
    pack_plan base;
    memset(&base, 0, sizeof base);
    if ((rc = plan_copy(ctx, &base, plan)) != LLMEM_OK)
        goto done;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2, missed = 0;
        smallest(r, remain, mid, w->want);
        memcpy(w->left, w->want, nc * sizeof *w->left);
        if ((rc = plan_copy(ctx, &w->trial, &base)) != LLMEM_OK ||
            (rc = llmem_pack_first_fit(r, &w->trial, w->left)) != LLMEM_OK)
            goto done;
        for (uint32_t c = 0; c < nc; c++)
            missed += w->left[c];
        if (missed > 0) {
            /* Priced fit: the limited GPUs to the jobs only they hold. */
            memcpy(w->left, w->want, nc * sizeof *w->left);
            if ((rc = plan_copy(ctx, &w->trial, &base)) != LLMEM_OK ||
                (rc = llmem_pack_priced_fit(r, &w->trial, w->left)) != LLMEM_OK)
                goto done;
            missed = 0;
            for (uint32_t c = 0; c < nc; c++)
                missed += w->left[c];
        }
        if (missed > 0 && empty && w->cover != NULL &&
            llmem_pack_lp(r, w->want, r->counts, &bound, w->cover) && bound <= gpus) {
            w->trial.n = 0;
            memset(w->trial.used, 0, sizeof w->trial.used);
            if ((rc = rounded(r, w->cover, w->want, r->counts, &w->trial)) != LLMEM_OK)
                goto done;
            missed = placed(&w->trial) < mid;
        }
        if (missed == 0) {
            pack_plan t = *plan;
            *plan = w->trial;
            w->trial = t;
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    smallest(r, remain, lo, w->want);
    for (uint32_t c = 0; c < nc; c++)
        remain[c] -= w->want[c];
    rc = llmem_pack_first_fit(r, plan, remain);
done:
    llmem_pack_plan_free(ctx, &base);
    return rc;
}

/* The jobs of cap a plan leaves, in left. */
static void left_of(const pack_run *r, const pack_plan *plan, const uint64_t *cap, uint64_t *left)
{
    plan_demand(r, plan, left);
    for (uint32_t c = 0; c < r->nclasses; c++)
        left[c] = cap[c] - left[c];
}

/* Whether no layout places `jobs` jobs of demand on fewer than `gpus` GPUs. */
static int fewer_gpus_impossible(pack_run *r, const uint64_t *demand, size_t jobs, size_t gpus)
{
    uint64_t most = 0, bound;
    if (gpus == 0 || jobs == 0)
        return 1;
    for (int t = 0; t < r->ntypes; t++)
        most = r->types[t].most_units > most ? r->types[t].most_units : most;
    if ((uint64_t)(gpus - 1) * most < jobs)
        return 1;
    return llmem_pack_lp_jobs(r, demand, gpus - 1, &bound, NULL) && bound < jobs;
}

/* A limited fleet left jobs without room: the most jobs it can place. Replaces
 * *best when a candidate places more (or as many on fewer GPUs); *jobs_bound
 * gets an upper bound on the jobs any layout places, *proven 1 when the
 * exact search found the optimum (most jobs, then fewest GPUs). Candidates:
 * the smallest jobs first, and the jobs LP rounded down, each extended; then
 * the chosen jobs on fewer GPUs, and the room that frees filled again. */
static int limited(pack_run *r, const uint64_t *demand, pack_plan *best, uint64_t *jobs_bound,
                   int *proven)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t nc = r->nclasses;
    pack_plan other;
    scratch w;
    uint64_t bound;
    int rc = LLMEM_OK;
    memset(&other, 0, sizeof other);
    memset(&w, 0, sizeof w);
    *proven = 0;
    uint64_t *cap = llmem__alloc(ctx, 4 * (nc + 1) * sizeof *cap);
    double *x = llmem__alloc(ctx, 2 * (r->fill_max + 1) * sizeof *x);
    if (cap == NULL || x == NULL) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        goto done;
    }
    uint64_t *remain = cap + nc + 1;
    w.want = cap + 2 * (nc + 1);
    w.left = cap + 3 * (nc + 1);
    w.cover = r->fill_complete ? x + r->fill_max + 1 : NULL;
    cap_demand(r, demand, cap);
    *jobs_bound = llmem_pack_jobs_bound_simple(r, cap);
    int lp = llmem_pack_lp_jobs(r, cap, PACK_NO_LIMIT, &bound, x);
    if (lp && bound < *jobs_bound)
        *jobs_bound = bound;
    uint64_t limit = (uint64_t)r->p->i[LLMEM_PACK_EXACT_LIMIT];
    if (limit > 0 && llmem_pack_exact_limited(r, cap, limit, &other)) {
        /* The optimum: it replaces any candidate, and bounds the jobs. */
        pack_plan t = *best;
        *best = other;
        other = t;
        *proven = 1;
        *jobs_bound = placed(best);
        goto done;
    }
    if (placed(best) >= *jobs_bound)
        goto done;
    memcpy(remain, cap, nc * sizeof *remain);
    other.n = 0;
    memset(other.used, 0, sizeof other.used);
    if ((rc = extend(r, &other, remain, *jobs_bound, &w)) != LLMEM_OK)
        goto done;
    swap_if_better(best, &other);
    if (lp) {
        memcpy(remain, cap, nc * sizeof *remain);
        other.n = 0;
        memset(other.used, 0, sizeof other.used);
        if ((rc = round_down(r, x, remain, &other)) != LLMEM_OK ||
            (rc = extend(r, &other, remain, *jobs_bound - placed(&other), &w)) != LLMEM_OK)
            goto done;
        swap_if_better(best, &other);
    }
    /* Fewer GPUs for the jobs chosen (first fit and the LP of their demand),
     * then the room that frees filled again, while that places more. */
    for (int round = 0; round < 8 && placed(best) < *jobs_bound; round++) {
        size_t before = placed(best);
        plan_demand(r, best, w.want);
        memcpy(remain, w.want, nc * sizeof *remain);
        other.n = 0;
        memset(other.used, 0, sizeof other.used);
        if ((rc = llmem_pack_first_fit(r, &other, remain)) != LLMEM_OK)
            goto done;
        swap_if_better(best, &other);
        if (r->fill_complete && llmem_pack_lp(r, w.want, r->counts, &bound, x)) {
            other.n = 0;
            memset(other.used, 0, sizeof other.used);
            if ((rc = rounded(r, x, w.want, r->counts, &other)) != LLMEM_OK)
                goto done;
            swap_if_better(best, &other);
        }
        left_of(r, best, cap, remain);
        if ((rc = extend(r, best, remain, *jobs_bound - placed(best), &w)) != LLMEM_OK)
            goto done;
        if (placed(best) == before)
            break;
    }
done:
    llmem_pack_plan_free(ctx, &other);
    llmem_pack_plan_free(ctx, &w.trial);
    llmem__free(ctx, cap);
    llmem__free(ctx, x);
    return rc;
}

static void free_run(pack_run *r)
{
    llmem_ctx *ctx = r->p->ctx;
    llmem__free(ctx, r->classes);
    llmem__free(ctx, r->order);
    llmem_pack_fillings_free(r);
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
        if ((rc = llmem_pack_type_init(ctx, &p->types[t], p->type_gpu[t], p->type_limit[t],
                                       p->i[LLMEM_PACK_DRIVER])) != LLMEM_OK)
            goto fail;
    llmem_pack_room(&r, r.room);
    for (int t = 0; t < r.ntypes; t++)
        if (r.room[t] != PACK_NO_LIMIT)
            r.counts = r.room;
    if ((rc = llmem_pack_classify(&r)) != LLMEM_OK || (rc = llmem_pack_fillings(&r)) != LLMEM_OK)
        goto fail;
    demand = llmem__alloc(ctx, (r.nclasses + 1) * sizeof *demand);
    remain = llmem__alloc(ctx, (r.nclasses + 1) * sizeof *remain);
    x = llmem__alloc(ctx, (r.fill_max + 1) * sizeof *x);
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
    int lp_solved = llmem_pack_lp(&r, demand, r.counts, &lp_bound, x);
    if (lp_solved) {
        if ((rc = rounded(&r, x, demand, r.counts, &other)) != LLMEM_OK)
            goto fail;
        if (better(&other, &best)) {
            pack_plan t = best;
            best = other;
            other = t;
        }
        llmem_pack_plan_free(ctx, &other);
    }
    /* A limited fleet without room for every job: the most jobs it places. */
    uint64_t jobs_bound = 0;
    int proven = 0;
    for (uint32_t c = 0; c < r.nclasses; c++)
        jobs_bound += demand[c];
    if (placed(&best) < jobs_bound &&
        (rc = limited(&r, demand, &best, &jobs_bound, &proven)) != LLMEM_OK)
        goto fail;
    /* With counts, the limited GPUs where they save the most: the candidate
     * that fleets too large for the LP have besides first fit. */
    if (r.counts != NULL && !proven) {
        memcpy(remain, demand, r.nclasses * sizeof *remain);
        if ((rc = llmem_pack_priced_fit(&r, &other, remain)) != LLMEM_OK)
            goto fail;
        swap_if_better(&best, &other);
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
        lp_solved = llmem_pack_lp(&r, demand, r.counts, &lp_bound, x);
    uint64_t memory, compute, count;
    llmem_pack_bounds(&r, demand, &memory, &compute, &count);
    if (!lp_solved)
        lp_bound = 0;
    uint64_t bound = memory;
    bound = compute > bound ? compute : bound;
    bound = count > bound ? count : bound;
    bound = lp_bound > bound ? lp_bound : bound;
    /* The fewest GPUs for the jobs placed: met by the bound, or by the exact
     * search (with one limited type, its optimum has them). */
    int optimal = best.n <= bound || proven;
    if (proven && best.n > bound)
        bound = best.n;
    uint64_t limit = (uint64_t)p->i[LLMEM_PACK_EXACT_LIMIT];
    if (!optimal && r.fill_complete && limit > 0) {
        int found = 0;
        /* A limited fleet: the search that keeps the limits (these jobs fit,
         * so its optimum has them all, on the fewest GPUs), where its work
         * fits the cap; else the one that ignores them, whose result is
         * discarded when it exceeds one. With one type they are the same. */
        if (r.counts != NULL)
            found = llmem_pack_exact_limited(&r, demand, limit, &other) &&
                    placed(&other) == nplaced;
        if (!found) {
            llmem_pack_plan_free(ctx, &other);
            found = llmem_pack_exact(&r, demand, limit, &other);
        }
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
    /* Some jobs without room: optimal only with the most jobs any layout
     * places (the bound on the jobs) on the fewest GPUs any layout placing
     * that many needs. remain still holds every class's jobs. */
    if (!all_placed && !proven) {
        optimal = nplaced == jobs_bound &&
                  fewer_gpus_impossible(&r, remain, nplaced, best.n);
        if (optimal && best.n > bound)
            bound = best.n;
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
    p->result[LLMEM_PACK_JOBS_BOUND] = jobs_bound;
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
