/* SPDX-License-Identifier: MIT */
#include "core/ctx.h"

#include <stdarg.h>
#include <stddef.h>
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

/* The first published llmem_allocator (0.1.0): size, alloc, free, user. Later
 * versions only append members, so a caller built against any header passes
 * at least this many bytes; it is frozen, not sizeof, which grows. */
#define ALLOCATOR_SIZE_V1 (offsetof(llmem_allocator, user) + sizeof(void *))

int llmem_ctx_new(llmem_ctx **out, const llmem_allocator *allocator)
{
    llmem_allocator chosen = { sizeof(llmem_allocator), default_alloc, default_free, NULL };
    if (out == NULL)
        return LLMEM_EINVAL;
    *out = NULL;
    if (allocator != NULL) {
        /* Members past the caller's size keep their defaults. */
        size_t given = allocator->size;
        if (given < ALLOCATOR_SIZE_V1 || allocator->alloc == NULL || allocator->free == NULL)
            return LLMEM_EINVAL;
        memcpy(&chosen, allocator, given < sizeof chosen ? given : sizeof chosen);
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

/* Where a message too long for buf (of cap bytes, cap > 4) is cut: after the
 * last whole word or list item that leaves room for "...". */
void llmem__ellipsize(char *buf, size_t cap)
{
    size_t end = cap - 4; /* "..." and its terminator */
    while (end > 0 && strchr(" |,;:", buf[end]) == NULL)
        end--;
    if (end == 0)
        end = cap - 4; /* one word longer than the buffer: cut it */
    memcpy(buf + end, "...", 4);
}

LLMEM_PRINTF(4, 0)
static void set_message(llmem_ctx *ctx, int object, int key, const char *fmt, va_list ap)
{
    int n = vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    if (n >= (int)sizeof ctx->error)
        llmem__ellipsize(ctx->error, sizeof ctx->error);
    ctx->error_object = object;
    ctx->error_key = key;
}

int llmem__fail(llmem_ctx *ctx, int status, const char *fmt, ...)
{
    if (ctx != NULL) {
        va_list ap;
        va_start(ap, fmt);
        set_message(ctx, 0, 0, fmt, ap);
        va_end(ap);
    }
    return status;
}

int llmem__fail_field(llmem_ctx *ctx, int object, int key, int status, const char *fmt, ...)
{
    if (ctx != NULL) {
        va_list ap;
        va_start(ap, fmt);
        set_message(ctx, object, key, fmt, ap);
        va_end(ap);
    }
    return status;
}

int llmem__fail_from(llmem_ctx *ctx, const llmem_ctx *from, int status)
{
    /* The same context already holds it (and copying it onto itself would overlap). */
    if (ctx == NULL || from == NULL || ctx == from)
        return status;
    return llmem__fail_field(ctx, from->error_object, from->error_key, status, "%s", from->error);
}

void llmem__ok(llmem_ctx *ctx)
{
    if (ctx != NULL) {
        ctx->error[0] = '\0';
        ctx->error_object = ctx->error_key = 0;
    }
}

int llmem_ctx_error_field(const llmem_ctx *ctx, int *object, int *key)
{
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (object)
        *object = ctx->error_object;
    if (key)
        *key = ctx->error_key;
    return ctx->error_key != 0 ? LLMEM_OK : LLMEM_ENOTFOUND;
}
