/* SPDX-License-Identifier: MIT */
/* The largest batch or sequence length that fits (llmem_estimate_max). */
#include "estimate/estimate.h"

#include "core/ctx.h"
#include "parallel/parallel.h"
#include "train/train.h"

#include <stdio.h>

/* The smallest value tried past what the estimate counts (EOVERFLOW) or
 * models for the searched field (ENOTSUP naming it: SDPA's masked kernel
 * from a sliding window on, for head sizes it does not take; or, for seq,
 * pipeline stages once alternate layers' window is reached), with that
 * run's status and message. */
typedef struct beyond_range {
    int64_t value;
    int rc;
    char why[LLMEM_ERROR_CAP];
} beyond_range;

static int names_field(llmem_estimate *e, int key)
{
    int object = 0, field = 0;
    return llmem_ctx_error_field(e->ctx, &object, &field) == LLMEM_OK &&
           object == LLMEM_OBJECT_TRAIN && field == key;
}

/* Whether an ENOTSUP is a value of the searched field beyond what is
 * modelled: one naming that field, or, for seq, the pipeline refusal of a
 * sliding window on alternate layers once seq reaches it (it names pp, the
 * other way out: llmem_layout_check_point), which every longer seq meets. */
static int beyond_modelled(llmem_estimate *e, int key)
{
    int object = 0, field = 0;
    if (names_field(e, key))
        return 1;
    return key == LLMEM_TRAIN_SEQ && llmem_ctx_error_field(e->ctx, &object, &field) == LLMEM_OK &&
           object == LLMEM_OBJECT_PARALLEL && field == LLMEM_PARALLEL_PP;
}

/* 1: value fits; 0: it does not; < 0: an error other than "too large". A
 * value beyond the estimate's range (kept in *beyond), or beyond what the
 * model takes for the searched field itself (a sequence longer than learned
 * positions), fits no capacity. */
static int fits(llmem_estimate *e, llmem_model *model, llmem_train *t,
                const llmem_parallel *parallel, int key, int64_t value, int level, uint64_t capacity,
                beyond_range *beyond)
{
    t->i[key] = value;
    int rc = llmem_estimate_run_parallel(e, model, t, parallel);
    if (rc == LLMEM_EOVERFLOW || (rc == LLMEM_ENOTSUP && beyond_modelled(e, key))) {
        if (value < beyond->value) {
            beyond->value = value;
            beyond->rc = rc;
            snprintf(beyond->why, sizeof beyond->why, "%s", llmem_ctx_error(e->ctx));
        }
        return 0;
    }
    if (rc == LLMEM_EINCONSISTENT && names_field(e, key))
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
    beyond_range beyond = { INT64_MAX, LLMEM_OK, "" };
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
        return beyond.value == step ? beyond.rc : LLMEM_OK; /* the run's message says why */
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
    /* The capacity holds more than the estimate can count or models: the
     * answer is a floor, not the limit. */
    if (beyond.value == (lo + 1) * step && beyond.rc == LLMEM_EOVERFLOW)
        return llmem__fail_field(e->ctx, LLMEM_OBJECT_TRAIN, key, LLMEM_EOVERFLOW,
                                 "max: %s %lld and below fit %llu bytes; %lld is beyond the "
                                 "estimate's range for this model (its byte counts are bounded "
                                 "by 2^62)",
                                 f->name, (long long)*out, (unsigned long long)capacity,
                                 (long long)beyond.value);
    if (beyond.value == (lo + 1) * step)
        return llmem__fail_field(e->ctx, LLMEM_OBJECT_TRAIN, key, LLMEM_ENOTSUP,
                                 "max: %s %lld and below fit %llu bytes; %lld is not modelled (%s)",
                                 f->name, (long long)*out, (unsigned long long)capacity,
                                 (long long)beyond.value, beyond.why);
    return LLMEM_OK;
}
