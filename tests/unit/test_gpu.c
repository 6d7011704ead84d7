/* SPDX-License-Identifier: MIT */
/*
 * The GPU catalog through the public API: every GPU and alias found by name,
 * every MIG profile consistent with its grid (placements inside the slots,
 * counts that fit, usable memory below the GPU's), the profile names of
 * ../shared/reference/mig_profiles.csv, the per-architecture constants of
 * docs/gpu-constants.md, the errors of bad lookups, and the estimate and
 * the planner on a GPU chosen in the training setup (LLMEM_TRAIN_GPU).
 */
#include <criterion/criterion.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "llmem.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static uint64_t gpu_u64(size_t g, int key)
{
    uint64_t v = UINT64_MAX;
    cr_assert_eq(llmem_gpu_get_u64(g, key, &v), LLMEM_OK, "gpu %zu key %d", g, key);
    return v;
}

static uint64_t mig_u64(size_t g, size_t p, int key)
{
    uint64_t v = UINT64_MAX;
    cr_assert_eq(llmem_mig_profile_get_u64(g, p, key, &v), LLMEM_OK, "gpu %zu profile %zu", g, p);
    return v;
}

static size_t find(const char *name)
{
    size_t g = SIZE_MAX;
    int rc = llmem_gpu_find(NULL, name, &g);
    cr_assert_eq(rc, LLMEM_OK, "find '%s': %d", name, rc);
    return g;
}

Test(gpu, every_name_and_alias_finds_its_gpu)
{
    cr_assert_geq(llmem_gpu_count(), 25);
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        const char *name = llmem_gpu_name(g);
        cr_assert_not_null(name);
        cr_expect_eq(find(name), g, "%s", name);
        const char *aliases = llmem_gpu_get_str(g, LLMEM_GPU_ALIASES);
        char buf[512];
        snprintf(buf, sizeof buf, "%s", aliases ? aliases : "");
        for (char *a = strtok(buf, "|"); a != NULL; a = strtok(NULL, "|"))
            cr_expect_eq(find(a), g, "alias '%s' of %s", a, name);
        /* The driver's name finds a GPU of that driver name. */
        const char *dev = llmem_gpu_get_str(g, LLMEM_GPU_DEVICE_NAME);
        cr_assert_not_null(dev);
        cr_expect_str_eq(llmem_gpu_get_str(find(dev), LLMEM_GPU_DEVICE_NAME), dev);
    }
    cr_assert_null(llmem_gpu_name(llmem_gpu_count()));
}

Test(gpu, common_spellings)
{
    size_t h100 = find("H100-SXM");
    const char *spellings[] = { "H100", "H100-80GB", "h100-sxm", "h100 sxm5",
                                "NVIDIA H100 80GB HBM3", "H100_80GB" };
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        cr_expect_eq(find(spellings[i]), h100, "%s", spellings[i]);
    cr_expect_neq(find("H100-PCIe"), h100);
    cr_expect_eq(find("a100-sxm4-80gb"), find("A100-80GB"));
    cr_expect_eq(find("NVIDIA A100-PCIE-40GB"), find("A100-40GB"));
    cr_expect_eq(find("Tesla T4"), find("T4"));
    cr_expect_eq(find("AMD Instinct MI300X"), find("MI300X"));
    cr_expect_neq(find("A10"), find("A100-40GB"));
}

