/* SPDX-License-Identifier: MIT */
/*
 * Sliding-window attention (LLMEM_MODEL_SLIDING_WINDOW): below the window
 * nothing changes; from the window on, SDPA's layers take a bool mask and
 * each saves its own additive bias; eager and flash never change; Gemma-2's
 * even layers take it and its odd ones do not (pipelines refused); a handle
 * that compiled a walk below the window answers above it as a fresh one.
 * The bytes themselves are measured against PyTorch in
 * tests/validation/grid_window.csv.
 */
#include "estimate_fixture.h"

#include <stdio.h>
#include <string.h>

#define WINDOW 64

typedef struct model_field {
    int key;
    int64_t v;
} model_field;

/* A custom model of family with fields set. */
static llmem_model *model_of(int family, const model_field *f, size_t n)
{
    llmem_model *m;
    cr_assert_eq(llmem_model_new(ctx, family, &m), LLMEM_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(llmem_model_set_int(m, f[i].key, f[i].v), LLMEM_OK, "%s",
                     llmem_ctx_error(ctx));
    return m;
}

/* A small Mistral-like model: grouped kv heads, the window at 64 tokens. */
static llmem_model *small_model(int64_t window)
{
    const model_field f[] = { { LLMEM_MODEL_HIDDEN, 256 },       { LLMEM_MODEL_LAYERS, 2 },
                              { LLMEM_MODEL_HEADS, 8 },          { LLMEM_MODEL_KV_HEADS, 2 },
                              { LLMEM_MODEL_INTERMEDIATE, 688 }, { LLMEM_MODEL_VOCAB, 4096 },
                              { LLMEM_MODEL_MAX_POSITIONS, 4096 },
                              { LLMEM_MODEL_SLIDING_WINDOW, window } };
    return model_of(LLMEM_FAMILY_LLAMA, f, sizeof f / sizeof f[0]);
}

static llmem_train *job(const char *attention, const char *precision, const char *ckpt,
                        int64_t batch, int64_t seq)
{
    llmem_train *t;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, attention), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, precision), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, ckpt), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, batch), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, seq), LLMEM_OK);
    return t;
}

static uint64_t get(llmem_estimate *e, int key)
{
    uint64_t v = 0;
    cr_assert_eq(llmem_estimate_get_u64(e, key, &v), LLMEM_OK);
    return v;
}

/* The allocated peak and the forward phase's of a job, on a fresh handle. */
static void run_fresh(llmem_model *m, llmem_train *t, uint64_t *peak, uint64_t *forward)
{
    llmem_estimate *e;
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    *peak = get(e, LLMEM_EST_PEAK_ALLOCATED);
    if (forward != NULL)
        cr_assert_eq(llmem_estimate_phase_bytes(e, LLMEM_PHASE_FORWARD, forward), LLMEM_OK);
    llmem_estimate_free(e);
}

TestSuite(window, .init = setup_est, .fini = teardown_est);

/* One token short of the window, no mask: the estimate is the windowless one's. */
Test(window, below_the_window_nothing_changes)
{
    llmem_model *with = small_model(WINDOW), *without = small_model(0);
    const char *ckpts[] = { "none", "reentrant", "non-reentrant" };
    for (size_t c = 0; c < 3; c++) {
        llmem_train *t = job("sdpa", "bf16-mixed", ckpts[c], 2, WINDOW - 1);
        uint64_t a, b, fa, fb;
        run_fresh(with, t, &a, &fa);
        run_fresh(without, t, &b, &fb);
        cr_expect_eq(a, b, "%s: %llu vs %llu", ckpts[c], (unsigned long long)a,
                     (unsigned long long)b);
        cr_expect_eq(fa, fb);
        llmem_train_free(t);
    }
    llmem_model_free(with);
    llmem_model_free(without);
}

/*
 * At the window (>=, not >) the forward pass holds, beyond the windowless
 * one, at least each layer's saved bf16 bias [B, 1, S, S] and the bool mask
 * [B, 1, S, S]; the repeated keys and values add more (grouped kv heads).
 */
