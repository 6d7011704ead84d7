/* SPDX-License-Identifier: MIT */
/*
 * The partitioning module through the public API: the layout handle, the
 * per-rank model states of each engine against the formulas the engines
 * publish (DeepSpeed's ZeRO estimators), tensor and pipeline splits, bad
 * layouts named by their field, the largest batch that fits, and the planner.
 */
#include "job_fixture.h"
#include "llmem.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Llama-2-7B: P = 6,738,415,616 parameters, divisible by 8. */
#define PRESET "meta-llama/Llama-2-7b-hf"
#define P UINT64_C(6738415616)

static fixture open_fixture(const char *preset)
{
    fixture f = open_job_handles(preset);
    /* The setup these tests were written for, before the defaults became
     * SDPA and the fused step (its step counters add 4 bytes a tensor to the
     * states the engines' formulas count): set explicitly. */
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_ATTENTION, "eager"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_OPTIMIZER_IMPL, "foreach"), LLMEM_OK);
    return f;
}

static void run(fixture *f)
{
    int rc = llmem_estimate_run_parallel(f->e, f->m, f->t, f->l);
    cr_assert_eq(rc, LLMEM_OK, "%s", llmem_ctx_error(f->ctx));
}

/* A rank's component of a term (0 when absent). */
static uint64_t rank_component(llmem_estimate *e, size_t rank, int kind, const char *name)
{
    const llmem_term *t;
    cr_assert_eq(llmem_estimate_rank_term(e, rank, kind, &t), LLMEM_OK);
    for (size_t i = 0; i < llmem_term_component_count(t); i++) {
        const char *n;
        uint64_t b;
        llmem_term_component(t, i, &n, &b);
        if (strcmp(n, name) == 0)
            return b;
    }
    return 0;
}

static uint64_t component(fixture *f, size_t rank, int kind, const char *name)
{
    return rank_component(f->e, rank, kind, name);
}

static uint64_t phase(fixture *f, size_t rank, int ph)
{
    uint64_t v = 0;
    cr_assert_eq(llmem_estimate_rank_phase_bytes(f->e, rank, ph, &v), LLMEM_OK);
    return v;
}

static uint64_t rank_u64(fixture *f, size_t rank, int key)
{
    uint64_t v = 0;
    cr_assert_eq(llmem_estimate_rank_get_u64(f->e, rank, key, &v), LLMEM_OK);
    return v;
}

/* What the optimizer step holds besides the batch, the buffers and the
 * buckets: model states at their largest. */
static uint64_t model_states_at_step(fixture *f, size_t rank)
{
    return phase(f, rank, LLMEM_PHASE_OPTIMIZER) - component(f, rank, LLMEM_TERM_DATA, "batch") -
           component(f, rank, LLMEM_TERM_PARAMETERS, "buffers") -
           component(f, rank, LLMEM_TERM_OPTIMIZER, "gradient_buckets");
}

static void set(fixture *f, int key, const char *value)
{
    cr_assert_eq(llmem_parallel_set_str(f->l, key, value), LLMEM_OK, "%s", llmem_ctx_error(f->ctx));
}

Test(parallel, one_gpu_layout_is_the_single_estimate)
{
    fixture f = open_fixture(PRESET);
    uint64_t a = 0, b = 0, c = 0;
    cr_assert_eq(llmem_estimate_run(f.e, f.m, f.t), LLMEM_OK);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &a);
    run(&f);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &b);
    cr_assert_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, NULL), LLMEM_OK);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &c);
    cr_expect_eq(a, b);
    cr_expect_eq(a, c);
    cr_expect_eq(llmem_estimate_rank_count(f.e), 1);
    cr_expect_eq(llmem_parallel_gpus(f.l), 1);
    cr_expect_eq(llmem_parallel_gpus(NULL), 1);
    close_fixture(&f);
}

/* DeepSpeed's estimate_zero2_model_states_mem_needs (no offload): 2P + 18P/N
 * bytes a GPU: 16-bit parameters, and per partition 16-bit and fp32
 * gradients, fp32 master weights and Adam's two fp32 states. */
Test(parallel, zero2_reproduces_deepspeeds_estimator)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_DP, "8");
    set(&f, LLMEM_PARALLEL_SHARDING, "zero2");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_PARAMETERS, "weights"), 2 * P);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "master_weights"), 4 * P / 8);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "states"), 8 * P / 8);
    cr_expect_eq(model_states_at_step(&f, 0), 2 * P + 18 * P / 8,
                 "model states at the step %llu, DeepSpeed 2P + 18P/N = %llu",
                 (unsigned long long)model_states_at_step(&f, 0),
                 (unsigned long long)(2 * P + 18 * P / 8));
    /* ZeRO-Offload of the optimizer: the GPU keeps the 16-bit parameters (2P). */
    set(&f, LLMEM_PARALLEL_OFFLOAD, "optimizer");
    run(&f);
    cr_expect_eq(model_states_at_step(&f, 0), 2 * P);
    cr_expect_eq(rank_u64(&f, 0, LLMEM_RANK_HOST), 16 * P / 8, "master, states, fp32 grads");
    close_fixture(&f);
}

/* estimate_zero3_model_states_mem_needs (no offload) counts 18P/N of model
 * states besides the largest layer: 16-bit parameter partitions, fp32 master
 * weights, Adam's states and the fp32 gradient partition. We count the
 * 16-bit gradient partition too: 2P/N more. */
Test(parallel, zero3_reproduces_deepspeeds_estimator_and_counts_more)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_DP, "8");
    set(&f, LLMEM_PARALLEL_SHARDING, "zero3");
    run(&f);
    uint64_t weights = component(&f, 0, LLMEM_TERM_PARAMETERS, "weights");
    uint64_t master = component(&f, 0, LLMEM_TERM_OPTIMIZER, "master_weights");
    uint64_t states = component(&f, 0, LLMEM_TERM_OPTIMIZER, "states");
    cr_expect_eq(weights, 2 * P / 8);
    cr_expect_eq(weights + master + states + 4 * P / 8, 18 * P / 8);
    cr_expect_eq(model_states_at_step(&f, 0), 20 * P / 8);
    close_fixture(&f);
}

/* FSDP2 with bf16 parameters and fp32 shards: 4 + 4 + 8 = 16P/N, no master copy. */
Test(parallel, fsdp_full_shards_fp32_parameters)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_DP, "8");
    set(&f, LLMEM_PARALLEL_SHARDING, "fsdp-full");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_PARAMETERS, "weights"), 4 * P / 8);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "master_weights"), 0);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "states"), 8 * P / 8);
    uint64_t grads_at_step = model_states_at_step(&f, 0) - 12 * P / 8;
    cr_expect_geq(grads_at_step, 4 * P / 8, "fp32 gradient shards at the step");
    /* CPUOffloadPolicy: parameter, gradient and state shards on the host
     * (4 + 4 + 8 = 16P/N, and the optimizer's step there), none on the GPU. */
    set(&f, LLMEM_PARALLEL_OFFLOAD, "parameters");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_PARAMETERS, "weights"), 0);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "states"), 0);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "gradients"), 0);
    uint64_t host = rank_u64(&f, 0, LLMEM_RANK_HOST);
    cr_expect_geq(host, 16 * P / 8, "host %llu: parameter, gradient and state shards",
                  (unsigned long long)host);
    cr_expect_leq(host, 20 * P / 8, "host %llu: and the step's temporaries, a shard's at most",
                  (unsigned long long)host);
    close_fixture(&f);
}

/* DDP keeps a flat copy of every gradient in its buckets. */
Test(parallel, ddp_buckets_copy_the_gradients)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_DP, "4");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "gradient_buckets"), 4 * P);
    close_fixture(&f);
}

/* Tensor parallelism splits every linear and the vocabulary, not the norms. */
Test(parallel, tp_splits_all_but_the_norms)
{
    fixture f = open_fixture(PRESET);
    const uint64_t H = 4096, L = 32, norms = 2 * H * L + H;
    set(&f, LLMEM_PARALLEL_TP, "4");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_PARAMETERS, "weights"), ((P - norms) / 4 + norms) * 4);
    set(&f, LLMEM_PARALLEL_TP, "3");
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, f.l), LLMEM_EINCONSISTENT);
    int object = 0, key = 0;
    cr_expect_eq(llmem_ctx_error_field(f.ctx, &object, &key), LLMEM_OK);
    cr_expect_eq(object, LLMEM_OBJECT_PARALLEL);
    cr_expect_eq(key, LLMEM_PARALLEL_TP);
    cr_expect_not_null(strstr(llmem_ctx_error(f.ctx), "tp"));
    close_fixture(&f);
}

