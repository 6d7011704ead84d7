/* SPDX-License-Identifier: MIT */
/* `llmem gpus [--mig] [--driver N] [--json]`: the GPU catalog, and with --mig
 * every MIG profile with its usable memory, slices, placements, maximum
 * count, first driver branch and the names other branches give it. With
 * --driver, as fit and pack take it: only the profiles that branch has,
 * under its names. */
#include "cli.h"
#include "format.h"
#include "json.h"
#include "opts.h"

#include <llmem.h>
#include <string.h>

enum { OPT_MIG, OPT_JSON, OPT_HELP, OPT_DRIVER, OPT_COUNT };

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

/* The profile's name on branch driver (0: the newest), NULL when the branch
 * lacks it. */
static const char *branch_name(size_t g, size_t p, int64_t driver)
{
    return llmem_mig_profile_driver_name(g, p, driver);
}

/* The profiles of GPU g that branch driver has. */
static uint64_t branch_profiles(size_t g, int64_t driver)
{
    uint64_t n = gpu_u64(g, LLMEM_GPU_MIG_PROFILES), count = 0;
    for (size_t p = 0; p < n; p++)
        count += branch_name(g, p, driver) != NULL;
    return count;
}

/* Branches first to last giving a profile one name; first 0: from the first
 * branch that drives the GPU (the profile has no first branch of its own),
 * last 0: to the newest. */
typedef struct name_run {
    const char *name, *resource;
    int64_t first, last;
} name_run;

/* More runs than any profile has (one renamed range makes three). */
#define NAME_RUNS_CAP 16

/* The names of profile p of GPU g over every branch, from its first
 * (LLMEM_MIG_SINCE_DRIVER) to the highest the driver setting takes. */
static size_t name_runs(size_t g, size_t p, name_run *runs)
{
    int64_t since = (int64_t)mig_u64(g, p, LLMEM_MIG_SINCE_DRIVER), max = 0;
    size_t n = 0;
    llmem_fit_field_info(LLMEM_FIT_DRIVER, NULL, NULL, &max);
    for (int64_t d = since > 0 ? since : 1; d <= max; d++) {
        const char *name = branch_name(g, p, d);
        if (name == NULL)
            continue;
        if (n > 0 && strcmp(runs[n - 1].name, name) == 0) {
            runs[n - 1].last = d;
            continue;
        }
        if (n == NAME_RUNS_CAP)
            break;
        runs[n].name = name;
        runs[n].resource = llmem_mig_profile_driver_resource(g, p, d);
        runs[n].first = n == 0 ? since : d;
        runs[n].last = d;
        n++;
    }
    if (n > 0)
        runs[n - 1].last = 0;
    return n;
}

/* "R535-R545", "R546+", "up to R534", "R535" for a run's branches. */
static void run_text(const name_run *r, char *buf, size_t cap)
{
    if (r->first == 0)
        snprintf(buf, cap, "up to R%lld", (long long)r->last);
    else if (r->last == 0)
        snprintf(buf, cap, "R%lld+", (long long)r->first);
    else if (r->first == r->last)
        snprintf(buf, cap, "R%lld", (long long)r->first);
    else
        snprintf(buf, cap, "R%lld-R%lld", (long long)r->first, (long long)r->last);
}

/* Text appended to buf[0..cap), *used its length; cut at the end. */
static void append(char *buf, size_t cap, size_t *used, const char *text)
{
    int n = snprintf(buf + *used, cap - *used, "%s", text);
    if (n > 0)
        *used = *used + (size_t)n < cap ? *used + (size_t)n : cap - 1;
}

/* The names of the runs other than shown, each with its branches:
 * "3g.39gb (R535-R545)", "3g.40gb (up to R534, R546+)"; "" when none. */
static void other_names(const name_run *runs, size_t n, const char *shown, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int seen = strcmp(runs[i].name, shown) == 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(runs[j].name, runs[i].name) == 0;
        if (seen)
            continue;
        append(buf, cap, &used, used ? "; " : "");
        append(buf, cap, &used, runs[i].name);
        append(buf, cap, &used, " (");
        for (size_t j = i, k = 0; j < n; j++)
            if (strcmp(runs[j].name, runs[i].name) == 0) {
                char range[48];
                run_text(&runs[j], range, sizeof range);
                append(buf, cap, &used, k++ ? ", " : "");
                append(buf, cap, &used, range);
            }
        append(buf, cap, &used, ")");
    }
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

