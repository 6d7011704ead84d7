/* SPDX-License-Identifier: MIT */
/* The safetensors header: element and byte counts per dtype, checked the way
 * the reference implementation checks a file (huggingface/safetensors,
 * safetensors/src/tensor.rs: Metadata::validate), without reading any tensor
 * data. */
#include "hf/hf.h"

#include "core/checked.h"
#include "core/ctx.h"
#include "hf/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dtype and its bitsize() in tensor.rs. */
const hf_dtype llmem_hf_dtypes[HF_DTYPE_COUNT] = {
    { "BOOL", 8 },     { "F4", 4 },       { "F6_E2M3", 6 }, { "F6_E3M2", 6 }, { "U8", 8 },
    { "I8", 8 },       { "F8_E5M2", 8 },  { "F8_E4M3", 8 }, { "F8_E8M0", 8 }, { "I16", 16 },
    { "U16", 16 },     { "F16", 16 },     { "BF16", 16 },   { "I32", 32 },    { "U32", 32 },
    { "F32", 32 },     { "C64", 64 },     { "F64", 64 },    { "I64", 64 },    { "U64", 64 },
};

/* Tensor names and strings in messages are cut to this many bytes. */
#define NAME_SHOWN 80

static int find_dtype(const char *name)
{
    for (int i = 0; i < HF_DTYPE_COUNT; i++)
        if (strcmp(llmem_hf_dtypes[i].name, name) == 0)
            return i;
    return -1;
}

int llmem_hf_st_lengths(llmem_ctx *ctx, const char *name, uint64_t file_size, uint64_t n,
                  uint64_t *data_len)
{
    if (file_size < 8)
        return llmem__fail(ctx, LLMEM_EPARSE,
                           "%s: %llu bytes is shorter than the 8-byte header length", name,
                           (unsigned long long)file_size);
    if (n > HF_ST_MAX_HEADER)
        return llmem__fail(ctx, LLMEM_EPARSE,
                           "%s: header length %llu exceeds the safetensors limit of %llu bytes",
                           name, (unsigned long long)n, (unsigned long long)HF_ST_MAX_HEADER);
    if (n > file_size - 8)
        return llmem__fail(ctx, LLMEM_EPARSE,
                           "%s: header length %llu runs past the end of the file (%llu bytes)",
                           name, (unsigned long long)n, (unsigned long long)file_size);
    if (n < 2)
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: header length %llu is too short for a JSON "
                           "object", name, (unsigned long long)n);
    *data_len = file_size - 8 - n;
    return LLMEM_OK;
}

int llmem_hf_st_split(llmem_ctx *ctx, const char *name, const unsigned char *data, size_t len,
                const char **header, size_t *header_len, uint64_t *data_len)
{
    uint64_t n = 0;
    int rc;
    if (len >= 8)
        for (int i = 7; i >= 0; i--)
            n = n << 8 | data[i];
    if ((rc = llmem_hf_st_lengths(ctx, name, len, n, data_len)) != LLMEM_OK)
        return rc;
    *header = (const char *)data + 8;
    *header_len = (size_t)n;
    return LLMEM_OK;
}

/* RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t invalid_utf8_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t extra;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            extra = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (n - i <= extra)
            return i;
        for (size_t k = 1; k <= extra; k++) {
            unsigned b = s[i + k];
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
                return i;
        }
        i += extra + 1;
    }
    return n;
}

/* One tensor's data region, for the coverage check. */
typedef struct region {
    uint64_t begin, end;
    const char *name;
} region;

typedef struct walk {
    llmem_ctx *ctx;
    const char *file;
    uint64_t data_len;
    hf_totals add;
    region *regions;
    size_t nregions;
} walk;

static int bad(walk *w, const char *tensor, const char *fmt_tail, const char *detail)
{
    return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: tensor '%.*s': %s%s", w->file, NAME_SHOWN,
                       tensor, fmt_tail, detail ? detail : "");
}

/* __metadata__ is a string-to-string map in the format. */
static int metadata_value(void *user, const char *key, const hf_jv *value)
{
    walk *w = user;
    if (llmem_hf_json_string(value) == NULL)
        return llmem__fail(w->ctx, LLMEM_EPARSE,
                           "%s: '__metadata__' entry '%.*s' must be a string, not %s", w->file,
                           NAME_SHOWN, key, llmem_hf_json_type_name(llmem_hf_json_type(value)));
    return 0;
}

