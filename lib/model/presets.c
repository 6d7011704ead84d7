/* SPDX-License-Identifier: MIT */
/* Built-in presets: the config.json values of published checkpoints. Their
 * exact parameter counts are asserted against the published numbers in
 * tests/data/published_params.csv; a preset whose config.json is in
 * tests/hf/configs/ resolves to the model that file does, field by field
 * (tests/hf/test_preset_configs.c). */
#include "model/model.h"

#include "core/ctx.h"
#include "core/names.h"

#include <string.h>

/* A field the columns do not hold, as the checkpoint's config.json gives it:
 * an integer field's value, or a real field's (a dropout probability). */
typedef struct preset_field {
    int key; /* 0 ends a list */
    int64_t value;
    double real;
} preset_field;

/* -1 in an override column keeps the family default. */
typedef struct preset {
    const char *name;
    int family;
    int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab, max_positions;
    int tie, qkv_bias, final_norm, embed_dim, post_norm;
    int64_t window; /* sliding_window (DEF: the family's default) */
    int dtype;      /* bytes of the config's torch_dtype (DEF: it names none, or is not in tests/hf/configs) */
    const preset_field *more; /* NULL or the other fields the config sets */
} preset;

#define DEF -1

#define SET(key, v) { LLMEM_MODEL_##key, v, 0.0 }
#define SET_REAL(key, v) { LLMEM_MODEL_##key, 0, v }
#define END_FIELDS { 0, 0, 0.0 }

/* Qwen3Attention's q_norm and k_norm (Qwen3RMSNorm over head_dim). */
static const preset_field qwen3[] = { SET(QK_NORM, 1), END_FIELDS };
/* Mixtral-8x7B-v0.1's config.json: num_local_experts 8, num_experts_per_tok 2,
 * each expert of intermediate_size 14336. */
static const preset_field mixtral_8x7b[] = {
    SET(EXPERTS, 8), SET(EXPERTS_PER_TOKEN, 2), SET(EXPERT_INTERMEDIATE, 14336), END_FIELDS };
/* Qwen1.5-MoE-A2.7B's config.json: num_experts 60, num_experts_per_tok 4,
 * moe_intermediate_size 1408, shared_expert_intermediate_size 5632 (with its
 * shared_expert_gate); decoder_sparse_step 1 and no mlp_only_layers: every
 * layer sparse. */
static const preset_field qwen15_moe_a27b[] = {
    SET(EXPERTS, 60), SET(EXPERTS_PER_TOKEN, 4), SET(EXPERT_INTERMEDIATE, 1408),
    SET(SHARED_EXPERT_INTERMEDIATE, 5632), SET(SHARED_EXPERT_GATE, 1), END_FIELDS };
/* DeepSeek-V2-Lite's config.json: kv_lora_rank 512, q_lora_rank null (a plain
 * q_proj), qk_nope_head_dim 128 + qk_rope_head_dim 64 (head-dim 192 in the row),
 * v_head_dim 128; n_routed_experts 64, num_experts_per_tok 6,
 * moe_intermediate_size 1408, n_shared_experts 2 (2 x 1408), first_k_dense_replace 1. */
static const preset_field deepseek_v2_lite[] = {
    SET(KV_LORA_RANK, 512), SET(ROTARY_DIM, 64), SET(V_HEAD_DIM, 128),
    SET(EXPERTS, 64), SET(EXPERTS_PER_TOKEN, 6), SET(EXPERT_INTERMEDIATE, 1408),
    SET(SHARED_EXPERT_INTERMEDIATE, 2816), SET(DENSE_LAYERS, 1), END_FIELDS };
/* starcoder2-3b's config.json: attention_dropout, residual_dropout and
 * embedding_dropout 0.1 (Starcoder2Config's defaults are 0). */
static const preset_field starcoder2_3b[] = {
    SET_REAL(ATTENTION_DROPOUT, 0.1), SET_REAL(HIDDEN_DROPOUT, 0.1),
    SET_REAL(EMBEDDING_DROPOUT, 0.1), END_FIELDS };
/* phi-2's config.json: partial_rotary_factor 0.4 of head_dim 80 (2560 / 32),
 * resid_pdrop 0.1. */
