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
 *    gradients and its input's gradient live;
 *  - a view allocates nothing, a run's log has room for every step, a held
 *    input stays to the end, and a recomputation's early stop runs its op
 *    only when it saves its output.
 */
#include "estimate/estimate.h"
#include "estimate/tensors.h"
#include "layers/layers.h"
#include "model/families.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

static const char *const presets[] = { "openai-community/gpt2", "meta-llama/Llama-3.2-1B",
                                       "Qwen/Qwen2.5-0.5B" };
static const char *const precisions[] = { "fp32", "bf16-mixed", "bf16" };
static const char *const methods[] = { "full", "lora", "freeze", "qlora" };
/* Checkpointing and attention in pairs (each variant and kernel once with
 * each other state), to keep the table's size. */
static const char *const ckpts[] = { "none", "none", "reentrant", "non-reentrant" };
static const char *const attentions[] = { "eager", "sdpa", "eager", "sdpa" };
static const char *const losses[] = { "upcast", "chunked" };

#define N(a) (sizeof a / sizeof a[0])

typedef struct walk_case {
    size_t preset, precision, method, ckpt, attention, loss;
    int dropout, accum;
} walk_case;

/* The tables run in one test each, not one forked process per case: under
 * AddressSanitizer 1,900 forks cost minutes on a 2-core machine. Every
 * message names its case. */
static void check_walk_case(const walk_case *c)
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
    if (c->method == 1 || c->method == 3) /* LoRA's: the others read none */
        llmem_train_set_double(t, LLMEM_TRAIN_LORA_DROPOUT, c->dropout ? 0.05 : 0.0);
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

Test(walk, backward_releases_everything)
{
    for (size_t a = 0; a < N(presets); a++)
        for (size_t b = 0; b < N(precisions); b++)
            for (size_t c = 0; c < N(methods); c++)
                for (size_t d = 0; d < N(ckpts); d++)
                    for (size_t f = 0; f < N(losses); f++)
                        for (int g = 0; g < 2; g++)
                            check_walk_case(&(walk_case){ a, b, c, d, d, f, g, g });
}

#ifdef LLMEM_TEST_HF_CONFIGS
/* Every family's code path, from the real configs, and the layouts the
 * configs leave out: the same balance, over precision x method x
 * checkpointing, with dropout and accumulation or with the fused kernels. */
typedef struct family_variant {
    const char *config;
    int key1, value1, key2, value2; /* fields set after reading; 0 = none */
} family_variant;

static const family_variant family_variants[] = {
    { "opt-125m", 0, 0, 0, 0 },
    { "opt-350m", 0, 0, 0, 0 },                       /* post-norm, projections */
    { "bloom-560m", 0, 0, 0, 0 },
    { "pythia-160m", 0, 0, 0, 0 },                    /* parallel, partial rotary */
    { "pythia-160m", LLMEM_MODEL_PARALLEL_BLOCK, 0, 0, 0 },
    { "falcon-7b", 0, 0, 0, 0 },                      /* multi-query, one norm */
    { "falcon-40b", 0, 0, 0, 0 },                     /* grouped kv heads, two norms */
    { "falcon-7b", LLMEM_MODEL_PARALLEL_BLOCK, 0, LLMEM_MODEL_NORMS_PER_LAYER, 2 },
    { "falcon-rw-1b", 0, 0, 0, 0 },                   /* ALiBi in the mask, sequential */
    { "phi-2", 0, 0, 0, 0 },
    { "phi-2", LLMEM_MODEL_QK_NORM, 1, LLMEM_MODEL_KV_HEADS, 8 },
    { "starcoder2-3b", 0, 0, 0, 0 },
    { "DeepSeek-V2-Lite", 0, 0, 0, 0 },               /* V2 router, complex rotary */
    { "DeepSeek-V3", 0, 0, 0, 0 },                    /* V3 router, q compression */
};

typedef struct family_case {
    size_t variant, precision, method, ckpt;
    int extras; /* 1: dropout and accumulation; 0: flash attention (sdpa in fp32, which
                   flash-attn does not take) and chunked loss */
} family_case;

static void check_family_case(const family_case *c)
{
    const family_variant *v = &family_variants[c->variant];
    char path[1024];
    llmem_ctx *ctx;
    llmem_model *m;
    llmem_train *t;
    llmem_estimate *e;
    snprintf(path, sizeof path, "%s/%s.json", LLMEM_TEST_HF_CONFIGS, v->config);
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_hf_config(ctx, path, &m), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    if (v->key1)
        cr_assert_eq(llmem_model_set_int(m, v->key1, v->value1), LLMEM_OK);
    if (v->key2)
        cr_assert_eq(llmem_model_set_int(m, v->key2, v->value2), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, precisions[c->precision]);
    llmem_train_set_str(t, LLMEM_TRAIN_METHOD, methods[c->method]);
    if (c->method == 2)
        llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, 2);
    llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, ckpts[c->ckpt]);
    llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION,
                        c->extras                                  ? "eager"
                        : strcmp(precisions[c->precision], "fp32") ? "flash"
                                                                   : "sdpa");
    llmem_train_set_str(t, LLMEM_TRAIN_LOSS, c->extras ? "upcast" : "chunked");
    llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, c->extras ? 0.1 : 0.0);
    llmem_train_set_int(t, LLMEM_TRAIN_GRAD_ACCUM, c->extras ? 4 : 1);
    llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 2);
    llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 128);
    /* QLoRA quantizes 4.x's per-expert modules; grouped-mm's 3-D experts refuse it */
    if (c->method == 3)
        llmem_train_set_str(t, LLMEM_TRAIN_EXPERTS_IMPL, "loop");
    int rc = llmem_estimate_run(e, m, t);
    int64_t head_bias = 0;
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HEAD_BIAS, &head_bias), LLMEM_OK);
    if (c->method == 3 && c->precision == 0) {
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "qlora with fp32 must be refused");
    } else if (!c->extras && head_bias) {
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "%s: the chunked loss with a head bias is refused",
                     v->config);
    } else {
        cr_assert_eq(rc, LLMEM_OK, "%s (%d=%d) %s %s ckpt=%s extras=%d: %s", v->config, v->key1,
                     v->value1, precisions[c->precision], methods[c->method], ckpts[c->ckpt],
                     c->extras, llmem_ctx_error(ctx));
        uint64_t fixed = 0;
        for (int k = LLMEM_TERM_PARAMETERS; k <= LLMEM_TERM_DATA; k++) {
            const llmem_term *term;
            cr_assert_eq(llmem_estimate_term(e, k, &term), LLMEM_OK);
            fixed += llmem_term_max_bytes(term);
        }
        cr_expect_eq(e->end_of_backward, fixed,
                     "%s (%d=%d) %s %s ckpt=%s extras=%d: backward ends with %llu live, expected "
                     "weights + states + batch + gradients = %llu",
                     v->config, v->key1, v->value1, precisions[c->precision], methods[c->method],
                     ckpts[c->ckpt], c->extras, (unsigned long long)e->end_of_backward,
                     (unsigned long long)fixed);
    }
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

