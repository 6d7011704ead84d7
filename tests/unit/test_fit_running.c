/* SPDX-License-Identifier: MIT */
/*
 * Fitting next to running MIG instances (llmem_fit_add_running): on every
 * MIG GPU of the catalog, for every single running instance (profile, start)
 * and every pair of them, the run's verdict (refused or not, and which
 * status) and each option's placeable flag, starts and chosen start agree
 * with an oracle written here from the placement table alone (the profiles'
 * slots, starts, maximum counts and compute slices, as the public catalog
 * gives them; docs/mig.md, "Placement rules"). Then the errors, the pair
 * rule of old drivers, and that without running instances every value is
 * what a fit without the feature gives.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "llmem.h"

#define GIB (UINT64_C(1) << 30)
#define MAX_PROFILES 16
#define MAX_RUNNING 4

static llmem_ctx *ctx;
static llmem_fit *fit;

static void setup(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_fit_new(ctx, &fit), LLMEM_OK);
}

static void teardown(void)
{
    llmem_fit_free(fit);
    llmem_ctx_free(ctx);
}

TestSuite(fit_running, .init = setup, .fini = teardown);

/* ---- the oracle: one GPU's placement table, from the public catalog ---- */

typedef struct profile_row {
    unsigned slots, compute, max, starts, variant;
    int base; /* the plain profile a variant extends ("1g.10gb" of "1g.10gb+me"); itself if plain */
    const char *name;
} profile_row;

typedef struct table {
    size_t gpu, count;
    unsigned grid, compute;
    profile_row p[MAX_PROFILES];
} table;

typedef struct instance {
    size_t profile, start;
} instance;

static uint64_t mig(size_t gpu, size_t profile, int key)
{
    uint64_t v = 0;
    cr_assert_eq(llmem_mig_profile_get_u64(gpu, profile, key, &v), LLMEM_OK);
    return v;
}

static void load(table *t, size_t gpu)
{
    uint64_t v = 0;
    memset(t, 0, sizeof *t);
    t->gpu = gpu;
    cr_assert_eq(llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_PROFILES, &v), LLMEM_OK);
    cr_assert_leq(v, MAX_PROFILES);
    t->count = (size_t)v;
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_SLOTS, &v);
    t->grid = (unsigned)v;
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_COMPUTE_SLICES, &v);
    t->compute = (unsigned)v;
    for (size_t i = 0; i < t->count; i++) {
        profile_row *r = &t->p[i];
        r->slots = (unsigned)mig(gpu, i, LLMEM_MIG_SLOTS);
        r->compute = (unsigned)mig(gpu, i, LLMEM_MIG_COMPUTE_SLICES);
        r->max = (unsigned)mig(gpu, i, LLMEM_MIG_MAX_COUNT);
        r->starts = (unsigned)mig(gpu, i, LLMEM_MIG_STARTS);
        r->variant = (unsigned)mig(gpu, i, LLMEM_MIG_VARIANT);
        r->name = llmem_mig_profile_name(gpu, i);
        r->base = (int)i;
    }
    /* A variant runs as its plain profile: the one whose name it extends. */
    for (size_t i = 0; i < t->count; i++) {
        if (t->p[i].variant == LLMEM_MIG_PLAIN)
            continue;
        t->p[i].base = -1;
        for (size_t j = 0; j < t->count; j++) {
            size_t n = strlen(t->p[j].name);
            if (t->p[j].variant == LLMEM_MIG_PLAIN && strncmp(t->p[j].name, t->p[i].name, n) == 0 &&
                (t->p[i].name[n] == '+' || t->p[i].name[n] == '-'))
                t->p[i].base = (int)j;
        }
        cr_assert_geq(t->p[i].base, 0, "%s has no plain profile", t->p[i].name);
    }
}

/* Whether instance x stands alone: one of its starts, inside the grid. */
static int start_ok(const table *t, instance x)
{
    const profile_row *r = &t->p[x.profile];
    return x.start < t->grid && (r->starts >> x.start & 1) && x.start + r->slots <= t->grid;
}

/* Whether the GPU holds the n instances together (newest driver: no pair
 * rule): each at a valid start, no two sharing a slot, no profile past its
 * maximum count (a variant counting as its plain profile too), the compute
 * slices within the GPU's. */
