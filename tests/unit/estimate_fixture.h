/* SPDX-License-Identifier: MIT */
/* The fixture of the estimate tests: one context and one estimate per test,
 * and the cleanup of Criterion's parameter arrays. */
#ifndef LLMEM_TESTS_UNIT_ESTIMATE_FIXTURE_H
#define LLMEM_TESTS_UNIT_ESTIMATE_FIXTURE_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <llmem.h>

static llmem_ctx *ctx;
static llmem_estimate *est;

static void setup_est(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &est), LLMEM_OK);
}

static void teardown_est(void)
{
    llmem_estimate_free(est);
    llmem_ctx_free(ctx);
    est = NULL;
    ctx = NULL;
}

static inline void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

#endif
