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

#include <math.h>
#include <string.h>

/* Walks larger than this give up: the LP generates its fillings instead
 * (lp.c), and no exact search runs. */
#define FILL_MAX_NODES 200000u
#define FILL_MAX_OUT 20000u
/* The most fillings the LP generates in one run (its x[] arrays are this
 * long). */
#define COLUMN_MAX 8192u

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

/* The generated fillings' index: their (type, class counts) keys, each
 * type's maximal states, and scratch of the pricing. */
struct pack_columns {
    bset keys;
    uint8_t *key;                       /* [1 + nclasses] */
    uint8_t *states[PACK_MAX_TYPES];    /* [nstates][nkinds]: kind counts */
    uint32_t nstates[PACK_MAX_TYPES];
    uint64_t *use;                      /* [nclasses]: units per class, zero between calls */
    uint32_t *cand;                     /* [PACK_MAX_KINDS * PACK_MAX_UNITS]: the flow's classes */
};

uint32_t llmem_pack_maximal_states(const pack_type *ty, uint8_t *count)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < ty->states; s++) {
        int maximal = ty->feasible[s] && s != 0;
        for (int k = 0; k < ty->nkinds && maximal; k++)
            maximal = llmem_pack_count(ty, s, k) >= ty->kind[k].max ||
                      !ty->feasible[s + ty->step[k]];
        if (!maximal)
            continue;
        if (count != NULL)
            for (int k = 0; k < ty->nkinds; k++)
                count[(size_t)n * ty->nkinds + k] = (uint8_t)llmem_pack_count(ty, s, k);
        n++;
    }
    return n;
}

/* Set up the generated fillings: an empty fill[] of COLUMN_MAX, their index
 * and each type's maximal states (every layout is a part of one). */
static int columns_init(pack_run *r)
{
    llmem_ctx *ctx = r->p->ctx;
    struct pack_columns *c = llmem__calloc(ctx, sizeof *c);
    if (c == NULL)
        return 0;
    r->columns = c;
    r->fill = llmem__alloc(ctx, COLUMN_MAX * sizeof *r->fill);
    r->fill_max = COLUMN_MAX;
    c->key = llmem__calloc(ctx, (size_t)r->nclasses + 1);
    c->use = llmem__calloc(ctx, ((size_t)r->nclasses + 1) * sizeof *c->use);
    c->cand = llmem__alloc(ctx, PACK_MAX_KINDS * PACK_MAX_UNITS * sizeof *c->cand);
    if (r->fill == NULL || c->key == NULL || c->use == NULL || c->cand == NULL ||
        !bset_init(&c->keys, ctx, (size_t)r->nclasses + 1, COLUMN_MAX))
        return 0;
    for (int t = 0; t < r->ntypes; t++) {
        const pack_type *ty = &r->types[t];
        uint32_t n = llmem_pack_maximal_states(ty, NULL);
        if ((c->states[t] = llmem__alloc(ctx, (size_t)n * ty->nkinds + 1)) == NULL)
            return 0;
        c->nstates[t] = llmem_pack_maximal_states(ty, c->states[t]);
    }
    return 1;
}

void llmem_pack_fillings_free(pack_run *r)
{
    llmem_ctx *ctx = r->p->ctx;
    struct pack_columns *c = r->columns;
    llmem__free(ctx, r->fill);
    r->fill = NULL;
    r->nfill = 0;
    if (c == NULL)
        return;
    if (c->keys.ctx != NULL)
        bset_free(&c->keys);
    llmem__free(ctx, c->key);
    llmem__free(ctx, c->use);
    llmem__free(ctx, c->cand);
    for (int t = 0; t < PACK_MAX_TYPES; t++)
        llmem__free(ctx, c->states[t]);
    llmem__free(ctx, c);
    r->columns = NULL;
}

