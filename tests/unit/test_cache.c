/* SPDX-License-Identifier: MIT */
/*
 * A reused estimate handle caches what does not depend on batch and seq, and
 * compiles each segment into polynomials of them (lib/sim/compiled.h,
 * lib/estimate/cache.h): rows, columns, full forms, remembered points, in
 * every regime (batch 1, seq 1 to 3, the rest) and for the chunked loss. A
 * sweep over batch and seq on one handle must give, to the byte, what a fresh
 * handle (which simulates) gives for each point: every result of every rank,
 * phase, term and component, and the same status.
 *
 * A fresh handle is one allocation forgotten before each run
 * (llmem_estimate_forget, what llmem_estimate_new does after allocating):
 * under ASan a new 653 KiB allocation costs milliseconds. The test that walks
 * one handle through many setups takes really new handles.
 */
#include "estimate/estimate.h"

#include "job_fixture.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <llmem.h>
#include <stdio.h>
#include <string.h>

static const char *const precisions[] = { "fp32", "bf16-mixed", "bf16" };
static const char *const methods[] = { "full", "lora", "qlora", "freeze" };
static const char *const ckpts[] = { "none", "reentrant", "full" };
static const char *const attentions[] = { "eager", "flash", "sdpa" };
static const uint64_t points[][2] = { { 1, 512 }, { 2, 256 },  { 4, 1024 }, { 3, 777 },
                                      { 8, 2048 }, { 2, 5 },   { 16, 4096 }, { 5, 300 },
                                      { 1, 1 },   { 1, 3 },   { 2, 2 },     { 7, 1 } };

#define N(a) (sizeof a / sizeof a[0])

/* Every result of an estimate as one line, so two estimates compare to the byte. */
static void describe(llmem_estimate *e, int rc, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "rc %d", rc);
    if (rc != LLMEM_OK)
        return;
    for (size_t r = 0; r < llmem_estimate_rank_count(e) && len < cap; r++) {
        len += (size_t)snprintf(buf + len, cap - len, " | rank %zu%s:", r,
                                r == llmem_estimate_peak_rank(e) ? " (peak)" : "");
        for (int key = LLMEM_EST_PARAMS_TOTAL; key <= LLMEM_EST_PARAMS_ACTIVE; key++) {
            uint64_t v = 0;
            llmem_estimate_rank_get_u64(e, r, key, &v);
            len += (size_t)snprintf(buf + len, cap - len, " %llu", (unsigned long long)v);
        }
        for (int key = LLMEM_RANK_STAGE; key <= LLMEM_RANK_IN_FLIGHT_X1000; key++) {
            uint64_t v = 0;
            llmem_estimate_rank_get_u64(e, r, key, &v);
            len += (size_t)snprintf(buf + len, cap - len, " %llu", (unsigned long long)v);
        }
        for (int phase = LLMEM_PHASE_FORWARD; phase <= LLMEM_PHASE_OPTIMIZER; phase++) {
            uint64_t v = 0;
            llmem_estimate_rank_phase_bytes(e, r, phase, &v);
            len += (size_t)snprintf(buf + len, cap - len, " p%d=%llu", phase,
                                    (unsigned long long)v);
        }
        for (int k = LLMEM_TERM_PARAMETERS; k <= LLMEM_TERM_TEMPORARY; k++) {
            const llmem_term *t = NULL;
            llmem_estimate_rank_term(e, r, k, &t);
            len += (size_t)snprintf(buf + len, cap - len, " t%d=%llu/%llu", k,
                                    (unsigned long long)llmem_term_bytes_at_peak(t),
                                    (unsigned long long)llmem_term_max_bytes(t));
            for (size_t c = 0; c < llmem_term_component_count(t) && len < cap; c++) {
                const char *name;
                uint64_t bytes;
                llmem_term_component(t, c, &name, &bytes);
                len += (size_t)snprintf(buf + len, cap - len, ",%s=%llu", name,
                                        (unsigned long long)bytes);
            }
        }
    }
    for (int key = LLMEM_EST_PARAMS_TOTAL; key <= LLMEM_EST_PARAMS_ACTIVE && len < cap; key++) {
        uint64_t v = 0;
        llmem_estimate_get_u64(e, key, &v);
        len += (size_t)snprintf(buf + len, cap - len, " %llu", (unsigned long long)v);
    }
}

/* The handle playing the fresh one, and whether to take a new one each time. */
static llmem_estimate *reference;
static int really_new;

static void reference_done(void)
{
    llmem_estimate_free(reference);
    reference = NULL;
}

