/* SPDX-License-Identifier: MIT */
/*
 * `llmem fit --gpu NAME [estimate flags | --bytes SIZE [--bytes-level L]]
 * [--margin P] [--min-compute N] [--driver N] [--running LIST] [--json]`:
 * which MIG profiles of a GPU, and whether the whole GPU, hold a job. The
 * job is an estimate (the flags of `llmem estimate`, layout flags included:
 * each rank is fitted, and the slice for the layout is the one its most
 * loaded rank needs), estimated with the GPU's CUDA context and cuBLAS
 * workspace, or a plain byte count.
 * With --driver, the options are the profiles that driver branch has, under
 * its names. With --running, the GPU already runs those MIG instances and
 * keeps them: each option says whether it can be created next to them, and
 * at which start; the text and JSON gain a start (column, keys) only then.
 * No option holds it: the output for all of them, and exit 3.
 */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "format.h"
#include "json.h"
#include "number.h"
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <llmem.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_GPU, OPT_MARGIN, OPT_BYTES, OPT_LEVEL, OPT_COMPUTE, OPT_DRIVER, OPT_RUNNING, OPT_JSON,
    OPT_HELP, OPT_COUNT
};

#define FIT_MAX_RANKS 64
#define FIT_MAX_RUNNING 16 /* llmem_fit_add_running()'s limit */

typedef struct fit_rank {
    uint64_t need, stage, gpus;
    const char *best, *resource; /* NULL: no option holds it */
    uint64_t required, start;
} fit_rank;