Test(window, from_the_window_each_layer_saves_a_bias)
{
    llmem_model *with = small_model(WINDOW), *without = small_model(0);
    int64_t B = 2, S = WINDOW, layers = 2;
    llmem_train *t = job("sdpa", "bf16-mixed", "none", B, S);
    uint64_t a, b, fa, fb;
    run_fresh(with, t, &a, &fa);
    run_fresh(without, t, &b, &fb);
    uint64_t cells = (uint64_t)(B * S * S), floor_bytes = layers * cells * 2 + cells;
    cr_expect_geq(fa, fb + floor_bytes, "forward %llu vs %llu + %llu", (unsigned long long)fa,
                  (unsigned long long)fb, (unsigned long long)floor_bytes);
    cr_expect_gt(a, b);
    llmem_train_free(t);
    llmem_model_free(with);
    llmem_model_free(without);
}

/* A seq not a multiple of 8: the memory-efficient kernel pads the bias's
 * last dimension (a larger saved bias than the seq just below would give). */
Test(window, an_unaligned_seq_pads_the_bias)
{
    llmem_model *with = small_model(WINDOW), *without = small_model(0);
    uint64_t d[2];
    int64_t seqs[2] = { WINDOW + 8, WINDOW + 9 }; /* 72 and 73: round8(73) = 80 */
    for (int i = 0; i < 2; i++) {
        llmem_train *t = job("sdpa", "fp32", "none", 1, seqs[i]);
        uint64_t a, b, fa, fb;
        run_fresh(with, t, &a, &fa);
        run_fresh(without, t, &b, &fb);
        d[i] = fa - fb;
        llmem_train_free(t);
    }
    /* each layer's fp32 bias: 1 x 73 x 80 cells padded against 1 x 72 x 72 */
    cr_expect_geq(d[1] - d[0], 2 * (73 * 80 - 72 * 72) * 4ull, "%llu %llu",
                  (unsigned long long)d[0], (unsigned long long)d[1]);
    llmem_model_free(with);
    llmem_model_free(without);
}

/* Eager builds its 4-D mask at every seq and flash-attn takes the window
 * natively: neither changes with it. */
Test(window, eager_and_flash_do_not_change)
{
    llmem_model *with = small_model(WINDOW), *without = small_model(0);
    const char *kernels[] = { "eager", "flash" };
    for (int k = 0; k < 2; k++) {
        llmem_train *t = job(kernels[k], "bf16-mixed", "none", 2, 2 * WINDOW);
        uint64_t a, b;
        run_fresh(with, t, &a, NULL);
        run_fresh(without, t, &b, NULL);
        cr_expect_eq(a, b, "%s", kernels[k]);
        llmem_train_free(t);
    }
    llmem_model_free(with);
    llmem_model_free(without);
}

/* One handle across the window, in both directions and after a sweep that
 * compiles the walk below it, against a fresh handle at every point. */
static void expect_sweep_as_fresh(llmem_model *m)
{
    const char *ckpts[] = { "none", "non-reentrant" };
    for (size_t c = 0; c < 2; c++) {
        llmem_train *t = job("sdpa", "bf16-mixed", ckpts[c], 2, 8);
        int64_t batch[64], seq[64];
        uint64_t peak[64];
        size_t n = 0;
        /* below the window first (a sweep compiles there), then above, then back */
        for (int64_t s = 8; s <= 3 * WINDOW; s += 15)
            for (int64_t b = 2; b <= 4 && n < 64; b++) {
                batch[n] = b;
                seq[n] = s;
                n++;
            }
        cr_assert_eq(llmem_estimate_sweep(est, m, t, NULL, batch, seq, n, LLMEM_LEVEL_ALLOCATED,
                                          peak),
                     LLMEM_OK, "%s", llmem_ctx_error(ctx));
        for (size_t i = 0; i < n; i++) {
            uint64_t fresh;
            cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, batch[i]), LLMEM_OK);
            cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, seq[i]), LLMEM_OK);
            run_fresh(m, t, &fresh, NULL);
            cr_expect_eq(peak[i], fresh, "%s b%lld s%lld: %llu vs %llu", ckpts[c],
                         (long long)batch[i], (long long)seq[i], (unsigned long long)peak[i],
                         (unsigned long long)fresh);
            /* and a run on the same handle, point by point, after the sweep */
            cr_assert_eq(llmem_estimate_run(est, m, t), LLMEM_OK);
            cr_expect_eq(get(est, LLMEM_EST_PEAK_ALLOCATED), fresh);
        }
        llmem_train_free(t);
    }
}

