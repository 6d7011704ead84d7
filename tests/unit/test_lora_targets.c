/* SPDX-License-Identifier: MIT */
/* LoRA targets: module names resolve in the model's own family (as PEFT
 * matches target_modules), role bits select every linear of the role. The
 * expected trainable counts are the adapters' A and B, r x (in + out) for
 * each targeted linear of each layer, worked from the small models' sizes. */
#include "estimate_fixture.h"

#include <string.h>

#define H 128 /* hidden */
#define L 3   /* layers */
#define I 256 /* intermediate */
#define R 8   /* LoRA rank (PEFT's default) */
/* DeepSeek's latent attention: 4 heads of 48 (16 of them rotary), values of
 * 32, a key/value compression of 64 and, with QC, a query compression. */
#define NH 4
#define QK 48
#define ROPE 16
#define VD 32
#define KVR 64
#define QC 96
/* Experts: 8 of 64, and a shared expert of 128 where there is one. */
#define E 8
#define IE 64
#define IS 128

/* One layer's adapters on a linear of in x out, over every layer. */
#define ADAPTED(in, out) ((int64_t)L * R * ((in) + (out)))

enum shape { DENSE, LATENT, LATENT_FULL_Q, MIXTRAL, QWEN_MOE };

static llmem_model *small(int family, int shape)
{
    llmem_model *m = NULL;
    const int64_t common[][2] = {
        { LLMEM_MODEL_HIDDEN, H },  { LLMEM_MODEL_LAYERS, L },       { LLMEM_MODEL_HEADS, NH },
        { LLMEM_MODEL_INTERMEDIATE, I }, { LLMEM_MODEL_VOCAB, 1000 },
        { LLMEM_MODEL_MAX_POSITIONS, 512 },
    };
    const int64_t latent[][2] = {
        { LLMEM_MODEL_HEAD_DIM, QK },       { LLMEM_MODEL_ROTARY_DIM, ROPE },
        { LLMEM_MODEL_V_HEAD_DIM, VD },     { LLMEM_MODEL_KV_LORA_RANK, KVR },
        { LLMEM_MODEL_EXPERTS, E },         { LLMEM_MODEL_EXPERTS_PER_TOKEN, 2 },
        { LLMEM_MODEL_EXPERT_INTERMEDIATE, IE }, { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, IS },
        { LLMEM_MODEL_DENSE_LAYERS, 1 },
    };
    cr_assert_eq(llmem_model_new(ctx, family, &m), LLMEM_OK);
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        cr_assert_eq(llmem_model_set_int(m, (int)common[i][0], common[i][1]), LLMEM_OK);
    if (shape == LATENT || shape == LATENT_FULL_Q) {
        for (size_t i = 0; i < sizeof latent / sizeof latent[0]; i++)
            cr_assert_eq(llmem_model_set_int(m, (int)latent[i][0], latent[i][1]), LLMEM_OK,
                         "%s", llmem_ctx_error(ctx));
        if (shape == LATENT)
            cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_Q_LORA_RANK, QC), LLMEM_OK);
    }
    if (shape == MIXTRAL || shape == QWEN_MOE) {
        cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS, E), LLMEM_OK);
        cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, 2), LLMEM_OK);
        cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_EXPERT_INTERMEDIATE, IE), LLMEM_OK);
        if (shape == QWEN_MOE)
            cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, IS),
                         LLMEM_OK);
    }
    return m;
}

/* A case: the targets by name (or, names NULL, by role bits), and the
 * trainable parameters expected, or 0 when no module matches (refused). */
typedef struct target_case {
    int family, shape;
    const char *names;
    int64_t roles;
    int64_t trainable;
} target_case;

