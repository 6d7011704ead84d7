/* SPDX-License-Identifier: MIT */
#include "estimate/estimate.h"
#include "estimate/tensors.h"

#include "core/checked.h"
#include "core/ctx.h"

#include <string.h>

int llmem_estimate_new(llmem_ctx *ctx, llmem_estimate **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "estimate: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_estimate *e = llmem__calloc(ctx, sizeof *e);
    if (e == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "estimate: out of memory");
    e->ctx = ctx;
    *out = e;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_estimate_free(llmem_estimate *e)
{
    if (e != NULL)
        llmem__free(e->ctx, e);
}

/* Bytes per element of the parameters and of the compute dtype. */
static const struct precision_dtypes {
    int precision, param_dt, compute_dt, autocast;
} precision_table[] = {
    { LLMEM_PRECISION_FP32, 4, 4, 0 },
    { LLMEM_PRECISION_BF16_MIXED, 4, 2, 1 },
    { LLMEM_PRECISION_FP16_MIXED, 4, 2, 1 },
    { LLMEM_PRECISION_BF16, 2, 2, 0 },
};

static int lora_targets_exist(const model_shape *m, unsigned targets)
{
    model_linear lin[MODEL_MAX_LINEARS];
    int n = model_layer_linears(m, lin);
    for (int i = 0; i < n; i++)
        if (lin[i].lora_target & targets)
            return 1;
    return 0;
}

/* A bound on every byte count of the step: each tensor is at most tokens x
 * (vocab + heads x seq + the widest layer) elements of at most 8 bytes, and
 * fewer than 64 of them per layer are live at once. If the bound fits in 63
 * bits, no sum the walk forms can wrap. */
static int step_overflows(const model_shape *m, const setup *s)
{
    checked c = { 0 };
    uint64_t widest = m->hidden + m->intermediate + m->heads * m->head_dim +
                      m->experts_per_token * (m->expert_intermediate + m->hidden) + m->experts;
    uint64_t tokens = ck_mul(&c, s->batch, s->seq);
    uint64_t per_token = ck_add(&c, ck_add(&c, m->vocab, ck_mul(&c, m->heads, s->seq)), widest);
    uint64_t bound = ck_mul(&c, ck_mul(&c, tokens, per_token), ck_mul(&c, m->layers + 2, 8 * 64));
    return c.overflow || bound > (UINT64_C(1) << 62);
}

/* Why the op-level layer model does not cover m, or NULL when it does. */
/* The layouts layers.c builds: each covered family with the fields its code
 * path assumes. A model that changes one of them is refused, not guessed. */
static const struct phased_layout {
    int family, norm, mlp, positions;
    uint64_t norms_per_layer;
} phased_layouts[] = {
    { LLMEM_FAMILY_GPT2, LLMEM_NORM_LAYERNORM, LLMEM_MLP_PLAIN, LLMEM_POSITIONS_LEARNED, 2 },
    { LLMEM_FAMILY_LLAMA, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY, 2 },
    { LLMEM_FAMILY_PHI3, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY, 2 },
    { LLMEM_FAMILY_GEMMA, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY, 2 },
    { LLMEM_FAMILY_GEMMA2, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY, 4 },
};

static const char *phased_unsupported(const model_shape *m)
{
    const struct phased_layout *l = NULL;
    for (size_t i = 0; i < sizeof phased_layouts / sizeof phased_layouts[0]; i++)
        if (phased_layouts[i].family == m->family)
            l = &phased_layouts[i];
    if (l == NULL)
        return "family";
    if (m->norm != l->norm)
        return "norm";
    if (m->mlp != l->mlp)
        return "mlp";
    if (m->positions != l->positions)
        return "positions";
    if (m->norms_per_layer != l->norms_per_layer)
        return "norms-per-layer";
    if (m->embed_dim != m->hidden)
        return "embed-dim";
    if (m->embed_norm)
        return "embed-norm";
    if (m->v_head_dim != 0 && m->v_head_dim != m->head_dim)
        return "v-head-dim";
    /* GPT2Attention splits c_attn into three hidden-wide parts: one head size. */
    if (m->family == LLMEM_FAMILY_GPT2 &&
        (m->kv_heads != m->heads || m->heads * m->head_dim != m->hidden))
        return "head-dim (GPT-2 has hidden / heads per head and no grouped kv heads)";
    if (m->kv_lora_rank > 0)
        return "kv-lora-rank (multi-head latent attention)";
    if (m->parallel_block)
        return "parallel-block";
    if (m->rotary_dim != 0 && m->rotary_dim != m->head_dim)
        return "rotary-dim (partial rotary)";
    if (m->experts > 0 && m->family != LLMEM_FAMILY_LLAMA)
        return "experts";
    if (m->qk_norm && m->family != LLMEM_FAMILY_LLAMA)
        return "qk-norm";
    return NULL;
}

int setup_resolve(const llmem_train *t, const model_shape *m, llmem_ctx *ctx, setup *s)
{
    memset(s, 0, sizeof *s);
    s->batch = (uint64_t)t->i[LLMEM_TRAIN_BATCH];
    s->seq = (uint64_t)t->i[LLMEM_TRAIN_SEQ];
    s->precision = (int)t->i[LLMEM_TRAIN_PRECISION];
    s->optimizer = (int)t->i[LLMEM_TRAIN_OPTIMIZER];
    s->method = (int)t->i[LLMEM_TRAIN_METHOD];
    s->grad_ckpt = (int)t->i[LLMEM_TRAIN_GRAD_CKPT];
    s->attention = (int)t->i[LLMEM_TRAIN_ATTENTION];
    s->loss = (int)t->i[LLMEM_TRAIN_LOSS];
    s->formula = (int)t->i[LLMEM_TRAIN_FORMULA];
    s->dropout = t->d[LLMEM_TRAIN_DROPOUT];
    s->lora_rank = (uint64_t)t->i[LLMEM_TRAIN_LORA_RANK];
    s->lora_targets = (unsigned)t->i[LLMEM_TRAIN_LORA_TARGETS];
    s->frozen_layers = (uint64_t)t->i[LLMEM_TRAIN_FROZEN_LAYERS];
    s->grad_accum = (uint64_t)t->i[LLMEM_TRAIN_GRAD_ACCUM];
    for (size_t i = 0; i < sizeof precision_table / sizeof precision_table[0]; i++) {
        if (precision_table[i].precision == s->precision) {
            s->param_dt = precision_table[i].param_dt;
            s->compute_dt = precision_table[i].compute_dt;
            s->autocast = precision_table[i].autocast;
        }
    }
    if (s->method == LLMEM_METHOD_FREEZE && s->frozen_layers > m->layers)
        return llmem__fail(ctx, LLMEM_EINCONSISTENT, "freeze-layers: %llu exceeds layers %llu",
                           (unsigned long long)s->frozen_layers, (unsigned long long)m->layers);
    if (s->method != LLMEM_METHOD_FREEZE && s->frozen_layers > 0)
        return llmem__fail(ctx, LLMEM_EINCONSISTENT,
                           "freeze-layers: %llu set but method is not freeze",
                           (unsigned long long)s->frozen_layers);
    if (s->method == LLMEM_METHOD_QLORA && s->precision == LLMEM_PRECISION_FP32)
        return llmem__fail(ctx, LLMEM_EINCONSISTENT,
                           "precision: qlora needs a 16-bit compute dtype (bf16-mixed, "
                           "fp16-mixed or bf16), not fp32");
    if ((s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA) &&
        !lora_targets_exist(m, s->lora_targets))
        return llmem__fail(ctx, LLMEM_EINCONSISTENT,
                           "lora-targets: no module of this model matches (PEFT would fail: "
                           "target modules not found)");
    if (s->formula == LLMEM_FORMULA_PHASED && step_overflows(m, s))
        return llmem__fail(ctx, LLMEM_EOVERFLOW,
                           "batch x seq: %llu x %llu tokens make the step's byte counts "
                           "overflow 64 bits for this model",
                           (unsigned long long)s->batch, (unsigned long long)s->seq);
    if (s->formula == LLMEM_FORMULA_PHASED) {
        const char *why = phased_unsupported(m);
        if (why != NULL)
            return llmem__fail(ctx, LLMEM_ENOTSUP,
                               "%s: the phased estimate follows the gpt2 and llama code paths "
                               "(dense or mixture-of-experts), phi3 and gemma; use --formula article for this "
                               "model", why);
    }
    return LLMEM_OK;
}

/* The handle's caches are keyed by the model and the setup but batch and seq
 * (both structs are zeroed before they are filled, so memcmp is exact).
 * Returns whether this run repeats the key. */
static int remember_key(llmem_estimate *e, const model_shape *m, const setup *s)
{
    setup key = *s;
    key.batch = key.seq = 0;
    if (e->cache.runs > 0 && memcmp(&e->key_shape, m, sizeof *m) == 0 &&
        memcmp(&e->key_setup, &key, sizeof key) == 0) {
        if (e->cache.runs < 2)
            e->cache.runs++;
        return 1;
    }
    e->key_shape = *m;
    e->key_setup = key;
    e->key_static_valid = 0;
    e->cache.runs = 1;
    for (int i = 0; i < SEG_CACHE; i++)
        e->cache.entry[i].used = 0;
    return 0;
}

int llmem_estimate_run(llmem_estimate *e, llmem_model *model, const llmem_train *train)
{
    model_shape m;
    model_params p;
    setup s;
    step_static st;
    tensor_list tensors;
    uint64_t overhead;
    if (e == NULL)
        return LLMEM_EINVAL;
    if (model == NULL || train == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: model or train is NULL");
    int rc = model_resolve(model, &m, &p);
    if (rc != LLMEM_OK) {
        if (model->ctx != e->ctx)
            llmem__fail(e->ctx, rc, "%s", llmem_ctx_error(model->ctx));
        return rc;
    }
    if ((rc = setup_resolve(train, &m, e->ctx, &s)) != LLMEM_OK)
        return rc;
    {
        /* Every static byte count is at most 32 bytes per parameter (weights,
         * gradients, states, rounding): bound it once here. */
        checked c = { 0 };
        if (ck_mul(&c, p.total, 32) > (UINT64_C(1) << 62) || c.overflow)
            return llmem__fail(e->ctx, LLMEM_EOVERFLOW,
                               "model: %llu parameters overflow the 64-bit byte counts",
                               (unsigned long long)p.total);
    }

    /* Weights, gradients and states depend on neither batch nor seq: a run
     * with the previous run's model and setup reuses them. */
    if (remember_key(e, &m, &s) && e->key_static_valid) {
        st = e->key_static;
        overhead = e->key_overhead;
    } else {
        memset(&st, 0, sizeof st);
        step_tensors(&m, &p, &s, &tensors);
        if (tensors.overflow)
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: this model has more kinds of parameter tensors than "
                               "the estimator lists (TENSOR_CLASSES_MAX); please report it");
        params_term(&tensors, &m, &s, &st);
        optimizer_term(&tensors, &s, &st);
        overhead = allocator_overhead(&tensors, &s);
        e->key_static = st;
        e->key_overhead = overhead;
        e->key_static_valid = 1;
    }
    st.batch = data_term(&s);

    /* Results are written only on success, so a failed run keeps the last one. */
    if (s.formula == LLMEM_FORMULA_ARTICLE) {
        est_results saved = e->r;
        if ((rc = article_estimate(e, &p, train, &s)) != LLMEM_OK) {
            e->r = saved;
            return rc;
        }
    } else {
        est_results saved = e->r;
        temporaries_term(e, &m, &s, &st);
        if (e->graph_overflow) {
            e->r = saved;
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: this model's layer needs more operations than the "
                               "simulator holds (GRAPH_MAX_OPS); please report it");
        }
        /* The walk must end backward holding exactly weights, states, batch and
         * gradients; anything else means the layer model and the tensor list
         * disagree about this model: refuse rather than print a wrong number. */
        uint64_t expected = st.weights + st.quant_constants + st.adapters + st.buffers +
                            st.states + st.batch + st.grads;
        if (e->end_of_backward != expected) {
            e->r = saved;
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: the layer model does not cover this combination of "
                               "fields (%llu bytes unaccounted); please report it",
                               (unsigned long long)(e->end_of_backward > expected
                                                        ? e->end_of_backward - expected
                                                        : expected - e->end_of_backward));
        }
    }
    e->r.params_total = p.total;
    e->r.params_active = p.active;
    e->r.params_trainable = st.trainable;
    e->r.peak_reserved = e->r.peak_allocated + overhead;
    /* The article's m_os already holds any paged states. */
    e->r.peak_device = allocator_device(e->r.peak_reserved,
                                        s.formula == LLMEM_FORMULA_ARTICLE ? 0 : st.paged_states);
    e->valid = 1;
    llmem__ok(e->ctx);
    return LLMEM_OK;
}