static const preset_field phi_2[] = {
    SET(ROTARY_DIM, 32), SET_REAL(HIDDEN_DROPOUT, 0.1), END_FIELDS };

static const preset presets[] = {
    /* name                             family              H      L    A    KV  D    I      V       pos     tie  qkvb fnorm edim post win  dt   more */
    { "openai-community/gpt2",        LLMEM_FAMILY_GPT2,   768,   12,  12,  0,  0,   3072,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "openai-community/gpt2-medium", LLMEM_FAMILY_GPT2,   1024,  24,  16,  0,  0,   4096,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "openai-community/gpt2-large",  LLMEM_FAMILY_GPT2,   1280,  36,  20,  0,  0,   5120,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "openai-community/gpt2-xl",     LLMEM_FAMILY_GPT2,   1600,  48,  25,  0,  0,   6400,  50257,  1024,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "facebook/opt-125m",            LLMEM_FAMILY_OPT,    768,   12,  12,  0,  0,   3072,  50272,  2048,   DEF, DEF, DEF, DEF, DEF, DEF, 2,  NULL },
    /* opt-350m: word_embed_proj_dim 512, do_layer_norm_before false (norms after the
     * residual additions, no final norm). */
    { "facebook/opt-350m",            LLMEM_FAMILY_OPT,    1024,  24,  16,  0,  0,   4096,  50272,  2048,   DEF, DEF, 0,   512, 1, DEF, 2,  NULL },
    { "facebook/opt-1.3b",            LLMEM_FAMILY_OPT,    2048,  24,  32,  0,  0,   8192,  50272,  2048,   DEF, DEF, DEF, DEF, DEF, DEF, 2,  NULL },
    { "facebook/opt-6.7b",            LLMEM_FAMILY_OPT,    4096,  32,  32,  0,  0,   16384, 50272,  2048,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "bigscience/bloom-560m",        LLMEM_FAMILY_BLOOM,  1024,  24,  16,  0,  0,   4096,  250880, 2048,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "meta-llama/Llama-2-7b-hf",     LLMEM_FAMILY_LLAMA,  4096,  32,  32,  32, 0,   11008, 32000,  4096,   DEF, DEF, DEF, DEF, DEF, DEF, 2,  NULL },
    { "meta-llama/Llama-2-13b-hf",    LLMEM_FAMILY_LLAMA,  5120,  40,  40,  40, 0,   13824, 32000,  4096,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "meta-llama/Llama-2-70b-hf",    LLMEM_FAMILY_LLAMA,  8192,  80,  64,  8,  0,   28672, 32000,  4096,   DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "meta-llama/Meta-Llama-3-8B",   LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 128256, 8192,   DEF, DEF, DEF, DEF, DEF, DEF, 2,  NULL },
    { "meta-llama/Llama-3.1-8B",      LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 128256, 131072, DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "meta-llama/Llama-3.1-70B",     LLMEM_FAMILY_LLAMA,  8192,  80,  64,  8,  0,   28672, 128256, 131072, DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "meta-llama/Llama-3.1-405B",    LLMEM_FAMILY_LLAMA,  16384, 126, 128, 8,  0,   53248, 128256, 131072, DEF, DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    { "meta-llama/Llama-3.2-1B",      LLMEM_FAMILY_LLAMA,  2048,  16,  32,  8,  64,  8192,  128256, 131072, 1,   DEF, DEF, DEF, DEF, DEF, 2,  NULL },
    { "meta-llama/Llama-3.2-3B",      LLMEM_FAMILY_LLAMA,  3072,  28,  24,  8,  128, 8192,  128256, 131072, 1,   DEF, DEF, DEF, DEF, DEF, DEF, NULL },
    /* Mistral-7B-v0.1's config.json: sliding_window 4096 (v0.2 and later: null). */
    { "mistralai/Mistral-7B-v0.1",    LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 32000,  32768,  DEF, DEF, DEF, DEF, DEF, 4096, 2,  NULL },
    { "Qwen/Qwen2.5-0.5B",            LLMEM_FAMILY_LLAMA,  896,   24,  14,  2,  0,   4864,  151936, 32768,  1,   1,   DEF, DEF, DEF, DEF, 2,  NULL },
    { "Qwen/Qwen2.5-7B",              LLMEM_FAMILY_LLAMA,  3584,  28,  28,  4,  0,   18944, 152064, 131072, DEF, 1,   DEF, DEF, DEF, DEF, 2,  NULL },
    { "Qwen/Qwen2.5-72B",             LLMEM_FAMILY_LLAMA,  8192,  80,  64,  8,  0,   29568, 152064, 131072, DEF, 1,   DEF, DEF, DEF, DEF, DEF, NULL },
    { "google/gemma-2-9b",            LLMEM_FAMILY_GEMMA2, 3584,  42,  16,  8,  256, 14336, 256000, 8192,   DEF, DEF, DEF, DEF, DEF, DEF, 4,  NULL },
    /* Phi-3-mini-4k-instruct's config.json: sliding_window 2047. */
    { "microsoft/Phi-3-mini-4k-instruct", LLMEM_FAMILY_PHI3, 3072, 32, 32,  32, 0,   8192,  32064,  4096,   DEF, DEF, DEF, DEF, DEF, 2047, 2,  NULL },
    /* The rows below are their config.json files in tests/hf/configs/ (the file
     * named as the id after the organisation), typed in; the windows are
     * sliding_window as the model type takes it (Qwen3's and Qwen2-MoE's
     * use_sliding_window false: none; Mixtral's null: none). */
    { "Qwen/Qwen3-0.6B",              LLMEM_FAMILY_LLAMA,  1024,  28,  16,  8,  128, 3072,  151936, 40960,  1,   DEF, DEF, DEF, DEF, DEF, 2,  qwen3 },
    { "Qwen/Qwen3-8B",                LLMEM_FAMILY_LLAMA,  4096,  36,  32,  8,  128, 12288, 151936, 40960,  DEF, DEF, DEF, DEF, DEF, DEF, 2,  qwen3 },
    /* gemma-2-2b's config.json: torch_dtype float32; sliding_window 4096 (the family's). */
    { "google/gemma-2-2b",            LLMEM_FAMILY_GEMMA2, 2304,  26,  8,   4,  256, 9216,  256000, 8192,   DEF, DEF, DEF, DEF, DEF, DEF, 4,  NULL },
    { "mistralai/Mixtral-8x7B-v0.1",  LLMEM_FAMILY_LLAMA,  4096,  32,  32,  8,  0,   14336, 32000,  32768,  DEF, DEF, DEF, DEF, DEF, DEF, 2,  mixtral_8x7b },
    /* Qwen1.5-MoE-A2.7B: intermediate_size 5632 (a dense layer's, had it any), qkv_bias. */
    { "Qwen/Qwen1.5-MoE-A2.7B",       LLMEM_FAMILY_LLAMA,  2048,  24,  16,  16, 0,   5632,  151936, 8192,   DEF, 1,   DEF, DEF, DEF, DEF, 2,  qwen15_moe_a27b },
    /* DeepSeek-V2-Lite: intermediate_size 10944 (the dense first layer); latent
     * attention has no kv heads (0 reads as heads). */
    { "deepseek-ai/DeepSeek-V2-Lite", LLMEM_FAMILY_DEEPSEEK, 2048, 27, 16,  0,  192, 10944, 102400, 163840, DEF, DEF, DEF, DEF, DEF, DEF, 2,  deepseek_v2_lite },
    /* starcoder2-3b's config.json: sliding_window 4096. */
    { "bigcode/starcoder2-3b",        LLMEM_FAMILY_STARCODER2, 3072, 30, 24, 2, 0,   12288, 49152,  16384,  DEF, DEF, DEF, DEF, DEF, 4096, 2, starcoder2_3b },
    { "microsoft/phi-2",              LLMEM_FAMILY_PHI,    2560,  32,  32,  32, 0,   10240, 51200,  2048,   DEF, DEF, DEF, DEF, DEF, DEF, 2,  phi_2 },
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
    if (p->dtype != DEF)
        f[LLMEM_MODEL_DTYPE_BYTES] = p->dtype;
    for (const preset_field *x = p->more; x != NULL && x->key != 0; x++) {
        if (llmem_model_field_is_real(x->key) == 1)
            llmem_model_put_real(f, x->key, x->real);
        else
            f[x->key] = x->value;
    }
    return LLMEM_OK;
}
