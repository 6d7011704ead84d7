/* SPDX-License-Identifier: MIT */
/*
 * bench_pack: how fast llmem_pack_run() packs generated job sets, and how
 * far each result is from its proven lower bound.
 *
 *     bench_pack [JOBS [CALLS]]  (default 10000 and 400)
 *
 * Each scenario draws JOBS jobs from a fixed seed (the same every run): a
 * memory need uniform in [1, MAX] GiB, and in the "compute" scenarios one job
 * in five asking for 0-3 compute slices. It prints the wall time of the run
 * (best of 3), the GPUs used, the lower bound and the gap in percent, the
 * jobs placed and the upper bound on them. The fleets with counts
 * (NAME:COUNT) are limited: the packer places the most jobs it can, and the
 * bound on the jobs says how far that can be from the most possible.
 *
 * Then the calls a scheduler makes: CALLS problems per set drawn from a fixed
 * seed, each of 1 to 100 jobs (memory uniform in [1, MAX] GiB with MAX one of
 * 10 to 160, device or reserved level, one job in five asking for 1 to 7
 * compute slices), a margin of 0 to 50 %, and a fleet of one GPU type (the
 * first set) or of two to eight distinct types of the catalog (the second),
 * each type without a limit or with 1 to 8 GPUs. Each problem runs three
 * times and the least CPU time counts (the machines are shared). It prints
 * the median, 90th percentile and worst milliseconds per call, the worst
 * problem, and the results summed over the set (GPUs used, jobs placed,
 * proven optimal) with a digest of every layout (each GPU's type, each
 * job's status, GPU, profile and start), so that two builds can be compared.
 *
 *     bench_pack --gpu-find [CALLS]  (default 2000)
 *
 * times llmem_gpu_find(), which a scheduler calls for the GPU name of every
 * request: nanoseconds per call for a canonical name, an alias, the driver's
 * name, an unknown name with suggestions and one without, the best of 300
 * batches of CALLS calls each (short batches, so that some escape
 * preemption on a shared machine).
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

/* The process's CPU time: a call's, on a machine shared with other work. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* --- the calls a scheduler makes --- */

#define CALL_MAX_JOBS 100
#define CALL_MAX_TYPES 8

typedef struct call_set {
    const char *name;
    int min_types, max_types;
} call_set;

static const call_set call_sets[] = { { "one type", 1, 1 }, { "2 to 8 types", 2, CALL_MAX_TYPES } };

/* A problem of the set (from the current seed); its fleet in text. */
static int draw_call(llmem_pack *pack, const call_set *set, char *fleet, size_t cap,
                     size_t *njobs)
{
    static const uint64_t max_gib[] = { 10, 20, 40, 80, 160 };
    size_t ngpus = llmem_gpu_count(), chosen[CALL_MAX_TYPES];
    int ntypes = set->min_types + (int)rnd((uint64_t)(set->max_types - set->min_types + 1));
    size_t len = 0;
    char id[32];
    llmem_pack_clear(pack);
    fleet[0] = '\0';
    for (int t = 0; t < ntypes; t++) {
        size_t gpu;
        int fresh;
        do {
            gpu = (size_t)rnd(ngpus);
            fresh = 1;
            for (int u = 0; u < t; u++)
                fresh &= chosen[u] != gpu;
        } while (!fresh);
        chosen[t] = gpu;
        uint64_t count = rnd(2) ? 0 : 1 + rnd(8);
        if (llmem_pack_add_gpu(pack, gpu, count) != LLMEM_OK)
            return 0;
        len += (size_t)snprintf(fleet + len, cap - len, "%s%s", t ? "," : "", llmem_gpu_name(gpu));
        if (count && len < cap)
            len += (size_t)snprintf(fleet + len, cap - len, ":%llu", (unsigned long long)count);
        if (len >= cap)
            return 0;
    }
    if (llmem_pack_set_int(pack, LLMEM_PACK_MARGIN_PERMILLE, (int64_t)rnd(501)) != LLMEM_OK)
        return 0;
    uint64_t gib = max_gib[rnd(sizeof max_gib / sizeof max_gib[0])];
    *njobs = 1 + (size_t)rnd(CALL_MAX_JOBS);
    for (size_t j = 0; j < *njobs; j++) {
        uint64_t bytes = (1 + rnd(gib)) * (UINT64_C(1) << 30) - rnd(1024) * (UINT64_C(1) << 20);
        int level = rnd(2) ? LLMEM_LEVEL_DEVICE : LLMEM_LEVEL_RESERVED;
        int64_t compute = rnd(5) == 0 ? 1 + (int64_t)rnd(7) : 0;
        snprintf(id, sizeof id, "job-%zu", j);
        if (llmem_pack_add_job(pack, id, bytes, level, compute) != LLMEM_OK)
            return 0;
    }
    return 1;
}

