/* SPDX-License-Identifier: MIT */
/* The usage, written from the flag table so that it lists every flag, with
 * the training defaults read from a fresh library setup. */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "settings.h"

#include <string.h>

#define FLAG_COLUMN 30 /* where the flags' descriptions start */

typedef struct flag_group {
    const char *title;
    cli_target first, last; /* the targets listed under the title */
} flag_group;

static const flag_group groups[] = {
    { "Model (default: " CLI_DEFAULT_MODEL ").\n"
      "Architecture flags change the fields of the --model preset or the --config model, or\n"
      "with --family describe a custom model. --weights needs --model, --config or --family:",
      CLI_TARGET_PRESET, CLI_TARGET_MODEL },
    { "Training:", CLI_TARGET_TRAIN, CLI_TARGET_TRAIN },
    { "Layout across GPUs (default: one GPU; docs/partitioning.md):", CLI_TARGET_PARALLEL,
      CLI_TARGET_FSDP },
    { "Fitting and planning:", CLI_TARGET_PLAN, CLI_TARGET_TOP },
    { "Output:", CLI_TARGET_SVG, CLI_TARGET_HELP },
};

/* " (default: bf16-mixed)" for a training flag; "" when unknown. */
static void default_of(llmem_ctx *ctx, const cli_request *req, const cli_flag *f, char *buf,
                       size_t cap)
{
    cli_setting s;
    buf[0] = '\0';
    llmem_plan *plan = NULL;
    int64_t v = 0;
    /* The planner's own settings: a plan's defaults (0 means the flag's help
     * says what; --gpus has none: plan needs it, pack reads it per type). */
    if (ctx != NULL && f->target == CLI_TARGET_PLAN && f->key != LLMEM_PLAN_GPUS &&
        llmem_plan_new(ctx, &plan) == LLMEM_OK) {
        if (llmem_plan_get_int(plan, f->key, &v) == LLMEM_OK && v != 0)
            snprintf(buf, cap, " (default: %lld)", (long long)v);
        llmem_plan_free(plan);
        return;
    }
    if (ctx == NULL || req->train == NULL || req->parallel == NULL ||
        (f->target != CLI_TARGET_TRAIN && f->target != CLI_TARGET_PARALLEL) ||
        cli_setting_read(req, f, &s) != LLMEM_OK)
        return;
    /* A set of names by default is a set of roles: whatever each family calls them. */
    if (f->kind == CLI_KIND_NAMES)
        snprintf(buf, cap, " (default: the model's modules in the roles of %s)", s.text);
    else if (f->kind == CLI_KIND_NAME || f->kind == CLI_KIND_TEXT)
        snprintf(buf, cap, " (default: %s)", s.text);
    else if (f->kind == CLI_KIND_REAL && s.d < 0) /* dropout's "the model's own" */
        snprintf(buf, cap, " (default: model)");
    else if (f->kind == CLI_KIND_REAL)
        snprintf(buf, cap, " (default: %g)", s.d);
    else
        snprintf(buf, cap, " (default: %lld)", (long long)s.i);
}

static void print_flag(FILE *out, const cli_flag *f, const char *default_text)
{
    char values[CLI_CHOICES_CAP + 40], head[CLI_CHOICES_CAP + 80];
    if (f->kind == CLI_KIND_NAMES)
        snprintf(values, sizeof values, "%s", f->metavar);
    else
        cli_flag_values(f, values, sizeof values);
    snprintf(head, sizeof head, "  --%s%s%s", f->name, values[0] ? " " : "", values);
    if (strlen(head) + 2 > FLAG_COLUMN)
        fprintf(out, "%s\n%-*s%s%s\n", head, FLAG_COLUMN, "", f->help, default_text);
    else
        fprintf(out, "%-*s%s%s\n", FLAG_COLUMN, head, f->help, default_text);
    if (f->kind == CLI_KIND_NAMES) {
        cli_flag_choices(f, values, sizeof values);
        fprintf(out, "%-*sM: %s\n", FLAG_COLUMN, "", values);
    }
}

