/* SPDX-License-Identifier: MIT */
/* `llmem gpus [--mig] [--json]`: the GPU catalog, and with --mig every MIG
 * profile with its usable memory, slices, placements and maximum count. */
#include "cli.h"
#include "format.h"
#include "json.h"
#include "opts.h"

#include <llmem.h>
#include <string.h>

static uint64_t gpu_u64(size_t g, int key)
{
    uint64_t v = 0;
    llmem_gpu_get_u64(g, key, &v);
    return v;
}

static uint64_t mig_u64(size_t g, size_t p, int key)
{
    uint64_t v = 0;
    llmem_mig_profile_get_u64(g, p, key, &v);
    return v;
}

/* "0,1,2" for a start mask. */
static void starts_text(uint64_t mask, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned s = 0; s < 64 && used < cap; s++)
        if (mask >> s & 1) {
            int n = snprintf(buf + used, cap - used, "%s%u", used ? "," : "", s);
            if (n < 0)
                break;
            used += (size_t)n;
        }
}

static void text_gpus(int mig)
{
    char usable[48], context[32], workspace[40], extra[40];
    printf("%-14s %-7s %-19s %-9s %-10s %5s  %s\n", "GPU", "Arch", "Usable", "Context",
           "Workspace", "SMs", "MIG profiles");
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        cli_format_gib(gpu_u64(g, LLMEM_GPU_USABLE_BYTES), usable, sizeof usable);
        if (gpu_u64(g, LLMEM_GPU_USABLE_ESTIMATED))
            strcat(usable, " (est.)");
        cli_format_gib(gpu_u64(g, LLMEM_GPU_CONTEXT_BYTES), context, sizeof context);
        snprintf(workspace, sizeof workspace, "%.3g MiB",
                 (double)gpu_u64(g, LLMEM_GPU_WORKSPACE_BYTES) / 1048576.0);
        uint64_t n = gpu_u64(g, LLMEM_GPU_MIG_PROFILES), sms = gpu_u64(g, LLMEM_GPU_SMS);
        snprintf(extra, sizeof extra, "%llu", (unsigned long long)n);
        char smtext[24];
        snprintf(smtext, sizeof smtext, "%llu", (unsigned long long)sms);
        printf("%-14s %-7s %-19s %-9s %-10s %5s  %s\n", llmem_gpu_name(g),
               llmem_gpu_get_str(g, LLMEM_GPU_ARCH), usable, context, workspace,
               sms ? smtext : "?", n ? extra : "-");
    }
    if (!mig)
        return;
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        uint64_t n = gpu_u64(g, LLMEM_GPU_MIG_PROFILES);
        if (n == 0)
            continue;
        uint64_t compute = gpu_u64(g, LLMEM_GPU_MIG_COMPUTE_SLICES);
        printf("\n%s: %llu placement slots, %llu compute slices\n", llmem_gpu_name(g),
               (unsigned long long)gpu_u64(g, LLMEM_GPU_MIG_SLOTS), (unsigned long long)compute);
        printf("  %-16s %-10s %-8s %-6s %-16s %4s %5s  %s\n", "Profile", "Usable", "Compute",
               "Slots", "Starts", "Max", "SMs", "Uncertain");
        for (size_t p = 0; p < n; p++) {
            char use[32], starts[48], comp[48], smtext[24];
            uint64_t unc = mig_u64(g, p, LLMEM_MIG_UNCERTAIN), sms = mig_u64(g, p, LLMEM_MIG_SMS);
            cli_format_gib(mig_u64(g, p, LLMEM_MIG_USABLE_BYTES), use, sizeof use);
            starts_text(mig_u64(g, p, LLMEM_MIG_STARTS), starts, sizeof starts);
            snprintf(comp, sizeof comp, "%llu/%llu",
                     (unsigned long long)mig_u64(g, p, LLMEM_MIG_COMPUTE_SLICES),
                     (unsigned long long)compute);
            snprintf(smtext, sizeof smtext, "%llu", (unsigned long long)sms);
            printf("  %-16s %-10s %-8s %-6llu %-16s %4llu %5s  %s%s%s\n",
                   llmem_mig_profile_name(g, p), use, comp,
                   (unsigned long long)mig_u64(g, p, LLMEM_MIG_SLOTS), starts,
                   (unsigned long long)mig_u64(g, p, LLMEM_MIG_MAX_COUNT), sms ? smtext : "?",
                   unc & LLMEM_MIG_MEMORY_ESTIMATED ? "memory" : "",
                   unc == (LLMEM_MIG_MEMORY_ESTIMATED | LLMEM_MIG_PLACEMENTS_INFERRED) ? ", " : "",
                   unc & LLMEM_MIG_PLACEMENTS_INFERRED ? "placements" : "");
        }
    }
}

static const char *const variant_names[] = { "plain", "me", "gfx", "me.all", "no-me" };

