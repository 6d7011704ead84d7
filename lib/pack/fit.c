/* SPDX-License-Identifier: MIT */
/*
 * The fit handle: every plain MIG profile of a GPU that the driver branch
 * (LLMEM_FIT_DRIVER) has, by usable bytes, then the whole GPU, each with whether it holds a job's device-level need with the
 * margin (usable >= the least bytes that hold it, llmem_pack_required), its
 * budget (usable less the margin), headroom (budget - need) or shortfall.
 * Changing a setting drops the options, which were worked out with the old
 * one.
 *
 * Running instances (llmem_fit_add_running) are the MIG instances a GPU
 * already runs and keeps: each is checked, in the order added, by the rules
 * the pack's layout walk applies (llmem_pack_refusal, layouts.c), and an
 * option is placeable where one more instance of it passes the same rules
 * next to them; the whole GPU only when nothing runs. A variant ("+me")
 * runs as the plain profile whose placements it shares (mig_configs.md 1d:
 * "profile IDs 19/20 share placements"), within its own maximum count too.
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"

#include <stdio.h>
#include <string.h>

#define FIT_MAX_OPTIONS 16
#define FIT_MAX_RUNNING PACK_MAX_UNITS /* more than any GPU holds (7) */

typedef struct fit_option {
    size_t profile;
    int whole;
    int fits, placeable;
    uint64_t usable, compute, need, required, budget, headroom, shortfall;
    uint64_t starts, start; /* where it can be created; start UINT64_MAX: nowhere */
} fit_option;

typedef struct fit_running {
    size_t profile, start;
} fit_running;

