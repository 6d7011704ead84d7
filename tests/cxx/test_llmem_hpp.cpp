// SPDX-License-Identifier: MIT
// llmem.hpp against the C API it wraps: the same numbers, exceptions with the
// library's status and message, objects left usable after a failure, move-only
// handles. Prints TAP.
#include <llmem.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

namespace {

/* Whether T::set(int, V) is a usable call (not deleted, not ambiguous). */
template <typename T, typename V, typename = void>
struct settable_with : std::false_type {};
template <typename T, typename V>
struct settable_with<T, V, decltype(void(std::declval<T &>().set(0, std::declval<V>())))>
    : std::true_type {};

int count = 0, failed = 0;

void check(bool ok, const char *what)
{
    ++count;
    if (!ok)
        ++failed;
    std::printf("%s %d - %s\n", ok ? "ok" : "not ok", count, what);
}

// The C API's answer for Llama-3.2-1B, batch 2, seq 1024, flash attention.
struct c_result {
    uint64_t peak[3], phases[4], terms[4];
    uint64_t peak_phase, params;
};

c_result with_c_api()
{
    c_result r{};
    llmem_ctx *ctx = nullptr;
    llmem_model *m = nullptr;
    llmem_train *t = nullptr;
    llmem_estimate *e = nullptr;
    const llmem_term *term = nullptr;
    if (llmem_ctx_new(&ctx, nullptr) != LLMEM_OK ||
        llmem_model_new_preset(ctx, "meta-llama/Llama-3.2-1B", &m) != LLMEM_OK ||
        llmem_train_new(ctx, &t) != LLMEM_OK ||
        llmem_train_set_int(t, LLMEM_TRAIN_BATCH, 2) != LLMEM_OK ||
        llmem_train_set_int(t, LLMEM_TRAIN_SEQ, 1024) != LLMEM_OK ||
        llmem_train_set_str(t, LLMEM_TRAIN_ATTENTION, "flash") != LLMEM_OK ||
        llmem_estimate_new(ctx, &e) != LLMEM_OK || llmem_estimate_run(e, m, t) != LLMEM_OK)
        std::printf("# the C API failed: %s\n", llmem_ctx_error(ctx));
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_ALLOCATED, &r.peak[0]);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_RESERVED, &r.peak[1]);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &r.peak[2]);
    llmem_estimate_get_u64(e, LLMEM_EST_PEAK_PHASE, &r.peak_phase);
    llmem_estimate_get_u64(e, LLMEM_EST_PARAMS_TOTAL, &r.params);
    for (int i = 0; i < 4; i++) {
        llmem_estimate_phase_bytes(e, i + 1, &r.phases[i]);
        if (llmem_estimate_term(e, i + 1, &term) == LLMEM_OK)
            r.terms[i] = llmem_term_bytes_at_peak(term);
    }
    llmem_estimate_free(e);
    llmem_train_free(t);
    llmem_model_free(m);
    llmem_ctx_free(ctx);
    return r;
}

void status_of_plan_without_capacity(llmem::Context &ctx, llmem::Model &model,
                                     const llmem::Train &train)
{
    llmem::Plan plan(ctx);
    int key = 0;
    try {
        plan.set(LLMEM_PLAN_GPUS, 8).run(model, train);
    } catch (const llmem::error &e) {
        key = e.field_object() == LLMEM_OBJECT_PLAN ? e.field_key() : -1;
    }
    check(key == LLMEM_PLAN_GPU_BYTES, "a planner without the GPU's memory names gpu-bytes");
}