static void json_profiles(json_writer *w, size_t g)
{
    uint64_t n = gpu_u64(g, LLMEM_GPU_MIG_PROFILES);
    json_object_begin(w, "mig");
    json_u64(w, "slots", gpu_u64(g, LLMEM_GPU_MIG_SLOTS));
    json_u64(w, "compute_slices", gpu_u64(g, LLMEM_GPU_MIG_COMPUTE_SLICES));
    json_array_begin(w, "profiles");
    for (size_t p = 0; p < n; p++) {
        uint64_t starts = mig_u64(g, p, LLMEM_MIG_STARTS), unc = mig_u64(g, p, LLMEM_MIG_UNCERTAIN);
        uint64_t variant = mig_u64(g, p, LLMEM_MIG_VARIANT);
        json_object_begin(w, NULL);
        json_string(w, "name", llmem_mig_profile_name(g, p));
        json_string(w, "resource", llmem_mig_profile_resource(g, p));
        json_string(w, "variant", variant < 5 ? variant_names[variant] : NULL);
        json_u64(w, "usable_bytes", mig_u64(g, p, LLMEM_MIG_USABLE_BYTES));
        json_u64(w, "compute_slices", mig_u64(g, p, LLMEM_MIG_COMPUTE_SLICES));
        json_u64(w, "slots", mig_u64(g, p, LLMEM_MIG_SLOTS));
        json_array_begin(w, "starts");
        for (unsigned s = 0; s < 64; s++)
            if (starts >> s & 1)
                json_u64(w, NULL, s);
        json_array_end(w);
        json_u64(w, "max_count", mig_u64(g, p, LLMEM_MIG_MAX_COUNT));
        json_u64(w, "sms", mig_u64(g, p, LLMEM_MIG_SMS));
        json_bool(w, "memory_estimated", (unc & LLMEM_MIG_MEMORY_ESTIMATED) != 0);
        json_bool(w, "placements_inferred", (unc & LLMEM_MIG_PLACEMENTS_INFERRED) != 0);
        json_string(w, "source", llmem_mig_profile_source(g, p));
        json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
}

static void json_gpus(int mig)
{
    json_writer w;
    json_begin(&w, stdout);
    json_array_begin(&w, NULL);
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        char aliases[512];
        json_object_begin(&w, NULL);
        json_string(&w, "name", llmem_gpu_name(g));
        json_string(&w, "device_name", llmem_gpu_get_str(g, LLMEM_GPU_DEVICE_NAME));
        json_array_begin(&w, "aliases");
        snprintf(aliases, sizeof aliases, "%s", llmem_gpu_get_str(g, LLMEM_GPU_ALIASES));
        for (char *a = aliases, *bar; a != NULL && *a; a = bar ? bar + 1 : NULL) {
            bar = strchr(a, '|');
            if (bar)
                *bar = '\0';
            json_string(&w, NULL, a);
        }
        json_array_end(&w);
        json_string(&w, "arch", llmem_gpu_get_str(g, LLMEM_GPU_ARCH));
        json_u64(&w, "compute_capability", gpu_u64(g, LLMEM_GPU_COMPUTE_CAPABILITY));
        json_u64(&w, "usable_bytes", gpu_u64(g, LLMEM_GPU_USABLE_BYTES));
        json_bool(&w, "usable_estimated", (int)gpu_u64(g, LLMEM_GPU_USABLE_ESTIMATED));
        json_string(&w, "memory_source", llmem_gpu_get_str(g, LLMEM_GPU_MEMORY_SOURCE));
        json_u64(&w, "context_bytes", gpu_u64(g, LLMEM_GPU_CONTEXT_BYTES));
        json_bool(&w, "context_estimated", (int)gpu_u64(g, LLMEM_GPU_CONTEXT_ESTIMATED));
        json_u64(&w, "workspace_bytes", gpu_u64(g, LLMEM_GPU_WORKSPACE_BYTES));
        json_string(&w, "constants_source", llmem_gpu_get_str(g, LLMEM_GPU_CONSTANTS_SOURCE));
        json_u64(&w, "sms", gpu_u64(g, LLMEM_GPU_SMS));
        json_u64(&w, "mig_profiles", gpu_u64(g, LLMEM_GPU_MIG_PROFILES));
        if (mig && gpu_u64(g, LLMEM_GPU_MIG_PROFILES) > 0)
            json_profiles(&w, g);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_end(&w);
}

int cli_cmd_gpus(int argc, char **argv)
{
    cli_opt opts[] = { { "mig", 1, NULL }, { "json", 1, NULL }, { "help", 1, NULL } };
    if (cli_opts_take(&argc, argv, opts, 3) != 0)
        return CLI_EXIT_USAGE;
    if (argc > 0) {
        cli_error("`llmem gpus` takes --mig and --json only (got '%s')", argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (opts[2].value) {
        cli_usage_command(stdout, "gpus");
        return CLI_EXIT_OK;
    }
    if (opts[1].value)
        json_gpus(opts[0].value != NULL);
    else
        text_gpus(opts[0].value != NULL);
    return CLI_EXIT_OK;
}
