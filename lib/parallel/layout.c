/* SPDX-License-Identifier: MIT */
/* A layout checked against a model and a setup, and its rank classes. */
#include "parallel/parallel.h"

#include "core/ctx.h"
#include "model/families.h"

#include <string.h>

#define FAIL(ctx, key, ...) \
    llmem__fail_field(ctx, LLMEM_OBJECT_PARALLEL, LLMEM_PARALLEL_##key, LLMEM_EINCONSISTENT, \
                      __VA_ARGS__)
#define U(x) ((unsigned long long)(x))

/* Tensor parallelism splits attention heads, key/value heads and the MLP's
 * inner size over its ranks (Megatron-LM requires each to divide: the
 * column-parallel linears split their outputs evenly). */
static int check_tp(llmem_ctx *ctx, const layout *l, const model_shape *m)
{
    uint64_t t = l->tp;
    if (m->heads % t != 0)
        return FAIL(ctx, TP, "tp: %llu does not divide the %llu attention heads", U(t), U(m->heads));
    if (m->kv_lora_rank == 0 && m->kv_heads % t != 0)
        return FAIL(ctx, TP, "tp: %llu does not divide the %llu key/value heads", U(t),
                    U(m->kv_heads));
    if ((m->experts == 0 || m->dense_layers > 0) && m->intermediate % t != 0)
        return FAIL(ctx, TP, "tp: %llu does not divide the MLP's inner size %llu", U(t),
                    U(m->intermediate));
    if (m->shared_intermediate % t != 0)
        return FAIL(ctx, TP, "tp: %llu does not divide the shared expert's inner size %llu", U(t),
                    U(m->shared_intermediate));
    return LLMEM_OK;
}

static int check_pipeline(llmem_ctx *ctx, const layout *l, const model_shape *m)
{
    if (l->pp > m->layers)
        return FAIL(ctx, PP, "pp: %llu stages for %llu layers", U(l->pp), U(m->layers));
    if (l->schedule == LLMEM_SCHEDULE_INTERLEAVED) {
        if (l->pp < 2)
            return FAIL(ctx, SCHEDULE, "schedule: interleaved needs pp >= 2");
        if (l->virtual_stages < 2)
            return FAIL(ctx, VIRTUAL_STAGES, "virtual-stages: interleaved needs at least 2");
        /* Megatron's interleaved schedule: layers divide into pp x v equal chunks. */
        if (m->layers % (l->pp * l->virtual_stages) != 0)
            return FAIL(ctx, VIRTUAL_STAGES,
                        "virtual-stages: %llu layers do not split into pp %llu x %llu chunks",
                        U(m->layers), U(l->pp), U(l->virtual_stages));
    }
    return LLMEM_OK;
}

/* Sharding and offload as the engines allow them. */
static int check_sharding(llmem_ctx *ctx, const llmem_parallel *p, layout *l)
{
    uint64_t group = (uint64_t)p->i[LLMEM_PARALLEL_SHARD_GROUP];
    const sharding_desc *sh = l->sharding;
    if (sh->hybrid) {
        if (group == 0)
            group = l->dp;
        if (l->dp % group != 0)
            return FAIL(ctx, SHARD_GROUP, "shard-group: %llu does not divide dp %llu", U(group),
                        U(l->dp));
    }
    /* Context-parallel ranks hold the same parameters as data-parallel
     * replicas, and the engines shard over both: torchtitan flattens
     * dp_shard and cp into FSDP2's mesh (parallel_dims.py), Megatron's
     * distributed optimizer takes the data-parallel group with context
     * parallelism (get_data_parallel_group(with_context_parallel=True)). */
    l->shard = sh->states ? (sh->hybrid ? group : l->dp) * l->cp : 1;
    if (llmem_sharding_offloads(sh, l->offload))
        return LLMEM_OK;
    if (l->offload == LLMEM_OFFLOAD_OPTIMIZER)
        return FAIL(ctx, OFFLOAD, "offload: the optimizer is offloaded by DeepSpeed ZeRO "
                                  "(zero1, zero2, zero3), not with sharding %s",
                    sh->id.name);
    return FAIL(ctx, OFFLOAD, "offload: parameters are offloaded by zero3 or fsdp, not with "
                              "sharding %s",
                sh->id.name);
}