Test(walk, every_family_releases_everything)
{
    for (size_t a = 0; a < N(family_variants); a++)
        for (size_t b = 0; b < N(precisions); b++)
            for (size_t c = 0; c < N(methods); c++)
                for (size_t d = 0; d < N(ckpts); d++)
                    for (int e = 0; e < 2; e++)
                        check_family_case(&(family_case){ a, b, c, d, e });
}
#endif

/* The parameter tensor classes of one model under one method: they add up to
 * the exact parameter count; every class has a place, a role and a split
 * axis; layer classes sit inside the model's layers; and each segment holds
 * what the model's parts say it holds. */
static void check_classes(const char *name, llmem_model *mm, int method)
{
    model_shape m;
    model_params p;
    setup s;
    tensor_list l;
    cr_assert_eq(llmem_model_resolve(mm, &m, &p), LLMEM_OK, "%s", name);
    memset(&s, 0, sizeof s);
    s.method = method;
    s.param_dt = 4;
    s.lora_rank = 8;
    s.lora_targets = 127;
    s.frozen_layers = method == LLMEM_METHOD_FREEZE ? m.layers / 2 : 0;
    llmem_tensors_list(&m, &p, &s, &l);
    cr_assert_eq(l.overflow, 0, "%s: too many tensor classes", name);
    uint64_t sum = 0, adapters = 0, by_segment[4] = { 0 };
    for (int k = 0; k < l.n; k++) {
        const tensor_class *c = &l.c[k];
        uint64_t n = class_elems(c) * c->count;
        cr_expect(c->segment >= SEG_EMBEDDING && c->segment <= SEG_HEAD, "%s class %d: segment %d",
                  name, k, c->segment);
        cr_expect(c->role >= PARAM_WEIGHT && c->role <= PARAM_OUTPUT, "%s class %d: role %d", name,
                  k, c->role);
        cr_expect(c->axis >= SPLIT_NONE && c->axis <= SPLIT_EXPERT_STACKED, "%s class %d: axis %d", name, k,
                  c->axis);
        cr_expect(c->layers > 0 && c->count % c->layers == 0,
                  "%s class %d: %llu tensors over %llu layers", name, k,
                  (unsigned long long)c->count, (unsigned long long)c->layers);
        if (c->segment == SEG_LAYER)
            cr_expect_leq(c->layer_first + c->layers, m.layers, "%s class %d: layers", name, k);
        cr_expect(c->role != PARAM_EXPERT || c->axis == SPLIT_EXPERT ||
                      c->axis == SPLIT_EXPERT_STACKED,
                  "%s class %d: experts split by expert", name, k);
        cr_expect(c->axis != SPLIT_EXPERT_STACKED || c->role == PARAM_EXPERT,
                  "%s class %d: only experts stacked", name, k);
        cr_expect(c->axis != SPLIT_EXPERT || c->role == PARAM_EXPERT || c->role == PARAM_ADAPTER,
                  "%s class %d: only experts and their adapters split by expert", name, k);
        if (c->role == PARAM_ADAPTER)
            adapters += n;
        else
            sum += n;
        by_segment[c->segment] += c->role == PARAM_ADAPTER ? 0 : n;
    }
    cr_expect_eq(sum, p.total, "%s method %d: tensor classes hold %llu parameters, the model %llu",
                 name, method, (unsigned long long)sum, (unsigned long long)p.total);
    /* p.embedding counts OPT-350m's two projections; project_out runs after
     * the last layer, with the head */
    uint64_t project_out = m.embed_dim != m.hidden ? m.embed_dim * m.hidden : 0;
    cr_expect_eq(by_segment[SEG_EMBEDDING], p.embedding - project_out + p.positions + p.embed_norm,
                 "%s: the embedding segment", name);
    cr_expect_eq(by_segment[SEG_HEAD], p.final_norm + p.head + project_out,
                 "%s: the head segment", name);
    cr_expect_eq(adapters > 0, method == LLMEM_METHOD_LORA || method == LLMEM_METHOD_QLORA,
                 "%s method %d: adapters only under LoRA", name, method);
}

static void check_every_method(const char *name, llmem_model *mm)
{
    static const int methods_checked[] = { LLMEM_METHOD_FULL, LLMEM_METHOD_LORA,
                                           LLMEM_METHOD_QLORA, LLMEM_METHOD_FREEZE };
    for (size_t k = 0; k < N(methods_checked); k++)
        check_classes(name, mm, methods_checked[k]);
}

Test(walk, tensor_classes_add_up_and_know_where_they_live)
{
    llmem_ctx *ctx;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        llmem_model *mm;
        cr_assert_eq(llmem_model_new_preset(ctx, llmem_preset_name(i), &mm), LLMEM_OK);
        check_every_method(llmem_preset_name(i), mm);
        llmem_model_free(mm);
    }
#ifdef LLMEM_TEST_HF_CONFIGS
    /* The real configs: mixture-of-experts, latent attention, fused projections. */
    DIR *dir = opendir(LLMEM_TEST_HF_CONFIGS);
    cr_assert_not_null(dir, "%s", LLMEM_TEST_HF_CONFIGS);
    size_t seen = 0;
    for (struct dirent *d; (d = readdir(dir)) != NULL;) {
        char path[1024];
        llmem_model *mm;
        if (strstr(d->d_name, ".json") == NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s", LLMEM_TEST_HF_CONFIGS, d->d_name);
        cr_assert_eq(llmem_model_new_hf_config(ctx, path, &mm), LLMEM_OK, "%s: %s", path,
                     llmem_ctx_error(ctx));
        check_every_method(d->d_name, mm);
        llmem_model_free(mm);
        seen++;
    }
    closedir(dir);
    cr_expect_geq(seen, 20, "only %zu configs read", seen);
#endif
    llmem_ctx_free(ctx);
}

static const int kernels[] = { LLMEM_ATTENTION_EAGER, LLMEM_ATTENTION_SDPA,
                                LLMEM_ATTENTION_FLASH };

/* The model's shape, 1; or 0 when it has no decoder layers to build. */
static int layered_shape(llmem_model *mm, model_shape *m)
{
    model_params p;
    cr_assert_eq(llmem_model_resolve(mm, m, &p), LLMEM_OK);
    return m->path != PATH_NONE;
}

/* Whether the model has the layer a spec asks for (an MoE one needs experts). */
static int has_layer(const model_shape *m, const seg_spec *s)
{
    return !s->moe || m->experts > 0;
}

/* One segment's backward, alone: what is left is its parameters' gradients,
 * its input's gradient and, under checkpointing, the recomputed output. */
