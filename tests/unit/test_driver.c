/* SPDX-License-Identifier: MIT */
/*
 * The driver setting of fit and pack (LLMEM_FIT_DRIVER, LLMEM_PACK_DRIVER):
 * profiles a branch lacks are no option (the A100 40 GB's 1g.10gb before
 * R525), layouts it refuses are never made (4g + 3g on an A100 before R510),
 * and names it changes are emitted everywhere (the A100 80 GB's 3g.40gb is
 * 3g.39gb on R535 and R545, with the same bytes). 0, the default, is the
 * newest: the catalog as it is. Sources in docs/mig.md, "Driver versions".
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "llmem.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static llmem_ctx *ctx;
static llmem_fit *fit;
static llmem_pack *pack;

static void setup(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_fit_new(ctx, &fit), LLMEM_OK);
    cr_assert_eq(llmem_pack_new(ctx, &pack), LLMEM_OK);
}

static void teardown(void)
{
    llmem_pack_free(pack);
    llmem_fit_free(fit);
    llmem_ctx_free(ctx);
}

TestSuite(driver, .init = setup, .fini = teardown);

static size_t gpu(const char *name)
{
    size_t g;
    cr_assert_eq(llmem_gpu_find(ctx, name, &g), LLMEM_OK, "%s", name);
    return g;
}

static size_t profile(size_t g, const char *name)
{
    size_t p;
    cr_assert_eq(llmem_mig_profile_find(ctx, g, name, &p), LLMEM_OK, "%s", name);
    return p;
}

static const char *best_name(void)
{
    size_t b;
    return llmem_fit_best(fit, &b) == LLMEM_OK ? llmem_fit_name(fit, b) : "none";
}

static uint64_t opt(size_t i, int key)
{
    uint64_t v = UINT64_MAX;
    cr_assert_eq(llmem_fit_get_u64(fit, i, key, &v), LLMEM_OK);
    return v;
}

/* The option named name, or SIZE_MAX. */
static size_t option_named(const char *name)
{
    for (size_t i = 0; i < llmem_fit_count(fit); i++)
        if (strcmp(llmem_fit_name(fit, i), name) == 0)
            return i;
    return SIZE_MAX;
}

static void fit_on(const char *g, int64_t driver, uint64_t bytes)
{
    cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, driver), LLMEM_OK);
    cr_assert_eq(llmem_fit_run(fit, gpu(g), bytes, LLMEM_LEVEL_DEVICE), LLMEM_OK);
}

static uint64_t res(int key)
{
    uint64_t v = UINT64_MAX;
    cr_assert_eq(llmem_pack_get_u64(pack, key, &v), LLMEM_OK);
    return v;
}

/* The mig-parted and nvidia-smi outputs of the last run, in buf. */
static void outputs(char *yaml, size_t ycap, char *smi, size_t scap)
{
    cr_assert_eq(llmem_pack_mig_parted(pack, NULL, yaml, ycap, NULL), LLMEM_OK);
    cr_assert_eq(llmem_pack_nvidia_smi(pack, smi, scap, NULL), LLMEM_OK);
}