int llmem_pack_column_add(pack_run *r, const pack_filling *f, size_t *index)
{
    struct pack_columns *c = r->columns;
    *index = SIZE_MAX;
    if (c == NULL || f->nunits == 0)
        return 0;
    memset(c->key, 0, (size_t)r->nclasses + 1);
    c->key[0] = f->type;
    for (int u = 0; u < f->nunits; u++)
        c->key[1 + f->unit[u].cls]++;
    int added = bset_add(&c->keys, c->key, index);
    if (added == -2)
        return llmem__fail(r->p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    if (added != 1)
        return 0;
    r->fill[r->nfill++] = *f; /* keys and fillings are added together: same index */
    return 1;
}

/* The most a state's units (cnt[k] of kind k) are worth at prices p with at
 * most cap[c] units of class c: a transportation problem, solved as a
 * maximum-weight flow by successive longest augmenting paths (Bellman-Ford
 * on the residual graph; at most PACK_MAX_UNITS augmentations) over the
 * classes that can matter: each kind's `units` dearest (with fewer, a unit
 * would find one of them unused). flow[k][i] gets the units of kind k given
 * to cand[i]; returns the value. */
enum { FLOW_MAX_CAND = PACK_MAX_KINDS * PACK_MAX_UNITS };

static double state_flow(const pack_run *r, int t, const uint8_t *cnt, const double *p,
                         const uint64_t *cap, uint32_t *cand, uint32_t *ncand,
                         uint8_t flow[PACK_MAX_KINDS][FLOW_MAX_CAND])
{
    const pack_type *ty = &r->types[t];
    int nk = ty->nkinds;
    unsigned units = 0;
    uint32_t m = 0;
    for (int k = 0; k < nk; k++)
        units += cnt[k];
    /* Candidates: for each kind, its `units` dearest classes of positive
     * price with room (a selection, repeated; m stays small). */
    for (int k = 0; k < nk; k++) {
        if (cnt[k] == 0)
            continue;
        for (unsigned pick = 0; pick < units; pick++) {
            uint32_t best = UINT32_MAX;
            for (uint32_t c = 0; c < r->nclasses; c++) {
                if (!(r->classes[c].mask[t] >> k & 1) || cap[c] == 0 || !(p[c] > 0))
                    continue;
                /* Listed already (for this kind or another): the list
                 * holds the kind's `units` dearest either way. */
                int listed = 0;
                for (uint32_t i = 0; i < m && !listed; i++)
                    listed = cand[i] == c;
                if (listed)
                    continue;
                if (best == UINT32_MAX || p[c] > p[best])
                    best = c;
            }
            if (best == UINT32_MAX)
                break;
            cand[m++] = best;
        }
    }
    *ncand = m;
    /* Nodes: source 0, kinds 1..nk, classes nk+1..nk+m, sink nk+m+1. The
     * flow on kind -> class edges is flow[][]; the others follow from it. */
    int used_k[PACK_MAX_KINDS] = { 0 };
    uint64_t used_c[FLOW_MAX_CAND] = { 0 };
    memset(flow, 0, sizeof(uint8_t) * PACK_MAX_KINDS * FLOW_MAX_CAND);
    double value = 0;
    for (unsigned step = 0; step < units; step++) {
        int nn = nk + (int)m + 2, sink = nn - 1;
        double dist[PACK_MAX_KINDS + FLOW_MAX_CAND + 2];
        int prev[PACK_MAX_KINDS + FLOW_MAX_CAND + 2];
        for (int v = 0; v < nn; v++) {
            dist[v] = -INFINITY;
            prev[v] = -1;
        }
        dist[0] = 0;
        /* Longest paths (gains p), no positive cycles in a residual graph of
         * a maximum-weight flow of its size: nn rounds of relaxation. */
        for (int round = 0; round < nn; round++) {
            int changed = 0;
            for (int k = 0; k < nk; k++) {
                int kv = 1 + k;
                if (used_k[k] < cnt[k] && dist[0] > dist[kv]) {
                    dist[kv] = dist[0];
                    prev[kv] = 0;
                    changed = 1;
                }
                for (uint32_t i = 0; i < m; i++) {
                    int cv = 1 + nk + (int)i;
                    if (!(r->classes[cand[i]].mask[t] >> k & 1))
                        continue;
                    double g = p[cand[i]];
                    if (dist[kv] > -INFINITY && dist[kv] + g > dist[cv] + 1e-12) {
                        dist[cv] = dist[kv] + g;
                        prev[cv] = kv;
                        changed = 1;
                    }
                    if (flow[k][i] > 0 && dist[cv] > -INFINITY &&
                        dist[cv] - g > dist[kv] + 1e-12) {
                        dist[kv] = dist[cv] - g;
                        prev[kv] = cv;
                        changed = 1;
                    }
                }
            }
            for (uint32_t i = 0; i < m; i++) {
                int cv = 1 + nk + (int)i;
                if (used_c[i] < cap[cand[i]] && dist[cv] > -INFINITY &&
                    dist[cv] > dist[sink] + 1e-12) {
                    dist[sink] = dist[cv];
                    prev[sink] = cv;
                    changed = 1;
                }
            }
            if (!changed)
                break;
        }
        if (!(dist[sink] > 1e-12))
            break;
        /* Augment one unit along the path. */
        int v = sink;
        while (v != 0) {
            int u = prev[v];
            if (v == sink)
                used_c[u - 1 - nk]++;
            else if (u == 0)
                used_k[v - 1]++;
            else if (u <= nk)
                flow[u - 1][v - 1 - nk]++;
            else
                flow[v - 1][u - 1 - nk]--;
            v = u;
        }
        value += dist[sink];
    }
    return value;
}

double llmem_pack_price(pack_run *r, int t, const double *p, const uint64_t *cap, int fill,
                        pack_filling *f)
{
    struct pack_columns *col = r->columns;
    const pack_type *ty = &r->types[t];
    int nk = ty->nkinds;
    uint32_t top[PACK_MAX_KINDS];
    double best = 0;
    int best_state = -1;
    uint8_t best_flow[PACK_MAX_KINDS][FLOW_MAX_CAND], flow[PACK_MAX_KINDS][FLOW_MAX_CAND];
    uint32_t best_cand[FLOW_MAX_CAND], best_m = 0;
    int best_greedy = 0;
    f->type = (uint8_t)t;
    f->nunits = 0;
    /* Each kind's dearest class of positive price with room. */
    for (int k = 0; k < nk; k++) {
        top[k] = UINT32_MAX;
        for (uint32_t c = 0; c < r->nclasses; c++)
            if ((r->classes[c].mask[t] >> k & 1) && cap[c] > 0 && p[c] > 0 &&
                (top[k] == UINT32_MAX || p[c] > p[top[k]]))
                top[k] = c;
    }
    for (uint32_t s = 0; s < col->nstates[t]; s++) {
        const uint8_t *cnt = col->states[t] + (size_t)s * nk;
        /* Every unit its kind's dearest class: the most the state is worth,
         * and its worth when no class gets more units than its cap. */
        double upper = 0;
        int within = 1;
        for (int k = 0; k < nk; k++)
            if (cnt[k] > 0 && top[k] != UINT32_MAX) {
                upper += cnt[k] * p[top[k]];
                col->use[top[k]] += cnt[k];
            }
        for (int k = 0; k < nk; k++)
            if (cnt[k] > 0 && top[k] != UINT32_MAX) {
                within &= col->use[top[k]] <= cap[top[k]];
            }
        for (int k = 0; k < nk; k++)
            if (top[k] != UINT32_MAX)
                col->use[top[k]] = 0;
        if (upper <= best * (1 + 1e-12) + 1e-12)
            continue;
        if (within) {
            best = upper;
            best_state = (int)s;
            best_greedy = 1;
            continue;
        }
        uint32_t m;
        double v = state_flow(r, t, cnt, p, cap, col->cand, &m, flow);
        if (v > best * (1 + 1e-12) + 1e-12) {
            best = v;
            best_state = (int)s;
            best_greedy = 0;
            best_m = m;
            memcpy(best_cand, col->cand, m * sizeof *best_cand);
            memcpy(best_flow, flow, sizeof flow);
        }
    }
    if (best_state < 0)
        return 0;
    const uint8_t *cnt = col->states[t] + (size_t)best_state * nk;
    for (int k = 0; k < nk; k++) {
        unsigned given = 0;
        if (best_greedy) {
            for (; top[k] != UINT32_MAX && given < cnt[k]; given++) {
                f->unit[f->nunits].cls = top[k];
                f->unit[f->nunits++].kind = (uint8_t)k;
            }
        } else {
            for (uint32_t i = 0; i < best_m; i++)
                for (unsigned n = 0; n < best_flow[k][i]; n++, given++) {
                    f->unit[f->nunits].cls = best_cand[i];
                    f->unit[f->nunits++].kind = (uint8_t)k;
                }
        }
    }
    if (fill) {
        /* Units left empty: classes with room, the largest first. */
        for (int u = 0; u < f->nunits; u++)
            col->use[f->unit[u].cls]++;
        for (int k = 0; k < nk; k++) {
            unsigned have = 0;
            for (int u = 0; u < f->nunits; u++)
                have += f->unit[u].kind == k;
            for (uint32_t c = 0; c < r->nclasses && have < cnt[k]; c++) {
                if (!(r->classes[c].mask[t] >> k & 1))
                    continue;
                while (have < cnt[k] && col->use[c] < cap[c]) {
                    col->use[c]++;
                    have++;
                    f->unit[f->nunits].cls = c;
                    f->unit[f->nunits++].kind = (uint8_t)k;
                }
            }
        }
        for (int u = 0; u < f->nunits; u++)
            col->use[f->unit[u].cls] = 0;
    }
    /* Units in kind order, as the walk's fillings. */
    for (int i = 1; i < f->nunits; i++)
        for (int j = i; j > 0 && f->unit[j].kind < f->unit[j - 1].kind; j--) {
            pack_unit u = f->unit[j];
            f->unit[j] = f->unit[j - 1];
            f->unit[j - 1] = u;
        }
    return best;
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
    r->fill_max = r->nfill;
    if (rc == LLMEM_OK && (!r->fill_complete || r->nfill > FILL_MAX_OUT)) {
        r->fill_complete = 0;
        llmem_pack_fillings_free(r);
        if (!columns_init(r))
            rc = llmem__fail(r->p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    llmem__free(r->p->ctx, demand);
    return rc;
}
