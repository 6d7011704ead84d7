/* SPDX-License-Identifier: MIT */
/* The estimate's results as the public getters read them: the most loaded
 * rank's, each rank's, and the timeline's points (with its room, set by
 * llmem_estimate_timeline). */
#include "estimate/estimate.h"

#include "core/ctx.h"

#include <string.h>

static int require_valid(const llmem_estimate *e)
{
    if (e == NULL)
        return LLMEM_EINVAL;
    if (!e->valid)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: not run yet (call llmem_estimate_run)");
    return LLMEM_OK;
}

int llmem_estimate_get_u64(const llmem_estimate *e, int key, uint64_t *out)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "llmem_estimate_get_u64: out is NULL");
    switch (key) {
    case LLMEM_EST_PARAMS_TOTAL: *out = e->r.params_total; break;
    case LLMEM_EST_PARAMS_TRAINABLE: *out = e->r.params_trainable; break;
    case LLMEM_EST_PEAK_ALLOCATED: *out = e->r.peak_allocated; break;
    case LLMEM_EST_PEAK_RESERVED: *out = e->r.peak_reserved; break;
    case LLMEM_EST_PEAK_DEVICE: *out = e->r.peak_device; break;
    case LLMEM_EST_PEAK_PHASE: *out = (uint64_t)e->r.peak_phase; break;
    case LLMEM_EST_PARAMS_ACTIVE: *out = e->r.params_active; break;
    default: return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown result key %d", key);
    }
    return LLMEM_OK;
}

int llmem_estimate_phase_bytes(const llmem_estimate *e, int phase, uint64_t *out)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "llmem_estimate_phase_bytes: out is NULL");
    if (phase < 1 || phase > PHASE_COUNT)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown phase %d", phase);
    *out = e->r.phase_peak[phase - 1];
    return LLMEM_OK;
}

int llmem_estimate_term(const llmem_estimate *e, int kind, const llmem_term **out)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "llmem_estimate_term: out is NULL");
    if (kind < 1 || kind > TERM_COUNT)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown term %d", kind);
    *out = &e->r.term[kind - 1];
    return LLMEM_OK;
}

uint64_t llmem_term_bytes_at_peak(const llmem_term *t)
{
    return t ? t->at_peak : 0;
}

uint64_t llmem_term_max_bytes(const llmem_term *t)
{
    return t ? t->max : 0;
}

size_t llmem_term_component_count(const llmem_term *t)
{
    return t ? t->ncomp : 0;
}

int llmem_term_component(const llmem_term *t, size_t index, const char **name,
                         uint64_t *bytes_at_peak)
{
    if (t == NULL || index >= t->ncomp)
        return LLMEM_EINVAL;
    if (name)
        *name = t->comp_name[index];
    if (bytes_at_peak)
        *bytes_at_peak = t->comp_bytes[index];
    return LLMEM_OK;
}

size_t llmem_estimate_rank_count(const llmem_estimate *e)
{
    return e != NULL && e->valid ? e->nranks : 0;
}

size_t llmem_estimate_peak_rank(const llmem_estimate *e)
{
    return e != NULL && e->valid ? e->peak_rank : 0;
}

static int require_rank(const llmem_estimate *e, size_t rank)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (rank >= e->nranks)
        return llmem__fail(e->ctx, LLMEM_ERANGE, "estimate: rank %zu of %zu", rank, e->nranks);
    return LLMEM_OK;
}

int llmem_estimate_rank_get_u64(const llmem_estimate *e, size_t rank, int key, uint64_t *out)
{
    int rc = require_rank(e, rank);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "llmem_estimate_rank_get_u64: out is NULL");
    const est_results *r = &e->rank[rank];
    const rank_class *c = &e->rank_class[rank];
    switch (key) {
    case LLMEM_EST_PARAMS_TOTAL: *out = r->params_total; break;
    case LLMEM_EST_PARAMS_TRAINABLE: *out = r->params_trainable; break;
    case LLMEM_EST_PEAK_ALLOCATED: *out = r->peak_allocated; break;
    case LLMEM_EST_PEAK_RESERVED: *out = r->peak_reserved; break;
    case LLMEM_EST_PEAK_DEVICE: *out = r->peak_device; break;
    case LLMEM_EST_PEAK_PHASE: *out = (uint64_t)r->peak_phase; break;
    case LLMEM_EST_PARAMS_ACTIVE: *out = r->params_active; break;
    case LLMEM_RANK_STAGE: *out = c->stage; break;
    case LLMEM_RANK_LAYER_FIRST: *out = c->layer_first; break;
    case LLMEM_RANK_LAYERS: *out = c->layers; break;
    case LLMEM_RANK_GPUS: *out = c->gpus; break;
    case LLMEM_RANK_HOST: *out = e->rank_host[rank]; break;
    case LLMEM_RANK_STAGES: *out = c->stages; break;
    case LLMEM_RANK_CHUNKS: *out = c->chunks; break;
    case LLMEM_RANK_CHUNK_STRIDE: *out = c->chunk_stride; break;
    case LLMEM_RANK_IN_FLIGHT_X1000:
        *out = c->in_flight_num * 1000 / (c->in_flight_den ? c->in_flight_den : 1);
        break;
    default: return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown result key %d", key);
    }
    return LLMEM_OK;
}