static int check_other(llmem_ctx *ctx, const layout *l, const model_shape *m, const setup *s)
{
    if (l->ep > 1 && m->experts == 0)
        return FAIL(ctx, EP, "ep: %llu needs a mixture-of-experts model", U(l->ep));
    if (m->experts % l->ep != 0)
        return FAIL(ctx, EP, "ep: %llu does not divide the %llu experts", U(l->ep), U(m->experts));
    /* Megatron carves the expert-parallel group out of the data-parallel ranks. */
    if (l->dp % l->ep != 0)
        return FAIL(ctx, EP, "ep: %llu does not divide dp %llu", U(l->ep), U(l->dp));
    /* DeepSpeed refuses ZeRO-3 with its MoE layers (runtime/engine.py: "MoE
     * not supported with Stage 3"); ZeRO-1/2 shard the experts over their
     * own data-parallel group (shard.c). FSDP shards them as torchtitan
     * does (shard.c), over the shard group's ranks outside the expert
     * group: ep must then divide the shard group. */
    if (l->ep > 1 && l->shard > 1 && l->sharding->params && l->sharding->deepspeed)
        return FAIL(ctx, SHARDING, "sharding: DeepSpeed runs no MoE layers (ep %llu) under "
                                   "zero3; use zero1 or zero2",
                    U(l->ep));
    /* DeepSpeed's PipelineEngine asserts a ZeRO stage below 2
     * (runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with
     * pipeline parallelism"). */
    if (l->pp > 1 && l->sharding->deepspeed && l->sharding->grads)
        return FAIL(ctx, SHARDING, "sharding: DeepSpeed's pipeline engine refuses %s (pp %llu): "
                                   "ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                                   "parallelism; use zero1",
                    l->sharding->id.name, U(l->pp));
    if (l->ep > 1 && l->sharding->fsdp && l->shard % l->ep != 0)
        return FAIL(ctx, EP, "ep: %llu does not divide the %s shard group of %llu ranks (FSDP "
                             "shards the experts over the group's ranks outside the expert group)",
                    U(l->ep), l->sharding->id.name, U(l->shard));
    if (l->sp && l->tp < 2)
        return FAIL(ctx, SP, "sp: sequence parallelism splits over tp ranks: needs tp >= 2");
    if (l->sp && (s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA))
        return FAIL(ctx, SP, "sp: sequence parallelism with LoRA adapters is not modelled");
    return llmem_layout_check_point(ctx, l, m, s);
}

int llmem_layout_check_point(llmem_ctx *ctx, const layout *l, const model_shape *m,
                             const setup *s)
{
    /* Where alternate layers take the window, stages of an odd first layer
     * and of an even one differ: the rank classes do not tell them apart. */
    if (l->pp > 1 && llmem_model_window_alternates(m, s->attention, s->seq))
        return llmem__fail_field(ctx, LLMEM_OBJECT_PARALLEL, LLMEM_PARALLEL_PP, LLMEM_ENOTSUP,
                                 "pp: %llu stages with a sliding window (%llu) on alternate "
                                 "layers (seq %llu reaches it, under sdpa) are not modelled; "
                                 "use pp 1, a seq below the window, or --attention eager or "
                                 "flash",
                                 U(l->pp), U(m->sliding_window), U(s->seq));
    if (l->cp > 1) {
        /* Ring attention (Megatron/TE context parallelism) splits each sequence
         * into 2 x cp chunks for load balance, with a fused attention kernel. */
        if (s->seq % (2 * l->cp) != 0)
            return FAIL(ctx, CP, "cp: seq %llu does not split into 2 x cp = %llu chunks",
                        U(s->seq), U(2 * l->cp));
        if (s->attention == LLMEM_ATTENTION_EAGER)
            return FAIL(ctx, CP, "cp: context parallelism runs fused attention, not eager");
    }
    /* Sequence parallelism splits the sequence a context-parallel rank holds
     * over tp ranks: Megatron scatters [s, b, h] along s
     * (scatter_to_sequence_parallel_region), torch's SequenceParallel style
     * [b, s, h] along s. The batch does not help. */
    if (l->sp && (s->seq / l->cp) % l->tp != 0) {
        if (l->cp > 1)
            return FAIL(ctx, SP, "sp: seq / cp = %llu positions a rank holds do not split over "
                                 "tp %llu (sequence parallelism splits the sequence)",
                        U(s->seq / l->cp), U(l->tp));
        return FAIL(ctx, SP, "sp: seq %llu does not split over tp %llu (sequence parallelism "
                             "splits the sequence)",
                    U(s->seq), U(l->tp));
    }
    return LLMEM_OK;
}

uint64_t llmem_gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Context parallelism splits a sequence into 2 x cp chunks, sequence
 * parallelism a rank's seq / cp positions over tp ranks; any batch splits. */
