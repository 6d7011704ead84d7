/* SPDX-License-Identifier: MIT */
/* A job's handles through the public API: a context, a preset model, a train
 * and a layout at their defaults, and an estimate. */
#ifndef LLMEM_TESTS_UNIT_JOB_FIXTURE_H
#define LLMEM_TESTS_UNIT_JOB_FIXTURE_H

#include <criterion/criterion.h>
#include <llmem.h>
#include <string.h>

typedef struct fixture {
    llmem_ctx *ctx;
    llmem_model *m;
    llmem_train *t;
    llmem_parallel *l;
    llmem_estimate *e;
} fixture;

/* The handles but the model (m: NULL, the caller's to make). */
static fixture open_handles(void)
{
    fixture f;
    cr_assert_eq(llmem_ctx_new(&f.ctx, NULL), LLMEM_OK);
    f.m = NULL;
    cr_assert_eq(llmem_train_new(f.ctx, &f.t), LLMEM_OK);
    cr_assert_eq(llmem_parallel_new(f.ctx, &f.l), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(f.ctx, &f.e), LLMEM_OK);
    return f;
}

static fixture open_job_handles(const char *preset)
{
    fixture f = open_handles();
    cr_assert_eq(llmem_model_new_preset(f.ctx, preset, &f.m), LLMEM_OK, "%s", preset);
    return f;
}

/* A training method (freeze: one frozen layer), checkpointing, attention and loss. */
static inline void set_train_kind(llmem_train *t, const char *method, const char *ckpt,
                                  const char *attention, const char *loss)
{
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_METHOD, method), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, strcmp(method, "freeze") == 0),
                 LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_GRAD_CKPT, ckpt), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, attention), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_LOSS, loss), LLMEM_OK);
}

static void close_fixture(fixture *f)
{
    llmem_estimate_free(f->e);
    llmem_parallel_free(f->l);
    llmem_train_free(f->t);
    llmem_model_free(f->m);
    llmem_ctx_free(f->ctx);
}

#endif