/* The reused handle's run against a fresh handle's, at the train's batch and seq. */
static int same_as_fresh(llmem_ctx *ctx, llmem_estimate *reused, llmem_model *m, llmem_train *t,
                         const llmem_parallel *par, const char *what)
{
    static char a[8192], b[8192];
    llmem_estimate *fresh = reference;
    if (really_new || fresh == NULL)
        cr_assert_eq(llmem_estimate_new(ctx, &fresh), LLMEM_OK);
    else
        llmem_estimate_forget(fresh);
    if (!really_new)
        reference = fresh;
    describe(reused, llmem_estimate_run_parallel(reused, m, t, par), a, sizeof a);
    describe(fresh, llmem_estimate_run_parallel(fresh, m, t, par), b, sizeof b);
    if (really_new)
        llmem_estimate_free(fresh);
    cr_expect_str_eq(a, b, "%s:\n reused: %s\n fresh:  %s", what, a, b);
    return strcmp(a, b) == 0;
}

static void set_point(llmem_train *t, uint64_t batch, uint64_t seq)
{
    llmem_train_set_int(t, LLMEM_TRAIN_BATCH, (int64_t)batch);
    llmem_train_set_int(t, LLMEM_TRAIN_SEQ, (int64_t)seq);
}

static int walk_grid(llmem_ctx *ctx, llmem_estimate *e, llmem_model *m, llmem_train *t,
                     const llmem_parallel *par, const char *label);

Test(cache, sweeps_on_one_handle_equal_fresh_handles)
{
    llmem_ctx *ctx;
    llmem_estimate *sweep;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &sweep), LLMEM_OK);
    for (size_t pi = 0; pi < llmem_preset_count(); pi++)
        for (size_t a = 0; a < N(precisions); a++)
            for (size_t b = 0; b < N(methods); b++)
                for (size_t c = 0; c < N(ckpts); c++)
                    for (size_t d = 0; d < N(attentions); d++) {
                        llmem_model *m;
                        llmem_train *t;
                        cr_assert_eq(llmem_model_new_preset(ctx, llmem_preset_name(pi), &m),
                                     LLMEM_OK);
                        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
                        llmem_estimate_forget(sweep); /* a new handle per setup */
                        llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, precisions[a]);
                        llmem_train_set_str(t, LLMEM_TRAIN_METHOD, methods[b]);
                        if (b == 3)
                            llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, 2);
                        llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, ckpts[c]);
                        llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, attentions[d]);
                        if ((a + b + c + d) % 2) {
                            llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, 0.1);
                            llmem_train_set_double(t, LLMEM_TRAIN_LORA_DROPOUT, 0.05);
                        }
                        for (size_t k = 0; k < N(points); k++) {
                            char what[256];
                            set_point(t, points[k][0], points[k][1]);
                            snprintf(what, sizeof what, "%s %s %s ckpt=%s %s b%llu s%llu",
                                     llmem_preset_name(pi), precisions[a], methods[b], ckpts[c],
                                     attentions[d], (unsigned long long)points[k][0],
                                     (unsigned long long)points[k][1]);
                            same_as_fresh(ctx, sweep, m, t, NULL, what);
                        }
                        /* Then rows, columns and full forms, the precision rotating
                         * (the whole cross takes minutes under ASan). */
                        if ((pi + b + c + d) % N(precisions) == a) {
                            char label[256];
                            snprintf(label, sizeof label, "%s %s %s ckpt=%s %s",
                                     llmem_preset_name(pi), precisions[a], methods[b], ckpts[c],
                                     attentions[d]);
                            walk_grid(ctx, sweep, m, t, NULL, label);
                        }
                        llmem_train_free(t);
                        llmem_model_free(m);
                    }
    llmem_estimate_free(sweep);
    reference_done();
    llmem_ctx_free(ctx);
}

/* A grid of batch x seq crossing every regime, walked in three orders (seq
 * fixed, batch fixed, seeded random), so rows, columns, the full forms lifted
 * from them and remembered points all answer some calls. */
static const uint64_t grid_batch[] = { 1, 2, 3, 5, 8, 13 };
static const uint64_t grid_seq[] = { 1, 2, 3, 4, 7, 64, 300, 1024, 2000 };

/* The grid of bs x ss, walked in those three orders. */
static int walk_points(llmem_ctx *ctx, llmem_estimate *e, llmem_model *m, llmem_train *t,
                       const llmem_parallel *par, const char *label, const uint64_t *bs,
                       size_t nb, const uint64_t *ss, size_t ns)
{
    size_t n = nb * ns;
    unsigned rnd = 12345;
    int ok = 1;
    for (int order = 0; order < 3; order++)
        for (size_t k = 0; k < n; k++) {
            size_t bi, si;
            char what[300];
            if (order == 0) {
                bi = k % nb;
                si = k / nb;
            } else if (order == 1) {
                si = k % ns;
                bi = k / ns;
            } else {
                rnd = rnd * 1103515245u + 12345u;
                bi = (rnd >> 16) % nb;
                rnd = rnd * 1103515245u + 12345u;
                si = (rnd >> 16) % ns;
            }
            set_point(t, bs[bi], ss[si]);
            snprintf(what, sizeof what, "%s order %d b%llu s%llu", label, order,
                     (unsigned long long)bs[bi], (unsigned long long)ss[si]);
            ok &= same_as_fresh(ctx, e, m, t, par, what);
            if (!ok)
                return 0; /* one mismatch says enough */
        }
    return ok;
}

