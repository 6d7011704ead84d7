/* SPDX-License-Identifier: MIT */
/*
 * Built-in presets, through the public API only.
 *
 * - Every row of tests/data/published_params.csv (read at run time from the
 *   directory named by the LLMEM_TEST_DATA environment variable) must match
 *   llmem_model_param_count() exactly.
 * - Presets without a published count are checked against a count computed
 *   here from the Hugging Face module structure of their architecture.
 * - Every preset loads by its full and its short name and validates; an
 *   unknown name fails with LLMEM_ENOTFOUND and a message naming it.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmem.h"

#define NAME_CAP 96
#define PATH_CAP 512
#define MSG_CAP (PATH_CAP + 128)

/* ------------------------------------------------------------------ */
/* The published-counts table, read from the CSV by the parameter generator. */

typedef struct published_row {
    char preset[NAME_CAP];
    uint64_t params;
    int line;            /* line of the CSV, for messages */
    char error[MSG_CAP]; /* non-empty: the file could not be used (the test reports it) */
} published_row;

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

/* The directory holding published_params.csv: $LLMEM_TEST_DATA, else the
 * directory next to this source file (a run from the source tree). */
static void data_path(char *buf, size_t cap)
{
    const char *dir = getenv("LLMEM_TEST_DATA");
    if (dir != NULL && dir[0] != '\0') {
        snprintf(buf, cap, "%s/published_params.csv", dir);
        return;
    }
    const char *file = __FILE__;
    const char *slash = strrchr(file, '/');
    int dirlen = slash ? (int)(slash - file) : 1;
    snprintf(buf, cap, "%.*s/../data/published_params.csv", dirlen, slash ? file : ".");
}

/* Copy field `index` (0-based, unquoted CSV) of line into out. */
static int csv_field(const char *line, int index, char *out, size_t cap)
{
    const char *s = line;
    for (int i = 0; i < index; i++) {
        s = strchr(s, ',');
        if (s == NULL)
            return -1;
        s++;
    }
    size_t n = strcspn(s, ",\r\n");
    if (n == 0 || n >= cap || s[0] == '"')
        return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* A one-row table whose row carries why the file could not be used. */
static struct criterion_test_params error_table(const char *path, const char *why)
{
    published_row *rows = cr_calloc(1, sizeof *rows);
    snprintf(rows->error, sizeof rows->error, "%s: %s", path, why);
    return cr_make_param_array(published_row, rows, 1, free_params);
}

ParameterizedTestParameters(presets, published_count)
{
    char path[PATH_CAP], line[4096];
    data_path(path, sizeof path);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return error_table(path, "cannot open (set LLMEM_TEST_DATA to tests/data)");
    size_t n = 0, cap = 64;
    published_row *rows = cr_calloc(cap, sizeof *rows);
    int lineno = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        if (lineno == 1) {
            if (strncmp(line, "preset,published_params,", 24) != 0) {
                fclose(f);
                cr_free(rows);
                return error_table(path, "unexpected header");
            }
            continue;
        }
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        char count[32];
        char *end = NULL;
        published_row *r;
        if (n == cap) {
            cap *= 2;
            rows = cr_realloc(rows, cap * sizeof *rows);
        }
        r = &rows[n++];
        memset(r, 0, sizeof *r);
        r->line = lineno;
        if (csv_field(line, 0, r->preset, sizeof r->preset) != 0 ||
            csv_field(line, 1, count, sizeof count) != 0) {
            snprintf(r->error, sizeof r->error, "%s:%d: malformed row", path, lineno);
            continue;
        }
        r->params = strtoull(count, &end, 10);
        if (end == count || *end != '\0')
            snprintf(r->error, sizeof r->error, "%s:%d: count '%s' is not an integer", path,
                     lineno, count);
    }
    fclose(f);
    if (n == 0) {
        cr_free(rows);
        return error_table(path, "no rows");
    }
    return cr_make_param_array(published_row, rows, n, free_params);
}