static void check_segments(const char *name, llmem_model *mm)
{
    static graph g;
    model_shape m;
    const seg_spec specs[] = {
        { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 },
        { .input_rg = 0, .weights_trainable = 1, .norms_trainable = 1 },
        { .input_rg = 1, .lora_targets = 127, .lora_rank = 8 },
        { .input_rg = 0, .lora_targets = 5, .lora_rank = 16 },
        { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1, .moe = 1 },
    };
    if (!layered_shape(mm, &m))
        return;
    for (size_t k = 0; k < N(specs); k++) {
        if (!has_layer(&m, &specs[k]))
            continue;
        for (int run = 0; run < 2 * (int)N(kernels); run++) {
            int hold = run & 1;
            if (kernels[run / 2] == LLMEM_ATTENTION_SDPA && (m.traits & TRAIT_NO_SDPA))
                continue; /* setup runs eager there (llmem_setup_resolve) */
            build b = { .g = &g, .batch = 2, .seq = 128, .tokens = 256, .autocast = 1, .sp = 1,
                        .attention = kernels[run / 2], .ep = 1, .compute = 2, .param_dt = 4,
                        .dropout = { 0.1, 0.1, 0.1 }, .hold_input = hold };
            seg_cost c;
            llmem_graph_reset(&g, 1);
            llmem_layers_decoder(&b, &m, &specs[k]);
            cr_assert_eq(g.overflow, 0, "%s: the graph ran out of room", name);
            llmem_graph_simulate(&g, hold, &c);
            cr_expect_eq(c.bwd_end, c.param_grads + c.input_grad + (hold ? c.out_bytes : 0),
                         "%s spec %zu attention %d hold %d: backward ends with %llu, expected %llu",
                         name, k, b.attention, hold, (unsigned long long)c.bwd_end,
                         (unsigned long long)(c.param_grads + c.input_grad +
                                              (hold ? c.out_bytes : 0)));
            cr_expect_geq(c.bwd_peak, c.bwd_start);
            cr_expect_geq(c.fwd_peak, c.persist);
        }
    }
}

/* A check run on every preset and every family variant's real config. */
static void for_every_model(void (*check)(const char *, llmem_model *))
{
    llmem_ctx *ctx;
    llmem_model *mm;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    for (size_t i = 0; i < llmem_preset_count(); i++) {
        cr_assert_eq(llmem_model_new_preset(ctx, llmem_preset_name(i), &mm), LLMEM_OK);
        check(llmem_preset_name(i), mm);
        llmem_model_free(mm);
    }
#ifdef LLMEM_TEST_HF_CONFIGS
    for (size_t i = 0; i < N(family_variants); i++) {
        char path[1024];
        const family_variant *v = &family_variants[i];
        snprintf(path, sizeof path, "%s/%s.json", LLMEM_TEST_HF_CONFIGS, v->config);
        cr_assert_eq(llmem_model_new_hf_config(ctx, path, &mm), LLMEM_OK, "%s", path);
        if (v->key1)
            cr_assert_eq(llmem_model_set_int(mm, v->key1, v->value1), LLMEM_OK);
        if (v->key2)
            cr_assert_eq(llmem_model_set_int(mm, v->key2, v->value2), LLMEM_OK);
        check(v->config, mm);
        llmem_model_free(mm);
    }
#endif
    llmem_ctx_free(ctx);
}

Test(walk, segments_end_backward_with_their_gradients)
{
    for_every_model(check_segments);
}

/* One run of a recorded layer: its cost and every step it logged. */
typedef struct layer_run {
    seg_cost cost;
    int nevents, nforward;
    uint64_t events[GRAPH_MAX_EVENTS];
} layer_run;

/* apply_hold: 0 records the layer (holding its input when hold), 1 records
 * it and adds the hold, 2 adds the hold to the tape on g, 3 runs that tape
 * again retargeted to its spec's input_rg, 4 runs it again as it is. */
static void run_layer(graph *g, build *b, const model_shape *m, const seg_spec *spec,
                      int grad_enabled, int hold, int apply_hold, int mode, layer_run *r)
{
    if (apply_hold < 2) {
        llmem_graph_reset(g, grad_enabled);
        b->hold_input = hold;
        llmem_layers_decoder(b, m, spec);
        b->hold_input = 0;
        cr_assert_eq(g->overflow, 0);
    }
    if (apply_hold == 3)
        llmem_graph_retarget(g, spec->input_rg,
                             spec->lora_targets == 0 && spec->weights_trainable == spec->norms_trainable
                                 ? spec->weights_trainable
                                 : -1);
    else if (apply_hold < 4 && apply_hold)
        llmem_layers_hold_input(g);
    g->events = r->events;
    g->event_ops = NULL;
    g->events_cap = (int)N(r->events);
    llmem_graph_simulate(g, mode, &r->cost);
    g->events = NULL;
    r->nevents = g->nevents;
    r->nforward = g->nevents_forward;
    cr_assert_leq(r->nevents, (int)N(r->events));
}

static int same_run(const layer_run *a, const layer_run *c)
{
    return !memcmp(&a->cost, &c->cost, sizeof a->cost) && a->nevents == c->nevents &&
           a->nforward == c->nforward &&
           !memcmp(a->events, c->events, (size_t)a->nevents * sizeof a->events[0]);
}

/* The walk runs a checkpointed layer's no_grad forward and its
 * recomputation from one recording with grad enabled (SIM_NO_GRAD, then
 * the input's hold added), and a plain layer whose input requires grad
 * from the tape of one whose input did not (llmem_graph_retarget): each
 * run must equal its own recording, for every family, spec, kernel,
 * precision, dropout and adapter dropout. */
static int holds_seen; /* layers whose held input outlived its last use */

