/* SPDX-License-Identifier: MIT */
/* The planner's search: every layout of the GPUs with valid divisibility,
 * each with the largest micro-batch that fits, ranked by the cost proxy. */
#include "plan/plan.h"

#include "core/ctx.h"
#include "train/setup.h"
#include "train/train.h"

#include <stdio.h>
#include <string.h>

/* Why a kind of layout cannot be estimated: the layout field the library
 * named, in words. */
static const struct {
    int key;
    const char *reason;
} reasons[] = {
    { LLMEM_PARALLEL_TP, "tp does not divide the heads, key/value heads or inner sizes" },
    { LLMEM_PARALLEL_PP, "more pipeline stages than layers" },
    { LLMEM_PARALLEL_EP, "ep does not divide the experts, dp or the FSDP shard group" },
    { LLMEM_PARALLEL_SHARDING, "DeepSpeed runs no zero3 with experts, no zero2 or zero3 with pipeline stages" },
    { LLMEM_PARALLEL_CP, "context parallelism needs fused attention and seq in 2 x cp chunks" },
    { LLMEM_PARALLEL_SP, "sequence parallelism is not modelled with this model or method, or "
                         "the seq does not split over tp" },
    { LLMEM_PARALLEL_OFFLOAD, "the engine does not offload that" },
};

/* Count a rejected layout under its reason. The example is the kind's
 * first, or, for layouts that do not fit (need: the bytes micro-batch 1
 * needs, 0 when not counted), the one that comes closest: what a user
 * would change to make a layout fit. */
static void reject_need(llmem_plan *p, const char *reason, const char *example, uint64_t need)
{
    size_t i = 0;
    while (i < p->nreject && strcmp(p->reject[i].reason, reason) != 0)
        i++;
    if (i == p->nreject) {
        if (p->nreject == PLAN_REJECT_KINDS)
            i = PLAN_REJECT_KINDS - 1; /* the last kind takes the rest */
        else {
            p->nreject++;
            p->reject[i].reason = reason;
            p->reject[i].layouts = 0;
            p->reject[i].need = need;
            snprintf(p->reject[i].example, PLAN_EXAMPLE_CAP, "%s", example);
        }
    } else if (need > 0 && strcmp(p->reject[i].reason, reason) == 0 &&
               (p->reject[i].need == 0 || need < p->reject[i].need)) {
        p->reject[i].need = need;
        snprintf(p->reject[i].example, PLAN_EXAMPLE_CAP, "%s", example);
    }
    p->reject[i].layouts++;
}

static void reject(llmem_plan *p, const char *reason, const char *example)
{
    reject_need(p, reason, example, 0);
}

/* The reason of the estimate's last failure. */
static const char *reason_of(llmem_ctx *ctx)
{
    int object = 0, key = 0;
    if (llmem_ctx_error_field(ctx, &object, &key) == LLMEM_OK && object == LLMEM_OBJECT_PARALLEL)
        for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
            if (reasons[i].key == key)
                return reasons[i].reason;
    return "cannot be estimated";
}

static int add_result(llmem_plan *p, const plan_result *r)
{
    if (p->nresults == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        plan_result *grown = llmem__alloc(p->ctx, cap * sizeof *grown);
        if (grown == NULL)
            return llmem__fail(p->ctx, LLMEM_ENOMEM, "plan: out of memory");
        if (p->nresults)
            memcpy(grown, p->results, p->nresults * sizeof *grown);
        llmem__free(p->ctx, p->results);
        p->results = grown;
        p->cap = cap;
    }
    p->results[p->nresults++] = *r;
    return LLMEM_OK;
}

/* One search: the train copy and layout handle it moves, and what it needs. */
typedef struct search {
    llmem_plan *p;
    llmem_model *model;
    llmem_train t;
    model_shape m;
    model_params params;
    uint64_t capacity;
    uint64_t last_peak; /* the last estimate's device peak; 0: beyond its range */
} search;

/* Micro-batches a step runs for micro-batch b: the global batch's share, or
 * two per pipeline stage to keep a pipeline busy. */
static uint64_t micro_batches_for(const search *x, uint64_t dp, uint64_t pp, uint64_t b)
{
    uint64_t g = (uint64_t)x->p->i[LLMEM_PLAN_GLOBAL_BATCH];
    if (g > 0)
        return g / (dp * b);
    return pp > 1 ? 2 * pp : 1;
}

