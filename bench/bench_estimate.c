/* SPDX-License-Identifier: MIT */
/*
 * bench_estimate: how many estimates per second can a scheduler get from one
 * reused llmem_estimate handle?
 *
 * For a few training setups of Llama-3.1-8B (bf16-mixed, batch 4, seq 2048:
 * eager vs flash attention, gradient checkpointing, LoRA, QLoRA, the
 * article's formula) it times llmem_estimate_run() in a loop with
 * clock_gettime(CLOCK_MONOTONIC), and, as a baseline in the same process,
 * llmem_model_param_count() alone (model validation and the exact parameter
 * count, which every estimate also does). Each figure is the best of
 * many short repetitions of a timed batch of calls: on a shared, noisy
 * machine the minimum is the figure least inflated by preemption.
 *
 * A handle that sees the same model and setup again reuses what does not
 * depend on batch and seq (lib/estimate/compiled.c): the fixed setups and the
 * batch x seq sweep measure that path; "new setup every call" changes the
 * setup at each call and measures a full simulation.
 *
 * usage: bench_estimate [seconds per repetition, default 0.02] [repetitions, default 25]
 */
#define _POSIX_C_SOURCE 200112L

#include <llmem.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PRESET "meta-llama/Llama-3.1-8B"

typedef struct config {
    const char *label;
    const char *attention, *grad_ckpt, *method, *formula;
} config;

static const config configs[] = {
    { "eager attention", "eager", "none", "full", "phased" },
    { "flash attention", "flash", "none", "full", "phased" },
    { "flash + grad-ckpt", "flash", "full", "full", "phased" },
    { "lora r=8 q,v (flash)", "flash", "none", "lora", "phased" },
    { "qlora r=8 q,v (flash)", "flash", "none", "qlora", "phased" },
    { "article formula", "eager", "none", "full", "article" },
};

typedef struct bench {
    llmem_ctx *ctx;
    llmem_model *model;
    llmem_train *train;
    llmem_estimate *est;
    unsigned step; /* the sweeps' position */
} bench;

static volatile uint64_t sink; /* keeps results observable */

static void die(const bench *b, const char *what, int rc)
{
    fprintf(stderr, "bench_estimate: %s: %s: %s\n", what, llmem_status_str(rc),
            llmem_ctx_error(b->ctx));
    exit(EXIT_FAILURE);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void run_estimate(bench *b)
{
    uint64_t peak = 0;
    int rc = llmem_estimate_run(b->est, b->model, b->train);
    if (rc != LLMEM_OK)
        die(b, "llmem_estimate_run", rc);
    llmem_estimate_get_u64(b->est, LLMEM_EST_PEAK_ALLOCATED, &peak);
    sink += peak;
}

/* A scheduler's sweep: batch 2..33 and four sequence lengths, same model and
 * setup, so the handle's compiled segments serve every call. */
static void run_sweep(bench *b)
{
    static const int64_t seqs[] = { 512, 1024, 2048, 4096 };
    b->step++;
    llmem_train_set_int(b->train, LLMEM_TRAIN_BATCH, 2 + (int64_t)(b->step % 32));
    llmem_train_set_int(b->train, LLMEM_TRAIN_SEQ, seqs[(b->step / 32) % 4]);
    run_estimate(b);
}

/* The worst case: the setup changes at every call (dropout on, off), so
 * every estimate simulates its segments from scratch. */
static void run_uncached(bench *b)
{
    b->step++;
    llmem_train_set_double(b->train, LLMEM_TRAIN_DROPOUT, b->step % 2 ? 0.1 : 0.0);
    run_estimate(b);
}

static void run_param_count(bench *b)
{
    uint64_t params = 0;
    int rc = llmem_model_param_count(b->model, &params);
    if (rc != LLMEM_OK)
        die(b, "llmem_model_param_count", rc);
    sink += params;
}

/* Best nanoseconds per call of fn over `reps` batches of about `seconds`. */
static double time_per_call(bench *b, void (*fn)(bench *), double seconds, int reps)
{
    long n = 1;
    double best = 0, dt;
    /* Calibrate (and warm up): grow the batch until it takes a tenth of the
     * target, then scale it to the target. */
    for (;;) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++)
            fn(b);
        dt = now_ns() - t0;
        if (dt > seconds * 1e8 || n > (1L << 40))
            break;
        n *= 2;
    }
    n = (long)((double)n * seconds * 1e9 / dt) + 1;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++)
            fn(b);
        double per = (now_ns() - t0) / (double)n;
        if (r == 0 || per < best)
            best = per;
    }
    return best;
}