static int holds(const table *t, const instance *x, size_t n)
{
    unsigned compute = 0;
    for (size_t i = 0; i < n; i++) {
        const profile_row *r = &t->p[x[i].profile];
        unsigned same = 0, same_base = 0;
        if (!start_ok(t, x[i]))
            return 0;
        compute += r->compute;
        for (size_t j = 0; j < n; j++) {
            const profile_row *o = &t->p[x[j].profile];
            if (j != i && x[j].start < x[i].start + r->slots && x[i].start < x[j].start + o->slots)
                return 0;
            same += x[j].profile == x[i].profile;
            same_base += o->base == r->base;
        }
        if (same > r->max || same_base > t->p[r->base].max)
            return 0;
    }
    return compute <= t->compute;
}

/* The starts where plain profile p can be added to the n instances. */
static uint64_t oracle_starts(const table *t, const instance *x, size_t n, size_t p)
{
    instance y[MAX_RUNNING + 2];
    uint64_t starts = 0;
    memcpy(y, x, n * sizeof *x);
    for (size_t s = 0; s < t->grid; s++) {
        y[n].profile = p;
        y[n].start = s;
        if (holds(t, y, n + 1))
            starts |= UINT64_C(1) << s;
    }
    return starts;
}

/* Of those starts, the one after which the most (plain profile, start)
 * pairs can still be added, the lowest of equals. */
static uint64_t oracle_start(const table *t, const instance *x, size_t n, size_t p)
{
    instance y[MAX_RUNNING + 2];
    uint64_t starts = oracle_starts(t, x, n, p), best = UINT64_MAX;
    unsigned most = 0;
    memcpy(y, x, n * sizeof *x);
    for (size_t s = 0; s < t->grid; s++) {
        if (!(starts >> s & 1))
            continue;
        y[n].profile = p;
        y[n].start = s;
        unsigned open = 0;
        for (size_t q = 0; q < t->count; q++)
            if (t->p[q].variant == LLMEM_MIG_PLAIN)
                open += (unsigned)__builtin_popcountll(oracle_starts(t, y, n + 1, q));
        if (best == UINT64_MAX || open > most) {
            best = s;
            most = open;
        }
    }
    return best;
}

static uint64_t opt(size_t i, int key)
{
    uint64_t v = UINT64_MAX - 1;
    cr_assert_eq(llmem_fit_get_u64(fit, i, key, &v), LLMEM_OK);
    return v;
}

static void declare(const instance *x, size_t n)
{
    cr_assert_eq(llmem_fit_clear_running(fit), LLMEM_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(llmem_fit_add_running(fit, x[i].profile, x[i].start), LLMEM_OK);
}

static const char *label(const table *t, const instance *x, size_t n, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "%s:", llmem_gpu_name(t->gpu));
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, " %s@%zu", t->p[x[i].profile].name,
                                 x[i].start);
    return buf;
}

/* One fit with the n instances running against the oracle; returns whether
 * the GPU holds them. bytes: a need every option's memory holds, so fits is
 * placeable. */