typedef struct fit_job {
    const char *model;  /* the estimate's model, or NULL for --bytes */
    int level;
    size_t nranks, peak;
    fit_rank rank[FIT_MAX_RANKS];
    int running;        /* --running given (even empty): starts shown */
    size_t nrunning, run_profile[FIT_MAX_RUNNING], run_start[FIT_MAX_RUNNING];
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

/* The Running line: the instances as given, and what of the GPU they use. */
static void print_running(const llmem_fit *fit, size_t gpu, const fit_job *job)
{
    uint64_t slots = 0, compute = 0, used_slots = 0, used_compute = 0, v = 0;
    int64_t driver = 0;
    llmem_fit_get_int(fit, LLMEM_FIT_DRIVER, &driver);
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_SLOTS, &slots);
    llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_COMPUTE_SLICES, &compute);
    printf("Running   ");
    if (job->nrunning == 0)
        printf("none (an empty GPU)");
    for (size_t i = 0; i < job->nrunning; i++) {
        printf("%s%s@%zu", i ? ", " : "",
               llmem_mig_profile_driver_name(gpu, job->run_profile[i], driver),
               job->run_start[i]);
        if (llmem_mig_profile_get_u64(gpu, job->run_profile[i], LLMEM_MIG_SLOTS, &v) == LLMEM_OK)
            used_slots += v;
        if (llmem_mig_profile_get_u64(gpu, job->run_profile[i], LLMEM_MIG_COMPUTE_SLICES, &v) ==
            LLMEM_OK)
            used_compute += v;
    }
    if (job->nrunning > 0)
        printf(": %llu of %llu slots and %llu of %llu compute slices in use",
               (unsigned long long)used_slots, (unsigned long long)slots,
               (unsigned long long)used_compute, (unsigned long long)compute);
    printf("\n");
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
    if (job->running)
        print_running(fit, gpu, job);
    printf("Margin    %g%% kept free: needs a slice of %s\n\n", (double)margin / 10, b);
    /* Both less the margin: a fitting option's budget less the need (the
     * estimate's "to spare"), else the usable bytes it lacks, "needs a
     * slice of" above less its own. */
    if (job->running)
        printf("%-12s %-11s %-8s %-6s %-5s %s\n", "Option", "Usable", "Compute", "Start", "Fits",
               "To spare (short by)");
    else
        printf("%-12s %-11s %-8s %-5s %s\n", "Option", "Usable", "Compute", "Fits",
               "To spare (short by)");
    for (size_t i = 0; i < llmem_fit_count(fit); i++) {
        int fits = (int)option(fit, i, LLMEM_FIT_FITS);
        char comp[48], start[24];
        cli_format_gib(option(fit, i, LLMEM_FIT_USABLE_BYTES), a, sizeof a);
        cli_format_gib(option(fit, i, LLMEM_FIT_HEADROOM_BYTES), b, sizeof b);
        if (option(fit, i, LLMEM_FIT_SHORTFALL_BYTES) == UINT64_MAX)
            snprintf(c, sizeof c, "need beyond 64 bits");
        else if (!fits && option(fit, i, LLMEM_FIT_SHORTFALL_BYTES) == 0 &&
                 !option(fit, i, LLMEM_FIT_PLACEABLE))
            /* The memory holds the job; the running instances leave no room. */
            snprintf(c, sizeof c, "%s", option(fit, i, LLMEM_FIT_WHOLE_GPU)
                                            ? "instances running"
                                            : "cannot be created");
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
        if (!job->running) {
            printf("%-12s %-11s %-8s %-5s %s%s%s\n", llmem_fit_name(fit, i), a, comp,
                   fits ? "yes" : "no", fits ? b : "(", fits ? "" : c, fits ? "" : ")");
            continue;
        }
        if (option(fit, i, LLMEM_FIT_PLACEABLE))
            snprintf(start, sizeof start, "%llu",
                     (unsigned long long)option(fit, i, LLMEM_FIT_START));
        else
            snprintf(start, sizeof start, "-");
        printf("%-12s %-11s %-8s %-6s %-5s %s%s%s\n", llmem_fit_name(fit, i), a, comp, start,
               fits ? "yes" : "no", fits ? b : "(", fits ? "" : c, fits ? "" : ")");
    }
    if (job->nranks > 1) {
        printf("\n%-6s %-6s %-5s %-11s %s\n", "Rank", "Stage", "GPUs", "Peak", "Smallest slice");
        for (size_t r = 0; r < job->nranks; r++) {
            cli_format_gib(job->rank[r].need, a, sizeof a);
            char at[24] = "";
            if (job->running && job->rank[r].best && job->rank[r].start != UINT64_MAX &&
                strcmp(job->rank[r].best, "whole") != 0)
                snprintf(at, sizeof at, "@%llu", (unsigned long long)job->rank[r].start);
            printf("%-6zu %-6llu %-5llu %-11s %s%s\n", r, (unsigned long long)job->rank[r].stage,
                   (unsigned long long)job->rank[r].gpus, a,
                   job->rank[r].best ? job->rank[r].best : "none", at);
        }
    }
    if (llmem_fit_best(fit, &best) == LLMEM_OK && job->running &&
        !option(fit, best, LLMEM_FIT_WHOLE_GPU))
        /* nvidia-smi's -cgi takes "a profile name or ID and an optional
         * placement specifier, which consists of a colon and a placement
         * start index" (its help; docs/mig.md, "What schedulers consume"). */
        printf("\nSmallest  %s at start %llu (Kubernetes resource %s; create it with "
               "nvidia-smi mig -cgi %s:%llu -C)%s\n",
               llmem_fit_name(fit, best), (unsigned long long)option(fit, best, LLMEM_FIT_START),
               option_resource(fit, gpu, best), llmem_fit_name(fit, best),
               (unsigned long long)option(fit, best, LLMEM_FIT_START),
               job->nranks > 1 ? " for every rank" : "");
    else if (llmem_fit_best(fit, &best) == LLMEM_OK)
        printf("\nSmallest  %s (Kubernetes resource %s)%s\n", llmem_fit_name(fit, best),
               option_resource(fit, gpu, best), job->nranks > 1 ? " for every rank" : "");
    else if (job->running)
        printf("\nSmallest  none: no option that can be created next to the running instances "
               "holds the job\n");
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
    if (job->running) {
        int64_t driver = 0;
        llmem_fit_get_int(fit, LLMEM_FIT_DRIVER, &driver);
        if (found && !option(fit, best, LLMEM_FIT_WHOLE_GPU))
            json_u64(&w, "start", option(fit, best, LLMEM_FIT_START));
        else
            json_null(&w, "start");
        json_array_begin(&w, "running");
        for (size_t i = 0; i < job->nrunning; i++) {
            json_object_begin(&w, NULL);
            json_string(&w, "name",
                        llmem_mig_profile_driver_name(gpu, job->run_profile[i], driver));
            json_u64(&w, "start", job->run_start[i]);
            json_object_end(&w);
        }
        json_array_end(&w);
    }
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
        if (job->running) {
            uint64_t starts = option(fit, i, LLMEM_FIT_STARTS);
            json_bool(&w, "placeable", (int)option(fit, i, LLMEM_FIT_PLACEABLE));
            if (option(fit, i, LLMEM_FIT_PLACEABLE))
                json_u64(&w, "start", option(fit, i, LLMEM_FIT_START));
            else
                json_null(&w, "start");
            json_array_begin(&w, "starts");
            for (unsigned s = 0; s < 64; s++)
                if (starts >> s & 1)
                    json_u64(&w, NULL, s);
            json_array_end(&w);
        }
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
        if (job->running && job->rank[r].best && strcmp(job->rank[r].best, "whole") != 0)
            json_u64(&w, "start", job->rank[r].start);
        else if (job->running)
            json_null(&w, "start");
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
    cli_error("no option of %s%s holds the job: %s needs a slice of %s (%g%% kept free)",
              llmem_gpu_name(gpu),
              job->running ? " that can be created next to the running instances" : "",
              job->nranks > 1 ? "its most loaded rank" : "it", need, (double)margin / 10);
    return CLI_EXIT_CHECK;
}

