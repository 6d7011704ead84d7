/* SPDX-License-Identifier: MIT */
/*
 * How a step runs, through the public API: the defaults (what transformers
 * 5.x with PyTorch 2.11 does), the optimizer implementations (fused, foreach,
 * forloop), the checkpointing variants (reentrant, non-reentrant, and "full"
 * as transformers' default), LoRA dropout, and SDPA's backends. Byte counts
 * that follow from the sources by hand are checked exactly.
 */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <string.h>

#include "llmem.h"

static llmem_ctx *ctx;
static llmem_estimate *est;

static void setup_est(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &est), LLMEM_OK);
}

static void teardown_est(void)
{
    llmem_estimate_free(est);
    llmem_ctx_free(ctx);
}

#define U64(x) ((uint64_t)(x))

typedef struct result {
    uint64_t allocated, reserved, phase[5], states, grads_max;
} result;

typedef struct knob {
    int key;
    const char *text; /* set by name */
    double real;      /* set as a real when text is NULL */
} knob;

static void run_with(llmem_model *m, const knob *knobs, size_t n, result *r)
{
    llmem_train *t = NULL;
    const llmem_term *term;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    for (size_t i = 0; i < n; i++) {
        int rc = knobs[i].text ? llmem_train_set_str(t, knobs[i].key, knobs[i].text)
                               : llmem_train_set_double(t, knobs[i].key, knobs[i].real);
        cr_assert_eq(rc, LLMEM_OK, "key %d: %s", knobs[i].key, llmem_ctx_error(ctx));
    }
    cr_assert_eq(llmem_estimate_run(est, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    memset(r, 0, sizeof *r);
    llmem_estimate_get_u64(est, LLMEM_EST_PEAK_ALLOCATED, &r->allocated);
    llmem_estimate_get_u64(est, LLMEM_EST_PEAK_RESERVED, &r->reserved);
    for (int p = LLMEM_PHASE_FORWARD; p <= LLMEM_PHASE_OPTIMIZER; p++)
        llmem_estimate_phase_bytes(est, p, &r->phase[p]);
    cr_assert_eq(llmem_estimate_term(est, LLMEM_TERM_OPTIMIZER, &term), LLMEM_OK);
    r->grads_max = llmem_term_max_bytes(term);
    for (size_t i = 0; i < llmem_term_component_count(term); i++) {
        const char *name;
        uint64_t bytes;
        llmem_term_component(term, i, &name, &bytes);
        if (strcmp(name, "states") == 0)
            r->states = bytes;
    }
    llmem_train_free(t);
}

#define RUN(m, r, ...)                                              \
    do {                                                            \
        const knob k_[] = { __VA_ARGS__ };                          \
        run_with((m), k_, sizeof k_ / sizeof k_[0], (r));           \
    } while (0)
#define S(key, text) { LLMEM_TRAIN_##key, text, 0 }
#define R(key, value) { LLMEM_TRAIN_##key, NULL, value }

static llmem_model *preset(const char *name)
{
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new_preset(ctx, name, &m), LLMEM_OK, "%s", name);
    return m;
}

/* A small Llama: hidden 64, 2 layers of 4 heads (kv 4), MLP 128, vocab 1000,
 * untied head: 21 trainable tensors (embedding, 2 x 7 linears, 2 x 2 norms,
 * the final norm, the head). */
static llmem_model *small_llama(void)
{
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, &m), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, 64), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_LAYERS, 2), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, 4), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_INTERMEDIATE, 128), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_VOCAB, 1000), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_TIE_EMBEDDINGS, 0), LLMEM_OK);
    return m;
}

/* ---- the defaults ------------------------------------------------------- */

/* A setup left alone is SDPA with the fused AdamW step, no checkpointing and
 * no LoRA dropout: the same estimate as those set by hand, and not the
 * eager/foreach one of 0.1 (the example: Llama-3.1-8B, b4 x s2048). */
