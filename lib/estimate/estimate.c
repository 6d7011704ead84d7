/* SPDX-License-Identifier: MIT */
#include "estimate/estimate.h"

#include "core/checked.h"
#include "core/ctx.h"
#include "estimate/article.h"
#include "estimate/terms.h"
#include "layers/layers.h"
#include "model/families.h"

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

/* The phased model builds the families on a code path of lib/layers: others
 * are refused, naming the field, rather than guessed. */
static int check_covered(llmem_ctx *ctx, const model_shape *m)
{
    const char *why, *family = llmem_family(m->family)->id.name;
    int key = llmem_layers_unsupported(m, &why);
    if (key == 0)
        return LLMEM_OK;
    char covered[200];
    llmem_layers_covered(covered, sizeof covered);
    if (key == LLMEM_MODEL_FAMILY)
        return llmem__fail_field(ctx, LLMEM_OBJECT_MODEL, key, LLMEM_ENOTSUP,
                                 "family: the phased estimate does not build %s models yet (it "
                                 "builds %s); use --formula article for this model",
                                 family, covered);
    return llmem__fail_field(ctx, LLMEM_OBJECT_MODEL, key, LLMEM_ENOTSUP,
                             "%s: this %s model differs from what the phased estimate builds "
                             "(the families %s, as transformers does); use --formula article "
                             "for this model",
                             why, family, covered);
}

/* The handle's caches are keyed by the model and the setup but batch and seq
 * (both structs are zeroed before they are filled, so memcmp is exact).
 * Returns whether this run repeats the key. */
static int remember_key(llmem_estimate *e, const model_shape *m, const setup *s)
{
    setup key = *s;
    key.batch = key.seq = 0;
    seg_cache *cache = &e->walk.cache;
    if (cache->runs > 0 && memcmp(&e->key_shape, m, sizeof *m) == 0 &&
        memcmp(&e->key_setup, &key, sizeof key) == 0) {
        if (cache->runs < 2)
            cache->runs++;
        return 1;
    }
    e->key_shape = *m;
    e->key_setup = key;
    e->key_static_valid = 0;
    cache->runs = 1;
    for (int i = 0; i < SEG_CACHE; i++)
        cache->entry[i].used = 0;
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
    int rc = llmem_model_resolve(model, &m, &p);
    if (rc != LLMEM_OK) {
        if (model->ctx != e->ctx)
            llmem__fail(e->ctx, rc, "%s", llmem_ctx_error(model->ctx));
        return rc;
    }
    if ((rc = llmem_setup_resolve(train, &m, e->ctx, &s)) != LLMEM_OK)
        return rc;
    if (s.formula == LLMEM_FORMULA_PHASED && (rc = check_covered(e->ctx, &m)) != LLMEM_OK)
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
        llmem_tensors_list(&m, &p, &s, &tensors);
        if (tensors.overflow)
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: this model has more kinds of parameter tensors than "
                               "the estimator lists (TENSOR_CLASSES_MAX); please report it");
        llmem_statics_params(&tensors, &m, &s, &st);
        llmem_statics_optimizer(&tensors, &s, &st);
        overhead = llmem_allocator_overhead(&tensors, &s);
        e->key_static = st;
        e->key_overhead = overhead;
        e->key_static_valid = 1;
    }
    st.batch = llmem_statics_data(&s);

    /* Results are written only on success, so a failed run keeps the last one. */
    if (s.formula == LLMEM_FORMULA_ARTICLE) {
        est_results saved = e->r;
        if ((rc = llmem_article_estimate(e->ctx, &e->r, &p, train, &s)) != LLMEM_OK) {
            e->r = saved;
            return rc;
        }
    } else {
        walk_input in;
        walk_result w;
        llmem_walk_single(&in, &m, &s, &st);
        if (llmem_walk(&e->walk, &in, &w) != LLMEM_OK)
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: this model's layer needs more operations than the "
                               "simulator holds (GRAPH_MAX_OPS); please report it");
        /* The walk must end backward holding exactly weights, states, batch and
         * gradients; anything else means the layer model and the tensor list
         * disagree about this model: refuse rather than print a wrong number. */
        uint64_t expected = st.weights + st.quant_constants + st.adapters + st.buffers +
                            st.states + st.batch + st.grads;
        e->end_of_backward = w.end_of_backward;
        if (w.end_of_backward != expected)
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: the layer model does not cover this combination of "
                               "fields (%llu bytes unaccounted); please report it",
                               (unsigned long long)(w.end_of_backward > expected
                                                        ? w.end_of_backward - expected
                                                        : expected - w.end_of_backward));
        llmem_terms_phased(&e->r, &st, &w);
    }
    e->r.params_total = p.total;
    e->r.params_active = p.active;
    e->r.params_trainable = st.trainable;
    e->r.peak_reserved = e->r.peak_allocated + overhead;
    /* The article's m_os already holds any paged states. */
    e->r.peak_device = llmem_allocator_device(e->r.peak_reserved,
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
