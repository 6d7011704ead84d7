/* SPDX-License-Identifier: MIT */
/* The verdict on a device-level peak against a capacity (--gpu's usable
 * memory, or --capacity), for `llmem estimate` (one step, --max, a grid) and
 * `llmem plan`: the GPU's constants when --gpu names one, the usable bytes,
 * the margin kept free of them and the budget left for the peak, whether the
 * peak fits the budget, and the headroom. Every output gives these keys one
 * meaning: usable (no margin), margin, budget = usable - margin, headroom =
 * budget - peak (negative: short by), fits = headroom >= 0. */
#ifndef LLMEM_CLI_GPU_FIT_H
#define LLMEM_CLI_GPU_FIT_H

#include "configure.h"
#include "json.h"

#include <stdint.h>
#include <stdio.h>

typedef struct cli_gpu_fit {
    int named;                            /* --gpu given: the next four are its */
    const char *name, *device_name, *arch;
    uint64_t gpu_usable, context, workspace; /* the catalog's */
    uint64_t usable;                     /* what the peak is measured against: --capacity,
                                          * else the GPU's usable memory */
    int capacity_from_gpu;               /* 0: --capacity */
    int margin_permille;
    uint64_t margin;                     /* usable - budget: ceil(usable x margin / 1000) */
    uint64_t budget;                     /* floor(usable x (1000 - margin) / 1000) */
    int has_peak;                        /* 0: no peak to judge (a plan where nothing fits) */
    uint64_t peak;
    int fits;                            /* peak <= budget */
    int64_t headroom;                    /* budget - peak; negative: short by (saturated) */
} cli_gpu_fit;

/* budget - peak as a signed count, saturated at the int64 range. */
int64_t cli_headroom(uint64_t budget, uint64_t peak);
/* The verdict on peak (has_peak 0: none); 0 without a capacity (neither --gpu
 * nor --capacity). */
int cli_gpu_fit_of(const cli_request *req, int has_peak, uint64_t peak, cli_gpu_fit *out);
/* The "GPU" (with --gpu) and "Fits" lines of a table; what: "device peak",
 * "the best layout's device peak". */
void cli_gpu_fit_text(FILE *out, const cli_gpu_fit *g, const char *what);
/* The "gpu" object of the JSON (name, device_name, arch, context_bytes,
 * workspace_bytes and gpu_usable_bytes null without --gpu). */
void cli_gpu_fit_json(json_writer *w, const cli_gpu_fit *g);
/* What a device peak must fit, for messages: "37.42 GiB (A100-40GB's 39.39 GiB
 * usable less 5%)", or "7.60 GiB (--capacity 8.00 GiB less 5%)". */
void cli_capacity_text(const cli_request *req, char *buf, size_t cap);

#endif
