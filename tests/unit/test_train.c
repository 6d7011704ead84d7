/* SPDX-License-Identifier: MIT */
/*
 * The training setup: documented defaults, every enumerated value by name,
 * and rejected values leaving the setup unchanged.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmem.h"

static llmem_ctx *ctx;
static llmem_train *train;

static void setup_train(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &train), LLMEM_OK);
}

static void teardown_train(void)
{
    llmem_train_free(train);
    llmem_ctx_free(ctx);
    train = NULL;
    ctx = NULL;
}

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

/* Parameters reach the test through Criterion's arena: indices into the
 * static tables, not pointers. */
static struct criterion_test_params index_params(size_t n)
{
    size_t *index = cr_malloc(n * sizeof *index);
    for (size_t i = 0; i < n; i++)
        index[i] = i;
    return cr_make_param_array(size_t, index, n, free_params);
}

static int64_t get_int(int key)
{
    int64_t v = INT64_MIN;
    int rc = llmem_train_get_int(train, key, &v);
    cr_assert_eq(rc, LLMEM_OK, "get_int key %d: %d (%s)", key, rc, llmem_ctx_error(ctx));
    return v;
}

static double get_double(int key)
{
    double v = NAN;
    int rc = llmem_train_get_double(train, key, &v);
    cr_assert_eq(rc, LLMEM_OK, "get_double key %d: %d (%s)", key, rc, llmem_ctx_error(ctx));
    return v;
}

/* ------------------------------------------------------------------ */
/* Defaults, as the header documents them. */

Test(train, defaults, .init = setup_train, .fini = teardown_train)
{
    cr_expect_eq(get_int(LLMEM_TRAIN_BATCH), 1);
    cr_expect_eq(get_int(LLMEM_TRAIN_SEQ), 512);
    cr_expect_eq(get_int(LLMEM_TRAIN_PRECISION), LLMEM_PRECISION_BF16_MIXED);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER), LLMEM_OPTIMIZER_ADAMW);
    cr_expect_eq(get_int(LLMEM_TRAIN_METHOD), LLMEM_METHOD_FULL);
    cr_expect_eq(get_int(LLMEM_TRAIN_GRAD_CKPT), LLMEM_GRAD_CKPT_NONE);
    /* transformers 5.x: SDPA attention; the Trainer with torch >= 2.8:
     * adamw_torch_fused. */
    cr_expect_eq(get_int(LLMEM_TRAIN_ATTENTION), LLMEM_ATTENTION_SDPA);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FUSED);
    /* The Trainer trains in train mode: each dropout site at the model's own
     * probability, -1 (since 0.2.0; 0 before). */
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == -1.0, "dropout %g",
              get_double(LLMEM_TRAIN_DROPOUT));
    /* PEFT's LoraConfig.lora_dropout. */
    cr_expect(get_double(LLMEM_TRAIN_LORA_DROPOUT) == 0.0, "lora dropout %g",
              get_double(LLMEM_TRAIN_LORA_DROPOUT));
    /* PEFT's LoraConfig defaults: r = 8, q_proj and v_proj for Llama. */
    cr_expect_eq(get_int(LLMEM_TRAIN_LORA_RANK), 8);
    cr_expect_eq(get_int(LLMEM_TRAIN_LORA_TARGETS), LLMEM_LORA_Q | LLMEM_LORA_V);
    cr_expect_eq(get_int(LLMEM_TRAIN_FROZEN_LAYERS), 0);
    cr_expect_eq(get_int(LLMEM_TRAIN_LOSS), LLMEM_LOSS_UPCAST);
    cr_expect_eq(get_int(LLMEM_TRAIN_GRAD_ACCUM), 1);
    cr_expect_eq(get_int(LLMEM_TRAIN_FORMULA), LLMEM_FORMULA_PHASED);
    /* The article's example stores parameters in fp32. */
    cr_expect_eq(get_int(LLMEM_TRAIN_ARTICLE_PARAM_BYTES), 4);
    cr_expect(get_double(LLMEM_TRAIN_ARTICLE_TMP_FACTOR) >= 0.0);
    /* No GPU chosen. */
    cr_expect_eq(get_int(LLMEM_TRAIN_GPU), 0);
    cr_expect_str_empty(llmem_ctx_error(ctx));
}

