/* SPDX-License-Identifier: MIT */
/**
 * @file llmem.hpp
 * @brief Header-only C++ wrapper of most of llmem.h: RAII handles and exceptions.
 *
 * Needs C++11 and links like a C program (`pkg-config --cflags --libs
 * libllmem`); nothing of it is compiled into the library, so it adds nothing
 * to the ABI. Every class owns one library handle, frees it in its
 * destructor, and is movable but not copyable. A failed call throws
 * llmem::error with the status and the context's message; a call on an
 * object moved from (or given one) throws #LLMEM_EINVAL, "use of a
 * moved-from llmem::Model", its noexcept counts read 0.
 *
 * What it covers: the objects (Context, Model, Train, Parallel, Estimate,
 * Plan, Fit, Pack) with their setters, getters and runs; an estimate's
 * results, ranks, terms, timelines, max() and sweep(); the GPU catalog
 * (gpus(), gpu(), find_gpu()), MIG profiles (mig_profiles(), mig_profile(),
 * find_mig_profile()), presets() and version(). Call these through the C
 * API (each object's native() gives its handle): the field tables
 * (llmem_*_field_info() but for error::field(), llmem_*_value_name(),
 * llmem_*_choice(), llmem_model_field_is_real()), phase names
 * (llmem_phase_name()), llmem_version_number(), a setup's LoRA modules
 * (llmem_train_lora_modules()), safetensors totals (llmem_weights_*()) and
 * a profile's catalog resource (llmem_mig_profile_resource()).
 *
 * Lifetimes and threads follow the C API (docs/api-lifecycle.md): a Context
 * must outlive the Model, Train, Parallel, Estimate, Plan, Fit and Pack
 * objects made from it (declare it first; a Context moved elsewhere must
 * outlive them there), and a context and its objects are used by one thread
 * at a time.
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

#include <algorithm>
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
     * #llmem_plan_key, #llmem_fit_key, #llmem_pack_key); 0 when none. */
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
        else if (object_ == LLMEM_OBJECT_FIT)
            llmem_fit_field_info(key_, &name, nullptr, nullptr);
        else if (object_ == LLMEM_OBJECT_PACK)
            llmem_pack_field_info(key_, &name, nullptr, nullptr);
        return name;
    }

private:
    int status_;
    int object_;
    int key_;
};

/**
 * A failed Estimate::max() that left a partial answer: #LLMEM_EOVERFLOW or
 * #LLMEM_ENOTSUP when the next value is beyond what the estimate counts or
 * models (llmem_estimate_max()). Catch it as llmem::error, or as itself for
 * value().
 */
class max_error : public error {
public:
    /** @p e with the value the C call left in its out-parameter. */
    max_error(const error &e, std::int64_t value) : error(e), value_(value) {}
    /** The last value that could be counted and fits: a floor of the answer,
     * not the answer. */
    std::int64_t value() const noexcept { return value_; }

private:
    std::int64_t value_;
};

/**
 * A failed Estimate::sweep(): the error of the point that failed (its message
 * names it, "sweep point 3 (batch 0, seq 2048): ..."), with the peaks of the
 * points before it. Catch it as llmem::error, or as itself for peaks().
 */
class sweep_error : public error {
public:
    /** @p e with the peaks written before the failing point. */
    sweep_error(const error &e, std::vector<std::uint64_t> peaks)
        : error(e), peaks_(std::make_shared<const std::vector<std::uint64_t>>(std::move(peaks)))
    {
    }
    /** The peaks of the points before the failing one (empty when it failed
     * before any point: a bad argument). */
    const std::vector<std::uint64_t> &peaks() const noexcept { return *peaks_; }

private:
    /* shared: copying an exception must not throw */
    std::shared_ptr<const std::vector<std::uint64_t>> peaks_;
};

