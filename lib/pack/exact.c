/* SPDX-License-Identifier: MIT */
/*
 * The exact optimum for small demands: with f(N) the fewest GPUs for class
 * counts N, f(0) = 0 and f(N) = 1 + min over fillings F of f(max(N - F, 0)).
 * Any GPU's content is a filling, and any part of a filling is one, so the
 * maximal fillings (plus the singletons) suffice and the recursion is exact.
 * States are the vectors 0 <= N <= demand in mixed radix, each smaller than
 * the states it is reached from, so one pass in index order fills the table.
 *
 * The table holds f for every N up to the demand, so it answers both
 * questions: the fewest GPUs for the whole demand (llmem_pack_exact, which
 * ignores type limits and discards a result that exceeds one), and, for a
 * limited fleet, the N it can hold with the most jobs, then the fewest GPUs,
 * then the most memory slices (llmem_pack_exact_limited). There each type t
 * has its own table f_t (its fillings only), INF above its limit L_t, and the
 * fleet's is their min-plus convolution over the parts of N:
 * h_t(N) = min over N' <= N of h_{t-1}(N - N') + f_t(N'), which enumerates
 * prod (n_i + 1)(n_i + 2) / 2 pairs per type: capped like the table.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <string.h>

/* Work cap: states x fillings beyond this is not searched. */
#define EXACT_MAX_WORK 40000000u
#define NONE UINT32_MAX

typedef struct space {
    uint32_t k, cls[64];      /* the classes with demand, and their radix */
    uint64_t radix[64], states;
} space;

/* The state space of demand; 0 when it is over the limit or the work cap. */
static int space_of(const pack_run *r, const uint64_t *demand, uint64_t limit, space *sp)
{
    sp->k = 0;
    sp->states = 1;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        if (sp->k == 64)
            return 0;
        sp->cls[sp->k] = c;
        sp->radix[sp->k] = sp->states;
        sp->states *= demand[c] + 1;
        sp->k++;
        if (sp->states > limit)
            return 0;
    }
    return sp->k > 0 && r->fill_complete && r->nfill > 0 && sp->states * r->nfill <= EXACT_MAX_WORK;
}

/* f[s] and the filling chosen at s, for every state, with the fillings of
 * type `type` (-1: all); 0 when out of memory. */
static int table(pack_run *r, const uint64_t *demand, const space *sp, int type, uint32_t *f,
                 uint32_t *choice)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t k = sp->k;
    uint8_t *fc = llmem__calloc(ctx, r->nfill * k); /* filling counts on the active classes */
    uint64_t *n = llmem__calloc(ctx, k * sizeof *n);
    if (fc == NULL || n == NULL) {
        llmem__free(ctx, fc);
        llmem__free(ctx, n);
        return 0;
    }
    for (size_t j = 0; j < r->nfill; j++)
        for (int u = 0; u < r->fill[j].nunits; u++)
            for (uint32_t i = 0; i < k; i++)
                if (sp->cls[i] == r->fill[j].unit[u].cls)
                    fc[j * k + i]++;
    f[0] = 0;
    for (uint64_t s = 1; s < sp->states; s++) {
        /* n: the vector of s (incremented from the previous one). */
        for (uint32_t i = 0; i < k; i++) {
            if (n[i] < demand[sp->cls[i]]) {
                n[i]++;
                break;
            }
            n[i] = 0;
        }
        uint32_t best = NONE, pick = 0;
        /* f is monotone (any part of a demand needs no more GPUs): f[s] is
         * at least each f[s - e_i] and 1, so the first filling that reaches
         * that is the one the scan would keep. NONE below means NONE here. */
        uint32_t floor_f = 1;
        for (uint32_t i = 0; i < k; i++)
            if (n[i] > 0 && f[s - sp->radix[i]] > floor_f)
                floor_f = f[s - sp->radix[i]];
        for (size_t j = 0; j < r->nfill && best > floor_f; j++) {
            uint64_t next = 0;
            int useful = 0;
            if (type >= 0 && r->fill[j].type != type)
                continue;
            for (uint32_t i = 0; i < k; i++) {
                uint64_t take = fc[j * k + i] < n[i] ? fc[j * k + i] : n[i];
                useful |= take > 0;
                next += (n[i] - take) * sp->radix[i];
            }
            if (useful && f[next] != NONE && f[next] + 1 < best) {
                best = f[next] + 1;
                pick = (uint32_t)j;
            }
        }
        f[s] = best;
        choice[s] = pick;
    }
    llmem__free(ctx, fc);
    llmem__free(ctx, n);
    return 1;
}

