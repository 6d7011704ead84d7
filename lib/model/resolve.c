/* SPDX-License-Identifier: MIT */
/* Resolving a model: fields checked together, defaults applied, and the
 * exact parameter count by part. */
#include "model/model.h"

#include "core/checked.h"
#include "core/ctx.h"
#include "model/families.h"

#include <string.h>

/* A failure about one model field. */
#define FAIL(m, key, status, ...) llmem__fail_field((m)->ctx, LLMEM_OBJECT_MODEL, key, status, __VA_ARGS__)

static int require_set(llmem_model *m, int key)
{
    if (m->field[key] > 0)
        return LLMEM_OK;
    return FAIL(m, key, LLMEM_EINCONSISTENT, "%s: not set (must be a positive integer)",
                llmem_fields_find(&llmem_model_fields, key)->name);
}

/* A norm over dim elements: its weight, and its bias when the model's norms have one. */
static uint64_t norm_params(const model_shape *s, uint64_t dim)
{
    return dim * (uint64_t)(1 + s->norm_bias);
}

/* One layer's attention. Multi-head latent attention (DeepSeek-V2/V3,
 * DeepseekV2Attention): q_a_proj (bias = attention_bias), q_a_layernorm,
 * q_b_proj (or a plain q_proj without bias), kv_a_proj_with_mqa to
 * kv_lora_rank + rope dims (bias = attention_bias), kv_a_layernorm, kv_b_proj
 * to heads x (nope + v), o_proj from heads x v (bias = attention_bias). */
static uint64_t attention_params(checked *c, const model_shape *s)
{
    uint64_t H = s->hidden, n = 0;
    if (s->kv_lora_rank > 0) {
        uint64_t q_out = s->heads * s->head_dim, rope = s->rotary_dim;
        uint64_t kv_a = s->kv_lora_rank + rope;
        if (s->q_lora_rank > 0) {
            n = ck_add(c, ck_mul(c, H, s->q_lora_rank), ck_mul(c, s->q_lora_rank, q_out));
            n = ck_add(c, n, norm_params(s, s->q_lora_rank));
            if (s->qkv_bias)
                n = ck_add(c, n, s->q_lora_rank);
        } else {
            n = ck_mul(c, H, q_out);
        }
        n = ck_add(c, n, ck_mul(c, H, kv_a));
        if (s->qkv_bias)
            n = ck_add(c, n, kv_a);
        n = ck_add(c, n, norm_params(s, s->kv_lora_rank));
        n = ck_add(c, n, ck_mul3(c, s->kv_lora_rank, s->heads,
                                 s->head_dim - rope + s->v_head_dim));
        n = ck_add(c, n, ck_mul3(c, s->heads, s->v_head_dim, H));
    } else {
        uint64_t q = s->heads * s->head_dim, k = s->kv_heads * s->head_dim;
        uint64_t v = s->kv_heads * s->v_head_dim, o = s->heads * s->v_head_dim;
        n = ck_mul(c, H, q + k + v);
        n = ck_add(c, n, ck_mul(c, o, H));
        if (s->qkv_bias)
            n = ck_add(c, n, q + k + v);
    }
    if (s->out_bias)
        n = ck_add(c, n, H);
    if (s->qk_norm)
        n = ck_add(c, n, 2 * norm_params(s, s->head_dim));
    return n;
}

