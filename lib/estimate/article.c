/* SPDX-License-Identifier: MIT */
/*
 * The source article's formula (seed article, "記憶體需求估算公式"):
 *   m_total = m_p + m_os + m_data + m_tmp
 * m_p = parameters x bytes per parameter (4 in its example); m_os = the
 * optimizer's states as multiples of m_p (Adam: 2, momentum and variance; the
 * article calls them "momentum and gradient"); m_data = batch x sample size;
 * m_tmp = m_p x a factor the article leaves open ("several times"). It counts
 * no gradients and sums the terms instead of finding a peak.
 */
#include "estimate/article.h"

#include "train/optimizers.h"
#include "train/train.h"

#include "core/checked.h"
#include "core/ctx.h"

#include <math.h>

/* States per parameter in units of m_p: the optimizer row's multiple, or its
 * fixed bytes per parameter over the article's bytes per parameter. */
static double state_multiple(int optimizer, int param_bytes)
{
    const optimizer_desc *o = llmem_optimizer(optimizer);
    return o->article_multiple + o->article_bytes / param_bytes;
}

/* x * m rounded, or a flag when it does not fit in 63 bits. */
static uint64_t scaled(checked *c, double x, uint64_t m)
{
    double v = x * (double)m;
    if (v >= 9.0e18) {
        c->overflow = 1;
        return 0;
    }
    return (uint64_t)llround(v);
}

int llmem_article_estimate(llmem_ctx *ctx, est_results *r, const model_params *p,
                           const llmem_train *t, const setup *s)
{
    checked c = { 0 };
    int param_bytes = (int)t->i[LLMEM_TRAIN_ARTICLE_PARAM_BYTES];
    double factor = t->d[LLMEM_TRAIN_ARTICLE_TMP_FACTOR];
    uint64_t m_p = ck_mul(&c, p->total, (uint64_t)param_bytes);
    uint64_t m_os = scaled(&c, state_multiple(s->optimizer, param_bytes), m_p);
    /* A sample is seq tokens of input_ids, attention_mask and labels (int64). */
    uint64_t m_data = ck_mul(&c, ck_mul(&c, s->batch, s->seq), 3 * 8);
    uint64_t m_tmp = scaled(&c, factor, m_p);
    uint64_t total = ck_add(&c, ck_add(&c, m_p, m_os), ck_add(&c, m_data, m_tmp));
    if (c.overflow || total > (UINT64_C(1) << 62))
        return llmem__fail(ctx, LLMEM_EOVERFLOW,
                           "formula: the article's terms overflow 64 bits for this model and batch");
    uint64_t terms[4] = { m_p, m_os, m_data, m_tmp };
    static const char *const names[4] = { "m_p", "m_os", "m_data", "m_tmp" };

    r->peak_allocated = total;
    r->peak_phase = 0;
    for (int i = 0; i < PHASE_COUNT; i++)
        r->phase_peak[i] = 0;
    for (int k = 0; k < TERM_COUNT; k++) {
        llmem_term_set(&r->term[k], k + 1, terms[k], terms[k]);
        llmem_term_add(&r->term[k], names[k], terms[k]);
    }
    return LLMEM_OK;
}
