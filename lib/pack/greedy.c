/* SPDX-License-Identifier: MIT */
/*
 * First fit decreasing, by class: classes large first, each job into the
 * first open GPU where one of its kinds (smallest usable first) keeps the
 * GPU's kind counts feasible, else into a new GPU of the type where it takes
 * the smallest share. A GPU that cannot take a class now never can (contents
 * only grow and feasible sets are closed under removal), so each class keeps
 * a cursor past such GPUs: the pass is linear in jobs plus GPUs times classes.
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