Test(window, a_handle_across_the_window_answers_as_a_fresh_one)
{
    llmem_model *m = small_model(WINDOW);
    expect_sweep_as_fresh(m);
    llmem_model_free(m);
}

/* Context parallelism runs ring attention (TransformerEngine), which takes
 * the window as an argument: no mask reaches a rank, whatever the seq. */
Test(window, context_parallel_ranks_take_no_mask)
{
    llmem_model *with = small_model(WINDOW), *without = small_model(0);
    llmem_parallel *cp;
    cr_assert_eq(llmem_parallel_new(ctx, &cp), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(cp, LLMEM_PARALLEL_CP, 2), LLMEM_OK);
    int64_t seqs[] = { WINDOW, 2 * WINDOW, 4 * WINDOW };
    for (int i = 0; i < 3; i++) {
        llmem_train *t = job("sdpa", "bf16-mixed", "none", 2, seqs[i]);
        uint64_t a, b;
        cr_assert_eq(llmem_estimate_run_parallel(est, with, t, cp), LLMEM_OK, "%s",
                     llmem_ctx_error(ctx));
        a = get(est, LLMEM_EST_PEAK_ALLOCATED);
        cr_assert_eq(llmem_estimate_run_parallel(est, without, t, cp), LLMEM_OK);
        b = get(est, LLMEM_EST_PEAK_ALLOCATED);
        cr_expect_eq(a, b, "seq %lld: %llu vs %llu", (long long)seqs[i], (unsigned long long)a,
                     (unsigned long long)b);
        llmem_train_free(t);
    }
    llmem_parallel_free(cp);
    llmem_model_free(with);
    llmem_model_free(without);
}

/* The step's 64-bit bound counts the mask and bias only once the window is
 * reached: below it the largest batch the estimate takes is the windowless
 * one's, and above it the bias's seq a token, not the scores' heads x seq. */
Test(window, the_step_bound_counts_the_mask_from_the_window_on)
{
    /* at these seqs the bound, not the batch field's 2^24, limits the batch */
    llmem_model *with = small_model(32768), *without = small_model(0);
    int64_t below[2], above[2];
    llmem_model *models[2] = { with, without };
    for (int k = 0; k < 2; k++) {
        llmem_train *t = job("sdpa", "bf16-mixed", "none", 1, 32767);
        cr_assert_eq(llmem_estimate_max(est, models[k], t, NULL, LLMEM_TRAIN_BATCH,
                                        LLMEM_LEVEL_ALLOCATED, UINT64_MAX, &below[k]),
                     LLMEM_EOVERFLOW, "%s", llmem_ctx_error(ctx));
        cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 65536), LLMEM_OK);
        cr_assert_eq(llmem_estimate_max(est, models[k], t, NULL, LLMEM_TRAIN_BATCH,
                                        LLMEM_LEVEL_ALLOCATED, UINT64_MAX, &above[k]),
                     LLMEM_EOVERFLOW, "%s", llmem_ctx_error(ctx));
        llmem_train_free(t);
    }
    cr_expect_eq(below[0], below[1], "%lld vs %lld", (long long)below[0], (long long)below[1]);
    cr_expect_lt(above[0], above[1]);
    /* seq a token (about 12x this model's other widths at 65536), not 8 heads x
     * seq (about 88x) */
    cr_expect_gt(above[0] * 20, above[1], "%lld vs %lld", (long long)above[0],
                 (long long)above[1]);
    llmem_model_free(with);
    llmem_model_free(without);
}

