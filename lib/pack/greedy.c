/* SPDX-License-Identifier: MIT */
/*
 * First fit decreasing, by class: classes large first, each job into the
 * first open GPU where one of its kinds (smallest usable first) keeps the
 * GPU's kind counts feasible, else into a new GPU of the type where it takes
 * the smallest share. A GPU that cannot take a class now never can (contents
 * only grow and feasible sets are closed under removal), so each class keeps
 * a cursor past such GPUs: the pass is linear in jobs plus GPUs times classes.
 *
 * With counts, first fit gives a limited type's GPUs to whichever jobs come
 * first, not to those they save the most on. The priced fit (docs/mig.md,
 * step 4) gives each class a price, what one of its jobs costs on the types
 * without a limit (a share of one of their GPUs), and fills the limited GPUs
 * first, each time with the layout worth the most at those prices over every
 * limited type with GPUs left, while that is worth more than the one GPU it
 * costs; first fit places the rest. It needs no fillings, so it serves
 * fleets too large for the LP.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <string.h>

int llmem_pack_plan_push(llmem_ctx *ctx, pack_plan *plan, const pack_gpu *g)
{
    if (plan->n == plan->cap) {
        size_t cap = plan->cap ? plan->cap * 2 : 16;
        pack_gpu *a = llmem__alloc(ctx, cap * sizeof *a);
        if (a == NULL)
            return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        if (plan->n)
            memcpy(a, plan->gpu, plan->n * sizeof *a);
        llmem__free(ctx, plan->gpu);
        plan->gpu = a;
        plan->cap = cap;
    }
    plan->gpu[plan->n++] = *g;
    plan->used[g->type]++;
    return LLMEM_OK;
}

void llmem_pack_plan_free(llmem_ctx *ctx, pack_plan *plan)
{
    llmem__free(ctx, plan->gpu);
    memset(plan, 0, sizeof *plan);
}

/* Add a unit of class c to g on the first kind that keeps it feasible. */
static int try_add(const pack_run *r, pack_gpu *g, uint32_t c)
{
    const pack_type *t = &r->types[g->type];
    uint8_t mask = r->classes[c].mask[g->type];
    if (mask == 0 || g->nunits >= PACK_MAX_UNITS)
        return 0;
    for (int k = 0; k < t->nkinds; k++) {
        if (!(mask >> k & 1) || llmem_pack_count(t, g->state, k) >= t->kind[k].max ||
            !t->feasible[g->state + t->step[k]])
            continue;
        g->state += t->step[k];
        g->unit[g->nunits].cls = c;
        g->unit[g->nunits].kind = (uint8_t)k;
        g->nunits++;
        return 1;
    }
    return 0;
}

/* The share (in 24ths of the slots) class c takes on type t: its smallest kind. */
static uint32_t share(const pack_run *r, uint32_t c, int t)
{
    const pack_type *ty = &r->types[t];
    uint32_t best = UINT32_MAX;
    for (int k = 0; k < ty->nkinds; k++) {
        if (!(r->classes[c].mask[t] >> k & 1))
            continue;
        uint32_t s = ty->kind[k].whole ? 24u : ty->kind[k].slots * (24u / ty->grid);
        if (s < best)
            best = s;
    }
    return best;
}

int llmem_pack_first_fit(pack_run *r, pack_plan *plan, uint64_t *remain)
{
    llmem_ctx *ctx = r->p->ctx;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        size_t cursor = 0;
        while (remain[c] > 0) {
            int placed = 0;
            for (; cursor < plan->n; cursor++)
                if (try_add(r, &plan->gpu[cursor], c)) {
                    placed = 1;
                    break;
                }
            if (!placed) {
                int best = -1;
                uint32_t best_share = UINT32_MAX;
                for (int t = 0; t < r->ntypes; t++) {
                    if (r->classes[c].mask[t] == 0 ||
                        (r->types[t].limit != 0 && plan->used[t] >= r->types[t].limit))
                        continue;
                    uint32_t s = share(r, c, t);
                    if (s < best_share) {
                        best_share = s;
                        best = t;
                    }
                }
                if (best < 0)
                    break; /* no room: the rest of the class stays in remain */
                pack_gpu g;
                memset(&g, 0, sizeof g);
                g.type = (uint8_t)best;
                int rc = llmem_pack_plan_push(ctx, plan, &g);
                if (rc != LLMEM_OK)
                    return rc;
                cursor = plan->n - 1;
                try_add(r, &plan->gpu[cursor], c);
            }
            remain[c]--;
        }
    }
    return LLMEM_OK;
}