static int walk_grid(llmem_ctx *ctx, llmem_estimate *e, llmem_model *m, llmem_train *t,
                     const llmem_parallel *par, const char *label)
{
    return walk_points(ctx, e, m, t, par, label, grid_batch, N(grid_batch), grid_seq,
                       N(grid_seq));
}

static const char *const grid_presets[] = {
    "openai-community/gpt2", "facebook/opt-350m", "meta-llama/Llama-3.1-8B",
    "google/gemma-2-9b", "microsoft/Phi-3-mini-4k-instruct", "Qwen/Qwen2.5-0.5B",
};

static const struct {
    const char *precision, *method, *ckpt, *attention, *loss;
    double dropout;
} grid_setups[] = {
    { "bf16-mixed", "full", "none", "eager", "upcast", 0.0 },
    { "fp32", "full", "full", "sdpa", "upcast", 0.1 },
    { "bf16", "lora", "none", "flash", "chunked", 0.0 },
    { "bf16-mixed", "qlora", "full", "eager", "chunked", 0.1 },
    { "bf16-mixed", "freeze", "none", "eager", "upcast", 0.1 },
    { "fp16-mixed", "full", "none", "flash", "chunked", 0.0 },
};

static void apply_setup(llmem_train *t, size_t i)
{
    llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, grid_setups[i].precision);
    llmem_train_set_str(t, LLMEM_TRAIN_METHOD, grid_setups[i].method);
    llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS,
                        strcmp(grid_setups[i].method, "freeze") == 0 ? 2 : 0);
    llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, grid_setups[i].ckpt);
    llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, grid_setups[i].attention);
    llmem_train_set_str(t, LLMEM_TRAIN_LOSS, grid_setups[i].loss);
    llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, grid_setups[i].dropout);
}

/* Batch 1, seq 1..3, the chunked loss and the compile path, per setup. */
Test(cache, grids_in_every_regime_equal_fresh_handles)
{
    llmem_ctx *ctx;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t pi = 0; pi < N(grid_presets); pi++)
        for (size_t si = 0; si < N(grid_setups); si++) {
            llmem_model *m;
            llmem_train *t;
            llmem_estimate *e;
            char label[200];
            cr_assert_eq(llmem_model_new_preset(ctx, grid_presets[pi], &m), LLMEM_OK);
            cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
            cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
            apply_setup(t, si);
            snprintf(label, sizeof label, "%s setup %zu", grid_presets[pi], si);
            walk_grid(ctx, e, m, t, NULL, label);
            /* the compiled walks answered (estimate/walkform.h): not only the
             * segment cache; a fused loss too, a walk for each of its chunks */
            cr_expect(e->walk.compiled > 0 && e->walk.answered > 0,
                      "%s: %llu walks compiled, %llu estimates answered by them", label,
                      (unsigned long long)e->walk.compiled, (unsigned long long)e->walk.answered);
            llmem_estimate_free(e);
            llmem_train_free(t);
            llmem_model_free(m);
        }
    reference_done();
    llmem_ctx_free(ctx);
}

/* From a sliding window on, SDPA's mask is padded to a multiple of 8 (and
 * its log-sum-exp to 32): segments and walks are cached one seq at a time
 * there (sim/compiled.h: REGIME_ROW_AT), their seq in the key. Grids just
 * below, at and past the window of Phi-3-mini (2047), Mistral-7B-v0.1 (4096)
 * and gemma-2-9b (4096, its even layers masked), seqs of every residue that
 * matters, equal fresh handles; compiled walks answer points past the window
 * (the one seq below it never compiles: its regime needs more seqs; a
 * fused loss's chunks and gemma-2's freeze, more than SEG_HINTS segments,
 * compile none), and the grid swept again simulates nothing. */
