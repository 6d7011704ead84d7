/* SPDX-License-Identifier: MIT */
/*
 * The fit handle: every plain MIG profile of a GPU that the driver branch
 * (LLMEM_FIT_DRIVER) has, by usable bytes, then the whole GPU, each with whether it holds a job's device-level need with the
 * margin (usable >= the least bytes that hold it, llmem_pack_required), its
 * budget (usable less the margin), headroom (budget - need) or shortfall.
 * Changing a setting drops the options, which were worked out with the old
 * one.
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"

#include <string.h>

#define FIT_MAX_OPTIONS 16

typedef struct fit_option {
    size_t profile;
    int whole;
    int fits;
    uint64_t usable, compute, need, required, budget, headroom, shortfall;
} fit_option;

struct llmem_fit {
    llmem_ctx *ctx;
    int64_t i[FIT_KEY_END];
    double d[FIT_KEY_END];
    size_t gpu, count;
    int64_t driver; /* the branch of the options (their names) */
    fit_option opt[FIT_MAX_OPTIONS];
};

int llmem_fit_new(llmem_ctx *ctx, llmem_fit **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "fit: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_fit *f = llmem__calloc(ctx, sizeof *f);
    if (f == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "fit: out of memory");
    f->ctx = ctx;
    llmem_fields_defaults(&llmem_fit_fields, f->i, f->d);
    *out = f;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_fit_free(llmem_fit *fit)
{
    if (fit != NULL)
        llmem__free(fit->ctx, fit);
}

/* A setting changed: the options of the last run answered the old one. */
static void drop_if_changed(llmem_fit *fit, const int64_t *before)
{
    if (memcmp(before, fit->i, sizeof fit->i) != 0)
        fit->count = 0;
}

int llmem_fit_set_int(llmem_fit *fit, int key, int64_t value)
{
    int64_t before[FIT_KEY_END];
    if (fit == NULL)
        return LLMEM_EINVAL;
    memcpy(before, fit->i, sizeof before);
    int rc = llmem_pack_setting_int(fit->ctx, &llmem_fit_fields, fit->i, key, value);
    drop_if_changed(fit, before);
    return rc;
}

int llmem_fit_set_str(llmem_fit *fit, int key, const char *value)
{
    int64_t before[FIT_KEY_END];
    if (fit == NULL)
        return LLMEM_EINVAL;
    memcpy(before, fit->i, sizeof before);
    int rc = llmem_pack_setting_str(fit->ctx, &llmem_fit_fields, fit->i, key, value);
    drop_if_changed(fit, before);
    return rc;
}

int llmem_fit_get_int(const llmem_fit *fit, int key, int64_t *out)
{
    if (fit == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(fit->ctx, LLMEM_EINVAL, "llmem_fit_get_int: out is NULL");
    return llmem_pack_setting_get(fit->ctx, &llmem_fit_fields, fit->i, key, out);
}

int llmem_fit_field_info(int key, const char **name, int64_t *min, int64_t *max)
{
    return llmem_fields_info(&llmem_fit_fields, key, name, min, max, NULL);
}

/* Smaller usable bytes first, then fewer compute slices; the whole GPU
 * last. A profile's bytes are its lgip figure and the whole GPU's the CUDA
 * total with MIG off, the lowest of each over the drivers reported: on the
 * H100 SXM the 7g.80gb's (81152 MiB) is above the whole GPU's (81079 MiB, a
 * CUDA 13.0 driver), from different drivers (docs/mig.md). A slice of the
 * GPU is no larger option than the GPU itself, so the whole GPU comes after
 * it whatever the two figures. */
static int option_before(const fit_option *a, const fit_option *b)
{
    if (a->whole != b->whole)
        return b->whole;
    if (a->usable != b->usable)
        return a->usable < b->usable;
    if (a->compute != b->compute)
        return a->compute < b->compute;
    return a->profile < b->profile;
}

static void add_option(fit_option *list, size_t *n, size_t profile, int whole, uint64_t usable,
                       uint64_t compute)
{
    fit_option o;
    memset(&o, 0, sizeof o);
    o.profile = profile;
    o.whole = whole;
    o.usable = usable;
    o.compute = compute;
    size_t i = (*n)++;
    for (; i > 0 && option_before(&o, &list[i - 1]); i--)
        list[i] = list[i - 1];
    list[i] = o;
}

int llmem_fit_run(llmem_fit *fit, size_t gpu, uint64_t bytes, int level)
{
    fit_option list[FIT_MAX_OPTIONS];
    size_t n = 0;
    if (fit == NULL)
        return LLMEM_EINVAL;
    const gpu_desc *g = llmem_gpu_row(gpu);
    if (g == NULL)
        return llmem__fail(fit->ctx, LLMEM_ERANGE, "fit: no GPU of index %zu", gpu);
    if (bytes == 0)
        return llmem__fail(fit->ctx, LLMEM_ERANGE, "fit: bytes must be positive");
    if (level != LLMEM_LEVEL_DEVICE && level != LLMEM_LEVEL_RESERVED)
        return llmem__fail(fit->ctx, LLMEM_EINVAL,
                           "fit: level %d: the device or the reserved level expected", level);
    uint64_t context = llmem_gpu_arch_row(g->arch)->context;
    /* A need or a requirement beyond 64 bits is held by no option, as a
     * packed job that fits nowhere: both saturate at UINT64_MAX, and the
     * shortfall is UINT64_MAX ("beyond 64 bits"). */
    int exact = level != LLMEM_LEVEL_RESERVED || bytes <= UINT64_MAX - context;
    uint64_t need = !exact ? UINT64_MAX : level == LLMEM_LEVEL_RESERVED ? bytes + context : bytes;
    uint64_t required = UINT64_MAX;
    if (exact)
        exact = llmem_pack_required(need, fit->i[LLMEM_FIT_MARGIN_PERMILLE], &required);
    uint64_t min_compute = (uint64_t)fit->i[LLMEM_FIT_MIN_COMPUTE];
    size_t profiles = g->mig ? g->mig->count : 0;
    for (size_t i = 0; i < profiles; i++) {
        const mig_profile_desc *m = &g->mig->profiles[i];
        if (m->variant == LLMEM_MIG_PLAIN && llmem_mig_on_driver(m, fit->i[LLMEM_FIT_DRIVER]) &&
            n < FIT_MAX_OPTIONS - 1)
            add_option(list, &n, i, 0, m->usable, m->compute);
    }
    add_option(list, &n, profiles, 1, g->usable, g->mig ? g->mig->compute : 0);
    for (size_t i = 0; i < n; i++) {
        fit_option *o = &list[i];
        o->need = need;
        o->required = required;
        o->fits = exact && o->usable >= required && (o->whole || o->compute >= min_compute);
        /* budget >= need exactly when usable >= required: the headroom is
         * the room below the margin's line, as estimate's and plan's. */
        o->budget = llmem_pack_budget(o->usable, fit->i[LLMEM_FIT_MARGIN_PERMILLE]);
        o->headroom = exact && o->budget >= need ? o->budget - need : 0;
        o->shortfall = !exact ? UINT64_MAX
                       : o->fits || o->usable >= required ? 0
                                                          : required - o->usable;
    }
    memcpy(fit->opt, list, n * sizeof list[0]);
    fit->count = n;
    fit->gpu = gpu;
    fit->driver = fit->i[LLMEM_FIT_DRIVER];
    llmem__ok(fit->ctx);
    return LLMEM_OK;
}

size_t llmem_fit_count(const llmem_fit *fit)
{
    return fit ? fit->count : 0;
}

int llmem_fit_best(const llmem_fit *fit, size_t *option)
{
    if (fit == NULL)
        return LLMEM_EINVAL;
    if (option == NULL)
        return llmem__fail(fit->ctx, LLMEM_EINVAL, "llmem_fit_best: option is NULL");
    for (size_t i = 0; i < fit->count; i++)
        if (fit->opt[i].fits) {
            *option = i;
            return LLMEM_OK;
        }
    return LLMEM_ENOTFOUND;
}

int llmem_fit_get_u64(const llmem_fit *fit, size_t option, int key, uint64_t *out)
{
    if (fit == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(fit->ctx, LLMEM_EINVAL, "llmem_fit_get_u64: out is NULL");
    if (option >= fit->count)
        return llmem__fail(fit->ctx, LLMEM_ERANGE, "fit: option %zu of %zu", option, fit->count);
    const fit_option *o = &fit->opt[option];
    switch (key) {
    case LLMEM_FIT_PROFILE: *out = o->profile; break;
    case LLMEM_FIT_WHOLE_GPU: *out = (uint64_t)o->whole; break;
    case LLMEM_FIT_FITS: *out = (uint64_t)o->fits; break;
    case LLMEM_FIT_USABLE_BYTES: *out = o->usable; break;
    case LLMEM_FIT_NEED_BYTES: *out = o->need; break;
    case LLMEM_FIT_REQUIRED_BYTES: *out = o->required; break;
    case LLMEM_FIT_HEADROOM_BYTES: *out = o->headroom; break;
    case LLMEM_FIT_BUDGET_BYTES: *out = o->budget; break;
    case LLMEM_FIT_SHORTFALL_BYTES: *out = o->shortfall; break;
    case LLMEM_FIT_COMPUTE_SLICES: *out = o->compute; break;
    default: return llmem__fail(fit->ctx, LLMEM_EINVAL, "fit: unknown option key %d", key);
    }
    return LLMEM_OK;
}

const char *llmem_fit_name(const llmem_fit *fit, size_t option)
{
    if (fit == NULL || option >= fit->count)
        return NULL;
    if (fit->opt[option].whole)
        return "whole";
    return llmem_mig_driver_name(fit->gpu, fit->opt[option].profile, fit->driver);
}
