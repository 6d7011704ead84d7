/* SPDX-License-Identifier: MIT */
/* The safetensors header: element and byte counts per dtype, checked the way
 * the reference implementation checks a file (huggingface/safetensors,
 * safetensors/src/tensor.rs: Metadata::validate), without reading any tensor
 * data. */
#include "hf/hf.h"

#include "core/checked.h"
#include "core/ctx.h"
#include "hf/scan.h"

#include <stdio.h>
#include <string.h>

/* Dtype and its bitsize() in tensor.rs. */
const hf_dtype llmem_hf_dtypes[HF_DTYPE_COUNT] = {
    { "BOOL", 8 },     { "F4", 4 },       { "F6_E2M3", 6 }, { "F6_E3M2", 6 }, { "U8", 8 },
    { "I8", 8 },       { "F8_E5M2", 8 },  { "F8_E4M3", 8 }, { "F8_E8M0", 8 }, { "I16", 16 },
    { "U16", 16 },     { "F16", 16 },     { "BF16", 16 },   { "I32", 32 },    { "U32", 32 },
    { "F32", 32 },     { "C64", 64 },     { "F64", 64 },    { "I64", 64 },    { "U64", 64 },
};

/* The pseudo-dtypes' names are lower case, unlike any of the format's. */
const char *llmem_hf_kind_name(int kind)
{
    if (kind == HF_KIND_BNB_NF4)
        return "bnb-nf4";
    if (kind == HF_KIND_BNB_FP4)
        return "bnb-fp4";
    return llmem_hf_dtypes[kind].name;
}

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

/* ---- one tensor entry ----------------------------------------------------- */

typedef struct walk {
    llmem_ctx *ctx;
    const char *file;
    uint64_t data_len;
    hf_scan scan;
    hf_st_tensor *t; /* in the order of the header */
    size_t n, cap;
} walk;

#define SHOWN(s) llmem_hf_str_shown((s), HF_NAME_SHOWN), (s)->raw

/* The scanner's token; a syntax error fails with its message. */
static int next(walk *w, hf_tok *t)
{
    if (llmem_hf_scan_next(&w->scan, t) >= 0)
        return LLMEM_OK;
    return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: header: %s", w->file, w->scan.err);
}

/* A member's value that is not read. */
static int skip_value(walk *w)
{
    hf_tok t;
    int rc = next(w, &t);
    if (rc == LLMEM_OK && llmem_hf_scan_skip(&w->scan, &t) != 0)
        return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: header: %s", w->file, w->scan.err);
    return rc;
}

static int bad(walk *w, const hf_str *tensor, const char *what, const char *detail)
{
    return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: tensor '%.*s': %s%s", w->file, SHOWN(tensor),
                       what, detail ? detail : "");
}

/* A dimension or offset: an integer in [0, 2^64). */
static int non_negative(const hf_tok *t)
{
    return t->kind == HF_TOK_NUMBER && t->integer && t->fits &&
           (!t->negative || t->magnitude == 0);
}

static int read_dtype(walk *w, const hf_str *tensor, int *dt)
{
    hf_tok t;
    char name[41];
    int rc = next(w, &t);
    if (rc != LLMEM_OK)
        return rc;
    if (t.kind != HF_TOK_STRING)
        return bad(w, tensor, "'dtype' must be a string, not ", llmem_hf_tok_type_name(&t));
    size_t n = t.str.len < sizeof name ? llmem_hf_str_decode(&t.str, name) : 0;
    if (memchr(name, '\0', n) != NULL)
        return bad(w, tensor, "'dtype' holds a NUL character", NULL);
    name[n] = '\0';
    *dt = t.str.len < sizeof name ? find_dtype(name) : -1;
    if (*dt < 0) {
        char detail[64];
        snprintf(detail, sizeof detail, "'%.*s'", llmem_hf_str_shown(&t.str, 40), t.str.raw);
        return bad(w, tensor, "unknown dtype ", detail);
    }
    return LLMEM_OK;
}

