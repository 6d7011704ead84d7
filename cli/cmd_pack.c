/* SPDX-License-Identifier: MIT */
/*
 * `llmem pack --gpu NAME[:COUNT][,NAME[:COUNT]...] [--gpus N] --jobs FILE
 * [--margin P] [--gpus-per-node N (0, the default: no node boundary)] [--config-name NAME]
 * [--driver N] [--json | --format text|json|mig-parted|nvidia-smi]`: many jobs onto few
 * GPUs with valid MIG layouts. FILE is a JSON array of jobs, each with an
 * "id" and either "memory_bytes" (with an optional "memory_level": device or
 * reserved) or the flags of `llmem estimate` by name ("model", "method",
 * "batch", "lora-rank" or "lora_rank", ...; not "gpu": the fleet decides);
 * "min_compute" asks for compute slices. An estimated job takes the CUDA
 * context and cuBLAS workspace of the fleet's type that adds most, so its
 * need holds on every type. Jobs left unplaced: the output for the others,
 * and exit 3.
 */
#include "args.h"
#include "cli.h"
#include "configure.h"
#include "format.h"
#include "jobs.h"
#include "json.h"
#include "opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_GPU, OPT_GPUS, OPT_JOBS, OPT_MARGIN, OPT_PER_NODE, OPT_NAME, OPT_DRIVER, OPT_FORMAT,
    OPT_JSON, OPT_HELP, OPT_COUNT
};

typedef enum out_format { OUT_TEXT, OUT_JSON, OUT_MIG_PARTED, OUT_NVIDIA_SMI } out_format;

/* Bytes an architecture adds to a step: its CUDA context and cuBLAS workspace. */
static uint64_t constants_of(size_t gpu)
{
    uint64_t context = 0, workspace = 0;
    llmem_gpu_get_u64(gpu, LLMEM_GPU_CONTEXT_BYTES, &context);
    llmem_gpu_get_u64(gpu, LLMEM_GPU_WORKSPACE_BYTES, &workspace);
    return context + workspace;
}

/* The fleet from "NAME[:COUNT],..." with default count; *costliest: the type
 * whose architecture adds most to a step, whose constants the jobs' estimates
 * take so that each need holds on every type. */
static int add_fleet(llmem_ctx *ctx, llmem_pack *pack, const char *spec, uint64_t fallback,
                     size_t *costliest)
{
    int first = 1;
    char buf[512];
    if (strlen(spec) >= sizeof buf) {
        cli_error("--gpu: too long");
        return 0;
    }
    strcpy(buf, spec);
    for (char *item = buf, *next; item != NULL; item = next) {
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        char *colon = strchr(item, ':');
        uint64_t count = fallback;
        size_t gpu;
        if (colon) {
            char *end = NULL;
            *colon = '\0';
            errno = 0;
            unsigned long long v = strtoull(colon + 1, &end, 10);
            if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || errno != 0 || v == 0) {
                cli_error("--gpu '%s': the count after '%s:' must be a positive integer", spec,
                          item);
                return 0;
            }
            count = (uint64_t)v;
        }
        if (!cli_find_gpu(ctx, "gpu", item, &gpu))
            return 0;
        if (first || constants_of(gpu) > constants_of(*costliest))
            *costliest = gpu;
        first = 0;
        if (llmem_pack_add_gpu(pack, gpu, count) != LLMEM_OK) {
            cli_error("--gpu '%s': %s", spec, cli_message_tail(llmem_ctx_error(ctx)));
            return 0;
        }
    }
    return 1;
}

/* Whether every entry of --gpu's "NAME[:COUNT],..." carries its own count:
 * --gpus, the count of the types given without one, would then count none. */
static int every_type_counted(const char *spec)
{
    for (const char *item = spec; *item != '\0';) {
        size_t n = strcspn(item, ",");
        if (memchr(item, ':', n) == NULL)
            return 0;
        item += n + (item[n] == ',');
    }
    return 1;
}

/* The estimate flags a job may give: its model and training (a job is one
 * process on one slice: no layout, no planner or output flags). */