static void check_one_recording(const char *name, llmem_model *mm)
{
    static graph g;
    static layer_run alone, shared, again;
    model_shape m;
    const seg_spec specs[] = {
        { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 },
        { .input_rg = 1 },
        { .input_rg = 1, .lora_targets = 127, .lora_rank = 8 },
        { .input_rg = 1, .lora_targets = 5, .lora_rank = 16, .nf4 = 1 },
        { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1, .moe = 1 },
        { .input_rg = 1, .lora_targets = 127, .lora_rank = 8, .moe = 1 },
    };
    static const int modes[] = { SIM_HOLD_OUTPUT, SIM_EARLY_STOP };
    if (!layered_shape(mm, &m))
        return;
    for (size_t k = 0; k < N(specs); k++) {
        if (!has_layer(&m, &specs[k]))
            continue;
        for (int run = 0; run < 4 * (int)N(kernels); run++) {
            int kernel = kernels[run % N(kernels)], mixed = (run / N(kernels)) & 1;
            int dropout = run / N(kernels) >= 2;
            if (kernel == LLMEM_ATTENTION_SDPA && (m.traits & TRAIT_NO_SDPA))
                continue;
            build b = { .g = &g, .batch = 3, .seq = 96, .tokens = 288, .autocast = mixed,
                        .sp = 1, .attention = kernel, .ep = 1, .compute = 2,
                        .param_dt = mixed ? 4 : 2, .lora_dropout = dropout ? 0.05 : 0.0 };
            for (int site = 0; site < DROPOUT_SITES; site++)
                b.dropout[site] = dropout ? 0.1 : 0.0;
            int mode = modes[run & 1];
            /* The input's hold keeps it to the end of forward, when its last
             * use comes before (no_grad: nothing else keeps it). */
            run_layer(&g, &b, &m, &specs[k], 0, 1, 0, SIM_PLAIN, &shared);
            run_layer(&g, &b, &m, &specs[k], 0, 0, 0, SIM_PLAIN, &alone);
            const g_tensor *x = &g.t[g.inputs[0]];
            uint64_t held = x->last_use < g.nop - 1 ? x->bytes : 0;
            cr_expect_eq(shared.events[shared.nforward - 1] - alone.events[alone.nforward - 1],
                         held, "%s spec %zu kernel %d: the held input", name, k, kernel);
            holds_seen += held > 0;
            run_layer(&g, &b, &m, &specs[k], 1, 0, 0, SIM_NO_GRAD, &shared);
            cr_expect(same_run(&alone, &shared),
                      "%s spec %zu kernel %d mixed %d dropout %d: the no_grad forward "
                      "differs from its own recording (peak %llu, %llu)",
                      name, k, kernel, mixed, dropout, (unsigned long long)alone.cost.fwd_peak,
                      (unsigned long long)shared.cost.fwd_peak);
            run_layer(&g, &b, &m, &specs[k], 1, 0, 2, mode, &shared);
            run_layer(&g, &b, &m, &specs[k], 1, 1, 0, mode, &alone);
            cr_expect(same_run(&alone, &shared),
                      "%s spec %zu kernel %d mixed %d dropout %d mode %d: the recomputation "
                      "differs from its own recording (backward peak %llu, %llu)",
                      name, k, kernel, mixed, dropout, mode,
                      (unsigned long long)alone.cost.bwd_peak,
                      (unsigned long long)shared.cost.bwd_peak);
            int uniform = specs[k].lora_targets == 0;
            /* Under no_grad, what requires grad is moot: frozen and
             * trainable layers share a cache key there and any of their
             * tapes (walksegs.c: no_grad_key, frozen_tape). */
            static layer_run moot;
            seg_spec key = specs[k];
            key.input_rg = 0;
            if (uniform)
                key.weights_trainable = key.norms_trainable = 0;
            run_layer(&g, &b, &m, &key, 0, 0, 0, SIM_PLAIN, &moot);
            /* unless autocast caches the casts of the weights that train */
            static layer_run moot_trains;
            if (uniform && mixed) {
                key.weights_trainable = key.norms_trainable = 1;
                run_layer(&g, &b, &m, &key, 0, 0, 0, SIM_PLAIN, &moot_trains);
            }
            /* A plain layer's tape run, then retargeted to its input
             * requiring grad or not and, without adapters, to its weights
             * and norms training or not (the same included: a second run). */
            for (int f = 0; f < (uniform ? 16 : 4); f++) {
                seg_spec from = specs[k], to = specs[k];
                from.input_rg = f & 1;
                to.input_rg = (f >> 1) & 1;
                if (uniform) {
                    from.weights_trainable = from.norms_trainable = (f >> 2) & 1;
                    to.weights_trainable = to.norms_trainable = (f >> 3) & 1;
                }
                run_layer(&g, &b, &m, &from, 0, 0, 0, SIM_PLAIN, &shared);
                cr_expect(same_run(uniform && mixed && from.weights_trainable ? &moot_trains : &moot,
                                   &shared),
                          "%s spec %zu kernel %d mixed %d dropout %d: the no_grad forward "
                          "with input_rg %d, weights %d differs from its key's",
                          name, k, kernel, mixed, dropout, from.input_rg, from.weights_trainable);
                run_layer(&g, &b, &m, &from, 1, 0, 0, SIM_PLAIN, &shared);
                /* Nothing requires grad: saves nothing, as under no_grad
                 * (walksegs.c: frozen_tape). */
                if (uniform && !from.input_rg && !from.weights_trainable)
                    cr_expect(same_run(&moot, &shared),
                              "%s spec %zu kernel %d mixed %d dropout %d: a layer in which "
                              "nothing requires grad differs from its no_grad run",
                              name, k, kernel, mixed, dropout);
                run_layer(&g, &b, &m, &to, 1, 0, 3, SIM_PLAIN, &shared);
                run_layer(&g, &b, &m, &to, 1, 0, 4, SIM_PLAIN, &again);
                cr_expect(same_run(&shared, &again),
                          "%s spec %zu kernel %d mixed %d dropout %d: a second run of a tape "
                          "differs from its first (backward peak %llu, %llu)",
                          name, k, kernel, mixed, dropout, (unsigned long long)shared.cost.bwd_peak,
                          (unsigned long long)again.cost.bwd_peak);
                run_layer(&g, &b, &m, &to, 1, 0, 0, SIM_PLAIN, &alone);
                cr_expect(same_run(&alone, &shared),
                          "%s spec %zu kernel %d mixed %d dropout %d: input_rg %d, weights %d "
                          "retargeted to %d, %d differs from its own recording (backward peak "
                          "%llu, %llu)",
                          name, k, kernel, mixed, dropout, from.input_rg, from.weights_trainable,
                          to.input_rg, to.weights_trainable,
                          (unsigned long long)alone.cost.bwd_peak,
                          (unsigned long long)shared.cost.bwd_peak);
            }
        }
    }
}

Test(walk, one_recording_serves_the_runs_of_a_layer)
{
    for_every_model(check_one_recording);
    cr_expect_gt(holds_seen, 100, "%d held inputs outlived their last use", holds_seen);
}

/* The specs the rewound-tape tests cross (full, frozen, LoRA, QLoRA; the
 * input requiring grad or not) and the run modes they run each tail in. */
static const seg_spec tail_specs[] = {
    { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 },
    { .input_rg = 0, .weights_trainable = 1, .norms_trainable = 1 },
    { .input_rg = 1 },
    { .input_rg = 0 },
    { .input_rg = 1, .lora_targets = 127, .lora_rank = 8 },
    { .input_rg = 0, .lora_targets = 127, .lora_rank = 8 },
    { .input_rg = 1, .lora_targets = 5, .lora_rank = 16, .nf4 = 1 },
};
static const int tail_modes[] = { SIM_PLAIN, SIM_NO_GRAD, SIM_HOLD_OUTPUT, SIM_EARLY_STOP };

/* A tape recorded for `from` and marked, made `to`'s as the walk does
 * (walksegs.c layer_tape): a retarget of the whole tape first (the walk's
 * runs before), the rewind, the prefix retargeted, `to`'s tail recorded. */
static void retail(graph *g, build *b, const model_shape *m, const seg_spec *from,
                   const seg_spec *to)
{
    llmem_graph_retarget(g, !from->input_rg, -1);
    llmem_graph_rewind(g);
    llmem_graph_retarget(g, to->input_rg,
                         to->lora_targets == 0 && to->weights_trainable == to->norms_trainable
                             ? to->weights_trainable
                             : -1);
    llmem_layers_decoder_tail(b, m, to);
    cr_assert_eq(g->overflow, 0);
}

/* A model with dense and experts' layers on the latent path marks its
 * layer's tape before the MLP: one kind's tape, rewound to the mark,
 * retargeted and given the other kind's tail (walksegs.c: layer_tape),
 * must run as the other's own recording, in every mode, after any
 * retarget of the whole tape first. */
