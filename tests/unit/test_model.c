/* SPDX-License-Identifier: MIT */
/*
 * Model descriptions from explicit fields: exact parameter counts against
 * formulas written here from the Hugging Face module structure of each
 * architecture, and every error path of the setters and of validation.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmem.h"

#define U64(x) ((uint64_t)(x))

static llmem_ctx *ctx;

static void setup_ctx(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
}

static void teardown_ctx(void)
{
    llmem_ctx_free(ctx);
    ctx = NULL;
}

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

/* Parameters cross into the test's process through Criterion's arena: the
 * tests get indices into the static tables, not pointers. */
static struct criterion_test_params index_params(size_t n)
{
    size_t *index = cr_malloc(n * sizeof *index);
    for (size_t i = 0; i < n; i++)
        index[i] = i;
    return cr_make_param_array(size_t, index, n, free_params);
}

typedef struct field_value {
    int key;
    int64_t value;
} field_value;

#define MAX_FIELDS 20

static llmem_model *model_with(int family, const field_value *f, size_t n)
{
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new(ctx, family, &m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    for (size_t i = 0; i < n && f[i].key != 0; i++)
        cr_assert_eq(llmem_model_set_int(m, f[i].key, f[i].value), LLMEM_OK,
                     "key %d = %" PRId64 ": %s", f[i].key, f[i].value, llmem_ctx_error(ctx));
    return m;
}

static uint64_t count_of(llmem_model *m)
{
    uint64_t n = 0;
    int rc = llmem_model_param_count(m, &n);
    cr_assert_eq(rc, LLMEM_OK, "param_count: %d (%s)", rc, llmem_ctx_error(ctx));
    return n;
}

/* ------------------------------------------------------------------ */
/* Parameter counts by hand.
 *
 * GPT-2 (GPT2LMHeadModel): wte V x H, wpe P x H; per block ln_1 2H,
 *   c_attn H x 3H + 3H, c_proj H x H + H, ln_2 2H, c_fc H x I + I,
 *   mlp.c_proj I x H + H; ln_f 2H; lm_head tied.
 * Llama (LlamaForCausalLM): embed V x H; per layer q H x (heads*d),
 *   k, v H x (kv*d), o (heads*d) x H, gate and up H x I, down I x H,
 *   two RMSNorms H; final norm H; lm_head V x H unless tied.
 * OPT: embed V x E, positions (P + 2) x H, project_in/out E x H each when
 *   E != H, per layer q/k/v/out H x H + H, two LayerNorms 2H, fc1 H x I + I,
 *   fc2 I x H + H; final LayerNorm 2H when do_layer_norm_before.
 */

/* GPT-2-like: H 64, L 2, heads 4, I 256, V 1000, P 128. */
#define G_H 64
#define G_L 2
#define G_I 256
#define G_V 1000
#define G_P 128
#define GPT2_BLOCK (2 * G_H + (G_H * 3 * G_H + 3 * G_H) + (G_H * G_H + G_H) + 2 * G_H + \
                    (G_H * G_I + G_I) + (G_I * G_H + G_H))
#define GPT2_TIED (U64(G_V) * G_H + U64(G_P) * G_H + U64(G_L) * GPT2_BLOCK + 2 * G_H)

/* Llama-like: H 64, L 3, heads 8 (d 8), I 172, V 500. */
#define L_H 64
#define L_L 3
#define L_I 172
#define L_V 500
#define LLAMA_MLP (3 * L_H * L_I)
#define LLAMA_MHA_LAYER (4 * L_H * L_H + LLAMA_MLP + 2 * L_H)
/* GQA with 2 kv heads of d 8: k and v are H x 16. */
#define LLAMA_GQA_LAYER (2 * L_H * L_H + 2 * L_H * 16 + LLAMA_MLP + 2 * L_H)

/* OPT-350m-like: H 32, L 2, heads 4, I 64, V 100, P 16, E 8, no final norm. */
#define O_H 32
#define O_L 2
#define O_I 64
#define O_V 100
#define O_P 16
#define O_E 8
#define OPT_LAYER (4 * (O_H * O_H + O_H) + 2 * O_H + (O_H * O_I + O_I) + (O_I * O_H + O_H) + \
                   2 * O_H)

typedef struct count_case {
    const char *name;
    int family;
    field_value f[MAX_FIELDS];
    uint64_t expected;
} count_case;

#define GPT2_SIZES { LLMEM_MODEL_HIDDEN, G_H }, { LLMEM_MODEL_LAYERS, G_L }, \
    { LLMEM_MODEL_HEADS, 4 }, { LLMEM_MODEL_INTERMEDIATE, G_I }, { LLMEM_MODEL_VOCAB, G_V }, \
    { LLMEM_MODEL_MAX_POSITIONS, G_P }
#define LLAMA_SIZES { LLMEM_MODEL_HIDDEN, L_H }, { LLMEM_MODEL_LAYERS, L_L }, \
    { LLMEM_MODEL_HEADS, 8 }, { LLMEM_MODEL_INTERMEDIATE, L_I }, { LLMEM_MODEL_VOCAB, L_V }, \
    { LLMEM_MODEL_MAX_POSITIONS, 2048 }
#define OPT_SIZES { LLMEM_MODEL_HIDDEN, O_H }, { LLMEM_MODEL_LAYERS, O_L }, \
    { LLMEM_MODEL_HEADS, 4 }, { LLMEM_MODEL_INTERMEDIATE, O_I }, { LLMEM_MODEL_VOCAB, O_V }, \
    { LLMEM_MODEL_MAX_POSITIONS, O_P }