/* Integer and real fields are read through their own getter only. */
Test(train, getter_kinds, .init = setup_train, .fini = teardown_train)
{
    int64_t i = 77;
    double d = 77.0;
    cr_expect_eq(llmem_train_get_int(train, LLMEM_TRAIN_DROPOUT, &i), LLMEM_EINVAL);
    cr_expect_eq(i, 77);
    cr_expect_eq(llmem_train_get_double(train, LLMEM_TRAIN_BATCH, &d), LLMEM_EINVAL);
    cr_expect(d == 77.0);
    cr_expect_eq(llmem_train_get_int(train, 0, &i), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_int(train, LLMEM_TRAIN_EXPERTS_IMPL + 1, &i), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_int(train, LLMEM_TRAIN_LORA_DROPOUT, &i), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_double(train, -3, &d), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_int(train, LLMEM_TRAIN_BATCH, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_double(train, LLMEM_TRAIN_DROPOUT, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_int(NULL, LLMEM_TRAIN_BATCH, &i), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_get_double(NULL, LLMEM_TRAIN_DROPOUT, &d), LLMEM_EINVAL);
}

/* ------------------------------------------------------------------ */
/* Every enumerated value of every field, by name. */

typedef struct named_value {
    int key;
    const char *name;
    int64_t value;
} named_value;

static const named_value named[] = {
    { LLMEM_TRAIN_PRECISION, "fp32", LLMEM_PRECISION_FP32 },
    { LLMEM_TRAIN_PRECISION, "bf16-mixed", LLMEM_PRECISION_BF16_MIXED },
    { LLMEM_TRAIN_PRECISION, "fp16-mixed", LLMEM_PRECISION_FP16_MIXED },
    { LLMEM_TRAIN_PRECISION, "bf16", LLMEM_PRECISION_BF16 },
    { LLMEM_TRAIN_PRECISION, "bf16-autocast", LLMEM_PRECISION_BF16_AUTOCAST },
    { LLMEM_TRAIN_OPTIMIZER, "adamw", LLMEM_OPTIMIZER_ADAMW },
    { LLMEM_TRAIN_OPTIMIZER, "adam", LLMEM_OPTIMIZER_ADAM },
    { LLMEM_TRAIN_OPTIMIZER, "sgd", LLMEM_OPTIMIZER_SGD },
    { LLMEM_TRAIN_OPTIMIZER, "sgd-momentum", LLMEM_OPTIMIZER_SGD_MOMENTUM },
    { LLMEM_TRAIN_OPTIMIZER, "adafactor", LLMEM_OPTIMIZER_ADAFACTOR },
    { LLMEM_TRAIN_OPTIMIZER, "adamw-8bit", LLMEM_OPTIMIZER_ADAMW_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "lion", LLMEM_OPTIMIZER_LION },
    { LLMEM_TRAIN_OPTIMIZER, "paged-adamw-8bit", LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged-adamw", LLMEM_OPTIMIZER_PAGED_ADAMW },
    { LLMEM_TRAIN_OPTIMIZER, "lion-8bit", LLMEM_OPTIMIZER_LION_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "lion-32bit", LLMEM_OPTIMIZER_LION_32BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged-lion-8bit", LLMEM_OPTIMIZER_PAGED_LION_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged-lion", LLMEM_OPTIMIZER_PAGED_LION },
    /* the Hugging Face Trainer's optim names */
    { LLMEM_TRAIN_OPTIMIZER, "adamw_torch", LLMEM_OPTIMIZER_ADAMW },
    { LLMEM_TRAIN_OPTIMIZER, "adamw_torch_fused", LLMEM_OPTIMIZER_ADAMW },
    { LLMEM_TRAIN_OPTIMIZER, "adamw_bnb_8bit", LLMEM_OPTIMIZER_ADAMW_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "adamw_8bit", LLMEM_OPTIMIZER_ADAMW_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged_adamw_8bit", LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged_adamw_32bit", LLMEM_OPTIMIZER_PAGED_ADAMW },
    { LLMEM_TRAIN_OPTIMIZER, "lion_8bit", LLMEM_OPTIMIZER_LION_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "lion_32bit", LLMEM_OPTIMIZER_LION_32BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged_lion_8bit", LLMEM_OPTIMIZER_PAGED_LION_8BIT },
    { LLMEM_TRAIN_OPTIMIZER, "paged_lion_32bit", LLMEM_OPTIMIZER_PAGED_LION },
    { LLMEM_TRAIN_OPTIMIZER_IMPL, "fused", LLMEM_OPTIMIZER_IMPL_FUSED },
    { LLMEM_TRAIN_OPTIMIZER_IMPL, "foreach", LLMEM_OPTIMIZER_IMPL_FOREACH },
    { LLMEM_TRAIN_OPTIMIZER_IMPL, "forloop", LLMEM_OPTIMIZER_IMPL_FORLOOP },
    { LLMEM_TRAIN_GRAD_CKPT, "none", LLMEM_GRAD_CKPT_NONE },
    { LLMEM_TRAIN_GRAD_CKPT, "full", LLMEM_GRAD_CKPT_FULL },
    { LLMEM_TRAIN_GRAD_CKPT, "reentrant", LLMEM_GRAD_CKPT_REENTRANT },
    { LLMEM_TRAIN_GRAD_CKPT, "non-reentrant", LLMEM_GRAD_CKPT_NON_REENTRANT },
    { LLMEM_TRAIN_ATTENTION, "eager", LLMEM_ATTENTION_EAGER },
    { LLMEM_TRAIN_ATTENTION, "flash", LLMEM_ATTENTION_FLASH },
    { LLMEM_TRAIN_ATTENTION, "sdpa", LLMEM_ATTENTION_SDPA },
    { LLMEM_TRAIN_METHOD, "full", LLMEM_METHOD_FULL },
    { LLMEM_TRAIN_METHOD, "lora", LLMEM_METHOD_LORA },
    { LLMEM_TRAIN_METHOD, "qlora", LLMEM_METHOD_QLORA },
    { LLMEM_TRAIN_METHOD, "freeze", LLMEM_METHOD_FREEZE },
    { LLMEM_TRAIN_LOSS, "upcast", LLMEM_LOSS_UPCAST },
    { LLMEM_TRAIN_LOSS, "chunked", LLMEM_LOSS_CHUNKED },
    { LLMEM_TRAIN_FORMULA, "phased", LLMEM_FORMULA_PHASED },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_FORMULA_ARTICLE },
    /* LoRA targets: each module alone, lists, and repeats */
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj", LLMEM_LORA_Q },
    { LLMEM_TRAIN_LORA_TARGETS, "k_proj", LLMEM_LORA_K },
    { LLMEM_TRAIN_LORA_TARGETS, "v_proj", LLMEM_LORA_V },
    { LLMEM_TRAIN_LORA_TARGETS, "o_proj", LLMEM_LORA_O },
    { LLMEM_TRAIN_LORA_TARGETS, "gate_proj", LLMEM_LORA_GATE },
    { LLMEM_TRAIN_LORA_TARGETS, "up_proj", LLMEM_LORA_UP },
    { LLMEM_TRAIN_LORA_TARGETS, "down_proj", LLMEM_LORA_DOWN },
    { LLMEM_TRAIN_LORA_TARGETS, "k_proj,o_proj", LLMEM_LORA_K | LLMEM_LORA_O },
    { LLMEM_TRAIN_LORA_TARGETS, "v_proj,q_proj,v_proj", LLMEM_LORA_Q | LLMEM_LORA_V },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", 127 },
    /* GPT-2's Conv1D module names, as PEFT matches them: c_attn is q, k and v
     * fused; c_proj names both the attention output and the MLP output. */
    { LLMEM_TRAIN_LORA_TARGETS, "c_attn", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    { LLMEM_TRAIN_LORA_TARGETS, "c_proj", LLMEM_LORA_O | LLMEM_LORA_DOWN },
    { LLMEM_TRAIN_LORA_TARGETS, "c_fc", LLMEM_LORA_UP },
    { LLMEM_TRAIN_LORA_TARGETS, "c_attn,c_proj,c_fc", 127 & ~LLMEM_LORA_GATE },
    /* Fused projections of Phi-3, BLOOM, GPT-NeoX and Falcon. */
    { LLMEM_TRAIN_LORA_TARGETS, "qkv_proj,gate_up_proj", 127 & ~(LLMEM_LORA_O | LLMEM_LORA_DOWN) },
    { LLMEM_TRAIN_LORA_TARGETS, "query_key_value", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    /* Latent attention's compressions have roles of their own; Megatron's names. */
    { LLMEM_TRAIN_LORA_TARGETS, "q_a_proj", LLMEM_LORA_Q_A },
    { LLMEM_TRAIN_LORA_TARGETS, "kv_a_proj_with_mqa,q_b_proj", LLMEM_LORA_KV_A | LLMEM_LORA_Q },
    { LLMEM_TRAIN_LORA_TARGETS, "linear_qkv", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    /* integers and reals as text */
    { LLMEM_TRAIN_BATCH, "16", 16 },
    { LLMEM_TRAIN_SEQ, "4096", 4096 },
    { LLMEM_TRAIN_LORA_RANK, "64", 64 },
    { LLMEM_TRAIN_FROZEN_LAYERS, "12", 12 },
    { LLMEM_TRAIN_GRAD_ACCUM, "8", 8 },
    { LLMEM_TRAIN_ARTICLE_PARAM_BYTES, "2", 2 },
    { LLMEM_TRAIN_BATCH, "+4", 4 },
    { LLMEM_TRAIN_SEQ, "0128", 128 },
};
#define NAMED_COUNT (sizeof named / sizeof named[0])

ParameterizedTestParameters(train, set_str_each_value)
{
    return index_params(NAMED_COUNT);
}

ParameterizedTest(size_t *index, train, set_str_each_value, .init = setup_train,
                  .fini = teardown_train)
{
    const named_value *c = &named[*index];
    /* Move away from the value first, so reading it back proves the set. */
    int64_t other = c->value == 1 ? 2 : 1;
    if (c->key == LLMEM_TRAIN_LORA_TARGETS)
        other = c->value == LLMEM_LORA_DOWN ? LLMEM_LORA_UP : LLMEM_LORA_DOWN;
    cr_assert_eq(llmem_train_set_int(train, c->key, other), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    int rc = llmem_train_set_str(train, c->key, c->name);
    cr_assert_eq(rc, LLMEM_OK, "key %d '%s': %d (%s)", c->key, c->name, rc, llmem_ctx_error(ctx));
    cr_expect_str_empty(llmem_ctx_error(ctx));
    cr_expect_eq(get_int(c->key), c->value, "key %d '%s' read back as %" PRId64, c->key, c->name,
                 get_int(c->key));
    /* The same value by number. */
    cr_assert_eq(llmem_train_set_int(train, c->key, other), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(train, c->key, c->value), LLMEM_OK);
    cr_expect_eq(get_int(c->key), c->value);
}

Test(train, reals_by_text_and_number, .init = setup_train, .fini = teardown_train)
{
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_DROPOUT, "0.1"), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == 0.1);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 0.999), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == 0.999);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 0.0), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == 0.0);
    /* An integer setter on a real field sets the real value. */
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_ARTICLE_TMP_FACTOR, 3), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_ARTICLE_TMP_FACTOR) == 3.0);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "2.5"), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_ARTICLE_TMP_FACTOR) == 2.5);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_ARTICLE_TMP_FACTOR, 0.0), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_ARTICLE_TMP_FACTOR) == 0.0);
}

