/* SPDX-License-Identifier: MIT */
/* A layout checked against a model and a setup, and its rank classes. */
#include "parallel/parallel.h"

#include "core/ctx.h"

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
    } else if (l->virtual_stages != 1) {
        return FAIL(ctx, VIRTUAL_STAGES, "virtual-stages: %llu needs --schedule interleaved",
                    U(l->virtual_stages));
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
    } else if (group != 0) {
        return FAIL(ctx, SHARD_GROUP, "shard-group: %llu needs --sharding fsdp-hybrid", U(group));
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
    return llmem_layout_check_point(ctx, l, s);
}

int llmem_layout_check_point(llmem_ctx *ctx, const layout *l, const setup *s)
{
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
    int rc;
    if ((rc = check_tp(ctx, l, m)) != LLMEM_OK || (rc = check_pipeline(ctx, l, m)) != LLMEM_OK ||
        (rc = check_sharding(ctx, p, l)) != LLMEM_OK || (rc = check_other(ctx, l, m, s)) != LLMEM_OK)
        return rc;
    if (l->dp * l->tp * l->pp * l->cp > (UINT64_C(1) << 24))
        return FAIL(ctx, DP, "dp: dp x tp x pp x cp = %llu GPUs is beyond 2^24",
                    U(l->dp * l->tp * l->pp * l->cp));
    return LLMEM_OK;
}

/* Layers of stage s: an even split, the remainder going one each to the
 * stages after the first (which already holds the embedding). */
static void stage_layers(const layout *l, uint64_t layers, uint64_t s, uint64_t *first,
                         uint64_t *count)
{
    uint64_t base = layers / l->pp, extra = layers % l->pp;
    *count = base + (s >= 1 && s <= extra ? 1 : 0);
    *first = s * base + (s >= 1 ? (s - 1 < extra ? s - 1 : extra) : 0);
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

int llmem_layout_ranks(const layout *l, const model_shape *m, rank_class *out)
{
    uint64_t stages[RANKS_MAX], per_stage = l->dp * l->tp * l->cp;
    int n = 0;
    stages[n++] = 0;
    if (l->pp >= 3)
        stages[n++] = 1;
    if (l->pp >= 2)
        stages[n++] = l->pp - 1;
    for (int i = 0; i < n; i++) {
        rank_class *r = &out[i];
        uint64_t s = stages[i];
        memset(r, 0, sizeof *r);
        r->stage = s;
        stage_layers(l, m->layers, s, &r->layer_first, &r->layers);
        r->embedding = s == 0;
        r->head = s == l->pp - 1;
        in_flight(l, s, &r->in_flight_num, &r->in_flight_den);
        r->gpus = per_stage * (l->pp >= 3 && s == 1 ? l->pp - 2 : 1);
    }
    return n;
}
