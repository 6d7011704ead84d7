/* SPDX-License-Identifier: MIT */
/* The one error line every failure prints. */
#include "cli.h"

#include <stdarg.h>

/* What the messages are about ("jobs.json: job 'a' (#2): "), set around a
 * step that reports through code shared with other commands. */
static char context[320];

void cli_error_context_clear(void)
{
    context[0] = '\0';
}

void cli_error_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("llmem: ", stderr);
    fputs(context, stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