Test(gpu, bad_lookups_say_why)
{
    llmem_ctx *ctx = NULL;
    size_t g = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_expect_eq(llmem_gpu_find(ctx, "A100", &g), LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "A100-40GB") && strstr(llmem_ctx_error(ctx), "A100-80GB"),
              "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_gpu_find(ctx, "Voodoo5", &g), LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "unknown GPU 'Voodoo5'"), "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_gpu_find(ctx, "", &g), LLMEM_ENOTFOUND);
    cr_expect_eq(llmem_gpu_find(ctx, NULL, &g), LLMEM_EINVAL);
    cr_expect_eq(llmem_gpu_find(ctx, "H100", NULL), LLMEM_EINVAL);
    uint64_t v;
    cr_expect_eq(llmem_gpu_get_u64(llmem_gpu_count(), LLMEM_GPU_USABLE_BYTES, &v), LLMEM_ERANGE);
    cr_expect_eq(llmem_gpu_get_u64(0, 999, &v), LLMEM_EINVAL);
    cr_expect_eq(llmem_gpu_get_u64(0, LLMEM_GPU_USABLE_BYTES, NULL), LLMEM_EINVAL);
    cr_expect_null(llmem_gpu_get_str(0, 999));
    size_t a100 = find("A100-80GB"), p = 0;
    cr_expect_eq(llmem_mig_profile_find(ctx, a100, "3G.40GB", &p), LLMEM_OK);
    cr_expect_str_eq(llmem_mig_profile_name(a100, p), "3g.40gb");
    cr_expect_eq(llmem_mig_profile_find(ctx, a100, "3g.20gb", &p), LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "1g.10gb"), "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_mig_profile_find(ctx, find("L4"), "1g.6gb", &p), LLMEM_ENOTFOUND);
    cr_expect_eq(llmem_mig_profile_find(ctx, llmem_gpu_count(), "1g.6gb", &p), LLMEM_ERANGE);
    cr_expect_eq(llmem_mig_profile_get_u64(a100, 99, LLMEM_MIG_SLOTS, &v), LLMEM_ERANGE);
    cr_expect_eq(llmem_mig_profile_get_u64(a100, 0, 99, &v), LLMEM_EINVAL);
    cr_expect_null(llmem_mig_profile_name(a100, 99));
    llmem_ctx_free(ctx);
}

Test(gpu, whole_gpus_are_plausible)
{
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        const char *name = llmem_gpu_name(g);
        uint64_t usable = gpu_u64(g, LLMEM_GPU_USABLE_BYTES);
        cr_expect(usable >= 14 * GIB && usable < 300 * GIB, "%s usable %llu", name,
                  (unsigned long long)usable);
        cr_expect(gpu_u64(g, LLMEM_GPU_USABLE_ESTIMATED) <= 1);
        cr_expect(gpu_u64(g, LLMEM_GPU_CONTEXT_BYTES) >= 200 * MIB);
        cr_expect(gpu_u64(g, LLMEM_GPU_WORKSPACE_BYTES) >= 8 * MIB);
        cr_expect_gt(strlen(llmem_gpu_get_str(g, LLMEM_GPU_ARCH)), 0);
        cr_expect_gt(strlen(llmem_gpu_get_str(g, LLMEM_GPU_MEMORY_SOURCE)), 10, "%s", name);
        cr_expect_gt(strlen(llmem_gpu_get_str(g, LLMEM_GPU_CONSTANTS_SOURCE)), 10);
        const char *src = llmem_gpu_get_str(g, LLMEM_GPU_MEMORY_SOURCE);
        /* An estimate says so in its source. */
        cr_expect_eq(gpu_u64(g, LLMEM_GPU_USABLE_ESTIMATED) == 1, strstr(src, "estimate") != NULL,
                     "%s: %s", name, src);
    }
}

Test(gpu, architecture_constants)
{
    /* docs/gpu-constants.md (c): 4096 KiB x 2 + 16 KiB x 8 before Hopper, 32 MiB after. */
    cr_expect_eq(gpu_u64(find("A100-80GB"), LLMEM_GPU_WORKSPACE_BYTES), UINT64_C(8519680));
    cr_expect_eq(gpu_u64(find("RTX-4090"), LLMEM_GPU_WORKSPACE_BYTES), UINT64_C(8519680));
    cr_expect_eq(gpu_u64(find("H100"), LLMEM_GPU_WORKSPACE_BYTES), 32 * MIB);
    cr_expect_eq(gpu_u64(find("B200"), LLMEM_GPU_WORKSPACE_BYTES), 32 * MIB);
    cr_expect_eq(gpu_u64(find("RTX-5090"), LLMEM_GPU_WORKSPACE_BYTES), 32 * MIB);
    /* lib/gpu/archs.c: measured on an H200 for sm_90 (H100 and H200), the
     * estimator's default elsewhere. */
    cr_expect_eq(gpu_u64(find("H100"), LLMEM_GPU_CONTEXT_BYTES), 777 * MIB);
    cr_expect_eq(gpu_u64(find("H200"), LLMEM_GPU_CONTEXT_BYTES), 777 * MIB);
    cr_expect_eq(gpu_u64(find("H100"), LLMEM_GPU_CONTEXT_ESTIMATED), 0);
    cr_expect_eq(gpu_u64(find("A100-80GB"), LLMEM_GPU_CONTEXT_BYTES), 287 * MIB);
    cr_expect_eq(gpu_u64(find("A100-80GB"), LLMEM_GPU_CONTEXT_ESTIMATED), 1);
    cr_expect_eq(gpu_u64(find("B200"), LLMEM_GPU_CONTEXT_ESTIMATED), 1);
    cr_expect_eq(gpu_u64(find("A100-40GB"), LLMEM_GPU_COMPUTE_CAPABILITY), 80);
    cr_expect_eq(gpu_u64(find("H200"), LLMEM_GPU_COMPUTE_CAPABILITY), 90);
    cr_expect_eq(gpu_u64(find("MI300X"), LLMEM_GPU_COMPUTE_CAPABILITY), 0);
    cr_expect_str_eq(llmem_gpu_get_str(find("MI300X"), LLMEM_GPU_ARCH), "CDNA3");
    cr_expect_str_eq(llmem_gpu_get_str(find("V100-32GB"), LLMEM_GPU_ARCH), "sm_70");
    cr_expect_str_eq(llmem_gpu_get_str(find("L4"), LLMEM_GPU_ARCH), "sm_89");
}

