/* SPDX-License-Identifier: MIT */
/* A sharded checkpoint: model.safetensors.index.json, whose weight_map names
 * the shard of each tensor. Each shard is read once; every tensor the index
 * puts in a shard must be in that shard's header, and the shards may hold no
 * tensor the index does not list.
 *
 * Time is O(n log n) in the entries: the weight_map is sorted by shard and
 * tensor, and each shard's names (sorted by the header reader) are walked
 * along its run of entries. Looking each name up by a scan was quadratic (an
 * index of 60,000 shards took 59 s). The index is walked token by token, so
 * memory is the text and 32 bytes an entry, not a JSON tree. */
#include "hf/hf.h"

#include "core/ctx.h"
#include "hf/scan.h"

#include <stdlib.h>
#include <string.h>

/* One weight_map entry; the strings point into the index text. */
typedef struct mapped {
    const char *tensor, *shard;
    uint32_t tensor_len, shard_len; /* the index is at most HF_INDEX_MAX_BYTES */
    unsigned char tensor_escaped, shard_escaped;
} mapped;

typedef struct index_read {
    llmem_ctx *ctx;
    const char *index; /* the index's file name, for messages */
    hf_scan scan;
    mapped *m;
    size_t n, cap;
    int have_map; /* the last weight_map member is an object */
} index_read;

#define SHOWN(s) llmem_hf_str_shown((s), HF_NAME_SHOWN), (s)->raw

static hf_str tensor_of(const mapped *m)
{
    hf_str s = { m->tensor, m->tensor_len, m->tensor_escaped };
    return s;
}

static hf_str shard_of(const mapped *m)
{
    hf_str s = { m->shard, m->shard_len, m->shard_escaped };
    return s;
}

static int next(index_read *r, hf_tok *t)
{
    if (llmem_hf_scan_next(&r->scan, t) >= 0)
        return LLMEM_OK;
    return llmem__fail(r->ctx, LLMEM_EPARSE, "%s: %s", r->index, r->scan.err);
}

/* The rest of the value t begins. */
static int skip_rest(index_read *r, const hf_tok *t)
{
    if (llmem_hf_scan_skip(&r->scan, t) != 0)
        return llmem__fail(r->ctx, LLMEM_EPARSE, "%s: %s", r->index, r->scan.err);
    return LLMEM_OK;
}

static int skip_value(index_read *r)
{
    hf_tok t;
    int rc = next(r, &t);
    return rc != LLMEM_OK ? rc : skip_rest(r, &t);
}

static int not_plain(index_read *r, const hf_str *tensor)
{
    return llmem__fail(r->ctx, LLMEM_EPARSE,
                       "%s: weight_map entry '%.*s' must name a file next to the index",
                       r->index, SHOWN(tensor));
}

static int append(index_read *r, const hf_str *tensor, const hf_str *shard)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        mapped *m = llmem__alloc(r->ctx, cap * sizeof *m);
        if (m == NULL)
            return llmem__fail(r->ctx, LLMEM_ENOMEM, "%s: out of memory", r->index);
        if (r->n > 0)
            memcpy(m, r->m, r->n * sizeof *m);
        llmem__free(r->ctx, r->m);
        r->m = m;
        r->cap = cap;
    }
    mapped *e = &r->m[r->n++];
    e->tensor = tensor->raw;
    e->tensor_len = (uint32_t)tensor->len;
    e->tensor_escaped = (unsigned char)tensor->escaped;
    e->shard = shard->raw;
    e->shard_len = (uint32_t)shard->len;
    e->shard_escaped = (unsigned char)shard->escaped;
    return LLMEM_OK;
}