/* A class no type without a limit holds is worth more than any GPU of the
 * others (at most PACK_MAX_UNITS units priced at most 1): limited GPUs take
 * such jobs first, the most of them a GPU. */
#define PRICE_RESTRICTED ((double)PACK_MAX_UNITS + 1)

/* What a job of class c costs on the types without a limit: the least, over
 * them, of its share of one GPU (its cheapest kind's memory slots or compute
 * slices, whichever is the larger part of the GPU), or one of the most
 * instances of its kinds a GPU holds where that is more. PRICE_RESTRICTED
 * when no such type holds it. */
static double class_price(const pack_run *r, uint32_t c)
{
    double price = PRICE_RESTRICTED;
    for (int t = 0; t < r->ntypes; t++) {
        const pack_type *ty = &r->types[t];
        uint8_t mask = r->classes[c].mask[t];
        if (ty->limit != 0 || mask == 0)
            continue;
        double share = 1.0;
        for (int k = 0; k < ty->nkinds; k++) {
            if (!(mask >> k & 1) || ty->kind[k].whole)
                continue;
            double mem = (double)ty->kind[k].slots / ty->grid;
            double comp = (double)ty->kind[k].compute / ty->compute;
            double part = mem > comp ? mem : comp;
            share = part < share ? part : share;
        }
        double per_instance = 1.0 / llmem_pack_capacity(ty, mask);
        double cost = share > per_instance ? share : per_instance;
        price = cost < price ? cost : price;
    }
    return price;
}

/* The priced fit's view of one limited type: its maximal states (every
 * layout is a part of one, and a unit may stay empty) with their kind counts,
 * and for each kind the classes it holds, the dearest first. */
typedef struct priced_type {
    uint32_t nstates;
    uint8_t *count;                  /* [nstates][nkinds] */
    uint32_t *held[PACK_MAX_KINDS];  /* classes by price, dearest first */
    uint32_t nheld[PACK_MAX_KINDS];
} priced_type;

/* The best filling of one GPU of type t at prices `price` for the jobs in
 * remain (units of a kind in kind order, each the dearest class its kind
 * holds with a job left): its value, units in g. `taken` is scratch, zero on
 * entry and on return. */
static double best_filling(const pack_run *r, int t, const priced_type *pt, const double *price,
                           const uint64_t *remain, uint64_t *taken, pack_gpu *g)
{
    const pack_type *ty = &r->types[t];
    double best = 0;
    g->nunits = 0;
    for (uint32_t i = 0; i < pt->nstates; i++) {
        const uint8_t *cnt = pt->count + (size_t)i * ty->nkinds;
        double upper = 0;
        /* At most each kind's dearest class with a job left in every unit. */
        for (int k = 0; k < ty->nkinds; k++) {
            for (uint32_t h = 0; h < pt->nheld[k] && cnt[k] > 0; h++)
                if (remain[pt->held[k][h]] > 0) {
                    upper += cnt[k] * price[pt->held[k][h]];
                    break;
                }
        }
        if (upper <= best + 1e-12)
            continue;
        pack_gpu trial;
        double value = 0;
        memset(&trial, 0, sizeof trial);
        trial.type = (uint8_t)t;
        for (int k = 0; k < ty->nkinds; k++) {
            uint32_t h = 0;
            for (unsigned u = 0; u < cnt[k]; u++) {
                while (h < pt->nheld[k] && remain[pt->held[k][h]] <= taken[pt->held[k][h]])
                    h++;
                if (h == pt->nheld[k])
                    break;
                uint32_t c = pt->held[k][h];
                taken[c]++;
                value += price[c];
                trial.unit[trial.nunits].cls = c;
                trial.unit[trial.nunits].kind = (uint8_t)k;
                trial.nunits++;
                trial.state += ty->step[k];
            }
        }
        for (int u = 0; u < trial.nunits; u++)
            taken[trial.unit[u].cls] = 0;
        if (value > best + 1e-12) {
            best = value;
            *g = trial;
        }
    }
    return best;
}