void same_numbers_as_the_c_api()
{
    const c_result c = with_c_api();
    llmem::Context ctx;
    auto model = llmem::Model::preset(ctx, "Llama-3.2-1B");
    llmem::Train train(ctx);
    train.set(LLMEM_TRAIN_BATCH, 2).set(LLMEM_TRAIN_SEQ, 1024).set(LLMEM_TRAIN_ATTENTION,
                                                                   "flash");
    llmem::Estimate est(ctx);
    est.run(model, train);
    check(c.peak[0] > 0 && est.peak_allocated() == c.peak[0], "peak allocated as the C API");
    check(est.peak_reserved() == c.peak[1] && est.peak_device() == c.peak[2],
          "peak reserved and device as the C API");
    check(static_cast<uint64_t>(est.peak_phase()) == c.peak_phase && c.peak_phase != 0,
          "peak phase as the C API");
    check(model.param_count() == c.params && c.params == 1235814400,
          "parameter count as the C API");
    bool phases = true, terms = true;
    uint64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        phases = phases && est.phase_bytes(i + 1) == c.phases[i];
        const llmem::Term term = est.term(i + 1);
        terms = terms && term.bytes_at_peak() == c.terms[i];
        uint64_t parts = 0;
        for (const llmem::Component &comp : term.components())
            parts += comp.bytes;
        terms = terms && parts == term.bytes_at_peak() && term.max_bytes() >= parts;
        sum += term.bytes_at_peak();
    }
    check(phases, "phase bytes as the C API");
    check(terms && sum == c.peak[0], "terms and components as the C API, summing to the peak");
    check(std::strcmp(est.term(LLMEM_TERM_OPTIMIZER).name(), "optimizer") == 0,
          "a term knows its name");
}

/* The model's dropout probabilities: real fields, read and set as the C API
 * does; GPT-2's default estimate is the one with every site at 0.1. */
void model_dropouts_as_the_c_api()
{
    llmem::Context ctx;
    auto gpt2 = llmem::Model::preset(ctx, "openai-community/gpt2");
    check(gpt2.get_real(LLMEM_MODEL_HIDDEN_DROPOUT) == 0.1, "GPT-2's resid_pdrop reads 0.1");
    llmem::Train train(ctx);
    check(train.get_real(LLMEM_TRAIN_DROPOUT) == -1.0, "dropout unset reads -1: the model's");
    llmem::Estimate est(ctx);
    est.run(gpt2, train);
    const uint64_t model_own = est.peak_allocated();
    train.set(LLMEM_TRAIN_DROPOUT, 0.1);
    est.run(gpt2, train);
    check(est.peak_allocated() == model_own, "GPT-2's own dropouts are dropout 0.1 everywhere");
    train.set(LLMEM_TRAIN_DROPOUT, std::string("model"));
    gpt2.set(LLMEM_MODEL_ATTENTION_DROPOUT, 0.0)
        .set(LLMEM_MODEL_HIDDEN_DROPOUT, 0.0)
        .set(LLMEM_MODEL_EMBEDDING_DROPOUT, 0.0);
    est.run(gpt2, train);
    check(est.peak_allocated() < model_own, "the model's dropouts at 0 lower the peak");
    bool refused = false;
    try {
        gpt2.get(LLMEM_MODEL_HIDDEN_DROPOUT);
    } catch (const llmem::error &e) {
        refused = e.status() == LLMEM_EINVAL;
    }
    check(refused, "a real model field is not read as an integer");
}