/* "3g.40gb" -> 3; 0 when the name does not start "<n>g.". */
static unsigned name_compute(const char *name)
{
    if (!isdigit((unsigned char)name[0]) || name[1] != 'g' || name[2] != '.')
        return 0;
    return (unsigned)(name[0] - '0');
}

static unsigned bits(uint64_t v)
{
    unsigned n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

Test(gpu, mig_profiles_fit_their_grid)
{
    size_t migs = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        size_t n = (size_t)gpu_u64(g, LLMEM_GPU_MIG_PROFILES);
        if (n == 0) {
            cr_expect_eq(gpu_u64(g, LLMEM_GPU_MIG_SLOTS), 0);
            continue;
        }
        migs++;
        const char *gname = llmem_gpu_name(g);
        uint64_t grid = gpu_u64(g, LLMEM_GPU_MIG_SLOTS);
        uint64_t compute = gpu_u64(g, LLMEM_GPU_MIG_COMPUTE_SLICES);
        uint64_t usable = gpu_u64(g, LLMEM_GPU_USABLE_BYTES);
        cr_expect(grid == 4 || grid == 8 || grid == 12, "%s grid %llu", gname,
                  (unsigned long long)grid);
        cr_expect(compute == 4 || compute == 7);
        int full = 0, single = 0;
        for (size_t p = 0; p < n; p++) {
            const char *name = llmem_mig_profile_name(g, p);
            uint64_t c = mig_u64(g, p, LLMEM_MIG_COMPUTE_SLICES);
            uint64_t slots = mig_u64(g, p, LLMEM_MIG_SLOTS);
            uint64_t starts = mig_u64(g, p, LLMEM_MIG_STARTS);
            uint64_t max = mig_u64(g, p, LLMEM_MIG_MAX_COUNT);
            uint64_t use = mig_u64(g, p, LLMEM_MIG_USABLE_BYTES);
            cr_expect_eq(name_compute(name), c, "%s %s compute", gname, name);
            cr_expect(c >= 1 && c <= compute);
            cr_expect(slots >= 1 && slots <= grid);
            cr_expect_neq(starts, 0, "%s %s has placements", gname, name);
            for (unsigned s = 0; s < 16; s++)
                if (starts >> s & 1)
                    cr_expect_leq(s + slots, grid, "%s %s starts at %u", gname, name, s);
            cr_expect(max >= 1 && max <= bits(starts), "%s %s max %llu", gname, name,
                      (unsigned long long)max);
            cr_expect_leq(max * slots, grid);
            cr_expect_gt(use, 3 * GIB);
            if (slots == grid)
                cr_expect_leq(use, usable + usable / 100, "%s %s above the GPU", gname, name);
            else
                cr_expect_lt(use, usable, "%s %s", gname, name);
            char want[64];
            snprintf(want, sizeof want, "nvidia.com/mig-%s", name);
            for (char *plus = strchr(want, '+'); plus != NULL; plus = strchr(plus, '+'))
                *plus = '.'; /* the device plugin's name: see kubernetes_resource_names */
            cr_expect_str_eq(llmem_mig_profile_resource(g, p), want);
            cr_expect_gt(strlen(llmem_mig_profile_source(g, p)), 1);
            uint64_t variant = mig_u64(g, p, LLMEM_MIG_VARIANT);
            cr_expect_eq(variant != LLMEM_MIG_PLAIN, strpbrk(name, "+-") != NULL, "%s", name);
            if (variant == LLMEM_MIG_PLAIN) {
                full += slots == grid;
                single += slots == grid / (grid == 12 ? 4 : grid);
            } else {
                /* A variant shares its base profile's placements and memory. */
                size_t base = 0;
                char basename[32];
                snprintf(basename, sizeof basename, "%.*s", (int)strcspn(name, "+-"), name);
                cr_assert_eq(llmem_mig_profile_find(NULL, g, basename, &base), LLMEM_OK, "%s",
                             basename);
                cr_expect_eq(mig_u64(g, base, LLMEM_MIG_STARTS), starts, "%s", name);
                cr_expect_eq(mig_u64(g, base, LLMEM_MIG_USABLE_BYTES), use, "%s", name);
                if (variant == LLMEM_MIG_ME)
                    cr_expect_eq(max, 1, "one %s", name);
            }
        }
        cr_expect_eq(full, 1, "%s: one plain profile spans the GPU", gname);
        cr_expect_eq(single, 1, "%s: one plain profile of the smallest placement", gname);
    }
    cr_expect_geq(migs, 16, "MIG-capable GPUs: %zu", migs);
}