/* Sequence parallelism splits what tensor parallelism leaves whole: less
 * is saved a layer, for the same weights. */
Test(parallel, sp_saves_less_for_the_same_weights)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_TP, "4");
    llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, 2);
    llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 1024);
    run(&f);
    uint64_t forward = phase(&f, 0, LLMEM_PHASE_FORWARD);
    uint64_t weights = component(&f, 0, LLMEM_TERM_PARAMETERS, "weights");
    set(&f, LLMEM_PARALLEL_SP, "1");
    run(&f);
    cr_expect_lt(phase(&f, 0, LLMEM_PHASE_FORWARD), forward);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_PARAMETERS, "weights"), weights);
    close_fixture(&f);
}

/* Pipelines: stages split the layers; 1F1B's first stage holds pp
 * micro-batches (or all of them when fewer), the last one. */
Test(parallel, pipeline_stages_and_micro_batches_in_flight)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_PP, "4");
    set(&f, LLMEM_PARALLEL_MICRO_BATCHES, "8");
    run(&f);
    cr_assert_eq(llmem_estimate_rank_count(f.e), 3);
    uint64_t layers = rank_u64(&f, 0, LLMEM_RANK_LAYERS) + 2 * rank_u64(&f, 1, LLMEM_RANK_LAYERS) +
                      rank_u64(&f, 2, LLMEM_RANK_LAYERS);
    cr_expect_eq(layers, 32);
    cr_expect_eq(rank_u64(&f, 0, LLMEM_RANK_IN_FLIGHT_X1000), 4000);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_IN_FLIGHT_X1000), 3000);
    cr_expect_eq(rank_u64(&f, 2, LLMEM_RANK_IN_FLIGHT_X1000), 1000);
    cr_expect_eq(rank_u64(&f, 2, LLMEM_RANK_STAGE), 3);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_GPUS), 2);
    /* Megatron's interleaved schedule: p + (p - 1) / v on the first stage. */
    set(&f, LLMEM_PARALLEL_SCHEDULE, "interleaved");
    set(&f, LLMEM_PARALLEL_VIRTUAL_STAGES, "2");
    run(&f);
    cr_expect_eq(rank_u64(&f, 0, LLMEM_RANK_IN_FLIGHT_X1000), 5500);
    /* The most loaded rank answers the 0.1 getters. */
    uint64_t peak = 0;
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_eq(peak, rank_u64(&f, llmem_estimate_peak_rank(f.e), LLMEM_EST_PEAK_DEVICE));
    close_fixture(&f);
}

/* Stages whose layers are all frozen (method freeze): their output needs no
 * gradient, so none comes back from the next stage; each stage still ends
 * backward holding what it held. A frozen stage holds less than the same
 * stage with trainable layers. */
Test(parallel, pipeline_stages_of_frozen_layers)
{
    fixture f = open_fixture(PRESET);
    uint64_t frozen_first, trained_first;
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_METHOD, "freeze"), LLMEM_OK);
    set(&f, LLMEM_PARALLEL_PP, "4");
    run(&f);
    trained_first = rank_u64(&f, 0, LLMEM_EST_PEAK_ALLOCATED);
    for (int frozen = 1; frozen <= 32; frozen++) {
        cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, frozen), LLMEM_OK);
        run(&f);
    }
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, 8), LLMEM_OK);
    run(&f);
    frozen_first = rank_u64(&f, 0, LLMEM_EST_PEAK_ALLOCATED);
    cr_expect_lt(frozen_first, trained_first);
    close_fixture(&f);
}

/* The sum over a layout's rank classes (each standing for its stages) of a
 * rank's term component. */
static uint64_t stages_sum(fixture *f, int kind, const char *name)
{
    uint64_t sum = 0;
    for (size_t k = 0; k < llmem_estimate_rank_count(f->e); k++)
        sum += rank_u64(f, k, LLMEM_RANK_STAGES) * component(f, k, kind, name);
    return sum;
}

/* Every stage in exactly one rank class, in order; the stages' layers are
 * the model's; each class's GPUs are its stages'. */
static void check_stage_cover(fixture *f, uint64_t pp, uint64_t layers)
{
    uint64_t next = 0, sum = 0;
    for (size_t k = 0; k < llmem_estimate_rank_count(f->e); k++) {
        uint64_t stages = rank_u64(f, k, LLMEM_RANK_STAGES);
        cr_assert_eq(rank_u64(f, k, LLMEM_RANK_STAGE), next, "class %zu", k);
        cr_assert_eq(rank_u64(f, k, LLMEM_RANK_GPUS), stages);
        sum += stages * rank_u64(f, k, LLMEM_RANK_LAYERS);
        next += stages;
    }
    cr_assert_eq(next, pp);
    cr_assert_eq(sum, layers);
}

/* Middle stages that hold other kinds of layers are ranks of their own:
 * with 12 of 32 layers frozen over 4 stages, stage 1 holds 4 frozen and 4
 * trainable layers, stage 2 eight trainable ones, whose gradients and
 * states make it the larger (stage 1 stood for both). Over every frozen
 * count, 1F1B and interleaved, the stages together hold the single GPU's
 * weights, states and gradients (each layer on one stage: an interleaved
 * stage's model chunks too), and a stage of frozen chunks below trainable
 * ones ends backward as it began (the estimate's own check). */
Test(parallel, middle_stages_holding_other_layers_are_ranks_of_their_own)
{
    fixture f = open_fixture(PRESET);
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_METHOD, "freeze"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, 12), LLMEM_OK);
    set(&f, LLMEM_PARALLEL_PP, "4");
    set(&f, LLMEM_PARALLEL_MICRO_BATCHES, "8");
    run(&f);
    cr_assert_eq(llmem_estimate_rank_count(f.e), 4);
    cr_expect_gt(rank_u64(&f, 2, LLMEM_EST_PEAK_ALLOCATED),
                 rank_u64(&f, 1, LLMEM_EST_PEAK_ALLOCATED));
    static const char *const parts[][2] = { { "parameters", "weights" },
                                            { "optimizer", "states" },
                                            { "optimizer", "gradients" } };
    static const int kinds[] = { LLMEM_TERM_PARAMETERS, LLMEM_TERM_OPTIMIZER,
                                 LLMEM_TERM_OPTIMIZER };
    static const struct { const char *pp, *v; } layouts[] = {
        { "2", "1" }, { "4", "1" }, { "4", "2" }, { "8", "2" }, { "8", "4" }, { "5", "1" } };
    for (int frozen = 0; frozen <= 32; frozen += 3) {
        uint64_t whole[3];
        cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, frozen), LLMEM_OK);
        set(&f, LLMEM_PARALLEL_PP, "1");
        set(&f, LLMEM_PARALLEL_MICRO_BATCHES, "1");
        set(&f, LLMEM_PARALLEL_SCHEDULE, "1f1b");
        set(&f, LLMEM_PARALLEL_VIRTUAL_STAGES, "1");
        run(&f);
        for (int i = 0; i < 3; i++)
            whole[i] = component(&f, 0, kinds[i], parts[i][1]);
        for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
            set(&f, LLMEM_PARALLEL_PP, layouts[k].pp);
            set(&f, LLMEM_PARALLEL_MICRO_BATCHES, "8");
            int interleaved = strcmp(layouts[k].v, "1") != 0;
            set(&f, LLMEM_PARALLEL_SCHEDULE, interleaved ? "interleaved" : "1f1b");
            set(&f, LLMEM_PARALLEL_VIRTUAL_STAGES, layouts[k].v);
            run(&f);
            check_stage_cover(&f, strtoull(layouts[k].pp, NULL, 10), 32);
            for (int i = 0; i < 3; i++)
                cr_expect_eq(stages_sum(&f, kinds[i], parts[i][1]), whole[i],
                             "%d frozen, pp %s v %s: %s %llu, one GPU %llu", frozen,
                             layouts[k].pp, layouts[k].v, parts[i][1],
                             (unsigned long long)stages_sum(&f, kinds[i], parts[i][1]),
                             (unsigned long long)whole[i]);
        }
        set(&f, LLMEM_PARALLEL_SCHEDULE, "1f1b");
        set(&f, LLMEM_PARALLEL_VIRTUAL_STAGES, "1");
    }
    close_fixture(&f);
}

