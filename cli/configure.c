/* SPDX-License-Identifier: MIT */
#include "configure.h"

#include "args.h"
#include "cli.h"
#include "number.h"
#include "opts.h"

#include <stdio.h>
#include <string.h>

/* What the first pass over the flags learns: which model to start from. */
typedef struct model_choice {
    const char *preset;    /* last --model */
    const char *config;    /* last --config */
    const char *weights;   /* last --weights */
    const char *family;    /* last --family */
    const char *arch_flag; /* first architecture flag, for the message */
} model_choice;

/* ASCII case-insensitive equality, as the library matches preset names. */
static int same_folded(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a) !=
            (*b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b))
            return 0;
    return *a == *b;
}

/* The preset's full id, for a name that may be the part after the slash or
 * differ in case (the library matches them all, exact spellings first, but
 * does not say which preset it chose). */
static const char *preset_full_name(const char *name)
{
    for (int exact = 1; exact >= 0; exact--)
        for (size_t i = 0; i < llmem_preset_count(); i++) {
            const char *full = llmem_preset_name(i), *slash = strchr(full, '/');
            const char *part = slash != NULL ? slash + 1 : full;
            if (exact ? strcmp(full, name) == 0 || strcmp(part, name) == 0
                      : same_folded(full, name) || same_folded(part, name))
                return full;
        }
    return name;
}

/* The job flags, which set nothing in the library: read them into req. */
static int job_flag(cli_request *req, const cli_flag *f, const char *v)
{
    int64_t n = 0;
    double d = 0;
    switch (f->target) {
    case CLI_TARGET_CAPACITY:
        if (!cli_parse_size(v, &req->capacity)) {
            cli_error("--capacity '%s': expected " CLI_SIZE_FORMS, v);
            return CLI_EXIT_USAGE;
        }
        break;
    case CLI_TARGET_MARGIN:
        if (cli_parse_real(v, &d) != CLI_NUMBER_OK) {
            cli_error("--margin '%s': a percentage in [0, 90)", v);
            return CLI_EXIT_USAGE;
        }
        if (!cli_margin_permille("margin", v, d, &n))
            return CLI_EXIT_USAGE;
        req->margin_permille = (int)n;
        req->margin_given = 1;
        break;
    case CLI_TARGET_MAX:
        if (strcmp(v, "batch") == 0)
            req->max_key = LLMEM_TRAIN_BATCH;
        else if (strcmp(v, "seq") == 0)
            req->max_key = LLMEM_TRAIN_SEQ;
        else {
            cli_error("--max '%s': expected batch or seq", v);
            return CLI_EXIT_USAGE;
        }
        break;
    case CLI_TARGET_SVG:
        req->svg = v;
        break;
    case CLI_TARGET_TIMELINE:
        req->timeline = 1;
        break;
    case CLI_TARGET_TOP:
    case CLI_TARGET_PLAN:
        if (!cli_opt_count(f->name, v, &n))
            return CLI_EXIT_USAGE;
        if (f->target == CLI_TARGET_TOP && n == 0) {
            /* 0 would print the counts and no layout at all. */
            cli_error("--top '%s': at least 1 (the layouts to print)", v);
            return CLI_EXIT_USAGE;
        }
        if (f->target == CLI_TARGET_TOP) {
            req->top = (uint64_t)n;
        } else {
            req->plan[f->key] = n;
            req->plan_given |= 1u << f->key;
        }
        break;
    default: break;
    }
    return CLI_EXIT_OK;
}

