/* SPDX-License-Identifier: MIT */
/* `llmem plan --gpus N (--gpu NAME | --capacity SIZE) [model and training
 * flags]`: the layouts of the job that fit, best first, and why the others do
 * not. --gpu names the GPU (its constants in every estimate, its usable
 * memory the capacity unless --capacity). */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "format.h"
#include "gpu_fit.h"
#include "json.h"

#include <string.h>

/* The planner's fields from the flags: --gpus, the capacity, the margin.
 * Without --capacity the planner takes --gpu's usable memory itself (0). */
/* The planner's settings from the flags; a value the planner refuses is a
 * usage error naming its flag (exit 2, as estimate's). */
static int configure_plan(llmem_ctx *ctx, const cli_request *req, llmem_plan *plan)
{
    int rc = llmem_plan_set_int(plan, LLMEM_PLAN_GPU_BYTES,
                                req->capacity_from_gpu ? 0 : (int64_t)req->capacity);
    if (rc == LLMEM_OK)
        rc = llmem_plan_set_int(plan, LLMEM_PLAN_MARGIN_PERMILLE, req->margin_permille);
    for (int key = 1; key < 16 && rc == LLMEM_OK; key++) {
        if (!(req->plan_given & (1u << key)))
            continue;
        rc = llmem_plan_set_int(plan, key, req->plan[key]);
        const cli_flag *f = cli_flag_for_field(LLMEM_OBJECT_PLAN, key);
        if (rc != LLMEM_OK && f != NULL) {
            cli_error("--%s '%lld': %s", f->name, (long long)req->plan[key],
                      cli_message_body(f, llmem_ctx_error(ctx)));
            return CLI_EXIT_USAGE;
        }
    }
    if (rc != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx));
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* A planner's field that the run refuses given the others (gpus-per-node
 * that splits no whole nodes of --gpus), or a training flag the planner
 * decides itself (--batch, --grad-accum with --global-batch, the article's
 * --formula over GPUs): a usage error naming its flag, as a value
 * configure_plan refuses. 0: the error is not about such a field. */
static int plan_input_error(llmem_ctx *ctx, const cli_request *req)
{
    int object = 0, key = 0;
    if (llmem_ctx_error_field(ctx, &object, &key) != LLMEM_OK)
        return 0;
    if (object == LLMEM_OBJECT_TRAIN && (key == LLMEM_TRAIN_BATCH ||
                                         key == LLMEM_TRAIN_GRAD_ACCUM ||
                                         key == LLMEM_TRAIN_FORMULA)) {
        const cli_flag *t = cli_flag_for_field(LLMEM_OBJECT_TRAIN, key);
        if (t == NULL)
            return 0;
        cli_error("--%s: %s", t->name, cli_message_body(t, llmem_ctx_error(ctx)));
        return 1;
    }
    if (object != LLMEM_OBJECT_PLAN)
        return 0;
    const cli_flag *f = cli_flag_for_field(LLMEM_OBJECT_PLAN, key);
    if (f == NULL || !(req->plan_given & (1u << key)))
        return 0;
    cli_error("--%s '%lld': %s", f->name, (long long)req->plan[key],
              cli_message_body(f, llmem_ctx_error(ctx)));
    return 1;
}

typedef struct plan_row {
    int64_t layout[LLMEM_PARALLEL_VIRTUAL_STAGES + 1];
    uint64_t micro_batch, micro_batches, grad_ckpt, peak, headroom, comm, bubble, tokens;
} plan_row;

static int read_row(const llmem_plan *plan, size_t i, llmem_parallel *layout, plan_row *row)
{
    static const int keys[] = { LLMEM_PLAN_MICRO_BATCH, LLMEM_PLAN_MICRO_BATCHES,
                                LLMEM_PLAN_GRAD_CKPT, LLMEM_PLAN_PEAK_DEVICE, LLMEM_PLAN_HEADROOM,
                                LLMEM_PLAN_COMM_BYTES, LLMEM_PLAN_BUBBLE_PERMILLE,
                                LLMEM_PLAN_TOKENS_PER_SECOND };
    uint64_t *outs[] = { &row->micro_batch, &row->micro_batches, &row->grad_ckpt, &row->peak,
                         &row->headroom, &row->comm, &row->bubble, &row->tokens };
    int rc = llmem_plan_result_layout(plan, i, layout);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && rc == LLMEM_OK; k++)
        rc = llmem_plan_result_get_u64(plan, i, keys[k], outs[k]);
    for (int key = LLMEM_PARALLEL_DP; key <= LLMEM_PARALLEL_VIRTUAL_STAGES && rc == LLMEM_OK; key++)
        rc = llmem_parallel_get_int(layout, key, &row->layout[key]);
    return rc;
}