/* The interleaved schedule's stage runs v model chunks of layers / (pp x v)
 * layers, the (c x pp + s)-th for its chunk c (Megatron's virtual
 * pipeline): stage 1 of 4 with 2 chunks of Llama-2-7B's 32 layers runs
 * layers 4-7 and 20-23. Alike middle stages are one class. */
Test(parallel, interleaved_stages_run_their_model_chunks)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_PP, "4");
    set(&f, LLMEM_PARALLEL_MICRO_BATCHES, "8");
    set(&f, LLMEM_PARALLEL_SCHEDULE, "interleaved");
    set(&f, LLMEM_PARALLEL_VIRTUAL_STAGES, "2");
    run(&f);
    cr_assert_eq(llmem_estimate_rank_count(f.e), 3);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_LAYER_FIRST), 4);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_LAYERS), 8);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_CHUNKS), 2);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_CHUNK_STRIDE), 16);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_STAGES), 2);
    cr_expect_eq(rank_u64(&f, 2, LLMEM_RANK_LAYER_FIRST), 12);
    set(&f, LLMEM_PARALLEL_SCHEDULE, "1f1b");
    set(&f, LLMEM_PARALLEL_VIRTUAL_STAGES, "1");
    run(&f);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_CHUNKS), 1);
    cr_expect_eq(rank_u64(&f, 1, LLMEM_RANK_CHUNK_STRIDE), 0);
    close_fixture(&f);
}

/* OPT-350m projects its 512-wide embedding to the hidden size 1,024 and
 * back: project_in on the first stage, project_out (used after the last
 * layer) on the last, which computes its gradient. With the tied embedding
 * held by both ends and 12 identical layers each, the stages' weights differ
 * by the learned position table alone: 2,050 x 1,024 fp32 values. (Both
 * projections sat on the first stage, and a last stage with one micro-batch
 * failed with an internal error.) */
Test(parallel, pipeline_stages_hold_opts_projections_where_they_run)
{
    fixture f = open_fixture("facebook/opt-350m");
    set(&f, LLMEM_PARALLEL_PP, "2");
    for (int mb = 1; mb <= 4; mb *= 4) {
        cr_assert_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_MICRO_BATCHES, mb), LLMEM_OK);
        run(&f);
        uint64_t first = component(&f, 0, LLMEM_TERM_PARAMETERS, "weights");
        uint64_t last = component(&f, 1, LLMEM_TERM_PARAMETERS, "weights");
        cr_expect_eq(first - last, UINT64_C(2050) * 1024 * 4,
                     "%d micro-batches: stage weights %llu and %llu", mb,
                     (unsigned long long)first, (unsigned long long)last);
    }
    close_fixture(&f);
}

/* Learned positions under sequence parallelism, with fewer sequences than tp
 * ranks: the positions added are the rank's chunk of the sequence, so the
 * embedding's output is the residual stream's share; a frozen embedding
 * (method freeze) then ends backward as it began. */
Test(parallel, sp_with_learned_positions_at_batch_one)
{
    /* OPT looks its positions up per token (from the attention mask): the
     * rank's share of them, too (a frozen OPT embedding under sp was an
     * internal error). */
    static const char *const models[] = { "openai-community/gpt2", "facebook/opt-125m" };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        fixture f = open_fixture(models[i]);
        set(&f, LLMEM_PARALLEL_TP, "2");
        set(&f, LLMEM_PARALLEL_SP, "1");
        for (int batch = 1; batch <= 2; batch++) {
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, batch), LLMEM_OK);
            cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_METHOD, "full"), LLMEM_OK);
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, 0), LLMEM_OK);
            run(&f);
            cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_METHOD, "freeze"), LLMEM_OK);
            run(&f);
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, 6), LLMEM_OK);
            run(&f);
        }
        close_fixture(&f);
    }
}

/* FSDP's SHARD_GRAD_OP keeps each layer's gathered parameters from its
 * forward to its backward. Frozen layers (method freeze) have no backward:
 * FSDP reshards them when backward ends (its catch-all reshard). They were
 * never released, an internal error for every such layout. Until then they
 * are held: more than FULL_SHARD, which reshards after each forward. */
Test(parallel, fsdp_grad_op_reshards_frozen_layers_when_backward_ends)
{
    fixture f = open_fixture(PRESET);
    uint64_t grad_op, full_shard;
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_METHOD, "freeze"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_FROZEN_LAYERS, 16), LLMEM_OK);
    set(&f, LLMEM_PARALLEL_DP, "8");
    set(&f, LLMEM_PARALLEL_SHARDING, "fsdp-grad-op");
    run(&f);
    grad_op = rank_u64(&f, 0, LLMEM_EST_PEAK_ALLOCATED);
    set(&f, LLMEM_PARALLEL_PP, "2"); /* the first stage: frozen layers only */
    run(&f);
    set(&f, LLMEM_PARALLEL_PP, "1");
    set(&f, LLMEM_PARALLEL_SHARDING, "fsdp-full");
    run(&f);
    full_shard = rank_u64(&f, 0, LLMEM_EST_PEAK_ALLOCATED);
    cr_expect_gt(grad_op, full_shard);
    close_fixture(&f);
}

/* A small mixture-of-experts model of a family: Llama's (Mixtral's block,
 * with a gated shared expert as Qwen2-MoE's) or DeepSeek's (V2 or V3 router). */
static llmem_model *small_moe(llmem_ctx *ctx, int family, int v3)
{
    llmem_model *m;
    cr_assert_eq(llmem_model_new(ctx, family, &m), LLMEM_OK);
    const int64_t common[][2] = {
        { LLMEM_MODEL_HIDDEN, 128 },           { LLMEM_MODEL_LAYERS, 4 },
        { LLMEM_MODEL_HEADS, 4 },              { LLMEM_MODEL_INTERMEDIATE, 256 },
        { LLMEM_MODEL_VOCAB, 1000 },           { LLMEM_MODEL_EXPERTS, 8 },
        { LLMEM_MODEL_EXPERTS_PER_TOKEN, 2 },  { LLMEM_MODEL_EXPERT_INTERMEDIATE, 64 },
        { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, 128 },
    };
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        cr_assert_eq(llmem_model_set_int(m, (int)common[i][0], common[i][1]), LLMEM_OK);
    if (family == LLMEM_FAMILY_DEEPSEEK) {
        const int64_t latent[][2] = { { LLMEM_MODEL_HEAD_DIM, 48 },   { LLMEM_MODEL_ROTARY_DIM, 16 },
                                      { LLMEM_MODEL_V_HEAD_DIM, 32 }, { LLMEM_MODEL_KV_LORA_RANK, 64 },
                                      { LLMEM_MODEL_ROUTER_BIAS, v3 } };
        for (size_t i = 0; i < sizeof latent / sizeof latent[0]; i++)
            cr_assert_eq(llmem_model_set_int(m, (int)latent[i][0], latent[i][1]), LLMEM_OK);
    } else {
        cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_SHARED_EXPERT_GATE, 1), LLMEM_OK);
    }
    return m;
}

/* Routed experts under sequence parallelism see the tensor-parallel group's
 * tokens: gathered before them, reduce-scattered after, so the layer hands on
 * the rank's share. They ran on the whole group's tokens without the
 * gather, and their output outgrew the residual stream (a frozen MoE layer
 * was an internal error). Every MoE code, trained and frozen, batch 1 and 2. */
