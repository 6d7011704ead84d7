/* SPDX-License-Identifier: MIT */
#include "train/train.h"

#include "core/ctx.h"
#include "core/names.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum field_kind { KIND_INT, KIND_ENUM, KIND_MASK, KIND_REAL } field_kind;

typedef struct train_field {
    int key;
    const char *name; /* as the CLI flag and the messages spell it */
    field_kind kind;
    double min, max;  /* inclusive, except max of dropout (exclusive, see check_real) */
    double def;
    const name_table *values;
} train_field;

static const train_field fields[] = {
    { LLMEM_TRAIN_BATCH, "batch", KIND_INT, 1, 1 << 24, 1, NULL },
    { LLMEM_TRAIN_SEQ, "seq", KIND_INT, 1, 1 << 28, 512, NULL },
    { LLMEM_TRAIN_PRECISION, "precision", KIND_ENUM, 1, 4, LLMEM_PRECISION_BF16_MIXED,
      &names_precision },
    { LLMEM_TRAIN_OPTIMIZER, "optimizer", KIND_ENUM, 1, 9, LLMEM_OPTIMIZER_ADAMW,
      &names_optimizer },
    { LLMEM_TRAIN_GRAD_CKPT, "grad-ckpt", KIND_ENUM, 1, 2, LLMEM_GRAD_CKPT_NONE,
      &names_grad_ckpt },
    { LLMEM_TRAIN_ATTENTION, "attention", KIND_ENUM, 1, 2, LLMEM_ATTENTION_EAGER,
      &names_attention },
    { LLMEM_TRAIN_DROPOUT, "dropout", KIND_REAL, 0, 1, 0, NULL },
    { LLMEM_TRAIN_METHOD, "method", KIND_ENUM, 1, 4, LLMEM_METHOD_FULL, &names_method },
    /* PEFT's default LoraConfig: r = 8, target modules q_proj and v_proj for Llama. */
    { LLMEM_TRAIN_LORA_RANK, "lora-rank", KIND_INT, 1, 1 << 20, 8, NULL },
    { LLMEM_TRAIN_LORA_TARGETS, "lora-targets", KIND_MASK, 1, 127, LLMEM_LORA_Q | LLMEM_LORA_V,
      &names_lora_target },
    { LLMEM_TRAIN_FROZEN_LAYERS, "freeze-layers", KIND_INT, 0, 1 << 20, 0, NULL },
    { LLMEM_TRAIN_LOSS, "loss", KIND_ENUM, 1, 2, LLMEM_LOSS_UPCAST, &names_loss },
    { LLMEM_TRAIN_GRAD_ACCUM, "grad-accum", KIND_INT, 1, 1 << 20, 1, NULL },
    { LLMEM_TRAIN_FORMULA, "formula", KIND_ENUM, 1, 2, LLMEM_FORMULA_PHASED, &names_formula },
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "article-tmp-factor", KIND_REAL, 0, 1000, 0, NULL },
    /* The article's example stores parameters in fp32: 4 bytes each. */
    { LLMEM_TRAIN_ARTICLE_PARAM_BYTES, "article-param-bytes", KIND_INT, 1, 8, 4, NULL },
};

#define FIELD_COUNT (sizeof fields / sizeof fields[0])

static const train_field *find_field(int key)
{
    for (size_t i = 0; i < FIELD_COUNT; i++)
        if (fields[i].key == key)
            return &fields[i];
    return NULL;
}

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
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        if (fields[i].kind == KIND_REAL)
            t->d[fields[i].key] = fields[i].def;
        else
            t->i[fields[i].key] = (int64_t)fields[i].def;
    }
    *out = t;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_train_free(llmem_train *t)
{
    if (t != NULL)
        llmem__free(t->ctx, t);
}

static const train_field *lookup(llmem_train *t, int key)
{
    const train_field *f = find_field(key);
    if (f == NULL)
        llmem__fail(t->ctx, LLMEM_EINVAL, "train: unknown field key %d", key);
    return f;
}

int llmem_train_set_int(llmem_train *t, int key, int64_t value)
{
    if (t == NULL)
        return LLMEM_EINVAL;
    const train_field *f = lookup(t, key);
    if (f == NULL)
        return LLMEM_EINVAL;
    if (f->kind == KIND_REAL)
        return llmem_train_set_double(t, key, (double)value);
    if ((double)value < f->min || (double)value > f->max ||
        (f->kind == KIND_ENUM && names_name(f->values, (int)value) == NULL))
        return llmem__fail(t->ctx, LLMEM_ERANGE, "%s: value %lld out of range [%.0f, %.0f]",
                           f->name, (long long)value, f->min, f->max);
    t->i[key] = value;
    llmem__ok(t->ctx);
    return LLMEM_OK;
}

