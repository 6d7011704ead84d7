/* SPDX-License-Identifier: MIT */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

int cli_timeline_read(const llmem_estimate *est, size_t rank, cli_timeline *out)
{
    size_t n = llmem_estimate_timeline_count(est, rank);
    memset(out, 0, sizeof *out);
    if (n == 0)
        return LLMEM_OK;
    out->points = calloc(n, sizeof *out->points);
    if (out->points == NULL)
        return LLMEM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        cli_point *p = &out->points[i];
        int rc = llmem_estimate_timeline_point(est, rank, i, &p->phase, &p->part, &p->layer,
                                               &p->term[0], &p->term[1], &p->term[2], &p->term[3]);
        if (rc != LLMEM_OK) {
            cli_timeline_free(out);
            return rc;
        }
    }
    out->n = n;
    out->peak = llmem_estimate_timeline_peak(est, rank);
    return LLMEM_OK;
}

void cli_timeline_free(cli_timeline *t)
{
    free(t->points);
    t->points = NULL;
    t->n = 0;
}

uint64_t cli_point_total(const cli_point *p)
{
    return p->term[0] + p->term[1] + p->term[2] + p->term[3];
}

void cli_timeline_sparkline(FILE *out, const cli_timeline *t, int width)
{
    static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588" };
    uint64_t peak = t->n ? cli_point_total(&t->points[t->peak]) : 0;
    if (peak == 0 || width <= 0)
        return;
    for (int c = 0; c < width; c++) {
        size_t from = (size_t)c * t->n / (size_t)width, to = (size_t)(c + 1) * t->n / (size_t)width;
        uint64_t best = 0;
        if (to <= from)
            to = from + 1;
        for (size_t i = from; i < to && i < t->n; i++)
            if (cli_point_total(&t->points[i]) > best)
                best = cli_point_total(&t->points[i]);
        int level = (int)((double)best / (double)peak * 7.0 + 0.5);
        fputs(blocks[level < 0 ? 0 : level > 7 ? 7 : level], out);
    }
}

void cli_timeline_json(json_writer *w, const char *key, const cli_timeline *t)
{
    json_array_begin(w, key);
    for (size_t i = 0; i < t->n; i++) {
        const cli_point *p = &t->points[i];
        json_object_begin(w, NULL);
        json_string(w, "phase", llmem_phase_name(p->phase));
        json_string(w, "part", p->part);
        json_i64(w, "layer", p->layer);
        for (int k = 0; k < 4; k++)
            json_u64(w, llmem_term_name(k + 1), p->term[k]);
        json_object_end(w);
    }
    json_array_end(w);
}