static const count_case count_cases[] = {
    { "gpt2-like, tied", LLMEM_FAMILY_GPT2, { GPT2_SIZES }, GPT2_TIED },
    { "gpt2-like, untied head", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_TIE_EMBEDDINGS, 0 } }, GPT2_TIED + U64(G_V) * G_H },
    { "gpt2-like, untied head with bias", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_TIE_EMBEDDINGS, 0 }, { LLMEM_MODEL_HEAD_BIAS, 1 } },
      GPT2_TIED + U64(G_V) * G_H + G_V },
    { "gpt2-like, no biases anywhere", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_QKV_BIAS, 0 }, { LLMEM_MODEL_OUT_BIAS, 0 },
        { LLMEM_MODEL_MLP_BIAS, 0 } },
      GPT2_TIED - U64(G_L) * (3 * G_H + G_H + G_I + G_H) },
    { "gpt2-like, norms without bias", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_NORM_BIAS, 0 } },
      GPT2_TIED - U64(G_L) * 2 * G_H - G_H },
    { "gpt2-like, no final norm", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_FINAL_NORM, 0 } }, GPT2_TIED - 2 * G_H },
    { "gpt2-like, 3 norms a layer", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_NORMS_PER_LAYER, 3 } }, GPT2_TIED + U64(G_L) * 2 * G_H },
    { "gpt2-like, rotary positions (no wpe)", LLMEM_FAMILY_GPT2,
      { GPT2_SIZES, { LLMEM_MODEL_POSITIONS, LLMEM_POSITIONS_ROTARY } },
      GPT2_TIED - U64(G_P) * G_H },

    { "llama-like, untied (family default)", LLMEM_FAMILY_LLAMA, { LLAMA_SIZES },
      U64(L_V) * L_H + U64(L_L) * LLAMA_MHA_LAYER + L_H + U64(L_V) * L_H },
    { "llama-like, tied", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_TIE_EMBEDDINGS, 1 } },
      U64(L_V) * L_H + U64(L_L) * LLAMA_MHA_LAYER + L_H },
    { "llama-like, GQA 8/2", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_KV_HEADS, 2 } },
      2 * U64(L_V) * L_H + U64(L_L) * LLAMA_GQA_LAYER + L_H },
    { "llama-like, GQA 8/8 equals MHA", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_KV_HEADS, 8 } },
      2 * U64(L_V) * L_H + U64(L_L) * LLAMA_MHA_LAYER + L_H },
    { "llama-like, MQA 8/1", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_KV_HEADS, 1 } },
      2 * U64(L_V) * L_H + U64(L_L) * (2 * L_H * L_H + 2 * L_H * 8 + LLAMA_MLP + 2 * L_H) + L_H },
    /* Qwen2: q, k, v with bias (q 64 + k 16 + v 16). */
    { "qwen2-like, GQA with qkv bias, tied", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_KV_HEADS, 2 }, { LLMEM_MODEL_QKV_BIAS, 1 },
        { LLMEM_MODEL_TIE_EMBEDDINGS, 1 } },
      U64(L_V) * L_H + U64(L_L) * (LLAMA_GQA_LAYER + 64 + 16 + 16) + L_H },
    /* Every bias: o H, gate I, up I, down H. */
    { "llama-like, all biases", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_QKV_BIAS, 1 }, { LLMEM_MODEL_OUT_BIAS, 1 },
        { LLMEM_MODEL_MLP_BIAS, 1 } },
      2 * U64(L_V) * L_H + U64(L_L) * (LLAMA_MHA_LAYER + 3 * L_H + L_H + 2 * L_I + L_H) + L_H },
    /* head_dim 32 with 4 heads and 2 kv heads: q and o 96 x 128, k and v 96 x 64. */
    { "llama-like, head_dim override 96/4x32", LLMEM_FAMILY_LLAMA,
      { { LLMEM_MODEL_HIDDEN, 96 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 4 },
        { LLMEM_MODEL_KV_HEADS, 2 }, { LLMEM_MODEL_HEAD_DIM, 32 },
        { LLMEM_MODEL_INTERMEDIATE, 200 }, { LLMEM_MODEL_VOCAB, 300 } },
      2 * U64(300) * 96 + 2 * U64(2 * 96 * 128 + 2 * 96 * 64 + 3 * 96 * 200 + 2 * 96) + 96 },
    /* heads need not divide hidden once head_dim is given (Gemma-2, Llama-3.2-3B style). */
    { "llama-like, head_dim with heads not dividing hidden", LLMEM_FAMILY_LLAMA,
      { { LLMEM_MODEL_HIDDEN, 100 }, { LLMEM_MODEL_LAYERS, 1 }, { LLMEM_MODEL_HEADS, 3 },
        { LLMEM_MODEL_HEAD_DIM, 32 }, { LLMEM_MODEL_INTERMEDIATE, 50 },
        { LLMEM_MODEL_VOCAB, 10 } },
      2 * U64(10) * 100 + U64(2 * 100 * 96 + 2 * 100 * 96 + 3 * 100 * 50 + 2 * 100) + 100 },
    /* Plain (non-gated) MLP: up and down only. */
    { "llama-like, plain MLP", LLMEM_FAMILY_LLAMA,
      { LLAMA_SIZES, { LLMEM_MODEL_MLP, LLMEM_MLP_PLAIN } },
      2 * U64(L_V) * L_H + U64(L_L) * (LLAMA_MHA_LAYER - L_H * L_I) + L_H },
    /* Llama-3.2-1B typed in as fields: its published count (HF safetensors total). */
    { "Llama-3.2-1B by fields", LLMEM_FAMILY_LLAMA,
      { { LLMEM_MODEL_HIDDEN, 2048 }, { LLMEM_MODEL_LAYERS, 16 }, { LLMEM_MODEL_HEADS, 32 },
        { LLMEM_MODEL_KV_HEADS, 8 }, { LLMEM_MODEL_INTERMEDIATE, 8192 },
        { LLMEM_MODEL_VOCAB, 128256 }, { LLMEM_MODEL_TIE_EMBEDDINGS, 1 } },
      UINT64_C(1235814400) },
    /* Llama-2-7b: 32000 x 4096 x 2 + 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 4096. */
    { "Llama-2-7b by fields", LLMEM_FAMILY_LLAMA,
      { { LLMEM_MODEL_HIDDEN, 4096 }, { LLMEM_MODEL_LAYERS, 32 }, { LLMEM_MODEL_HEADS, 32 },
        { LLMEM_MODEL_INTERMEDIATE, 11008 }, { LLMEM_MODEL_VOCAB, 32000 } },
      UINT64_C(6738415616) },

    { "opt-350m-like, embed_dim 8 != hidden 32", LLMEM_FAMILY_OPT,
      { OPT_SIZES, { LLMEM_MODEL_EMBED_DIM, O_E }, { LLMEM_MODEL_FINAL_NORM, 0 } },
      U64(O_V) * O_E + U64(O_P + 2) * O_H + 2 * U64(O_E) * O_H + U64(O_L) * OPT_LAYER },
    { "opt-like, embed_dim = hidden, final norm", LLMEM_FAMILY_OPT,
      { OPT_SIZES, { LLMEM_MODEL_EMBED_DIM, O_H } },
      U64(O_V) * O_H + U64(O_P + 2) * O_H + U64(O_L) * OPT_LAYER + 2 * O_H },
    /* An untied head maps embed_dim (not hidden) to the vocabulary. */
    { "opt-like, embed_dim 8, untied", LLMEM_FAMILY_OPT,
      { OPT_SIZES, { LLMEM_MODEL_EMBED_DIM, O_E }, { LLMEM_MODEL_FINAL_NORM, 0 },
        { LLMEM_MODEL_TIE_EMBEDDINGS, 0 } },
      2 * U64(O_V) * O_E + U64(O_P + 2) * O_H + 2 * U64(O_E) * O_H + U64(O_L) * OPT_LAYER },
    { "opt-like, position offset 0", LLMEM_FAMILY_OPT,
      { OPT_SIZES, { LLMEM_MODEL_POSITION_OFFSET, 0 } },
      U64(O_V) * O_H + U64(O_P) * O_H + U64(O_L) * OPT_LAYER + 2 * O_H },

    /* BLOOM: word_embeddings_layernorm (2H) after the embedding, ALiBi (no table). */
    { "bloom-like", LLMEM_FAMILY_BLOOM,
      { { LLMEM_MODEL_HIDDEN, 32 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 4 },
        { LLMEM_MODEL_INTERMEDIATE, 128 }, { LLMEM_MODEL_VOCAB, 250 } },
      U64(250) * 32 + 2 * 32 +
          2 * U64(2 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + 2 * 32 + (32 * 128 + 128) +
                  (128 * 32 + 32)) + 2 * 32 },
    /* Gemma-2: four RMSNorms a layer, tied, head_dim 16 x 4 heads, kv 2. */
    { "gemma2-like", LLMEM_FAMILY_GEMMA2,
      { { LLMEM_MODEL_HIDDEN, 48 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 4 },
        { LLMEM_MODEL_KV_HEADS, 2 }, { LLMEM_MODEL_HEAD_DIM, 16 },
        { LLMEM_MODEL_INTERMEDIATE, 96 }, { LLMEM_MODEL_VOCAB, 256 } },
      U64(256) * 48 + 2 * U64(2 * 48 * 64 + 2 * 48 * 32 + 3 * 48 * 96 + 4 * 48) + 48 },
    /* Phi-3: qkv_proj H x (q + 2 kv), gate_up_proj H x 2I: the same counts as split. */
    { "phi3-like", LLMEM_FAMILY_PHI3,
      { { LLMEM_MODEL_HIDDEN, 64 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 4 },
        { LLMEM_MODEL_INTERMEDIATE, 160 }, { LLMEM_MODEL_VOCAB, 320 } },
      2 * U64(320) * 64 + 2 * U64(64 * 192 + 64 * 64 + 64 * 320 + 160 * 64 + 2 * 64) + 64 },

    /* Mixtral-like MoE: per layer attention + experts x 3 x H x EI + router H x E + norms. */
    { "moe, 4 experts top-2", LLMEM_FAMILY_LLAMA,
      { { LLMEM_MODEL_HIDDEN, 64 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 8 },
        { LLMEM_MODEL_KV_HEADS, 2 }, { LLMEM_MODEL_VOCAB, 500 }, { LLMEM_MODEL_EXPERTS, 4 },
        { LLMEM_MODEL_EXPERTS_PER_TOKEN, 2 }, { LLMEM_MODEL_EXPERT_INTERMEDIATE, 32 } },
      2 * U64(500) * 64 +
          2 * U64(2 * 64 * 64 + 2 * 64 * 16 + 4 * 3 * 64 * 32 + 64 * 4 + 2 * 64) + 64 },
    /* DeepSeek-MoE-style shared expert: one more gated MLP of inner size 48 (no gate of its own). */
    { "moe with a shared expert", LLMEM_FAMILY_LLAMA,
      { { LLMEM_MODEL_HIDDEN, 64 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 8 },
        { LLMEM_MODEL_VOCAB, 500 }, { LLMEM_MODEL_EXPERTS, 8 },
        { LLMEM_MODEL_EXPERTS_PER_TOKEN, 8 }, { LLMEM_MODEL_EXPERT_INTERMEDIATE, 16 },
        { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, 48 } },
      2 * U64(500) * 64 +
          2 * U64(4 * 64 * 64 + 8 * 3 * 64 * 16 + 64 * 8 + 3 * 64 * 48 + 2 * 64) + 64 },
};
#define COUNT_CASES (sizeof count_cases / sizeof count_cases[0])