#define PACK_ACCEPTS                                                                         \
    (CLI_ACCEPTS(CLI_TARGET_PRESET) | CLI_ACCEPTS(CLI_TARGET_CONFIG) |                       \
     CLI_ACCEPTS(CLI_TARGET_WEIGHTS) | CLI_ACCEPTS(CLI_TARGET_MODEL) |                       \
     CLI_ACCEPTS(CLI_TARGET_TRAIN))

/* The fields a job may have besides the estimate flags. */
static int own_field(const char *key)
{
    return strcmp(key, "id") == 0 || strcmp(key, "memory_bytes") == 0 ||
           strcmp(key, "memory_level") == 0 || strcmp(key, "min_compute") == 0;
}

/* The estimate flag a field names: "lora-rank" or "lora_rank". */
static const cli_flag *field_flag(const char *key)
{
    char name[64];
    size_t n = strlen(key);
    if (n >= sizeof name)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        name[i] = key[i] == '_' ? '-' : key[i];
    const cli_flag *f = cli_flag_find(name, n);
    /* The fleet (--gpu) says where jobs run, not the job. */
    if (f == NULL || !(PACK_ACCEPTS & CLI_ACCEPTS(f->target)) ||
        (f->target == CLI_TARGET_TRAIN && f->key == LLMEM_TRAIN_GPU))
        return NULL;
    return f;
}

/* A non-negative integer field (no fraction, no exponent). */
static int integer_field(const jobs_field *f, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    if (f->kind != JOBS_NUMBER || f->text[0] == '-' || strpbrk(f->text, ".eE") != NULL)
        return 0;
    errno = 0;
    unsigned long long v = strtoull(f->text, &end, 10);
    if (*end != '\0' || errno != 0 || v > max)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

typedef struct job_env {
    llmem_ctx *ctx;
    llmem_pack *pack;
    llmem_estimate *est;
    size_t gpu; /* whose constants estimates take (add_fleet) */
} job_env;

/* The device-level peak of a job given by estimate flags. */
static int estimate_bytes(job_env *env, const jobs_spec *job, uint64_t *bytes)
{
    char *argv[2 * 64];
    char names[64][72];
    int argc = 0;
    for (size_t i = 0; i < job->count && argc + 2 <= 2 * 64; i++) {
        const jobs_field *f = &job->field[i];
        if (own_field(f->key))
            continue;
        char *name = names[argc / 2];
        snprintf(name, sizeof names[0], "--%s", field_flag(f->key)->name);
        argv[argc] = name;
        argv[argc + 1] = f->kind == JOBS_TRUE ? "1" : f->kind == JOBS_FALSE ? "0" : f->text;
        argc += 2;
    }
    cli_request req;
    int status = cli_configure(env->ctx, argc, argv, PACK_ACCEPTS, "pack", &req);
    if (status != CLI_EXIT_OK)
        return status;
    int rc = llmem_train_set_int(req.train, LLMEM_TRAIN_GPU, (int64_t)env->gpu + 1);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_run(env->est, req.model, req.train);
    if (rc == LLMEM_OK)
        rc = llmem_estimate_get_u64(env->est, LLMEM_EST_PEAK_DEVICE, bytes);
    if (rc != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(env->ctx)[0] ? llmem_ctx_error(env->ctx)
                                                      : llmem_status_str(rc));
        status = CLI_EXIT_ESTIMATE;
    }
    cli_request_free(&req);
    return status;
}

/* The first control character of a string, C0, DEL or C1 (U+0080-U+009F, as
 * UTF-8 the reader has checked): its code point, and its byte offset in *at;
 * -1 when there is none. */
static long control_char(const char *s, size_t *at)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i] != '\0'; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f || (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)) {
            *at = i;
            return p[i] == 0xc2 ? p[i + 1] : p[i];
        }
    }
    return -1;
}

/* A string field with a control character is refused: ids and names go to
 * the terminal, the JSON and the messages as they are, where an escape
 * sequence would act on the terminal or a newline forge a line. */
static int plain_text(const char *path, const jobs_field *f, size_t index)
{
    size_t at = 0;
    long c = control_char(f->key, &at);
    if (c >= 0) {
        cli_error("%s:%d: job #%zu: a field name with control character U+%04lX at byte %zu "
                  "(not allowed in a jobs file)", path, f->line, index + 1, c, at);
        return 0;
    }
    if (f->kind != JOBS_STRING || (c = control_char(f->text, &at)) < 0)
        return 1;
    cli_error("%s:%d: job #%zu: field '%s': control character U+%04lX at byte %zu (not allowed "
              "in a jobs file's strings)", path, f->line, index + 1, f->key, c, at);
    return 0;
}

