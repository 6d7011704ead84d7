/* SPDX-License-Identifier: MIT */
/* Built-in presets: the config.json values of published checkpoints. Their
 * exact parameter counts are asserted against the published numbers in
 * tests/data/published_params.csv. */
#include "model/model.h"

#include "core/ctx.h"
#include "core/names.h"

#include <string.h>

/* -1 in an override column keeps the family default. */
typedef struct preset {
    const char *name;
    int family;
    int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab, max_positions;
    int tie, qkv_bias, final_norm, embed_dim, post_norm;
    int64_t window; /* sliding_window (DEF: the family's default) */
} preset;

#define DEF -1

static const preset presets[] = {
    /* name                             family              H      L    A    KV  D    I      V       pos     tie  qkvb fnorm edim post win */
    { "openai-community/gpt2",        LLMEM_FAMILY_GPT2,   768,   12,  12,  0,  0,   3072,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "openai-community/gpt2-medium", LLMEM_FAMILY_GPT2,   1024,  24,  16,  0,  0,   4096,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "openai-community/gpt2-large",  LLMEM_FAMILY_GPT2,   1280,  36,  20,  0,  0,   5120,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "openai-community/gpt2-xl",     LLMEM_FAMILY_GPT2,   1600,  48,  25,  0,  0,   6400,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "facebook/opt-125m",            LLMEM_FAMILY_OPT,    768,   12,  12,  0,  0,   3072,  50272,  2048,   DEF, DEF, DEF, DEF, DEF, DEF },
    /* opt-350m: word_embed_proj_dim 512, do_layer_norm_before false (norms after the
     * residual additions, no final norm). */
    { "facebook/opt-350m",            LLMEM_FAMILY_OPT,    1024,  24,  16,  0,  0,   4096,  50272,  2048,   DEF, DEF, 0,   512, 1, DEF },
    { "facebook/opt-1.3b",            LLMEM_FAMILY_OPT,    2048,  24,  32,  0,  0,   8192,  50272,  2048,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "facebook/opt-6.7b",            LLMEM_FAMILY_OPT,    4096,  32,  32,  0,  0,   16384, 50272,  2048,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "bigscience/bloom-560m",        LLMEM_FAMILY_BLOOM,  1024,  24,  16,  0,  0,   4096,  250880, 2048,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-2-7b-hf",     LLMEM_FAMILY_LLAMA,  4096,  32,  32,  32, 0,   11008, 32000,  4096,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-2-13b-hf",    LLMEM_FAMILY_LLAMA,  5120,  40,  40,  40, 0,   13824, 32000,  4096,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-2-70b-hf",    LLMEM_FAMILY_LLAMA,  8192,  80,  64,  8,  0,   28672, 32000,  4096,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Meta-Llama-3-8B",   LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 128256, 8192,   DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-3.1-8B",      LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 128256, 131072, DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-3.1-70B",     LLMEM_FAMILY_LLAMA,  8192,  80,  64,  8,  0,   28672, 128256, 131072, DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-3.1-405B",    LLMEM_FAMILY_LLAMA,  16384, 126, 128, 8,  0,   53248, 128256, 131072, DEF, DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-3.2-1B",      LLMEM_FAMILY_LLAMA,  2048,  16,  32,  8,  64,  8192,  128256, 131072, 1,   DEF, DEF, DEF, DEF, DEF },
    { "meta-llama/Llama-3.2-3B",      LLMEM_FAMILY_LLAMA,  3072,  28,  24,  8,  128, 8192,  128256, 131072, 1,   DEF, DEF, DEF, DEF, DEF },
    /* Mistral-7B-v0.1's config.json: sliding_window 4096 (v0.2 and later: null). */
    { "mistralai/Mistral-7B-v0.1",    LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 32000,  32768,  DEF, DEF, DEF, DEF, DEF, 4096 },
    { "Qwen/Qwen2.5-0.5B",            LLMEM_FAMILY_LLAMA,  896,   24,  14,  2,  0,   4864,  151936, 32768,  1,   1,   DEF, DEF, DEF, DEF },
    { "Qwen/Qwen2.5-7B",              LLMEM_FAMILY_LLAMA,  3584,  28,  28,  4,  0,   18944, 152064, 131072, DEF, 1,   DEF, DEF, DEF, DEF },
    { "Qwen/Qwen2.5-72B",             LLMEM_FAMILY_LLAMA,  8192,  80,  64,  8,  0,   29568, 152064, 131072, DEF, 1,   DEF, DEF, DEF, DEF },
    { "google/gemma-2-9b",            LLMEM_FAMILY_GEMMA2, 3584,  42,  16,  8,  256, 14336, 256000, 8192,   DEF, DEF, DEF, DEF, DEF, DEF },
    /* Phi-3-mini-4k-instruct's config.json: sliding_window 2047. */
    { "microsoft/Phi-3-mini-4k-instruct", LLMEM_FAMILY_PHI3, 3072, 32, 32,  32, 0,   8192,  32064,  4096,   DEF, DEF, DEF, DEF, DEF, 2047 },
};