Test(steps, defaults_are_what_transformers_does, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = preset("meta-llama/Llama-3.1-8B");
    result d, spelled, old;
    RUN(m, &d, S(BATCH, "4"), S(SEQ, "2048"));
    RUN(m, &spelled, S(BATCH, "4"), S(SEQ, "2048"), S(ATTENTION, "sdpa"),
        S(OPTIMIZER, "adamw_torch_fused"), S(GRAD_CKPT, "none"), R(LORA_DROPOUT, 0.0));
    RUN(m, &old, S(BATCH, "4"), S(SEQ, "2048"), S(ATTENTION, "eager"),
        S(OPTIMIZER_IMPL, "foreach"));
    cr_expect_eq(d.allocated, spelled.allocated);
    cr_expect_eq(d.reserved, spelled.reserved);
    cr_expect_lt(d.allocated, old.allocated, "SDPA + fused %" PRIu64 ", eager + foreach %" PRIu64,
                 d.allocated, old.allocated);
    /* Eager attention keeps fp32 and bf16 probabilities, 6 bytes a score, in
     * each of 32 layers: SDPA keeps none of them. */
    uint64_t probs = U64(32) * 4 * 32 * 2048 * 2048 * 6;
    cr_expect_gt(old.phase[LLMEM_PHASE_FORWARD] - d.phase[LLMEM_PHASE_FORWARD], probs);
    llmem_model_free(m);
}

/* ---- the optimizer implementations -------------------------------------- */

/* Full fp32 fine-tuning of the small Llama, AdamW. The step's transient:
 *  - foreach: _foreach_sqrt over the decay group (the matrices): 2 x 64,000
 *    (embedding, head) + 2 x (4 x 4,096 + 3 x 8,192) elements, 4 bytes each;
 *  - forloop: the largest previous + 2 x current in the group's order, here
 *    the last down_proj (8,192) then the head (64,000): 136,192 elements;
 *  - fused: none, but 21 step counters of 4 bytes on the GPU (states),
 *    each in a 512-byte block of the caching allocator. */
Test(steps, adamw_step_by_implementation, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = small_llama();
    result fused, foreach, forloop;
    RUN(m, &fused, S(PRECISION, "fp32"), S(OPTIMIZER_IMPL, "fused"), S(SEQ, "8"));
    RUN(m, &foreach, S(PRECISION, "fp32"), S(OPTIMIZER_IMPL, "foreach"), S(SEQ, "8"));
    RUN(m, &forloop, S(PRECISION, "fp32"), S(OPTIMIZER_IMPL, "forloop"), S(SEQ, "8"));
    uint64_t sqrt_group = (U64(2) * 64000 + 2 * (4 * 4096 + 3 * 8192)) * 4;
    uint64_t denom = (U64(8192) + 2 * 64000) * 4, counters = U64(21) * 4;
    cr_expect_eq(foreach.phase[LLMEM_PHASE_OPTIMIZER] - forloop.phase[LLMEM_PHASE_OPTIMIZER],
                 sqrt_group - denom);
    cr_expect_eq(forloop.phase[LLMEM_PHASE_OPTIMIZER] - fused.phase[LLMEM_PHASE_OPTIMIZER],
                 denom - counters);
    cr_expect_eq(fused.states - foreach.states, counters);
    cr_expect_eq(forloop.states, foreach.states, "step counters stay on the host");
    cr_expect_eq((fused.reserved - fused.allocated) - (foreach.reserved - foreach.allocated),
                 U64(21) * (512 - 4), "each counter rounds to a 512-byte block");
    llmem_model_free(m);
}

/* Only torch.optim's AdamW and Adam step differently by implementation; SGD
 * updates in place in all three, and the others run their own kernels (an
 * implementation set for them is refused). */
Test(steps, implementation_matters_only_for_adam, .init = setup_est, .fini = teardown_est)
{
    static const char *const same[] = { "sgd", "sgd-momentum" };
    static const char *const own[] = { "adafactor", "adamw-8bit", "lion", "lion-32bit",
                                       "paged-lion-8bit" };
    static const char *const impls[] = { "fused", "foreach", "forloop" };
    llmem_model *m = preset("meta-llama/Llama-3.2-1B");
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        llmem_train *t = NULL;
        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER, own[i]), LLMEM_OK);
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER_IMPL, "foreach"), LLMEM_OK);
        cr_expect_eq(llmem_estimate_run(est, m, t), LLMEM_EINCONSISTENT, "%s", own[i]);
        llmem_train_free(t);
    }
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        result r[3];
        for (size_t k = 0; k < 3; k++)
            RUN(m, &r[k], S(OPTIMIZER, same[i]), S(OPTIMIZER_IMPL, impls[k]));
        for (size_t k = 1; k < 3; k++) {
            cr_expect_eq(r[k].allocated, r[0].allocated, "%s %s", same[i], impls[k]);
            cr_expect_eq(r[k].phase[LLMEM_PHASE_OPTIMIZER], r[0].phase[LLMEM_PHASE_OPTIMIZER],
                         "%s %s", same[i], impls[k]);
        }
    }
    result adam[3];
    for (size_t k = 0; k < 3; k++)
        RUN(m, &adam[k], S(OPTIMIZER, "adam"), S(OPTIMIZER_IMPL, impls[k]), S(SEQ, "16"));
    cr_expect_lt(adam[0].phase[LLMEM_PHASE_OPTIMIZER], adam[2].phase[LLMEM_PHASE_OPTIMIZER]);
    cr_expect_lt(adam[2].phase[LLMEM_PHASE_OPTIMIZER], adam[1].phase[LLMEM_PHASE_OPTIMIZER]);
    llmem_model_free(m);
}