/** Implementation details; not part of the wrapper's interface. */
namespace detail {
/** Enabled for a floating-point argument: set(key, 0.1) would otherwise
 * convert to the integer overload's 0, silently. */
template <typename T>
using if_real = typename std::enable_if<std::is_floating_point<T>::value, int>::type;


/** The llmem::error of a failed call's status @p rc, with @p ctx's message and field. */
inline error failure(int rc, const llmem_ctx *ctx)
{
    const char *message = ctx != nullptr ? llmem_ctx_error(ctx) : "";
    std::string text = message != nullptr && *message != '\0' ? message : llmem_status_str(rc);
    int object = 0, key = 0;
    if (ctx != nullptr && llmem_ctx_error_field(ctx, &object, &key) == LLMEM_OK)
        return error(rc, text, object, key);
    return error(rc, text);
}

/** Throw llmem::error when @p rc is not LLMEM_OK, with @p ctx's message and field. */
inline void check(int rc, const llmem_ctx *ctx)
{
    if (rc != LLMEM_OK)
        throw failure(rc, ctx);
}

/** The index of the point a failed sweep stopped at, from the library's
 * message ("sweep point 3 (batch ...", llmem_estimate_sweep()); 0 when it
 * failed before any point. */
inline std::size_t failed_point(const char *message)
{
    static const char prefix[] = "sweep point ";
    std::size_t i = 0;
    for (; prefix[i] != '\0'; i++)
        if (message[i] != prefix[i])
            return 0;
    std::size_t point = 0;
    for (; message[i] >= '0' && message[i] <= '9'; i++)
        point = point * 10 + static_cast<std::size_t>(message[i] - '0');
    return message[i] == ' ' ? point : 0;
}

/**
 * @p p, the handle of an object of class @p what; throws #LLMEM_EINVAL
 * ("use of a moved-from llmem::Model") when it is NULL, as it is once the
 * object was moved from. The C API refuses a NULL handle but has no context
 * to put a message in, so check() would report the context's last message,
 * about an earlier, unrelated call.
 */
template <class T>
T *live(T *p, const char *what)
{
    if (p == nullptr)
        throw error(LLMEM_EINVAL, std::string("use of a moved-from llmem::") + what);
    return p;
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
        detail::check(llmem_model_set_int(live(), key, value), ctx_);
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
        detail::check(llmem_model_set_double(live(), key, value), ctx_);
        return *this;
    }
    /** Set an enumerated field by name ("llama", "rmsnorm"). */
    Model &set(int key, const std::string &name)
    {
        detail::check(llmem_model_set_str(live(), key, name.c_str()), ctx_);
        return *this;
    }
    /** Read a field, defaults resolved. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_model_get_int(live(), key, &v), ctx_);
        return v;
    }
    /** Read a real field. */
    double get_real(int key) const
    {
        double v = 0;
        detail::check(llmem_model_get_double(live(), key, &v), ctx_);
        return v;
    }
    /** Check the fields together. */
    void validate() { detail::check(llmem_model_validate(live()), ctx_); }
    /** The exact parameter count. */
    std::uint64_t param_count()
    {
        std::uint64_t n = 0;
        detail::check(llmem_model_param_count(live(), &n), ctx_);
        return n;
    }
    /** The C handle (NULL once moved from). */
    llmem_model *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_model *live() const { return detail::live(p_.get(), "Model"); }
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
        detail::check(llmem_train_set_int(live(), key, value), ctx_);
        return *this;
    }
    /** Set a field by name or text ("flash", "q_proj,v_proj", "0.1"). */
    Train &set(int key, const std::string &text)
    {
        detail::check(llmem_train_set_str(live(), key, text.c_str()), ctx_);
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
        detail::check(llmem_train_set_double(live(), key, value), ctx_);
        return *this;
    }
    /** Read an integer or enumerated field. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_train_get_int(live(), key, &v), ctx_);
        return v;
    }
    /** Read a real field. */
    double get_real(int key) const
    {
        double v = 0;
        detail::check(llmem_train_get_double(live(), key, &v), ctx_);
        return v;
    }
    /** Why the setup does not read field @p key ("needs method lora or qlora"), or
     * empty when an estimate reads it (llmem_train_unread). */
    std::string unread(int key) const
    {
        const char *why = llmem_train_unread(live(), key);
        return why != nullptr ? why : "";
    }
    /** The C handle (NULL once moved from). */
    llmem_train *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_train *live() const { return detail::live(p_.get(), "Train"); }
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
        detail::check(llmem_parallel_set_int(live(), key, value), ctx_);
        return *this;
    }
    /** A layout has no real fields: a floating-point value does not compile. */
    template <typename Real, detail::if_real<Real> = 0>
    Parallel &set(int key, Real value) = delete;
    /** Set a field by name ("zero3", "1f1b") or decimal text. */
    Parallel &set(int key, const std::string &text)
    {
        detail::check(llmem_parallel_set_str(live(), key, text.c_str()), ctx_);
        return *this;
    }
    /** Read a field. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_parallel_get_int(live(), key, &v), ctx_);
        return v;
    }
    /** Why the layout does not read field @p key ("needs sharding fsdp-hybrid ..."),
     * or empty when it does (llmem_parallel_unread). */
    std::string unread(int key) const
    {
        const char *why = llmem_parallel_unread(live(), key);
        return why != nullptr ? why : "";
    }
    /** GPUs the layout spans: dp x tp x pp x cp. */
    std::uint64_t gpus() const noexcept { return llmem_parallel_gpus(p_.get()); }
    /** The multiples of batch or seq (@p key) the layout splits (llmem_parallel_step). */
    std::uint64_t step(int key) const noexcept { return llmem_parallel_step(p_.get(), key); }
    /** The C handle (NULL once moved from). */
    llmem_parallel *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_parallel *live() const { return detail::live(p_.get(), "Parallel"); }
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
        detail::check(llmem_estimate_run(live(), detail::live(model.native(), "Model"),
                                         detail::live(train.native(), "Train")),
                      ctx_);
        return *this;
    }
    /** Estimate @p model trained as @p train, laid out as @p layout. */
    Estimate &run(Model &model, const Train &train, const Parallel &layout)
    {
        detail::check(llmem_estimate_run_parallel(live(), detail::live(model.native(), "Model"),
                                                  detail::live(train.native(), "Train"),
                                                  detail::live(layout.native(), "Parallel")),
                      ctx_);
        return *this;
    }
    /**
     * The largest value of the training field @p key (#LLMEM_TRAIN_BATCH or
     * #LLMEM_TRAIN_SEQ) whose peak at @p level (#llmem_level) fits
     * @p capacity bytes on one GPU; 0 when even the smallest value does not
     * fit (1, or a multiple of 2 x cp for seq under context parallelism:
     * Parallel::step()). Throws llmem::max_error, with the last countable
     * value, when the next value is beyond what the estimate counts
     * (#LLMEM_EOVERFLOW) or models (#LLMEM_ENOTSUP).
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
     * be the same length (std::invalid_argument). A point that fails throws
     * llmem::sweep_error, with the peaks of the points before it.
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
        detail::check(llmem_estimate_get_u64(live(), key, &v), ctx_);
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
        detail::check(llmem_estimate_rank_get_u64(live(), rank, key, &v), ctx_);
        return v;
    }
    /** Peak live bytes of rank @p rank within @p phase. */
    std::uint64_t rank_phase_bytes(std::size_t rank, int phase) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_estimate_rank_phase_bytes(live(), rank, phase, &v), ctx_);
        return v;
    }
    /** The term of @p kind of rank @p rank. */
    Term rank_term(std::size_t rank, int kind) const
    {
        const llmem_term *t = nullptr;
        detail::check(llmem_estimate_rank_term(live(), rank, kind, &t), ctx_);
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
        detail::check(llmem_estimate_phase_bytes(live(), phase, &v), ctx_);
        return v;
    }
    /** The term of @p kind (#llmem_term_kind). */
    Term term(int kind) const
    {
        const llmem_term *t = nullptr;
        detail::check(llmem_estimate_term(live(), kind, &t), ctx_);
        return Term(kind, t);
    }
    /**
     * Record the timeline of every later run, with room for @p capacity points
     * a rank (a step with more keeps the first ones; 0 stops recording), every
     * layer op by op when @p expand (llmem_estimate_timeline()).
     */
    Estimate &record_timeline(std::size_t capacity, bool expand = false)
    {
        detail::check(llmem_estimate_timeline(live(), capacity, expand ? 1 : 0), ctx_);
        return *this;
    }
    /** The most loaded rank's timeline (no points, empty(), unless recorded). */
    Timeline timeline() const { return rank_timeline(peak_rank()); }
    /** Rank @p rank's timeline. */
    Timeline rank_timeline(std::size_t rank) const
    {
        Timeline t{};
        const std::size_t n = llmem_estimate_timeline_count(live(), rank);
        t.points.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            TimelinePoint p{};
            const char *part = nullptr;
            p.index = i;
            detail::check(llmem_estimate_timeline_point(live(), rank, i, &p.phase, &part,
                                                        &p.layer, &p.parameters, &p.optimizer,
                                                        &p.data, &p.temporary),
                          ctx_);
            p.part = part != nullptr ? part : "";
            t.points.push_back(std::move(p));
        }
        t.peak = llmem_estimate_timeline_peak(live(), rank);
        return t;
    }
    /** The C handle (NULL once moved from). */
    llmem_estimate *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_estimate *live() const { return detail::live(p_.get(), "Estimate"); }
    std::int64_t max(Model &model, const Train &train, const Parallel *layout, int key,
                     int level, std::uint64_t capacity)
    {
        std::int64_t v = 0;
        const int rc = llmem_estimate_max(live(), detail::live(model.native(), "Model"),
                                          detail::live(train.native(), "Train"),
                                          layout != nullptr
                                              ? detail::live(layout->native(), "Parallel")
                                              : nullptr,
                                          key, level, capacity, &v);
        if (rc == LLMEM_EOVERFLOW || rc == LLMEM_ENOTSUP) /* v: the last countable value */
            throw max_error(detail::failure(rc, ctx_), v);
        detail::check(rc, ctx_);
        return v;
    }
    std::vector<std::uint64_t> sweep(Model &model, const Train &train, const Parallel *layout,
                                     const std::vector<std::int64_t> &batch,
                                     const std::vector<std::int64_t> &seq, int level)
    {
        if (!batch.empty() && !seq.empty() && batch.size() != seq.size())
            throw std::invalid_argument("llmem: sweep: batch and seq differ in length");
        std::vector<std::uint64_t> peak(batch.empty() ? seq.size() : batch.size());
        const int rc = llmem_estimate_sweep(live(), detail::live(model.native(), "Model"),
                                            detail::live(train.native(), "Train"),
                                            layout != nullptr
                                                ? detail::live(layout->native(), "Parallel")
                                                : nullptr,
                                            batch.empty() ? nullptr : batch.data(),
                                            seq.empty() ? nullptr : seq.data(), peak.size(),
                                            level, peak.data());
        if (rc != LLMEM_OK) { /* peak is written up to the failing point */
            error e = detail::failure(rc, ctx_);
            peak.resize(std::min(detail::failed_point(e.what()), peak.size()));
            throw sweep_error(e, std::move(peak));
        }
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
        detail::check(llmem_plan_set_int(live(), key, value), ctx_);
        return *this;
    }
    /** A planner has no real fields: a floating-point value does not compile. */
    template <typename Real, detail::if_real<Real> = 0>
    Plan &set(int key, Real value) = delete;
    /** Read a field. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_plan_get_int(live(), key, &v), ctx_);
        return v;
    }
    /** Enumerate the layouts of @p model trained as @p train. */
    Plan &run(Model &model, const Train &train)
    {
        detail::check(llmem_plan_run(live(), detail::live(model.native(), "Model"),
                                     detail::live(train.native(), "Train")),
                      ctx_);
        return *this;
    }
    /** Layouts that fit, best first. */
    std::size_t result_count() const noexcept { return llmem_plan_result_count(p_.get()); }
    /** A number of result @p index (#llmem_plan_result_key). */
    std::uint64_t result_get(std::size_t index, int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_plan_result_get_u64(live(), index, key, &v), ctx_);
        return v;
    }
    /** Copy result @p index's layout into @p layout (of the same context). */
    void result_layout(std::size_t index, Parallel &layout) const
    {
        detail::check(
            llmem_plan_result_layout(live(), index, detail::live(layout.native(), "Parallel")),
            ctx_);
    }
    /** Number of kinds of rejected layouts. */
    std::size_t rejected_count() const noexcept { return llmem_plan_rejected_count(p_.get()); }
    /** Rejection @p index. */
    Rejection rejected(std::size_t index) const
    {
        const char *reason = nullptr, *example = nullptr;
        std::uint64_t layouts = 0;
        detail::check(llmem_plan_rejected(live(), index, &reason, &layouts, &example), ctx_);
        return Rejection{ reason, layouts, example != nullptr ? example : "" };
    }
    /** The C handle (NULL once moved from). */
    llmem_plan *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_plan *live() const { return detail::live(p_.get(), "Plan"); }
    llmem_ctx *ctx_;
    detail::owned<llmem_plan, llmem_plan_free> p_;
};