static const char *name_of(int key, int64_t v)
{
    return llmem_parallel_value_name(key, v);
}

/* The capacity's verdict on the best layout's peak (--gpu's usable memory or --capacity). */
static int gpu_verdict(const cli_request *req, const llmem_plan *plan, cli_gpu_fit *g)
{
    uint64_t peak = 0;
    int found = llmem_plan_result_count(plan) > 0 &&
                llmem_plan_result_get_u64(plan, 0, LLMEM_PLAN_PEAK_DEVICE, &peak) == LLMEM_OK;
    return cli_gpu_fit_of(req, found, peak, g);
}

/* The largest micro-batch the plan tries when the global batch leaves it
 * free (0 when a global batch fixes the candidates): a row at it may fit a
 * larger one. */
static uint64_t micro_batch_cap(const llmem_plan *plan)
{
    int64_t max = 0, global = 0;
    llmem_plan_get_int(plan, LLMEM_PLAN_MAX_MICRO_BATCH, &max);
    llmem_plan_get_int(plan, LLMEM_PLAN_GLOBAL_BATCH, &global);
    return global == 0 ? (uint64_t)max : 0;
}

static void print_json(const cli_request *req, const llmem_plan *plan, llmem_parallel *layout,
                       uint64_t top)
{
    json_writer w;
    plan_row row;
    cli_gpu_fit g;
    json_begin(&w, stdout);
    json_object_begin(&w, NULL);
    if (gpu_verdict(req, plan, &g))
        cli_gpu_fit_json(&w, &g);
    json_array_begin(&w, "layouts");
    for (size_t i = 0; i < llmem_plan_result_count(plan) && i < top; i++) {
        if (read_row(plan, i, layout, &row) != LLMEM_OK)
            break;
        json_object_begin(&w, NULL);
        static const int ints[] = { LLMEM_PARALLEL_DP, LLMEM_PARALLEL_TP, LLMEM_PARALLEL_PP,
                                    LLMEM_PARALLEL_EP, LLMEM_PARALLEL_CP, LLMEM_PARALLEL_SP };
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
            const char *name = NULL;
            llmem_parallel_field_info(ints[k], &name, NULL, NULL);
            json_i64(&w, name, row.layout[ints[k]]);
        }
        json_string(&w, "sharding", name_of(LLMEM_PARALLEL_SHARDING, row.layout[LLMEM_PARALLEL_SHARDING]));
        json_string(&w, "offload", name_of(LLMEM_PARALLEL_OFFLOAD, row.layout[LLMEM_PARALLEL_OFFLOAD]));
        json_string(&w, "grad_ckpt", llmem_train_value_name(LLMEM_TRAIN_GRAD_CKPT, (int64_t)row.grad_ckpt));
        json_u64(&w, "micro_batch", row.micro_batch);
        json_bool(&w, "micro_batch_capped", row.micro_batch == micro_batch_cap(plan));
        json_u64(&w, "micro_batches", row.micro_batches);
        json_u64(&w, "peak_device_bytes", row.peak);
        json_u64(&w, "headroom_bytes", row.headroom);
        json_u64(&w, "comm_bytes_per_step", row.comm);
        json_real(&w, "bubble", (double)row.bubble / 1000.0);
        json_u64(&w, "tokens_per_second", row.tokens);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_u64(&w, "layouts_fitting", llmem_plan_result_count(plan));
    json_array_begin(&w, "rejected");
    for (size_t i = 0; i < llmem_plan_rejected_count(plan); i++) {
        const char *reason = NULL, *example = NULL;
        uint64_t n = 0;
        llmem_plan_rejected(plan, i, &reason, &n, &example);
        json_object_begin(&w, NULL);
        json_string(&w, "reason", reason);
        json_u64(&w, "layouts", n);
        json_string(&w, "example", example);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    json_end(&w);
}

/* The table's columns: their headings and the widths they keep at least
 * (a value wider than that widens its column: dp reaches 2^20, a peak
 * "12345.67 GiB (13255.75 GB)", a micro-batch "65536*x1048576"). */
enum { PLAN_COLUMNS = 14 };
static const struct {
    const char *heading;
    int width;
} columns[PLAN_COLUMNS] = {
    { "dp", 4 },        { "tp", 3 },       { "pp", 3 },     { "cp", 3 },
    { "ep", 3 },        { "sp", 3 },       { "sharding", 12 }, { "offload", 8 },
    { "ckpt", 5 },      { "mb x m", 6 },   { "device peak", 22 }, { "headroom", 22 },
    { "bubble", 6 },    { "tokens/s", 0 },
};

/* One row of the table as text, a cell a column. */
static void row_cells(const plan_row *row, uint64_t cap, char cells[PLAN_COLUMNS][CLI_NUMBER_CAP])
{
    static const int ints[] = { LLMEM_PARALLEL_DP, LLMEM_PARALLEL_TP, LLMEM_PARALLEL_PP,
                                LLMEM_PARALLEL_CP, LLMEM_PARALLEL_EP, LLMEM_PARALLEL_SP };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        snprintf(cells[k], CLI_NUMBER_CAP, "%lld", (long long)row->layout[ints[k]]);
    snprintf(cells[6], CLI_NUMBER_CAP, "%s",
             name_of(LLMEM_PARALLEL_SHARDING, row->layout[LLMEM_PARALLEL_SHARDING]));
    snprintf(cells[7], CLI_NUMBER_CAP, "%s",
             name_of(LLMEM_PARALLEL_OFFLOAD, row->layout[LLMEM_PARALLEL_OFFLOAD]));
    snprintf(cells[8], CLI_NUMBER_CAP, "%s",
             llmem_train_value_name(LLMEM_TRAIN_GRAD_CKPT, (int64_t)row->grad_ckpt));
    snprintf(cells[9], CLI_NUMBER_CAP, "%llu%sx%llu", (unsigned long long)row->micro_batch,
             row->micro_batch == cap ? "*" : "", (unsigned long long)row->micro_batches);
    cli_format_bytes(row->peak, cells[10], CLI_NUMBER_CAP);
    cli_format_bytes(row->headroom, cells[11], CLI_NUMBER_CAP);
    snprintf(cells[12], CLI_NUMBER_CAP, "%.3f", (double)row->bubble / 1000.0);
    snprintf(cells[13], CLI_NUMBER_CAP, "%llu", (unsigned long long)row->tokens);
}

static void print_cells(const char *const *cells, const int *width)
{
    printf(" ");
    for (int c = 0; c < PLAN_COLUMNS - 1; c++)
        printf(" %-*s", width[c], cells[c]);
    printf(" %s\n", cells[PLAN_COLUMNS - 1]);
}

static void print_text(const cli_request *req, const llmem_plan *plan, llmem_parallel *layout,
                       uint64_t top)
{
    plan_row row;
    cli_gpu_fit g;
    size_t n = llmem_plan_result_count(plan), shown = top < n ? (size_t)top : n;
    uint64_t cap = micro_batch_cap(plan);
    int capped = 0, width[PLAN_COLUMNS];
    char cells[PLAN_COLUMNS][CLI_NUMBER_CAP];
    const char *text[PLAN_COLUMNS];
    if (gpu_verdict(req, plan, &g)) {
        cli_gpu_fit_text(stdout, &g, "the best layout's device peak");
        putchar('\n');
    }
    if (n == 0) {
        printf("0 layouts fit (the rejections below say why)\n");
    } else {
        printf("%zu layout%s fit%s; the best %zu by the throughput proxy "
               "(docs/partitioning.md):\n\n",
               n, n == 1 ? "" : "s", n == 1 ? "s" : "", shown);
        /* Two passes over the rows shown: the widths, then the rows. */
        for (int c = 0; c < PLAN_COLUMNS; c++) {
            int h = (int)strlen(columns[c].heading);
            width[c] = h > columns[c].width ? h : columns[c].width;
            text[c] = columns[c].heading;
        }
        for (size_t i = 0; i < shown && read_row(plan, i, layout, &row) == LLMEM_OK; i++) {
            row_cells(&row, cap, cells);
            for (int c = 0; c < PLAN_COLUMNS; c++) {
                int w = (int)strlen(cells[c]);
                width[c] = w > width[c] ? w : width[c];
            }
        }
        print_cells(text, width);
        for (int c = 0; c < PLAN_COLUMNS; c++)
            text[c] = cells[c];
    }
    for (size_t i = 0; i < shown; i++) {
        if (read_row(plan, i, layout, &row) != LLMEM_OK)
            break;
        capped |= row.micro_batch == cap;
        row_cells(&row, cap, cells);
        print_cells(text, width);
    }
    if (capped)
        printf("\n* the largest micro-batch tried (--max-micro-batch %llu): a larger one may "
               "fit\n",
               (unsigned long long)cap);
    if (llmem_plan_rejected_count(plan) > 0)
        printf("\nRejected:\n");
    for (size_t i = 0; i < llmem_plan_rejected_count(plan); i++) {
        const char *reason = NULL, *example = NULL;
        uint64_t k = 0;
        llmem_plan_rejected(plan, i, &reason, &k, &example);
        printf("  %llu layout%s: %s%s%s\n", (unsigned long long)k, k == 1 ? "" : "s", reason,
               example[0] ? ": " : "", example);
    }
}

/* No layout fits: the output lists why each was rejected; the exit status
 * tells a script that asked which layout fits that none does. */
static int plan_verdict(const cli_request *req, const llmem_plan *plan)
{
    char room[3 * CLI_NUMBER_CAP];
    if (llmem_plan_result_count(plan) > 0)
        return CLI_EXIT_OK;
    cli_capacity_text(req, room, sizeof room);
    cli_error("no layout of %lld GPU%s fits %s: the output lists why (Rejected)",
              (long long)req->plan[LLMEM_PLAN_GPUS], req->plan[LLMEM_PLAN_GPUS] == 1 ? "" : "s",
              room);
    return CLI_EXIT_CHECK;
}

int cli_cmd_plan(int argc, char **argv)
{
    llmem_ctx *ctx = NULL;
    llmem_plan *plan = NULL;
    llmem_parallel *layout = NULL;
    cli_request req;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
        cli_error("cannot create a library context (out of memory)");
        return CLI_EXIT_ESTIMATE;
    }
    unsigned accepted = CLI_ACCEPTS(CLI_TARGET_PRESET) | CLI_ACCEPTS(CLI_TARGET_CONFIG) |
                        CLI_ACCEPTS(CLI_TARGET_MODEL) | CLI_ACCEPTS(CLI_TARGET_TRAIN) |
                        CLI_ACCEPTS(CLI_TARGET_PLAN) | CLI_ACCEPTS(CLI_TARGET_CAPACITY) |
                        CLI_ACCEPTS(CLI_TARGET_MARGIN) | CLI_ACCEPTS(CLI_TARGET_TOP) |
                        CLI_ACCEPTS(CLI_TARGET_JSON) | CLI_ACCEPTS(CLI_TARGET_HELP);
    int status = cli_configure(ctx, argc, argv, accepted, "plan", &req);
    if (status == CLI_EXIT_OK && req.help) {
        cli_usage_command(stdout, "plan");
    } else if (status == CLI_EXIT_OK && (req.capacity == 0 || !(req.plan_given & (1u << LLMEM_PLAN_GPUS)))) {
        cli_error("plan needs --gpus N and --gpu NAME or --capacity SIZE (the memory of one GPU)");
        status = CLI_EXIT_USAGE;
    } else if (status == CLI_EXIT_OK) {
        int rc = llmem_plan_new(ctx, &plan);
        if (rc == LLMEM_OK)
            rc = llmem_parallel_new(ctx, &layout);
        if (rc == LLMEM_OK)
            status = configure_plan(ctx, &req, plan);
        if (rc == LLMEM_OK && status == CLI_EXIT_OK)
            rc = llmem_plan_run(plan, req.model, req.train);
        if (status != CLI_EXIT_OK) {
            /* reported by configure_plan */
        } else if (rc != LLMEM_OK && plan_input_error(ctx, &req)) {
            status = CLI_EXIT_USAGE;
        } else if (rc != LLMEM_OK) {
            cli_error("%s", llmem_ctx_error(ctx)[0] ? llmem_ctx_error(ctx) : llmem_status_str(rc));
            status = CLI_EXIT_ESTIMATE;
        } else {
            if (req.json)
                print_json(&req, plan, layout, req.top);
            else
                print_text(&req, plan, layout, req.top);
            status = plan_verdict(&req, plan);
        }
    }
    llmem_parallel_free(layout);
    llmem_plan_free(plan);
    cli_request_free(&req);
    llmem_ctx_free(ctx);
    return status;
}