static int require_valid(const llmem_estimate *e)
{
    if (e == NULL)
        return LLMEM_EINVAL;
    if (!e->valid)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: not run yet (call llmem_estimate_run)");
    return LLMEM_OK;
}

int llmem_estimate_get_u64(const llmem_estimate *e, int key, uint64_t *out)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: out pointer is NULL");
    switch (key) {
    case LLMEM_EST_PARAMS_TOTAL: *out = e->r.params_total; break;
    case LLMEM_EST_PARAMS_TRAINABLE: *out = e->r.params_trainable; break;
    case LLMEM_EST_PEAK_ALLOCATED: *out = e->r.peak_allocated; break;
    case LLMEM_EST_PEAK_RESERVED: *out = e->r.peak_reserved; break;
    case LLMEM_EST_PEAK_DEVICE: *out = e->r.peak_device; break;
    case LLMEM_EST_PEAK_PHASE: *out = (uint64_t)e->r.peak_phase; break;
    case LLMEM_EST_PARAMS_ACTIVE: *out = e->r.params_active; break;
    default: return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown result key %d", key);
    }
    return LLMEM_OK;
}

int llmem_estimate_phase_bytes(const llmem_estimate *e, int phase, uint64_t *out)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL || phase < 1 || phase > PHASE_COUNT)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown phase %d", phase);
    *out = e->r.phase_peak[phase - 1];
    return LLMEM_OK;
}