/* Every decimal form the CLI reads is a number here too. */
Test(train, reals_in_decimal_forms, .init = setup_train, .fini = teardown_train)
{
    static const struct {
        const char *text;
        double value;
    } forms[] = { { ".5", 0.5 }, { "5e-1", 0.5 }, { "1E-2", 0.01 }, { "+0.25", 0.25 },
                  { "0.", 0.0 }, { "2.5e+0", 2.5 } };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        int key = forms[i].value < 1 ? LLMEM_TRAIN_DROPOUT : LLMEM_TRAIN_ARTICLE_TMP_FACTOR;
        cr_assert_eq(llmem_train_set_str(train, key, forms[i].text), LLMEM_OK, "'%s': %s",
                     forms[i].text, llmem_ctx_error(ctx));
        cr_expect(get_double(key) == forms[i].value, "'%s' read %g", forms[i].text,
                  get_double(key));
    }
}

/* Text the CLI refuses is refused here, with a message naming the field and
 * the text as given, and the field for llmem_ctx_error_field. */
Test(train, padded_numbers_name_field_and_value, .init = setup_train, .fini = teardown_train)
{
    static const struct {
        int key;
        const char *text, *message;
    } cases[] = {
        { LLMEM_TRAIN_BATCH, " 4", "batch: ' 4' is not an integer" },
        { LLMEM_TRAIN_LORA_RANK, "\t16", "lora-rank: '\t16' is not an integer" },
        { LLMEM_TRAIN_DROPOUT, " 0.1", "dropout: ' 0.1' is not a decimal number" },
        { LLMEM_TRAIN_LORA_DROPOUT, "0x1p-3", "lora-dropout: '0x1p-3' is not a decimal number" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int object = 0, key = 0;
        cr_expect_eq(llmem_train_set_str(train, cases[i].key, cases[i].text), LLMEM_EINVAL,
                     "'%s' accepted", cases[i].text);
        cr_expect_str_eq(llmem_ctx_error(ctx), cases[i].message);
        cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
        cr_expect_eq(object, LLMEM_OBJECT_TRAIN);
        cr_expect_eq(key, cases[i].key, "'%s': key %d", cases[i].text, key);
    }
}

/* ------------------------------------------------------------------ */
/* Rejected values: each leaves every field as it was. */

typedef struct bad_str {
    int key;
    const char *value;
    int status; /* 0: any error */
} bad_str;

static const bad_str bad_strings[] = {
    /* unknown names */
    { LLMEM_TRAIN_PRECISION, "fp8", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_PRECISION, "BF16-mixed", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_PRECISION, "", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_PRECISION, "2", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_OPTIMIZER, "adamax", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_OPTIMIZER, "adamw ", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_OPTIMIZER, "adamw_hf", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_OPTIMIZER, "rmsprop", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_OPTIMIZER_IMPL, "apex", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_GRAD_CKPT, "selective", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_GRAD_CKPT, "non_reentrant", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_ATTENTION, "flash_attention_2", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_METHOD, "dora", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_LOSS, "fused", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_FORMULA, "sum", LLMEM_ENOTFOUND },
    /* LoRA module lists: unknown or empty names */
    { LLMEM_TRAIN_LORA_TARGETS, "w_pack", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_LORA_TARGETS, "Q_PROJ", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj,lm_head", LLMEM_ENOTFOUND },
    { LLMEM_TRAIN_LORA_TARGETS, "", 0 },
    { LLMEM_TRAIN_LORA_TARGETS, ",", 0 },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj,,v_proj", 0 },
    { LLMEM_TRAIN_LORA_TARGETS, ",q_proj", 0 },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj,", 0 },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj, v_proj", 0 },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj_q_proj_q_proj_q_proj_q_proj_q_proj_q_proj_q_proj_q_proj", 0 },
    /* integers with junk, or not integers */
    { LLMEM_TRAIN_BATCH, "4x", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "4 ", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "four", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "2.5", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "0x10", LLMEM_EINVAL },
    { LLMEM_TRAIN_SEQ, "2048tokens", LLMEM_EINVAL },
    /* white space, which strtoll skips before a number: the CLI refuses it */
    { LLMEM_TRAIN_BATCH, " 4", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "\t4", LLMEM_EINVAL },
    { LLMEM_TRAIN_SEQ, "\n512", LLMEM_EINVAL },
    { LLMEM_TRAIN_LORA_RANK, "+ 8", LLMEM_EINVAL },
    { LLMEM_TRAIN_GRAD_ACCUM, "- 1", LLMEM_EINVAL },
    { LLMEM_TRAIN_BATCH, "+", LLMEM_EINVAL },
    { LLMEM_TRAIN_LORA_RANK, "8,", LLMEM_EINVAL },
    { LLMEM_TRAIN_GRAD_ACCUM, "1e3", LLMEM_EINVAL },
    /* integers out of range as text */
    { LLMEM_TRAIN_BATCH, "0", LLMEM_ERANGE },
    { LLMEM_TRAIN_BATCH, "-4", LLMEM_ERANGE },
    { LLMEM_TRAIN_SEQ, "99999999999999999999999", 0 },
    { LLMEM_TRAIN_LORA_RANK, "0", LLMEM_ERANGE },
    { LLMEM_TRAIN_GRAD_ACCUM, "0", LLMEM_ERANGE },
    { LLMEM_TRAIN_FROZEN_LAYERS, "-1", LLMEM_ERANGE },
    { LLMEM_TRAIN_ARTICLE_PARAM_BYTES, "0", LLMEM_ERANGE },
    { LLMEM_TRAIN_ARTICLE_PARAM_BYTES, "9", LLMEM_ERANGE },
    /* reals: junk, not finite, out of [0, 1) */
    { LLMEM_TRAIN_DROPOUT, "0.1x", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "one", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "nan", 0 },
    { LLMEM_TRAIN_DROPOUT, "inf", 0 },
    { LLMEM_TRAIN_DROPOUT, "-inf", 0 },
    { LLMEM_TRAIN_DROPOUT, "-0.1", LLMEM_ERANGE },
    { LLMEM_TRAIN_DROPOUT, "1", LLMEM_ERANGE },
    { LLMEM_TRAIN_DROPOUT, "1.0", LLMEM_ERANGE },
    { LLMEM_TRAIN_DROPOUT, "1.5", LLMEM_ERANGE },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "-1", LLMEM_ERANGE },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "nan", 0 },
    { LLMEM_TRAIN_LORA_DROPOUT, "1", LLMEM_ERANGE },
    { LLMEM_TRAIN_LORA_DROPOUT, "-0.05", LLMEM_ERANGE },
    { LLMEM_TRAIN_LORA_DROPOUT, "0.1p", LLMEM_EINVAL },
    /* what strtod reads besides decimal numbers: white space, hexadecimal */
    { LLMEM_TRAIN_DROPOUT, " 0.1", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "\t0.1", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "0.1 ", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "0x1p-3", LLMEM_EINVAL },
    { LLMEM_TRAIN_LORA_DROPOUT, "0X.8P0", LLMEM_EINVAL },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, " 2", LLMEM_EINVAL },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "infinity", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, ".", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "1e", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "1e+", LLMEM_EINVAL },
    { LLMEM_TRAIN_DROPOUT, "e5", LLMEM_EINVAL },
};
#define BAD_STRINGS (sizeof bad_strings / sizeof bad_strings[0])

