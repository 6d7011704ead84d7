/* SPDX-License-Identifier: MIT */
/* Public-API contract tests. They link the shared library through llmem_dep,
 * exactly as a consumer does, so they see only what llmem.h declares:
 * versions, status strings, the context and its allocator, NULL handling,
 * error messages, and that a failed call leaves its object usable. */
#include "llmem.h"

#include <criterion/criterion.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define LLMEM_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LLMEM_TEST_LSAN 1
#endif
#endif
#if defined(LLMEM_TEST_LSAN)
#include <sanitizer/lsan_interface.h>
#endif
#if defined(LLMEM_TEST_VALGRIND)
#include <valgrind/memcheck.h>
#endif

#define PRESET "meta-llama/Llama-3.1-8B"

/* Criterion runs each test in a worker process whose exit-time leak reports
 * (LeakSanitizer, Valgrind) do not fail the test, and whose stderr --tap
 * discards; assertions in a .fini hook do not count either. So each test
 * body is wrapped: in sanitized or Valgrind runs, new leaks or memory errors
 * after it returns fail the test itself. */
typedef struct memcheck_mark {
    unsigned long leaked, errors;
} memcheck_mark;

static memcheck_mark memcheck_begin(void)
{
    memcheck_mark mark = { 0, 0 };
#if defined(LLMEM_TEST_VALGRIND)
    if (RUNNING_ON_VALGRIND) {
        unsigned long dubious = 0, reachable = 0, suppressed = 0;
        VALGRIND_DO_LEAK_CHECK;
        VALGRIND_COUNT_LEAKS(mark.leaked, dubious, reachable, suppressed);
        (void)dubious;
        (void)reachable;
        (void)suppressed;
        mark.errors = (unsigned long)VALGRIND_COUNT_ERRORS;
    }
#endif
    return mark;
}

static void memcheck_end(memcheck_mark mark)
{
    (void)mark;
#if defined(LLMEM_TEST_LSAN)
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,
                 "LeakSanitizer found a leak (run this test binary without --tap to see it)");
#endif
#if defined(LLMEM_TEST_VALGRIND)
    if (RUNNING_ON_VALGRIND) {
        unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;
        unsigned long errors = (unsigned long)VALGRIND_COUNT_ERRORS;
        cr_assert_eq(errors, mark.errors, "Valgrind reported %lu memory errors",
                     errors - mark.errors);
        VALGRIND_DO_LEAK_CHECK;
        VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
        (void)dubious;
        (void)reachable;
        (void)suppressed;
        cr_assert_eq(leaked, mark.leaked, "Valgrind: %lu bytes definitely lost",
                     leaked - mark.leaked);
    }
#endif
}

#define API_TEST(suite, name)                        \
    static void suite##_##name##_body(void);         \
    Test(suite, name)                                \
    {                                                \
        memcheck_mark mark_ = memcheck_begin();      \
        suite##_##name##_body();                     \
        memcheck_end(mark_);                         \
    }                                                \
    static void suite##_##name##_body(void)

/* ---- a counting allocator that can be told to fail ---------------------- */

typedef struct counter {
    size_t attempts;    /* calls to alloc */
    size_t allocs;      /* successful ones */
    size_t frees;
    size_t null_frees;  /* the contract says free never gets NULL */
    size_t fail_at;     /* 1-based attempt that returns NULL; 0 = never */
} counter;

static void *counting_alloc(void *user, size_t bytes)
{
    counter *c = user;
    c->attempts++;
    if (c->fail_at != 0 && c->attempts == c->fail_at)
        return NULL;
    void *p = malloc(bytes);
    if (p != NULL)
        c->allocs++;
    return p;
}

static void counting_free(void *user, void *ptr)
{
    counter *c = user;
    if (ptr == NULL) {
        c->null_frees++;
        return;
    }
    c->frees++;
    free(ptr);
}

static llmem_allocator counting_allocator(counter *c)
{
    llmem_allocator a = LLMEM_ALLOCATOR_INIT;
    a.alloc = counting_alloc;
    a.free = counting_free;
    a.user = c;
    return a;
}

static size_t live(const counter *c)
{
    return c->allocs - c->frees;
}

/* ---- helpers ------------------------------------------------------------ */

static llmem_ctx *new_ctx(void)
{
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_not_null(ctx);
    return ctx;
}

static llmem_model *new_preset(llmem_ctx *ctx)
{
    llmem_model *m = NULL;
    int rc = llmem_model_new_preset(ctx, PRESET, &m);
    cr_assert_eq(rc, LLMEM_OK, "preset %s: %s", PRESET, llmem_ctx_error(ctx));
    return m;
}

static llmem_train *new_train(llmem_ctx *ctx)
{
    llmem_train *t = NULL;
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    return t;
}

static llmem_estimate *new_estimate(llmem_ctx *ctx)
{
    llmem_estimate *e = NULL;
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    return e;
}

static uint64_t peak_of(llmem_ctx *ctx, llmem_estimate *e, llmem_model *m, llmem_train *t)
{
    uint64_t peak = 0;
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "run: %s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &peak), LLMEM_OK);
    cr_assert_gt(peak, 0);
    return peak;
}

/* The context's message holds every needle (e.g. the field name and value). */
static void assert_error_mentions(const llmem_ctx *ctx, const char *a, const char *b)
{
    const char *msg = llmem_ctx_error(ctx);
    cr_assert_not_null(msg);
    cr_assert_neq(msg[0], '\0', "no error message was set");
    cr_assert_not_null(strstr(msg, a), "message '%s' does not name '%s'", msg, a);
    if (b != NULL)
        cr_assert_not_null(strstr(msg, b), "message '%s' does not name '%s'", msg, b);
}

/* Whether this build reads Hugging Face JSON (the stubs return ENOTSUP). */
static int hf_supported(llmem_ctx *ctx)
{
    llmem_model *m = NULL;
    int rc = llmem_model_new_hf_config_json(ctx, "{}", 2, &m);
    llmem_model_free(m);
    return rc != LLMEM_ENOTSUP;
}

