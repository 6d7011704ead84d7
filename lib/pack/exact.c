/* SPDX-License-Identifier: MIT */
/*
 * The exact optimum for small demands: with f(N) the fewest GPUs for class
 * counts N, f(0) = 0 and f(N) = 1 + min over fillings F of f(max(N - F, 0)).
 * Any GPU's content is a filling, and any part of a filling is one, so the
 * maximal fillings (plus the singletons) suffice and the recursion is exact.
 * States are the vectors 0 <= N <= demand in mixed radix, each smaller than
 * the states it is reached from, so one pass in index order fills the table.
 * The search ignores type limits; a result that exceeds one is discarded.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <string.h>

/* Work cap: states x fillings beyond this is not searched. */
#define EXACT_MAX_WORK 40000000u

int llmem_pack_exact(pack_run *r, const uint64_t *demand, uint64_t limit, pack_plan *plan)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t k = 0, cls[64];
    uint64_t radix[64], states = 1;
    int ok = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        if (k == 64)
            return 0;
        cls[k] = c;
        radix[k] = states;
        states *= demand[c] + 1;
        k++;
        if (states > limit)
            return 0;
    }
    if (k == 0 || r->nfill == 0 || states * r->nfill > EXACT_MAX_WORK)
        return 0;
    uint32_t *f = llmem__alloc(ctx, states * sizeof *f);
    uint32_t *choice = llmem__alloc(ctx, states * sizeof *choice);
    uint8_t *fc = llmem__calloc(ctx, r->nfill * k); /* filling counts on the active classes */
    uint64_t *n = llmem__calloc(ctx, k * sizeof *n);
    if (f == NULL || choice == NULL || fc == NULL || n == NULL)
        goto done;
    for (size_t j = 0; j < r->nfill; j++)
        for (int u = 0; u < r->fill[j].nunits; u++)
            for (uint32_t i = 0; i < k; i++)
                if (cls[i] == r->fill[j].unit[u].cls)
                    fc[j * k + i]++;
    f[0] = 0;
    for (uint64_t s = 1; s < states; s++) {
        /* n: the vector of s (incremented from the previous one). */
        for (uint32_t i = 0; i < k; i++) {
            if (n[i] < demand[cls[i]]) {
                n[i]++;
                break;
            }
            n[i] = 0;
        }
        uint32_t best = UINT32_MAX, pick = 0;
        for (size_t j = 0; j < r->nfill; j++) {
            uint64_t next = 0;
            int useful = 0;
            for (uint32_t i = 0; i < k; i++) {
                uint64_t take = fc[j * k + i] < n[i] ? fc[j * k + i] : n[i];
                useful |= take > 0;
                next += (n[i] - take) * radix[i];
            }
            if (useful && f[next] + 1 < best) {
                best = f[next] + 1;
                pick = (uint32_t)j;
            }
        }
        f[s] = best;
        choice[s] = pick;
    }
    /* Rebuild from the full demand. */
    uint64_t s = states - 1;
    for (uint32_t i = 0; i < k; i++)
        n[i] = demand[cls[i]];
    plan->n = 0;
    memset(plan->used, 0, sizeof plan->used);
    while (s != 0) {
        const pack_filling *fl = &r->fill[choice[s]];
        const pack_type *t = &r->types[fl->type];
        pack_gpu g;
        memset(&g, 0, sizeof g);
        g.type = fl->type;
        for (int u = 0; u < fl->nunits; u++) {
            uint32_t i = 0;
            while (i < k && cls[i] != fl->unit[u].cls)
                i++;
            if (i == k || n[i] == 0)
                continue;
            n[i]--;
            s -= radix[i];
            g.unit[g.nunits++] = fl->unit[u];
            g.state += t->step[fl->unit[u].kind];
        }
        if (llmem_pack_plan_push(ctx, plan, &g) != LLMEM_OK)
            goto done;
    }
    ok = 1;
    for (int t = 0; t < r->ntypes; t++)
        if (r->types[t].limit != 0 && plan->used[t] > r->types[t].limit)
            ok = 0;
done:
    llmem__free(ctx, f);
    llmem__free(ctx, choice);
    llmem__free(ctx, fc);
    llmem__free(ctx, n);
    return ok;
}