static int check_metadata(walk *w, const hf_jv *meta)
{
    if (llmem_hf_json_type(meta) != HF_JOBJECT)
        return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: '__metadata__' must be an object, not %s",
                           w->file, llmem_hf_json_type_name(llmem_hf_json_type(meta)));
    return llmem_hf_json_each(meta, metadata_value, w);
}

static int one_tensor(void *user, const char *name, const hf_jv *info)
{
    walk *w = user;
    const hf_jv *dtype_v, *shape, *offsets;
    char detail[96];
    if (strcmp(name, "__metadata__") == 0)
        return check_metadata(w, info);
    if (llmem_hf_json_type(info) != HF_JOBJECT)
        return bad(w, name, "entry must be an object, not ", llmem_hf_json_type_name(llmem_hf_json_type(info)));
    if (!llmem_hf_json_member(info, "dtype", &dtype_v))
        return bad(w, name, "missing 'dtype'", NULL);
    if (!llmem_hf_json_member(info, "shape", &shape))
        return bad(w, name, "missing 'shape'", NULL);
    if (!llmem_hf_json_member(info, "data_offsets", &offsets))
        return bad(w, name, "missing 'data_offsets'", NULL);

    const char *dtype_name = llmem_hf_json_string(dtype_v);
    if (dtype_name == NULL && llmem_hf_json_type(dtype_v) == HF_JSTRING)
        return bad(w, name, "'dtype' holds a NUL character", NULL);
    if (dtype_name == NULL)
        return bad(w, name, "'dtype' must be a string, not ",
                   llmem_hf_json_type_name(llmem_hf_json_type(dtype_v)));
    int dt = find_dtype(dtype_name);
    if (dt < 0) {
        snprintf(detail, sizeof detail, "'%.40s'", dtype_name);
        return bad(w, name, "unknown dtype ", detail);
    }

    if (llmem_hf_json_type(shape) != HF_JARRAY)
        return bad(w, name, "'shape' must be an array, not ", llmem_hf_json_type_name(llmem_hf_json_type(shape)));
    checked c = { 0 };
    uint64_t elems = 1;
    for (size_t i = 0; i < llmem_hf_json_array_size(shape); i++) {
        uint64_t dim;
        if (llmem_hf_json_uint64(llmem_hf_json_array_at(shape, i), &dim) != 0) {
            snprintf(detail, sizeof detail, "%zu must be a non-negative integer", i);
            return bad(w, name, "'shape' dimension ", detail);
        }
        elems = ck_mul(&c, elems, dim);
    }
    uint64_t bits = ck_mul(&c, elems, llmem_hf_dtypes[dt].bits);
    if (c.overflow)
        return bad(w, name, "shape product overflows 64 bits", NULL);
    if (bits % 8 != 0) {
        snprintf(detail, sizeof detail, " (%llu elements of %s)", (unsigned long long)elems,
                 llmem_hf_dtypes[dt].name);
        return bad(w, name, "data does not end on a byte boundary", detail);
    }

    uint64_t begin, end;
    if (llmem_hf_json_type(offsets) != HF_JARRAY || llmem_hf_json_array_size(offsets) != 2 ||
        llmem_hf_json_uint64(llmem_hf_json_array_at(offsets, 0), &begin) != 0 ||
        llmem_hf_json_uint64(llmem_hf_json_array_at(offsets, 1), &end) != 0)
        return bad(w, name, "'data_offsets' must be [begin, end] of non-negative integers", NULL);
    if (end < begin) {
        snprintf(detail, sizeof detail, " [%llu, %llu]", (unsigned long long)begin,
                 (unsigned long long)end);
        return bad(w, name, "'data_offsets' end before begin", detail);
    }
    if (end > w->data_len) {
        snprintf(detail, sizeof detail, " [%llu, %llu] (data region %llu bytes)",
                 (unsigned long long)begin, (unsigned long long)end,
                 (unsigned long long)w->data_len);
        return bad(w, name, "'data_offsets' out of range", detail);
    }
    if (end - begin != bits / 8) {
        snprintf(detail, sizeof detail, " (%llu bytes) but the shape of %s needs %llu",
                 (unsigned long long)(end - begin), llmem_hf_dtypes[dt].name,
                 (unsigned long long)(bits / 8));
        return bad(w, name, "'data_offsets' size mismatch", detail);
    }

    hf_totals *t = &w->add;
    if (t->dtype_params[dt] == 0 && t->dtype_bytes[dt] == 0) {
        int seen = 0;
        for (size_t i = 0; i < t->ndtypes; i++)
            seen |= t->order[i] == dt;
        if (!seen)
            t->order[t->ndtypes++] = (unsigned char)dt;
    }
    t->dtype_params[dt] += elems;
    t->dtype_bytes[dt] += bits / 8;
    t->params += elems;
    t->bytes += bits / 8;
    t->tensors++;
    w->regions[w->nregions++] = (region){ begin, end, name };
    return 0;
}

