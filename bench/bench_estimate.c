/* SPDX-License-Identifier: MIT */
/*
 * bench_estimate: what does an estimate cost a scheduler that calls it
 * millions of times? Three parts, one run:
 *
 * 1. Throughput (Llama-3.1-8B, bf16-mixed, AdamW): nanoseconds per
 *    llmem_estimate_run() on one reused handle, the best of many short timed
 *    batches (clock_gettime(CLOCK_MONOTONIC); short, so that some escape
 *    preemption on a shared machine): the same setup, sweeps of
 *    batch x seq (with batch 1, seq 1..3 and the chunked loss), the
 *    planner's case (the setup and layout change at every call), a setup
 *    never seen before (nothing cached), and a fresh handle per estimate.
 * 2. No single call slow: over a randomized sweep of every preset and of
 *    setups (seeded, so reproducible), each case on a fresh handle: the
 *    first run, the second run (another batch and seq), a cache miss (another
 *    setup) and a cache hit (that call again), each timed alone. Each case is
 *    repeated and its median kept (one call lasts a few microseconds, less
 *    than a preemption on a shared machine); the worst case is printed, and
 *    the worst raw call too.
 * 3. The peer: EleutherAI's formula (bench/peer_eleutherai.py, re-typed from
 *    calc_transformer_mem.py's published equations) timed in-process by
 *    Python on the same model and setup, next to ours, as a ratio.
 *
 * usage: bench_estimate [seconds per batch, default 0.002] [batches, default 150]
 *                       [cases, default 300] [peer script, default the source's]
 *        bench_estimate --calls LABEL N [PRESET]  (N calls of one configuration, untimed)
 *        bench_estimate --time LABEL N [PRESET]   (the best of N batches of one, ns per estimate)
 *        bench_estimate --presets                 (the preset names)
 *        bench_estimate --instructions [CASES]    (part 2's calls once each, under
 *            callgrind: bench/bench_first_runs.sh prints their instructions)
 */
#define _POSIX_C_SOURCE 200112L

#include <llmem.h>
#ifdef LLMEM_BENCH_CALLGRIND
#include <valgrind/callgrind.h>
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRESET "meta-llama/Llama-3.1-8B"

#ifndef LLMEM_PEER_SCRIPT
#define LLMEM_PEER_SCRIPT "bench/peer_eleutherai.py"
#endif

typedef struct bench {
    llmem_ctx *ctx;
    llmem_model *model;
    llmem_train *train;
    llmem_parallel *layout;
    llmem_estimate *est;
    uint64_t step; /* the sweeps' position */
    int64_t grid_batch[512], grid_seq[512]; /* the sweep grid, for llmem_estimate_sweep */
    uint64_t grid_peak[512];
} bench;

static volatile uint64_t sink; /* keeps results observable */

static void die(llmem_ctx *ctx, const char *what, int rc)
{
    fprintf(stderr, "bench_estimate: %s: %s: %s\n", what, llmem_status_str(rc),
            ctx ? llmem_ctx_error(ctx) : "");
    exit(EXIT_FAILURE);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void set_str(llmem_train *t, llmem_ctx *ctx, int key, const char *value)
{
    int rc = llmem_train_set_str(t, key, value);
    if (rc != LLMEM_OK)
        die(ctx, value, rc);
}

static void set_int(llmem_train *t, llmem_ctx *ctx, int key, int64_t value)
{
    int rc = llmem_train_set_int(t, key, value);
    if (rc != LLMEM_OK)
        die(ctx, "set_int", rc);
}

static void run_checked(bench *b, const llmem_parallel *layout)
{
    uint64_t peak = 0;
    int rc = llmem_estimate_run_parallel(b->est, b->model, b->train, layout);
    if (rc != LLMEM_OK)
        die(b->ctx, "llmem_estimate_run", rc);
    llmem_estimate_get_u64(b->est, LLMEM_EST_PEAK_DEVICE, &peak);
    sink += peak;
}

/* ---- 1. throughput ------------------------------------------------------- */

static void run_same(bench *b)
{
    run_checked(b, NULL);
}

static void run_param_count(bench *b)
{
    uint64_t params = 0;
    int rc = llmem_model_param_count(b->model, &params);
    if (rc != LLMEM_OK)
        die(b->ctx, "llmem_model_param_count", rc);
    sink += params;
}

/* A scheduler's sweep: batch 1..32 x 16 sequence lengths from 1 to 8192
 * (batch 1 and seq 1..3 included), batch moving fastest. */
static const int64_t sweep_seqs[] = { 1, 2, 3, 4, 100, 256, 512, 640, 1000, 1024,
                                      1536, 2048, 3000, 4096, 6144, 8192 };

static void run_sweep(bench *b)
{
    b->step++;
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 1 + (int64_t)(b->step % 32));
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, sweep_seqs[(b->step / 32) % 16]);
    run_checked(b, NULL);
}