static int check(const table *t, const instance *x, size_t n, uint64_t bytes)
{
    char what[160];
    label(t, x, n, what, sizeof what);
    declare(x, n);
    int rc = llmem_fit_run(fit, t->gpu, bytes, LLMEM_LEVEL_DEVICE);
    if (!holds(t, x, n)) {
        /* ERANGE exactly when the first refused instance has no such start. */
        size_t first = 0;
        while (first < n && holds(t, x, first + 1))
            first++;
        cr_assert_lt(first, n, "%s", what);
        cr_expect_eq(rc, start_ok(t, x[first]) ? LLMEM_EINVAL : LLMEM_ERANGE, "%s: status %d",
                     what, rc);
        char needle[48];
        snprintf(needle, sizeof needle, "running instance %zu (", first + 1);
        cr_expect(strstr(llmem_ctx_error(ctx), needle) != NULL, "%s: %s", what,
                  llmem_ctx_error(ctx));
        cr_expect_eq(llmem_fit_count(fit), 0, "%s: no options after a refusal", what);
        return 0;
    }
    cr_assert_eq(rc, LLMEM_OK, "%s: %s", what, llmem_ctx_error(ctx));
    size_t first_fit = SIZE_MAX, best = SIZE_MAX;
    for (size_t i = 0; i < llmem_fit_count(fit); i++) {
        size_t p = (size_t)opt(i, LLMEM_FIT_PROFILE);
        uint64_t starts, start;
        if (opt(i, LLMEM_FIT_WHOLE_GPU)) {
            starts = n == 0 ? 1 : 0;
            start = n == 0 ? 0 : UINT64_MAX;
        } else {
            starts = oracle_starts(t, x, n, p);
            start = oracle_start(t, x, n, p);
        }
        cr_expect_eq(opt(i, LLMEM_FIT_STARTS), starts, "%s: option %s starts %#llx, oracle %#llx",
                     what, llmem_fit_name(fit, i), (unsigned long long)opt(i, LLMEM_FIT_STARTS),
                     (unsigned long long)starts);
        cr_expect_eq(opt(i, LLMEM_FIT_START), start, "%s: option %s start %llu, oracle %llu",
                     what, llmem_fit_name(fit, i), (unsigned long long)opt(i, LLMEM_FIT_START),
                     (unsigned long long)start);
        cr_expect_eq(opt(i, LLMEM_FIT_PLACEABLE), starts != 0, "%s: option %s", what,
                     llmem_fit_name(fit, i));
        /* Every option's memory holds the need: fits is placeable. */
        cr_expect_eq(opt(i, LLMEM_FIT_FITS), starts != 0, "%s: option %s fits", what,
                     llmem_fit_name(fit, i));
        if (starts != 0 && first_fit == SIZE_MAX)
            first_fit = i;
    }
    int found = llmem_fit_best(fit, &best);
    cr_expect_eq(found, first_fit == SIZE_MAX ? LLMEM_ENOTFOUND : LLMEM_OK, "%s", what);
    if (found == LLMEM_OK)
        cr_expect_eq(best, first_fit, "%s: best", what);
    return 1;
}

static int has_mig(size_t gpu)
{
    uint64_t v = 0;
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_PROFILES, &v);
    return v > 0;
}

Test(fit_running, every_single_instance_agrees_with_the_oracle)
{
    size_t gpus = 0, held = 0, refused = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        table t;
        if (!has_mig(g))
            continue;
        load(&t, g);
        gpus++;
        instance none[1] = { { 0, 0 } };
        check(&t, none, 0, 1);
        /* Every start, the valid ones and the rest, and one past the grid. */
        for (size_t p = 0; p < t.count; p++)
            for (size_t s = 0; s <= t.grid; s++) {
                instance x = { p, s };
                if (check(&t, &x, 1, 1))
                    held++;
                else
                    refused++;
            }
    }
    /* 16 MIG tables; every single instance at a valid start stands. */
    cr_expect_geq(gpus, 16);
    cr_expect_gt(held, 200);
    cr_expect_gt(refused, held);
}

Test(fit_running, every_pair_agrees_with_the_oracle)
{
    size_t pairs = 0, held = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        table t;
        if (!has_mig(g))
            continue;
        load(&t, g);
        for (size_t p = 0; p < t.count; p++)
            for (size_t s = 0; s < t.grid; s++) {
                instance x[2] = { { p, s }, { 0, 0 } };
                if (!start_ok(&t, x[0]))
                    continue;
                for (size_t q = 0; q < t.count; q++)
                    for (size_t u = 0; u < t.grid; u++) {
                        x[1].profile = q;
                        x[1].start = u;
                        pairs++;
                        held += (size_t)check(&t, x, 2, 1);
                    }
            }
    }
    cr_expect_gt(pairs, 10000);
    cr_expect_gt(held, 1000);
}

/* A layout of three, each checked in order, and four instances filling an
 * 8-slot GPU: nothing is placeable then, and best finds nothing. */
