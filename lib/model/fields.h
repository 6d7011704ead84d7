/* SPDX-License-Identifier: MIT */
/* The table of model fields: name, bounds and value names, one row a key. */
#ifndef LLMEM_MODEL_FIELDS_H
#define LLMEM_MODEL_FIELDS_H

#include "core/names.h"

#include <stdint.h>

typedef struct model_field {
    int key;
    const char *name;          /* as the CLI flag and the messages spell it */
    int64_t min, max;
    const name_table *values;  /* enumerated fields only */
} model_field;

/* Row of key, or NULL for an unknown key. */
const model_field *model_field_find(int key);

#endif