/* Check one job's fields and add it; messages start with the job. */
static int add_job(job_env *env, const char *path, const jobs_file *file, size_t index)
{
    const jobs_spec *job = &file->job[index];
    const jobs_field *id = cli_jobs_get(job, "id"), *mem = cli_jobs_get(job, "memory_bytes");
    const jobs_field *level = cli_jobs_get(job, "memory_level");
    const jobs_field *compute = cli_jobs_get(job, "min_compute");
    int estimate_fields = 0;
    uint64_t bytes = 0, min_compute = 0;
    int lvl = LLMEM_LEVEL_DEVICE;
    if (id == NULL || id->kind != JOBS_STRING || id->text[0] == '\0') {
        cli_error("%s:%d: job #%zu: field 'id': a non-empty string is required", path, job->line,
                  index + 1);
        return CLI_EXIT_USAGE;
    }
    /* Before any message quotes a string of the job. */
    for (size_t i = 0; i < job->count; i++)
        if (!plain_text(path, &job->field[i], index))
            return CLI_EXIT_USAGE;
    for (size_t j = 0; j < index; j++)
        if (strcmp(cli_jobs_get(&file->job[j], "id")->text, id->text) == 0) {
            cli_error("%s:%d: job '%s' (#%zu): field 'id': the same id as job #%zu", path,
                      id->line, id->text, index + 1, j + 1);
            return CLI_EXIT_USAGE;
        }
    cli_error_context("%s:%d: job '%s' (#%zu): ", path, job->line, id->text, index + 1);
    int status = CLI_EXIT_USAGE;
    for (size_t i = 0; i < job->count; i++) {
        const jobs_field *f = &job->field[i];
        if (own_field(f->key))
            continue;
        if (field_flag(f->key) == NULL) {
            cli_error("unknown field '%s' (expected id, memory_bytes, memory_level, "
                      "min_compute, or a model or training flag of `llmem estimate` such as "
                      "model or batch; a job runs on one GPU or slice: no layout flags, and "
                      "--gpu is the fleet's)",
                      f->key);
            goto done;
        }
        if (f->kind == JOBS_NULL) {
            cli_error("field '%s': null is not a value", f->key);
            goto done;
        }
        estimate_fields++;
    }
    if (mem && estimate_fields) {
        cli_error("field 'memory_bytes' and estimate fields (such as model) both give the "
                  "memory: keep one");
        goto done;
    }
    if (mem == NULL && estimate_fields == 0) {
        cli_error("no memory: give 'memory_bytes' or estimate fields (such as model)");
        goto done;
    }
    /* The whole range llmem_pack_add_job() takes, 2^64 - 1 included. */
    if (mem && (!integer_field(mem, UINT64_MAX, &bytes) || bytes == 0)) {
        cli_error("field 'memory_bytes': a positive integer of bytes is required (got %s)",
                  mem->kind == JOBS_STRING ? "a string" : mem->text ? mem->text : "a literal");
        goto done;
    }
    if (level && (level->kind != JOBS_STRING || !cli_parse_level(level->text, &lvl))) {
        cli_error("field 'memory_level': \"device\" or \"reserved\" expected");
        goto done;
    }
    if (level && mem == NULL) {
        cli_error("field 'memory_level' goes with 'memory_bytes' (an estimate is device-level)");
        goto done;
    }
    if (compute && !integer_field(compute, 1000, &min_compute)) {
        cli_error("field 'min_compute': a non-negative integer is required");
        goto done;
    }
    if (mem == NULL) {
        status = estimate_bytes(env, job, &bytes);
        if (status != CLI_EXIT_OK)
            goto done;
        status = CLI_EXIT_USAGE;
    }
    if (llmem_pack_add_job(env->pack, id->text, bytes, lvl, (int64_t)min_compute) != LLMEM_OK) {
        /* The library names the job ("pack: job 'a': why"); the context already does. */
        const char *m = llmem_ctx_error(env->ctx), *tail = strstr(m, "': ");
        cli_error("%s%s", compute ? "field 'min_compute': " : "", tail ? tail + 3 : m);
        goto done;
    }
    status = CLI_EXIT_OK;
done:
    cli_error_context_clear();
    return status;
}

