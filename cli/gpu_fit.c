/* SPDX-License-Identifier: MIT */
#include "gpu_fit.h"

#include "format.h"

#include <llmem.h>
#include <string.h>

int cli_gpu_fit_of(const cli_request *req, int has_peak, uint64_t peak, cli_gpu_fit *out)
{
    memset(out, 0, sizeof *out);
    if (!req->has_gpu)
        return 0;
    out->name = llmem_gpu_name(req->gpu);
    out->device_name = llmem_gpu_get_str(req->gpu, LLMEM_GPU_DEVICE_NAME);
    out->arch = llmem_gpu_get_str(req->gpu, LLMEM_GPU_ARCH);
    llmem_gpu_get_u64(req->gpu, LLMEM_GPU_USABLE_BYTES, &out->usable);
    llmem_gpu_get_u64(req->gpu, LLMEM_GPU_CONTEXT_BYTES, &out->context);
    llmem_gpu_get_u64(req->gpu, LLMEM_GPU_WORKSPACE_BYTES, &out->workspace);
    out->capacity = req->capacity;
    out->capacity_from_gpu = req->capacity_from_gpu;
    out->margin_permille = req->margin_permille;
    out->has_peak = has_peak;
    out->peak = peak;
    out->fits = has_peak &&
                peak <= cli_usable(out->capacity, out->margin_permille);
    out->headroom = peak <= out->capacity ? (int64_t)(out->capacity - peak)
                                          : -(int64_t)(peak - out->capacity);
    return 1;
}

/* "79.18 GiB", "287.00 MiB", "8.12 MiB", "512.00 KiB". */
static void size_text(uint64_t bytes, char *buf, size_t cap)
{
    cli_format_size(bytes, 2, buf, cap);
}

void cli_gpu_fit_text(FILE *out, const cli_gpu_fit *g, const char *what)
{
    char usable[CLI_NUMBER_CAP], context[CLI_NUMBER_CAP], workspace[CLI_NUMBER_CAP],
        capacity[2 * CLI_NUMBER_CAP + 64], peak[CLI_NUMBER_CAP], room[CLI_NUMBER_CAP], kept[48];
    uint64_t room_bytes = g->headroom < 0 ? (uint64_t)-g->headroom : (uint64_t)g->headroom;
    double share = g->capacity ? 100.0 * (double)room_bytes / (double)g->capacity : 0;
    size_text(g->usable, usable, sizeof usable);
    size_text(g->context, context, sizeof context);
    size_text(g->workspace, workspace, sizeof workspace);
    fprintf(out, "%-*s%s (%s, %s): %s usable, CUDA context %s, cuBLAS workspace %s\n",
            CLI_LABEL_WIDTH, "GPU", g->name, g->device_name, g->arch, usable, context,
            workspace);
    if (g->capacity_from_gpu) {
        snprintf(capacity, sizeof capacity, "%s usable", usable);
    } else {
        size_text(g->capacity, peak, sizeof peak);
        snprintf(capacity, sizeof capacity, "%s (--capacity, not the GPU's %s)", peak, usable);
    }
    snprintf(kept, sizeof kept, "%g%% kept free", g->margin_permille / 10.0);
    if (!g->has_peak) {
        fprintf(out, "%-*sno: no layout fits %s with %s\n", CLI_LABEL_WIDTH, "Fits", capacity,
                kept);
        return;
    }
    size_text(g->peak, peak, sizeof peak);
    size_text(room_bytes, room, sizeof room);
    if (g->fits)
        fprintf(out, "%-*syes, with %s: %s %s of %s, %s (%.1f%%) to spare\n", CLI_LABEL_WIDTH,
                "Fits", kept, what, peak, capacity, room, share);
    else if (g->headroom < 0)
        fprintf(out, "%-*sno: %s %s of %s, short by %s (%.1f%%)\n", CLI_LABEL_WIDTH, "Fits",
                what, peak, capacity, room, share);
    else
        fprintf(out, "%-*sno, with %s: %s %s of %s leaves %s (%.1f%%), inside the margin\n",
                CLI_LABEL_WIDTH, "Fits", kept, what, peak, capacity, room, share);
}

void cli_gpu_fit_json(json_writer *w, const cli_gpu_fit *g)
{
    json_object_begin(w, "gpu");
    json_string(w, "name", g->name);
    json_string(w, "device_name", g->device_name);
    json_string(w, "arch", g->arch);
    json_u64(w, "usable_bytes", g->usable);
    json_u64(w, "context_bytes", g->context);
    json_u64(w, "workspace_bytes", g->workspace);
    json_u64(w, "capacity_bytes", g->capacity);
    json_string(w, "capacity_source", g->capacity_from_gpu ? "gpu" : "capacity");
    json_i64(w, "margin_permille", g->margin_permille);
    json_bool(w, "fits", g->fits);
    if (g->has_peak)
        json_i64(w, "headroom_bytes", g->headroom);
    else
        json_string(w, "headroom_bytes", NULL);
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