static const int int_keys[] = {
    LLMEM_TRAIN_BATCH, LLMEM_TRAIN_SEQ, LLMEM_TRAIN_PRECISION, LLMEM_TRAIN_OPTIMIZER,
    LLMEM_TRAIN_GRAD_CKPT, LLMEM_TRAIN_ATTENTION, LLMEM_TRAIN_METHOD, LLMEM_TRAIN_LORA_RANK,
    LLMEM_TRAIN_LORA_TARGETS, LLMEM_TRAIN_FROZEN_LAYERS, LLMEM_TRAIN_LOSS,
    LLMEM_TRAIN_GRAD_ACCUM, LLMEM_TRAIN_FORMULA, LLMEM_TRAIN_ARTICLE_PARAM_BYTES,
    LLMEM_TRAIN_OPTIMIZER_IMPL,
};
static const int real_keys[] = { LLMEM_TRAIN_DROPOUT, LLMEM_TRAIN_ARTICLE_TMP_FACTOR,
                                 LLMEM_TRAIN_LORA_DROPOUT };
#define N_INT_KEYS (sizeof int_keys / sizeof int_keys[0])
#define N_REAL_KEYS (sizeof real_keys / sizeof real_keys[0])

typedef struct snapshot {
    int64_t i[N_INT_KEYS];
    double d[N_REAL_KEYS];
} snapshot;

static void take(snapshot *s)
{
    for (size_t k = 0; k < N_INT_KEYS; k++)
        s->i[k] = get_int(int_keys[k]);
    for (size_t k = 0; k < N_REAL_KEYS; k++)
        s->d[k] = get_double(real_keys[k]);
}

static void expect_unchanged(const snapshot *before, const char *what)
{
    snapshot now;
    take(&now);
    for (size_t k = 0; k < N_INT_KEYS; k++)
        cr_expect_eq(now.i[k], before->i[k], "%s: key %d changed from %" PRId64 " to %" PRId64,
                     what, int_keys[k], before->i[k], now.i[k]);
    for (size_t k = 0; k < N_REAL_KEYS; k++)
        cr_expect(now.d[k] == before->d[k], "%s: key %d changed from %g to %g", what,
                  real_keys[k], before->d[k], now.d[k]);
}

/* A setup moved off its defaults, so an accidental reset shows too. */
static void set_non_defaults(void)
{
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_BATCH, 3), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_SEQ, 1000), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_PRECISION, "fp16-mixed"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "lion"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_LORA_TARGETS, "k_proj,down_proj"),
                 LLMEM_OK);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 0.25), LLMEM_OK);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_ARTICLE_TMP_FACTOR, 1.5), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_LORA_RANK, 5), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_GRAD_ACCUM, 6), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_ARTICLE_PARAM_BYTES, 3), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER_IMPL, "forloop"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_LORA_DROPOUT, 0.05), LLMEM_OK);
}

ParameterizedTestParameters(train, set_str_rejects)
{
    return index_params(BAD_STRINGS);
}

ParameterizedTest(size_t *index, train, set_str_rejects, .init = setup_train,
                  .fini = teardown_train)
{
    const bad_str *c = &bad_strings[*index];
    snapshot before;
    set_non_defaults();
    take(&before);
    int rc = llmem_train_set_str(train, c->key, c->value);
    if (c->status != 0)
        cr_expect_eq(rc, c->status, "key %d '%s': %d, expected %d", c->key, c->value, rc,
                     c->status);
    else
        cr_expect_lt(rc, 0, "key %d '%s' accepted", c->key, c->value);
    cr_expect_str_neq(llmem_ctx_error(ctx), "", "key %d '%s': no message", c->key, c->value);
    expect_unchanged(&before, c->value);
}

typedef struct bad_real {
    int key;
    double value;
} bad_real;