/* Every profile's Kubernetes resource is a valid extended-resource name:
 * "nvidia.com/" and a name of at most 63 characters, lowercase letters,
 * digits, '-' and '.', beginning and ending with a letter or digit (a DNS
 * subdomain, which NVIDIA's k8s-device-plugin requires of the name part,
 * api/config/v1/resources.go). The plugin names a variant with '.' where
 * nvidia-smi writes '+': "1g.10gb+me" is nvidia.com/mig-1g.10gb.me (the
 * catalog wrote nvidia.com/mig-1g.10gb+me, which no node advertises). */
Test(gpu, kubernetes_resource_names_are_valid)
{
    size_t variants = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++)
        for (size_t p = 0; p < (size_t)gpu_u64(g, LLMEM_GPU_MIG_PROFILES); p++) {
            const char *res = llmem_mig_profile_resource(g, p);
            cr_assert_not_null(res);
            cr_assert(strncmp(res, "nvidia.com/", 11) == 0, "%s", res);
            const char *name = res + 11;
            size_t n = strlen(name);
            cr_expect(n >= 1 && n <= 63, "%s: %zu characters", res, n);
            for (size_t i = 0; i < n; i++) {
                char c = name[i];
                int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                cr_expect(alnum || ((c == '-' || c == '.') && i > 0 && i + 1 < n),
                          "%s: '%c' at %zu", res, c, i);
            }
            variants += mig_u64(g, p, LLMEM_MIG_VARIANT) != LLMEM_MIG_PLAIN;
        }
    cr_expect_geq(variants, 20, "variant profiles checked: %zu", variants);
    size_t a100, me, gfx, all;
    cr_assert_eq(llmem_gpu_find(NULL, "A100-80GB", &a100), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(NULL, a100, "1g.10gb+me", &me), LLMEM_OK);
    cr_expect_str_eq(llmem_mig_profile_resource(a100, me), "nvidia.com/mig-1g.10gb.me");
    size_t rtx;
    cr_assert_eq(llmem_gpu_find(NULL, "RTX-PRO-6000", &rtx), LLMEM_OK);
    cr_assert_eq(llmem_mig_profile_find(NULL, rtx, "1g.24gb+gfx", &gfx), LLMEM_OK);
    cr_expect_str_eq(llmem_mig_profile_resource(rtx, gfx), "nvidia.com/mig-1g.24gb.gfx");
    cr_assert_eq(llmem_mig_profile_find(NULL, rtx, "2g.48gb+me.all", &all), LLMEM_OK);
    cr_expect_str_eq(llmem_mig_profile_resource(rtx, all), "nvidia.com/mig-2g.48gb.me.all");
    cr_expect_str_eq(llmem_mig_profile_name(rtx, all), "2g.48gb+me.all", "nvidia-smi's name kept");
}

/* The doubling rule behind the estimated 4- and 8-slot figures holds on the
 * measured ones: the smallest measured plain profile of 2s slots holds at
 * least twice the smallest of s slots. */
