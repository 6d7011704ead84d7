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

/* The error thrown by @p call, or status 0 when none is. */
template <class Call>
llmem::error thrown(Call call)
{
    try {
        call();
    } catch (const llmem::error &e) {
        return e;
    }
    return llmem::error(0, "");
}

bool contains(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

// The GPU catalog: every GPU's values as the C API has them; its aliases find it.
void gpus_as_the_c_api()
{
    llmem::Context ctx;
    const std::vector<llmem::Gpu> all = llmem::gpus();
    bool same = all.size() == llmem_gpu_count() && !all.empty();
    bool aliases_find = true;
    for (std::size_t i = 0; same && i < all.size(); i++) {
        const llmem::Gpu &g = all[i];
        std::uint64_t usable = 0, context = 0, slots = 0, cc = 0;
        llmem_gpu_get_u64(i, LLMEM_GPU_USABLE_BYTES, &usable);
        llmem_gpu_get_u64(i, LLMEM_GPU_CONTEXT_BYTES, &context);
        llmem_gpu_get_u64(i, LLMEM_GPU_MIG_SLOTS, &slots);
        llmem_gpu_get_u64(i, LLMEM_GPU_COMPUTE_CAPABILITY, &cc);
        same = g.index == i && g.name == llmem_gpu_name(i) && g.usable_bytes == usable &&
               g.context_bytes == context && g.mig_slots == slots && g.compute_capability == cc &&
               g.arch == llmem_gpu_get_str(i, LLMEM_GPU_ARCH) &&
               g.device_name == llmem_gpu_get_str(i, LLMEM_GPU_DEVICE_NAME) && usable > 0;
        for (const std::string &alias : g.aliases)
            aliases_find = aliases_find && !alias.empty() && alias.find('|') == std::string::npos &&
                           llmem::find_gpu(ctx, alias) == i;
    }
    check(same, "gpus() lists the C API's catalog, value for value");
    check(aliases_find, "each alias of gpus() finds its GPU");
    const llmem::Gpu h100 = llmem::gpu(llmem::find_gpu(ctx, "H100"));
    check(h100.name == "H100-SXM" && h100.compute_capability == 90 && h100.mig_profiles > 0 &&
              h100.mig_compute_slices == 7 && !h100.aliases.empty() && !h100.memory_source.empty(),
          "gpu() of the H100: its name, compute capability and MIG grid");
    const llmem::error e = thrown([&] { llmem::gpu(llmem_gpu_count()); });
    check(e.status() == LLMEM_ERANGE && contains(e.what(), std::to_string(llmem_gpu_count())),
          "gpu() past the last throws ERANGE");
}

// The MIG catalog: profiles by index and by any branch's name, as the C API has them.
void mig_profiles_as_the_c_api()
{
    llmem::Context ctx;
    const std::size_t a100 = llmem::find_gpu(ctx, "NVIDIA A100-SXM4-80GB");
    check(std::string(llmem_gpu_name(a100)) == "A100-80GB", "find_gpu() by the driver's name");
    const std::vector<llmem::MigProfile> all = llmem::mig_profiles(a100);
    std::uint64_t n = 0;
    llmem_gpu_get_u64(a100, LLMEM_GPU_MIG_PROFILES, &n);
    bool same = all.size() == n && n > 0;
    for (std::size_t p = 0; same && p < all.size(); p++) {
        std::uint64_t usable = 0, starts = 0;
        llmem_mig_profile_get_u64(a100, p, LLMEM_MIG_USABLE_BYTES, &usable);
        llmem_mig_profile_get_u64(a100, p, LLMEM_MIG_STARTS, &starts);
        same = all[p].index == p && all[p].name == llmem_mig_profile_name(a100, p) &&
               all[p].resource == llmem_mig_profile_resource(a100, p) &&
               all[p].usable_bytes == usable && all[p].starts == starts &&
               all[p].start_slots().size() > 0 && all[p].start_slots().front() == 0;
    }
    check(same, "mig_profiles() lists the C API's profiles");
    const llmem::MigProfile named = llmem::find_mig_profile(ctx, a100, "3g.39gb", 535);
    check(named.name == "3g.39gb" && named.catalog_name == "3g.40gb" &&
              named.resource == "nvidia.com/mig-3g.39gb" && named.slots == 4 &&
              llmem::find_mig_profile(ctx, a100, "3G.40GB").name == "3g.40gb",
          "a profile by any branch's name, described as a branch has it");
    bool renamed = false;
    for (const llmem::MigProfile &p : llmem::mig_profiles(a100, 535))
        renamed = renamed || (p.name == "3g.39gb" && p.driver == 535);
    check(renamed, "mig_profiles() of branch 535 names the 3g.39gb");
    const std::size_t t4 = llmem::find_gpu(ctx, "T4");
    check(llmem::mig_profiles(t4).empty(), "a GPU without MIG has no profiles");
    llmem::error e = thrown([&] { llmem::find_mig_profile(ctx, a100, "9g.40gb"); });
    check(e.status() == LLMEM_ENOTFOUND && contains(e.what(), "'9g.40gb'") &&
              contains(e.what(), "1g.10gb"),
          "an unknown profile throws ENOTFOUND naming it and the GPU's profiles");
    e = thrown([&] { llmem::find_gpu(ctx, "A100"); });
    check(e.status() == LLMEM_ENOTFOUND && contains(e.what(), "A100-40GB"),
          "an ambiguous GPU throws ENOTFOUND naming the matches");
    e = thrown([&] { llmem::mig_profile(a100, 99); });
    check(e.status() == LLMEM_ERANGE, "a bad profile index throws ERANGE");
    const std::size_t twenty = llmem::find_mig_profile(ctx, a100, "1g.20gb").index;
    e = thrown([&] { llmem::mig_profile(a100, twenty, 520); });
    check(e.status() == LLMEM_ENOTFOUND && contains(e.what(), "520"),
          "a profile the branch lacks throws ENOTFOUND");
    // A branch outside [0, 999] is refused as the fit, the pack and Python refuse it,
    // not read as a branch with no profiles.
    const long long bad[] = { 1000, -1 };
    for (long long driver : bad) {
        const std::string value = "driver: " + std::to_string(driver) + " out of range [0, 999]";
        e = thrown([&] { llmem::mig_profiles(a100, driver); });
        check(e.status() == LLMEM_ERANGE && e.what() == value,
              ("mig_profiles() refuses driver " + std::to_string(driver) + " with ERANGE").c_str());
        e = thrown([&] { llmem::mig_profile(a100, 0, driver); });
        check(e.status() == LLMEM_ERANGE && e.what() == value,
              ("mig_profile() refuses driver " + std::to_string(driver) + " with ERANGE").c_str());
        e = thrown([&] { llmem::find_mig_profile(ctx, a100, "3g.40gb", driver); });
        check(e.status() == LLMEM_ERANGE && e.what() == value,
              "find_mig_profile() refuses it too");
    }
    check(llmem::mig_profiles(a100, 999).size() == all.size() &&
              llmem::mig_profile(a100, 0, 999).name == all[0].name,
          "branch 999, the bound, is a branch");
}

// A fit next to running instances: the C API's options, and its refusals.
void fit_as_the_c_api()
{
    const std::uint64_t gib = std::uint64_t(1) << 30;
    llmem::Context ctx;
    const std::size_t h100 = llmem::find_gpu(ctx, "H100");
    const std::size_t four = llmem::find_mig_profile(ctx, h100, "4g.40gb").index;
    const std::size_t one = llmem::find_mig_profile(ctx, h100, "1g.10gb").index;
    llmem::Fit fit(ctx);
    fit.add_running(four, 0).add_running(one, 4).run(h100, 9 * gib);

    llmem_fit *c = nullptr;
    llmem_fit_new(ctx.native(), &c);
    llmem_fit_add_running(c, four, 0);
    llmem_fit_add_running(c, one, 4);
    bool same = llmem_fit_run(c, h100, 9 * gib, LLMEM_LEVEL_DEVICE) == LLMEM_OK &&
                fit.count() == llmem_fit_count(c) && fit.count() > 2;
    const std::vector<llmem::FitOption> options = fit.options();
    for (std::size_t i = 0; same && i < fit.count(); i++) {
        for (int key = LLMEM_FIT_PROFILE; same && key <= LLMEM_FIT_STARTS; key++) {
            std::uint64_t v = 0;
            llmem_fit_get_u64(c, i, key, &v);
            same = fit.option_get(i, key) == v;
        }
        std::uint64_t start = 0, shortfall = 0;
        llmem_fit_get_u64(c, i, LLMEM_FIT_START, &start);
        llmem_fit_get_u64(c, i, LLMEM_FIT_SHORTFALL_BYTES, &shortfall);
        same = same && options[i].name == llmem_fit_name(c, i) && options[i].start == start &&
               options[i].shortfall_bytes == shortfall &&
               options[i].margin_bytes() == options[i].usable_bytes - options[i].budget_bytes;
    }
    check(same, "fit options as the C API");
    std::size_t best = 0, c_best = 1;
    llmem_fit_best(c, &c_best);
    llmem_fit_free(c);
    check(fit.best(best) && best == c_best && options[best].name == "1g.10gb" &&
              options[best].start == 5 && options[best].resource == "nvidia.com/mig-1g.10gb",
          "the best option is the C API's: a 1g.10gb at start 5");
    check(options.back().whole_gpu && !options.back().placeable &&
              options.back().resource == "nvidia.com/gpu",
          "the whole GPU cannot be created next to running instances");

    fit.clear_running();
    const std::size_t three = llmem::find_mig_profile(ctx, h100, "3g.40gb").index;
    llmem::error e = thrown([&] { fit.add_running(three, 2).run(h100, 9 * gib); });
    check(e.status() == LLMEM_ERANGE && contains(e.what(), "running instance 1 (3g.40gb@2)") &&
              contains(e.what(), "not 2"),
          "a bad start throws ERANGE naming the instance");
    fit.clear_running();
    e = thrown([&] { fit.run(h100, 0); });
    check(e.status() == LLMEM_ERANGE && contains(e.what(), "bytes"), "zero bytes throw ERANGE");
    e = thrown([&] { fit.set(LLMEM_FIT_MIN_COMPUTE, 8); });
    check(e.status() == LLMEM_ERANGE && e.field_object() == LLMEM_OBJECT_FIT &&
              e.field_key() == LLMEM_FIT_MIN_COMPUTE && std::string(e.field()) == "min-compute",
          "an out-of-range setting names the fit's field");
    check(!fit.run(h100, 200 * gib).best(best) && fit.count() > 0,
          "best() is false when no option holds the job");
    fit.set(LLMEM_FIT_DRIVER, "535");
    const std::size_t a100 = llmem::find_gpu(ctx, "A100-80GB");
    check(fit.run(a100, 30 * gib).best(best) && fit.name(best) == "3g.39gb" &&
              fit.option(best).resource == "nvidia.com/mig-3g.39gb" &&
              fit.get(LLMEM_FIT_DRIVER) == 535,
          "a driver branch names the options and their resources");
    e = thrown([&] { fit.name(fit.count()); });
    check(e.status() == LLMEM_ERANGE, "an option past the last throws ERANGE");
}

/* A pack's text output through the C API's two calls. */
std::string c_output(const llmem_pack *p, const char *name, bool smi)
{
    std::size_t len = 0;
    if ((smi ? llmem_pack_nvidia_smi(p, nullptr, 0, &len)
             : llmem_pack_mig_parted(p, name, nullptr, 0, &len)) != LLMEM_OK)
        return "(failed)";
    std::vector<char> buf(len + 1);
    if (smi)
        llmem_pack_nvidia_smi(p, buf.data(), buf.size(), nullptr);
    else
        llmem_pack_mig_parted(p, name, buf.data(), buf.size(), nullptr);
    return std::string(buf.data(), len);
}

// A packing: the C API's layout, job results and outputs.
void pack_as_the_c_api()
{
    const std::uint64_t gib = std::uint64_t(1) << 30;
    const std::uint64_t sizes[] = { 30 * gib, 9 * gib, 18 * gib, 4 * gib, 60 * gib, 200 * gib,
                                    35 * gib, 8 * gib };
    llmem::Context ctx;
    const std::size_t a100 = llmem::find_gpu(ctx, "A100-80GB");
    llmem::Pack pack(ctx);
    llmem_pack *c = nullptr;
    llmem_pack_new(ctx.native(), &c);
    llmem::error e = thrown([&] { pack.mig_parted(); });
    check(e.status() == LLMEM_EINCONSISTENT && contains(e.what(), "run it first"),
          "outputs before a run throw EINCONSISTENT");
    pack.set(LLMEM_PACK_GPUS_PER_NODE, 2).add_gpu(a100, 2);
    llmem_pack_set_int(c, LLMEM_PACK_GPUS_PER_NODE, 2);
    llmem_pack_add_gpu(c, a100, 2);
    for (std::size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
        const std::string id = "job-" + std::to_string(j);
        pack.add_job(id, sizes[j], LLMEM_LEVEL_DEVICE, j == 1 ? 2 : 0);
        llmem_pack_add_job(c, id.c_str(), sizes[j], LLMEM_LEVEL_DEVICE, j == 1 ? 2 : 0);
    }
    pack.run();
    bool same = llmem_pack_run(c) == LLMEM_OK && pack.job_count() == llmem_pack_job_count(c);
    for (int key = LLMEM_PACK_GPUS_USED; same && key <= LLMEM_PACK_JOBS_BOUND; key++) {
        std::uint64_t v = 0;
        llmem_pack_get_u64(c, key, &v);
        same = pack.result(key) == v;
    }
    check(same && pack.result(LLMEM_PACK_GPUS_USED) == 2, "pack results as the C API");
    bool jobs = true, nowhere = false, no_room = false;
    for (std::size_t j = 0; jobs && j < pack.job_count(); j++) {
        std::uint64_t status = 0, v = 0;
        llmem_pack_job_u64(c, j, LLMEM_PACK_JOB_STATUS, &status);
        jobs = pack.job_get(j, LLMEM_PACK_JOB_STATUS) == status &&
               pack.job_id(j) == llmem_pack_job_id(c, j);
        if (status == LLMEM_PACK_PLACED) {
            for (int key = LLMEM_PACK_JOB_GPU; jobs && key <= LLMEM_PACK_JOB_HEADROOM_BYTES;
                 key++) {
                llmem_pack_job_u64(c, j, key, &v);
                jobs = pack.job_get(j, key) == v;
            }
            jobs = jobs && pack.job_resource(j) == llmem_pack_job_resource(c, j);
        } else {
            nowhere = nowhere || status == LLMEM_PACK_FITS_NOWHERE;
            no_room = no_room || status == LLMEM_PACK_NO_ROOM;
            jobs = jobs && pack.job_resource(j).empty();
        }
    }
    check(jobs && nowhere && no_room, "each job's result as the C API, every status seen");
    bool gpus = true;
    for (std::size_t g = 0; gpus && g < pack.result(LLMEM_PACK_GPUS_USED); g++)
        for (int key = LLMEM_PACK_GPU_TYPE; gpus && key <= LLMEM_PACK_GPU_DEVICE; key++) {
            std::uint64_t v = 0;
            llmem_pack_gpu_u64(c, g, key, &v);
            gpus = pack.gpu_get(g, key) == v;
        }
    check(gpus && pack.gpu_get(1, LLMEM_PACK_GPU_NODE) == 0, "each GPU of the layout as the C API");
    check(pack.mig_parted() == c_output(c, nullptr, false) &&
              pack.mig_parted("fleet-a") == c_output(c, "fleet-a", false) &&
              contains(pack.mig_parted("fleet-a"), "\"fleet-a-node-0\":"),
          "the mig-parted configuration as the C API's");
    check(pack.nvidia_smi() == c_output(c, nullptr, true) &&
              contains(pack.nvidia_smi(), "nvidia-smi mig -i 0 -cgi "),
          "the nvidia-smi commands as the C API's");
    llmem_pack_free(c);

    e = thrown([&] { pack.mig_parted("-x"); });
    check(e.status() == LLMEM_EINVAL && contains(e.what(), "config-name '-x'"),
          "a config name that is no label value throws EINVAL naming it");
    e = thrown([&] { pack.job_get(5, LLMEM_PACK_JOB_GPU); });
    check(e.status() == LLMEM_ENOTFOUND && contains(e.what(), "job-5"),
          "a job not placed has no GPU: ENOTFOUND naming the job");
    e = thrown([&] { pack.add_job("empty", 0); });
    check(e.status() == LLMEM_ERANGE && contains(e.what(), "'empty'"),
          "a job of zero bytes throws ERANGE naming it");
    e = thrown([&] { pack.add_job("late", gib).result(LLMEM_PACK_GPUS_USED); });
    check(e.status() == LLMEM_EINCONSISTENT, "a change drops the result");
    e = thrown([&] { pack.clear().run(); });
    check(e.status() == LLMEM_EINCONSISTENT && pack.job_count() == 0,
          "a pack without GPU types throws EINCONSISTENT");
    e = thrown([&] { pack.set(LLMEM_PACK_DRIVER, 1000); });
    check(e.status() == LLMEM_ERANGE && e.field_object() == LLMEM_OBJECT_PACK &&
              std::string(e.field()) == "driver",
          "an out-of-range setting names the pack's field");
}

// What the C API leaves when max() or sweep() fails part way, on the error thrown.
void failures_keep_the_partial_results()
{
    llmem::Context ctx;
    auto model = llmem::Model::preset(ctx, "meta-llama/Llama-3.1-8B");
    llmem::Train train(ctx);
    llmem::Estimate est(ctx);
    std::int64_t c_out = 0;
    const int c_rc = llmem_estimate_max(est.native(), model.native(), train.native(), nullptr,
                                        LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, UINT64_MAX, &c_out);
    std::int64_t value = -1;
    int status = 0;
    try {
        est.max(model, train, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, UINT64_MAX);
    } catch (const llmem::max_error &e) {
        value = e.value();
        status = e.status();
    }
    check(c_rc == LLMEM_EOVERFLOW && status == LLMEM_EOVERFLOW && c_out > 0 && value == c_out,
          "max() past what the estimate counts throws max_error with the last countable value");
    llmem::error e = thrown([&] {
        est.max(model, train, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, UINT64_MAX);
    });
    check(e.status() == LLMEM_EOVERFLOW && contains(e.what(), std::to_string(c_out)),
          "a max_error is an llmem::error");

    auto gpt2 = llmem::Model::preset(ctx, "gpt2");
    const std::vector<std::uint64_t> before =
        est.sweep(gpt2, train, { 1, 2 }, {}, LLMEM_LEVEL_DEVICE);
    std::vector<std::uint64_t> partial(9, 0);
    std::string what;
    try {
        est.sweep(gpt2, train, { 1, 2, 0, 4 }, {}, LLMEM_LEVEL_DEVICE);
    } catch (const llmem::sweep_error &err) {
        partial = err.peaks();
        status = err.status();
        what = err.what();
    }
    check(status == LLMEM_ERANGE && before.size() == 2 && partial == before &&
              what.find("sweep point 2 (batch 0") == 0,
          "a failed sweep throws sweep_error with the peaks before the failing point");
    bool none = false;
    try {
        est.sweep(gpt2, train, { 0, 1 }, {}, LLMEM_LEVEL_DEVICE);
    } catch (const llmem::sweep_error &err) {
        none = err.peaks().empty() && err.status() == LLMEM_ERANGE;
    }
    check(none, "a sweep failing at its first point has no peaks");
}

void handles_move_and_do_not_copy()
{
    static_assert(!std::is_copy_constructible<llmem::Fit>::value, "Fit is not copyable");
    static_assert(!std::is_copy_assignable<llmem::Pack>::value, "Pack is not copyable");
    static_assert(std::is_nothrow_move_constructible<llmem::Fit>::value, "Fit moves");
    static_assert(std::is_nothrow_move_assignable<llmem::Pack>::value, "Pack moves");
    static_assert(!settable_with<llmem::Fit, double>::value, "a fit takes no real value");
    static_assert(!settable_with<llmem::Pack, double>::value, "a pack takes no real value");
    static_assert(settable_with<llmem::Pack, int>::value, "a pack takes an integer");
    {
        llmem::Context mig_ctx;
        llmem::Fit first(mig_ctx);
        llmem_fit *raw_fit = first.native();
        llmem::Fit taken(std::move(first));
        llmem::Pack pack(mig_ctx);
        pack = llmem::Pack(mig_ctx);  // frees its own pack, takes the new one
        check(first.native() == nullptr && taken.native() == raw_fit &&
                  taken.run(llmem::find_gpu(mig_ctx, "H100"), 1u << 30).count() > 0 &&
                  pack.add_gpu(llmem::find_gpu(mig_ctx, "T4")).add_job("a", 1u << 30).run().job_count() == 1,
              "a moved fit and pack keep working");
    }

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
    // A moved-from object throws saying so, not the context's last message (the C
    // API refuses a NULL handle with no context to write a message in).
    llmem::Train train(ctx);
    llmem::error e = thrown([&] { train.set(LLMEM_TRAIN_LORA_RANK, -5); });
    check(e.status() == LLMEM_ERANGE && ctx.last_error().find("lora-rank") == 0,
          "a failed call leaves its message in the context");
    e = thrown([&] { a.set(LLMEM_MODEL_LAYERS, 2); });
    check(e.status() == LLMEM_EINVAL &&
              std::string(e.what()) == "use of a moved-from llmem::Model" && e.field() == nullptr,
          "a moved-from Model throws 'use of a moved-from llmem::Model'");
    e = thrown([&] { a.param_count(); });
    check(std::string(e.what()) == "use of a moved-from llmem::Model", "so does its getter");
    llmem::Estimate est(ctx);
    e = thrown([&] { est.run(a, train); });
    check(e.status() == LLMEM_EINVAL &&
              std::string(e.what()) == "use of a moved-from llmem::Model",
          "a moved-from Model given to Estimate::run() is named");
    llmem::Train kept(std::move(train));
    e = thrown([&] { est.max(b, train, LLMEM_TRAIN_BATCH, LLMEM_LEVEL_DEVICE, 1u << 30); });
    check(std::string(e.what()) == "use of a moved-from llmem::Train",
          "a moved-from Train given to Estimate::max() is named");
    llmem::Estimate other(std::move(est));
    e = thrown([&] { est.run(b, kept); });
    check(std::string(e.what()) == "use of a moved-from llmem::Estimate" &&
              other.run(b, kept).peak_allocated() > 0,
          "a moved-from Estimate throws; the one it moved to runs");
    llmem::Pack pack(ctx);
    llmem::Pack pack2(std::move(pack));
    e = thrown([&] { pack.run(); });
    check(std::string(e.what()) == "use of a moved-from llmem::Pack" && pack.job_count() == 0,
          "a moved-from Pack throws (its noexcept counts read 0)");
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
        gpus_as_the_c_api();
        mig_profiles_as_the_c_api();
        fit_as_the_c_api();
        pack_as_the_c_api();
        failures_keep_the_partial_results();
        handles_move_and_do_not_copy();
    } catch (const std::exception &e) {
        check(false, e.what());
    }
    std::printf("1..%d\n", count);
    return failed != 0;
}
