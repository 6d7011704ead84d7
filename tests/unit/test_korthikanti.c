/* SPDX-License-Identifier: MIT */
/*
 * Korthikanti et al. (2022), "Reducing Activation Recomputation in Large
 * Transformer Models": the activations one transformer layer saves, in a
 * 16-bit model with dropout and 1-byte masks, are sbh(34 + 5as/h) bytes; with
 * tensor parallelism sbh(10 + 24/t + 5as/(ht)); with sequence parallelism as
 * well sbh(34 + 5as/h)/t; with full recomputation 2sbh (section 4, table 2).
 * The Megatron GPT code path reproduces each exactly under their assumptions,
 * which leave out the LayerNorms' fp32 statistics (mean and rstd, 8 bytes a
 * token a norm): those are added here, counted, not fitted.
 */
#include "layers/layers.h"
#include "model/model.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

typedef struct shape_case {
    uint64_t h, a, s, b, t;
    int sp;
} shape_case;

ParameterizedTestParameters(korthikanti, layer_activations)
{
    static shape_case cases[] = {
        { 1024, 16, 512, 2, 1, 0 }, { 2048, 32, 256, 4, 1, 0 }, { 1024, 16, 512, 2, 2, 0 },
        { 2048, 16, 1024, 1, 4, 0 }, { 1024, 16, 512, 2, 2, 1 }, { 2048, 32, 256, 4, 8, 1 },
    };
    return cr_make_param_array(shape_case, cases, sizeof cases / sizeof cases[0]);
}

/* The saved bytes (persist) of one layer segment, and its output, as the
 * walk simulates them. */
static seg_cost simulate_layer(const shape_case *c, int grad_enabled)
{
    static graph g;
    llmem_ctx *ctx;
    llmem_model *mm;
    model_shape m;
    model_params p;
    seg_cost cost;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_MEGATRON_GPT, &mm), LLMEM_OK);
    llmem_model_set_int(mm, LLMEM_MODEL_HIDDEN, (int64_t)c->h);
    llmem_model_set_int(mm, LLMEM_MODEL_HEADS, (int64_t)c->a);
    llmem_model_set_int(mm, LLMEM_MODEL_LAYERS, 2);
    llmem_model_set_int(mm, LLMEM_MODEL_INTERMEDIATE, (int64_t)(4 * c->h));
    llmem_model_set_int(mm, LLMEM_MODEL_VOCAB, 51200);
    llmem_model_set_int(mm, LLMEM_MODEL_MAX_POSITIONS, 2048);
    cr_assert_eq(llmem_model_resolve(mm, &m, &p), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    /* Tensor parallelism: each rank's share of the heads and the MLP. */
    m.heads /= c->t;
    m.kv_heads /= c->t;
    m.intermediate /= c->t;
    build b = { .g = &g, .batch = c->b, .seq = c->s, .tokens = c->b * c->s, .autocast = 0,
                .compute = 2, .param_dt = 2, .dropout = { 0.1, 0.1, 0.1 },
                .sp = c->sp ? c->t : 1, .ep = 1 };
    seg_spec spec = { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 };
    llmem_graph_reset(&g, grad_enabled);
    llmem_layers_decoder(&b, &m, &spec);
    cr_assert_eq(g.overflow, 0);
    llmem_graph_simulate(&g, 0, &cost);
    llmem_model_free(mm);
    llmem_ctx_free(ctx);
    return cost;
}

ParameterizedTest(shape_case *c, korthikanti, layer_activations)
{
    uint64_t sbh = c->s * c->b * c->h, as2b = c->a * c->s * c->s * c->b, t = c->t;
    uint64_t stats = 2 * 2 * c->s * c->b * 4 / (c->sp ? t : 1); /* two LayerNorms' mean, rstd */
    uint64_t paper = c->sp ? (34 * sbh + 5 * as2b) / t : 10 * sbh + 24 * sbh / t + 5 * as2b / t;
    seg_cost cost = simulate_layer(c, 1);
    cr_expect_eq(cost.persist, paper + stats,
                 "h %llu a %llu s %llu b %llu t %llu sp %d: saved %llu, the paper %llu + stats %llu",
                 (unsigned long long)c->h, (unsigned long long)c->a, (unsigned long long)c->s,
                 (unsigned long long)c->b, (unsigned long long)t, c->sp,
                 (unsigned long long)cost.persist, (unsigned long long)paper,
                 (unsigned long long)stats);
    /* Full recomputation keeps only the layer's input: the previous layer's
     * output, 2sbh (split over t under sequence parallelism). */
    seg_cost ckpt = simulate_layer(c, 0);
    cr_expect_eq(ckpt.persist, 0);
    cr_expect_eq(ckpt.out_bytes, 2 * sbh / (c->sp ? t : 1));
}