Test(fit_running, fuller_layouts_agree_with_the_oracle)
{
    size_t h100;
    table t;
    cr_assert_eq(llmem_gpu_find(ctx, "H100-SXM", &h100), LLMEM_OK);
    load(&t, h100);
    size_t p1 = 0, p2 = 0, p3 = 0;
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "1g.10gb", &p1), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "2g.20gb", &p2), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "3g.40gb", &p3), LLMEM_OK);
    instance full[4] = { { p2, 0 }, { p2, 2 }, { p3, 4 }, { p1, 0 } };
    cr_expect_eq(check(&t, full, 3, 1), 1);
    for (size_t i = 0; i < llmem_fit_count(fit); i++)
        cr_expect_eq(opt(i, LLMEM_FIT_PLACEABLE), 0, "%s", llmem_fit_name(fit, i));
    size_t best;
    cr_expect_eq(llmem_fit_best(fit, &best), LLMEM_ENOTFOUND);
    cr_expect_eq(check(&t, full, 4, 1), 0, "a fourth on a full GPU");
    for (size_t s = 0; s < t.grid; s++) {
        instance x[3] = { { p3, 4 }, { p1, s }, { p2, 0 } };
        check(&t, x, 3, 1);
    }
}

/* The figures of a fit with nothing running, with one whose running
 * instances were cleared, and with none declared at all are the same,
 * value by value, and every option is placeable. */
Test(fit_running, without_running_instances_nothing_changes)
{
    llmem_fit *plain;
    cr_assert_eq(llmem_fit_new(ctx, &plain), LLMEM_OK);
    const uint64_t needs[] = { 1, 3 * GIB, 9 * GIB, 30 * GIB, 70 * GIB, 500 * GIB, UINT64_MAX };
    const int64_t drivers[] = { 0, 470, 520, 535 };
    for (size_t g = 0; g < llmem_gpu_count(); g++)
        for (size_t b = 0; b < sizeof needs / sizeof needs[0]; b++)
            for (size_t d = 0; d < sizeof drivers / sizeof drivers[0]; d++) {
                cr_assert_eq(llmem_fit_set_int(plain, LLMEM_FIT_DRIVER, drivers[d]), LLMEM_OK);
                cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, drivers[d]), LLMEM_OK);
                cr_assert_eq(llmem_fit_set_int(plain, LLMEM_FIT_MIN_COMPUTE, (int64_t)b % 3),
                             LLMEM_OK);
                cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_MIN_COMPUTE, (int64_t)b % 3),
                             LLMEM_OK);
                if (has_mig(g))
                    cr_assert_eq(llmem_fit_add_running(fit, 0, 0), LLMEM_OK);
                cr_assert_eq(llmem_fit_clear_running(fit), LLMEM_OK);
                cr_assert_eq(llmem_fit_run(plain, g, needs[b], LLMEM_LEVEL_RESERVED), LLMEM_OK);
                cr_assert_eq(llmem_fit_run(fit, g, needs[b], LLMEM_LEVEL_RESERVED), LLMEM_OK);
                cr_assert_eq(llmem_fit_count(fit), llmem_fit_count(plain));
                for (size_t i = 0; i < llmem_fit_count(fit); i++) {
                    for (int key = LLMEM_FIT_PROFILE; key <= LLMEM_FIT_BUDGET_BYTES; key++) {
                        uint64_t a = 0, c = 1;
                        cr_assert_eq(llmem_fit_get_u64(plain, i, key, &a), LLMEM_OK);
                        cr_assert_eq(llmem_fit_get_u64(fit, i, key, &c), LLMEM_OK);
                        cr_expect_eq(a, c, "%s, option %zu, key %d", llmem_gpu_name(g), i, key);
                    }
                    cr_expect_str_eq(llmem_fit_name(fit, i), llmem_fit_name(plain, i));
                    cr_expect_eq(opt(i, LLMEM_FIT_PLACEABLE), 1, "%s option %s",
                                 llmem_gpu_name(g), llmem_fit_name(fit, i));
                    cr_expect_neq(opt(i, LLMEM_FIT_STARTS), 0);
                    cr_expect_lt(opt(i, LLMEM_FIT_START), 12);
                }
            }
    llmem_fit_free(plain);
}

/* The start chosen on an empty 8-slot GPU: each profile where the MIG
 * guide's layouts put it, leaving the most room. */