static int first_pass(int argc, char **argv, unsigned accepted, const char *command,
                      cli_request *req, model_choice *mc)
{
    cli_arg_iter it;
    const cli_flag *f;
    const char *v;
    int r;
    cli_args_begin(&it, argc, argv, 0);
    while ((r = cli_args_next(&it, &f, &v)) > 0) {
        if (!(accepted & CLI_ACCEPTS(f->target))) {
            cli_error("--%s is not a flag of `llmem %s` (see `llmem help`)", f->name, command);
            return CLI_EXIT_USAGE;
        }
        if (job_flag(req, f, v) != CLI_EXIT_OK)
            return CLI_EXIT_USAGE;
        switch (f->target) {
        case CLI_TARGET_PRESET: mc->preset = v; break;
        case CLI_TARGET_CONFIG: mc->config = v; break;
        case CLI_TARGET_WEIGHTS: mc->weights = v; break;
        case CLI_TARGET_MODEL:
            if (f->key == LLMEM_MODEL_FAMILY)
                mc->family = v;
            else if (mc->arch_flag == NULL)
                mc->arch_flag = f->name;
            break;
        case CLI_TARGET_JSON: req->json = 1; break;
        case CLI_TARGET_HELP: req->help = 1; break;
        default: break; /* applied by apply() or read by job_flag() */
        }
    }
    return r < 0 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

/* Flags that contradict each other, before anything is read. */
static int check_choice(const model_choice *mc)
{
    if (mc->preset != NULL && mc->config != NULL) {
        cli_error("--model and --config both choose the model: give one of them");
        return CLI_EXIT_USAGE;
    }
    if (mc->preset == NULL && mc->config == NULL && mc->family == NULL) {
        /* Changing the default model's shape silently would answer for a model
         * nobody asked about; so would checking weights against it. */
        if (mc->arch_flag != NULL) {
            cli_error("--%s changes the architecture: start from --model PRESET or --config "
                      "PATH, or give --family NAME for a custom model",
                      mc->arch_flag);
            return CLI_EXIT_USAGE;
        }
        if (mc->weights != NULL) {
            cli_error("--weights checks the weights against a model: add --model PRESET or "
                      "--config PATH (`llmem weights PATH` reads the headers alone)");
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

static int new_model(llmem_ctx *ctx, const model_choice *mc, cli_request *req)
{
    int rc;
    if (mc->config != NULL) {
        /* The file's problems (a missing field, an unknown model_type) are the
         * input's, not the command line's: exit 1 like any unestimable input. */
        if (llmem_model_new_hf_config(ctx, mc->config, &req->model) != LLMEM_OK) {
            cli_error("--config '%s': %s", mc->config, llmem_ctx_error(ctx));
            return CLI_EXIT_ESTIMATE;
        }
        req->model_name = mc->config;
        req->source = CLI_MODEL_CONFIG;
        return CLI_EXIT_OK;
    }
    if (mc->preset != NULL || mc->family == NULL) {
        const char *name = mc->preset ? mc->preset : CLI_DEFAULT_MODEL;
        rc = llmem_model_new_preset(ctx, name, &req->model);
        if (rc != LLMEM_OK) {
            cli_error("--model '%s': %s", name, llmem_ctx_error(ctx));
            return rc == LLMEM_ENOMEM ? CLI_EXIT_ESTIMATE : CLI_EXIT_USAGE;
        }
        req->model_name = preset_full_name(name);
        req->source = mc->preset ? CLI_MODEL_PRESET : CLI_MODEL_DEFAULT;
        return CLI_EXIT_OK;
    }
    /* A custom model: any family will do here, the --family flag sets the real one. */
    rc = llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, &req->model);
    if (rc != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx));
        return CLI_EXIT_ESTIMATE;
    }
    req->model_name = "custom";
    req->source = CLI_MODEL_CUSTOM;
    return CLI_EXIT_OK;
}

static int open_weights(llmem_ctx *ctx, const model_choice *mc, cli_request *req)
{
    if (mc->weights == NULL)
        return CLI_EXIT_OK;
    if (cli_weights_open(ctx, mc->weights, &req->weights) != LLMEM_OK) {
        cli_error("--weights '%s': %s", mc->weights, llmem_ctx_error(ctx));
        return CLI_EXIT_ESTIMATE;
    }
    return CLI_EXIT_OK;
}

/* A number out of range, quoted as typed (the library would show the value
 * strtoll clamped it to). */
static int out_of_range(const cli_flag *f, const char *v)
{
    int64_t lo = 0, hi = 0;
    if (f->kind == CLI_KIND_REAL) {
        cli_error("--%s '%s': too large for a number", f->name, v);
        return CLI_EXIT_USAGE;
    }
    if (f->target == CLI_TARGET_MODEL)
        llmem_model_field_info(f->key, NULL, &lo, &hi);
    else if (f->target == CLI_TARGET_PARALLEL)
        llmem_parallel_field_info(f->key, NULL, &lo, &hi);
    else
        llmem_train_field_info(f->key, NULL, &lo, &hi, NULL);
    cli_error("--%s '%s': out of range [%lld, %lld]", f->name, v, (long long)lo, (long long)hi);
    return CLI_EXIT_USAGE;
}

/* Set a model, training or layout field from the flag's text: numbers are
 * parsed here, the same way for every flag (cli/number.h). */
static int set_field(cli_request *req, const cli_flag *f, const char *v, int *rc)
{
    cli_number parsed = CLI_NUMBER_OK;
    int64_t n = 0;
    double d = 0;
    /* --dropout model: the library takes the name ("the model's own
     * probabilities"); another real field refuses it, naming itself. */
    if (f->kind == CLI_KIND_REAL && f->target == CLI_TARGET_TRAIN && strcmp(v, "model") == 0) {
        *rc = llmem_train_set_str(req->train, f->key, v);
        return CLI_EXIT_OK;
    }
    if (f->kind == CLI_KIND_INT)
        parsed = cli_parse_int(v, &n);
    else if (f->kind == CLI_KIND_REAL)
        parsed = cli_parse_real(v, &d);
    if (parsed == CLI_NUMBER_RANGE)
        return out_of_range(f, v);
    if (parsed == CLI_NUMBER_INVALID) {
        /* whether the field takes "model" too, as the library says (the
         * command fails here, so the probe's setting goes unused) */
        int model_ok = f->kind == CLI_KIND_REAL && f->target == CLI_TARGET_TRAIN &&
                       llmem_train_set_str(req->train, f->key, "model") == LLMEM_OK;
        cli_error("--%s '%s': not %s%s", f->name, v,
                  f->kind == CLI_KIND_INT ? "an integer" : "a decimal number",
                  model_ok ? " or 'model' (the model's own)" : "");
        return CLI_EXIT_USAGE;
    }
    switch (f->target) {
    case CLI_TARGET_MODEL:
        *rc = f->kind == CLI_KIND_INT    ? llmem_model_set_int(req->model, f->key, n)
              : f->kind == CLI_KIND_REAL ? llmem_model_set_double(req->model, f->key, d)
                                         : llmem_model_set_str(req->model, f->key, v);
        break;
    case CLI_TARGET_PARALLEL:
        *rc = f->kind == CLI_KIND_INT ? llmem_parallel_set_int(req->parallel, f->key, n)
                                      : llmem_parallel_set_str(req->parallel, f->key, v);
        break;
    default:
        *rc = f->kind == CLI_KIND_INT    ? llmem_train_set_int(req->train, f->key, n)
              : f->kind == CLI_KIND_REAL ? llmem_train_set_double(req->train, f->key, d)
                                         : llmem_train_set_str(req->train, f->key, v);
        break;
    }
    return CLI_EXIT_OK;
}

/* --batch or --seq as a list ("1,2,4"): each value set (so checked) as the
 * flag alone would be, then kept for the grid; the train keeps the first. A
 * value given twice ("1,2,2", or "2,02") is refused: it would print the same
 * row or column twice, and is more likely a slip than a wish. */
static int set_list(llmem_ctx *ctx, cli_request *req, const cli_flag *f, const char *v)
{
    int axis = f->key == LLMEM_TRAIN_SEQ; /* grid[0]: batches, grid[1]: seqs */
    char item[32];
    for (const char *p = v;; p++) {
        size_t n = strcspn(p, ",");
        int rc = LLMEM_OK, status;
        if (req->ngrid[axis] == CLI_GRID_MAX) {
            cli_error("--%s '%s': at most %d values", f->name, v, CLI_GRID_MAX);
            return CLI_EXIT_USAGE;
        }
        snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), p);
        if (n == 0 || n >= sizeof item) {
            cli_error("--%s '%s': expected numbers separated by commas", f->name, v);
            return CLI_EXIT_USAGE;
        }
        if ((status = set_field(req, f, item, &rc)) != CLI_EXIT_OK)
            return status;
        if (rc != LLMEM_OK) {
            cli_error("--%s '%s': %s", f->name, item, cli_message_body(f, llmem_ctx_error(ctx)));
            return rc == LLMEM_ENOMEM ? CLI_EXIT_ESTIMATE : CLI_EXIT_USAGE;
        }
        int64_t value = 0;
        llmem_train_get_int(req->train, f->key, &value);
        for (int k = 0; k < req->ngrid[axis]; k++)
            if (req->grid[axis][k] == value) {
                cli_error("--%s '%s': %lld is given twice (each value is a %s of the grid)",
                          f->name, v, (long long)value, axis == 0 ? "row" : "column");
                return CLI_EXIT_USAGE;
            }
        req->grid[axis][req->ngrid[axis]++] = value;
        p += n;
        if (*p == '\0')
            break;
    }
    llmem_train_set_int(req->train, f->key, req->grid[axis][0]);
    return CLI_EXIT_OK;
}

