/* SPDX-License-Identifier: MIT */
/*
 * `llmem fit --gpu NAME [estimate flags | --bytes SIZE [--bytes-level L]]
 * [--margin P] [--min-compute N] [--driver N] [--json]`: which MIG profiles of a GPU, and
 * whether the whole GPU, hold a job. The job is an estimate (the flags of
 * `llmem estimate`, layout flags included: each rank is fitted, and the
 * slice for the layout is the one its most loaded rank needs), estimated
 * with the GPU's CUDA context and cuBLAS workspace, or a plain byte count.
 * With --driver, the options are the profiles that driver branch has, under
 * its names. No option holds it: the output for all of them, and exit 3.
 */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "format.h"
#include "json.h"
#include "number.h"
#include "opts.h"

#include <llmem.h>
#include <string.h>

enum {
    OPT_GPU, OPT_MARGIN, OPT_BYTES, OPT_LEVEL, OPT_COMPUTE, OPT_DRIVER, OPT_JSON, OPT_HELP,
    OPT_COUNT
};

#define FIT_MAX_RANKS 64

typedef struct fit_rank {
    uint64_t need, stage, gpus;
    const char *best, *resource; /* NULL: no option holds it */
    uint64_t required;
} fit_rank;

typedef struct fit_job {
    const char *model;  /* the estimate's model, or NULL for --bytes */
    int level;
    size_t nranks, peak;
    fit_rank rank[FIT_MAX_RANKS];
} fit_job;

/* The estimate flags `llmem fit` takes: model, training and layout. */
#define FIT_ACCEPTS                                                                          \
    (CLI_ACCEPTS(CLI_TARGET_PRESET) | CLI_ACCEPTS(CLI_TARGET_CONFIG) |                       \
     CLI_ACCEPTS(CLI_TARGET_WEIGHTS) | CLI_ACCEPTS(CLI_TARGET_MODEL) |                       \
     CLI_ACCEPTS(CLI_TARGET_TRAIN) | CLI_ACCEPTS(CLI_TARGET_PARALLEL) |                      \
     CLI_ACCEPTS(CLI_TARGET_ZERO) | CLI_ACCEPTS(CLI_TARGET_FSDP))

/* Each rank's device-level peak, from the estimate flags, on GPU gpu (its
 * CUDA context and cuBLAS workspace: a MIG instance has its architecture's). */
static int estimate_job(llmem_ctx *ctx, int argc, char **argv, size_t gpu, fit_job *job)
{
    cli_request req;
    llmem_estimate *est = NULL;
    int status = cli_configure(ctx, argc, argv, FIT_ACCEPTS, "fit", &req);
    if (status != CLI_EXIT_OK)
        return status;
    int rc = llmem_train_set_int(req.train, LLMEM_TRAIN_GPU, (int64_t)gpu + 1);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_new(ctx, &est);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_run_parallel(est, req.model, req.train, req.parallel);
    if (rc == LLMEM_OK) {
        job->nranks = llmem_estimate_rank_count(est);
        if (job->nranks > FIT_MAX_RANKS)
            job->nranks = FIT_MAX_RANKS;
        job->peak = llmem_estimate_peak_rank(est);
        for (size_t r = 0; r < job->nranks && rc == LLMEM_OK; r++) {
            fit_rank *k = &job->rank[r];
            rc = llmem_estimate_rank_get_u64(est, r, LLMEM_EST_PEAK_DEVICE, &k->need);
            if (rc == LLMEM_OK)
                rc = llmem_estimate_rank_get_u64(est, r, LLMEM_RANK_STAGE, &k->stage);
            if (rc == LLMEM_OK)
                rc = llmem_estimate_rank_get_u64(est, r, LLMEM_RANK_GPUS, &k->gpus);
        }
        if (job->peak >= job->nranks)
            job->peak = 0;
    }
    if (rc != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx)[0] ? llmem_ctx_error(ctx) : llmem_status_str(rc));
        status = CLI_EXIT_ESTIMATE;
    }
    job->model = req.model_name;
    job->level = LLMEM_LEVEL_DEVICE;
    llmem_estimate_free(est);
    cli_request_free(&req);
    return status;
}