static uint64_t digest_add(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xFF;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* The layout of the last run, folded into h. */
static uint64_t digest_layout(const llmem_pack *pack, uint64_t h)
{
    uint64_t used = 0, v = 0;
    llmem_pack_get_u64(pack, LLMEM_PACK_GPUS_USED, &used);
    h = digest_add(h, used);
    for (uint64_t g = 0; g < used; g++) {
        llmem_pack_gpu_u64(pack, (size_t)g, LLMEM_PACK_GPU_TYPE, &v);
        h = digest_add(h, v);
    }
    static const int keys[] = { LLMEM_PACK_JOB_STATUS, LLMEM_PACK_JOB_GPU, LLMEM_PACK_JOB_PROFILE,
                                LLMEM_PACK_JOB_START };
    for (size_t j = 0; j < llmem_pack_job_count(pack); j++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            v = UINT64_MAX;
            llmem_pack_job_u64(pack, j, keys[k], &v); /* fails for an unplaced job's GPU */
            h = digest_add(h, v);
        }
    return h;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_calls(llmem_pack *pack, size_t calls)
{
    double *ms = malloc(calls * sizeof *ms);
    if (ms == NULL)
        return 0;
    printf("\n%zu calls per set as a scheduler makes them (1-%d jobs, any margin); "
           "CPU time per call, the least of 3 runs\n\n",
           calls, CALL_MAX_JOBS);
    printf("%-13s %9s %8s %9s %6s %7s %7s %16s  %s\n", "set", "median ms", "p90 ms", "worst ms",
           "GPUs", "placed", "optimal", "digest", "worst call");
    for (size_t si = 0; si < sizeof call_sets / sizeof call_sets[0]; si++) {
        const call_set *set = &call_sets[si];
        uint64_t h = UINT64_C(1469598103934665603), gpus = 0, placed = 0, optimal = 0;
        char fleet[256], worst_fleet[256] = "";
        size_t worst_jobs = 0;
        int64_t worst_margin = 0;
        double worst = -1;
        state = 7000 + si;
        for (size_t i = 0; i < calls; i++) {
            size_t njobs;
            uint64_t seed = state;
            double best = 1e9;
            for (int rep = 0; rep < 3; rep++) {
                state = seed;
                if (!draw_call(pack, set, fleet, sizeof fleet, &njobs)) {
                    free(ms);
                    return 0;
                }
                double t0 = cpu_now();
                if (llmem_pack_run(pack) != LLMEM_OK) {
                    free(ms);
                    return 0;
                }
                double dt = cpu_now() - t0;
                best = dt < best ? dt : best;
            }
            ms[i] = best * 1e3;
            uint64_t v = 0;
            llmem_pack_get_u64(pack, LLMEM_PACK_GPUS_USED, &v);
            gpus += v;
            llmem_pack_get_u64(pack, LLMEM_PACK_JOBS_PLACED, &v);
            placed += v;
            llmem_pack_get_u64(pack, LLMEM_PACK_OPTIMAL, &v);
            optimal += v;
            h = digest_layout(pack, h);
            if (ms[i] > worst) {
                worst = ms[i];
                worst_jobs = njobs;
                llmem_pack_get_int(pack, LLMEM_PACK_MARGIN_PERMILLE, &worst_margin);
                snprintf(worst_fleet, sizeof worst_fleet, "%s", fleet);
            }
        }
        qsort(ms, calls, sizeof *ms, cmp_double);
        printf("%-13s %9.3f %8.3f %9.3f %6llu %7llu %7llu %016llx  %zu jobs, margin %lld/1000, "
               "%s\n",
               set->name, ms[calls / 2], ms[calls * 9 / 10], worst, (unsigned long long)gpus,
               (unsigned long long)placed, (unsigned long long)optimal, (unsigned long long)h,
               worst_jobs, (long long)worst_margin, worst_fleet);
    }
    free(ms);
    return 1;
}

/* Nanoseconds per llmem_gpu_find() of each kind of name. */
static int bench_gpu_find(llmem_ctx *ctx, size_t calls)
{
    static const struct {
        const char *kind, *name;
        int status;
    } names[] = {
        { "canonical", "H100-SXM", LLMEM_OK },
        { "alias", "A100-SXM4-80GB", LLMEM_OK },
        { "driver name", "NVIDIA H100 80GB HBM3", LLMEM_OK },
        { "suggestions", "A100", LLMEM_ENOTFOUND },
        { "unknown", "Z100-96GB", LLMEM_ENOTFOUND },
    };
    size_t gpu = 0, sum = 0;
    printf("llmem_gpu_find(), ns per call (best of 300 batches of %zu calls)\n\n", calls);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        double best = 1e9;
        for (int batch = 0; batch < 300; batch++) {
            double t0 = now();
            for (size_t c = 0; c < calls; c++) {
                if (llmem_gpu_find(ctx, names[i].name, &gpu) != names[i].status)
                    return 0;
                sum += gpu;
            }
            double dt = now() - t0;
            best = dt < best ? dt : best;
        }
        printf("%-12s %-24s %8.1f\n", names[i].kind, names[i].name, best * 1e9 / (double)calls);
    }
    return sum != SIZE_MAX; /* keeps the results observable */
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--gpu-find") == 0) {
        size_t calls = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 2000;
        llmem_ctx *ctx = NULL;
        if (calls == 0 || llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
            fprintf(stderr, "usage: bench_pack --gpu-find [CALLS > 0]\n");
            return 1;
        }
        int ok = bench_gpu_find(ctx, calls);
        if (!ok)
            fprintf(stderr, "bench_pack: %s\n", llmem_ctx_error(ctx));
        llmem_ctx_free(ctx);
        return ok ? 0 : 1;
    }
    size_t jobs = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 10000;
    size_t calls = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 400;
    llmem_ctx *ctx = NULL;
    llmem_pack *pack = NULL;
    if (jobs == 0 || calls == 0 || llmem_ctx_new(&ctx, NULL) != LLMEM_OK ||
        llmem_pack_new(ctx, &pack) != LLMEM_OK) {
        fprintf(stderr, "usage: bench_pack [JOBS > 0 [CALLS > 0]]\n");
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
    if (!bench_calls(pack, calls)) {
        fprintf(stderr, "bench_pack: %s\n", llmem_ctx_error(ctx));
        return 1;
    }
    llmem_pack_free(pack);
    llmem_ctx_free(ctx);
    return 0;
}
