/* SPDX-License-Identifier: MIT */
/*
 * From jobs to classes. On each type a job needs its bytes, plus the type's
 * CUDA context when the bytes exclude it; the kinds that hold it are those
 * with at least the usable bytes that hold that need with the margin
 * (llmem_pack_required) and the compute slices it asks for (the whole GPU
 * satisfies any). Jobs with the same kinds on every
 * type are interchangeable for packing: one class. Classes are ordered large
 * first (first fit decreasing), by their smallest share of a GPU's memory
 * slices, then of its compute slices.
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"

#include <stdlib.h>
#include <string.h>

/* Shares of a GPU in a common unit: slots in 24ths (grids of 4, 8 and 12),
 * compute slices in 28ths (4 and 7). */
#define SLOT_UNITS 24u
#define COMPUTE_UNITS 28u

typedef struct keyed {
    uint64_t key;
    uint64_t tie;
    uint32_t index;
} keyed;

static int keyed_cmp(const void *a, const void *b);

/* qsort, which takes no NULL array even of no elements. */
static void sort_keyed(keyed *k, size_t n)
{
    if (n > 1)
        qsort(k, n, sizeof *k, keyed_cmp);
}

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->tie != y->tie)
        return x->tie < y->tie ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The job's need on type t: its bytes, plus the context when they exclude
 * it; UINT64_MAX (saturated) and 0 when that exceeds 64 bits, else 1. */
static int job_need(const pack_type *t, const pack_job *j, uint64_t *need)
{
    if (j->level == LLMEM_LEVEL_DEVICE) {
        *need = j->bytes;
        return 1;
    }
    if (j->bytes > UINT64_MAX - t->context) {
        *need = UINT64_MAX;
        return 0;
    }
    *need = j->bytes + t->context;
    return 1;
}

/* The least usable bytes of t that hold j: 1, or 0 when they exceed 64 bits
 * (*required is then UINT64_MAX). */
static int requirement(const pack_type *t, const pack_job *j, int64_t margin, uint64_t *required)
{
    uint64_t need;
    *required = UINT64_MAX;
    return job_need(t, j, &need) && llmem_pack_required(need, margin, required);
}

/* The kinds of t that hold j (bit k). */
static uint8_t holding_kinds(const pack_type *t, const pack_job *j, int64_t margin)
{
    uint64_t required;
    uint8_t mask = 0;
    if (!requirement(t, j, margin, &required))
        return 0;
    for (int k = 0; k < t->nkinds; k++) {
        const pack_kind *kd = &t->kind[k];
        if (kd->usable >= required && (kd->whole || kd->compute >= j->min_compute))
            mask |= (uint8_t)(1u << k);
    }
    return mask;
}

/* A job no option holds: the largest option over the types (the whole GPU
 * or its largest profile), and how much it lacks. */
static void fits_nowhere(const pack_run *r, pack_job *j, int64_t margin)
{
    uint64_t best_usable = 0, best_req = 0;
    int exact = 1;
    j->status = LLMEM_PACK_FITS_NOWHERE;
    for (int t = 0; t < r->ntypes; t++) {
        const pack_type *ty = &r->types[t];
        for (int k = 0; k < ty->nkinds; k++) {
            const pack_kind *kd = &ty->kind[k];
            if (!kd->whole && kd->compute < j->min_compute)
                continue;
            if (kd->usable > best_usable) {
                exact = requirement(ty, j, margin, &best_req);
                best_usable = kd->usable;
                j->largest_gpu = ty->gpu;
                j->largest_profile = kd->profile;
                job_need(ty, j, &j->need);
            }
        }
    }
    /* A requirement beyond 64 bits lacks "everything" (as the fit's). */
    j->shortfall = exact ? best_req - best_usable : UINT64_MAX;
}