/* bitsandbytes' Lion: one state, fp32 at 32 bits (4 bytes a parameter), one
 * byte plus an fp32 absmax per 256 at 8 bits; lion-pytorch's is like the
 * parameter. Llama-3.2-1B's tensors all hold 4,096 elements or more. */
Test(steps, bitsandbytes_lion_states, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = preset("meta-llama/Llama-3.2-1B");
    uint64_t P = 0;
    cr_assert_eq(llmem_model_param_count(m, &P), LLMEM_OK);
    result l32, l8, paged;
    RUN(m, &l32, S(OPTIMIZER, "lion_32bit"), S(PRECISION, "bf16"));
    RUN(m, &l8, S(OPTIMIZER, "lion_8bit"), S(PRECISION, "bf16"));
    RUN(m, &paged, S(OPTIMIZER, "paged_lion_32bit"), S(PRECISION, "bf16"));
    cr_expect_eq(l32.states, P * 4, "fp32 states of bf16 parameters");
    /* 33 norm weights of 2,048 (under 4,096: fp32 states); the matrices'
     * sizes are multiples of 256: one byte each plus 4 bytes per 256. */
    uint64_t norms = U64(33) * 2048, matrices = P - norms;
    cr_expect_eq(l8.states, matrices + matrices / 256 * 4 + norms * 4);
    cr_expect_eq(paged.states, 0, "paged states are outside torch's allocator");
    llmem_model_free(m);
}

/* ---- gradient checkpointing --------------------------------------------- */

/* "full" is what transformers does by default: non-reentrant. The
 * non-reentrant recomputation stops at the last saved tensor and holds
 * neither the recomputed output nor the incoming gradient: its backward never
 * holds more than the reentrant one's; their forwards are the same. */
Test(steps, checkpointing_variants, .init = setup_est, .fini = teardown_est)
{
    static const char *const presets[] = { "gpt2", "meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B" };
    static const char *const methods[] = { "full", "lora" };
    static const char *const precisions[] = { "fp32", "bf16-mixed", "bf16" };
    static const char *const attentions[] = { "eager", "sdpa" };
    for (size_t p = 0; p < 3; p++) {
        llmem_model *m = preset(presets[p]);
        for (size_t i = 0; i < 2; i++)
            for (size_t q = 0; q < 3; q++)
                for (size_t a = 0; a < 2; a++) {
                    result full, nonre, re;
                    RUN(m, &full, S(GRAD_CKPT, "full"), S(METHOD, methods[i]),
                        S(PRECISION, precisions[q]), S(ATTENTION, attentions[a]), S(BATCH, "2"));
                    RUN(m, &nonre, S(GRAD_CKPT, "non-reentrant"), S(METHOD, methods[i]),
                        S(PRECISION, precisions[q]), S(ATTENTION, attentions[a]), S(BATCH, "2"));
                    RUN(m, &re, S(GRAD_CKPT, "reentrant"), S(METHOD, methods[i]),
                        S(PRECISION, precisions[q]), S(ATTENTION, attentions[a]), S(BATCH, "2"));
                    for (int ph = LLMEM_PHASE_FORWARD; ph <= LLMEM_PHASE_OPTIMIZER; ph++)
                        cr_expect_eq(full.phase[ph], nonre.phase[ph], "%s %s %s %s phase %d",
                                     presets[p], methods[i], precisions[q], attentions[a], ph);
                    cr_expect_eq(nonre.phase[LLMEM_PHASE_FORWARD],
                                 re.phase[LLMEM_PHASE_FORWARD]);
                    cr_expect_leq(nonre.phase[LLMEM_PHASE_BACKWARD],
                                  re.phase[LLMEM_PHASE_BACKWARD], "%s %s %s %s", presets[p],
                                  methods[i], precisions[q], attentions[a]);
                }
        llmem_model_free(m);
    }
}

