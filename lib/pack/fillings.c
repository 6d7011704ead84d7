/* SPDX-License-Identifier: MIT */
/*
 * The fillings of each type: every vector of class counts (each at most the
 * class's demand) that one GPU of the type holds, with a kind for each unit.
 * The maximal ones (no class can be added within its demand) are kept, and
 * for each class the filling with the most units of that class alone (the
 * "singletons" the LP starts from).
 *
 * Classes that the same kinds hold on a type (they differ on another type of
 * the fleet) are interchangeable on it: one *group* of that type. A
 * depth-first walk adds one unit at a time, of any group, on any kind that
 * holds the group, while the kinds' count vector stays feasible; a (group
 * counts, kind counts) pair is expanded once. Feasible sets are closed under
 * removal, so the walk meets every group vector, and the fillings are the
 * ways to share each group's count among its classes. A fleet of several
 * types makes many classes but few groups on each type: a walk over classes
 * (a node per (class counts, kind counts) pair) met every one of those ways,
 * and ran to its limit on most calls; this walk does not.
 *
 * The fillings are the class walk's, in its order (the LP, the rounding and
 * the exact search see the same list). That walk visits pairs depth first,
 * units by class then kind, so it meets a class vector first along its
 * lexicographically least path: the units in class order, each on the first
 * kind after which the rest still fit. Class vectors are sorted by that path,
 * which is also the kind assignment kept. Its limits are counted instead of
 * walked: a (group counts, kind counts) pair stands for as many pairs of the
 * class walk as there are ways to share its counts.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <math.h>
#include <string.h>

/* Types with more fillings than this go unlisted: the LP generates its
 * fillings instead (lp.c), and no exact search runs. FILL_MAX_NODES bounds
 * the (class counts, kind counts) pairs that hold them (the work of a walk
 * over classes, which the listing kept as its limit), FILL_MAX_OUT the class
 * vectors, and the maximal ones of every type together. */
#define FILL_MAX_NODES 200000u
#define FILL_MAX_OUT 20000u
/* Counts of pairs and vectors saturate here, past both limits. */
#define COUNT_SAT ((uint64_t)FILL_MAX_NODES + 1)
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

#define NO_GROUP UINT32_MAX
#define WAYS (PACK_MAX_UNITS + 1)
#define ADDABLE_KNOWN 0x100u

/* A type's groups, in the order of their first class. */
typedef struct groups {
    const pack_type *ty;
    uint32_t n;
    uint32_t *of;      /* [nclasses]: a class's group, NO_GROUP when the type holds it not */
    uint32_t *later;   /* [nclasses]: its group's later classes' demand, at most PACK_MAX_UNITS */
    uint32_t *head;    /* [n]: the group's first class */
    uint8_t *mask;     /* [n]: the kinds that hold it */
    uint64_t *demand;  /* [n]: its classes' demand */
    uint64_t *ways;    /* [n][WAYS]: the class vectors of the group with each total */
    uint16_t *addable; /* [states]: ADDABLE_KNOWN | bit k, a unit of kind k fits; 0 not yet */
    int identity;      /* each group one class: the walk is the class walk */
} groups;

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > COUNT_SAT - b ? COUNT_SAT : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b != 0 && a > COUNT_SAT / b ? COUNT_SAT : a * b;
}

static void groups_free(llmem_ctx *ctx, groups *gr)
{
    llmem__free(ctx, gr->of);
    llmem__free(ctx, gr->later);
    llmem__free(ctx, gr->head);
    llmem__free(ctx, gr->mask);
    llmem__free(ctx, gr->demand);
    llmem__free(ctx, gr->ways);
    llmem__free(ctx, gr->addable);
}

