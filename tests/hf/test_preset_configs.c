/* SPDX-License-Identifier: MIT */
/*
 * Presets against their checkpoints' config.json, through the public API only.
 *
 * - Every preset whose config.json is in tests/hf/configs/ (the file named as
 *   the id after the organisation) is in the table below; a preset added
 *   without its row fails.
 * - For each row, the preset and the config resolve to the same model: every
 *   model field (each key llmem_model_field_info() knows, integers and reals,
 *   read back with defaults resolved; a row may name one field the config
 *   lacks and the preset sets, with its value), the parameter count, and under LoRA's
 *   defaults the trainable and active parameters and the peak.
 * - Where the repository holds a published count for the checkpoint
 *   (tests/hf/expected_params.csv by config, tests/data/published_params.csv
 *   by preset), the preset's count is that number.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmem.h"

#ifndef HF_TEST_DIR
#error "HF_TEST_DIR (the tests/hf source directory) must be defined"
#endif

#define PATH_CAP 512
/* Past the last model key: keys are never reused, so a scan this far meets every one. */
#define KEY_SCAN_END 256

typedef struct pair {
    const char *preset, *config; /* config: tests/hf/configs/<config>.json */
    /* A field the preset sets where the config.json has no value (it reads
     * 0 there), and the preset's value; 0: none. */
    int only_preset_key;
    int64_t only_preset_value;
} pair;

static const pair pairs[] = {
    { "openai-community/gpt2", "gpt2", 0, 0 },
    { "openai-community/gpt2-xl", "gpt2-xl", 0, 0 },
    { "facebook/opt-125m", "opt-125m", 0, 0 },
    { "facebook/opt-350m", "opt-350m", 0, 0 },
    { "facebook/opt-1.3b", "opt-1.3b", 0, 0 },
    /* BloomConfig has no max_position_embeddings (ALiBi: no position table);
     * the preset keeps the 2048-token sequences BLOOM was trained on (BigScience,
     * arXiv:2211.05100) so that a longer seq is said to be past them. It changes
     * no parameter and no byte of the estimate (checked below). */
    { "bigscience/bloom-560m", "bloom-560m", LLMEM_MODEL_MAX_POSITIONS, 2048 },
    { "meta-llama/Llama-2-7b-hf", "Llama-2-7b-hf", 0, 0 },
    { "meta-llama/Meta-Llama-3-8B", "Meta-Llama-3-8B", 0, 0 },
    { "meta-llama/Llama-3.2-1B", "Llama-3.2-1B", 0, 0 },
    { "mistralai/Mistral-7B-v0.1", "Mistral-7B-v0.1", 0, 0 },
    { "Qwen/Qwen2.5-0.5B", "Qwen2.5-0.5B", 0, 0 },
    { "Qwen/Qwen2.5-7B", "Qwen2.5-7B", 0, 0 },
    { "google/gemma-2-9b", "gemma-2-9b", 0, 0 },
    { "microsoft/Phi-3-mini-4k-instruct", "Phi-3-mini-4k-instruct", 0, 0 },
    { "Qwen/Qwen3-0.6B", "Qwen3-0.6B", 0, 0 },
    { "Qwen/Qwen3-8B", "Qwen3-8B", 0, 0 },
    { "google/gemma-2-2b", "gemma-2-2b", 0, 0 },
    { "mistralai/Mixtral-8x7B-v0.1", "Mixtral-8x7B-v0.1", 0, 0 },
    { "Qwen/Qwen1.5-MoE-A2.7B", "Qwen1.5-MoE-A2.7B", 0, 0 },
    { "deepseek-ai/DeepSeek-V2-Lite", "DeepSeek-V2-Lite", 0, 0 },
    { "bigcode/starcoder2-3b", "starcoder2-3b", 0, 0 },
    { "microsoft/phi-2", "phi-2", 0, 0 },
};
#define PAIR_COUNT (sizeof pairs / sizeof pairs[0])