Test(gpu, doubling_rule_holds_on_measured_profiles)
{
    int checked = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        size_t n = (size_t)gpu_u64(g, LLMEM_GPU_MIG_PROFILES);
        uint64_t least[13];
        for (int s = 0; s < 13; s++)
            least[s] = UINT64_MAX;
        for (size_t p = 0; p < n; p++) {
            if (mig_u64(g, p, LLMEM_MIG_VARIANT) != LLMEM_MIG_PLAIN ||
                (mig_u64(g, p, LLMEM_MIG_UNCERTAIN) & LLMEM_MIG_MEMORY_ESTIMATED))
                continue;
            uint64_t s = mig_u64(g, p, LLMEM_MIG_SLOTS), u = mig_u64(g, p, LLMEM_MIG_USABLE_BYTES);
            if (u < least[s])
                least[s] = u;
        }
        for (int s = 1; 2 * s < 13; s++)
            if (least[s] != UINT64_MAX && least[2 * s] != UINT64_MAX) {
                cr_expect_geq(least[2 * s], 2 * least[s], "%s: %d slots vs %d",
                              llmem_gpu_name(g), 2 * s, s);
                checked++;
            }
    }
    cr_expect_geq(checked, 20);
}

/* Profile names per GPU, as ../shared/reference/mig_profiles.csv lists them. */
static const struct {
    const char *gpu;
    const char *profiles;
} csv[] = {
    { "A30", "1g.6gb 1g.6gb+me 2g.12gb 2g.12gb+me 4g.24gb" },
    { "A100-40GB", "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb" },
    { "A100-80GB", "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb" },
    { "H100-SXM", "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb" },
    { "H100-PCIe", "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb" },
    { "H100-NVL", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb" },
    { "GH200-96GB", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb" },
    { "H20", "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb" },
    { "H200", "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb" },
    { "H20-141GB", "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb" },
    { "GH200-144GB", "1g.18gb 1g.18gb+me 1g.36gb 2g.36gb 3g.72gb 4g.72gb 7g.144gb" },
    { "B200", "1g.23gb 1g.23gb+me 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb" },
    { "GB200", "1g.23gb 1g.23gb+me 1g.47gb 2g.47gb 3g.93gb 4g.93gb 7g.186gb" },
    { "B300", "1g.34gb 1g.34gb+me 1g.67gb 2g.67gb 3g.135gb 4g.135gb 7g.269gb" },
    { "GB300", "1g.35gb 1g.35gb+me 1g.70gb 2g.70gb 3g.139gb 4g.139gb 7g.278gb" },
    { "RTX-PRO-6000", "1g.24gb 1g.24gb+me 1g.24gb+gfx 1g.24gb+me.all 1g.24gb-me 2g.48gb "
                      "2g.48gb+gfx 2g.48gb+me.all 2g.48gb-me 4g.96gb 4g.96gb+gfx" },
};

Test(gpu, profile_names_match_the_reference)
{
    for (size_t i = 0; i < sizeof csv / sizeof csv[0]; i++) {
        size_t g = find(csv[i].gpu);
        char list[400] = "";
        size_t n = (size_t)gpu_u64(g, LLMEM_GPU_MIG_PROFILES);
        for (size_t p = 0; p < n; p++) {
            strcat(list, p ? " " : "");
            strcat(list, llmem_mig_profile_name(g, p));
        }
        cr_expect_str_eq(list, csv[i].profiles, "%s", csv[i].gpu);
    }
}

Test(gpu, reference_figures)
{
    /* A few lgip figures of mig_profiles.csv, in MiB (the lowest per driver). */
    size_t a100 = find("A100-80GB"), h100 = find("H100"), p;
    cr_assert_eq(llmem_mig_profile_find(NULL, a100, "1g.10gb", &p), LLMEM_OK);
    cr_expect_eq(mig_u64(a100, p, LLMEM_MIG_USABLE_BYTES), 9728 * MIB, "9.50 GiB");
    cr_expect_eq(mig_u64(a100, p, LLMEM_MIG_STARTS), 0x7F, "{0..6}:1");
    cr_expect_eq(mig_u64(a100, p, LLMEM_MIG_MAX_COUNT), 7);
    cr_expect_eq(mig_u64(a100, p, LLMEM_MIG_UNCERTAIN), LLMEM_MIG_PLACEMENTS_INFERRED);
    cr_assert_eq(llmem_mig_profile_find(NULL, h100, "3g.40gb", &p), LLMEM_OK);
    cr_expect_eq(mig_u64(h100, p, LLMEM_MIG_USABLE_BYTES), 40192 * MIB);
    cr_expect_eq(mig_u64(h100, p, LLMEM_MIG_STARTS), 0x11, "{0,4}:4");
    cr_expect_eq(mig_u64(h100, p, LLMEM_MIG_SMS), 60);
    cr_expect_eq(mig_u64(h100, p, LLMEM_MIG_UNCERTAIN), 0, "observed on the H100");
    cr_assert_eq(llmem_mig_profile_find(NULL, h100, "1g.20gb", &p), LLMEM_OK);
    cr_expect_eq(mig_u64(h100, p, LLMEM_MIG_STARTS), 0x55, "{0,2,4,6}:2");
    cr_expect_eq(mig_u64(h100, p, LLMEM_MIG_SLOTS), 2);
    size_t rtx = find("RTX PRO 6000");
    cr_assert_eq(llmem_mig_profile_find(NULL, rtx, "2g.48gb", &p), LLMEM_OK);
    cr_expect_eq(mig_u64(rtx, p, LLMEM_MIG_STARTS), 0x41, "{0,6}:6 on the 12-unit grid");
    size_t b200 = find("B200");
    cr_assert_eq(llmem_mig_profile_find(NULL, b200, "7g.180gb", &p), LLMEM_OK);
    cr_expect(mig_u64(b200, p, LLMEM_MIG_UNCERTAIN) & LLMEM_MIG_MEMORY_ESTIMATED);
}

/* ------------------------------------------------------------------ */
/* The estimate on a chosen GPU: its architecture's constants. */

typedef struct peaks {
    uint64_t allocated, reserved, device;
} peaks;

/* gpt2, batch 2 x 256, full fine-tuning, on gpu (NULL: none chosen). */
static peaks estimate_on(const char *gpu, const llmem_parallel *layout)
{
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    llmem_train *t = NULL;
    llmem_estimate *e = NULL;
    peaks p = { 0, 0, 0 };
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "gpt2", &m), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 2);
    llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 256);
    if (gpu != NULL)
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_GPU, gpu), LLMEM_OK, "%s",
                     llmem_ctx_error(ctx));
    cr_assert_eq(llmem_estimate_run_parallel(e, m, t, layout), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &p.allocated);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_RESERVED, &p.reserved);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &p.device);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
    return p;
}

