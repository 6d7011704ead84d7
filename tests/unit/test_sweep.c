/* SPDX-License-Identifier: MIT */
/*
 * llmem_estimate_sweep: each point's peak is what a run of its own gives (on
 * another handle, at every level, in every regime of batch and seq, plain
 * and laid out), the train is left as it was, and a bad point stops the
 * sweep with its index, its field and the peaks before it written.
 */
#include "job_fixture.h"
#include "llmem.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* Batch 1 and seq 1..3 are regimes of their own (docs/benchmarks.md). */
static const int64_t sweep_batch[] = { 1, 2, 3, 1, 4, 7, 2, 1, 5, 8, 3, 2 };
static const int64_t sweep_seq[] = { 1, 2, 3, 512, 512, 64, 1024, 4, 300, 2048, 2048, 256 };
#define POINTS (sizeof sweep_batch / sizeof sweep_batch[0])

static const struct {
    const char *preset, *method, *ckpt, *attention, *loss;
    int64_t dp, tp, pp, sp;
    const char *sharding;
} jobs[] = {
    { "meta-llama/Llama-3.2-1B", "full", "none", "sdpa", "upcast", 1, 1, 1, 0, "none" },
    { "meta-llama/Llama-3.2-1B", "lora", "full", "eager", "chunked", 1, 1, 1, 0, "none" },
    { "google/gemma-2-9b", "freeze", "reentrant", "flash", "upcast", 1, 1, 1, 0, "none" },
    { "Qwen/Qwen2.5-7B", "qlora", "none", "sdpa", "upcast", 1, 1, 1, 0, "none" },
    { "meta-llama/Llama-3.1-8B", "full", "full", "flash", "upcast", 4, 2, 2, 0, "fsdp-full" },
    { "meta-llama/Llama-3.1-8B", "full", "none", "sdpa", "upcast", 2, 2, 1, 0, "fsdp-full" },
};
#define JOBS (sizeof jobs / sizeof jobs[0])

/* The job's training setup, at batch 6 and seq 128. */
static void set_job(llmem_train *t, size_t j)
{
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, "bf16-mixed"), LLMEM_OK);
    set_train_kind(t, jobs[j].method, jobs[j].ckpt, jobs[j].attention, jobs[j].loss);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 6), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 128), LLMEM_OK);
}

static fixture open_job(size_t j)
{
    fixture f = open_job_handles(jobs[j].preset);
    set_job(f.t, j);
    cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_DP, jobs[j].dp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_TP, jobs[j].tp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_PP, jobs[j].pp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_SP, jobs[j].sp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_str(f.l, LLMEM_PARALLEL_SHARDING, jobs[j].sharding), LLMEM_OK);
    return f;
}

static const int levels[] = { LLMEM_LEVEL_ALLOCATED, LLMEM_LEVEL_RESERVED, LLMEM_LEVEL_DEVICE };
static const int level_keys[] = { LLMEM_EST_PEAK_ALLOCATED, LLMEM_EST_PEAK_RESERVED,
                                  LLMEM_EST_PEAK_DEVICE };

static int64_t train_int(const llmem_train *t, int key)
{
    int64_t v = 0;
    cr_assert_eq(llmem_train_get_int(t, key, &v), LLMEM_OK);
    return v;
}