#define RUNNING_FORM                                                                        \
    "NAME@START (3g.40gb@4: a profile and its placement start, as nvidia-smi mig -lgi "   \
    "lists them), NAME@START:SIZE or NAME:START"

/* A placement number: decimal digits only, small. */
static int parse_slot(const char *text, size_t *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)text[0]))
        return 0;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v > 1000)
        return 0;
    *out = (size_t)v;
    return 1;
}

/* One instance of --running, item, into its profile and start: NAME@START,
 * NAME@START:SIZE (the -lgi "Placement Start:Size" column whole; the size
 * must be the profile's) or NAME:START (nvidia-smi mig -cgi's tuple). The
 * name is the catalog's or, with --driver, the branch's ("3g.39gb" on 535).
 * Prints why and returns 0 when it is none. */
static int parse_instance(llmem_ctx *ctx, const llmem_fit *fit, size_t gpu, const char *list,
                          const char *item, size_t *profile, size_t *start)
{
    char name[80];
    size_t size = 0;
    uint64_t slots = 0;
    int64_t driver = 0;
    snprintf(name, sizeof name, "%s", item);
    char *at = strchr(name, '@'), *colon = at ? strchr(at, ':') : strrchr(name, ':');
    char *digits = at ? at + 1 : colon ? colon + 1 : NULL;
    if (colon)
        *colon = '\0';
    if (at)
        *at = '\0';
    if (digits == NULL || name[0] == '\0' || !parse_slot(digits, start) ||
        (at && colon && !parse_slot(colon + 1, &size))) {
        cli_error("--running '%s': '%s': expected " RUNNING_FORM, list, item);
        return 0;
    }
    llmem_fit_get_int(fit, LLMEM_FIT_DRIVER, &driver);
    /* find takes every branch's names: a profile the branch lacks, the fit refuses */
    if (llmem_mig_profile_find(ctx, gpu, name, profile) != LLMEM_OK) {
        cli_error("--running '%s': %s", list, cli_message_tail(llmem_ctx_error(ctx)));
        return 0;
    }
    llmem_mig_profile_get_u64(gpu, *profile, LLMEM_MIG_SLOTS, &slots);
    if (at && colon && size != slots) {
        cli_error("--running '%s': '%s': %s occupies %llu slots, not %zu", list, item,
                  llmem_mig_profile_driver_name(gpu, *profile, driver),
                  (unsigned long long)slots, size);
        return 0;
    }
    return 1;
}

/* --running LIST: the MIG instances the GPU runs and keeps, comma-separated
 * (empty: none), declared to fit and checked at once against the GPU (a run
 * of one byte), so a bad one is a usage error before any option is printed. */
static int add_running(llmem_ctx *ctx, llmem_fit *fit, size_t gpu, const char *list,
                       fit_job *job)
{
    const char *p = list;
    job->running = 1;
    while (*list != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p), profile = 0, start = 0;
        char item[80];
        if (len == 0 || len >= sizeof item) {
            cli_error("--running '%s': expected a comma-separated list of " RUNNING_FORM, list);
            return CLI_EXIT_USAGE;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (!parse_instance(ctx, fit, gpu, list, item, &profile, &start))
            return CLI_EXIT_USAGE;
        if (llmem_fit_add_running(fit, profile, start) != LLMEM_OK) {
            cli_error("--running '%s': %s", list, cli_message_tail(llmem_ctx_error(ctx)));
            return CLI_EXIT_USAGE;
        }
        job->run_profile[job->nrunning] = profile;
        job->run_start[job->nrunning] = start;
        job->nrunning++;
        if (end == NULL)
            break;
        p = end + 1;
    }
    if (llmem_fit_run(fit, gpu, 1, LLMEM_LEVEL_DEVICE) != LLMEM_OK) {
        cli_error("--running '%s': %s", list, cli_message_tail(llmem_ctx_error(ctx)));
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
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
    if (opts[OPT_RUNNING].value) {
        int status = add_running(ctx, fit, gpu, opts[OPT_RUNNING].value, job);
        if (status != CLI_EXIT_OK)
            return status;
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
            k->start = option(fit, best, LLMEM_FIT_START);
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
        [OPT_RUNNING] = { "running", 0, NULL },     [OPT_JSON] = { "json", 1, NULL },
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