uint64_t llmem_parallel_step(const llmem_parallel *p, int key)
{
    uint64_t step = 1;
    if (p == NULL)
        return 1;
    uint64_t cp = (uint64_t)p->i[LLMEM_PARALLEL_CP], tp = (uint64_t)p->i[LLMEM_PARALLEL_TP];
    if (key == LLMEM_TRAIN_SEQ && cp > 1)
        step = 2 * cp;
    if (key == LLMEM_TRAIN_SEQ && p->i[LLMEM_PARALLEL_SP] && tp > 1) {
        /* seq / cp divides by tp (any batch) */
        uint64_t unit = cp * tp;
        step = step / llmem_gcd(step, unit) * unit; /* at most 2^21 x 2^40 */
    }
    return step;
}

int llmem_layout_resolve(llmem_ctx *ctx, const llmem_parallel *p, const model_shape *m,
                         const setup *s, layout *l)
{
    memset(l, 0, sizeof *l);
    l->dp = l->tp = l->pp = l->ep = l->cp = l->micro_batches = l->virtual_stages = 1;
    l->shard = 1;
    l->sharding = llmem_sharding(LLMEM_SHARDING_NONE);
    l->offload = LLMEM_OFFLOAD_NONE;
    l->schedule = LLMEM_SCHEDULE_1F1B;
    if (p == NULL)
        return LLMEM_OK;
    l->dp = (uint64_t)p->i[LLMEM_PARALLEL_DP];
    l->tp = (uint64_t)p->i[LLMEM_PARALLEL_TP];
    l->pp = (uint64_t)p->i[LLMEM_PARALLEL_PP];
    l->ep = (uint64_t)p->i[LLMEM_PARALLEL_EP];
    l->cp = (uint64_t)p->i[LLMEM_PARALLEL_CP];
    l->sp = (int)p->i[LLMEM_PARALLEL_SP];
    l->sharding = llmem_sharding((int)p->i[LLMEM_PARALLEL_SHARDING]);
    l->offload = (int)p->i[LLMEM_PARALLEL_OFFLOAD];
    l->micro_batches = (uint64_t)p->i[LLMEM_PARALLEL_MICRO_BATCHES];
    l->schedule = (int)p->i[LLMEM_PARALLEL_SCHEDULE];
    l->virtual_stages = (uint64_t)p->i[LLMEM_PARALLEL_VIRTUAL_STAGES];
    l->bucket_elements = (uint64_t)p->i[LLMEM_PARALLEL_BUCKET_ELEMENTS];
    int rc = llmem_parallel_check_unread(ctx, p);
    if (rc != LLMEM_OK ||
        (rc = check_tp(ctx, l, m)) != LLMEM_OK || (rc = check_pipeline(ctx, l, m)) != LLMEM_OK ||
        (rc = check_sharding(ctx, p, l)) != LLMEM_OK || (rc = check_other(ctx, l, m, s)) != LLMEM_OK)
        return rc;
    if (l->dp * l->tp * l->pp * l->cp > (UINT64_C(1) << 24))
        return FAIL(ctx, DP, "dp: dp x tp x pp x cp = %llu GPUs is beyond 2^24",
                    U(l->dp * l->tp * l->pp * l->cp));
    return LLMEM_OK;
}

/* Layers of stage s. 1F1B: an even split, the remainder going one each to
 * the stages after the first (which already holds the embedding). The
 * interleaved schedule: v model chunks of layers / (pp x v) layers, chunk c
 * of stage s being the (c x pp + s)-th (Megatron's virtual pipeline,
 * get_num_layers_to_build and the model chunks' offsets). */
static void stage_layers(const layout *l, uint64_t layers, uint64_t s, rank_class *r)
{
    if (l->schedule == LLMEM_SCHEDULE_INTERLEAVED) {
        uint64_t per = layers / (l->pp * l->virtual_stages);
        r->layer_first = s * per;
        r->layers = per * l->virtual_stages;
        r->chunks = l->virtual_stages;
        r->chunk_stride = per * l->pp;
        return;
    }
    uint64_t base = layers / l->pp, extra = layers % l->pp;
    r->layers = base + (s >= 1 && s <= extra ? 1 : 0);
    r->layer_first = s * base + (s >= 1 ? (s - 1 < extra ? s - 1 : extra) : 0);
    r->chunks = 1;
    r->chunk_stride = 0;
}

/* Layers of rank class r below layer b: a row of the interleaved layout
 * (chunk_stride layers) holds one chunk of r. */
static uint64_t below(const rank_class *r, uint64_t b)
{
    uint64_t per = r->layers / r->chunks, full = 0;
    if (r->chunks > 1) {
        full = b / r->chunk_stride;
        if (full >= r->chunks)
            return r->layers;
        b -= full * r->chunk_stride;
    }
    uint64_t part = b > r->layer_first ? b - r->layer_first : 0;
    return full * per + (part < per ? part : per);
}

