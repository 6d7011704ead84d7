/* SPDX-License-Identifier: MIT */
#include "core/ctx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user, size_t bytes)
{
    (void)user;
    return malloc(bytes);
}

static void default_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

int llmem_ctx_new(llmem_ctx **out, const llmem_allocator *allocator)
{
    llmem_allocator chosen = { sizeof(llmem_allocator), default_alloc, default_free, NULL };
    if (out == NULL)
        return LLMEM_EINVAL;
    *out = NULL;
    if (allocator != NULL) {
        /* Older callers may pass a smaller struct; all members so far are required. */
        if (allocator->size < sizeof(llmem_allocator) || allocator->alloc == NULL ||
            allocator->free == NULL)
            return LLMEM_EINVAL;
        chosen = *allocator;
        chosen.size = sizeof(llmem_allocator);
    }
    llmem_ctx *ctx = chosen.alloc(chosen.user, sizeof *ctx);
    if (ctx == NULL)
        return LLMEM_ENOMEM;
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = chosen;
    *out = ctx;
    return LLMEM_OK;
}

void llmem_ctx_free(llmem_ctx *ctx)
{
    if (ctx != NULL)
        ctx->allocator.free(ctx->allocator.user, ctx);
}

const char *llmem_ctx_error(const llmem_ctx *ctx)
{
    return ctx != NULL ? ctx->error : "";
}

void *llmem__alloc(llmem_ctx *ctx, size_t bytes)
{
    return ctx->allocator.alloc(ctx->allocator.user, bytes);
}

void *llmem__calloc(llmem_ctx *ctx, size_t bytes)
{
    void *p = llmem__alloc(ctx, bytes);
    if (p != NULL)
        memset(p, 0, bytes);
    return p;
}

void llmem__free(llmem_ctx *ctx, void *ptr)
{
    if (ptr != NULL)
        ctx->allocator.free(ctx->allocator.user, ptr);
}

int llmem__fail(llmem_ctx *ctx, int status, const char *fmt, ...)
{
    if (ctx != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
        va_end(ap);
    }
    return status;
}

void llmem__ok(llmem_ctx *ctx)
{
    if (ctx != NULL)
        ctx->error[0] = '\0';
}
