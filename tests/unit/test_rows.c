/* SPDX-License-Identifier: MIT */
/*
 * A sweep's rows (llmem_estimate_row, lib/estimate/estimate.h): every batch a
 * row answers is exactly its own run's peak, at every level, from batch 2 to
 * the row's last (the step's bound or the batch field's range) and around
 * each batch where its peak turns from one line to another; the batch
 * after the last is answered by neither; a row keeps fewer lines than its
 * walk has moments; and a row is refused where its points cannot be lines
 * (several ranks, a fused loss, a seq that fails a check).
 */
#include "estimate/estimate.h"
#include "job_fixture.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *preset, *method, *ckpt, *attention, *loss, *sharding;
    int64_t dp, tp, pp, cp;
    int rows; /* whether its rows may be made */
} jobs[] = {
    { "meta-llama/Llama-3.2-1B", "full", "none", "sdpa", "upcast", "none", 1, 1, 1, 1, 1 },
    { "google/gemma-2-9b", "freeze", "reentrant", "eager", "upcast", "none", 1, 1, 1, 1, 1 },
    { "Qwen/Qwen2.5-7B", "qlora", "full", "flash", "upcast", "none", 1, 1, 1, 1, 1 },
    { "openai-community/gpt2", "lora", "none", "eager", "upcast", "none", 1, 1, 1, 1, 1 },
    { "microsoft/Phi-3-mini-4k-instruct", "full", "full", "sdpa", "upcast", "none", 1, 1, 1, 1, 1 },
#ifdef LLMEM_TEST_HF_CONFIGS
    { "Mixtral-8x7B-v0.1", "lora", "none", "sdpa", "upcast", "none", 1, 1, 1, 1, 1 },
    { "DeepSeek-V2-Lite", "full", "full", "eager", "upcast", "none", 1, 1, 1, 1, 1 },
#endif
    { "meta-llama/Llama-3.1-8B", "full", "none", "sdpa", "upcast", "zero3", 8, 2, 1, 2, 1 },
    { "meta-llama/Llama-3.2-1B", "full", "none", "sdpa", "chunked", "none", 1, 1, 1, 1, 0 },
    { "meta-llama/Llama-3.1-8B", "full", "full", "flash", "upcast", "fsdp-full", 2, 1, 2, 1, 0 },
};
#define JOBS (sizeof jobs / sizeof jobs[0])

static const uint64_t seqs[] = { 1, 2, 3, 4, 100, 1024, 1025, 4096, 1 << 17 };
#define SEQS (sizeof seqs / sizeof seqs[0])

static const int level_keys[] = { LLMEM_EST_PEAK_ALLOCATED, LLMEM_EST_PEAK_RESERVED,
                                  LLMEM_EST_PEAK_DEVICE };

/* A preset, or a real config (a name without an owner). */
static fixture open_job(const char *name)
{
    if (strchr(name, '/') != NULL)
        return open_job_handles(name);
    fixture f = open_handles();
#ifdef LLMEM_TEST_HF_CONFIGS
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.json", LLMEM_TEST_HF_CONFIGS, name);
    cr_assert_eq(llmem_model_new_hf_config(f.ctx, path, &f.m), LLMEM_OK, "%s: %s", path,
                 llmem_ctx_error(f.ctx));
#endif
    return f;
}

static void set_job(llmem_train *t, llmem_parallel *l, size_t j)
{
    set_train_kind(t, jobs[j].method, jobs[j].ckpt, jobs[j].attention, jobs[j].loss);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_DP, jobs[j].dp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_TP, jobs[j].tp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_PP, jobs[j].pp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_CP, jobs[j].cp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, jobs[j].sharding), LLMEM_OK);
}

/* The peaks of a run of its own at (batch, seq) on a new handle: LLMEM_OK and
 * want[level - 1], or the run's status. */
static int own_run(fixture *f, int64_t batch, int64_t seq, uint64_t want[3])
{
    llmem_estimate *own;
    int rc = llmem_train_set_int(f->t, LLMEM_TRAIN_BATCH, batch);
    if (rc != LLMEM_OK) /* past the field's range */
        return rc;
    cr_assert_eq(llmem_train_set_int(f->t, LLMEM_TRAIN_SEQ, seq), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(f->ctx, &own), LLMEM_OK);
    rc = llmem_estimate_run_parallel(own, f->m, f->t, f->l);
    for (int k = 0; rc == LLMEM_OK && k < 3; k++)
        llmem_estimate_get_u64(own, level_keys[k], &want[k]);
    llmem_estimate_free(own);
    return rc;
}

/* The batches a row of last batch hi is checked at: 2..40, a few on the way,
 * and the last four. */
static int row_batches(uint64_t hi, uint64_t *out)
{
    int n = 0;
    for (uint64_t b = 2; b <= 40 && b <= hi; b++)
        out[n++] = b;
    for (uint64_t b = 64; b < hi - 4 && hi > 4; b *= 8)
        out[n++] = b + 3;
    for (uint64_t b = hi > 44 ? hi - 3 : 41; b <= hi; b++)
        out[n++] = b;
    return n;
}