int llmem_estimate_term(const llmem_estimate *e, int kind, const llmem_term **out)
{
    int rc = require_valid(e);
    if (rc != LLMEM_OK)
        return rc;
    if (out == NULL || kind < 1 || kind > TERM_COUNT)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: unknown term %d", kind);
    *out = &e->r.term[kind - 1];
    return LLMEM_OK;
}

uint64_t llmem_term_bytes_at_peak(const llmem_term *t)
{
    return t ? t->at_peak : 0;
}

uint64_t llmem_term_max_bytes(const llmem_term *t)
{
    return t ? t->max : 0;
}

size_t llmem_term_component_count(const llmem_term *t)
{
    return t ? t->ncomp : 0;
}

int llmem_term_component(const llmem_term *t, size_t index, const char **name,
                         uint64_t *bytes_at_peak)
{
    if (t == NULL || index >= t->ncomp)
        return LLMEM_EINVAL;
    if (name)
        *name = t->comp_name[index];
    if (bytes_at_peak)
        *bytes_at_peak = t->comp_bytes[index];
    return LLMEM_OK;
}

void term_set(struct llmem_term *t, int kind, uint64_t at_peak, uint64_t max)
{
    t->kind = kind;
    t->at_peak = at_peak;
    t->max = max;
    t->ncomp = 0;
}

void term_add(struct llmem_term *t, const char *name, uint64_t bytes)
{
    if (t->ncomp < TERM_MAX_COMPONENTS) {
        t->comp_name[t->ncomp] = name;
        t->comp_bytes[t->ncomp] = bytes;
        t->ncomp++;
    }
}
