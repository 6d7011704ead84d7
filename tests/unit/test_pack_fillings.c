/* SPDX-License-Identifier: MIT */
/*
 * White-box checks of the fillings (lib/pack/fillings.c): the list the walk
 * over groups gives must be the one a walk over classes gives, filling for
 * filling, in the same order and with the same kinds, and must be given up
 * (the LP then generates its fillings) on exactly the same problems. The
 * class walk is written here as the library had it: a depth-first walk over
 * (class counts, kind counts) pairs, units by class then kind, each pair
 * expanded once, past 200,000 pairs or 20,000 class vectors given up; the
 * maximal vectors in the order met, then each class's singleton (its units in
 * the first vector with the most of them); past 20,000 fillings in all, the
 * list given up. The problems are random (seeded): one type, and fleets of
 * two to eight types, where the classes (the kinds that hold a job on every
 * type) are many and the groups (on one type) few.
 */
#include "gpu/gpu.h"
#include "pack/pack.h"

#include "core/ctx.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static llmem_ctx *ctx;
static void setup(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
}
static void teardown(void)
{
    llmem_ctx_free(ctx);
}
TestSuite(pack_fillings, .init = setup, .fini = teardown);

/* The library's limits (fillings.c). */
#define REF_MAX_PAIRS 200000u
#define REF_MAX_VECTORS 20000u

/* --- the class walk --- */

/* A growing set of fixed-length keys (open addressing). */
typedef struct ref_set {
    size_t len, n, cap, nslots;
    uint8_t *pool;
    uint32_t *slot;
} ref_set;

