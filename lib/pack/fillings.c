/* SPDX-License-Identifier: MIT */
/*
 * The fillings of each type: every vector of class counts (each at most the
 * class's demand) that one GPU of the type holds, with a kind for each unit.
 * A depth-first walk adds one unit at a time, of any class, on any kind that
 * holds the class, while the kinds' count vector stays feasible; a (class
 * counts, kind counts) pair is expanded once. Feasible sets are closed under
 * removal, so the walk meets every filling. The maximal ones (no class can be
 * added within its demand) are kept, and for each class the filling with the
 * most units of that class alone (the "singletons" the LP starts from).
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <string.h>

/* Walks larger than this give up: no LP bound, no exact search. */
#define FILL_MAX_NODES 200000u
#define FILL_MAX_OUT 20000u

/* A set of fixed-length byte strings: open addressing over indices into a
 * pool, both grown by doubling up to `limit` keys. */
typedef struct bset {
    llmem_ctx *ctx;
    size_t len;       /* bytes per key */
    uint8_t *pool;    /* n keys */
    size_t n, cap, limit;
    uint32_t *slot;   /* index + 1, 0 = empty */
    size_t nslots;    /* power of two, at least twice cap */
} bset;

static uint64_t hash_bytes(const uint8_t *b, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static void bset_place(bset *s, size_t index)
{
    size_t mask = s->nslots - 1;
    size_t h = (size_t)hash_bytes(s->pool + index * s->len, s->len) & mask;
    while (s->slot[h] != 0)
        h = (h + 1) & mask;
    s->slot[h] = (uint32_t)(index + 1);
}

/* Room for cap keys; 0 when out of memory. */
static int bset_grow(bset *s, size_t cap)
{
    size_t nslots = 16;
    while (nslots < cap * 2)
        nslots <<= 1;
    uint8_t *pool = llmem__alloc(s->ctx, cap * s->len + 1);
    uint32_t *slot = llmem__calloc(s->ctx, nslots * sizeof *slot);
    if (pool == NULL || slot == NULL) {
        llmem__free(s->ctx, pool);
        llmem__free(s->ctx, slot);
        return 0;
    }
    if (s->n)
        memcpy(pool, s->pool, s->n * s->len);
    llmem__free(s->ctx, s->pool);
    llmem__free(s->ctx, s->slot);
    s->pool = pool;
    s->slot = slot;
    s->cap = cap;
    s->nslots = nslots;
    for (size_t i = 0; i < s->n; i++)
        bset_place(s, i);
    return 1;
}

static int bset_init(bset *s, llmem_ctx *ctx, size_t len, size_t limit)
{
    memset(s, 0, sizeof s[0]);
    s->ctx = ctx;
    s->len = len;
    s->limit = limit;
    return bset_grow(s, 256);
}

static void bset_free(bset *s)
{
    llmem__free(s->ctx, s->pool);
    llmem__free(s->ctx, s->slot);
}

static size_t bset_find(const bset *s, const uint8_t *key, uint32_t *value)
{
    size_t mask = s->nslots - 1, h = (size_t)hash_bytes(key, s->len) & mask;
    for (;; h = (h + 1) & mask) {
        uint32_t v = s->slot[h];
        *value = v;
        if (v == 0 || memcmp(s->pool + (size_t)(v - 1) * s->len, key, s->len) == 0)
            return h;
    }
}

/* Insert key: 1 when added (its index in *index), 0 when present (its index),
 * -1 when over the limit, -2 when out of memory. */
static int bset_add(bset *s, const uint8_t *key, size_t *index)
{
    uint32_t v;
    bset_find(s, key, &v);
    if (v != 0) {
        *index = v - 1;
        return 0;
    }
    if (s->n >= s->limit)
        return -1;
    if (s->n >= s->cap && !bset_grow(s, s->cap * 2))
        return -2;
    memcpy(s->pool + s->n * s->len, key, s->len);
    bset_place(s, s->n);
    *index = s->n++;
    return 1;
}

static int bset_has(const bset *s, const uint8_t *key)
{
    uint32_t v;
    bset_find(s, key, &v);
    return v != 0;
}

typedef struct walker {
    pack_run *r;
    int t;
    const uint64_t *demand;
    uint32_t nc;
    uint8_t *key;         /* class counts (nc bytes), then the kind state (4 bytes) */
    pack_unit unit[PACK_MAX_UNITS];
    uint8_t nunits;
    bset seen;            /* (class counts, state) pairs expanded */
    bset fills;           /* class counts */
    pack_filling *first;  /* [first_cap]: the first kind assignment met, by fills index */
    size_t first_cap;
    int overflow;         /* 1: over a limit; 2: out of memory */
} walker;

static void put_state(uint8_t *key, uint32_t nc, uint32_t state)
{
    memcpy(key + nc, &state, sizeof state);
}

static void walk(walker *w, uint32_t state)
{
    size_t index;
    int added = bset_add(&w->fills, w->key, &index);
    if (added < 0) {
        w->overflow = -added;
        return;
    }
    if (added && index >= w->first_cap) {
        size_t cap = w->first_cap * 2;
        pack_filling *a = llmem__alloc(w->r->p->ctx, cap * sizeof *a);
        if (a == NULL) {
            w->overflow = 2;
            return;
        }
        memcpy(a, w->first, w->first_cap * sizeof *a);
        llmem__free(w->r->p->ctx, w->first);
        w->first = a;
        w->first_cap = cap;
    }
    if (added) {
        pack_filling *f = &w->first[index];
        f->type = (uint8_t)w->t;
        f->nunits = w->nunits;
        memcpy(f->unit, w->unit, w->nunits * sizeof w->unit[0]);
    }
    if (w->nunits >= PACK_MAX_UNITS)
        return;
    const pack_type *ty = &w->r->types[w->t];
    for (uint32_t c = 0; c < w->nc && !w->overflow; c++) {
        uint8_t mask = w->r->classes[c].mask[w->t];
        if (mask == 0 || w->key[c] >= w->demand[c])
            continue;
        for (int k = 0; k < ty->nkinds && !w->overflow; k++) {
            if (!(mask >> k & 1) || llmem_pack_count(ty, state, k) >= ty->kind[k].max ||
                !ty->feasible[state + ty->step[k]])
                continue;
            uint32_t next = state + ty->step[k];
            w->key[c]++;
            put_state(w->key, w->nc, next);
            added = bset_add(&w->seen, w->key, &index);
            if (added < 0)
                w->overflow = -added;
            else if (added) {
                w->unit[w->nunits].cls = c;
                w->unit[w->nunits].kind = (uint8_t)k;
                w->nunits++;
                walk(w, next);
                w->nunits--;
            }
            w->key[c]--;
            put_state(w->key, w->nc, state);
        }
    }
}

static int push_filling(pack_run *r, const pack_filling *f, size_t *cap)
{
    llmem_ctx *ctx = r->p->ctx;
    if (r->nfill == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        pack_filling *a = llmem__alloc(ctx, ncap * sizeof *a);
        if (a == NULL)
            return 0;
        if (r->nfill)
            memcpy(a, r->fill, r->nfill * sizeof *a);
        llmem__free(ctx, r->fill);
        r->fill = a;
        *cap = ncap;
    }
    r->fill[r->nfill++] = *f;
    return 1;
}

/* The fillings of type t: maximal ones, then each class's singleton. */
static int type_fillings(pack_run *r, int t, const uint64_t *demand, size_t *cap)
{
    llmem_ctx *ctx = r->p->ctx;
    walker w;
    uint32_t nc = r->nclasses;
    int rc = LLMEM_OK;
    memset(&w, 0, sizeof w);
    w.r = r;
    w.t = t;
    w.demand = demand;
    w.nc = nc;
    w.key = llmem__calloc(ctx, nc + 4);
    w.first_cap = 256;
    w.first = llmem__alloc(ctx, w.first_cap * sizeof *w.first);
    uint8_t *v = llmem__alloc(ctx, nc + 4);
    /* The fills set keys on the class counts only (the first nc bytes). */
    int seen_ok = bset_init(&w.seen, ctx, nc + 4, FILL_MAX_NODES);
    int fills_ok = bset_init(&w.fills, ctx, nc, FILL_MAX_OUT);
    if (w.key == NULL || w.first == NULL || v == NULL || !seen_ok || !fills_ok) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        goto done;
    }
    walk(&w, 0);
    if (w.overflow == 2) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        goto done;
    }
    if (w.overflow) {
        r->fill_complete = 0;
        goto done;
    }
    for (size_t i = 0; i < w.fills.n && rc == LLMEM_OK; i++) {
        const uint8_t *counts = w.fills.pool + i * w.fills.len;
        int maximal = w.first[i].nunits > 0;
        memcpy(v, counts, nc);
        for (uint32_t c = 0; c < nc && maximal; c++) {
            if (r->classes[c].mask[t] == 0 || counts[c] >= demand[c])
                continue;
            v[c]++;
            maximal = !bset_has(&w.fills, v);
            v[c]--;
        }
        if (maximal && !push_filling(r, &w.first[i], cap))
            rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    /* Singletons: the most units of class c alone. */
    for (uint32_t c = 0; c < nc && rc == LLMEM_OK; c++) {
        pack_filling best;
        uint8_t most = 0;
        memset(&best, 0, sizeof best);
        for (size_t i = 0; i < w.fills.n; i++) {
            const uint8_t *counts = w.fills.pool + i * w.fills.len;
            if (counts[c] <= most)
                continue;
            most = counts[c];
            best.type = (uint8_t)t;
            best.nunits = 0;
            for (int u = 0; u < w.first[i].nunits; u++)
                if (w.first[i].unit[u].cls == c)
                    best.unit[best.nunits++] = w.first[i].unit[u];
        }
        if (most > 0) {
            if (!push_filling(r, &best, cap))
                rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        }
    }
done:
    llmem__free(ctx, w.key);
    llmem__free(ctx, w.first);
    llmem__free(ctx, v);
    bset_free(&w.seen);
    bset_free(&w.fills);
    return rc;
}

int llmem_pack_fillings(pack_run *r)
{
    size_t cap = 0;
    uint64_t *demand = llmem__alloc(r->p->ctx, (r->nclasses + 1) * sizeof *demand);
    if (demand == NULL)
        return llmem__fail(r->p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    for (uint32_t c = 0; c < r->nclasses; c++)
        demand[c] = r->classes[c].count;
    r->fill_complete = 1;
    int rc = LLMEM_OK;
    for (int t = 0; t < r->ntypes && rc == LLMEM_OK && r->fill_complete; t++)
        rc = type_fillings(r, t, demand, &cap);
    if (!r->fill_complete || r->nfill > FILL_MAX_OUT) {
        r->fill_complete = 0;
        llmem__free(r->p->ctx, r->fill);
        r->fill = NULL;
        r->nfill = 0;
    }
    llmem__free(r->p->ctx, demand);
    return rc;
}