/* ---- LoRA dropout ------------------------------------------------------- */

/* With p > 0 each adapted module saves its own dropout's output and a 1-byte
 * mask. fp32, adapters on q_proj only: lora_A saved its input h (the norm's
 * output, which nothing else saves); with dropout it saves the dropout's
 * output, as large, and the mask: per layer, tokens x hidden bytes more at
 * the end of forward. Full fine-tuning has no adapters to drop for. */
Test(steps, lora_dropout, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = preset("meta-llama/Llama-3.2-1B");
    result off, on;
    RUN(m, &off, S(METHOD, "lora"), S(LORA_TARGETS, "q_proj"), S(PRECISION, "fp32"),
        S(BATCH, "2"), S(SEQ, "256"));
    RUN(m, &on, S(METHOD, "lora"), S(LORA_TARGETS, "q_proj"), S(PRECISION, "fp32"),
        S(BATCH, "2"), S(SEQ, "256"), R(LORA_DROPOUT, 0.1));
    cr_expect_gt(on.allocated, off.allocated);
    /* The first layer's input needs no gradient (the frozen embedding's
     * output): its dropout records no node, and its mask goes at once. */
    cr_expect_eq(on.phase[LLMEM_PHASE_FORWARD] - off.phase[LLMEM_PHASE_FORWARD],
                 U64(15) * 2 * 256 * 2048, "a 1-byte mask of [2, 256, 2048] in 15 of 16 layers");
    /* Full fine-tuning reads no LoRA dropout: set, it is refused. */
    llmem_train *t = NULL;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_LORA_DROPOUT, 0.1), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run(est, m, t), LLMEM_EINCONSISTENT);
    llmem_train_free(t);
    llmem_model_free(m);
}

/* ---- SDPA's backends ---------------------------------------------------- */

/* 16-bit inputs run a fused kernel (cuDNN or flash): SDPA under bf16 autocast
 * casts q, k and v as --attention flash does and saves the same tensors.
 * FlashAttention-2 takes no fp32 (flash_runs_where_flash_attn_does). fp32
 * with grouped kv heads falls back to SDPA's math path, which saves the fp32
 * probabilities [B, H, S, S] of every layer: a term in S^2 that no fused
 * kernel has. */
Test(steps, sdpa_backends, .init = setup_est, .fini = teardown_est)
{
    static const char *const sixteen[] = { "bf16-mixed", "bf16" };
    static const char *const presets[] = { "gpt2", "meta-llama/Llama-3.2-1B" };
    for (size_t p = 0; p < 2; p++) {
        llmem_model *m = preset(presets[p]);
        for (size_t q = 0; q < 2; q++) {
            result sdpa, flash;
            RUN(m, &sdpa, S(ATTENTION, "sdpa"), S(PRECISION, sixteen[q]), S(BATCH, "2"));
            RUN(m, &flash, S(ATTENTION, "flash"), S(PRECISION, sixteen[q]), S(BATCH, "2"));
            cr_expect_eq(sdpa.allocated, flash.allocated, "%s %s", presets[p], sixteen[q]);
        }
        llmem_model_free(m);
    }

    /* The math path's forward, second difference over seq 512, 1024, 2048:
     * c (2048^2 - 2 x 1024^2 + 512^2) for its S^2 coefficient c, at least the
     * probabilities' 16 layers x batch 2 x 32 heads x 4 bytes. */
    llmem_model *gqa = preset("meta-llama/Llama-3.2-1B"); /* 32 heads, 8 kv heads */
    result at[3];
    RUN(gqa, &at[0], S(ATTENTION, "sdpa"), S(PRECISION, "fp32"), S(BATCH, "2"), S(SEQ, "512"));
    RUN(gqa, &at[1], S(ATTENTION, "sdpa"), S(PRECISION, "fp32"), S(BATCH, "2"), S(SEQ, "1024"));
    RUN(gqa, &at[2], S(ATTENTION, "sdpa"), S(PRECISION, "fp32"), S(BATCH, "2"), S(SEQ, "2048"));
    uint64_t f0 = at[0].phase[LLMEM_PHASE_FORWARD], f1 = at[1].phase[LLMEM_PHASE_FORWARD],
             f2 = at[2].phase[LLMEM_PHASE_FORWARD];
    uint64_t probs = U64(16) * 2 * 32 * 4, second = U64(2048) * 2048 - 2 * U64(1024) * 1024 +
                                                    U64(512) * 512;
    cr_expect_geq(f2 + f0 - 2 * f1, probs * second,
                  "the math path saves each layer's fp32 probabilities");
    llmem_model_free(gqa);
}

