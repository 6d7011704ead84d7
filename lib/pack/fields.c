/* SPDX-License-Identifier: MIT */
/*
 * The settings of the fit and pack handles for the field engine
 * (core/fields.h), and the margin arithmetic they share.
 *
 * Default margin, 5 %: the estimator's allocated-level peak matches measured
 * steps to 0.01 % (docs/validation.md), but what it does not model is larger:
 * the caching allocator's fragmentation, and a CUDA context reported between
 * 256 and 426 MiB against the 287 MiB default (docs/gpu-constants.md), that is
 * up to 139 MiB, 3.4 % of a 4 GiB job in a small slice. docs/mig.md says more.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <math.h>

#define MARGIN_ROW(key) { key, "margin", FIELD_REAL, 0, 10, 0, 0.05, NULL }

static const field_desc fit_rows[] = {
    MARGIN_ROW(LLMEM_FIT_MARGIN),
    /* The most compute slices of any MIG grid (7). */
    { LLMEM_FIT_MIN_COMPUTE, "min-compute", FIELD_INT, 0, 7, 0, 0, NULL },
};
typedef char fit_fields_cover_every_key[sizeof fit_rows / sizeof fit_rows[0] + 1 == FIT_KEY_END
                                            ? 1
                                            : -1];
const field_table llmem_fit_fields = FIELD_TABLE(LLMEM_OBJECT_FIT, "fit", fit_rows);

static const field_desc pack_rows[] = {
    MARGIN_ROW(LLMEM_PACK_MARGIN),
    { LLMEM_PACK_GPUS_PER_NODE, "gpus-per-node", FIELD_INT, 0, 1 << 16, 0, 0, NULL },
    /* 200,000 states: the dynamic program stays well under a second with the
     * few hundred fillings of a typical class set (bench/bench_pack.c). */
    { LLMEM_PACK_EXACT_LIMIT, "exact-limit", FIELD_INT, 0, 1 << 24, 0, 200000, NULL },
};
typedef char pack_fields_cover_every_key[sizeof pack_rows / sizeof pack_rows[0] + 1 ==
                                                 PACK_KEY_END
                                             ? 1
                                             : -1];
const field_table llmem_pack_fields = FIELD_TABLE(LLMEM_OBJECT_PACK, "pack", pack_rows);

uint64_t llmem_pack_required(uint64_t need, double margin)
{
    /* need + ceil(need x margin), the product in long double; 0 beyond 64 bits.
     * A product that is an integer in decimal (20e9 x 0.05) but not quite in
     * binary (0.05 is not exact) is taken as that integer, not one more. */
    long double product = (long double)need * (long double)margin;
    long double nearest = roundl(product);
    long double extra = fabsl(product - nearest) <= product * 1e-12L ? nearest : ceill(product);
    if (extra >= 18446744073709551616.0L || (uint64_t)extra > UINT64_MAX - need)
        return 0;
    return need + (uint64_t)extra;
}

int llmem_pack_setting_int(llmem_ctx *ctx, const field_table *t, int64_t *ints, double *reals,
                           int key, int64_t value)
{
    const field_desc *f;
    int rc = llmem_fields_accept_int(ctx, t, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    if (f->kind == FIELD_REAL)
        reals[key] = (double)value;
    else
        ints[key] = value;
    llmem__ok(ctx);
    return LLMEM_OK;
}

int llmem_pack_setting_real(llmem_ctx *ctx, const field_table *t, double *reals, int key,
                            double value)
{
    const field_desc *f;
    int rc = llmem_fields_accept_real(ctx, t, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    reals[key] = value;
    llmem__ok(ctx);
    return LLMEM_OK;
}

int llmem_pack_setting_str(llmem_ctx *ctx, const field_table *t, int64_t *ints, double *reals,
                           int key, const char *value)
{
    const field_desc *f;
    int64_t i = 0;
    double d = 0;
    int rc = llmem_fields_accept_str(ctx, t, key, value, &i, &d, &f);
    if (rc != LLMEM_OK)
        return rc;
    if (f->kind == FIELD_REAL)
        reals[key] = d;
    else
        ints[key] = i;
    llmem__ok(ctx);
    return LLMEM_OK;
}

int llmem_pack_setting_get(llmem_ctx *ctx, const field_table *t, const int64_t *ints,
                           const double *reals, int key, double *out)
{
    const field_desc *f;
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "%s: NULL argument", t->object_name);
    int rc = llmem_fields_row(ctx, t, key, &f);
    if (rc != LLMEM_OK)
        return rc;
    *out = f->kind == FIELD_REAL ? reals[key] : (double)ints[key];
    return LLMEM_OK;
}
