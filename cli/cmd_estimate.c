/* SPDX-License-Identifier: MIT */
/* `llmem estimate [flags]`: build the model and setup, run the estimate,
 * print it. Nothing reaches stdout unless the whole estimate succeeded. */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "format.h"
#include "gpu_fit.h"
#include "report.h"

#include <errno.h>
#include <string.h>

/* Whether the user typed flag f. */
static int given(int argc, char **argv, const cli_flag *f)
{
    cli_arg_iter it;
    const cli_flag *g;
    const char *v;
    cli_args_begin(&it, argc, argv, 0);
    while (cli_args_next(&it, &g, &v) > 0)
        if (g == f)
            return 1;
    return 0;
}

/* The library says which field an error is about (llmem_ctx_error_field) and
 * starts its message with the field's name ("qkv-bias: ..."); show the flag
 * that sets the field instead ("--attn-bias: ..."). A field the estimate does
 * not support is named as a flag only when the user typed it: a preset's or a
 * config's own family is no flag of theirs, and setting it is no way out. */
static void print_library_error(llmem_ctx *ctx, int argc, char **argv, int rc,
                                const char *message)
{
    int object = 0, key = 0;
    const cli_flag *f = NULL;
    if (llmem_ctx_error_field(ctx, &object, &key) == LLMEM_OK)
        f = cli_flag_for_field(object, key);
    if (f == NULL || (rc == LLMEM_ENOTSUP && !given(argc, argv, f))) {
        cli_error("%s", message);
        return;
    }
    cli_error("--%s: %s", f->name, cli_message_body(f, message));
}

/* --timeline and --margin add to some outputs only: without one of those
 * they would be accepted and dropped, so they are refused. (--capacity alone
 * asks whether the estimate fits it, as --gpu does.) */