/* for batch in 1..32: for seq in (512, 1024, 2048, 4096): seq moving
 * fastest over four values, a column's worth (lib/estimate/cache.h). */
static void run_sweep_seq_fastest(bench *b)
{
    b->step++;
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, (int64_t)512 << (b->step % 4));
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 1 + (int64_t)((b->step / 4) % 32));
    run_checked(b, NULL);
}

/* The grid of run_sweep (512 points, batch fastest) in one call of
 * llmem_estimate_sweep: its time is divided by the points (per_call). */
#define GRID_POINTS 512
static void run_sweep_api(bench *b)
{
    if (b->grid_batch[0] == 0)
        for (int i = 0; i < GRID_POINTS; i++) {
            b->grid_batch[i] = 1 + i % 32;
            b->grid_seq[i] = sweep_seqs[i / 32];
        }
    int rc = llmem_estimate_sweep(b->est, b->model, b->train, NULL, b->grid_batch, b->grid_seq,
                                  GRID_POINTS, LLMEM_LEVEL_DEVICE, b->grid_peak);
    if (rc != LLMEM_OK)
        die(b->ctx, "llmem_estimate_sweep", rc);
    sink += b->grid_peak[GRID_POINTS - 1];
}

/* Batch 1, 512 sequence lengths (what "the longest seq that fits" walks). */
static void run_sweep_batch1(bench *b)
{
    b->step++;
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 1);
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, 4 + (int64_t)((b->step * 37) % 512) * 16);
    run_checked(b, NULL);
}

/* Seq 1..3, batch 1..64. */
static void run_sweep_short(bench *b)
{
    b->step++;
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 1 + (int64_t)(b->step % 64));
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, 1 + (int64_t)((b->step / 64) % 3));
    run_checked(b, NULL);
}

/* The planner's case: the setup and the layout change at every call
 * (80 of them, more than a handle keeps), and the micro-batch with them. */
static const char *const plan_sharding[] = { "none", "zero1", "zero2", "zero3", "fsdp-full" };
static const char *const plan_ckpt[] = { "none", "full" };

static void run_planner(bench *b)
{
    uint64_t k = b->step++ % 80;
    llmem_parallel_set_int(b->layout, LLMEM_PARALLEL_DP, (int64_t)1 << (k % 4));
    llmem_parallel_set_str(b->layout, LLMEM_PARALLEL_SHARDING, plan_sharding[(k / 4) % 5]);
    llmem_parallel_set_int(b->layout, LLMEM_PARALLEL_TP, 1 + (int64_t)((k / 20) % 2));
    set_str(b->train, b->ctx, LLMEM_TRAIN_GRAD_CKPT, plan_ckpt[(k / 40) % 2]);
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 1 + (int64_t)((b->step * 7) % 32));
    run_checked(b, b->layout);
}

/* Nothing cached: a dropout never used before at every call. */
static void run_uncached(bench *b)
{
    b->step++;
    llmem_train_set_double(b->train, LLMEM_TRAIN_DROPOUT, (double)(b->step % 4000000 + 1) * 2e-7);
    run_checked(b, NULL);
}

