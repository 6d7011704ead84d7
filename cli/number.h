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

#endif