/* ---- versions ----------------------------------------------------------- */

API_TEST(version, number_matches_header)
{
    cr_assert_eq(llmem_version_number(), (unsigned)LLMEM_VERSION_NUMBER);
    cr_assert_eq(LLMEM_VERSION_NUMBER,
                 LLMEM_VERSION_MAJOR * 10000 + LLMEM_VERSION_MINOR * 100 + LLMEM_VERSION_PATCH);
}

API_TEST(version, string_matches_header)
{
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", LLMEM_VERSION_MAJOR, LLMEM_VERSION_MINOR,
             LLMEM_VERSION_PATCH);
    cr_assert_not_null(llmem_version_string());
    cr_assert_str_eq(llmem_version_string(), expected);
}

API_TEST(version, check_macro)
{
    cr_assert(LLMEM_VERSION_CHECK(0, 0, 0));
    cr_assert(LLMEM_VERSION_CHECK(0, 1, 0));
    cr_assert(LLMEM_VERSION_CHECK(LLMEM_VERSION_MAJOR, LLMEM_VERSION_MINOR, LLMEM_VERSION_PATCH));
    cr_assert(!LLMEM_VERSION_CHECK(LLMEM_VERSION_MAJOR, LLMEM_VERSION_MINOR,
                                   LLMEM_VERSION_PATCH + 1));
    cr_assert(!LLMEM_VERSION_CHECK(LLMEM_VERSION_MAJOR, LLMEM_VERSION_MINOR + 1, 0));
    cr_assert(!LLMEM_VERSION_CHECK(LLMEM_VERSION_MAJOR + 1, 0, 0));
#if !LLMEM_VERSION_CHECK(0, 1, 0)
    cr_assert_fail("LLMEM_VERSION_CHECK does not work in #if");
#endif
}

/* ---- status strings ----------------------------------------------------- */

static const int all_status[] = {
    LLMEM_OK,        LLMEM_EINVAL,       LLMEM_ENOMEM, LLMEM_ERANGE,
    LLMEM_ENOTFOUND, LLMEM_EOVERFLOW,    LLMEM_EINCONSISTENT,
    LLMEM_EIO,       LLMEM_EPARSE,       LLMEM_ENOTSUP, LLMEM_EBUFFER,
};
#define STATUS_COUNT (sizeof all_status / sizeof all_status[0])

API_TEST(status, values_are_the_abi)
{
    /* Never renumbered: these literals are what bindings hard-code. */
    cr_assert_eq(LLMEM_OK, 0);
    cr_assert_eq(LLMEM_EINVAL, -1);
    cr_assert_eq(LLMEM_ENOMEM, -2);
    cr_assert_eq(LLMEM_ERANGE, -3);
    cr_assert_eq(LLMEM_ENOTFOUND, -4);
    cr_assert_eq(LLMEM_EOVERFLOW, -5);
    cr_assert_eq(LLMEM_EINCONSISTENT, -6);
    cr_assert_eq(LLMEM_EIO, -7);
    cr_assert_eq(LLMEM_EPARSE, -8);
    cr_assert_eq(LLMEM_ENOTSUP, -9);
    cr_assert_eq(LLMEM_EBUFFER, -10);
}

API_TEST(status, every_code_has_its_own_string)
{
    const char *unknown = llmem_status_str(-1000);
    cr_assert_not_null(unknown);
    for (size_t i = 0; i < STATUS_COUNT; i++) {
        const char *s = llmem_status_str(all_status[i]);
        cr_assert_not_null(s, "status %d", all_status[i]);
        cr_assert_gt(strlen(s), 0, "status %d", all_status[i]);
        cr_assert_str_neq(s, unknown, "status %d reads as unknown", all_status[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(s, llmem_status_str(all_status[j]), "statuses %d and %d share '%s'",
                              all_status[i], all_status[j], s);
        /* Static storage: the same pointer every time. */
        cr_assert_eq(s, llmem_status_str(all_status[i]));
    }
}

API_TEST(status, unknown_codes)
{
    const int unknown[] = { 1, 42, -11, -1000, INT_MAX, INT_MIN };
    const char *text = llmem_status_str(-1000);
    cr_assert_gt(strlen(text), 0);
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = llmem_status_str(unknown[i]);
        cr_assert_not_null(s, "status %d", unknown[i]);
        cr_assert_str_eq(s, text, "status %d", unknown[i]);
    }
}

/* ---- the context and its allocator -------------------------------------- */

API_TEST(ctx, default_allocator_and_empty_error)
{
    llmem_ctx *ctx = new_ctx();
    cr_assert_str_eq(llmem_ctx_error(ctx), "");
    llmem_ctx_free(ctx);
}

API_TEST(ctx, custom_allocator_sees_every_allocation)
{
    counter c = { 0 };
    llmem_allocator a = counting_allocator(&c);
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, &a), LLMEM_OK);
    cr_assert_geq(c.allocs, 1, "the context itself comes from the caller's allocator");

    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    cr_assert_geq(c.allocs, 4);

    size_t before = c.attempts;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(c.attempts, before, "llmem_estimate_run is documented to allocate nothing");

    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    cr_assert_eq(live(&c), 1, "only the context is left");
    llmem_ctx_free(ctx);
    cr_assert_eq(live(&c), 0, "%zu allocations, %zu frees", c.allocs, c.frees);
    cr_assert_eq(c.null_frees, 0);
}

API_TEST(ctx, allocator_is_copied)
{
    counter c = { 0 };
    llmem_allocator a = counting_allocator(&c);
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, &a), LLMEM_OK);
    memset(&a, 0, sizeof a); /* the caller's copy may go away */
    llmem_model *m = new_preset(ctx);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
    cr_assert_eq(live(&c), 0);
}