/* The product of the dimensions; *overflow when it passes 2^64. */
static int read_shape(walk *w, const hf_str *tensor, uint64_t *elems, int *overflow)
{
    hf_tok t;
    checked c = { 0 };
    int rc = next(w, &t);
    if (rc != LLMEM_OK)
        return rc;
    if (t.kind != HF_TOK_ARRAY)
        return bad(w, tensor, "'shape' must be an array, not ", llmem_hf_tok_type_name(&t));
    *elems = 1;
    for (size_t i = 0;; i++) {
        if ((rc = next(w, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_ARRAY_END)
            break;
        if (!non_negative(&t)) {
            char detail[64];
            snprintf(detail, sizeof detail, "%zu must be a non-negative integer%s", i,
                     t.kind == HF_TOK_NUMBER && t.integer && !t.negative ? " below 2^64" : "");
            return bad(w, tensor, "'shape' dimension ", detail);
        }
        *elems = ck_mul(&c, *elems, t.magnitude);
    }
    *overflow = c.overflow;
    return LLMEM_OK;
}

static int read_offsets(walk *w, const hf_str *tensor, uint64_t *begin, uint64_t *end)
{
    hf_tok t;
    uint64_t v[2];
    size_t n = 0;
    int rc = next(w, &t);
    if (rc != LLMEM_OK)
        return rc;
    while (t.kind == HF_TOK_ARRAY) {
        if ((rc = next(w, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_ARRAY_END && n == 2) {
            *begin = v[0];
            *end = v[1];
            return LLMEM_OK;
        }
        if (n == 2 || !non_negative(&t))
            break;
        v[n++] = t.magnitude;
        t.kind = HF_TOK_ARRAY;
    }
    return bad(w, tensor, "'data_offsets' must be [begin, end] of non-negative integers", NULL);
}

/* Which of the three fields a member is: 0, 1, 2, or -1 for another. */
static int field_of(const hf_str *key)
{
    static const char *const fields[] = { "dtype", "shape", "data_offsets" };
    for (int i = 0; i < 3; i++)
        if (llmem_hf_str_eq(key, fields[i]))
            return i;
    return -1;
}

/* The checks of tensor.rs on one entry, once all its fields are read. */
static int check_tensor(walk *w, const hf_str *tensor, int dt, uint64_t elems, int overflow,
                        uint64_t begin, uint64_t end)
{
    char detail[96];
    checked c = { 0 };
    uint64_t bits = ck_mul(&c, elems, llmem_hf_dtypes[dt].bits);
    if (overflow || c.overflow)
        return bad(w, tensor, "shape product overflows 64 bits", NULL);
    if (bits % 8 != 0) {
        snprintf(detail, sizeof detail, " (%llu elements of %s)", (unsigned long long)elems,
                 llmem_hf_dtypes[dt].name);
        return bad(w, tensor, "data does not end on a byte boundary", detail);
    }
    if (end < begin) {
        snprintf(detail, sizeof detail, " [%llu, %llu]", (unsigned long long)begin,
                 (unsigned long long)end);
        return bad(w, tensor, "'data_offsets' end before begin", detail);
    }
    if (end > w->data_len) {
        snprintf(detail, sizeof detail, " [%llu, %llu] (data region %llu bytes)",
                 (unsigned long long)begin, (unsigned long long)end,
                 (unsigned long long)w->data_len);
        return bad(w, tensor, "'data_offsets' out of range", detail);
    }
    if (end - begin != bits / 8) {
        snprintf(detail, sizeof detail, " (%llu bytes) but the shape of %s needs %llu",
                 (unsigned long long)(end - begin), llmem_hf_dtypes[dt].name,
                 (unsigned long long)(bits / 8));
        return bad(w, tensor, "'data_offsets' size mismatch", detail);
    }
    return LLMEM_OK;
}

static int append(walk *w, const hf_st_tensor *r)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        hf_st_tensor *t = llmem__alloc(w->ctx, cap * sizeof *t);
        if (t == NULL)
            return llmem__fail(w->ctx, LLMEM_ENOMEM, "%s: out of memory for %zu tensors",
                               w->file, cap);
        if (w->n > 0)
            memcpy(t, w->t, w->n * sizeof *t);
        llmem__free(w->ctx, w->t);
        w->t = t;
        w->cap = cap;
    }
    w->t[w->n++] = *r;
    return LLMEM_OK;
}

/* One tensor's entry, an object with dtype, shape and data_offsets (other
 * members are skipped; a field given twice is an error, as serde's derived
 * TensorInfo has it). */
static int one_tensor(walk *w, const hf_str *tensor)
{
    static const char *const names[] = { "'dtype'", "'shape'", "'data_offsets'" };
    hf_tok t;
    int seen[3] = { 0, 0, 0 }, dt = 0, overflow = 0, rc;
    uint64_t elems = 0, begin = 0, end = 0;
    if ((rc = next(w, &t)) != LLMEM_OK)
        return rc;
    if (t.kind != HF_TOK_OBJECT)
        return bad(w, tensor, "entry must be an object, not ", llmem_hf_tok_type_name(&t));
    for (;;) {
        if ((rc = next(w, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_OBJECT_END)
            break;
        int f = field_of(&t.str);
        if (f >= 0 && seen[f])
            return bad(w, tensor, names[f], " appears twice");
        if (f >= 0)
            seen[f] = 1;
        if (f == 0)
            rc = read_dtype(w, tensor, &dt);
        else if (f == 1)
            rc = read_shape(w, tensor, &elems, &overflow);
        else if (f == 2)
            rc = read_offsets(w, tensor, &begin, &end);
        else
            rc = skip_value(w);
        if (rc != LLMEM_OK)
            return rc;
    }
    for (int f = 0; f < 3; f++)
        if (!seen[f])
            return bad(w, tensor, "missing ", names[f]);
    if ((rc = check_tensor(w, tensor, dt, elems, overflow, begin, end)) != LLMEM_OK)
        return rc;
    hf_st_tensor r = { tensor->raw, (uint32_t)tensor->len, (unsigned char)tensor->escaped,
                       (unsigned char)dt, begin, end };
    return append(w, &r);
}

/* __metadata__ is a string-to-string map in the format. */
static int metadata(walk *w)
{
    hf_tok t;
    int rc = next(w, &t);
    if (rc != LLMEM_OK)
        return rc;
    if (t.kind != HF_TOK_OBJECT)
        return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: '__metadata__' must be an object, not %s",
                           w->file, llmem_hf_tok_type_name(&t));
    for (;;) {
        if ((rc = next(w, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_OBJECT_END)
            return LLMEM_OK;
        hf_str key = t.str;
        if ((rc = next(w, &t)) != LLMEM_OK)
            return rc;
        if (t.kind != HF_TOK_STRING)
            return llmem__fail(w->ctx, LLMEM_EPARSE,
                               "%s: '__metadata__' entry '%.*s' must be a string, not %s",
                               w->file, SHOWN(&key), llmem_hf_tok_type_name(&t));
    }
}

/* The header's one object, entry by entry. */
static int walk_header(walk *w)
{
    hf_tok t;
    int rc = next(w, &t), metadata_seen = 0;
    if (rc != LLMEM_OK)
        return rc;
    if (t.kind != HF_TOK_OBJECT)
        return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: header is not a JSON object", w->file);
    for (;;) {
        if ((rc = next(w, &t)) != LLMEM_OK)
            return rc;
        if (t.kind == HF_TOK_OBJECT_END)
            break;
        hf_str key = t.str;
        if (llmem_hf_str_eq(&key, "__metadata__") && metadata_seen++)
            return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: '__metadata__' appears twice in the "
                               "header", w->file);
        rc = llmem_hf_str_eq(&key, "__metadata__") ? metadata(w) : one_tensor(w, &key);
        if (rc != LLMEM_OK)
            return rc;
    }
    return next(w, &t); /* only whitespace may follow */
}

/* A name given twice is refused: which entry holds the tensor is ambiguous
 * (the reference's map and Python's json keep the last one silently, so a
 * file written by hand or by a buggy tool would be read as another). Names
 * compare by their decoded text ("\u0061" is "a"). Sorted by name on return. */
static int check_unique(walk *w)
{
    llmem_hf_st_sort_by_name(w->t, w->n);
    for (size_t i = 1; i < w->n; i++) {
        hf_str a = llmem_hf_st_name(&w->t[i - 1]), b = llmem_hf_st_name(&w->t[i]);
        if (llmem_hf_str_cmp(&a, &b) == 0)
            return llmem__fail(w->ctx, LLMEM_EPARSE, "%s: tensor '%.*s' appears twice in the "
                               "header", w->file, SHOWN(&a));
    }
    return LLMEM_OK;
}

/* The quant_state tensors of this header alone. */
static int own_bnb(walk *w, hf_bnb *set)
{
    int rc = LLMEM_OK;
    for (size_t i = 0; rc == LLMEM_OK && i < w->n; i++) {
        hf_str name = llmem_hf_st_name(&w->t[i]);
        rc = llmem_hf_bnb_add(w->ctx, set, &name);
    }
    llmem_hf_bnb_sort(set);
    return rc;
}

int llmem_hf_st_header(llmem_ctx *ctx, const char *name, const char *header, size_t header_len,
                       uint64_t data_len, const hf_bnb *bnb, hf_totals *totals,
                       hf_st_tensors *keep)
{
    walk w;
    hf_totals add;
    hf_bnb own = { NULL, 0, 0 };
    int rc;
    if (keep != NULL) {
        keep->t = NULL;
        keep->n = 0;
    }
    if (header_len == 0 || header[0] != '{')
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: header does not start with '{'", name);
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    w.file = name;
    w.data_len = data_len;
    llmem_hf_scan_begin(&w.scan, header, header_len);
    rc = walk_header(&w);
    if (rc == LLMEM_OK)
        rc = check_unique(&w);
    if (rc == LLMEM_OK)
        rc = llmem_hf_st_check_coverage(ctx, name, data_len, w.t, w.n);
    if (rc == LLMEM_OK && bnb == NULL) {
        rc = own_bnb(&w, &own);
        bnb = &own;
    }
    if (rc == LLMEM_OK)
        rc = llmem_hf_st_count(ctx, w.t, w.n, bnb, &add);
    llmem_hf_bnb_free(ctx, &own);
    if (rc == LLMEM_OK) {
        /* The tensors cover the data region without overlap, and a data
         * region (of a file, or an object in memory) is below 2^63 bytes: the
         * bytes, and the elements (at most two a byte, F4 or packed 4-bit),
         * add up below 2^64. Sums with other shards are checked. */
        checked c = { 0 };
        ck_add(&c, totals->params, add.params);
        ck_add(&c, totals->bytes, add.bytes);
        if (c.overflow)
            rc = llmem__fail(ctx, LLMEM_EOVERFLOW, "%s: totals overflow 64 bits", name);
    }
    if (rc != LLMEM_OK) {
        llmem__free(ctx, w.t);
        return rc;
    }
    llmem_hf_st_merge(totals, &add);
    if (keep != NULL) {
        llmem_hf_st_sort_by_name(w.t, w.n);
        keep->t = w.t;
        keep->n = w.n;
    } else {
        llmem__free(ctx, w.t);
    }
    return LLMEM_OK;
}
