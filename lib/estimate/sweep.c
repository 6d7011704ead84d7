/* SPDX-License-Identifier: MIT */
/* One job at many batch sizes and sequence lengths (llmem_estimate_sweep). */
#include "estimate/estimate.h"

#include "core/ctx.h"
#include "train/train.h"

#include <string.h>

/* The failure of point i, its message prefixed with the point and its field
 * (if the failure named one) kept. */
static int fail_point(llmem_ctx *ctx, int rc, size_t i, int64_t batch, int64_t seq)
{
    char why[LLMEM_ERROR_CAP];
    memcpy(why, ctx->error, sizeof why);
    why[sizeof why - 1] = '\0';
    if (ctx->error_object != 0)
        return llmem__fail_field(ctx, ctx->error_object, ctx->error_key, rc,
                                 "sweep point %zu (batch %lld, seq %lld): %s", i,
                                 (long long)batch, (long long)seq, why);
    return llmem__fail(ctx, rc, "sweep point %zu (batch %lld, seq %lld): %s", i,
                       (long long)batch, (long long)seq, why);
}

int llmem_estimate_sweep(llmem_estimate *e, llmem_model *model, const llmem_train *train,
                         const llmem_parallel *parallel, const int64_t *batch, const int64_t *seq,
                         size_t n, int level, uint64_t *peak)
{
    if (e == NULL)
        return LLMEM_EINVAL;
    if (model == NULL || train == NULL || (n > 0 && peak == NULL))
        return llmem__fail(e->ctx, LLMEM_EINVAL, "sweep: model, train or peak is NULL");
    if (level < LLMEM_LEVEL_ALLOCATED || level > LLMEM_LEVEL_DEVICE)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "sweep: unknown level %d", level);
    /* A private copy whose batch and seq move; each point is a whole run,
     * so it is checked and cached as any run is (a sweep of one
     * configuration's rank is answered by its compiled walk). */
    llmem_train t = *train;
    for (size_t i = 0; i < n; i++) {
        const field_desc *row;
        int64_t b = batch != NULL ? batch[i] : train->i[LLMEM_TRAIN_BATCH];
        int64_t s = seq != NULL ? seq[i] : train->i[LLMEM_TRAIN_SEQ];
        int rc = llmem_fields_accept_int(e->ctx, &llmem_train_fields, LLMEM_TRAIN_BATCH, b, &row);
        if (rc == LLMEM_OK)
            rc = llmem_fields_accept_int(e->ctx, &llmem_train_fields, LLMEM_TRAIN_SEQ, s, &row);
        if (rc == LLMEM_OK) {
            t.i[LLMEM_TRAIN_BATCH] = b;
            t.i[LLMEM_TRAIN_SEQ] = s;
            rc = llmem_estimate_run_parallel(e, model, &t, parallel);
        }
        if (rc != LLMEM_OK)
            return fail_point(e->ctx, rc, i, b, s);
        peak[i] = llmem_level_bytes(&e->r, level);
    }
    llmem__ok(e->ctx); /* also when there was no point to run */
    return LLMEM_OK;
}
