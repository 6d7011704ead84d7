/* SPDX-License-Identifier: MIT */
/**
 * @file llmem.hpp
 * @brief Header-only C++ wrapper of llmem.h: RAII handles and exceptions.
 *
 * Needs C++11 and links like a C program (`pkg-config --cflags --libs
 * libllmem`); nothing of it is compiled into the library, so it adds nothing
 * to the ABI. Every class owns one library handle, frees it in its
 * destructor, and is movable but not copyable. A failed call throws
 * llmem::error with the status and the context's message.
 *
 * Lifetimes and threads follow the C API (docs/api-lifecycle.md): a Context
 * must outlive the Model, Train and Estimate objects made from it (declare it
 * first; a Context moved elsewhere must outlive them there), and a context
 * and its objects are used by one thread at a time.
 *
 * @code
 * llmem::Context ctx;
 * llmem::Model model = llmem::Model::preset(ctx, "meta-llama/Llama-3.1-8B");
 * llmem::Train train(ctx);
 * train.set(LLMEM_TRAIN_BATCH, 4).set(LLMEM_TRAIN_ATTENTION, "flash");
 * llmem::Estimate est(ctx);
 * std::uint64_t peak = est.run(model, train).peak_allocated();
 * @endcode
 */
#ifndef LLMEM_HPP
#define LLMEM_HPP

#include <llmem.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

