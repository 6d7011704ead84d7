/* SPDX-License-Identifier: MIT */
/* The planner handle: fields, results and rejections. */
#include "plan/plan.h"

#include "core/ctx.h"
#include "gpu/gpu.h"
#include "train/train.h"

#include <string.h>

int llmem_plan_new(llmem_ctx *ctx, llmem_plan **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "plan: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_plan *p = llmem__calloc(ctx, sizeof *p);
    if (p == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "plan: out of memory");
    p->ctx = ctx;
    llmem_fields_defaults(&llmem_plan_fields, p->i, p->unused);
    if (llmem_estimate_new(ctx, &p->est) != LLMEM_OK ||
        llmem_parallel_new(ctx, &p->layout) != LLMEM_OK) {
        llmem_plan_free(p);
        return llmem__fail(ctx, LLMEM_ENOMEM, "plan: out of memory");
    }
    *out = p;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_plan_free(llmem_plan *p)
{
    if (p == NULL)
        return;
    llmem_estimate_free(p->est);
    llmem_parallel_free(p->layout);
    llmem__free(p->ctx, p->results);
    llmem__free(p->ctx, p);
}

int llmem_plan_set_int(llmem_plan *p, int key, int64_t value)
{
    const field_desc *f;
    if (p == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_fields_accept_int(p->ctx, &llmem_plan_fields, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    p->i[key] = value;
    llmem__ok(p->ctx);
    return LLMEM_OK;
}

int llmem_plan_get_int(const llmem_plan *p, int key, int64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_plan_get_int: out is NULL");
    if (llmem_fields_find(&llmem_plan_fields, key) == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "plan: unknown field key %d", key);
    *out = p->i[key];
    return LLMEM_OK;
}

int llmem_plan_field_info(int key, const char **name, int64_t *min, int64_t *max)
{
    return llmem_fields_info(&llmem_plan_fields, key, name, min, max, NULL);
}

uint64_t llmem_plan_gpu_bytes(const llmem_plan *p, const llmem_train *train)
{
    int64_t gpu = train->i[LLMEM_TRAIN_GPU];
    if (p->i[LLMEM_PLAN_GPU_BYTES] != 0 || gpu == 0)
        return (uint64_t)p->i[LLMEM_PLAN_GPU_BYTES];
    return llmem_gpu_row((size_t)gpu - 1)->usable;
}

uint64_t llmem_plan_gpus_per_node(const llmem_plan *p)
{
    int64_t per_node = p->i[LLMEM_PLAN_GPUS_PER_NODE];
    return (uint64_t)(per_node != 0 ? per_node : p->i[LLMEM_PLAN_GPUS]);
}

int llmem_plan_run(llmem_plan *p, llmem_model *model, const llmem_train *train)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (model == NULL || train == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "plan: model or train is NULL");
    if (llmem_plan_gpu_bytes(p, train) == 0)
        return llmem__fail_field(p->ctx, LLMEM_OBJECT_PLAN, LLMEM_PLAN_GPU_BYTES,
                                 LLMEM_EINCONSISTENT,
                                 "gpu-bytes: not set (the memory one GPU holds; or name the "
                                 "GPU in the training setup)");
    /* The cost model places ranks node by node (cost.c): a job larger than
     * a node takes whole nodes, or some groups would straddle a partial one. */
    int64_t gpus = p->i[LLMEM_PLAN_GPUS], per_node = (int64_t)llmem_plan_gpus_per_node(p);
    if (gpus > per_node && gpus % per_node != 0)
        return llmem__fail_field(p->ctx, LLMEM_OBJECT_PLAN, LLMEM_PLAN_GPUS_PER_NODE,
                                 LLMEM_EINCONSISTENT,
                                 "gpus-per-node: %lld does not divide gpus %lld (a job on more "
                                 "GPUs than a node holds takes whole nodes)",
                                 (long long)per_node, (long long)gpus);
    /* Training fields the planner decides itself. */
    if (train->i[LLMEM_TRAIN_BATCH] != 1)
        return llmem__fail_field(p->ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_BATCH, LLMEM_EINCONSISTENT,
                                 "batch: %lld is not read: the planner solves the micro-batch "
                                 "(global-batch sets what a step takes); leave batch at its "
                                 "default (1)",
                                 (long long)train->i[LLMEM_TRAIN_BATCH]);
    if (p->i[LLMEM_PLAN_GLOBAL_BATCH] > 0 && train->i[LLMEM_TRAIN_GRAD_ACCUM] != 1)
        return llmem__fail_field(p->ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_GRAD_ACCUM,
                                 LLMEM_EINCONSISTENT,
                                 "grad-accum: %lld with global-batch %lld: the planner's "
                                 "micro-batches are the accumulation; leave grad-accum at its "
                                 "default (1)",
                                 (long long)train->i[LLMEM_TRAIN_GRAD_ACCUM],
                                 (long long)p->i[LLMEM_PLAN_GLOBAL_BATCH]);
    if (train->i[LLMEM_TRAIN_FORMULA] == LLMEM_FORMULA_ARTICLE && gpus > 1)
        return llmem__fail_field(p->ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_FORMULA,
                                 LLMEM_EINCONSISTENT,
                                 "formula: the article's sum is for one GPU, not %lld; plan with "
                                 "the phased formula (the default)",
                                 (long long)gpus);
    p->nresults = 0;
    p->nreject = 0;
    int rc = llmem_plan_search(p, model, train);
    if (rc == LLMEM_OK)
        llmem__ok(p->ctx);
    return rc;
}

size_t llmem_plan_result_count(const llmem_plan *p)
{
    return p ? p->nresults : 0;
}

int llmem_plan_result_get_u64(const llmem_plan *p, size_t index, int key, uint64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_plan_result_get_u64: out is NULL");
    if (index >= p->nresults)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "plan: result %zu of %zu", index, p->nresults);
    const plan_result *r = &p->results[index];
    switch (key) {
    case LLMEM_PLAN_MICRO_BATCH: *out = r->micro_batch; break;
    case LLMEM_PLAN_MICRO_BATCHES: *out = r->micro_batches; break;
    case LLMEM_PLAN_GRAD_CKPT: *out = (uint64_t)r->grad_ckpt; break;
    case LLMEM_PLAN_PEAK_DEVICE: *out = r->peak_device; break;
    case LLMEM_PLAN_HEADROOM: *out = r->headroom; break;
    case LLMEM_PLAN_COMM_BYTES: *out = r->comm_bytes; break;
    case LLMEM_PLAN_BUBBLE_PERMILLE: *out = r->bubble_permille; break;
    case LLMEM_PLAN_TOKENS_PER_SECOND: *out = (uint64_t)(r->tokens_per_second + 0.5); break;
    default: return llmem__fail(p->ctx, LLMEM_EINVAL, "plan: unknown result key %d", key);
    }
    return LLMEM_OK;
}

int llmem_plan_result_layout(const llmem_plan *p, size_t index, llmem_parallel *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_plan_result_layout: layout is NULL");
    if (index >= p->nresults)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "plan: result %zu of %zu", index, p->nresults);
    for (int key = LLMEM_PARALLEL_DP; key < PARALLEL_KEY_END; key++) {
        int rc = llmem_parallel_set_int(out, key, p->results[index].layout[key]);
        if (rc != LLMEM_OK)
            return rc;
    }
    return LLMEM_OK;
}

size_t llmem_plan_rejected_count(const llmem_plan *p)
{
    return p ? p->nreject : 0;
}

int llmem_plan_rejected(const llmem_plan *p, size_t index, const char **reason,
                        uint64_t *layouts, const char **example)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (index >= p->nreject)
        return llmem__fail(p->ctx, LLMEM_ERANGE, "plan: rejected kind %zu of %zu", index,
                           p->nreject);
    if (reason)
        *reason = p->reject[index].reason;
    if (layouts)
        *layouts = p->reject[index].layouts;
    if (example)
        *example = p->reject[index].example;
    return LLMEM_OK;
}