/* A fresh context and handle per estimate, and the same without the estimate. */
static void run_fresh(bench *b)
{
    llmem_ctx *ctx;
    llmem_estimate *e;
    uint64_t peak = 0;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK || llmem_estimate_new(ctx, &e) != LLMEM_OK)
        die(NULL, "new", LLMEM_ENOMEM);
    if (llmem_estimate_run(e, b->model, b->train) != LLMEM_OK)
        die(ctx, "llmem_estimate_run", LLMEM_EINVAL);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &peak);
    sink += peak;
    llmem_estimate_free(e);
    llmem_ctx_free(ctx);
}

/* A new handle in the same context: its first run, and its first two. */
static void run_first(bench *b)
{
    llmem_estimate *e;
    uint64_t peak = 0;
    if (llmem_estimate_new(b->ctx, &e) != LLMEM_OK)
        die(b->ctx, "llmem_estimate_new", LLMEM_ENOMEM);
    if (llmem_estimate_run(e, b->model, b->train) != LLMEM_OK)
        die(b->ctx, "llmem_estimate_run", LLMEM_EINVAL);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &peak);
    sink += peak;
    llmem_estimate_free(e);
}

static void run_first_two(bench *b)
{
    llmem_estimate *e;
    uint64_t peak = 0;
    if (llmem_estimate_new(b->ctx, &e) != LLMEM_OK)
        die(b->ctx, "llmem_estimate_new", LLMEM_ENOMEM);
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 4);
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, 2048);
    if (llmem_estimate_run(e, b->model, b->train) != LLMEM_OK)
        die(b->ctx, "llmem_estimate_run", LLMEM_EINVAL);
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 8);
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, 1024);
    if (llmem_estimate_run(e, b->model, b->train) != LLMEM_OK)
        die(b->ctx, "llmem_estimate_run", LLMEM_EINVAL);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &peak);
    sink += peak;
    llmem_estimate_free(e);
}

static void run_fresh_empty(bench *b)
{
    llmem_ctx *ctx;
    llmem_estimate *e;
    (void)b;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK || llmem_estimate_new(ctx, &e) != LLMEM_OK)
        die(NULL, "new", LLMEM_ENOMEM);
    sink += (uint64_t)(uintptr_t)e;
    llmem_estimate_free(e);
    llmem_ctx_free(ctx);
}