uint64_t llmem_rank_overlap(const rank_class *r, uint64_t first, uint64_t count)
{
    return below(r, first + count) - below(r, first);
}

/* The stage running layer b. */
static uint64_t stage_of(const layout *l, uint64_t layers, uint64_t b)
{
    if (l->schedule == LLMEM_SCHEDULE_INTERLEAVED) {
        uint64_t per = layers / (l->pp * l->virtual_stages);
        return b % (per * l->pp) / per;
    }
    uint64_t lo = 0, hi = l->pp - 1; /* the last stage whose first layer is at most b */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        rank_class r;
        stage_layers(l, layers, mid, &r);
        if (r.layer_first <= b)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Micro-batches whose forward state stage s holds at once: 1F1B warms up
 * with pp - s of them (PipeDream-Flush, Narayanan et al. 2021); Megatron's
 * interleaved schedule warms up with (pp - s - 1) x 2 + (v - 1) x pp chunks
 * plus the one in steady state (schedules.py,
 * forward_backward_pipelining_with_interleaving), each 1/v of the stage. */
static void in_flight(const layout *l, uint64_t s, uint64_t *num, uint64_t *den)
{
    uint64_t m = l->micro_batches;
    if (l->schedule == LLMEM_SCHEDULE_INTERLEAVED) {
        uint64_t v = l->virtual_stages, chunks = (l->pp - s - 1) * 2 + (v - 1) * l->pp + 1;
        *num = chunks < m * v ? chunks : m * v;
        *den = v;
        return;
    }
    *num = l->pp - s < m ? l->pp - s : m;
    *den = 1;
}

/* Whether stages a and b hold the same kinds of layers: as many, and as many
 * below each bound. */
static int alike(const rank_class *a, const rank_class *b, const uint64_t *bounds, int nbounds)
{
    if (a->layers != b->layers)
        return 0;
    for (int k = 0; k < nbounds; k++)
        if (below(a, bounds[k]) != below(b, bounds[k]))
            return 0;
    return 1;
}

/* Sort a few values (insertion: at most a dozen, on every new layout). */
static void sort_few(uint64_t *v, int n)
{
    for (int i = 1; i < n; i++) {
        uint64_t x = v[i];
        int j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

int llmem_layout_ranks(const layout *l, const model_shape *m, const uint64_t *bounds,
                       int nbounds, rank_class *out)
{
    /* The stages where the kinds of layers a stage holds may change: the
     * ends, each bound's stage and the next, and where the 1F1B split's
     * remainder ends. Between two of them stages are alike. */
    uint64_t at[4 + 2 * LAYER_RUNS_MAX], per_stage = l->dp * l->tp * l->cp;
    int nat = 0, n = 0;
    if (l->pp == 1) { /* one GPU's worth of stage: the whole model */
        memset(out, 0, sizeof *out);
        stage_layers(l, m->layers, 0, out);
        out->stages = out->embedding = out->head = 1;
        in_flight(l, 0, &out->in_flight_num, &out->in_flight_den);
        out->gpus = per_stage;
        return 1;
    }
    at[nat++] = 0;
    at[nat++] = 1;
    at[nat++] = l->pp - 1;
    at[nat++] = m->layers % l->pp + 1;
    for (int k = 0; k < nbounds && k < LAYER_RUNS_MAX; k++) {
        uint64_t s = stage_of(l, m->layers, bounds[k]);
        at[nat++] = s;
        at[nat++] = s + 1;
    }
    sort_few(at, nat);
    for (int i = 0; i < nat; i++) {
        uint64_t s = at[i];
        if (s >= l->pp || (i > 0 && s == at[i - 1]))
            continue;
        uint64_t next = l->pp;
        for (int j = i + 1; j < nat && next == l->pp; j++)
            if (at[j] > s && at[j] < l->pp)
                next = at[j];
        rank_class r;
        memset(&r, 0, sizeof r);
        r.stage = s;
        r.stages = next - s;
        stage_layers(l, m->layers, s, &r);
        r.embedding = s == 0;
        r.head = s == l->pp - 1;
        in_flight(l, s, &r.in_flight_num, &r.in_flight_den);
        r.gpus = per_stage * r.stages;
        /* A run of middle stages like the one before stands with it: the
         * earlier holds more micro-batches in flight. */
        rank_class *prev = n > 0 ? &out[n - 1] : NULL;
        if (prev != NULL && !prev->embedding && !r.head && alike(prev, &r, bounds, nbounds)) {
            prev->stages += r.stages;
            prev->gpus += r.gpus;
            continue;
        }
        if (n == RANKS_MAX) /* beyond the bound in parallel.h: a bug */
            return -1;
        out[n++] = r;
    }
    return n;
}