/* Estimate at micro-batch b: 1 fits, 0 does not, < 0 cannot be estimated. */
static int try_batch(search *x, uint64_t dp, uint64_t pp, uint64_t b)
{
    llmem_plan *p = x->p;
    x->t.i[LLMEM_TRAIN_BATCH] = (int64_t)b;
    p->layout->i[LLMEM_PARALLEL_MICRO_BATCHES] = (int64_t)micro_batches_for(x, dp, pp, b);
    int rc = llmem_estimate_run_parallel(p->est, x->model, &x->t, p->layout);
    x->last_peak = 0;
    if (rc == LLMEM_EOVERFLOW)
        return 0;
    if (rc != LLMEM_OK)
        return rc;
    llmem_estimate_get_u64(p->est, LLMEM_EST_PEAK_DEVICE, &x->last_peak);
    return x->last_peak <= x->capacity;
}

/* Divisors of a number up to 2^30 number at most 1344. */
#define DIVISORS_MAX 1344

/* The largest micro-batch that fits this layout (0: none), bisecting the
 * candidates: the micro-batches up to the largest tried, or the divisors of
 * the global batch's share (every layout splits any batch). */
static int largest_batch(search *x, uint64_t dp, uint64_t pp, uint64_t *best)
{
    uint64_t cand[DIVISORS_MAX], n = 0, max = (uint64_t)x->p->i[LLMEM_PLAN_MAX_MICRO_BATCH];
    uint64_t g = (uint64_t)x->p->i[LLMEM_PLAN_GLOBAL_BATCH];
    *best = 0;
    if (g > 0) {
        for (uint64_t b = 1; b <= max && b <= g / dp && n < DIVISORS_MAX; b++)
            if (g % dp == 0 && (g / dp) % b == 0)
                cand[n++] = b;
    } else {
        n = max;
    }
    if (n == 0)
        return LLMEM_OK;
    int64_t lo = -1, hi = (int64_t)n - 1; /* cand[lo] fits, beyond hi does not */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        int ok = try_batch(x, dp, pp, g > 0 ? cand[mid] : (uint64_t)mid + 1);
        if (ok < 0)
            return ok;
        if (ok)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo >= 0)
        *best = g > 0 ? cand[lo] : (uint64_t)lo + 1;
    return LLMEM_OK;
}

/* "149.89 GiB (160948270848 bytes)": a unit a reader takes in, never 0,
 * and the exact count. */