API_TEST(ctx, malformed_allocator_rejected)
{
    counter c = { 0 };
    llmem_ctx *ctx = (llmem_ctx *)&c; /* must be reset to NULL */

    llmem_allocator small = counting_allocator(&c);
    small.size = sizeof small - 1;
    cr_assert_eq(llmem_ctx_new(&ctx, &small), LLMEM_EINVAL);
    cr_assert_null(ctx);

    llmem_allocator no_alloc = counting_allocator(&c);
    no_alloc.alloc = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, &no_alloc), LLMEM_EINVAL);

    llmem_allocator no_free = counting_allocator(&c);
    no_free.free = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, &no_free), LLMEM_EINVAL);
    cr_assert_eq(c.attempts, 0);
}

API_TEST(ctx, failing_allocator_for_the_context)
{
    counter c = { 0 };
    c.fail_at = 1;
    llmem_allocator a = counting_allocator(&c);
    llmem_ctx *ctx = (llmem_ctx *)&c;
    cr_assert_eq(llmem_ctx_new(&ctx, &a), LLMEM_ENOMEM);
    cr_assert_null(ctx);
    cr_assert_eq(live(&c), 0);
}

/* Build everything with the n-th allocation failing; return the status of
 * the call that failed (LLMEM_OK when none did), having freed everything. */
static int build_with_failure(counter *c)
{
    llmem_allocator a = counting_allocator(c);
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL, *fam = NULL;
    llmem_train *t = NULL;
    llmem_estimate *e = NULL;
    int rc;

    if ((rc = llmem_ctx_new(&ctx, &a)) != LLMEM_OK) {
        cr_assert_null(ctx);
        return rc;
    }
    if ((rc = llmem_model_new_preset(ctx, PRESET, &m)) != LLMEM_OK) {
        cr_assert_null(m);
        goto done;
    }
    if ((rc = llmem_model_new(ctx, LLMEM_FAMILY_GPT2, &fam)) != LLMEM_OK) {
        cr_assert_null(fam);
        goto done;
    }
    if ((rc = llmem_train_new(ctx, &t)) != LLMEM_OK) {
        cr_assert_null(t);
        goto done;
    }
    if ((rc = llmem_estimate_new(ctx, &e)) != LLMEM_OK) {
        cr_assert_null(e);
        goto done;
    }
    rc = llmem_estimate_run(e, m, t);
    cr_assert_eq(rc, LLMEM_OK, "run: %s", llmem_ctx_error(ctx));
done:
    if (rc != LLMEM_OK)
        cr_assert_neq(llmem_ctx_error(ctx)[0], '\0', "status %d left no message", rc);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(fam);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
    return rc;
}

API_TEST(ctx, every_allocation_failure_is_enomem_without_leaks)
{
    size_t failures = 0;
    for (size_t n = 1; n < 1000; n++) {
        counter c = { 0 };
        c.fail_at = n;
        int rc = build_with_failure(&c);
        cr_assert_eq(live(&c), 0, "failing allocation %zu leaked %zu blocks", n, live(&c));
        cr_assert_eq(c.null_frees, 0);
        if (c.attempts < n) { /* nothing failed: every allocation was covered */
            cr_assert_eq(rc, LLMEM_OK);
            cr_assert_geq(failures, 5, "ctx, two models, train and estimate each allocate");
            return;
        }
        cr_assert_eq(rc, LLMEM_ENOMEM, "failing allocation %zu gave %d (%s)", n, rc,
                     llmem_status_str(rc));
        failures++;
    }
    cr_assert_fail("more than 1000 allocations to build one estimate");
}

API_TEST(ctx, contexts_share_nothing)
{
    llmem_ctx *a = new_ctx(), *b = new_ctx();
    llmem_model *ma = new_preset(a), *mb = new_preset(b);
    cr_assert_eq(llmem_model_set_int(ma, LLMEM_MODEL_HIDDEN, -1), LLMEM_ERANGE);
    cr_assert_neq(llmem_ctx_error(a)[0], '\0');
    cr_assert_str_eq(llmem_ctx_error(b), "", "an error on one context shows on another");
    llmem_model_free(ma);
    llmem_model_free(mb);
    llmem_ctx_free(a);
    llmem_ctx_free(b);
}

/* ---- NULL handling ------------------------------------------------------ */

API_TEST(null, every_free_accepts_null)
{
    llmem_ctx_free(NULL);
    llmem_model_free(NULL);
    llmem_train_free(NULL);
    llmem_estimate_free(NULL);
    llmem_weights_free(NULL);
}