Test(rows, each_batch_of_a_row_is_its_run)
{
    int made = 0, thinned = 0, bent = 0;
    for (size_t j = 0; j < JOBS; j++) {
        fixture f = open_job(jobs[j].preset);
        set_job(f.t, f.l, j);
        /* Compile the job's walks: a grid swept three times. */
        int64_t gb[4 * SEQS], gs[4 * SEQS];
        uint64_t gp[4 * SEQS];
        size_t g = 0;
        for (size_t i = 0; i < SEQS; i++)
            for (int64_t b = 2; b < 6; b++)
                if (own_run(&f, b, (int64_t)seqs[i], (uint64_t[3]){ 0 }) == LLMEM_OK) {
                    gb[g] = b;
                    gs[g++] = (int64_t)seqs[i];
                }
        for (int pass = 0; pass < 3; pass++)
            cr_assert_eq(llmem_estimate_sweep(f.e, f.m, f.t, f.l, gb, gs, g, LLMEM_LEVEL_DEVICE,
                                              gp),
                         LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
        for (size_t i = 0; i < SEQS; i++) {
            uint64_t seq = seqs[i], want[3];
            est_job job;
            est_row row;
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, 2), LLMEM_OK);
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, (int64_t)seq), LLMEM_OK);
            int runs = llmem_estimate_run_job(f.e, f.m, f.t, f.l, &job) == LLMEM_OK;
            uint64_t alone = 0;
            int compiled = runs && llmem_estimate_point(f.e, &job, 3, seq, LLMEM_LEVEL_DEVICE,
                                                        &alone);
            if (!runs || !llmem_estimate_row(f.e, &job, seq, &row)) {
                /* Refused: a job whose points are not lines, a seq no run
                 * takes, a walk not compiled (its points run). */
                cr_expect(!jobs[j].rows || !compiled, "%s %s seq %llu: no row", jobs[j].preset,
                          jobs[j].method, (unsigned long long)seq);
                continue;
            }
            cr_expect(jobs[j].rows, "%s %s: a row where its points are not lines",
                      jobs[j].preset, jobs[j].loss);
            made++;
            const walk_form *w = llmem_walk_form(&f.e->walk, 2, job.rc.run.seq);
            cr_assert(row.n >= 1 && row.n <= w->n);
            thinned += row.n < w->n;
            uint64_t batches[80 + 4 * WALK_TERMS];
            int n = row_batches(row.hi, batches);
            /* Around each batch where the envelope turns to another line. */
            bent += row.n > 1;
            for (int k = 0; k + 1 < row.n; k++)
                for (uint64_t b = row.until[k] - 1; b <= row.until[k] + 2; b++)
                    if (b >= 2 && b <= row.hi)
                        batches[n++] = b;
            for (int k = 0; k < n; k++) {
                int64_t b = (int64_t)batches[k];
                cr_assert_eq(own_run(&f, b, (int64_t)seq, want), LLMEM_OK,
                             "%s seq %llu batch %lld of the row (last %llu): %s", jobs[j].preset,
                             (unsigned long long)seq, (long long)b, (unsigned long long)row.hi,
                             llmem_ctx_error(f.ctx));
                for (int level = LLMEM_LEVEL_ALLOCATED; level <= LLMEM_LEVEL_DEVICE; level++) {
                    uint64_t got = 0;
                    cr_assert(llmem_row_peak(&row, (uint64_t)b, level, &got));
                    cr_expect_eq(got, want[level - 1],
                                 "%s %s seq %llu batch %lld level %d: %llu != %llu",
                                 jobs[j].preset, jobs[j].method, (unsigned long long)seq,
                                 (long long)b, level, (unsigned long long)got,
                                 (unsigned long long)want[level - 1]);
                }
            }
            /* Past the last batch: the step's bound (or the field's range) refuses the run. */
            uint64_t got = 0;
            cr_expect(!llmem_row_peak(&row, row.hi + 1, LLMEM_LEVEL_DEVICE, &got));
            cr_expect(!llmem_row_peak(&row, 1, LLMEM_LEVEL_DEVICE, &got));
            int past = own_run(&f, (int64_t)row.hi + 1, (int64_t)seq, want);
            cr_expect(past == LLMEM_EOVERFLOW || past == LLMEM_ERANGE,
                      "%s seq %llu: batch %llu after the row's last runs (%d)", jobs[j].preset,
                      (unsigned long long)seq, (unsigned long long)row.hi + 1, past);
        }
        close_fixture(&f);
    }
    cr_expect_geq(made, 40, "rows made: %d", made);
    cr_expect_geq(bent, 1, "rows whose peak turns from one line to another: %d", bent);
    fprintf(stderr, "rows: %d made, %d bent\n", made, bent);
    cr_expect_geq(thinned, made / 2, "rows with fewer lines than moments: %d of %d", thinned,
                  made);
}
