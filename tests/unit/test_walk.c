/* SPDX-License-Identifier: MIT */
/*
 * White-box checks of the estimator's bookkeeping, over a table of models and
 * setups:
 *  - every byte the forward and backward walk allocates is released or kept
 *    as a gradient: backward ends with exactly weights + buffers + states +
 *    batch + gradients live;
 *  - the parameter tensors the optimizer and the allocator iterate over add
 *    up to the model's exact parameter count;
 *  - each simulated segment ends its backward with exactly its parameter
 *    gradients and its input's gradient live.
 */
#include "estimate/estimate.h"
#include "estimate/layers.h"
#include "estimate/tensors.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

static const char *const presets[] = { "openai-community/gpt2", "meta-llama/Llama-3.2-1B",
                                       "Qwen/Qwen2.5-0.5B" };
static const char *const precisions[] = { "fp32", "bf16-mixed", "bf16" };
static const char *const methods[] = { "full", "lora", "freeze", "qlora" };
static const char *const ckpts[] = { "none", "full" };
static const char *const attentions[] = { "eager", "flash" };
static const char *const losses[] = { "upcast", "chunked" };

#define N(a) (sizeof a / sizeof a[0])

typedef struct walk_case {
    size_t preset, precision, method, ckpt, attention, loss;
    int dropout, accum;
} walk_case;

ParameterizedTestParameters(walk, backward_releases_everything)
{
    static walk_case cases[N(presets) * N(precisions) * N(methods) * N(ckpts) * N(attentions) *
                           N(losses) * 2];
    size_t n = 0;
    for (size_t a = 0; a < N(presets); a++)
        for (size_t b = 0; b < N(precisions); b++)
            for (size_t c = 0; c < N(methods); c++)
                for (size_t d = 0; d < N(ckpts); d++)
                    for (size_t e = 0; e < N(attentions); e++)
                        for (size_t f = 0; f < N(losses); f++)
                            for (int g = 0; g < 2; g++)
                                cases[n++] = (walk_case){ a, b, c, d, e, f, g, g };
    return cr_make_param_array(walk_case, cases, n);
}

ParameterizedTest(walk_case *c, walk, backward_releases_everything)
{
    llmem_ctx *ctx;
    llmem_model *m;
    llmem_train *t;
    llmem_estimate *e;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(ctx, presets[c->preset], &m), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, precisions[c->precision]);
    llmem_train_set_str(t, LLMEM_TRAIN_METHOD, methods[c->method]);
    if (c->method == 2)
        llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, 3);
    llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, ckpts[c->ckpt]);
    llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, attentions[c->attention]);
    llmem_train_set_str(t, LLMEM_TRAIN_LOSS, losses[c->loss]);
    llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, c->dropout ? 0.1 : 0.0);
    llmem_train_set_int(t, LLMEM_TRAIN_GRAD_ACCUM, c->accum ? 4 : 1);
    llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 2);
    llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 256);
    int rc = llmem_estimate_run(e, m, t);
    if (c->method == 3 && c->precision == 0) {
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "qlora with fp32 must be refused");
    } else {
        cr_assert_eq(rc, LLMEM_OK, "%s", llmem_ctx_error(ctx));
        uint64_t fixed = 0;
        for (int k = LLMEM_TERM_PARAMETERS; k <= LLMEM_TERM_DATA; k++) {
            const llmem_term *term;
            cr_assert_eq(llmem_estimate_term(e, k, &term), LLMEM_OK);
            fixed += llmem_term_max_bytes(term);
        }
        cr_expect_eq(e->end_of_backward, fixed,
                     "%s %s %s ckpt=%s %s %s dropout=%d accum=%d: backward ends with %llu live, "
                     "expected weights + states + batch + gradients = %llu",
                     presets[c->preset], precisions[c->precision], methods[c->method],
                     ckpts[c->ckpt], attentions[c->attention], losses[c->loss], c->dropout,
                     c->accum, (unsigned long long)e->end_of_backward,
                     (unsigned long long)fixed);
    }
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

Test(walk, tensor_classes_add_up_to_the_parameter_count)
{
    llmem_ctx *ctx;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        llmem_model *mm;
        model_shape m;
        model_params p;
        setup s;
        tensor_list l;
        cr_assert_eq(llmem_model_new_preset(ctx, llmem_preset_name(i), &mm), LLMEM_OK);
        cr_assert_eq(model_resolve(mm, &m, &p), LLMEM_OK);
        memset(&s, 0, sizeof s);
        s.method = LLMEM_METHOD_FULL;
        s.param_dt = 4;
        step_tensors(&m, &p, &s, &l);
        uint64_t sum = 0;
        for (int k = 0; k < l.n; k++)
            sum += class_elems(&l.c[k]) * l.c[k].count;
        cr_expect_eq(sum, p.total, "%s: tensor classes hold %llu parameters, the model %llu",
                     llmem_preset_name(i), (unsigned long long)sum,
                     (unsigned long long)p.total);
        llmem_model_free(mm);
    }
    llmem_ctx_free(ctx);
}

/* One segment's backward, alone: what is left is its parameters' gradients,
 * its input's gradient and, under checkpointing, the recomputed output. */
Test(walk, segments_end_backward_with_their_gradients)
{
    static graph g;
    llmem_ctx *ctx;
    llmem_model *mm;
    model_shape m;
    model_params p;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    const seg_spec specs[] = {
        { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 },
        { .input_rg = 0, .weights_trainable = 1, .norms_trainable = 1 },
        { .input_rg = 1, .lora_targets = 127, .lora_rank = 8 },
        { .input_rg = 0, .lora_targets = 5, .lora_rank = 16 },
    };
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        cr_assert_eq(llmem_model_new_preset(ctx, llmem_preset_name(i), &mm), LLMEM_OK);
        cr_assert_eq(model_resolve(mm, &m, &p), LLMEM_OK);
        if (m.family == LLMEM_FAMILY_OPT || m.family == LLMEM_FAMILY_BLOOM) {
            llmem_model_free(mm);
            continue;
        }
        for (size_t k = 0; k < N(specs); k++)
            for (int hold = 0; hold < 2; hold++) {
                build b = { .g = &g, .batch = 2, .seq = 128, .tokens = 256, .autocast = 1,
                            .compute = 2, .param_dt = 4, .dropout = 0.1, .hold_input = hold };
                seg_cost c;
                graph_reset(&g, 1);
                build_layer(&b, &m, &specs[k]);
                cr_assert_eq(g.overflow, 0, "%s: the graph ran out of room", llmem_preset_name(i));
                graph_simulate(&g, hold, &c);
                cr_expect_eq(c.bwd_end, c.param_grads + c.input_grad + (hold ? c.out_bytes : 0),
                             "%s spec %zu hold %d: backward ends with %llu, expected %llu",
                             llmem_preset_name(i), k, hold, (unsigned long long)c.bwd_end,
                             (unsigned long long)(c.param_grads + c.input_grad +
                                                  (hold ? c.out_bytes : 0)));
                cr_expect_geq(c.bwd_peak, c.bwd_start);
                cr_expect_geq(c.fwd_peak, c.persist);
            }
        llmem_model_free(mm);
    }
    llmem_ctx_free(ctx);
}
