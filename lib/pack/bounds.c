/* SPDX-License-Identifier: MIT */
/*
 * Combinatorial lower bounds on the GPUs a demand needs (docs/mig.md):
 *  - memory slices: the instances of one GPU never overlap, so their slots add
 *    up to at most the grid; a job takes at least the slots of its smallest
 *    holding kind (the whole GPU takes all). With several types, each job
 *    counts its smallest share over the types, in 24ths of a GPU.
 *  - compute slices: likewise, in 28ths.
 *  - count: take the jobs whose holding kinds on every type lie within a class
 *    c's; one GPU of type t holds at most cap_t(c) of them, the most instances
 *    of c's kinds any feasible layout has (1 for 7g or a whole GPU, 2 for the
 *    half-GPU profiles, 3 for 2g). So they need at least count / max_t cap_t(c)
 *    GPUs: the "profiles that cannot share a GPU".
 *
 * With a limited fleet, upper bounds on the jobs placed:
 *  - prices: for any p >= 0 over the classes, a job of class c placed counts
 *    (1 - p_c) + p_c, and a GPU of type t holds a filling F with
 *    F . p <= m_t = max over t's fillings; so the jobs placed are at most
 *    sum_c n_c max(1 - p_c, 0) + sum_t L_t m_t. With all GPUs capped at G as
 *    well, a price b0 on the cap gives G b0 + sum_t L_t max(m_t - b0, 0)
 *    (b0 >= m_t on a type without a limit). The jobs LP's duals (lp.c) make
 *    the best p; whatever they are, the bound holds;
 *  - knapsacks: the jobs that only limited types hold take at least their
 *    smallest share of memory slices (compute slices, instances), and the
 *    fleet has sum_t L_t GPUs' worth: at most as many as the smallest jobs
 *    that fit in that.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <math.h>

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

unsigned llmem_pack_capacity(const pack_type *t, uint8_t mask)
{
    unsigned best = 0;
    if (mask == 0)
        return 0;
    for (uint32_t s = 0; s < t->states; s++) {
        if (!t->feasible[s])
            continue;
        unsigned n = 0;
        for (int k = 0; k < t->nkinds; k++)
            if (mask >> k & 1)
                n += llmem_pack_count(t, s, k);
        if (n > best)
            best = n;
    }
    return best;
}

void llmem_pack_bounds(const pack_run *r, const uint64_t *demand, uint64_t *memory,
                       uint64_t *compute, uint64_t *count)
{
    uint64_t mem = 0, comp = 0;
    *count = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        mem += demand[c] * r->classes[c].memw;
        comp += demand[c] * r->classes[c].compw;
    }
    *memory = div_up(mem, 24);
    *compute = div_up(comp, 28);
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        unsigned cap = 0;
        for (int t = 0; t < r->ntypes; t++) {
            unsigned ct = llmem_pack_capacity(&r->types[t], r->classes[c].mask[t]);
            if (ct > cap)
                cap = ct;
        }
        uint64_t within = 0;
        for (uint32_t d = 0; d < r->nclasses; d++) {
            int inside = 1;
            for (int t = 0; t < r->ntypes && inside; t++)
                inside = (r->classes[d].mask[t] & ~r->classes[c].mask[t]) == 0;
            if (inside)
                within += demand[d];
        }
        if (cap > 0 && div_up(within, cap) > *count)
            *count = div_up(within, cap);
    }
}

int llmem_pack_unlimited(const pack_run *r, uint32_t c)
{
    for (int t = 0; t < r->ntypes; t++)
        if (r->types[t].limit == 0 && r->classes[c].mask[t] != 0)
            return 1;
    return 0;
}

/* a x b, saturated at UINT64_MAX. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

uint64_t llmem_pack_jobs_bound(const pack_run *r, const uint64_t *demand, const double *p,
                               uint64_t total)
{
    llmem_ctx *ctx = r->p->ctx;
    double m[PACK_MAX_TYPES] = { 0 };
    if (!r->fill_complete || r->nfill == 0)
        return UINT64_MAX;
    double *q = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *q);
    if (q == NULL)
        return UINT64_MAX; /* no bound is a safe answer */
    double value = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        q[c] = p[c] > 0 ? p[c] : 0;
        /* Without a cap on all GPUs, a type without a limit must price at 0. */
        if (total == PACK_NO_LIMIT && llmem_pack_unlimited(r, c))
            q[c] = 0;
        if (q[c] < 1)
            value += (double)demand[c] * (1 - q[c]);
    }
    for (size_t j = 0; j < r->nfill; j++) {
        const pack_filling *f = &r->fill[j];
        double s = 0;
        for (int u = 0; u < f->nunits; u++)
            s += q[f->unit[u].cls];
        if (s > m[f->type])
            m[f->type] = s;
    }
    llmem__free(ctx, q);
    /* The cap's price b0: 0 or one of the m_t (the cost is piecewise linear). */
    double best = INFINITY;
    for (int i = -1; i < r->ntypes; i++) {
        double b0 = i < 0 ? 0 : m[i], cost = 0;
        if (total == PACK_NO_LIMIT && b0 > 0)
            continue;
        if (total != PACK_NO_LIMIT)
            cost = (double)total * b0;
        for (int t = 0; t < r->ntypes && cost < INFINITY; t++) {
            if (m[t] <= b0)
                continue;
            cost = r->types[t].limit == 0 ? INFINITY
                                          : cost + (double)r->types[t].limit * (m[t] - b0);
        }
        if (cost < best)
            best = cost;
    }
    value += best;
    /* Rounded down after a relative tolerance against floating-point error. */
    value += 1e-9 * (value > 1 ? value : 1);
    return value < 9e18 ? (uint64_t)floor(value) : UINT64_MAX;
}

