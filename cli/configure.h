/* SPDX-License-Identifier: MIT */
/* From the flags of `llmem estimate` to a library model and training setup. */
#ifndef LLMEM_CLI_CONFIGURE_H
#define LLMEM_CLI_CONFIGURE_H

#include "weights.h"

#include <llmem.h>

/* Where the model came from. */
typedef enum cli_model_source {
    CLI_MODEL_DEFAULT, /* no model flag: CLI_DEFAULT_MODEL */
    CLI_MODEL_PRESET,  /* --model */
    CLI_MODEL_CUSTOM,  /* --family and architecture flags */
    CLI_MODEL_CONFIG   /* --config: a Hugging Face config.json */
} cli_model_source;

#define CLI_GRID_MAX 32 /* values a --batch or --seq list may hold */

typedef struct cli_request {
    llmem_model *model;
    llmem_train *train;
    llmem_parallel *parallel; /* the layout (one GPU unless a layout flag says otherwise) */
    cli_weights weights;     /* --weights (path NULL without it) */
    const char *model_name;  /* the preset's full id, the --config path, or "custom" */
    cli_model_source source;
    int arch_flags;          /* architecture flags applied (a modified preset or config when > 0) */
    int train_flags;         /* training flags applied (0: the library's defaults) */
    int layout_flags;        /* layout flags applied (0: one GPU) */
    int json;
    int help;
    /* Job flags: --capacity, --margin, --max, --top and the planner's fields. */
    uint64_t capacity;       /* --capacity, else --gpu's usable memory; 0: neither */
    int capacity_from_gpu;   /* 1: capacity is --gpu's (no --capacity) */
    int has_gpu;             /* --gpu given: gpu is its catalog index */
    size_t gpu;
    int margin_permille;     /* 50 unless --margin */
    int margin_given;        /* --margin given */
    int max_key;             /* LLMEM_TRAIN_BATCH or _SEQ with --max; 0 without */
    int64_t max_value;       /* what --max found; 0: even the smallest does not fit */
    int64_t max_smallest;    /* with max_value 0: the smallest value the layout takes,
                              * which the setup then holds and the report describes */
    uint64_t budget;         /* the capacity less the margin it was found within */
    const char *max_limited_by; /* what bounded --max's answer: "memory", "max_positions"
                                 * (a model's learned positions) or "field_max" (the
                                 * largest batch or seq the library takes) */
    uint64_t top;            /* plans to print */
    int64_t plan[16];        /* llmem_plan_key -> value given (plan_given bit set) */
    unsigned plan_given;
    const char *svg;         /* --svg FILE */
    int timeline;            /* --timeline */
    /* --batch and --seq given as lists ("1,2,4"): a grid of peaks (cli/grid.c);
     * [0] the batches, [1] the seqs; a count of 0: the train's one value. */
    int64_t grid[2][CLI_GRID_MAX];
    int ngrid[2];
} cli_request;

/* The capacity less the margin: the budget a device peak must fit (the
 * margin's arithmetic of --max, the grid, plan and fit: docs/mig.md,
 * "Fitting"): floor(capacity x (1000 - margin) / 1000), exactly, without
 * overflow; the margin kept free is capacity - this, ceil(capacity x margin / 1000). */
static inline uint64_t cli_usable(uint64_t capacity, int margin_permille)
{
    uint64_t keep = (uint64_t)(1000 - margin_permille);
    return capacity / 1000 * keep + capacity % 1000 * keep / 1000;
}

/* Whether the request asks for a grid. */
static inline int cli_is_grid(const cli_request *req)
{
    return req->ngrid[0] > 0 || req->ngrid[1] > 0;
}

/* The flag targets a command takes (bits 1u << cli_target). */
#define CLI_ACCEPTS(t) (1u << (t))

/* Parse argv (the arguments after "estimate") and build req's model and
 * setup. Returns an exit status; on failure the reason is printed and req
 * holds nothing to free. With --help, returns CLI_EXIT_OK without building. */
int cli_configure(llmem_ctx *ctx, int argc, char **argv, unsigned accepted, const char *command,
                  cli_request *req);
/* Free req's model, setup and weights. */
void cli_request_free(cli_request *req);

#endif
