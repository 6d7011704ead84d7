/* SPDX-License-Identifier: MIT */
/* llmem_weights: totals of safetensors weights from their headers, for one
 * file, a sharded checkpoint (model.safetensors.index.json and its shards,
 * read by index.c) or a directory holding either. */
#include "hf/hf.h"

#include "core/ctx.h"

#include <string.h>

#define SINGLE_NAME "model.safetensors"

int llmem_hf_make_weights(llmem_ctx *ctx, const hf_totals *t, uint64_t files, llmem_weights **out)
{
    llmem_weights *w = llmem__calloc(ctx, sizeof *w);
    if (w == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "weights: out of memory");
    w->ctx = ctx;
    w->t = *t;
    w->files = files;
    *out = w;
    llmem__ok(ctx);
    return LLMEM_OK;
}

int llmem_weights_open_buffer(llmem_ctx *ctx, const void *data, size_t len, llmem_weights **out)
{
    const char *header;
    size_t header_len;
    uint64_t data_len;
    hf_totals t;
    int rc;
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "weights: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (data == NULL && len > 0)
        return llmem__fail(ctx, LLMEM_EINVAL, "weights: data is NULL");
    if ((rc = llmem_hf_st_split(ctx, "safetensors buffer", data, len, &header, &header_len,
                          &data_len)) != LLMEM_OK)
        return rc;
    memset(&t, 0, sizeof t);
    if ((rc = llmem_hf_st_header(ctx, "safetensors buffer", header, header_len, data_len, NULL,
                                 &t, NULL)) != LLMEM_OK)
        return rc;
    return llmem_hf_make_weights(ctx, &t, 1, out);
}

int llmem_hf_read_single(llmem_ctx *ctx, const char *path, const hf_bnb *bnb, hf_totals *t,
                         char **text, hf_st_tensors *keep)
{
    char *header;
    size_t header_len;
    uint64_t data_len;
    int rc = llmem_hf_read_st_header(ctx, path, &header, &header_len, &data_len);
    if (rc != LLMEM_OK)
        return rc;
    rc = llmem_hf_st_header(ctx, llmem_hf_basename(path), header, header_len, data_len, bnb, t,
                            keep);
    if (rc == LLMEM_OK && text != NULL)
        *text = header;
    else
        llmem__free(ctx, header);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int open_file(llmem_ctx *ctx, const char *path, llmem_weights **out)
{
    hf_totals t;
    if (ends_with(path, ".json"))
        return llmem_hf_read_index(ctx, path, out);
    memset(&t, 0, sizeof t);
    int rc = llmem_hf_read_single(ctx, path, NULL, &t, NULL, NULL);
    return rc != LLMEM_OK ? rc : llmem_hf_make_weights(ctx, &t, 1, out);
}

int llmem_weights_open(llmem_ctx *ctx, const char *path, llmem_weights **out)
{
    int kind, rc;
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "weights: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (path == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "weights: path is NULL");
    if ((rc = llmem_hf_path_kind(ctx, path, &kind)) != LLMEM_OK)
        return rc;
    if (kind == HF_PATH_FILE)
        return open_file(ctx, path, out);
    if (kind != HF_PATH_DIR)
        return llmem_hf_not_regular(ctx, path, kind);

    /* In a directory, the first candidate that exists is read, or says why
     * it cannot be (a FIFO named model.safetensors is not skipped). */
    static const char *const candidates[] = { HF_INDEX_NAME, SINGLE_NAME };
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        char *p = llmem_hf_path_join(ctx, path, candidates[i]);
        if (p == NULL)
            return llmem__fail(ctx, LLMEM_ENOMEM, "weights: out of memory");
        rc = llmem_hf_path_kind(ctx, p, &kind);
        if (rc == LLMEM_OK && kind == HF_PATH_FILE)
            rc = open_file(ctx, p, out);
        else if (rc == LLMEM_OK && kind != HF_PATH_MISSING)
            rc = llmem_hf_not_regular(ctx, p, kind);
        else if (rc == LLMEM_OK)
            rc = 1;
        llmem__free(ctx, p);
        if (rc != 1)
            return rc;
    }
    return llmem__fail(ctx, LLMEM_EIO, "%s: holds neither " HF_INDEX_NAME " nor " SINGLE_NAME,
                       path);
}

void llmem_weights_free(llmem_weights *w)
{
    if (w != NULL)
        llmem__free(w->ctx, w);
}

int llmem_weights_get_u64(const llmem_weights *w, int key, uint64_t *out)
{
    if (w == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(w->ctx, LLMEM_EINVAL, "llmem_weights_get_u64: out is NULL");
    switch (key) {
    case LLMEM_WEIGHTS_PARAMS: *out = w->t.params; break;
    case LLMEM_WEIGHTS_BYTES: *out = w->t.bytes; break;
    case LLMEM_WEIGHTS_TENSORS: *out = w->t.tensors; break;
    case LLMEM_WEIGHTS_FILES: *out = w->files; break;
    case LLMEM_WEIGHTS_QUANT_STATE_BYTES: *out = w->t.quant_bytes; break;
    case LLMEM_WEIGHTS_QUANT_STATE_TENSORS: *out = w->t.quant_tensors; break;
    default: return llmem__fail(w->ctx, LLMEM_EINVAL, "weights: unknown key %d", key);
    }
    return LLMEM_OK;
}

size_t llmem_weights_dtype_count(const llmem_weights *w)
{
    return w != NULL ? w->t.ndtypes : 0;
}

int llmem_weights_dtype(const llmem_weights *w, size_t index, const char **name, uint64_t *params,
                        uint64_t *bytes)
{
    if (w == NULL)
        return LLMEM_EINVAL;
    if (index >= w->t.ndtypes)
        return llmem__fail(w->ctx, LLMEM_ERANGE, "weights: dtype index %zu past the %zu present",
                           index, w->t.ndtypes);
    int dt = w->t.order[index];
    if (name != NULL)
        *name = llmem_hf_kind_name(dt);
    if (params != NULL)
        *params = w->t.dtype_params[dt];
    if (bytes != NULL)
        *bytes = w->t.dtype_bytes[dt];
    return LLMEM_OK;
}
