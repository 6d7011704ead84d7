/* SPDX-License-Identifier: MIT */
#include "weights.h"

#include "cli.h"
#include "format.h"

#include <stdarg.h>
#include <string.h>

int cli_weights_open(llmem_ctx *ctx, const char *path, cli_weights *w)
{
    const struct {
        int key;
        uint64_t *out;
    } totals[] = {
        { LLMEM_WEIGHTS_PARAMS, &w->params },
        { LLMEM_WEIGHTS_BYTES, &w->bytes },
        { LLMEM_WEIGHTS_TENSORS, &w->tensors },
        { LLMEM_WEIGHTS_FILES, &w->files },
        { LLMEM_WEIGHTS_QUANT_STATE_BYTES, &w->quant_bytes },
        { LLMEM_WEIGHTS_QUANT_STATE_TENSORS, &w->quant_tensors },
    };
    memset(w, 0, sizeof *w);
    int rc = llmem_weights_open(ctx, path, &w->handle);
    for (size_t i = 0; rc == LLMEM_OK && i < sizeof totals / sizeof totals[0]; i++)
        rc = llmem_weights_get_u64(w->handle, totals[i].key, totals[i].out);
    if (rc != LLMEM_OK) {
        cli_weights_close(w);
        return rc;
    }
    w->path = path;
    return LLMEM_OK;
}

void cli_weights_close(cli_weights *w)
{
    llmem_weights_free(w->handle);
    memset(w, 0, sizeof *w);
}

/* "  label                   text" */
static void row(FILE *out, int indent, const char *label, const char *fmt, ...) CLI_PRINTF(4, 5);

static void row(FILE *out, int indent, const char *label, const char *fmt, ...)
{
    va_list ap;
    fprintf(out, "%*s%-*s", indent, "", CLI_ROW_WIDTH - indent, label);
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
}

static void print_cross_check(FILE *out, uint64_t weights, uint64_t model)
{
    char w[CLI_NUMBER_CAP], m[CLI_NUMBER_CAP], d[CLI_NUMBER_CAP];
    cli_format_count(weights, w, sizeof w);
    cli_format_count(model, m, sizeof m);
    if (weights == model) {
        row(out, 2, "vs the model", "matches params_total (%s)", m);
        return;
    }
    cli_format_count(weights > model ? weights - model : model - weights, d, sizeof d);
    row(out, 2, "vs the model", "differs: %s in the weights, %s in the model", w, m);
    /* Checkpoints store buffers (GPT-2's attn.bias masks), tied heads twice or
     * extra layers: a difference is worth a look, not an error. */
    if (weights > model)
        row(out, 2, "", "%s more in the weights (buffers, a tied head saved twice?)", d);
    else
        row(out, 2, "", "%s fewer in the weights (another model, or a partial checkpoint?)", d);
}

void cli_weights_text(FILE *out, const cli_weights *w, const uint64_t *model_params)
{
    char count[CLI_NUMBER_CAP], count_short[CLI_NUMBER_CAP], bytes[CLI_NUMBER_CAP];
    cli_format_count(w->params, count, sizeof count);
    cli_format_count_short(w->params, count_short, sizeof count_short);
    cli_format_bytes(w->bytes, bytes, sizeof bytes);

    fprintf(out, "%-*s%s\n", CLI_LABEL_WIDTH, "Weights", w->path);
    row(out, 2, "parameters", "%s (%s)", count, count_short);
    row(out, 2, "bytes", "%s", bytes);
    row(out, 2, "tensors", "%llu in %llu file%s", (unsigned long long)w->tensors,
        (unsigned long long)w->files, w->files == 1 ? "" : "s");
    fprintf(out, "  by dtype\n");
    for (size_t i = 0; i < llmem_weights_dtype_count(w->handle); i++) {
        const char *name = NULL;
        uint64_t params = 0, nbytes = 0;
        if (llmem_weights_dtype(w->handle, i, &name, &params, &nbytes) != LLMEM_OK)
            continue;
        cli_format_count(params, count, sizeof count);
        cli_format_bytes(nbytes, bytes, sizeof bytes);
        row(out, 4, name, "%s parameters, %s", count, bytes);
    }
    /* Only a bitsandbytes checkpoint has the line: others print as before. */
    if (w->quant_tensors > 0) {
        cli_format_bytes(w->quant_bytes, bytes, sizeof bytes);
        row(out, 2, "quant state", "%s in %llu tensors (bitsandbytes 4-bit: not parameters)",
            bytes, (unsigned long long)w->quant_tensors);
    }
    if (model_params != NULL)
        print_cross_check(out, w->params, *model_params);
}

void cli_weights_json(json_writer *jw, const char *key, const cli_weights *w,
                      const uint64_t *model_params)
{
    json_object_begin(jw, key);
    json_string(jw, "path", w->path);
    json_u64(jw, "params", w->params);
    json_u64(jw, "bytes", w->bytes);
    json_u64(jw, "tensors", w->tensors);
    json_u64(jw, "files", w->files);
    json_object_begin(jw, "dtypes");
    for (size_t i = 0; i < llmem_weights_dtype_count(w->handle); i++) {
        const char *name = NULL;
        uint64_t params = 0, bytes = 0;
        if (llmem_weights_dtype(w->handle, i, &name, &params, &bytes) != LLMEM_OK)
            continue;
        json_object_begin(jw, name);
        json_u64(jw, "params", params);
        json_u64(jw, "bytes", bytes);
        json_object_end(jw);
    }
    json_object_end(jw);
    /* Additive: only a bitsandbytes checkpoint has the key. */
    if (w->quant_tensors > 0) {
        json_object_begin(jw, "quant_state");
        json_u64(jw, "bytes", w->quant_bytes);
        json_u64(jw, "tensors", w->quant_tensors);
        json_object_end(jw);
    }
    if (model_params != NULL) {
        uint64_t m = *model_params, p = w->params;
        uint64_t magnitude = p >= m ? p - m : m - p;
        json_bool(jw, "matches_model", p == m);
        /* Both counts are far below 2^63; a difference that is not is no number to print. */
        if (magnitude <= (uint64_t)INT64_MAX)
            json_i64(jw, "params_difference", p >= m ? (int64_t)magnitude : -(int64_t)magnitude);
        else
            json_string(jw, "params_difference", NULL);
    }
    json_object_end(jw);
}