static void config_path(char *buf, size_t cap, const char *config)
{
    snprintf(buf, cap, HF_TEST_DIR "/configs/%s.json", config);
}

static int file_exists(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    fclose(f);
    return 1;
}

/* The second column of the CSV row whose first column is name; 0 when the
 * file has no such row. */
static uint64_t published(const char *csv, const char *name)
{
    char line[4096];
    size_t len = strlen(name);
    uint64_t count = 0;
    FILE *f = fopen(csv, "r");
    cr_assert_not_null(f, "cannot open %s", csv);
    while (count == 0 && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, name, len) == 0 && line[len] == ',')
            count = strtoull(line + len + 1, NULL, 10);
    fclose(f);
    return count;
}

/* The estimate's figures under LoRA's defaults (rank 8 on the family's default targets). */
typedef struct lora_figures {
    uint64_t trainable, active, peak;
} lora_figures;

static lora_figures lora_estimate(llmem_ctx *ctx, llmem_model *m, const char *what)
{
    llmem_train *t = NULL;
    llmem_estimate *e = NULL;
    lora_figures r = { 0, 0, 0 };
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_METHOD, LLMEM_METHOD_LORA), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    int rc = llmem_estimate_run(e, m, t);
    cr_assert_eq(rc, LLMEM_OK, "%s: LoRA estimate refused (%d: %s)", what, rc,
                 llmem_ctx_error(ctx));
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PARAMS_TRAINABLE, &r.trainable), LLMEM_OK);
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PARAMS_ACTIVE, &r.active), LLMEM_OK);
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &r.peak), LLMEM_OK);
    llmem_estimate_free(e);
    llmem_train_free(t);
    return r;
}

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

/* Indices into the table cross into the test's process, not pointers. */
ParameterizedTestParameters(preset_configs, same_model)
{
    size_t *index = cr_malloc(PAIR_COUNT * sizeof *index);
    for (size_t i = 0; i < PAIR_COUNT; i++)
        index[i] = i;
    return cr_make_param_array(size_t, index, PAIR_COUNT, free_params);
}