Test(cache, windowed_grids_equal_fresh_handles)
{
    static const struct {
        const char *preset;
        uint64_t window;
    } models[] = { { "microsoft/Phi-3-mini-4k-instruct", 2047 },
                   { "mistralai/Mistral-7B-v0.1", 4096 },
                   { "google/gemma-2-9b", 4096 } };
    static const struct {
        const char *precision, *method, *ckpt, *loss;
        double dropout;
    } setups[] = { { "bf16-mixed", "full", "none", "upcast", 0.0 },
                   { "fp32", "lora", "full", "chunked", 0.1 },
                   { "bf16", "freeze", "reentrant", "upcast", 0.0 },
                   { "bf16-mixed", "qlora", "full", "upcast", 0.1 } };
    static const uint64_t batches[] = { 1, 2, 3, 5, 8, 13, 21 };
    static const int64_t offsets[] = { -1, 0, 1, 9, 41 };
    uint64_t compiled = 0, answered = 0;
    int full = 0;
    llmem_ctx *ctx;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t mi = 0; mi < N(models); mi++)
        for (size_t si = 0; si < N(setups); si++) {
            uint64_t seqs[N(offsets)];
            llmem_model *m;
            llmem_train *t;
            llmem_estimate *e;
            char label[200];
            for (size_t k = 0; k < N(offsets); k++)
                seqs[k] = (uint64_t)((int64_t)models[mi].window + offsets[k]);
            cr_assert_eq(llmem_model_new_preset(ctx, models[mi].preset, &m), LLMEM_OK);
            cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
            cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
            llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, setups[si].precision);
            llmem_train_set_str(t, LLMEM_TRAIN_METHOD, setups[si].method);
            llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS,
                                strcmp(setups[si].method, "freeze") == 0 ? 3 : 0);
            llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, setups[si].ckpt);
            llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, "sdpa");
            llmem_train_set_str(t, LLMEM_TRAIN_LOSS, setups[si].loss);
            llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, setups[si].dropout);
            snprintf(label, sizeof label, "%s setup %zu", models[mi].preset, si);
            walk_points(ctx, e, m, t, NULL, label, batches, N(batches), seqs, N(seqs));
            /* every segment of every point is known now (a row's worth of
             * batches at each seq, the points of batch 1 remembered) unless
             * they outgrew the handle's entries or arena (gemma-2's LoRA
             * checkpointed and freeze: each kind of its alternate layers,
             * at 5 seqs) */
            uint64_t simulated = e->walk.simulated, restarts = e->walk.cache.restarts;
            int room = e->walk.cache.high < SEG_ENTRIES && restarts == 0;
            walk_points(ctx, e, m, t, NULL, label, batches, N(batches), seqs, N(seqs));
            cr_expect(!room || e->walk.simulated == simulated, "%s: the grid again simulated "
                      "%llu segments", label, (unsigned long long)(e->walk.simulated - simulated));
            full += !room;
            compiled += e->walk.compiled;
            answered += e->walk.answered;
            llmem_estimate_free(e);
            llmem_train_free(t);
            llmem_model_free(m);
        }
    cr_expect(compiled >= 9 && answered >= 9 * 7, "%llu walks compiled, %llu estimates "
              "answered by them", (unsigned long long)compiled, (unsigned long long)answered);
    cr_expect_leq(full, 2, "%d of 12 handles ran out of entries", full);
    reference_done();
    llmem_ctx_free(ctx);
}

#ifdef LLMEM_TEST_HF_CONFIGS
/* Every family from the real configs (the presets hold no GPT-NeoX, Falcon,
 * Phi, StarCoder2, DeepSeek or mixture of experts): each attention kernel
 * (SDPA's fused, memory-efficient and math paths among them: fp32 and
 * Falcon's own call send grouped kv heads to the math path, Falcon-RW's ALiBi
 * to the masked kernel), the checkpointing and the rest of the setup
 * rotating. */
static const char *const family_attentions[] = { "sdpa", "eager", "flash" };
static const char *const family_ckpts[] = { "none", "reentrant", "non-reentrant" };

Test(cache, families_from_configs_equal_fresh_handles)
{
    llmem_ctx *ctx;
    size_t seen = 0, combos = 0;
    uint64_t compiled = 0, answered = 0;
    DIR *dir = opendir(LLMEM_TEST_HF_CONFIGS);
    cr_assert_not_null(dir, "%s", LLMEM_TEST_HF_CONFIGS);
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (struct dirent *d; (d = readdir(dir)) != NULL;) {
        char path[1024];
        llmem_model *m;
        if (strstr(d->d_name, ".json") == NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s", LLMEM_TEST_HF_CONFIGS, d->d_name);
        cr_assert_eq(llmem_model_new_hf_config(ctx, path, &m), LLMEM_OK, "%s: %s", path,
                     llmem_ctx_error(ctx));
        for (size_t a = 0; a < N(family_attentions); a++) {
            size_t c = (seen + a) % N(family_ckpts), si = (seen + 3 * a) % N(grid_setups);
            size_t pr = (seen / 3 + 2 * a) % N(precisions);
            llmem_train *t;
            llmem_estimate *e;
            char label[1200];
            cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
            cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
            apply_setup(t, si);
            llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, precisions[pr]);
            llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, family_attentions[a]);
            llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, family_ckpts[c]);
            snprintf(label, sizeof label, "%s setup %zu %s %s %s", d->d_name, si, precisions[pr],
                     family_attentions[a], family_ckpts[c]);
            walk_grid(ctx, e, m, t, NULL, label);
            compiled += e->walk.compiled;
            answered += e->walk.answered;
            combos++;
            llmem_estimate_free(e);
            llmem_train_free(t);
        }
        llmem_model_free(m);
        seen++;
    }
    closedir(dir);
    cr_expect_geq(seen, 20, "only %zu configs read", seen);
    /* compiled walks answered across the families (not every combination:
     * a refused fit walks) */
    cr_expect(compiled >= combos / 2 && answered > compiled,
              "%llu walks compiled, %llu estimates answered by them, over %zu combinations",
              (unsigned long long)compiled, (unsigned long long)answered, combos);
    reference_done();
    llmem_ctx_free(ctx);
}
#endif

