/* SPDX-License-Identifier: MIT */
#include "llmem.h"

#include <stddef.h>

/* Indexed by -status. */
static const char *const status_text[] = {
    "success",
    "invalid argument",
    "out of memory",
    "value out of range",
    "not found",
    "integer overflow",
    "inconsistent fields",
    "input/output error",
    "malformed input",
    "not supported",
    "buffer too small",
};

const char *llmem_status_str(int status)
{
    size_t n = sizeof status_text / sizeof status_text[0];
    if (status > 0 || status <= -(int)n)
        return "unknown status";
    return status_text[-status];
}