#define PRESET_COUNT (sizeof presets / sizeof presets[0])

size_t llmem_preset_count(void)
{
    return PRESET_COUNT;
}

const char *llmem_preset_name(size_t index)
{
    return index < PRESET_COUNT ? presets[index].name : NULL;
}

/* The part after the organisation ("Llama-2-7b-hf"), or the whole id. */
static const char *short_name(const char *full)
{
    const char *slash = strchr(full, '/');
    return slash != NULL ? slash + 1 : full;
}

/* ASCII case-insensitive equality: Hugging Face ids are case-insensitive
 * (the Hub resolves "mistralai/mistral-7b-v0.1"). */
static int same_folded(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
        if (x != y)
            return 0;
    }
    return *a == *b;
}

/* Match the full id or the part after the organisation, exactly or else
 * ignoring case. A name two presets match ignoring case (none do today: a
 * unit test checks) is ambiguous: the first is returned, the second in
 * *other (else NULL). */
static const preset *find(const char *name, const preset **other)
{
    const preset *found = NULL;
    *other = NULL;
    for (size_t i = 0; i < PRESET_COUNT; i++)
        if (strcmp(presets[i].name, name) == 0 || strcmp(short_name(presets[i].name), name) == 0)
            return &presets[i];
    for (size_t i = 0; i < PRESET_COUNT; i++) {
        if (!same_folded(presets[i].name, name) && !same_folded(short_name(presets[i].name), name))
            continue;
        if (found != NULL) {
            *other = &presets[i];
            return found;
        }
        found = &presets[i];
    }
    return found;
}

/* Candidate i of the suggestion: preset i / 2's full id, then its short name. */
static const char *candidate(const void *table, size_t i)
{
    const preset *rows = table;
    return i % 2 == 0 ? rows[i / 2].name : short_name(rows[i / 2].name);
}

static int unknown_preset(llmem_ctx *ctx, const char *name)
{
    size_t i = llmem_names_suggest(name, candidate, presets, 2 * PRESET_COUNT);
    if (i < 2 * PRESET_COUNT)
        return llmem__fail(ctx, LLMEM_ENOTFOUND,
                           "model: unknown preset '%s'; did you mean '%s'? (see `llmem models`)",
                           name, presets[i / 2].name);
    return llmem__fail(ctx, LLMEM_ENOTFOUND, "model: unknown preset '%s' (see `llmem models`)",
                       name);
}

int llmem_model_new_preset(llmem_ctx *ctx, const char *name, llmem_model **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "preset: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (name == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "preset: name is NULL");
    const preset *other;
    const preset *p = find(name, &other);
    if (other != NULL)
        return llmem__fail(ctx, LLMEM_ENOTFOUND,
                           "model: preset '%s' is ambiguous ignoring case: '%s' or '%s'", name,
                           p->name, other->name);
    if (p == NULL)
        return unknown_preset(ctx, name);
    int rc = llmem_model_new(ctx, p->family, out);
    if (rc != LLMEM_OK)
        return rc;
    int64_t *f = (*out)->field; /* the row is trusted data: set without the engine's checks */
    f[LLMEM_MODEL_HIDDEN] = p->hidden;
    f[LLMEM_MODEL_LAYERS] = p->layers;
    f[LLMEM_MODEL_HEADS] = p->heads;
    f[LLMEM_MODEL_KV_HEADS] = p->kv_heads;
    f[LLMEM_MODEL_HEAD_DIM] = p->head_dim;
    f[LLMEM_MODEL_INTERMEDIATE] = p->intermediate;
    f[LLMEM_MODEL_VOCAB] = p->vocab;
    f[LLMEM_MODEL_MAX_POSITIONS] = p->max_positions;
    if (p->tie != DEF)
        f[LLMEM_MODEL_TIE_EMBEDDINGS] = p->tie;
    if (p->qkv_bias != DEF)
        f[LLMEM_MODEL_QKV_BIAS] = p->qkv_bias;
    if (p->final_norm != DEF)
        f[LLMEM_MODEL_FINAL_NORM] = p->final_norm;
    if (p->embed_dim != DEF)
        f[LLMEM_MODEL_EMBED_DIM] = p->embed_dim;
    if (p->post_norm != DEF)
        f[LLMEM_MODEL_POST_NORM] = p->post_norm;
    if (p->window != DEF)
        f[LLMEM_MODEL_SLIDING_WINDOW] = p->window;
    return LLMEM_OK;
}