static const bad_real bad_reals[] = {
    { LLMEM_TRAIN_DROPOUT, NAN },
    { LLMEM_TRAIN_DROPOUT, INFINITY },
    { LLMEM_TRAIN_DROPOUT, -INFINITY },
    { LLMEM_TRAIN_DROPOUT, -0.01 },
    { LLMEM_TRAIN_DROPOUT, -1e-300 },
    { LLMEM_TRAIN_DROPOUT, 1.0 },
    { LLMEM_TRAIN_DROPOUT, 1.0000001 },
    { LLMEM_TRAIN_DROPOUT, 2.0 },
    { LLMEM_TRAIN_DROPOUT, 1e300 },
    { LLMEM_TRAIN_LORA_DROPOUT, 1.0 },
    { LLMEM_TRAIN_LORA_DROPOUT, -0.5 },
    { LLMEM_TRAIN_LORA_DROPOUT, NAN },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, NAN },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, INFINITY },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, -0.5 },
};
#define BAD_REALS (sizeof bad_reals / sizeof bad_reals[0])

ParameterizedTestParameters(train, set_double_rejects)
{
    return index_params(BAD_REALS);
}

ParameterizedTest(size_t *index, train, set_double_rejects, .init = setup_train,
                  .fini = teardown_train)
{
    const bad_real *c = &bad_reals[*index];
    snapshot before;
    char what[64];
    set_non_defaults();
    take(&before);
    snprintf(what, sizeof what, "key %d = %g", c->key, c->value);
    int rc = llmem_train_set_double(train, c->key, c->value);
    cr_expect_eq(rc, LLMEM_ERANGE, "%s: %d", what, rc);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->key == LLMEM_TRAIN_DROPOUT ? "dropout"
                                                    : c->key == LLMEM_TRAIN_LORA_DROPOUT
                                                        ? "lora-dropout"
                                                        : "article-tmp-factor"),
                       "%s: message '%s' does not name the field", what, llmem_ctx_error(ctx));
    expect_unchanged(&before, what);
}

/* Dropout 1 is the first value rejected: everything below it is accepted. */
Test(train, dropout_bounds, .init = setup_train, .fini = teardown_train)
{
    double below_one = nextafter(1.0, 0.0);
    cr_expect_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, below_one), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == below_one);
    cr_expect_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 1.0), LLMEM_ERANGE);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == below_one);
    /* An integer on a real field is that real (since 0.1.0; C++'s set(key, 0)
     * relies on it), checked and named as one. */
    int object = 0, key = 0;
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_DROPOUT, 1), LLMEM_ERANGE);
    cr_expect_str_eq(llmem_ctx_error(ctx), "dropout: value 1 out of range [0, 1)");
    cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
    cr_expect(object == LLMEM_OBJECT_TRAIN && key == LLMEM_TRAIN_DROPOUT);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_DROPOUT, -2), LLMEM_ERANGE);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == below_one);
    cr_expect_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, -0.5), LLMEM_ERANGE);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == below_one);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_DROPOUT, 0), LLMEM_OK);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == 0.0);
}

/* -1, or "model" as text, is the default back: each site at the model's own
 * probability. Only the dropout field takes it, and only spelled so. */
Test(train, dropout_model_own, .init = setup_train, .fini = teardown_train)
{
    static const char *const ways[] = { "int", "double", "text -1", "text model" };
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 0.2), LLMEM_OK);
        int rc = i == 0   ? llmem_train_set_int(train, LLMEM_TRAIN_DROPOUT, -1)
                 : i == 1 ? llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, -1.0)
                 : i == 2 ? llmem_train_set_str(train, LLMEM_TRAIN_DROPOUT, "-1")
                          : llmem_train_set_str(train, LLMEM_TRAIN_DROPOUT, "model");
        cr_expect_eq(rc, LLMEM_OK, "%s: %s", ways[i], llmem_ctx_error(ctx));
        cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == -1.0, "%s", ways[i]);
    }
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_DROPOUT, "Model"), LLMEM_EINVAL);
    cr_expect_str_eq(llmem_ctx_error(ctx), "dropout: 'Model' is not a decimal number");
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_LORA_DROPOUT, "model"), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_set_double(train, LLMEM_TRAIN_LORA_DROPOUT, -1.0), LLMEM_ERANGE);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_ARTICLE_TMP_FACTOR, -1), LLMEM_ERANGE);
    cr_expect(get_double(LLMEM_TRAIN_DROPOUT) == -1.0);
}

typedef struct bad_int {
    int key;
    int64_t value;
    const char *name; /* how the message must name the field */
} bad_int;

static const bad_int bad_ints[] = {
    { LLMEM_TRAIN_BATCH, 0, "batch" },
    { LLMEM_TRAIN_BATCH, -1, "batch" },
    { LLMEM_TRAIN_BATCH, INT64_MIN, "batch" },
    { LLMEM_TRAIN_BATCH, INT64_MAX, "batch" },
    { LLMEM_TRAIN_SEQ, 0, "seq" },
    { LLMEM_TRAIN_SEQ, -512, "seq" },
    { LLMEM_TRAIN_PRECISION, 0, "precision" },
    { LLMEM_TRAIN_PRECISION, LLMEM_PRECISION_BF16_AUTOCAST + 1, "precision" },
    { LLMEM_TRAIN_OPTIMIZER, 0, "optimizer" },
    { LLMEM_TRAIN_OPTIMIZER, 14, "optimizer" },
    { LLMEM_TRAIN_OPTIMIZER_IMPL, 0, "optimizer-impl" },
    { LLMEM_TRAIN_OPTIMIZER_IMPL, 4, "optimizer-impl" },
    { LLMEM_TRAIN_GRAD_CKPT, 5, "grad-ckpt" },
    { LLMEM_TRAIN_ATTENTION, 0, "attention" },
    { LLMEM_TRAIN_ATTENTION, 4, "attention" },
    { LLMEM_TRAIN_METHOD, 5, "method" },
    { LLMEM_TRAIN_LORA_RANK, 0, "lora-rank" },
    { LLMEM_TRAIN_LORA_TARGETS, 0, "lora-targets" },
    { LLMEM_TRAIN_LORA_TARGETS, 512, "lora-targets" },
    { LLMEM_TRAIN_LORA_TARGETS, -1, "lora-targets" },
    { LLMEM_TRAIN_FROZEN_LAYERS, -1, "freeze-layers" },
    { LLMEM_TRAIN_LOSS, 3, "loss" },
    { LLMEM_TRAIN_GRAD_ACCUM, 0, "grad-accum" },
    { LLMEM_TRAIN_FORMULA, 3, "formula" },
    { LLMEM_TRAIN_ARTICLE_PARAM_BYTES, 0, "article-param-bytes" },
};
#define BAD_INTS (sizeof bad_ints / sizeof bad_ints[0])

