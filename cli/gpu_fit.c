/* SPDX-License-Identifier: MIT */
#include "gpu_fit.h"

#include "format.h"

#include <llmem.h>
#include <string.h>

int64_t cli_headroom(uint64_t budget, uint64_t peak)
{
    if (budget >= peak)
        return budget - peak > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(budget - peak);
    return peak - budget > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)(peak - budget);
}

int cli_gpu_fit_of(const cli_request *req, int has_peak, uint64_t peak, cli_gpu_fit *out)
{
    memset(out, 0, sizeof *out);
    if (req->capacity == 0)
        return 0;
    if (req->has_gpu) {
        out->named = 1;
        out->name = llmem_gpu_name(req->gpu);
        out->device_name = llmem_gpu_get_str(req->gpu, LLMEM_GPU_DEVICE_NAME);
        out->arch = llmem_gpu_get_str(req->gpu, LLMEM_GPU_ARCH);
        llmem_gpu_get_u64(req->gpu, LLMEM_GPU_USABLE_BYTES, &out->gpu_usable);
        llmem_gpu_get_u64(req->gpu, LLMEM_GPU_CONTEXT_BYTES, &out->context);
        llmem_gpu_get_u64(req->gpu, LLMEM_GPU_WORKSPACE_BYTES, &out->workspace);
    }
    out->usable = req->capacity;
    out->capacity_from_gpu = req->capacity_from_gpu;
    out->margin_permille = req->margin_permille;
    out->budget = cli_usable(out->usable, out->margin_permille);
    out->margin = out->usable - out->budget;
    out->has_peak = has_peak;
    out->peak = peak;
    out->fits = has_peak && peak <= out->budget;
    out->headroom = cli_headroom(out->budget, peak);
    return 1;
}

/* "79.18 GiB", "287.00 MiB", "8.12 MiB", "512.00 KiB". */
static void size_text(uint64_t bytes, char *buf, size_t cap)
{
    cli_format_size(bytes, 2, buf, cap);
}

void cli_gpu_fit_text(FILE *out, const cli_gpu_fit *g, const char *what)
{
    char gpu_usable[CLI_NUMBER_CAP], context[CLI_NUMBER_CAP], workspace[CLI_NUMBER_CAP],
        usable[CLI_NUMBER_CAP], budget[CLI_NUMBER_CAP], against[3 * CLI_NUMBER_CAP + 96],
        peak[CLI_NUMBER_CAP], room[CLI_NUMBER_CAP];
    uint64_t room_bytes = g->headroom < 0 ? (uint64_t)-(g->headroom + 1) + 1 : (uint64_t)g->headroom;
    double share = g->usable ? 100.0 * (double)room_bytes / (double)g->usable : 0;
    if (g->named) {
        size_text(g->gpu_usable, gpu_usable, sizeof gpu_usable);
        size_text(g->context, context, sizeof context);
        size_text(g->workspace, workspace, sizeof workspace);
        /* Two workspaces: the forward's thread's and autograd's (lib/estimate/allocator.c). */
        fprintf(out, "%-*s%s (%s, %s): %s usable, CUDA context %s, cuBLAS workspaces 2 x %s\n",
                CLI_LABEL_WIDTH, "GPU", g->name, g->device_name, g->arch, gpu_usable, context,
                workspace);
    }
    /* "39.39 GiB usable less 5% kept free (37.42 GiB)": the budget the peak must fit. */
    size_text(g->usable, usable, sizeof usable);
    size_text(g->budget, budget, sizeof budget);
    if (g->capacity_from_gpu)
        snprintf(against, sizeof against, "%s usable less %g%% kept free (%s)", usable,
                 g->margin_permille / 10.0, budget);
    else if (g->named)
        snprintf(against, sizeof against,
                 "%s (--capacity, not the GPU's %s) less %g%% kept free (%s)", usable,
                 gpu_usable, g->margin_permille / 10.0, budget);
    else
        snprintf(against, sizeof against, "%s (--capacity) less %g%% kept free (%s)", usable,
                 g->margin_permille / 10.0, budget);
    if (!g->has_peak) {
        fprintf(out, "%-*sno: no layout fits %s\n", CLI_LABEL_WIDTH, "Fits", against);
        return;
    }
    size_text(g->peak, peak, sizeof peak);
    size_text(room_bytes, room, sizeof room);
    if (g->fits)
        fprintf(out, "%-*syes: %s %s of %s, %s (%.1f%%) to spare\n", CLI_LABEL_WIDTH, "Fits",
                what, peak, against, room, share);
    else
        fprintf(out, "%-*sno: %s %s of %s, short by %s (%.1f%%)\n", CLI_LABEL_WIDTH, "Fits",
                what, peak, against, room, share);
}

void cli_gpu_fit_json(json_writer *w, const cli_gpu_fit *g)
{
    json_object_begin(w, "gpu");
    json_string(w, "name", g->named ? g->name : NULL);
    json_string(w, "device_name", g->named ? g->device_name : NULL);
    json_string(w, "arch", g->named ? g->arch : NULL);
    if (g->named) {
        json_u64(w, "gpu_usable_bytes", g->gpu_usable);
        json_u64(w, "context_bytes", g->context);
        json_u64(w, "workspace_bytes", g->workspace);
    } else {
        json_null(w, "gpu_usable_bytes");
        json_null(w, "context_bytes");
        json_null(w, "workspace_bytes");
    }
    json_u64(w, "usable_bytes", g->usable);
    json_u64(w, "capacity_bytes", g->usable);
    json_string(w, "capacity_source", g->capacity_from_gpu ? "gpu" : "capacity");
    json_i64(w, "margin_permille", g->margin_permille);
    json_u64(w, "margin_bytes", g->margin);
    json_u64(w, "budget_bytes", g->budget);
    json_bool(w, "fits", g->fits);
    if (g->has_peak)
        json_i64(w, "headroom_bytes", g->headroom);
    else
        json_null(w, "headroom_bytes");
    json_object_end(w);
}

void cli_capacity_text(const cli_request *req, char *buf, size_t cap)
{
    char usable[CLI_NUMBER_CAP], capacity[CLI_NUMBER_CAP];
    cli_format_gib(cli_usable(req->capacity, req->margin_permille), usable, sizeof usable);
    cli_format_gib(req->capacity, capacity, sizeof capacity);
    if (req->capacity_from_gpu)
        snprintf(buf, cap, "%s (%s's %s usable less %g%%)", usable, llmem_gpu_name(req->gpu),
                 capacity, req->margin_permille / 10.0);
    else
        snprintf(buf, cap, "%s (--capacity %s less %g%%)", usable, capacity,
                 req->margin_permille / 10.0);
}