API_TEST(null, constructors_reject_null)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = (llmem_model *)ctx;
    llmem_train *t = (llmem_train *)ctx;
    llmem_estimate *e = (llmem_estimate *)ctx;

    cr_assert_eq(llmem_ctx_new(NULL, NULL), LLMEM_EINVAL);

    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_new(NULL, LLMEM_FAMILY_LLAMA, &m), LLMEM_EINVAL);

    cr_assert_eq(llmem_model_new_preset(ctx, PRESET, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_new_preset(NULL, PRESET, &m), LLMEM_EINVAL);
    /* With a context and an out pointer, a failure stores NULL in *out. */
    m = (llmem_model *)ctx;
    cr_assert_eq(llmem_model_new_preset(ctx, NULL, &m), LLMEM_EINVAL);
    cr_assert_null(m);
    assert_error_mentions(ctx, "name", NULL);

    cr_assert_eq(llmem_train_new(ctx, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_new(NULL, &t), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_new(ctx, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_new(NULL, &e), LLMEM_EINVAL);
    llmem_ctx_free(ctx);
}

API_TEST(null, model_calls_reject_null)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    int64_t v = 0;
    uint64_t u = 0;

    cr_assert_eq(llmem_model_set_int(NULL, LLMEM_MODEL_HIDDEN, 64), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_set_str(NULL, LLMEM_MODEL_NORM, "rmsnorm"), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_set_str(m, LLMEM_MODEL_NORM, NULL), LLMEM_EINVAL);
    assert_error_mentions(ctx, "norm", NULL);
    cr_assert_eq(llmem_model_get_int(NULL, LLMEM_MODEL_HIDDEN, &v), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_validate(NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_param_count(NULL, &u), LLMEM_EINVAL);
    cr_assert_eq(llmem_model_param_count(m, NULL), LLMEM_EINVAL);

    /* Still usable. */
    cr_assert_eq(llmem_model_param_count(m, &u), LLMEM_OK);
    cr_assert_gt(u, 0);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(null, train_calls_reject_null)
{
    llmem_ctx *ctx = new_ctx();
    llmem_train *t = new_train(ctx);
    int64_t v = 0;
    double d = 0;

    cr_assert_eq(llmem_train_set_int(NULL, LLMEM_TRAIN_BATCH, 2), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_set_double(NULL, LLMEM_TRAIN_DROPOUT, 0.1), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_set_str(NULL, LLMEM_TRAIN_PRECISION, "fp32"), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, NULL), LLMEM_EINVAL);
    assert_error_mentions(ctx, "precision", NULL);
    cr_assert_eq(llmem_train_get_int(NULL, LLMEM_TRAIN_BATCH, &v), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_get_int(t, LLMEM_TRAIN_BATCH, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_get_double(NULL, LLMEM_TRAIN_DROPOUT, &d), LLMEM_EINVAL);
    cr_assert_eq(llmem_train_get_double(t, LLMEM_TRAIN_DROPOUT, NULL), LLMEM_EINVAL);
    llmem_train_free(t);
    llmem_ctx_free(ctx);
}

API_TEST(null, estimate_calls_reject_null)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    const llmem_term *term = NULL;
    const char *name = NULL;
    uint64_t u = 0;

    cr_assert_eq(llmem_estimate_run(NULL, m, t), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_run(e, NULL, t), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_run(e, m, NULL), LLMEM_EINVAL);
    cr_assert_neq(llmem_ctx_error(ctx)[0], '\0');

    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_estimate_get_u64(NULL, LLMEM_EST_PEAK_ALLOCATED, &u), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_phase_bytes(NULL, LLMEM_PHASE_FORWARD, &u), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_phase_bytes(e, LLMEM_PHASE_FORWARD, NULL), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_term(NULL, LLMEM_TERM_DATA, &term), LLMEM_EINVAL);
    cr_assert_eq(llmem_estimate_term(e, LLMEM_TERM_DATA, NULL), LLMEM_EINVAL);

    cr_assert_eq(llmem_term_bytes_at_peak(NULL), 0);
    cr_assert_eq(llmem_term_max_bytes(NULL), 0);
    cr_assert_eq(llmem_term_component_count(NULL), 0);
    cr_assert_eq(llmem_term_component(NULL, 0, &name, &u), LLMEM_EINVAL);

    cr_assert_not_null(llmem_ctx_error(NULL), "llmem_ctx_error(NULL) reads as \"\"");
    cr_assert_null(llmem_preset_name(llmem_preset_count()));
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(null, hf_calls_reject_null)
{
    llmem_ctx *ctx = new_ctx();
    int supported = hf_supported(ctx);
    llmem_model *m = (llmem_model *)ctx;
    llmem_weights *w = (llmem_weights *)ctx;
    uint64_t u = 0;
    const char *name = NULL;
    int rc[8];

    rc[0] = llmem_model_new_hf_config(ctx, NULL, &m);
    cr_assert_null(m, "*out is reset on failure");
    rc[1] = llmem_model_new_hf_config(ctx, "config.json", NULL);
    rc[2] = llmem_model_new_hf_config_json(ctx, NULL, 2, &m);
    rc[3] = llmem_model_new_hf_config_json(ctx, "{}", 2, NULL);
    rc[4] = llmem_weights_open(ctx, NULL, &w);
    cr_assert_null(w, "*out is reset on failure");
    rc[5] = llmem_weights_open_buffer(ctx, NULL, 16, &w);
    rc[6] = llmem_weights_get_u64(NULL, LLMEM_WEIGHTS_PARAMS, &u);
    rc[7] = llmem_weights_dtype(NULL, 0, &name, &u, &u);
    cr_assert_eq(llmem_weights_dtype_count(NULL), 0);
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
        /* A build without JSON support answers ENOTSUP to everything. */
        if (supported)
            cr_assert_eq(rc[i], LLMEM_EINVAL, "call %zu gave %d", i, rc[i]);
        else
            cr_assert(rc[i] == LLMEM_EINVAL || rc[i] == LLMEM_ENOTSUP, "call %zu gave %d", i,
                      rc[i]);
    }
    llmem_ctx_free(ctx);
}

/* A NULL pointer argument beside a valid handle fails through the handle's
 * context: the message names the call and the argument, and no message an
 * earlier call left (here one with a field) stays to be read as this one's. */
static void leave_stale_error(llmem_ctx *ctx, llmem_model *m)
{
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, -5), LLMEM_ERANGE);
    cr_assert_eq(llmem_ctx_error_field(ctx, NULL, NULL), LLMEM_OK);
}

static void assert_null_named(llmem_ctx *ctx, int rc, const char *call, const char *arg)
{
    char needle[96];
    snprintf(needle, sizeof needle, "%s: %s is NULL", call, arg);
    cr_assert_eq(rc, LLMEM_EINVAL, "%s gave %d", call, rc);
    cr_assert_str_eq(llmem_ctx_error(ctx), needle);
    cr_assert_eq(llmem_ctx_error_field(ctx, NULL, NULL), LLMEM_ENOTFOUND,
                 "%s kept the earlier error's field", call);
}

/* A stale message first, then the call with its NULL pointer (m and ctx in scope). */
#define NULL_NAMED(call, function, arg)                                                        \
    do {                                                                                       \
        leave_stale_error(ctx, m);                                                             \
        assert_null_named(ctx, (call), function, arg);                                         \
    } while (0)

/* A small safetensors file: header length, header, 8 bytes of data. */
static llmem_weights *new_weights(llmem_ctx *ctx)
{
    static const char header[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    unsigned char buf[8 + sizeof header - 1 + 8] = { 0 };
    llmem_weights *w = NULL;
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)(sizeof header - 1) >> (8 * i));
    memcpy(buf + 8, header, sizeof header - 1);
    cr_assert_eq(llmem_weights_open_buffer(ctx, buf, sizeof buf, &w), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    return w;
}