static int apply(llmem_ctx *ctx, cli_request *req, const cli_flag *f, const char *v)
{
    int rc = LLMEM_OK, status = CLI_EXIT_OK;
    switch (f->target) {
    case CLI_TARGET_MODEL:
        status = set_field(req, f, v, &rc);
        req->arch_flags++;
        break;
    case CLI_TARGET_TRAIN: {
        int axis = f->key == LLMEM_TRAIN_BATCH ? 0 : f->key == LLMEM_TRAIN_SEQ ? 1 : -1;
        if (axis >= 0)
            req->ngrid[axis] = 0; /* the last --batch (--seq) counts */
        status = axis >= 0 && strchr(v, ',') != NULL ? set_list(ctx, req, f, v)
                                                     : set_field(req, f, v, &rc);
        /* --gpu says where the step runs, not how it trains. */
        if (f->key != LLMEM_TRAIN_GPU)
            req->train_flags++;
        break;
    }
    case CLI_TARGET_PARALLEL:
        status = set_field(req, f, v, &rc);
        req->layout_flags++;
        break;
    case CLI_TARGET_ZERO:
    case CLI_TARGET_FSDP: {
        /* --zero 2 is --sharding zero2; --fsdp full is --sharding fsdp-full. */
        char name[64];
        snprintf(name, sizeof name, "%s%.40s", f->target == CLI_TARGET_ZERO ? "zero" : "fsdp-", v);
        rc = llmem_parallel_set_str(req->parallel, f->key, name);
        if (rc != LLMEM_OK) {
            cli_error("--%s '%s': expected %s", f->name, v, f->metavar);
            return CLI_EXIT_USAGE;
        }
        req->layout_flags++;
        break;
    }
    default: break; /* the model was made first (new_model), the weights are read
                       last (open_weights), the job flags are read (job_flag) */
    }
    if (status != CLI_EXIT_OK)
        return status;
    if (rc != LLMEM_OK) {
        cli_error("--%s '%s': %s", f->name, v, cli_message_body(f, llmem_ctx_error(ctx)));
        return rc == LLMEM_ENOMEM ? CLI_EXIT_ESTIMATE : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Which pass applies a flag: the family first (setting it resets the layout
 * fields that later flags may set), then the optimizer (a Trainer optim name
 * sets the implementation too, which an explicit --optimizer-impl then
 * overrides wherever it stands), then the rest. */
enum { PASS_FAMILY, PASS_OPTIMIZER, PASS_REST, PASSES };

static int pass_of(const cli_flag *f)
{
    if (f->target == CLI_TARGET_MODEL && f->key == LLMEM_MODEL_FAMILY)
        return PASS_FAMILY;
    if (f->target == CLI_TARGET_TRAIN && f->key == LLMEM_TRAIN_OPTIMIZER)
        return PASS_OPTIMIZER;
    return PASS_REST;
}

/* Apply the flags of one pass, in order. */
static int apply_pass(llmem_ctx *ctx, int argc, char **argv, cli_request *req, int pass)
{
    cli_arg_iter it;
    const cli_flag *f;
    const char *v;
    cli_args_begin(&it, argc, argv, 0);
    while (cli_args_next(&it, &f, &v) > 0) {
        if (pass_of(f) != pass)
            continue;
        int status = apply(ctx, req, f, v);
        if (status != CLI_EXIT_OK)
            return status;
    }
    return CLI_EXIT_OK;
}

/* The sharding --sharding, --zero or --fsdp sets, as a value; 0 if unknown. */
static int64_t sharding_of(const cli_flag *f, const char *v)
{
    const cli_flag *sharding = cli_flag_for_field(LLMEM_OBJECT_PARALLEL, LLMEM_PARALLEL_SHARDING);
    char name[64];
    int64_t value = 0;
    const char *choice;
    if (f->target == CLI_TARGET_PARALLEL)
        snprintf(name, sizeof name, "%s", v);
    else
        snprintf(name, sizeof name, "%s%.40s", f->target == CLI_TARGET_ZERO ? "zero" : "fsdp-", v);
    for (size_t i = 0; (choice = cli_flag_choice(sharding, i, &value)) != NULL; i++)
        if (strcmp(choice, name) == 0)
            return value;
    return 0;
}

/* --sharding, --zero and --fsdp set one field: given together they must
 * agree, or the last would silently win over the other. A flag given twice
 * counts by its last value, as every flag does. */
static int check_sharding(int argc, char **argv)
{
    cli_arg_iter it;
    const cli_flag *f, *by[3] = { NULL, NULL, NULL };
    const char *v, *text[3] = { NULL, NULL, NULL };
    int64_t value[3] = { 0, 0, 0 };
    cli_args_begin(&it, argc, argv, 0);
    while (cli_args_next(&it, &f, &v) > 0) {
        int i = f->target == CLI_TARGET_ZERO ? 1 : f->target == CLI_TARGET_FSDP ? 2 : 0;
        if (i == 0 && !(f->target == CLI_TARGET_PARALLEL && f->key == LLMEM_PARALLEL_SHARDING))
            continue;
        by[i] = f;
        text[i] = v;
        value[i] = sharding_of(f, v);
    }
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (by[i] != NULL && by[j] != NULL && value[i] != value[j]) {
                cli_error("--%s %s and --%s %s set the data-parallel sharding differently "
                          "(%s, %s): give one",
                          by[i]->name, text[i], by[j]->name, text[j],
                          llmem_parallel_value_name(LLMEM_PARALLEL_SHARDING, value[i]),
                          llmem_parallel_value_name(LLMEM_PARALLEL_SHARDING, value[j]));
                return CLI_EXIT_USAGE;
            }
    return CLI_EXIT_OK;
}

/* The article's sum is for one GPU and has no timeline: no layout flag, no
 * picture. What it reads of the training setup the library says
 * (llmem_train_unread). */
static int article_reads_target(int target)
{
    return target != CLI_TARGET_PARALLEL && target != CLI_TARGET_ZERO &&
           target != CLI_TARGET_FSDP && target != CLI_TARGET_SVG &&
           target != CLI_TARGET_TIMELINE;
}

/* A model's dropout at one kind of site (--attention-dropout, --hidden-dropout,
 * --embedding-dropout): read only under --dropout model, the default; a
 * probability for every site leaves it unread. */
static int site_dropout(const cli_flag *f)
{
    return f->target == CLI_TARGET_MODEL && (f->key == LLMEM_MODEL_ATTENTION_DROPOUT ||
                                             f->key == LLMEM_MODEL_HIDDEN_DROPOUT ||
                                             f->key == LLMEM_MODEL_EMBEDDING_DROPOUT);
}

/* Why a site's dropout flag goes unread (--dropout P, or a formula that reads
 * no dropout), into why; 0 when it is read. */
static int site_dropout_unread(int argc, char **argv, const cli_request *req, char *why,
                               size_t cap)
{
    const cli_flag *dropout = cli_flag_for_field(LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_DROPOUT), *f;
    const char *unread = llmem_train_unread(req->train, LLMEM_TRAIN_DROPOUT), *v, *given = NULL;
    double p = -1;
    cli_arg_iter it;
    if (unread != NULL) {
        snprintf(why, cap, "%s", unread);
        return 1;
    }
    llmem_train_get_double(req->train, LLMEM_TRAIN_DROPOUT, &p);
    if (p < 0) /* model: each site at the model's own */
        return 0;
    cli_args_begin(&it, argc, argv, 0);
    while (cli_args_next(&it, &f, &v) > 0)
        if (f == dropout)
            given = v; /* the last counts */
    snprintf(why, cap, "needs --dropout model (the default): --dropout %s sets every dropout "
             "site", given != NULL ? given : "");
    return 1;
}

/* Flags whose field only one method, formula or engine reads: given without
 * it they would be accepted and ignored, so they are refused, even at their
 * default (the library refuses only a value set away from it). */
static int check_unread(int argc, char **argv, const cli_request *req)
{
    cli_arg_iter it;
    const cli_flag *f;
    const char *v;
    int64_t formula = 0;
    char site_why[256];
    llmem_train_get_int(req->train, LLMEM_TRAIN_FORMULA, &formula);
    cli_args_begin(&it, argc, argv, 0);
    while (cli_args_next(&it, &f, &v) > 0) {
        /* "--lora-rank 16": the flag as given */
        const char *sep = v != NULL ? " " : "", *given = v != NULL ? v : "";
        if (formula == LLMEM_FORMULA_ARTICLE && !article_reads_target(f->target)) {
            int drawn = f->target == CLI_TARGET_SVG || f->target == CLI_TARGET_TIMELINE;
            cli_error("--%s%s%s needs formula phased (the default): the article's sum %s", f->name,
                      sep, given, drawn ? "has no timeline" : "is for one GPU");
            return CLI_EXIT_USAGE;
        }
        /* the library says which fields a setting leaves unread */
        const char *why = f->target == CLI_TARGET_TRAIN
                              ? llmem_train_unread(req->train, f->key)
                          : f->target == CLI_TARGET_PARALLEL
                              ? llmem_parallel_unread(req->parallel, f->key)
                              : NULL;
        if (why == NULL && site_dropout(f) &&
            site_dropout_unread(argc, argv, req, site_why, sizeof site_why))
            why = site_why;
        /* How routed experts run, on a model (as its flags left it) with none:
         * the library reads the field only where there are experts. */
        int64_t experts = 0;
        if (why == NULL && f->target == CLI_TARGET_TRAIN && f->key == LLMEM_TRAIN_EXPERTS_IMPL &&
            llmem_model_get_int(req->model, LLMEM_MODEL_EXPERTS, &experts) == LLMEM_OK &&
            experts == 0)
            why = "needs a model with routed experts (--experts N): this one has none";
        if (why != NULL) {
            cli_error("--%s%s%s %s", f->name, sep, given, why);
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

/* --gpu: which GPU, and its usable memory as the capacity unless --capacity. */
static void gpu_capacity(cli_request *req)
{
    int64_t id = 0;
    if (llmem_train_get_int(req->train, LLMEM_TRAIN_GPU, &id) != LLMEM_OK || id <= 0)
        return;
    req->has_gpu = 1;
    req->gpu = (size_t)id - 1;
    if (req->capacity == 0 &&
        llmem_gpu_get_u64(req->gpu, LLMEM_GPU_USABLE_BYTES, &req->capacity) == LLMEM_OK)
        req->capacity_from_gpu = 1;
}

int cli_configure(llmem_ctx *ctx, int argc, char **argv, unsigned accepted, const char *command,
                  cli_request *req)
{
    model_choice mc = { NULL, NULL, NULL, NULL, NULL };
    memset(req, 0, sizeof *req);
    req->margin_permille = 50;
    req->top = 10;
    int status = first_pass(argc, argv, accepted, command, req, &mc);
    if (status != CLI_EXIT_OK || req->help)
        return status;
    if ((status = check_choice(&mc)) != CLI_EXIT_OK)
        return status;
    if ((status = new_model(ctx, &mc, req)) != CLI_EXIT_OK)
        return status;
    if (llmem_train_new(ctx, &req->train) != LLMEM_OK ||
        llmem_parallel_new(ctx, &req->parallel) != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx));
        status = CLI_EXIT_ESTIMATE;
    }
    for (int pass = PASS_FAMILY; pass < PASSES && status == CLI_EXIT_OK; pass++)
        status = apply_pass(ctx, argc, argv, req, pass);
    if (status == CLI_EXIT_OK)
        status = check_sharding(argc, argv);
    if (status == CLI_EXIT_OK)
        status = check_unread(argc, argv, req);
    /* Only estimate makes a grid of a list; the other commands would take
     * its first value silently. */
    if (status == CLI_EXIT_OK && cli_is_grid(req) && strcmp(command, "estimate") != 0) {
        cli_error("--%s: a list of values makes a grid of peaks, in `llmem estimate` only; "
                  "`llmem %s` takes one value",
                  req->ngrid[0] > 0 ? "batch" : "seq", command);
        status = CLI_EXIT_USAGE;
    }
    if (status == CLI_EXIT_OK)
        gpu_capacity(req);
    /* Last: a bad flag is reported before a file is read. */
    if (status == CLI_EXIT_OK)
        status = open_weights(ctx, &mc, req);
    if (status != CLI_EXIT_OK)
        cli_request_free(req);
    return status;
}

void cli_request_free(cli_request *req)
{
    cli_weights_close(&req->weights);
    llmem_parallel_free(req->parallel);
    req->parallel = NULL;
    llmem_train_free(req->train);
    llmem_model_free(req->model);
    req->train = NULL;
    req->model = NULL;
}
