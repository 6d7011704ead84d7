/* SPDX-License-Identifier: MIT */
/* Name <-> value tables of the enumerations, shared by the setters, the CLI
 * (through the public set_str calls) and the messages. */
#ifndef LLMEM_CORE_NAMES_H
#define LLMEM_CORE_NAMES_H

#include <stddef.h>

typedef struct name_value {
    const char *name;
    int value;
} name_value;

typedef struct name_table {
    const name_value *entries;
    size_t count;
} name_table;

#define NAME_TABLE(arr) { arr, sizeof arr / sizeof arr[0] }

/* Value of name, or 0 when unknown (no enumeration uses 0). */
int names_lookup(const name_table *t, const char *name);
/* Name of value, or NULL. */
const char *names_name(const name_table *t, int value);
/* "a|b|c" into buf, for messages. */
void names_list(const name_table *t, char *buf, size_t cap);

extern const name_table names_family, names_norm, names_mlp, names_positions,
    names_precision, names_optimizer, names_grad_ckpt, names_attention, names_method,
    names_loss, names_formula, names_lora_target, names_phase, names_term;

#endif