/* The training defaults' setup, for default_of(); defaults->train NULL
 * when it cannot be made (the defaults are then left out). */
static llmem_ctx *defaults_new(cli_request *defaults)
{
    llmem_ctx *ctx = NULL;
    memset(defaults, 0, sizeof *defaults);
    if (llmem_ctx_new(&ctx, NULL) == LLMEM_OK &&
        (llmem_train_new(ctx, &defaults->train) != LLMEM_OK ||
         llmem_parallel_new(ctx, &defaults->parallel) != LLMEM_OK))
        defaults->train = NULL;
    return ctx;
}

/* A flag a command reads itself (cli_opts_take), not from the flag table. */
typedef struct own_flag {
    const char *name, *values, *help;
} own_flag;

static int is_own(const own_flag *own, const char *name)
{
    for (; own != NULL && own->name != NULL; own++)
        if (strcmp(own->name, name) == 0)
            return 1;
    return 0;
}

/* The flag table's flags of the targets (CLI_ACCEPTS bits), under their
 * groups' titles, less those the command reads itself. */
static void print_groups(FILE *out, unsigned targets, const own_flag *own)
{
    cli_request defaults;
    char default_text[256];
    llmem_ctx *ctx = defaults_new(&defaults);
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        int titled = 0;
        for (size_t i = 0; i < cli_flag_count(); i++) {
            const cli_flag *f = cli_flag_at(i);
            if (f->target < groups[g].first || f->target > groups[g].last ||
                !(targets & CLI_ACCEPTS(f->target)) || is_own(own, f->name))
                continue;
            if (!titled)
                fprintf(out, "\n%s\n", groups[g].title);
            titled = 1;
            default_of(ctx, &defaults, f, default_text, sizeof default_text);
            print_flag(out, f, default_text);
        }
    }
    cli_request_free(&defaults);
    llmem_ctx_free(ctx);
}

void cli_usage(FILE *out)
{
    fputs("Usage: llmem <command> [flags]\n"
          "Estimate the GPU memory of fine-tuning a large language model.\n"
          "\n"
          "Commands:\n"
          "  estimate [flags]            the memory of one training step (a table, or --json)\n"
          "  plan --gpus N (--gpu NAME | --capacity SIZE) [flags]\n"
          "                              the layouts of a job over N GPUs that fit, best first\n"
          "  models [--json]             the built-in model presets\n"
          "  weights PATH [--json]       what safetensors headers hold (PATH: a .safetensors\n"
          "                              file, a model.safetensors.index.json or a directory)\n"
          "  gpus [--mig] [--driver N] [--json]\n"
          "                              the GPU catalog; --mig: every MIG profile, its first\n"
          "                              driver branch and other branches' names for it;\n"
          "                              --driver N (as fit): that branch's profiles and names\n"
          "  fit --gpu NAME [flags]      the MIG slices and whole GPU that hold the estimate\n"
          "                              of [flags] (model, training and layout flags: every\n"
          "                              rank), or of --bytes SIZE (as --capacity takes it)\n"
          "                              [--bytes-level device|reserved];\n"
          "                              --margin P (percent kept free, default 5),\n"
          "                              --min-compute N, --driver N (the NVIDIA driver's\n"
          "                              branch, 535 or 535.129.03: its profiles and names;\n"
          "                              default: the newest),\n"
          "                              --running NAME@START[,...] (MIG instances the GPU\n"
          "                              runs: what can be created next to them), --json\n"
          "  pack --gpu NAME[:N][,...] --jobs FILE\n"
          "                              jobs onto few GPUs with valid MIG layouts; FILE: a JSON\n"
          "                              array of {\"id\", \"memory_bytes\" or estimate flags by\n"
          "                              name, \"min_compute\"}; --gpus N (each type's count),\n"
          "                              --margin P, --gpus-per-node N (0 to 1024: one\n"
          "                              mig-parted config a node; 0 = one for all, the\n"
          "                              default), --config-name NAME, --driver N (as fit:\n"
          "                              its profiles, layouts and names),\n"
          "                              --format text|json|mig-parted|nvidia-smi, --json\n"
          "  version, --version          the versions of llmem and libllmem\n"
          "  help, --help                this help; help COMMAND, COMMAND --help: its own\n",
          out);
    print_groups(out, ~0u, NULL);
    fputs("\nEvery flag also takes the form --flag=value.\n"
          "Exit status: 0 success, 1 the inputs cannot be estimated, 2 a usage error,\n"
          "3 the answer is printed but a check it makes failed: the --weights differ from\n"
          "the model; asked about a capacity (--gpu or --capacity), the estimate does not\n"
          "fit it, no point of a --batch or --seq list does, `llmem plan` finds no layout\n"
          "or `llmem fit` no option; `llmem pack` left jobs unplaced.\n",
          out);
}