/* The groups of type t; 0 when out of memory. */
static int groups_init(llmem_ctx *ctx, const pack_run *r, int t, const uint64_t *demand,
                       groups *gr)
{
    const pack_type *ty = &r->types[t];
    uint32_t nc = r->nclasses;
    memset(gr, 0, sizeof *gr);
    gr->of = llmem__alloc(ctx, (nc + 1) * sizeof *gr->of);
    gr->later = llmem__alloc(ctx, (nc + 1) * sizeof *gr->later);
    gr->head = llmem__alloc(ctx, (nc + 1) * sizeof *gr->head);
    gr->mask = llmem__alloc(ctx, nc + 1);
    gr->demand = llmem__alloc(ctx, (nc + 1) * sizeof *gr->demand);
    gr->ways = llmem__calloc(ctx, (nc + 1) * WAYS * sizeof *gr->ways);
    gr->ty = ty;
    gr->addable = llmem__calloc(ctx, ty->states * sizeof *gr->addable);
    if (gr->of == NULL || gr->later == NULL || gr->head == NULL || gr->mask == NULL ||
        gr->demand == NULL || gr->ways == NULL || gr->addable == NULL)
        return 0;
    gr->identity = 1;
    for (uint32_t c = 0; c < nc; c++) {
        uint8_t mask = r->classes[c].mask[t];
        uint32_t g = 0;
        gr->of[c] = NO_GROUP;
        if (mask == 0)
            continue;
        while (g < gr->n && gr->mask[g] != mask)
            g++;
        if (g == gr->n) {
            gr->n++;
            gr->head[g] = c;
            gr->mask[g] = mask;
            gr->demand[g] = 0;
            gr->ways[g * WAYS] = 1;
        } else {
            gr->identity = 0;
        }
        gr->of[c] = g;
        gr->demand[g] = demand[c] > UINT64_MAX - gr->demand[g] ? UINT64_MAX
                                                               : gr->demand[g] + demand[c];
        /* One more class of at most d units: ways[m] = sum of ways[m - j],
         * j <= d (from the top down, in place). */
        uint64_t d = demand[c] < PACK_MAX_UNITS ? demand[c] : PACK_MAX_UNITS;
        uint64_t *w = gr->ways + (size_t)g * WAYS;
        for (int m = PACK_MAX_UNITS; m >= 0; m--) {
            uint64_t sum = 0;
            for (uint64_t j = 0; j <= d && j <= (uint64_t)m; j++)
                sum = sat_add(sum, w[m - j]);
            w[m] = sum;
        }
    }
    /* later[]: what the group's classes after c can take (share() gives c
     * at least the rest). */
    for (uint32_t g = 0; g < gr->n; g++) {
        uint64_t after = 0;
        for (uint32_t c = nc; c-- > 0;) {
            if (gr->of[c] != g)
                continue;
            gr->later[c] = (uint32_t)after;
            after += demand[c] < PACK_MAX_UNITS ? demand[c] : PACK_MAX_UNITS;
            if (after > PACK_MAX_UNITS)
                after = PACK_MAX_UNITS;
        }
    }
    return 1;
}

/* The class vectors a group vector stands for. */
static uint64_t class_vectors(const groups *gr, const uint8_t *counts)
{
    uint64_t n = 1;
    for (uint32_t g = 0; g < gr->n; g++)
        n = sat_mul(n, gr->ways[(size_t)g * WAYS + counts[g]]);
    return n;
}

/* Whether a unit of a group with kinds mask can go on kind k of state (the
 * kinds that fit a state found once, where first asked). */
static int can_add(const groups *gr, uint32_t state, uint8_t mask, int k)
{
    uint16_t *fit = &gr->addable[state];
    if (*fit == 0) {
        const pack_type *ty = gr->ty;
        *fit = ADDABLE_KNOWN;
        for (int j = 0; j < ty->nkinds; j++)
            if (llmem_pack_count(ty, state, j) < ty->kind[j].max &&
                ty->feasible[state + ty->step[j]])
                *fit |= (uint16_t)(1u << j);
    }
    return (*fit & mask) >> k & 1;
}