/* Best nanoseconds per call of fn over `reps` batches of about `seconds`. */
static double time_per_call(bench *b, void (*fn)(bench *), double seconds, int reps)
{
    long n = 1;
    double best = 0, dt;
    for (;;) { /* calibrate and warm up: a batch taking a tenth of the target */
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

typedef struct config {
    const char *label;
    const char *attention, *grad_ckpt, *method, *formula, *loss;
    void (*fn)(bench *);
} config;

static const config configs[] = {
    { "same setup: sdpa (default)", "sdpa", "none", "full", "phased", "upcast", run_same },
    { "same setup: eager", "eager", "none", "full", "phased", "upcast", run_same },
    { "same setup: flash", "flash", "none", "full", "phased", "upcast", run_same },
    { "same setup: flash+ckpt", "flash", "full", "full", "phased", "upcast", run_same },
    { "same setup: lora q,v", "flash", "none", "lora", "phased", "upcast", run_same },
    { "same setup: qlora q,v", "flash", "none", "qlora", "phased", "upcast", run_same },
    /* the article's sum reads no kernel: each at its default, or it is refused */
    { "same setup: article", "sdpa", "none", "full", "article", "upcast", run_same },
    { "sweep batch x seq", "eager", "none", "full", "phased", "upcast", run_sweep },
    { "sweep batch x seq, sdpa", "sdpa", "none", "full", "phased", "upcast", run_sweep },
    { "sweep, 4 seqs fastest", "eager", "none", "full", "phased", "upcast", run_sweep_seq_fastest },
    { "sweep, one sweep call", "eager", "none", "full", "phased", "upcast", run_sweep_api },
    { "sweep, one call, sdpa", "sdpa", "none", "full", "phased", "upcast", run_sweep_api },
    { "sweep batch 1 x seq", "eager", "none", "full", "phased", "upcast", run_sweep_batch1 },
    { "sweep seq 1..3 x batch", "eager", "none", "full", "phased", "upcast", run_sweep_short },
    { "sweep, chunked loss", "flash", "none", "full", "phased", "chunked", run_sweep },
    { "sweep, flash+ckpt", "flash", "full", "full", "phased", "upcast", run_sweep },
    { "planner: new setup+layout", "flash", "none", "full", "phased", "upcast", run_planner },
    { "uncached: never-seen setup", "eager", "none", "full", "phased", "upcast", run_uncached },
    { "new handle: first run", "eager", "none", "full", "phased", "upcast", run_first },
    { "new handle: first two runs", "eager", "none", "full", "phased", "upcast", run_first_two },
    { "fresh ctx+handle+estimate", "eager", "none", "full", "phased", "upcast", run_fresh },
    { "fresh ctx+handle, no run", "eager", "none", "full", "phased", "upcast", run_fresh_empty },
};

#define NCONFIGS (sizeof configs / sizeof configs[0])

/* Estimates a call of the configuration's function makes. */
static double per_call(const config *c)
{
    return c->fn == run_sweep_api ? GRID_POINTS : 1;
}

static void configure(bench *b, const config *c)
{
    set_str(b->train, b->ctx, LLMEM_TRAIN_ATTENTION, c->attention);
    set_str(b->train, b->ctx, LLMEM_TRAIN_GRAD_CKPT, c->grad_ckpt);
    set_str(b->train, b->ctx, LLMEM_TRAIN_METHOD, c->method);
    set_str(b->train, b->ctx, LLMEM_TRAIN_FORMULA, c->formula);
    set_str(b->train, b->ctx, LLMEM_TRAIN_LOSS, c->loss);
    int64_t positions = 0;
    llmem_model_get_int(b->model, LLMEM_MODEL_MAX_POSITIONS, &positions);
    set_int(b->train, b->ctx, LLMEM_TRAIN_BATCH, 4);
    set_int(b->train, b->ctx, LLMEM_TRAIN_SEQ, positions > 0 && positions < 2048 ? positions : 2048);
    /* explicit 0 (Llama's own) keeps the phased model's key fixed; the
     * article's sum reads no dropout and refuses one set */
    llmem_train_set_double(b->train, LLMEM_TRAIN_DROPOUT, strcmp(c->formula, "article") ? 0.0 : -1.0);
    llmem_parallel_set_int(b->layout, LLMEM_PARALLEL_DP, 1);
    llmem_parallel_set_int(b->layout, LLMEM_PARALLEL_TP, 1);
    llmem_parallel_set_str(b->layout, LLMEM_PARALLEL_SHARDING, "none");
    b->step = 0;
}

/* ---- 2. no single call slow ---------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(uint64_t n) /* uniform in [0, n) (splitmix64) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (z ^ (z >> 31)) % n;
}

typedef struct draw {
    const char *precision, *method, *ckpt, *attention, *loss, *optimizer;
    double dropout;
    int64_t batch, seq;
} draw;

static const char *const d_precision[] = { "fp32", "bf16-mixed", "bf16", "fp16-mixed" };
static const char *const d_method[] = { "full", "lora", "qlora", "freeze" };
static const char *const d_ckpt[] = { "none", "reentrant", "full" };
static const char *const d_attention[] = { "eager", "sdpa", "flash" };
static const char *const d_loss[] = { "upcast", "chunked" };
static const char *const d_optimizer[] = { "adamw", "adamw-8bit", "sgd", "adafactor" };
#define PICK(a) (a[rnd(sizeof a / sizeof a[0])])

static draw random_draw(int64_t max_seq)
{
    draw d;
    d.precision = PICK(d_precision);
    d.method = PICK(d_method);
    d.ckpt = PICK(d_ckpt);
    d.attention = PICK(d_attention);
    d.loss = PICK(d_loss);
    d.optimizer = PICK(d_optimizer);
    d.dropout = rnd(2) ? 0.1 : 0.0;
    d.batch = 1 + (int64_t)rnd(rnd(2) ? 4 : 32);
    /* seq: 1..3 one time in four, else log-uniform up to the model's limit */
    d.seq = rnd(4) == 0 ? 1 + (int64_t)rnd(3) : (int64_t)4 << rnd(11);
    if (d.seq > max_seq)
        d.seq = max_seq;
    return d;
}

static void apply_draw(llmem_train *t, const draw *d)
{
    llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, d->precision);
    llmem_train_set_str(t, LLMEM_TRAIN_METHOD, d->method);
    llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, !strcmp(d->method, "freeze") ? 1 : 0);
    llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, d->ckpt);
    llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, d->attention);
    llmem_train_set_str(t, LLMEM_TRAIN_LOSS, d->loss);
    llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER, d->optimizer);
    llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, d->dropout);
    llmem_train_set_int(t, LLMEM_TRAIN_BATCH, d->batch);
    llmem_train_set_int(t, LLMEM_TRAIN_SEQ, d->seq);
}