static int check_job_flags(const cli_request *req)
{
    /* The table always has the timeline, as a sparkline under "Phase peaks". */
    if (req->timeline && !req->json) {
        cli_error("--timeline adds the timeline's points to the JSON: add --json (the table "
                  "shows the timeline as a sparkline)");
        return CLI_EXIT_USAGE;
    }
    /* The margin is kept free of the capacity (--gpu's usable memory or
     * --capacity) by the fit line, --max and a grid. */
    if (req->margin_given && req->capacity == 0) {
        cli_error("--margin is what the fit line, --max and a --batch or --seq list keep free "
                  "of a GPU's memory: add --gpu NAME or --capacity SIZE");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* --max batch|seq solves its field: a value given for it would be dropped. */
static int check_max_solves(int argc, char **argv, const cli_request *req)
{
    cli_arg_iter it;
    const cli_flag *f;
    const char *v;
    cli_args_begin(&it, argc, argv, 0);
    while (cli_args_next(&it, &f, &v) > 0)
        if (f->target == CLI_TARGET_TRAIN && f->key == req->max_key) {
            cli_error("--%s: --max %s solves it (the report describes the answer): leave it "
                      "out", f->name, f->name);
            return CLI_EXIT_USAGE;
        }
    return CLI_EXIT_OK;
}

/* --weights: the report shows both counts and their difference; the exit
 * status tells a script whether they matched (a checkpoint with buffers or a
 * tied head saved twice differs too: the report says which way). */
static int weights_verdict(const cli_request *req, const cli_report *r)
{
    if (req->weights.path == NULL || req->weights.params == r->params_total)
        return CLI_EXIT_OK;
    cli_error("--weights '%s': %llu parameters in the weights, %llu in the model: they differ",
              req->weights.path, (unsigned long long)req->weights.params,
              (unsigned long long)r->params_total);
    return CLI_EXIT_CHECK;
}

/* --gpu or --capacity: the report says whether the peak fits the capacity
 * less the margin; the exit status tells a script that asked (`llmem estimate
 * --gpu X && launch`, or --capacity SIZE for a GPU the catalog lacks) when it
 * does not. */
static int fit_verdict(const cli_request *req, const cli_report *r)
{
    cli_gpu_fit g;
    char peak[CLI_NUMBER_CAP], room[3 * CLI_NUMBER_CAP];
    if (!cli_gpu_fit_of(req, 1, r->peak_device, &g) || g.fits)
        return CLI_EXIT_OK;
    cli_format_gib(r->peak_device, peak, sizeof peak);
    cli_capacity_text(req, room, sizeof room);
    cli_error("does not fit: %s %s, above %s",
              r->nranks > 1 ? "the most loaded rank's device peak" : "device peak", peak, room);
    return CLI_EXIT_CHECK;
}

/* A grid with a capacity marks the points that fit; when none does, the
 * answer is no, as a single estimate's. */
static int grid_verdict(const cli_request *req, const cli_grid *g)
{
    size_t n = g->batches * g->seqs, least = 0;
    uint64_t budget = cli_usable(req->capacity, req->margin_permille);
    char peak[CLI_NUMBER_CAP], room[3 * CLI_NUMBER_CAP];
    if (req->capacity == 0)
        return CLI_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        if (g->peak[i] <= budget)
            return CLI_EXIT_OK;
        if (g->peak[i] < g->peak[least])
            least = i;
    }
    cli_format_gib(g->peak[least], peak, sizeof peak);
    cli_capacity_text(req, room, sizeof room);
    cli_error("no point of the grid fits: the smallest device peak, %s, is above %s", peak, room);
    return CLI_EXIT_CHECK;
}

/* What bounded --max's answer: the next value the layout takes is past the
 * field's bound in the library ("field_max"), or, for seq, past a model's
 * learned positions, which no capacity holds ("max_positions"); else that
 * next value needs more memory than the budget ("memory"). */
static const char *max_limit(const cli_request *req, int64_t best)
{
    int64_t step = (int64_t)llmem_parallel_step(req->parallel, req->max_key), bound = 0;
    int64_t positions = 0, max_positions = 0;
    llmem_train_field_info(req->max_key, NULL, NULL, &bound, NULL);
    if (best > bound - step)
        return "field_max";
    if (req->max_key == LLMEM_TRAIN_SEQ &&
        llmem_model_get_int(req->model, LLMEM_MODEL_POSITIONS, &positions) == LLMEM_OK &&
        positions == LLMEM_POSITIONS_LEARNED &&
        llmem_model_get_int(req->model, LLMEM_MODEL_MAX_POSITIONS, &max_positions) == LLMEM_OK &&
        best + step > max_positions)
        return "max_positions";
    return "memory";
}

/* --max batch|seq: the largest value whose device peak fits the capacity
 * less the margin; the setup then takes it, so the report describes it.
 * When even the smallest value does not fit, the answer is no: the setup
 * takes the smallest, and the report says what it needs (max_verdict). */
static int solve_max(llmem_estimate *est, cli_request *req)
{
    int64_t best = 0;
    uint64_t budget = cli_usable(req->capacity, req->margin_permille);
    int rc = llmem_estimate_max(est, req->model, req->train, req->parallel, req->max_key,
                                LLMEM_LEVEL_DEVICE, budget, &best);
    if (rc != LLMEM_OK)
        return rc;
    req->max_value = best;
    /* none fits: the smallest value the layout splits (the estimate's state) */
    req->max_smallest = best == 0 ? (int64_t)llmem_parallel_step(req->parallel, req->max_key)
                                  : 0;
    req->budget = budget;
    req->max_limited_by = best > 0 ? max_limit(req, best) : "memory";
    return llmem_train_set_int(req->train, req->max_key, best > 0 ? best : req->max_smallest);
}

/* --max with nothing that fits: the report describes the smallest value;
 * the exit status tells a script that asked that none fits. */
static int max_verdict(const cli_request *req, const cli_report *r)
{
    char peak[CLI_NUMBER_CAP], room[3 * CLI_NUMBER_CAP];
    const char *field = req->max_key == LLMEM_TRAIN_BATCH ? "batch" : "seq";
    if (req->max_value > 0)
        return CLI_EXIT_OK;
    cli_format_gib(r->peak_device, peak, sizeof peak);
    cli_capacity_text(req, room, sizeof room);
    cli_error("--max %s: no %s fits: even the smallest the layout takes, %lld, needs %s at the "
              "device level, above %s",
              field, field, (long long)req->max_smallest, peak, room);
    return CLI_EXIT_CHECK;
}

/* --svg FILE: the most loaded rank's timeline as a picture. */
static int write_svg(const cli_request *req, const cli_report *r)
{
    char title[256];
    if (r->timeline.n == 0) {
        /* The article's formula has none: --svg is refused with it (configure.c). */
        cli_error("--svg: the estimate recorded no timeline to draw");
        return CLI_EXIT_ESTIMATE;
    }
    FILE *f = fopen(req->svg, "w");
    if (f == NULL) {
        cli_error("--svg '%s': %s", req->svg, strerror(errno));
        return CLI_EXIT_ESTIMATE;
    }
    int64_t batch = 0, seq = 0, ckpt = 0, method = 0;
    llmem_train_get_int(req->train, LLMEM_TRAIN_BATCH, &batch);
    llmem_train_get_int(req->train, LLMEM_TRAIN_SEQ, &seq);
    llmem_train_get_int(req->train, LLMEM_TRAIN_GRAD_CKPT, &ckpt);
    llmem_train_get_int(req->train, LLMEM_TRAIN_METHOD, &method);
    snprintf(title, sizeof title, "%s, %s, batch %lld x seq %lld, grad-ckpt %s: one training step",
             req->model_name, llmem_train_value_name(LLMEM_TRAIN_METHOD, method), (long long)batch,
             (long long)seq, llmem_train_value_name(LLMEM_TRAIN_GRAD_CKPT, ckpt));
    int err = cli_timeline_svg(f, &r->timeline, title, req->capacity);
    if (fclose(f) != 0 && err == 0)
        err = errno;
    if (err != 0) {
        cli_error("--svg '%s': %s", req->svg, strerror(err));
        return CLI_EXIT_ESTIMATE;
    }
    return CLI_EXIT_OK;
}

/* --batch and --seq lists: every point in one llmem_estimate_sweep, batch by
 * batch and seq by seq within; the estimate is left with the last point's
 * results, which give the model's and the layout's lines. */
static int grid(llmem_estimate *est, const cli_request *req, cli_report *r, int *verdict)
{
    int64_t one[2], batch[CLI_GRID_MAX * CLI_GRID_MAX], seq[CLI_GRID_MAX * CLI_GRID_MAX];
    uint64_t peak[CLI_GRID_MAX * CLI_GRID_MAX];
    llmem_train_get_int(req->train, LLMEM_TRAIN_BATCH, &one[0]);
    llmem_train_get_int(req->train, LLMEM_TRAIN_SEQ, &one[1]);
    cli_grid g = { req->ngrid[0] > 0 ? req->grid[0] : &one[0],
                   req->ngrid[1] > 0 ? req->grid[1] : &one[1],
                   req->ngrid[0] > 0 ? (size_t)req->ngrid[0] : 1,
                   req->ngrid[1] > 0 ? (size_t)req->ngrid[1] : 1, peak };
    size_t n = 0;
    for (size_t i = 0; i < g.batches; i++)
        for (size_t j = 0; j < g.seqs; j++, n++) {
            batch[n] = g.batch[i];
            seq[n] = g.seq[j];
        }
    int rc = llmem_estimate_sweep(est, req->model, req->train, req->parallel, batch, seq, n,
                                  LLMEM_LEVEL_DEVICE, peak);
    if (rc == LLMEM_OK)
        rc = cli_report_collect(est, r);
    if (rc == LLMEM_OK)
        rc = req->json ? cli_grid_json(stdout, req, r, &g) : cli_grid_text(stdout, req, r, &g);
    if (rc == LLMEM_OK) {
        /* Each check that failed says so, in this order. */
        int weights = weights_verdict(req, r), fits = grid_verdict(req, &g);
        *verdict = weights != CLI_EXIT_OK ? weights : fits;
    }
    return rc;
}

static int estimate(llmem_ctx *ctx, int argc, char **argv, cli_request *req)
{
    llmem_estimate *est = NULL;
    cli_report r;
    int status = CLI_EXIT_OK;
    int rc = llmem_estimate_new(ctx, &est);
    memset(&r, 0, sizeof r);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_timeline(est, CLI_TIMELINE_CAP, 0);
    if (rc == LLMEM_OK && cli_is_grid(req)) {
        rc = grid(est, req, &r, &status);
        cli_report_free(&r);
        goto done;
    }
    if (rc == LLMEM_OK && req->max_key != 0)
        rc = solve_max(est, req);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_run_parallel(est, req->model, req->train, req->parallel);
    if (rc == LLMEM_OK)
        rc = cli_report_collect(est, &r);
    if (rc == LLMEM_OK && req->svg != NULL && write_svg(req, &r) != CLI_EXIT_OK) {
        cli_report_free(&r);
        llmem_estimate_free(est);
        return CLI_EXIT_ESTIMATE;
    }
    if (rc == LLMEM_OK)
        rc = req->json ? cli_report_json(stdout, req, &r)
                       : cli_report_text(stdout, req, &r);
    if (rc == LLMEM_OK) {
        /* With --max, --gpu's fit is the answer's: its own line would say
         * the same again. */
        int weights = weights_verdict(req, &r),
            fits = req->max_key != 0 ? max_verdict(req, &r) : fit_verdict(req, &r);
        status = weights != CLI_EXIT_OK ? weights : fits;
    }
    cli_report_free(&r);
done:
    if (rc != LLMEM_OK) {
        const char *message = llmem_ctx_error(ctx);
        print_library_error(ctx, argc, argv, rc, message[0] ? message : llmem_status_str(rc));
        status = CLI_EXIT_ESTIMATE;
    }
    llmem_estimate_free(est);
    return status;
}

int cli_cmd_estimate(int argc, char **argv)
{
    llmem_ctx *ctx = NULL;
    cli_request req;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
        cli_error("cannot create a library context (out of memory)");
        return CLI_EXIT_ESTIMATE;
    }
    unsigned accepted = ~(CLI_ACCEPTS(CLI_TARGET_PLAN) | CLI_ACCEPTS(CLI_TARGET_TOP));
    int status = cli_configure(ctx, argc, argv, accepted, "estimate", &req);
    if (status == CLI_EXIT_OK && !req.help && req.max_key != 0 && req.capacity == 0) {
        cli_error("--max needs --capacity SIZE or --gpu NAME (the memory of one GPU)");
        status = CLI_EXIT_USAGE;
    }
    if (status == CLI_EXIT_OK && !req.help && cli_is_grid(&req) &&
        (req.max_key != 0 || req.svg != NULL || req.timeline)) {
        cli_error("--%s: a list of values makes a grid of peaks; --max, --svg and --timeline "
                  "describe one step", req.ngrid[0] > 0 ? "batch" : "seq");
        status = CLI_EXIT_USAGE;
    }
    if (status == CLI_EXIT_OK && !req.help)
        status = check_job_flags(&req);
    if (status == CLI_EXIT_OK && !req.help && req.max_key != 0)
        status = check_max_solves(argc, argv, &req);
    if (status == CLI_EXIT_OK && req.help)
        cli_usage_command(stdout, "estimate");
    else if (status == CLI_EXIT_OK)
        status = estimate(ctx, argc, argv, &req);
    cli_request_free(&req);
    llmem_ctx_free(ctx);
    return status;
}
