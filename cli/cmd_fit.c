/* SPDX-License-Identifier: MIT */
/*
 * `llmem fit --gpu NAME [estimate flags | --bytes N [--bytes-level L]]
 * [--margin P] [--min-compute N] [--json]`: which MIG profiles of a GPU, and
 * whether the whole GPU, hold a job. The job is an estimate (the flags of
 * `llmem estimate`; its device-level peak, CUDA context included) or a plain
 * byte count.
 */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "format.h"
#include "json.h"
#include "opts.h"

#include <llmem.h>
#include <string.h>

enum { OPT_GPU, OPT_MARGIN, OPT_BYTES, OPT_LEVEL, OPT_COMPUTE, OPT_JSON, OPT_HELP, OPT_COUNT };

typedef struct fit_job {
    const char *model;   /* the estimate's model, or NULL for --bytes */
    uint64_t bytes;
    int level;
} fit_job;


/* The job's bytes from the estimate flags. */
static int estimate_job(llmem_ctx *ctx, int argc, char **argv, fit_job *job)
{
    cli_request req;
    llmem_estimate *est = NULL;
    int status = cli_configure(ctx, argc, argv, &req);
    if (status != CLI_EXIT_OK)
        return status;
    int rc = llmem_estimate_new(ctx, &est);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_run(est, req.model, req.train);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_get_u64(est, LLMEM_EST_PEAK_DEVICE, &job->bytes);
    if (rc != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx)[0] ? llmem_ctx_error(ctx) : llmem_status_str(rc));
        status = CLI_EXIT_ESTIMATE;
    }
    job->model = req.model_name;
    job->level = LLMEM_BYTES_DEVICE;
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

static const char *option_resource(const llmem_fit *fit, size_t gpu, size_t i)
{
    if (option(fit, i, LLMEM_FIT_WHOLE_GPU))
        return "nvidia.com/gpu";
    return llmem_mig_profile_resource(gpu, (size_t)option(fit, i, LLMEM_FIT_PROFILE));
}

static void print_text(const llmem_fit *fit, size_t gpu, const fit_job *job, double margin)
{
    char a[32], b[32], c[32];
    size_t best;
    uint64_t slices = 0;
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_COMPUTE_SLICES, &slices);
    cli_format_gib(option(fit, 0, LLMEM_FIT_NEED_BYTES), a, sizeof a);
    cli_format_gib(option(fit, 0, LLMEM_FIT_REQUIRED_BYTES), b, sizeof b);
    printf("GPU       %s (%s)\n", llmem_gpu_name(gpu), llmem_gpu_get_str(gpu, LLMEM_GPU_DEVICE_NAME));
    if (job->model)
        printf("Job       %s: device-level peak %s (CUDA context included)\n", job->model, a);
    else
        printf("Job       %s at the %s level%s\n", a,
               job->level == LLMEM_BYTES_DEVICE ? "device" : "reserved",
               job->level == LLMEM_BYTES_DEVICE ? "" : " (plus the CUDA context)");
    printf("Margin    %g%%: needs %s\n\n", margin * 100, b);
    printf("%-12s %-11s %-8s %-5s %s\n", "Option", "Usable", "Compute", "Fits",
           "Headroom (short by)");
    for (size_t i = 0; i < llmem_fit_count(fit); i++) {
        int fits = (int)option(fit, i, LLMEM_FIT_FITS);
        char comp[48];
        cli_format_gib(option(fit, i, LLMEM_FIT_USABLE_BYTES), a, sizeof a);
        cli_format_gib(option(fit, i, LLMEM_FIT_HEADROOM_BYTES), b, sizeof b);
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
    if (llmem_fit_best(fit, &best) == LLMEM_OK)
        printf("\nSmallest  %s (Kubernetes resource %s)\n", llmem_fit_name(fit, best),
               option_resource(fit, gpu, best));
    else
        printf("\nSmallest  none: no option holds the job\n");
}

static void print_json(const llmem_fit *fit, size_t gpu, const fit_job *job, double margin)
{
    json_writer w;
    size_t best;
    int found = llmem_fit_best(fit, &best) == LLMEM_OK;
    json_begin(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "gpu", llmem_gpu_name(gpu));
    json_string(&w, "model", job->model);
    json_string(&w, "bytes_level", job->level == LLMEM_BYTES_DEVICE ? "device" : "reserved");
    json_u64(&w, "bytes", job->bytes);
    json_real(&w, "margin", margin);
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
        json_u64(&w, "headroom_bytes", option(fit, i, LLMEM_FIT_HEADROOM_BYTES));
        json_u64(&w, "shortfall_bytes", option(fit, i, LLMEM_FIT_SHORTFALL_BYTES));
        json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    json_end(&w);
}

/* Settings and the run; prints why on failure. */
static int fit_run(llmem_ctx *ctx, llmem_fit *fit, const cli_opt *opts, size_t gpu,
                   const fit_job *job, double *margin)
{
    if (opts[OPT_MARGIN].value) {
        if (!cli_opt_margin("margin", opts[OPT_MARGIN].value, margin))
            return CLI_EXIT_USAGE;
        if (llmem_fit_set_double(fit, LLMEM_FIT_MARGIN, *margin) != LLMEM_OK) {
            cli_error("--margin '%s': %s", opts[OPT_MARGIN].value, cli_message_tail(llmem_ctx_error(ctx)));
            return CLI_EXIT_USAGE;
        }
    }
    llmem_fit_get_double(fit, LLMEM_FIT_MARGIN, margin);
    if (opts[OPT_COMPUTE].value &&
        llmem_fit_set_str(fit, LLMEM_FIT_MIN_COMPUTE, opts[OPT_COMPUTE].value) != LLMEM_OK) {
        cli_error("--min-compute '%s': %s", opts[OPT_COMPUTE].value, cli_message_tail(llmem_ctx_error(ctx)));
        return CLI_EXIT_USAGE;
    }
    if (llmem_fit_run(fit, gpu, job->bytes, job->level) != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx));
        return CLI_EXIT_ESTIMATE;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_fit(int argc, char **argv)
{
    cli_opt opts[OPT_COUNT] = {
        [OPT_GPU] = { "gpu", 0, NULL },         [OPT_MARGIN] = { "margin", 0, NULL },
        [OPT_BYTES] = { "bytes", 0, NULL },     [OPT_LEVEL] = { "bytes-level", 0, NULL },
        [OPT_COMPUTE] = { "min-compute", 0, NULL }, [OPT_JSON] = { "json", 1, NULL },
        [OPT_HELP] = { "help", 1, NULL },
    };
    fit_job job = { NULL, 0, LLMEM_BYTES_DEVICE };
    size_t gpu = 0;
    double margin = 0;
    if (cli_opts_take(&argc, argv, opts, OPT_COUNT) != 0)
        return CLI_EXIT_USAGE;
    if (opts[OPT_HELP].value) {
        cli_usage(stdout);
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
        if (!cli_opt_u64("bytes", opts[OPT_BYTES].value, 1, UINT64_MAX, &job.bytes))
            return CLI_EXIT_USAGE;
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
        status = estimate_job(ctx, argc, argv, &job);
    if (status == CLI_EXIT_OK)
        status = fit_run(ctx, fit, opts, gpu, &job, &margin);
    if (status == CLI_EXIT_OK) {
        if (opts[OPT_JSON].value)
            print_json(fit, gpu, &job, margin);
        else
            print_text(fit, gpu, &job, margin);
    }
    llmem_fit_free(fit);
    llmem_ctx_free(ctx);
    return status;
}
