/* SPDX-License-Identifier: MIT */
/*
 * A GPU type's kinds and its valid layouts. A layout places instances at
 * slots: an instance of a profile starts at one of the profile's placements
 * and occupies `slots` consecutive slots; instances never overlap (NVML:
 * creation "will fail if there is overlap with the already occupied memory
 * slices"), no profile exceeds its maximum count and the compute slices add
 * up to at most the GPU's (mig_configs.md). Layouts are enumerated once,
 * slot by slot from the left: at each slot either nothing starts there or one
 * instance does, so each positional layout is met exactly once.
 *
 * A driver branch (LLMEM_PACK_DRIVER) shapes the type here, in one place,
 * so that every step sees the same kinds and layouts: its kinds are the
 * profiles the branch has, and two kinds a pair rule of the GPU refuses
 * together on that branch (the A100's 4g + 3g before R510) are kept apart
 * by the walk, so no feasible state holds both.
 *
 * The rules live in one function, llmem_pack_refusal(), which the walk asks
 * at every slot and fit asks of the instances already running on a GPU
 * (fit.c): the two never disagree on what a GPU holds.
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"

#include <string.h>

#define PACK_MAX_STATES 4096u

unsigned llmem_pack_count(const pack_type *t, uint32_t s, int k)
{
    return (unsigned)(s / t->step[k] % ((uint32_t)t->kind[k].max + 1));
}

/* Kinds by usable bytes, then compute slices, then slots, then catalog order. */
static int kind_before(const pack_kind *a, const pack_kind *b)
{
    if (a->usable != b->usable)
        return a->usable < b->usable;
    if (a->compute != b->compute)
        return a->compute < b->compute;
    if (a->slots != b->slots)
        return a->slots < b->slots;
    return a->profile < b->profile;
}

static void sort_kinds(pack_kind *k, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && kind_before(&k[j], &k[j - 1]); j--) {
            pack_kind tmp = k[j];
            k[j] = k[j - 1];
            k[j - 1] = tmp;
        }
}

/* The walk over positional layouts. */
typedef struct walk {
    const pack_type *t;
    unsigned mask;          /* kinds allowed */
    pack_placed on;         /* the instances placed so far */
    uint8_t *mark;          /* [states]: realized count vectors (bit 1: by a maximal one) */
    layout_stats *stats;    /* NULL: only mark */
} walk;

static uint32_t walk_state(const walk *w)
{
    uint32_t s = 0;
    for (int k = 0; k < w->t->nkinds; k++)
        s += w->on.count[k] * w->t->step[k];
    return s;
}

/* The span of kind k's slots from slot at (at + slots within the grid). */
static uint32_t span_of(const pack_kind *p, unsigned at)
{
    return ((UINT32_C(1) << p->slots) - 1) << at;
}

pack_refusal llmem_pack_refusal(const pack_type *t, const pack_placed *p, int k, unsigned at)
{
    const pack_kind *kind = &t->kind[k];
    if (kind->whole)
        return PACK_PLACE_WHOLE;
    if (at >= t->grid || !(kind->starts >> at & 1) || at + kind->slots > t->grid)
        return PACK_PLACE_START;
    if ((p->occupied & span_of(kind, at)) != 0)
        return PACK_PLACE_OVERLAP;
    if (p->count[k] >= kind->max)
        return PACK_PLACE_COUNT;
    if (p->compute + kind->compute > t->compute)
        return PACK_PLACE_COMPUTE;
    for (int j = 0; j < t->nkinds; j++)
        if ((t->apart[k] >> j & 1) && p->count[j] > 0)
            return PACK_PLACE_APART;
    return PACK_PLACE_OK;
}

void llmem_pack_place(const pack_type *t, pack_placed *p, int k, unsigned at)
{
    p->count[k]++;
    p->compute += t->kind[k].compute;
    p->occupied |= span_of(&t->kind[k], at);
}

static int can_place(const walk *w, int k, unsigned at)
{
    return (w->mask >> k & 1) && llmem_pack_refusal(w->t, &w->on, k, at) == PACK_PLACE_OK;
}

