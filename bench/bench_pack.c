/* SPDX-License-Identifier: MIT */
/*
 * bench_pack: how fast llmem_pack_run() packs generated job sets, and how
 * far each result is from its proven lower bound.
 *
 *     bench_pack [JOBS]        (default 10000)
 *
 * Each scenario draws JOBS jobs from a fixed seed (the same every run): a
 * memory need uniform in [1, MAX] GiB, and in the "compute" scenarios one job
 * in five asking for 0-3 compute slices. It prints the wall time of the run
 * (best of 3), the GPUs used, the lower bound and the gap in percent, the
 * jobs placed and the upper bound on them. The fleets with counts
 * (NAME:COUNT) are limited: the packer places the most jobs it can, and the
 * bound on the jobs says how far that can be from the most possible.
 */
#define _POSIX_C_SOURCE 200112L

#include <llmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct scenario {
    const char *fleet;   /* GPU types, comma-separated, each NAME or NAME:COUNT */
    uint64_t max_gib;
    int compute;
} scenario;

static const scenario scenarios[] = {
    { "A100-80GB", 20, 0 },    { "A100-80GB", 40, 1 },          { "H100-SXM", 12, 1 },
    { "H200", 70, 1 },         { "A30", 20, 0 },                { "RTX-PRO-6000", 90, 1 },
    { "A100-40GB", 35, 1 },    { "A100-80GB,H100-NVL", 50, 1 }, { "A30,A100-80GB,H200", 60, 1 },
    /* Limited fleets (with 10,000 jobs, 20 % to 60 % of what all of them need). */
    { "A100-80GB:2", 50, 0 },
    { "A100-80GB:1500", 50, 1 },
    { "H100-SXM:1000", 40, 1 },
    { "A100-80GB:600,H100-NVL:600", 50, 1 },
    { "A30:400,A100-80GB:400,H200:400", 70, 1 },
    { "A100-80GB:1000,H200", 100, 1 },
    /* Counts on some types only: everything placed, the limited GPUs where
     * they save the most. */
    { "A30,A100-80GB:300", 20, 0 },
    { "H100-SXM:200,A100-40GB:200,A30", 20, 1 },
    { "A100-40GB,H100-NVL:300,B200:100", 40, 1 },
    /* Eight types: too many fillings to list, so the LP generates them
     * (column generation); before, first fit and the priced fit alone. */
    { "L4,A100-80GB:1000,H20:100,L40S:20,H100-SXM,RTX-PRO-6000,A30,B200:20", 40, 0 },
};

static uint64_t state;
static uint64_t rnd(uint64_t n)
{
    state = state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (state >> 33) % n;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fill(llmem_ctx *ctx, llmem_pack *pack, const scenario *s, size_t jobs, uint64_t seed)
{
    char fleet[128], id[32];
    llmem_pack_clear(pack);
    snprintf(fleet, sizeof fleet, "%s", s->fleet);
    for (char *name = strtok(fleet, ","); name != NULL; name = strtok(NULL, ",")) {
        size_t gpu;
        char *colon = strchr(name, ':');
        uint64_t count = 0;
        if (colon != NULL) {
            *colon = '\0';
            count = strtoull(colon + 1, NULL, 10);
        }
        if (llmem_gpu_find(ctx, name, &gpu) != LLMEM_OK ||
            llmem_pack_add_gpu(pack, gpu, count) != LLMEM_OK)
            return 0;
    }
    state = seed;
    for (size_t j = 0; j < jobs; j++) {
        uint64_t bytes = (1 + rnd(s->max_gib)) * (UINT64_C(1) << 30) - rnd(1024) * (UINT64_C(1) << 20);
        int64_t compute = s->compute && rnd(5) == 0 ? (int64_t)rnd(4) : 0;
        snprintf(id, sizeof id, "job-%zu", j);
        if (llmem_pack_add_job(pack, id, bytes, LLMEM_LEVEL_DEVICE, compute) != LLMEM_OK)
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    size_t jobs = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 10000;
    llmem_ctx *ctx = NULL;
    llmem_pack *pack = NULL;
    if (jobs == 0 || llmem_ctx_new(&ctx, NULL) != LLMEM_OK || llmem_pack_new(ctx, &pack) != LLMEM_OK) {
        fprintf(stderr, "usage: bench_pack [JOBS > 0]\n");
        return 1;
    }
    printf("%zu jobs per scenario; time is the best of 3 runs of llmem_pack_run()\n\n", jobs);
    printf("%-28s %7s %8s %7s %7s %6s %8s %7s %7s\n", "fleet", "max GiB", "time ms", "GPUs",
           "bound", "gap %", "optimal", "placed", "at most");
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        const scenario *s = &scenarios[i];
        double best = 1e9;
        uint64_t used = 0, bound = 0, optimal = 0, placed = 0, most = 0;
        char most_text[24] = "-";
        for (int rep = 0; rep < 3; rep++) {
            if (!fill(ctx, pack, s, jobs, 1000 + i)) {
                fprintf(stderr, "bench_pack: %s\n", llmem_ctx_error(ctx));
                return 1;
            }
            double t0 = now();
            if (llmem_pack_run(pack) != LLMEM_OK) {
                fprintf(stderr, "bench_pack: %s\n", llmem_ctx_error(ctx));
                return 1;
            }
            double dt = now() - t0;
            best = dt < best ? dt : best;
        }
        llmem_pack_get_u64(pack, LLMEM_PACK_GPUS_USED, &used);
        llmem_pack_get_u64(pack, LLMEM_PACK_LOWER_BOUND, &bound);
        llmem_pack_get_u64(pack, LLMEM_PACK_OPTIMAL, &optimal);
        llmem_pack_get_u64(pack, LLMEM_PACK_JOBS_PLACED, &placed);
        if (llmem_pack_get_u64(pack, LLMEM_PACK_JOBS_BOUND, &most) == LLMEM_OK)
            snprintf(most_text, sizeof most_text, "%llu", (unsigned long long)most);
        printf("%-28s %7llu %8.1f %7llu %7llu %6.2f %8s %7llu %7s\n", s->fleet,
               (unsigned long long)s->max_gib, best * 1e3, (unsigned long long)used,
               (unsigned long long)bound,
               bound ? 100.0 * (double)(used - bound) / (double)bound : 0.0, optimal ? "yes" : "no",
               (unsigned long long)placed, most_text);
    }
    llmem_pack_free(pack);
    llmem_ctx_free(ctx);
    return 0;
}