/* What FlashAttention-2 runs, and nothing else: fp16 or bf16 inputs (fp32
 * without autocast refused), head dimensions up to 256, Ampere or newer
 * GPUs (a GPU named older refused; AMD's CDNA and no GPU named taken). */
static int run_flash(llmem_model *m, const char *precision, const char *gpu)
{
    llmem_train *t = NULL;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, "flash"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, precision), LLMEM_OK);
    if (gpu != NULL)
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_GPU, gpu), LLMEM_OK);
    int rc = llmem_estimate_run(est, m, t);
    llmem_train_free(t);
    return rc;
}

Test(steps, flash_runs_where_flash_attn_does, .init = setup_est, .fini = teardown_est)
{
    static const char *const runs[] = { "bf16-mixed", "fp16-mixed", "bf16", "bf16-autocast" };
    static const char *const newer[] = { "A100-40GB", "RTX-4090", "H100-SXM", "B200",
                                         "RTX-5090", "MI300X" };
    static const char *const older[] = { "V100-16GB", "T4" };
    llmem_model *m = preset("meta-llama/Llama-3.2-1B");
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        cr_expect_eq(run_flash(m, runs[i], NULL), LLMEM_OK, "%s", runs[i]);
    cr_expect_eq(run_flash(m, "fp32", NULL), LLMEM_EINCONSISTENT);
    cr_expect(strstr(llmem_ctx_error(ctx), "fp16 or bf16") != NULL, "%s", llmem_ctx_error(ctx));
    for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++)
        cr_expect_eq(run_flash(m, "bf16-mixed", newer[i]), LLMEM_OK, "%s", newer[i]);
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++) {
        cr_expect_eq(run_flash(m, "fp16-mixed", older[i]), LLMEM_EINCONSISTENT, "%s", older[i]);
        cr_expect(strstr(llmem_ctx_error(ctx), older[i]) != NULL &&
                      strstr(llmem_ctx_error(ctx), "sm_80") != NULL,
                  "%s", llmem_ctx_error(ctx));
    }
    /* Head dimensions: 256 runs, 512 does not. */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEAD_DIM, 256), LLMEM_OK);
    cr_expect_eq(run_flash(m, "bf16-mixed", NULL), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEAD_DIM, 512), LLMEM_OK);
    cr_expect_eq(run_flash(m, "bf16-mixed", NULL), LLMEM_EINCONSISTENT);
    cr_expect(strstr(llmem_ctx_error(ctx), "head-dim 512") != NULL, "%s", llmem_ctx_error(ctx));
    llmem_model_free(m);
}

/* ---- the model's own dropouts ------------------------------------------- */

static void set_model_dropouts(llmem_model *m, double attention, double hidden, double embedding)
{
    cr_assert_eq(llmem_model_set_double(m, LLMEM_MODEL_ATTENTION_DROPOUT, attention), LLMEM_OK);
    cr_assert_eq(llmem_model_set_double(m, LLMEM_MODEL_HIDDEN_DROPOUT, hidden), LLMEM_OK);
    cr_assert_eq(llmem_model_set_double(m, LLMEM_MODEL_EMBEDDING_DROPOUT, embedding), LLMEM_OK);
}

/* The Trainer runs the model in train mode: unset, each dropout site runs at
 * the model's own probability. GPT-2's are all 0.1 (attn_pdrop, resid_pdrop,
 * embd_pdrop): its default estimate is dropout 0.1's, on every kernel and
 * precision, and above dropout 0's. */
