/* SPDX-License-Identifier: MIT */
/* llmem: estimate the GPU memory of fine-tuning an LLM from the shell.
 * main() only picks the command; each command lives in its own file. */
#include "cli.h"

#include <errno.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    { "estimate", cli_cmd_estimate }, { "plan", cli_cmd_plan },       { "models", cli_cmd_models },
    { "weights", cli_cmd_weights },
    { "gpus", cli_cmd_gpus },         { "fit", cli_cmd_fit },
    { "pack", cli_cmd_pack },
    { "version", cli_cmd_version },   { "--version", cli_cmd_version },
    { "help", cli_cmd_help },         { "--help", cli_cmd_help },
    { "-h", cli_cmd_help },
};

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int cli_is_command(const char *name)
{
    return find_command(name) != NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("no command given (try `llmem estimate` or `llmem help`)");
        return CLI_EXIT_USAGE;
    }
    const command *cmd = find_command(argv[1]);
    if (cmd == NULL) {
        cli_error("unknown command '%s' (see `llmem help`)", argv[1]);
        return CLI_EXIT_USAGE;
    }
    int status = cmd->run(argc - 2, argv + 2);
    /* A full disk or a closed pipe must not pass for a complete answer. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the output: %s", strerror(errno));
        return status != CLI_EXIT_OK ? status : CLI_EXIT_ESTIMATE;
    }
    return status;
}