Test(fit_running, starts_on_an_empty_gpu)
{
    size_t h100;
    cr_assert_eq(llmem_gpu_find(ctx, "H100-SXM", &h100), LLMEM_OK);
    cr_assert_eq(llmem_fit_run(fit, h100, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    const char *names[] = { "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
                            "whole" };
    const uint64_t starts[] = { 6, 6, 4, 4, 0, 0, 0 };
    cr_assert_eq(llmem_fit_count(fit), 7);
    for (size_t i = 0; i < 7; i++) {
        cr_expect_str_eq(llmem_fit_name(fit, i), names[i]);
        cr_expect_eq(opt(i, LLMEM_FIT_START), starts[i], "%s", names[i]);
    }
}

Test(fit_running, a_running_instance_takes_its_room)
{
    size_t h100, four = 0, one = 0, best = 0;
    cr_assert_eq(llmem_gpu_find(ctx, "H100-SXM", &h100), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "4g.40gb", &four), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "1g.10gb", &one), LLMEM_OK);
    cr_assert_eq(llmem_fit_add_running(fit, four, 0), LLMEM_OK);
    cr_assert_eq(llmem_fit_add_running(fit, one, 4), LLMEM_OK);
    /* 9 GiB: the 1g.10gb holds it, at 5 (a 1g at 5 keeps the 1g.20gb at 6). */
    cr_assert_eq(llmem_fit_run(fit, h100, 9 * GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    cr_assert_eq(llmem_fit_best(fit, &best), LLMEM_OK);
    cr_expect_str_eq(llmem_fit_name(fit, best), "1g.10gb");
    cr_expect_eq(opt(best, LLMEM_FIT_START), 5);
    cr_expect_eq(opt(best, LLMEM_FIT_STARTS), 0x60u, "slots 5 and 6 free for a 1g");
    /* 30 GiB: the 3g.40gb and larger hold it but cannot be created; the
     * whole GPU neither, while anything runs. */
    cr_assert_eq(llmem_fit_run(fit, h100, 30 * GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    cr_expect_eq(llmem_fit_best(fit, &best), LLMEM_ENOTFOUND);
    size_t last = llmem_fit_count(fit) - 1;
    cr_expect_eq(opt(last, LLMEM_FIT_WHOLE_GPU), 1);
    cr_expect_eq(opt(last, LLMEM_FIT_PLACEABLE), 0);
    cr_expect_eq(opt(last, LLMEM_FIT_START), UINT64_MAX);
    cr_expect_eq(opt(last, LLMEM_FIT_STARTS), 0);
    cr_expect_eq(opt(last, LLMEM_FIT_FITS), 0);
    cr_expect_gt(opt(last, LLMEM_FIT_HEADROOM_BYTES), 0, "the memory holds it");
    /* Cleared, the same need takes the 3g.40gb. */
    cr_assert_eq(llmem_fit_clear_running(fit), LLMEM_OK);
    cr_assert_eq(llmem_fit_run(fit, h100, 30 * GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    cr_assert_eq(llmem_fit_best(fit, &best), LLMEM_OK);
    cr_expect_str_eq(llmem_fit_name(fit, best), "3g.40gb");
    cr_expect_eq(opt(best, LLMEM_FIT_START), 4);
}

/* A variant runs on its plain profile's slots, within its own count. */
Test(fit_running, variants_run_as_their_plain_profile)
{
    size_t h100, me = 0, one = 0, best = 0;
    cr_assert_eq(llmem_gpu_find(ctx, "H100-SXM", &h100), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "1g.10gb+me", &me), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "1g.10gb", &one), LLMEM_OK);
    cr_assert_eq(llmem_fit_add_running(fit, me, 0), LLMEM_OK);
    cr_assert_eq(llmem_fit_run(fit, h100, 9 * GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    cr_assert_eq(llmem_fit_best(fit, &best), LLMEM_OK);
    cr_expect_str_eq(llmem_fit_name(fit, best), "1g.10gb");
    cr_expect_eq(opt(best, LLMEM_FIT_STARTS), 0x7Eu, "slot 0 taken");
    cr_assert_eq(llmem_fit_add_running(fit, me, 3), LLMEM_OK);
    cr_expect_eq(llmem_fit_run(fit, h100, 9 * GIB, LLMEM_LEVEL_DEVICE), LLMEM_EINVAL);
    cr_expect(strstr(llmem_ctx_error(ctx), "running instance 2 (1g.10gb+me@3)") != NULL, "%s",
              llmem_ctx_error(ctx));
    cr_expect(strstr(llmem_ctx_error(ctx), "at most 1 1g.10gb+me") != NULL, "%s",
              llmem_ctx_error(ctx));
}

/* Before R510 an A100 refuses a 4g and a 3g together: as a running pair,
 * and as an option next to a running 4g. */
Test(fit_running, old_drivers_refuse_a_pair)
{
    size_t a100, four = 0, three = 0;
    cr_assert_eq(llmem_gpu_find(ctx, "A100-80GB", &a100), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, a100, "4g.40gb", &four), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, a100, "3g.40gb", &three), LLMEM_OK);
    cr_assert_eq(llmem_fit_add_running(fit, four, 0), LLMEM_OK);
    for (int64_t driver = 470; driver <= 510; driver += 40) {
        cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, driver), LLMEM_OK);
        cr_assert_eq(llmem_fit_run(fit, a100, 30 * GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
        for (size_t i = 0; i < llmem_fit_count(fit); i++)
            if (strcmp(llmem_fit_name(fit, i), "3g.40gb") == 0) {
                cr_expect_eq(opt(i, LLMEM_FIT_PLACEABLE), driver >= 510, "R%lld",
                             (long long)driver);
                cr_expect_eq(opt(i, LLMEM_FIT_FITS), driver >= 510);
            }
    }
    cr_assert_eq(llmem_fit_add_running(fit, three, 4), LLMEM_OK);
    cr_expect_eq(llmem_fit_run(fit, a100, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK, "R510 holds both");
    cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, 470), LLMEM_OK);
    cr_expect_eq(llmem_fit_run(fit, a100, GIB, LLMEM_LEVEL_DEVICE), LLMEM_EINVAL);
    cr_expect(strstr(llmem_ctx_error(ctx), "running instance 2 (3g.40gb@4): driver branch 470 "
                                           "refuses it on one GPU with running instance 1 "
                                           "(4g.40gb@0) (accepted from R510 on)") != NULL,
              "%s", llmem_ctx_error(ctx));
}

Test(fit_running, bad_instances_are_named)
{
    size_t h100, a100, t4, three = 0, two = 0, seven = 0, dbl = 0;
    cr_assert_eq(llmem_gpu_find(ctx, "H100-SXM", &h100), LLMEM_OK);
    cr_assert_eq(llmem_gpu_find(ctx, "A100-80GB", &a100), LLMEM_OK);
    cr_assert_eq(llmem_gpu_find(ctx, "T4", &t4), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "3g.40gb", &three), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "2g.20gb", &two), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "7g.80gb", &seven), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, a100, "1g.20gb", &dbl), LLMEM_OK);
    struct {
        size_t gpu;
        instance x[2];
        size_t n;
        int64_t driver;
        int status;
        const char *message;
    } cases[] = {
        { h100, { { 99, 0 } }, 1, 0, LLMEM_ERANGE,
          "fit: running instance 1: H100-SXM has no MIG profile 99 (7 profiles)" },
        { t4, { { 0, 0 } }, 1, 0, LLMEM_ERANGE,
          "fit: running instance 1: T4 has no MIG profile 0 (0 profiles)" },
        { h100, { { three, 2 } }, 1, 0, LLMEM_ERANGE,
          "fit: running instance 1 (3g.40gb@2): 3g.40gb starts at 0, 4 on H100-SXM, not 2" },
        { h100, { { three, SIZE_MAX } }, 1, 0, LLMEM_ERANGE, "starts at 0, 4 on H100-SXM" },
        { h100, { { three, 4 }, { two, 4 } }, 2, 0, LLMEM_EINVAL,
          "fit: running instance 2 (2g.20gb@4): its slots 4-5 overlap running instance 1 "
          "(3g.40gb@4), on slots 4-7" },
        { h100, { { seven, 0 }, { seven, 0 } }, 2, 0, LLMEM_EINVAL, "overlap running instance 1" },
        { a100, { { dbl, 0 } }, 1, 520, LLMEM_EINVAL,
          "fit: running instance 1 (1g.20gb@0): driver branch 520 has no 1g.20gb (from R525 on)" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, cases[c].driver), LLMEM_OK);
        /* A good run first: a refused one keeps its options. */
        cr_assert_eq(llmem_fit_clear_running(fit), LLMEM_OK);
        cr_assert_eq(llmem_fit_run(fit, cases[c].gpu, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
        size_t before = llmem_fit_count(fit);
        for (size_t i = 0; i < cases[c].n; i++)
            cr_assert_eq(llmem_fit_add_running(fit, cases[c].x[i].profile, cases[c].x[i].start),
                         LLMEM_OK);
        cr_expect_eq(llmem_fit_count(fit), 0, "case %zu: adding drops the options", c);
        cr_assert_eq(llmem_fit_clear_running(fit), LLMEM_OK);
        cr_assert_eq(llmem_fit_run(fit, cases[c].gpu, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
        for (size_t i = 0; i < cases[c].n; i++)
            cr_assert_eq(llmem_fit_add_running(fit, cases[c].x[i].profile, cases[c].x[i].start),
                         LLMEM_OK);
        cr_expect_eq(llmem_fit_run(fit, cases[c].gpu, GIB, LLMEM_LEVEL_DEVICE), cases[c].status,
                     "case %zu", c);
        cr_expect(strstr(llmem_ctx_error(ctx), cases[c].message) != NULL, "case %zu: %s", c,
                  llmem_ctx_error(ctx));
        cr_expect_eq(llmem_fit_count(fit), 0, "case %zu", c);
        /* Cleared, the handle runs again, with the options of before. */
        cr_assert_eq(llmem_fit_clear_running(fit), LLMEM_OK);
        cr_expect_eq(llmem_fit_run(fit, cases[c].gpu, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
        cr_expect_eq(llmem_fit_count(fit), before);
    }
}

Test(fit_running, a_refused_run_keeps_the_last_result)
{
    size_t h100, three = 0;
    cr_assert_eq(llmem_gpu_find(ctx, "H100-SXM", &h100), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(ctx, h100, "3g.40gb", &three), LLMEM_OK);
    cr_assert_eq(llmem_fit_add_running(fit, three, 4), LLMEM_OK);
    cr_assert_eq(llmem_fit_run(fit, h100, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    size_t count = llmem_fit_count(fit);
    /* A run with a zero need fails and leaves the options. */
    cr_expect_neq(llmem_fit_run(fit, h100, 0, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    cr_expect_eq(llmem_fit_count(fit), count);
    /* Clearing nothing keeps them; clearing something drops them. */
    llmem_fit *other;
    cr_assert_eq(llmem_fit_new(ctx, &other), LLMEM_OK);
    cr_assert_eq(llmem_fit_run(other, h100, GIB, LLMEM_LEVEL_DEVICE), LLMEM_OK);
    cr_expect_eq(llmem_fit_clear_running(other), LLMEM_OK);
    cr_expect_eq(llmem_fit_count(other), count);
    llmem_fit_free(other);
    cr_expect_eq(llmem_fit_clear_running(fit), LLMEM_OK);
    cr_expect_eq(llmem_fit_count(fit), 0);
}

Test(fit_running, limits_and_null)
{
    cr_expect_eq(llmem_fit_add_running(NULL, 0, 0), LLMEM_EINVAL);
    cr_expect_eq(llmem_fit_clear_running(NULL), LLMEM_EINVAL);
    for (size_t i = 0; i < 16; i++)
        cr_assert_eq(llmem_fit_add_running(fit, 0, i), LLMEM_OK);
    cr_expect_eq(llmem_fit_add_running(fit, 0, 16), LLMEM_ERANGE);
    cr_expect(strstr(llmem_ctx_error(ctx), "at most 16 running instances") != NULL, "%s",
              llmem_ctx_error(ctx));
    cr_expect_eq(llmem_fit_clear_running(fit), LLMEM_OK);
    cr_expect_eq(llmem_fit_add_running(fit, 0, 0), LLMEM_OK, "room again");
    uint64_t v;
    cr_expect_eq(llmem_fit_get_u64(fit, 0, LLMEM_FIT_STARTS + 1, &v), LLMEM_ERANGE,
                 "no options yet");
}
