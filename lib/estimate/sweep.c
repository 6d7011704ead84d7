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

/* batch and seq accepted as the train's setters accept them. */
static int accept_point(llmem_ctx *ctx, int64_t batch, int64_t seq)
{
    const field_desc *row;
    int rc = llmem_fields_accept_int(ctx, &llmem_train_fields, LLMEM_TRAIN_BATCH, batch, &row);
    return rc != LLMEM_OK ? rc
                          : llmem_fields_accept_int(ctx, &llmem_train_fields, LLMEM_TRAIN_SEQ, seq,
                                                    &row);
}

/* A point run whole (its run also resolves the job the next points reuse). */
static int run_point(llmem_estimate *e, llmem_model *model, llmem_train *t,
                     const llmem_parallel *parallel, int64_t batch, int64_t seq, est_job *job)
{
    int rc = accept_point(e->ctx, batch, seq);
    if (rc != LLMEM_OK)
        return rc;
    t->i[LLMEM_TRAIN_BATCH] = batch;
    t->i[LLMEM_TRAIN_SEQ] = seq;
    return llmem_estimate_run_job(e, model, t, parallel, job);
}

/* Points in a row worth making one (llmem_estimate_row) for. */
#define ROW_POINTS 3

/* How many points from i on share point i's seq (up to ROW_POINTS). */
static int same_seq_ahead(const int64_t *seq, size_t i, size_t n)
{
    if (seq == NULL)
        return ROW_POINTS;
    int k = 1;
    while (k < ROW_POINTS && i + (size_t)k < n && seq[i + (size_t)k] == seq[i])
        k++;
    return k;
}

/* The points from i on that row answers, one after another while they
 * keep its seq: the first it does not (n when it answers all). */
static size_t row_points(const est_row *row, const int64_t *batch, int64_t train_batch,
                         const int64_t *seq, size_t i, size_t n, int level, uint64_t *peak)
{
    if (batch != NULL && seq != NULL)
        return llmem_row_peaks(row, batch, seq, i, n, level, peak);
    for (; i < n; i++) {
        uint64_t b = (uint64_t)(batch != NULL ? batch[i] : train_batch); /* < 0: past hi */
        if ((seq != NULL && (uint64_t)seq[i] != row->seq) ||
            !llmem_row_peak(row, b, level, &peak[i]))
            break;
    }
    return i;
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
    /* Each point is exactly its run. Once a run has resolved the job, a
     * point whose walks are known (a compiled configuration) and which
     * passes the run's checks of batch and seq is answered without the rest
     * of the run (llmem_estimate_point); any other point runs, and a failing
     * one reports itself. The estimate must end holding the last point that
     * succeeded: when that point was answered alone, it runs again. */
    llmem_train t = *train; /* a private copy whose batch and seq move */
    est_job job;
    est_row row;
    int have_job = 0, unwritten = 0; /* unwritten: the last point was answered alone, */
    int64_t last_b = 0, last_s = 0;  /* at (last_b, last_s) */
    int64_t row_seq = 0, tried = 0;  /* the seq of row (0: none), the last seq a row was tried at */
    for (size_t i = 0; i < n; i++) {
        int64_t b = batch != NULL ? batch[i] : train->i[LLMEM_TRAIN_BATCH];
        int64_t s = seq != NULL ? seq[i] : train->i[LLMEM_TRAIN_SEQ];
        /* A row pays for itself over a few points of one seq. */
        if (have_job && s != tried && s > 0 && same_seq_ahead(seq, i, n) >= ROW_POINTS) {
            tried = s;
            row_seq = llmem_estimate_row(e, &job, (uint64_t)s, &row) ? s : 0;
        }
        if (row_seq > 0 && s == row_seq) {
            size_t end = row_points(&row, batch, train->i[LLMEM_TRAIN_BATCH], seq, i, n, level,
                                    peak);
            if (end > i) {
                unwritten = 1;
                last_b = batch != NULL ? batch[end - 1] : b;
                last_s = s;
                i = end - 1;
                continue;
            }
        }
        if (have_job && accept_point(e->ctx, b, s) == LLMEM_OK &&
            llmem_estimate_point(e, &job, (uint64_t)b, (uint64_t)s, level, &peak[i])) {
            unwritten = 1;
            last_b = b;
            last_s = s;
            continue;
        }
        /* A row stays exact after a run of its job (its lines are copied out
         * of the walk); a seq without one is tried again, since a run may
         * compile the walk it needs. */
        if (row_seq == 0)
            tried = 0;
        int rc = run_point(e, model, &t, parallel, b, s, &job);
        if (rc != LLMEM_OK && unwritten) {
            run_point(e, model, &t, parallel, last_b, last_s, &job);
            rc = run_point(e, model, &t, parallel, b, s, &job); /* its message again */
        }
        if (rc != LLMEM_OK)
            return fail_point(e->ctx, rc, i, b, s);
        have_job = 1;
        unwritten = 0;
        peak[i] = llmem_level_bytes(&e->r, level);
    }
    if (unwritten)
        run_point(e, model, &t, parallel, last_b, last_s, &job);
    llmem__ok(e->ctx); /* also when there was no point to run */
    return LLMEM_OK;
}