static void text_gpus(int mig, int64_t driver)
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
        uint64_t n = branch_profiles(g, driver), sms = gpu_u64(g, LLMEM_GPU_SMS);
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
        if (branch_profiles(g, driver) == 0)
            continue;
        uint64_t compute = gpu_u64(g, LLMEM_GPU_MIG_COMPUTE_SLICES);
        printf("\n%s: %llu placement slots, %llu compute slices", llmem_gpu_name(g),
               (unsigned long long)gpu_u64(g, LLMEM_GPU_MIG_SLOTS), (unsigned long long)compute);
        if (driver != 0)
            printf("; the profiles and names of driver R%lld", (long long)driver);
        printf("\n  %-16s %-10s %-8s %-6s %-16s %4s %5s  %-6s  %-18s  %s\n", "Profile", "Usable",
               "Compute", "Slots", "Starts", "Max", "SMs", "Driver", "Uncertain", "Other names");
        for (size_t p = 0; p < n; p++) {
            char use[32], starts[48], comp[48], smtext[24], since[24], unctext[24], others[160];
            uint64_t unc = mig_u64(g, p, LLMEM_MIG_UNCERTAIN), sms = mig_u64(g, p, LLMEM_MIG_SMS);
            uint64_t first = mig_u64(g, p, LLMEM_MIG_SINCE_DRIVER);
            const char *name = branch_name(g, p, driver);
            name_run runs[NAME_RUNS_CAP];
            if (name == NULL)
                continue;
            other_names(runs, name_runs(g, p, runs), name, others, sizeof others);
            snprintf(since, sizeof since, first ? "R%llu+" : "any", (unsigned long long)first);
            snprintf(unctext, sizeof unctext, "%s%s%s",
                     unc & LLMEM_MIG_MEMORY_ESTIMATED ? "memory" : "",
                     unc == (LLMEM_MIG_MEMORY_ESTIMATED | LLMEM_MIG_PLACEMENTS_INFERRED) ? ", "
                                                                                         : "",
                     unc & LLMEM_MIG_PLACEMENTS_INFERRED ? "placements" : "");
            cli_format_gib(mig_u64(g, p, LLMEM_MIG_USABLE_BYTES), use, sizeof use);
            starts_text(mig_u64(g, p, LLMEM_MIG_STARTS), starts, sizeof starts);
            snprintf(comp, sizeof comp, "%llu/%llu",
                     (unsigned long long)mig_u64(g, p, LLMEM_MIG_COMPUTE_SLICES),
                     (unsigned long long)compute);
            snprintf(smtext, sizeof smtext, "%llu", (unsigned long long)sms);
            char line[400];
            snprintf(line, sizeof line,
                     "  %-16s %-10s %-8s %-6llu %-16s %4llu %5s  %-6s  %-18s  %s", name, use,
                     comp, (unsigned long long)mig_u64(g, p, LLMEM_MIG_SLOTS), starts,
                     (unsigned long long)mig_u64(g, p, LLMEM_MIG_MAX_COUNT), sms ? smtext : "?",
                     since, unctext, others);
            /* No trailing blanks where the last columns are empty. */
            for (size_t end = strlen(line); end > 0 && line[end - 1] == ' '; end--)
                line[end - 1] = '\0';
            puts(line);
        }
    }
}

static const char *const variant_names[] = { "plain", "me", "gfx", "me.all", "no-me" };

static void json_profiles(json_writer *w, size_t g, int64_t driver)
{
    uint64_t n = gpu_u64(g, LLMEM_GPU_MIG_PROFILES);
    json_object_begin(w, "mig");
    json_u64(w, "slots", gpu_u64(g, LLMEM_GPU_MIG_SLOTS));
    json_u64(w, "compute_slices", gpu_u64(g, LLMEM_GPU_MIG_COMPUTE_SLICES));
    json_array_begin(w, "profiles");
    for (size_t p = 0; p < n; p++) {
        uint64_t starts = mig_u64(g, p, LLMEM_MIG_STARTS), unc = mig_u64(g, p, LLMEM_MIG_UNCERTAIN);
        uint64_t variant = mig_u64(g, p, LLMEM_MIG_VARIANT);
        name_run runs[NAME_RUNS_CAP];
        if (branch_name(g, p, driver) == NULL)
            continue;
        json_object_begin(w, NULL);
        json_string(w, "name", branch_name(g, p, driver));
        json_string(w, "resource", llmem_mig_profile_driver_resource(g, p, driver));
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
        json_u64(w, "since_driver", mig_u64(g, p, LLMEM_MIG_SINCE_DRIVER));
        json_array_begin(w, "driver_names");
        for (size_t r = 0, nr = name_runs(g, p, runs); r < nr; r++) {
            json_object_begin(w, NULL);
            json_string(w, "name", runs[r].name);
            json_string(w, "resource", runs[r].resource);
            json_i64(w, "first_driver", runs[r].first);
            if (runs[r].last != 0)
                json_i64(w, "last_driver", runs[r].last);
            else
                json_null(w, "last_driver");
            json_object_end(w);
        }
        json_array_end(w);
        json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
}

static void json_gpus(int mig, int64_t driver)
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
        json_u64(&w, "mig_profiles", branch_profiles(g, driver));
        if (mig && branch_profiles(g, driver) > 0)
            json_profiles(&w, g, driver);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_end(&w);
}

int cli_cmd_gpus(int argc, char **argv)
{
    cli_opt opts[OPT_COUNT] = {
        [OPT_MIG] = { "mig", 1, NULL }, [OPT_JSON] = { "json", 1, NULL },
        [OPT_HELP] = { "help", 1, NULL }, [OPT_DRIVER] = { "driver", 0, NULL },
    };
    int64_t driver = 0, min = 0, max = 0;
    if (cli_opts_take(&argc, argv, opts, OPT_COUNT) != 0)
        return CLI_EXIT_USAGE;
    if (argc > 0) {
        cli_error("`llmem gpus` does not take '%s' (its flags: --mig, --driver N, --json)",
                  argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (opts[OPT_HELP].value) {
        cli_usage_command(stdout, "gpus");
        return CLI_EXIT_OK;
    }
    /* As fit and pack read it: a branch or version, in the bounds of their
     * setting, with the message their setting gives. */
    if (opts[OPT_DRIVER].value) {
        if (!cli_opt_driver("driver", opts[OPT_DRIVER].value, &driver))
            return CLI_EXIT_USAGE;
        llmem_fit_field_info(LLMEM_FIT_DRIVER, NULL, &min, &max);
        if (driver < min || driver > max) {
            cli_error("--driver '%s': value %lld out of range [%lld, %lld]",
                      opts[OPT_DRIVER].value, (long long)driver, (long long)min, (long long)max);
            return CLI_EXIT_USAGE;
        }
    }
    if (opts[OPT_JSON].value)
        json_gpus(opts[OPT_MIG].value != NULL, driver);
    else
        text_gpus(opts[OPT_MIG].value != NULL, driver);
    return CLI_EXIT_OK;
}
