/* SPDX-License-Identifier: MIT */
/* The value a flag's field holds now (defaults included), read back from the
 * library, with the names of enumerated values. */
#ifndef LLMEM_CLI_SETTINGS_H
#define LLMEM_CLI_SETTINGS_H

#include "args.h"
#include "configure.h"

#include <stdint.h>

typedef struct cli_setting {
    int64_t i;      /* INT, NAME and NAMES fields (a NAMES field is a bitmask) */
    double d;       /* REAL fields */
    char text[160]; /* NAME: the value's name; NAMES: "a,b"; "" otherwise */
} cli_setting;

/* Read the field flag sets (a CLI_TARGET_MODEL or CLI_TARGET_TRAIN flag).
 * Returns an llmem status; the context holds the message. */
int cli_setting_read(const cli_request *req, const cli_flag *flag,
                     cli_setting *out);

#endif