void exceptions_carry_status_and_message()
{
    llmem::Context ctx;
    int status = 0;
    std::string message;
    try {
        llmem::Model::preset(ctx, "no-such/model");
    } catch (const llmem::error &e) {
        status = e.status();
        message = e.what();
    }
    check(status == LLMEM_ENOTFOUND && message.find("no-such/model") != std::string::npos,
          "an unknown preset throws LLMEM_ENOTFOUND naming it");
    try {
        llmem::Model::preset(ctx, "no-such/model");
    } catch (const llmem::error &e) {
        check(e.field_object() == 0 && e.field() == nullptr, "a preset name is no field");
    }

    llmem::Train train(ctx);
    train.set(LLMEM_TRAIN_LORA_RANK, 16);
    status = 0;
    int object = 0, key = 0;
    std::string field;
    try {
        train.set(LLMEM_TRAIN_LORA_RANK, 0);
    } catch (const llmem::error &e) {
        status = e.status();
        message = e.what();
        object = e.field_object();
        key = e.field_key();
        field = e.field() != nullptr ? e.field() : "";
    }
    check(status == LLMEM_ERANGE && message.rfind("lora-rank:", 0) == 0,
          "an out-of-range value throws LLMEM_ERANGE naming the field");
    check(object == LLMEM_OBJECT_TRAIN && key == LLMEM_TRAIN_LORA_RANK && field == "lora-rank",
          "the error carries the field the library names");
    check(train.get(LLMEM_TRAIN_LORA_RANK) == 16, "the failed set left the value unchanged");
    check(message == ctx.last_error(), "the message is the context's");

    status = 0;
    try {
        train.set(LLMEM_TRAIN_OPTIMIZER, "adamx");
    } catch (const std::exception &e) {  // catchable as a std::exception too
        status = dynamic_cast<const llmem::error &>(e).status();
    }
    check(status == LLMEM_ENOTFOUND, "a bad name throws LLMEM_ENOTFOUND");
    // The GPU by any catalog name; its number is the catalog index + 1.
    std::size_t a100 = 0;
    llmem_gpu_find(nullptr, "A100-80GB", &a100);
    train.set(LLMEM_TRAIN_GPU, "NVIDIA A100-SXM4-80GB");
    check(train.get(LLMEM_TRAIN_GPU) == static_cast<std::int64_t>(a100) + 1,
          "the GPU by the driver's name");
    status = key = 0;
    try {
        train.set(LLMEM_TRAIN_GPU, "A100");
    } catch (const llmem::error &e) {
        status = e.status();
        key = e.field_key();
    }
    check(status == LLMEM_ENOTFOUND && key == LLMEM_TRAIN_GPU,
          "an ambiguous GPU throws, naming the field");
    train.set(LLMEM_TRAIN_GPU, std::int64_t{0});
    llmem::Model gpt2 = llmem::Model::preset(ctx, "openai-community/gpt2");
    llmem::Train frozen(ctx);
    frozen.set(LLMEM_TRAIN_METHOD, "freeze").set(LLMEM_TRAIN_FROZEN_LAYERS, 20);
    llmem::Estimate est(ctx);
    status = key = 0;
    try {
        est.run(gpt2, frozen);
    } catch (const llmem::error &e) {
        status = e.status();
        key = e.field_key();
    }
    check(status == LLMEM_EINCONSISTENT && key == LLMEM_TRAIN_FROZEN_LAYERS,
          "an estimate's inconsistency names the training field");
    train.set_real(LLMEM_TRAIN_DROPOUT, 0.25);
    check(train.get_real(LLMEM_TRAIN_DROPOUT) == 0.25, "real fields round-trip");
    /* set(key, 0.1) took the integer overload and set 0. */
    train.set(LLMEM_TRAIN_LORA_DROPOUT, 0.1);
    check(train.get_real(LLMEM_TRAIN_LORA_DROPOUT) == 0.1, "set with a double sets the real value");
    train.set(LLMEM_TRAIN_LORA_DROPOUT, 0.0f);
    check(train.get_real(LLMEM_TRAIN_LORA_DROPOUT) == 0.0, "set with a float too");
}