Test(parallel, routed_experts_under_sequence_parallelism)
{
    static const int codes[][2] = { { LLMEM_FAMILY_LLAMA, 0 }, { LLMEM_FAMILY_DEEPSEEK, 0 },
                                    { LLMEM_FAMILY_DEEPSEEK, 1 } };
    fixture f = open_handles();
    llmem_ctx *ctx = f.ctx;
    llmem_train *t = f.t;
    llmem_parallel *l = f.l;
    llmem_estimate *e = f.e;
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_TP, 2), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_SP, 1), LLMEM_OK);
    for (size_t c = 0; c < sizeof codes / sizeof codes[0]; c++) {
        llmem_model *m = small_moe(ctx, codes[c][0], codes[c][1]);
        for (int batch = 1; batch <= 2; batch++)
            for (int frozen = 0; frozen <= 2; frozen += 2) {
                cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_BATCH, batch), LLMEM_OK);
                cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, 0), LLMEM_OK);
                cr_assert_eq(llmem_train_set_str(t, LLMEM_TRAIN_METHOD, frozen ? "freeze" : "full"),
                             LLMEM_OK);
                cr_assert_eq(llmem_train_set_int(t, LLMEM_TRAIN_FROZEN_LAYERS, frozen), LLMEM_OK);
                cr_expect_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_OK,
                             "family %d, v3 %d, batch %d, frozen %d: %s", codes[c][0],
                             codes[c][1], batch, frozen, llmem_ctx_error(ctx));
            }
        llmem_model_free(m);
    }
    close_fixture(&f);
}

/* DeepSpeed's ZeRO-1/2 shard an MoE model's expert tensors over their own
 * data-parallel group, dp / ep ranks, and the rest over all dp ranks: a rank
 * holds E / ep of the experts' weights E, and E / dp of their gradients,
 * fp32 master copies and states whatever ep (the rank's share divided the
 * experts by ep and then by dp: a Mixtral-8x7B rank at dp 8, ep 8 held
 * 8x too little). Every layout's backward ends balanced with its statics.
 * DeepSpeed refuses ZeRO-3 with MoE layers: refused, naming the sharding;
 * plain data parallelism runs. */
Test(parallel, zero_shards_experts_over_their_own_data_parallel_group)
{
    fixture f = open_handles();
    llmem_ctx *ctx = f.ctx;
    llmem_train *t = f.t;
    llmem_parallel *l = f.l;
    llmem_estimate *e = f.e;
    llmem_model *m = f.m = small_moe(ctx, LLMEM_FAMILY_LLAMA, 0);
    /* 4.x's per-expert modules: the counts below are theirs (grouped-mm's
     * forward also holds E / ep histogram bins and offsets) */
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_EXPERTS_IMPL, "loop"), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_DP, 4), LLMEM_OK);
    /* experts: 4 layers x 8 experts x 3 matrices x 128 x 64, 16-bit under DeepSpeed */
    const uint64_t expert_weights = UINT64_C(4) * 8 * 3 * 128 * 64 * 2;
    static const char *const zero[] = { "zero1", "zero2" };
    for (size_t z = 0; z < 2; z++) {
        uint64_t weights[3], grads[3], states[3], master[3];
        cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, zero[z]), LLMEM_OK);
        for (int k = 0; k < 3; k++) { /* ep 1, 2, 4 */
            cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 1 << k), LLMEM_OK);
            cr_assert_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_OK, "%s, ep %d: %s",
                         zero[z], 1 << k, llmem_ctx_error(ctx));
            weights[k] = rank_component(e, 0, LLMEM_TERM_PARAMETERS, "weights");
            grads[k] = rank_component(e, 0, LLMEM_TERM_OPTIMIZER, "gradients");
            states[k] = rank_component(e, 0, LLMEM_TERM_OPTIMIZER, "states");
            master[k] = rank_component(e, 0, LLMEM_TERM_OPTIMIZER, "master_weights");
        }
        for (int k = 1; k < 3; k++) {
            cr_expect_eq(weights[0] - weights[k], expert_weights - expert_weights / (1u << k),
                         "%s, ep %d: the rank holds 1/ep of the experts' weights", zero[z], 1 << k);
            cr_expect_eq(grads[k], grads[0], "%s, ep %d: gradients E / dp", zero[z], 1 << k);
            cr_expect_eq(states[k], states[0], "%s, ep %d: states E / dp", zero[z], 1 << k);
            cr_expect_eq(master[k], master[0], "%s, ep %d: master copies E / dp", zero[z], 1 << k);
        }
        cr_expect_gt(master[0], 0);
    }
    static const char *const refused[] = { "zero3" };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        int object = 0, key = 0;
        cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, refused[k]), LLMEM_OK);
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 2), LLMEM_OK);
        cr_expect_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_EINCONSISTENT, "%s, ep 2",
                     refused[k]);
        llmem_ctx_error_field(ctx, &object, &key);
        cr_expect_eq(object, LLMEM_OBJECT_PARALLEL);
        cr_expect_eq(key, LLMEM_PARALLEL_SHARDING, "%s: key %d (%s)", refused[k], key,
                     llmem_ctx_error(ctx));
        cr_expect(strstr(llmem_ctx_error(ctx), refused[k]) != NULL, "%s", llmem_ctx_error(ctx));
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 1), LLMEM_OK);
        cr_expect_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_OK, "%s, ep 1: %s",
                     refused[k], llmem_ctx_error(ctx));
    }
    cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, "none"), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 2), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_OK, "ddp, ep 2: %s",
                 llmem_ctx_error(ctx));
    close_fixture(&f);
}

/* FSDP under expert parallelism, as torchtitan wraps it: each MoE layer's
 * routed experts sharded over the shard group's ranks outside the expert
 * group, the rest over the whole group. A rank keeps E / shard of every
 * statics term whatever ep (its E / ep experts over shard / ep ranks), and
 * gathers only its own experts: the forward's two gathered layers (this one
 * and the next, prefetched) shrink by the other ranks' experts. An ep that
 * does not divide the shard group is refused, naming ep. */
Test(parallel, fsdp_shards_experts_over_the_ranks_outside_the_expert_group)
{
    fixture f = open_handles();
    llmem_ctx *ctx = f.ctx;
    llmem_parallel *l = f.l;
    f.m = small_moe(ctx, LLMEM_FAMILY_LLAMA, 0);
    /* 4.x's per-expert modules: the counts below are theirs (grouped-mm's
     * forward also holds E / ep histogram bins and offsets) */
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_EXPERTS_IMPL, "loop"), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_DP, 4), LLMEM_OK);
    /* few tokens: the forward peaks in a layer, on its gathers, not at the logits */
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, 1), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 8), LLMEM_OK);
    /* a layer's routed experts, 8 x 3 matrices x 128 x 64, gathered in 16 bits */
    const uint64_t layer_experts = UINT64_C(8) * 3 * 128 * 64 * 2;
    static const char *const fsdp[] = { "fsdp-full", "fsdp-grad-op", "fsdp-hybrid" };
    for (size_t k = 0; k < sizeof fsdp / sizeof fsdp[0]; k++) {
        uint64_t weights[3], grads[3], states[3], fwd[3];
        cr_assert_eq(llmem_parallel_set_str(l, LLMEM_PARALLEL_SHARDING, fsdp[k]), LLMEM_OK);
        for (int j = 0; j < 3; j++) { /* ep 1, 2, 4 */
            cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 1 << j), LLMEM_OK);
            cr_assert_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, l), LLMEM_OK, "%s, ep %d: %s",
                         fsdp[k], 1 << j, llmem_ctx_error(ctx));
            weights[j] = component(&f, 0, LLMEM_TERM_PARAMETERS, "weights");
            grads[j] = component(&f, 0, LLMEM_TERM_OPTIMIZER, "gradients");
            states[j] = component(&f, 0, LLMEM_TERM_OPTIMIZER, "states");
            fwd[j] = phase(&f, 0, LLMEM_PHASE_FORWARD);
        }
        cr_expect_gt(weights[0], 0);
        cr_expect_gt(states[0], 0);
        for (int j = 1; j < 3; j++) {
            uint64_t others = layer_experts - layer_experts / (1u << j);
            cr_expect_eq(weights[j], weights[0], "%s, ep %d: weights E / dp", fsdp[k], 1 << j);
            cr_expect_eq(grads[j], grads[0], "%s, ep %d: gradients E / dp", fsdp[k], 1 << j);
            cr_expect_eq(states[j], states[0], "%s, ep %d: states E / dp", fsdp[k], 1 << j);
            /* resharded after forward: a layer and the next one gathered at
             * once; kept gathered (grad-op): all four layers, held to backward */
            uint64_t gathered = k == 1 ? 4 : 2;
            cr_expect_eq(fwd[0] - fwd[j], gathered * others,
                         "%s, ep %d: forward %llu -> %llu, the gathers shrink by %llu", fsdp[k],
                         1 << j, (unsigned long long)fwd[0], (unsigned long long)fwd[j],
                         (unsigned long long)(gathered * others));
        }
    }
    /* a shard group of 2 holds no expert group of 4 */
    int object = 0, key = 0;
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_SHARD_GROUP, 2), LLMEM_OK);
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 2), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, l), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_EP, 4), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, l), LLMEM_EINCONSISTENT);
    llmem_ctx_error_field(ctx, &object, &key);
    cr_expect(object == LLMEM_OBJECT_PARALLEL && key == LLMEM_PARALLEL_EP, "key %d: %s", key,
              llmem_ctx_error(ctx));
    cr_expect(strstr(llmem_ctx_error(ctx), "shard group of 2") != NULL, "%s",
              llmem_ctx_error(ctx));
    close_fixture(&f);
}