/* Every point, at every level, against its own run on another handle. */
Test(sweep, each_point_equals_its_own_run)
{
    for (size_t j = 0; j < JOBS; j++) {
        fixture f = open_job(j);
        llmem_estimate *own;
        llmem_train *t;
        cr_assert_eq(llmem_estimate_new(f.ctx, &own), LLMEM_OK);
        cr_assert_eq(llmem_train_new(f.ctx, &t), LLMEM_OK);
        set_job(t, j);
        for (size_t k = 0; k < 3; k++) {
            uint64_t peak[POINTS];
            int rc = llmem_estimate_sweep(f.e, f.m, f.t, f.l, sweep_batch, sweep_seq, POINTS,
                                          levels[k], peak);
            cr_assert_eq(rc, LLMEM_OK, "%s: %s", jobs[j].preset, llmem_ctx_error(f.ctx));
            for (size_t i = 0; i < POINTS; i++) {
                uint64_t want = 0;
                /* The job's own train at the point, on a new handle. */
                cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, sweep_batch[i]), LLMEM_OK);
                cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, sweep_seq[i]), LLMEM_OK);
                llmem_estimate_free(own);
                cr_assert_eq(llmem_estimate_new(f.ctx, &own), LLMEM_OK);
                cr_assert_eq(llmem_estimate_run_parallel(own, f.m, t, f.l), LLMEM_OK, "%s",
                             llmem_ctx_error(f.ctx));
                llmem_estimate_get_u64(own, level_keys[k], &want);
                cr_expect_eq(peak[i], want, "%s %s, level %d, batch %lld seq %lld: %llu != %llu",
                             jobs[j].preset, jobs[j].method, levels[k], (long long)sweep_batch[i],
                             (long long)sweep_seq[i], (unsigned long long)peak[i],
                             (unsigned long long)want);
            }
            /* The estimate holds the last point's result. */
            uint64_t last = 0;
            llmem_estimate_get_u64(f.e, level_keys[k], &last);
            cr_expect_eq(last, peak[POINTS - 1]);
        }
        cr_expect_eq(train_int(f.t, LLMEM_TRAIN_BATCH), 6, "the train is left unchanged");
        cr_expect_eq(train_int(f.t, LLMEM_TRAIN_SEQ), 128);
        llmem_train_free(t);
        llmem_estimate_free(own);
        close_fixture(&f);
    }
}

/* Job j's points (batch[i], seq[i]) swept six times (each level twice) on
 * one handle: each point must be its own run's, on a new handle, and the
 * estimate must hold the last point's result. */
#define MAX_POINTS 32
static void sweep_equals_own_runs(size_t j, const int64_t *batch, const int64_t *seq, size_t n)
{
    cr_assert(n <= MAX_POINTS);
    fixture f = open_job(j);
    uint64_t want[3][MAX_POINTS];
    llmem_train *t;
    cr_assert_eq(llmem_train_new(f.ctx, &t), LLMEM_OK);
    set_job(t, j);
    for (size_t i = 0; i < n; i++) {
        llmem_estimate *own;
        cr_assert_eq(llmem_estimate_new(f.ctx, &own), LLMEM_OK);
        cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, batch[i]), LLMEM_OK);
        cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, seq[i]), LLMEM_OK);
        cr_assert_eq(llmem_estimate_run_parallel(own, f.m, t, f.l), LLMEM_OK, "%s",
                     llmem_ctx_error(f.ctx));
        for (int k = 0; k < 3; k++)
            llmem_estimate_get_u64(own, level_keys[k], &want[k][i]);
        llmem_estimate_free(own);
    }
    for (int pass = 0; pass < 6; pass++) {
        int k = pass % 3;
        uint64_t peak[MAX_POINTS], last = 0;
        cr_assert_eq(llmem_estimate_sweep(f.e, f.m, f.t, f.l, batch, seq, n, levels[k], peak),
                     LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
        for (size_t i = 0; i < n; i++)
            cr_expect_eq(peak[i], want[k][i], "%s %s, pass %d, batch %lld seq %lld: %llu != %llu",
                         jobs[j].preset, jobs[j].method, pass, (long long)batch[i],
                         (long long)seq[i], (unsigned long long)peak[i],
                         (unsigned long long)want[k][i]);
        llmem_estimate_get_u64(f.e, level_keys[k], &last);
        cr_expect_eq(last, want[k][n - 1], "the estimate holds the last point");
    }
    llmem_train_free(t);
    close_fixture(&f);
}

