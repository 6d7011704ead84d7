/* SPDX-License-Identifier: MIT */
/* `llmem estimate [flags]`: build the model and setup, run the estimate,
 * print it. Nothing reaches stdout unless the whole estimate succeeded. */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "report.h"

#include <string.h>

/* The library names a field as its flag is spelled ("heads: 5 does not divide
 * hidden 64"); show it as the flag the user typed ("--heads: ..."). */
static void print_library_error(const char *message)
{
    size_t len = strcspn(message, ":");
    const cli_flag *f = message[len] == ':' ? cli_flag_find(message, len) : NULL;
    if (f != NULL && (f->target == CLI_TARGET_MODEL || f->target == CLI_TARGET_TRAIN))
        cli_error("--%s", message);
    else
        cli_error("%s", message);
}

static int estimate(llmem_ctx *ctx, const cli_request *req)
{
    llmem_estimate *est = NULL;
    cli_report r;
    int status = CLI_EXIT_OK;
    int rc = llmem_estimate_new(ctx, &est);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_run(est, req->model, req->train);
    if (rc == LLMEM_OK)
        rc = cli_report_collect(est, &r);
    if (rc == LLMEM_OK)
        rc = req->json ? cli_report_json(stdout, ctx, req, &r)
                       : cli_report_text(stdout, ctx, req, &r);
    if (rc != LLMEM_OK) {
        const char *message = llmem_ctx_error(ctx);
        print_library_error(message[0] ? message : llmem_status_str(rc));
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
    int status = cli_configure(ctx, argc, argv, &req);
    if (status == CLI_EXIT_OK && req.help)
        cli_usage(stdout);
    else if (status == CLI_EXIT_OK)
        status = estimate(ctx, &req);
    cli_request_free(&req);
    llmem_ctx_free(ctx);
    return status;
}
