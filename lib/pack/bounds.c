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
 * With counts (L_t GPUs of type t), each is a bound of the fleet as it is:
 * the GPUs that hold the most first, all L_t of a limited type, then the
 * next type (count_cover, llmem_pack_cover). For memory and compute, whose
 * shares differ by type, the classes get values v >= 0: a GPU of type t holds
 * jobs worth at most unit x max_c v_c / w_ct (w_ct: c's share of t), and the
 * GPUs must be worth n . v. The best v come from the dual of the share LP
 * with the counts (share_lp); any v >= 0 gives a valid bound.
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
#include "pack/simplex.h"

#include <math.h>
#include <string.h>

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

void llmem_pack_room(const pack_run *r, uint64_t *room)
{
    for (int t = 0; t < r->ntypes; t++)
        room[t] = r->types[t].limit != 0 ? r->types[t].limit : PACK_NO_LIMIT;
}

uint64_t llmem_pack_cover(const pack_run *r, const uint64_t *room, const double *m, double value)
{
    int order[PACK_MAX_TYPES], n = 0;
    for (int t = 0; t < r->ntypes; t++) {
        if (!(m[t] > 0))
            continue;
        int i = n++;
        for (; i > 0 && m[order[i - 1]] < m[t]; i--)
            order[i] = order[i - 1];
        order[i] = t;
    }
    /* A relative tolerance against floating-point error, as the LP bound's. */
    value -= 1e-9 * (value > 1 ? value : 1);
    uint64_t gpus = 0;
    for (int i = 0; i < n && value > 0; i++) {
        uint64_t limit = room[order[i]];
        double need = value / m[order[i]];
        need -= 1e-9 * (need > 1 ? need : 1);
        if (limit == PACK_NO_LIMIT || need <= (double)limit)
            return need <= 0 ? gpus : need < 9e18 ? gpus + (uint64_t)ceil(need) : 0;
        gpus += limit;
        value -= (double)limit * m[order[i]];
    }
    /* More than the whole fleet is worth: no layout exists, no bound is given. */
    return value > 0 ? 0 : gpus;
}

/* The fewest GPUs that hold `jobs` jobs when a GPU of type t holds at most
 * cap[t] of them: the largest capacity first, as many as each type has. 0
 * when the fleet cannot hold them (no layout, no bound). */
static uint64_t count_cover(const pack_run *r, const unsigned *cap, uint64_t jobs)
{
    int order[PACK_MAX_TYPES], n = 0;
    for (int t = 0; t < r->ntypes; t++) {
        if (cap[t] == 0)
            continue;
        int i = n++;
        for (; i > 0 && cap[order[i - 1]] < cap[t]; i--)
            order[i] = order[i - 1];
        order[i] = t;
    }
    uint64_t gpus = 0;
    for (int i = 0; i < n && jobs > 0; i++) {
        uint64_t limit = r->types[order[i]].limit, need = div_up(jobs, cap[order[i]]);
        if (limit == 0 || need <= limit)
            return gpus + need;
        gpus += limit;
        jobs -= limit * cap[order[i]];
    }
    return jobs > 0 ? 0 : gpus;
}

/* Class shares of one type: the slots (24ths of the grid) and compute slices
 * (28ths) of the smallest kind of mask (classes.c counts the same); 0 when
 * mask is empty. */
static void type_shares(const pack_type *t, uint8_t mask, uint32_t *mem, uint32_t *comp)
{
    *mem = 0;
    *comp = 0;
    for (int k = 0; k < t->nkinds; k++) {
        if (!(mask >> k & 1))
            continue;
        const pack_kind *kd = &t->kind[k];
        uint32_t mw = kd->whole ? 24u : kd->slots * (24u / t->grid);
        uint32_t cw = kd->whole ? 28u : kd->compute * (28u / t->compute);
        if (*mem == 0 || mw < *mem)
            *mem = mw;
        if (*comp == 0 || cw < *comp)
            *comp = cw;
    }
}

/* The share bound of a fleet with counts: w[c * PACK_MAX_TYPES + t] is
 * class c's share of a GPU of type t, in `unit`ths (0: t does not hold c).
 * The class values v solve the dual of the share LP (min sum_t g_t subject
 * to each class placed, the shares on t at most unit x g_t, g_t <= L_t):
 *
 *     max n . v - sum_t L_t mu_t  subject to  v_c <= (1 + mu_t) w_ct / unit
 *     (mu_t = 0 on a type without a limit),  v, mu >= 0,
 *
 * from its slack basis (every right-hand side is >= 0). The bound is then
 * llmem_pack_cover() of the GPUs' worth under v, valid whatever v the
 * simplex returned; 0 when it was not solved. */
static uint64_t share_lp(const pack_run *r, const uint64_t *demand, const uint32_t *w, double unit)
{
    llmem_ctx *ctx = r->p->ctx;
    int nt = r->ntypes;
    uint32_t k = 0, q = 0, rows = 0, lim_col[PACK_MAX_TYPES];
    uint64_t bound = 0;
    for (int t = 0; t < nt; t++)
        lim_col[t] = r->types[t].limit != 0 ? q++ : UINT32_MAX;
    /* Rows: one per (class, limited type holding it), one per class some
     * type without a limit holds (its smallest share there). */
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        k++;
        int free_row = 0;
        for (int t = 0; t < nt; t++)
            if (w[c * PACK_MAX_TYPES + t] != 0) {
                rows += lim_col[t] != UINT32_MAX;
                free_row |= lim_col[t] == UINT32_MAX;
            }
        rows += (uint32_t)free_row;
    }
    if (k == 0 || q == 0)
        return 0;
    simplex l = { .m = rows, .n = k + q, .logical = 1.0, .clamp = 1 };
    size_t m = rows;
    uint32_t *cls = llmem__alloc(ctx, k * sizeof *cls);
    size_t *start = llmem__alloc(ctx, (l.n + 1) * sizeof *start);
    uint32_t *row = llmem__alloc(ctx, 2 * m * sizeof *row);
    double *val = llmem__alloc(ctx, 2 * m * sizeof *val);
    double *cost = llmem__alloc(ctx, l.n * sizeof *cost);
    double *b = llmem__alloc(ctx, m * sizeof *b);
    uint32_t *row_class = llmem__alloc(ctx, m * sizeof *row_class);
    int *row_type = llmem__alloc(ctx, m * sizeof *row_type);
    int ready = llmem_simplex_alloc(ctx, &l);
    if (cls == NULL || start == NULL || row == NULL || val == NULL || cost == NULL || b == NULL ||
        row_class == NULL || row_type == NULL || !ready)
        goto done;
    l.b = b;
    uint32_t i = 0, e = 0;
    rows = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        uint32_t free_share = 0;
        for (int t = 0; t < nt; t++) {
            uint32_t s = w[c * PACK_MAX_TYPES + t];
            if (s == 0)
                continue;
            if (lim_col[t] == UINT32_MAX) {
                free_share = free_share == 0 || s < free_share ? s : free_share;
                continue;
            }
            row_class[rows] = i;
            row_type[rows] = t;
            b[rows++] = s / unit;
        }
        if (free_share != 0) {
            row_class[rows] = i;
            row_type[rows] = -1;
            b[rows++] = free_share / unit;
        }
        cls[i++] = c;
    }
    /* Columns: v_i (+1 in its class's rows), then mu_t (-share in its rows). */
    for (i = 0; i < k; i++) {
        start[i] = e;
        cost[i] = (double)demand[cls[i]];
        for (uint32_t j = 0; j < m; j++)
            if (row_class[j] == i) {
                row[e] = j;
                val[e++] = 1.0;
            }
    }
    for (int t = 0; t < nt; t++) {
        if (lim_col[t] == UINT32_MAX)
            continue;
        start[k + lim_col[t]] = e;
        cost[k + lim_col[t]] = -(double)r->types[t].limit;
        for (uint32_t j = 0; j < m; j++)
            if (row_type[j] == t) {
                row[e] = j;
                val[e++] = -b[j];
            }
    }
    start[l.n] = e;
    l.start = start;
    l.row = row;
    l.val = val;
    l.cost = cost;
    for (uint32_t j = 0; j < m; j++) {
        l.basis[j] = l.n + j;
        l.binv[j * m + j] = 1.0;
        l.xb[j] = b[j];
    }
    if (!llmem_simplex_run(&l))
        goto done;
    /* The GPUs' worth under v: a type's units go to its best value per share. */
    double *v = l.d, worth[PACK_MAX_TYPES] = { 0 }, value = 0; /* k <= m: d is free now */
    memset(v, 0, k * sizeof *v);
    for (uint32_t j = 0; j < m; j++)
        if (l.basis[j] < k && l.xb[j] > 0)
            v[l.basis[j]] += l.xb[j];
    for (i = 0; i < k; i++) {
        value += (double)demand[cls[i]] * v[i];
        for (int t = 0; t < nt; t++) {
            uint32_t s = w[cls[i] * PACK_MAX_TYPES + t];
            if (s != 0 && unit * v[i] / s > worth[t])
                worth[t] = unit * v[i] / s;
        }
    }
    uint64_t room[PACK_MAX_TYPES];
    llmem_pack_room(r, room);
    bound = llmem_pack_cover(r, room, worth, value);
