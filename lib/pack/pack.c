/* SPDX-License-Identifier: MIT */
/* The pack handle: settings, the fleet, the jobs, and the result's getters.
 * The run itself is in run.c. What changes the problem (a job or a GPU added,
 * a setting changed) drops the last result, so that no getter or output
 * answers for a problem that is no longer the handle's: they answer as before
 * any run. */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"

#include <string.h>

int llmem_pack_new(llmem_ctx *ctx, llmem_pack **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "pack: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_pack *p = llmem__calloc(ctx, sizeof *p);
    if (p == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    p->ctx = ctx;
    llmem_fields_defaults(&llmem_pack_fields, p->i, p->d);
    *out = p;
    llmem__ok(ctx);
    return LLMEM_OK;
}

/* Drop the last result (GPUs and the types' tables). */
void llmem_pack_drop_result(llmem_pack *p)
{
    llmem__free(p->ctx, p->gpus);
    p->gpus = NULL;
    p->ngpus = 0;
    for (int t = 0; t < PACK_MAX_TYPES; t++)
        llmem_pack_type_free(p->ctx, &p->types[t]);
    memset(p->result, 0, sizeof p->result);
    p->ran = 0;
}

void llmem_pack_clear(llmem_pack *p)
{
    if (p == NULL)
        return;
    llmem_pack_drop_result(p);
    for (size_t j = 0; j < p->njobs; j++)
        llmem__free(p->ctx, p->jobs[j].id);
    llmem__free(p->ctx, p->jobs);
    p->jobs = NULL;
    p->njobs = p->cap_jobs = 0;
    p->ntypes = 0;
}

void llmem_pack_free(llmem_pack *p)
{
    if (p == NULL)
        return;
    llmem_pack_clear(p);
    llmem__free(p->ctx, p);
}

/* A setting changed: the result answered the old one (the margin decides
 * which slices hold a job, the node size numbers the GPUs). */
static void drop_if_changed(llmem_pack *p, const int64_t *before)
{
    if (memcmp(before, p->i, sizeof p->i) != 0)
        llmem_pack_drop_result(p);
}

int llmem_pack_set_int(llmem_pack *p, int key, int64_t value)
{
    int64_t before[PACK_KEY_END];
    if (p == NULL)
        return LLMEM_EINVAL;
    memcpy(before, p->i, sizeof before);
    int rc = llmem_pack_setting_int(p->ctx, &llmem_pack_fields, p->i, key, value);
    drop_if_changed(p, before);
    return rc;
}

int llmem_pack_set_str(llmem_pack *p, int key, const char *value)
{
    int64_t before[PACK_KEY_END];
    if (p == NULL)
        return LLMEM_EINVAL;
    memcpy(before, p->i, sizeof before);
    int rc = llmem_pack_setting_str(p->ctx, &llmem_pack_fields, p->i, key, value);
    drop_if_changed(p, before);
    return rc;
}

int llmem_pack_get_int(const llmem_pack *p, int key, int64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_pack_get_int: out is NULL");
    return llmem_pack_setting_get(p->ctx, &llmem_pack_fields, p->i, key, out);
}

int llmem_pack_field_info(int key, const char **name, int64_t *min, int64_t *max)
{
    return llmem_fields_info(&llmem_pack_fields, key, name, min, max, NULL);
}

int llmem_pack_add_gpu(llmem_pack *p, size_t gpu, uint64_t count)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (llmem_gpu_row(gpu) == NULL)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "pack: no GPU of index %zu", gpu);
    for (int t = 0; t < p->ntypes; t++)
        if (p->type_gpu[t] == gpu) {
            /* 0 stays "as many as needed". */
            if (p->type_limit[t] != 0)
                p->type_limit[t] = count == 0 || count > UINT64_MAX - p->type_limit[t]
                                       ? 0
                                       : p->type_limit[t] + count;
            llmem_pack_drop_result(p);
            llmem__ok(p->ctx);
            return LLMEM_OK;
        }
    if (p->ntypes >= PACK_MAX_TYPES)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "pack: at most %d GPU types", PACK_MAX_TYPES);
    llmem_pack_drop_result(p);
    p->type_gpu[p->ntypes] = gpu;
    p->type_limit[p->ntypes] = count;
    p->ntypes++;
    llmem__ok(p->ctx);
    return LLMEM_OK;
}

int llmem_pack_add_job(llmem_pack *p, const char *id, uint64_t bytes, int level,
                       int64_t min_compute)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (id == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "pack: job id is NULL");
    if (bytes == 0)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "pack: job '%.60s': bytes 0: must be positive",
                           id);
    if (level != LLMEM_LEVEL_DEVICE && level != LLMEM_LEVEL_RESERVED)
        return llmem__fail(p->ctx, LLMEM_EINVAL,
                           "pack: job '%.60s': level %d: the device or the reserved level "
                           "expected", id, level);
    /* The most compute slices of any MIG grid. */
    if (min_compute < 0 || min_compute > 7)
        return llmem__fail(p->ctx, LLMEM_ERANGE,
                           "pack: job '%.60s': min compute %lld out of range [0, 7]", id,
                           (long long)min_compute);
    if (p->njobs == p->cap_jobs) {
        size_t cap = p->cap_jobs ? p->cap_jobs * 2 : 64;
        if (cap > SIZE_MAX / sizeof(pack_job))
            return llmem__fail(p->ctx, LLMEM_ENOMEM, "pack: too many jobs");
        pack_job *jobs = llmem__alloc(p->ctx, cap * sizeof *jobs);
        if (jobs == NULL)
            return llmem__fail(p->ctx, LLMEM_ENOMEM, "pack: out of memory");
        if (p->njobs)
            memcpy(jobs, p->jobs, p->njobs * sizeof *jobs);
        llmem__free(p->ctx, p->jobs);
        p->jobs = jobs;
        p->cap_jobs = cap;
    }
    size_t len = strlen(id);
    char *copy = llmem__alloc(p->ctx, len + 1);
    if (copy == NULL)
        return llmem__fail(p->ctx, LLMEM_ENOMEM, "pack: out of memory");
    memcpy(copy, id, len + 1);
    llmem_pack_drop_result(p);
    pack_job *j = &p->jobs[p->njobs++];
    memset(j, 0, sizeof *j);
    j->id = copy;
    j->bytes = bytes;
    j->level = level;
    j->min_compute = (uint8_t)min_compute;
    llmem__ok(p->ctx);
    return LLMEM_OK;
}