/* The walk of one type, kept until the fleet's list is decided. */
typedef struct walker {
    pack_run *r;
    int t;
    groups gr;
    uint8_t *key;         /* group counts (gr.n bytes), then the kind state (4 bytes) */
    pack_unit unit[PACK_MAX_UNITS]; /* cls: the group */
    uint8_t nunits;
    bset seen;            /* (group counts, state) pairs expanded */
    bset fills;           /* group counts */
    pack_filling *first;  /* [first_cap]: the first kind assignment met, by fills index */
    size_t first_cap;
    uint64_t pairs;       /* the class walk's pairs they stand for (seen) */
    uint64_t vectors;     /* and its class vectors (fills) */
    int overflow;         /* 1: over a limit; 2: out of memory */
    uint8_t *maximal;     /* [fills.n]: the group vector is maximal (group_maximal) */
} walker;

static void put_state(uint8_t *key, uint32_t n, uint32_t state)
{
    memcpy(key + n, &state, sizeof state);
}

static void walk(walker *w, uint32_t state)
{
    const groups *gr = &w->gr;
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
        w->vectors = sat_add(w->vectors, class_vectors(gr, w->key));
        if (w->vectors > FILL_MAX_OUT) {
            w->overflow = 1;
            return;
        }
    }
    if (w->nunits >= PACK_MAX_UNITS)
        return;
    const pack_type *ty = &w->r->types[w->t];
    for (uint32_t g = 0; g < gr->n && !w->overflow; g++) {
        if (w->key[g] >= gr->demand[g])
            continue;
        for (int k = 0; k < ty->nkinds && !w->overflow; k++) {
            if (!can_add(gr, state, gr->mask[g], k))
                continue;
            uint32_t next = state + ty->step[k];
            w->key[g]++;
            put_state(w->key, gr->n, next);
            added = bset_add(&w->seen, w->key, &index);
            if (added > 0) {
                w->pairs = sat_add(w->pairs, class_vectors(gr, w->key));
                if (w->pairs > FILL_MAX_NODES)
                    added = -1;
            }
            if (added < 0)
                w->overflow = -added;
            else if (added) {
                w->unit[w->nunits].cls = g;
                w->unit[w->nunits].kind = (uint8_t)k;
                w->nunits++;
                walk(w, next);
                w->nunits--;
            }
            w->key[g]--;
            put_state(w->key, gr->n, state);
        }
    }
}

/* Whether group vector i of the walk is maximal: not empty, and no group
 * with demand left can take a unit more (v: scratch of gr->n bytes). The
 * class vectors it stands for are then maximal, and only they. */
static int group_maximal(const walker *w, size_t i, uint8_t *v)
{
    const groups *gr = &w->gr;
    const uint8_t *counts = w->fills.pool + i * w->fills.len;
    if (w->first[i].nunits == 0)
        return 0;
    memcpy(v, counts, gr->n);
    for (uint32_t g = 0; g < gr->n; g++) {
        if (counts[g] >= gr->demand[g])
            continue;
        v[g]++;
        int more = bset_has(&w->fills, v);
        v[g]--;
        if (more)
            return 0;
    }
    return 1;
}

/* The class vectors of a type, in the class walk's order: each with its
 * first path (the kind assignment kept) and the group vector it shares. */
typedef struct listing {
    size_t n;
    pack_filling *path; /* [n] */
    uint32_t *vec;      /* [n]: index of its group vector in the walk's fills */
    uint32_t *order;    /* [n]: the class walk's order */
} listing;

/* Sharing the walk's group vectors among classes. */
typedef struct expander {
    const pack_type *ty;
    const walker *w;
    const groups *gr;
    const uint8_t *target;  /* the group vector shared */
    uint32_t vec;           /* its index */
    uint32_t *stamp;        /* [seen.n]: vec + 1 where leads[] answers for this target */
    uint8_t *leads;         /* [seen.n] */
    uint8_t *key;           /* [gr->n + 4]: the path's group counts, a state */
    uint64_t *rem;          /* [gr->n]: of each group's count, what is left to share */
    const uint64_t *demand; /* [nclasses] */
    uint32_t *active;       /* [nactive]: the classes the type holds, in order */
    uint32_t nactive;
    pack_filling path;      /* the path so far */
    listing *out;           /* with room for total class vectors */
    size_t total;
    int lost;               /* 1: a unit found no kind (the listing is then given up) */
} expander;