API_TEST(null, null_out_names_the_call)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    llmem_parallel *l = NULL;
    llmem_plan *p = NULL;
    llmem_fit *fit = NULL;
    llmem_pack *pack = NULL;
    cr_assert_eq(llmem_parallel_new(ctx, &l), LLMEM_OK);
    cr_assert_eq(llmem_plan_new(ctx, &p), LLMEM_OK);
    cr_assert_eq(llmem_fit_new(ctx, &fit), LLMEM_OK);
    cr_assert_eq(llmem_pack_new(ctx, &pack), LLMEM_OK);
    peak_of(ctx, e, m, t); /* the estimate's getters need a result */

    NULL_NAMED(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, NULL),
               "llmem_model_get_int", "out");
    NULL_NAMED(llmem_model_get_double(m, LLMEM_MODEL_ATTENTION_DROPOUT, NULL),
               "llmem_model_get_double", "out");
    NULL_NAMED(llmem_model_param_count(m, NULL), "llmem_model_param_count", "out");
    NULL_NAMED(llmem_train_get_int(t, LLMEM_TRAIN_BATCH, NULL),
               "llmem_train_get_int", "out");
    NULL_NAMED(llmem_train_get_double(t, LLMEM_TRAIN_DROPOUT, NULL),
               "llmem_train_get_double", "out");
    NULL_NAMED(llmem_parallel_get_int(l, LLMEM_PARALLEL_TP, NULL),
               "llmem_parallel_get_int", "out");

    NULL_NAMED(llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, NULL),
               "llmem_estimate_get_u64", "out");
    NULL_NAMED(llmem_estimate_phase_bytes(e, LLMEM_PHASE_FORWARD, NULL),
               "llmem_estimate_phase_bytes", "out");
    NULL_NAMED(llmem_estimate_term(e, LLMEM_TERM_DATA, NULL),
               "llmem_estimate_term", "out");
    NULL_NAMED(llmem_estimate_rank_get_u64(e, 0, LLMEM_EST_PEAK_ALLOCATED, NULL),
               "llmem_estimate_rank_get_u64", "out");
    NULL_NAMED(llmem_estimate_rank_phase_bytes(e, 0, LLMEM_PHASE_FORWARD, NULL),
               "llmem_estimate_rank_phase_bytes", "out");
    NULL_NAMED(llmem_estimate_rank_term(e, 0, LLMEM_TERM_DATA, NULL),
               "llmem_estimate_rank_term", "out");

    /* Checked before the index: no run needed. */
    NULL_NAMED(llmem_plan_get_int(p, LLMEM_PLAN_GPUS, NULL), "llmem_plan_get_int",
               "out");
    NULL_NAMED(llmem_plan_result_get_u64(p, 0, LLMEM_PLAN_PEAK_DEVICE, NULL),
               "llmem_plan_result_get_u64", "out");
    NULL_NAMED(llmem_plan_result_layout(p, 0, NULL), "llmem_plan_result_layout",
               "layout");

    NULL_NAMED(llmem_fit_get_int(fit, LLMEM_FIT_MARGIN_PERMILLE, NULL),
               "llmem_fit_get_int", "out");
    NULL_NAMED(llmem_fit_best(fit, NULL), "llmem_fit_best", "option");
    NULL_NAMED(llmem_fit_get_u64(fit, 0, LLMEM_FIT_FITS, NULL), "llmem_fit_get_u64",
               "out");

    NULL_NAMED(llmem_pack_get_int(pack, LLMEM_PACK_GPUS_PER_NODE, NULL),
               "llmem_pack_get_int", "out");
    NULL_NAMED(llmem_pack_get_u64(pack, LLMEM_PACK_GPUS_USED, NULL),
               "llmem_pack_get_u64", "out");
    NULL_NAMED(llmem_pack_job_u64(pack, 0, LLMEM_PACK_JOB_STATUS, NULL),
               "llmem_pack_job_u64", "out");
    NULL_NAMED(llmem_pack_gpu_u64(pack, 0, LLMEM_PACK_GPU_TYPE, NULL),
               "llmem_pack_gpu_u64", "out");

    if (hf_supported(ctx)) {
        llmem_weights *w = new_weights(ctx);
        NULL_NAMED(llmem_weights_get_u64(w, LLMEM_WEIGHTS_PARAMS, NULL),
                   "llmem_weights_get_u64", "out");
        llmem_weights_free(w);
    }

    /* A NULL handle has no context: the message stays, EINVAL alone. */
    leave_stale_error(ctx, m);
    cr_assert_eq(llmem_model_get_int(NULL, LLMEM_MODEL_HIDDEN, NULL), LLMEM_EINVAL);
    assert_error_mentions(ctx, "hidden", "-5");
    llmem_pack_free(pack);
    llmem_fit_free(fit);
    llmem_plan_free(p);
    llmem_parallel_free(l);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

/* ---- error messages name the field -------------------------------------- */

