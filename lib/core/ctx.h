/* SPDX-License-Identifier: MIT */
/* Context internals: the allocator and the last error message. */
#ifndef LLMEM_CORE_CTX_H
#define LLMEM_CORE_CTX_H

#include "core/compiler.h"
#include "llmem.h"

/* Room for the longest message the library writes: an unknown name's
 * message lists every name the field takes (the optimizers with their
 * Trainer spellings, about 400 bytes; the LoRA module names, about 350), a
 * suggestion and the text given (up to a few hundred bytes more), with
 * margin. A message that still does not fit ends in "..." at a word's end
 * (ctx.c). */
#define LLMEM_ERROR_CAP 2048

struct llmem_ctx {
    llmem_allocator allocator;
    char error[LLMEM_ERROR_CAP];
    int error_object, error_key; /* the field the last error was about; 0 = none */
};

void *llmem__alloc(llmem_ctx *ctx, size_t bytes);
void *llmem__calloc(llmem_ctx *ctx, size_t bytes);
void llmem__free(llmem_ctx *ctx, void *ptr);

/* Record a message on ctx (when not NULL) and return status.
 * A NULL handle has no context and returns LLMEM_EINVAL alone; a NULL
 * pointer argument beside a valid handle fails here, naming the call and the
 * argument ("llmem_model_get_int: out is NULL"), or the context would still
 * show an earlier call's message as this one's. */
LLMEM_PRINTF(3, 4)
int llmem__fail(llmem_ctx *ctx, int status, const char *fmt, ...);

/* As llmem__fail, and remember which field (llmem_object, key) the error is about. */
LLMEM_PRINTF(5, 6)
int llmem__fail_field(llmem_ctx *ctx, int object, int key, int status, const char *fmt, ...);

/* Record on ctx the last error of another context, its field included: a
 * handle reporting what failed in an object of another context. */
int llmem__fail_from(llmem_ctx *ctx, const llmem_ctx *from, int status);

/* End buf, a message vsnprintf cut at cap bytes (cap > 4), with "..." after
 * its last whole word or list item rather than mid-word. */
void llmem__ellipsize(char *buf, size_t cap);

/* Clear the message before a call that succeeds. */
void llmem__ok(llmem_ctx *ctx);

#endif
