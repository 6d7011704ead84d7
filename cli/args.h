/* SPDX-License-Identifier: MIT */
/* The flags of `llmem estimate` as data: one row a flag, naming the library
 * key it sets, and an iterator over argv that accepts `--flag value` and
 * `--flag=value` (and, for commands that take them, operands such as a path). */
#ifndef LLMEM_CLI_ARGS_H
#define LLMEM_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* Room for a flag's choices joined with '|' (the optimizers with the
 * Trainer's names are the longest list). */
#define CLI_CHOICES_CAP 600

/* What a flag sets. */
typedef enum cli_target {
    CLI_TARGET_PRESET,  /* --model: the built-in preset to start from */
    CLI_TARGET_CONFIG,  /* --config: a Hugging Face config.json to start from */
    CLI_TARGET_WEIGHTS, /* --weights: safetensors headers to cross-check the model with */
    CLI_TARGET_MODEL,   /* a model field: key is an llmem_model_key */
    CLI_TARGET_TRAIN,   /* a training field: key is an llmem_train_key */
    CLI_TARGET_PARALLEL,/* a layout field: key is an llmem_parallel_key */
    CLI_TARGET_ZERO,    /* --zero N: the layout's sharding, zeroN */
    CLI_TARGET_FSDP,    /* --fsdp MODE: the layout's sharding, fsdp-MODE */
    CLI_TARGET_PLAN,    /* a planner field: key is an llmem_plan_key */
    CLI_TARGET_CAPACITY,/* --capacity SIZE: the memory a GPU holds */
    CLI_TARGET_MARGIN,  /* --margin PERCENT: what to keep free of it */
    CLI_TARGET_MAX,     /* --max batch|seq: solve for the largest that fits */
    CLI_TARGET_TOP,     /* --top K: how many plans to print */
    CLI_TARGET_SVG,     /* --svg FILE: the step's timeline as a picture */
    CLI_TARGET_TIMELINE,/* --timeline: the timeline's points in the JSON */
    CLI_TARGET_JSON,    /* --json */
    CLI_TARGET_HELP     /* --help */
} cli_target;

/* The shape of a flag's value; the library checks the value itself. */
typedef enum cli_kind {
    CLI_KIND_SWITCH, /* no value */
    CLI_KIND_TEXT,   /* free text (a preset name, a path) */
    CLI_KIND_INT,    /* an integer */
    CLI_KIND_REAL,   /* a real number */
    CLI_KIND_NAME,   /* one of choices */
    CLI_KIND_NAMES   /* comma-separated choices (a bitmask in the library) */
} cli_kind;

typedef struct cli_flag {
    const char *name;           /* without the leading "--" */
    const char *json;           /* key of the value in the JSON output; NULL: not echoed */
    cli_target target;
    int key;                    /* llmem_model_key, llmem_train_key or llmem_parallel_key */
    cli_kind kind;
    const char *metavar;        /* the value's placeholder in the usage (NAME: unused) */
    const char *help;
} cli_flag;

size_t cli_flag_count(void);
/* Row index (0 <= index < cli_flag_count()). */
const cli_flag *cli_flag_at(size_t index);
/* Row of the flag spelled name[0..len), without "--"; NULL when unknown. */
const cli_flag *cli_flag_find(const char *name, size_t len);
/* The index-th name the flag's field accepts, with its value; NULL past the
 * last (the library's lists: llmem_model_choice, llmem_train_choice). */
const char *cli_flag_choice(const cli_flag *flag, size_t index, int64_t *value);
/* The flag's choices joined: "a|b|c" ("" for none). */
void cli_flag_choices(const cli_flag *flag, char *buf, size_t cap);
/* The library's message about flag's field without its leading "<field name>:"
 * (the library spells fields its own way: "qkv-bias" for --attn-bias). */
const char *cli_message_body(const cli_flag *flag, const char *message);
/* Row of the flag that sets field key of an llmem_object, or NULL. */
const cli_flag *cli_flag_for_field(int object, int key);
/* The library's name of an enumerated field's value, or NULL. */
const char *cli_value_name(const cli_flag *flag, int64_t value);
/* The flag's allowed values for messages: "a|b|c", the metavar, or for NAMES
 * "M[,M...] with M in a|b|c". */
void cli_flag_values(const cli_flag *flag, char *buf, size_t cap);

typedef struct cli_arg_iter {
    int argc;
    char **argv;
    int next;
    int operands; /* arguments that are not flags are operands, not errors */
} cli_arg_iter;

/* Iterate over argv[0..argc); with operands nonzero, an argument that does not
 * start with "--" (other than -h) is an operand. */
void cli_args_begin(cli_arg_iter *it, int argc, char **argv, int operands);
/* The next flag and its value (NULL for a switch): 1; 0 at the end; -1 after
 * printing why an argument is not a flag or lacks its value. An operand comes
 * back as 1 with *flag NULL and *value the argument. */
int cli_args_next(cli_arg_iter *it, const cli_flag **flag, const char **value);

#endif