/* A fused loss's chunk is a power of two of the tokens: the points of one
 * chunk share a compiled walk, sampled at the caller's chunk. Llama-3.2-1B:
 * vocab 128256 over hidden 2048 is 63 rows a chunk row, so 4033 to 8064
 * tokens take chunk 128, 2017 to 4032 chunk 64. */
Test(cache, fused_loss_chunks_compile_their_walks)
{
    static const uint64_t lo[] = { 4033, 2017 }, hi[] = { 8064, 4032 };
    static const uint64_t seqs[] = { 200, 256, 300, 400, 512, 600, 700, 1000 };
    llmem_ctx *ctx;
    llmem_model *m;
    llmem_train *t;
    llmem_estimate *e;
    uint64_t npoints = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "meta-llama/Llama-3.2-1B", &m), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    llmem_train_set_str(t, LLMEM_TRAIN_LOSS, "chunked");
    for (int chunk = 0; chunk < 2; chunk++)
        for (size_t i = 0; i < N(seqs); i++)
            for (uint64_t b = 2; b * seqs[i] <= hi[chunk]; b++) {
                char what[80];
                if (b * seqs[i] < lo[chunk])
                    continue;
                snprintf(what, sizeof what, "chunked loss b%llu s%llu", (unsigned long long)b,
                         (unsigned long long)seqs[i]);
                set_point(t, b, seqs[i]);
                cr_assert(same_as_fresh(ctx, e, m, t, NULL, what));
                npoints++;
            }
    /* a walk compiled for each chunk once its segments are (a few seqs in),
     * which answers the points after */
    cr_expect_eq(e->walk.compiled, 2, "%llu walks compiled",
                 (unsigned long long)e->walk.compiled);
    cr_expect_geq(e->walk.answered * 3, npoints, "%llu of %llu estimates answered by compiled "
                  "walks", (unsigned long long)e->walk.answered, (unsigned long long)npoints);
    reference_done();
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

/* Layouts: each rank's walk uses the cache (pipeline stages, sharding,
 * tensor and sequence parallelism, context parallelism, experts). */
static const struct {
    const char *label;
    int64_t dp, tp, pp, cp, sp, micro, virtual_stages, ep;
    const char *sharding, *schedule, *offload;
} layouts[] = {
    { "dp2 zero3", 2, 1, 1, 1, 0, 1, 1, 1, "zero3", "1f1b", "none" },
    { "tp2 sp pp2 mb4", 1, 2, 2, 1, 1, 4, 1, 1, "none", "1f1b", "none" },
    { "pp4 interleaved", 1, 1, 4, 1, 0, 8, 2, 1, "none", "interleaved", "none" },
    { "dp4 zero2 offload", 4, 1, 1, 1, 0, 1, 1, 1, "zero2", "1f1b", "optimizer" },
    { "dp2 fsdp cp2", 2, 1, 1, 2, 0, 1, 1, 1, "fsdp-full", "1f1b", "none" },
};

static llmem_parallel *make_layout(llmem_ctx *ctx, size_t i)
{
    llmem_parallel *p;
    cr_assert_eq(llmem_parallel_new(ctx, &p), LLMEM_OK);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_DP, layouts[i].dp);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_TP, layouts[i].tp);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_PP, layouts[i].pp);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_CP, layouts[i].cp);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_SP, layouts[i].sp);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_MICRO_BATCHES, layouts[i].micro);
    llmem_parallel_set_str(p, LLMEM_PARALLEL_SCHEDULE, layouts[i].schedule);
    llmem_parallel_set_int(p, LLMEM_PARALLEL_VIRTUAL_STAGES, layouts[i].virtual_stages);
    llmem_parallel_set_str(p, LLMEM_PARALLEL_SHARDING, layouts[i].sharding);
    llmem_parallel_set_str(p, LLMEM_PARALLEL_OFFLOAD, layouts[i].offload);
    return p;
}