static void size_text(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes >= (UINT64_C(1) << 30))
        snprintf(buf, cap, "%.2f GiB (%llu bytes)", (double)bytes / 1073741824.0,
                 (unsigned long long)bytes);
    else if (bytes >= (UINT64_C(1) << 20))
        snprintf(buf, cap, "%.2f MiB (%llu bytes)", (double)bytes / 1048576.0,
                 (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%llu bytes", (unsigned long long)bytes);
}

/* Why micro-batch 1 of the layout being tried does not fit (the last
 * estimate largest_batch ran): the layout and its bytes, or the estimate's
 * message when the bytes are beyond what it counts. */
static void fit_example(const search *x, char *buf, size_t cap)
{
    const int64_t *L = x->p->layout->i;
    int n = snprintf(buf, cap, "dp %lld tp %lld pp %lld cp %lld ep %lld sp %lld, sharding %s, "
                               "offload %s, grad-ckpt %s: ",
                     (long long)L[LLMEM_PARALLEL_DP], (long long)L[LLMEM_PARALLEL_TP],
                     (long long)L[LLMEM_PARALLEL_PP], (long long)L[LLMEM_PARALLEL_CP],
                     (long long)L[LLMEM_PARALLEL_EP], (long long)L[LLMEM_PARALLEL_SP],
                     llmem_parallel_value_name(LLMEM_PARALLEL_SHARDING, L[LLMEM_PARALLEL_SHARDING]),
                     llmem_parallel_value_name(LLMEM_PARALLEL_OFFLOAD, L[LLMEM_PARALLEL_OFFLOAD]),
                     llmem_train_value_name(LLMEM_TRAIN_GRAD_CKPT, x->t.i[LLMEM_TRAIN_GRAD_CKPT]));
    if (n < 0 || (size_t)n >= cap)
        return;
    if (x->last_peak == 0)
        snprintf(buf + n, cap - (size_t)n, "%s", llmem_ctx_error(x->p->ctx));
    else {
        /* x->capacity is the budget (budget_bytes), not the usable memory. */
        char need[48], budget[48];
        size_text(x->last_peak, need, sizeof need);
        size_text(x->capacity, budget, sizeof budget);
        snprintf(buf + n, cap - (size_t)n, "micro-batch 1 needs %s at the device level, above "
                 "the %s budget (the usable memory less the margin)", need, budget);
    }
}

/* One layout: its largest micro-batch, or why it is rejected. */
static int try_layout(search *x, uint64_t dp, uint64_t pp)
{
    llmem_plan *p = x->p;
    uint64_t b = 0;
    int rc = largest_batch(x, dp, pp, &b);
    if (rc == LLMEM_ENOMEM)
        return rc;
    if (rc < 0) {
        reject(p, reason_of(p->ctx), llmem_ctx_error(p->ctx));
        return LLMEM_OK;
    }
    if (b == 0) {
        char example[PLAN_EXAMPLE_CAP];
        uint64_t g = (uint64_t)p->i[LLMEM_PLAN_GLOBAL_BATCH];
        if (g > 0 && g % dp != 0) {
            snprintf(example, sizeof example, "global-batch %llu is not a multiple of dp %llu",
                     (unsigned long long)g, (unsigned long long)dp);
            reject(p, "the global batch does not split over dp", example);
        } else {
            fit_example(x, example, sizeof example);
            reject_need(p, "does not fit at micro-batch 1", example, x->last_peak);
        }
        return LLMEM_OK;
    }
    if ((rc = try_batch(x, dp, pp, b)) < 0)
        return rc;
    plan_result r;
    memset(&r, 0, sizeof r);
    memcpy(r.layout, p->layout->i, sizeof r.layout);
    r.micro_batch = b;
    r.micro_batches = (uint64_t)p->layout->i[LLMEM_PARALLEL_MICRO_BATCHES];
    r.grad_ckpt = (int)x->t.i[LLMEM_TRAIN_GRAD_CKPT];
    llmem_estimate_get_u64(p->est, LLMEM_EST_PEAK_DEVICE, &r.peak_device);
    r.headroom = x->capacity - r.peak_device;
    setup s;
    layout l;
    if ((rc = llmem_setup_resolve(&x->t, &x->m, p->ctx, &s)) != LLMEM_OK ||
        (rc = llmem_layout_resolve(p->ctx, p->layout, &x->m, &s, &l)) != LLMEM_OK)
        return rc;
    plan_cost_input in = { &x->m, &x->params, &s, &l, b, llmem_plan_gpus_per_node(p) };
    llmem_plan_cost(&in, &r);
    return add_result(p, &r);
}

/* Results best first: the throughput proxy, then headroom, then fewer shards. */
static int better(const plan_result *a, const plan_result *b)
{
    if (a->tokens_per_second != b->tokens_per_second)
        return a->tokens_per_second > b->tokens_per_second;
    return a->headroom > b->headroom;
}

static void sort_results(plan_result *r, size_t n)
{
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, n is small */
        plan_result x = r[i];
        size_t j = i;
        while (j > 0 && better(&x, &r[j - 1])) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
}

static const int shardings[] = { LLMEM_SHARDING_NONE, LLMEM_SHARDING_ZERO1, LLMEM_SHARDING_ZERO2,
                                 LLMEM_SHARDING_ZERO3, LLMEM_SHARDING_FSDP_FULL };

int llmem_plan_search(llmem_plan *p, llmem_model *model, const llmem_train *train)
{
    search x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.model = model;
    x.t = *train;
    int rc = llmem_model_resolve(model, &x.m, &x.params);
    if (rc != LLMEM_OK)
        return llmem__fail_from(p->ctx, model->ctx, rc); /* the model's message and field */
    /* What no layout changes is the setup's fault, not a rejection of every
     * layout: its message and field, as an estimate gives them. */
    setup s;
    if ((rc = llmem_setup_resolve(train, &x.m, p->ctx, &s)) != LLMEM_OK)
        return rc;
    uint64_t gpus = (uint64_t)p->i[LLMEM_PLAN_GPUS], per_node = llmem_plan_gpus_per_node(p);
    uint64_t margin = (uint64_t)p->i[LLMEM_PLAN_MARGIN_PERMILLE];
    /* The margin keeps ceil(U x margin / 1000) free: floor(U x keep / 1000)
     * is left, exactly, as fit and pack count it (pack/pack_fields.c). */
    uint64_t usable = llmem_plan_gpu_bytes(p, train), keep = 1000 - margin;
    x.capacity = usable / 1000 * keep + usable % 1000 * keep / 1000;
    int fused = train->i[LLMEM_TRAIN_ATTENTION] != LLMEM_ATTENTION_EAGER;
    uint64_t seq = (uint64_t)train->i[LLMEM_TRAIN_SEQ];
    int64_t *L = p->layout->i;
    /* Checkpointing: none, or the setup's variant (full, non-reentrant, when
     * it has none); the setup's own alone where the formula does not read it
     * (the article's). */
    int own = (int)train->i[LLMEM_TRAIN_GRAD_CKPT], nckpt = 2;
    int ckpts[2] = { LLMEM_GRAD_CKPT_NONE, own != LLMEM_GRAD_CKPT_NONE ? own : LLMEM_GRAD_CKPT_FULL };
    if (llmem_train_unread(train, LLMEM_TRAIN_GRAD_CKPT) != NULL) {
        ckpts[0] = own;
        nckpt = 1;
    }
    for (uint64_t tp = 1; tp <= gpus && tp <= per_node; tp *= 2) {
        /* A tensor-parallel group stays within a node: the job fits one, or
         * tp divides a node's GPUs (a node of 6 takes tp 1 and 2, of 3 only 1). */
        if (gpus % tp != 0 || (gpus > per_node && per_node % tp != 0))
            continue;
        /* Context parallelism only where sequences are long and attention fused. */
        for (uint64_t cp = 1; cp <= gpus / tp && cp <= 8; cp *= 2) {
            if ((gpus / tp) % cp != 0 || (cp > 1 && (!fused || seq < 8192)))
                continue;
            for (uint64_t pp = 1; pp <= gpus / (tp * cp); pp++) {
                if ((gpus / (tp * cp)) % pp != 0 || pp > x.m.layers)
                    continue;
                uint64_t dp = gpus / (tp * cp * pp);
                for (uint64_t ep = 1; ep <= dp; ep++) {
                    if (dp % ep != 0 || (ep > 1 && (x.m.experts == 0 || x.m.experts % ep != 0)))
                        continue;
                    for (size_t k = 0; k < sizeof shardings / sizeof shardings[0]; k++) {
                        /* the engines shard over dp x cp ranks (layout.c) */
                        if (dp * cp == 1 && shardings[k] != LLMEM_SHARDING_NONE)
                            continue;
                        const sharding_desc *sd = llmem_sharding(shardings[k]);
                        for (int sp = 0; sp <= (tp > 1); sp++) {
                            for (int ci = 0; ci < nckpt; ci++) {
                                int max_off = p->i[LLMEM_PLAN_OFFLOAD] ? LLMEM_OFFLOAD_PARAMETERS
                                                                       : LLMEM_OFFLOAD_NONE;
                                for (int off = LLMEM_OFFLOAD_NONE; off <= max_off; off++) {
                                    if (!llmem_sharding_offloads(sd, off))
                                        continue; /* no engine to ask */
                                    L[LLMEM_PARALLEL_DP] = (int64_t)dp;
                                    L[LLMEM_PARALLEL_TP] = (int64_t)tp;
                                    L[LLMEM_PARALLEL_PP] = (int64_t)pp;
                                    L[LLMEM_PARALLEL_EP] = (int64_t)ep;
                                    L[LLMEM_PARALLEL_CP] = (int64_t)cp;
                                    L[LLMEM_PARALLEL_SP] = sp;
                                    L[LLMEM_PARALLEL_SHARDING] = shardings[k];
                                    L[LLMEM_PARALLEL_OFFLOAD] = off;
                                    x.t.i[LLMEM_TRAIN_GRAD_CKPT] = ckpts[ci];
                                    if ((rc = try_layout(&x, dp, pp)) != LLMEM_OK)
                                        return rc;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    sort_results(p->results, p->nresults);
    return LLMEM_OK;
}