ParameterizedTest(published_row *row, presets, published_count)
{
    cr_assert(row->error[0] == '\0', "%s", row->error);
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    uint64_t count = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    int rc = llmem_model_new_preset(ctx, row->preset, &m);
    cr_assert_eq(rc, LLMEM_OK, "line %d: preset '%s' does not load (%d: %s)", row->line,
                 row->preset, rc, llmem_ctx_error(ctx));
    rc = llmem_model_param_count(m, &count);
    cr_assert_eq(rc, LLMEM_OK, "%s: param_count failed (%s)", row->preset, llmem_ctx_error(ctx));
    cr_expect_eq(count, row->params, "%s: %" PRIu64 " parameters, published %" PRIu64
                 " (difference %" PRId64 ")", row->preset, count, row->params,
                 (int64_t)(count - row->params));
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

/* ------------------------------------------------------------------ */
/* Counts computed here from the Hugging Face module structure. The sizes are
 * the checkpoints' config.json values, typed in again (not read from the
 * library), so a wrong preset row shows up as a mismatch. */

typedef struct hf_arch {
    const char *preset;
    int family;                  /* LLMEM_FAMILY_GPT2, LLMEM_FAMILY_OPT or LLMEM_FAMILY_STARCODER2 */
    uint64_t hidden, layers, ffn, vocab, positions;
    uint64_t word_embed_proj_dim; /* OPT: word_embed_proj_dim */
    int final_norm;               /* OPT: do_layer_norm_before */
    uint64_t kv_width;            /* StarCoder2: num_key_value_heads x head_dim */
} hf_arch;

/* GPT2LMHeadModel (transformers models/gpt2/modeling_gpt2.py):
 *   wte V x H, wpe n_positions x H,
 *   per block: ln_1 (2H), attn.c_attn Conv1D H -> 3H (+3H bias),
 *   attn.c_proj H -> H (+H), ln_2 (2H), mlp.c_fc H -> 4H (+4H), mlp.c_proj 4H -> H (+H),
 *   ln_f (2H); lm_head tied to wte. attn.bias (the causal mask) is a buffer. */
static uint64_t gpt2_params(const hf_arch *a)
{
    uint64_t H = a->hidden, F = a->ffn;
    uint64_t block = 2 * H + (H * 3 * H + 3 * H) + (H * H + H) + 2 * H + (H * F + F) + (F * H + H);
    return a->vocab * H + a->positions * H + a->layers * block + 2 * H;
}

/* OPTForCausalLM (transformers models/opt/modeling_opt.py):
 *   embed_tokens V x word_embed_proj_dim,
 *   embed_positions OPTLearnedPositionalEmbedding: (max_position_embeddings + 2) x H,
 *   project_in / project_out, Linear without bias, only when word_embed_proj_dim != H,
 *   final_layer_norm (2H) only when do_layer_norm_before,
 *   per layer: q, k, v, out_proj Linear H -> H with bias, self_attn_layer_norm (2H),
 *   fc1 H -> ffn (+ffn), fc2 ffn -> H (+H), final_layer_norm (2H);
 *   lm_head (word_embed_proj_dim -> V, no bias) tied to embed_tokens. */
static uint64_t opt_params(const hf_arch *a)
{
    uint64_t H = a->hidden, F = a->ffn, E = a->word_embed_proj_dim;
    uint64_t layer = 4 * (H * H + H) + 2 * H + (H * F + F) + (F * H + H) + 2 * H;
    uint64_t total = a->vocab * E + (a->positions + 2) * H + a->layers * layer;
    if (E != H)
        total += 2 * E * H;
    if (a->final_norm)
        total += 2 * H;
    return total;
}

/* Starcoder2ForCausalLM (transformers models/starcoder2/modeling_starcoder2.py):
 *   embed_tokens V x H, no position table (rotary),
 *   per layer: q_proj and o_proj H -> H, k_proj and v_proj H -> kv_width, all with
 *   bias (use_bias), mlp.c_fc H -> ffn (+ffn), mlp.c_proj ffn -> H (+H),
 *   input_layernorm and post_attention_layernorm (LayerNorm, 2H each);
 *   norm (2H); lm_head tied to embed_tokens. */
static uint64_t starcoder2_params(const hf_arch *a)
{
    uint64_t H = a->hidden, F = a->ffn, K = a->kv_width;
    uint64_t layer = 2 * (H * H + H) + 2 * (H * K + K) + (H * F + F) + (F * H + H) + 4 * H;
    return a->vocab * H + a->layers * layer + 2 * H;
}

static const hf_arch architectures[] = {
    /* openai-community/gpt2*: n_embd, n_layer, n_inner None (4 x n_embd), vocab 50257, n_positions 1024 */
    { "openai-community/gpt2", LLMEM_FAMILY_GPT2, 768, 12, 3072, 50257, 1024, 0, 1, 0 },
    { "openai-community/gpt2-medium", LLMEM_FAMILY_GPT2, 1024, 24, 4096, 50257, 1024, 0, 1, 0 },
    { "openai-community/gpt2-large", LLMEM_FAMILY_GPT2, 1280, 36, 5120, 50257, 1024, 0, 1, 0 },
    { "openai-community/gpt2-xl", LLMEM_FAMILY_GPT2, 1600, 48, 6400, 50257, 1024, 0, 1, 0 },
    /* facebook/opt-*: hidden_size, num_hidden_layers, ffn_dim, vocab 50272, max_position_embeddings 2048 */
    { "facebook/opt-125m", LLMEM_FAMILY_OPT, 768, 12, 3072, 50272, 2048, 768, 1, 0 },
    /* opt-350m: word_embed_proj_dim 512, do_layer_norm_before false */
    { "facebook/opt-350m", LLMEM_FAMILY_OPT, 1024, 24, 4096, 50272, 2048, 512, 0, 0 },
    { "facebook/opt-1.3b", LLMEM_FAMILY_OPT, 2048, 24, 8192, 50272, 2048, 2048, 1, 0 },
    { "facebook/opt-6.7b", LLMEM_FAMILY_OPT, 4096, 32, 16384, 50272, 2048, 4096, 1, 0 },
    /* bigcode/starcoder2-3b (tests/hf/configs/starcoder2-3b.json): hidden_size 3072,
     * num_hidden_layers 30, intermediate_size 12288, vocab_size 49152,
     * max_position_embeddings 16384, num_key_value_heads 2 x head_dim 128 (3072 / 24).
     * No exact count is published (the Hub's "3.03B" is rounded). */
    { "bigcode/starcoder2-3b", LLMEM_FAMILY_STARCODER2, 3072, 30, 12288, 49152, 16384, 0, 1, 256 },
};
#define ARCH_COUNT (sizeof architectures / sizeof architectures[0])

static uint64_t arch_params(const hf_arch *a)
{
    switch (a->family) {
    case LLMEM_FAMILY_GPT2:
        return gpt2_params(a);
    case LLMEM_FAMILY_STARCODER2:
        return starcoder2_params(a);
    default:
        return opt_params(a);
    }
}

/* The formulas themselves, pinned to numbers worked by hand, so the
 * per-preset checks below compare against something checked. */
Test(presets, formulas_by_hand)
{
    /* opt-350m: 50272*512 + 2050*1024 + 2*512*1024
     *         + 24 * (4*(1024^2+1024) + 2*1024 + (1024*4096+4096) + (4096*1024+1024) + 2*1024)
     *         = 25739264 + 2099200 + 1048576 + 24 * 12596224 = 331196416 */
    cr_assert_eq(opt_params(&architectures[5]), UINT64_C(331196416));
    /* gpt2: 50257*768 + 1024*768 + 12 * 7087872 + 1536 = 124439808 (the published count) */
    cr_assert_eq(gpt2_params(&architectures[0]), UINT64_C(124439808));
    /* starcoder2-3b: a layer is 2 x (3072^2 + 3072) + 2 x (3072*256 + 256)
     *   + (3072*12288 + 12288) + (12288*3072 + 3072) + 4*3072 = 95979008;
     *   49152*3072 + 30 * 95979008 + 2*3072 = 150994944 + 2879370240 + 6144 = 3030371328 */
    cr_assert_eq(starcoder2_params(&architectures[8]), UINT64_C(3030371328));
}

/* Parameters cross into the test's own process through Criterion's arena:
 * pass indices into the table, not pointers into this process. */
ParameterizedTestParameters(presets, architecture_count)
{
    size_t *index = cr_malloc(ARCH_COUNT * sizeof *index);
    for (size_t i = 0; i < ARCH_COUNT; i++)
        index[i] = i;
    return cr_make_param_array(size_t, index, ARCH_COUNT, free_params);
}

ParameterizedTest(size_t *index, presets, architecture_count)
{
    const hf_arch *a = &architectures[*index];
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    uint64_t count = 0, expected = arch_params(a);
    int64_t v = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, a->preset, &m), LLMEM_OK, "%s: %s", a->preset,
                 llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_param_count(m, &count), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(count, expected, "%s: %" PRIu64 " parameters, HF module structure gives %" PRIu64,
                 a->preset, count, expected);
    /* The fields the count comes from read back as the config.json values. */
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_FAMILY, &v), LLMEM_OK);
    cr_expect_eq(v, a->family, "%s: family", a->preset);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, &v), LLMEM_OK);
    cr_expect_eq(v, (int64_t)a->hidden, "%s: hidden", a->preset);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_LAYERS, &v), LLMEM_OK);
    cr_expect_eq(v, (int64_t)a->layers, "%s: layers", a->preset);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_INTERMEDIATE, &v), LLMEM_OK);
    cr_expect_eq(v, (int64_t)a->ffn, "%s: intermediate", a->preset);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_VOCAB, &v), LLMEM_OK);
    cr_expect_eq(v, (int64_t)a->vocab, "%s: vocab", a->preset);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_EMBED_DIM, &v), LLMEM_OK);
    cr_expect_eq(v, (int64_t)(a->word_embed_proj_dim ? a->word_embed_proj_dim : a->hidden),
                 "%s: embed-dim", a->preset);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