ParameterizedTestParameters(model, count_by_hand)
{
    return index_params(COUNT_CASES);
}

ParameterizedTest(size_t *index, model, count_by_hand, .init = setup_ctx, .fini = teardown_ctx)
{
    const count_case *c = &count_cases[*index];
    llmem_model *m = model_with(c->family, c->f, MAX_FIELDS);
    int rc = llmem_model_validate(m);
    cr_assert_eq(rc, LLMEM_OK, "%s: validate %d (%s)", c->name, rc, llmem_ctx_error(ctx));
    uint64_t n = count_of(m);
    cr_expect_eq(n, c->expected, "%s: %" PRIu64 " parameters, by hand %" PRIu64
                 " (difference %" PRId64 ")", c->name, n, c->expected, (int64_t)(n - c->expected));
    llmem_model_free(m);
}

/* The hand formulas pinned to worked numbers, so the table above is checked too. */
Test(model, hand_formulas_worked)
{
    /* gpt2-like block: 128 + 12480 + 4160 + 128 + 16640 + 16448 = 49984;
     * total 64000 + 8192 + 2 x 49984 + 128 = 172288. */
    cr_assert_eq(GPT2_BLOCK, 49984);
    cr_assert_eq(GPT2_TIED, UINT64_C(172288));
    /* opt layer: 4 x 1056 + 64 + 2112 + 2080 + 64 = 8544. */
    cr_assert_eq(OPT_LAYER, 8544);
}

/* ------------------------------------------------------------------ */
/* Resolved defaults read back. */

Test(model, get_int_resolves_defaults, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = { LLAMA_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    int64_t v = 0;
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_KV_HEADS, &v), LLMEM_OK);
    cr_expect_eq(v, 8, "kv-heads 0 reads as heads");
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HEAD_DIM, &v), LLMEM_OK);
    cr_expect_eq(v, L_H / 8, "head-dim 0 reads as hidden / heads");
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_EMBED_DIM, &v), LLMEM_OK);
    cr_expect_eq(v, L_H, "embed-dim 0 reads as hidden");
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, 4), LLMEM_OK);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_KV_HEADS, &v), LLMEM_OK);
    cr_expect_eq(v, 4);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEAD_DIM, 24), LLMEM_OK);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HEAD_DIM, &v), LLMEM_OK);
    cr_expect_eq(v, 24);
    llmem_model_free(m);
}

/* Family defaults (the Hugging Face layouts). */
Test(model, family_defaults, .init = setup_ctx, .fini = teardown_ctx)
{
    static const struct {
        int family, key;
        int64_t value;
    } expect[] = {
        { LLMEM_FAMILY_GPT2, LLMEM_MODEL_NORM, LLMEM_NORM_LAYERNORM },
        { LLMEM_FAMILY_GPT2, LLMEM_MODEL_POSITIONS, LLMEM_POSITIONS_LEARNED },
        { LLMEM_FAMILY_GPT2, LLMEM_MODEL_TIE_EMBEDDINGS, 1 },
        { LLMEM_FAMILY_GPT2, LLMEM_MODEL_QKV_BIAS, 1 },
        { LLMEM_FAMILY_GPT2, LLMEM_MODEL_MLP, LLMEM_MLP_PLAIN },
        { LLMEM_FAMILY_LLAMA, LLMEM_MODEL_NORM, LLMEM_NORM_RMSNORM },
        { LLMEM_FAMILY_LLAMA, LLMEM_MODEL_MLP, LLMEM_MLP_GATED },
        { LLMEM_FAMILY_LLAMA, LLMEM_MODEL_POSITIONS, LLMEM_POSITIONS_ROTARY },
        { LLMEM_FAMILY_LLAMA, LLMEM_MODEL_TIE_EMBEDDINGS, 0 },
        { LLMEM_FAMILY_LLAMA, LLMEM_MODEL_QKV_BIAS, 0 },
        { LLMEM_FAMILY_LLAMA, LLMEM_MODEL_NORMS_PER_LAYER, 2 },
        { LLMEM_FAMILY_OPT, LLMEM_MODEL_POSITION_OFFSET, 2 },
        { LLMEM_FAMILY_BLOOM, LLMEM_MODEL_EMBED_NORM, 1 },
        { LLMEM_FAMILY_BLOOM, LLMEM_MODEL_POSITIONS, LLMEM_POSITIONS_ALIBI },
        { LLMEM_FAMILY_GEMMA2, LLMEM_MODEL_NORMS_PER_LAYER, 4 },
        { LLMEM_FAMILY_GEMMA2, LLMEM_MODEL_TIE_EMBEDDINGS, 1 },
        { LLMEM_FAMILY_PHI3, LLMEM_MODEL_TIE_EMBEDDINGS, 0 },
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        llmem_model *m = NULL;
        int64_t v = -1;
        cr_assert_eq(llmem_model_new(ctx, expect[i].family, &m), LLMEM_OK);
        cr_assert_eq(llmem_model_get_int(m, expect[i].key, &v), LLMEM_OK);
        cr_expect_eq(v, expect[i].value, "family %d key %d: %" PRId64 ", expected %" PRId64,
                     expect[i].family, expect[i].key, v, expect[i].value);
        cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, &v), LLMEM_OK);
        cr_expect_eq(v, 0, "sizes start unset");
        llmem_model_free(m);
    }
}