#define HELP_FLAG { "help", NULL, "print this help" }
#define JSON_FLAG(what) { "json", NULL, "print " what " as JSON" }

static const own_flag gpus_flags[] = {
    { "mig", NULL, "also list every MIG profile of each GPU, its first driver branch and the "
                   "names other branches give it" },
    { "driver", "N", "the NVIDIA driver's branch, 535 or 535.129.03 (as fit): only its "
                     "profiles, under its names (default: the newest)" },
    JSON_FLAG("the catalog"),
    HELP_FLAG,
    { NULL, NULL, NULL },
};

static const own_flag fit_flags[] = {
    { "gpu", "NAME", "the GPU (see `llmem gpus`)" },
    { "bytes", "SIZE", "the job's memory instead of the estimate flags (as --capacity takes "
                       "it)" },
    { "bytes-level", "device|reserved", "what --bytes counts (default: device)" },
    { "margin", "P", "percent of each option's memory to keep free (default 5)" },
    { "min-compute", "N", "the fewest compute slices an option may have" },
    { "driver", "N", "the NVIDIA driver's branch, 535 or 535.129.03: its profiles and names "
                     "(default: the newest)" },
    { "running", "NAME@START[,...]", "MIG instances the GPU runs and keeps, as nvidia-smi mig "
                                     "-lgi lists them (3g.40gb@4): what can be created next to "
                                     "them, and where" },
    JSON_FLAG("the options"),
    HELP_FLAG,
    { NULL, NULL, NULL },
};

static const own_flag pack_flags[] = {
    { "gpu", "NAME[:N][,...]", "the GPU types, each with its count or unlimited" },
    { "jobs", "FILE", "a JSON array of {\"id\", \"memory_bytes\" or estimate flags by name, "
                      "\"min_compute\"}" },
    { "gpus", "N", "the count of each type given without one (refused when every type has "
                   "one)" },
    { "margin", "P", "percent of each slice to keep free (default 5)" },
    { "gpus-per-node", "N", "0 to 1024: one mig-parted config a node; 0 = one for all "
                            "(default)" },
    { "config-name", "NAME", "the name of the mig-parted config" },
    { "driver", "N", "the NVIDIA driver's branch (as fit): its profiles, layouts and names" },
    { "format", "text|json|mig-parted|nvidia-smi", "the output (default: text)" },
    { "json", NULL, "print JSON (the same as --format json)" },
    HELP_FLAG,
    { NULL, NULL, NULL },
};

/* What `llmem COMMAND --help` prints: the synopsis, then the flags the
 * command takes, its own first (own), then those of the flag table of the
 * targets it accepts (each cmd_*.c's mask). */
typedef struct command_usage {
    const char *name, *synopsis;
    const own_flag *own;
    unsigned targets;
} command_usage;