/* Parameter counts by part, with every product checked. */
static int count_params(llmem_model *m, const model_shape *s, model_params *p)
{
    checked c = { 0 };
    uint64_t H = s->hidden;
    uint64_t norm_size = norm_params(s, H);
    uint64_t mats_per_mlp = s->mlp == LLMEM_MLP_GATED ? 3 : 2;
    memset(p, 0, sizeof *p);

    p->embedding = ck_mul(&c, s->vocab, s->embed_dim);
    if (s->embed_dim != H) /* OPT-350m: project_in and project_out, no biases */
        p->embedding = ck_add(&c, p->embedding, ck_mul3(&c, 2, s->embed_dim, H));
    if (s->positions == LLMEM_POSITIONS_LEARNED)
        p->positions = ck_mul(&c, ck_add(&c, s->max_positions, s->position_offset), H);
    p->embed_norm = s->embed_norm ? norm_size : 0;

    p->layer_attention = attention_params(&c, s);

    uint64_t dense = ck_mul3(&c, mats_per_mlp, H, s->intermediate);
    if (s->mlp_bias)
        dense = ck_add(&c, dense, (mats_per_mlp - 1) * s->intermediate + H);
    uint64_t moe_layers = 0, dense_layers = s->layers;
    if (s->experts > 0) {
        /* Routed experts have no biases in any supported family; the router is
         * Linear(hidden, experts, bias=False) (+ DeepSeek-V3's per-expert
         * correction bias); the shared expert is one MLP of the summed inner
         * size, with Qwen2-MoE's Linear(hidden, 1) gate. */
        uint64_t expert = ck_mul3(&c, mats_per_mlp, H, s->expert_intermediate);
        uint64_t router = ck_add(&c, ck_mul(&c, H, s->experts), s->router_bias ? s->experts : 0);
        uint64_t shared = ck_mul3(&c, mats_per_mlp, H, s->shared_intermediate);
        if (s->shared_gate)
            shared = ck_add(&c, shared, H);
        p->layer_mlp = ck_add(&c, ck_add(&c, ck_mul(&c, expert, s->experts), router), shared);
        p->layer_mlp_active =
            ck_add(&c, ck_add(&c, ck_mul(&c, expert, s->experts_per_token), router), shared);
        p->layer_mlp_dense = s->dense_layers ? dense : 0;
        dense_layers = s->dense_layers;
        moe_layers = s->layers - s->dense_layers;
    } else {
        p->layer_mlp = p->layer_mlp_active = p->layer_mlp_dense = dense;
    }
    p->layer_norms = ck_mul(&c, s->norms_per_layer, norm_size);
    p->layer = ck_add(&c, ck_add(&c, p->layer_attention, p->layer_mlp), p->layer_norms);
    p->layer_dense =
        ck_add(&c, ck_add(&c, p->layer_attention, p->layer_mlp_dense), p->layer_norms);
    p->final_norm = s->final_norm ? norm_size : 0;
    /* A tied head shares the embedding's weight; a bias would still be its own. */
    p->head = ck_add(&c, s->tie ? 0 : ck_mul(&c, s->vocab, s->embed_dim),
                     s->head_bias ? s->vocab : 0);

    uint64_t outside = ck_add(&c, ck_add(&c, p->embedding, p->positions),
                              ck_add(&c, ck_add(&c, p->embed_norm, p->final_norm), p->head));
    uint64_t all_dense = ck_mul(&c, p->layer_dense, dense_layers);
    p->total = ck_add(&c, ck_add(&c, ck_mul(&c, p->layer, moe_layers), all_dense), outside);
    /* A token passes through every weight but the routed experts it is not sent
     * to; embedding and head count in full (Mixtral's "12.9B active"). */
    uint64_t layer_active = p->layer_attention + p->layer_mlp_active + p->layer_norms;
    p->active = ck_add(&c, ck_add(&c, ck_mul(&c, layer_active, moe_layers), all_dense), outside);

    /* Buffers: GPT-2's bool causal mask, max-positions^2 bytes a layer. */
    if (s->traits & TRAIT_CAUSAL_BUFFER) {
        checked b = { 0 };
        uint64_t mask = ck_mul3(&b, s->layers, s->max_positions, s->max_positions);
        if (b.overflow || mask > (UINT64_C(1) << 62))
            return FAIL(m, LLMEM_MODEL_MAX_POSITIONS, LLMEM_EOVERFLOW,
                        "max-positions: %llu makes the causal-mask buffers (layers x "
                        "max-positions^2 bytes) overflow the 64-bit byte counts",
                        (unsigned long long)s->max_positions);
    }
    if (c.overflow)
        return FAIL(m, LLMEM_MODEL_HIDDEN, LLMEM_EOVERFLOW,
                           "model: parameter count overflows 64 bits (hidden %llu, layers %llu, "
                           "vocab %llu)",
                           (unsigned long long)H, (unsigned long long)s->layers,
                           (unsigned long long)s->vocab);
    return LLMEM_OK;
}

/* The probability at each kind of dropout site; a family whose code has no
 * site of a kind takes only 0 there (a probability nothing would apply is a
 * mistake, not a default). */
static int resolve_dropout(llmem_model *m, model_shape *s)
{
    static const char *const where[DROPOUT_SITES] = {
        "on the attention probabilities", "on the attention and MLP outputs",
        "on the embedding output" };
    const family_desc *fam = llmem_family(s->family);
    for (int site = 0; site < DROPOUT_SITES; site++) {
        int key = MODEL_DROPOUT_KEY(site);
        s->dropout[site] = llmem_model_real(m->field, key);
        if (s->dropout[site] != 0.0 && !(fam->dropout_sites & DROPOUT_AT(site)))
            return FAIL(m, key, LLMEM_EINCONSISTENT,
                        "%s: %g, but %s models have no dropout %s (leave it 0)",
                        llmem_fields_find(&llmem_model_fields, key)->name, s->dropout[site],
                        fam->id.name, where[site]);
    }
    return LLMEM_OK;
}