static uint64_t res(const llmem_pack *pack, int key)
{
    uint64_t v = 0;
    llmem_pack_get_u64(pack, key, &v);
    return v;
}

static uint64_t job_u64(const llmem_pack *pack, size_t j, int key)
{
    uint64_t v = 0;
    llmem_pack_job_u64(pack, j, key, &v);
    return v;
}

/* The job's profile as the pack's driver branch names it. */
static const char *slice_name(const llmem_pack *pack, size_t j, size_t gpu_type, int key)
{
    uint64_t profile = job_u64(pack, j, key), profiles = 0;
    int64_t driver = 0;
    llmem_gpu_get_u64(gpu_type, LLMEM_GPU_MIG_PROFILES, &profiles);
    llmem_pack_get_int(pack, LLMEM_PACK_DRIVER, &driver);
    return profile == profiles ? "whole"
                               : llmem_mig_profile_driver_name(gpu_type, (size_t)profile, driver);
}

static uint64_t gpu_type(const llmem_pack *pack, size_t gpu)
{
    uint64_t t = 0;
    llmem_pack_gpu_u64(pack, gpu, LLMEM_PACK_GPU_TYPE, &t);
    return t;
}

/* Placed jobs by GPU, then start: order[i] is a job index. */
typedef struct by_gpu {
    uint64_t gpu, start;
    size_t job;
} by_gpu;

static int by_gpu_cmp(const void *a, const void *b)
{
    const by_gpu *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->job < y->job ? -1 : x->job > y->job;
}

static by_gpu *placed_jobs(const llmem_pack *pack, size_t *n)
{
    size_t count = llmem_pack_job_count(pack);
    by_gpu *list = malloc((count + 1) * sizeof *list);
    *n = 0;
    if (list == NULL)
        return NULL;
    for (size_t j = 0; j < count; j++)
        if (job_u64(pack, j, LLMEM_PACK_JOB_STATUS) == LLMEM_PACK_PLACED) {
            list[*n].gpu = job_u64(pack, j, LLMEM_PACK_JOB_GPU);
            list[*n].start = job_u64(pack, j, LLMEM_PACK_JOB_START);
            list[*n].job = j;
            (*n)++;
        }
    qsort(list, *n, sizeof *list, by_gpu_cmp);
    return list;
}

static const char *const status_names[] = { NULL, "placed", "fits-nowhere", "no-room" };

static void text_unplaced(const llmem_pack *pack)
{
    char a[32], b[32];
    int header = 0;
    for (size_t j = 0; j < llmem_pack_job_count(pack); j++) {
        uint64_t status = job_u64(pack, j, LLMEM_PACK_JOB_STATUS);
        if (status == LLMEM_PACK_PLACED)
            continue;
        if (!header++)
            printf("\nUnplaced\n");
        if (status == LLMEM_PACK_NO_ROOM) {
            printf("  %-16s no room: every GPU of the fleet is used\n", llmem_pack_job_id(pack, j));
            continue;
        }
        size_t type = (size_t)job_u64(pack, j, LLMEM_PACK_JOB_LARGEST_GPU);
        uint64_t usable = 0;
        uint64_t profile = job_u64(pack, j, LLMEM_PACK_JOB_LARGEST_PROFILE), profiles = 0;
        llmem_gpu_get_u64(type, LLMEM_GPU_MIG_PROFILES, &profiles);
        if (profile == profiles)
            llmem_gpu_get_u64(type, LLMEM_GPU_USABLE_BYTES, &usable);
        else
            llmem_mig_profile_get_u64(type, (size_t)profile, LLMEM_MIG_USABLE_BYTES, &usable);
        cli_format_gib(usable, a, sizeof a);
        cli_format_gib(job_u64(pack, j, LLMEM_PACK_JOB_SHORTFALL_BYTES), b, sizeof b);
        printf("  %-16s fits nowhere: the largest option, %s %s (%s), is %s short\n",
               llmem_pack_job_id(pack, j), llmem_gpu_name(type),
               slice_name(pack, j, type, LLMEM_PACK_JOB_LARGEST_PROFILE), a, b);
    }
}