/* weight_map's members: tensor name to shard file name. */
static int walk_map(index_read *r)
{
    hf_tok t;
    int rc;
    for (;;) {
        if ((rc = next(r, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_OBJECT_END)
            return LLMEM_OK;
        hf_str tensor = t.str;
        if ((rc = next(r, &t)) != LLMEM_OK)
            return rc;
        if (t.kind != HF_TOK_STRING)
            return not_plain(r, &tensor);
        if ((rc = append(r, &tensor, &t.str)) != LLMEM_OK)
            return rc;
    }
}

/* The index's object: weight_map is read, anything else (metadata) skipped.
 * weight_map given twice is refused, as a header's '__metadata__' is: Python's
 * json would keep the last map and drop the first silently. */
static int walk_index(index_read *r)
{
    hf_tok t;
    int rc = next(r, &t), map_seen = 0;
    if (rc != LLMEM_OK)
        return rc;
    if (t.kind != HF_TOK_OBJECT)
        return (rc = skip_rest(r, &t)) != LLMEM_OK ? rc : next(r, &t);
    for (;;) {
        if ((rc = next(r, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_OBJECT_END)
            break;
        if (!llmem_hf_str_eq(&t.str, "weight_map")) {
            rc = skip_value(r);
        } else if (map_seen++) {
            return llmem__fail(r->ctx, LLMEM_EPARSE, "%s: 'weight_map' appears twice in the "
                               "index", r->index);
        } else if ((rc = next(r, &t)) == LLMEM_OK) {
            r->have_map = t.kind == HF_TOK_OBJECT;
            rc = r->have_map ? walk_map(r) : skip_rest(r, &t);
        }
        if (rc != LLMEM_OK)
            return rc;
    }
    return next(r, &t); /* only whitespace may follow */
}

/* By tensor name, then by place in the text. */
static int by_tensor(const void *a, const void *b)
{
    const mapped *x = a, *y = b;
    hf_str p = tensor_of(x), q = tensor_of(y);
    int c = llmem_hf_str_cmp(&p, &q);
    if (c != 0)
        return c;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

static int by_shard(const void *a, const void *b)
{
    const mapped *x = a, *y = b;
    hf_str p = shard_of(x), q = shard_of(y);
    int c = llmem_hf_str_cmp(&p, &q);
    if (c != 0)
        return c;
    return by_tensor(a, b);
}

/* A tensor listed twice is refused, as a safetensors header naming one twice
 * is (safetensors.c, check_unique): which shard holds it is ambiguous, and
 * Python's json, which transformers reads the index with, keeps the last
 * silently. Names compare by their decoded text ("\u0061" is "a"). */
static int check_unique(index_read *r)
{
    if (r->n > 1)
        qsort(r->m, r->n, sizeof *r->m, by_tensor);
    for (size_t i = 1; i < r->n; i++) {
        hf_str a = tensor_of(&r->m[i - 1]), b = tensor_of(&r->m[i]);
        if (llmem_hf_str_cmp(&a, &b) == 0) {
            hf_str first = shard_of(&r->m[i - 1]), second = shard_of(&r->m[i]);
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               "%s: tensor '%.*s' appears twice in 'weight_map' (mapped to "
                               "'%.*s' and '%.*s')",
                               r->index, SHOWN(&a), SHOWN(&first), SHOWN(&second));
        }
    }
    return LLMEM_OK;
}

/* A shard name from weight_map: a file next to the index, nothing else. */
static int plain_file_name(const char *s, size_t len)
{
    return len > 0 && strlen(s) == len && strchr(s, '/') == NULL && strchr(s, '\\') == NULL &&
           strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* Entries [0, n) of m name the same shard, sorted by tensor; keep holds the
 * shard's tensors sorted by name. Each entry must be among them. */
static int check_shard(index_read *r, const mapped *m, size_t n, const hf_st_tensors *keep)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        hf_str want = tensor_of(&m[i]), have;
        int c = -1;
        for (; k < keep->n; k++) {
            have = llmem_hf_st_name(&keep->t[k]);
            if ((c = llmem_hf_str_cmp(&have, &want)) >= 0)
                break;
        }
        if (c != 0) {
            hf_str shard = shard_of(&m[i]);
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               "%s: tensor '%.*s' is mapped to '%.*s' but not in its header",
                               r->index, SHOWN(&want), SHOWN(&shard));
        }
    }
    return LLMEM_OK;
}

/* Read the shard of entries [0, n) (dir is the index's directory). */
static int read_shard(index_read *r, const char *dir, const mapped *m, size_t n,
                      const hf_bnb *bnb, hf_totals *t)
{
    hf_str shard = shard_of(m), first = tensor_of(m);
    hf_st_tensors keep = { NULL, 0 };
    char *text = NULL, *path = NULL;
    char *name = llmem__alloc(r->ctx, shard.len + 1);
    if (name == NULL)
        return llmem__fail(r->ctx, LLMEM_ENOMEM, "%s: out of memory", r->index);
    size_t len = llmem_hf_str_decode(&shard, name);
    name[len] = '\0';
    int rc = plain_file_name(name, len) ? LLMEM_OK : not_plain(r, &first);
    if (rc == LLMEM_OK && (path = llmem_hf_path_join(r->ctx, dir, name)) == NULL)
        rc = llmem__fail(r->ctx, LLMEM_ENOMEM, "%s: out of memory", r->index);
    if (rc == LLMEM_OK)
        rc = llmem_hf_read_single(r->ctx, path, bnb, t, &text, &keep);
    if (rc == LLMEM_OK)
        rc = check_shard(r, m, n, &keep);
    llmem__free(r->ctx, keep.t);
    llmem__free(r->ctx, text);
    llmem__free(r->ctx, path);
    llmem__free(r->ctx, name);
    return rc;
}

/* The shards, each once: entries sorted by shard, each shard's run read. */
static int read_sorted_shards(index_read *r, const char *dir, const hf_bnb *bnb, hf_totals *t,
                              uint64_t *files)
{
    if (r->n > 1)
        qsort(r->m, r->n, sizeof *r->m, by_shard);
    for (size_t i = 0, j; i < r->n; i = j) {
        hf_str a = shard_of(&r->m[i]), b;
        for (j = i + 1; j < r->n && (b = shard_of(&r->m[j]), llmem_hf_str_cmp(&a, &b) == 0);)
            j++;
        int rc = read_shard(r, dir, &r->m[i], j - i, bnb, t);
        if (rc != LLMEM_OK)
            return rc;
        (*files)++;
    }
    return LLMEM_OK;
}

/* Each shard in turn, then the count: the shards hold what the index lists.
 * A bitsandbytes weight's state may sit in another shard than the weight, so
 * which weights are packed 4-bit is read from the whole weight_map (whose
 * names the shards must hold). */
static int read_shards(index_read *r, const char *dir, llmem_weights **out)
{
    hf_totals t;
    hf_bnb bnb = { NULL, 0, 0 };
    uint64_t files = 0;
    int rc = LLMEM_OK;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; rc == LLMEM_OK && i < r->n; i++) {
        hf_str tensor = tensor_of(&r->m[i]);
        rc = llmem_hf_bnb_add(r->ctx, &bnb, &tensor);
    }
    llmem_hf_bnb_sort(&bnb);
    if (rc == LLMEM_OK)
        rc = read_sorted_shards(r, dir, &bnb, &t, &files);
    llmem_hf_bnb_free(r->ctx, &bnb);
    if (rc != LLMEM_OK)
        return rc;
    if (t.tensors != r->n)
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           "%s: the shards hold %llu tensors but 'weight_map' lists %llu",
                           r->index, (unsigned long long)t.tensors, (unsigned long long)r->n);
    return llmem_hf_make_weights(r->ctx, &t, files, out);
}