ParameterizedTestParameters(train, set_int_rejects)
{
    return index_params(BAD_INTS);
}

ParameterizedTest(size_t *index, train, set_int_rejects, .init = setup_train,
                  .fini = teardown_train)
{
    const bad_int *c = &bad_ints[*index];
    snapshot before;
    set_non_defaults();
    take(&before);
    int rc = llmem_train_set_int(train, c->key, c->value);
    cr_expect_eq(rc, LLMEM_ERANGE, "%s = %" PRId64 ": %d", c->name, c->value, rc);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->name), "%s: message '%s'", c->name,
                       llmem_ctx_error(ctx));
    expect_unchanged(&before, c->name);
}

Test(train, unknown_keys_and_wrong_kinds, .init = setup_train, .fini = teardown_train)
{
    static const int bad_keys[] = { 0, -1, LLMEM_TRAIN_EXPERTS_IMPL + 1, LLMEM_TRAIN_EXPERTS_IMPL + 2,
                                    1000 };
    snapshot before;
    set_non_defaults();
    take(&before);
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        cr_expect_eq(llmem_train_set_int(train, bad_keys[i], 1), LLMEM_EINVAL, "key %d",
                     bad_keys[i]);
        cr_expect_eq(llmem_train_set_double(train, bad_keys[i], 0.5), LLMEM_EINVAL, "key %d",
                     bad_keys[i]);
        cr_expect_eq(llmem_train_set_str(train, bad_keys[i], "1"), LLMEM_EINVAL, "key %d",
                     bad_keys[i]);
    }
    /* A real value for an integer field. */
    cr_expect_eq(llmem_train_set_double(train, LLMEM_TRAIN_BATCH, 4.0), LLMEM_EINVAL);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "batch"), "'%s'", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_train_set_double(train, LLMEM_TRAIN_PRECISION, 1.0), LLMEM_EINVAL);
    /* NULL text. */
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_METHOD, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_BATCH, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_DROPOUT, NULL), LLMEM_EINVAL);
    expect_unchanged(&before, "unknown keys");
}

Test(train, null_handles)
{
    llmem_ctx *c = NULL;
    llmem_train *t = NULL;
    cr_assert_eq(llmem_ctx_new(&c, NULL), LLMEM_OK);
    cr_expect_eq(llmem_train_new(c, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_new(NULL, &t), LLMEM_EINVAL);
    cr_expect_null(t);
    cr_expect_eq(llmem_train_set_int(NULL, LLMEM_TRAIN_BATCH, 1), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_set_double(NULL, LLMEM_TRAIN_DROPOUT, 0.1), LLMEM_EINVAL);
    cr_expect_eq(llmem_train_set_str(NULL, LLMEM_TRAIN_METHOD, "lora"), LLMEM_EINVAL);
    llmem_train_free(NULL);
    llmem_ctx_free(c);
}

/* A success after a failure clears the message; two setups share nothing. */
Test(train, messages_and_independence, .init = setup_train, .fini = teardown_train)
{
    llmem_train *other = NULL;
    cr_assert_eq(llmem_train_new(ctx, &other), LLMEM_OK);
    cr_expect_neq(llmem_train_set_str(train, LLMEM_TRAIN_METHOD, "prefix"), LLMEM_OK);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "prefix"), "'%s'", llmem_ctx_error(ctx));
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "method"), "'%s'", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_METHOD, "lora"), LLMEM_OK);
    cr_expect_str_empty(llmem_ctx_error(ctx));
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_BATCH, 32), LLMEM_OK);
    int64_t v = 0;
    cr_assert_eq(llmem_train_get_int(other, LLMEM_TRAIN_BATCH, &v), LLMEM_OK);
    cr_expect_eq(v, 1, "a second setup saw the first one's batch");
    cr_assert_eq(llmem_train_get_int(other, LLMEM_TRAIN_METHOD, &v), LLMEM_OK);
    cr_expect_eq(v, LLMEM_METHOD_FULL);
    llmem_train_free(other);
}

/* Names in messages for an unknown LoRA module. */
Test(train, lora_module_message, .init = setup_train, .fini = teardown_train)
{
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_LORA_TARGETS, "q_proj,w_pack"),
                 LLMEM_ENOTFOUND);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "w_pack"), "'%s'",
                       llmem_ctx_error(ctx));
    cr_expect_eq(get_int(LLMEM_TRAIN_LORA_TARGETS), LLMEM_LORA_Q | LLMEM_LORA_V);
}

Test(train, field_info_and_value_names, .init = setup_train, .fini = teardown_train)
{
    const char *name = NULL;
    int64_t lo = 0, hi = 0;
    int real = -1;
    cr_assert_eq(llmem_train_field_info(LLMEM_TRAIN_LORA_RANK, &name, &lo, &hi, &real), LLMEM_OK);
    cr_expect_str_eq(name, "lora-rank");
    cr_expect_eq(real, 0);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_LORA_RANK, hi), LLMEM_OK);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_LORA_RANK, hi + 1), LLMEM_ERANGE);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_LORA_RANK, lo - 1), LLMEM_ERANGE);
    cr_assert_eq(llmem_train_field_info(LLMEM_TRAIN_DROPOUT, &name, NULL, NULL, &real), LLMEM_OK);
    cr_expect_str_eq(name, "dropout");
    cr_expect_eq(real, 1);
    cr_expect_eq(llmem_train_field_info(9999, NULL, NULL, NULL, NULL), LLMEM_EINVAL);
    /* every optimizer value has a name that set_str maps back to it */
    cr_assert_eq(llmem_train_field_info(LLMEM_TRAIN_OPTIMIZER, NULL, &lo, &hi, NULL), LLMEM_OK);
    for (int64_t v = lo; v <= hi; v++) {
        const char *opt = llmem_train_value_name(LLMEM_TRAIN_OPTIMIZER, v);
        if (opt == NULL)
            continue; /* a value kept free in the enumeration */
        cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, opt), LLMEM_OK);
        cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER), v, "%s", opt);
    }
    cr_expect_str_eq(llmem_train_value_name(LLMEM_TRAIN_PRECISION, LLMEM_PRECISION_BF16_MIXED),
                     "bf16-mixed");
    cr_expect_null(llmem_train_value_name(LLMEM_TRAIN_BATCH, 4), "batch is not enumerated");
    cr_expect_null(llmem_train_value_name(LLMEM_TRAIN_LORA_TARGETS, 1), "a bitmask, not a name");
}

/* A Trainer optim name sets the implementation it runs; our names and the
 * Trainer names that imply none leave it; set by number, nothing changes it. */