/* Whether the pair in key (group counts) with this state, met by the walk,
 * can be completed to the target: some group short of it takes a unit on
 * some kind, and so on (units commute: feasible sets are closed under
 * removal, so any group may go next). */
static int leads_to(expander *x, uint32_t state)
{
    const groups *gr = x->gr;
    uint32_t v, g = 0;
    put_state(x->key, gr->n, state);
    bset_find(&x->w->seen, x->key, &v);
    if (v == 0)
        return 0;
    if (x->stamp[v - 1] == x->vec + 1)
        return x->leads[v - 1];
    while (g < gr->n && x->key[g] == x->target[g])
        g++;
    int ok = g == gr->n;
    for (int k = 0; k < x->ty->nkinds && !ok; k++) {
        if (!can_add(gr, state, gr->mask[g], k))
            continue;
        x->key[g]++;
        ok = leads_to(x, state + x->ty->step[k]);
        x->key[g]--;
    }
    x->stamp[v - 1] = x->vec + 1;
    x->leads[v - 1] = (uint8_t)ok;
    return ok;
}

/* A unit of class c at the path's end, on the first kind after which the
 * target can still be reached (*state updated); 0 when none (it cannot
 * happen while the group has units of the target left). */
static int push_unit(expander *x, uint32_t c, uint32_t *state)
{
    uint32_t g = x->gr->of[c];
    for (int k = 0; k < x->ty->nkinds; k++) {
        if (!can_add(x->gr, *state, x->gr->mask[g], k))
            continue;
        x->key[g]++;
        if (leads_to(x, *state + x->ty->step[k])) {
            *state += x->ty->step[k];
            x->path.unit[x->path.nunits].cls = c;
            x->path.unit[x->path.nunits++].kind = (uint8_t)k;
            return 1;
        }
        x->key[g]--;
    }
    return 0;
}

/* Every way to share what is left of the target among the active classes
 * from the i-th on, their units added to the path on the way: a path's
 * kinds depend only on its units so far and the target, so the ways share
 * their prefixes. Most units of a class first: a unit of that class where
 * a way with fewer has one of a later class comes first, so the paths come
 * in their order. */
static void share(expander *x, uint32_t i, uint32_t state)
{
    if (i == x->nactive) {
        if (x->out->n == x->total) {
            x->lost = 1;
            return;
        }
        x->out->path[x->out->n] = x->path;
        x->out->vec[x->out->n++] = x->vec;
        return;
    }
    uint32_t c = x->active[i], g = x->gr->of[c];
    uint64_t rem = x->rem[g], d = x->demand[c];
    uint64_t lo = rem > x->gr->later[c] ? rem - x->gr->later[c] : 0, hi = d < rem ? d : rem;
    uint8_t base = x->path.nunits;
    for (uint64_t n = 0; n < hi && !x->lost; n++)
        x->lost = !push_unit(x, c, &state);
    for (uint64_t n = hi; !x->lost; n--) {
        x->rem[g] = rem - n;
        share(x, i + 1, state);
        if (n == lo)
            break;
        state -= x->ty->step[x->path.unit[--x->path.nunits].kind];
        x->key[g]--;
    }
    x->key[g] = (uint8_t)(x->key[g] - (x->path.nunits - base));
    x->path.nunits = base;
    x->rem[g] = rem;
}

/* Whether path a comes before path b: by unit (class, then kind), a prefix
 * first. */
static int path_before(const pack_filling *a, const pack_filling *b)
{
    for (int i = 0; i < a->nunits && i < b->nunits; i++) {
        if (a->unit[i].cls != b->unit[i].cls)
            return a->unit[i].cls < b->unit[i].cls;
        if (a->unit[i].kind != b->unit[i].kind)
            return a->unit[i].kind < b->unit[i].kind;
    }
    return a->nunits < b->nunits;
}