int llmem_hf_read_index(llmem_ctx *ctx, const char *path, llmem_weights **out)
{
    index_read r;
    char *text = NULL, *dir = NULL;
    size_t len;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.index = llmem_hf_basename(path);
    int rc = llmem_hf_read_file(ctx, path, HF_INDEX_MAX_BYTES, &text, &len);
    if (rc != LLMEM_OK)
        return rc;
    llmem_hf_scan_begin(&r.scan, text, len);
    rc = walk_index(&r);
    if (rc == LLMEM_OK && !r.have_map)
        rc = llmem__fail(ctx, LLMEM_EPARSE, "%s: not a safetensors index (no 'weight_map' object)",
                         r.index);
    if (rc == LLMEM_OK && r.n == 0)
        rc = llmem__fail(ctx, LLMEM_EPARSE, "%s: 'weight_map' is empty", r.index);
    if (rc == LLMEM_OK && (dir = llmem_hf_path_dir(ctx, path)) == NULL)
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory", r.index);
    if (rc == LLMEM_OK)
        rc = check_unique(&r);
    if (rc == LLMEM_OK)
        rc = read_shards(&r, dir, out);
    llmem__free(ctx, dir);
    llmem__free(ctx, r.m);
    llmem__free(ctx, text);
    return rc;
}