static uint64_t option(const llmem_fit *fit, size_t i, int key)
{
    uint64_t v = 0;
    llmem_fit_get_u64(fit, i, key, &v);
    return v;
}

/* The option's Kubernetes resource, under the fit's driver branch. */
static const char *option_resource(const llmem_fit *fit, size_t gpu, size_t i)
{
    int64_t driver = 0;
    if (option(fit, i, LLMEM_FIT_WHOLE_GPU))
        return "nvidia.com/gpu";
    llmem_fit_get_int(fit, LLMEM_FIT_DRIVER, &driver);
    return llmem_mig_profile_driver_resource(gpu, (size_t)option(fit, i, LLMEM_FIT_PROFILE),
                                             driver);
}

/* A size for the text. The library saturates a need or a requirement that
 * does not fit in 64 bits at UINT64_MAX: "or more" when it may have. */
static void format_need(uint64_t bytes, int saturated, char *buf, size_t cap)
{
    if (bytes == UINT64_MAX)
        snprintf(buf, cap, "2^64 - 1 bytes%s", saturated ? " or more" : "");
    else
        cli_format_gib(bytes, buf, cap);
}

static void print_text(const llmem_fit *fit, size_t gpu, const fit_job *job, int64_t margin)
{
    char a[32], b[32], c[32];
    size_t best;
    uint64_t slices = 0;
    int64_t min_compute = 0;
    const fit_rank *peak = &job->rank[job->peak];
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_COMPUTE_SLICES, &slices);
    llmem_fit_get_int(fit, LLMEM_FIT_MIN_COMPUTE, &min_compute);
    format_need(option(fit, 0, LLMEM_FIT_NEED_BYTES), job->level == LLMEM_LEVEL_RESERVED, a,
                sizeof a);
    format_need(option(fit, 0, LLMEM_FIT_REQUIRED_BYTES), 1, b, sizeof b);
    printf("GPU       %s (%s)\n", llmem_gpu_name(gpu), llmem_gpu_get_str(gpu, LLMEM_GPU_DEVICE_NAME));
    if (job->model && job->nranks > 1)
        printf("Job       %s: %zu ranks that differ; the most loaded (stage %llu) peaks at %s "
               "(device level)\n",
               job->model, job->nranks, (unsigned long long)peak->stage, a);
    else if (job->model)
        printf("Job       %s: device-level peak %s (CUDA context included)\n", job->model, a);
    else
        printf("Job       %s at the %s level%s\n", a,
               job->level == LLMEM_LEVEL_DEVICE ? "device" : "reserved",
               job->level == LLMEM_LEVEL_DEVICE ? "" : " (plus the CUDA context)");
    printf("Margin    %g%% kept free: needs a slice of %s\n\n", (double)margin / 10, b);
    /* Both less the margin: a fitting option's budget less the need (the
     * estimate's "to spare"), else the usable bytes it lacks, "needs a
     * slice of" above less its own. */
    printf("%-12s %-11s %-8s %-5s %s\n", "Option", "Usable", "Compute", "Fits",
           "To spare (short by)");
    for (size_t i = 0; i < llmem_fit_count(fit); i++) {
        int fits = (int)option(fit, i, LLMEM_FIT_FITS);
        char comp[48];
        cli_format_gib(option(fit, i, LLMEM_FIT_USABLE_BYTES), a, sizeof a);
        cli_format_gib(option(fit, i, LLMEM_FIT_HEADROOM_BYTES), b, sizeof b);
        if (option(fit, i, LLMEM_FIT_SHORTFALL_BYTES) == UINT64_MAX)
            snprintf(c, sizeof c, "need beyond 64 bits");
        else if (!fits && option(fit, i, LLMEM_FIT_SHORTFALL_BYTES) == 0)
            /* The memory holds the job; --min-compute refuses the slice. */
            snprintf(c, sizeof c, "needs %lld/%llu compute", (long long)min_compute,
                     (unsigned long long)slices);
        else
            cli_format_gib(option(fit, i, LLMEM_FIT_SHORTFALL_BYTES), c, sizeof c);
        if (slices)
            snprintf(comp, sizeof comp, "%llu/%llu",
                     (unsigned long long)option(fit, i, LLMEM_FIT_COMPUTE_SLICES),
                     (unsigned long long)slices);
        else
            snprintf(comp, sizeof comp, "-");
        printf("%-12s %-11s %-8s %-5s %s%s%s\n", llmem_fit_name(fit, i), a, comp,
               fits ? "yes" : "no", fits ? b : "(", fits ? "" : c, fits ? "" : ")");
    }
    if (job->nranks > 1) {
        printf("\n%-6s %-6s %-5s %-11s %s\n", "Rank", "Stage", "GPUs", "Peak", "Smallest slice");
        for (size_t r = 0; r < job->nranks; r++) {
            cli_format_gib(job->rank[r].need, a, sizeof a);
            printf("%-6zu %-6llu %-5llu %-11s %s\n", r, (unsigned long long)job->rank[r].stage,
                   (unsigned long long)job->rank[r].gpus, a,
                   job->rank[r].best ? job->rank[r].best : "none");
        }
    }
    if (llmem_fit_best(fit, &best) == LLMEM_OK)
        printf("\nSmallest  %s (Kubernetes resource %s)%s\n", llmem_fit_name(fit, best),
               option_resource(fit, gpu, best), job->nranks > 1 ? " for every rank" : "");
    else
        printf("\nSmallest  none: no option holds the job\n");
}