/* A grid swept again and again: once a job's walks are compiled, its points
 * are answered without the rest of a run (the sweep's fast path). */
#define GRID_B 4
#define GRID_S 4
Test(sweep, compiled_points_equal_their_runs)
{
    int64_t batch[GRID_B * GRID_S], seq[GRID_B * GRID_S];
    for (int i = 0; i < GRID_B * GRID_S; i++) {
        batch[i] = 2 + i % GRID_B;
        seq[i] = 128 * (1 + i / GRID_B);
    }
    for (size_t j = 0; j < JOBS; j++)
        sweep_equals_own_runs(j, batch, seq, GRID_B * GRID_S);
}

/* Rows interrupted: a point a row does not answer (batch 1, which runs at
 * seq 1..3) in the middle of a seq's points, after which the row goes on;
 * seqs 1..3 and 4; a seq coming back after another's points; a seq of two
 * points (no row). */
static const int64_t cut_batch[] = { 1, 2, 3, 1, 4, 5, 2, 3, 1, 4, 6, 2, 1, 3, 7, 8,
                                     2, 1, 3, 4, 9, 5, 1, 6, 7, 2, 3, 8, 1, 2 };
static const int64_t cut_seq[] = { 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3,
                                   4, 4, 4, 4, 512, 512, 512, 512, 512, 4, 4, 4, 300, 300 };
#define CUT (sizeof cut_batch / sizeof cut_batch[0])

Test(sweep, rows_interrupted_by_runs)
{
    for (size_t j = 0; j < JOBS; j++)
        sweep_equals_own_runs(j, cut_batch, cut_seq, CUT);
}

/* A point failing after points answered alone: the estimate holds the last
 * point that succeeded, as after a run that fails. The failures: a field's
 * range, the step's 64-bit bound, context parallelism's split. */
static void fail_after_compiled(fixture *f, const llmem_parallel *l, int64_t bad_batch,
                                int64_t bad_seq, int status, int object, int key)
{
    int64_t batch[GRID_B * GRID_S + 1], seq[GRID_B * GRID_S + 1];
    uint64_t peak[GRID_B * GRID_S + 1], held = 0;
    size_t n = GRID_B * GRID_S, i;
    int o = 0, k = 0;
    for (i = 0; i < n; i++) {
        batch[i] = 2 + (int64_t)(i % GRID_B);
        seq[i] = 128 * (1 + (int64_t)(i / GRID_B));
    }
    batch[n] = bad_batch;
    seq[n] = bad_seq;
    for (int pass = 0; pass < 3; pass++) /* compile the job's walks */
        cr_assert_eq(llmem_estimate_sweep(f->e, f->m, f->t, l, batch, seq, n, LLMEM_LEVEL_DEVICE,
                                          peak),
                     LLMEM_OK, "%s", llmem_ctx_error(f->ctx));
    peak[n] = 0;
    cr_assert_eq(llmem_estimate_sweep(f->e, f->m, f->t, l, batch, seq, n + 1, LLMEM_LEVEL_DEVICE,
                                      peak),
                 status, "%s", llmem_ctx_error(f->ctx));
    cr_expect_eq(strncmp(llmem_ctx_error(f->ctx), "sweep point 16 ", 15), 0, "%s",
                 llmem_ctx_error(f->ctx));
    cr_expect_eq(llmem_ctx_error_field(f->ctx, &o, &k), LLMEM_OK);
    cr_expect_eq(o, object);
    cr_expect_eq(k, key);
    cr_expect_eq(peak[n], 0);
    llmem_estimate_get_u64(f->e, LLMEM_EST_PEAK_DEVICE, &held);
    cr_expect_eq(held, peak[n - 1], "the estimate holds the last point that succeeded");
}