Test(train, trainer_names_imply_the_implementation, .init = setup_train, .fini = teardown_train)
{
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "adamw_torch"), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER), LLMEM_OPTIMIZER_ADAMW);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FOREACH);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "adamw"), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FOREACH);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "adamw_torch_fused"), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FUSED);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER_IMPL, "forloop"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "paged_adamw_8bit"), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER), LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FORLOOP);
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_OPTIMIZER, LLMEM_OPTIMIZER_ADAMW), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FORLOOP);
    /* a rejected name changes neither field */
    cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "adamw_torch_npu_fused"),
                 LLMEM_ENOTFOUND);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER), LLMEM_OPTIMIZER_ADAMW);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FORLOOP);
    /* an implementation the caller set wins over one a name implies, in any
     * order, as on the command line */
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "adamw_torch_fused"), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_OPTIMIZER_IMPL), LLMEM_OPTIMIZER_IMPL_FORLOOP);
    /* the value's name stays ours */
    cr_expect_str_eq(llmem_train_value_name(LLMEM_TRAIN_OPTIMIZER, LLMEM_OPTIMIZER_LION_32BIT),
                     "lion-32bit");
}

/* ------------------------------------------------------------------ */
/* The GPU: a name llmem_gpu_find() accepts, read back as catalog index + 1. */

Test(train, gpu_by_name, .init = setup_train, .fini = teardown_train)
{
    size_t h100 = SIZE_MAX, a100 = SIZE_MAX;
    cr_assert_eq(llmem_gpu_find(NULL, "H100-SXM", &h100), LLMEM_OK);
    cr_assert_eq(llmem_gpu_find(NULL, "A100-80GB", &a100), LLMEM_OK);
    /* Aliases and the driver's spelling, as llmem_gpu_find() folds them. */
    static const char *const h100_names[] = { "H100-SXM", "H100", "h100-80gb",
                                              "NVIDIA H100 80GB HBM3" };
    for (size_t i = 0; i < sizeof h100_names / sizeof h100_names[0]; i++) {
        cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_GPU, 0), LLMEM_OK);
        cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_GPU, h100_names[i]), LLMEM_OK,
                     "'%s': %s", h100_names[i], llmem_ctx_error(ctx));
        cr_expect_eq(get_int(LLMEM_TRAIN_GPU), (int64_t)h100 + 1, "'%s'", h100_names[i]);
    }
    cr_expect_str_eq(llmem_train_value_name(LLMEM_TRAIN_GPU, (int64_t)h100 + 1), "H100-SXM");
    /* By number, and back to none. */
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_GPU, (int64_t)a100 + 1), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_GPU), (int64_t)a100 + 1);
    cr_assert_eq(llmem_train_set_int(train, LLMEM_TRAIN_GPU, 0), LLMEM_OK);
    cr_expect_eq(get_int(LLMEM_TRAIN_GPU), 0);
    cr_expect_null(llmem_train_value_name(LLMEM_TRAIN_GPU, 0), "0 is no GPU, not a name");
}

Test(train, gpu_names_are_the_catalogs, .init = setup_train, .fini = teardown_train)
{
    const char *name = NULL;
    int64_t lo = -1, hi = -1, value = -1;
    cr_assert_eq(llmem_train_field_info(LLMEM_TRAIN_GPU, &name, &lo, &hi, NULL), LLMEM_OK);
    cr_expect_str_eq(name, "gpu");
    cr_expect_eq(lo, 0);
    cr_expect_eq(hi, (int64_t)llmem_gpu_count());
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        const char *choice = llmem_train_choice(LLMEM_TRAIN_GPU, g, &value);
        cr_assert_not_null(choice, "choice %zu", g);
        cr_expect_str_eq(choice, llmem_gpu_name(g));
        cr_expect_eq(value, (int64_t)g + 1, "%s", choice);
        cr_expect_str_eq(llmem_train_value_name(LLMEM_TRAIN_GPU, (int64_t)g + 1),
                         llmem_gpu_name(g));
    }
    cr_expect_null(llmem_train_choice(LLMEM_TRAIN_GPU, llmem_gpu_count(), NULL));
}

Test(train, gpu_rejects_say_why, .init = setup_train, .fini = teardown_train)
{
    static const struct {
        const char *name;
        int status;
        const char *needle;
    } cases[] = {
        { "bogus", LLMEM_ENOTFOUND, "gpu: unknown GPU 'bogus' (see `llmem gpus`)" },
        { "", LLMEM_ENOTFOUND, "unknown GPU ''" },
        { "A100", LLMEM_ENOTFOUND, "did you mean A100-40GB, A100-80GB?" },
        { "3g.40gb", LLMEM_ENOTFOUND, "unknown GPU '3g.40gb'" },
        { NULL, LLMEM_EINVAL, "gpu" },
    };
    size_t h200 = 0;
    cr_assert_eq(llmem_gpu_find(NULL, "H200", &h200), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_GPU, "H200"), LLMEM_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int object = 0, key = 0;
        cr_expect_eq(llmem_train_set_str(train, LLMEM_TRAIN_GPU, cases[i].name), cases[i].status,
                     "'%s'", cases[i].name ? cases[i].name : "(null)");
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), cases[i].needle), "'%s'",
                           llmem_ctx_error(ctx));
        /* The message is about the field, so a caller can name its own spelling. */
        cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK, "%s",
                     llmem_ctx_error(ctx));
        cr_expect_eq(object, LLMEM_OBJECT_TRAIN);
        cr_expect_eq(key, LLMEM_TRAIN_GPU);
        cr_expect_eq(get_int(LLMEM_TRAIN_GPU), (int64_t)h200 + 1, "a failed set changed it");
    }
    static const int64_t bad[] = { -1, (int64_t)1 << 40 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_GPU, bad[i]), LLMEM_ERANGE);
    int64_t hi = 0;
    llmem_train_field_info(LLMEM_TRAIN_GPU, NULL, NULL, &hi, NULL);
    cr_expect_eq(llmem_train_set_int(train, LLMEM_TRAIN_GPU, hi + 1), LLMEM_ERANGE);
    cr_expect_eq(get_int(LLMEM_TRAIN_GPU), (int64_t)h200 + 1);
}

/* ------------------------------------------------------------------ */
/* Fields the setup does not read: llmem_train_unread() says why, and an
 * estimate refuses one set away from its default, naming it. */

typedef struct unread_case {
    int setting;          /* a field that decides what is read ... */
    const char *value;    /* ... set to this */
    int key;              /* the field tried */
    const char *tried;    /* set to this */
    const char *why;      /* part of the reason, or NULL: read */
} unread_case;