static void print_json(const llmem_fit *fit, size_t gpu, const fit_job *job, int64_t margin)
{
    json_writer w;
    size_t best;
    int found = llmem_fit_best(fit, &best) == LLMEM_OK;
    json_begin(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "gpu", llmem_gpu_name(gpu));
    json_string(&w, "model", job->model);
    json_string(&w, "bytes_level", job->level == LLMEM_LEVEL_DEVICE ? "device" : "reserved");
    json_i64(&w, "margin_permille", margin);
    json_u64(&w, "need_bytes", option(fit, 0, LLMEM_FIT_NEED_BYTES));
    json_u64(&w, "required_bytes", option(fit, 0, LLMEM_FIT_REQUIRED_BYTES));
    json_string(&w, "best", found ? llmem_fit_name(fit, best) : NULL);
    json_string(&w, "resource", found ? option_resource(fit, gpu, best) : NULL);
    json_array_begin(&w, "options");
    for (size_t i = 0; i < llmem_fit_count(fit); i++) {
        json_object_begin(&w, NULL);
        json_string(&w, "name", llmem_fit_name(fit, i));
        json_bool(&w, "whole_gpu", (int)option(fit, i, LLMEM_FIT_WHOLE_GPU));
        json_string(&w, "resource", option_resource(fit, gpu, i));
        json_bool(&w, "fits", (int)option(fit, i, LLMEM_FIT_FITS));
        json_u64(&w, "usable_bytes", option(fit, i, LLMEM_FIT_USABLE_BYTES));
        json_u64(&w, "compute_slices", option(fit, i, LLMEM_FIT_COMPUTE_SLICES));
        json_u64(&w, "margin_bytes", option(fit, i, LLMEM_FIT_USABLE_BYTES) -
                                         option(fit, i, LLMEM_FIT_BUDGET_BYTES));
        json_u64(&w, "budget_bytes", option(fit, i, LLMEM_FIT_BUDGET_BYTES));
        json_u64(&w, "headroom_bytes", option(fit, i, LLMEM_FIT_HEADROOM_BYTES));
        json_u64(&w, "shortfall_bytes", option(fit, i, LLMEM_FIT_SHORTFALL_BYTES));
        json_object_end(&w);
    }
    json_array_end(&w);
    json_array_begin(&w, "ranks");
    for (size_t r = 0; r < job->nranks; r++) {
        json_object_begin(&w, NULL);
        json_u64(&w, "rank", r);
        json_u64(&w, "stage", job->rank[r].stage);
        json_u64(&w, "gpus", job->rank[r].gpus);
        json_u64(&w, "need_bytes", job->rank[r].need);
        json_u64(&w, "required_bytes", job->rank[r].required);
        json_string(&w, "best", job->rank[r].best);
        json_string(&w, "resource", job->rank[r].resource);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    json_end(&w);
}

/* No option holds the job: the output says so ("Smallest none", "best":
 * null); the exit status tells a script that asked. */
static int fit_verdict(const llmem_fit *fit, size_t gpu, const fit_job *job, int64_t margin)
{
    size_t best;
    char need[CLI_NUMBER_CAP];
    if (llmem_fit_best(fit, &best) == LLMEM_OK)
        return CLI_EXIT_OK;
    /* fit holds the most loaded rank's options (fit_run runs it last). */
    format_need(option(fit, 0, LLMEM_FIT_REQUIRED_BYTES), 1, need, sizeof need);
    cli_error("no option of %s holds the job: %s needs a slice of %s (%g%% kept free)",
              llmem_gpu_name(gpu), job->nranks > 1 ? "its most loaded rank" : "it", need,
              (double)margin / 10);
    return CLI_EXIT_CHECK;
}

/* Settings, each rank's smallest slice, then the most loaded rank's options
 * left in fit; prints why on failure. */
static int fit_run(llmem_ctx *ctx, llmem_fit *fit, const cli_opt *opts, size_t gpu,
                   fit_job *job, int64_t *margin)
{
    if (opts[OPT_MARGIN].value) {
        if (!cli_opt_margin("margin", opts[OPT_MARGIN].value, margin))
            return CLI_EXIT_USAGE;
        if (llmem_fit_set_int(fit, LLMEM_FIT_MARGIN_PERMILLE, *margin) != LLMEM_OK) {
            cli_error("--margin '%s': %s", opts[OPT_MARGIN].value,
                      cli_message_tail(llmem_ctx_error(ctx)));
            return CLI_EXIT_USAGE;
        }
    }
    llmem_fit_get_int(fit, LLMEM_FIT_MARGIN_PERMILLE, margin);
    if (opts[OPT_COMPUTE].value &&
        llmem_fit_set_str(fit, LLMEM_FIT_MIN_COMPUTE, opts[OPT_COMPUTE].value) != LLMEM_OK) {
        cli_error("--min-compute '%s': %s", opts[OPT_COMPUTE].value,
                  cli_message_tail(llmem_ctx_error(ctx)));
        return CLI_EXIT_USAGE;
    }
    if (opts[OPT_DRIVER].value) {
        int64_t driver = 0;
        const char *field = NULL;
        if (!cli_opt_driver("driver", opts[OPT_DRIVER].value, &driver))
            return CLI_EXIT_USAGE;
        if (llmem_fit_set_int(fit, LLMEM_FIT_DRIVER, driver) != LLMEM_OK) {
            llmem_fit_field_info(LLMEM_FIT_DRIVER, &field, NULL, NULL);
            cli_error("--driver '%s': %s", opts[OPT_DRIVER].value,
                      cli_message_after_field(llmem_ctx_error(ctx), field));
            return CLI_EXIT_USAGE;
        }
    }
    for (size_t n = 0; n <= job->nranks; n++) {
        /* Every rank, then the most loaded again for the options printed. */
        fit_rank *k = &job->rank[n < job->nranks ? n : job->peak];
        size_t best;
        if (llmem_fit_run(fit, gpu, k->need, job->level) != LLMEM_OK) {
            cli_error("%s", llmem_ctx_error(ctx));
            return CLI_EXIT_ESTIMATE;
        }
        llmem_fit_get_u64(fit, 0, LLMEM_FIT_REQUIRED_BYTES, &k->required);
        if (llmem_fit_best(fit, &best) == LLMEM_OK) {
            k->best = llmem_fit_name(fit, best);
            k->resource = option_resource(fit, gpu, best);
        }
    }
    return CLI_EXIT_OK;
}

int cli_cmd_fit(int argc, char **argv)
{
    cli_opt opts[OPT_COUNT] = {
        [OPT_GPU] = { "gpu", 0, NULL },         [OPT_MARGIN] = { "margin", 0, NULL },
        [OPT_BYTES] = { "bytes", 0, NULL },     [OPT_LEVEL] = { "bytes-level", 0, NULL },
        [OPT_COMPUTE] = { "min-compute", 0, NULL }, [OPT_DRIVER] = { "driver", 0, NULL },
        [OPT_JSON] = { "json", 1, NULL },
        [OPT_HELP] = { "help", 1, NULL },
    };
    fit_job job;
    size_t gpu = 0;
    int64_t margin = 0;
    memset(&job, 0, sizeof job);
    job.level = LLMEM_LEVEL_DEVICE;
    job.nranks = 1;
    if (cli_opts_take(&argc, argv, opts, OPT_COUNT) != 0)
        return CLI_EXIT_USAGE;
    if (opts[OPT_HELP].value) {
        cli_usage_command(stdout, "fit");
        return CLI_EXIT_OK;
    }
    if (opts[OPT_GPU].value == NULL) {
        cli_error("`llmem fit` needs --gpu NAME (see `llmem gpus`)");
        return CLI_EXIT_USAGE;
    }
    if (opts[OPT_BYTES].value) {
        if (argc > 0) {
            cli_error("--bytes gives the job's memory: leave out the estimate flags ('%s')",
                      argv[0]);
            return CLI_EXIT_USAGE;
        }
        if (!cli_parse_size(opts[OPT_BYTES].value, &job.rank[0].need)) {
            cli_error("--bytes '%s': expected " CLI_SIZE_FORMS, opts[OPT_BYTES].value);
            return CLI_EXIT_USAGE;
        }
        if (opts[OPT_LEVEL].value && !cli_parse_level(opts[OPT_LEVEL].value, &job.level)) {
            cli_error("--bytes-level '%s': expected device|reserved", opts[OPT_LEVEL].value);
            return CLI_EXIT_USAGE;
        }
    } else if (opts[OPT_LEVEL].value) {
        cli_error("--bytes-level goes with --bytes (an estimate is device-level)");
        return CLI_EXIT_USAGE;
    }
    llmem_ctx *ctx = NULL;
    llmem_fit *fit = NULL;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK || llmem_fit_new(ctx, &fit) != LLMEM_OK) {
        cli_error("cannot create a library context (out of memory)");
        llmem_ctx_free(ctx);
        return CLI_EXIT_ESTIMATE;
    }
    int status = cli_find_gpu(ctx, "gpu", opts[OPT_GPU].value, &gpu) ? CLI_EXIT_OK
                                                                       : CLI_EXIT_USAGE;
    /* The estimate last: its flags' errors come after the command's own. */
    if (status == CLI_EXIT_OK && opts[OPT_BYTES].value == NULL)
        status = estimate_job(ctx, argc, argv, gpu, &job);
    if (status == CLI_EXIT_OK)
        status = fit_run(ctx, fit, opts, gpu, &job, &margin);
    if (status == CLI_EXIT_OK) {
        if (opts[OPT_JSON].value)
            print_json(fit, gpu, &job, margin);
        else
            print_text(fit, gpu, &job, margin);
        status = fit_verdict(fit, gpu, &job, margin);
    }
    llmem_fit_free(fit);
    llmem_ctx_free(ctx);
    return status;
}
