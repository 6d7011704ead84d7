/* SPDX-License-Identifier: MIT */
/* What every part of the llmem command shares: exit statuses, the error
 * line, and the commands main() dispatches to. */
#ifndef LLMEM_CLI_H
#define LLMEM_CLI_H

#include <stdio.h>

/* Exit statuses, as the usage documents them. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_ESTIMATE 1 /* the inputs parse but cannot be estimated */
#define CLI_EXIT_USAGE 2    /* unknown flag, missing or bad value */
/* The whole answer is printed but a check it makes failed: --weights differ
 * from the model; the estimate does not fit --gpu's (or --capacity's) memory,
 * no point of a grid with a capacity does, plan finds no layout, fit no
 * option; `llmem pack` left jobs unplaced. */
#define CLI_EXIT_CHECK 3

/* The model `llmem estimate` uses when no model flag is given. */
#define CLI_DEFAULT_MODEL "meta-llama/Llama-3.2-1B"
/* Whose defaults the library's training defaults are (include/llmem.h,
 * docs/memory-model.md "Defaults"). */
#define CLI_DEFAULTS_SOURCE "transformers 5.x with PyTorch 2.11"

#if defined(__GNUC__)
#define CLI_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CLI_PRINTF(fmt, args)
#endif

/* One line "llmem: <message>" on stderr. */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);
/* Text every later cli_error line starts with, until set again or cleared. */
void cli_error_context(const char *fmt, ...) CLI_PRINTF(1, 2);
void cli_error_context_clear(void);

/* The commands; each takes the arguments after its name and returns an exit status. */
int cli_cmd_estimate(int argc, char **argv);
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_models(int argc, char **argv);
int cli_cmd_weights(int argc, char **argv);
int cli_cmd_gpus(int argc, char **argv);
int cli_cmd_fit(int argc, char **argv);
int cli_cmd_pack(int argc, char **argv);
int cli_cmd_version(int argc, char **argv);
int cli_cmd_help(int argc, char **argv);
/* Whether `llmem NAME` is a command (`llmem help NAME`). */
int cli_is_command(const char *name);

/* The usage text, generated from the flag table. */
void cli_usage(FILE *out);
/* The usage of one command (`llmem COMMAND --help`, `llmem help COMMAND`):
 * its synopsis and the flags it takes. 0 for a command without its own. */
int cli_usage_command(FILE *out, const char *command);

#endif