static int is_maximal(const walk *w)
{
    for (int k = 0; k < w->t->nkinds; k++)
        for (unsigned at = 0; at < w->t->grid; at++)
            if (can_place(w, k, at))
                return 0;
    return 1;
}

static void walk_from(walk *w, unsigned slot)
{
    if (slot >= w->t->grid) {
        w->mark[walk_state(w)] |= 1;
        if (w->stats) {
            int maximal = is_maximal(w);
            w->stats->positional++;
            w->stats->maximal_positional += (uint64_t)maximal;
            if (maximal)
                w->mark[walk_state(w)] |= 2;
        }
        return;
    }
    walk_from(w, slot + 1);
    for (int k = 0; k < w->t->nkinds; k++) {
        if (!can_place(w, k, slot))
            continue;
        pack_placed before = w->on;
        llmem_pack_place(w->t, &w->on, k, slot);
        walk_from(w, slot + w->t->kind[k].slots);
        w->on = before;
    }
}

/* apart[]: the pairs of kinds the GPU's pair rules refuse on the branch. */
static void keep_apart(pack_type *t, const mig_table *mig)
{
    for (size_t r = 0; r < mig->npairs; r++)
        for (int a = 0; a < t->nkinds; a++)
            for (int b = 0; b < t->nkinds; b++) {
                const mig_profile_desc *pa = &mig->profiles[t->kind[a].profile];
                const mig_profile_desc *pb = &mig->profiles[t->kind[b].profile];
                if (llmem_mig_pair_refused(&mig->pairs[r], pa, pb, t->driver))
                    t->apart[a] |= (uint8_t)(1u << b);
            }
}

int llmem_pack_type_kinds(llmem_ctx *ctx, pack_type *t, size_t gpu, uint64_t limit,
                          int64_t driver)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    memset(t, 0, sizeof *t);
    if (g == NULL)
        return llmem__fail(ctx, LLMEM_ERANGE, "pack: no GPU of index %zu", gpu);
    t->gpu = gpu;
    t->limit = limit;
    t->driver = driver;
    t->context = llmem_gpu_arch_row(g->arch)->context;
    if (g->mig != NULL) {
        t->grid = g->mig->slots;
        t->compute = g->mig->compute;
        for (size_t i = 0; i < g->mig->count && t->nkinds < PACK_MAX_KINDS - 1; i++) {
            const mig_profile_desc *m = &g->mig->profiles[i];
            if (m->variant != LLMEM_MIG_PLAIN || !llmem_mig_on_driver(m, driver))
                continue;
            pack_kind *k = &t->kind[t->nkinds++];
            k->profile = i;
            k->slots = m->slots;
            k->compute = m->compute;
            k->max = m->max_count;
            k->starts = m->starts;
            k->usable = m->usable;
        }
        sort_kinds(t->kind, t->nkinds);
        keep_apart(t, g->mig);
    }
    /* The whole GPU, MIG disabled: one job, tried after every profile. */
    pack_kind *w = &t->kind[t->nkinds++];
    w->whole = 1;
    w->profile = g->mig ? g->mig->count : 0;
    w->slots = t->grid;
    w->compute = t->compute;
    w->max = 1;
    w->starts = 1;
    w->usable = g->usable;
    return LLMEM_OK;
}