/**
 * A GPU of the library's catalog (llmem_gpu_*(), `llmem gpus`). @c index is
 * the catalog's, stable within one library version only: look GPUs up by
 * name (find_gpu()).
 */
struct Gpu {
    std::size_t index;                /**< the GPU's catalog index */
    std::string name;                 /**< canonical name ("A100-80GB", "H100-SXM") */
    std::string device_name;          /**< #LLMEM_GPU_DEVICE_NAME, as the driver reports it */
    std::string arch;                 /**< #LLMEM_GPU_ARCH ("sm_90", "CDNA3") */
    std::uint64_t usable_bytes;       /**< #LLMEM_GPU_USABLE_BYTES */
    bool usable_estimated;            /**< #LLMEM_GPU_USABLE_ESTIMATED */
    std::uint64_t context_bytes;      /**< #LLMEM_GPU_CONTEXT_BYTES */
    bool context_estimated;           /**< #LLMEM_GPU_CONTEXT_ESTIMATED */
    std::uint64_t workspace_bytes;    /**< #LLMEM_GPU_WORKSPACE_BYTES */
    std::uint64_t sms;                /**< #LLMEM_GPU_SMS; 0 when unknown */
    std::uint64_t compute_capability; /**< #LLMEM_GPU_COMPUTE_CAPABILITY (90); 0 for AMD */
    std::uint64_t mig_profiles;       /**< #LLMEM_GPU_MIG_PROFILES; 0 without MIG */
    std::uint64_t mig_slots;          /**< #LLMEM_GPU_MIG_SLOTS */
    std::uint64_t mig_compute_slices; /**< #LLMEM_GPU_MIG_COMPUTE_SLICES */
    std::vector<std::string> aliases; /**< #LLMEM_GPU_ALIASES, split at '|' */
    std::string memory_source;        /**< #LLMEM_GPU_MEMORY_SOURCE */
    std::string constants_source;     /**< #LLMEM_GPU_CONSTANTS_SOURCE */
};

