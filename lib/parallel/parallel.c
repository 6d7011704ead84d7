/* SPDX-License-Identifier: MIT */
/* The layout handle: fields set and read through the field engine. */
#include "parallel/parallel.h"

#include "core/ctx.h"

int llmem_parallel_new(llmem_ctx *ctx, llmem_parallel **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "parallel: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_parallel *p = llmem__calloc(ctx, sizeof *p);
    if (p == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "parallel: out of memory");
    p->ctx = ctx;
    llmem_fields_defaults(&llmem_parallel_fields, p->i, p->unused);
    *out = p;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_parallel_free(llmem_parallel *p)
{
    if (p != NULL)
        llmem__free(p->ctx, p);
}

int llmem_parallel_set_int(llmem_parallel *p, int key, int64_t value)
{
    const field_desc *f;
    if (p == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_fields_accept_int(p->ctx, &llmem_parallel_fields, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    p->i[key] = value;
    llmem__ok(p->ctx);
    return LLMEM_OK;
}

int llmem_parallel_set_str(llmem_parallel *p, int key, const char *value)
{
    const field_desc *f;
    int64_t v = 0;
    double unused = 0;
    if (p == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_fields_accept_str(p->ctx, &llmem_parallel_fields, key, value, &v, &unused, &f);
    if (rc != LLMEM_OK)
        return rc;
    p->i[key] = v;
    llmem__ok(p->ctx);
    return LLMEM_OK;
}

int llmem_parallel_get_int(const llmem_parallel *p, int key, int64_t *out)
{
    if (p == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "llmem_parallel_get_int: out is NULL");
    if (llmem_fields_find(&llmem_parallel_fields, key) == NULL)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "parallel: unknown field key %d", key);
    *out = p->i[key];
    return LLMEM_OK;
}

int llmem_parallel_field_info(int key, const char **name, int64_t *min, int64_t *max)
{
    return llmem_fields_info(&llmem_parallel_fields, key, name, min, max, NULL);
}

const char *llmem_parallel_value_name(int key, int64_t value)
{
    return llmem_fields_value_name(&llmem_parallel_fields, key, value);
}

const char *llmem_parallel_choice(int key, size_t index, int64_t *value)
{
    return llmem_fields_choice(&llmem_parallel_fields, key, index, value);
}

uint64_t llmem_parallel_gpus(const llmem_parallel *p)
{
    if (p == NULL)
        return 1;
    return (uint64_t)p->i[LLMEM_PARALLEL_DP] * (uint64_t)p->i[LLMEM_PARALLEL_TP] *
           (uint64_t)p->i[LLMEM_PARALLEL_PP] * (uint64_t)p->i[LLMEM_PARALLEL_CP];
}