/* Enumerated fields by name. */
Test(model, set_str_every_name, .init = setup_ctx, .fini = teardown_ctx)
{
    static const struct {
        int key;
        const char *name;
        int64_t value;
    } names[] = {
        { LLMEM_MODEL_FAMILY, "gpt2", LLMEM_FAMILY_GPT2 },
        { LLMEM_MODEL_FAMILY, "llama", LLMEM_FAMILY_LLAMA },
        { LLMEM_MODEL_FAMILY, "opt", LLMEM_FAMILY_OPT },
        { LLMEM_MODEL_FAMILY, "bloom", LLMEM_FAMILY_BLOOM },
        { LLMEM_MODEL_FAMILY, "gemma2", LLMEM_FAMILY_GEMMA2 },
        { LLMEM_MODEL_FAMILY, "phi3", LLMEM_FAMILY_PHI3 },
        { LLMEM_MODEL_NORM, "layernorm", LLMEM_NORM_LAYERNORM },
        { LLMEM_MODEL_NORM, "rmsnorm", LLMEM_NORM_RMSNORM },
        { LLMEM_MODEL_MLP, "plain", LLMEM_MLP_PLAIN },
        { LLMEM_MODEL_MLP, "gated", LLMEM_MLP_GATED },
        { LLMEM_MODEL_POSITIONS, "learned", LLMEM_POSITIONS_LEARNED },
        { LLMEM_MODEL_POSITIONS, "rotary", LLMEM_POSITIONS_ROTARY },
        { LLMEM_MODEL_POSITIONS, "alibi", LLMEM_POSITIONS_ALIBI },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        llmem_model *m = NULL;
        int64_t v = -1;
        /* Start from a family whose default differs where possible. */
        cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_PHI3, &m), LLMEM_OK);
        cr_assert_eq(llmem_model_set_str(m, names[i].key, names[i].name), LLMEM_OK, "'%s': %s",
                     names[i].name, llmem_ctx_error(ctx));
        cr_assert_eq(llmem_model_get_int(m, names[i].key, &v), LLMEM_OK);
        cr_expect_eq(v, names[i].value, "'%s' read back as %" PRId64, names[i].name, v);
        llmem_model_free(m);
    }
}

/* Changing the family brings its layout and keeps the sizes. */
Test(model, family_change_keeps_sizes, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = { GPT2_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    int64_t v = 0;
    cr_assert_eq(llmem_model_set_str(m, LLMEM_MODEL_FAMILY, "gpt2"), LLMEM_OK);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, &v), LLMEM_OK);
    cr_expect_eq(v, G_H);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_NORM, &v), LLMEM_OK);
    cr_expect_eq(v, LLMEM_NORM_LAYERNORM);
    cr_expect_eq(count_of(m), GPT2_TIED);
    llmem_model_free(m);
}

/* ------------------------------------------------------------------ */
/* Errors. */

/* Each required size left unset: EINCONSISTENT naming it. */
Test(model, unset_required_fields, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value all[] = { GPT2_SIZES };
    static const char *const names[] = { "hidden", "layers", "heads", "intermediate", "vocab",
                                         "max-positions" };
    size_t n = sizeof all / sizeof all[0];
    for (size_t skip = 0; skip < n; skip++) {
        field_value f[MAX_FIELDS];
        size_t k = 0;
        uint64_t count = 12345;
        for (size_t i = 0; i < n; i++)
            if (i != skip)
                f[k++] = all[i];
        llmem_model *m = model_with(LLMEM_FAMILY_GPT2, f, k);
        int rc = llmem_model_validate(m);
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "%s unset: validate gives %d", names[skip], rc);
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), names[skip]),
                           "%s unset: message '%s' does not name it", names[skip],
                           llmem_ctx_error(ctx));
        rc = llmem_model_param_count(m, &count);
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "%s unset: param_count gives %d", names[skip], rc);
        cr_expect_eq(count, 12345, "a failed param_count wrote its output");
        llmem_model_free(m);
    }
}

Test(model, fresh_model_does_not_validate, .init = setup_ctx, .fini = teardown_ctx)
{
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, &m), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    cr_expect_str_neq(llmem_ctx_error(ctx), "");
    llmem_model_free(m);
}

typedef struct range_case {
    int key;
    const char *name; /* as the message must spell it */
    int64_t value;
} range_case;

static const range_case range_cases[] = {
    { LLMEM_MODEL_HIDDEN, "hidden", 0 },
    { LLMEM_MODEL_HIDDEN, "hidden", -1 },
    { LLMEM_MODEL_HIDDEN, "hidden", INT64_MIN },
    { LLMEM_MODEL_HIDDEN, "hidden", INT64_MAX },
    { LLMEM_MODEL_LAYERS, "layers", 0 },
    { LLMEM_MODEL_LAYERS, "layers", -32 },
    { LLMEM_MODEL_HEADS, "heads", 0 },
    { LLMEM_MODEL_HEADS, "heads", -8 },
    { LLMEM_MODEL_KV_HEADS, "kv-heads", -1 },
    { LLMEM_MODEL_HEAD_DIM, "head-dim", -64 },
    { LLMEM_MODEL_INTERMEDIATE, "intermediate", 0 },
    { LLMEM_MODEL_INTERMEDIATE, "intermediate", -11008 },
    { LLMEM_MODEL_VOCAB, "vocab", 0 },
    { LLMEM_MODEL_VOCAB, "vocab", -32000 },
    { LLMEM_MODEL_MAX_POSITIONS, "max-positions", 0 },
    { LLMEM_MODEL_MAX_POSITIONS, "max-positions", -1 },
    { LLMEM_MODEL_EMBED_DIM, "embed-dim", -512 },
    { LLMEM_MODEL_POSITION_OFFSET, "position-offset", -2 },
    { LLMEM_MODEL_NORMS_PER_LAYER, "norms-per-layer", -1 },
    { LLMEM_MODEL_EXPERTS, "experts", -8 },
    { LLMEM_MODEL_EXPERTS_PER_TOKEN, "experts-per-token", -2 },
    { LLMEM_MODEL_EXPERT_INTERMEDIATE, "expert-intermediate", -1 },
    { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, "shared-expert-intermediate", -1 },
    /* 0/1 fields */
    { LLMEM_MODEL_QKV_BIAS, "qkv-bias", 2 },
    { LLMEM_MODEL_OUT_BIAS, "out-bias", -1 },
    { LLMEM_MODEL_MLP_BIAS, "mlp-bias", 2 },
    { LLMEM_MODEL_NORM_BIAS, "norm-bias", 2 },
    { LLMEM_MODEL_TIE_EMBEDDINGS, "tie-embeddings", 2 },
    { LLMEM_MODEL_FINAL_NORM, "final-norm", 2 },
    { LLMEM_MODEL_EMBED_NORM, "embed-norm", -1 },
    { LLMEM_MODEL_HEAD_BIAS, "head-bias", 2 },
    /* enumerations by number */
    { LLMEM_MODEL_FAMILY, "family", 0 },
    { LLMEM_MODEL_FAMILY, "family", 1000 },
    { LLMEM_MODEL_FAMILY, "family", -1 },
    { LLMEM_MODEL_NORM, "norm", 0 },
    { LLMEM_MODEL_NORM, "norm", 3 },
    { LLMEM_MODEL_MLP, "mlp", 3 },
    { LLMEM_MODEL_POSITIONS, "positions", 4 },
    { LLMEM_MODEL_POSITIONS, "positions", -1 },
};
#define RANGE_CASES (sizeof range_cases / sizeof range_cases[0])

