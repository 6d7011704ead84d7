/* SPDX-License-Identifier: MIT */
/* llmem_weights: totals of safetensors weights from their headers, for one
 * file, a sharded checkpoint (model.safetensors.index.json and its shards) or
 * a directory holding either. */
#include "hf/hf.h"

#include "core/ctx.h"
#include "hf/json.h"

#include <string.h>

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

static int make_weights(llmem_ctx *ctx, const hf_totals *t, uint64_t files, llmem_weights **out)
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
    if ((rc = llmem_hf_st_header(ctx, "safetensors buffer", header, header_len, data_len, &t, NULL)) !=
        LLMEM_OK)
        return rc;
    return make_weights(ctx, &t, 1, out);
}

/* One .safetensors file. */
static int read_single(llmem_ctx *ctx, const char *path, hf_totals *t, struct hf_jv **keep)
{
    char *header;
    size_t header_len;
    uint64_t data_len;
    int rc = llmem_hf_read_st_header(ctx, path, &header, &header_len, &data_len);
    if (rc != LLMEM_OK)
        return rc;
    rc = llmem_hf_st_header(ctx, llmem_hf_basename(path), header, header_len, data_len, t, keep);
    llmem__free(ctx, header);
    return rc;
}

/* A shard name from weight_map: a file next to the index, nothing else. */
static int plain_file_name(const char *s)
{
    return s[0] != '\0' && strchr(s, '/') == NULL && strchr(s, '\\') == NULL &&
           strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

typedef struct shard_list {
    llmem_ctx *ctx;
    const char *index;  /* index file name, for messages */
    const char **names; /* distinct shard names, in order of first mention */
    size_t n;
    uint64_t entries;   /* tensors listed in weight_map */
} shard_list;

static int collect_shard(void *user, const char *tensor, const hf_jv *file)
{
    shard_list *l = user;
    const char *name = llmem_hf_json_string(file);
    if (name == NULL || !plain_file_name(name))
        return llmem__fail(l->ctx, LLMEM_EPARSE,
                           "%s: weight_map entry '%.80s' must name a file next to the index",
                           l->index, tensor);
    l->entries++;
    for (size_t i = l->n; i-- > 0;)
        if (strcmp(l->names[i], name) == 0)
            return 0;
    l->names[l->n++] = name;
    return 0;
}

typedef struct shard_check {
    llmem_ctx *ctx;
    const char *index, *shard;
    const hf_jv *header;
} shard_check;

/* Every tensor weight_map puts in this shard must be in its header. */
static int check_mapped(void *user, const char *tensor, const hf_jv *file)
{
    shard_check *c = user;
    const hf_jv *info;
    if (strcmp(llmem_hf_json_string(file), c->shard) != 0)
        return 0;
    if (!llmem_hf_json_member(c->header, tensor, &info) || strcmp(tensor, "__metadata__") == 0)
        return llmem__fail(c->ctx, LLMEM_EPARSE,
                           "%s: tensor '%.80s' is mapped to '%.80s' but not in its header",
                           c->index, tensor, c->shard);
    return 0;
}

static int read_index(llmem_ctx *ctx, const char *path, llmem_weights **out)
{
    const char *index = llmem_hf_basename(path);
    char err[160], *text = NULL, *dir = NULL;
    size_t len;
    hf_jv *root = NULL;
    const hf_jv *map;
    shard_list l = { ctx, index, NULL, 0, 0 };
    hf_totals t;
    int rc = llmem_hf_read_file(ctx, path, HF_INDEX_MAX_BYTES, &text, &len);
    if (rc != LLMEM_OK)
        return rc;
    if (llmem_hf_json_parse(text, len, &root, err, sizeof err) != 0) {
        rc = llmem__fail(ctx, LLMEM_EPARSE, "%s: %s", index, err);
        goto out;
    }
    if (llmem_hf_json_type(root) != HF_JOBJECT || !llmem_hf_json_member(root, "weight_map", &map) ||
        llmem_hf_json_type(map) != HF_JOBJECT) {
        rc = llmem__fail(ctx, LLMEM_EPARSE, "%s: not a safetensors index (no 'weight_map' object)",
                         index);
        goto out;
    }
    size_t listed = llmem_hf_json_object_size(map);
    if (listed == 0) {
        rc = llmem__fail(ctx, LLMEM_EPARSE, "%s: 'weight_map' is empty", index);
        goto out;
    }
    if ((l.names = llmem__alloc(ctx, listed * sizeof *l.names)) == NULL ||
        (dir = llmem_hf_path_dir(ctx, path)) == NULL) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory", index);
        goto out;
    }
    if ((rc = llmem_hf_json_each(map, collect_shard, &l)) != 0)
        goto out;

    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < l.n; i++) {
        struct hf_jv *header;
        char *shard = llmem_hf_path_join(ctx, dir, l.names[i]);
        if (shard == NULL) {
            rc = llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory", index);
            goto out;
        }
        rc = read_single(ctx, shard, &t, &header);
        llmem__free(ctx, shard);
        if (rc != LLMEM_OK)
            goto out;
        shard_check c = { ctx, index, l.names[i], header };
        rc = llmem_hf_json_each(map, check_mapped, &c);
        llmem_hf_json_free(header);
        if (rc != 0)
            goto out;
    }
    if (t.tensors != l.entries) {
        rc = llmem__fail(ctx, LLMEM_EPARSE,
                         "%s: the shards hold %llu tensors but 'weight_map' lists %llu", index,
                         (unsigned long long)t.tensors, (unsigned long long)l.entries);
        goto out;
    }
    rc = make_weights(ctx, &t, l.n, out);