/* Context-parallel ranks are replicas to the sharding engines (torchtitan's
 * FSDP2 mesh, Megatron's distributed optimizer): dp 4 x cp 2 shards the
 * statics as dp 8 does, the hybrid group times cp too; without sharding
 * nothing is split. */
Test(parallel, sharding_spans_the_context_parallel_ranks)
{
    static const char *const engines[] = { "zero1", "zero2", "zero3", "fsdp-full", "fsdp-hybrid" };
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_CP, "2");
    set(&f, LLMEM_PARALLEL_DP, "4");
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_ATTENTION, "flash"), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 1024), LLMEM_OK);
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        set(&f, LLMEM_PARALLEL_SHARDING, engines[i]);
        run(&f);
        uint64_t weights = component(&f, 0, LLMEM_TERM_PARAMETERS, "weights");
        uint64_t states = component(&f, 0, LLMEM_TERM_OPTIMIZER, "states");
        cr_expect_eq(states, 8 * P / 8, "%s, dp 4 x cp 2: states %llu, 8P/8", engines[i],
                     (unsigned long long)states);
        if (strcmp(engines[i], "zero3") == 0)
            cr_expect_eq(weights, 2 * P / 8, "zero3: 16-bit partitions 2P/8");
        else if (strncmp(engines[i], "fsdp", 4) == 0)
            cr_expect_eq(weights, 4 * P / 8, "%s: fp32 shards 4P/8", engines[i]);
    }
    /* hybrid: shard groups of 2 data-parallel ranks x 2 context-parallel ones */
    set(&f, LLMEM_PARALLEL_SHARD_GROUP, "2");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "states"), 8 * P / 4);
    set(&f, LLMEM_PARALLEL_SHARD_GROUP, "0");
    set(&f, LLMEM_PARALLEL_SHARDING, "none");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_OPTIMIZER, "states"), 8 * P);
    close_fixture(&f);
}

/* FSDP's parameters kept gathered (grad-op) are the stage's, one buffer a
 * module whatever the micro-batches in flight: each more micro-batch in
 * flight adds its activations alone, as under fsdp-full (it added the
 * stage's gathered layers again: 3.25 GiB a micro-batch on Llama-3.1-8B). */
Test(parallel, kept_gathered_parameters_are_not_stashed_per_micro_batch)
{
    static const char *const engines[] = { "fsdp-full", "fsdp-grad-op" };
    uint64_t grows[2][2];
    fixture f = open_fixture("meta-llama/Llama-3.2-1B");
    set(&f, LLMEM_PARALLEL_DP, "2");
    set(&f, LLMEM_PARALLEL_PP, "4");
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 1024), LLMEM_OK);
    for (int k = 0; k < 2; k++) {
        set(&f, LLMEM_PARALLEL_SHARDING, engines[k]);
        uint64_t peak[2][2];
        for (int j = 0; j < 2; j++) { /* 2 and 4 micro-batches: stage 0 holds 2, then 4 */
            set(&f, LLMEM_PARALLEL_MICRO_BATCHES, j == 0 ? "2" : "4");
            run(&f);
            for (int r = 0; r < 2; r++) /* stages 0 and 1 */
                peak[j][r] = rank_u64(&f, (size_t)r, LLMEM_EST_PEAK_ALLOCATED);
        }
        for (int r = 0; r < 2; r++)
            grows[k][r] = peak[1][r] - peak[0][r];
        cr_expect_gt(grows[k][0], 0, "%s: more micro-batches in flight hold more", engines[k]);
    }
    for (int r = 0; r < 2; r++)
        cr_expect_eq(grows[1][r], grows[0][r],
                     "stage %d: 2 -> 4 micro-batches adds %llu under grad-op, %llu under full", r,
                     (unsigned long long)grows[1][r], (unsigned long long)grows[0][r]);
    close_fixture(&f);
}

/* The temporaries at the peak split into activations and the parameters
 * gathered for compute (ZeRO-3, FSDP), which more recomputation does not
 * shrink: under grad-op every layer's 16-bit parameters stay gathered to
 * backward (Llama-3.2-1B: 16 layers x 60.8M parameters x 2 bytes and more);
 * without parameter sharding nothing is gathered. A handle that has run other
 * points splits each as a fresh handle does (test_cache compares compiled
 * walks, every component included). */
/* ZeRO-1/2's contiguous-gradient bucket (reduce_bucket_size elements, 500M
 * by default: 1 GB of 16-bit values) lives through backward: at a peak there
 * it is a temporary of its own, not activations; the peak is the same. */
Test(parallel, zero2s_bucket_is_a_temporary_of_its_own)
{
    fixture f = open_fixture(PRESET);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 4096), LLMEM_OK);
    set(&f, LLMEM_PARALLEL_DP, "8");
    set(&f, LLMEM_PARALLEL_SHARDING, "zero2");
    run(&f);
    uint64_t ph = rank_u64(&f, 0, LLMEM_EST_PEAK_PHASE);
    cr_assert(ph == LLMEM_PHASE_BACKWARD || ph == LLMEM_PHASE_LOSS_BACKWARD, "phase %llu",
              (unsigned long long)ph);
    uint64_t bucket = component(&f, 0, LLMEM_TERM_TEMPORARY, "gradient_bucket");
    cr_expect_eq(bucket, UINT64_C(500000000) * 2);
    const llmem_term *t;
    cr_assert_eq(llmem_estimate_rank_term(f.e, 0, LLMEM_TERM_TEMPORARY, &t), LLMEM_OK);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_TEMPORARY, "activations_and_grads") + bucket,
                 llmem_term_bytes_at_peak(t));
    /* ZeRO-3 holds its bucket from initialization: an optimizer component. */
    set(&f, LLMEM_PARALLEL_SHARDING, "zero3");
    run(&f);
    cr_expect_eq(component(&f, 0, LLMEM_TERM_TEMPORARY, "gradient_bucket"), 0);
    close_fixture(&f);
}

