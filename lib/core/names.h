/* SPDX-License-Identifier: MIT */
/* Name <-> value tables of the enumerations, shared by the field engine, the
 * messages and the public *_value_name calls. A table may be a column of a
 * richer table (the families, the optimizers): each row then starts with its
 * name_value, and the table steps over whole rows. */
#ifndef LLMEM_CORE_NAMES_H
#define LLMEM_CORE_NAMES_H

#include "llmem.h"

#include <stddef.h>

typedef struct name_value {
    const char *name;
    int value;
} name_value;

typedef struct name_table {
    const void *first; /* the first row's name_value */
    size_t count;
    size_t stride;     /* bytes from one row to the next */
    /* Other spellings of the same values (aliases), listed after the rows:
     * a second array of rows, each starting with a name_value; NULL: none. */
    const void *more;
    size_t more_count;
    size_t more_stride;
    /* How the field engine reads text for these values, when plain names do
     * not do (the GPU catalog's aliases and spellings): the value of name,
     * or a failed status with the context's message saying why; NULL: by
     * the names. */
    int (*find)(llmem_ctx *ctx, const char *name, int *value);
} name_table;

/* A table over an array of name_value. */
#define NAME_TABLE(arr) \
    { &(arr)[0], sizeof(arr) / sizeof((arr)[0]), sizeof((arr)[0]), NULL, 0, 0, NULL }
/* A table over an array of rows whose first member is a name_value. */
#define NAME_TABLE_OF_ROWS(rows, count) { &(rows)[0], (count), sizeof((rows)[0]), NULL, 0, 0, NULL }
/* The same, followed by an array of alias rows (each starting with a name_value). */
#define NAME_TABLE_OF_ROWS_AND_ALIASES(rows, count, aliases) \
    { &(rows)[0], (count), sizeof((rows)[0]), &(aliases)[0], \
      sizeof(aliases) / sizeof((aliases)[0]), sizeof((aliases)[0]), NULL }
/* A table over rows whose text is read by find (see name_table). */
#define NAME_TABLE_OF_ROWS_FOUND_BY(rows, count, find) \
    { &(rows)[0], (count), sizeof((rows)[0]), NULL, 0, 0, find }

/* Names in the table, aliases included. */
size_t llmem_names_count(const name_table *t);
/* Row i (i < llmem_names_count(t)): the rows, then the aliases. */
const name_value *llmem_names_at(const name_table *t, size_t i);
/* Index of name (llmem_names_at: a row, then an alias), or
 * llmem_names_count(t) when unknown. */
size_t llmem_names_index(const name_table *t, const char *name);
/* Value of name (or of an alias), or 0 when unknown (no enumeration uses 0). */
int llmem_names_lookup(const name_table *t, const char *name);
/* Name of value (the row's, never an alias), or NULL. */
const char *llmem_names_name(const name_table *t, int value);
/* "a|b|c" into buf, for messages. */
void llmem_names_list(const name_table *t, char *buf, size_t cap);

/* For a "did you mean" after an unknown name: the index of the candidate
 * closest to name, or count when none is close. Candidates are read through
 * at(table, i), i < count. Names compare folded (ASCII case, '-', '_' and
 * blanks ignored): the same folded name, then a candidate the folded name
 * begins (at least 3 characters: "adamw8" -> "adamw-8bit"; the shortest
 * wins), then an edit distance of at most a third of the name's length (at
 * least 1). Ties go to the earlier candidate. */
size_t llmem_names_suggest(const char *name, const char *(*at)(const void *table, size_t i),
                           const void *table, size_t count);
/* The name of t closest to name as above (aliases included), or NULL. */
const char *llmem_names_closest(const name_table *t, const char *name);

/* The LoRA target name that selects every linear module (PEFT's keyword). */
#define LLMEM_LORA_ALL_LINEAR_NAME "all-linear"

/* The enumerations without richer tables of their own. */
extern const name_table llmem_names_norm, llmem_names_mlp, llmem_names_positions,
    llmem_names_grad_ckpt, llmem_names_attention, llmem_names_method, llmem_names_loss,
    llmem_names_formula, llmem_names_lora_target, llmem_names_phase, llmem_names_term,
    llmem_names_optimizer_impl, llmem_names_activation, llmem_names_experts_impl;

#endif