static void set_str(bench *b, int key, const char *value)
{
    int rc = llmem_train_set_str(b->train, key, value);
    if (rc != LLMEM_OK)
        die(b, value, rc);
}

int main(int argc, char **argv)
{
    bench b = { NULL, NULL, NULL, NULL, 0 };
    double seconds = argc > 1 ? atof(argv[1]) : 0.02;
    int reps = argc > 2 ? atoi(argv[2]) : 25;
    int rc;
    if (seconds <= 0 || reps <= 0) {
        fprintf(stderr, "usage: bench_estimate [seconds per repetition] [repetitions]\n");
        return EXIT_FAILURE;
    }

    if ((rc = llmem_ctx_new(&b.ctx, NULL)) != LLMEM_OK)
        die(&b, "llmem_ctx_new", rc);
    if ((rc = llmem_model_new_preset(b.ctx, PRESET, &b.model)) != LLMEM_OK)
        die(&b, "llmem_model_new_preset", rc);
    if ((rc = llmem_train_new(b.ctx, &b.train)) != LLMEM_OK)
        die(&b, "llmem_train_new", rc);
    if ((rc = llmem_estimate_new(b.ctx, &b.est)) != LLMEM_OK)
        die(&b, "llmem_estimate_new", rc);
    set_str(&b, LLMEM_TRAIN_PRECISION, "bf16-mixed");
    if ((rc = llmem_train_set_int(b.train, LLMEM_TRAIN_BATCH, 4)) != LLMEM_OK ||
        (rc = llmem_train_set_int(b.train, LLMEM_TRAIN_SEQ, 2048)) != LLMEM_OK)
        die(&b, "batch/seq", rc);

    printf("libllmem %s, %s, bf16-mixed, AdamW, batch 4 x seq 2048\n", llmem_version_string(),
           PRESET);
    printf("best of %d repetitions of ~%.2f s each, one reused handle, one thread\n\n", reps,
           seconds);

    double base = time_per_call(&b, run_param_count, seconds, reps);
    printf("%-24s %14s %12s %10s\n", "configuration", "estimates/s", "ns/estimate",
           "x count");
    printf("%-24s %14.0f %12.1f %10s\n", "param_count (baseline)", 1e9 / base, base, "1.0");

    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        const config *c = &configs[i];
        set_str(&b, LLMEM_TRAIN_ATTENTION, c->attention);
        set_str(&b, LLMEM_TRAIN_GRAD_CKPT, c->grad_ckpt);
        set_str(&b, LLMEM_TRAIN_METHOD, c->method);
        set_str(&b, LLMEM_TRAIN_FORMULA, c->formula);
        double per = time_per_call(&b, run_estimate, seconds, reps);
        printf("%-24s %14.0f %12.1f %10.1f\n", c->label, 1e9 / per, per, per / base);
    }
    set_str(&b, LLMEM_TRAIN_ATTENTION, "eager");
    set_str(&b, LLMEM_TRAIN_GRAD_CKPT, "none");
    set_str(&b, LLMEM_TRAIN_METHOD, "full");
    set_str(&b, LLMEM_TRAIN_FORMULA, "phased");
    double per = time_per_call(&b, run_sweep, seconds, reps);
    printf("%-24s %14.0f %12.1f %10.1f\n", "sweep batch x seq", 1e9 / per, per, per / base);
    per = time_per_call(&b, run_uncached, seconds, reps);
    printf("%-24s %14.0f %12.1f %10.1f\n", "new setup every call", 1e9 / per, per, per / base);

    llmem_estimate_free(b.est);
    llmem_train_free(b.train);
    llmem_model_free(b.model);
    llmem_ctx_free(b.ctx);
    return sink == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