Test(driver, bounds_and_range_errors)
{
    const char *name = NULL;
    int64_t min = -1, max = -1, v = -1;
    cr_assert_eq(llmem_fit_field_info(LLMEM_FIT_DRIVER, &name, &min, &max), LLMEM_OK);
    cr_expect_str_eq(name, "driver");
    cr_expect(min == 0 && max == 999, "[%lld, %lld]", (long long)min, (long long)max);
    cr_assert_eq(llmem_pack_field_info(LLMEM_PACK_DRIVER, &name, &min, &max), LLMEM_OK);
    cr_expect_str_eq(name, "driver");
    cr_expect(min == 0 && max == 999);
    cr_expect_eq(llmem_fit_get_int(fit, LLMEM_FIT_DRIVER, &v), LLMEM_OK);
    cr_expect_eq(v, 0, "the default is the newest");
    cr_expect_eq(llmem_pack_get_int(pack, LLMEM_PACK_DRIVER, &v), LLMEM_OK);
    cr_expect_eq(v, 0);
    cr_expect_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, 1000), LLMEM_ERANGE);
    cr_expect(strstr(llmem_ctx_error(ctx), "driver") && strstr(llmem_ctx_error(ctx), "1000"),
              "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_pack_set_int(pack, LLMEM_PACK_DRIVER, -1), LLMEM_ERANGE);
    cr_expect(strstr(llmem_ctx_error(ctx), "driver") && strstr(llmem_ctx_error(ctx), "-1"),
              "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_pack_set_str(pack, LLMEM_PACK_DRIVER, "4096"), LLMEM_ERANGE);
    cr_expect_eq(llmem_pack_get_int(pack, LLMEM_PACK_DRIVER, &v), LLMEM_OK);
    cr_expect_eq(v, 0, "a refused value leaves the setting");
    cr_expect_eq(llmem_pack_set_str(pack, LLMEM_PACK_DRIVER, "535"), LLMEM_OK);
    cr_expect_eq(llmem_pack_get_int(pack, LLMEM_PACK_DRIVER, &v), LLMEM_OK);
    cr_expect_eq(v, 535);
}

Test(driver, profiles_carry_their_first_branch)
{
    struct {
        const char *gpu, *profile;
        uint64_t since;
    } rows[] = {
        { "A100-40GB", "1g.10gb", 525 },   { "A100-40GB", "1g.5gb+me", 470 },
        { "A100-40GB", "1g.5gb", 0 },      { "A100-40GB", "3g.20gb", 0 },
        { "A100-80GB", "1g.20gb", 525 },   { "A100-80GB", "1g.10gb+me", 470 },
        { "A100-80GB", "3g.40gb", 0 },     { "A30", "1g.6gb+me", 470 },
        { "A30", "2g.12gb+me", 525 },      { "A30", "2g.12gb", 0 },
        { "H100", "1g.20gb", 0 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        size_t g = gpu(rows[i].gpu), p = profile(g, rows[i].profile);
        uint64_t since = 1;
        cr_assert_eq(llmem_mig_profile_get_u64(g, p, LLMEM_MIG_SINCE_DRIVER, &since), LLMEM_OK);
        cr_expect_eq(since, rows[i].since, "%s %s: %llu", rows[i].gpu, rows[i].profile,
                     (unsigned long long)since);
        if (since > 0) {
            cr_expect_null(llmem_mig_profile_driver_name(g, p, (int64_t)since - 1));
            cr_expect_str_eq(llmem_mig_profile_driver_name(g, p, (int64_t)since),
                             rows[i].profile);
        }
        cr_expect_str_eq(llmem_mig_profile_driver_name(g, p, 0), rows[i].profile);
        cr_expect_null(llmem_mig_profile_driver_name(g, p, 1000));
        cr_expect_null(llmem_mig_profile_driver_resource(g, p, -1));
    }
    cr_expect_null(llmem_mig_profile_driver_name(gpu("A100-40GB"), 99, 0));
}

Test(driver, a100_40gb_before_r525_has_no_1g_10gb)
{
    fit_on("A100-40GB", 0, 9 * GIB);
    cr_expect_str_eq(best_name(), "1g.10gb");
    cr_expect_neq(option_named("1g.10gb"), SIZE_MAX);
    fit_on("A100-40GB", 510, 9 * GIB);
    cr_expect_eq(option_named("1g.10gb"), SIZE_MAX, "R510 has no 1g.10gb");
    cr_expect_str_eq(best_name(), "2g.10gb");
    cr_expect_eq(llmem_fit_count(fit), 6, "1g.5gb 2g 3g 4g 7g whole");
    fit_on("A100-40GB", 525, 9 * GIB);
    cr_expect_str_eq(best_name(), "1g.10gb");

    int64_t drivers[] = { 510, 525 };
    const char *want[] = { "nvidia.com/mig-2g.10gb", "nvidia.com/mig-1g.10gb" };
    for (size_t d = 0; d < 2; d++) {
        char yaml[2048], smi[2048];
        llmem_pack_clear(pack);
        cr_assert_eq(llmem_pack_set_int(pack, LLMEM_PACK_DRIVER, drivers[d]), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_gpu(pack, gpu("A100-40GB"), 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "nine", 9 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_run(pack), LLMEM_OK);
        cr_expect_str_eq(llmem_pack_job_resource(pack, 0), want[d]);
        outputs(yaml, sizeof yaml, smi, sizeof smi);
        cr_expect(strstr(yaml, want[d] + strlen("nvidia.com/mig-")) != NULL, "%s", yaml);
        cr_expect(strstr(smi, want[d] + strlen("nvidia.com/mig-")) != NULL, "%s", smi);
    }
}

/* A job that needs 4 compute slices and 15 GiB (a 4g.20gb) and one of 18
 * GiB (a 3g.20gb: 18.95 GiB with the 5 % margin, in 19.50): one A100 from
 * R510, two before. (A 25 GiB + 18 GiB pair takes two on every branch: 25
 * GiB is more than a 4g.20gb holds, so it takes the 7g.40gb.) */
Test(driver, a100_before_r510_never_pairs_4g_with_3g)
{
    const int64_t drivers[] = { 0, 510, 509, 500 };
    const uint64_t gpus[] = { 1, 1, 2, 2 };
    for (size_t d = 0; d < 4; d++) {
        char yaml[2048], smi[2048];
        llmem_pack_clear(pack);
        cr_assert_eq(llmem_pack_set_int(pack, LLMEM_PACK_DRIVER, drivers[d]), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_gpu(pack, gpu("A100-40GB"), 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "a", 15 * GIB, LLMEM_LEVEL_DEVICE, 4), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "b", 18 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_run(pack), LLMEM_OK);
        cr_expect_eq(res(LLMEM_PACK_GPUS_USED), gpus[d], "R%lld: %llu GPUs",
                     (long long)drivers[d], (unsigned long long)res(LLMEM_PACK_GPUS_USED));
        cr_expect_eq(res(LLMEM_PACK_LOWER_BOUND), gpus[d]);
        cr_expect_eq(res(LLMEM_PACK_OPTIMAL), 1);
        outputs(yaml, sizeof yaml, smi, sizeof smi);
        cr_expect_eq(strstr(smi, "4g.20gb:0,3g.20gb:4") != NULL, gpus[d] == 1, "%s", smi);

        llmem_pack_clear(pack);
        cr_assert_eq(llmem_pack_add_gpu(pack, gpu("A100-40GB"), 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "a", 25 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "b", 18 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_run(pack), LLMEM_OK);
        cr_expect_eq(res(LLMEM_PACK_GPUS_USED), 2);
    }
}

Test(driver, a100_80gb_3g_is_3g_39gb_on_r535_and_r545)
{
    size_t g = gpu("A100-80GB"), p = profile(g, "3g.40gb");
    const int64_t drivers[] = { 0, 534, 535, 545, 546, 550 };
    for (size_t d = 0; d < 6; d++) {
        int renamed = drivers[d] == 535 || drivers[d] == 545;
        const char *name = renamed ? "3g.39gb" : "3g.40gb";
        const char *other = renamed ? "3g.40gb" : "3g.39gb";
        char resource[64], tuple[32], yaml[2048], smi[2048];
        snprintf(resource, sizeof resource, "nvidia.com/mig-%s", name);
        snprintf(tuple, sizeof tuple, "%s:0,%s:4", name, name);
        cr_expect_str_eq(llmem_mig_profile_driver_name(g, p, drivers[d]), name);
        cr_expect_str_eq(llmem_mig_profile_driver_resource(g, p, drivers[d]), resource);

        fit_on("A100-80GB", drivers[d], 30 * GIB);
        cr_expect_str_eq(best_name(), name, "R%lld", (long long)drivers[d]);
        size_t i = option_named(name);
        cr_assert_neq(i, SIZE_MAX);
        cr_expect_eq(opt(i, LLMEM_FIT_USABLE_BYTES), 40192 * MIB, "the name only changes");
        cr_expect_eq(option_named(other), SIZE_MAX);

        llmem_pack_clear(pack);
        cr_assert_eq(llmem_pack_set_int(pack, LLMEM_PACK_DRIVER, drivers[d]), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_gpu(pack, gpu("A100-80GB"), 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "a", 35 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_add_job(pack, "b", 35 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
        cr_assert_eq(llmem_pack_run(pack), LLMEM_OK);
        cr_expect_eq(res(LLMEM_PACK_GPUS_USED), 1);
        cr_expect_str_eq(llmem_pack_job_resource(pack, 0), resource);
        cr_expect_str_eq(llmem_pack_job_resource(pack, 1), resource);
        outputs(yaml, sizeof yaml, smi, sizeof smi);
        char entry[48];
        snprintf(entry, sizeof entry, "\"%s\": 2", name);
        cr_expect(strstr(yaml, entry) != NULL, "R%lld: %s", (long long)drivers[d], yaml);
        cr_expect(strstr(yaml, other) == NULL, "%s", yaml);
        cr_expect(strstr(smi, tuple) != NULL, "R%lld: %s", (long long)drivers[d], smi);
        cr_expect(strstr(smi, other) == NULL, "%s", smi);
    }
    /* Only the A100 80 GB: the H100's 3g.40gb keeps its name. */
    size_t h = gpu("H100");
    cr_expect_str_eq(llmem_mig_profile_driver_name(h, profile(h, "3g.40gb"), 535), "3g.40gb");
}

/* name with its ASCII letters in upper case, into buf. */
static const char *upper(const char *name, char *buf, size_t cap)
{
    size_t i = 0;
    for (; name[i] != '\0' && i + 1 < cap; i++)
        buf[i] = name[i] >= 'a' && name[i] <= 'z' ? (char)(name[i] - 'a' + 'A') : name[i];
    buf[i] = '\0';
    return buf;
}

/* Whatever a branch names a profile, llmem_mig_profile_find() finds that
 * profile: every GPU, every profile, every branch (0 to 999), as named and
 * in upper case. A name one branch gives a profile and another branch gives
 * another profile of the same GPU would fail here. */
Test(driver, every_branchs_name_finds_its_profile)
{
    size_t names = 0, renamed = 0;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        uint64_t n = 0;
        cr_assert_eq(llmem_gpu_get_u64(g, LLMEM_GPU_MIG_PROFILES, &n), LLMEM_OK);
        for (size_t p = 0; p < n; p++)
            for (int64_t d = 0; d <= 999; d++) {
                const char *name = llmem_mig_profile_driver_name(g, p, d);
                char buf[64];
                size_t found = SIZE_MAX;
                if (name == NULL)
                    continue;
                names++;
                renamed += strcmp(name, llmem_mig_profile_name(g, p)) != 0;
                cr_assert_eq(llmem_mig_profile_find(ctx, g, name, &found), LLMEM_OK,
                             "%s R%lld %s: %s", llmem_gpu_name(g), (long long)d, name,
                             llmem_ctx_error(ctx));
                cr_assert_eq(found, p, "%s R%lld %s: profile %zu, not %zu", llmem_gpu_name(g),
                             (long long)d, name, found, p);
                found = SIZE_MAX;
                cr_assert_eq(llmem_mig_profile_find(NULL, g, upper(name, buf, sizeof buf),
                                                    &found), LLMEM_OK, "%s", buf);
                cr_assert_eq(found, p, "%s %s", llmem_gpu_name(g), buf);
            }
    }
    cr_expect_gt(names, 100000, "%zu names tried", names);
    /* The A100 80 GB's 3g.39gb on R535 to R545: 11 branches. */
    cr_expect_eq(renamed, 11, "%zu renamed", renamed);
}

/* The name a 535 driver prints is found on any branch (find takes none): it
 * names one profile; where no branch has it, the message lists the GPU's
 * profiles under their catalog names. */
Test(driver, a100_80gb_finds_3g_39gb_whatever_the_branch)
{
    size_t g = gpu("A100-80GB"), p = profile(g, "3g.40gb"), found = SIZE_MAX;
    const char *spellings[] = { "3g.39gb", "3G.39GB", "3g.39GB" };
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        found = SIZE_MAX;
        cr_expect_eq(llmem_mig_profile_find(ctx, g, spellings[i], &found), LLMEM_OK, "%s: %s",
                     spellings[i], llmem_ctx_error(ctx));
        cr_expect_eq(found, p, "%s", spellings[i]);
        cr_expect_str_eq(llmem_ctx_error(ctx), "", "a success clears the message");
    }
    /* Not a prefix or a near miss, and not on another GPU. */
    const char *misses[] = { "3g.39", "3g.39gb+me", "3g.39gbx", " 3g.39gb" };
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++)
        cr_expect_eq(llmem_mig_profile_find(ctx, g, misses[i], &found), LLMEM_ENOTFOUND, "%s",
                     misses[i]);
    size_t h = gpu("H100");
    cr_expect_eq(llmem_mig_profile_find(ctx, h, "3g.39gb", &found), LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "'3g.39gb'") &&
                  strstr(llmem_ctx_error(ctx), "1g.10gb|1g.10gb+me|1g.20gb|2g.20gb|3g.40gb|"
                                                   "4g.40gb|7g.80gb"),
              "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_mig_profile_find(ctx, gpu("A100-40GB"), "3g.39gb", &found),
                 LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "3g.20gb") && !strstr(llmem_ctx_error(ctx), "39gb|"),
              "%s", llmem_ctx_error(ctx));
}

Test(driver, a_changed_driver_drops_the_result)
{
    cr_assert_eq(llmem_pack_add_gpu(pack, gpu("A100-80GB"), 0), LLMEM_OK);
    cr_assert_eq(llmem_pack_add_job(pack, "a", 35 * GIB, LLMEM_LEVEL_DEVICE, 0), LLMEM_OK);
    cr_assert_eq(llmem_pack_run(pack), LLMEM_OK);
    cr_assert_eq(llmem_pack_set_int(pack, LLMEM_PACK_DRIVER, 535), LLMEM_OK);
    cr_expect_null(llmem_pack_job_resource(pack, 0), "the old names answered the old driver");
    fit_on("A100-80GB", 0, GIB);
    cr_expect_gt(llmem_fit_count(fit), 0);
    cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, 545), LLMEM_OK);
    cr_expect_eq(llmem_fit_count(fit), 0);
}

