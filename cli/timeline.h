/* SPDX-License-Identifier: MIT */
/* The step's timeline as the library records it (llmem_estimate_timeline):
 * read once, then drawn as a sparkline, written as JSON, or as an SVG. */
#ifndef LLMEM_CLI_TIMELINE_H
#define LLMEM_CLI_TIMELINE_H

#include "json.h"

#include <llmem.h>
#include <stdint.h>
#include <stdio.h>

/* Room the command asks the library for, per rank. */
#define CLI_TIMELINE_CAP 65536

typedef struct cli_point {
    int phase;
    const char *part;
    int64_t layer;
    uint64_t term[4]; /* parameters, optimizer, data, temporary */
} cli_point;

typedef struct cli_timeline {
    cli_point *points; /* malloc'ed */
    size_t n, peak;
} cli_timeline;

/* Read rank's timeline; 0, or an llmem status (LLMEM_ENOMEM). */
int cli_timeline_read(const llmem_estimate *est, size_t rank, cli_timeline *out);
void cli_timeline_free(cli_timeline *t);
uint64_t cli_point_total(const cli_point *p);

/* One line of Unicode blocks, `width` wide: each the largest total of its share. */
void cli_timeline_sparkline(FILE *out, const cli_timeline *t, int width);
/* The points as a JSON array under key. */
void cli_timeline_json(json_writer *w, const char *key, const cli_timeline *t);
/* A self-contained SVG 1.1 picture: phases banded, the four terms stacked,
 * the peak marked, the capacity as a line when not 0. Returns 0 or errno. */
int cli_timeline_svg(FILE *out, const cli_timeline *t, const char *title, uint64_t capacity);

#endif