API_TEST(errors, model_field_out_of_range)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, -5), LLMEM_ERANGE);
    assert_error_mentions(ctx, "hidden", "-5");
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, -1), LLMEM_ERANGE);
    assert_error_mentions(ctx, "kv-heads", NULL);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(errors, model_unknown_names)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new_preset(ctx, "no-such/model-7b", &m), LLMEM_ENOTFOUND);
    cr_assert_null(m);
    assert_error_mentions(ctx, "no-such/model-7b", NULL);

    m = new_preset(ctx);
    cr_assert_eq(llmem_model_set_str(m, LLMEM_MODEL_NORM, "batchnorm"), LLMEM_ENOTFOUND);
    assert_error_mentions(ctx, "norm", "batchnorm");
    cr_assert_eq(llmem_model_set_int(m, 9999, 1), LLMEM_EINVAL);
    assert_error_mentions(ctx, "9999", NULL);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(errors, model_inconsistent_fields)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = NULL;
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, &m), LLMEM_OK);
    cr_assert_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT, "sizes are unset");
    assert_error_mentions(ctx, "hidden", NULL);

    llmem_model_free(m);
    m = new_preset(ctx);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, 5), LLMEM_OK);
    cr_assert_eq(llmem_model_validate(m), LLMEM_EINCONSISTENT);
    assert_error_mentions(ctx, "kv-heads", "5");
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(errors, train_fields)
{
    llmem_ctx *ctx = new_ctx();
    llmem_train *t = new_train(ctx);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 0), LLMEM_ERANGE);
    assert_error_mentions(ctx, "batch", "0");
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_PRECISION, "fp8"), LLMEM_ENOTFOUND);
    assert_error_mentions(ctx, "precision", "fp8");
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, NAN), LLMEM_ERANGE);
    assert_error_mentions(ctx, "dropout", NULL);
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, INFINITY), LLMEM_ERANGE);
    assert_error_mentions(ctx, "dropout", NULL);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, "q_proj,bogus"),
                 LLMEM_ENOTFOUND);
    assert_error_mentions(ctx, "lora-targets", "bogus");
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_SEQ, "12abc"), LLMEM_EINVAL);
    assert_error_mentions(ctx, "seq", "12abc");
    cr_assert_eq(llmem_train_set_int(t, 9999, 1), LLMEM_EINVAL);
    assert_error_mentions(ctx, "9999", NULL);
    llmem_train_free(t);
    llmem_ctx_free(ctx);
}

/* ---- a failed call leaves the object unchanged and usable --------------- */

API_TEST(unchanged, failed_model_setters)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    uint64_t params_before = 0, params_after = 0;
    int64_t v = 0;

    uint64_t peak_before = peak_of(ctx, e, m, t);
    cr_assert_eq(llmem_model_param_count(m, &params_before), LLMEM_OK);

    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HIDDEN, 0), LLMEM_ERANGE);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_HIDDEN, &v), LLMEM_OK);
    cr_assert_eq(v, 4096);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_FAMILY, 99), LLMEM_ERANGE);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_FAMILY, &v), LLMEM_OK);
    cr_assert_eq(v, LLMEM_FAMILY_LLAMA);
    cr_assert_eq(llmem_model_set_str(m, LLMEM_MODEL_MLP, "fancy"), LLMEM_ENOTFOUND);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_MLP, &v), LLMEM_OK);
    cr_assert_eq(v, LLMEM_MLP_GATED);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_QKV_BIAS, 2), LLMEM_ERANGE);
    cr_assert_eq(llmem_model_get_int(m, LLMEM_MODEL_QKV_BIAS, &v), LLMEM_OK);
    cr_assert_eq(v, 0);

    cr_assert_eq(llmem_model_param_count(m, &params_after), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    cr_assert_eq(params_after, params_before);
    cr_assert_eq(peak_of(ctx, e, m, t), peak_before);
    cr_assert_str_eq(llmem_ctx_error(ctx), "", "a successful call clears the message");
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(unchanged, failed_train_setters)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    int64_t v = 0;
    double d = 0;

    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 4), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_METHOD, "lora"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, "q_proj,v_proj"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, 0.1), LLMEM_OK);
    uint64_t peak_before = peak_of(ctx, e, m, t);

    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, -1), LLMEM_ERANGE);
    cr_assert_eq(llmem_train_get_int(t, LLMEM_TRAIN_BATCH, &v), LLMEM_OK);
    cr_assert_eq(v, 4);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER, "adamax"), LLMEM_ENOTFOUND);
    cr_assert_eq(llmem_train_get_int(t, LLMEM_TRAIN_OPTIMIZER, &v), LLMEM_OK);
    cr_assert_eq(v, LLMEM_OPTIMIZER_ADAMW);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, "q_proj,bogus"),
                 LLMEM_ENOTFOUND);
    cr_assert_eq(llmem_train_get_int(t, LLMEM_TRAIN_LORA_TARGETS, &v), LLMEM_OK);
    cr_assert_eq(v, LLMEM_LORA_Q | LLMEM_LORA_V, "a half-parsed list must not stick");
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, NAN), LLMEM_ERANGE);
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, 1.0), LLMEM_ERANGE);
    cr_assert_eq(llmem_train_get_double(t, LLMEM_TRAIN_DROPOUT, &d), LLMEM_OK);
    cr_assert_float_eq(d, 0.1, 1e-12);

    cr_assert_eq(peak_of(ctx, e, m, t), peak_before);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(unchanged, failed_run_keeps_the_previous_result)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    uint64_t peak_after = 0;

    uint64_t peak_before = peak_of(ctx, e, m, t);
    /* 33 heads do not divide hidden 4096: the run fails, the result stays. */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, 33), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_EINCONSISTENT);
    assert_error_mentions(ctx, "heads", "33");
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &peak_after), LLMEM_OK);
    cr_assert_eq(peak_after, peak_before);

    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, 32), LLMEM_OK);
    cr_assert_eq(peak_of(ctx, e, m, t), peak_before);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

API_TEST(unchanged, estimate_not_run_yet)
{
    llmem_ctx *ctx = new_ctx();
    llmem_estimate *e = new_estimate(ctx);
    uint64_t u = 0;
    cr_assert_eq(llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &u), LLMEM_EINVAL);
    assert_error_mentions(ctx, "run", NULL);
    llmem_estimate_free(e);
    llmem_ctx_free(ctx);
}

/* ---- which field an error is about (llmem_ctx_error_field) -------------- */

static void expect_error_field(const llmem_ctx *ctx, int object, int key)
{
    int o = -1, k = -1;
    cr_expect_eq(llmem_ctx_error_field(ctx, &o, &k), LLMEM_OK, "no field for '%s'",
                 llmem_ctx_error(ctx));
    cr_expect_eq(o, object, "object of '%s'", llmem_ctx_error(ctx));
    cr_expect_eq(k, key, "key of '%s'", llmem_ctx_error(ctx));
}