namespace detail {
/** A number of a GPU of the catalog; throws #LLMEM_ERANGE for a bad index. */
inline std::uint64_t gpu_u64(std::size_t gpu, int key)
{
    std::uint64_t v = 0;
    const int rc = llmem_gpu_get_u64(gpu, key, &v);
    if (rc != LLMEM_OK)
        throw error(rc, "gpu: no GPU of index " + std::to_string(gpu) + " (" +
                            std::to_string(llmem_gpu_count()) + " in the catalog)");
    return v;
}

/** A text of a GPU of the catalog ("" when it has none). */
inline std::string gpu_str(std::size_t gpu, int key)
{
    const char *text = llmem_gpu_get_str(gpu, key);
    return text != nullptr ? text : "";
}
} // namespace detail

/** GPU @p index of the catalog, every value; throws #LLMEM_ERANGE past the last. */
inline Gpu gpu(std::size_t index)
{
    Gpu g{};
    g.index = index;
    g.usable_bytes = detail::gpu_u64(index, LLMEM_GPU_USABLE_BYTES); /* checks the index */
    g.name = llmem_gpu_name(index);
    g.device_name = detail::gpu_str(index, LLMEM_GPU_DEVICE_NAME);
    g.arch = detail::gpu_str(index, LLMEM_GPU_ARCH);
    g.usable_estimated = detail::gpu_u64(index, LLMEM_GPU_USABLE_ESTIMATED) != 0;
    g.context_bytes = detail::gpu_u64(index, LLMEM_GPU_CONTEXT_BYTES);
    g.context_estimated = detail::gpu_u64(index, LLMEM_GPU_CONTEXT_ESTIMATED) != 0;
    g.workspace_bytes = detail::gpu_u64(index, LLMEM_GPU_WORKSPACE_BYTES);
    g.sms = detail::gpu_u64(index, LLMEM_GPU_SMS);
    g.compute_capability = detail::gpu_u64(index, LLMEM_GPU_COMPUTE_CAPABILITY);
    g.mig_profiles = detail::gpu_u64(index, LLMEM_GPU_MIG_PROFILES);
    g.mig_slots = detail::gpu_u64(index, LLMEM_GPU_MIG_SLOTS);
    g.mig_compute_slices = detail::gpu_u64(index, LLMEM_GPU_MIG_COMPUTE_SLICES);
    const std::string aliases = detail::gpu_str(index, LLMEM_GPU_ALIASES);
    for (std::size_t start = 0; start < aliases.size();) {
        std::size_t end = aliases.find('|', start);
        if (end == std::string::npos)
            end = aliases.size();
        if (end > start)
            g.aliases.push_back(aliases.substr(start, end - start));
        start = end + 1;
    }
    g.memory_source = detail::gpu_str(index, LLMEM_GPU_MEMORY_SOURCE);
    g.constants_source = detail::gpu_str(index, LLMEM_GPU_CONSTANTS_SOURCE);
    return g;
}

