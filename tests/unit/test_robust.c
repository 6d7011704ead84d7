/* SPDX-License-Identifier: MIT */
/*
 * Random models and setups through the public API: every field drawn from a
 * range that includes bad values. Whatever the inputs, llmem_estimate_run
 * either fails with a status and a message, or succeeds with results that
 * hold together. Under AddressSanitizer (.ci/run) this is also a memory-safety
 * sweep of the estimator. The generator is seeded, so failures reproduce.
 */
#include <criterion/criterion.h>
#include <llmem.h>
#include <stdio.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    /* xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift
     * generators", 2016) */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * UINT64_C(2685821657736338717);
}

static int64_t pick(rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1));
}

/* Model keys with ranges a little wider than valid, to hit the checks too. */
static const struct {
    int key;
    int64_t lo, hi;
} model_ranges[] = {
    { LLMEM_MODEL_HIDDEN, 0, 1024 },       { LLMEM_MODEL_LAYERS, 0, 6 },
    { LLMEM_MODEL_HEADS, 0, 16 },          { LLMEM_MODEL_KV_HEADS, 0, 16 },
    { LLMEM_MODEL_HEAD_DIM, 0, 128 },      { LLMEM_MODEL_INTERMEDIATE, 0, 4096 },
    { LLMEM_MODEL_VOCAB, 0, 40000 },       { LLMEM_MODEL_MAX_POSITIONS, 0, 2048 },
    { LLMEM_MODEL_NORM, 0, 3 },            { LLMEM_MODEL_MLP, 0, 3 },
    { LLMEM_MODEL_POSITIONS, 0, 4 },       { LLMEM_MODEL_QKV_BIAS, 0, 1 },
    { LLMEM_MODEL_TIE_EMBEDDINGS, 0, 1 },  { LLMEM_MODEL_NORMS_PER_LAYER, 0, 5 },
    { LLMEM_MODEL_EXPERTS, 0, 8 },         { LLMEM_MODEL_EXPERTS_PER_TOKEN, 0, 3 },
    { LLMEM_MODEL_EXPERT_INTERMEDIATE, 0, 512 },
    { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, 0, 512 },
    { LLMEM_MODEL_QK_NORM, 0, 1 },         { LLMEM_MODEL_DENSE_LAYERS, 0, 3 },
    { LLMEM_MODEL_EMBED_DIM, 0, 512 },     { LLMEM_MODEL_EMBED_NORM, 0, 1 },
};

static const struct {
    int key;
    int64_t lo, hi;
} train_ranges[] = {
    { LLMEM_TRAIN_BATCH, 0, 4 },        { LLMEM_TRAIN_SEQ, 0, 512 },
    { LLMEM_TRAIN_PRECISION, 0, 5 },    { LLMEM_TRAIN_OPTIMIZER, 0, 10 },
    { LLMEM_TRAIN_GRAD_CKPT, 0, 3 },    { LLMEM_TRAIN_ATTENTION, 0, 3 },
    { LLMEM_TRAIN_METHOD, 0, 5 },       { LLMEM_TRAIN_LORA_RANK, 0, 16 },
    { LLMEM_TRAIN_LORA_TARGETS, 0, 128 }, { LLMEM_TRAIN_FROZEN_LAYERS, 0, 7 },
    { LLMEM_TRAIN_LOSS, 0, 3 },         { LLMEM_TRAIN_GRAD_ACCUM, 0, 3 },
    { LLMEM_TRAIN_FORMULA, 0, 3 },
};

#define N(a) (sizeof a / sizeof a[0])

/* The case's fields, for a failure message that reproduces it. */
static const char *describe(const llmem_model *m, const llmem_train *t, char *buf, size_t cap)
{
    size_t used = 0;
    int64_t v;
    llmem_model_get_int(m, LLMEM_MODEL_FAMILY, &v);
    used += (size_t)snprintf(buf + used, cap - used, "family %lld;", (long long)v);
    for (size_t k = 0; k < N(model_ranges) && used < cap; k++)
        if (llmem_model_get_int(m, model_ranges[k].key, &v) == LLMEM_OK)
            used += (size_t)snprintf(buf + used, cap - used, " m%d=%lld", model_ranges[k].key,
                                     (long long)v);
    for (size_t k = 0; k < N(train_ranges) && used < cap; k++)
        if (llmem_train_get_int(t, train_ranges[k].key, &v) == LLMEM_OK)
            used += (size_t)snprintf(buf + used, cap - used, " t%d=%lld", train_ranges[k].key,
                                     (long long)v);
    return buf;
}