struct llmem_fit {
    llmem_ctx *ctx;
    int64_t i[FIT_KEY_END];
    double d[FIT_KEY_END];
    size_t gpu, count;
    int64_t driver; /* the branch of the options (their names) */
    fit_option opt[FIT_MAX_OPTIONS];
    size_t nrunning;
    fit_running running[FIT_MAX_RUNNING];
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

/* Instances are checked by the run, against its GPU and driver branch. */
int llmem_fit_add_running(llmem_fit *fit, size_t profile, size_t start)
{
    if (fit == NULL)
        return LLMEM_EINVAL;
    if (fit->nrunning >= FIT_MAX_RUNNING)
        return llmem__fail(fit->ctx, LLMEM_ERANGE,
                           "fit: at most %d running instances (no MIG GPU holds more than 7)",
                           FIT_MAX_RUNNING);
    fit->running[fit->nrunning].profile = profile;
    fit->running[fit->nrunning].start = start;
    fit->nrunning++;
    fit->count = 0;
    llmem__ok(fit->ctx);
    return LLMEM_OK;
}

int llmem_fit_clear_running(llmem_fit *fit)
{
    if (fit == NULL)
        return LLMEM_EINVAL;
    if (fit->nrunning > 0)
        fit->count = 0;
    fit->nrunning = 0;
    llmem__ok(fit->ctx);
    return LLMEM_OK;
}

/* The kind of t that catalog profile p runs as: its own for a plain profile;
 * for a variant, the plain profile whose name it extends ("1g.10gb" of
 * "1g.10gb+me") with the same slots, compute slices and starts. -1: none on
 * the branch. */
static int kind_of(const pack_type *t, const mig_table *mig, size_t p)
{
    const mig_profile_desc *m = &mig->profiles[p];
    for (int k = 0; k < t->nkinds; k++) {
        if (t->kind[k].whole)
            continue;
        const mig_profile_desc *b = &mig->profiles[t->kind[k].profile];
        size_t n = strlen(b->name);
        if (t->kind[k].profile == p ||
            (m->variant != LLMEM_MIG_PLAIN && strncmp(b->name, m->name, n) == 0 &&
             (m->name[n] == '+' || m->name[n] == '-') && b->slots == m->slots &&
             b->compute == m->compute && b->starts == m->starts))
            return k;
    }
    return -1;
}

/* "slot 4" or "slots 4-7": what an instance of `slots` slots at start covers. */
static void slots_text(char *buf, size_t cap, size_t start, unsigned slots)
{
    if (slots <= 1)
        snprintf(buf, cap, "slot %zu", start);
    else
        snprintf(buf, cap, "slots %zu-%zu", start, start + slots - 1);
}

/* Running instance i, as a message names it: "running instance 2
 * (3g.40gb@4)", numbered from 1 in the order added. */
static void running_text(const llmem_fit *fit, size_t gpu, size_t i, char *buf, size_t cap)
{
    const fit_running *r = &fit->running[i];
    snprintf(buf, cap, "running instance %zu (%s@%zu)", i + 1,
             llmem_mig_driver_name(gpu, r->profile, fit->i[LLMEM_FIT_DRIVER]), r->start);
}

/* Why running instance i is refused next to those before it, as a message. */
static int refuse_running(llmem_fit *fit, size_t gpu, const pack_type *t, const pack_placed *on,
                          size_t i, pack_refusal why)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    const fit_running *r = &fit->running[i];
    const mig_profile_desc *m = &g->mig->profiles[r->profile];
    int64_t driver = fit->i[LLMEM_FIT_DRIVER];
    char self[96], other[96], a[32], b[32], list[64];
    size_t used = 0;
    running_text(fit, gpu, i, self, sizeof self);
    switch (why) {
    case PACK_PLACE_START:
        list[0] = '\0';
        for (unsigned s = 0; s < 16; s++)
            if ((m->starts >> s & 1) && s + m->slots <= t->grid && used < sizeof list) {
                int n = snprintf(list + used, sizeof list - used, "%s%u", used ? ", " : "", s);
                used += n > 0 ? (size_t)n : 0;
            }
        return llmem__fail(fit->ctx, LLMEM_ERANGE, "fit: %s: %s starts at %s on %s, not %zu",
                           self, llmem_mig_driver_name(gpu, r->profile, driver), list,
                           g->id.name, r->start);
    case PACK_PLACE_OVERLAP:
        for (size_t j = 0; j < i; j++) {
            const fit_running *o = &fit->running[j];
            unsigned slots = g->mig->profiles[o->profile].slots;
            if (o->start < r->start + m->slots && r->start < o->start + slots) {
                running_text(fit, gpu, j, other, sizeof other);
                slots_text(a, sizeof a, r->start, m->slots);
                slots_text(b, sizeof b, o->start, slots);
                return llmem__fail(fit->ctx, LLMEM_EINVAL,
                                   "fit: %s: its %s overlap%s %s, on %s", self, a,
                                   m->slots <= 1 ? "s" : "", other, b);
            }
        }
        break;
    case PACK_PLACE_COUNT: {
        /* The kind's count, or a variant's own maximum. */
        int k = kind_of(t, g->mig, r->profile);
        size_t named = m->variant == LLMEM_MIG_PLAIN ? t->kind[k].profile : r->profile;
        unsigned most = m->variant == LLMEM_MIG_PLAIN ? t->kind[k].max : m->max_count;
        if (m->variant != LLMEM_MIG_PLAIN && on->count[k] >= t->kind[k].max) {
            named = t->kind[k].profile;
            most = t->kind[k].max;
        }
        return llmem__fail(fit->ctx, LLMEM_EINVAL, "fit: %s: %s holds at most %u %s%s", self,
                           g->id.name, most, llmem_mig_driver_name(gpu, named, driver),
                           named != r->profile ? " (variants included)" : "");
    }
    case PACK_PLACE_COMPUTE:
        return llmem__fail(fit->ctx, LLMEM_EINVAL,
                           "fit: %s: its %u compute slices and the %u of the instances before "
                           "it exceed the %u of %s",
                           self, (unsigned)m->compute, on->compute, (unsigned)t->compute,
                           g->id.name);
    case PACK_PLACE_APART:
        for (size_t j = 0; j < i; j++) {
            const mig_profile_desc *o = &g->mig->profiles[fit->running[j].profile];
            for (size_t p = 0; p < g->mig->npairs; p++)
                if (llmem_mig_pair_refused(&g->mig->pairs[p], m, o, driver)) {
                    running_text(fit, gpu, j, other, sizeof other);
                    return llmem__fail(fit->ctx, LLMEM_EINVAL,
                                       "fit: %s: driver branch %lld refuses it on one GPU "
                                       "with %s (accepted from R%u on)",
                                       self, (long long)driver, other,
                                       (unsigned)g->mig->pairs[p].since);
                }
        }
        break;
    default: break;
    }
    return llmem__fail(fit->ctx, LLMEM_EINVAL, "fit: %s: the GPU cannot hold it", self);
}

/* The running instances placed on t, in the order added, into on; the
 * first one refused fails with why, naming it. */