/** The GPU catalog, in its order (as `llmem gpus` lists it). */
inline std::vector<Gpu> gpus()
{
    std::vector<Gpu> out;
    for (std::size_t i = 0; i < llmem_gpu_count(); i++)
        out.push_back(gpu(i));
    return out;
}

/**
 * The catalog index of the GPU @p name names: any name llmem_gpu_find()
 * takes ("H100", "h100-sxm", "NVIDIA A100-SXM4-80GB"). Throws llmem::error
 * (#LLMEM_ENOTFOUND for an unknown or ambiguous name, the message naming
 * the close matches).
 */
inline std::size_t find_gpu(Context &ctx, const std::string &name)
{
    std::size_t gpu = 0;
    detail::check(llmem_gpu_find(ctx.native(), name.c_str(), &gpu), ctx.native());
    return gpu;
}

/**
 * A MIG profile of a GPU of the catalog as a driver branch has it
 * (llmem_mig_profile_*(), `llmem gpus --mig`). Indices are the catalog's,
 * stable within one library version only: look profiles up by name
 * (find_mig_profile()).
 */
struct MigProfile {
    std::size_t gpu;              /**< the GPU's catalog index */
    std::size_t index;            /**< the profile's index on that GPU */
    std::int64_t driver;          /**< the driver branch it is described for (0: the newest) */
    std::string name;             /**< as that branch names it ("3g.39gb" on 535) */
    std::string catalog_name;     /**< the catalog's name ("3g.40gb") */
    std::string resource;         /**< its Kubernetes resource under that branch */
    std::string source;           /**< where its values come from */
    std::uint64_t usable_bytes;   /**< #LLMEM_MIG_USABLE_BYTES */
    std::uint64_t compute_slices; /**< #LLMEM_MIG_COMPUTE_SLICES */
    std::uint64_t slots;          /**< #LLMEM_MIG_SLOTS */
    std::uint64_t starts;         /**< #LLMEM_MIG_STARTS: bit s for a start at slot s */
    std::uint64_t max_count;      /**< #LLMEM_MIG_MAX_COUNT */
    std::uint64_t sms;            /**< #LLMEM_MIG_SMS; 0 when unknown */
    int variant;                  /**< #llmem_mig_variant */
    std::uint64_t uncertain;      /**< #LLMEM_MIG_UNCERTAIN: #llmem_mig_uncertain bits */
    std::uint64_t since_driver;   /**< #LLMEM_MIG_SINCE_DRIVER; 0 for every branch */
    /** The slots it may start at, in order. */
    std::vector<unsigned> start_slots() const
    {
        std::vector<unsigned> out;
        for (unsigned s = 0; s < 64; s++)
            if (starts >> s & 1)
                out.push_back(s);
        return out;
    }
};

namespace detail {
/** A number of a profile of the catalog; throws for a bad index. */
inline std::uint64_t mig_u64(std::size_t gpu, std::size_t profile, int key)
{
    std::uint64_t v = 0;
    const int rc = llmem_mig_profile_get_u64(gpu, profile, key, &v);
    if (rc != LLMEM_OK)
        throw error(rc, "mig: GPU " + std::to_string(gpu) + " has no profile " +
                            std::to_string(profile));
    return v;
}

/** Throw #LLMEM_ERANGE for a driver branch outside the range #LLMEM_FIT_DRIVER
 * takes ([0, 999]), worded as the Python binding words it: the catalog's
 * getters would read such a branch as one with no profiles. */
inline void check_driver(std::int64_t driver)
{
    std::int64_t min = 0, max = 0;
    llmem_fit_field_info(LLMEM_FIT_DRIVER, nullptr, &min, &max);
    if (driver < min || driver > max)
        throw error(LLMEM_ERANGE, "driver: " + std::to_string(driver) + " out of range [" +
                                      std::to_string(min) + ", " + std::to_string(max) + "]");
}

/** Copy out a text of a `(buf, cap, *len_out)` function of the pack. */
template <class Write>
std::string buffer_text(Write write, const llmem_ctx *ctx)
{
    std::size_t len = 0;
    check(write(nullptr, 0, &len), ctx);
    std::vector<char> buf(len + 1);
    check(write(buf.data(), buf.size(), nullptr), ctx);
    return std::string(buf.data(), len);
}
} // namespace detail

/**
 * Profile @p profile of GPU @p gpu as driver branch @p driver (0: the
 * newest) has it. Throws llmem::error: #LLMEM_ERANGE for a bad index or a
 * branch outside [0, 999], #LLMEM_ENOTFOUND for a profile the branch does not have
 * (#LLMEM_MIG_SINCE_DRIVER).
 */
