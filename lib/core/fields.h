/* SPDX-License-Identifier: MIT */
/*
 * One engine for the keyed fields of every handle (model, training setup,
 * and the handles to come): each handle describes its fields in a const
 * table (name as the CLI and messages spell it, kind, bounds, default, value
 * names), and the engine checks, parses, describes and names values. A
 * handle stores its values in arrays indexed by key.
 */
#ifndef LLMEM_CORE_FIELDS_H
#define LLMEM_CORE_FIELDS_H

#include "core/names.h"
#include "llmem.h"

#include <stdint.h>

typedef enum field_kind {
    FIELD_INT,  /* an integer */
    FIELD_ENUM, /* one value of `values`; also 0, no value chosen, when min is 0 */
    FIELD_MASK, /* an OR of values of `values` (names listed with commas) */
    FIELD_REAL  /* a finite double */
} field_kind;

typedef struct field_desc {
    int key;
    const char *name;
    field_kind kind;
    double min, max;          /* inclusive bounds; exact for every integer bound used */
    int max_open;             /* the upper bound itself is excluded */
    double def;               /* the default */
    const name_table *values; /* FIELD_ENUM and FIELD_MASK */
} field_desc;

typedef struct field_table {
    int object;              /* llmem_object: which handle, for llmem_ctx_error_field */
    const char *object_name; /* "model", "train": in messages */
    const field_desc *rows;  /* rows[i].key == i + 1: keys are dense (a unit test checks) */
    size_t count;
} field_table;

#define FIELD_TABLE(object, object_name, rows) \
    { object, object_name, rows, sizeof(rows) / sizeof((rows)[0]) }

/* Row of key, or NULL. */
const field_desc *llmem_fields_find(const field_table *t, int key);
/* One past the largest key. */
int llmem_fields_key_end(const field_table *t);
/* Every default into ints[key] (or reals[key] for real fields). */
void llmem_fields_defaults(const field_table *t, int64_t *ints, double *reals);

/* Check a value for key; on failure the context's message names the field.
 * A real field accepts an integer as a real. */
int llmem_fields_accept_int(llmem_ctx *ctx, const field_table *t, int key, int64_t value,
                            const field_desc **row);
int llmem_fields_accept_real(llmem_ctx *ctx, const field_table *t, int key, double value,
                             const field_desc **row);
/* Parse text for key (a name, names with commas, an integer or a decimal
 * number; numbers as the CLI reads them: no white space, hexadecimal, inf or
 * nan) and check it: the value lands in *ints or *reals by the field's kind. */
int llmem_fields_accept_str(llmem_ctx *ctx, const field_table *t, int key, const char *text,
                            int64_t *ints, double *reals, const field_desc **row);
/* Row of a key that must exist (unknown keys fail with a message). */
int llmem_fields_row(llmem_ctx *ctx, const field_table *t, int key, const field_desc **row);

/* The public describers. */
int llmem_fields_info(const field_table *t, int key, const char **name, int64_t *min,
                      int64_t *max, int *is_real);
const char *llmem_fields_value_name(const field_table *t, int key, int64_t value);
const char *llmem_fields_choice(const field_table *t, int key, size_t index, int64_t *value);

#endif