/* order[] (n) sorted by path: a merge sort from the runs already in order
 * (each group vector's ways come sorted), tmp[] as long, runs[] n + 1. */
static void sort_paths(const pack_filling *path, uint32_t *order, uint32_t *tmp, size_t *runs,
                       size_t n)
{
    size_t nr = 0;
    runs[nr++] = 0;
    for (size_t i = 1; i < n; i++)
        if (path_before(&path[order[i]], &path[order[i - 1]]))
            runs[nr++] = i;
    runs[nr] = n;
    while (nr > 1) {
        size_t merged = 0;
        for (size_t r = 0; r < nr; r += 2) {
            size_t lo = runs[r], mid = runs[r + 1], hi = r + 2 <= nr ? runs[r + 2] : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = path_before(&path[order[j]], &path[order[i]]) ? order[j++] : order[i++];
            while (i < mid)
                tmp[o++] = order[i++];
            while (j < hi)
                tmp[o++] = order[j++];
            runs[merged++] = lo;
        }
        runs[merged] = n;
        nr = merged;
        memcpy(order, tmp, n * sizeof *order);
    }
}

static void listing_free(llmem_ctx *ctx, listing *l)
{
    llmem__free(ctx, l->path);
    llmem__free(ctx, l->vec);
    llmem__free(ctx, l->order);
}

/* The class vectors of the walk's group vectors (total of them), in the
 * class walk's order. Returns LLMEM_OK, LLMEM_ENOMEM, or 1 when a path was
 * not found. */
static int list_classes(const pack_run *r, const walker *w, const uint64_t *demand, size_t total,
                        listing *out)
{
    llmem_ctx *ctx = r->p->ctx;
    const groups *gr = &w->gr;
    expander x;
    int rc = LLMEM_OK;
    memset(&x, 0, sizeof x);
    out->path = llmem__alloc(ctx, (total + 1) * sizeof *out->path);
    out->vec = llmem__alloc(ctx, (total + 1) * sizeof *out->vec);
    out->order = llmem__alloc(ctx, (total + 1) * sizeof *out->order);
    out->n = 0;
    if (out->path == NULL || out->vec == NULL || out->order == NULL)
        return LLMEM_ENOMEM;
    if (gr->identity) {
        /* The walk was the class walk: its order and paths, units renamed. */
        for (size_t i = 0; i < w->fills.n; i++) {
            out->path[i] = w->first[i];
            for (int u = 0; u < out->path[i].nunits; u++)
                out->path[i].unit[u].cls = gr->head[out->path[i].unit[u].cls];
            out->vec[i] = (uint32_t)i;
            out->order[i] = (uint32_t)i;
        }
        out->n = w->fills.n;
        return LLMEM_OK;
    }
    x.ty = &r->types[w->t];
    x.w = w;
    x.gr = gr;
    x.demand = demand;
    x.total = total;
    x.out = out;
    x.path.type = (uint8_t)w->t;
    x.stamp = llmem__calloc(ctx, (w->seen.n + 1) * sizeof *x.stamp);
    x.leads = llmem__alloc(ctx, w->seen.n + 1);
    x.key = llmem__calloc(ctx, gr->n + 4);
    x.rem = llmem__alloc(ctx, (gr->n + 1) * sizeof *x.rem);
    x.active = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *x.active);
    uint32_t *tmp = llmem__alloc(ctx, (total + 1) * sizeof *tmp);
    size_t *runs = llmem__alloc(ctx, (total + 1) * sizeof *runs);
    if (x.stamp == NULL || x.leads == NULL || x.key == NULL || x.rem == NULL ||
        x.active == NULL || tmp == NULL || runs == NULL) {
        rc = LLMEM_ENOMEM;
        goto done;
    }
    for (uint32_t c = 0; c < r->nclasses; c++)
        if (gr->of[c] != NO_GROUP)
            x.active[x.nactive++] = c;
    for (size_t i = 0; i < w->fills.n && !x.lost; i++) {
        x.target = w->fills.pool + i * w->fills.len;
        x.vec = (uint32_t)i;
        for (uint32_t g = 0; g < gr->n; g++)
            x.rem[g] = x.target[g];
        share(&x, 0, 0);
    }
    if (x.lost) {
        rc = 1;
        goto done;
    }
    for (size_t i = 0; i < out->n; i++)
        out->order[i] = (uint32_t)i;
    sort_paths(out->path, out->order, tmp, runs, out->n);