Test(steps, dropout_is_the_models_own, .init = setup_est, .fini = teardown_est)
{
    static const char *const presets[] = { "openai-community/gpt2", "gpt2-medium" };
    static const char *const kernels[] = { "eager", "sdpa" };
    static const char *const precisions[] = { "fp32", "bf16-mixed" };
    for (size_t p = 0; p < 2; p++) {
        llmem_model *m = preset(presets[p]);
        for (size_t k = 0; k < 4; k++) {
            const char *kernel = kernels[k / 2], *precision = precisions[k % 2];
            result own, all, none;
            RUN(m, &own, S(ATTENTION, kernel), S(PRECISION, precision), S(BATCH, "2"));
            RUN(m, &all, S(ATTENTION, kernel), S(PRECISION, precision), S(BATCH, "2"),
                R(DROPOUT, 0.1));
            RUN(m, &none, S(ATTENTION, kernel), S(PRECISION, precision), S(BATCH, "2"),
                R(DROPOUT, 0.0));
            cr_expect_eq(own.allocated, all.allocated, "%s %s %s", presets[p], kernel, precision);
            cr_expect_eq(own.reserved, all.reserved, "%s %s %s", presets[p], kernel, precision);
            cr_expect_gt(own.allocated, none.allocated, "%s %s %s", presets[p], kernel,
                         precision);
        }
        llmem_model_free(m);
    }
}

/* OPT's sites differ: dropout 0.1 on the attention and MLP outputs, none on
 * the attention probabilities (attention_dropout 0). Under eager attention,
 * where the probabilities' dropout keeps a mask, its default is neither
 * dropout 0's nor 0.1's; with the model's attention dropout at 0.1 it is
 * 0.1's, with its hidden dropout at 0 it is 0's: each site reads its own. */
Test(steps, dropout_sites_read_their_own, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = preset("facebook/opt-125m");
    result own, all, none, attention_too, hidden_off;
    RUN(m, &own, S(ATTENTION, "eager"), S(BATCH, "2"));
    RUN(m, &all, S(ATTENTION, "eager"), S(BATCH, "2"), R(DROPOUT, 0.1));
    RUN(m, &none, S(ATTENTION, "eager"), S(BATCH, "2"), R(DROPOUT, 0.0));
    cr_expect_lt(none.allocated, own.allocated);
    cr_expect_lt(own.allocated, all.allocated);
    set_model_dropouts(m, 0.1, 0.1, 0.0);
    RUN(m, &attention_too, S(ATTENTION, "eager"), S(BATCH, "2"));
    cr_expect_eq(attention_too.allocated, all.allocated);
    set_model_dropouts(m, 0.0, 0.0, 0.0);
    RUN(m, &hidden_off, S(ATTENTION, "eager"), S(BATCH, "2"));
    cr_expect_eq(hidden_off.allocated, none.allocated);
    /* Set, the setup's dropout replaces every site's: 0.1 runs 0.1 at all three. */
    RUN(m, &attention_too, S(ATTENTION, "eager"), S(BATCH, "2"), R(DROPOUT, 0.1));
    cr_expect_eq(attention_too.allocated, all.allocated);
    llmem_model_free(m);
}

/* dropout 0 set turns every site off, whatever the model's: GPT-2 with
 * dropout 0 is GPT-2 with its three probabilities at 0. */
Test(steps, dropout_zero_turns_every_site_off, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = preset("openai-community/gpt2");
    result zero, zeroed;
    RUN(m, &zero, S(ATTENTION, "eager"), S(BATCH, "2"), R(DROPOUT, 0.0));
    set_model_dropouts(m, 0.0, 0.0, 0.0);
    RUN(m, &zeroed, S(ATTENTION, "eager"), S(BATCH, "2"));
    cr_expect_eq(zero.allocated, zeroed.allocated);
    cr_expect_eq(zero.reserved, zeroed.reserved);
    llmem_model_free(m);
}

/* Phi-3's decoder layer drops out the attention's and the MLP's outputs
 * (resid_attn_dropout, resid_mlp_dropout): with SDPA's fused kernel, whose
 * attention dropout keeps no mask, dropout 0.1 still holds more than 0. */
Test(steps, phi3_residual_dropouts, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = preset("microsoft/Phi-3-mini-4k-instruct");
    result with, without;
    RUN(m, &with, S(ATTENTION, "sdpa"), S(PRECISION, "bf16-mixed"), R(DROPOUT, 0.1));
    RUN(m, &without, S(ATTENTION, "sdpa"), S(PRECISION, "bf16-mixed"), R(DROPOUT, 0.0));
    cr_expect_gt(with.phase[LLMEM_PHASE_FORWARD], without.phase[LLMEM_PHASE_FORWARD]);
    llmem_model_free(m);
}
