/* SPDX-License-Identifier: MIT */
/* The largest batch or sequence length that fits (llmem_estimate_max). */
#include "estimate/estimate.h"

#include "core/ctx.h"
#include "parallel/parallel.h"
#include "train/train.h"

/* 1: value fits; 0: it does not; < 0: an error other than "too large". A
 * value beyond the estimate's range (the smallest such is kept in *beyond), or
 * beyond what the model
 * takes for the searched field itself (a sequence longer than learned
 * positions), fits no capacity. */
static int fits(llmem_estimate *e, llmem_model *model, llmem_train *t,
                const llmem_parallel *parallel, int key, int64_t value, int level, uint64_t capacity,
                int64_t *beyond)
{
    int object = 0, field = 0;
    t->i[key] = value;
    int rc = llmem_estimate_run_parallel(e, model, t, parallel);
    if (rc == LLMEM_EOVERFLOW) {
        *beyond = value < *beyond ? value : *beyond;
        return 0;
    }
    if (rc == LLMEM_EINCONSISTENT && llmem_ctx_error_field(e->ctx, &object, &field) == LLMEM_OK &&
        object == LLMEM_OBJECT_TRAIN && field == key)
        return 0;
    if (rc != LLMEM_OK)
        return rc;
    return llmem_level_bytes(&e->r, level) <= capacity;
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
    int64_t beyond = INT64_MAX; /* the smallest value past the estimate's range tried */
    llmem_train t = *train; /* a private copy whose batch or seq the search moves */
    /* Search k: the value is k x step, the multiples the layout accepts. */
    int64_t step = (int64_t)llmem_parallel_step(parallel, key);
    int64_t lo = 0, hi = (int64_t)f->max / step; /* k = lo fits (0: nothing yet), hi + 1 does not */
    if (hi == 0)
        return llmem__fail_field(e->ctx, LLMEM_OBJECT_TRAIN, key, LLMEM_EINCONSISTENT,
                                 "max: no %s up to %lld splits over this layout (multiples of %lld)",
                                 f->name, (long long)f->max, (long long)step);
    int ok = fits(e, model, &t, parallel, key, step, level, capacity, &beyond);
    if (ok < 0)
        return ok;
    if (ok == 0) {
        *out = 0;
        return beyond == step ? LLMEM_EOVERFLOW : LLMEM_OK; /* the run's message says why */
    }
    lo = 1;
    /* Grow until a value does not fit, then bisect: exact, not a scan. */
    for (int64_t k = 2; lo < hi; k *= 2) {
        int64_t probe = k < hi ? k : hi;
        ok = fits(e, model, &t, parallel, key, probe * step, level, capacity, &beyond);
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
        ok = fits(e, model, &t, parallel, key, mid * step, level, capacity, &beyond);
        if (ok < 0)
            return ok;
        if (ok)
            lo = mid;
        else
            hi = mid - 1;
    }
    *out = lo * step;
    /* Leave the estimate describing the answer. */
    ok = fits(e, model, &t, parallel, key, lo * step, level, capacity, &beyond);
    if (ok < 0)
        return ok;
    /* The capacity holds more than the estimate can count: the answer is a
     * floor, not the limit. */
    if (beyond == (lo + 1) * step)
        return llmem__fail_field(e->ctx, LLMEM_OBJECT_TRAIN, key, LLMEM_EOVERFLOW,
                                 "max: %s %lld and below fit %llu bytes; %lld is beyond the "
                                 "estimate's range for this model (its byte counts are bounded "
                                 "by 2^62)",
                                 f->name, (long long)*out, (unsigned long long)capacity,
                                 (long long)beyond);
    return LLMEM_OK;
}