static int tails_seen;

static void check_tails(const char *name, llmem_model *mm)
{
    static graph g;
    static layer_run own, tail;
    model_shape m;
    if (!layered_shape(mm, &m) || m.experts == 0 || m.dense_layers == 0)
        return;
    int marks = m.path == PATH_LATENT; /* the path with a tail (layers/latent.c) */
    for (size_t k = 0; k < N(tail_specs) * N(tail_specs); k++) {
        seg_spec from = tail_specs[k / N(tail_specs)], to = tail_specs[k % N(tail_specs)];
        int uniform = from.lora_targets == 0 && to.lora_targets == 0;
        if (!uniform && (from.lora_targets != to.lora_targets || from.nf4 != to.nf4))
            continue; /* not retargetable (walksegs.c: retargetable) */
        for (int run = 0; run < 2 * (int)N(kernels) * 2; run++) {
            int kernel = kernels[run % N(kernels)], mixed = (run / N(kernels)) & 1;
            int flip = run / (2 * (int)N(kernels)); /* dense -> experts, or back */
            if (kernel == LLMEM_ATTENTION_SDPA && (m.traits & TRAIT_NO_SDPA))
                continue;
            build b = { .g = &g, .batch = 3, .seq = 96, .tokens = 288, .autocast = mixed,
                        .sp = 1, .attention = kernel, .ep = 1, .compute = 2,
                        .param_dt = mixed ? 4 : 2, .dropout = { 0.1, 0.1, 0.1 } };
            from.moe = flip;
            to.moe = !flip;
            for (size_t i = 0; i < N(tail_modes); i++) {
                int hold = tail_modes[i] == SIM_HOLD_OUTPUT || tail_modes[i] == SIM_EARLY_STOP;
                run_layer(&g, &b, &m, &from, 1, 0, 0, SIM_PLAIN, &tail);
                cr_assert_eq(g.mark.nt > 0, marks, "%s: the tape's mark", name);
                if (!marks)
                    return;
                retail(&g, &b, &m, &from, &to);
                run_layer(&g, &b, &m, &to, 1, 0, hold ? 2 : 4, tail_modes[i], &tail);
                run_layer(&g, &b, &m, &to, 1, hold, hold, tail_modes[i], &own);
                tails_seen++;
                cr_expect(same_run(&own, &tail),
                          "%s specs %zu -> %zu kernel %d mixed %d moe %d -> %d mode %d: the "
                          "tail on a rewound tape differs from its own recording (peaks %llu, "
                          "%llu; %llu, %llu)",
                          name, k / N(tail_specs), k % N(tail_specs), kernel, mixed, from.moe, to.moe,
                          tail_modes[i], (unsigned long long)own.cost.fwd_peak,
                          (unsigned long long)tail.cost.fwd_peak,
                          (unsigned long long)own.cost.bwd_peak,
                          (unsigned long long)tail.cost.bwd_peak);
            }
        }
    }
}

Test(walk, a_rewound_tape_serves_the_other_kind_of_layer)
{
    for_every_model(check_tails);
    cr_expect_gt(tails_seen, 1000, "%d tails checked", tails_seen);
}

/* Whether two tapes are the same: their tensors (sizes, roles, what
 * requires grad, saves, last uses), ops (inputs, outputs, save bits and
 * rules, workspaces, regions; an op's unused input slots aside), inputs,
 * made tensors and output. A
 * parameter's cached flag is left out: a retarget leaves it stale
 * (graph.h), and nothing reads it after one. */
static int same_tape(const graph *a, const graph *c, const char **why)
{
    *why = "counts";
    if (a->nt != c->nt || a->nop != c->nop || a->ninputs != c->ninputs || a->nmade != c->nmade ||
        a->output != c->output)
        return 0;
    *why = "a tensor";
    for (int i = 0; i < a->nt; i++) {
        const g_tensor *x = &a->t[i], *y = &c->t[i];
        int param = x->role == ROLE_PARAM;
        if (x->bytes != y->bytes || x->last_use != y->last_use || x->base != y->base ||
            x->saved != y->saved || (x->saved && x->first_save != y->first_save) ||
            x->role != y->role || x->rg != y->rg || x->dt != y->dt ||
            (!param && x->cached != y->cached))
            return 0;
    }
    *why = "an op";
    for (int i = 0; i < a->nop; i++) {
        const g_op *x = &a->op[i], *y = &c->op[i];
        if (x->out != y->out || x->nin != y->nin ||
            memcmp(x->in, y->in, x->nin * sizeof x->in[0]) || x->aux != y->aux ||
            x->save != y->save || x->rule != y->rule || x->grad_alias != y->grad_alias ||
            x->alloc != y->alloc ||
            x->fwd_extra != y->fwd_extra || x->bwd_extra != y->bwd_extra ||
            x->bwd_final != y->bwd_final || strcmp(x->region, y->region))
            return 0;
    }
    *why = "inputs or made tensors";
    return !memcmp(a->inputs, c->inputs, (size_t)a->ninputs * sizeof a->inputs[0]) &&
           !memcmp(a->made, c->made, (size_t)a->nmade * sizeof a->made[0]);
}

/* Gemma-2 under SDPA from the sliding window on: its sliding layers take
 * the window's mask, its full ones none, so the tape is marked after
 * rotary (layers/llama.c) and the other kind's tape is the rewound one
 * with its tail (walksegs.c: layer_tape). It must be that kind's own
 * recording, op for op, and run as it in every mode, after any retarget
 * of the whole tape first; at a length that pads the mask (seq % 8) too.
 * Below the window, and under eager or flash-attn, every layer is one
 * kind: no mark. */
static int window_tails_seen;