int llmem_pack_type_init(llmem_ctx *ctx, pack_type *t, size_t gpu, uint64_t limit,
                         int64_t driver)
{
    int rc = llmem_pack_type_kinds(ctx, t, gpu, limit, driver);
    if (rc != LLMEM_OK)
        return rc;
    uint32_t states = 1;
    for (int k = 0; k < t->nkinds; k++) {
        t->step[k] = states;
        states *= (uint32_t)t->kind[k].max + 1;
        if (states > PACK_MAX_STATES)
            return llmem__fail(ctx, LLMEM_ENOTSUP, "pack: %s has too many MIG layouts",
                               llmem_gpu_row(gpu)->id.name);
    }
    t->states = states;
    t->feasible = llmem__calloc(ctx, states);
    if (t->feasible == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    walk wk;
    memset(&wk, 0, sizeof wk);
    wk.t = t;
    wk.mask = (1u << t->nkinds) - 1;
    wk.mark = t->feasible;
    if (t->grid > 0)
        walk_from(&wk, 0);
    t->feasible[0] = 1;
    t->feasible[t->step[t->nkinds - 1]] = 1; /* the whole GPU alone */
    for (uint32_t s = 0; s < states; s++) {
        if (!t->feasible[s])
            continue;
        unsigned units = 0;
        for (int k = 0; k < t->nkinds; k++)
            units += llmem_pack_count(t, s, k);
        if (units > t->most_units)
            t->most_units = (uint8_t)units;
    }
    return LLMEM_OK;
}

void llmem_pack_type_free(llmem_ctx *ctx, pack_type *t)
{
    llmem__free(ctx, t->feasible);
    t->feasible = NULL;
}

/* Search for a layout with exactly want[k] instances of each kind. */
static int place_from(walk *w, unsigned slot, const uint8_t *want, uint8_t *at_slot)
{
    int done = 1;
    for (int k = 0; k < w->t->nkinds; k++)
        if (w->on.count[k] != want[k])
            done = 0;
    if (done)
        return 1;
    if (slot >= w->t->grid)
        return 0;
    /* Larger instances first at each slot: the layouts read left to right
     * from big to small, as the MIG guide draws them. */
    for (int k = w->t->nkinds - 1; k >= 0; k--) {
        if (w->on.count[k] >= want[k] || !can_place(w, k, slot))
            continue;
        pack_placed before = w->on;
        llmem_pack_place(w->t, &w->on, k, slot);
        at_slot[slot] = (uint8_t)k;
        if (place_from(w, slot + w->t->kind[k].slots, want, at_slot))
            return 1;
        at_slot[slot] = PACK_NO_KIND;
        w->on = before;
    }
    return place_from(w, slot + 1, want, at_slot);
}

int llmem_pack_positions(const pack_type *t, uint32_t s, uint8_t *start)
{
    uint8_t want[PACK_MAX_KINDS], at_slot[32];
    walk w;
    size_t n = 0;
    memset(&w, 0, sizeof w);
    w.t = t;
    w.mask = (1u << t->nkinds) - 1;
    for (int k = 0; k < t->nkinds; k++)
        want[k] = (uint8_t)llmem_pack_count(t, s, k);
    if (want[t->nkinds - 1] > 0) { /* the whole GPU */
        start[0] = 0;
        return 1;
    }
    memset(at_slot, PACK_NO_KIND, sizeof at_slot);
    if (!place_from(&w, 0, want, at_slot))
        return 0;
    for (int k = 0; k < t->nkinds; k++)
        for (unsigned slot = 0; slot < t->grid; slot++)
            if (at_slot[slot] == k)
                start[n++] = (uint8_t)slot;
    return 1;
}

void llmem_pack_layout_stats(const pack_type *t, unsigned kind_mask, layout_stats *out)
{
    uint8_t mark[PACK_MAX_STATES];
    walk w;
    memset(out, 0, sizeof *out);
    memset(mark, 0, sizeof mark);
    memset(&w, 0, sizeof w);
    w.t = t;
    w.mask = kind_mask & ((1u << (t->nkinds - 1)) - 1);
    w.mark = mark;
    w.stats = out;
    if (t->grid > 0)
        walk_from(&w, 0);
    for (uint32_t s = 1; s < t->states; s++) {
        if (!mark[s])
            continue;
        out->multisets++;
        int maximal = 1;
        for (int k = 0; k < t->nkinds; k++)
            if ((w.mask >> k & 1) && llmem_pack_count(t, s, k) < t->kind[k].max &&
                mark[s + t->step[k]])
                maximal = 0;
        out->maximal_multisets += (uint64_t)maximal;
        out->maximal_layout_multisets += (uint64_t)(mark[s] >> 1 & 1);
    }
}
