/* SPDX-License-Identifier: MIT */
/* The catalog's public getters: index-based reads of the const tables. */
#include "gpu/gpu.h"

#include "llmem.h"

size_t llmem_gpu_count(void)
{
    return llmem_gpu_rows();
}

const char *llmem_gpu_name(size_t gpu)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    return g ? g->id.name : NULL;
}

int llmem_gpu_get_u64(size_t gpu, int key, uint64_t *out)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    if (out == NULL)
        return LLMEM_EINVAL;
    if (g == NULL)
        return LLMEM_ERANGE;
    const arch_desc *a = llmem_gpu_arch_row(g->arch);
    switch (key) {
    case LLMEM_GPU_USABLE_BYTES: *out = g->usable; break;
    case LLMEM_GPU_USABLE_ESTIMATED: *out = (uint64_t)g->usable_estimated; break;
    case LLMEM_GPU_CONTEXT_BYTES: *out = a->context; break;
    case LLMEM_GPU_WORKSPACE_BYTES: *out = a->workspace; break;
    case LLMEM_GPU_SMS: *out = g->sms; break;
    case LLMEM_GPU_COMPUTE_CAPABILITY: *out = a->capability; break;
    case LLMEM_GPU_MIG_PROFILES: *out = g->mig ? g->mig->count : 0; break;
    case LLMEM_GPU_MIG_SLOTS: *out = g->mig ? g->mig->slots : 0; break;
    case LLMEM_GPU_MIG_COMPUTE_SLICES: *out = g->mig ? g->mig->compute : 0; break;
    case LLMEM_GPU_CONTEXT_ESTIMATED: *out = (uint64_t)a->context_estimated; break;
    default: return LLMEM_EINVAL;
    }
    return LLMEM_OK;
}

const char *llmem_gpu_get_str(size_t gpu, int key)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    if (g == NULL)
        return NULL;
    switch (key) {
    case LLMEM_GPU_ARCH: return llmem_gpu_arch_row(g->arch)->name;
    case LLMEM_GPU_DEVICE_NAME: return g->device_name;
    case LLMEM_GPU_MEMORY_SOURCE: return g->source;
    case LLMEM_GPU_CONSTANTS_SOURCE: return llmem_gpu_arch_row(g->arch)->source;
    case LLMEM_GPU_ALIASES: return g->aliases;
    default: return NULL;
    }
}

const char *llmem_mig_profile_name(size_t gpu, size_t profile)
{
    const mig_profile_desc *p = llmem_gpu_profile(gpu, profile);
    return p ? p->name : NULL;
}

const char *llmem_mig_profile_resource(size_t gpu, size_t profile)
{
    const mig_profile_desc *p = llmem_gpu_profile(gpu, profile);
    return p ? p->resource : NULL;
}

/* The profile as branch driver has it, or NULL. */
static const mig_profile_desc *on_driver(size_t gpu, size_t profile, int64_t driver)
{
    const mig_profile_desc *p = llmem_gpu_profile(gpu, profile);
    if (p == NULL || driver < 0 || driver > GPU_DRIVER_MAX || !llmem_mig_on_driver(p, driver))
        return NULL;
    return p;
}

const char *llmem_mig_profile_driver_name(size_t gpu, size_t profile, int64_t driver)
{
    return on_driver(gpu, profile, driver) ? llmem_mig_driver_name(gpu, profile, driver) : NULL;
}

const char *llmem_mig_profile_driver_resource(size_t gpu, size_t profile, int64_t driver)
{
    return on_driver(gpu, profile, driver) ? llmem_mig_driver_resource(gpu, profile, driver)
                                           : NULL;
}

const char *llmem_mig_profile_source(size_t gpu, size_t profile)
{
    const mig_profile_desc *p = llmem_gpu_profile(gpu, profile);
    return p ? p->source : NULL;
}

int llmem_mig_profile_get_u64(size_t gpu, size_t profile, int key, uint64_t *out)
{
    const mig_profile_desc *p = llmem_gpu_profile(gpu, profile);
    if (out == NULL)
        return LLMEM_EINVAL;
    if (p == NULL)
        return LLMEM_ERANGE;
    switch (key) {
    case LLMEM_MIG_USABLE_BYTES: *out = p->usable; break;
    case LLMEM_MIG_COMPUTE_SLICES: *out = p->compute; break;
    case LLMEM_MIG_SLOTS: *out = p->slots; break;
    case LLMEM_MIG_STARTS: *out = p->starts; break;
    case LLMEM_MIG_MAX_COUNT: *out = p->max_count; break;
    case LLMEM_MIG_SMS: *out = p->sms; break;
    case LLMEM_MIG_VARIANT: *out = p->variant; break;
    case LLMEM_MIG_UNCERTAIN: *out = p->uncertain; break;
    case LLMEM_MIG_SINCE_DRIVER: *out = p->since; break;
    default: return LLMEM_EINVAL;
    }
    return LLMEM_OK;
}
