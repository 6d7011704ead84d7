/* SPDX-License-Identifier: MIT */
/*
 * The settings of the fit and pack handles for the field engine
 * (core/fields.h), and the margin arithmetic they share.
 *
 * The margin is the planner's (LLMEM_PLAN_MARGIN_PERMILLE): a share of the
 * memory kept free, in thousandths, ceil(U x margin / 1000) of U usable
 * bytes, so U holds N when N <= U - ceil(U x margin / 1000), that is
 * N <= floor(U x (1000 - margin) / 1000), exactly (no byte lost to rounding
 * the thousand: margin 0 keeps nothing free). Default 50 (5 %): the estimator's
 * allocated-level peak matches measured steps to 0.01 % (docs/validation.md),
 * but what it does not model is larger: the caching allocator's
 * fragmentation, and a CUDA context reported between 256 and 426 MiB against
 * the 287 MiB default (docs/gpu-constants.md), that is up to 139 MiB, 3.4 % of
 * a 4 GiB slice. docs/mig.md says more.
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"


/* As the planner's margin-permille: at most 90 % kept free. */
#define MARGIN_ROW(key) { key, "margin-permille", FIELD_INT, 0, 900, 0, 50, NULL }

/* The driver's major branch (535 for 535.129.03); 0, the default: the
 * newest, the catalog as it is (lib/gpu/mig_drivers.c). */
#define DRIVER_ROW(key) { key, "driver", FIELD_INT, 0, GPU_DRIVER_MAX, 0, 0, NULL }

static const field_desc fit_rows[] = {
    MARGIN_ROW(LLMEM_FIT_MARGIN_PERMILLE),
    /* The most compute slices of any MIG grid (7). */
    { LLMEM_FIT_MIN_COMPUTE, "min-compute", FIELD_INT, 0, 7, 0, 0, NULL },
    DRIVER_ROW(LLMEM_FIT_DRIVER),
};
typedef char fit_fields_cover_every_key[sizeof fit_rows / sizeof fit_rows[0] + 1 == FIT_KEY_END
                                            ? 1
                                            : -1];
const field_table llmem_fit_fields = FIELD_TABLE(LLMEM_OBJECT_FIT, "fit", fit_rows);

static const field_desc pack_rows[] = {
    MARGIN_ROW(LLMEM_PACK_MARGIN_PERMILLE),
    /* 0: no node boundary, one config for every GPU. */
    { LLMEM_PACK_GPUS_PER_NODE, "gpus-per-node", FIELD_INT, 0, GPU_MAX_PER_NODE, 0, 0, NULL },
    /* 200,000 states: the dynamic program stays well under a second with the
     * few hundred fillings of a typical class set (bench/bench_pack.c). */
    { LLMEM_PACK_EXACT_LIMIT, "exact-limit", FIELD_INT, 0, 1 << 24, 0, 200000, NULL },
    DRIVER_ROW(LLMEM_PACK_DRIVER),
};
typedef char pack_fields_cover_every_key[sizeof pack_rows / sizeof pack_rows[0] + 1 ==
                                                 PACK_KEY_END
                                             ? 1
                                             : -1];
const field_table llmem_pack_fields = FIELD_TABLE(LLMEM_OBJECT_PACK, "pack", pack_rows);

int llmem_pack_required(uint64_t need, int64_t margin_permille, uint64_t *required)
{
    /* The least U with floor(U x keep / 1000) >= need (keep = 1000 - margin):
     * U x keep >= 1000 x need, U = ceil(1000 x need / keep). With need =
     * q x keep + r (r < keep <= 1000), that is 1000 q + ceil(1000 r / keep),
     * which overflows only where the result does. */
    uint64_t keep = (uint64_t)(1000 - margin_permille);
    uint64_t q = need / keep, r = need % keep;
    uint64_t rest = (1000 * r + keep - 1) / keep;
    if (q > UINT64_MAX / 1000 || q * 1000 > UINT64_MAX - rest) {
        *required = UINT64_MAX;
        return 0;
    }
    *required = q * 1000 + rest;
    return 1;
}

uint64_t llmem_pack_budget(uint64_t usable, int64_t margin_permille)
{
    /* floor(U x keep / 1000) without overflow: U = 1000 a + b gives
     * a x keep + floor(b x keep / 1000). It is U - ceil(U x margin / 1000),
     * and budget >= need exactly when U >= llmem_pack_required(need). */
    uint64_t keep = (uint64_t)(1000 - margin_permille);
    return usable / 1000 * keep + usable % 1000 * keep / 1000;
}

int llmem_pack_setting_int(llmem_ctx *ctx, const field_table *t, int64_t *ints, int key,
                           int64_t value)
{
    const field_desc *f;
    int rc = llmem_fields_accept_int(ctx, t, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    ints[key] = value;
    llmem__ok(ctx);
    return LLMEM_OK;
}

int llmem_pack_setting_str(llmem_ctx *ctx, const field_table *t, int64_t *ints, int key,
                           const char *value)
{
    const field_desc *f;
    int64_t i = 0;
    double d = 0;
    int rc = llmem_fields_accept_str(ctx, t, key, value, &i, &d, &f);
    if (rc != LLMEM_OK)
        return rc;
    ints[key] = i;
    llmem__ok(ctx);
    return LLMEM_OK;
}

int llmem_pack_setting_get(llmem_ctx *ctx, const field_table *t, const int64_t *ints, int key,
                           int64_t *out)
{
    const field_desc *f;
    int rc = llmem_fields_row(ctx, t, key, &f);
    if (rc != LLMEM_OK)
        return rc;
    *out = ints[key];
    return LLMEM_OK;
}