/* A small Gemma-2: its even layers slide (window 64), its odd ones attend in full. */
static llmem_model *small_gemma2(int64_t layers)
{
    const model_field f[] = { { LLMEM_MODEL_HIDDEN, 256 },       { LLMEM_MODEL_LAYERS, layers },
                              { LLMEM_MODEL_HEADS, 4 },          { LLMEM_MODEL_KV_HEADS, 2 },
                              { LLMEM_MODEL_HEAD_DIM, 64 },      { LLMEM_MODEL_INTERMEDIATE, 512 },
                              { LLMEM_MODEL_VOCAB, 2048 },       { LLMEM_MODEL_MAX_POSITIONS, 4096 },
                              { LLMEM_MODEL_SLIDING_WINDOW, WINDOW } };
    return model_of(LLMEM_FAMILY_GEMMA2, f, sizeof f / sizeof f[0]);
}

/* The largest point of the run's timeline, which walks the layers one by
 * one (each simulated op by op) where the estimate takes each of the two
 * interleaved runs at its ends: they must agree to the byte. */
static void expect_timeline_peak(llmem_model *m, llmem_train *t, const char *what)
{
    for (int expand = 0; expand < 2; expand++) {
        llmem_estimate *e;
        cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
        cr_assert_eq(llmem_estimate_timeline(e, 1 << 14, expand), LLMEM_OK);
        cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "%s: %s", what, llmem_ctx_error(ctx));
        uint64_t peak = get(e, LLMEM_EST_PEAK_ALLOCATED), best = 0;
        size_t n = llmem_estimate_timeline_count(e, 0);
        for (size_t i = 0; i < n; i++) {
            uint64_t a, b, d, tmp;
            int phase;
            const char *part;
            int64_t layer;
            cr_assert_eq(llmem_estimate_timeline_point(e, 0, i, &phase, &part, &layer, &a, &b,
                                                       &d, &tmp),
                         LLMEM_OK);
            best = a + b + d + tmp > best ? a + b + d + tmp : best;
        }
        cr_expect_eq(best, peak, "%s expand %d: timeline %llu, peak %llu", what, expand,
                     (unsigned long long)best, (unsigned long long)peak);
        llmem_estimate_free(e);
    }
}

/* Gemma-2 slides on its even layers only: under SDPA from the window on
 * those take the mask and the odd ones the causal kernel, over every run a
 * method makes (LoRA's first layer alone, freeze's frozen and first
 * trainable layers, odd and even counts), plainly and checkpointed. */
Test(window, gemma2_alternate_layers_take_the_mask)
{
    static const struct {
        const char *method, *ckpt;
        int64_t frozen;
    } cases[] = { { "full", "none", 0 },          { "lora", "none", 0 },
                  { "freeze", "none", 1 },        { "freeze", "none", 2 },
                  { "freeze", "none", 3 },        { "full", "reentrant", 0 },
                  { "lora", "non-reentrant", 0 }, { "freeze", "non-reentrant", 3 } };
    for (int64_t layers = 4; layers <= 7; layers++) {
        llmem_model *m = small_gemma2(layers);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            char what[96];
            snprintf(what, sizeof what, "%lld layers %s %s frozen %lld", (long long)layers,
                     cases[c].method, cases[c].ckpt, (long long)cases[c].frozen);
            llmem_train *t = job("sdpa", "bf16-mixed", cases[c].ckpt, 2, 2 * WINDOW);
            cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_METHOD, cases[c].method), LLMEM_OK);
            if (cases[c].frozen > 0)
                cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, cases[c].frozen),
                             LLMEM_OK);
            expect_timeline_peak(m, t, what);
            /* the masked layers' biases and repeat_kv copies weigh: above the
             * same step one token below the window, scaled to the seq */
            uint64_t above, below;
            run_fresh(m, t, &above, NULL);
            cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, WINDOW - 1), LLMEM_OK);
            run_fresh(m, t, &below, NULL);
            cr_expect_gt(above, below, "%s", what);
            llmem_train_free(t);
        }
        llmem_model_free(m);
    }
}