ParameterizedTestParameters(model, set_int_out_of_range)
{
    return index_params(RANGE_CASES);
}

/* Out-of-range values: ERANGE naming the field, and the model unchanged. */
ParameterizedTest(size_t *index, model, set_int_out_of_range, .init = setup_ctx,
                  .fini = teardown_ctx)
{
    const range_case *c = &range_cases[*index];
    static const field_value f[] = { GPT2_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_GPT2, f, sizeof f / sizeof f[0]);
    int64_t before = -7, after = -8;
    cr_assert_eq(llmem_model_get_int(m, c->key, &before), LLMEM_OK);
    int rc = llmem_model_set_int(m, c->key, c->value);
    cr_expect_eq(rc, LLMEM_ERANGE, "%s = %" PRId64 ": %d", c->name, c->value, rc);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->name), "%s: message '%s' does not name it",
                       c->name, llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_get_int(m, c->key, &after), LLMEM_OK);
    cr_expect_eq(before, after, "%s: a failed set changed the field", c->name);
    cr_expect_eq(count_of(m), GPT2_TIED, "%s: a failed set changed the count", c->name);
    llmem_model_free(m);
}

/* The documented upper bound of a size is accepted: hidden up to 2^32. */
Test(model, largest_sizes_accepted, .init = setup_ctx, .fini = teardown_ctx)
{
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, &m), LLMEM_OK);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, INT64_C(1) << 32), LLMEM_OK);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_VOCAB, INT64_C(1) << 32), LLMEM_OK);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, (INT64_C(1) << 32) + 1), LLMEM_ERANGE);
    llmem_model_free(m);
}

Test(model, heads_must_divide_hidden, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = { LLAMA_SIZES, { LLMEM_MODEL_HEADS, 7 } };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    uint64_t n = 99;
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "heads"), "'%s'", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_model_param_count(m, &n), LLMEM_EINCONSISTENT);
    cr_expect_eq(n, 99);
    /* The model stays usable: a head_dim makes it consistent. */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEAD_DIM, 8), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_str_empty(llmem_ctx_error(ctx));
    /* 7 heads of 8: q and o 64 x 56, k and v 64 x 56 (kv = heads). */
    cr_expect_eq(count_of(m), 2 * U64(L_V) * L_H +
                                  U64(L_L) * (4 * 64 * 56 + LLAMA_MLP + 2 * L_H) + L_H);
    llmem_model_free(m);
}

Test(model, kv_heads_must_divide_heads, .init = setup_ctx, .fini = teardown_ctx)
{
    static const int64_t bad[] = { 3, 5, 6, 7, 16 };
    static const field_value f[] = { LLAMA_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, bad[i]), LLMEM_OK);
        cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT, "kv-heads %" PRId64, bad[i]);
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), "kv-heads"), "'%s'",
                           llmem_ctx_error(ctx));
    }
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, 2), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK);
    llmem_model_free(m);
}

Test(model, unknown_key, .init = setup_ctx, .fini = teardown_ctx)
{
    static const int bad[] = { 0, -1, 999, 1000, INT32_MIN, INT32_MAX };
    static const field_value f[] = { LLAMA_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    uint64_t before = count_of(m);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        char key[16];
        snprintf(key, sizeof key, "%d", bad[i]);
        cr_expect_eq(llmem_model_set_int(m, bad[i], 1), LLMEM_EINVAL, "set_int key %d", bad[i]);
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), key), "message '%s' lacks key %d",
                           llmem_ctx_error(ctx), bad[i]);
        cr_expect_eq(llmem_model_set_str(m, bad[i], "llama"), LLMEM_EINVAL, "set_str key %d",
                     bad[i]);
        cr_expect_eq(llmem_model_get_int(m, bad[i], &v), LLMEM_EINVAL, "get_int key %d", bad[i]);
        cr_expect_eq(v, 42, "get_int of key %d wrote its output", bad[i]);
    }
    cr_expect_eq(count_of(m), before);
    llmem_model_free(m);
}

Test(model, unknown_enum_name, .init = setup_ctx, .fini = teardown_ctx)
{
    static const struct {
        int key;
        const char *field, *value;
    } bad[] = {
        { LLMEM_MODEL_FAMILY, "family", "gpt3" },   { LLMEM_MODEL_FAMILY, "family", "Llama" },
        { LLMEM_MODEL_FAMILY, "family", "" },       { LLMEM_MODEL_NORM, "norm", "batchnorm" },
        { LLMEM_MODEL_MLP, "mlp", "swiglu" },       { LLMEM_MODEL_POSITIONS, "positions", "none" },
        { LLMEM_MODEL_NORM, "norm", "rmsnorm " },
    };
    static const field_value f[] = { LLAMA_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    uint64_t before = count_of(m);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t was = 0, now = 0;
        cr_assert_eq(llmem_model_get_int(m, bad[i].key, &was), LLMEM_OK);
        int rc = llmem_model_set_str(m, bad[i].key, bad[i].value);
        cr_expect_eq(rc, LLMEM_ENOTFOUND, "%s '%s': %d", bad[i].field, bad[i].value, rc);
        const char *msg = llmem_ctx_error(ctx);
        cr_expect_not_null(strstr(msg, bad[i].field), "'%s' does not name the field", msg);
        cr_expect_not_null(strstr(msg, bad[i].value), "'%s' does not name the value", msg);
        cr_assert_eq(llmem_model_get_int(m, bad[i].key, &now), LLMEM_OK);
        cr_expect_eq(was, now, "%s changed by a failed set_str", bad[i].field);
    }
    cr_expect_eq(count_of(m), before);
    llmem_model_free(m);
}

Test(model, set_str_on_numeric_field_or_null, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = { LLAMA_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    int64_t v = 0;
    cr_expect_eq(llmem_model_set_str(m, LLMEM_MODEL_HIDDEN, "128"), LLMEM_EINVAL);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "hidden"), "'%s'", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, &v), LLMEM_OK);
    cr_expect_eq(v, L_H);
    cr_expect_eq(llmem_model_set_str(m, LLMEM_MODEL_NORM, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_NORM, &v), LLMEM_OK);
    cr_expect_eq(v, LLMEM_NORM_RMSNORM);
    llmem_model_free(m);
}

Test(model, moe_checks, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = {
        { LLMEM_MODEL_HIDDEN, 64 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 8 },
        { LLMEM_MODEL_VOCAB, 500 }, { LLMEM_MODEL_EXPERTS, 4 },
        { LLMEM_MODEL_EXPERT_INTERMEDIATE, 32 },
    };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    /* top-k above the number of experts */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, 5), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "experts-per-token"), "'%s'",
                       llmem_ctx_error(ctx));
    /* top-k unset with experts */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, 0), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    /* top-k equal to the experts is fine */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, 4), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    /* experts without their inner size */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERT_INTERMEDIATE, 0), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "expert-intermediate"), "'%s'",
                       llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERT_INTERMEDIATE, 32), LLMEM_OK);
    /* top-k without experts: a dense model needs its intermediate and no top-k */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS, 0), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_INTERMEDIATE, 100), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT, "top-k 4 with 0 experts");
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, 0), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_model_free(m);
}

