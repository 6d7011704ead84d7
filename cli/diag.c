/* SPDX-License-Identifier: MIT */
/* The one error line every failure prints. */
#include "cli.h"

#include <stdarg.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("llmem: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
