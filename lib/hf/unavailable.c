/* SPDX-License-Identifier: MIT */
/* The Hugging Face readers when the library is built without json-c: the
 * symbols stay, so the ABI does not depend on the build options. */
#include "core/ctx.h"

static int unavailable(llmem_ctx *ctx)
{
    return llmem__fail(ctx, LLMEM_ENOTSUP,
                       "hf: this libllmem was built without JSON support (json-c)");
}

int llmem_model_new_hf_config(llmem_ctx *ctx, const char *path, llmem_model **out)
{
    (void)path;
    if (out)
        *out = NULL;
    return unavailable(ctx);
}

int llmem_model_new_hf_config_json(llmem_ctx *ctx, const char *json, size_t len,
                                   llmem_model **out)
{
    (void)json;
    (void)len;
    if (out)
        *out = NULL;
    return unavailable(ctx);
}

int llmem_weights_open(llmem_ctx *ctx, const char *path, llmem_weights **out)
{
    (void)path;
    if (out)
        *out = NULL;
    return unavailable(ctx);
}

int llmem_weights_open_buffer(llmem_ctx *ctx, const void *data, size_t len, llmem_weights **out)
{
    (void)data;
    (void)len;
    if (out)
        *out = NULL;
    return unavailable(ctx);
}

void llmem_weights_free(llmem_weights *weights)
{
    (void)weights;
}

int llmem_weights_get_u64(const llmem_weights *weights, int key, uint64_t *out)
{
    (void)weights;
    (void)key;
    (void)out;
    return LLMEM_ENOTSUP;
}

size_t llmem_weights_dtype_count(const llmem_weights *weights)
{
    (void)weights;
    return 0;
}

int llmem_weights_dtype(const llmem_weights *weights, size_t index, const char **name,
                        uint64_t *params, uint64_t *bytes)
{
    (void)weights;
    (void)index;
    (void)name;
    (void)params;
    (void)bytes;
    return LLMEM_ENOTSUP;
}