done:
    llmem__free(ctx, cls);
    llmem__free(ctx, start);
    llmem__free(ctx, row);
    llmem__free(ctx, val);
    llmem__free(ctx, cost);
    llmem__free(ctx, b);
    llmem__free(ctx, row_class);
    llmem__free(ctx, row_type);
    llmem_simplex_free(ctx, &l);
    return bound;
}

void llmem_pack_bounds(const pack_run *r, const uint64_t *demand, uint64_t *memory,
                       uint64_t *compute, uint64_t *count)
{
    uint64_t mem = 0, comp = 0;
    int limited = 0;
    *count = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        mem += demand[c] * r->classes[c].memw;
        comp += demand[c] * r->classes[c].compw;
    }
    *memory = div_up(mem, 24);
    *compute = div_up(comp, 28);
    for (int t = 0; t < r->ntypes; t++)
        limited |= r->types[t].limit != 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        unsigned cap[PACK_MAX_TYPES];
        for (int t = 0; t < r->ntypes; t++)
            cap[t] = llmem_pack_capacity(&r->types[t], r->classes[c].mask[t]);
        uint64_t within = 0;
        for (uint32_t d = 0; d < r->nclasses; d++) {
            int inside = 1;
            for (int t = 0; t < r->ntypes && inside; t++)
                inside = (r->classes[d].mask[t] & ~r->classes[c].mask[t]) == 0;
            if (inside)
                within += demand[d];
        }
        uint64_t need = count_cover(r, cap, within);
        if (need > *count)
            *count = need;
    }
    if (!limited || r->nclasses == 0)
        return;
    /* With counts: the shares per type, and their LP bound. */
    uint32_t *w = llmem__calloc(r->p->ctx, 2 * (size_t)r->nclasses * PACK_MAX_TYPES * sizeof *w);
    if (w == NULL)
        return; /* the bounds above hold */
    uint32_t *cw = w + (size_t)r->nclasses * PACK_MAX_TYPES;
    for (uint32_t c = 0; c < r->nclasses; c++)
        for (int t = 0; t < r->ntypes; t++)
            type_shares(&r->types[t], r->classes[c].mask[t], &w[c * PACK_MAX_TYPES + t],
                        &cw[c * PACK_MAX_TYPES + t]);
    uint64_t b = share_lp(r, demand, w, 24.0);
    *memory = b > *memory ? b : *memory;
    b = share_lp(r, demand, cw, 28.0);
    *compute = b > *compute ? b : *compute;
    llmem__free(r->p->ctx, w);
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