static void check_window_tails(const char *name, llmem_model *mm)
{
    static graph g, fresh;
    static layer_run own, tail;
    model_shape m;
    static const uint64_t seqs[] = { 4096, 4100, 4103, 512 };
    if (!layered_shape(mm, &m) || !(m.traits & TRAIT_ALTERNATE_WINDOW))
        return;
    for (size_t k = 0; k < N(tail_specs) * N(tail_specs); k++) {
        seg_spec from = tail_specs[k / N(tail_specs)], to = tail_specs[k % N(tail_specs)];
        int uniform = from.lora_targets == 0 && to.lora_targets == 0;
        if (!uniform && (from.lora_targets != to.lora_targets || from.nf4 != to.nf4))
            continue; /* not retargetable (walksegs.c: retargetable) */
        for (int run = 0; run < (int)N(seqs) * (int)N(kernels) * 2 * 2; run++) {
            int kernel = kernels[run % N(kernels)], mixed = (run / N(kernels)) & 1;
            int flip = (run / (2 * (int)N(kernels))) & 1; /* sliding -> full, or back */
            uint64_t seq = seqs[run / (4 * (int)N(kernels))];
            int marks = llmem_model_window_alternates(&m, kernel, seq);
            build b = { .g = &g, .batch = 2, .seq = seq, .tokens = 2 * seq, .autocast = mixed,
                        .sp = 1, .attention = kernel, .ep = 1, .compute = 2,
                        .param_dt = mixed ? 4 : 2, .dropout = { 0.1, 0.1, 0.1 } };
            from.full_attention = marks && flip;
            to.full_attention = marks && !flip;
            for (size_t i = 0; i < N(tail_modes); i++) {
                int hold = tail_modes[i] == SIM_HOLD_OUTPUT || tail_modes[i] == SIM_EARLY_STOP;
                const char *why;
                run_layer(&g, &b, &m, &from, 1, 0, 0, SIM_PLAIN, &tail);
                cr_assert_eq(g.mark.nt > 0, marks, "%s kernel %d seq %llu: the tape's mark", name,
                             kernel, (unsigned long long)seq);
                if (!marks)
                    break;
                retail(&g, &b, &m, &from, &to);
                b.g = &fresh;
                llmem_graph_reset(&fresh, 1);
                llmem_layers_decoder(&b, &m, &to);
                b.g = &g;
                cr_expect(same_tape(&g, &fresh, &why),
                          "%s specs %zu -> %zu kernel %d mixed %d seq %llu full %d -> %d: the "
                          "tail on a rewound tape differs from its own recording in %s",
                          name, k / N(tail_specs), k % N(tail_specs), kernel, mixed,
                          (unsigned long long)seq, from.full_attention, to.full_attention, why);
                run_layer(&g, &b, &m, &to, 1, 0, hold ? 2 : 4, tail_modes[i], &tail);
                run_layer(&g, &b, &m, &to, 1, hold, hold, tail_modes[i], &own);
                window_tails_seen++;
                cr_expect(same_run(&own, &tail),
                          "%s specs %zu -> %zu kernel %d mixed %d seq %llu full %d -> %d mode "
                          "%d: the tail on a rewound tape runs otherwise than its own recording "
                          "(peaks %llu, %llu; %llu, %llu)",
                          name, k / N(tail_specs), k % N(tail_specs), kernel, mixed,
                          (unsigned long long)seq, from.full_attention, to.full_attention,
                          tail_modes[i], (unsigned long long)own.cost.fwd_peak,
                          (unsigned long long)tail.cost.fwd_peak,
                          (unsigned long long)own.cost.bwd_peak,
                          (unsigned long long)tail.cost.bwd_peak);
            }
        }
    }
}

Test(walk, a_rewound_tape_serves_gemma2s_other_kind_of_layer)
{
    for_every_model(check_window_tails);
    /* gemma-2-2b and -9b at least: 2 x 21 spec pairs x 3 marked lengths x
     * 2 precisions x 2 directions x 4 modes */
    cr_expect_geq(window_tails_seen, 2 * 21 * 3 * 2 * 2 * 4, "%d tails checked",
                  window_tails_seen);
}

/* A tape by hand: an input x (1,000 bytes, requires grad), a = f(x)
 * (2,000, saving what f_saves says), with_view: v = a view of a (as an
 * in-place op), then y = g(v or a) (4,000). */
static void chain_tape(graph *g, unsigned f_saves, int with_view)
{
    llmem_graph_reset(g, 1);
    tid x = llmem_graph_tensor(g, 250, 4, ROLE_INPUT, 1);
    tid a = llmem_graph_op(g, 500, 4, &x, 1, f_saves, 0, 0, 0, 0);
    if (with_view) {
        tid v = llmem_graph_op(g, 500, 4, &a, 1, 0, 0, 0, 0, 0);
        llmem_graph_view(g, v, a);
        a = v;
    }
    g->output = llmem_graph_op(g, 1000, 4, &a, 1, 0, 0, 0, 0, 0);
}

/* f saving x, and a view between f and g. */
static void small_tape(graph *g)
{
    chain_tape(g, 1u, 1);
}

/* An op whose save bits name an input past its own is a builder's bug:
 * refused like one that does not fit (overflow set, no op recorded), not
 * recorded with a stale input saved. */
Test(walk, an_op_saving_an_input_it_lacks_is_refused)
{
    static graph g;
    llmem_graph_reset(&g, 1);
    tid x = llmem_graph_tensor(&g, 250, 4, ROLE_INPUT, 1);
    tid two[2] = { x, x };
    tid a = llmem_graph_op(&g, 500, 4, &x, 1, 1u, 0, 0, 0, 0);
    llmem_graph_op(&g, 500, 4, two, 2, 2u | 1u, 0, 0, 0, 0);
    cr_assert_eq(g.overflow, 0, "saves of inputs it has");
    cr_assert_eq(g.nop, 2);
    llmem_graph_op(&g, 500, 4, &a, 1, 2u, 0, 0, 0, 0);
    cr_expect_eq(g.overflow, 1, "input 1 of a one-input op");
    cr_expect_eq(g.nop, 2, "nothing recorded");
    g.overflow = 0;
    llmem_graph_op(&g, 500, 4, two, 2, 4u, 0, 0, 0, 0);
    cr_expect_eq(g.overflow, 1, "input 2 of a two-input op");
    cr_expect_eq(g.nop, 2, "nothing recorded");
}

/* A view allocates nothing; a run logs every step into room of
 * GRAPH_MAX_EVENTS, and refuses less (a bug: nothing logged, overflow set). */
Test(walk, a_view_allocates_nothing_and_a_log_has_room)
{
    static graph g;
    static uint64_t events[GRAPH_MAX_EVENTS];
    seg_cost plain, logged;
    small_tape(&g);
    llmem_graph_simulate(&g, SIM_PLAIN, &plain);
    /* x saved by f; a freed after g (the view's last use keeps its base);
     * the peak is x + a + y, the view adding nothing */
    cr_assert_eq(plain.fwd_peak, 1000u + 2000u + 4000u);
    cr_assert_eq(plain.persist, 1000u);
    g.events = events;
    g.events_cap = GRAPH_MAX_EVENTS;
    llmem_graph_simulate(&g, SIM_PLAIN, &logged);
    cr_assert_eq(g.overflow, 0);
    cr_assert(!memcmp(&plain, &logged, sizeof plain));
    cr_assert_eq(g.nevents_forward, 4); /* the start and three ops */
    cr_assert_eq(g.nevents, 8);         /* and backward's start and three ops */
    cr_assert_eq(events[2], 1000u + 2000u); /* the view's step: nothing new */
    g.events_cap = GRAPH_MAX_EVENTS - 1;
    llmem_graph_simulate(&g, SIM_PLAIN, &logged);
    cr_assert_eq(g.overflow, 1);
    cr_assert_eq(g.nevents, 0);
    cr_assert(!memcmp(&plain, &logged, sizeof plain));
}

/* A non-reentrant recomputation stops at the last op that saves: before
 * it when it saves an input (packed before the kernel runs), after it when
 * it saves its output (packed once computed). It runs when backward
 * reaches that op: here g's backward has by then replaced the output's
 * gradient (4000) with a's (2000), so the recomputation sits 2000 lower
 * than at backward's start (floored at its own start). */