static const target_case cases[] = {
    /* DeepSeek: each latent projection by its own name. */
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "q_a_proj", 0, ADAPTED(H, QC) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "q_b_proj", 0, ADAPTED(QC, NH * QK) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "kv_a_proj_with_mqa", 0, ADAPTED(H, KVR + ROPE) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "kv_b_proj", 0, ADAPTED(KVR, NH * (QK - ROPE + VD)) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "o_proj", 0, ADAPTED(NH * VD, H) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "q_a_proj,q_b_proj", 0,
      ADAPTED(H, QC) + ADAPTED(QC, NH * QK) },
    /* q_proj exists only without the query compression; names the model
     * lacks select nothing, and only them is a refusal. */
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "q_proj", 0, 0 },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, "q_proj,q_a_proj", 0, ADAPTED(H, QC) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT_FULL_Q, "q_proj", 0, ADAPTED(H, NH * QK) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT_FULL_Q, "q_a_proj", 0, 0 },
    { LLMEM_FAMILY_DEEPSEEK, LATENT_FULL_Q, "q_b_proj", 0, 0 },
    /* Roles: q and k/v are the projections that make them, the
     * compressions have roles of their own. */
    { LLMEM_FAMILY_DEEPSEEK, LATENT, NULL, LLMEM_LORA_Q, ADAPTED(QC, NH * QK) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, NULL, LLMEM_LORA_Q_A, ADAPTED(H, QC) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, NULL, LLMEM_LORA_K, ADAPTED(KVR, NH * (QK - ROPE + VD)) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT, NULL, LLMEM_LORA_KV_A, ADAPTED(H, KVR + ROPE) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT_FULL_Q, NULL, LLMEM_LORA_Q, ADAPTED(H, NH * QK) },
    { LLMEM_FAMILY_DEEPSEEK, LATENT_FULL_Q, NULL, LLMEM_LORA_Q_A, 0 },
    /* GPT-2: c_attn is q, k and v; c_proj both output projections; q_proj
     * is not a module of it. */
    { LLMEM_FAMILY_GPT2, DENSE, "c_attn", 0, ADAPTED(H, 3 * H) },
    { LLMEM_FAMILY_GPT2, DENSE, "c_proj", 0, ADAPTED(H, H) + ADAPTED(I, H) },
    { LLMEM_FAMILY_GPT2, DENSE, "q_proj", 0, 0 },
    { LLMEM_FAMILY_GPT2, DENSE, "q_proj,c_attn", 0, ADAPTED(H, 3 * H) },
    { LLMEM_FAMILY_GPT2, DENSE, NULL, LLMEM_LORA_Q, ADAPTED(H, 3 * H) },
    /* StarCoder2's c_proj is the MLP's alone (its attention has o_proj). */
    { LLMEM_FAMILY_STARCODER2, DENSE, "c_proj", 0, ADAPTED(I, H) },
    { LLMEM_FAMILY_STARCODER2, DENSE, "o_proj", 0, ADAPTED(H, H) },
    /* Llama has no c_attn; Falcon no q_proj; Megatron its own names. */
    { LLMEM_FAMILY_LLAMA, DENSE, "c_attn", 0, 0 },
    { LLMEM_FAMILY_LLAMA, DENSE, "w1", 0, 0 },
    { LLMEM_FAMILY_LLAMA, DENSE, "q_proj,c_attn", 0, ADAPTED(H, H) },
    { LLMEM_FAMILY_FALCON, DENSE, "q_proj", 0, 0 },
    { LLMEM_FAMILY_MEGATRON_GPT, DENSE, "linear_fc1", 0, ADAPTED(H, I) },
    { LLMEM_FAMILY_MEGATRON_GPT, DENSE, "up_proj", 0, 0 },
    /* Mixtral's experts are w1, w3, w2; Qwen2-MoE's gate_proj, up_proj,
     * down_proj, like its shared expert's. */
    { LLMEM_FAMILY_LLAMA, MIXTRAL, "w1", 0, (int64_t)E * ADAPTED(H, IE) },
    { LLMEM_FAMILY_LLAMA, MIXTRAL, "gate_proj", 0, 0 },
    { LLMEM_FAMILY_LLAMA, QWEN_MOE, "gate_proj", 0, (int64_t)E * ADAPTED(H, IE) + ADAPTED(H, IS) },
    { LLMEM_FAMILY_LLAMA, QWEN_MOE, "w1", 0, 0 },
};
#define CASES (sizeof cases / sizeof cases[0])

static size_t *case_indices(void)
{
    size_t *ix = cr_malloc(sizeof *ix * CASES);
    for (size_t i = 0; i < CASES; i++)
        ix[i] = i;
    return ix;
}

ParameterizedTestParameters(lora_targets, adapters_of_the_named_modules)
{
    return cr_make_param_array(size_t, case_indices(), CASES, free_params);
}