Test(cache, layouts_equal_fresh_handles)
{
    llmem_ctx *ctx;
    static const char *const presets[] = { "meta-llama/Llama-3.1-8B", "openai-community/gpt2",
                                           "google/gemma-2-9b" };
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t pi = 0; pi < N(presets); pi++)
        for (size_t li = 0; li < N(layouts); li++)
            for (size_t si = 0; si < 3; si++) {
                llmem_model *m;
                llmem_train *t;
                llmem_estimate *e;
                char label[200];
                llmem_parallel *p = make_layout(ctx, li);
                cr_assert_eq(llmem_model_new_preset(ctx, presets[pi], &m), LLMEM_OK);
                cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
                cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
                apply_setup(t, si == 2 ? 5 : si); /* fused attention for context parallelism */
                snprintf(label, sizeof label, "%s %s setup %zu", presets[pi], layouts[li].label,
                         si);
                walk_grid(ctx, e, m, t, p, label);
                /* every rank's walk compiled, micro-batches in flight included;
                 * sequence parallelism's segments are never compiled */
                if (layouts[li].pp == 1 && layouts[li].cp == 1 && layouts[li].sp == 0 && si != 2)
                    cr_expect(e->walk.compiled > 0 && e->walk.answered > 0,
                              "%s: %llu walks compiled, %llu estimates answered by them",
                              label, (unsigned long long)e->walk.compiled,
                              (unsigned long long)e->walk.answered);
                llmem_estimate_free(e);
                llmem_parallel_free(p);
                llmem_train_free(t);
                llmem_model_free(m);
            }
    reference_done();
    llmem_ctx_free(ctx);
}

/* The peak at one point, from a handle that may have cached another model's. */
static uint64_t peak_at(llmem_estimate *e, llmem_model *m, llmem_train *t)
{
    uint64_t peak = 0;
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "%s", llmem_ctx_error(e->ctx));
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &peak);
    return peak;
}

/* A model that differs from another only in its dropout probabilities (its
 * config's) never gets the other's cached result: they are model fields, in
 * the resolved model's key, and the probabilities a step runs are in the
 * setup's. Two GPT-2 handles, one with resid_pdrop 0, alternate on one
 * estimate, over points and grids (compiled walks), under eager attention
 * and SDPA; then one handle changed in place. Set, the setup's dropout
 * replaces both models' and they agree. */
Test(cache, dropouts_differing_models_do_not_share_results)
{
    static const char *const kernels[] = { "eager", "sdpa" };
    llmem_ctx *ctx;
    llmem_estimate *e;
    llmem_model *own, *off;
    llmem_train *t;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "openai-community/gpt2", &own), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, "openai-community/gpt2", &off), LLMEM_OK);
    cr_assert_eq(llmem_model_set_double(off, LLMEM_MODEL_HIDDEN_DROPOUT, 0.0), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    for (size_t k = 0; k < N(kernels); k++) {
        char label[64];
        llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, kernels[k]);
        set_point(t, 2, 256);
        uint64_t a = peak_at(e, own, t), b = peak_at(e, off, t);
        cr_expect_gt(a, b, "%s: resid_pdrop 0.1 holds its masks", kernels[k]);
        cr_expect_eq(peak_at(e, own, t), a, "%s: the first model again", kernels[k]);
        snprintf(label, sizeof label, "gpt2 %s, its own dropouts", kernels[k]);
        walk_grid(ctx, e, own, t, NULL, label);
        snprintf(label, sizeof label, "gpt2 %s, resid_pdrop 0", kernels[k]);
        walk_grid(ctx, e, off, t, NULL, label);
        /* set, the setup's dropout is every site's: the two models agree */
        llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, 0.1);
        set_point(t, 2, 256);
        cr_expect_eq(peak_at(e, off, t), a, "%s: dropout 0.1 set", kernels[k]);
        cr_expect_eq(peak_at(e, own, t), a, "%s: dropout 0.1 set", kernels[k]);
        llmem_train_set_str(t, LLMEM_TRAIN_DROPOUT, "model");
    }
    /* The first handle changed in place reads as the second. */
    set_point(t, 2, 256);
    uint64_t before = peak_at(e, own, t);
    cr_assert_eq(llmem_model_set_double(own, LLMEM_MODEL_HIDDEN_DROPOUT, 0.0), LLMEM_OK);
    cr_expect_lt(peak_at(e, own, t), before);
    cr_expect_eq(peak_at(e, own, t), peak_at(e, off, t));
    llmem_train_free(t);
    llmem_model_free(off);
    llmem_model_free(own);
    llmem_estimate_free(e);
    reference_done();
    llmem_ctx_free(ctx);
}

/* One handle through more setups, layouts and models than it keeps (its
 * configurations, contexts and segments are evicted and its arena starts
 * over): every answer still a fresh handle's. */