static int place_running(llmem_fit *fit, size_t gpu, const pack_type *t, pack_placed *on)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    size_t profiles = g->mig ? g->mig->count : 0;
    int64_t driver = fit->i[LLMEM_FIT_DRIVER];
    char self[96];
    for (size_t i = 0; i < fit->nrunning; i++) {
        const fit_running *r = &fit->running[i];
        if (r->profile >= profiles)
            return llmem__fail(fit->ctx, LLMEM_ERANGE,
                               "fit: running instance %zu: %s has no MIG profile %zu (%zu "
                               "profiles)",
                               i + 1, g->id.name, r->profile, profiles);
        const mig_profile_desc *m = &g->mig->profiles[r->profile];
        running_text(fit, gpu, i, self, sizeof self);
        if (!llmem_mig_on_driver(m, driver))
            return llmem__fail(fit->ctx, LLMEM_EINVAL,
                               "fit: %s: driver branch %lld has no %s (from R%u on)", self,
                               (long long)driver, m->name, (unsigned)m->since);
        int k = kind_of(t, g->mig, r->profile);
        if (k < 0)
            return llmem__fail(fit->ctx, LLMEM_ENOTSUP,
                               "fit: %s: no plain profile of its placements", self);
        unsigned at = r->start < t->grid ? (unsigned)r->start : t->grid;
        pack_refusal why = llmem_pack_refusal(t, on, k, at);
        if (why == PACK_PLACE_OK && m->variant != LLMEM_MIG_PLAIN) {
            unsigned same = 0;
            for (size_t j = 0; j < i; j++)
                same += fit->running[j].profile == r->profile;
            if (same >= m->max_count)
                why = PACK_PLACE_COUNT;
        }
        if (why != PACK_PLACE_OK)
            return refuse_running(fit, gpu, t, on, i, why);
        llmem_pack_place(t, on, k, at);
    }
    return LLMEM_OK;
}

/* Bit s: kind k can be created at slot s next to on. */
static uint64_t open_starts(const pack_type *t, const pack_placed *on, int k)
{
    uint64_t starts = 0;
    for (unsigned at = 0; at < t->grid; at++)
        if (llmem_pack_refusal(t, on, k, at) == PACK_PLACE_OK)
            starts |= UINT64_C(1) << at;
    return starts;
}

/* Where one more instance could still be created: (kind, start) pairs. */
static unsigned open_placements(const pack_type *t, const pack_placed *on)
{
    unsigned n = 0;
    for (int k = 0; k < t->nkinds; k++)
        for (unsigned at = 0; at < t->grid; at++)
            n += llmem_pack_refusal(t, on, k, at) == PACK_PLACE_OK;
    return n;
}

/* Of kind k's open starts, the one that leaves the most placements open
 * after it (the lowest of equals): a 1g at 6 on an empty 8-slot GPU, which
 * leaves a 4g at 0 and a 2g at 4, where one at 0 would take the 4g, the 3g
 * at 0, the 2g at 0 and the 7g. UINT64_MAX: none. */
static uint64_t best_start(const pack_type *t, const pack_placed *on, int k, uint64_t starts)
{
    uint64_t best = UINT64_MAX;
    unsigned most = 0;
    for (unsigned at = 0; at < t->grid; at++) {
        if (!(starts >> at & 1))
            continue;
        pack_placed after = *on;
        llmem_pack_place(t, &after, k, at);
        unsigned open = open_placements(t, &after);
        if (best == UINT64_MAX || open > most) {
            best = at;
            most = open;
        }
    }
    return best;
}

/* Where option o can be created next to on. */
static void place_option(const pack_type *t, const pack_placed *on, size_t nrunning,
                         fit_option *o)
{
    o->starts = 0;
    o->start = UINT64_MAX;
    if (o->whole) {
        o->starts = nrunning == 0;
        o->start = nrunning == 0 ? 0 : UINT64_MAX;
    } else {
        for (int k = 0; k < t->nkinds; k++)
            if (!t->kind[k].whole && t->kind[k].profile == o->profile) {
                o->starts = open_starts(t, on, k);
                o->start = best_start(t, on, k, o->starts);
            }
    }
    o->placeable = o->starts != 0;
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
    pack_type t;
    pack_placed on;
    if (fit == NULL)
        return LLMEM_EINVAL;
    const gpu_desc *g = llmem_gpu_row(gpu);
    if (g == NULL)
        return llmem__fail(fit->ctx, LLMEM_ERANGE, "fit: no GPU of index %zu", gpu);
    if (bytes == 0)
        return llmem__fail(fit->ctx, LLMEM_ERANGE, "fit: bytes 0: must be positive");
    if (level != LLMEM_LEVEL_DEVICE && level != LLMEM_LEVEL_RESERVED)
        return llmem__fail(fit->ctx, LLMEM_EINVAL,
                           "fit: level %d: the device or the reserved level expected", level);
    memset(&on, 0, sizeof on);
    int rc = llmem_pack_type_kinds(fit->ctx, &t, gpu, 0, fit->i[LLMEM_FIT_DRIVER]);
    if (rc == LLMEM_OK)
        rc = place_running(fit, gpu, &t, &on);
    if (rc != LLMEM_OK)
        return rc;
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
        place_option(&t, &on, fit->nrunning, o);
        o->fits = exact && o->usable >= required && (o->whole || o->compute >= min_compute) &&
                  o->placeable;
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
    case LLMEM_FIT_PLACEABLE: *out = (uint64_t)o->placeable; break;
    case LLMEM_FIT_START: *out = o->start; break;
    case LLMEM_FIT_STARTS: *out = o->starts; break;
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
