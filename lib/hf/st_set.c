/* SPDX-License-Identifier: MIT */
/* The tensors of one safetensors header together, once each entry is read
 * (safetensors.c): names given twice, the coverage of the data region, the
 * totals. Sorting makes each O(n log n) in the tensors. */
#include "hf/hf.h"

#include "core/ctx.h"
#include "hf/scan.h"

#include <stdlib.h>
#include <string.h>

#define SHOWN(s) llmem_hf_str_shown((s), HF_NAME_SHOWN), (s)->raw

hf_str llmem_hf_st_name(const hf_st_tensor *t)
{
    hf_str s = { t->name, t->name_len, t->name_escaped };
    return s;
}

/* By name, then by place in the header (names point into it). */
static int by_name(const void *a, const void *b)
{
    const hf_st_tensor *x = a, *y = b;
    hf_str p = llmem_hf_st_name(x), q = llmem_hf_st_name(y);
    int c = llmem_hf_str_cmp(&p, &q);
    if (c != 0)
        return c;
    return x->name < y->name ? -1 : x->name > y->name;
}

static int by_offsets(const void *a, const void *b)
{
    const hf_st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name; /* the same message everywhere */
}

static void sort(hf_st_tensor *t, size_t n, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(t, n, sizeof *t, cmp);
}

#define KIND_NO_MEMORY (-2) /* neither a kind nor HF_BNB_STATE */

/* What t counts as under bnb (llmem_hf_bnb_kind); an escaped name is looked
 * up decoded. KIND_NO_MEMORY when the name cannot be decoded. */
static int kind_of(llmem_ctx *ctx, const hf_st_tensor *t, const hf_bnb *bnb)
{
    if (bnb == NULL || bnb->n == 0)
        return t->dtype;
    if (!t->name_escaped)
        return llmem_hf_bnb_kind(bnb, t->name, t->name_len, t->dtype);
    hf_str name = llmem_hf_st_name(t);
    char *decoded = llmem__alloc(ctx, name.len);
    if (decoded == NULL)
        return KIND_NO_MEMORY;
    int kind = llmem_hf_bnb_kind(bnb, decoded, llmem_hf_str_decode(&name, decoded), t->dtype);
    llmem__free(ctx, decoded);
    return kind;
}

/* Totals of the tensors kept, dtypes in order of first appearance in the
 * header (names point into it, so the first is the lowest address). */
int llmem_hf_st_count(llmem_ctx *ctx, const hf_st_tensor *t, size_t n, const hf_bnb *bnb,
                      hf_totals *add)
{
    const char *first[HF_KIND_COUNT] = { NULL };
    memset(add, 0, sizeof *add);
    for (size_t i = 0; i < n; i++) {
        const hf_st_tensor *r = &t[i];
        int dt = kind_of(ctx, r, bnb);
        if (dt == KIND_NO_MEMORY)
            return llmem__fail(ctx, LLMEM_ENOMEM, "out of memory for a tensor name");
        uint64_t bytes = r->end - r->begin, bits = llmem_hf_dtypes[r->dtype].bits;
        /* bytes x 8 / bits, exact (check_tensor) and without overflow; a
         * packed 4-bit weight holds two a byte. */
        uint64_t elems = bytes / bits * 8 + bytes % bits * 8 / bits;
        add->bytes += bytes;
        add->tensors++;
        if (dt == HF_BNB_STATE) {
            add->quant_bytes += bytes;
            add->quant_tensors++;
            continue;
        }
        if (dt >= HF_DTYPE_COUNT)
            elems = 2 * bytes;
        if (first[dt] == NULL || r->name < first[dt])
            first[dt] = r->name;
        add->dtype_params[dt] += elems;
        add->dtype_bytes[dt] += bytes;
        add->params += elems;
    }
    for (int dt = 0; dt < HF_KIND_COUNT; dt++) {
        if (first[dt] == NULL)
            continue;
        size_t k = add->ndtypes++;
        for (; k > 0 && first[add->order[k - 1]] > first[dt]; k--)
            add->order[k] = add->order[k - 1];
        add->order[k] = (unsigned char)dt;
    }
    return LLMEM_OK;
}

/* The data region must be covered exactly: sorted by offsets, each tensor
 * starts where the previous one ended, the first at 0, the last at the end. */
int llmem_hf_st_check_coverage(llmem_ctx *ctx, const char *file, uint64_t data_len,
                               hf_st_tensor *t, size_t n)
{
    uint64_t at = 0;
    sort(t, n, by_offsets);
    for (size_t i = 0; i < n; i++) {
        const hf_st_tensor *r = &t[i];
        hf_str name = llmem_hf_st_name(r);
        if (r->begin < at) {
            hf_str prev = llmem_hf_st_name(&t[i - 1]);
            return llmem__fail(ctx, LLMEM_EPARSE,
                               "%s: tensor '%.*s' at [%llu, %llu] overlaps tensor '%.*s'",
                               file, SHOWN(&name), (unsigned long long)r->begin,
                               (unsigned long long)r->end, SHOWN(&prev));
        }
        if (r->begin > at)
            return llmem__fail(ctx, LLMEM_EPARSE,
                               "%s: tensor '%.*s' at [%llu, %llu] leaves bytes [%llu, %llu) "
                               "of the data region unused",
                               file, SHOWN(&name), (unsigned long long)r->begin,
                               (unsigned long long)r->end, (unsigned long long)at,
                               (unsigned long long)r->begin);
        at = r->end;
    }
    if (at != data_len)
        return llmem__fail(ctx, LLMEM_EPARSE,
                           "%s: tensors cover %llu bytes but the data region holds %llu",
                           file, (unsigned long long)at, (unsigned long long)data_len);
    return LLMEM_OK;
}

void llmem_hf_st_sort_by_name(hf_st_tensor *t, size_t n)
{
    sort(t, n, by_name);
}

void llmem_hf_st_merge(hf_totals *into, const hf_totals *add)
{
    for (size_t i = 0; i < add->ndtypes; i++) {
        int dt = add->order[i], seen = 0;
        for (size_t k = 0; k < into->ndtypes; k++)
            seen |= into->order[k] == dt;
        if (!seen)
            into->order[into->ndtypes++] = (unsigned char)dt;
    }
    for (int dt = 0; dt < HF_KIND_COUNT; dt++) {
        into->dtype_params[dt] += add->dtype_params[dt];
        into->dtype_bytes[dt] += add->dtype_bytes[dt];
    }
    into->params += add->params;
    into->bytes += add->bytes;
    into->tensors += add->tensors;
    into->quant_bytes += add->quant_bytes;
    into->quant_tensors += add->quant_tensors;
}