Test(cache, one_handle_through_many_setups_equals_fresh_handles)
{
    llmem_ctx *ctx;
    really_new = 1;
    llmem_estimate *e;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    unsigned rnd = 777;
    for (int round = 0; round < 400; round++) {
        llmem_model *m;
        llmem_train *t;
        char what[300];
        rnd = rnd * 1103515245u + 12345u;
        size_t pi = (rnd >> 16) % N(grid_presets), si = (rnd >> 8) % N(grid_setups);
        size_t li = (rnd >> 4) % (N(layouts) + 1);
        llmem_parallel *p = li < N(layouts) ? make_layout(ctx, li) : NULL;
        cr_assert_eq(llmem_model_new_preset(ctx, grid_presets[pi], &m), LLMEM_OK);
        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
        apply_setup(t, si);
        for (int k = 0; k < 6; k++) {
            rnd = rnd * 1103515245u + 12345u;
            uint64_t b = grid_batch[(rnd >> 16) % N(grid_batch)];
            uint64_t s = grid_seq[(rnd >> 8) % N(grid_seq)];
            set_point(t, b, s);
            snprintf(what, sizeof what, "round %d %s setup %zu layout %zu b%llu s%llu", round,
                     grid_presets[pi], si, li, (unsigned long long)b, (unsigned long long)s);
            same_as_fresh(ctx, e, m, t, p, what);
        }
        llmem_parallel_free(p);
        llmem_train_free(t);
        llmem_model_free(m);
    }
    llmem_estimate_free(e);
    reference_done();
    llmem_ctx_free(ctx);
}

/* The same under layouts: the polynomials are of the rank's batch and seq.
 * Sequence parallelism's share of the tokens is a division the compile
 * points do not split: OPT-6.7B with 256 heads over 128 ranks (each point's
 * share 0 tokens) failed on a reused handle at batch 2 after batch 1. */
Test(cache, layout_sweeps_on_one_handle_equal_fresh_handles)
{
    static const struct {
        const char *preset;
        int64_t heads;
        const char *precision;
        int64_t tp, sp, pp, cp, dp;
        const char *sharding;
    } sp_layouts[] = {
        { "facebook/opt-6.7b", 256, "fp32", 128, 1, 1, 1, 1, "none" },
        { "meta-llama/Llama-2-7b-hf", 0, "bf16-mixed", 8, 1, 1, 1, 1, "none" },
        { "meta-llama/Llama-2-7b-hf", 0, "bf16-mixed", 2, 1, 2, 1, 2, "zero1" },
        { "openai-community/gpt2", 0, "bf16-mixed", 4, 1, 1, 1, 1, "none" },
        { "meta-llama/Llama-2-7b-hf", 0, "bf16-mixed", 1, 0, 1, 2, 4, "fsdp-full" },
        { "meta-llama/Llama-2-7b-hf", 0, "bf16-mixed", 4, 0, 4, 1, 1, "none" },
    };
    llmem_ctx *ctx;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < N(sp_layouts); i++) {
        llmem_model *m;
        llmem_train *t;
        llmem_parallel *l;
        llmem_estimate *sweep;
        cr_assert_eq(llmem_model_new_preset(ctx, sp_layouts[i].preset, &m), LLMEM_OK);
        if (sp_layouts[i].heads)
            cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, sp_layouts[i].heads), LLMEM_OK);
        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, sp_layouts[i].precision),
                     LLMEM_OK);
        cr_assert_eq(llmem_parallel_new(ctx, &l), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_TP, sp_layouts[i].tp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_SP, sp_layouts[i].sp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_PP, sp_layouts[i].pp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_CP, sp_layouts[i].cp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_DP, sp_layouts[i].dp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, sp_layouts[i].sharding),
                     LLMEM_OK);
        cr_assert_eq(llmem_estimate_new(ctx, &sweep), LLMEM_OK);
        for (size_t k = 0; k < N(points); k++) {
            char what[256];
            set_point(t, points[k][0], points[k][1]);
            snprintf(what, sizeof what, "%s tp %lld sp %lld pp %lld cp %lld b%llu s%llu",
                     sp_layouts[i].preset, (long long)sp_layouts[i].tp, (long long)sp_layouts[i].sp,
                     (long long)sp_layouts[i].pp, (long long)sp_layouts[i].cp,
                     (unsigned long long)points[k][0], (unsigned long long)points[k][1]);
            same_as_fresh(ctx, sweep, m, t, l, what);
        }
        llmem_estimate_free(sweep);
        llmem_parallel_free(l);
        llmem_train_free(t);
        llmem_model_free(m);
    }
    reference_done();
    llmem_ctx_free(ctx);
}

/* Pipeline stages with micro-batches in flight (their stashes added to the
 * moments: walk_compiled's stash) and data parallelism with sharding, over
 * many points on one handle: compiled walks answer, each a fresh handle's
 * answer to the byte. */