static const unread_case unread_cases[] = {
    { LLMEM_TRAIN_METHOD, "full", LLMEM_TRAIN_LORA_RANK, "16", "method lora or qlora" },
    { LLMEM_TRAIN_METHOD, "freeze", LLMEM_TRAIN_LORA_DROPOUT, "0.1", "method lora or qlora" },
    { LLMEM_TRAIN_METHOD, "full", LLMEM_TRAIN_LORA_TARGETS, "q_proj", "method lora or qlora" },
    { LLMEM_TRAIN_METHOD, "lora", LLMEM_TRAIN_LORA_RANK, "16", NULL },
    { LLMEM_TRAIN_METHOD, "qlora", LLMEM_TRAIN_LORA_DROPOUT, "0.1", NULL },
    { LLMEM_TRAIN_METHOD, "lora", LLMEM_TRAIN_FROZEN_LAYERS, "2", "method freeze" },
    { LLMEM_TRAIN_METHOD, "freeze", LLMEM_TRAIN_FROZEN_LAYERS, "2", NULL },
    { LLMEM_TRAIN_FORMULA, "phased", LLMEM_TRAIN_ARTICLE_PARAM_BYTES, "2", "formula article" },
    { LLMEM_TRAIN_FORMULA, "phased", LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "1.5", "formula article" },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "1.5", NULL },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_DROPOUT, "0.1", "formula phased" },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_ATTENTION, "eager", "formula phased" },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_METHOD, "lora", "formula phased" },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_GRAD_ACCUM, "4", "formula phased" },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_BATCH, "4", NULL },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_OPTIMIZER, "lion", NULL },
    { LLMEM_TRAIN_FORMULA, "article", LLMEM_TRAIN_GPU, "A100-80GB", NULL },
    { LLMEM_TRAIN_OPTIMIZER, "lion", LLMEM_TRAIN_OPTIMIZER_IMPL, "foreach", "torch.optim" },
    { LLMEM_TRAIN_OPTIMIZER, "adafactor", LLMEM_TRAIN_OPTIMIZER_IMPL, "forloop", "torch.optim" },
    { LLMEM_TRAIN_OPTIMIZER, "sgd", LLMEM_TRAIN_OPTIMIZER_IMPL, "foreach", NULL },
    { LLMEM_TRAIN_OPTIMIZER, "adam", LLMEM_TRAIN_OPTIMIZER_IMPL, "forloop", NULL },
};

static int run_default_model(void)
{
    llmem_model *m;
    llmem_estimate *e;
    cr_assert_eq(llmem_model_new_preset(ctx, "meta-llama/Llama-3.2-1B", &m), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    int rc = llmem_estimate_run(e, m, train);
    llmem_estimate_free(e);
    llmem_model_free(m);
    return rc;
}

Test(train, unread_fields_are_refused_when_set, .init = setup_train, .fini = teardown_train)
{
    for (size_t i = 0; i < sizeof unread_cases / sizeof unread_cases[0]; i++) {
        const unread_case *c = &unread_cases[i];
        const char *name;
        llmem_train_field_info(c->key, &name, NULL, NULL, NULL);
        llmem_train_free(train);
        cr_assert_eq(llmem_train_new(ctx, &train), LLMEM_OK);
        cr_assert_eq(llmem_train_set_str(train, c->setting, c->value), LLMEM_OK);
        /* at its default, whatever the setting: accepted, though unread */
        cr_expect_eq(run_default_model(), LLMEM_OK, "case %zu: %s", i, llmem_ctx_error(ctx));
        cr_assert_eq(llmem_train_set_str(train, c->key, c->tried), LLMEM_OK, "case %zu", i);
        const char *why = llmem_train_unread(train, c->key);
        int rc = run_default_model();
        if (c->why == NULL) {
            cr_expect_null(why, "case %zu: %s unread: %s", i, name, why);
            cr_expect_eq(rc, LLMEM_OK, "case %zu: %s", i, llmem_ctx_error(ctx));
            continue;
        }
        cr_expect(why != NULL && strstr(why, c->why) != NULL, "case %zu: %s: %s", i, name,
                  why ? why : "(read)");
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "case %zu: %s %s runs", i, name, c->tried);
        int object = 0, key = 0;
        cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
        cr_expect(object == LLMEM_OBJECT_TRAIN && key == c->key, "case %zu: field %d/%d", i,
                  object, key);
        cr_expect(strncmp(llmem_ctx_error(ctx), name, strlen(name)) == 0 &&
                      strstr(llmem_ctx_error(ctx), c->why) != NULL,
                  "case %zu: %s", i, llmem_ctx_error(ctx));
        /* the message says what the default is, where it has a plain value */
        if (c->key == LLMEM_TRAIN_LORA_RANK)
            cr_expect(strstr(llmem_ctx_error(ctx), "leave lora-rank at its default (8)") != NULL,
                      "%s", llmem_ctx_error(ctx));
        if (c->key == LLMEM_TRAIN_ATTENTION)
            cr_expect(strstr(llmem_ctx_error(ctx), "at its default (sdpa)") != NULL, "%s",
                      llmem_ctx_error(ctx));
    }
}

Test(train, unread_at_default_and_implied_are_accepted, .init = setup_train,
     .fini = teardown_train)
{
    /* A Trainer optim name implies an implementation: not the caller's
     * setting, so the article (which reads only the optimizer) runs. */
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_FORMULA, "article"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_OPTIMIZER, "adamw_torch"), LLMEM_OK);
    cr_expect_not_null(llmem_train_unread(train, LLMEM_TRAIN_OPTIMIZER_IMPL));
    cr_expect_eq(run_default_model(), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    /* set back to its default, the model's own: nothing is ignored; a
     * probability, 0 included, would be */
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 0.1), LLMEM_OK);
    cr_expect_eq(run_default_model(), LLMEM_EINCONSISTENT);
    cr_assert_eq(llmem_train_set_double(train, LLMEM_TRAIN_DROPOUT, 0.0), LLMEM_OK);
    cr_expect_eq(run_default_model(), LLMEM_EINCONSISTENT);
    cr_expect_str_eq(llmem_ctx_error(ctx),
                     "dropout: 0 is not read: it needs formula phased (the default): the "
                     "article's sum reads only the model's parameter count, batch, seq, "
                     "optimizer, gpu and the article-* fields, and the formula is article; "
                     "leave dropout at its default (model: the model's own)");
    cr_assert_eq(llmem_train_set_str(train, LLMEM_TRAIN_DROPOUT, "model"), LLMEM_OK);
    cr_expect_eq(run_default_model(), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    /* what the setup reads; unknown keys and NULL read as NULL */
    cr_expect_null(llmem_train_unread(train, LLMEM_TRAIN_SEQ));
    cr_expect_null(llmem_train_unread(train, 0));
    cr_expect_null(llmem_train_unread(train, 99));
    cr_expect_null(llmem_train_unread(NULL, LLMEM_TRAIN_DROPOUT));
}
