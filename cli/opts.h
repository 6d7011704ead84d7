/* SPDX-License-Identifier: MIT */
/* The flags of a command that are not `llmem estimate` flags (--gpu, --jobs,
 * --margin, ...): taken out of argv by name, so the rest can go to the
 * estimate flags' parser (cli_configure) or be refused. */
#ifndef LLMEM_CLI_OPTS_H
#define LLMEM_CLI_OPTS_H

#include <llmem.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cli_opt {
    const char *name;  /* without "--" */
    int switch_only;   /* 1: takes no value */
    const char *value; /* the last value given (NULL: not given; "" for a switch) */
} cli_opt;

/* Take the options of opts[0..n) out of argv[0..*argc), keeping the other
 * arguments in order and updating *argc. Accepts `--name value` and
 * `--name=value`. Returns 0, or -1 after printing why. */
int cli_opts_take(int *argc, char **argv, cli_opt *opts, size_t n);

/* Parsers for option values; each prints "--name 'value': why" and returns
 * 0 on a bad value, 1 when *out is set. */
int cli_opt_u64(const char *name, const char *value, uint64_t min, uint64_t max, uint64_t *out);
/* --margin P: a percentage in [0, 90) ("5" or "5%"), as `llmem plan` reads
 * it, into thousandths. */
int cli_opt_margin(const char *name, const char *value, int64_t *permille);
/* A margin of percent P, read from value (the text as typed, for the message),
 * in permille: P rounded to the nearest tenth, in [0, 900) after rounding
 * (89.96 would make 900, the 90 % the range excludes). Prints the error and
 * returns 0 when out of range. */
int cli_margin_permille(const char *name, const char *value, double percent, int64_t *permille);
/* A count ("8"), as every count flag reads it: "not a count" for anything
 * else, a negative number included, "too large for a count" beyond 64 bits.
 * The bounds are the library's field's, checked when it is set. */
int cli_opt_count(const char *name, const char *value, int64_t *out);

/* An NVIDIA driver: its major branch ("535"), or a full version
 * ("535.129.03", as nvidia-smi prints it) of which the branch is taken.
 * The bounds are the library's field's (LLMEM_FIT_DRIVER), checked when set. */
int cli_opt_driver(const char *name, const char *value, int64_t *branch);

/* A library message without its leading "<object>: " ("gpu: ..."). */
const char *cli_message_tail(const char *message);
/* A library message about field without its leading "<field>: "
 * ("gpus-per-node: value 0 out of range [0, 1024]"). */
const char *cli_message_after_field(const char *message, const char *field);
/* "device" or "reserved" into an llmem_level; 0 for another word. */
int cli_parse_level(const char *value, int *level);
/* The catalog index of GPU name; prints "--flag 'name': why" and returns 0
 * when the library knows no such GPU. */
int cli_find_gpu(llmem_ctx *ctx, const char *flag, const char *name, size_t *gpu);

#endif