/* Type t's maximal states and each kind's classes by price; 0 when out of
 * memory. */
static int priced_setup(pack_run *r, int t, const double *price, priced_type *pt)
{
    llmem_ctx *ctx = r->p->ctx;
    const pack_type *ty = &r->types[t];
    memset(pt, 0, sizeof *pt);
    uint32_t n = llmem_pack_maximal_states(ty, NULL);
    if ((pt->count = llmem__alloc(ctx, ((size_t)n + 1) * ty->nkinds)) == NULL)
        return 0;
    pt->nstates = llmem_pack_maximal_states(ty, pt->count);
    for (int k = 0; k < ty->nkinds; k++) {
        pt->held[k] = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *pt->held[k]);
        if (pt->held[k] == NULL)
            return 0;
        for (uint32_t c = 0; c < r->nclasses; c++) {
            if (!(r->classes[c].mask[t] >> k & 1))
                continue;
            /* Dearest first; among equals the class ranked first (larger). */
            uint32_t i = pt->nheld[k]++;
            for (; i > 0 && price[pt->held[k][i - 1]] < price[c]; i--)
                pt->held[k][i] = pt->held[k][i - 1];
            pt->held[k][i] = c;
        }
    }
    return 1;
}

static void priced_free(llmem_ctx *ctx, priced_type *pt)
{
    llmem__free(ctx, pt->count);
    for (int k = 0; k < PACK_MAX_KINDS; k++)
        llmem__free(ctx, pt->held[k]);
}

int llmem_pack_priced_fit(pack_run *r, pack_plan *plan, uint64_t *remain)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t nc = r->nclasses;
    priced_type pt[PACK_MAX_TYPES];
    int rc = LLMEM_OK;
    memset(pt, 0, sizeof pt);
    double *price = llmem__alloc(ctx, (nc + 1) * sizeof *price);
    uint64_t *taken = llmem__calloc(ctx, (nc + 1) * sizeof *taken);
    if (price == NULL || taken == NULL)
        goto nomem;
    for (uint32_t c = 0; c < nc; c++)
        price[c] = class_price(r, c);
    for (int t = 0; t < r->ntypes; t++)
        if (r->types[t].limit != 0 && !priced_setup(r, t, price, &pt[t]))
            goto nomem;
    for (;;) {
        /* The limited GPU worth the most, over the types with GPUs left. */
        pack_gpu best, g;
        double most = 1.0 + 1e-9; /* a GPU must save more than itself */
        int found = 0;
        for (int t = 0; t < r->ntypes; t++) {
            if (r->types[t].limit == 0 || plan->used[t] >= r->types[t].limit)
                continue;
            double value = best_filling(r, t, &pt[t], price, remain, taken, &g);
            if (value > most) {
                most = value;
                best = g;
                found = 1;
            }
        }
        if (!found)
            break;
        /* As many copies as its jobs and its type's GPUs allow: none of the
         * values can grow, so it stays the best until then. */
        uint64_t copies = r->types[best.type].limit - plan->used[best.type];
        for (int u = 0; u < best.nunits; u++)
            taken[best.unit[u].cls]++;
        for (int u = 0; u < best.nunits; u++) {
            uint32_t c = best.unit[u].cls;
            uint64_t most_copies = remain[c] / taken[c];
            copies = most_copies < copies ? most_copies : copies;
        }
        for (int u = 0; u < best.nunits; u++)
            taken[best.unit[u].cls] = 0;
        for (uint64_t i = 0; i < copies && rc == LLMEM_OK; i++) {
            for (int u = 0; u < best.nunits; u++)
                remain[best.unit[u].cls]--;
            rc = llmem_pack_plan_push(ctx, plan, &best);
        }
        if (rc != LLMEM_OK)
            goto done;
    }
    rc = llmem_pack_first_fit(r, plan, remain);
    goto done;
nomem:
    rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
done:
    for (int t = 0; t < r->ntypes; t++)
        priced_free(ctx, &pt[t]);
    llmem__free(ctx, price);
    llmem__free(ctx, taken);
    return rc;
}