inline MigProfile mig_profile(std::size_t gpu, std::size_t profile, std::int64_t driver = 0)
{
    detail::check_driver(driver);
    MigProfile p{};
    p.gpu = gpu;
    p.index = profile;
    p.driver = driver;
    p.usable_bytes = detail::mig_u64(gpu, profile, LLMEM_MIG_USABLE_BYTES);
    const char *name = llmem_mig_profile_driver_name(gpu, profile, driver);
    if (name == nullptr)
        throw error(LLMEM_ENOTFOUND, std::string("mig: driver branch ") + std::to_string(driver) +
                                         " has no " + llmem_mig_profile_name(gpu, profile) +
                                         " of " + llmem_gpu_name(gpu));
    p.name = name;
    p.catalog_name = llmem_mig_profile_name(gpu, profile);
    const char *resource = llmem_mig_profile_driver_resource(gpu, profile, driver);
    const char *source = llmem_mig_profile_source(gpu, profile);
    p.resource = resource != nullptr ? resource : "";
    p.source = source != nullptr ? source : "";
    p.compute_slices = detail::mig_u64(gpu, profile, LLMEM_MIG_COMPUTE_SLICES);
    p.slots = detail::mig_u64(gpu, profile, LLMEM_MIG_SLOTS);
    p.starts = detail::mig_u64(gpu, profile, LLMEM_MIG_STARTS);
    p.max_count = detail::mig_u64(gpu, profile, LLMEM_MIG_MAX_COUNT);
    p.sms = detail::mig_u64(gpu, profile, LLMEM_MIG_SMS);
    p.variant = static_cast<int>(detail::mig_u64(gpu, profile, LLMEM_MIG_VARIANT));
    p.uncertain = detail::mig_u64(gpu, profile, LLMEM_MIG_UNCERTAIN);
    p.since_driver = detail::mig_u64(gpu, profile, LLMEM_MIG_SINCE_DRIVER);
    return p;
}

/** The MIG profiles of GPU @p gpu that driver branch @p driver has, in the
 * catalog's order; empty for a GPU without MIG. Throws #LLMEM_ERANGE for a
 * bad GPU index or a branch outside [0, 999]. */
inline std::vector<MigProfile> mig_profiles(std::size_t gpu, std::int64_t driver = 0)
{
    detail::check_driver(driver);
    std::uint64_t n = 0;
    const int rc = llmem_gpu_get_u64(gpu, LLMEM_GPU_MIG_PROFILES, &n);
    if (rc != LLMEM_OK)
        throw error(rc, "mig: no GPU of index " + std::to_string(gpu));
    std::vector<MigProfile> out;
    for (std::size_t p = 0; p < n; p++)
        if (llmem_mig_profile_driver_name(gpu, p, driver) != nullptr)
            out.push_back(mig_profile(gpu, p, driver));
    return out;
}

/**
 * The MIG profile of GPU @p gpu that @p name names (llmem_mig_profile_find():
 * its catalog name or any branch's, "3g.39gb", case-insensitively), as
 * driver branch @p driver has it. Throws llmem::error: #LLMEM_ENOTFOUND with
 * the library's message (the GPU's profiles), as mig_profile() for a profile
 * the branch lacks.
 */
inline MigProfile find_mig_profile(Context &ctx, std::size_t gpu, const std::string &name,
                                   std::int64_t driver = 0)
{
    detail::check_driver(driver);
    std::size_t profile = 0;
    detail::check(llmem_mig_profile_find(ctx.native(), gpu, name.c_str(), &profile), ctx.native());
    return mig_profile(gpu, profile, driver);
}

/** One option of a Fit: a MIG profile or the whole GPU (#llmem_fit_result). */
struct FitOption {
    std::size_t index;             /**< its position in the fit */
    std::string name;              /**< as the fit's driver branch names it; "whole" */
    std::string resource;          /**< Kubernetes resource; "nvidia.com/gpu" for the whole GPU */
    std::size_t profile;           /**< #LLMEM_FIT_PROFILE (the GPU's profile count: whole GPU) */
    bool whole_gpu;                /**< #LLMEM_FIT_WHOLE_GPU */
    bool fits;                     /**< #LLMEM_FIT_FITS */
    bool placeable;                /**< #LLMEM_FIT_PLACEABLE */
    std::uint64_t usable_bytes;    /**< #LLMEM_FIT_USABLE_BYTES */
    std::uint64_t compute_slices;  /**< #LLMEM_FIT_COMPUTE_SLICES */
    std::uint64_t budget_bytes;    /**< #LLMEM_FIT_BUDGET_BYTES */
    std::uint64_t need_bytes;      /**< #LLMEM_FIT_NEED_BYTES */
    std::uint64_t required_bytes;  /**< #LLMEM_FIT_REQUIRED_BYTES */
    std::uint64_t headroom_bytes;  /**< #LLMEM_FIT_HEADROOM_BYTES */
    std::uint64_t shortfall_bytes; /**< #LLMEM_FIT_SHORTFALL_BYTES */
    std::uint64_t start;           /**< #LLMEM_FIT_START; UINT64_MAX when not placeable */
    std::uint64_t starts;          /**< #LLMEM_FIT_STARTS bit mask */
    /** The bytes kept free: usable less budget. */
    std::uint64_t margin_bytes() const noexcept { return usable_bytes - budget_bytes; }
};

/**
 * An llmem_fit: which MIG profiles of a GPU, and whether the whole GPU, hold
 * a job, next to the MIG instances it already runs (docs/mig.md, "Fitting").
 */