int llmem_pack_get_u64(const llmem_pack *p, int key, uint64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_pack_get_u64: out is NULL");
    if (key < LLMEM_PACK_GPUS_USED || key >= PACK_RESULT_END)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "pack: unknown result key %d", key);
    if (!p->ran)
        return llmem__fail(p->ctx, LLMEM_EINCONSISTENT, "pack: no result (run it first)");
    *out = p->result[key];
    return LLMEM_OK;
}

size_t llmem_pack_job_count(const llmem_pack *p)
{
    return p ? p->njobs : 0;
}

const char *llmem_pack_job_id(const llmem_pack *p, size_t job)
{
    return p != NULL && job < p->njobs ? p->jobs[job].id : NULL;
}

int llmem_pack_job_u64(const llmem_pack *p, size_t job, int key, uint64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_pack_job_u64: out is NULL");
    if (job >= p->njobs)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "pack: job %zu of %zu", job, p->njobs);
    if (!p->ran)
        return llmem__fail(p->ctx, LLMEM_EINCONSISTENT, "pack: no result (run it first)");
    const pack_job *j = &p->jobs[job];
    int placed = j->status == LLMEM_PACK_PLACED;
    const pack_type *t = placed ? &p->types[p->gpus[j->gpu].type] : NULL;
    switch (key) {
    case LLMEM_PACK_JOB_STATUS: *out = (uint64_t)j->status; return LLMEM_OK;
    case LLMEM_PACK_JOB_NEED_BYTES: *out = j->need; return LLMEM_OK;
    case LLMEM_PACK_JOB_SHORTFALL_BYTES: *out = j->shortfall; return LLMEM_OK;
    case LLMEM_PACK_JOB_LARGEST_GPU:
    case LLMEM_PACK_JOB_LARGEST_PROFILE:
        if (j->status != LLMEM_PACK_FITS_NOWHERE)
            return LLMEM_ENOTFOUND;
        *out = key == LLMEM_PACK_JOB_LARGEST_GPU ? j->largest_gpu : j->largest_profile;
        return LLMEM_OK;
    case LLMEM_PACK_JOB_GPU:
    case LLMEM_PACK_JOB_PROFILE:
    case LLMEM_PACK_JOB_START:
    case LLMEM_PACK_JOB_USABLE_BYTES:
    case LLMEM_PACK_JOB_HEADROOM_BYTES:
        if (!placed)
            return LLMEM_ENOTFOUND;
        break;
    default: return llmem__fail(p->ctx, LLMEM_EINVAL, "pack: unknown job key %d", key);
    }
    switch (key) {
    case LLMEM_PACK_JOB_GPU: *out = j->gpu; break;
    case LLMEM_PACK_JOB_PROFILE: *out = t->kind[j->kind].profile; break;
    case LLMEM_PACK_JOB_START: *out = j->start; break;
    case LLMEM_PACK_JOB_USABLE_BYTES: *out = j->usable; break;
    /* Placed: its slice's budget holds the need (llmem_pack_required). */
    default:
        *out = llmem_pack_budget(j->usable, p->i[LLMEM_PACK_MARGIN_PERMILLE]) - j->need;
        break;
    }
    return LLMEM_OK;
}

const char *llmem_pack_job_resource(const llmem_pack *p, size_t job)
{
    if (p == NULL || !p->ran || job >= p->njobs || p->jobs[job].status != LLMEM_PACK_PLACED)
        return NULL;
    const pack_job *j = &p->jobs[job];
    const pack_type *t = &p->types[p->gpus[j->gpu].type];
    if (t->kind[j->kind].whole)
        return "nvidia.com/gpu";
    return llmem_mig_driver_resource(t->gpu, t->kind[j->kind].profile, t->driver);
}

int llmem_pack_gpu_u64(const llmem_pack *p, size_t gpu, int key, uint64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_pack_gpu_u64: out is NULL");
    if (!p->ran)
        return llmem__fail(p->ctx, LLMEM_EINCONSISTENT, "pack: no result (run it first)");
    if (gpu >= p->ngpus)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "pack: gpu %zu of %zu", gpu, p->ngpus);
    const pack_gpu *g = &p->gpus[gpu];
    const pack_type *t = &p->types[g->type];
    switch (key) {
    case LLMEM_PACK_GPU_TYPE: *out = t->gpu; break;
    case LLMEM_PACK_GPU_MIG: *out = !(g->nunits == 1 && t->kind[g->unit[0].kind].whole); break;
    case LLMEM_PACK_GPU_JOBS: *out = g->nunits; break;
    case LLMEM_PACK_GPU_NODE: *out = g->node; break;
    case LLMEM_PACK_GPU_DEVICE: *out = g->device; break;
    default: return llmem__fail(p->ctx, LLMEM_EINVAL, "pack: unknown gpu key %d", key);
    }
    return LLMEM_OK;
}
