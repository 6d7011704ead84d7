/* SPDX-License-Identifier: MIT */
/* `llmem models [--json]`: the built-in presets with their family and the
 * parameter count the library computes for them. */
#include "args.h"
#include "cli.h"
#include "format.h"
#include "json.h"
#include "settings.h"

#include <llmem.h>
#include <string.h>

typedef struct preset_row {
    const char *name;
    cli_setting family;
    uint64_t params;
} preset_row;

static int read_preset(llmem_ctx *ctx, size_t index, preset_row *row)
{
    const cli_flag *family = cli_flag_find("family", strlen("family"));
    cli_request req;
    memset(&req, 0, sizeof req);
    row->name = llmem_preset_name(index);
    int rc = llmem_model_new_preset(ctx, row->name, &req.model);
    if (rc == LLMEM_OK)
        rc = family ? cli_setting_read(&req, family, &row->family) : LLMEM_EINVAL;
    if (rc == LLMEM_OK)
        rc = llmem_model_param_count(req.model, &row->params);
    cli_request_free(&req);
    return rc;
}

static int print_models(llmem_ctx *ctx, int json)
{
    json_writer w;
    preset_row row;
    size_t count = llmem_preset_count();
    /* Check every preset first, so that a failure prints no partial list. */
    for (size_t i = 0; i < count; i++) {
        if (read_preset(ctx, i, &row) != LLMEM_OK) {
            cli_error("preset '%s': %s", row.name ? row.name : "?", llmem_ctx_error(ctx));
            return CLI_EXIT_ESTIMATE;
        }
    }
    if (json) {
        json_begin(&w, stdout);
        json_array_begin(&w, NULL);
    }
    for (size_t i = 0; i < count; i++) {
        char params[CLI_NUMBER_CAP];
        read_preset(ctx, i, &row);
        if (json) {
            json_object_begin(&w, NULL);
            json_string(&w, "name", row.name);
            json_string(&w, "family", row.family.text);
            json_u64(&w, "params_total", row.params);
            json_object_end(&w);
            continue;
        }
        cli_format_count_short(row.params, params, sizeof params);
        printf("%-36s %-10s %13llu  (%s)\n", row.name, row.family.text,
               (unsigned long long)row.params, params);
    }
    if (json) {
        json_array_end(&w);
        json_end(&w);
    }
    return CLI_EXIT_OK;
}

int cli_cmd_models(int argc, char **argv)
{
    cli_arg_iter it;
    const cli_flag *f;
    const char *v;
    int r, json = 0, help = 0;
    cli_args_begin(&it, argc, argv, 0);
    while ((r = cli_args_next(&it, &f, &v)) > 0) {
        if (f->target == CLI_TARGET_JSON) {
            json = 1;
        } else if (f->target == CLI_TARGET_HELP) {
            help = 1;
        } else {
            cli_error("--%s is a flag of `llmem estimate`; `llmem models` takes only --json",
                      f->name);
            return CLI_EXIT_USAGE;
        }
    }
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (help) {
        cli_usage_command(stdout, "models");
        return CLI_EXIT_OK;
    }
    llmem_ctx *ctx = NULL;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
        cli_error("cannot create a library context (out of memory)");
        return CLI_EXIT_ESTIMATE;
    }
    int status = print_models(ctx, json);
    llmem_ctx_free(ctx);
    return status;
}
