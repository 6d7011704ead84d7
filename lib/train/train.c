/* SPDX-License-Identifier: MIT */
/* The training-setup handle: fields set and read through the field engine. */
#include "train/train.h"

#include "core/ctx.h"
#include "model/modules.h"
#include "train/optimizers.h"

#include <string.h>

int llmem_train_new(llmem_ctx *ctx, llmem_train **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "train: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_train *t = llmem__calloc(ctx, sizeof *t);
    if (t == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "train: out of memory");
    t->ctx = ctx;
    llmem_fields_defaults(&llmem_train_fields, t->i, t->d);
    *out = t;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_train_free(llmem_train *t)
{
    if (t != NULL)
        llmem__free(t->ctx, t);
}

/* The dropout field's TRAIN_DROPOUT_MODEL, outside the bounds the engine
 * checks: set here. Returns 1 when value was it. */
static int set_model_dropout(llmem_train *t, int key, double value)
{
    if (key != LLMEM_TRAIN_DROPOUT || value != TRAIN_DROPOUT_MODEL)
        return 0;
    t->d[key] = TRAIN_DROPOUT_MODEL;
    t->given |= UINT32_C(1) << key;
    llmem__ok(t->ctx);
    return 1;
}

int llmem_train_set_int(llmem_train *t, int key, int64_t value)
{
    const field_desc *f;
    if (t == NULL)
        return LLMEM_EINVAL;
    if (set_model_dropout(t, key, (double)value))
        return LLMEM_OK;
    int rc = llmem_fields_accept_int(t->ctx, &llmem_train_fields, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    if (f->kind == FIELD_REAL)
        t->d[key] = (double)value;
    else
        t->i[key] = value;
    if (key == LLMEM_TRAIN_LORA_TARGETS)
        t->lora_names = 0; /* role bits */
    t->given |= UINT32_C(1) << key;
    llmem__ok(t->ctx);
    return LLMEM_OK;
}

int llmem_train_set_double(llmem_train *t, int key, double value)
{
    const field_desc *f;
    if (t == NULL)
        return LLMEM_EINVAL;
    if (set_model_dropout(t, key, value))
        return LLMEM_OK;
    int rc = llmem_fields_accept_real(t->ctx, &llmem_train_fields, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    t->d[key] = value;
    t->given |= UINT32_C(1) << key;
    llmem__ok(t->ctx);
    return LLMEM_OK;
}

int llmem_train_set_str(llmem_train *t, int key, const char *value)
{
    const field_desc *f;
    int64_t i = 0;
    double d = 0;
    if (t == NULL)
        return LLMEM_EINVAL;
    if (key == LLMEM_TRAIN_DROPOUT && value != NULL &&
        strcmp(value, TRAIN_DROPOUT_MODEL_NAME) == 0)
        return llmem_train_set_double(t, key, TRAIN_DROPOUT_MODEL);
    int rc = llmem_fields_accept_str(t->ctx, &llmem_train_fields, key, value, &i, &d, &f);
    /* "-1" is read before the bounds refuse it: as set_double, it is the model's. */
    if (rc == LLMEM_ERANGE && set_model_dropout(t, key, d))
        return LLMEM_OK;
    if (rc != LLMEM_OK)
        return rc;
    if (f->kind == FIELD_REAL)
        t->d[key] = d;
    else
        t->i[key] = i;
    if (key == LLMEM_TRAIN_LORA_TARGETS)
        t->lora_names = llmem_lora_modules_mask(value);
    t->given |= UINT32_C(1) << key;
    /* A Trainer optim name ("adamw_torch") says which implementation it
     * runs, unless the caller chose one: the explicit setting wins, in any
     * order, as on the command line. */
    if (key == LLMEM_TRAIN_OPTIMIZER && llmem_optimizer_implied_impl(value) != 0 &&
        !(t->given >> LLMEM_TRAIN_OPTIMIZER_IMPL & 1))
        t->i[LLMEM_TRAIN_OPTIMIZER_IMPL] = llmem_optimizer_implied_impl(value);
    llmem__ok(t->ctx);
    return LLMEM_OK;
}

int llmem_train_get_int(const llmem_train *t, int key, int64_t *out)
{
    if (t == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "llmem_train_get_int: out is NULL");
    const field_desc *f = llmem_fields_find(&llmem_train_fields, key);
    if (f == NULL || f->kind == FIELD_REAL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "train: key %d is not an integer field", key);
    *out = t->i[key];
    return LLMEM_OK;
}

int llmem_train_get_double(const llmem_train *t, int key, double *out)
{
    if (t == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "llmem_train_get_double: out is NULL");
    const field_desc *f = llmem_fields_find(&llmem_train_fields, key);
    if (f == NULL || f->kind != FIELD_REAL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "train: key %d is not a real field", key);
    *out = t->d[key];
    return LLMEM_OK;
}

int llmem_train_field_info(int key, const char **name, int64_t *min, int64_t *max, int *is_real)
{
    return llmem_fields_info(&llmem_train_fields, key, name, min, max, is_real);
}

const char *llmem_train_value_name(int key, int64_t value)
{
    return llmem_fields_value_name(&llmem_train_fields, key, value);
}

const char *llmem_train_choice(int key, size_t index, int64_t *value)
{
    return llmem_fields_choice(&llmem_train_fields, key, index, value);
}