Test(sweep, a_failure_after_compiled_points)
{
    fixture f = open_job(0);
    fail_after_compiled(&f, NULL, 0, 128, LLMEM_ERANGE, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_BATCH);
    fail_after_compiled(&f, NULL, 1 << 24, 1 << 20, LLMEM_EOVERFLOW, LLMEM_OBJECT_TRAIN,
                        LLMEM_TRAIN_BATCH);
    cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_CP, 2), LLMEM_OK);
    fail_after_compiled(&f, f.l, 2, 130, LLMEM_EINCONSISTENT, LLMEM_OBJECT_PARALLEL,
                        LLMEM_PARALLEL_CP);
    close_fixture(&f);
    /* GPT-2 learned 1024 positions. */
    fixture g = open_job(0);
    llmem_model_free(g.m);
    cr_assert_eq(llmem_model_new_preset(g.ctx, "openai-community/gpt2", &g.m), LLMEM_OK);
    fail_after_compiled(&g, NULL, 2, 1025, LLMEM_EINCONSISTENT, LLMEM_OBJECT_TRAIN,
                        LLMEM_TRAIN_SEQ);
    close_fixture(&g);
}

/* A NULL array keeps the train's value at every point. */
Test(sweep, null_arrays_keep_the_train_values)
{
    fixture f = open_job(0);
    const int64_t batch[] = { 1, 6, 9 }, seq[] = { 64, 128, 4000 };
    uint64_t by_batch[3], by_seq[3], same[2], want = 0;
    cr_assert_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, batch, NULL, 3, LLMEM_LEVEL_DEVICE,
                                      by_batch),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_assert_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, NULL, seq, 3, LLMEM_LEVEL_DEVICE,
                                      by_seq),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_assert_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, NULL, NULL, 2, LLMEM_LEVEL_DEVICE,
                                      same),
                 LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(f.e, f.m, f.t), LLMEM_OK);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &want);
    /* batch 6 and seq 128 are the train's own */
    cr_expect_eq(by_batch[1], want);
    cr_expect_eq(by_seq[1], want);
    cr_expect_eq(same[0], want);
    cr_expect_eq(same[1], want);
    cr_expect_lt(by_batch[0], by_batch[1], "the peak grows with the batch");
    cr_expect_lt(by_batch[1], by_batch[2]);
    cr_expect_lt(by_seq[0], by_seq[1], "and with the sequence");
    cr_expect_lt(by_seq[1], by_seq[2]);
    close_fixture(&f);
}

/* The failing point: its status, index, values and field; the peaks before it written. */
static void expect_point_fails(fixture *f, const llmem_parallel *l, const int64_t *batch,
                               const int64_t *seq, size_t n, size_t bad, int status, int object,
                               int key)
{
    uint64_t peak[8];
    char prefix[64];
    int o = 0, k = 0;
    cr_assert_leq(n, 8);
    for (size_t i = 0; i < n; i++)
        peak[i] = 0;
    int rc = llmem_estimate_sweep(f->e, f->m, f->t, l, batch, seq, n, LLMEM_LEVEL_DEVICE, peak);
    cr_assert_eq(rc, status, "%s", llmem_ctx_error(f->ctx));
    snprintf(prefix, sizeof prefix, "sweep point %zu (batch %lld, seq %lld): ", bad,
             (long long)batch[bad], (long long)seq[bad]);
    cr_expect_eq(strncmp(llmem_ctx_error(f->ctx), prefix, strlen(prefix)), 0,
                 "message '%s' starts with '%s'", llmem_ctx_error(f->ctx), prefix);
    cr_expect_eq(llmem_ctx_error_field(f->ctx, &o, &k), LLMEM_OK);
    cr_expect_eq(o, object);
    cr_expect_eq(k, key);
    for (size_t i = 0; i < n; i++)
        if (i < bad)
            cr_expect_gt(peak[i], 0, "point %zu before the failure is written", i);
        else
            cr_expect_eq(peak[i], 0, "point %zu from the failure on is not", i);
    cr_expect_eq(train_int(f->t, LLMEM_TRAIN_BATCH), 6, "the train is left unchanged");
}