int llmem_model_resolve(llmem_model *m, model_shape *s, model_params *p)
{
    static const int required[] = { LLMEM_MODEL_HIDDEN, LLMEM_MODEL_LAYERS, LLMEM_MODEL_HEADS,
                                    LLMEM_MODEL_VOCAB };
    const int64_t *f = m->field;
    int rc;
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if ((rc = require_set(m, required[i])) != LLMEM_OK)
            return rc;
    if ((f[LLMEM_MODEL_EXPERTS] == 0 || f[LLMEM_MODEL_DENSE_LAYERS] > 0) &&
        (rc = require_set(m, LLMEM_MODEL_INTERMEDIATE)) != LLMEM_OK)
        return rc;

    memset(s, 0, sizeof *s);
    s->family = (int)f[LLMEM_MODEL_FAMILY];
    s->path = llmem_family(s->family)->path;
    s->traits = llmem_family(s->family)->traits;
    s->hidden = (uint64_t)f[LLMEM_MODEL_HIDDEN];
    s->layers = (uint64_t)f[LLMEM_MODEL_LAYERS];
    s->heads = (uint64_t)f[LLMEM_MODEL_HEADS];
    s->kv_heads = f[LLMEM_MODEL_KV_HEADS] ? (uint64_t)f[LLMEM_MODEL_KV_HEADS] : s->heads;
    s->intermediate = (uint64_t)f[LLMEM_MODEL_INTERMEDIATE];
    s->vocab = (uint64_t)f[LLMEM_MODEL_VOCAB];
    s->max_positions = (uint64_t)f[LLMEM_MODEL_MAX_POSITIONS];
    s->position_offset = (uint64_t)f[LLMEM_MODEL_POSITION_OFFSET];
    s->embed_dim = f[LLMEM_MODEL_EMBED_DIM] ? (uint64_t)f[LLMEM_MODEL_EMBED_DIM] : s->hidden;
    s->experts = (uint64_t)f[LLMEM_MODEL_EXPERTS];
    s->experts_per_token = (uint64_t)f[LLMEM_MODEL_EXPERTS_PER_TOKEN];
    s->expert_intermediate = (uint64_t)f[LLMEM_MODEL_EXPERT_INTERMEDIATE];
    s->shared_intermediate = (uint64_t)f[LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE];
    s->norm = (int)f[LLMEM_MODEL_NORM];
    s->mlp = (int)f[LLMEM_MODEL_MLP];
    s->positions = (int)f[LLMEM_MODEL_POSITIONS];
    s->qkv_bias = (int)f[LLMEM_MODEL_QKV_BIAS];
    s->out_bias = (int)f[LLMEM_MODEL_OUT_BIAS];
    s->mlp_bias = (int)f[LLMEM_MODEL_MLP_BIAS];
    s->norm_bias = (int)f[LLMEM_MODEL_NORM_BIAS];
    s->head_bias = (int)f[LLMEM_MODEL_HEAD_BIAS];
    s->tie = (int)f[LLMEM_MODEL_TIE_EMBEDDINGS];
    s->norms_per_layer = (uint64_t)f[LLMEM_MODEL_NORMS_PER_LAYER];
    s->final_norm = (int)f[LLMEM_MODEL_FINAL_NORM];
    s->embed_norm = (int)f[LLMEM_MODEL_EMBED_NORM];
    s->qk_norm = (int)f[LLMEM_MODEL_QK_NORM];
    s->parallel_block = (int)f[LLMEM_MODEL_PARALLEL_BLOCK];
    s->shared_gate = (int)f[LLMEM_MODEL_SHARED_EXPERT_GATE];
    s->router_bias = (int)f[LLMEM_MODEL_ROUTER_BIAS];
    s->q_lora_rank = (uint64_t)f[LLMEM_MODEL_Q_LORA_RANK];
    s->kv_lora_rank = (uint64_t)f[LLMEM_MODEL_KV_LORA_RANK];
    s->dense_layers = (uint64_t)f[LLMEM_MODEL_DENSE_LAYERS];
    s->activation = (int)f[LLMEM_MODEL_ACTIVATION];
    s->post_norm = (int)f[LLMEM_MODEL_POST_NORM];
    s->bnb_4bit = (int)f[LLMEM_MODEL_BNB_4BIT];
    if ((rc = resolve_dropout(m, s)) != LLMEM_OK)
        return rc;
    s->sliding_window = (uint64_t)f[LLMEM_MODEL_SLIDING_WINDOW];
    if (s->sliding_window > 0 && !(s->traits & TRAIT_WINDOW))
        return FAIL(m, LLMEM_MODEL_SLIDING_WINDOW, LLMEM_EINCONSISTENT,
                    "sliding-window: %llu, but %s models have no sliding-window attention "
                    "(leave it 0)",
                    (unsigned long long)s->sliding_window, llmem_family(s->family)->id.name);

    if (f[LLMEM_MODEL_HEAD_DIM] > 0) {
        s->head_dim = (uint64_t)f[LLMEM_MODEL_HEAD_DIM];
    } else if (s->hidden % s->heads != 0) {
        return FAIL(m, LLMEM_MODEL_HEADS, LLMEM_EINCONSISTENT,
                           "heads: %llu does not divide hidden %llu (set head-dim explicitly)",
                           (unsigned long long)s->heads, (unsigned long long)s->hidden);
    } else {
        s->head_dim = s->hidden / s->heads;
    }
    s->rotary_dim = f[LLMEM_MODEL_ROTARY_DIM] ? (uint64_t)f[LLMEM_MODEL_ROTARY_DIM] : s->head_dim;
    s->v_head_dim = f[LLMEM_MODEL_V_HEAD_DIM] ? (uint64_t)f[LLMEM_MODEL_V_HEAD_DIM] : s->head_dim;
    if (s->rotary_dim > s->head_dim)
        return FAIL(m, LLMEM_MODEL_ROTARY_DIM, LLMEM_EINCONSISTENT, "rotary-dim: %llu exceeds head-dim %llu",
                           (unsigned long long)s->rotary_dim, (unsigned long long)s->head_dim);
    if (s->q_lora_rank > 0 && s->kv_lora_rank == 0)
        return FAIL(m, LLMEM_MODEL_Q_LORA_RANK, LLMEM_EINCONSISTENT,
                           "q-lora-rank: %llu set without kv-lora-rank (latent attention)",
                           (unsigned long long)s->q_lora_rank);
    if (s->heads % s->kv_heads != 0)
        return FAIL(m, LLMEM_MODEL_KV_HEADS, LLMEM_EINCONSISTENT, "kv-heads: %llu does not divide heads %llu",
                           (unsigned long long)s->kv_heads, (unsigned long long)s->heads);
    if (s->norm == LLMEM_NORM_RMSNORM && s->norm_bias)
        return FAIL(m, LLMEM_MODEL_NORM_BIAS, LLMEM_EINCONSISTENT,
                    "norm-bias: RMSNorm has no bias (norm-bias needs layernorm)");
    if (s->positions == LLMEM_POSITIONS_LEARNED && s->max_positions == 0)
        return FAIL(m, LLMEM_MODEL_MAX_POSITIONS, LLMEM_EINCONSISTENT,
                           "max-positions: not set (learned positions need it)");
    if (s->experts > 0) {
        if (s->experts_per_token == 0 || s->experts_per_token > s->experts)
            return FAIL(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, LLMEM_EINCONSISTENT,
                               "experts-per-token: %llu must be in [1, experts %llu]",
                               (unsigned long long)s->experts_per_token,
                               (unsigned long long)s->experts);
        if (s->expert_intermediate == 0)
            return FAIL(m, LLMEM_MODEL_EXPERT_INTERMEDIATE, LLMEM_EINCONSISTENT,
                               "expert-intermediate: not set (MoE layers need it)");
        if (s->dense_layers > s->layers)
            return FAIL(m, LLMEM_MODEL_DENSE_LAYERS, LLMEM_EINCONSISTENT,
                               "dense-layers: %llu exceeds layers %llu",
                               (unsigned long long)s->dense_layers, (unsigned long long)s->layers);
        if (s->shared_gate && s->shared_intermediate == 0)
            return FAIL(m, LLMEM_MODEL_SHARED_EXPERT_GATE, LLMEM_EINCONSISTENT,
                               "shared-expert-gate: set but shared-expert-intermediate is 0");
    } else if (s->experts_per_token > 0) {
        return FAIL(m, LLMEM_MODEL_EXPERTS_PER_TOKEN, LLMEM_EINCONSISTENT,
                           "experts-per-token: %llu set but experts is 0",
                           (unsigned long long)s->experts_per_token);
    } else if (s->dense_layers > 0) {
        return FAIL(m, LLMEM_MODEL_DENSE_LAYERS, LLMEM_EINCONSISTENT, "dense-layers: %llu set but experts is 0",
                           (unsigned long long)s->dense_layers);
    }
    return count_params(m, s, p);
}

