/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <string.h>

static const int term_kinds[CLI_TERMS] = { LLMEM_TERM_PARAMETERS, LLMEM_TERM_OPTIMIZER,
                                           LLMEM_TERM_DATA, LLMEM_TERM_TEMPORARY };
static const int phases[CLI_PHASES] = { LLMEM_PHASE_FORWARD, LLMEM_PHASE_LOSS_BACKWARD,
                                        LLMEM_PHASE_BACKWARD, LLMEM_PHASE_OPTIMIZER };

static int collect_rank(const llmem_estimate *est, size_t k, cli_rank *out)
{
    const struct {
        int key;
        uint64_t *out;
    } results[] = {
        { LLMEM_RANK_STAGE, &out->stage },
        { LLMEM_RANK_LAYER_FIRST, &out->layer_first },
        { LLMEM_RANK_LAYERS, &out->layers },
        { LLMEM_RANK_STAGES, &out->stages },
        { LLMEM_RANK_CHUNKS, &out->chunks },
        { LLMEM_RANK_CHUNK_STRIDE, &out->chunk_stride },
        { LLMEM_RANK_GPUS, &out->gpus },
        { LLMEM_RANK_HOST, &out->host },
        { LLMEM_RANK_IN_FLIGHT_X1000, &out->in_flight_x1000 },
        { LLMEM_EST_PEAK_ALLOCATED, &out->peak_allocated },
        { LLMEM_EST_PEAK_RESERVED, &out->peak_reserved },
        { LLMEM_EST_PEAK_DEVICE, &out->peak_device },
        { LLMEM_EST_PEAK_PHASE, &out->peak_phase },
    };
    int rc;
    for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
        if ((rc = llmem_estimate_rank_get_u64(est, k, results[i].key, results[i].out)) != LLMEM_OK)
            return rc;
    for (int i = 0; i < CLI_PHASES; i++)
        if ((rc = llmem_estimate_rank_phase_bytes(est, k, phases[i], &out->phase_bytes[i])) !=
            LLMEM_OK)
            return rc;
    for (int i = 0; i < CLI_TERMS; i++)
        if ((rc = llmem_estimate_rank_term(est, k, term_kinds[i], &out->term[i])) != LLMEM_OK)
            return rc;
    return LLMEM_OK;
}

int cli_report_collect(const llmem_estimate *est, cli_report *r)
{
    const struct {
        int key;
        uint64_t *out;
    } results[] = {
        { LLMEM_EST_PARAMS_TOTAL, &r->params_total },
        { LLMEM_EST_PARAMS_TRAINABLE, &r->params_trainable },
        { LLMEM_EST_PARAMS_ACTIVE, &r->params_active },
        { LLMEM_EST_PEAK_ALLOCATED, &r->peak_allocated },
        { LLMEM_EST_PEAK_RESERVED, &r->peak_reserved },
        { LLMEM_EST_PEAK_DEVICE, &r->peak_device },
    };
    uint64_t phase = 0;
    int rc;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < sizeof results / sizeof results[0]; i++) {
        if ((rc = llmem_estimate_get_u64(est, results[i].key, results[i].out)) != LLMEM_OK)
            return rc;
    }
    if ((rc = llmem_estimate_get_u64(est, LLMEM_EST_PEAK_PHASE, &phase)) != LLMEM_OK)
        return rc;
    r->peak_phase = (int)phase;
    for (int i = 0; i < CLI_TERMS; i++) {
        r->term_kind[i] = term_kinds[i];
        if ((rc = llmem_estimate_term(est, term_kinds[i], &r->term[i])) != LLMEM_OK)
            return rc;
    }
    for (int i = 0; i < CLI_PHASES; i++) {
        r->phase[i] = phases[i];
        if ((rc = llmem_estimate_phase_bytes(est, phases[i], &r->phase_bytes[i])) != LLMEM_OK)
            return rc;
    }
    r->nranks = llmem_estimate_rank_count(est);
    r->peak_rank = llmem_estimate_peak_rank(est);
    if (r->nranks > CLI_RANKS)
        r->nranks = CLI_RANKS;
    for (size_t k = 0; k < r->nranks; k++)
        if ((rc = collect_rank(est, k, &r->rank[k])) != LLMEM_OK)
            return rc;
    return cli_timeline_read(est, r->peak_rank, &r->timeline);
}

void cli_report_free(cli_report *r)
{
    cli_timeline_free(&r->timeline);
}