int llmem_pack_classify(pack_run *r)
{
    llmem_pack *p = r->p;
    int64_t margin = p->i[LLMEM_PACK_MARGIN_PERMILLE];
    keyed *keys = NULL;
    uint32_t n = 0;
    if (p->njobs > 0) {
        keys = llmem__alloc(p->ctx, p->njobs * sizeof *keys);
        if (keys == NULL)
            return llmem__fail(p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    for (size_t jx = 0; jx < p->njobs; jx++) {
        pack_job *j = &p->jobs[jx];
        uint64_t sig = 0;
        j->status = 0;
        j->shortfall = 0;
        for (int t = 0; t < r->ntypes; t++)
            sig |= (uint64_t)holding_kinds(&r->types[t], j, margin) << (8 * t);
        if (sig == 0) {
            fits_nowhere(r, j, margin);
            continue;
        }
        keys[n].key = sig;
        keys[n].tie = 0;
        keys[n].index = (uint32_t)jx;
        n++;
    }
    sort_keyed(keys, n);
    uint32_t nc = 0;
    for (uint32_t i = 0; i < n; i++)
        nc += i == 0 || keys[i].key != keys[i - 1].key;
    r->classes = nc ? llmem__calloc(p->ctx, nc * sizeof *r->classes) : NULL;
    r->order = n ? llmem__alloc(p->ctx, n * sizeof *r->order) : NULL;
    keyed *ranks = nc ? llmem__alloc(p->ctx, nc * sizeof *ranks) : NULL;
    uint32_t *rank_of = nc ? llmem__alloc(p->ctx, nc * sizeof *rank_of) : NULL;
    if ((nc && (r->classes == NULL || ranks == NULL || rank_of == NULL)) ||
        (n && r->order == NULL)) {
        llmem__free(p->ctx, keys);
        llmem__free(p->ctx, ranks);
        llmem__free(p->ctx, rank_of);
        return llmem__fail(p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    /* Classes in signature order first, then ranked large first. */
    pack_class *byskey = r->classes;
    for (uint32_t i = 0, c = 0; i < n; i++) {
        if (i > 0 && keys[i].key != keys[i - 1].key)
            c++;
        pack_class *cl = &byskey[c];
        if (cl->count == 0) {
            uint32_t memw = SLOT_UNITS, compw = COMPUTE_UNITS;
            for (int t = 0; t < r->ntypes; t++) {
                const pack_type *ty = &r->types[t];
                cl->mask[t] = (uint8_t)(keys[i].key >> (8 * t));
                for (int k = 0; k < ty->nkinds; k++) {
                    if (!(cl->mask[t] >> k & 1))
                        continue;
                    const pack_kind *kd = &ty->kind[k];
                    uint32_t mw = kd->whole ? SLOT_UNITS : kd->slots * (SLOT_UNITS / ty->grid);
                    uint32_t cw = kd->whole ? COMPUTE_UNITS
                                            : kd->compute * (COMPUTE_UNITS / ty->compute);
                    if (mw < memw)
                        memw = mw;
                    if (cw < compw)
                        compw = cw;
                }
            }
            cl->memw = memw;
            cl->compw = compw;
            ranks[c].key = UINT64_MAX - ((uint64_t)memw << 32 | compw);
            ranks[c].tie = keys[i].key;
            ranks[c].index = c;
        }
        cl->count++;
        p->jobs[keys[i].index].cls = c;
    }
    sort_keyed(ranks, nc);
    pack_class *sorted = nc ? llmem__alloc(p->ctx, nc * sizeof *sorted) : NULL;
    if (nc && sorted == NULL) {
        llmem__free(p->ctx, keys);
        llmem__free(p->ctx, ranks);
        llmem__free(p->ctx, rank_of);
        return llmem__fail(p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    for (uint32_t c = 0; c < nc; c++) {
        sorted[c] = byskey[ranks[c].index];
        rank_of[ranks[c].index] = c;
    }
    llmem__free(p->ctx, r->classes);
    r->classes = sorted;
    r->nclasses = nc;
    /* Jobs by class rank, then input order. */
    for (uint32_t i = 0; i < n; i++) {
        pack_job *j = &p->jobs[keys[i].index];
        j->cls = rank_of[j->cls];
        keys[i].key = j->cls;
        keys[i].tie = keys[i].index;
    }
    sort_keyed(keys, n);
    for (uint32_t i = 0; i < n; i++)
        r->order[i] = keys[i].index;
    llmem__free(p->ctx, keys);
    llmem__free(p->ctx, ranks);
    llmem__free(p->ctx, rank_of);
    return LLMEM_OK;
}
