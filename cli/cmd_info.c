/* SPDX-License-Identifier: MIT */
/* `llmem version` and `llmem help`: no flags but --help, and help may name a
 * command (its own usage, or the whole one for version and help). */
#include "cli.h"

#include <llmem.h>

#include <string.h>

static int no_arguments(const char *command, int argc, char **argv)
{
    if (argc > 0) {
        cli_error("`llmem %s` takes no arguments (got '%s')", command, argv[0]);
        return 0;
    }
    return 1;
}

static int asks_help(int argc, char **argv)
{
    return argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0);
}

int cli_cmd_version(int argc, char **argv)
{
    if (asks_help(argc, argv))
        return cli_cmd_help(0, argv);
    if (!no_arguments("version", argc, argv))
        return CLI_EXIT_USAGE;
    /* The command is built with the library's header; say so if the library
     * loaded at run time is another version. */
    printf("llmem %d.%d.%d (libllmem %s", LLMEM_VERSION_MAJOR, LLMEM_VERSION_MINOR,
           LLMEM_VERSION_PATCH, llmem_version_string());
    if (llmem_version_number() != LLMEM_VERSION_NUMBER)
        printf(", built against %d.%d.%d", LLMEM_VERSION_MAJOR, LLMEM_VERSION_MINOR,
               LLMEM_VERSION_PATCH);
    printf(")\n");
    return CLI_EXIT_OK;
}

int cli_cmd_help(int argc, char **argv)
{
    if (argc > 1) {
        cli_error("`llmem help` takes one command (got '%s' after '%s')", argv[1], argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (argc == 1 && cli_usage_command(stdout, argv[0]))
        return CLI_EXIT_OK;
    if (argc == 1 && !cli_is_command(argv[0]) && !asks_help(argc, argv)) {
        cli_error("unknown command '%s' (see `llmem help`)", argv[0]);
        return CLI_EXIT_USAGE;
    }
    cli_usage(stdout);
    return CLI_EXIT_OK;
}