/* Stages whose first layer is odd and even differ: refused, naming pp and
 * the window; below the window, or under eager, a pipeline is estimated. */
Test(window, gemma2_pipelines_are_refused_from_the_window_on)
{
    llmem_model *m;
    cr_assert_eq(llmem_model_new_preset(ctx, "google/gemma-2-9b", &m), LLMEM_OK);
    int64_t w = 0;
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_SLIDING_WINDOW, &w), LLMEM_OK);
    cr_assert_eq(w, 4096);
    llmem_train *t = job("sdpa", "bf16-mixed", "none", 1, 4096);
    llmem_parallel *l;
    cr_assert_eq(llmem_parallel_new(ctx, &l), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(est, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_PP, 2), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(est, m, t, l), LLMEM_ENOTSUP);
    cr_expect(strstr(llmem_ctx_error(ctx), "pp: 2") != NULL, "%s", llmem_ctx_error(ctx));
    cr_expect(strstr(llmem_ctx_error(ctx), "sliding window (4096)") != NULL, "%s",
              llmem_ctx_error(ctx));
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 4095), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(est, m, t, l), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    /* The largest seq that fits stops below the window, saying why (it was
     * refused as the job's failure: found by the estimate fuzzer) */
    int64_t most = 0;
    cr_expect_eq(llmem_estimate_max(est, m, t, l, LLMEM_TRAIN_SEQ, LLMEM_LEVEL_ALLOCATED,
                                    UINT64_MAX / 8, &most),
                 LLMEM_ENOTSUP, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(most, 4095);
    cr_expect(strstr(llmem_ctx_error(ctx), "4096 is not modelled (pp: 2") != NULL, "%s",
              llmem_ctx_error(ctx));
    int object = 0, key = 0;
    llmem_ctx_error_field(ctx, &object, &key);
    cr_expect(object == LLMEM_OBJECT_TRAIN && key == LLMEM_TRAIN_SEQ);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 4096), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, "eager"), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(est, m, t, l), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_parallel_free(l);
    llmem_train_free(t);
    llmem_model_free(m);
}

/* Gemma-2 across its window (its even layers masked above): a handle's sweep
 * and runs answer as fresh handles do. */
Test(window, gemma2_across_the_window_answers_as_a_fresh_one)
{
    llmem_model *m = small_gemma2(5);
    expect_sweep_as_fresh(m);
    llmem_model_free(m);
}

/* Only families whose code has a window take one. */
Test(window, a_family_without_windows_refuses_one)
{
    llmem_model *m;
    cr_assert_eq(llmem_model_new_preset(ctx, "openai-community/gpt2", &m), LLMEM_OK);
    cr_assert_eq(llmem_model_validate(m), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_SLIDING_WINDOW, 32), LLMEM_OK);
    cr_expect_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    cr_expect(strstr(llmem_ctx_error(ctx), "sliding-window: 32, but gpt2") != NULL, "%s",
              llmem_ctx_error(ctx));
    llmem_model_free(m);
}

/* The presets carry their config.json's windows. */
Test(window, presets_carry_their_windows)
{
    const struct {
        const char *name;
        int64_t window;
    } p[] = { { "mistralai/Mistral-7B-v0.1", 4096 },
              { "microsoft/Phi-3-mini-4k-instruct", 2047 },
              { "meta-llama/Llama-3.1-8B", 0 },
              { "Qwen/Qwen2.5-7B", 0 } };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        llmem_model *m;
        int64_t w = -1;
        cr_assert_eq(llmem_model_new_preset(ctx, p[i].name, &m), LLMEM_OK);
        cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_SLIDING_WINDOW, &w), LLMEM_OK);
        cr_expect_eq(w, p[i].window, "%s: %lld", p[i].name, (long long)w);
        llmem_model_free(m);
    }
}
