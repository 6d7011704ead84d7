/* SPDX-License-Identifier: MIT */
/*
 * White-box checks of the MIG layout enumeration (lib/pack/layouts.c)
 * against the counts derived in ../shared/reference/mig_configs.md:
 *  - 8-slot GPUs, the five classic profiles (1g, 2g, 3g, 4g, 7g): 19 maximal
 *    positional layouts, 37 feasible multisets, 14 multisets of maximal
 *    layouts (12 maximal as multisets);
 *  - with the double-memory 1g as well: 78 maximal layouts, 77 multisets and
 *    38 multisets of maximal layouts;
 *  - A30 (4 slots): 5 maximal layouts, 9 multisets, 4 maximal;
 *  - RTX PRO 6000 (12-unit grid): 5 maximal layouts, 9 multisets, 4 maximal;
 * and the placement rules the counts rest on (4g+3g valid, 4g+4g impossible
 * as only one 4g exists, seven 1g leave the eighth slot unused).
 */
#include "gpu/gpu.h"
#include "pack/pack.h"

#include <criterion/criterion.h>
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
TestSuite(layouts, .init = setup, .fini = teardown);

static size_t gpu_index(const char *name)
{
    size_t g = 0;
    cr_assert_eq(llmem_gpu_find(NULL, name, &g), LLMEM_OK, "%s", name);
    return g;
}

/* Kinds of t except the whole GPU; without the double-memory 1g when classic. */
static unsigned kinds(const pack_type *t, int classic)
{
    unsigned mask = 0;
    for (int k = 0; k < t->nkinds; k++) {
        const pack_kind *kd = &t->kind[k];
        if (kd->whole || (classic && kd->compute == 1 && kd->slots == 2))
            continue;
        mask |= 1u << k;
    }
    return mask;
}

static int kind_of(const pack_type *t, int compute, int slots)
{
    for (int k = 0; k < t->nkinds; k++)
        if (!t->kind[k].whole && t->kind[k].compute == compute && t->kind[k].slots == slots)
            return k;
    return -1;
}

Test(layouts, eight_slot_gpus_have_the_derived_counts)
{
    int seen = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        const gpu_desc *d = llmem_gpu_row(g);
        if (d->mig == NULL || d->mig->slots != 8)
            continue;
        pack_type t;
        layout_stats s;
        cr_assert_eq(llmem_pack_type_init(ctx, &t, g, 0, 0), LLMEM_OK, "%s", d->id.name);
        llmem_pack_layout_stats(&t, kinds(&t, 1), &s);
        cr_expect_eq(s.maximal_positional, 19, "%s classic: %llu maximal layouts", d->id.name,
                     (unsigned long long)s.maximal_positional);
        cr_expect_eq(s.multisets, 37, "%s classic multisets", d->id.name);
        cr_expect_eq(s.maximal_layout_multisets, 14, "%s classic: multisets of maximal layouts",
                     d->id.name);
        /* Two of them (3g+2g+1g, 3g+3x1g) are maximal only with the 3g at slot 0. */
        cr_expect_eq(s.maximal_multisets, 12, "%s classic maximal multisets %llu", d->id.name,
                     (unsigned long long)s.maximal_multisets);
        llmem_pack_layout_stats(&t, kinds(&t, 0), &s);
        cr_expect_eq(s.maximal_positional, 78, "%s: %llu maximal layouts", d->id.name,
                     (unsigned long long)s.maximal_positional);
        cr_expect_eq(s.multisets, 77, "%s multisets", d->id.name);
        cr_expect_eq(s.maximal_layout_multisets, 38, "%s multisets of maximal layouts %llu",
                     d->id.name, (unsigned long long)s.maximal_layout_multisets);
        llmem_pack_type_free(ctx, &t);
        seen++;
    }
    cr_expect_geq(seen, 12, "8-slot MIG GPUs in the catalog: %d", seen);
}

/* Before R510 no A100 holds a 4g with a 3g (UG, Concepts): of the 19
 * classic maximal layouts, 4g@0 + 3g@4 goes, and 4g + 2g + 1g and 4g + 3x1g
 * stay maximal (mig_configs.md: "older drivers allow 18"). Other GPUs and
 * R510 on keep 19. The A100 40 GB's 1g.10gb (R525+) is no kind before 525. */
Test(layouts, a100_before_r510_has_no_4g_with_3g)
{
    const char *names[] = { "A100-40GB", "A100-80GB" };
    for (size_t i = 0; i < 2; i++) {
        const int64_t drivers[] = { 500, 509, 510, 0 };
        for (size_t d = 0; d < 4; d++) {
            pack_type t;
            layout_stats s;
            cr_assert_eq(llmem_pack_type_init(ctx, &t, gpu_index(names[i]), 0, drivers[d]),
                         LLMEM_OK);
            llmem_pack_layout_stats(&t, kinds(&t, 1), &s);
            int old = drivers[d] != 0 && drivers[d] < 510;
            cr_expect_eq(s.maximal_positional, old ? 18 : 19, "%s R%lld: %llu", names[i],
                         (long long)drivers[d], (unsigned long long)s.maximal_positional);
            int k4 = kind_of(&t, 4, 4), k3 = kind_of(&t, 3, 4);
            cr_assert(k4 >= 0 && k3 >= 0);
            cr_expect_eq(t.feasible[t.step[k4] + t.step[k3]], !old, "%s R%lld 4g + 3g",
                         names[i], (long long)drivers[d]);
            cr_expect(t.feasible[t.step[k4]] && t.feasible[2 * t.step[k3]]);
            int double_1g = kind_of(&t, 1, 2) >= 0;
            cr_expect_eq(double_1g, drivers[d] == 0, "%s R%lld: double-memory 1g", names[i],
                         (long long)drivers[d]);
            llmem_pack_type_free(ctx, &t);
        }
    }
    pack_type t;
    layout_stats s;
    cr_assert_eq(llmem_pack_type_init(ctx, &t, gpu_index("H100"), 0, 500), LLMEM_OK);
    llmem_pack_layout_stats(&t, kinds(&t, 1), &s);
    cr_expect_eq(s.maximal_positional, 19, "H100 has no pair rule");
    llmem_pack_type_free(ctx, &t);
}