/* Add to plan the GPUs of the optimum at state s (class counts n, overwritten). */
static int rebuild(pack_run *r, const space *sp, uint64_t s, uint64_t *n, const uint32_t *choice,
                   pack_plan *plan)
{
    while (s != 0) {
        const pack_filling *fl = &r->fill[choice[s]];
        const pack_type *t = &r->types[fl->type];
        pack_gpu g;
        memset(&g, 0, sizeof g);
        g.type = fl->type;
        for (int u = 0; u < fl->nunits; u++) {
            uint32_t i = 0;
            while (i < sp->k && sp->cls[i] != fl->unit[u].cls)
                i++;
            if (i == sp->k || n[i] == 0)
                continue;
            n[i]--;
            s -= sp->radix[i];
            g.unit[g.nunits++] = fl->unit[u];
            g.state += t->step[fl->unit[u].kind];
        }
        if (llmem_pack_plan_push(r->p->ctx, plan, &g) != LLMEM_OK)
            return 0;
    }
    return 1;
}

int llmem_pack_exact(pack_run *r, const uint64_t *demand, uint64_t limit, pack_plan *plan)
{
    llmem_ctx *ctx = r->p->ctx;
    space sp;
    uint64_t n[64];
    int ok = 0;
    if (!space_of(r, demand, limit, &sp))
        return 0;
    uint32_t *f = llmem__alloc(ctx, sp.states * sizeof *f);
    uint32_t *choice = llmem__alloc(ctx, sp.states * sizeof *choice);
    if (f == NULL || choice == NULL || !table(r, demand, &sp, -1, f, choice))
        goto done;
    /* Rebuild from the full demand. */
    for (uint32_t i = 0; i < sp.k; i++)
        n[i] = demand[sp.cls[i]];
    plan->n = 0;
    memset(plan->used, 0, sizeof plan->used);
    if (!rebuild(r, &sp, sp.states - 1, n, choice, plan))
        goto done;
    ok = 1;
    for (int t = 0; t < r->ntypes; t++)
        if (r->types[t].limit != 0 && plan->used[t] > r->types[t].limit)
            ok = 0;
done:
    llmem__free(ctx, f);
    llmem__free(ctx, choice);
    return ok;
}

/* The vector of state s. */
static void digits(const space *sp, const uint64_t *demand, uint64_t s, uint64_t *n)
{
    for (uint32_t i = 0; i < sp->k; i++)
        n[i] = s / sp->radix[i] % (demand[sp->cls[i]] + 1);
}

/* h = the min-plus convolution of h and g (g's part of each state in arg). */
static void convolve(const space *sp, const uint64_t *demand, uint32_t *h, const uint32_t *g,
                     uint32_t *arg, uint32_t *out)
{
    uint64_t n[64], m[64];
    for (uint64_t s = 0; s < sp->states; s++) {
        uint32_t best = NONE, pick = 0;
        uint64_t sub = 0;
        digits(sp, demand, s, n);
        memset(m, 0, sizeof m);
        /* The convolution is monotone too: out[s] is at least each
         * out[s - e_i] (computed: smaller indices), so the scan may stop at
         * the first part that reaches it. */
        uint32_t floor_h = 0;
        for (uint32_t i = 0; i < sp->k; i++)
            if (n[i] > 0 && out[s - sp->radix[i]] > floor_h)
                floor_h = out[s - sp->radix[i]];
        /* Every part m <= n, in index order (sub is its index). */
        for (; floor_h != NONE && best > floor_h;) {
            if (g[sub] != NONE && h[s - sub] != NONE && g[sub] + h[s - sub] < best) {
                best = g[sub] + h[s - sub];
                pick = (uint32_t)sub;
            }
            uint32_t i = 0;
            while (i < sp->k && m[i] == n[i]) {
                sub -= m[i] * sp->radix[i];
                m[i] = 0;
                i++;
            }
            if (i == sp->k)
                break;
            m[i]++;
            sub += sp->radix[i];
        }
        out[s] = best;
        arg[s] = pick;
    }
    memcpy(h, out, sp->states * sizeof *h);
}