Test(walk, an_early_stop_runs_its_op_only_when_it_saves_its_output)
{
    static graph g;
    static uint64_t events[GRAPH_MAX_EVENTS];
    seg_cost c;
    small_tape(&g); /* the last save is f's, of its input x */
    g.events = events;
    g.events_cap = GRAPH_MAX_EVENTS;
    llmem_graph_simulate(&g, SIM_EARLY_STOP, &c);
    cr_assert_eq(c.fwd_peak, 1000u - 1000u); /* x alone: f does not run; 2000 lower, floored */
    cr_assert_eq(g.nevents_forward, 1); /* the start only */
    g.events = NULL;
    chain_tape(&g, SAVE_OUT, 0);
    llmem_graph_simulate(&g, SIM_EARLY_STOP, &c);
    cr_assert_eq(c.fwd_peak, 1000u + 2000u - 2000u); /* f runs, then the stop: g does not */
    llmem_graph_simulate(&g, SIM_PLAIN, &c);
    cr_assert_eq(c.fwd_peak, 2000u + 4000u); /* x goes after f, which saves only a */
}

/* An in-place product that saves a clone of its input (autograd's
 * original_self, llmem_graph_made_to_save): x (1000, requires grad) ->
 * w = f(x) (2000) -> clone of w (2000) -> w.mul_(x), saving x and the
 * clone -> y = g(w) (1000). The clone exists only where autograd records
 * the product: kept to backward with grad enabled, never made under no_grad,
 * made and dropped at once in a non-reentrant checkpoint's forward. */
Test(walk, a_clone_made_to_save_exists_only_when_saved)
{
    static graph g;
    seg_cost plain, no_grad, packed;
    llmem_graph_reset(&g, 1);
    tid x = llmem_graph_tensor(&g, 250, 4, ROLE_INPUT, 1);
    tid w = llmem_graph_op(&g, 500, 4, &x, 1, 0, 0, 0, 0, 0);
    tid clone = llmem_graph_op(&g, 500, 4, NULL, 0, 0, 0, 0, 0, 0);
    tid prod = llmem_graph_op(&g, 500, 4, (tid[]){ w, x, clone }, 3, BIT(1) | BIT(2), 0, 0, 0, 0);
    llmem_graph_view(&g, prod, w);
    llmem_graph_made_to_save(&g, clone);
    g.output = llmem_graph_op(&g, 250, 4, &prod, 1, 0, 0, 0, 0, 0);
    llmem_graph_simulate(&g, SIM_PLAIN, &plain);
    llmem_graph_simulate(&g, SIM_NO_GRAD, &no_grad);
    llmem_graph_simulate(&g, SIM_PACKED, &packed);
    /* saved: x and the clone persist; the peak is at g, all four live */
    cr_assert_eq(plain.persist, 1000u + 2000u);
    cr_assert_eq(plain.fwd_peak, 1000u + 2000u + 2000u + 1000u);
    /* no clone: x and w at the product, w and y after it */
    cr_assert_eq(no_grad.fwd_peak, 1000u + 2000u);
    /* the clone at the product only */
    cr_assert_eq(packed.fwd_peak, 1000u + 2000u + 2000u);
    cr_assert_eq(packed.persist, 0u);
    /* nothing requires grad: the product saves nothing, so no clone */
    llmem_graph_retarget(&g, 0, -1);
    llmem_graph_simulate(&g, SIM_PLAIN, &plain);
    cr_assert_eq(plain.fwd_peak, 1000u + 2000u);
}

/* A held input (a checkpoint's recomputation) stays to the segment's end,
 * unless it is saved anyway. */
Test(walk, a_held_input_stays_to_the_end)
{
    static graph g;
    seg_cost c;
    chain_tape(&g, 0, 0);
    llmem_graph_simulate(&g, SIM_PLAIN, &c);
    cr_assert_eq(c.fwd_peak, 2000u + 4000u); /* x goes after f */
    llmem_layers_hold_input(&g);
    llmem_graph_simulate(&g, SIM_PLAIN, &c);
    cr_assert_eq(c.fwd_peak, 1000u + 2000u + 4000u);
    cr_assert_eq(c.persist, 0u);
    small_tape(&g); /* x saved by f: held or not, it stays */
    llmem_graph_simulate(&g, SIM_PLAIN, &c);
    seg_cost held;
    llmem_layers_hold_input(&g);
    llmem_graph_simulate(&g, SIM_PLAIN, &held);
    cr_assert(!memcmp(&c, &held, sizeof c));
}

/* The walk's input, white-box: one rank's share of a step. */
typedef struct walk_fixture {
    llmem_ctx *ctx;
    llmem_model *mm;
    llmem_train *t;
    model_shape m;
    model_params p;
    setup s;
    step_static st;
} walk_fixture;

static void fixture_open(walk_fixture *f, const char *preset, const char *method)
{
    tensor_list l;
    memset(f, 0, sizeof *f);
    cr_assert_eq(llmem_ctx_new(&f->ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new_preset(f->ctx, preset, &f->mm), LLMEM_OK);
    cr_assert_eq(llmem_train_new(f->ctx, &f->t), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(f->t, LLMEM_TRAIN_METHOD, method), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f->t, LLMEM_TRAIN_BATCH, 2), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f->t, LLMEM_TRAIN_SEQ, 256), LLMEM_OK);
    cr_assert_eq(llmem_model_resolve(f->mm, &f->m, &f->p), LLMEM_OK);
    cr_assert_eq(llmem_setup_resolve(f->t, &f->m, f->ctx, &f->s), LLMEM_OK);
    llmem_tensors_list(&f->m, &f->p, &f->s, &l);
    llmem_statics_params(&l, &f->m, &f->s, &f->st);
    llmem_statics_optimizer(&l, &f->s, &f->st);
    f->st.batch = llmem_statics_data(&f->s);
}

static void fixture_close(walk_fixture *f)
{
    llmem_train_free(f->t);
    llmem_model_free(f->mm);
    llmem_ctx_free(f->ctx);
}

static walk_result walk_with(walk_fixture *f, const walk_input *in)
{
    static walk_scratch ws; /* large: not on the stack */
    walk_result r;
    memset(&ws, 0, sizeof ws);
    cr_assert_eq(llmem_walk(&ws, in, &r), LLMEM_OK);
    (void)f;
    return r;
}

/* The whole model on one GPU: what the estimate handle reports. */
Test(walk, single_input_is_the_estimate)
{
    walk_fixture f;
    walk_input in;
    llmem_estimate *e;
    uint64_t peak = 0, phase = 0;
    fixture_open(&f, "meta-llama/Llama-3.2-1B", "full");
    llmem_walk_single(&in, &f.m, &f.s, &f.st);
    walk_result r = walk_with(&f, &in);
    cr_assert_eq(llmem_estimate_new(f.ctx, &e), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, f.mm, f.t), LLMEM_OK);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &peak);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_PHASE, &phase);
    cr_expect_eq(r.peak, peak);
    cr_expect_eq((uint64_t)r.peak_phase, phase);
    llmem_estimate_free(e);
    fixture_close(&f);
}

/* Micro-batches in flight: every moment of forward and backward holds one
 * more micro-batch's forward state each; the optimizer step runs once. */
