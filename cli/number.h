/* SPDX-License-Identifier: MIT */
/* Numbers as flags spell them: decimal only, nothing around them. Values out
 * of range are told apart from text that is no number, so a message can quote
 * what was typed instead of a clamped value. */
#ifndef LLMEM_CLI_NUMBER_H
#define LLMEM_CLI_NUMBER_H

#include <stdint.h>

typedef enum cli_number {
    CLI_NUMBER_OK,
    CLI_NUMBER_INVALID, /* not a number as the flag spells it */
    CLI_NUMBER_RANGE    /* a number beyond int64_t, or beyond a double */
} cli_number;

/* [+-]digits. */
cli_number cli_parse_int(const char *s, int64_t *out);
/* [+-]digits[.digits][(e|E)[+-]digits], or with digits only after the '.':
 * no hexadecimal, no inf or nan. */
cli_number cli_parse_real(const char *s, double *out);
/* A byte count as --capacity and fit's --bytes take it: "85899345920" (read
 * exactly), or a positive number with a unit, in any case: "80GiB", "80Gi",
 * "79.6 GB", "80G", "80gb". Binary: KiB, MiB, GiB, TiB, PiB and Kubernetes'
 * Ki, Mi, Gi, Ti, Pi; decimal: KB, MB, GB, TB, PB and K, M, G, T, P; B is
 * bytes. Returns 1 with *out > 0, else 0. */
int cli_parse_size(const char *s, uint64_t *out);
/* What a size may be, for messages. */
#define CLI_SIZE_FORMS                                                                         \
    "a size above 0 and below 2^64 bytes: whole bytes, or a number with a unit, in any "      \
    "case: binary KiB, MiB, GiB, TiB, PiB (or Ki, Mi, Gi, Ti, Pi), decimal KB, MB, GB, TB, "  \
    "PB (or K, M, G, T, P)"

#endif