API_TEST(errors, name_their_field)
{
    llmem_ctx *ctx = new_ctx();
    llmem_model *m = new_preset(ctx);
    llmem_train *t = new_train(ctx);
    llmem_estimate *e = new_estimate(ctx);
    int o = -1, k = -1;
    /* set-time errors */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_QKV_BIAS, 2), LLMEM_ERANGE);
    expect_error_field(ctx, LLMEM_OBJECT_MODEL, LLMEM_MODEL_QKV_BIAS);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER, "adamx"), LLMEM_ENOTFOUND);
    expect_error_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_OPTIMIZER);
    cr_assert_eq(llmem_train_set_double(t, LLMEM_TRAIN_DROPOUT, 1.0), LLMEM_ERANGE);
    expect_error_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_DROPOUT);
    /* a success clears it */
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 2), LLMEM_OK);
    cr_expect_eq(llmem_ctx_error_field(ctx, &o, &k), LLMEM_ENOTFOUND);
    cr_expect_eq(o, 0);
    cr_expect_eq(k, 0);
    /* run-time errors: fields checked together */
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, 5), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_EINCONSISTENT);
    expect_error_field(ctx, LLMEM_OBJECT_MODEL, LLMEM_MODEL_KV_HEADS);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, 8), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, 2), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_EINCONSISTENT);
    expect_error_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_FROZEN_LAYERS);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, 0), LLMEM_OK);
    cr_assert_eq(llmem_model_set_str(m, LLMEM_MODEL_NORM, "layernorm"), LLMEM_OK);
    cr_assert_eq(llmem_estimate_run(e, m, t), LLMEM_ENOTSUP);
    expect_error_field(ctx, LLMEM_OBJECT_MODEL, LLMEM_MODEL_NORM);
    /* errors of no field */
    cr_assert_eq(llmem_estimate_run(e, NULL, t), LLMEM_EINVAL);
    cr_expect_eq(llmem_ctx_error_field(ctx, NULL, NULL), LLMEM_ENOTFOUND);
    cr_expect_eq(llmem_ctx_error_field(NULL, &o, &k), LLMEM_EINVAL);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

/* A job whose model is of another context reports the model's error in its
 * own context, message and field. */
API_TEST(errors, a_model_of_another_context_keeps_its_field)
{
    llmem_ctx *theirs = new_ctx(), *ours = new_ctx();
    llmem_model *m = new_preset(theirs);
    llmem_train *t = new_train(theirs);
    llmem_estimate *e = new_estimate(ours);
    llmem_plan *p = NULL;
    uint64_t peak = 0;
    int64_t max = 0, batch[] = { 1 };
    cr_assert_eq(llmem_plan_new(ours, &p), LLMEM_OK);
    cr_assert_eq(llmem_plan_set_int(p, LLMEM_PLAN_GPUS, 2), LLMEM_OK);
    cr_assert_eq(llmem_plan_set_int(p, LLMEM_PLAN_GPU_BYTES, INT64_C(80) << 30), LLMEM_OK);
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_HEADS, 33), LLMEM_OK);

    cr_expect_eq(llmem_estimate_run(e, m, t), LLMEM_EINCONSISTENT);
    cr_expect_str_eq(llmem_ctx_error(ours), llmem_ctx_error(theirs));
    expect_error_field(ours, LLMEM_OBJECT_MODEL, LLMEM_MODEL_HEADS);
    cr_expect_eq(llmem_estimate_max(e, m, t, NULL, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE,
                                    UINT64_C(80) << 30, &max), LLMEM_EINCONSISTENT);
    expect_error_field(ours, LLMEM_OBJECT_MODEL, LLMEM_MODEL_HEADS);
    cr_expect_eq(llmem_estimate_sweep(e, m, t, NULL, batch, NULL, 1, LLMEM_LEVEL_DEVICE, &peak),
                 LLMEM_EINCONSISTENT);
    assert_error_mentions(ours, "sweep point 0", "heads");
    expect_error_field(ours, LLMEM_OBJECT_MODEL, LLMEM_MODEL_HEADS);
    cr_expect_eq(llmem_plan_run(p, m, t), LLMEM_EINCONSISTENT);
    cr_expect_str_eq(llmem_ctx_error(ours), llmem_ctx_error(theirs));
    expect_error_field(ours, LLMEM_OBJECT_MODEL, LLMEM_MODEL_HEADS);
    llmem_plan_free(p);
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ours);
    llmem_ctx_free(theirs);
}

/* Every text setter that takes numbers reads them as the CLI does: white space around them
 * (which strtoll and strtod skip in front) is refused, naming field and text,
 * and the value is kept. */
API_TEST(errors, text_setters_refuse_padded_numbers)
{
    llmem_ctx *ctx = new_ctx();
    llmem_train *t = new_train(ctx);
    llmem_parallel *p = NULL;
    llmem_fit *fit = NULL;
    int64_t v = 0;
    double d = -1;
    cr_assert_eq(llmem_parallel_new(ctx, &p), LLMEM_OK);
    cr_assert_eq(llmem_fit_new(ctx, &fit), LLMEM_OK);

    cr_expect_eq(llmem_train_set_str(t, LLMEM_TRAIN_BATCH, " 4"), LLMEM_EINVAL);
    assert_error_mentions(ctx, "batch", "' 4'");
    expect_error_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_BATCH);
    cr_expect_eq(llmem_train_get_int(t, LLMEM_TRAIN_BATCH, &v), LLMEM_OK);
    cr_expect_eq(v, 1);
    cr_expect_eq(llmem_train_set_str(t, LLMEM_TRAIN_DROPOUT, "\t0.1"), LLMEM_EINVAL);
    assert_error_mentions(ctx, "dropout", "'\t0.1'");
    expect_error_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_DROPOUT);
    cr_expect_eq(llmem_train_get_double(t, LLMEM_TRAIN_DROPOUT, &d), LLMEM_OK);
    cr_expect(d == -1.0, "dropout %g: still the model's own", d);
    cr_expect_eq(llmem_parallel_set_str(p, LLMEM_PARALLEL_DP, " 2"), LLMEM_EINVAL);
    assert_error_mentions(ctx, "dp", "' 2'");
    expect_error_field(ctx, LLMEM_OBJECT_PARALLEL, LLMEM_PARALLEL_DP);
    cr_expect_eq(llmem_fit_set_str(fit, LLMEM_FIT_MIN_COMPUTE, " 1"), LLMEM_EINVAL);
    assert_error_mentions(ctx, "min-compute", "' 1'");
    expect_error_field(ctx, LLMEM_OBJECT_FIT, LLMEM_FIT_MIN_COMPUTE);
    /* The same numbers unpadded are taken. */
    cr_expect_eq(llmem_train_set_str(t, LLMEM_TRAIN_BATCH, "4"), LLMEM_OK);
    cr_expect_eq(llmem_train_set_str(t, LLMEM_TRAIN_DROPOUT, "0.1"), LLMEM_OK);
    cr_expect_eq(llmem_parallel_set_str(p, LLMEM_PARALLEL_DP, "2"), LLMEM_OK);
    cr_expect_eq(llmem_fit_set_str(fit, LLMEM_FIT_MIN_COMPUTE, "1"), LLMEM_OK);
    llmem_fit_free(fit);
    llmem_parallel_free(p);
    llmem_train_free(t);
    llmem_ctx_free(ctx);
}

