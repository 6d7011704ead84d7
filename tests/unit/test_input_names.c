/* SPDX-License-Identifier: MIT */
/* Names as users type them: messages long enough for every choice list, a
 * "did you mean" for a near miss, presets in any case, PEFT's "all-linear",
 * and the LoRA targets named in the model's family so that they read back
 * to the same estimate. White-box for the suggestion and the cut message. */
#include "core/ctx.h"
#include "core/names.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <llmem.h>
#include <stdio.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

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

TestSuite(input_names, .init = setup_ctx, .fini = teardown_ctx);

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* ---- messages: the whole choice list fits ------------------------------- */

Test(input_names, an_unknown_optimizer_lists_every_name_and_a_suggestion)
{
    llmem_train *t;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER, "adamw8"), LLMEM_ENOTFOUND);
    const char *msg = llmem_ctx_error(ctx);
    cr_expect(strstr(msg, "did you mean 'adamw-8bit'?") != NULL, "%s", msg);
    /* The last names of the list: cut at 255 bytes before. */
    cr_expect(ends_with(msg, "paged_lion_8bit|paged_lion_32bit)"), "%s", msg);
    llmem_train_free(t);
}

Test(input_names, an_unknown_module_lists_every_name)
{
    llmem_train *t;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, "all_linears_x"),
                 LLMEM_ENOTFOUND);
    const char *msg = llmem_ctx_error(ctx);
    cr_expect(ends_with(msg, "|linear_fc2|all-linear)"), "%s", msg);
    llmem_train_free(t);
}

Test(input_names, a_message_too_long_ends_in_an_ellipsis_after_a_word)
{
    char text[3 * LLMEM_ERROR_CAP];
    size_t used = 0;
    while (used + 12 < sizeof text)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s", "word|another");
    cr_assert_eq(llmem__fail(ctx, LLMEM_EINVAL, "x: %s", text), LLMEM_EINVAL);
    const char *msg = llmem_ctx_error(ctx);
    cr_expect_lt(strlen(msg), (size_t)LLMEM_ERROR_CAP);
    cr_expect(ends_with(msg, "word...") || ends_with(msg, "another..."), "%s",
              msg + strlen(msg) - 20);
}

Test(input_names, one_overlong_word_is_cut_with_an_ellipsis)
{
    char word[LLMEM_ERROR_CAP + 100];
    memset(word, 'a', sizeof word - 1);
    word[sizeof word - 1] = '\0';
    llmem__fail(ctx, LLMEM_EINVAL, "%s", word);
    const char *msg = llmem_ctx_error(ctx);
    cr_expect_eq(strlen(msg), (size_t)LLMEM_ERROR_CAP - 1);
    cr_expect(ends_with(msg, "aaa..."));
}

/* ---- "did you mean" ------------------------------------------------------ */

typedef struct suggestion {
    int key;
    const char *typed, *expected; /* NULL: no suggestion */
} suggestion;

static const suggestion suggestions[] = {
    { LLMEM_TRAIN_OPTIMIZER, "adamw8", "adamw-8bit" },
    { LLMEM_TRAIN_OPTIMIZER, "Adam_W", "adamw" },
    { LLMEM_TRAIN_OPTIMIZER, "lion8", "lion-8bit" },
    { LLMEM_TRAIN_METHOD, "Lora", "lora" },
    { LLMEM_TRAIN_METHOD, "qlroa", "qlora" },
    { LLMEM_TRAIN_ATTENTION, "sdap", "sdpa" },
    { LLMEM_TRAIN_GRAD_CKPT, "nonreentrant", "non-reentrant" },
    { LLMEM_TRAIN_LORA_TARGETS, "Q_PROJ", "q_proj" },
    { LLMEM_TRAIN_LORA_TARGETS, "all_linear", "all-linear" },
    { LLMEM_TRAIN_LORA_TARGETS, "q_proj,vproj", "v_proj" },
    { LLMEM_TRAIN_OPTIMIZER, "zzzzzzzz", NULL },
    { LLMEM_TRAIN_METHOD, "xy", NULL },
    { LLMEM_TRAIN_METHOD, "freeez", "freeze" },
};

Test(input_names, a_near_miss_suggests_the_closest_name)
{
    llmem_train *t;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    for (size_t i = 0; i < N(suggestions); i++) {
        const suggestion *s = &suggestions[i];
        cr_expect_eq(llmem_train_set_str(t, s->key, s->typed), LLMEM_ENOTFOUND, "%s", s->typed);
        const char *msg = llmem_ctx_error(ctx);
        if (s->expected == NULL) {
            cr_expect_null(strstr(msg, "did you mean"), "%s: %s", s->typed, msg);
            continue;
        }
        char want[128];
        snprintf(want, sizeof want, "did you mean '%s'?", s->expected);
        cr_expect(strstr(msg, want) != NULL, "%s: %s", s->typed, msg);
    }
    llmem_train_free(t);
}