out:
    llmem__free(ctx, l.names);
    llmem__free(ctx, dir);
    llmem_hf_json_free(root);
    llmem__free(ctx, text);
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
        return read_index(ctx, path, out);
    memset(&t, 0, sizeof t);
    int rc = read_single(ctx, path, &t, NULL);
    return rc != LLMEM_OK ? rc : make_weights(ctx, &t, 1, out);
}

int llmem_weights_open(llmem_ctx *ctx, const char *path, llmem_weights **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "weights: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (path == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "weights: path is NULL");
    int kind = llmem_hf_path_kind(path);
    if (kind == HF_PATH_MISSING)
        return llmem__fail(ctx, LLMEM_EIO, "%s: no such file or directory", path);
    if (kind == HF_PATH_FILE)
        return open_file(ctx, path, out);

    static const char *const candidates[] = { INDEX_NAME, SINGLE_NAME };
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        char *p = llmem_hf_path_join(ctx, path, candidates[i]);
        if (p == NULL)
            return llmem__fail(ctx, LLMEM_ENOMEM, "weights: out of memory");
        int rc = llmem_hf_path_kind(p) == HF_PATH_FILE ? open_file(ctx, p, out) : 1;
        llmem__free(ctx, p);
        if (rc != 1)
            return rc;
    }
    return llmem__fail(ctx, LLMEM_EIO, "%s: holds neither " INDEX_NAME " nor " SINGLE_NAME,
                       path);
}

void llmem_weights_free(llmem_weights *w)
{
    if (w != NULL)
        llmem__free(w->ctx, w);
}

int llmem_weights_get_u64(const llmem_weights *w, int key, uint64_t *out)
{
    if (w == NULL || out == NULL)
        return LLMEM_EINVAL;
    switch (key) {
    case LLMEM_WEIGHTS_PARAMS: *out = w->t.params; break;
    case LLMEM_WEIGHTS_BYTES: *out = w->t.bytes; break;
    case LLMEM_WEIGHTS_TENSORS: *out = w->t.tensors; break;
    case LLMEM_WEIGHTS_FILES: *out = w->files; break;
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
        *name = llmem_hf_dtypes[dt].name;
    if (params != NULL)
        *params = w->t.dtype_params[dt];
    if (bytes != NULL)
        *bytes = w->t.dtype_bytes[dt];
    return LLMEM_OK;
}