ParameterizedTest(size_t *index, lora_targets, adapters_of_the_named_modules, .init = setup_est,
                  .fini = teardown_est)
{
    const target_case *c = &cases[*index];
    const char *what = c->names != NULL ? c->names : "(role bits)";
    llmem_model *m = small(c->family, c->shape);
    llmem_train *t = NULL;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_METHOD, LLMEM_METHOD_LORA), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 64), LLMEM_OK);
    /* PEFT's target_modules name 4.x's per-expert modules (grouped-mm's 3-D
     * experts are parameters: test_train's experts_impl_refusals) */
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_EXPERTS_IMPL, "loop"), LLMEM_OK);
    if (c->names != NULL)
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, c->names), LLMEM_OK);
    else
        cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, c->roles), LLMEM_OK);
    int rc = llmem_estimate_run(est, m, t);
    if (c->trainable == 0) {
        int object = 0, key = 0;
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "case %zu %s: %d", *index, what, rc);
        cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
        cr_expect_eq(object, LLMEM_OBJECT_TRAIN);
        cr_expect_eq(key, LLMEM_TRAIN_LORA_TARGETS);
        cr_expect_not_null(strstr(llmem_ctx_error(ctx), "its modules: "), "%s",
                           llmem_ctx_error(ctx));
    } else {
        uint64_t trainable = 0;
        cr_assert_eq(rc, LLMEM_OK, "case %zu %s: %s", *index, what, llmem_ctx_error(ctx));
        cr_assert_eq(llmem_estimate_get_u64(est, LLMEM_EST_PARAMS_TRAINABLE, &trainable), LLMEM_OK);
        cr_expect_eq(trainable, (uint64_t)c->trainable, "case %zu %s: %llu trainable, not %lld",
                     *index, what, (unsigned long long)trainable, (long long)c->trainable);
    }
    llmem_train_free(t);
    llmem_model_free(m);
}

/* Names resolve when the estimate runs, in each model's family; setting
 * role bits afterwards drops the names. */
Test(lora_targets, names_follow_the_model_and_bits_replace_them, .init = setup_est,
     .fini = teardown_est)
{
    llmem_model *gpt2 = small(LLMEM_FAMILY_GPT2, DENSE), *sc2 = small(LLMEM_FAMILY_STARCODER2, DENSE);
    llmem_train *t = NULL;
    uint64_t trainable = 0;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_METHOD, LLMEM_METHOD_LORA), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, "c_proj"), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(est, gpt2, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_estimate_get_u64(est, LLMEM_EST_PARAMS_TRAINABLE, &trainable);
    cr_expect_eq(trainable, (uint64_t)(ADAPTED(H, H) + ADAPTED(I, H)));
    cr_assert_eq(llmem_estimate_run(est, sc2, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_estimate_get_u64(est, LLMEM_EST_PARAMS_TRAINABLE, &trainable);
    cr_expect_eq(trainable, (uint64_t)ADAPTED(I, H));
    /* The same roles as bits: both output projections on StarCoder2 too. */
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, LLMEM_LORA_O | LLMEM_LORA_DOWN),
                 LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(est, sc2, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_estimate_get_u64(est, LLMEM_EST_PARAMS_TRAINABLE, &trainable);
    cr_expect_eq(trainable, (uint64_t)(ADAPTED(H, H) + ADAPTED(I, H)));
    llmem_train_free(t);
    llmem_model_free(sc2);
    llmem_model_free(gpt2);
}

/* The refusal names the family and lists the modules it has. */
Test(lora_targets, a_refusal_lists_the_family_modules, .init = setup_est, .fini = teardown_est)
{
    llmem_model *m = small(LLMEM_FAMILY_DEEPSEEK, LATENT);
    llmem_train *t = NULL;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_METHOD, LLMEM_METHOD_LORA), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, "c_attn,q_proj"), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run(est, m, t), LLMEM_EINCONSISTENT);
    cr_expect_str_eq(llmem_ctx_error(ctx),
                     "lora-targets: no module of this deepseek model matches (PEFT would fail: "
                     "target modules not found); its modules: q_a_proj, q_b_proj, "
                     "kv_a_proj_with_mqa, kv_b_proj, o_proj, gate_proj, up_proj, down_proj");
    llmem_train_free(t);
    llmem_model_free(m);
}

/* Every family names its query projection one of PEFT's ways: each has a
 * module table (model/modules.c) with its attention's q in it. */