/* A MoE model's intermediate is optional; a dense one's is required. */
Test(model, moe_needs_no_dense_intermediate, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = {
        { LLMEM_MODEL_HIDDEN, 64 }, { LLMEM_MODEL_LAYERS, 2 }, { LLMEM_MODEL_HEADS, 8 },
        { LLMEM_MODEL_VOCAB, 500 }, { LLMEM_MODEL_EXPERTS, 4 },
        { LLMEM_MODEL_EXPERTS_PER_TOKEN, 1 }, { LLMEM_MODEL_EXPERT_INTERMEDIATE, 32 },
    };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_model_free(m);
}

/* Counts that do not fit in 64 bits. */
typedef struct overflow_case {
    const char *name;
    field_value f[MAX_FIELDS];
} overflow_case;

static const overflow_case overflow_cases[] = {
    /* vocab x hidden = 2^64 */
    { "hidden 2^32, vocab 2^32",
      { { LLMEM_MODEL_HIDDEN, INT64_C(1) << 32 }, { LLMEM_MODEL_LAYERS, 1 },
        { LLMEM_MODEL_HEADS, 1 }, { LLMEM_MODEL_INTERMEDIATE, 1 },
        { LLMEM_MODEL_VOCAB, INT64_C(1) << 32 } } },
    /* attention 4 x H^2 = 2^66 */
    { "attention of hidden 2^32",
      { { LLMEM_MODEL_HIDDEN, INT64_C(1) << 32 }, { LLMEM_MODEL_LAYERS, 1 },
        { LLMEM_MODEL_HEADS, 1 }, { LLMEM_MODEL_INTERMEDIATE, 1 }, { LLMEM_MODEL_VOCAB, 1 } } },
    /* one layer fits (about 2^58.6), 2^20 of them do not */
    { "layers x layer",
      { { LLMEM_MODEL_HIDDEN, INT64_C(1) << 28 }, { LLMEM_MODEL_LAYERS, 1 << 20 },
        { LLMEM_MODEL_HEADS, 1 }, { LLMEM_MODEL_INTERMEDIATE, INT64_C(1) << 28 },
        { LLMEM_MODEL_VOCAB, 1 } } },
    /* embedding 2^63 and an untied head 2^63: each fits, their sum does not.
     * The layer is small: one head of size 1, intermediate 1. */
    { "embedding + untied head",
      { { LLMEM_MODEL_HIDDEN, INT64_C(1) << 31 }, { LLMEM_MODEL_LAYERS, 1 },
        { LLMEM_MODEL_HEADS, 1 }, { LLMEM_MODEL_HEAD_DIM, 1 }, { LLMEM_MODEL_INTERMEDIATE, 1 },
        { LLMEM_MODEL_VOCAB, INT64_C(1) << 32 }, { LLMEM_MODEL_TIE_EMBEDDINGS, 0 } } },
    /* MoE: 65536 experts x 3 x 2^24 x 2^32 = 2^74.6 */
    { "experts",
      { { LLMEM_MODEL_HIDDEN, INT64_C(1) << 24 }, { LLMEM_MODEL_LAYERS, 1 },
        { LLMEM_MODEL_HEADS, 1 }, { LLMEM_MODEL_HEAD_DIM, 1 }, { LLMEM_MODEL_VOCAB, 1 },
        { LLMEM_MODEL_EXPERTS, 1 << 16 }, { LLMEM_MODEL_EXPERTS_PER_TOKEN, 1 },
        { LLMEM_MODEL_EXPERT_INTERMEDIATE, INT64_C(1) << 32 } } },
    /* learned positions (2^32 + 2^20) x 2^32 */
    { "learned positions",
      { { LLMEM_MODEL_HIDDEN, INT64_C(1) << 32 }, { LLMEM_MODEL_LAYERS, 1 },
        { LLMEM_MODEL_HEADS, INT64_C(1) << 20 }, { LLMEM_MODEL_HEAD_DIM, 1 },
        { LLMEM_MODEL_INTERMEDIATE, 1 }, { LLMEM_MODEL_VOCAB, 1 },
        { LLMEM_MODEL_POSITIONS, LLMEM_POSITIONS_LEARNED },
        { LLMEM_MODEL_MAX_POSITIONS, INT64_C(1) << 32 },
        { LLMEM_MODEL_POSITION_OFFSET, 1 << 20 } } },
};
#define OVERFLOW_CASES (sizeof overflow_cases / sizeof overflow_cases[0])

ParameterizedTestParameters(model, count_overflow)
{
    return index_params(OVERFLOW_CASES);
}

ParameterizedTest(size_t *index, model, count_overflow, .init = setup_ctx, .fini = teardown_ctx)
{
    const overflow_case *c = &overflow_cases[*index];
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, c->f, MAX_FIELDS);
    uint64_t n = 7;
    int rc = llmem_model_validate(m);
    cr_expect_eq(rc, LLMEM_EOVERFLOW, "%s: validate gives %d (%s)", c->name, rc,
                 llmem_ctx_error(ctx));
    rc = llmem_model_param_count(m, &n);
    cr_expect_eq(rc, LLMEM_EOVERFLOW, "%s: param_count gives %d, count %" PRIu64, c->name, rc, n);
    cr_expect_eq(n, 7, "%s: output written on overflow", c->name);
    /* The model stays usable: bring it back to a small size. */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, 64), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEAD_DIM, 0), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, 1), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, 1), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_VOCAB, 10), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_INTERMEDIATE, 10), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, 0), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS, 0), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_MAX_POSITIONS, 10), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_model_free(m);
}