/* The H100 SXM's 7g.80gb lgip figure (81152 MiB) is above the whole GPU's
 * CUDA total (81079 MiB, a CUDA 13.0 driver): the whole GPU is still listed
 * last, and a job between the two is held by the 7g slice alone. */
Test(driver, whole_gpu_is_the_last_option)
{
    const char *names[] = { "H100-SXM", "H100-PCIe", "A100-80GB", "A30", "H200" };
    cr_assert_eq(llmem_fit_set_int(fit, LLMEM_FIT_MARGIN_PERMILLE, 0), LLMEM_OK);
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        fit_on(names[n], 0, GIB);
        size_t last = llmem_fit_count(fit) - 1;
        cr_expect_eq(opt(last, LLMEM_FIT_WHOLE_GPU), 1, "%s", names[n]);
        for (size_t i = 1; i < last; i++)
            cr_expect_geq(opt(i, LLMEM_FIT_USABLE_BYTES), opt(i - 1, LLMEM_FIT_USABLE_BYTES));
    }
    fit_on("H100-SXM", 0, 81100 * MIB);
    cr_expect_str_eq(best_name(), "7g.80gb");
    fit_on("H100-SXM", 0, 79 * GIB);
    cr_expect_str_eq(best_name(), "7g.80gb", "the slice before the whole GPU");
}