/* The most jobs of the classes in `list` (n of them) whose weights w (per
 * class) add up to at most cap: the lightest first. */
static uint64_t knapsack(const uint64_t *demand, uint32_t *list, uint32_t n, const uint64_t *w,
                         uint64_t cap)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && w[list[j]] < w[list[j - 1]]; j--) {
            uint32_t t = list[j];
            list[j] = list[j - 1];
            list[j - 1] = t;
        }
    uint64_t jobs = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c = list[i], take = w[c] > 0 ? cap / w[c] : demand[c];
        if (take < demand[c])
            return jobs + take;
        jobs += demand[c];
        cap -= demand[c] * w[c];
    }
    return jobs;
}

uint64_t llmem_pack_jobs_bound_simple(const pack_run *r, const uint64_t *demand)
{
    llmem_ctx *ctx = r->p->ctx;
    uint64_t free_jobs = 0, restricted = 0, slots = 0, compute = 0, units = 0;
    int limited = 0;
    for (int t = 0; t < r->ntypes; t++) {
        const pack_type *ty = &r->types[t];
        if (ty->limit == 0)
            continue;
        limited = 1;
        slots = add_sat(slots, mul_sat(ty->limit, 24));
        compute = add_sat(compute, mul_sat(ty->limit, 28));
        units = add_sat(units, mul_sat(ty->limit, ty->most_units));
    }
    uint32_t *list = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *list);
    uint64_t *w = llmem__alloc(ctx, 2 * (r->nclasses + 1) * sizeof *w);
    uint32_t n = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (!limited || llmem_pack_unlimited(r, c)) {
            free_jobs += demand[c];
            continue;
        }
        restricted += demand[c];
        if (list != NULL && demand[c] > 0)
            list[n++] = c;
    }
    uint64_t most = restricted < units ? restricted : units;
    if (list != NULL && w != NULL && n > 0) {
        uint64_t *cw = w + r->nclasses + 1;
        for (uint32_t c = 0; c < r->nclasses; c++) {
            w[c] = r->classes[c].memw;
            cw[c] = r->classes[c].compw;
        }
        uint64_t k = knapsack(demand, list, n, w, slots);
        most = k < most ? k : most;
        k = knapsack(demand, list, n, cw, compute);
        most = k < most ? k : most;
    }
    llmem__free(ctx, list);
    llmem__free(ctx, w);
    return free_jobs + most;
}