static int print_text(const llmem_pack *pack)
{
    size_t n;
    by_gpu *list = placed_jobs(pack, &n);
    if (list == NULL)
        return 0;
    uint64_t used = res(pack, LLMEM_PACK_GPUS_USED), bound = res(pack, LLMEM_PACK_LOWER_BOUND);
    size_t no_room = 0;
    for (size_t j = 0; j < llmem_pack_job_count(pack); j++)
        no_room += job_u64(pack, j, LLMEM_PACK_JOB_STATUS) == LLMEM_PACK_NO_ROOM;
    printf("Placed    %llu of %zu jobs on %llu GPU%s",
           (unsigned long long)res(pack, LLMEM_PACK_JOBS_PLACED), llmem_pack_job_count(pack),
           (unsigned long long)used, used == 1 ? "" : "s");
    /* A fleet out of room: how many jobs any layout of it could place. */
    if (no_room > 0)
        printf("; no layout of the fleet places more than %llu",
               (unsigned long long)res(pack, LLMEM_PACK_JOBS_BOUND));
    printf("\n");
    printf("Bound     at least %llu GPU%s (memory slices %llu, compute slices %llu, "
           "profile counts %llu, LP %llu): %s\n",
           (unsigned long long)bound, bound == 1 ? "" : "s",
           (unsigned long long)res(pack, LLMEM_PACK_BOUND_MEMORY),
           (unsigned long long)res(pack, LLMEM_PACK_BOUND_COMPUTE),
           (unsigned long long)res(pack, LLMEM_PACK_BOUND_COUNT),
           (unsigned long long)res(pack, LLMEM_PACK_BOUND_LP),
           res(pack, LLMEM_PACK_OPTIMAL) ? "optimal" : "not proven optimal");
    for (size_t i = 0; i < n;) {
        uint64_t g = list[i].gpu, mig_on = 0;
        size_t type = (size_t)gpu_type(pack, (size_t)g);
        llmem_pack_gpu_u64(pack, (size_t)g, LLMEM_PACK_GPU_MIG, &mig_on);
        printf("\nGPU %llu   %s%s\n", (unsigned long long)g, llmem_gpu_name(type),
               mig_on ? "" : " (MIG disabled)");
        for (; i < n && list[i].gpu == g; i++) {
            size_t j = list[i].job;
            char need[32], usable[32];
            cli_format_gib(job_u64(pack, j, LLMEM_PACK_JOB_NEED_BYTES), need, sizeof need);
            cli_format_gib(job_u64(pack, j, LLMEM_PACK_JOB_USABLE_BYTES), usable, sizeof usable);
            printf("  %-9s @%-2llu %-16s needs %-10s of %-10s %s\n",
                   slice_name(pack, j, type, LLMEM_PACK_JOB_PROFILE),
                   (unsigned long long)list[i].start, llmem_pack_job_id(pack, j), need, usable,
                   llmem_pack_job_resource(pack, j));
        }
    }
    text_unplaced(pack);
    free(list);
    return 1;
}

