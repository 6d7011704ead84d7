/* SPDX-License-Identifier: MIT */
/* --gpu's verdict on a device-level peak, for `llmem estimate` and `llmem
 * plan`: the GPU's constants, the capacity the peak is compared with
 * (--capacity, else the GPU's usable memory), whether it fits with --margin
 * kept free (as --max, plan and fit decide), and the headroom. */
#ifndef LLMEM_CLI_GPU_FIT_H
#define LLMEM_CLI_GPU_FIT_H

#include "configure.h"
#include "json.h"

#include <stdint.h>
#include <stdio.h>

typedef struct cli_gpu_fit {
    const char *name, *device_name, *arch;
    uint64_t usable, context, workspace; /* the catalog's */
    uint64_t capacity;                   /* what the peak is compared with */
    int capacity_from_gpu;               /* 0: --capacity */
    int margin_permille;
    int has_peak;                        /* 0: no peak to judge (a plan where nothing fits) */
    uint64_t peak;
    int fits;                            /* peak <= floor(capacity x (1000 - margin) / 1000) */
    int64_t headroom;                    /* capacity - peak; negative: short by */
} cli_gpu_fit;

/* The verdict on peak (has_peak 0: none); 0 without --gpu. */
int cli_gpu_fit_of(const cli_request *req, int has_peak, uint64_t peak, cli_gpu_fit *out);
/* The "GPU" and "Fits" lines of a table; what: "device peak", "best layout's peak". */
void cli_gpu_fit_text(FILE *out, const cli_gpu_fit *g, const char *what);
/* The "gpu" object of the JSON. */
void cli_gpu_fit_json(json_writer *w, const cli_gpu_fit *g);
/* What a device peak must fit, for messages: "37.42 GiB (A100-40GB's 39.39 GiB
 * usable less 5%)", or "7.60 GiB (--capacity 8.00 GiB less 5%)". */
void cli_capacity_text(const cli_request *req, char *buf, size_t cap);

#endif