Test(lora_targets, every_family_names_its_query_projection, .init = setup_est,
     .fini = teardown_est)
{
    for (int family = LLMEM_FAMILY_GPT2; family <= LLMEM_FAMILY_MEGATRON_GPT; family++) {
        llmem_model *m = small(family, family == LLMEM_FAMILY_DEEPSEEK ? LATENT : DENSE);
        llmem_train *t = NULL;
        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
        cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_METHOD, LLMEM_METHOD_LORA), LLMEM_OK);
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS,
                                         "q_proj,c_attn,qkv_proj,query_key_value,q_b_proj,"
                                         "linear_qkv"),
                     LLMEM_OK);
        cr_expect_eq(llmem_estimate_run(est, m, t), LLMEM_OK, "family %d: %s", family,
                     llmem_ctx_error(ctx));
        llmem_train_free(t);
        llmem_model_free(m);
    }
}

/* transformers 5.x's grouped_mm keeps the routed experts as 3-D parameters:
 * PEFT's target_modules and QLoRA's 4-bit nn.Linear do not reach them, so
 * grouped-mm (the default) refuses LoRA on the MLP projections of a model
 * with routed experts and QLoRA, naming experts-impl; attention targets
 * estimate, as do dense models and 4.x's per-expert loop. */
Test(lora_targets, grouped_experts_refuse_what_peft_cannot_adapt, .init = setup_est,
     .fini = teardown_est)
{
    llmem_model *moe[] = { small(LLMEM_FAMILY_LLAMA, MIXTRAL), small(LLMEM_FAMILY_LLAMA, QWEN_MOE),
                           small(LLMEM_FAMILY_DEEPSEEK, LATENT) };
    llmem_model *dense = small(LLMEM_FAMILY_LLAMA, DENSE);
    llmem_train *t = NULL;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 64), LLMEM_OK);
    static const struct {
        const char *method;
        int64_t targets; /* role bits: every family's names for them */
        int refused;
    } setups[] = {
        { "lora", LLMEM_LORA_Q | LLMEM_LORA_V, 0 }, { "lora", LLMEM_LORA_DOWN, 1 },
        { "lora", LLMEM_LORA_UP, 1 },               { "qlora", LLMEM_LORA_Q | LLMEM_LORA_V, 1 },
        { "full", 0, 0 },
    };
    for (size_t i = 0; i < sizeof setups / sizeof setups[0]; i++) {
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_METHOD, setups[i].method), LLMEM_OK);
        if (setups[i].targets != 0)
            cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_LORA_TARGETS, setups[i].targets),
                         LLMEM_OK);
        for (size_t k = 0; k < sizeof moe / sizeof moe[0]; k++) {
            cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_EXPERTS_IMPL, "grouped-mm"), LLMEM_OK);
            int rc = llmem_estimate_run(est, moe[k], t);
            if (setups[i].refused) {
                int object = 0, key = 0;
                cr_expect_eq(rc, LLMEM_ENOTSUP, "%s %lld model %zu", setups[i].method,
                             (long long)setups[i].targets, k);
                llmem_ctx_error_field(ctx, &object, &key);
                cr_expect_eq(key, LLMEM_TRAIN_EXPERTS_IMPL, "%s", llmem_ctx_error(ctx));
                cr_expect_not_null(strstr(llmem_ctx_error(ctx), "--experts-impl loop"));
            } else {
                cr_expect_eq(rc, LLMEM_OK, "%s %lld model %zu: %s", setups[i].method,
                             (long long)setups[i].targets, k, llmem_ctx_error(ctx));
            }
            cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_EXPERTS_IMPL, "loop"), LLMEM_OK);
            cr_expect_eq(llmem_estimate_run(est, moe[k], t), LLMEM_OK, "loop: %s",
                         llmem_ctx_error(ctx));
        }
        cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_EXPERTS_IMPL, "grouped-mm"), LLMEM_OK);
        cr_expect_eq(llmem_estimate_run(est, dense, t), LLMEM_OK, "dense %s: %s", setups[i].method,
                     llmem_ctx_error(ctx));
    }
    llmem_train_free(t);
    for (size_t k = 0; k < sizeof moe / sizeof moe[0]; k++)
        llmem_model_free(moe[k]);
    llmem_model_free(dense);
}
