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

void cli_usage(FILE *out)
{
    llmem_ctx *ctx = NULL;
    cli_request defaults;
    char default_text[256];
    memset(&defaults, 0, sizeof defaults);
    if (llmem_ctx_new(&ctx, NULL) == LLMEM_OK &&
        (llmem_train_new(ctx, &defaults.train) != LLMEM_OK ||
         llmem_parallel_new(ctx, &defaults.parallel) != LLMEM_OK))
        defaults.train = NULL;

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
          "  gpus [--mig] [--json]       the GPU catalog; --mig: every MIG profile\n"
          "  fit --gpu NAME [flags]      the MIG slices and whole GPU that hold the estimate\n"
          "                              of [flags] (model, training and layout flags: every\n"
          "                              rank), or of --bytes SIZE (as --capacity takes it)\n"
          "                              [--bytes-level device|reserved];\n"
          "                              --margin P (percent kept free, default 5),\n"
          "                              --min-compute N, --driver N (the NVIDIA driver's\n"
          "                              branch, 535 or 535.129.03: its profiles and names;\n"
          "                              default: the newest), --json\n"
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
          "  help, --help                this help\n",
          out);
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        fprintf(out, "\n%s\n", groups[g].title);
        for (size_t i = 0; i < cli_flag_count(); i++) {
            const cli_flag *f = cli_flag_at(i);
            if (f->target < groups[g].first || f->target > groups[g].last)
                continue;
            default_of(ctx, &defaults, f, default_text, sizeof default_text);
            print_flag(out, f, default_text);
        }
    }
    fputs("\nEvery flag also takes the form --flag=value.\n"
          "Exit status: 0 success, 1 the inputs cannot be estimated, 2 a usage error,\n"
          "3 the answer is printed but a check it makes failed: the --weights differ from\n"
          "the model; asked about a capacity (--gpu or --capacity), the estimate does not\n"
          "fit it, no point of a --batch or --seq list does, `llmem plan` finds no layout\n"
          "or `llmem fit` no option; `llmem pack` left jobs unplaced.\n",
          out);
    cli_request_free(&defaults);
    llmem_ctx_free(ctx);
}