static const char *const fruit[] = { "apple", "apricot", "banana" };

static const char *fruit_at(const void *table, size_t i)
{
    return ((const char *const *)table)[i];
}

Test(input_names, suggest_ranks_equal_then_prefix_then_edits)
{
    cr_expect_eq(llmem_names_suggest("APPLE", fruit_at, fruit, N(fruit)), 0);
    cr_expect_eq(llmem_names_suggest("apr", fruit_at, fruit, N(fruit)), 1, "a prefix");
    cr_expect_eq(llmem_names_suggest("bananna", fruit_at, fruit, N(fruit)), 2, "one edit");
    cr_expect_eq(llmem_names_suggest("ap", fruit_at, fruit, N(fruit)), N(fruit),
                 "a prefix under 3 characters and 3 edits away: none");
    cr_expect_eq(llmem_names_suggest("", fruit_at, fruit, N(fruit)), N(fruit));
    cr_expect_eq(llmem_names_suggest(NULL, fruit_at, fruit, N(fruit)), N(fruit));
}

/* ---- presets in any case ------------------------------------------------- */

static uint64_t params_of(const char *preset)
{
    llmem_model *m;
    uint64_t n = 0;
    cr_assert_eq(llmem_model_new_preset(ctx, preset, &m), LLMEM_OK, "%s: %s", preset,
                 llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_param_count(m, &n), LLMEM_OK);
    llmem_model_free(m);
    return n;
}

Test(input_names, presets_match_in_any_case)
{
    cr_expect_eq(params_of("llama-3.1-8b"), params_of("meta-llama/Llama-3.1-8B"));
    cr_expect_eq(params_of("MISTRALAI/MISTRAL-7B-V0.1"), params_of("mistralai/Mistral-7B-v0.1"));
    cr_expect_eq(params_of("GPT2-XL"), params_of("openai-community/gpt2-xl"));
}

static void fold(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
    out[i] = '\0';
}

/* Each name a preset answers to (full id, part after the slash), folded: two
 * equal would make a name ambiguous. */
Test(input_names, no_two_presets_fold_to_the_same_name)
{
    size_t n = llmem_preset_count();
    for (size_t i = 0; i < 2 * n; i++)
        for (size_t j = i + 1; j < 2 * n; j++) {
            char a[128], b[128];
            const char *x = llmem_preset_name(i / 2), *y = llmem_preset_name(j / 2);
            if (i / 2 == j / 2)
                continue;
            fold(i % 2 && strchr(x, '/') ? strchr(x, '/') + 1 : x, a, sizeof a);
            fold(j % 2 && strchr(y, '/') ? strchr(y, '/') + 1 : y, b, sizeof b);
            cr_expect_str_neq(a, b, "%s and %s", x, y);
        }
}

Test(input_names, an_unknown_preset_suggests_the_closest)
{
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new_preset(ctx, "mistral-7b", &m), LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "did you mean 'mistralai/Mistral-7B-v0.1'?") != NULL,
              "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_new_preset(ctx, "Llama-3.1-8", &m), LLMEM_ENOTFOUND);
    cr_expect(strstr(llmem_ctx_error(ctx), "did you mean 'meta-llama/Llama-3.1-8B'?") != NULL,
              "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_new_preset(ctx, "bogus", &m), LLMEM_ENOTFOUND);
    cr_expect_null(strstr(llmem_ctx_error(ctx), "did you mean"), "%s", llmem_ctx_error(ctx));
}

/* ---- LoRA targets: all-linear, and names that read back -------------------- */

static llmem_train *lora(const char *targets, const char *experts)
{
    llmem_train *t;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_METHOD, "lora"), LLMEM_OK);
    if (targets != NULL)
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, targets), LLMEM_OK,
                     "%s", llmem_ctx_error(ctx));
    if (experts != NULL)
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_EXPERTS_IMPL, experts), LLMEM_OK);
    return t;
}

static int modules_of(llmem_train *t, llmem_model *m, char *buf, size_t cap)
{
    return llmem_train_lora_modules(t, m, buf, cap, NULL);
}