int llmem_estimate_rank_phase_bytes(const llmem_estimate *e, size_t rank, int phase,
                                    uint64_t *out)
{
    int rc = require_rank(e, rank);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "llmem_estimate_rank_phase_bytes: out is NULL");
    if (phase < 1 || phase > PHASE_COUNT)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown phase %d", phase);
    *out = e->rank[rank].phase_peak[phase - 1];
    return LLMEM_OK;
}

int llmem_estimate_rank_term(const llmem_estimate *e, size_t rank, int kind,
                             const llmem_term **out)
{
    int rc = require_rank(e, rank);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "llmem_estimate_rank_term: out is NULL");
    if (kind < 1 || kind > TERM_COUNT)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown term %d", kind);
    *out = &e->rank[rank].term[kind - 1];
    return LLMEM_OK;
}

int llmem_estimate_timeline(llmem_estimate *e, size_t capacity, int expand)
{
    if (e == NULL)
        return LLMEM_EINVAL;
    if (e->trace != NULL && (capacity == 0 || capacity != e->trace->cap)) {
        llmem__free(e->ctx, e->trace_room);
        llmem__free(e->ctx, e->trace);
        e->trace = NULL;
        e->trace_room = NULL;
    }
    memset(e->trace_count, 0, sizeof e->trace_count);
    if (capacity == 0)
        return LLMEM_OK;
    if (capacity > SIZE_MAX / (RANKS_MAX * sizeof(trace_point)))
        return llmem__fail(e->ctx, LLMEM_ERANGE, "timeline: %zu points is too many", capacity);
    if (e->trace == NULL) {
        e->trace = llmem__calloc(e->ctx, sizeof *e->trace);
        e->trace_room = llmem__alloc(e->ctx, RANKS_MAX * capacity * sizeof(trace_point));
        if (e->trace == NULL || e->trace_room == NULL) {
            llmem__free(e->ctx, e->trace);
            llmem__free(e->ctx, e->trace_room);
            e->trace = NULL;
            e->trace_room = NULL;
            return llmem__fail(e->ctx, LLMEM_ENOMEM, "timeline: out of memory");
        }
        e->trace->cap = capacity;
    }
    e->trace->expand = expand != 0;
    llmem__ok(e->ctx);
    return LLMEM_OK;
}

size_t llmem_estimate_timeline_count(const llmem_estimate *e, size_t rank)
{
    if (e == NULL || !e->valid || e->trace == NULL || rank >= e->nranks)
        return 0;
    return e->trace_count[rank];
}

size_t llmem_estimate_timeline_peak(const llmem_estimate *e, size_t rank)
{
    if (llmem_estimate_timeline_count(e, rank) == 0)
        return 0;
    return e->trace_peak[rank];
}

int llmem_estimate_timeline_point(const llmem_estimate *e, size_t rank, size_t index, int *phase,
                                  const char **part, int64_t *layer, uint64_t *parameters,
                                  uint64_t *optimizer, uint64_t *data, uint64_t *temporary)
{
    if (e == NULL)
        return LLMEM_EINVAL;
    if (index >= llmem_estimate_timeline_count(e, rank))
        return llmem__fail(e->ctx, LLMEM_ERANGE, "timeline: point %zu of %zu", index,
                           llmem_estimate_timeline_count(e, rank));
    const trace_point *p = &e->trace_room[rank * e->trace->cap + index];
    const step_static *st = &e->rank_static[rank];
    uint64_t params = statics_params(st);
    uint64_t opt = statics_optimizer_held(st) + p->grads;
    if (phase)
        *phase = p->phase;
    if (part)
        *part = p->part;
    if (layer)
        *layer = p->layer;
    if (parameters)
        *parameters = params;
    if (optimizer)
        *optimizer = opt;
    if (data)
        *data = st->batch;
    if (temporary)
        *temporary = p->total - params - opt - st->batch;
    return LLMEM_OK;
}