done:
    llmem__free(ctx, x.stamp);
    llmem__free(ctx, x.leads);
    llmem__free(ctx, x.key);
    llmem__free(ctx, x.rem);
    llmem__free(ctx, x.active);
    llmem__free(ctx, tmp);
    llmem__free(ctx, runs);
    return rc;
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

/* The maximal class vectors, in order, then each class's singleton: the
 * units of that class in the first vector with the most of them. */
static int push_listing(pack_run *r, const walker *w, const listing *l, size_t *cap)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t nc = r->nclasses;
    uint8_t *most = llmem__calloc(ctx, nc + 1);
    uint32_t *best = llmem__alloc(ctx, (nc + 1) * sizeof *best);
    int rc = LLMEM_OK;
    if (most == NULL || best == NULL) {
        rc = LLMEM_ENOMEM;
        goto done;
    }
    for (size_t o = 0; o < l->n && rc == LLMEM_OK; o++) {
        const pack_filling *f = &l->path[l->order[o]];
        if (w->maximal[l->vec[l->order[o]]] && !push_filling(r, f, cap))
            rc = LLMEM_ENOMEM;
        /* Units come by class: each class's count is a run. */
        for (int u = 0, end; u < f->nunits; u = end) {
            uint32_t c = f->unit[u].cls;
            for (end = u + 1; end < f->nunits && f->unit[end].cls == c; end++)
                ;
            if (end - u > most[c]) {
                most[c] = (uint8_t)(end - u);
                best[c] = l->order[o];
            }
        }
    }
    for (uint32_t c = 0; c < nc && rc == LLMEM_OK; c++) {
        pack_filling single;
        if (most[c] == 0)
            continue;
        const pack_filling *f = &l->path[best[c]];
        memset(&single, 0, sizeof single);
        single.type = f->type;
        for (int u = 0; u < f->nunits; u++)
            if (f->unit[u].cls == c)
                single.unit[single.nunits++] = f->unit[u];
        if (!push_filling(r, &single, cap))
            rc = LLMEM_ENOMEM;
    }
done:
    llmem__free(ctx, most);
    llmem__free(ctx, best);
    return rc;
}

static void walker_free(llmem_ctx *ctx, walker *w)
{
    groups_free(ctx, &w->gr);
    llmem__free(ctx, w->key);
    llmem__free(ctx, w->first);
    llmem__free(ctx, w->maximal);
    bset_free(&w->seen);
    bset_free(&w->fills);
}

/* Walk type t (w->overflow 1: over a limit, no list) and mark its maximal
 * group vectors. */
