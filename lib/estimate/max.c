/* SPDX-License-Identifier: MIT */
/* The largest batch or sequence length that fits (llmem_estimate_max). */
#include "estimate/estimate.h"

#include "core/ctx.h"
#include "train/train.h"

static uint64_t level_bytes(const est_results *r, int level)
{
    return level == LLMEM_LEVEL_ALLOCATED  ? r->peak_allocated
           : level == LLMEM_LEVEL_RESERVED ? r->peak_reserved
                                           : r->peak_device;
}

/* 1: value fits; 0: it does not; < 0: an error other than "too large". */
static int fits(llmem_estimate *e, llmem_model *model, llmem_train *t,
                const llmem_parallel *parallel, int key, int64_t value, int level, uint64_t capacity)
{
    t->i[key] = value;
    int rc = llmem_estimate_run_parallel(e, model, t, parallel);
    if (rc == LLMEM_EOVERFLOW)
        return 0; /* beyond 64-bit byte counts: beyond any capacity */
    if (rc != LLMEM_OK)
        return rc;
    return level_bytes(&e->r, level) <= capacity;
}

int llmem_estimate_max(llmem_estimate *e, llmem_model *model, const llmem_train *train,
                       const llmem_parallel *parallel, int key, int level, uint64_t capacity,
                       int64_t *out)
{
    if (e == NULL)
        return LLMEM_EINVAL;
    if (model == NULL || train == NULL || out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: model, train or out is NULL");
    if (key != LLMEM_TRAIN_BATCH && key != LLMEM_TRAIN_SEQ)
        return llmem__fail(e->ctx, LLMEM_EINVAL,
                           "max: solves for batch or seq (key %d is neither)", key);
    if (level < LLMEM_LEVEL_ALLOCATED || level > LLMEM_LEVEL_DEVICE)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "max: unknown level %d", level);
    const field_desc *f = llmem_fields_find(&llmem_train_fields, key);
    llmem_train t = *train; /* a private copy whose batch or seq the search moves */
    int64_t lo = 0, hi = (int64_t)f->max; /* lo fits (0: nothing yet), hi + 1 does not */
    int ok = fits(e, model, &t, parallel, key, 1, level, capacity);
    if (ok < 0)
        return ok;
    if (ok == 0) {
        *out = 0;
        return LLMEM_OK;
    }
    lo = 1;
    /* Grow until a value does not fit, then bisect: exact, not a scan. */
    for (int64_t step = 2; lo < hi; step *= 2) {
        int64_t probe = step < hi ? step : hi;
        ok = fits(e, model, &t, parallel, key, probe, level, capacity);
        if (ok < 0)
            return ok;
        if (!ok) {
            hi = probe - 1;
            break;
        }
        lo = probe;
        if (probe == hi)
            break;
    }
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        ok = fits(e, model, &t, parallel, key, mid, level, capacity);
        if (ok < 0)
            return ok;
        if (ok)
            lo = mid;
        else
            hi = mid - 1;
    }
    *out = lo;
    /* Leave the estimate describing the answer. */
    ok = fits(e, model, &t, parallel, key, lo, level, capacity);
    return ok < 0 ? ok : LLMEM_OK;
}