Test(sweep, a_bad_point_is_named)
{
    fixture f = open_job(0);
    const int64_t batch[] = { 2, 4, 0, 8 }, seq[] = { 64, 64, 64, 64 };
    expect_point_fails(&f, NULL, batch, seq, 4, 2, LLMEM_ERANGE, LLMEM_OBJECT_TRAIN,
                       LLMEM_TRAIN_BATCH);
    const int64_t batch2[] = { 2, 4 }, seq2[] = { 64, -5 };
    expect_point_fails(&f, NULL, batch2, seq2, 2, 1, LLMEM_ERANGE, LLMEM_OBJECT_TRAIN,
                       LLMEM_TRAIN_SEQ);
    /* seq 0 where no row has been made (a row is kept for a seq > 0 only) */
    const int64_t batch5[] = { 2, 3, 4 }, seq5[] = { 64, 128, 0 };
    expect_point_fails(&f, NULL, batch5, seq5, 3, 2, LLMEM_ERANGE, LLMEM_OBJECT_TRAIN,
                       LLMEM_TRAIN_SEQ);
    /* Context parallelism splits a sequence into 2 x cp chunks: 777 does not split. */
    cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_CP, 2), LLMEM_OK);
    const int64_t batch3[] = { 1, 1, 1 }, seq3[] = { 512, 777, 1024 };
    expect_point_fails(&f, f.l, batch3, seq3, 3, 1, LLMEM_EINCONSISTENT, LLMEM_OBJECT_PARALLEL,
                       LLMEM_PARALLEL_CP);
    close_fixture(&f);
    /* GPT-2 learned 1024 positions. */
    fixture g = open_job(0);
    llmem_model_free(g.m);
    cr_assert_eq(llmem_model_new_preset(g.ctx, "openai-community/gpt2", &g.m), LLMEM_OK);
    const int64_t batch4[] = { 1, 1 }, seq4[] = { 1024, 1025 };
    expect_point_fails(&g, NULL, batch4, seq4, 2, 1, LLMEM_EINCONSISTENT, LLMEM_OBJECT_TRAIN,
                       LLMEM_TRAIN_SEQ);
    close_fixture(&g);
}

Test(sweep, bad_arguments)
{
    fixture f = open_job(0);
    const int64_t batch[] = { 1, 2 };
    uint64_t peak[2];
    cr_expect_eq(llmem_estimate_sweep(NULL, f.m, f.t, NULL, batch, NULL, 2, LLMEM_LEVEL_DEVICE,
                                      peak),
                 LLMEM_EINVAL);
    cr_expect_eq(llmem_estimate_sweep(f.e, NULL, f.t, NULL, batch, NULL, 2, LLMEM_LEVEL_DEVICE,
                                      peak),
                 LLMEM_EINVAL);
    cr_expect_eq(llmem_estimate_sweep(f.e, f.m, NULL, NULL, batch, NULL, 2, LLMEM_LEVEL_DEVICE,
                                      peak),
                 LLMEM_EINVAL);
    cr_expect_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, batch, NULL, 2, LLMEM_LEVEL_DEVICE,
                                      NULL),
                 LLMEM_EINVAL);
    cr_expect_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, batch, NULL, 2, 0, peak), LLMEM_EINVAL);
    cr_expect_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, batch, NULL, 2, 4, peak), LLMEM_EINVAL);
    cr_expect_neq(strstr(llmem_ctx_error(f.ctx), "level 4"), NULL, "%s", llmem_ctx_error(f.ctx));
    /* No points: nothing to write, nothing run; the last message cleared. */
    cr_expect_eq(llmem_estimate_sweep(f.e, f.m, f.t, NULL, NULL, NULL, 0, LLMEM_LEVEL_DEVICE,
                                      NULL),
                 LLMEM_OK);
    cr_expect_str_eq(llmem_ctx_error(f.ctx), "");
    close_fixture(&f);
}