// Llama-3.1-8B on dp 8 with ZeRO-3 and 2 pipeline stages: the wrapper's
// per-rank answers are the C API's.
void layouts_as_the_c_api()
{
    llmem::Context ctx;
    auto model = llmem::Model::preset(ctx, "meta-llama/Llama-3.1-8B");
    llmem::Train train(ctx);
    llmem::Parallel layout(ctx);
    layout.set(LLMEM_PARALLEL_DP, 8).set(LLMEM_PARALLEL_SHARDING, "fsdp-full");
    layout.set(LLMEM_PARALLEL_PP, 2);
    check(layout.gpus() == 16 && layout.get(LLMEM_PARALLEL_SHARDING) == LLMEM_SHARDING_FSDP_FULL,
          "a layout's fields and GPU count");
    layout.set(LLMEM_PARALLEL_CP, 2);
    check(layout.step(LLMEM_TRAIN_SEQ) == 4 && layout.step(LLMEM_TRAIN_BATCH) == 1,
          "the multiples of seq and batch a layout splits");
    layout.set(LLMEM_PARALLEL_CP, 1);
    check(train.unread(LLMEM_TRAIN_LORA_RANK).find("method lora or qlora") != std::string::npos &&
              train.unread(LLMEM_TRAIN_SEQ).empty(),
          "why a field is not read");
    check(layout.unread(LLMEM_PARALLEL_SHARD_GROUP).find("fsdp-hybrid") != std::string::npos &&
              layout.unread(LLMEM_PARALLEL_DP).empty(),
          "why a layout field is not read");
    llmem::Estimate est(ctx);
    est.run(model, train, layout);

    llmem_estimate *c = nullptr;
    llmem_estimate_new(ctx.native(), &c);
    int rc = llmem_estimate_run_parallel(c, model.native(), train.native(), layout.native());
    bool same = rc == LLMEM_OK && est.rank_count() == llmem_estimate_rank_count(c) &&
                est.rank_count() == 2 && est.peak_rank() == llmem_estimate_peak_rank(c);
    for (std::size_t r = 0; same && r < est.rank_count(); r++) {
        uint64_t v = 0;
        llmem_estimate_rank_get_u64(c, r, LLMEM_EST_PEAK_DEVICE, &v);
        same = same && est.rank_get(r, LLMEM_EST_PEAK_DEVICE) == v && v > 0;
        llmem_estimate_rank_get_u64(c, r, LLMEM_RANK_STAGE, &v);
        same = same && est.rank_get(r, LLMEM_RANK_STAGE) == v && v == r;
        llmem_estimate_rank_phase_bytes(c, r, LLMEM_PHASE_BACKWARD, &v);
        same = same && est.rank_phase_bytes(r, LLMEM_PHASE_BACKWARD) == v;
        const llmem_term *t = nullptr;
        llmem_estimate_rank_term(c, r, LLMEM_TERM_OPTIMIZER, &t);
        same = same && est.rank_term(r, LLMEM_TERM_OPTIMIZER).bytes_at_peak() ==
                           llmem_term_bytes_at_peak(t);
    }
    check(same, "per-rank results as the C API");
    check(est.peak_device() == est.rank_get(est.peak_rank(), LLMEM_EST_PEAK_DEVICE),
          "the getters answer for the most loaded rank");
    llmem_estimate_free(c);

    int key = 0, object = 0;
    try {
        est.run(model, train, llmem::Parallel(ctx).set(LLMEM_PARALLEL_TP, 7));
    } catch (const llmem::error &e) {
        key = e.field_key();
        object = e.field_object();
        check(e.status() == LLMEM_EINCONSISTENT && std::string(e.field()) == "tp",
              "a layout the model cannot take names its field");
    }
    check(object == LLMEM_OBJECT_PARALLEL && key == LLMEM_PARALLEL_TP,
          "the error's field is the layout's tp");
}