Test(parallel, gathered_parameters_are_a_temporary_of_their_own)
{
    static const struct {
        const char *sharding;
        int gathers;
    } cases[] = { { "none", 0 }, { "zero2", 0 }, { "zero3", 1 }, { "fsdp-full", 1 },
                  { "fsdp-grad-op", 1 } };
    const uint64_t layer_16bit = UINT64_C(60817408) * 2; /* Llama-3.2-1B decoder layer */
    fixture f = open_fixture("meta-llama/Llama-3.2-1B");
    fixture fresh = open_fixture("meta-llama/Llama-3.2-1B");
    int steps = 0; /* points whose peak is in forward or backward */
    set(&f, LLMEM_PARALLEL_DP, "4");
    set(&fresh, LLMEM_PARALLEL_DP, "4");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set(&f, LLMEM_PARALLEL_SHARDING, cases[i].sharding);
        set(&fresh, LLMEM_PARALLEL_SHARDING, cases[i].sharding);
        for (int64_t point = 0; point < 12; point++) {
            int64_t batch = 2 + point % 3, seq = 256 << (point % 4);
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, batch), LLMEM_OK);
            cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, seq), LLMEM_OK);
            run(&f);
            const llmem_term *t;
            cr_assert_eq(llmem_estimate_rank_term(f.e, 0, LLMEM_TERM_TEMPORARY, &t), LLMEM_OK);
            uint64_t act = component(&f, 0, LLMEM_TERM_TEMPORARY, "activations") +
                           component(&f, 0, LLMEM_TERM_TEMPORARY, "activations_and_grads") +
                           component(&f, 0, LLMEM_TERM_TEMPORARY, "optimizer_step");
            uint64_t gathered = component(&f, 0, LLMEM_TERM_TEMPORARY, "gathered_parameters");
            uint64_t bucket = component(&f, 0, LLMEM_TERM_TEMPORARY, "gradient_bucket");
            cr_expect_eq(act + gathered + bucket, llmem_term_bytes_at_peak(t),
                         "%s: the split adds up", cases[i].sharding);
            int in_step = rank_u64(&f, 0, LLMEM_EST_PEAK_PHASE) != LLMEM_PHASE_OPTIMIZER;
            int in_backward = in_step && rank_u64(&f, 0, LLMEM_EST_PEAK_PHASE) !=
                                             LLMEM_PHASE_FORWARD;
            cr_expect_eq(bucket > 0, strcmp(cases[i].sharding, "zero2") == 0 && in_backward,
                         "%s: bucket %llu", cases[i].sharding, (unsigned long long)bucket);
            steps += in_step;
            cr_expect_eq(gathered > 0, cases[i].gathers && in_step, "%s: gathered %llu",
                         cases[i].sharding, (unsigned long long)gathered);
            if (strcmp(cases[i].sharding, "fsdp-grad-op") == 0)
                cr_expect_geq(gathered, 16 * layer_16bit, "grad-op: every layer kept gathered");
            /* the same point on a handle that has seen no other */
            close_fixture(&fresh);
            fresh = open_fixture("meta-llama/Llama-3.2-1B");
            set(&fresh, LLMEM_PARALLEL_DP, "4");
            set(&fresh, LLMEM_PARALLEL_SHARDING, cases[i].sharding);
            cr_assert_eq(llmem_train_set_int(fresh.t, LLMEM_TRAIN_BATCH, batch), LLMEM_OK);
            cr_assert_eq(llmem_train_set_int(fresh.t, LLMEM_TRAIN_SEQ, seq), LLMEM_OK);
            run(&fresh);
            cr_expect_eq(component(&fresh, 0, LLMEM_TERM_TEMPORARY, "gathered_parameters"),
                         gathered, "%s, b%lld s%lld: compiled and fresh", cases[i].sharding,
                         (long long)batch, (long long)seq);
        }
    }
    cr_expect_gt(steps, 30, "most points peak in the step: %d of 60", steps);
    close_fixture(&fresh);
    close_fixture(&f);
}

/* DeepSpeed's PipelineEngine asserts a ZeRO stage below 2: zero2 and zero3
 * with pipeline stages are refused, naming the sharding; zero1 and FSDP run. */
Test(parallel, deepspeed_pipelines_refuse_zero2_and_zero3)
{
    fixture f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_DP, "2");
    set(&f, LLMEM_PARALLEL_PP, "2");
    set(&f, LLMEM_PARALLEL_MICRO_BATCHES, "4");
    static const struct {
        const char *sharding;
        int refused;
    } cases[] = { { "zero2", 1 }, { "zero3", 1 }, { "zero1", 0 }, { "fsdp-full", 0 }, { "none", 0 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int object = 0, key = 0;
        set(&f, LLMEM_PARALLEL_SHARDING, cases[i].sharding);
        int rc = llmem_estimate_run_parallel(f.e, f.m, f.t, f.l);
        if (!cases[i].refused) {
            cr_expect_eq(rc, LLMEM_OK, "%s: %s", cases[i].sharding, llmem_ctx_error(f.ctx));
            continue;
        }
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "%s with pp 2", cases[i].sharding);
        llmem_ctx_error_field(f.ctx, &object, &key);
        cr_expect(object == LLMEM_OBJECT_PARALLEL && key == LLMEM_PARALLEL_SHARDING, "%s: %s",
                  cases[i].sharding, llmem_ctx_error(f.ctx));
        cr_expect(strstr(llmem_ctx_error(f.ctx), "pipeline") != NULL, "%s",
                  llmem_ctx_error(f.ctx));
    }
    close_fixture(&f);
}

/* DeepSeek's latent attention gives every head its own key and value:
 * kv-heads other than the heads is refused, naming the field (it was
 * estimated as grouped heads, and tensor parallelism over more ranks than
 * kv-heads divided by zero). */
Test(parallel, latent_attention_refuses_grouped_kv_heads)
{
    llmem_ctx *ctx;
    llmem_model *m;
    llmem_train *t;
    llmem_parallel *l;
    llmem_estimate *e;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_model_new(ctx, LLMEM_FAMILY_DEEPSEEK, &m), LLMEM_OK);
    const int64_t fields[][2] = {
        { LLMEM_MODEL_HIDDEN, 128 },       { LLMEM_MODEL_LAYERS, 2 },
        { LLMEM_MODEL_HEADS, 8 },          { LLMEM_MODEL_KV_HEADS, 2 },
        { LLMEM_MODEL_INTERMEDIATE, 256 }, { LLMEM_MODEL_VOCAB, 1000 },
        { LLMEM_MODEL_HEAD_DIM, 48 },      { LLMEM_MODEL_ROTARY_DIM, 16 },
        { LLMEM_MODEL_V_HEAD_DIM, 32 },    { LLMEM_MODEL_KV_LORA_RANK, 64 },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        cr_assert_eq(llmem_model_set_int(m, (int)fields[i][0], fields[i][1]), LLMEM_OK);
    cr_assert_eq(llmem_train_new(ctx, &t), LLMEM_OK);
    cr_assert_eq(llmem_parallel_new(ctx, &l), LLMEM_OK);
    cr_assert_eq(llmem_estimate_new(ctx, &e), LLMEM_OK);
    for (int tp = 1; tp <= 8; tp *= 2) {
        int object = 0, key = 0;
        cr_assert_eq(llmem_parallel_set_int(l, LLMEM_PARALLEL_TP, tp), LLMEM_OK);
        cr_expect_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_ENOTSUP, "tp %d", tp);
        cr_expect_eq(llmem_ctx_error_field(ctx, &object, &key), LLMEM_OK);
        cr_expect(object == LLMEM_OBJECT_MODEL && key == LLMEM_MODEL_KV_HEADS,
                  "tp %d: object %d key %d: %s", tp, object, key, llmem_ctx_error(ctx));
    }
    cr_assert_eq(llmem_model_set_int(m, LLMEM_MODEL_KV_HEADS, 8), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(e, m, t, l), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    llmem_estimate_free(e);
    llmem_parallel_free(l);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
}