int llmem_pack_exact_limited(pack_run *r, const uint64_t *demand, uint64_t limit,
                             pack_plan *plan)
{
    llmem_ctx *ctx = r->p->ctx;
    int nt = r->ntypes, ok = 0;
    space sp;
    uint64_t n[64], pairs = 1;
    if (!space_of(r, demand, limit, &sp))
        return 0;
    for (uint32_t i = 0; i < sp.k; i++) {
        uint64_t d = demand[sp.cls[i]];
        pairs *= (d + 1) * (d + 2) / 2;
        if (pairs > EXACT_MAX_WORK)
            break;
    }
    /* The tables and the convolutions share the work cap. */
    if (pairs * (uint64_t)(nt - 1) > EXACT_MAX_WORK - sp.states * r->nfill)
        return 0;
    size_t S = sp.states;
    /* Per type: f_t and its choices; the fleet's h, and each type's part. */
    uint32_t *f = llmem__alloc(ctx, (size_t)nt * S * sizeof *f);
    uint32_t *choice = llmem__alloc(ctx, (size_t)nt * S * sizeof *choice);
    uint32_t *arg = llmem__alloc(ctx, (size_t)nt * S * sizeof *arg);
    uint32_t *h = llmem__alloc(ctx, 2 * S * sizeof *h);
    if (f == NULL || choice == NULL || arg == NULL || h == NULL)
        goto done;
    for (int t = 0; t < nt; t++) {
        uint32_t *ft = f + (size_t)t * S;
        if (!table(r, demand, &sp, t, ft, choice + (size_t)t * S))
            goto done;
        if (r->types[t].limit != 0)
            for (size_t s = 0; s < S; s++)
                if (ft[s] != NONE && ft[s] > r->types[t].limit)
                    ft[s] = NONE;
        if (t == 0)
            memcpy(h, ft, S * sizeof *h);
        else
            convolve(&sp, demand, h, ft, arg + (size_t)t * S, h + S);
    }
    /* The best state in index order: most jobs, fewest GPUs, most memory slices. */
    uint64_t best = 0, best_jobs = 0, best_mem = 0, jobs = 0, mem = 0;
    memset(n, 0, sizeof n);
    for (uint64_t s = 1; s < S; s++) {
        for (uint32_t i = 0; i < sp.k; i++) {
            uint64_t w = r->classes[sp.cls[i]].memw;
            if (n[i] < demand[sp.cls[i]]) {
                n[i]++;
                jobs++;
                mem += w;
                break;
            }
            jobs -= n[i];
            mem -= n[i] * w;
            n[i] = 0;
        }
        if (h[s] == NONE)
            continue;
        if (jobs > best_jobs || (jobs == best_jobs && h[s] < h[best]) ||
            (jobs == best_jobs && h[s] == h[best] && mem > best_mem)) {
            best = s;
            best_jobs = jobs;
            best_mem = mem;
        }
    }
    /* Each type's part, from the last type down, its GPUs by its table. */
    plan->n = 0;
    memset(plan->used, 0, sizeof plan->used);
    for (int t = nt - 1; t >= 0; t--) {
        uint64_t part = t > 0 ? arg[(size_t)t * S + best] : best;
        digits(&sp, demand, part, n);
        if (!rebuild(r, &sp, part, n, choice + (size_t)t * S, plan))
            goto done;
        best -= part;
    }
    ok = 1;
done:
    llmem__free(ctx, f);
    llmem__free(ctx, choice);
    llmem__free(ctx, arg);
    llmem__free(ctx, h);
    return ok;
}