Test(walk, micro_batches_in_flight_shift_forward_and_backward)
{
    walk_fixture f;
    walk_input in;
    fixture_open(&f, "meta-llama/Llama-3.2-1B", "full");
    llmem_walk_single(&in, &f.m, &f.s, &f.st);
    walk_result one = walk_with(&f, &in);
    in.in_flight = 3;
    walk_result three = walk_with(&f, &in);
    uint64_t shift = three.phase_peak[LLMEM_PHASE_FORWARD - 1] - one.phase_peak[LLMEM_PHASE_FORWARD - 1];
    cr_expect_gt(shift, 0);
    cr_expect_eq(shift % 2, 0, "two stashes");
    for (int ph = LLMEM_PHASE_FORWARD; ph <= LLMEM_PHASE_BACKWARD; ph++)
        cr_expect_eq(three.phase_peak[ph - 1] - one.phase_peak[ph - 1], shift, "phase %d", ph);
    cr_expect_eq(three.phase_peak[LLMEM_PHASE_OPTIMIZER - 1],
                 one.phase_peak[LLMEM_PHASE_OPTIMIZER - 1]);
    cr_expect_geq(three.peak, one.peak);
    fixture_close(&f);
}

/* Gathered parameters (ZeRO-3, FSDP) add to the moments of the segment they
 * surround, and nowhere else. */
Test(walk, gathered_bytes_surround_their_segment)
{
    walk_fixture f;
    walk_input in;
    const uint64_t G = UINT64_C(1) << 40; /* larger than any moment here */
    fixture_open(&f, "meta-llama/Llama-3.2-1B", "full");
    llmem_walk_single(&in, &f.m, &f.s, &f.st);
    walk_result base = walk_with(&f, &in);
    in.gather.layer_bwd = G;
    walk_result bwd = walk_with(&f, &in);
    cr_expect_eq(bwd.phase_peak[LLMEM_PHASE_FORWARD - 1], base.phase_peak[LLMEM_PHASE_FORWARD - 1]);
    cr_expect_gt(bwd.phase_peak[LLMEM_PHASE_BACKWARD - 1], G);
    cr_expect_leq(bwd.phase_peak[LLMEM_PHASE_BACKWARD - 1] - G,
                  base.phase_peak[LLMEM_PHASE_BACKWARD - 1], "G on a layer's backward moment");
    cr_expect_eq(bwd.phase_peak[LLMEM_PHASE_LOSS_BACKWARD - 1],
                 base.phase_peak[LLMEM_PHASE_LOSS_BACKWARD - 1]);
    in.gather.layer_bwd = 0;
    in.gather.head = G;
    walk_result head = walk_with(&f, &in);
    cr_expect_eq(head.phase_peak[LLMEM_PHASE_LOSS_BACKWARD - 1],
                 base.phase_peak[LLMEM_PHASE_LOSS_BACKWARD - 1] + G);
    cr_expect_leq(head.peak, base.peak + G);
    fixture_close(&f);
}

/* Two pipeline stages: the first runs the embedding and half the layers, the
 * second the rest with the head; each holds less than the whole model at its
 * peak, and their backward leaves only gradients (and what both hold from
 * the start) behind. (Untied: with tied embeddings both ends hold a copy.) */
Test(walk, pipeline_stages_split_the_step)
{
    walk_fixture f;
    walk_input whole, first, second;
    fixture_open(&f, "meta-llama/Llama-2-7b-hf", "full");
    llmem_walk_single(&whole, &f.m, &f.s, &f.st);
    first = second = whole;
    first.layer_count = f.m.layers / 2;
    first.head = 0;
    second.layer_first = f.m.layers / 2;
    second.layer_count = f.m.layers - f.m.layers / 2;
    second.embedding = 0;
    walk_result w = walk_with(&f, &whole), a = walk_with(&f, &first), b = walk_with(&f, &second);
    cr_expect_lt(a.phase_peak[LLMEM_PHASE_FORWARD - 1], w.phase_peak[LLMEM_PHASE_FORWARD - 1]);
    cr_expect_eq(a.phase_peak[LLMEM_PHASE_LOSS_BACKWARD - 1], 0, "no loss on the first stage");
    cr_expect_gt(b.phase_peak[LLMEM_PHASE_LOSS_BACKWARD - 1], 0);
    cr_expect_lt(b.phase_peak[LLMEM_PHASE_BACKWARD - 1], w.phase_peak[LLMEM_PHASE_BACKWARD - 1]);
    /* What each stage's backward leaves beyond the fixed bytes is gradients:
     * together, the whole model's. */
    cr_expect_eq((a.end_of_backward - a.fixed) + (b.end_of_backward - b.fixed),
                 w.end_of_backward - w.fixed);
    fixture_close(&f);
}

/* Autocast caches its copy of a parameter that requires grad until it
 * exits (torch's cached_cast), saved or not: the copies no op saves are the
 * segment's `cached` bytes, held past it (a linear never saves its bias; its
 * weight's copy only when its input needs a gradient). */
static seg_cost cast_linear(graph *g, int param_dt, int input_rg, int uncached, int mode)
{
    build b = { .g = g, .batch = 2, .seq = 4, .tokens = 8, .autocast = 1, .compute = 2,
                .param_dt = param_dt, .uncached_casts = uncached, .sp = 1, .ep = 1 };
    seg_cost c;
    llmem_graph_reset(g, 1);
    tid x = llmem_graph_tensor(g, 8 * 16, param_dt, ROLE_INPUT, input_rg);
    g->output = op_linear(&b, x, 16, 32, 1, 1);
    llmem_graph_simulate(g, mode, &c);
    return c;
}

Test(walk, autocast_holds_the_casts_no_op_saves)
{
    static graph g;
    uint64_t weight = 16 * 32 * 2, bias = 32 * 2, x = 8 * 16 * 4, xc = 8 * 16 * 2;
    seg_cost c = cast_linear(&g, 4, 0, 0, SIM_PLAIN);
    cr_expect_eq(c.cached, weight + bias, "input without grad: %llu", (unsigned long long)c.cached);
    cr_expect_eq(c.persist, xc, "the input's copy saved for the weight's gradient");
    /* at the matmul: x (the module's argument, held through it), the copies
     * and the output */
    cr_expect_eq(c.fwd_peak, x + xc + weight + bias + 8 * 32 * 2);
    c = cast_linear(&g, 4, 1, 0, SIM_PLAIN);
    cr_expect_eq(c.cached, bias, "input with grad: the weight's copy is saved");
    c = cast_linear(&g, 4, 0, 0, SIM_NO_GRAD);
    cr_expect_eq(c.cached, 0, "no_grad: the caller's (checkpointing's cache)");
    c = cast_linear(&g, 4, 0, 1, SIM_PLAIN);
    cr_expect_eq(c.cached, 0, "a parameter cast at every use (FalconLinear's view)");
    c = cast_linear(&g, 2, 0, 0, SIM_PLAIN);
    cr_expect_eq(c.cached, 0, "weights in the compute dtype are not cast");
}