Test(parallel, bad_layouts_name_their_field)
{
    static const struct {
        int key;
        const char *value;
        int other_key;
        const char *other;
    } cases[] = {
        { LLMEM_PARALLEL_PP, "64", 0, NULL },
        { LLMEM_PARALLEL_EP, "2", 0, NULL },
        { LLMEM_PARALLEL_SP, "1", 0, NULL },
        { LLMEM_PARALLEL_OFFLOAD, "optimizer", 0, NULL },
        { LLMEM_PARALLEL_OFFLOAD, "parameters", LLMEM_PARALLEL_SHARDING, "zero2" },
        { LLMEM_PARALLEL_SHARD_GROUP, "3", LLMEM_PARALLEL_DP, "8" },
        { LLMEM_PARALLEL_VIRTUAL_STAGES, "2", 0, NULL },
        { LLMEM_PARALLEL_CP, "2", 0, NULL },
        /* a reduce bucket under an engine that has none: it was ignored */
        { LLMEM_PARALLEL_BUCKET_ELEMENTS, "1000", LLMEM_PARALLEL_SHARDING, "fsdp-full" },
        { LLMEM_PARALLEL_BUCKET_ELEMENTS, "1000", LLMEM_PARALLEL_DP, "2" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f = open_fixture(PRESET);
        int object = 0, key = 0;
        set(&f, cases[i].key, cases[i].value);
        if (cases[i].other)
            set(&f, cases[i].other_key, cases[i].other);
        int rc = llmem_estimate_run_parallel(f.e, f.m, f.t, f.l);
        cr_expect_eq(rc, LLMEM_EINCONSISTENT, "case %zu: %d (%s)", i, rc, llmem_ctx_error(f.ctx));
        llmem_ctx_error_field(f.ctx, &object, &key);
        cr_expect_eq(object, LLMEM_OBJECT_PARALLEL, "case %zu", i);
        cr_expect_eq(key, cases[i].key, "case %zu: key %d (%s)", i, key, llmem_ctx_error(f.ctx));
        close_fixture(&f);
    }
    fixture f = open_fixture(PRESET);
    cr_expect_eq(llmem_parallel_set_int(f.l, LLMEM_PARALLEL_TP, 0), LLMEM_ERANGE);
    cr_expect_eq(llmem_parallel_set_str(f.l, LLMEM_PARALLEL_SHARDING, "zero4"), LLMEM_ENOTFOUND);
    cr_expect_str_eq(llmem_parallel_value_name(LLMEM_PARALLEL_SHARDING, LLMEM_SHARDING_FSDP_FULL),
                     "fsdp-full");
    close_fixture(&f);
}

/* Which layout fields a setting leaves unread, as the estimate refuses them. */
Test(parallel, unread_layout_fields_say_why)
{
    fixture f = open_fixture(PRESET);
    cr_expect_null(llmem_parallel_unread(f.l, LLMEM_PARALLEL_DP));
    cr_expect_null(llmem_parallel_unread(NULL, LLMEM_PARALLEL_SHARD_GROUP));
    cr_expect_null(llmem_parallel_unread(f.l, 0));
    cr_expect_null(llmem_parallel_unread(f.l, 1000));
    static const struct {
        int key, setting;
        const char *reads, *other, *says;
    } rules[] = {
        { LLMEM_PARALLEL_SHARD_GROUP, LLMEM_PARALLEL_SHARDING, "fsdp-hybrid", "fsdp-full",
          "needs sharding fsdp-hybrid" },
        { LLMEM_PARALLEL_VIRTUAL_STAGES, LLMEM_PARALLEL_SCHEDULE, "interleaved", "1f1b",
          "needs schedule interleaved" },
        { LLMEM_PARALLEL_BUCKET_ELEMENTS, LLMEM_PARALLEL_SHARDING, "zero3", "none",
          "needs sharding zero1, zero2 or zero3" },
        { LLMEM_PARALLEL_BUCKET_ELEMENTS, LLMEM_PARALLEL_SHARDING, "zero1", "fsdp-grad-op",
          "needs sharding zero1, zero2 or zero3" },
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        set(&f, rules[i].setting, rules[i].other);
        const char *why = llmem_parallel_unread(f.l, rules[i].key);
        cr_expect(why != NULL && strstr(why, rules[i].says) != NULL, "rule %zu: %s", i,
                  why ? why : "(read)");
        set(&f, rules[i].setting, rules[i].reads);
        cr_expect_null(llmem_parallel_unread(f.l, rules[i].key), "rule %zu", i);
    }
    close_fixture(&f);
    /* Set away from its default while unread: refused, naming it and the setting. */
    f = open_fixture(PRESET);
    set(&f, LLMEM_PARALLEL_DP, "2");
    set(&f, LLMEM_PARALLEL_BUCKET_ELEMENTS, "1000");
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, f.l), LLMEM_EINCONSISTENT);
    cr_expect(strstr(llmem_ctx_error(f.ctx), "bucket-elements: 1000 is not read") != NULL &&
                  strstr(llmem_ctx_error(f.ctx), "the sharding is none") != NULL,
              "%s", llmem_ctx_error(f.ctx));
    set(&f, LLMEM_PARALLEL_SHARDING, "zero2");
    run(&f);
    close_fixture(&f);
}

/* The largest batch that fits: it does, one more does not. */
Test(parallel, max_batch_is_exact)
{
    fixture f = open_fixture("meta-llama/Llama-3.2-1B");
    const uint64_t capacity = UINT64_C(40) << 30;
    int64_t best = 0;
    uint64_t peak = 0;
    llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 1024);
    cr_assert_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE,
                                    capacity, &best),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_assert_gt(best, 1);
    llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, best);
    run(&f);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_leq(peak, capacity);
    llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, best + 1);
    run(&f);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_gt(peak, capacity);
    cr_expect_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE,
                                    UINT64_C(1) << 20, &best),
                 LLMEM_OK);
    cr_expect_eq(best, 0, "nothing fits in 1 MiB");
    close_fixture(&f);
}

/* A capacity that holds more than the estimate can count: the answer is the
 * last countable batch, reported as a floor (it was returned as the limit). */
Test(parallel, max_beyond_the_estimates_range_is_a_floor)
{
    fixture f = open_fixture("meta-llama/Llama-3.2-1B");
    int64_t countable = 0;
    int obj = 0, key = 0;
    cr_assert_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE,
                                    UINT64_MAX, &countable),
                 LLMEM_EOVERFLOW, "%s", llmem_ctx_error(f.ctx));
    cr_expect(strstr(llmem_ctx_error(f.ctx), "beyond the estimate's range") != NULL, "%s",
              llmem_ctx_error(f.ctx));
    cr_expect_eq(llmem_ctx_error_field(f.ctx, &obj, &key), LLMEM_OK);
    cr_expect(obj == LLMEM_OBJECT_TRAIN && key == LLMEM_TRAIN_BATCH);
    /* The last countable batch runs; one more is beyond the range. */
    llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, countable);
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, f.l), LLMEM_OK, "%s",
                 llmem_ctx_error(f.ctx));
    llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, countable + 1);
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, f.l), LLMEM_EOVERFLOW);
    close_fixture(&f);
}

/* Every planned layout fits when estimated on its own, at its micro-batch. */
Test(parallel, planned_layouts_fit)
{
    fixture f = open_fixture("meta-llama/Llama-3.1-8B");
    llmem_plan *plan;
    const uint64_t capacity = UINT64_C(80) << 30;
    cr_assert_eq(llmem_plan_new(f.ctx, &plan), LLMEM_OK);
    llmem_plan_set_int(plan, LLMEM_PLAN_GPUS, 8);
    llmem_plan_set_int(plan, LLMEM_PLAN_GPU_BYTES, (int64_t)capacity);
    llmem_plan_set_int(plan, LLMEM_PLAN_MARGIN_PERMILLE, 0);
    llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 2048);
    llmem_train_set_str(f.t, LLMEM_TRAIN_ATTENTION, "flash");
    cr_assert_eq(llmem_plan_run(plan, f.m, f.t), LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    size_t n = llmem_plan_result_count(plan);
    cr_assert_gt(n, 10);
    uint64_t last = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        uint64_t mb, ckpt, peak, planned, tokens;
        llmem_plan_result_get_u64(plan, i, LLMEM_PLAN_MICRO_BATCH, &mb);
        llmem_plan_result_get_u64(plan, i, LLMEM_PLAN_GRAD_CKPT, &ckpt);
        llmem_plan_result_get_u64(plan, i, LLMEM_PLAN_PEAK_DEVICE, &planned);
        llmem_plan_result_get_u64(plan, i, LLMEM_PLAN_TOKENS_PER_SECOND, &tokens);
        cr_expect_leq(tokens, last, "best first");
        last = tokens;
        cr_assert_eq(llmem_plan_result_layout(plan, i, f.l), LLMEM_OK);
        llmem_parallel_gpus(f.l);
        cr_expect_eq(llmem_parallel_gpus(f.l), 8);
        llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, (int64_t)mb);
        llmem_train_set_int(f.t, LLMEM_TRAIN_GRAD_CKPT, (int64_t)ckpt);
        run(&f);
        llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
        cr_expect_eq(peak, planned, "result %zu", i);
        cr_expect_leq(peak, capacity, "result %zu", i);
    }
    /* The setup's batch is the planner's to solve: another is refused. */
    cr_expect_eq(llmem_plan_run(plan, f.m, f.t), LLMEM_EINCONSISTENT);
    llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, 1);
    llmem_train_set_int(f.t, LLMEM_TRAIN_GRAD_CKPT, LLMEM_GRAD_CKPT_NONE);
    /* Nothing fits 1 GiB: no result, and the reason. */
    llmem_plan_set_int(plan, LLMEM_PLAN_GPU_BYTES, INT64_C(1) << 30);
    cr_assert_eq(llmem_plan_run(plan, f.m, f.t), LLMEM_OK);
    cr_expect_eq(llmem_plan_result_count(plan), 0);
    cr_assert_gt(llmem_plan_rejected_count(plan), 0);
    const char *reason = NULL;
    uint64_t layouts = 0;
    llmem_plan_rejected(plan, 0, &reason, &layouts, NULL);
    cr_expect_not_null(strstr(reason, "does not fit"));
    cr_expect_gt(layouts, 0);
    llmem_plan_free(plan);
    close_fixture(&f);
}