/* ------------------------------------------------------------------ */
/* Every preset. */

static int csv_has_preset(const char *name)
{
    char path[PATH_CAP], line[4096], field[NAME_CAP];
    int found = 0;
    data_path(path, sizeof path);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (set LLMEM_TEST_DATA)", path);
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = csv_field(line, 0, field, sizeof field) == 0 && strcmp(field, name) == 0;
    fclose(f);
    return found;
}

Test(presets, table_shape)
{
    size_t n = llmem_preset_count();
    cr_assert_gt(n, 0);
    cr_expect_null(llmem_preset_name(n), "a name past the end");
    cr_expect_null(llmem_preset_name((size_t)-1));
    for (size_t i = 0; i < n; i++) {
        const char *a = llmem_preset_name(i);
        cr_assert_not_null(a, "preset %zu has no name", i);
        cr_expect_not_null(strchr(a, '/'), "'%s' is not in organisation/name form", a);
        for (size_t j = 0; j < i; j++) {
            const char *b = llmem_preset_name(j);
            const char *sa = strchr(a, '/'), *sb = strchr(b, '/');
            cr_expect_str_neq(a, b, "duplicate preset '%s'", a);
            if (sa && sb)
                cr_expect_str_neq(sa + 1, sb + 1, "short name of '%s' and '%s' clash", a, b);
        }
    }
}