Test(input_names, all_linear_is_every_linear_of_the_decoder_layers)
{
    llmem_model *m;
    llmem_estimate *e;
    uint64_t trainable = 0;
    char names[256];
    cr_assert_eq(llmem_model_new_preset(ctx, "meta-llama/Llama-3.1-8B", &m), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    llmem_train *t = lora("all-linear", NULL);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PARAMS_TRAINABLE, &trainable), LLMEM_OK);
    /* PEFT's print_trainable_parameters for Llama-3.1-8B, r = 8, all-linear:
     * 32 x 8 x (2 x 8192 + 2 x 5120 + 3 x 18432). */
    cr_expect_eq(trainable, 20971520);
    cr_assert_eq(modules_of(t, m, names, sizeof names), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_str_eq(names, "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj");
    llmem_train_free(t);
    llmem_model_free(m);

    cr_assert_eq(llmem_model_new_preset(ctx, "gpt2", &m), LLMEM_OK);
    t = lora("all-linear", NULL);
    cr_assert_eq(modules_of(t, m, names, sizeof names), LLMEM_OK);
    cr_expect_str_eq(names, "c_attn,c_proj,c_fc", "GPT-2's Conv1D modules");
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_estimate_free(e);
}

Test(input_names, the_default_targets_are_named_in_the_family)
{
    static const struct {
        const char *preset, *names;
    } rows[] = {
        { "gpt2", "c_attn" },
        { "meta-llama/Llama-3.1-8B", "q_proj,v_proj" },
        { "microsoft/Phi-3-mini-4k-instruct", "qkv_proj" },
        { "bigscience/bloom-560m", "query_key_value" },
        { "facebook/opt-125m", "q_proj,v_proj" },
    };
    for (size_t i = 0; i < N(rows); i++) {
        llmem_model *m;
        char names[256];
        size_t len = 0;
        cr_assert_eq(llmem_model_new_preset(ctx, rows[i].preset, &m), LLMEM_OK);
        llmem_train *t = lora(NULL, NULL);
        cr_assert_eq(llmem_train_lora_modules(t, m, NULL, 0, &len), LLMEM_OK, "size only");
        cr_expect_eq(len, strlen(rows[i].names));
        cr_expect_eq(llmem_train_lora_modules(t, m, names, len, NULL), LLMEM_EBUFFER);
        cr_assert_eq(llmem_train_lora_modules(t, m, names, len + 1, NULL), LLMEM_OK);
        cr_expect_str_eq(names, rows[i].names, "%s", rows[i].preset);
        llmem_train_free(t);
        llmem_model_free(m);
    }
}

Test(input_names, roles_no_names_select_exactly_are_refused)
{
    llmem_model *m;
    char names[64];
    cr_assert_eq(llmem_model_new_preset(ctx, "gpt2", &m), LLMEM_OK);
    llmem_train *t = lora(NULL, NULL);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, LLMEM_LORA_O), LLMEM_OK);
    cr_expect_eq(modules_of(t, m, names, sizeof names), LLMEM_ENOTSUP, "c_proj is o and down");
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, LLMEM_LORA_O | LLMEM_LORA_DOWN),
                 LLMEM_OK);
    cr_assert_eq(modules_of(t, m, names, sizeof names), LLMEM_OK);
    cr_expect_str_eq(names, "c_proj");
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, LLMEM_LORA_Q_A), LLMEM_OK);
    cr_expect_eq(modules_of(t, m, names, sizeof names), LLMEM_EINCONSISTENT, "none matches");
    llmem_train_free(t);
    llmem_model_free(m);
}

/* The targets named, set again by those names: the same trainable count and
 * peak, or the same refusal. */
static void check_read_back(llmem_model *m, llmem_train *t, const char *label)
{
    llmem_estimate *e;
    char names[256];
    uint64_t a[2] = { 0, 0 }, b[2] = { 0, 0 };
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    int rc = llmem_estimate_run(e, m, t);
    if (rc == LLMEM_OK) {
        llmem_estimate_get_u64(e, LLMEM_EST_PARAMS_TRAINABLE, &a[0]);
        llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &a[1]);
    }
    int named = modules_of(t, m, names, sizeof names);
    if (named == LLMEM_ENOTSUP && strstr(label, "gpt2") != NULL) {
        /* c_proj is both output projections: o or down alone has no name. */
        llmem_estimate_free(e);
        return;
    }
    if (named != LLMEM_OK) {
        cr_expect_neq(rc, LLMEM_OK, "%s: the estimate runs, its targets have no names: %s", label,
                      llmem_ctx_error(ctx));
        llmem_estimate_free(e);
        return;
    }
    llmem_train *again;
    int64_t experts = 0;
    cr_assert_eq(llmem_train_get_int(t, LLMEM_TRAIN_EXPERTS_IMPL, &experts), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &again), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(again, LLMEM_TRAIN_METHOD, "lora"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(again, LLMEM_TRAIN_EXPERTS_IMPL, experts), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(again, LLMEM_TRAIN_LORA_TARGETS, names), LLMEM_OK,
                 "%s: %s: %s", label, names, llmem_ctx_error(ctx));
    cr_expect_eq(llmem_estimate_run(e, m, again), rc, "%s: %s", label, names);
    if (rc == LLMEM_OK) {
        llmem_estimate_get_u64(e, LLMEM_EST_PARAMS_TRAINABLE, &b[0]);
        llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &b[1]);
        cr_expect_eq(a[0], b[0], "%s: %s: trainable", label, names);
        cr_expect_eq(a[1], b[1], "%s: %s: peak", label, names);
    }
    llmem_train_free(again);
    llmem_estimate_free(e);
}