/* A model the planner cannot take: the model's own message, not an empty one
 * (the planner once copied the context's message onto itself). */
Test(parallel, plan_of_an_invalid_model_names_the_field)
{
    fixture f = open_fixture("meta-llama/Llama-3.1-8B");
    llmem_plan *plan;
    int object = 0, key = 0;
    cr_assert_eq(llmem_plan_new(f.ctx, &plan), LLMEM_OK);
    llmem_plan_set_int(plan, LLMEM_PLAN_GPU_BYTES, INT64_C(80) << 30);
    cr_assert_eq(llmem_model_set_int(f.m, LLMEM_MODEL_HIDDEN, 1000), LLMEM_OK);
    cr_assert_eq(llmem_plan_run(plan, f.m, f.t), LLMEM_EINCONSISTENT);
    cr_expect_not_null(strstr(llmem_ctx_error(f.ctx), "heads"), "message: '%s'",
                       llmem_ctx_error(f.ctx));
    cr_expect_eq(llmem_ctx_error_field(f.ctx, &object, &key), LLMEM_OK);
    cr_expect_eq(object, LLMEM_OBJECT_MODEL);
    llmem_plan_free(plan);
    close_fixture(&f);
}

/* The largest value tries only what the layout splits and what the model
 * takes: a learned position table bounds seq, context parallelism takes
 * sequences in 2 x cp chunks, sequence parallelism a rank's sequence in tp
 * shares (any batch). Each answer fits, the next value it could take does
 * not; before, each was an error. */
Test(parallel, max_tries_only_values_the_layout_splits)
{
    const uint64_t capacity = UINT64_C(80) << 30;
    int64_t best = 0;
    uint64_t peak = 0;
    fixture f = open_fixture("openai-community/gpt2");
    cr_assert_eq(llmem_estimate_max(f.e, f.m, f.t, NULL, LLMEM_TRAIN_SEQ, LLMEM_LEVEL_DEVICE,
                                    UINT64_C(1) << 40, &best),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_expect_eq(best, 1024, "GPT-2's learned positions: %lld", (long long)best);
    close_fixture(&f);

    f = open_fixture("meta-llama/Llama-3.2-1B");
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_ATTENTION, "flash"), LLMEM_OK);
    set(&f, LLMEM_PARALLEL_CP, "2");
    cr_assert_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_SEQ, LLMEM_LEVEL_DEVICE,
                                    capacity, &best),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_expect_gt(best, 0);
    cr_expect_eq(best % 4, 0, "seq %lld in 4 chunks", (long long)best);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_leq(peak, capacity);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, best + 4), LLMEM_OK);
    run(&f);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_gt(peak, capacity);
    close_fixture(&f);

    /* Megatron scatters [s, b, h] along s: seq 511 splits over no tp 2 at
     * any batch (batch 2 x 511 tokens was accepted), refused naming sp; seq
     * 512 at any batch. */
    f = open_fixture("meta-llama/Llama-3.2-1B");
    set(&f, LLMEM_PARALLEL_TP, "2");
    set(&f, LLMEM_PARALLEL_SP, "1");
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 511), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, 2), LLMEM_OK);
    int object = 0, key = 0;
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, f.l), LLMEM_EINCONSISTENT);
    cr_expect(llmem_ctx_error_field(f.ctx, &object, &key) == LLMEM_OK &&
                  object == LLMEM_OBJECT_PARALLEL && key == LLMEM_PARALLEL_SP,
              "%s", llmem_ctx_error(f.ctx));
    cr_expect_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE,
                                    capacity, &best),
                 LLMEM_EINCONSISTENT, "no batch splits seq 511");
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 512), LLMEM_OK);
    cr_assert_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE,
                                    capacity, &best),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_expect_gt(best, 0);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, best + 1), LLMEM_OK);
    run(&f);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_gt(peak, capacity, "batch %lld fits, %lld does not", (long long)best,
                 (long long)best + 1);
    close_fixture(&f);

    /* Both: sequence parallelism splits the positions of a context-parallel
     * rank, seq / cp. Over tp 8 and cp 4 that takes seq in steps of 32; seq
     * 16 (4 positions a rank) is refused, naming sp, where a rank's share of
     * them was 0 tokens and the estimate an internal error. */
    f = open_fixture("meta-llama/Llama-3.2-1B");
    cr_assert_eq(llmem_train_set_str(f.t, LLMEM_TRAIN_ATTENTION, "flash"), LLMEM_OK);
    set(&f, LLMEM_PARALLEL_TP, "8");
    set(&f, LLMEM_PARALLEL_SP, "1");
    set(&f, LLMEM_PARALLEL_CP, "4");
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_BATCH, 1), LLMEM_OK);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 16), LLMEM_OK);
    cr_expect_eq(llmem_estimate_run_parallel(f.e, f.m, f.t, f.l), LLMEM_EINCONSISTENT);
    cr_expect(llmem_ctx_error_field(f.ctx, &object, &key) == LLMEM_OK &&
                  object == LLMEM_OBJECT_PARALLEL && key == LLMEM_PARALLEL_SP,
              "%s", llmem_ctx_error(f.ctx));
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, 32), LLMEM_OK);
    run(&f);
    cr_assert_eq(llmem_estimate_max(f.e, f.m, f.t, f.l, LLMEM_TRAIN_SEQ, LLMEM_LEVEL_DEVICE,
                                    capacity, &best),
                 LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
    cr_expect(best > 0 && best % 32 == 0, "seq %lld over cp 4 and tp 8", (long long)best);
    cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, best + 32), LLMEM_OK);
    run(&f);
    llmem_estimate_get_u64(f.e, LLMEM_EST_PEAK_DEVICE, &peak);
    cr_expect_gt(peak, capacity);
    close_fixture(&f);
}

/* The planner under sequence parallelism: with an odd sequence no layout
 * with sp is planned (no micro-batch splits it), each rejected naming the
 * sequence; with an even one they are planned, at any micro-batch. */
Test(parallel, plan_with_sp_and_an_odd_sequence)
{
    fixture f = open_fixture("meta-llama/Llama-3.2-1B");
    llmem_plan *plan;
    cr_assert_eq(llmem_plan_new(f.ctx, &plan), LLMEM_OK);
    llmem_plan_set_int(plan, LLMEM_PLAN_GPUS, 2);
    llmem_plan_set_int(plan, LLMEM_PLAN_GPU_BYTES, INT64_C(80) << 30);
    for (int64_t seq = 511; seq <= 512; seq++) {
        int planned = 0, rejected = 0;
        cr_assert_eq(llmem_train_set_int(f.t, LLMEM_TRAIN_SEQ, seq), LLMEM_OK);
        cr_assert_eq(llmem_plan_run(plan, f.m, f.t), LLMEM_OK, "%s", llmem_ctx_error(f.ctx));
        for (size_t i = 0; i < llmem_plan_result_count(plan); i++) {
            int64_t sp = 0;
            cr_assert_eq(llmem_plan_result_layout(plan, i, f.l), LLMEM_OK);
            llmem_parallel_get_int(f.l, LLMEM_PARALLEL_SP, &sp);
            planned |= sp != 0;
        }
        for (size_t i = 0; i < llmem_plan_rejected_count(plan); i++) {
            const char *example = NULL;
            llmem_plan_rejected(plan, i, NULL, NULL, &example);
            rejected |= strstr(example, "seq 511 does not split over tp 2") != NULL;
        }
        cr_expect_eq(planned, seq == 512, "seq %lld: sp planned %d", (long long)seq, planned);
        cr_expect_eq(rejected, seq == 511, "seq %lld: sp rejected for the sequence %d",
                     (long long)seq, rejected);
    }
    llmem_plan_free(plan);
    close_fixture(&f);
}