enum { FIRST, SECOND, MISS, HIT, KINDS };
static const char *const kind_name[KINDS] = { "first run", "second run", "cache miss",
                                              "cache hit" };

/* --instructions: part 2 calls each estimate once, between callgrind's
 * zeroing of its counters and a dump named after the call (instructions
 * are what a machine's load does not change: docs/benchmarks.md). */
static int count_instructions;

static double time_call(llmem_estimate *e, llmem_model *m, llmem_train *t, int *rc,
                        const char *name)
{
    double t0 = now_ns(), dt;
#ifdef LLMEM_BENCH_CALLGRIND
    if (count_instructions) {
        /* named before the count starts: the snprintf is not the call's */
        char refused[260]; /* part 2 skips the case: so does bench_first_runs.sh */
        snprintf(refused, sizeof refused, "refused %s", name);
        CALLGRIND_ZERO_STATS;
        *rc = llmem_estimate_run(e, m, t);
        CALLGRIND_DUMP_STATS_AT(*rc == LLMEM_OK ? name : refused);
    } else
#endif
    {
        (void)name;
        *rc = llmem_estimate_run(e, m, t);
    }
    dt = now_ns() - t0;
    uint64_t peak = 0;
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &peak);
    sink += peak;
    return dt;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPEATS 5

/* "preset precision method ckpt=... attention loss optimizer bB sS" of call kind k. */
static void describe(char *buf, size_t cap, const char *preset, int k, const draw *d1,
                     const draw *d2, int64_t b2, int64_t s2)
{
    const draw *d = k < MISS ? d1 : d2;
    snprintf(buf, cap, "%s %s %s ckpt=%s %s %s %s b%" PRId64 " s%" PRId64, preset, d->precision,
             d->method, d->ckpt, d->attention, d->loss, d->optimizer,
             k == FIRST ? d1->batch : k == SECOND ? b2 : d2->batch,
             k == FIRST ? d1->seq : k == SECOND ? s2 : d2->seq);
}

typedef struct worst {
    double ns;
    char what[200];
} worst;

/* Part 2's table: per call kind, the median, p90, p99 and worst of the
 * cases' medians (sorted here), the share over 3 us and the worst raw call. */
static void print_latencies(double *med[KINDS], const worst *w, const worst *raw, int n,
                            size_t npresets, int skipped)
{
    printf("\n2. No single call slow: %d cases of %zu presets x random setups (seeded), each "
           "on a fresh handle, %d times (median kept); %d refused combinations skipped\n",
           n, npresets, REPEATS, skipped);
    printf("%-12s %9s %9s %9s %9s %9s %9s  %s\n", "call", "median", "p90", "p99", "worst",
           "over 3u", "raw worst", "worst case");
    for (int k = 0; k < KINDS && n > 0; k++) {
        int over = 0; /* cases over the 3 us bound (#13) */
        qsort(med[k], (size_t)n, sizeof med[k][0], cmp_double);
        while (over < n && med[k][n - 1 - over] > 3e3)
            over++;
        printf("%-12s %8.2fu %8.2fu %8.2fu %8.2fu %8.1f%% %8.2fu  %s\n", kind_name[k],
               med[k][n / 2] / 1e3, med[k][(n * 9) / 10] / 1e3, med[k][(n * 99) / 100] / 1e3,
               w[k].ns / 1e3, 100.0 * over / n, raw[k].ns / 1e3, w[k].what);
    }
    printf("(u = microseconds; \"worst\" is the largest per-case median, \"over 3u\" the "
           "share of cases whose median is over 3 us, \"raw worst\" the largest single call, "
           "preemption included)\n");
}