class Fit {
public:
    /** A fit with the library's defaults (margin 50 permille). */
    explicit Fit(Context &ctx) : ctx_(ctx.native()), gpu_(0)
    {
        llmem_fit *p = nullptr;
        detail::check(llmem_fit_new(ctx_, &p), ctx_);
        p_.reset(p);
    }
    /** Set a setting (#llmem_fit_key). */
    Fit &set(int key, std::int64_t value)
    {
        detail::check(llmem_fit_set_int(live(), key, value), ctx_);
        return *this;
    }
    /** A fit has no real settings: a floating-point value does not compile. */
    template <typename Real, detail::if_real<Real> = 0>
    Fit &set(int key, Real value) = delete;
    /** Set a setting from decimal text ("50"). */
    Fit &set(int key, const std::string &text)
    {
        detail::check(llmem_fit_set_str(live(), key, text.c_str()), ctx_);
        return *this;
    }
    /** Read a setting. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_fit_get_int(live(), key, &v), ctx_);
        return v;
    }
    /** Declare a MIG instance the GPU runs and keeps: profile index @p profile
     * of the GPU run() gets (find_mig_profile()) at placement start @p start;
     * run() checks it. */
    Fit &add_running(std::size_t profile, std::size_t start)
    {
        detail::check(llmem_fit_add_running(live(), profile, start), ctx_);
        return *this;
    }
    /** Forget the running instances (an empty GPU). */
    Fit &clear_running()
    {
        detail::check(llmem_fit_clear_running(live()), ctx_);
        return *this;
    }
    /** Fit @p bytes at @p level (#LLMEM_LEVEL_DEVICE or #LLMEM_LEVEL_RESERVED)
     * to GPU @p gpu (a catalog index, find_gpu()). A running instance the GPU
     * cannot hold throws, named ("running instance 1 (3g.40gb@2): ..."). */
    Fit &run(std::size_t gpu, std::uint64_t bytes, int level = LLMEM_LEVEL_DEVICE)
    {
        detail::check(llmem_fit_run(live(), gpu, bytes, level), ctx_);
        gpu_ = gpu;
        return *this;
    }
    /** Options of the last run (0 before any, and after a setting changed). */
    std::size_t count() const noexcept { return llmem_fit_count(p_.get()); }
    /** The first option that fits, in @p option; false when none does. */
    bool best(std::size_t &option) const noexcept
    {
        return llmem_fit_best(p_.get(), &option) == LLMEM_OK;
    }
    /** A value of option @p option (#llmem_fit_result). */
    std::uint64_t option_get(std::size_t option, int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_fit_get_u64(live(), option, key, &v), ctx_);
        return v;
    }
    /** Option @p option's name ("1g.10gb", "whole"); throws past the last. */
    std::string name(std::size_t option) const
    {
        const char *n = llmem_fit_name(live(), option);
        if (n == nullptr)
            throw error(LLMEM_ERANGE, "fit: option " + std::to_string(option) + " of " +
                                          std::to_string(count()));
        return n;
    }
    /** Option @p option, every value. */
    FitOption option(std::size_t option) const
    {
        FitOption o{};
        o.index = option;
        o.name = name(option);
        o.profile = static_cast<std::size_t>(option_get(option, LLMEM_FIT_PROFILE));
        o.whole_gpu = option_get(option, LLMEM_FIT_WHOLE_GPU) != 0;
        o.fits = option_get(option, LLMEM_FIT_FITS) != 0;
        o.placeable = option_get(option, LLMEM_FIT_PLACEABLE) != 0;
        o.usable_bytes = option_get(option, LLMEM_FIT_USABLE_BYTES);
        o.compute_slices = option_get(option, LLMEM_FIT_COMPUTE_SLICES);
        o.budget_bytes = option_get(option, LLMEM_FIT_BUDGET_BYTES);
        o.need_bytes = option_get(option, LLMEM_FIT_NEED_BYTES);
        o.required_bytes = option_get(option, LLMEM_FIT_REQUIRED_BYTES);
        o.headroom_bytes = option_get(option, LLMEM_FIT_HEADROOM_BYTES);
        o.shortfall_bytes = option_get(option, LLMEM_FIT_SHORTFALL_BYTES);
        o.start = option_get(option, LLMEM_FIT_START);
        o.starts = option_get(option, LLMEM_FIT_STARTS);
        const char *resource =
            o.whole_gpu ? "nvidia.com/gpu"
                        : llmem_mig_profile_driver_resource(gpu_, o.profile, get(LLMEM_FIT_DRIVER));
        o.resource = resource != nullptr ? resource : "";
        return o;
    }
    /** Every option of the last run, smallest first, the whole GPU last. */
    std::vector<FitOption> options() const
    {
        std::vector<FitOption> out;
        for (std::size_t i = 0; i < count(); i++)
            out.push_back(option(i));
        return out;
    }
    /** The C handle (NULL once moved from). */
    llmem_fit *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_fit *live() const { return detail::live(p_.get(), "Fit"); }
    llmem_ctx *ctx_;
    std::size_t gpu_; /* of the last run: the options' resources */
    detail::owned<llmem_fit, llmem_fit_free> p_;
};

/**
 * An llmem_pack: many jobs onto a fleet of GPUs with valid MIG layouts, and
 * the outputs schedulers consume (docs/mig.md, "What schedulers consume").
 * The result lasts until the problem changes (a job, a GPU or a new setting
 * added); its getters throw #LLMEM_EINCONSISTENT before a run.
 */