static int walk_type(pack_run *r, int t, const uint64_t *demand, walker *w)
{
    llmem_ctx *ctx = r->p->ctx;
    int groups_ok = groups_init(ctx, r, t, demand, &w->gr);
    w->r = r;
    w->t = t;
    w->key = llmem__calloc(ctx, w->gr.n + 4);
    w->first_cap = 256;
    w->first = llmem__alloc(ctx, w->first_cap * sizeof *w->first);
    /* The fills set keys on the group counts only (the first gr.n bytes). */
    int seen_ok = bset_init(&w->seen, ctx, w->gr.n + 4, FILL_MAX_NODES);
    int fills_ok = bset_init(&w->fills, ctx, w->gr.n, FILL_MAX_OUT);
    if (!groups_ok || w->key == NULL || w->first == NULL || !seen_ok || !fills_ok)
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    walk(w, 0);
    if (w->overflow == 2)
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    if (w->overflow)
        return LLMEM_OK;
    uint8_t *v = llmem__alloc(ctx, w->gr.n + 1);
    w->maximal = llmem__alloc(ctx, w->fills.n + 1);
    if (v == NULL || w->maximal == NULL) {
        llmem__free(ctx, v);
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    for (size_t i = 0; i < w->fills.n; i++)
        w->maximal[i] = (uint8_t)group_maximal(w, i, v);
    llmem__free(ctx, v);
    return LLMEM_OK;
}

/* The fillings type t's list will have: its maximal class vectors (those
 * of its maximal group vectors), and a singleton for each class some GPU
 * of the type holds (one unit of its group is a group vector of the walk). */
static uint64_t listed_count(const walker *w, const uint64_t *demand, uint8_t *v)
{
    const groups *gr = &w->gr;
    uint64_t n = 0;
    for (size_t i = 0; i < w->fills.n; i++)
        if (w->maximal[i])
            n = sat_add(n, class_vectors(gr, w->fills.pool + i * w->fills.len));
    memset(v, 0, gr->n);
    for (uint32_t c = 0; c < w->r->nclasses; c++) {
        uint32_t g = gr->of[c];
        if (g == NO_GROUP || demand[c] == 0)
            continue;
        v[g] = 1;
        n = sat_add(n, (uint64_t)bset_has(&w->fills, v));
        v[g] = 0;
    }
    return n;
}

/* Type t's fillings into fill[]: maximal ones, then each class's singleton. */
static int list_type(pack_run *r, const walker *w, const uint64_t *demand, size_t *cap)
{
    llmem_ctx *ctx = r->p->ctx;
    listing l;
    memset(&l, 0, sizeof l);
    int rc = list_classes(r, w, demand, (size_t)w->vectors, &l);
    if (rc == 1) {
        r->fill_complete = 0; /* a kind not found: the LP's columns instead */
        rc = LLMEM_OK;
    } else if (rc == LLMEM_OK) {
        rc = push_listing(r, w, &l, cap);
    }
    listing_free(ctx, &l);
    return rc == LLMEM_ENOMEM ? llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory") : rc;
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
    llmem_ctx *ctx = r->p->ctx;
    walker w[PACK_MAX_TYPES];
    size_t cap = 0;
    uint64_t listed = 0;
    int rc = LLMEM_OK, walked = 0;
    uint64_t *demand = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *demand);
    uint8_t *v = llmem__alloc(ctx, (size_t)r->nclasses + 1);
    memset(w, 0, sizeof w);
    if (demand == NULL || v == NULL) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
        goto done;
    }
    for (uint32_t c = 0; c < r->nclasses; c++)
        demand[c] = r->classes[c].count;
    r->fill_complete = 1;
    /* Every type walked and its list counted before any is listed: a fleet
     * over a limit costs its walks only. */
    for (; walked < r->ntypes && rc == LLMEM_OK && r->fill_complete; walked++) {
        rc = walk_type(r, walked, demand, &w[walked]);
        if (rc == LLMEM_OK && w[walked].overflow)
            r->fill_complete = 0;
        else if (rc == LLMEM_OK)
            listed = sat_add(listed, listed_count(&w[walked], demand, v));
    }
    if (listed > FILL_MAX_OUT)
        r->fill_complete = 0;
    for (int t = 0; t < r->ntypes && rc == LLMEM_OK && r->fill_complete; t++)
        rc = list_type(r, &w[t], demand, &cap);
    r->fill_max = r->nfill;
    if (rc == LLMEM_OK && !r->fill_complete) {
        llmem_pack_fillings_free(r);
        if (!columns_init(r))
            rc = llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
done:
    for (int t = 0; t < walked; t++)
        walker_free(ctx, &w[t]);
    llmem__free(ctx, demand);
    llmem__free(ctx, v);
    return rc;
}