Test(gpu, no_gpu_is_the_hopper_default)
{
    peaks none = estimate_on(NULL, NULL), h100 = estimate_on("H100", NULL);
    /* Hopper's: 777 MiB outside the allocator, measured on an H200 (0.1.0 had
     * a 287 MiB default), and two 32 MiB cuBLAS workspaces in reserved. */
    cr_expect_eq(none.device - none.reserved, 777 * MIB);
    cr_expect_eq(none.allocated, h100.allocated);
    cr_expect_eq(none.reserved, h100.reserved);
    cr_expect_eq(none.device, h100.device);
}

Test(gpu, every_gpu_adds_its_constants)
{
    peaks none = estimate_on(NULL, NULL);
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        peaks p = estimate_on(llmem_gpu_name(g), NULL);
        uint64_t workspace = gpu_u64(g, LLMEM_GPU_WORKSPACE_BYTES);
        /* The live tensors do not depend on the GPU; the two workspaces (the
         * forward's and autograd's threads') are reserved through the caching
         * allocator, the context comes on top. */
        cr_expect_eq(p.allocated, none.allocated, "%s", llmem_gpu_name(g));
        cr_expect_eq(p.reserved + 2 * 32 * MIB, none.reserved + 2 * workspace, "%s",
                     llmem_gpu_name(g));
        cr_expect_eq(p.device - p.reserved, gpu_u64(g, LLMEM_GPU_CONTEXT_BYTES), "%s",
                     llmem_gpu_name(g));
    }
    /* Ampere's smaller workspaces and default context, ROCm's larger workspaces. */
    cr_expect_eq(none.device - estimate_on("A100-80GB", NULL).device,
                 2 * (32 * MIB - 8519680) + (777 - 287) * MIB);
    cr_expect_eq(estimate_on("MI300X", NULL).device + (777 - 287) * MIB,
                 none.device + 2 * (76 * MIB - 32 * MIB));
}