// The planner and the largest fitting batch, against the C API.
void planning_as_the_c_api()
{
    const std::uint64_t gib = std::uint64_t(1) << 30;
    llmem::Context ctx;
    auto model = llmem::Model::preset(ctx, "meta-llama/Llama-3.1-8B");
    llmem::Train train(ctx);
    llmem::Plan plan(ctx);
    plan.set(LLMEM_PLAN_GPUS, 8).set(LLMEM_PLAN_GPU_BYTES, static_cast<int64_t>(80 * gib));
    plan.run(model, train);

    llmem_plan *c = nullptr;
    llmem_plan_new(ctx.native(), &c);
    llmem_plan_set_int(c, LLMEM_PLAN_GPUS, 8);
    llmem_plan_set_int(c, LLMEM_PLAN_GPU_BYTES, static_cast<int64_t>(80 * gib));
    bool same = llmem_plan_run(c, model.native(), train.native()) == LLMEM_OK &&
                plan.result_count() == llmem_plan_result_count(c) && plan.result_count() > 0 &&
                plan.rejected_count() == llmem_plan_rejected_count(c);
    for (std::size_t i = 0; same && i < plan.result_count(); i++) {
        uint64_t v = 0;
        llmem_plan_result_get_u64(c, i, LLMEM_PLAN_TOKENS_PER_SECOND, &v);
        same = plan.result_get(i, LLMEM_PLAN_TOKENS_PER_SECOND) == v;
        llmem_plan_result_get_u64(c, i, LLMEM_PLAN_PEAK_DEVICE, &v);
        same = same && plan.result_get(i, LLMEM_PLAN_PEAK_DEVICE) == v && v <= 80 * gib;
    }
    check(same, "planned layouts as the C API");
    llmem_plan_free(c);

    // The best layout, estimated at its micro-batch, has the planned peak.
    llmem::Parallel best(ctx);
    plan.result_layout(0, best);
    llmem::Train at(ctx);
    at.set(LLMEM_TRAIN_BATCH, static_cast<int64_t>(plan.result_get(0, LLMEM_PLAN_MICRO_BATCH)));
    at.set(LLMEM_TRAIN_GRAD_CKPT, static_cast<int64_t>(plan.result_get(0, LLMEM_PLAN_GRAD_CKPT)));
    llmem::Estimate est(ctx);
    check(est.run(model, at, best).peak_device() == plan.result_get(0, LLMEM_PLAN_PEAK_DEVICE),
          "the best layout's planned peak is its estimate");
    bool reasons = true;
    for (std::size_t i = 0; i < plan.rejected_count(); i++)
        reasons = reasons && !plan.rejected(i).reason.empty() && plan.rejected(i).layouts > 0;
    check(reasons, "rejections carry a reason and a count");

    auto small = llmem::Model::preset(ctx, "meta-llama/Llama-3.2-1B");
    const std::int64_t n = est.max(small, train, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, 24 * gib);
    int64_t c_n = 0;
    llmem_estimate *ce = nullptr;
    llmem_estimate_new(ctx.native(), &ce);
    llmem_estimate_max(ce, small.native(), train.native(), nullptr, LLMEM_TRAIN_BATCH,
                       LLMEM_LEVEL_DEVICE, 24 * gib, &c_n);
    llmem_estimate_free(ce);
    llmem::Train over(ctx);
    over.set(LLMEM_TRAIN_BATCH, n + 1);
    check(n > 0 && n == c_n && est.run(small, over).peak_device() > 24 * gib,
          "max() is the C API's largest fitting batch, and one more does not fit");
    // A sweep: each point the C API's run at it; a NULL side keeps the train's value.
    const std::vector<std::int64_t> batches = { 1, 2, 5 }, seqs = { 3, 512, 1024 };
    const std::vector<std::uint64_t> peaks =
        est.sweep(small, train, batches, seqs, LLMEM_LEVEL_DEVICE);
    bool swept = peaks.size() == 3;
    for (std::size_t i = 0; swept && i < peaks.size(); i++) {
        llmem::Train at_point(ctx);
        at_point.set(LLMEM_TRAIN_BATCH, batches[i]);
        at_point.set(LLMEM_TRAIN_SEQ, seqs[i]);
        swept = est.run(small, at_point).peak_device() == peaks[i];
    }
    check(swept, "sweep() gives each point's own run");
    check(est.sweep(small, train, batches, {}, LLMEM_LEVEL_DEVICE).size() == 3,
          "an empty seq keeps the train's");
    bool mismatch = false;
    try {
        est.sweep(small, train, batches, { 1, 2 }, LLMEM_LEVEL_DEVICE);
    } catch (const std::invalid_argument &) {
        mismatch = true;
    }
    check(mismatch, "batch and seq of different lengths throw");
    status_of_plan_without_capacity(ctx, model, train);
}