static int print_json(const llmem_pack *pack)
{
    size_t n;
    by_gpu *list = placed_jobs(pack, &n);
    if (list == NULL)
        return 0;
    json_writer w;
    uint64_t used = res(pack, LLMEM_PACK_GPUS_USED), bound = res(pack, LLMEM_PACK_LOWER_BOUND);
    json_begin(&w, stdout);
    json_object_begin(&w, NULL);
    json_u64(&w, "gpus_used", used);
    json_u64(&w, "lower_bound", bound);
    json_u64(&w, "gap", used - bound);
    json_object_begin(&w, "bounds");
    json_u64(&w, "memory_slices", res(pack, LLMEM_PACK_BOUND_MEMORY));
    json_u64(&w, "compute_slices", res(pack, LLMEM_PACK_BOUND_COMPUTE));
    json_u64(&w, "profile_counts", res(pack, LLMEM_PACK_BOUND_COUNT));
    json_u64(&w, "lp", res(pack, LLMEM_PACK_BOUND_LP));
    json_object_end(&w);
    json_bool(&w, "optimal", (int)res(pack, LLMEM_PACK_OPTIMAL));
    json_u64(&w, "jobs_placed", res(pack, LLMEM_PACK_JOBS_PLACED));
    json_u64(&w, "jobs_unplaced", res(pack, LLMEM_PACK_JOBS_UNPLACED));
    json_u64(&w, "jobs_bound", res(pack, LLMEM_PACK_JOBS_BOUND));
    json_array_begin(&w, "gpus");
    for (size_t i = 0, g = 0; g < used; g++) {
        uint64_t mig_on = 0, node = 0, device = 0;
        size_t type = (size_t)gpu_type(pack, g);
        llmem_pack_gpu_u64(pack, g, LLMEM_PACK_GPU_MIG, &mig_on);
        llmem_pack_gpu_u64(pack, g, LLMEM_PACK_GPU_NODE, &node);
        llmem_pack_gpu_u64(pack, g, LLMEM_PACK_GPU_DEVICE, &device);
        json_object_begin(&w, NULL);
        json_u64(&w, "index", g);
        json_string(&w, "type", llmem_gpu_name(type));
        json_u64(&w, "node", node);
        json_u64(&w, "device", device);
        json_bool(&w, "mig_enabled", (int)mig_on);
        json_array_begin(&w, "instances");
        for (; i < n && list[i].gpu == g; i++) {
            json_object_begin(&w, NULL);
            json_string(&w, "profile", slice_name(pack, list[i].job, type, LLMEM_PACK_JOB_PROFILE));
            json_u64(&w, "start", list[i].start);
            json_string(&w, "job", llmem_pack_job_id(pack, list[i].job));
            json_object_end(&w);
        }
        json_array_end(&w);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_array_begin(&w, "jobs");
    for (size_t j = 0; j < llmem_pack_job_count(pack); j++) {
        uint64_t status = job_u64(pack, j, LLMEM_PACK_JOB_STATUS);
        json_object_begin(&w, NULL);
        json_string(&w, "id", llmem_pack_job_id(pack, j));
        json_string(&w, "status", status < 4 ? status_names[status] : NULL);
        json_u64(&w, "need_bytes", job_u64(pack, j, LLMEM_PACK_JOB_NEED_BYTES));
        if (status == LLMEM_PACK_PLACED) {
            uint64_t g = job_u64(pack, j, LLMEM_PACK_JOB_GPU);
            size_t type = (size_t)gpu_type(pack, (size_t)g);
            json_u64(&w, "gpu", g);
            /* The resource name alone does not say which type (an H100's and
             * an A100 80GB's 1g.10gb are both nvidia.com/mig-1g.10gb). */
            json_string(&w, "gpu_type", llmem_gpu_name(type));
            json_string(&w, "profile", slice_name(pack, j, type, LLMEM_PACK_JOB_PROFILE));
            json_u64(&w, "start", job_u64(pack, j, LLMEM_PACK_JOB_START));
            json_u64(&w, "usable_bytes", job_u64(pack, j, LLMEM_PACK_JOB_USABLE_BYTES));
            json_u64(&w, "headroom_bytes", job_u64(pack, j, LLMEM_PACK_JOB_HEADROOM_BYTES));
            json_string(&w, "resource", llmem_pack_job_resource(pack, j));
        } else if (status == LLMEM_PACK_FITS_NOWHERE) {
            size_t type = (size_t)job_u64(pack, j, LLMEM_PACK_JOB_LARGEST_GPU);
            json_string(&w, "largest_gpu", llmem_gpu_name(type));
            json_string(&w, "largest_option",
                        slice_name(pack, j, type, LLMEM_PACK_JOB_LARGEST_PROFILE));
            json_u64(&w, "shortfall_bytes", job_u64(pack, j, LLMEM_PACK_JOB_SHORTFALL_BYTES));
        }
        json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    json_end(&w);
    free(list);
    return 1;
}

/* The mig-parted YAML or the nvidia-smi commands. */
static int print_config(llmem_ctx *ctx, const llmem_pack *pack, out_format fmt, const char *name)
{
    size_t len = 0;
    int rc = fmt == OUT_MIG_PARTED ? llmem_pack_mig_parted(pack, name, NULL, 0, &len)
                                   : llmem_pack_nvidia_smi(pack, NULL, 0, &len);
    char *buf = rc == LLMEM_OK ? malloc(len + 1) : NULL;
    if (buf != NULL)
        rc = fmt == OUT_MIG_PARTED ? llmem_pack_mig_parted(pack, name, buf, len + 1, NULL)
                                   : llmem_pack_nvidia_smi(pack, buf, len + 1, NULL);
    if (buf == NULL || rc != LLMEM_OK) {
        cli_error("%s", rc != LLMEM_OK ? llmem_ctx_error(ctx) : "out of memory");
        free(buf);
        return 0;
    }
    fputs(buf, stdout);
    free(buf);
    return 1;
}

/* Jobs left out: the output places the others (and the text and JSON list
 * why), the exit status and one line say the packing is incomplete. */
static int unplaced_verdict(const llmem_pack *pack)
{
    size_t nowhere = 0, no_room = 0, n = llmem_pack_job_count(pack);
    for (size_t j = 0; j < n; j++) {
        uint64_t status = job_u64(pack, j, LLMEM_PACK_JOB_STATUS);
        nowhere += status == LLMEM_PACK_FITS_NOWHERE;
        no_room += status == LLMEM_PACK_NO_ROOM;
    }
    if (nowhere + no_room == 0)
        return CLI_EXIT_OK;
    cli_error("%zu of %zu jobs not placed (%zu fit on no GPU of the fleet, %zu found no room "
              "left): the output places the others",
              nowhere + no_room, n, nowhere, no_room);
    return CLI_EXIT_CHECK;
}

static int parse_format(const cli_opt *opts, out_format *fmt)
{
    static const char *const names[] = { "text", "json", "mig-parted", "nvidia-smi" };
    *fmt = opts[OPT_JSON].value ? OUT_JSON : OUT_TEXT;
    if (opts[OPT_FORMAT].value == NULL)
        return 1;
    for (int i = 0; i < 4; i++)
        if (strcmp(opts[OPT_FORMAT].value, names[i]) == 0) {
            if (opts[OPT_JSON].value && i != OUT_JSON) {
                cli_error("--json and --format %s: give one", names[i]);
                return 0;
            }
            *fmt = (out_format)i;
            return 1;
        }
    cli_error("--format '%s': expected text|json|mig-parted|nvidia-smi", opts[OPT_FORMAT].value);
    return 0;
}

static int settings(llmem_ctx *ctx, llmem_pack *pack, const cli_opt *opts)
{
    int64_t margin, driver;
    if (opts[OPT_MARGIN].value) {
        if (!cli_opt_margin("margin", opts[OPT_MARGIN].value, &margin))
            return 0;
        if (llmem_pack_set_int(pack, LLMEM_PACK_MARGIN_PERMILLE, margin) != LLMEM_OK) {
            cli_error("--margin '%s': %s", opts[OPT_MARGIN].value,
                      cli_message_tail(llmem_ctx_error(ctx)));
            return 0;
        }
    }
    const char *per_node_text = opts[OPT_PER_NODE].value, *field = NULL;
    if (opts[OPT_DRIVER].value) {
        if (!cli_opt_driver("driver", opts[OPT_DRIVER].value, &driver))
            return 0;
        if (llmem_pack_set_int(pack, LLMEM_PACK_DRIVER, driver) != LLMEM_OK) {
            llmem_pack_field_info(LLMEM_PACK_DRIVER, &field, NULL, NULL);
            cli_error("--driver '%s': %s", opts[OPT_DRIVER].value,
                      cli_message_after_field(llmem_ctx_error(ctx), field));
            return 0;
        }
    }
    /* Read as `llmem plan --gpus-per-node` reads it, with the same messages. */
    int64_t per_node;
    if (per_node_text == NULL)
        return 1;
    if (!cli_opt_count("gpus-per-node", per_node_text, &per_node))
        return 0;
    if (llmem_pack_set_int(pack, LLMEM_PACK_GPUS_PER_NODE, per_node) != LLMEM_OK) {
        llmem_pack_field_info(LLMEM_PACK_GPUS_PER_NODE, &field, NULL, NULL);
        cli_error("--gpus-per-node '%s': %s", per_node_text,
                  cli_message_after_field(llmem_ctx_error(ctx), field));
        return 0;
    }
    return 1;
}

static int pack_jobs(const cli_opt *opts, out_format fmt)
{
    llmem_ctx *ctx = NULL;
    job_env env = { NULL, NULL, NULL, 0 };
    jobs_file file;
    uint64_t per_type = 0;
    int status = CLI_EXIT_USAGE;
    if (opts[OPT_GPUS].value && !cli_opt_u64("gpus", opts[OPT_GPUS].value, 1, UINT64_MAX, &per_type))
        return CLI_EXIT_USAGE;
    if (opts[OPT_GPUS].value && every_type_counted(opts[OPT_GPU].value)) {
        cli_error("--gpus %s: every --gpu entry has its own count ('%s'), and --gpus counts only "
                  "the types given without one: leave it out", opts[OPT_GPUS].value,
                  opts[OPT_GPU].value);
        return CLI_EXIT_USAGE;
    }
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK || llmem_pack_new(ctx, &env.pack) != LLMEM_OK ||
        llmem_estimate_new(ctx, &env.est) != LLMEM_OK) {
        cli_error("cannot create a library context (out of memory)");
        status = CLI_EXIT_ESTIMATE;
        goto done_ctx;
    }
    env.ctx = ctx;
    if (!add_fleet(ctx, env.pack, opts[OPT_GPU].value, per_type, &env.gpu) ||
        !settings(ctx, env.pack, opts))
        goto done_ctx;
    if (!cli_jobs_read(opts[OPT_JOBS].value, &file)) {
        status = CLI_EXIT_ESTIMATE;
        goto done_ctx;
    }
    status = CLI_EXIT_OK;
    for (size_t j = 0; j < file.count && status == CLI_EXIT_OK; j++)
        status = add_job(&env, opts[OPT_JOBS].value, &file, j);
    if (status == CLI_EXIT_USAGE)
        status = CLI_EXIT_ESTIMATE; /* the file's problems are the input's, as --config's */
    if (status == CLI_EXIT_OK && llmem_pack_run(env.pack) != LLMEM_OK) {
        cli_error("%s", llmem_ctx_error(ctx));
        status = CLI_EXIT_ESTIMATE;
    }
    if (status == CLI_EXIT_OK) {
        int ok = fmt == OUT_TEXT   ? print_text(env.pack)
                 : fmt == OUT_JSON ? print_json(env.pack)
                                   : print_config(ctx, env.pack, fmt, opts[OPT_NAME].value);
        if (!ok)
            status = CLI_EXIT_ESTIMATE;
        else
            status = unplaced_verdict(env.pack);
    }
    cli_jobs_free(&file);
done_ctx:
    llmem_estimate_free(env.est);
    llmem_pack_free(env.pack);
    llmem_ctx_free(ctx);
    return status;
}

int cli_cmd_pack(int argc, char **argv)
{
    cli_opt opts[OPT_COUNT] = {
        [OPT_GPU] = { "gpu", 0, NULL },        [OPT_GPUS] = { "gpus", 0, NULL },
        [OPT_JOBS] = { "jobs", 0, NULL },      [OPT_MARGIN] = { "margin", 0, NULL },
        [OPT_PER_NODE] = { "gpus-per-node", 0, NULL },
        [OPT_NAME] = { "config-name", 0, NULL }, [OPT_DRIVER] = { "driver", 0, NULL },
        [OPT_FORMAT] = { "format", 0, NULL },
        [OPT_JSON] = { "json", 1, NULL },      [OPT_HELP] = { "help", 1, NULL },
    };
    out_format fmt;
    if (cli_opts_take(&argc, argv, opts, OPT_COUNT) != 0)
        return CLI_EXIT_USAGE;
    if (argc > 0) {
        cli_error("`llmem pack` does not take '%s' (estimate options go in the jobs file)",
                  argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (opts[OPT_HELP].value) {
        cli_usage_command(stdout, "pack");
        return CLI_EXIT_OK;
    }
    if (opts[OPT_GPU].value == NULL || opts[OPT_JOBS].value == NULL) {
        cli_error("`llmem pack` needs --gpu NAME[:COUNT][,...] and --jobs FILE");
        return CLI_EXIT_USAGE;
    }
    if (!parse_format(opts, &fmt))
        return CLI_EXIT_USAGE;
    return pack_jobs(opts, fmt);
}