/* Just under the limit: the largest count that fits is computed, not flagged. */
Test(model, count_near_64_bits, .init = setup_ctx, .fini = teardown_ctx)
{
    /* Tied, no final norm: V x H + (4 H + 3 H + 2 H) with head_dim 1, 1 head, I 1:
     * q, k, v, o 4 x H x 1, gate/up/down 3 x H x 1, two norms 2 x H. */
    static const field_value f[] = {
        { LLMEM_MODEL_HIDDEN, INT64_C(1) << 31 }, { LLMEM_MODEL_LAYERS, 1 },
        { LLMEM_MODEL_HEADS, 1 }, { LLMEM_MODEL_HEAD_DIM, 1 }, { LLMEM_MODEL_INTERMEDIATE, 1 },
        { LLMEM_MODEL_VOCAB, INT64_C(1) << 32 }, { LLMEM_MODEL_TIE_EMBEDDINGS, 1 },
        { LLMEM_MODEL_FINAL_NORM, 0 },
    };
    llmem_model *m = model_with(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
    uint64_t H = UINT64_C(1) << 31;
    cr_expect_eq(count_of(m), (UINT64_C(1) << 63) + 9 * H);
    llmem_model_free(m);
}

/* Every kind of failed setter leaves the whole model as it was. */
Test(model, failed_setters_leave_model_unchanged, .init = setup_ctx, .fini = teardown_ctx)
{
    static const int keys[] = {
        LLMEM_MODEL_FAMILY, LLMEM_MODEL_HIDDEN, LLMEM_MODEL_LAYERS, LLMEM_MODEL_HEADS,
        LLMEM_MODEL_KV_HEADS, LLMEM_MODEL_HEAD_DIM, LLMEM_MODEL_INTERMEDIATE, LLMEM_MODEL_VOCAB,
        LLMEM_MODEL_MAX_POSITIONS, LLMEM_MODEL_NORM, LLMEM_MODEL_MLP, LLMEM_MODEL_POSITIONS,
        LLMEM_MODEL_QKV_BIAS, LLMEM_MODEL_OUT_BIAS, LLMEM_MODEL_MLP_BIAS, LLMEM_MODEL_NORM_BIAS,
        LLMEM_MODEL_TIE_EMBEDDINGS, LLMEM_MODEL_NORMS_PER_LAYER, LLMEM_MODEL_FINAL_NORM,
        LLMEM_MODEL_EMBED_NORM, LLMEM_MODEL_EMBED_DIM, LLMEM_MODEL_POSITION_OFFSET,
        LLMEM_MODEL_EXPERTS, LLMEM_MODEL_EXPERTS_PER_TOKEN, LLMEM_MODEL_EXPERT_INTERMEDIATE,
        LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, LLMEM_MODEL_HEAD_BIAS,
    };
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    static const field_value f[] = { GPT2_SIZES };
    llmem_model *m = model_with(LLMEM_FAMILY_GPT2, f, sizeof f / sizeof f[0]);
    int64_t before[NKEYS];
    for (int k = 0; k < NKEYS; k++)
        cr_assert_eq(llmem_model_get_int(m, keys[k], &before[k]), LLMEM_OK);

    cr_expect_neq(llmem_model_set_int(m, LLMEM_MODEL_FAMILY, 1000), LLMEM_OK);
    cr_expect_neq(llmem_model_set_str(m, LLMEM_MODEL_FAMILY, "mamba"), LLMEM_OK);
    cr_expect_neq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, 0), LLMEM_OK);
    cr_expect_neq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, -1), LLMEM_OK);
    cr_expect_neq(llmem_model_set_str(m, LLMEM_MODEL_NORM, "groupnorm"), LLMEM_OK);
    cr_expect_neq(llmem_model_set_str(m, LLMEM_MODEL_VOCAB, "50257"), LLMEM_OK);
    cr_expect_neq(llmem_model_set_int(m, 0, 1), LLMEM_OK);
    cr_expect_neq(llmem_model_set_int(m, LLMEM_MODEL_TIE_EMBEDDINGS, 5), LLMEM_OK);

    for (int k = 0; k < NKEYS; k++) {
        int64_t now = 0;
        cr_assert_eq(llmem_model_get_int(m, keys[k], &now), LLMEM_OK);
        cr_expect_eq(now, before[k], "key %d changed from %" PRId64 " to %" PRId64, keys[k],
                     before[k], now);
    }
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK);
    cr_expect_str_empty(llmem_ctx_error(ctx), "a success clears the message");
    cr_expect_eq(count_of(m), GPT2_TIED);
    llmem_model_free(m);
}

Test(model, null_arguments, .init = setup_ctx, .fini = teardown_ctx)
{
    static const field_value f[] = { GPT2_SIZES };
    llmem_model *m = NULL;
    int64_t v = 0;
    uint64_t n = 0;
    cr_expect_eq(llmem_model_new(ctx, LLMEM_FAMILY_GPT2, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_new(NULL, LLMEM_FAMILY_GPT2, &m), LLMEM_EINVAL);
    cr_expect_null(m);
    cr_expect_eq(llmem_model_set_int(NULL, LLMEM_MODEL_HIDDEN, 64), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_set_str(NULL, LLMEM_MODEL_NORM, "rmsnorm"), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_get_int(NULL, LLMEM_MODEL_HIDDEN, &v), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_validate(NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_param_count(NULL, &n), LLMEM_EINVAL);
    m = model_with(LLMEM_FAMILY_GPT2, f, sizeof f / sizeof f[0]);
    cr_expect_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_param_count(m, NULL), LLMEM_EINVAL);
    llmem_model_free(m);
    llmem_model_free(NULL);
}

Test(model, unknown_family_at_creation, .init = setup_ctx, .fini = teardown_ctx)
{
    static const int bad[] = { 0, -1, 1000, INT32_MIN };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        static int sentinel;
        llmem_model *m = (llmem_model *)&sentinel;
        int rc = llmem_model_new(ctx, bad[i], &m);
        cr_expect(rc == LLMEM_ERANGE || rc == LLMEM_ENOTFOUND || rc == LLMEM_EINVAL,
                  "family %d: %d", bad[i], rc);
        cr_expect_neq(rc, LLMEM_OK);
        cr_expect_null(m, "family %d: out not reset", bad[i]);
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), "family"), "'%s'", llmem_ctx_error(ctx));
    }
}

/* ------------------------------------------------------------------ */
/* The caller's allocator: every byte goes through it and comes back. */

typedef struct counting_alloc {
    int allocs, frees, fail_after; /* fail_after < 0: never fail */
} counting_alloc;

static void *count_alloc(void *user, size_t bytes)
{
    counting_alloc *a = user;
    if (a->fail_after >= 0 && a->allocs >= a->fail_after)
        return NULL;
    a->allocs++;
    return malloc(bytes);
}

static void count_free(void *user, void *ptr)
{
    counting_alloc *a = user;
    cr_assert_not_null(ptr, "free called with NULL");
    a->frees++;
    free(ptr);
}

Test(model, allocator_is_used_and_balanced)
{
    counting_alloc state = { 0, 0, -1 };
    llmem_allocator alloc = LLMEM_ALLOCATOR_INIT;
    llmem_ctx *c = NULL;
    llmem_model *m = NULL;
    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.user = &state;
    cr_assert_eq(llmem_ctx_new(&c, &alloc), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(c, "gpt2", &m), LLMEM_OK);
    cr_expect_geq(state.allocs, 2);
    llmem_model_free(m);
    llmem_ctx_free(c);
    cr_expect_eq(state.allocs, state.frees, "%d allocations, %d frees", state.allocs,
                 state.frees);
}

Test(model, allocation_failure)
{
    counting_alloc state = { 0, 0, 1 }; /* the context gets its block, the model none */
    llmem_allocator alloc = LLMEM_ALLOCATOR_INIT;
    llmem_ctx *c = NULL;
    llmem_model *m = NULL;
    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.user = &state;
    cr_assert_eq(llmem_ctx_new(&c, &alloc), LLMEM_OK);
    cr_expect_eq(llmem_model_new(c, LLMEM_FAMILY_LLAMA, &m), LLMEM_ENOMEM);
    cr_expect_null(m);
    cr_expect_eq(llmem_model_new_preset(c, "gpt2", &m), LLMEM_ENOMEM);
    cr_expect_null(m);
    llmem_ctx_free(c);
    cr_expect_eq(state.allocs, state.frees);
}

Test(model, allocator_struct_checked)
{
    llmem_allocator alloc = LLMEM_ALLOCATOR_INIT;
    llmem_ctx *c = NULL;
    counting_alloc state = { 0, 0, -1 };
    cr_expect_eq(llmem_ctx_new(&c, &alloc), LLMEM_EINVAL, "NULL alloc and free members");
    cr_expect_null(c);
    alloc.alloc = count_alloc;
    alloc.free = count_free;
    alloc.user = &state;
    alloc.size = sizeof alloc - 1;
    cr_expect_eq(llmem_ctx_new(&c, &alloc), LLMEM_EINVAL, "short size member");
    cr_expect_null(c);
    cr_expect_eq(llmem_ctx_new(NULL, NULL), LLMEM_EINVAL);
    cr_expect_eq(state.allocs, 0);
}