// The timeline: the C API's points, whose largest total is the peak, in the
// order of the step; folded and expanded agree; per rank with a layout.
std::uint64_t largest_total(const llmem::Timeline &t)
{
    std::uint64_t best = 0;
    for (const llmem::TimelinePoint &p : t.points)
        best = p.total() > best ? p.total() : best;
    return best;
}

bool same_point(const llmem::TimelinePoint &a, const llmem::TimelinePoint &b)
{
    return a.index == b.index && a.phase == b.phase && a.part == b.part && a.layer == b.layer &&
           a.parameters == b.parameters && a.optimizer == b.optimizer && a.data == b.data &&
           a.temporary == b.temporary;
}

void timeline_as_the_c_api()
{
    llmem::Context ctx;
    auto model = llmem::Model::preset(ctx, "meta-llama/Llama-3.2-1B");
    llmem::Train train(ctx);
    train.set(LLMEM_TRAIN_BATCH, 2).set(LLMEM_TRAIN_SEQ, 1024).set(LLMEM_TRAIN_GRAD_CKPT, "full");
    llmem::Estimate est(ctx);
    const llmem::Timeline none = est.run(model, train).timeline();
    check(none.points.empty() && none.empty(), "no timeline unless recorded, and empty() says so");
    int status = 0;
    std::string message;
    try {
        none.peak_point();
    } catch (const llmem::error &e) {
        status = e.status();
        message = e.what();
    }
    check(status == LLMEM_ERANGE && message.find("record_timeline()") != std::string::npos,
          "peak_point() of an empty timeline throws ERANGE, saying how to record one");
    status = 0;
    try {
        llmem::Timeline{}.peak_point();
    } catch (const llmem::error &e) {
        status = e.status();
    }
    check(status == LLMEM_ERANGE, "a value-initialized timeline is empty and has no peak point");
    const llmem::Timeline t = est.record_timeline(1 << 16).run(model, train).timeline();
    check(!t.empty() && &t.peak_point() == &t.points[t.peak],
          "a recorded timeline is not empty; peak_point() is points[peak]");

    llmem_estimate *c = nullptr;
    llmem_estimate_new(ctx.native(), &c);
    llmem_estimate_timeline(c, 1 << 16, 0);
    bool same = llmem_estimate_run(c, model.native(), train.native()) == LLMEM_OK &&
                t.points.size() == llmem_estimate_timeline_count(c, 0) && t.points.size() > 100 &&
                t.peak == llmem_estimate_timeline_peak(c, 0);
    for (std::size_t i = 0; same && i < t.points.size(); i++) {
        llmem::TimelinePoint p;
        const char *part = nullptr;
        p.index = i;
        same = llmem_estimate_timeline_point(c, 0, i, &p.phase, &part, &p.layer, &p.parameters,
                                             &p.optimizer, &p.data, &p.temporary) == LLMEM_OK;
        p.part = part != nullptr ? part : "";
        same = same && same_point(p, t.points[i]);
    }
    llmem_estimate_free(c);
    check(same, "timeline points and peak as the C API");

    bool first_at_peak = t.peak < t.points.size() && largest_total(t) == est.peak_allocated() &&
                         t.points[t.peak].total() == est.peak_allocated();
    for (std::size_t i = 0; first_at_peak && i < t.peak; i++)
        first_at_peak = t.points[i].total() < est.peak_allocated();
    check(first_at_peak, "the peak index is the first point at the allocated peak");
    bool ordered = t.points.front().phase == LLMEM_PHASE_FORWARD &&
                   t.points.back().phase == LLMEM_PHASE_OPTIMIZER &&
                   t.points.back().part == "optimizer";
    for (std::size_t i = 1; ordered && i < t.points.size(); i++)
        ordered = t.points[i - 1].phase <= t.points[i].phase;
    check(ordered, "the points follow the phases of the step");

    const llmem::Timeline expanded = est.record_timeline(1 << 16, true).run(model, train).timeline();
    check(expanded.points.size() > t.points.size() &&
              largest_total(expanded) == est.peak_allocated() &&
              expanded.points[expanded.peak].layer == t.points[t.peak].layer &&
              expanded.points[expanded.peak].part == t.points[t.peak].part,
          "expanded, more points and the same peak");
    const llmem::Timeline ten = est.record_timeline(10, true).run(model, train).timeline();
    bool first_ten = ten.points.size() == 10;
    for (std::size_t i = 0; first_ten && i < 10; i++)
        first_ten = same_point(ten.points[i], expanded.points[i]);
    check(first_ten, "a smaller room keeps the first points");
    check(est.record_timeline(0).run(model, train).timeline().points.empty(),
          "a room of 0 stops recording");

    llmem::Parallel layout(ctx);
    layout.set(LLMEM_PARALLEL_PP, 2).set(LLMEM_PARALLEL_MICRO_BATCHES, 4);
    est.record_timeline(1 << 16).run(model, train, layout);
    bool ranks = est.rank_count() == 2;
    for (std::size_t r = 0; ranks && r < est.rank_count(); r++) {
        const llmem::Timeline rt = est.rank_timeline(r);
        ranks = !rt.points.empty() &&
                largest_total(rt) == est.rank_get(r, LLMEM_EST_PEAK_ALLOCATED) &&
                rt.points[rt.peak].total() == largest_total(rt);
    }
    check(ranks && est.timeline().points.size() ==
                       est.rank_timeline(est.peak_rank()).points.size(),
          "each rank's timeline peaks at its own allocated peak");
}

