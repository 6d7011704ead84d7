/* SPDX-License-Identifier: MIT */
#include "core/fields.h"

#include "core/ctx.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const field_desc *llmem_fields_find(const field_table *t, int key)
{
    if (key < 1 || (size_t)key > t->count || t->rows[key - 1].key != key)
        return NULL;
    return &t->rows[key - 1];
}

int llmem_fields_key_end(const field_table *t)
{
    return (int)t->count + 1;
}

void llmem_fields_defaults(const field_table *t, int64_t *ints, double *reals)
{
    for (size_t i = 0; i < t->count; i++) {
        const field_desc *f = &t->rows[i];
        if (f->kind == FIELD_REAL)
            reals[f->key] = f->def;
        else
            ints[f->key] = (int64_t)f->def;
    }
}

int llmem_fields_row(llmem_ctx *ctx, const field_table *t, int key, const field_desc **row)
{
    *row = llmem_fields_find(t, key);
    if (*row == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "%s: unknown field key %d", t->object_name, key);
    return LLMEM_OK;
}

static int fail_range(llmem_ctx *ctx, const field_table *t, const field_desc *f, int64_t value)
{
    return llmem__fail_field(ctx, t->object, f->key, LLMEM_ERANGE,
                             "%s: value %lld out of range [%.0f, %.0f]", f->name,
                             (long long)value, f->min, f->max);
}

int llmem_fields_accept_int(llmem_ctx *ctx, const field_table *t, int key, int64_t value,
                            const field_desc **row)
{
    int rc = llmem_fields_row(ctx, t, key, row);
    if (rc != LLMEM_OK)
        return rc;
    const field_desc *f = *row;
    if (f->kind == FIELD_REAL)
        return llmem_fields_accept_real(ctx, t, key, (double)value, row);
    /* An enumeration whose bounds start at 0 takes 0: no value chosen (the GPU). */
    if (f->kind == FIELD_ENUM && value == 0 && f->min == 0)
        return LLMEM_OK;
    if ((double)value < f->min || (double)value > f->max)
        return fail_range(ctx, t, f, value);
    if (f->kind == FIELD_ENUM && llmem_names_name(f->values, (int)value) == NULL)
        return fail_range(ctx, t, f, value);
    return LLMEM_OK;
}

int llmem_fields_accept_real(llmem_ctx *ctx, const field_table *t, int key, double value,
                             const field_desc **row)
{
    int rc = llmem_fields_row(ctx, t, key, row);
    if (rc != LLMEM_OK)
        return rc;
    const field_desc *f = *row;
    if (f->kind != FIELD_REAL)
        return llmem__fail_field(ctx, t->object, key, LLMEM_EINVAL,
                                 "%s: not a real field (set it as an integer)", f->name);
    int above = f->max_open ? !(value < f->max) : !(value <= f->max);
    if (!isfinite(value) || value < f->min || above)
        return llmem__fail_field(ctx, t->object, key, LLMEM_ERANGE,
                                 "%s: value %g out of range [%g, %g%s", f->name, value, f->min,
                                 f->max, f->max_open ? ")" : "]");
    return LLMEM_OK;
}

static int unknown_name(llmem_ctx *ctx, const field_table *t, const field_desc *f,
                        const char *what, const char *name)
{
    char list[LLMEM_ERROR_CAP];
    llmem_names_list(f->values, list, sizeof list);
    const char *close = llmem_names_closest(f->values, name);
    if (close != NULL)
        return llmem__fail_field(ctx, t->object, f->key, LLMEM_ENOTFOUND,
                                 "%s: unknown %s '%s'; did you mean '%s'? (expected %s)", f->name,
                                 what, name, close, list);
    return llmem__fail_field(ctx, t->object, f->key, LLMEM_ENOTFOUND,
                             "%s: unknown %s '%s' (expected %s)", f->name, what, name, list);
}

/* "q_proj,v_proj" into a bitmask. */
static int parse_mask(llmem_ctx *ctx, const field_table *t, const field_desc *f, const char *s,
                      int64_t *out)
{
    char name[64];
    int64_t mask = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n >= sizeof name)
            return llmem__fail_field(ctx, t->object, f->key, LLMEM_ENOTFOUND,
                                     "%s: empty or overlong name in '%s'", f->name, s);
        memcpy(name, s, n);
        name[n] = '\0';
        int v = llmem_names_lookup(f->values, name);
        if (v == 0)
            return unknown_name(ctx, t, f, "module", name);
        mask |= v;
        s += n;
        if (*s == ',' && *++s == '\0')
            return llmem__fail_field(ctx, t->object, f->key, LLMEM_ENOTFOUND,
                                     "%s: empty module name after ','", f->name);
    }
    if (mask == 0)
        return llmem__fail_field(ctx, t->object, f->key, LLMEM_ENOTFOUND, "%s: no module named",
                                 f->name);
    *out = mask;
    return LLMEM_OK;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* An optional sign and decimal digits, as the CLI reads an integer
 * (cli/number.c): strtoll alone also skips leading white space. */