/* ---- the names a field accepts (llmem_*_choice) ------------------------- */

API_TEST(choices, list_what_set_str_accepts)
{
    llmem_ctx *ctx = new_ctx();
    llmem_train *t = new_train(ctx);
    llmem_model *m = new_preset(ctx);
    const char *name;
    int64_t value = 0, got = 0;
    size_t n = 0;
    int saw_c_attn = 0;
    for (; (name = llmem_train_choice(LLMEM_TRAIN_LORA_TARGETS, n, &value)) != NULL; n++) {
        cr_expect_eq(llmem_train_set_str(t, LLMEM_TRAIN_LORA_TARGETS, name), LLMEM_OK, "%s", name);
        cr_expect_eq(llmem_train_get_int(t, LLMEM_TRAIN_LORA_TARGETS, &got), LLMEM_OK);
        cr_expect_eq(got, value, "%s reads back as its value", name);
        if (strcmp(name, "c_attn") == 0)
            saw_c_attn = value == (LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V);
    }
    cr_expect_geq(n, 7, "the seven single modules at least");
    cr_expect(saw_c_attn, "c_attn is listed as q | k | v");
    /* Our names first, one per optimizer in value order, then the Trainer's
     * optim names: each reads back as its value. */
    int saw_adamw_torch = 0;
    for (n = 0; (name = llmem_train_choice(LLMEM_TRAIN_OPTIMIZER, n, &value)) != NULL; n++) {
        if (n < LLMEM_OPTIMIZER_PAGED_LION) {
            cr_expect_eq(value, (int64_t)n + 1, "%s", name);
            cr_expect_str_eq(llmem_train_value_name(LLMEM_TRAIN_OPTIMIZER, value), name);
        }
        cr_expect_eq(llmem_train_set_str(t, LLMEM_TRAIN_OPTIMIZER, name), LLMEM_OK, "%s", name);
        cr_expect_eq(llmem_train_get_int(t, LLMEM_TRAIN_OPTIMIZER, &got), LLMEM_OK);
        cr_expect_eq(got, value, "%s reads back as its value", name);
        saw_adamw_torch |= strcmp(name, "adamw_torch") == 0 && value == LLMEM_OPTIMIZER_ADAMW;
    }
    cr_expect_geq(n, LLMEM_OPTIMIZER_PAGED_LION + 10, "our names and the Trainer's");
    cr_expect(saw_adamw_torch, "adamw_torch is listed as adamw");
    for (n = 0; (name = llmem_model_choice(LLMEM_MODEL_FAMILY, n, &value)) != NULL; n++) {
        cr_expect_eq(llmem_model_set_str(m, LLMEM_MODEL_FAMILY, name), LLMEM_OK, "%s", name);
        cr_expect_eq(llmem_model_get_int(m, LLMEM_MODEL_FAMILY, &got), LLMEM_OK);
        cr_expect_eq(got, value, "%s", name);
    }
    cr_expect_eq(n, LLMEM_FAMILY_MEGATRON_GPT);
    cr_expect_null(llmem_model_choice(LLMEM_MODEL_HIDDEN, 0, NULL), "hidden has no names");
    cr_expect_null(llmem_train_choice(LLMEM_TRAIN_BATCH, 0, &value));
    cr_expect_null(llmem_train_choice(9999, 0, &value));
    llmem_model_free(m);
    llmem_train_free(t);
    llmem_ctx_free(ctx);
}

/* ---- the allocator struct: the first published size forever ------------- */

API_TEST(allocator, first_published_size_and_larger)
{
    /* A caller of a later version passes a larger struct; one built against
     * 0.1 passes exactly the 0.1 size: both are accepted. */
    struct bigger {
        llmem_allocator base;
        void *later_member;
    } big;
    counter c = { 0 };
    llmem_ctx *ctx = NULL;
    memset(&big, 0, sizeof big);
    big.base = counting_allocator(&c);
    big.base.size = sizeof big;
    cr_assert_eq(llmem_ctx_new(&ctx, &big.base), LLMEM_OK);
    llmem_ctx_free(ctx);
    llmem_allocator v1 = counting_allocator(&c);
    v1.size = offsetof(llmem_allocator, user) + sizeof(void *);
    cr_assert_eq(llmem_ctx_new(&ctx, &v1), LLMEM_OK);
    llmem_ctx_free(ctx);
    cr_expect_eq(c.allocs, 2);
    cr_expect_eq(c.frees, 2);
    v1.size = offsetof(llmem_allocator, user);
    cr_expect_eq(llmem_ctx_new(&ctx, &v1), LLMEM_EINVAL, "shorter than 0.1's struct");
}