ParameterizedTest(size_t *index, preset_configs, same_model)
{
    const pair *pr = &pairs[*index];
    char path[PATH_CAP];
    llmem_ctx *ctx = NULL;
    llmem_model *p = NULL, *c = NULL;
    int keys = 0;
    config_path(path, sizeof path, pr->config);
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    int rc = llmem_model_new_preset(ctx, pr->preset, &p);
    cr_assert_eq(rc, LLMEM_OK, "preset %s: %d (%s)", pr->preset, rc, llmem_ctx_error(ctx));
    rc = llmem_model_new_hf_config(ctx, path, &c);
    cr_assert_eq(rc, LLMEM_OK, "%s: %d (%s)", path, rc, llmem_ctx_error(ctx));

    for (int key = 1; key < KEY_SCAN_END; key++) {
        const char *name = NULL;
        if (llmem_model_field_info(key, &name, NULL, NULL) != LLMEM_OK)
            continue;
        keys++;
        if (llmem_model_field_is_real(key) == 1) {
            double a = -1, b = -2;
            cr_assert_eq(llmem_model_get_double(p, key, &a), LLMEM_OK);
            cr_assert_eq(llmem_model_get_double(c, key, &b), LLMEM_OK);
            cr_expect(a == b, "%s: %s is %g, %s.json has %g", pr->preset, name, a, pr->config,
                      b);
        } else {
            int64_t a = -1, b = -2;
            cr_assert_eq(llmem_model_get_int(p, key, &a), LLMEM_OK);
            cr_assert_eq(llmem_model_get_int(c, key, &b), LLMEM_OK);
            if (key == pr->only_preset_key) {
                cr_expect(a == pr->only_preset_value && b == 0,
                          "%s: %s is %" PRId64 " (want %" PRId64 "), %s.json has %" PRId64
                          " (want none)", pr->preset, name, a, pr->only_preset_value,
                          pr->config, b);
                continue;
            }
            cr_expect_eq(a, b, "%s: %s is %" PRId64 ", %s.json has %" PRId64, pr->preset, name,
                         a, pr->config, b);
        }
    }
    /* LLMEM_MODEL_SLIDING_WINDOW is 43: a scan that met fewer keys checked too little. */
    cr_assert_geq(keys, LLMEM_MODEL_SLIDING_WINDOW, "only %d model keys found", keys);

    uint64_t np = 0, nc = 0;
    cr_assert_eq(llmem_model_param_count(p, &np), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_param_count(c, &nc), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(np, nc, "%s: %" PRIu64 " parameters, %s.json %" PRIu64, pr->preset, np,
                 pr->config, nc);

    lora_figures lp = lora_estimate(ctx, p, pr->preset);
    lora_figures lc = lora_estimate(ctx, c, pr->config);
    cr_expect_eq(lp.trainable, lc.trainable, "%s: LoRA trains %" PRIu64 ", %s.json %" PRIu64,
                 pr->preset, lp.trainable, pr->config, lc.trainable);
    cr_expect_gt(lp.trainable, 0, "%s: LoRA trains nothing", pr->preset);
    cr_expect_lt(lp.trainable, np, "%s: LoRA trains every parameter", pr->preset);
    cr_expect_eq(lp.active, lc.active, "%s: active %" PRIu64 ", %s.json %" PRIu64, pr->preset,
                 lp.active, pr->config, lc.active);
    cr_expect_eq(lp.peak, lc.peak, "%s: LoRA peak %" PRIu64 ", %s.json %" PRIu64, pr->preset,
                 lp.peak, pr->config, lc.peak);

    uint64_t by_config = published(HF_TEST_DIR "/expected_params.csv", pr->config);
    uint64_t by_preset = published(HF_TEST_DIR "/../data/published_params.csv", pr->preset);
    if (by_config != 0)
        cr_expect_eq(np, by_config, "%s: %" PRIu64 " parameters, expected_params.csv %" PRIu64,
                     pr->preset, np, by_config);
    if (by_preset != 0)
        cr_expect_eq(np, by_preset, "%s: %" PRIu64 " parameters, published_params.csv %" PRIu64,
                     pr->preset, np, by_preset);
    llmem_model_free(c);
    llmem_model_free(p);
    llmem_ctx_free(ctx);
}

/* A preset whose config.json is in the directory has its row. */
Test(preset_configs, every_preset_with_a_config_is_in_the_table)
{
    size_t with_config = 0;
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        const char *name = llmem_preset_name(i);
        const char *slash = strchr(name, '/');
        char path[PATH_CAP];
        int listed = 0;
        config_path(path, sizeof path, slash != NULL ? slash + 1 : name);
        if (!file_exists(path))
            continue;
        with_config++;
        for (size_t j = 0; j < PAIR_COUNT; j++)
            listed |= strcmp(pairs[j].preset, name) == 0;
        cr_expect(listed, "preset %s has %s but no row in this test's table", name, path);
    }
    cr_expect_eq(with_config, PAIR_COUNT, "%zu presets have a config in the directory, the "
                 "table has %zu rows", with_config, (size_t)PAIR_COUNT);
}

/* Each row names a preset and a file that exist, once. */
Test(preset_configs, table_rows_exist)
{
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < PAIR_COUNT; i++) {
        char path[PATH_CAP];
        llmem_model *m = NULL;
        config_path(path, sizeof path, pairs[i].config);
        cr_expect(file_exists(path), "row %zu: no %s", i, path);
        cr_expect_eq(llmem_model_new_preset(ctx, pairs[i].preset, &m), LLMEM_OK,
                     "row %zu: no preset %s", i, pairs[i].preset);
        llmem_model_free(m);
        for (size_t j = 0; j < i; j++)
            cr_expect(strcmp(pairs[i].preset, pairs[j].preset) != 0 &&
                          strcmp(pairs[i].config, pairs[j].config) != 0,
                      "rows %zu and %zu repeat a preset or a config", j, i);
    }
    llmem_ctx_free(ctx);
}