static void latency_sweep(llmem_ctx *ctx, int cases)
{
    size_t npresets = llmem_preset_count();
    double *med[KINDS];
    worst w[KINDS], raw[KINDS];
    int n = 0, skipped = 0;
    for (int k = 0; k < KINDS; k++) {
        med[k] = malloc((size_t)cases * sizeof *med[k]);
        w[k].ns = raw[k].ns = 0;
    }
    llmem_train *t1, *t2;
    if (llmem_train_new(ctx, &t1) != LLMEM_OK || llmem_train_new(ctx, &t2) != LLMEM_OK)
        die(ctx, "llmem_train_new", LLMEM_ENOMEM);
    for (int c = 0; c < cases; c++) {
        const char *preset = llmem_preset_name(rnd(npresets));
        llmem_model *m;
        int64_t max_seq = 0;
        if (llmem_model_new_preset(ctx, preset, &m) != LLMEM_OK)
            die(ctx, preset, LLMEM_EINVAL);
        llmem_model_get_int(m, LLMEM_MODEL_MAX_POSITIONS, &max_seq);
        if (max_seq <= 0 || max_seq > 8192)
            max_seq = 8192;
        draw d1 = random_draw(max_seq), d2 = random_draw(max_seq);
        int64_t b2 = 1 + (int64_t)rnd(16), s2 = d1.seq > 4 ? d1.seq / 2 : d1.seq + 1;
        double times[KINDS][REPEATS];
        char name[KINDS][240];
        int ok = 1;
        for (int k = 0; k < KINDS; k++) { /* a callgrind dump's name: "#case kind: what" */
            int len = snprintf(name[k], sizeof name[k], "#%d %s: ", c, kind_name[k]);
            describe(name[k] + len, sizeof name[k] - (size_t)len, preset, k, &d1, &d2, b2, s2);
        }
        for (int r = 0; r < (count_instructions ? 1 : REPEATS) && ok; r++) {
            llmem_estimate *e;
            int rc[KINDS];
            if (llmem_estimate_new(ctx, &e) != LLMEM_OK)
                die(ctx, "llmem_estimate_new", LLMEM_ENOMEM);
            apply_draw(t1, &d1);
            apply_draw(t2, &d2);
            times[FIRST][r] = time_call(e, m, t1, &rc[FIRST], name[FIRST]);
            llmem_train_set_int(t1, LLMEM_TRAIN_BATCH, b2);
            llmem_train_set_int(t1, LLMEM_TRAIN_SEQ, s2);
            times[SECOND][r] = time_call(e, m, t1, &rc[SECOND], name[SECOND]);
            times[MISS][r] = time_call(e, m, t2, &rc[MISS], name[MISS]);
            times[HIT][r] = time_call(e, m, t2, &rc[HIT], name[HIT]);
            llmem_estimate_free(e);
            for (int k = 0; k < KINDS; k++)
                ok &= rc[k] == LLMEM_OK;
        }
        if (!ok) { /* a combination the estimate refuses (QLoRA in fp32, ...) */
            skipped++;
            llmem_model_free(m);
            continue;
        }
        if (count_instructions) {
            n++;
            llmem_model_free(m);
            continue;
        }
        for (int k = 0; k < KINDS; k++) {
            qsort(times[k], REPEATS, sizeof times[k][0], cmp_double);
            med[k][n] = times[k][REPEATS / 2];
            if (med[k][n] > w[k].ns || times[k][REPEATS - 1] > raw[k].ns) {
                char what[200];
                describe(what, sizeof what, preset, k, &d1, &d2, b2, s2);
                if (med[k][n] > w[k].ns) {
                    w[k].ns = med[k][n];
                    snprintf(w[k].what, sizeof w[k].what, "%s", what);
                }
                if (times[k][REPEATS - 1] > raw[k].ns) {
                    raw[k].ns = times[k][REPEATS - 1];
                    snprintf(raw[k].what, sizeof raw[k].what, "%s", what);
                }
            }
        }
        n++;
        llmem_model_free(m);
    }
    if (count_instructions) /* nothing timed */
        printf("%d cases, %d refused combinations skipped: each call a callgrind dump\n", n,
               skipped);
    else
        print_latencies(med, w, raw, n, npresets, skipped);
    for (int k = 0; k < KINDS; k++)
        free(med[k]);
    llmem_train_free(t1);
    llmem_train_free(t2);
}