static uint64_t ref_hash(const uint8_t *b, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

static size_t ref_slot(const ref_set *s, const uint8_t *key)
{
    size_t mask = s->nslots - 1, h = (size_t)ref_hash(key, s->len) & mask;
    while (s->slot[h] != 0 && memcmp(s->pool + (s->slot[h] - 1) * s->len, key, s->len) != 0)
        h = (h + 1) & mask;
    return h;
}

static void ref_set_init(ref_set *s, size_t len)
{
    memset(s, 0, sizeof *s);
    s->len = len;
    s->cap = 1024;
    s->nslots = 2048;
    s->pool = malloc(s->cap * (len + 1));
    s->slot = calloc(s->nslots, sizeof *s->slot);
    cr_assert(s->pool != NULL && s->slot != NULL);
}

static void ref_set_free(ref_set *s)
{
    free(s->pool);
    free(s->slot);
}

/* 1 when added (index n - 1), 0 when there. */
static int ref_add(ref_set *s, const uint8_t *key)
{
    if (s->slot[ref_slot(s, key)] != 0)
        return 0;
    if (s->n == s->cap) {
        s->cap *= 2;
        s->pool = realloc(s->pool, s->cap * (s->len + 1));
        free(s->slot);
        s->nslots *= 2;
        s->slot = calloc(s->nslots, sizeof *s->slot);
        cr_assert(s->pool != NULL && s->slot != NULL);
        for (size_t i = 0; i < s->n; i++)
            s->slot[ref_slot(s, s->pool + i * s->len)] = (uint32_t)(i + 1);
    }
    memcpy(s->pool + s->n * s->len, key, s->len);
    s->slot[ref_slot(s, key)] = (uint32_t)(s->n + 1);
    s->n++;
    return 1;
}

static int ref_has(const ref_set *s, const uint8_t *key)
{
    return s->slot[ref_slot(s, key)] != 0;
}

typedef struct ref_walk {
    const pack_run *r;
    int t;
    const uint64_t *demand;
    uint32_t nc;
    uint8_t *key; /* class counts, then the state (4 bytes) */
    pack_unit unit[PACK_MAX_UNITS];
    uint8_t nunits;
    ref_set seen, fills;
    pack_filling *first; /* by fills index */
    size_t first_cap;
    int over;
} ref_walk;

static void ref_visit(ref_walk *w, uint32_t state)
{
    const pack_type *ty = &w->r->types[w->t];
    if (ref_add(&w->fills, w->key)) {
        if (w->fills.n > REF_MAX_VECTORS) {
            w->over = 1;
            return;
        }
        if (w->fills.n > w->first_cap) {
            w->first_cap *= 2;
            w->first = realloc(w->first, w->first_cap * sizeof *w->first);
            cr_assert(w->first != NULL);
        }
        pack_filling *f = &w->first[w->fills.n - 1];
        f->type = (uint8_t)w->t;
        f->nunits = w->nunits;
        memcpy(f->unit, w->unit, w->nunits * sizeof w->unit[0]);
    }
    if (w->nunits >= PACK_MAX_UNITS)
        return;
    for (uint32_t c = 0; c < w->nc && !w->over; c++) {
        uint8_t mask = w->r->classes[c].mask[w->t];
        if (mask == 0 || w->key[c] >= w->demand[c])
            continue;
        for (int k = 0; k < ty->nkinds && !w->over; k++) {
            if (!(mask >> k & 1) || llmem_pack_count(ty, state, k) >= ty->kind[k].max ||
                !ty->feasible[state + ty->step[k]])
                continue;
            uint32_t next = state + ty->step[k];
            w->key[c]++;
            memcpy(w->key + w->nc, &next, 4);
            if (ref_add(&w->seen, w->key)) {
                if (w->seen.n > REF_MAX_PAIRS) {
                    w->over = 1;
                } else {
                    w->unit[w->nunits].cls = c;
                    w->unit[w->nunits].kind = (uint8_t)k;
                    w->nunits++;
                    ref_visit(w, next);
                    w->nunits--;
                }
            }
            w->key[c]--;
            memcpy(w->key + w->nc, &state, 4);
        }
    }
}

static void ref_push(pack_filling **out, size_t *n, size_t *cap, const pack_filling *f)
{
    if (*n == *cap) {
        *cap *= 2;
        *out = realloc(*out, *cap * sizeof **out);
        cr_assert(*out != NULL);
    }
    (*out)[(*n)++] = *f;
}

/* The fillings as the class walk lists them: 1 with out[] (*n of them), or
 * 0 when given up. *pairs gets the pairs the walks met. */
static int ref_fillings(const pack_run *r, pack_filling **out, size_t *n, uint64_t *pairs)
{
    uint32_t nc = r->nclasses;
    uint64_t demand[256];
    size_t cap = 64;
    cr_assert(nc < 256);
    for (uint32_t c = 0; c < nc; c++)
        demand[c] = r->classes[c].count;
    *out = malloc(cap * sizeof **out);
    cr_assert(*out != NULL);
    *n = 0;
    *pairs = 0;
    for (int t = 0; t < r->ntypes; t++) {
        ref_walk w;
        memset(&w, 0, sizeof w);
        w.r = r;
        w.t = t;
        w.demand = demand;
        w.nc = nc;
        w.key = calloc(nc + 4, 1);
        w.first_cap = 256;
        w.first = malloc(w.first_cap * sizeof *w.first);
        cr_assert(w.key != NULL && w.first != NULL);
        ref_set_init(&w.seen, nc + 4);
        ref_set_init(&w.fills, nc);
        ref_visit(&w, 0);
        *pairs += w.seen.n;
        int over = w.over;
        uint8_t v[256];
        for (size_t i = 0; i < w.fills.n && !over; i++) {
            memcpy(v, w.fills.pool + i * nc, nc);
            int maximal = w.first[i].nunits > 0;
            for (uint32_t c = 0; c < nc && maximal; c++) {
                if (r->classes[c].mask[t] == 0 || v[c] >= demand[c])
                    continue;
                v[c]++;
                maximal = !ref_has(&w.fills, v);
                v[c]--;
            }
            if (maximal)
                ref_push(out, n, &cap, &w.first[i]);
        }
        for (uint32_t c = 0; c < nc && !over; c++) {
            pack_filling best;
            uint8_t most = 0;
            memset(&best, 0, sizeof best);
            for (size_t i = 0; i < w.fills.n; i++) {
                if (w.fills.pool[i * nc + c] <= most)
                    continue;
                most = w.fills.pool[i * nc + c];
                best.type = (uint8_t)t;
                best.nunits = 0;
                for (int u = 0; u < w.first[i].nunits; u++)
                    if (w.first[i].unit[u].cls == c)
                        best.unit[best.nunits++] = w.first[i].unit[u];
            }
            if (most > 0)
                ref_push(out, n, &cap, &best);
        }
        free(w.key);
        free(w.first);
        ref_set_free(&w.seen);
        ref_set_free(&w.fills);
        if (over)
            return 0;
    }
    return *n <= REF_MAX_VECTORS;
}

/* --- problems --- */

static uint64_t seed;
static uint64_t rnd(uint64_t n)
{
    seed = seed * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (seed >> 33) % n;
}

typedef struct job_spec {
    uint64_t bytes;
    int level;
    int min_compute;
} job_spec;

/* A pack of the fleet (names, counts; n of them), the jobs and the margin. */
static llmem_pack *problem(const char *const *names, const uint64_t *counts, int n,
                           const job_spec *jobs, size_t njobs, int64_t margin)
{
    llmem_pack *p = NULL;
    cr_assert_eq(llmem_pack_new(ctx, &p), LLMEM_OK);
    for (int t = 0; t < n; t++) {
        size_t g;
        cr_assert_eq(llmem_gpu_find(NULL, names[t], &g), LLMEM_OK, "%s", names[t]);
        cr_assert_eq(llmem_pack_add_gpu(p, g, counts[t]), LLMEM_OK);
    }
    for (size_t j = 0; j < njobs; j++)
        cr_assert_eq(llmem_pack_add_job(p, "j", jobs[j].bytes, jobs[j].level, jobs[j].min_compute),
                     LLMEM_OK);
    cr_assert_eq(llmem_pack_set_int(p, LLMEM_PACK_MARGIN_PERMILLE, margin), LLMEM_OK);
    return p;
}

/* A random problem: 1 to max_jobs jobs, on one type (types 1) or two to
 * eight distinct types, with MIG (mig 1) or any. */
static llmem_pack *random_problem(int types, int mig, size_t max_jobs, char *what, size_t cap)
{
    static const uint64_t max_gib[] = { 10, 20, 40, 80, 160 };
    const char *names[PACK_MAX_TYPES];
    uint64_t counts[PACK_MAX_TYPES];
    job_spec jobs[128];
    size_t ngpus = llmem_gpu_count(), len = 0;
    int n = types == 1 ? 1 : 2 + (int)rnd(PACK_MAX_TYPES - 1);
    for (int t = 0; t < n; t++) {
        int fresh;
        do {
            size_t g = (size_t)rnd(ngpus);
            uint64_t profiles = 0;
            cr_assert_eq(llmem_gpu_get_u64(g, LLMEM_GPU_MIG_PROFILES, &profiles), LLMEM_OK);
            names[t] = llmem_gpu_name(g);
            fresh = !mig || profiles > 0;
            for (int u = 0; u < t; u++)
                fresh &= strcmp(names[u], names[t]) != 0;
        } while (!fresh);
        counts[t] = rnd(2) ? 0 : 1 + rnd(8);
        len += (size_t)snprintf(what + len, cap - len, "%s%s:%llu", t ? "," : "", names[t],
                                (unsigned long long)counts[t]);
    }
    size_t njobs = 1 + (size_t)rnd(max_jobs);
    uint64_t gib = max_gib[rnd(5)];
    cr_assert(njobs <= sizeof jobs / sizeof jobs[0]);
    for (size_t j = 0; j < njobs; j++) {
        jobs[j].bytes = (1 + rnd(gib)) * (UINT64_C(1) << 30) - rnd(1024) * (UINT64_C(1) << 20);
        jobs[j].level = rnd(2) ? LLMEM_LEVEL_DEVICE : LLMEM_LEVEL_RESERVED;
        jobs[j].min_compute = rnd(5) == 0 ? 1 + (int)rnd(7) : 0;
    }
    int64_t margin = (int64_t)rnd(501);
    snprintf(what + len, cap - len, ", %zu jobs, margin %lld", njobs, (long long)margin);
    return problem(names, counts, n, jobs, njobs, margin);
}

/* The run's state up to its fillings, as llmem_pack_run() sets it up. */
static void run_fillings(llmem_pack *p, pack_run *r)
{
    memset(r, 0, sizeof *r);
    r->p = p;
    r->types = p->types;
    r->ntypes = p->ntypes;
    for (int t = 0; t < p->ntypes; t++)
        cr_assert_eq(llmem_pack_type_init(ctx, &p->types[t], p->type_gpu[t], p->type_limit[t],
                                          p->i[LLMEM_PACK_DRIVER]),
                     LLMEM_OK);
    llmem_pack_room(r, r->room);
    for (int t = 0; t < r->ntypes; t++)
        if (r->room[t] != PACK_NO_LIMIT)
            r->counts = r->room;
    cr_assert_eq(llmem_pack_classify(r), LLMEM_OK);
    cr_assert_eq(llmem_pack_fillings(r), LLMEM_OK);
}

static void run_free(llmem_pack *p, pack_run *r)
{
    llmem_pack_fillings_free(r);
    llmem__free(ctx, r->classes);
    llmem__free(ctx, r->order);
    for (int t = 0; t < p->ntypes; t++)
        llmem_pack_type_free(ctx, &p->types[t]);
    llmem_pack_free(p);
}

typedef struct tally {
    int listed, given_up;
    int near_limit; /* listed, of more than half the pairs the class walk took */
    uint32_t most_classes;
} tally;

/* The library's fillings of p are the class walk's. */
static void check_same(llmem_pack *p, const char *what, tally *tl)
{
    pack_run r;
    pack_filling *want;
    size_t n;
    uint64_t pairs;
    run_fillings(p, &r);
    int listed = ref_fillings(&r, &want, &n, &pairs);
    cr_assert_eq(r.fill_complete, listed, "%s: listed %d, the class walk %d", what,
                 r.fill_complete, listed);
    if (listed) {
        cr_assert_eq(r.nfill, n, "%s: %zu fillings, the class walk %zu", what, r.nfill, n);
        for (size_t i = 0; i < n; i++) {
            const pack_filling *a = &r.fill[i], *b = &want[i];
            int same = a->type == b->type && a->nunits == b->nunits;
            for (int u = 0; u < a->nunits && same; u++)
                same = a->unit[u].cls == b->unit[u].cls && a->unit[u].kind == b->unit[u].kind;
            cr_assert(same, "%s: filling %zu differs", what, i);
        }
    }
    tl->listed += listed;
    tl->given_up += !listed;
    tl->near_limit += listed && pairs > REF_MAX_PAIRS / 2;
    tl->most_classes = r.nclasses > tl->most_classes ? r.nclasses : tl->most_classes;
    free(want);
    run_free(p, &r);
}

Test(pack_fillings, one_type_lists_what_the_class_walk_lists)
{
    tally tl = { 0 };
    char what[256];
    seed = 11;
    for (int i = 0; i < 300; i++) {
        llmem_pack *p = random_problem(1, 0, 100, what, sizeof what);
        check_same(p, what, &tl);
    }
    cr_assert_gt(tl.listed, 250);
}

/* Fleets of two to eight MIG types: many classes, the list given up on some
 * (before, after 200,000 pairs walked; now counted), listed on others, some
 * of them of more than 100,000 pairs. */
Test(pack_fillings, fleets_list_what_the_class_walk_lists, .timeout = 600)
{
    tally tl = { 0 };
    char what[256];
    seed = 12;
    for (int i = 0; i < 120; i++) {
        llmem_pack *p = random_problem(PACK_MAX_TYPES, 1, 100, what, sizeof what);
        check_same(p, what, &tl);
    }
    cr_log_info("fleets: %d listed (%d of over 100,000 pairs), %d given up, up to %u classes",
                tl.listed, tl.near_limit, tl.given_up, tl.most_classes);
    cr_assert_gt(tl.listed, 100);
    cr_assert_geq(tl.given_up, 2);
    cr_assert_geq(tl.near_limit, 2);
    cr_assert_gt(tl.most_classes, 20);
}

/* The review's problem (harness slow1.json: 29 jobs, GB200:1, B200, H100-NVL
 * and H20, margin 16.2 %): 244 fillings listed, as before, and the layout it
 * gave, 15 GPUs. */
Test(pack_fillings, review_fleet_gives_the_same_layout)
{
    static const job_spec jobs[] = {
        { 9111938574, LLMEM_LEVEL_DEVICE, 0 },     { 9305534199, LLMEM_LEVEL_DEVICE, 0 },
        { 41138707257, LLMEM_LEVEL_DEVICE, 0 },    { 5107259349, LLMEM_LEVEL_RESERVED, 0 },
        { 8396510230, LLMEM_LEVEL_DEVICE, 4 },     { 17394285777, LLMEM_LEVEL_RESERVED, 0 },
        { 83289612254, LLMEM_LEVEL_DEVICE, 0 },    { 144994888509, LLMEM_LEVEL_DEVICE, 0 },
        { 48684216891, LLMEM_LEVEL_DEVICE, 6 },    { 10990836262, LLMEM_LEVEL_RESERVED, 0 },
        { 5693176862, LLMEM_LEVEL_RESERVED, 7 },   { 18941619258, LLMEM_LEVEL_DEVICE, 0 },
        { 33635203290, LLMEM_LEVEL_RESERVED, 0 },  { 57586830955, LLMEM_LEVEL_RESERVED, 0 },
        { 11260491586, LLMEM_LEVEL_RESERVED, 0 },  { 12906831845, LLMEM_LEVEL_RESERVED, 0 },
        { 120957588077, LLMEM_LEVEL_DEVICE, 6 },   { 117590881087, LLMEM_LEVEL_RESERVED, 1 },
        { 34663093085, LLMEM_LEVEL_DEVICE, 0 },    { 60589443508, LLMEM_LEVEL_RESERVED, 0 },
        { 47768340920, LLMEM_LEVEL_RESERVED, 0 },  { 144676420471, LLMEM_LEVEL_RESERVED, 0 },
        { 78334287586, LLMEM_LEVEL_RESERVED, 0 },  { 8163527800, LLMEM_LEVEL_RESERVED, 0 },
        { 103775396705, LLMEM_LEVEL_DEVICE, 0 },   { 3879391806, LLMEM_LEVEL_RESERVED, 0 },
        { 3286900292, LLMEM_LEVEL_RESERVED, 0 },   { 136388491865, LLMEM_LEVEL_RESERVED, 0 },
        { 6167916745, LLMEM_LEVEL_DEVICE, 0 },
    };
    static const char *const names[] = { "GB200", "B200", "H100-NVL", "H20" };
    static const uint64_t counts[] = { 1, 0, 0, 0 };
    size_t njobs = sizeof jobs / sizeof jobs[0];
    tally tl = { 0 };
    check_same(problem(names, counts, 4, jobs, njobs, 162), "review", &tl);
    cr_assert_eq(tl.listed, 1);

    llmem_pack *p = problem(names, counts, 4, jobs, njobs, 162);
    uint64_t used = 0, placed = 0;
    cr_assert_eq(llmem_pack_run(p), LLMEM_OK);
    cr_assert_eq(llmem_pack_get_u64(p, LLMEM_PACK_GPUS_USED, &used), LLMEM_OK);
    cr_assert_eq(llmem_pack_get_u64(p, LLMEM_PACK_JOBS_PLACED, &placed), LLMEM_OK);
    cr_assert_eq(used, 15);
    cr_assert_eq(placed, njobs);
    llmem_pack_free(p);
}