/** The C++ wrapper of libllmem. */
namespace llmem {

/**
 * A failed libllmem call: its status (LLMEM_E*), the library's message and,
 * when the error is about one field, that field (llmem_ctx_error_field()).
 */
class error : public std::runtime_error {
public:
    /** An error of @p status with @p message, about no particular field. */
    error(int status, const std::string &message)
        : std::runtime_error(message), status_(status), object_(0), key_(0) {}
    /** An error of @p status about field @p key of an #llmem_object @p object. */
    error(int status, const std::string &message, int object, int key)
        : std::runtime_error(message), status_(status), object_(object), key_(key) {}
    /** The negative LLMEM_E* code. */
    int status() const noexcept { return status_; }
    /** The library's static description of the status ("value out of range"). */
    const char *status_str() const noexcept { return llmem_status_str(status_); }
    /** The #llmem_object whose field the error is about; 0 when none. */
    int field_object() const noexcept { return object_; }
    /** The field's key (#llmem_model_key, #llmem_train_key, #llmem_parallel_key,
     * #llmem_plan_key); 0 when none. */
    int field_key() const noexcept { return key_; }
    /** The field's name as messages spell it ("lora-rank"), or NULL when none. */
    const char *field() const noexcept
    {
        const char *name = nullptr;
        if (object_ == LLMEM_OBJECT_MODEL)
            llmem_model_field_info(key_, &name, nullptr, nullptr);
        else if (object_ == LLMEM_OBJECT_TRAIN)
            llmem_train_field_info(key_, &name, nullptr, nullptr, nullptr);
        else if (object_ == LLMEM_OBJECT_PARALLEL)
            llmem_parallel_field_info(key_, &name, nullptr, nullptr);
        else if (object_ == LLMEM_OBJECT_PLAN)
            llmem_plan_field_info(key_, &name, nullptr, nullptr);
        return name;
    }

private:
    int status_;
    int object_;
    int key_;
};

/** Implementation details; not part of the wrapper's interface. */
namespace detail {
/** Enabled for a floating-point argument: set(key, 0.1) would otherwise
 * convert to the integer overload's 0, silently. */
template <typename T>
using if_real = typename std::enable_if<std::is_floating_point<T>::value, int>::type;


/** Throw llmem::error when @p rc is not LLMEM_OK, with @p ctx's message and field. */
inline void check(int rc, const llmem_ctx *ctx)
{
    if (rc == LLMEM_OK)
        return;
    const char *message = ctx != nullptr ? llmem_ctx_error(ctx) : "";
    std::string text = message != nullptr && *message != '\0' ? message : llmem_status_str(rc);
    int object = 0, key = 0;
    if (ctx != nullptr && llmem_ctx_error_field(ctx, &object, &key) == LLMEM_OK)
        throw error(rc, text, object, key);
    throw error(rc, text);
}

/** unique_ptr deleter calling the library's free function. */
template <class T, void (*Free)(T *)>
struct deleter {
    /** Free @p p (the library's free functions accept NULL). */
    void operator()(T *p) const noexcept { Free(p); }
};

/** An owning pointer to a library object. */
template <class T, void (*Free)(T *)>
using owned = std::unique_ptr<T, deleter<T, Free>>;

} // namespace detail

/** Version of the loaded library, "MAJOR.MINOR.PATCH". */
inline std::string version() { return llmem_version_string(); }

/** Names of the built-in model presets, in the library's order. */
inline std::vector<std::string> presets()
{
    std::vector<std::string> names;
    for (std::size_t i = 0; i < llmem_preset_count(); i++)
        names.emplace_back(llmem_preset_name(i));
    return names;
}

/** An llmem_ctx: the allocator and the last error message. */
class Context {
public:
    /** A context using malloc and free. */
    Context() : Context(nullptr) {}
    /** A context using @p allocator (copied; see #LLMEM_ALLOCATOR_INIT). */
    explicit Context(const llmem_allocator *allocator)
    {
        llmem_ctx *p = nullptr;
        detail::check(llmem_ctx_new(&p, allocator), nullptr);
        p_.reset(p);
    }
    /** The C handle, for calls the wrapper does not cover. */
    llmem_ctx *native() const noexcept { return p_.get(); }
    /** Message of the last failed call through this context ("" when none). */
    std::string last_error() const { return llmem_ctx_error(p_.get()); }

private:
    detail::owned<llmem_ctx, llmem_ctx_free> p_;
};

/** An llmem_model: a decoder-only transformer. */
class Model {
public:
    /** A model of @p family (#llmem_family) with its layout defaults, sizes unset. */
    Model(Context &ctx, int family) : ctx_(ctx.native())
    {
        llmem_model *p = nullptr;
        detail::check(llmem_model_new(ctx_, family, &p), ctx_);
        p_.reset(p);
    }
    /** A built-in preset ("meta-llama/Llama-3.1-8B", or the part after the slash). */
    static Model preset(Context &ctx, const std::string &name)
    {
        llmem_model *p = nullptr;
        detail::check(llmem_model_new_preset(ctx.native(), name.c_str(), &p), ctx.native());
        return Model(ctx.native(), p);
    }
    /** A Hugging Face config.json, or a directory holding one. */
    static Model hf_config(Context &ctx, const std::string &path)
    {
        llmem_model *p = nullptr;
        detail::check(llmem_model_new_hf_config(ctx.native(), path.c_str(), &p), ctx.native());
        return Model(ctx.native(), p);
    }
    /** A Hugging Face configuration from its JSON text. */
    static Model hf_json(Context &ctx, const std::string &json)
    {
        llmem_model *p = nullptr;
        detail::check(llmem_model_new_hf_config_json(ctx.native(), json.data(), json.size(), &p),
                      ctx.native());
        return Model(ctx.native(), p);
    }
    /** Set an integer field (#llmem_model_key). */
    Model &set(int key, std::int64_t value)
    {
        detail::check(llmem_model_set_int(p_.get(), key, value), ctx_);
        return *this;
    }
    /** Set a real field (a dropout probability) from a floating-point value (set_real). */
    template <typename Real, detail::if_real<Real> = 0>
    Model &set(int key, Real value)
    {
        return set_real(key, static_cast<double>(value));
    }
    /** Set a real field: #LLMEM_MODEL_ATTENTION_DROPOUT and the other dropouts. */
    Model &set_real(int key, double value)
    {
        detail::check(llmem_model_set_double(p_.get(), key, value), ctx_);
        return *this;
    }
    /** Set an enumerated field by name ("llama", "rmsnorm"). */
    Model &set(int key, const std::string &name)
    {
        detail::check(llmem_model_set_str(p_.get(), key, name.c_str()), ctx_);
        return *this;
    }
    /** Read a field, defaults resolved. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_model_get_int(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Read a real field. */
    double get_real(int key) const
    {
        double v = 0;
        detail::check(llmem_model_get_double(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Check the fields together. */
    void validate() { detail::check(llmem_model_validate(p_.get()), ctx_); }
    /** The exact parameter count. */
    std::uint64_t param_count()
    {
        std::uint64_t n = 0;
        detail::check(llmem_model_param_count(p_.get(), &n), ctx_);
        return n;
    }
    /** The C handle (NULL once moved from). */
    llmem_model *native() const noexcept { return p_.get(); }

private:
    Model(llmem_ctx *ctx, llmem_model *p) : ctx_(ctx), p_(p) {}
    llmem_ctx *ctx_;
    detail::owned<llmem_model, llmem_model_free> p_;
};

/** An llmem_train: how the model is trained. */
class Train {
public:
    /** A setup with the library's defaults. */
    explicit Train(Context &ctx) : ctx_(ctx.native())
    {
        llmem_train *p = nullptr;
        detail::check(llmem_train_new(ctx_, &p), ctx_);
        p_.reset(p);
    }
    /** Set an integer or enumerated field (#llmem_train_key). */
    Train &set(int key, std::int64_t value)
    {
        detail::check(llmem_train_set_int(p_.get(), key, value), ctx_);
        return *this;
    }
    /** Set a field by name or text ("flash", "q_proj,v_proj", "0.1"). */
    Train &set(int key, const std::string &text)
    {
        detail::check(llmem_train_set_str(p_.get(), key, text.c_str()), ctx_);
        return *this;
    }
    /** Set a real field from a floating-point value (set_real). */
    template <typename Real, detail::if_real<Real> = 0>
    Train &set(int key, Real value)
    {
        return set_real(key, static_cast<double>(value));
    }
    /** Set a real field (dropout, article factor). */
    Train &set_real(int key, double value)
    {
        detail::check(llmem_train_set_double(p_.get(), key, value), ctx_);
        return *this;
    }
    /** Read an integer or enumerated field. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_train_get_int(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Read a real field. */
    double get_real(int key) const
    {
        double v = 0;
        detail::check(llmem_train_get_double(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Why the setup does not read field @p key ("needs method lora or qlora"), or
     * empty when an estimate reads it (llmem_train_unread). */
    std::string unread(int key) const
    {
        const char *why = llmem_train_unread(p_.get(), key);
        return why != nullptr ? why : "";
    }
    /** The C handle (NULL once moved from). */
    llmem_train *native() const noexcept { return p_.get(); }

private:
    llmem_ctx *ctx_;
    detail::owned<llmem_train, llmem_train_free> p_;
};

/** An llmem_parallel: how the job is laid out across GPUs (default: one GPU). */
class Parallel {
public:
    /** A layout of one GPU. */
    explicit Parallel(Context &ctx) : ctx_(ctx.native())
    {
        llmem_parallel *p = nullptr;
        detail::check(llmem_parallel_new(ctx_, &p), ctx_);
        p_.reset(p);
    }
    /** Set a field (#llmem_parallel_key). */
    Parallel &set(int key, std::int64_t value)
    {
        detail::check(llmem_parallel_set_int(p_.get(), key, value), ctx_);
        return *this;
    }
    /** A layout has no real fields: a floating-point value does not compile. */
    template <typename Real, detail::if_real<Real> = 0>
    Parallel &set(int key, Real value) = delete;
    /** Set a field by name ("zero3", "1f1b") or decimal text. */
    Parallel &set(int key, const std::string &text)
    {
        detail::check(llmem_parallel_set_str(p_.get(), key, text.c_str()), ctx_);
        return *this;
    }
    /** Read a field. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_parallel_get_int(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Why the layout does not read field @p key ("needs sharding fsdp-hybrid ..."),
     * or empty when it does (llmem_parallel_unread). */
    std::string unread(int key) const
    {
        const char *why = llmem_parallel_unread(p_.get(), key);
        return why != nullptr ? why : "";
    }
    /** GPUs the layout spans: dp x tp x pp x cp. */
    std::uint64_t gpus() const noexcept { return llmem_parallel_gpus(p_.get()); }
    /** The multiples of batch or seq (@p key) the layout splits (llmem_parallel_step). */
    std::uint64_t step(int key) const noexcept { return llmem_parallel_step(p_.get(), key); }
    /** The C handle (NULL once moved from). */
    llmem_parallel *native() const noexcept { return p_.get(); }

private:
    llmem_ctx *ctx_;
    detail::owned<llmem_parallel, llmem_parallel_free> p_;
};

/** One named component of a term, in bytes at the peak. */
struct Component {
    std::string name;          /**< "gradients", "activations", ... */
    std::uint64_t bytes;       /**< bytes at the overall peak */
};

/** A term of an estimate; a view valid until its Estimate is run again or destroyed. */
class Term {
public:
    /** The term's name ("parameters", "optimizer", "data", "temporary"). */
    const char *name() const noexcept { return llmem_term_name(kind_); }
    /** Bytes at the instant of the overall peak. */
    std::uint64_t bytes_at_peak() const noexcept { return llmem_term_bytes_at_peak(t_); }
    /** The term's own largest value over the step. */
    std::uint64_t max_bytes() const noexcept { return llmem_term_max_bytes(t_); }
    /** Its named components. */
    std::vector<Component> components() const
    {
        std::vector<Component> out;
        for (std::size_t i = 0; i < llmem_term_component_count(t_); i++) {
            const char *name = nullptr;
            std::uint64_t bytes = 0;
            if (llmem_term_component(t_, i, &name, &bytes) == LLMEM_OK)
                out.push_back(Component{ name, bytes });
        }
        return out;
    }

private:
    friend class Estimate;
    Term(int kind, const llmem_term *t) : kind_(kind), t_(t) {}
    int kind_;
    const llmem_term *t_;
};

/**
 * One point of a step's timeline (llmem_estimate_timeline_point()): the live
 * bytes of each term at the allocated level while one op of the step runs.
 */
struct TimelinePoint {
    std::size_t index;        /**< its position in the timeline */
    int phase;                /**< #llmem_phase */
    std::string part;         /**< "embedding", "norm", "attention", "mlp", "head", "loss",
                                   "recompute", "layer" (a layer shown by one point), "optimizer" */
    std::int64_t layer;       /**< the decoder layer; -1 outside the layers */
    std::uint64_t parameters; /**< #LLMEM_TERM_PARAMETERS bytes */
    std::uint64_t optimizer;  /**< #LLMEM_TERM_OPTIMIZER bytes */
    std::uint64_t data;       /**< #LLMEM_TERM_DATA bytes */
    std::uint64_t temporary;  /**< #LLMEM_TERM_TEMPORARY bytes */
    /** The live bytes then: the four terms' sum. */
    std::uint64_t total() const noexcept { return parameters + optimizer + data + temporary; }
};

/**
 * A rank's timeline: its points in order and the index of the first at the
 * peak. With no points (Estimate::record_timeline() not called before the
 * run, or the article's formula) there is no peak point: test empty() first,
 * or use peak_point(), which throws then.
 */
struct Timeline {
    std::vector<TimelinePoint> points; /**< empty when none was recorded */
    /** Index into points of the first at the largest total: the rank's
     * peak_allocated unless the room filled first (llmem_estimate_timeline_peak()).
     * 0, and no valid index, when points is empty. */
    std::size_t peak;
    /** Whether no point was recorded (then peak indexes nothing). */
    bool empty() const noexcept { return points.empty(); }
    /** points[peak]; throws llmem::error (#LLMEM_ERANGE, as
     * llmem_estimate_timeline_point() past the last point) when empty(). */
    const TimelinePoint &peak_point() const
    {
        if (points.empty())
            throw error(LLMEM_ERANGE, "timeline: no points (call record_timeline() before "
                                      "run() to record them)");
        if (peak >= points.size()) /* only a Timeline built by hand */
            throw error(LLMEM_ERANGE, "timeline: peak " + std::to_string(peak) + " of " +
                                          std::to_string(points.size()) + " points");
        return points[peak];
    }
};

/** An llmem_estimate: reusable; run() allocates nothing. */
class Estimate {
public:
    /** An empty estimate. */
    explicit Estimate(Context &ctx) : ctx_(ctx.native())
    {
        llmem_estimate *p = nullptr;
        detail::check(llmem_estimate_new(ctx_, &p), ctx_);
        p_.reset(p);
    }
    /** Estimate @p model trained as @p train on one GPU; returns *this for the getters. */
    Estimate &run(Model &model, const Train &train)
    {
        detail::check(llmem_estimate_run(p_.get(), model.native(), train.native()), ctx_);
        return *this;
    }
    /** Estimate @p model trained as @p train, laid out as @p layout. */
    Estimate &run(Model &model, const Train &train, const Parallel &layout)
    {
        detail::check(llmem_estimate_run_parallel(p_.get(), model.native(), train.native(),
                                                  layout.native()),
                      ctx_);
        return *this;
    }
    /**
     * The largest value of the training field @p key (#LLMEM_TRAIN_BATCH or
     * #LLMEM_TRAIN_SEQ) whose peak at @p level (#llmem_level) fits
     * @p capacity bytes on one GPU; 0 when even 1 does not fit.
     */
    std::int64_t max(Model &model, const Train &train, int key, int level,
                     std::uint64_t capacity)
    {
        return max(model, train, nullptr, key, level, capacity);
    }
    /** As max(), laid out as @p layout. */
    std::int64_t max(Model &model, const Train &train, const Parallel &layout, int key,
                     int level, std::uint64_t capacity)
    {
        return max(model, train, &layout, key, level, capacity);
    }
    /**
     * The peak at @p level (#llmem_level) of @p train at each point
     * (batch[i], seq[i]) on one GPU (llmem_estimate_sweep()). An empty
     * vector keeps the train's value at every point; two non-empty ones must
     * be the same length (std::invalid_argument).
     */
    std::vector<std::uint64_t> sweep(Model &model, const Train &train,
                                     const std::vector<std::int64_t> &batch,
                                     const std::vector<std::int64_t> &seq, int level)
    {
        return sweep(model, train, nullptr, batch, seq, level);
    }
    /** As sweep(), laid out as @p layout. */
    std::vector<std::uint64_t> sweep(Model &model, const Train &train, const Parallel &layout,
                                     const std::vector<std::int64_t> &batch,
                                     const std::vector<std::int64_t> &seq, int level)
    {
        return sweep(model, train, &layout, batch, seq, level);
    }
    /** A result (#llmem_estimate_key), for the most loaded rank. */
    std::uint64_t get(int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_estimate_get_u64(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Ranks with a result of their own (1 on one GPU). */
    std::size_t rank_count() const noexcept { return llmem_estimate_rank_count(p_.get()); }
    /** Index of the most loaded rank. */
    std::size_t peak_rank() const noexcept { return llmem_estimate_peak_rank(p_.get()); }
    /** A result of rank @p rank: a #llmem_estimate_key or a #llmem_rank_key. */
    std::uint64_t rank_get(std::size_t rank, int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_estimate_rank_get_u64(p_.get(), rank, key, &v), ctx_);
        return v;
    }
    /** Peak live bytes of rank @p rank within @p phase. */
    std::uint64_t rank_phase_bytes(std::size_t rank, int phase) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_estimate_rank_phase_bytes(p_.get(), rank, phase, &v), ctx_);
        return v;
    }
    /** The term of @p kind of rank @p rank. */
    Term rank_term(std::size_t rank, int kind) const
    {
        const llmem_term *t = nullptr;
        detail::check(llmem_estimate_rank_term(p_.get(), rank, kind, &t), ctx_);
        return Term(kind, t);
    }
    /** Bytes of live tensors at the peak (torch.cuda.max_memory_allocated). */
    std::uint64_t peak_allocated() const { return get(LLMEM_EST_PEAK_ALLOCATED); }
    /** Plus the caching allocator's rounding and workspaces. */
    std::uint64_t peak_reserved() const { return get(LLMEM_EST_PEAK_RESERVED); }
    /** Plus the CUDA context (what nvidia-smi shows). */
    std::uint64_t peak_device() const { return get(LLMEM_EST_PEAK_DEVICE); }
    /** The #llmem_phase holding the peak; 0 with the article formula. */
    int peak_phase() const { return static_cast<int>(get(LLMEM_EST_PEAK_PHASE)); }
    /** Peak live bytes within @p phase (#llmem_phase). */
    std::uint64_t phase_bytes(int phase) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_estimate_phase_bytes(p_.get(), phase, &v), ctx_);
        return v;
    }
    /** The term of @p kind (#llmem_term_kind). */
    Term term(int kind) const
    {
        const llmem_term *t = nullptr;
        detail::check(llmem_estimate_term(p_.get(), kind, &t), ctx_);
        return Term(kind, t);
    }
    /**
     * Record the timeline of every later run, with room for @p capacity points
     * a rank (a step with more keeps the first ones; 0 stops recording), every
     * layer op by op when @p expand (llmem_estimate_timeline()).
     */
    Estimate &record_timeline(std::size_t capacity, bool expand = false)
    {
        detail::check(llmem_estimate_timeline(p_.get(), capacity, expand ? 1 : 0), ctx_);
        return *this;
    }
    /** The most loaded rank's timeline (no points, empty(), unless recorded). */
    Timeline timeline() const { return rank_timeline(peak_rank()); }
    /** Rank @p rank's timeline. */
    Timeline rank_timeline(std::size_t rank) const
    {
        Timeline t{};
        const std::size_t n = llmem_estimate_timeline_count(p_.get(), rank);
        t.points.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            TimelinePoint p{};
            const char *part = nullptr;
            p.index = i;
            detail::check(llmem_estimate_timeline_point(p_.get(), rank, i, &p.phase, &part,
                                                        &p.layer, &p.parameters, &p.optimizer,
                                                        &p.data, &p.temporary),
                          ctx_);
            p.part = part != nullptr ? part : "";
            t.points.push_back(std::move(p));
        }
        t.peak = llmem_estimate_timeline_peak(p_.get(), rank);
        return t;
    }
    /** The C handle (NULL once moved from). */
    llmem_estimate *native() const noexcept { return p_.get(); }

private:
    std::int64_t max(Model &model, const Train &train, const Parallel *layout, int key,
                     int level, std::uint64_t capacity)
    {
        std::int64_t v = 0;
        detail::check(llmem_estimate_max(p_.get(), model.native(), train.native(),
                                         layout != nullptr ? layout->native() : nullptr, key,
                                         level, capacity, &v),
                      ctx_);
        return v;
    }
    std::vector<std::uint64_t> sweep(Model &model, const Train &train, const Parallel *layout,
                                     const std::vector<std::int64_t> &batch,
                                     const std::vector<std::int64_t> &seq, int level)
    {
        if (!batch.empty() && !seq.empty() && batch.size() != seq.size())
            throw std::invalid_argument("llmem: sweep: batch and seq differ in length");
        std::vector<std::uint64_t> peak(batch.empty() ? seq.size() : batch.size());
        detail::check(llmem_estimate_sweep(p_.get(), model.native(), train.native(),
                                           layout != nullptr ? layout->native() : nullptr,
                                           batch.empty() ? nullptr : batch.data(),
                                           seq.empty() ? nullptr : seq.data(), peak.size(),
                                           level, peak.data()),
                      ctx_);
        return peak;
    }
    llmem_ctx *ctx_;
    detail::owned<llmem_estimate, llmem_estimate_free> p_;
};

/** A kind of layout the planner rejected. */
struct Rejection {
    std::string reason;     /**< the library's reason ("tp does not divide the heads") */
    std::uint64_t layouts;  /**< layouts it rejected */
    std::string example;    /**< one example's message ("" when none) */
};

/** An llmem_plan: the layouts of a job over N GPUs that fit, best first. */
class Plan {
public:
    /** A planner with the library's defaults (set #LLMEM_PLAN_GPU_BYTES). */
    explicit Plan(Context &ctx) : ctx_(ctx.native())
    {
        llmem_plan *p = nullptr;
        detail::check(llmem_plan_new(ctx_, &p), ctx_);
        p_.reset(p);
    }
    /** Set a field (#llmem_plan_key). */
    Plan &set(int key, std::int64_t value)
    {
        detail::check(llmem_plan_set_int(p_.get(), key, value), ctx_);
        return *this;
    }
    /** A planner has no real fields: a floating-point value does not compile. */
    template <typename Real, detail::if_real<Real> = 0>
    Plan &set(int key, Real value) = delete;
    /** Read a field. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_plan_get_int(p_.get(), key, &v), ctx_);
        return v;
    }
    /** Enumerate the layouts of @p model trained as @p train. */
    Plan &run(Model &model, const Train &train)
    {
        detail::check(llmem_plan_run(p_.get(), model.native(), train.native()), ctx_);
        return *this;
    }
    /** Layouts that fit, best first. */
    std::size_t result_count() const noexcept { return llmem_plan_result_count(p_.get()); }
    /** A number of result @p index (#llmem_plan_result_key). */
    std::uint64_t result_get(std::size_t index, int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_plan_result_get_u64(p_.get(), index, key, &v), ctx_);
        return v;
    }
    /** Copy result @p index's layout into @p layout (of the same context). */
    void result_layout(std::size_t index, Parallel &layout) const
    {
        detail::check(llmem_plan_result_layout(p_.get(), index, layout.native()), ctx_);
    }
    /** Number of kinds of rejected layouts. */
    std::size_t rejected_count() const noexcept { return llmem_plan_rejected_count(p_.get()); }
    /** Rejection @p index. */
    Rejection rejected(std::size_t index) const
    {
        const char *reason = nullptr, *example = nullptr;
        std::uint64_t layouts = 0;
        detail::check(llmem_plan_rejected(p_.get(), index, &reason, &layouts, &example), ctx_);
        return Rejection{ reason, layouts, example != nullptr ? example : "" };
    }
    /** The C handle (NULL once moved from). */
    llmem_plan *native() const noexcept { return p_.get(); }

private:
    llmem_ctx *ctx_;
    detail::owned<llmem_plan, llmem_plan_free> p_;
};

} // namespace llmem

#endif /* LLMEM_HPP */
