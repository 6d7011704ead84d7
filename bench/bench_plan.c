/* SPDX-License-Identifier: MIT */
/*
 * bench_plan: how long does the planner take to search every layout of a
 * job over a cluster? For a few (model, GPUs) pairs on 80 GiB GPUs, flash
 * attention, bf16-mixed AdamW, it times llmem_plan_run() (best of a few runs,
 * clock_gettime(CLOCK_MONOTONIC)) and prints the layouts tried, the layouts
 * that fit and the estimates per second that implies.
 *
 * usage: bench_plan [repetitions, default 3]
 */
#define _POSIX_C_SOURCE 200112L

#include <llmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const struct {
    const char *model;
    int gpus, seq;
} jobs[] = {
    { "meta-llama/Llama-3.1-8B", 8, 4096 },
    { "meta-llama/Llama-3.1-70B", 64, 4096 },
    { "meta-llama/Llama-3.1-405B", 1024, 8192 },
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    llmem_ctx *ctx = NULL;
    if (reps < 1 || llmem_ctx_new(&ctx, NULL) != LLMEM_OK)
        return 1;
    printf("%-28s %6s %9s %9s %10s\n", "model", "GPUs", "layouts", "fitting", "seconds");
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
        llmem_model *m = NULL;
        llmem_train *t = NULL;
        llmem_plan *p = NULL;
        double best = 1e9;
        if (llmem_model_new_preset(ctx, jobs[j].model, &m) != LLMEM_OK ||
            llmem_train_new(ctx, &t) != LLMEM_OK || llmem_plan_new(ctx, &p) != LLMEM_OK)
            return 1;
        llmem_train_set_int(t, LLMEM_TRAIN_SEQ, jobs[j].seq);
        llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, "flash");
        llmem_plan_set_int(p, LLMEM_PLAN_GPUS, jobs[j].gpus);
        llmem_plan_set_int(p, LLMEM_PLAN_GPU_BYTES, INT64_C(80) << 30);
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            if (llmem_plan_run(p, m, t) != LLMEM_OK) {
                fprintf(stderr, "%s\n", llmem_ctx_error(ctx));
                return 1;
            }
            double dt = now() - t0;
            if (dt < best)
                best = dt;
        }
        uint64_t rejected = 0;
        for (size_t i = 0; i < llmem_plan_rejected_count(p); i++) {
            uint64_t n = 0;
            llmem_plan_rejected(p, i, NULL, &n, NULL);
            rejected += n;
        }
        size_t fit = llmem_plan_result_count(p);
        printf("%-28s %6d %9llu %9zu %10.3f\n", jobs[j].model, jobs[j].gpus,
               (unsigned long long)(fit + rejected), fit, best);
        llmem_plan_free(p);
        llmem_train_free(t);
        llmem_model_free(m);
    }
    llmem_ctx_free(ctx);
    return 0;
}