/* No preset goes untested: each has a published count or an architecture row. */
Test(presets, every_preset_has_a_reference_count)
{
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        const char *name = llmem_preset_name(i);
        int in_arch = 0;
        for (size_t j = 0; j < ARCH_COUNT; j++)
            in_arch |= strcmp(architectures[j].preset, name) == 0;
        cr_expect(in_arch || csv_has_preset(name),
                  "preset '%s' has neither a published count nor an architecture row", name);
    }
}

static const int model_keys[] = {
    LLMEM_MODEL_FAMILY, LLMEM_MODEL_HIDDEN, LLMEM_MODEL_LAYERS, LLMEM_MODEL_HEADS,
    LLMEM_MODEL_KV_HEADS, LLMEM_MODEL_HEAD_DIM, LLMEM_MODEL_INTERMEDIATE, LLMEM_MODEL_VOCAB,
    LLMEM_MODEL_MAX_POSITIONS, LLMEM_MODEL_NORM, LLMEM_MODEL_MLP, LLMEM_MODEL_POSITIONS,
    LLMEM_MODEL_QKV_BIAS, LLMEM_MODEL_OUT_BIAS, LLMEM_MODEL_MLP_BIAS, LLMEM_MODEL_NORM_BIAS,
    LLMEM_MODEL_TIE_EMBEDDINGS, LLMEM_MODEL_NORMS_PER_LAYER, LLMEM_MODEL_FINAL_NORM,
    LLMEM_MODEL_EMBED_NORM, LLMEM_MODEL_EMBED_DIM, LLMEM_MODEL_POSITION_OFFSET,
    LLMEM_MODEL_EXPERTS, LLMEM_MODEL_EXPERTS_PER_TOKEN, LLMEM_MODEL_EXPERT_INTERMEDIATE,
    LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, LLMEM_MODEL_HEAD_BIAS,
};