/* ---- 3. the peer --------------------------------------------------------- */

static int peer_ns(const char *script, double seconds, int reps, double *ns, double *gib)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 '%s' %.4f %d 2>/dev/null", script, seconds * 5, reps);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return 0;
    int ok = fscanf(p, "eleutherai %lf %lf", ns, gib) == 2;
    return pclose(p) == 0 && ok;
}

/* bench_estimate --calls LABEL N: N calls of one configuration and nothing
 * else, for an instruction count (bench/bench_instructions.sh). */
static int calls_only(bench *b, const char *label, long n)
{
    for (size_t i = 0; i < NCONFIGS; i++)
        if (strcmp(configs[i].label, label) == 0) {
            configure(b, &configs[i]);
            for (long k = 0; k < n; k++)
                configs[i].fn(b);
            return EXIT_SUCCESS;
        }
    fprintf(stderr, "bench_estimate: no configuration \"%s\"\n", label);
    return EXIT_FAILURE;
}

/* bench_estimate --time LABEL N: the best of N batches of one configuration,
 * in ns per estimate (to compare two builds configuration by configuration). */
static int time_only(bench *b, const char *label, long n)
{
    for (size_t i = 0; i < NCONFIGS; i++)
        if (strcmp(configs[i].label, label) == 0) {
            configure(b, &configs[i]);
            printf("%-28s %8.1f ns\n", label,
                   time_per_call(b, configs[i].fn, 0.002, (int)n) / per_call(&configs[i]));
            return EXIT_SUCCESS;
        }
    fprintf(stderr, "bench_estimate: no configuration \"%s\"\n", label);
    return EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    bench b;
    int timed = (argc == 4 || argc == 5) && strcmp(argv[1], "--time") == 0;
    int calls = ((argc == 4 || argc == 5) && strcmp(argv[1], "--calls") == 0) || timed;
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "--instructions") == 0) {
#ifdef LLMEM_BENCH_CALLGRIND
        llmem_ctx *ctx;
        int cases = argc == 3 ? atoi(argv[2]) : 300;
        if (cases <= 0 || llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
            fprintf(stderr, "usage: bench_estimate --instructions [CASES > 0]\n");
            return EXIT_FAILURE;
        }
        count_instructions = 1;
        latency_sweep(ctx, cases);
        llmem_ctx_free(ctx);
        return EXIT_SUCCESS;
#else
        fprintf(stderr, "bench_estimate: built without valgrind/callgrind.h\n");
        return EXIT_FAILURE;
#endif
    }
    if (argc == 2 && strcmp(argv[1], "--presets") == 0) {
        for (size_t i = 0; i < llmem_preset_count(); i++)
            printf("%s\n", llmem_preset_name(i));
        return EXIT_SUCCESS;
    }
    double seconds = argc > 1 && !calls ? atof(argv[1]) : 0.002;
    int reps = argc > 2 && !calls ? atoi(argv[2]) : 150;
    int cases = argc > 3 && !calls ? atoi(argv[3]) : 300;
    const char *script = argc > 4 ? argv[4] : LLMEM_PEER_SCRIPT;
    double per[NCONFIGS];
    int rc;
    if (seconds <= 0 || reps <= 0 || cases <= 0) {
        fprintf(stderr, "usage: bench_estimate [seconds per batch] [batches] [cases] [peer]\n");
        return EXIT_FAILURE;
    }
    memset(&b, 0, sizeof b);
    if ((rc = llmem_ctx_new(&b.ctx, NULL)) != LLMEM_OK)
        die(NULL, "llmem_ctx_new", rc);
    if ((rc = llmem_model_new_preset(b.ctx, calls && argc == 5 ? argv[4] : PRESET, &b.model)) !=
            LLMEM_OK ||
        (rc = llmem_train_new(b.ctx, &b.train)) != LLMEM_OK ||
        (rc = llmem_parallel_new(b.ctx, &b.layout)) != LLMEM_OK ||
        (rc = llmem_estimate_new(b.ctx, &b.est)) != LLMEM_OK)
        die(b.ctx, "new", rc);
    set_str(b.train, b.ctx, LLMEM_TRAIN_PRECISION, "bf16-mixed");
    if (calls) {
        rc = timed ? time_only(&b, argv[2], atol(argv[3])) : calls_only(&b, argv[2], atol(argv[3]));
        llmem_estimate_free(b.est);
        llmem_parallel_free(b.layout);
        llmem_train_free(b.train);
        llmem_model_free(b.model);
        llmem_ctx_free(b.ctx);
        return rc;
    }

    printf("libllmem %s, %s, bf16-mixed, AdamW, batch 4 x seq 2048 unless swept\n",
           llmem_version_string(), PRESET);
    printf("1. Throughput: best of %d batches of ~%.3f s, one thread\n", reps, seconds);
    configure(&b, &configs[0]);
    double base = time_per_call(&b, run_param_count, seconds, reps);
    printf("%-28s %12s %12s\n", "configuration", "ns/estimate", "estimates/s");
    printf("%-28s %12.1f %12.0f\n", "param_count (baseline)", base, 1e9 / base);
    for (size_t i = 0; i < NCONFIGS; i++) {
        configure(&b, &configs[i]);
        per[i] = time_per_call(&b, configs[i].fn, seconds, reps) / per_call(&configs[i]);
        printf("%-28s %12.1f %12.0f\n", configs[i].label, per[i], 1e9 / per[i]);
    }

    latency_sweep(b.ctx, cases);

    double peer = 0, gib = 0;
    printf("\n3. The peer: EleutherAI's calc_transformer_mem.py formula (%s), "
           "Python, timed in-process\n", script);
    if (!peer_ns(script, seconds, reps, &peer, &gib)) {
        printf("   not run (python3 or the script is missing)\n");
    } else {
        static const char *const rows[] = { "uncached: never-seen setup",
                                            "planner: new setup+layout",
                                            "same setup: sdpa (default)",
                                            "sweep batch x seq, sdpa",
                                            "sweep, one call, sdpa" };
        uint64_t ours = 0;
        configure(&b, &configs[0]);
        run_checked(&b, NULL);
        llmem_estimate_get_u64(b.est, LLMEM_EST_PEAK_ALLOCATED, &ours);
        printf("   its total for this job: %.2f GiB (a sum of terms); ours, the phased peak: "
               "%.2f GiB\n", gib, (double)ours / 1073741824.0);
        printf("%-28s %12s %12s %8s\n", "ours", "ns/estimate", "peer ns", "peer/ours");
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            for (size_t k = 0; k < NCONFIGS; k++)
                if (strcmp(configs[k].label, rows[i]) == 0)
                    printf("%-28s %12.1f %12.1f %7.1fx\n", rows[i], per[k], peer, peer / per[k]);
    }

    llmem_estimate_free(b.est);
    llmem_parallel_free(b.layout);
    llmem_train_free(b.train);
    llmem_model_free(b.model);
    llmem_ctx_free(b.ctx);
    return sink == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
