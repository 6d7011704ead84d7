/* SPDX-License-Identifier: MIT */
/* `llmem estimate --json`: one object, every byte count an integer. */
#include "report.h"

#include "args.h"
#include "gpu_fit.h"
#include "json.h"
#include "settings.h"
#include "weights.h"

#include <string.h>

static const char *const source_names[] = {
    [CLI_MODEL_DEFAULT] = "default",
    [CLI_MODEL_PRESET] = "preset",
    [CLI_MODEL_CUSTOM] = "custom",
    [CLI_MODEL_CONFIG] = "config",
};

static int echoed(const cli_flag *f, cli_target target)
{
    return f->json != NULL && f->target == target;
}

/* Every echoed setting must read before output starts, so that a failure
 * prints nothing. */
static int check_settings(const cli_request *req)
{
    cli_setting s;
    for (size_t i = 0; i < cli_flag_count(); i++) {
        const cli_flag *f = cli_flag_at(i);
        if (echoed(f, CLI_TARGET_MODEL) || echoed(f, CLI_TARGET_TRAIN) ||
            echoed(f, CLI_TARGET_PARALLEL)) {
            int rc = cli_setting_read(req, f, &s);
            if (rc != LLMEM_OK)
                return rc;
        }
    }
    return LLMEM_OK;
}

/* The fields of one target, each under its JSON key, typed by its kind. */
static void write_settings(json_writer *w, const cli_request *req,
                           cli_target target)
{
    cli_setting s;
    for (size_t i = 0; i < cli_flag_count(); i++) {
        const cli_flag *f = cli_flag_at(i);
        if (!echoed(f, target) || cli_setting_read(req, f, &s) != LLMEM_OK)
            continue;
        int axis = f->target != CLI_TARGET_TRAIN  ? -1
                   : f->key == LLMEM_TRAIN_BATCH ? 0
                   : f->key == LLMEM_TRAIN_SEQ   ? 1
                                                 : -1;
        if (axis >= 0 && req->ngrid[axis] > 0) { /* a grid's list */
            json_array_begin(w, f->json);
            for (int k = 0; k < req->ngrid[axis]; k++)
                json_i64(w, NULL, req->grid[axis][k]);
            json_array_end(w);
            continue;
        }
        switch (f->kind) {
        case CLI_KIND_NAME:
        case CLI_KIND_NAMES: json_string(w, f->json, s.text); break;
        case CLI_KIND_REAL:
            /* An unset dropout reads -1, "each site at the model's own": no
             * value to show but null; the sites' own are under "architecture". */
            if (s.d < 0)
                json_null(w, f->json);
            else
                json_real(w, f->json, s.d);
            break;
        case CLI_KIND_INT:
        case CLI_KIND_TEXT:
        case CLI_KIND_SWITCH: json_i64(w, f->json, s.i); break;
        }
    }
}

static void write_terms(json_writer *w, const cli_report *r, const llmem_term *const *terms)
{
    json_object_begin(w, "terms");
    for (int i = 0; i < CLI_TERMS; i++)
        json_u64(w, llmem_term_name(r->term_kind[i]), llmem_term_bytes_at_peak(terms[i]));
    json_object_end(w);

    json_object_begin(w, "terms_max");
    for (int i = 0; i < CLI_TERMS; i++)
        json_u64(w, llmem_term_name(r->term_kind[i]), llmem_term_max_bytes(terms[i]));
    json_object_end(w);

    json_object_begin(w, "components");
    for (int i = 0; i < CLI_TERMS; i++) {
        const llmem_term *t = terms[i];
        json_object_begin(w, llmem_term_name(r->term_kind[i]));
        for (size_t c = 0; c < llmem_term_component_count(t); c++) {
            const char *name = NULL;
            uint64_t bytes = 0;
            if (llmem_term_component(t, c, &name, &bytes) == LLMEM_OK)
                json_u64(w, name, bytes);
        }
        json_object_end(w);
    }
    json_object_end(w);
}

/* The ranks whose memory differs (pipeline stages), the most loaded marked. */
static void write_ranks(json_writer *w, const cli_report *r, int phased)
{
    json_array_begin(w, "ranks");
    for (size_t k = 0; k < r->nranks; k++) {
        const cli_rank *rk = &r->rank[k];
        json_object_begin(w, NULL);
        json_u64(w, "stage", rk->stage);
        json_u64(w, "stages", rk->stages);
        json_u64(w, "layer_first", rk->layer_first);
        json_u64(w, "layers", rk->layers);
        json_u64(w, "chunks", rk->chunks);
        json_u64(w, "chunk_stride", rk->chunk_stride);
        json_u64(w, "gpus", rk->gpus);
        json_real(w, "micro_batches_in_flight", (double)rk->in_flight_x1000 / 1000.0);
        json_bool(w, "most_loaded", k == r->peak_rank);
        json_u64(w, "peak_allocated_bytes", rk->peak_allocated);
        json_u64(w, "peak_reserved_bytes", rk->peak_reserved);
        json_u64(w, "peak_device_bytes", rk->peak_device);
        json_u64(w, "host_bytes", rk->host);
        json_string(w, "peak_phase", phased ? llmem_phase_name((int)rk->peak_phase) : "none");
        json_object_begin(w, "phases");
        for (int i = 0; phased && i < CLI_PHASES; i++)
            json_u64(w, llmem_phase_name(r->phase[i]), rk->phase_bytes[i]);
        json_object_end(w);
        write_terms(w, r, rk->term);
        json_object_end(w);
    }
    json_array_end(w);
}

/* What a report and a grid begin with: the model, its parameters, the
 * weights read, the training settings. */