/* Field metadata: names and bounds as the setters enforce them, value names
 * as set_str accepts them. */
Test(model, field_info_and_value_names)
{
    const char *name = NULL;
    int64_t lo = 0, hi = 0;
    llmem_ctx *c;
    llmem_model *m;
    cr_assert_eq(llmem_model_field_info(LLMEM_MODEL_KV_HEADS, &name, &lo, &hi), LLMEM_OK);
    cr_expect_str_eq(name, "kv-heads");
    cr_expect_eq(lo, 0);
    cr_expect_gt(hi, 0);
    cr_expect_eq(llmem_model_field_info(9999, NULL, NULL, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_ctx_new(&c, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new(c, LLMEM_FAMILY_LLAMA, &m), LLMEM_OK);
    /* the bounds are the setter's: max accepted, max + 1 refused */
    cr_assert_eq(llmem_model_field_info(LLMEM_MODEL_LAYERS, NULL, &lo, &hi), LLMEM_OK);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, hi), LLMEM_OK);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, hi + 1), LLMEM_ERANGE);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, lo - 1), LLMEM_ERANGE);
    /* every named value round-trips through set_str */
    for (int64_t v = 1; v <= 12; v++) {
        const char *family = llmem_model_value_name(LLMEM_MODEL_FAMILY, v);
        int64_t back = 0;
        cr_assert_not_null(family, "family %lld has no name", (long long)v);
        cr_expect_eq(llmem_model_set_str(m, LLMEM_MODEL_FAMILY, family), LLMEM_OK);
        llmem_model_get_int(m, LLMEM_MODEL_FAMILY, &back);
        cr_expect_eq(back, v, "%s", family);
    }
    cr_expect_str_eq(llmem_model_value_name(LLMEM_MODEL_NORM, LLMEM_NORM_RMSNORM), "rmsnorm");
    cr_expect_null(llmem_model_value_name(LLMEM_MODEL_HIDDEN, 4096), "hidden is not enumerated");
    cr_expect_null(llmem_model_value_name(LLMEM_MODEL_FAMILY, 0));
    cr_expect_null(llmem_model_value_name(LLMEM_MODEL_FAMILY, 99));
    llmem_model_free(m);
    llmem_ctx_free(c);
}

/* The dropout probabilities: real fields, set and read as doubles, within
 * [0, 1); a family sets its configuration class's defaults; a site the
 * family's code lacks takes only 0 (validate names the field). */
Test(model, dropout_fields, .init = setup_ctx, .fini = teardown_ctx)
{
    static const int keys[] = { LLMEM_MODEL_ATTENTION_DROPOUT, LLMEM_MODEL_HIDDEN_DROPOUT,
                                LLMEM_MODEL_EMBEDDING_DROPOUT };
    static const char *const names[] = { "attention-dropout", "hidden-dropout",
                                         "embedding-dropout" };
    llmem_model *m = NULL;
    double p = -1;
    int64_t i = -1;
    int object = 0, key = 0;
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_GPT2, &m), LLMEM_OK);
    for (int k = 0; k < 3; k++) {
        const char *name = NULL;
        cr_expect_eq(llmem_model_field_is_real(keys[k]), 1);
        cr_assert_eq(llmem_model_field_info(keys[k], &name, NULL, NULL), LLMEM_OK);
        cr_expect_str_eq(name, names[k]);
        /* GPT2Config's attn_pdrop, resid_pdrop, embd_pdrop */
        cr_assert_eq(llmem_model_get_double(m, keys[k], &p), LLMEM_OK);
        cr_expect(p == 0.1, "%s: %g", names[k], p);
    }
    cr_expect_eq(llmem_model_field_is_real(LLMEM_MODEL_HIDDEN), 0);
    cr_expect_eq(llmem_model_field_is_real(0), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_field_is_real(LLMEM_MODEL_SLIDING_WINDOW), 0);
    cr_expect_eq(llmem_model_field_is_real(LLMEM_MODEL_BNB_4BIT), 0);
    cr_expect_eq(llmem_model_field_is_real(LLMEM_MODEL_BNB_4BIT + 1), LLMEM_EINVAL);
    /* set and read back; an integer is its real */
    cr_expect_eq(llmem_model_set_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, 0.25), LLMEM_OK);
    cr_expect_eq(llmem_model_get_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, &p), LLMEM_OK);
    cr_expect(p == 0.25);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN_DROPOUT, 0), LLMEM_OK);
    cr_expect_eq(llmem_model_get_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, &p), LLMEM_OK);
    cr_expect(p == 0.0);
    /* bounds: [0, 1), finite; refused values leave the field */
    cr_expect_eq(llmem_model_set_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, 1.0), LLMEM_ERANGE);
    cr_expect_str_eq(llmem_ctx_error(ctx), "hidden-dropout: value 1 out of range [0, 1)");
    cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
    cr_expect(object == LLMEM_OBJECT_MODEL && key == LLMEM_MODEL_HIDDEN_DROPOUT);
    cr_expect_eq(llmem_model_set_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, -0.1), LLMEM_ERANGE);
    cr_expect_eq(llmem_model_set_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, 0.0 / 0.0), LLMEM_ERANGE);
    cr_expect_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN_DROPOUT, 1), LLMEM_ERANGE);
    cr_expect_eq(llmem_model_get_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, &p), LLMEM_OK);
    cr_expect(p == 0.0);
    /* a real field is not an integer, nor a named field, and the reverse */
    cr_expect_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN_DROPOUT, &i), LLMEM_EINVAL);
    cr_expect_str_eq(llmem_ctx_error(ctx),
                     "hidden-dropout: a real field (read it with llmem_model_get_double)");
    cr_expect_eq(llmem_model_set_str(m, LLMEM_MODEL_HIDDEN_DROPOUT, "0.1"), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_get_double(m, LLMEM_MODEL_HIDDEN, &p), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_set_double(m, LLMEM_MODEL_HIDDEN, 64.0), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_get_double(m, 9999, &p), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_get_double(NULL, LLMEM_MODEL_HIDDEN_DROPOUT, &p), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_get_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_model_set_double(NULL, LLMEM_MODEL_HIDDEN_DROPOUT, 0.1), LLMEM_EINVAL);
    /* a new family brings its defaults: OPTConfig's dropout 0.1, attention_dropout 0 */
    cr_assert_eq(llmem_model_set_str(m, LLMEM_MODEL_FAMILY, "opt"), LLMEM_OK);
    llmem_model_get_double(m, LLMEM_MODEL_ATTENTION_DROPOUT, &p);
    cr_expect(p == 0.0);
    llmem_model_get_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, &p);
    cr_expect(p == 0.1);
    /* OPT has no embedding dropout: 0.1 there is refused when the fields meet */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, 64), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, 2), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, 4), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_INTERMEDIATE, 128), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_VOCAB, 100), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_MAX_POSITIONS, 64), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_set_double(m, LLMEM_MODEL_EMBEDDING_DROPOUT, 0.1), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    cr_expect_str_eq(llmem_ctx_error(ctx), "embedding-dropout: 0.1, but opt models have no "
                                           "dropout on the embedding output (leave it 0)");
    cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
    cr_expect(object == LLMEM_OBJECT_MODEL && key == LLMEM_MODEL_EMBEDDING_DROPOUT);
    cr_assert_eq(llmem_model_set_double(m, LLMEM_MODEL_EMBEDDING_DROPOUT, 0.0), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_OK);
    llmem_model_free(m);
}