Test(cache, compiled_walks_of_pipelines_equal_fresh_handles)
{
    static const struct {
        int64_t pp, micro, dp, virtual_stages;
        const char *sharding, *schedule;
    } pipes[] = {
        { 2, 2, 1, 1, "none", "1f1b" },
        { 4, 4, 1, 1, "none", "1f1b" },
        { 2, 4, 1, 2, "none", "interleaved" },
        { 1, 1, 2, 1, "zero3", "1f1b" },
        { 2, 4, 2, 1, "fsdp-grad-op", "1f1b" }, /* layers kept gathered, micro-batches in flight */
    };
    static const uint64_t batches[] = { 1, 2, 3, 4, 5, 6, 7, 9 }, seqs[] = { 8, 12, 64, 300, 1024 };
    llmem_ctx *ctx;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < N(pipes); i++) {
        llmem_model *m;
        llmem_train *t;
        llmem_parallel *l;
        llmem_estimate *sweep;
        cr_assert_eq(llmem_model_new_preset(ctx, "meta-llama/Llama-3.2-1B", &m), LLMEM_OK);
        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
        cr_assert_eq(llmem_parallel_new(ctx, &l), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_PP, pipes[i].pp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_DP, pipes[i].dp), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, pipes[i].sharding),
                     LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SCHEDULE, pipes[i].schedule),
                     LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_VIRTUAL_STAGES,
                                            pipes[i].virtual_stages), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_MICRO_BATCHES, pipes[i].micro),
                     LLMEM_OK);
        cr_assert_eq(llmem_estimate_new(ctx, &sweep), LLMEM_OK);
        /* the batch is the step's: micro-batches x dp x each rank's batch */
        uint64_t per = (uint64_t)(pipes[i].micro * pipes[i].dp);
        for (int round = 0; round < 2; round++)
            for (size_t si = 0; si < N(seqs); si++)
                for (size_t bi = 0; bi < N(batches); bi++) {
                    char what[256];
                    set_point(t, per * batches[bi], seqs[si]);
                    snprintf(what, sizeof what, "pp %lld mb %lld dp %lld %s %s b%llu s%llu",
                             (long long)pipes[i].pp, (long long)pipes[i].micro,
                             (long long)pipes[i].dp, pipes[i].sharding, pipes[i].schedule,
                             (unsigned long long)(per * batches[bi]),
                             (unsigned long long)seqs[si]);
                    if (!same_as_fresh(ctx, sweep, m, t, l, what))
                        goto next;
                }
        /* each rank's walk compiled: ranks taking one slot would evict each other */
        cr_expect(sweep->walk.compiled >= llmem_estimate_rank_count(sweep) && sweep->walk.answered > 0,
                  "pp %lld mb %lld: %llu walks compiled, %llu estimates answered by them",
                  (long long)pipes[i].pp, (long long)pipes[i].micro,
                  (unsigned long long)sweep->walk.compiled,
                  (unsigned long long)sweep->walk.answered);
    next:
        llmem_estimate_free(sweep);
        llmem_parallel_free(l);
        llmem_train_free(t);
        llmem_model_free(m);
    }
    reference_done();
    llmem_ctx_free(ctx);
}

/* Small grids swept again and again, in either order: the second pass
 * simulates nothing. With seq moving fastest over four seqs a column is
 * fitted at each batch and the batch moves on before any call is answered
 * from it (the lift cannot wait for such a call); with two batches (or
 * three seqs) an entry's samples must hold four of one batch (three of one
 * seq) among the other's, to fit a column (a row). */
static const struct {
    uint64_t batches, seqs;
    int seq_fastest;
} small_grids[] = { { 16, 4, 1 }, { 2, 6, 0 }, { 8, 3, 1 }, { 3, 2, 0 }, { 5, 5, 1 } };

Test(cache, small_grids_swept_again_simulate_nothing)
{
    fixture f = open_job_handles("meta-llama/Llama-3.2-1B");
    for (size_t g = 0; g < N(small_grids); g++) {
        uint64_t nb = small_grids[g].batches, ns = small_grids[g].seqs, simulated = 0;
        llmem_estimate_forget(f.e); /* as new */
        for (int pass = 0; pass < 2; pass++) {
            for (uint64_t k = 0; k < nb * ns; k++) {
                uint64_t bi = small_grids[g].seq_fastest ? k / ns : k % nb;
                uint64_t si = small_grids[g].seq_fastest ? k % ns : k / nb;
                char what[100];
                set_point(f.t, 2 + 3 * bi, 256 + 384 * si);
                snprintf(what, sizeof what, "grid %zu pass %d b%llu s%llu", g, pass,
                         (unsigned long long)(2 + 3 * bi), (unsigned long long)(256 + 384 * si));
                if (!same_as_fresh(f.ctx, f.e, f.m, f.t, NULL, what))
                    cr_assert_fail("%s differs from a fresh handle", what);
            }
            if (pass == 0)
                simulated = f.e->walk.simulated;
        }
        cr_expect(simulated > 0);
        cr_expect_eq(f.e->walk.simulated, simulated,
                     "%llu x %llu, %s fastest: the second pass simulated %llu segments",
                     (unsigned long long)nb, (unsigned long long)ns,
                     small_grids[g].seq_fastest ? "seq" : "batch",
                     (unsigned long long)(f.e->walk.simulated - simulated));
    }
    reference_done();
    close_fixture(&f);
}
