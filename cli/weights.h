/* SPDX-License-Identifier: MIT */
/* Safetensors weights read by their headers (`llmem weights PATH`, and
 * `llmem estimate --weights PATH`): the totals, and the two ways of printing
 * them, with an optional cross-check against a model's parameter count. */
#ifndef LLMEM_CLI_WEIGHTS_H
#define LLMEM_CLI_WEIGHTS_H

#include "json.h"

#include <llmem.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli_weights {
    const char *path;      /* as given; NULL: no weights */
    llmem_weights *handle; /* owns the dtype names */
    uint64_t params, bytes, tensors, files;
    uint64_t quant_bytes, quant_tensors; /* bitsandbytes 4-bit state, in bytes and tensors */
} cli_weights;

/* Read the headers at path (a .safetensors file, an index .json or a
 * directory). Returns an llmem status; on failure the context holds the
 * message and w holds nothing to free. */
int cli_weights_open(llmem_ctx *ctx, const char *path, cli_weights *w);
/* Free what cli_weights_open() read; a zeroed w is allowed. */
void cli_weights_close(cli_weights *w);

/* The "Weights" section of a table. model_params: the model's params_total
 * to compare with, or NULL for none. */
void cli_weights_text(FILE *out, const cli_weights *w, const uint64_t *model_params);
/* The weights as one JSON object under key (NULL at the top level); with
 * model_params, also matches_model and params_difference (weights - model). */
void cli_weights_json(json_writer *jw, const char *key, const cli_weights *w,
                      const uint64_t *model_params);

#endif