Test(layouts, four_slot_grids)
{
    const char *names[] = { "A30", "RTX-PRO-6000" };
    for (size_t i = 0; i < 2; i++) {
        pack_type t;
        layout_stats s;
        cr_assert_eq(llmem_pack_type_init(ctx, &t, gpu_index(names[i]), 0, 0), LLMEM_OK);
        llmem_pack_layout_stats(&t, kinds(&t, 0), &s);
        cr_expect_eq(s.maximal_positional, 5, "%s maximal layouts %llu", names[i],
                     (unsigned long long)s.maximal_positional);
        cr_expect_eq(s.multisets, 9, "%s multisets %llu", names[i],
                     (unsigned long long)s.multisets);
        cr_expect_eq(s.maximal_layout_multisets, 4, "%s multisets of maximal layouts", names[i]);
        cr_expect_eq(s.maximal_multisets, 4, "%s maximal multisets", names[i]);
        llmem_pack_type_free(ctx, &t);
    }
}

static uint32_t state_of(const pack_type *t, const int *kind, const unsigned *count, int n)
{
    uint32_t s = 0;
    for (int i = 0; i < n; i++)
        s += count[i] * t->step[kind[i]];
    return s;
}

Test(layouts, placement_rules_on_the_a100)
{
    pack_type t;
    cr_assert_eq(llmem_pack_type_init(ctx, &t, gpu_index("A100-80GB"), 0, 0), LLMEM_OK);
    int g1 = kind_of(&t, 1, 1), g1x2 = kind_of(&t, 1, 2), g2 = kind_of(&t, 2, 2);
    int g3 = kind_of(&t, 3, 4), g4 = kind_of(&t, 4, 4), g7 = kind_of(&t, 7, 8);
    cr_assert(g1 >= 0 && g1x2 >= 0 && g2 >= 0 && g3 >= 0 && g4 >= 0 && g7 >= 0);
    int k43[] = { g4, g3 };
    unsigned c11[] = { 1, 1 };
    cr_expect(t.feasible[state_of(&t, k43, c11, 2)], "4g + 3g is valid (R510+)");
    int k33[] = { g3 };
    unsigned c2[] = { 2 }, c3[] = { 3 };
    cr_expect(t.feasible[state_of(&t, k33, c2, 1)], "3g + 3g");
    cr_expect_eq(t.kind[g4].max, 1, "one 4g at most: 4g + 4g cannot exist");
    int k1[] = { g1 };
    unsigned c7[] = { 7 };
    uint32_t seven = state_of(&t, k1, c7, 1);
    cr_expect(t.feasible[seven], "seven 1g");
    cr_expect(!t.feasible[seven + t.step[g1x2]], "seven 1g leave no room for more");
    int k16[] = { g1, g1x2 };
    unsigned c61[] = { 6, 1 };
    cr_expect(t.feasible[state_of(&t, k16, c61, 2)], "six 1g + 1g.2x at slot 6 use all 8 slots");
    int k2[] = { g2 };
    cr_expect(t.feasible[state_of(&t, k2, c3, 1)], "three 2g");
    int k23[] = { g2, g3 };
    unsigned c21[] = { 2, 1 };
    cr_expect(t.feasible[state_of(&t, k23, c21, 2)], "2g + 2g + 3g");
    int k3[] = { g3, g1 };
    unsigned c31[] = { 1, 4 };
    cr_expect(t.feasible[state_of(&t, k3, c31, 2)], "3g at 4 + four 1g");
    int k7[] = { g7, g1 };
    cr_expect(!t.feasible[state_of(&t, k7, c11, 2)], "7g shares nothing");
    /* A layout for 4g + 2g + 1g exists, with the 4g at 0. */
    int k421[] = { g4, g2, g1 };
    unsigned c111[] = { 1, 1, 1 };
    uint8_t start[PACK_MAX_UNITS];
    uint32_t s = state_of(&t, k421, c111, 3);
    cr_assert(t.feasible[s]);
    cr_assert(llmem_pack_positions(&t, s, start));
    /* Instances come in kind order: 1g, 2g, 4g (kinds sorted by size). */
    cr_expect_eq(start[2], 0, "4g at 0");
    cr_expect_eq(start[1], 4, "2g at 4");
    cr_expect_eq(start[0], 6, "1g at 6");
    llmem_pack_type_free(ctx, &t);
}