#define ALL_BUT(t) (~0u & ~(t))
static const command_usage usages[] = {
    { "estimate",
      "Usage: llmem estimate [flags]\n"
      "The memory of one training step: a table, or --json.\n",
      NULL, ALL_BUT(CLI_ACCEPTS(CLI_TARGET_PLAN) | CLI_ACCEPTS(CLI_TARGET_TOP)) },
    { "plan",
      "Usage: llmem plan --gpus N (--gpu NAME | --capacity SIZE) [flags]\n"
      "The layouts of a job over N GPUs that fit, best first.\n",
      NULL,
      CLI_ACCEPTS(CLI_TARGET_PRESET) | CLI_ACCEPTS(CLI_TARGET_CONFIG) |
          CLI_ACCEPTS(CLI_TARGET_MODEL) | CLI_ACCEPTS(CLI_TARGET_TRAIN) |
          CLI_ACCEPTS(CLI_TARGET_PLAN) | CLI_ACCEPTS(CLI_TARGET_CAPACITY) |
          CLI_ACCEPTS(CLI_TARGET_MARGIN) | CLI_ACCEPTS(CLI_TARGET_TOP) |
          CLI_ACCEPTS(CLI_TARGET_JSON) | CLI_ACCEPTS(CLI_TARGET_HELP) },
    { "models",
      "Usage: llmem models [--json]\n"
      "The built-in model presets.\n",
      NULL, CLI_ACCEPTS(CLI_TARGET_JSON) | CLI_ACCEPTS(CLI_TARGET_HELP) },
    { "weights",
      "Usage: llmem weights PATH [--json]\n"
      "What safetensors headers hold. PATH: a .safetensors file, a\n"
      "model.safetensors.index.json or a directory.\n",
      NULL, CLI_ACCEPTS(CLI_TARGET_JSON) | CLI_ACCEPTS(CLI_TARGET_HELP) },
    { "gpus",
      "Usage: llmem gpus [--mig] [--driver N] [--json]\n"
      "The GPU catalog.\n",
      gpus_flags, 0 },
    { "fit",
      "Usage: llmem fit --gpu NAME [flags]\n"
      "       llmem fit --gpu NAME --bytes SIZE [--bytes-level device|reserved] [flags]\n"
      "The MIG slices and the whole GPU that hold the estimate of the model, training\n"
      "and layout flags (every rank), or --bytes.\n",
      fit_flags,
      CLI_ACCEPTS(CLI_TARGET_PRESET) | CLI_ACCEPTS(CLI_TARGET_CONFIG) |
          CLI_ACCEPTS(CLI_TARGET_WEIGHTS) | CLI_ACCEPTS(CLI_TARGET_MODEL) |
          CLI_ACCEPTS(CLI_TARGET_TRAIN) | CLI_ACCEPTS(CLI_TARGET_PARALLEL) |
          CLI_ACCEPTS(CLI_TARGET_ZERO) | CLI_ACCEPTS(CLI_TARGET_FSDP) },
    { "pack",
      "Usage: llmem pack --gpu NAME[:N][,...] --jobs FILE [flags]\n"
      "Jobs onto few GPUs with valid MIG layouts (estimate flags go in the jobs file).\n",
      pack_flags, 0 },
};

int cli_usage_command(FILE *out, const char *command)
{
    for (size_t c = 0; c < sizeof usages / sizeof usages[0]; c++) {
        const command_usage *u = &usages[c];
        if (strcmp(u->name, command) != 0)
            continue;
        fputs(u->synopsis, out);
        if (u->own != NULL) {
            fputs("\nFlags:\n", out);
            for (const own_flag *o = u->own; o->name != NULL; o++) {
                cli_flag f = { o->name, NULL, CLI_TARGET_HELP, 0,
                               o->values ? CLI_KIND_TEXT : CLI_KIND_SWITCH, o->values, o->help };
                print_flag(out, &f, "");
            }
        }
        print_groups(out, u->targets, u->own);
        fputs("\nEvery flag also takes the form --flag=value; exit statuses: `llmem help`.\n",
              out);
        return 1;
    }
    return 0;
}