Test(gpu, every_rank_of_a_layout_takes_the_constants)
{
    llmem_ctx *ctx = NULL;
    llmem_parallel *l = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_parallel_new(ctx, &l), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_DP, 4), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, "zero3"), LLMEM_OK);
    peaks none = estimate_on(NULL, l), a100 = estimate_on("A100-40GB", l);
    cr_expect_eq(a100.allocated, none.allocated);
    cr_expect_eq(none.reserved - a100.reserved, 2 * (32 * MIB - 8519680));
    cr_expect_eq(a100.device - a100.reserved, 287 * MIB);
    llmem_parallel_free(l);
    llmem_ctx_free(ctx);
}

/* The largest batch on a GPU: with the GPU's workspace, a capacity that holds
 * batch b exactly on an A100 does not hold it with the default constants. */
Test(gpu, max_uses_the_gpus_constants)
{
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    llmem_train *t = NULL;
    llmem_estimate *e = NULL;
    uint64_t device = 0;
    int64_t best = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "gpt2", &m), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 8);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_GPU, "A100-80GB"), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &device);
    cr_assert_eq(llmem_estimate_max(e, m, t, NULL, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, device,
                                    &best),
                 LLMEM_OK);
    cr_expect_eq(best, 8);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_GPU, 0), LLMEM_OK);
    cr_assert_eq(llmem_estimate_max(e, m, t, NULL, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, device,
                                    &best),
                 LLMEM_OK);
    cr_expect_lt(best, 8);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

/* The planner: the GPU's usable memory when LLMEM_PLAN_GPU_BYTES is 0. */
Test(gpu, plan_takes_the_gpus_memory)
{
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    llmem_train *t = NULL;
    llmem_plan *p = NULL, *q = NULL;
    size_t a100 = find("A100-40GB");
    uint64_t usable = gpu_u64(a100, LLMEM_GPU_USABLE_BYTES), peak = 0, peak_q = 0;
    int object = 0, key = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "Qwen2.5-0.5B", &m), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_plan_new(ctx, &p), LLMEM_OK);
    cr_assert_eq(llmem_plan_new(ctx, &q), LLMEM_OK);
    llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 1024);
    llmem_plan_set_int(p, LLMEM_PLAN_GPUS, 2);
    llmem_plan_set_int(q, LLMEM_PLAN_GPUS, 2);
    /* Neither bytes nor a GPU: the planner says what it needs. */
    cr_expect_eq(llmem_plan_run(p, m, t), LLMEM_EINCONSISTENT);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "gpu-bytes"), "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
    cr_expect_eq(key, LLMEM_PLAN_GPU_BYTES);
    /* The GPU alone, and the same bytes given with the GPU: the same plan. */
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_GPU, "A100-40GB"), LLMEM_OK);
    cr_assert_eq(llmem_plan_run(p, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_plan_set_int(q, LLMEM_PLAN_GPU_BYTES, (int64_t)usable);
    cr_assert_eq(llmem_plan_run(q, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_gt(llmem_plan_result_count(p), 0);
    cr_expect_eq(llmem_plan_result_count(p), llmem_plan_result_count(q));
    for (size_t i = 0; i < llmem_plan_result_count(p); i++) {
        llmem_plan_result_get_u64(p, i, LLMEM_PLAN_PEAK_DEVICE, &peak);
        llmem_plan_result_get_u64(q, i, LLMEM_PLAN_PEAK_DEVICE, &peak_q);
        cr_expect_eq(peak, peak_q);
        cr_expect_leq(peak, usable / 1000 * 950 + usable % 1000 * 950 / 1000,
                      "layout %zu within the 5%% margin", i);
    }
    /* Bytes given win over the GPU's: a smaller capacity fits fewer layouts. */
    llmem_plan_set_int(q, LLMEM_PLAN_GPU_BYTES, (int64_t)(usable / 8));
    cr_assert_eq(llmem_plan_run(q, m, t), LLMEM_OK);
    cr_expect_lt(llmem_plan_result_count(q), llmem_plan_result_count(p));
    for (size_t i = 0; i < llmem_plan_result_count(q); i++) {
        llmem_plan_result_get_u64(q, i, LLMEM_PLAN_PEAK_DEVICE, &peak);
        cr_expect_leq(peak, usable / 8);
    }
    llmem_plan_free(q);
    llmem_plan_free(p);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}