int llmem_train_set_double(llmem_train *t, int key, double value)
{
    if (t == NULL)
        return LLMEM_EINVAL;
    const train_field *f = lookup(t, key);
    if (f == NULL)
        return LLMEM_EINVAL;
    if (f->kind != KIND_REAL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "%s: not a real field (set it as an integer)",
                           f->name);
    /* Dropout must stay below 1: p = 1 zeroes everything and divides by zero. */
    int above = key == LLMEM_TRAIN_DROPOUT ? !(value < f->max) : !(value <= f->max);
    if (!isfinite(value) || value < f->min || above)
        return llmem__fail(t->ctx, LLMEM_ERANGE, "%s: value %g out of range [%g, %g%s", f->name,
                           value, f->min, f->max, key == LLMEM_TRAIN_DROPOUT ? ")" : "]");
    t->d[key] = value;
    llmem__ok(t->ctx);
    return LLMEM_OK;
}

/* "q_proj,v_proj" into a bitmask; 0 when any name is unknown. */
static int parse_mask(llmem_train *t, const train_field *f, const char *s, int64_t *out)
{
    char name[64];
    int64_t mask = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n >= sizeof name)
            return llmem__fail(t->ctx, LLMEM_ENOTFOUND, "%s: empty or overlong name in '%s'",
                               f->name, s);
        memcpy(name, s, n);
        name[n] = '\0';
        int v = names_lookup(f->values, name);
        if (v == 0) {
            char list[160];
            names_list(f->values, list, sizeof list);
            return llmem__fail(t->ctx, LLMEM_ENOTFOUND, "%s: unknown module '%s' (expected %s)",
                               f->name, name, list);
        }
        mask |= v;
        s += n;
        if (*s == ',' && *++s == '\0')
            return llmem__fail(t->ctx, LLMEM_ENOTFOUND, "%s: empty module name after ','",
                               f->name);
    }
    if (mask == 0)
        return llmem__fail(t->ctx, LLMEM_ENOTFOUND, "%s: no module named", f->name);
    *out = mask;
    return LLMEM_OK;
}

int llmem_train_set_str(llmem_train *t, int key, const char *value)
{
    if (t == NULL)
        return LLMEM_EINVAL;
    const train_field *f = lookup(t, key);
    if (f == NULL)
        return LLMEM_EINVAL;
    if (value == NULL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "%s: value is NULL", f->name);
    char *end = NULL;
    switch (f->kind) {
    case KIND_ENUM: {
        int v = names_lookup(f->values, value);
        if (v == 0) {
            char list[160];
            names_list(f->values, list, sizeof list);
            return llmem__fail(t->ctx, LLMEM_ENOTFOUND, "%s: unknown value '%s' (expected %s)",
                               f->name, value, list);
        }
        return llmem_train_set_int(t, key, v);
    }
    case KIND_MASK: {
        int64_t mask = 0;
        int rc = parse_mask(t, f, value, &mask);
        return rc != LLMEM_OK ? rc : llmem_train_set_int(t, key, mask);
    }
    case KIND_INT: {
        long long v = strtoll(value, &end, 10);
        if (end == value || *end != '\0')
            return llmem__fail(t->ctx, LLMEM_EINVAL, "%s: '%s' is not an integer", f->name,
                               value);
        return llmem_train_set_int(t, key, v);
    }
    case KIND_REAL: {
        double v = strtod(value, &end);
        if (end == value || *end != '\0')
            return llmem__fail(t->ctx, LLMEM_EINVAL, "%s: '%s' is not a number", f->name, value);
        return llmem_train_set_double(t, key, v);
    }
    }
    return LLMEM_EINVAL;
}

int llmem_train_get_int(const llmem_train *t, int key, int64_t *out)
{
    if (t == NULL || out == NULL)
        return LLMEM_EINVAL;
    const train_field *f = find_field(key);
    if (f == NULL || f->kind == KIND_REAL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "train: key %d is not an integer field", key);
    *out = t->i[key];
    return LLMEM_OK;
}

int llmem_train_get_double(const llmem_train *t, int key, double *out)
{
    if (t == NULL || out == NULL)
        return LLMEM_EINVAL;
    const train_field *f = find_field(key);
    if (f == NULL || f->kind != KIND_REAL)
        return llmem__fail(t->ctx, LLMEM_EINVAL, "train: key %d is not a real field", key);
    *out = t->d[key];
    return LLMEM_OK;
}

int llmem_train_field_info(int key, const char **name, int64_t *min, int64_t *max, int *is_real)
{
    const train_field *f = find_field(key);
    if (f == NULL)
        return LLMEM_EINVAL;
    if (name)
        *name = f->name;
    if (min)
        *min = (int64_t)f->min;
    if (max)
        *max = (int64_t)f->max;
    if (is_real)
        *is_real = f->kind == KIND_REAL;
    return LLMEM_OK;
}

const char *llmem_train_value_name(int key, int64_t value)
{
    const train_field *f = find_field(key);
    if (f == NULL || f->kind != KIND_ENUM || value < (int64_t)f->min || value > (int64_t)f->max)
        return NULL;
    return names_name(f->values, (int)value);
}