Test(presets, every_preset_loads_validates_and_has_a_short_name)
{
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        const char *name = llmem_preset_name(i);
        const char *shortname = strchr(name, '/') + 1;
        llmem_model *full = NULL, *brief = NULL;
        uint64_t a = 0, b = 0;
        int rc = llmem_model_new_preset(ctx, name, &full);
        cr_assert_eq(rc, LLMEM_OK, "%s: %d (%s)", name, rc, llmem_ctx_error(ctx));
        cr_assert_not_null(full);
        rc = llmem_model_validate(full);
        cr_expect_eq(rc, LLMEM_OK, "%s does not validate: %s", name, llmem_ctx_error(ctx));
        cr_expect_str_empty(llmem_ctx_error(ctx), "%s: a success leaves a message", name);
        cr_assert_eq(llmem_model_param_count(full, &a), LLMEM_OK, "%s", llmem_ctx_error(ctx));
        cr_expect_gt(a, 0);

        rc = llmem_model_new_preset(ctx, shortname, &brief);
        cr_assert_eq(rc, LLMEM_OK, "short name '%s': %d (%s)", shortname, rc,
                     llmem_ctx_error(ctx));
        cr_assert_eq(llmem_model_param_count(brief, &b), LLMEM_OK);
        cr_expect_eq(a, b, "'%s' and '%s' differ", name, shortname);
        for (size_t k = 0; k < sizeof model_keys / sizeof model_keys[0]; k++) {
            int64_t va = -1, vb = -2;
            cr_assert_eq(llmem_model_get_int(full, model_keys[k], &va), LLMEM_OK);
            cr_assert_eq(llmem_model_get_int(brief, model_keys[k], &vb), LLMEM_OK);
            cr_expect_eq(va, vb, "%s: key %d differs by short name", name, model_keys[k]);
        }
        llmem_model_free(full);
        llmem_model_free(brief);
    }
    llmem_ctx_free(ctx);
}

/* A preset is a starting point: its fields can be changed like any model's. */
Test(presets, preset_fields_are_editable)
{
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    uint64_t before = 0, after = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "Llama-2-7b-hf", &m), LLMEM_OK);
    cr_assert_eq(llmem_model_param_count(m, &before), LLMEM_OK);
    /* One layer fewer: 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 parameters fewer. */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, 31), LLMEM_OK);
    cr_assert_eq(llmem_model_param_count(m, &after), LLMEM_OK);
    cr_expect_eq(before - after, UINT64_C(4) * 4096 * 4096 + UINT64_C(3) * 4096 * 11008 + 2 * 4096);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

Test(presets, unknown_preset)
{
    static const char *const bad[] = { "no-such-org/no-such-model", "gpt3", "",
                                       "openai-community/", "GPT-2", "gpt2 " };
    static int sentinel;
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        llmem_model *m = (llmem_model *)&sentinel; /* non-NULL: must be reset */
        int rc = llmem_model_new_preset(ctx, bad[i], &m);
        cr_expect_eq(rc, LLMEM_ENOTFOUND, "'%s': %d", bad[i], rc);
        cr_expect_null(m, "'%s': out not reset to NULL", bad[i]);
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), bad[i]),
                           "message '%s' does not name '%s'", llmem_ctx_error(ctx), bad[i]);
    }
    /* The context stays usable after the failures. */
    llmem_model *ok = NULL;
    cr_expect_eq(llmem_model_new_preset(ctx, "gpt2", &ok), LLMEM_OK);
    cr_expect_str_empty(llmem_ctx_error(ctx));
    llmem_model_free(ok);
    llmem_ctx_free(ctx);
}

Test(presets, null_arguments)
{
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_expect_eq(llmem_model_new_preset(ctx, NULL, &m), LLMEM_EINVAL);
    cr_expect_null(m);
    cr_expect_eq(llmem_model_new_preset(ctx, "gpt2", NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_new_preset(NULL, "gpt2", &m), LLMEM_EINVAL);
    cr_expect_null(m);
    llmem_ctx_free(ctx);
}
