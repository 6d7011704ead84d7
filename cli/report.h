/* SPDX-License-Identifier: MIT */
/* The results of one estimate, read once from the library, and the two ways
 * of printing them. */
#ifndef LLMEM_CLI_REPORT_H
#define LLMEM_CLI_REPORT_H

#include "configure.h"
#include "timeline.h"

#include <llmem.h>
#include <stdint.h>
#include <stdio.h>

/* The article's four terms and the four phases of a step (llmem.h). */
#define CLI_TERMS 4
#define CLI_PHASES 4

/* One rank class whose memory differs (pipeline stages alike). The library
 * reports at most 10 (a first and a last stage, runs of middle stages). */
#define CLI_RANKS 16
typedef struct cli_rank {
    uint64_t stage, stages, layer_first, layers, chunks, chunk_stride, gpus, host,
        in_flight_x1000;
    uint64_t peak_allocated, peak_reserved, peak_device, peak_phase;
    uint64_t phase_bytes[CLI_PHASES];
    const llmem_term *term[CLI_TERMS]; /* owned by the estimate */
} cli_rank;

typedef struct cli_report {
    uint64_t params_total, params_trainable, params_active;
    int term_kind[CLI_TERMS];        /* LLMEM_TERM_* */
    const llmem_term *term[CLI_TERMS]; /* owned by the estimate */
    int phase[CLI_PHASES];           /* LLMEM_PHASE_* */
    uint64_t phase_bytes[CLI_PHASES];
    uint64_t peak_allocated, peak_reserved, peak_device;
    int peak_phase; /* LLMEM_PHASE_*, or 0 with the article's formula */
    size_t nranks, peak_rank;
    cli_rank rank[CLI_RANKS];
    cli_timeline timeline; /* the most loaded rank's; empty with the article's formula */
} cli_report;

/* Read the results of a successful llmem_estimate_run(). Returns an llmem status. */
int cli_report_collect(const llmem_estimate *est, cli_report *r);
/* Free what collect allocated (the timeline). */
void cli_report_free(cli_report *r);

/* The readable table. Returns an llmem status (reading the settings). */
int cli_report_text(FILE *out, const cli_request *req, const cli_report *r);
/* One JSON object. Returns an llmem status (reading the settings). */
int cli_report_json(FILE *out, const cli_request *req, const cli_report *r);

/* A grid (--batch and --seq lists): the peak of each point, batch by batch
 * and seq by seq within (peak[i * seqs + j]), with r the last point's
 * results for the model and layout lines. Return an llmem status. */
typedef struct cli_grid {
    const int64_t *batch, *seq;
    size_t batches, seqs;
    const uint64_t *peak; /* device level */
} cli_grid;
int cli_grid_text(FILE *out, const cli_request *req, const cli_report *r, const cli_grid *g);
int cli_grid_json(FILE *out, const cli_request *req, const cli_report *r, const cli_grid *g);

#endif