Test(robust, random_inputs_fail_cleanly_or_hold_together)
{
    llmem_ctx *ctx;
    llmem_estimate *e;
    rng r = { UINT64_C(0x9E3779B97F4A7C15) };
    int ok = 0, refused = 0;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    for (int i = 0; i < 3000; i++) {
        llmem_model *m;
        llmem_train *t;
        cr_assert_eq(llmem_model_new(ctx, (int)(next(&r) % 2 ? pick(&r, 1, 2) : pick(&r, 1, 12)), &m),
                     LLMEM_OK);
        cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
        /* A plausible core most of the time (so valid runs happen), then
         * random perturbations of any field. */
        int64_t heads = INT64_C(1) << pick(&r, 0, 4), dim = INT64_C(8) << pick(&r, 0, 3);
        llmem_model_set_int(m, LLMEM_MODEL_HEADS, heads);
        llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, heads >> pick(&r, 0, 2));
        llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, heads * dim);
        llmem_model_set_int(m, LLMEM_MODEL_LAYERS, pick(&r, 1, 4));
        llmem_model_set_int(m, LLMEM_MODEL_INTERMEDIATE, pick(&r, 1, 1024));
        llmem_model_set_int(m, LLMEM_MODEL_VOCAB, pick(&r, 1, 40000));
        llmem_model_set_int(m, LLMEM_MODEL_MAX_POSITIONS, 1024);
        for (size_t k = 0; k < N(model_ranges); k++)
            if (next(&r) % 8 == 0)
                llmem_model_set_int(m, model_ranges[k].key,
                                    pick(&r, model_ranges[k].lo, model_ranges[k].hi));
        for (size_t k = 0; k < N(train_ranges); k++)
            if (next(&r) % 3 == 0)
                llmem_train_set_int(t, train_ranges[k].key,
                                    pick(&r, train_ranges[k].lo, train_ranges[k].hi));
        if (next(&r) % 4 == 0)
            llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, 0.1);
        int rc = llmem_estimate_run(e, m, t);
        if (rc != LLMEM_OK) {
            refused++;
            cr_expect_lt(rc, 0, "case %d: status %d", i, rc);
            cr_expect_neq(llmem_ctx_error(ctx)[0], '\0', "case %d: no message for %s", i,
                          llmem_status_str(rc));
        } else {
            uint64_t peak, reserved, device, phase, sum = 0;
            char what[1024];
            describe(m, t, what, sizeof what);
            ok++;
            llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &peak);
            llmem_estimate_get_u64(e, LLMEM_EST_PEAK_RESERVED, &reserved);
            llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &device);
            llmem_estimate_get_u64(e, LLMEM_EST_PEAK_PHASE, &phase);
            for (int k = LLMEM_TERM_PARAMETERS; k <= LLMEM_TERM_TEMPORARY; k++) {
                const llmem_term *term;
                cr_assert_eq(llmem_estimate_term(e, k, &term), LLMEM_OK);
                sum += llmem_term_bytes_at_peak(term);
                cr_expect_geq(llmem_term_max_bytes(term), llmem_term_bytes_at_peak(term),
                              "case %d term %d: %s", i, k, what);
            }
            cr_expect_eq(sum, peak, "case %d: terms %llu, peak %llu: %s", i,
                         (unsigned long long)sum, (unsigned long long)peak, what);
            cr_expect_geq(reserved, peak, "case %d", i);
            cr_expect_geq(device, reserved, "case %d", i);
            cr_expect_leq(phase, 4, "case %d", i);
            cr_expect_lt(peak, UINT64_C(1) << 62, "case %d: implausible peak", i);
        }
        llmem_train_free(t);
        llmem_model_free(m);
    }
    cr_expect_gt(ok, 100, "too few valid draws (%d) to mean anything", ok);
    cr_expect_gt(refused, 100, "too few refused draws (%d)", refused);
    llmem_estimate_free(e);
    llmem_ctx_free(ctx);
}
