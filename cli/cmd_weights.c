/* SPDX-License-Identifier: MIT */
/* `llmem weights PATH [--json]`: what the safetensors headers say (elements,
 * bytes, tensors, files, per dtype), with no model and no estimate. */
#include "args.h"
#include "cli.h"
#include "json.h"
#include "weights.h"

#include <llmem.h>

typedef struct weights_args {
    const char *path;
    int json, help;
} weights_args;

static int parse(int argc, char **argv, weights_args *a)
{
    cli_arg_iter it;
    const cli_flag *f;
    const char *v;
    int r;
    cli_args_begin(&it, argc, argv, 1);
    while ((r = cli_args_next(&it, &f, &v)) > 0) {
        if (f == NULL && a->path != NULL) {
            cli_error("`llmem weights` takes one PATH (got '%s' and '%s')", a->path, v);
            return CLI_EXIT_USAGE;
        } else if (f == NULL) {
            a->path = v;
        } else if (f->target == CLI_TARGET_JSON) {
            a->json = 1;
        } else if (f->target == CLI_TARGET_HELP) {
            a->help = 1;
        } else {
            cli_error("--%s is a flag of `llmem estimate`; `llmem weights` takes PATH and --json",
                      f->name);
            return CLI_EXIT_USAGE;
        }
    }
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (a->path == NULL && !a->help) {
        cli_error("`llmem weights` needs a PATH: a .safetensors file, a "
                  "model.safetensors.index.json or a directory");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_weights(int argc, char **argv)
{
    weights_args a = { NULL, 0, 0 };
    int status = parse(argc, argv, &a);
    if (status != CLI_EXIT_OK)
        return status;
    if (a.help) {
        cli_usage_command(stdout, "weights");
        return CLI_EXIT_OK;
    }
    llmem_ctx *ctx = NULL;
    cli_weights w;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
        cli_error("cannot create a library context (out of memory)");
        return CLI_EXIT_ESTIMATE;
    }
    if (cli_weights_open(ctx, a.path, &w) != LLMEM_OK) {
        cli_error("weights '%s': %s", a.path, llmem_ctx_error(ctx));
        status = CLI_EXIT_ESTIMATE;
    } else if (a.json) {
        json_writer jw;
        json_begin(&jw, stdout);
        cli_weights_json(&jw, NULL, &w, NULL);
        json_end(&jw);
    } else {
        cli_weights_text(stdout, &w, NULL);
    }
    cli_weights_close(&w);
    llmem_ctx_free(ctx);
    return status;
}