class Pack {
public:
    /** An empty problem with the library's defaults. */
    explicit Pack(Context &ctx) : ctx_(ctx.native())
    {
        llmem_pack *p = nullptr;
        detail::check(llmem_pack_new(ctx_, &p), ctx_);
        p_.reset(p);
    }
    /** Set a setting (#llmem_pack_key). */
    Pack &set(int key, std::int64_t value)
    {
        detail::check(llmem_pack_set_int(live(), key, value), ctx_);
        return *this;
    }
    /** A pack has no real settings: a floating-point value does not compile. */
    template <typename Real, detail::if_real<Real> = 0>
    Pack &set(int key, Real value) = delete;
    /** Set a setting from decimal text. */
    Pack &set(int key, const std::string &text)
    {
        detail::check(llmem_pack_set_str(live(), key, text.c_str()), ctx_);
        return *this;
    }
    /** Read a setting. */
    std::int64_t get(int key) const
    {
        std::int64_t v = 0;
        detail::check(llmem_pack_get_int(live(), key, &v), ctx_);
        return v;
    }
    /** Add @p count GPUs of type @p gpu (a catalog index; 0: as many as needed). */
    Pack &add_gpu(std::size_t gpu, std::uint64_t count = 0)
    {
        detail::check(llmem_pack_add_gpu(live(), gpu, count), ctx_);
        return *this;
    }
    /** Add a job: @p id, its @p bytes at @p level and the compute slices it
     * needs at least (@p min_compute, 0 for any). */
    Pack &add_job(const std::string &id, std::uint64_t bytes, int level = LLMEM_LEVEL_DEVICE,
                  std::int64_t min_compute = 0)
    {
        detail::check(llmem_pack_add_job(live(), id.c_str(), bytes, level, min_compute), ctx_);
        return *this;
    }
    /** Remove every job and GPU type, keeping the settings. */
    Pack &clear() noexcept
    {
        llmem_pack_clear(p_.get());
        return *this;
    }
    /** Pack the jobs onto the fleet. */
    Pack &run()
    {
        detail::check(llmem_pack_run(live()), ctx_);
        return *this;
    }
    /** A value of the result (#llmem_pack_result). */
    std::uint64_t result(int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_pack_get_u64(live(), key, &v), ctx_);
        return v;
    }
    /** Jobs added. */
    std::size_t job_count() const noexcept { return llmem_pack_job_count(p_.get()); }
    /** Job @p job's id; throws past the last. */
    std::string job_id(std::size_t job) const
    {
        const char *id = llmem_pack_job_id(live(), job);
        if (id == nullptr)
            throw error(LLMEM_ERANGE, "pack: job " + std::to_string(job) + " of " +
                                          std::to_string(job_count()));
        return id;
    }
    /** A value of job @p job's result (#llmem_pack_job_key); a key its status
     * has no value of (the GPU of a job not placed) throws #LLMEM_ENOTFOUND. */
    std::uint64_t job_get(std::size_t job, int key) const
    {
        std::uint64_t v = 0;
        const int rc = llmem_pack_job_u64(live(), job, key, &v);
        if (rc == LLMEM_ENOTFOUND) /* the library leaves no message for it */
            throw error(rc, "pack: job '" + job_id(job) + "': key " + std::to_string(key) +
                                " has no value for its status");
        detail::check(rc, ctx_);
        return v;
    }
    /** The Kubernetes resource job @p job requests ("nvidia.com/mig-3g.40gb",
     * "nvidia.com/gpu"); empty for a job not placed or before a run. */
    std::string job_resource(std::size_t job) const
    {
        const char *r = llmem_pack_job_resource(live(), job);
        return r != nullptr ? r : "";
    }
    /** A value of GPU @p gpu of the layout (#llmem_pack_gpu_key). */
    std::uint64_t gpu_get(std::size_t gpu, int key) const
    {
        std::uint64_t v = 0;
        detail::check(llmem_pack_gpu_u64(live(), gpu, key, &v), ctx_);
        return v;
    }
    /** The layout as an NVIDIA mig-parted configuration named "llmem". */
    std::string mig_parted() const { return mig_parted_named(nullptr); }
    /** The layout as an NVIDIA mig-parted configuration named @p name (a
     * Kubernetes label value, else #LLMEM_EINVAL naming it). */
    std::string mig_parted(const std::string &name) const { return mig_parted_named(name.c_str()); }
    /** The layout as `nvidia-smi` commands, with explicit placements. */
    std::string nvidia_smi() const
    {
        const llmem_pack *p = live();
        return detail::buffer_text(
            [p](char *buf, std::size_t cap, std::size_t *len) {
                return llmem_pack_nvidia_smi(p, buf, cap, len);
            },
            ctx_);
    }
    /** The C handle (NULL once moved from). */
    llmem_pack *native() const noexcept { return p_.get(); }

private:
    /** The handle; throws #LLMEM_EINVAL once moved from (detail::live()). */
    llmem_pack *live() const { return detail::live(p_.get(), "Pack"); }
    std::string mig_parted_named(const char *name) const
    {
        const llmem_pack *p = live();
        return detail::buffer_text(
            [p, name](char *buf, std::size_t cap, std::size_t *len) {
                return llmem_pack_mig_parted(p, name, buf, cap, len);
            },
            ctx_);
    }
    llmem_ctx *ctx_;
    detail::owned<llmem_pack, llmem_pack_free> p_;
};

} // namespace llmem

#endif /* LLMEM_HPP */