void handles_move_and_do_not_copy()
{
    static_assert(!std::is_copy_constructible<llmem::Model>::value, "Model is not copyable");
    static_assert(settable_with<llmem::Model, double>::value, "a model takes a real (its dropouts)");
    static_assert(!settable_with<llmem::Parallel, float>::value, "a layout takes no real value");
    static_assert(!settable_with<llmem::Plan, double>::value, "a planner takes no real value");
    static_assert(settable_with<llmem::Train, double>::value, "a setup takes a real value");
    static_assert(settable_with<llmem::Model, int>::value, "integers still set");
    static_assert(!std::is_copy_assignable<llmem::Estimate>::value, "Estimate is not copyable");
    static_assert(!std::is_copy_constructible<llmem::Context>::value, "Context is not copyable");
    static_assert(std::is_nothrow_move_constructible<llmem::Train>::value, "Train moves");
    static_assert(std::is_nothrow_move_assignable<llmem::Model>::value, "Model moves");
    llmem::Context keeper;  // declared first, so destroyed after the models
    llmem::Context ctx;
    llmem::Model a = llmem::Model::preset(ctx, "openai-community/gpt2");
    llmem_model *raw = a.native();
    llmem::Model b(std::move(a));
    check(a.native() == nullptr && b.native() == raw, "a move transfers the handle");
    llmem::Model c(ctx, LLMEM_FAMILY_LLAMA);
    c = std::move(b);  // frees c's own model, takes b's
    check(c.native() == raw && c.param_count() == 124439808, "a move assignment takes over");
    llmem_ctx *raw_ctx = ctx.native();
    keeper = std::move(ctx);  // frees keeper's own context, takes ctx's
    check(ctx.native() == nullptr && keeper.native() == raw_ctx &&
              c.get(LLMEM_MODEL_LAYERS) == 12,
          "objects keep working after their context moved");
    check(!llmem::presets().empty() && llmem::presets()[0] == llmem_preset_name(0),
          "presets() lists the library's presets");
    check(llmem::version() == llmem_version_string(), "version() is the library's");
}

} // namespace

int main()
{
    try {
        same_numbers_as_the_c_api();
        model_dropouts_as_the_c_api();
        exceptions_carry_status_and_message();
        layouts_as_the_c_api();
        planning_as_the_c_api();
        timeline_as_the_c_api();
        handles_move_and_do_not_copy();
    } catch (const std::exception &e) {
        check(false, e.what());
    }
    std::printf("1..%d\n", count);
    return failed != 0;
}