static int integer_form(const char *p)
{
    p += *p == '+' || *p == '-';
    if (!is_digit(*p))
        return 0;
    while (is_digit(*p))
        p++;
    return *p == '\0';
}

/* A decimal number ("0.1", ".5", "1e-3"), as the CLI reads a real: strtod
 * alone also reads leading white space, hexadecimal ("0x1p-3"), "inf" and
 * "nan". */
static int decimal_form(const char *p)
{
    size_t digits = 0;
    p += *p == '+' || *p == '-';
    for (; is_digit(*p); p++)
        digits++;
    if (*p == '.')
        for (p++; is_digit(*p); p++)
            digits++;
    if (digits == 0)
        return 0;
    if (*p == 'e' || *p == 'E')
        return integer_form(p + 1); /* the exponent */
    return *p == '\0';
}

int llmem_fields_accept_str(llmem_ctx *ctx, const field_table *t, int key, const char *text,
                            int64_t *ints, double *reals, const field_desc **row)
{
    int rc = llmem_fields_row(ctx, t, key, row);
    if (rc != LLMEM_OK)
        return rc;
    const field_desc *f = *row;
    if (text == NULL)
        return llmem__fail_field(ctx, t->object, key, LLMEM_EINVAL, "%s: value is NULL", f->name);
    switch (f->kind) {
    case FIELD_ENUM: {
        int v = 0;
        if (f->values->find != NULL) {
            /* The finder's message names the field ("gpu: unknown GPU ..."). */
            if ((rc = f->values->find(ctx, text, &v)) != LLMEM_OK) {
                if (ctx != NULL) {
                    ctx->error_object = t->object;
                    ctx->error_key = key;
                }
                return rc;
            }
        } else {
            size_t i = llmem_names_index(f->values, text);
            if (i == llmem_names_count(f->values))
                return unknown_name(ctx, t, f, "value", text);
            v = llmem_names_at(f->values, i)->value;
            /* A row's value names itself (llmem_fields_accept_int's last
             * check): only the bounds are left (no name's value is 0). */
            if (i < f->values->count) {
                *ints = v;
                return (double)v < f->min || (double)v > f->max ? fail_range(ctx, t, f, v)
                                                                : LLMEM_OK;
            }
        }
        *ints = v;
        return llmem_fields_accept_int(ctx, t, key, v, row);
    }
    case FIELD_MASK:
        rc = parse_mask(ctx, t, f, text, ints);
        return rc != LLMEM_OK ? rc : llmem_fields_accept_int(ctx, t, key, *ints, row);
    case FIELD_INT: {
        if (!integer_form(text))
            return llmem__fail_field(ctx, t->object, key, LLMEM_EINVAL,
                                     "%s: '%s' is not an integer", f->name, text);
        errno = 0;
        long long v = strtoll(text, NULL, 10);
        if (errno == ERANGE)
            return llmem__fail_field(ctx, t->object, key, LLMEM_ERANGE,
                                     "%s: value %s out of range [%.0f, %.0f]", f->name, text,
                                     f->min, f->max);
        *ints = v;
        return llmem_fields_accept_int(ctx, t, key, v, row);
    }
    case FIELD_REAL: {
        if (!decimal_form(text))
            return llmem__fail_field(ctx, t->object, key, LLMEM_EINVAL,
                                     "%s: '%s' is not a decimal number", f->name, text);
        double v = strtod(text, NULL);
        *reals = v;
        return llmem_fields_accept_real(ctx, t, key, v, row);
    }
    }
    return LLMEM_EINVAL;
}

int llmem_fields_info(const field_table *t, int key, const char **name, int64_t *min,
                      int64_t *max, int *is_real)
{
    const field_desc *f = llmem_fields_find(t, key);
    if (f == NULL)
        return LLMEM_EINVAL;
    if (name)
        *name = f->name;
    if (min)
        *min = (int64_t)f->min;
    if (max)
        *max = (int64_t)f->max;
    if (is_real)
        *is_real = f->kind == FIELD_REAL;
    return LLMEM_OK;
}

const char *llmem_fields_value_name(const field_table *t, int key, int64_t value)
{
    const field_desc *f = llmem_fields_find(t, key);
    if (f == NULL || f->kind != FIELD_ENUM || (double)value < f->min || (double)value > f->max)
        return NULL;
    return llmem_names_name(f->values, (int)value);
}

const char *llmem_fields_choice(const field_table *t, int key, size_t index, int64_t *value)
{
    const field_desc *f = llmem_fields_find(t, key);
    if (f == NULL || f->values == NULL || index >= llmem_names_count(f->values))
        return NULL;
    const name_value *nv = llmem_names_at(f->values, index);
    if (value)
        *value = nv->value;
    return nv->name;
}