static int by_offsets(const void *a, const void *b)
{
    const region *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* The data region must be covered exactly: sorted by offsets, each tensor
 * starts where the previous one ended, the first at 0, the last at the end. */
static int check_coverage(walk *w)
{
    uint64_t at = 0;
    if (w->nregions > 1)
        qsort(w->regions, w->nregions, sizeof *w->regions, by_offsets);
    for (size_t i = 0; i < w->nregions; i++) {
        const region *r = &w->regions[i];
        if (r->begin < at)
            return llmem__fail(w->ctx, LLMEM_EPARSE,
                               "%s: tensor '%.*s' at [%llu, %llu] overlaps tensor '%.*s'",
                               w->file, NAME_SHOWN, r->name, (unsigned long long)r->begin,
                               (unsigned long long)r->end, NAME_SHOWN, w->regions[i - 1].name);
        if (r->begin > at)
            return llmem__fail(w->ctx, LLMEM_EPARSE,
                               "%s: tensor '%.*s' at [%llu, %llu] leaves bytes [%llu, %llu) "
                               "of the data region unused",
                               w->file, NAME_SHOWN, r->name, (unsigned long long)r->begin,
                               (unsigned long long)r->end, (unsigned long long)at,
                               (unsigned long long)r->begin);
        at = r->end;
    }
    if (at != w->data_len)
        return llmem__fail(w->ctx, LLMEM_EPARSE,
                           "%s: tensors cover %llu bytes but the data region holds %llu",
                           w->file, (unsigned long long)at, (unsigned long long)w->data_len);
    return 0;
}

static void merge(hf_totals *into, const hf_totals *add)
{
    for (size_t i = 0; i < add->ndtypes; i++) {
        int dt = add->order[i], seen = 0;
        for (size_t k = 0; k < into->ndtypes; k++)
            seen |= into->order[k] == dt;
        if (!seen)
            into->order[into->ndtypes++] = (unsigned char)dt;
    }
    for (int dt = 0; dt < HF_DTYPE_COUNT; dt++) {
        into->dtype_params[dt] += add->dtype_params[dt];
        into->dtype_bytes[dt] += add->dtype_bytes[dt];
    }
    into->params += add->params;
    into->bytes += add->bytes;
    into->tensors += add->tensors;
}

int llmem_hf_st_header(llmem_ctx *ctx, const char *name, const char *header, size_t header_len,
                 uint64_t data_len, hf_totals *totals, struct hf_jv **keep)
{
    char err[160];
    hf_jv *root;
    walk w;
    int rc;
    if (keep != NULL)
        *keep = NULL;
    if (header_len == 0 || header[0] != '{')
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: header does not start with '{'", name);
    size_t bad_at = invalid_utf8_at((const unsigned char *)header, header_len);
    if (bad_at != header_len)
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: header is not valid UTF-8 at byte %zu", name,
                           bad_at);
    if (llmem_hf_json_parse(header, header_len, &root, err, sizeof err) != 0)
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: header: %s", name, err);
    if (llmem_hf_json_type(root) != HF_JOBJECT) {
        llmem_hf_json_free(root);
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: header is not a JSON object", name);
    }

    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    w.file = name;
    w.data_len = data_len;
    size_t n = llmem_hf_json_object_size(root);
    if (n > 0) {
        w.regions = llmem__alloc(ctx, n * sizeof *w.regions);
        if (w.regions == NULL) {
            llmem_hf_json_free(root);
            return llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory for %zu tensors", name, n);
        }
    }
    rc = llmem_hf_json_each(root, one_tensor, &w);
    if (rc == 0)
        rc = check_coverage(&w);
    llmem__free(ctx, w.regions);
    if (rc != 0) {
        llmem_hf_json_free(root);
        return LLMEM_EPARSE;
    }

    checked c = { 0 };
    ck_add(&c, totals->params, w.add.params);
    ck_add(&c, totals->bytes, w.add.bytes);
    if (c.overflow) {
        llmem_hf_json_free(root);
        return llmem__fail(ctx, LLMEM_EOVERFLOW, "%s: totals overflow 64 bits", name);
    }
    merge(totals, &w.add);
    if (keep != NULL)
        *keep = root;
    else
        llmem_hf_json_free(root);
    return LLMEM_OK;
}