static void check_model(llmem_model *m, const char *label)
{
    char what[600];
    llmem_train *t = lora(NULL, NULL);
    snprintf(what, sizeof what, "%s, default targets", label);
    check_read_back(m, t, what);
    llmem_train_free(t);
    static const char *const impls[] = { "grouped-mm", "loop" };
    for (size_t i = 0; i < N(impls); i++) {
        t = lora("all-linear", impls[i]);
        snprintf(what, sizeof what, "%s, all-linear, experts %s", label, impls[i]);
        check_read_back(m, t, what);
        llmem_train_free(t);
    }
    static const int64_t roles[] = { LLMEM_LORA_Q, LLMEM_LORA_K | LLMEM_LORA_O,
                                     LLMEM_LORA_UP | LLMEM_LORA_DOWN, LLMEM_LORA_GATE };
    for (size_t i = 0; i < N(roles); i++) {
        t = lora(NULL, "loop");
        cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, roles[i]), LLMEM_OK);
        snprintf(what, sizeof what, "%s, roles %lld", label, (long long)roles[i]);
        check_read_back(m, t, what);
        llmem_train_free(t);
    }
}

Test(input_names, every_preset_reads_its_targets_back)
{
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        llmem_model *m;
        cr_assert_eq(llmem_model_new_preset(ctx, llmem_preset_name(i), &m), LLMEM_OK);
        check_model(m, llmem_preset_name(i));
        llmem_model_free(m);
    }
}

#ifdef LLMEM_TEST_HF_CONFIGS
Test(input_names, every_family_config_reads_its_targets_back)
{
    DIR *dir = opendir(LLMEM_TEST_HF_CONFIGS);
    size_t seen = 0;
    cr_assert_not_null(dir, "%s", LLMEM_TEST_HF_CONFIGS);
    for (struct dirent *d; (d = readdir(dir)) != NULL;) {
        char path[1024];
        llmem_model *m;
        if (strstr(d->d_name, ".json") == NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s", LLMEM_TEST_HF_CONFIGS, d->d_name);
        cr_assert_eq(llmem_model_new_hf_config(ctx, path, &m), LLMEM_OK, "%s: %s", path,
                     llmem_ctx_error(ctx));
        check_model(m, d->d_name);
        llmem_model_free(m);
        seen++;
    }
    closedir(dir);
    cr_expect_geq(seen, 10);
}

static llmem_model *config(const char *name)
{
    char path[1024];
    llmem_model *m;
    snprintf(path, sizeof path, "%s/%s", LLMEM_TEST_HF_CONFIGS, name);
    cr_assert_eq(llmem_model_new_hf_config(ctx, path, &m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    return m;
}

Test(input_names, all_linear_with_grouped_experts)
{
    char names[256];
    llmem_model *m = config("Mixtral-8x7B-v0.1.json");
    llmem_train *t = lora("all-linear", "grouped-mm");
    cr_assert_eq(modules_of(t, m, names, sizeof names), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_str_eq(names, "q_proj,k_proj,v_proj,o_proj", "3-D experts are no nn.Linear");
    llmem_train_free(t);
    t = lora("all-linear", "loop");
    cr_assert_eq(modules_of(t, m, names, sizeof names), LLMEM_OK);
    cr_expect_str_eq(names, "q_proj,k_proj,v_proj,o_proj,w1,w3,w2");
    llmem_train_free(t);
    llmem_model_free(m);

    m = config("DeepSeek-V2-Lite.json");
    t = lora("all-linear", "grouped-mm");
    cr_expect_eq(modules_of(t, m, names, sizeof names), LLMEM_ENOTSUP,
                 "dense layers adapted, routed experts not: not modelled");
    cr_expect(strstr(llmem_ctx_error(ctx), "--experts-impl loop") != NULL, "%s",
              llmem_ctx_error(ctx));
    llmem_estimate *e;
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run(e, m, t), LLMEM_ENOTSUP);
    llmem_train_free(t);
    t = lora("all-linear", "loop");
    cr_assert_eq(modules_of(t, m, names, sizeof names), LLMEM_OK);
    cr_expect_str_eq(names,
                     "q_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj,gate_proj,up_proj,down_proj");
    llmem_train_free(t);
    llmem_estimate_free(e);
    llmem_model_free(m);
}
#endif