static void write_job(json_writer *w, const cli_request *req, const cli_report *r)
{
    json_string(w, "model", req->model_name);
    json_string(w, "model_source", source_names[req->source]);
    json_bool(w, "model_modified",
              (req->source == CLI_MODEL_PRESET || req->source == CLI_MODEL_CONFIG) &&
                  req->arch_flags > 0);
    json_object_begin(w, "architecture");
    write_settings(w, req, CLI_TARGET_MODEL);
    json_object_end(w);
    json_u64(w, "params_total", r->params_total);
    json_u64(w, "params_trainable", r->params_trainable);
    json_u64(w, "params_active", r->params_active);
    if (req->weights.path != NULL)
        cli_weights_json(w, "weights", &req->weights, &r->params_total);
    write_settings(w, req, CLI_TARGET_TRAIN);
}

int cli_report_json(FILE *out, const cli_request *req, const cli_report *r)
{
    json_writer w;
    int rc = check_settings(req);
    if (rc != LLMEM_OK)
        return rc;
    /* The article's formula sums the terms: there is no phase, and no phase peaks. */
    int phased = r->peak_phase != 0;

    json_begin(&w, out);
    json_object_begin(&w, NULL);
    write_job(&w, req, r);

    write_terms(&w, r, r->term);
    json_object_begin(&w, "phases");
    for (int i = 0; phased && i < CLI_PHASES; i++)
        json_u64(&w, llmem_phase_name(r->phase[i]), r->phase_bytes[i]);
    json_object_end(&w);
    json_u64(&w, "peak_allocated_bytes", r->peak_allocated);
    json_u64(&w, "peak_reserved_bytes", r->peak_reserved);
    json_u64(&w, "peak_device_bytes", r->peak_device);
    json_string(&w, "peak_phase", phased ? llmem_phase_name(r->peak_phase) : "none");
    json_object_begin(&w, "layout");
    json_u64(&w, "gpus", llmem_parallel_gpus(req->parallel));
    write_settings(&w, req, CLI_TARGET_PARALLEL);
    json_object_end(&w);
    write_ranks(&w, r, phased);
    if (req->timeline) {
        cli_timeline_json(&w, "timeline", &r->timeline);
        json_u64(&w, "timeline_peak", r->timeline.peak);
    }
    cli_gpu_fit g;
    if (cli_gpu_fit_of(req, 1, r->peak_device, &g))
        cli_gpu_fit_json(&w, &g);
    if (req->max_key != 0) {
        json_object_begin(&w, "max");
        json_string(&w, "field", req->max_key == LLMEM_TRAIN_BATCH ? "batch" : "seq");
        json_i64(&w, "value", req->max_value);
        json_bool(&w, "fits", req->max_value > 0);
        /* what stopped the search: the budget, or a bound memory did not reach */
        json_string(&w, "limited_by", req->max_limited_by);
        json_u64(&w, "capacity_bytes", req->capacity);
        json_u64(&w, "usable_bytes", req->capacity);
        json_u64(&w, "margin_bytes", req->capacity - req->budget);
        json_u64(&w, "budget_bytes", req->budget);
        /* budget - the report's peak: negative (short by) when nothing fits
         * and the report describes the smallest value the layout takes */
        json_i64(&w, "headroom_bytes", cli_headroom(req->budget, r->peak_device));
        if (req->max_value > 0) {
            json_null(&w, "smallest_value");
            json_null(&w, "smallest_peak_device_bytes");
        } else {
            json_i64(&w, "smallest_value", req->max_smallest);
            json_u64(&w, "smallest_peak_device_bytes", r->peak_device);
        }
        json_object_end(&w);
    }
    json_string(&w, "version", llmem_version_string());
    json_object_end(&w);
    json_end(&w);
    return LLMEM_OK;
}

/* A grid: the job, the layout, the capacity's verdict on the grid's smallest
 * peak (`gpu`, as a single estimate's: whether any point fits), and each
 * point's device peak (batch by batch, seq by seq within), with whether it
 * fits the budget (the capacity less the margin) and its headroom when there
 * is a capacity. */
int cli_grid_json(FILE *out, const cli_request *req, const cli_report *r, const cli_grid *g)
{
    json_writer w;
    cli_gpu_fit fit;
    int rc = check_settings(req);
    if (rc != LLMEM_OK)
        return rc;
    size_t n = g->batches * g->seqs, least = 0;
    for (size_t i = 1; i < n; i++)
        if (g->peak[i] < g->peak[least])
            least = i;
    int capacity = cli_gpu_fit_of(req, 1, g->peak[least], &fit);
    json_begin(&w, out);
    json_object_begin(&w, NULL);
    write_job(&w, req, r);
    json_object_begin(&w, "layout");
    json_u64(&w, "gpus", llmem_parallel_gpus(req->parallel));
    write_settings(&w, req, CLI_TARGET_PARALLEL);
    json_object_end(&w);
    if (capacity)
        cli_gpu_fit_json(&w, &fit);
    json_array_begin(&w, "grid");
    for (size_t i = 0; i < g->batches; i++)
        for (size_t j = 0; j < g->seqs; j++) {
            uint64_t peak = g->peak[i * g->seqs + j];
            json_object_begin(&w, NULL);
            json_i64(&w, "batch", g->batch[i]);
            json_i64(&w, "seq", g->seq[j]);
            json_u64(&w, "peak_device_bytes", peak);
            if (capacity) {
                json_bool(&w, "fits", peak <= fit.budget);
                json_i64(&w, "headroom_bytes", cli_headroom(fit.budget, peak));
            }
            json_object_end(&w);
        }
    json_array_end(&w);
    json_string(&w, "version", llmem_version_string());
    json_object_end(&w);
    json_end(&w);
    return LLMEM_OK;
}
