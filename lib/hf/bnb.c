/* SPDX-License-Identifier: MIT */
/* bitsandbytes 4-bit checkpoints: which tensors are packed 4-bit weights and
 * which are their quantization state.
 *
 * What a checkpoint holds (bitsandbytes, bitsandbytes/nn/modules.py:
 * Linear4bit._save_to_state_dict, and bitsandbytes/functional.py:
 * QuantState.as_dict(packed=True) and quantize_4bit; transformers saves a
 * model loaded with load_in_4bit through them): a quantized linear's weight
 * X.weight is its n = in x out 4-bit values packed two a byte, a U8 tensor
 * of shape [ceil(n / 2), 1] under the default uint8 quant storage; its state
 * is saved next to it as X.weight.absmax (F32, or U8 under double
 * quantization), X.weight.quant_map (F32), under double quantization
 * X.weight.nested_absmax and X.weight.nested_quant_map (F32), and
 * X.weight.quant_state.bitsandbytes__<quant type> (nf4 or fp4), the
 * remaining fields packed as JSON into a U8 tensor. The last one marks the
 * weight: a U8 X.weight counts 2 parameters a byte, exact for even n (every
 * linear of the supported families has an even n; an odd one is counted
 * n + 1), and the state counts as bytes, not parameters. */
#include "hf/hf.h"

#include "core/ctx.h"

#include <stdlib.h>
#include <string.h>

#define QUANT_STATE ".quant_state.bitsandbytes__"

static const struct {
    const char *suffix;
    int kind;
} quant_types[] = {
    { QUANT_STATE "nf4", HF_KIND_BNB_NF4 },
    { QUANT_STATE "fp4", HF_KIND_BNB_FP4 },
};

/* The state tensors saved next to X.weight, by the suffix after it. */
static const char *const state_suffixes[] = {
    ".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map",
    QUANT_STATE "nf4", QUANT_STATE "fp4",
};

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

static int ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len > n && memcmp(s + len - n, suffix, n) == 0;
}

static int append(llmem_ctx *ctx, hf_bnb *set, const hf_bnb_base *b)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        hf_bnb_base *t = llmem__alloc(ctx, cap * sizeof *t);
        if (t == NULL)
            return llmem__fail(ctx, LLMEM_ENOMEM, "out of memory for %zu quantized weights", cap);
        if (set->n > 0)
            memcpy(t, set->b, set->n * sizeof *t);
        llmem__free(ctx, set->b);
        set->b = t;
        set->cap = cap;
    }
    set->b[set->n++] = *b;
    return LLMEM_OK;
}

int llmem_hf_bnb_add(llmem_ctx *ctx, hf_bnb *set, const hf_str *name)
{
    /* Decoding never lengthens a name: one no longer than the suffix (with a
     * 3-letter quant type) names no weight. */
    if (name->len <= strlen(QUANT_STATE) + 3)
        return LLMEM_OK;
    const char *s = name->raw;
    size_t len = name->len;
    char *decoded = NULL;
    if (name->escaped) {
        if ((decoded = llmem__alloc(ctx, name->len)) == NULL)
            return llmem__fail(ctx, LLMEM_ENOMEM, "out of memory for a tensor name");
        len = llmem_hf_str_decode(name, decoded);
        s = decoded;
    }
    int rc = LLMEM_OK, kept = 0;
    for (size_t i = 0; i < COUNT(quant_types); i++) {
        if (!ends_with(s, len, quant_types[i].suffix))
            continue;
        hf_bnb_base b = { s, len - strlen(quant_types[i].suffix),
                          (unsigned char)quant_types[i].kind, decoded != NULL };
        rc = append(ctx, set, &b);
        kept = rc == LLMEM_OK;
        break;
    }
    if (!kept)
        llmem__free(ctx, decoded);
    return rc;
}

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

/* By name, then by kind: a weight given both quant types is read as nf4. */
static int by_name(const void *a, const void *b)
{
    const hf_bnb_base *x = a, *y = b;
    int c = cmp_bytes(x->name, x->len, y->name, y->len);
    return c != 0 ? c : (x->kind > y->kind) - (x->kind < y->kind);
}

void llmem_hf_bnb_sort(hf_bnb *set)
{
    if (set->n > 1)
        qsort(set->b, set->n, sizeof *set->b, by_name);
}

void llmem_hf_bnb_free(llmem_ctx *ctx, hf_bnb *set)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->b[i].owned)
            llmem__free(ctx, (char *)set->b[i].name);
    llmem__free(ctx, set->b);
    memset(set, 0, sizeof *set);
}

/* The first base named name[0, len), or NULL. */
static const hf_bnb_base *find(const hf_bnb *set, const char *name, size_t len)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_bytes(set->b[mid].name, set->b[mid].len, name, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < set->n && cmp_bytes(set->b[lo].name, set->b[lo].len, name, len) == 0)
        return &set->b[lo];
    return NULL;
}

int llmem_hf_bnb_kind(const hf_bnb *set, const char *name, size_t len, int dtype)
{
    const hf_bnb_base *b;
    if (set == NULL || set->n == 0)
        return dtype;
    for (size_t i = 0; i < COUNT(state_suffixes); i++)
        if (ends_with(name, len, state_suffixes[i]) &&
            find(set, name, len - strlen(state_suffixes[i])) != NULL)
            return HF_BNB_STATE;
    /* Only the default uint8 quant storage is recognised: another storage
     * dtype keeps its elements (and the cross-check says they differ). */
    if (strcmp(llmem_hf_dtypes[dtype].name, "U8") == 0 && (b = find(set, name, len)) != NULL)
        return b->kind;
    return dtype;
}
