/* SPDX-License-Identifier: MIT */
/**
 * @file llmem.h
 * @brief libllmem: GPU memory of fine-tuning a large language model.
 *
 * One hand-written public header. It needs only <stddef.h> and <stdint.h>, so
 * the library can be vendored by copying. Every byte count is a `uint64_t`
 * number of bytes. Every fallible call returns an `int` status: 0
 * (#LLMEM_OK) on success or a negative `LLMEM_E*` code; the object's context
 * then holds a message naming the offending field and value
 * (llmem_ctx_error()). A failed call leaves its object usable and unchanged;
 * a failed constructor sets its `*out` to NULL (when `out` is not NULL).
 *
 * Objects created from one context share nothing with another context's
 * objects; the library has no global or static mutable state. A context and
 * its objects may be used by one thread at a time.
 */
#ifndef LLMEM_H
#define LLMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @def LLMEM_API
 * Marks the library's exported functions: default visibility with GCC and
 * Clang (the library is built with hidden visibility), dllexport/dllimport on
 * Windows. Define LLMEM_STATIC when linking a static copy on Windows.
 */
#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(LLMEM_BUILDING)
#    define LLMEM_API __declspec(dllexport)
#  elif defined(LLMEM_STATIC)
#    define LLMEM_API
#  else
#    define LLMEM_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define LLMEM_API __attribute__((visibility("default")))
#else
#  define LLMEM_API
#endif

/**
 * @defgroup version Version
 * Compile-time and run-time versions, so a binding can compare the library it
 * loaded with the header it was written for.
 * @{
 */
#define LLMEM_VERSION_MAJOR 0 /**< @since 0.1.0 */
#define LLMEM_VERSION_MINOR 2 /**< @since 0.1.0 */
#define LLMEM_VERSION_PATCH 0 /**< @since 0.1.0 */
/** MAJOR * 10000 + MINOR * 100 + PATCH. @since 0.1.0 */
#define LLMEM_VERSION_NUMBER \
    (LLMEM_VERSION_MAJOR * 10000 + LLMEM_VERSION_MINOR * 100 + LLMEM_VERSION_PATCH)
/** True when this header is at least version maj.min.pat. @since 0.1.0 */
#define LLMEM_VERSION_CHECK(maj, min, pat) \
    (LLMEM_VERSION_NUMBER >= ((maj) * 10000 + (min) * 100 + (pat)))

/** Version of the loaded library, as #LLMEM_VERSION_NUMBER. @since 0.1.0 */
LLMEM_API unsigned llmem_version_number(void);
/** Version of the loaded library as "MAJOR.MINOR.PATCH". @since 0.1.0 */
LLMEM_API const char *llmem_version_string(void);
/** @} */

/**
 * @defgroup status Status codes
 * Values are part of the ABI and are never renumbered.
 * @{
 */
#define LLMEM_OK 0             /**< Success. @since 0.1.0 */
#define LLMEM_EINVAL (-1)      /**< Invalid argument (NULL pointer, bad key). @since 0.1.0 */
#define LLMEM_ENOMEM (-2)      /**< Allocation failed. @since 0.1.0 */
#define LLMEM_ERANGE (-3)      /**< Value outside the field's bounds. @since 0.1.0 */
#define LLMEM_ENOTFOUND (-4)   /**< Unknown name (preset, option value). @since 0.1.0 */
#define LLMEM_EOVERFLOW (-5)   /**< A count does not fit in 64 bits. @since 0.1.0 */
#define LLMEM_EINCONSISTENT (-6) /**< Fields contradict each other. @since 0.1.0 */
#define LLMEM_EIO (-7)         /**< A file could not be read. @since 0.1.0 */
#define LLMEM_EPARSE (-8)      /**< A file is malformed. @since 0.1.0 */
#define LLMEM_ENOTSUP (-9)     /**< Not supported by this build or model. @since 0.1.0 */
#define LLMEM_EBUFFER (-10)    /**< Caller's buffer too small. @since 0.1.0 */

/** Static English description of a status code; never NULL. @since 0.1.0 */
LLMEM_API const char *llmem_status_str(int status);
/** @} */

/**
 * @defgroup ctx Context
 * Carries the allocator and the last error message. Every other object is
 * created from a context and must be freed before it.
 * @{
 */
/** Opaque context. @since 0.1.0 */
typedef struct llmem_ctx llmem_ctx;

/**
 * Caller-supplied allocator, passed by pointer at context creation.
 * `size` must be `sizeof(llmem_allocator)` (use #LLMEM_ALLOCATOR_INIT), so
 * later versions can add members. @since 0.1.0
 */
typedef struct llmem_allocator {
    size_t size;                               /**< sizeof(llmem_allocator) */
    void *(*alloc)(void *user, size_t bytes);  /**< like malloc */
    void (*free)(void *user, void *ptr);       /**< like free; gets NULL never */
    void *user;                                /**< passed back to both */
} llmem_allocator;
/** Initializer for #llmem_allocator. @since 0.1.0 */
#define LLMEM_ALLOCATOR_INIT { sizeof(llmem_allocator), NULL, NULL, NULL }

/**
 * Create a context. @p allocator may be NULL for malloc/free; it is copied.
 * @return #LLMEM_OK, #LLMEM_EINVAL or #LLMEM_ENOMEM. @since 0.1.0
 */
LLMEM_API int llmem_ctx_new(llmem_ctx **out, const llmem_allocator *allocator);
/** Free a context; NULL is allowed. @since 0.1.0 */
LLMEM_API void llmem_ctx_free(llmem_ctx *ctx);
/**
 * Message of the last failed call made through this context's objects
 * ("" when none). Valid until the next call on the context. @since 0.1.0
 */
LLMEM_API const char *llmem_ctx_error(const llmem_ctx *ctx);

/** Kinds of objects with keyed fields, as llmem_ctx_error_field() names them. @since 0.2.0 */
enum llmem_object {
    LLMEM_OBJECT_MODEL = 1,    /**< a #llmem_model field (#llmem_model_key) */
    LLMEM_OBJECT_TRAIN = 2,    /**< a #llmem_train field (#llmem_train_key) */
    LLMEM_OBJECT_PARALLEL = 3, /**< a #llmem_parallel field (#llmem_parallel_key) */
    LLMEM_OBJECT_PLAN = 4,     /**< a #llmem_plan field (#llmem_plan_key) */
    LLMEM_OBJECT_FIT = 5,      /**< a #llmem_fit setting (#llmem_fit_key). @since 0.2.0 */
    LLMEM_OBJECT_PACK = 6      /**< a #llmem_pack setting (#llmem_pack_key). @since 0.2.0 */
};

/**
 * Which field the last failed call was about: its object kind
 * (#llmem_object) and key, so a caller can name its own spelling of the
 * field (a command-line flag, a keyword argument). Either pointer may be
 * NULL. @return #LLMEM_OK when the last error named a field (both set),
 * #LLMEM_ENOTFOUND when it did not or no call failed (both set to 0),
 * #LLMEM_EINVAL for a NULL context. @since 0.2.0
 */
LLMEM_API int llmem_ctx_error_field(const llmem_ctx *ctx, int *object, int *key);
/** @} */

/**
 * @defgroup model Model description
 * A decoder-only transformer, from a built-in preset or explicit fields.
 * Integer fields are set with llmem_model_set_int(); enumerated fields also
 * accept their names through llmem_model_set_str(). Fields are checked one by
 * one when set and together by llmem_model_validate().
 * @{
 */
/** Opaque model description. @since 0.1.0 */
typedef struct llmem_model llmem_model;

/** Keys of model fields. Values are never reused. @since 0.1.0 */
enum llmem_model_key {
    LLMEM_MODEL_FAMILY = 1,          /**< #llmem_family; names "gpt2", "llama", ... */
    LLMEM_MODEL_HIDDEN = 2,          /**< hidden size */
    LLMEM_MODEL_LAYERS = 3,          /**< decoder layers */
    LLMEM_MODEL_HEADS = 4,           /**< attention (query) heads */
    LLMEM_MODEL_KV_HEADS = 5,        /**< key/value heads (grouped-query); 0 = heads */
    LLMEM_MODEL_HEAD_DIM = 6,        /**< per-head size; 0 = hidden / heads */
    LLMEM_MODEL_INTERMEDIATE = 7,    /**< MLP inner size */
    LLMEM_MODEL_VOCAB = 8,           /**< vocabulary size */
    LLMEM_MODEL_MAX_POSITIONS = 9,   /**< context length of the positions */
    LLMEM_MODEL_NORM = 10,           /**< #llmem_norm; "layernorm", "rmsnorm" */
    LLMEM_MODEL_MLP = 11,            /**< #llmem_mlp; "gated", "plain" */
    LLMEM_MODEL_POSITIONS = 12,      /**< #llmem_positions; "learned", "rotary", "alibi" */
    LLMEM_MODEL_QKV_BIAS = 13,       /**< 0/1: biases on q, k, v projections */
    LLMEM_MODEL_OUT_BIAS = 14,       /**< 0/1: bias on the attention output projection */
    LLMEM_MODEL_MLP_BIAS = 15,       /**< 0/1: biases on the MLP projections */
    LLMEM_MODEL_NORM_BIAS = 16,      /**< 0/1: norms have a bias (LayerNorm) */
    LLMEM_MODEL_TIE_EMBEDDINGS = 17, /**< 0/1: output head shares the input embedding */
    LLMEM_MODEL_NORMS_PER_LAYER = 18,/**< norms in each decoder layer (2; 4 for Gemma-2) */
    LLMEM_MODEL_FINAL_NORM = 19,     /**< 0/1: a norm after the last layer */
    LLMEM_MODEL_EMBED_NORM = 20,     /**< 0/1: a norm after the embedding (BLOOM) */
    LLMEM_MODEL_EMBED_DIM = 21,      /**< embedding width when projected to hidden (OPT-350m); 0 = hidden */
    LLMEM_MODEL_POSITION_OFFSET = 22,/**< extra learned position rows (OPT: 2) */
    LLMEM_MODEL_EXPERTS = 23,        /**< routed experts per MoE layer; 0 = dense */
    LLMEM_MODEL_EXPERTS_PER_TOKEN = 24, /**< top-k experts a token is routed to */
    LLMEM_MODEL_EXPERT_INTERMEDIATE = 25, /**< inner size of one routed expert */
    LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE = 26, /**< inner size of the shared expert(s); 0 = none */
    LLMEM_MODEL_HEAD_BIAS = 27,      /**< 0/1: bias on the output head */
    /** 0/1: a norm over head_dim on queries and keys (Qwen3 q_norm/k_norm, Phi qk_layernorm),
     * of the model's norm kind. @since 0.1.0 */
    LLMEM_MODEL_QK_NORM = 28,
    /** Dimensions of each query/key head that get rotary positions (partial rotary:
     * GPT-NeoX rotary_pct, Phi partial_rotary_factor; MLA qk_rope_head_dim); 0 = head_dim.
     * @since 0.1.0 */
    LLMEM_MODEL_ROTARY_DIM = 29,
    /** Per-head size of the values when it differs from head-dim (MLA v_head_dim); 0 = head_dim.
     * @since 0.1.0 */
    LLMEM_MODEL_V_HEAD_DIM = 30,
    /** Multi-head latent attention: rank of the query compression (q_lora_rank); 0 = a full
     * query projection. Needs #LLMEM_MODEL_KV_LORA_RANK. @since 0.1.0 */
    LLMEM_MODEL_Q_LORA_RANK = 31,
    /** Multi-head latent attention (DeepSeek-V2/V3): rank of the key/value compression
     * (kv_lora_rank); 0 = ordinary key and value projections. With it, head-dim is
     * qk_nope_head_dim + qk_rope_head_dim and rotary-dim is qk_rope_head_dim. @since 0.1.0 */
    LLMEM_MODEL_KV_LORA_RANK = 32,
    /** In a mixture-of-experts model, decoder layers whose MLP is dense (of size
     * intermediate) instead of experts (DeepSeek first_k_dense_replace, Qwen2-MoE
     * mlp_only_layers); 0 = every layer has experts. @since 0.1.0 */
    LLMEM_MODEL_DENSE_LAYERS = 33,
    /** 0/1: a sigmoid gate Linear(hidden, 1) on the shared expert (Qwen2-MoE
     * shared_expert_gate). @since 0.1.0 */
    LLMEM_MODEL_SHARED_EXPERT_GATE = 34,
    /** 0/1: the router has one bias per expert: DeepSeek-V3's e_score_correction_bias
     * (a buffer, never trained); on the other families a bias of the router's linear
     * layer, trained with its weight. @since 0.1.0 */
    LLMEM_MODEL_ROUTER_BIAS = 35,
    /** 0/1: attention and MLP read the same input and their outputs are added (GPT-NeoX
     * use_parallel_residual, Falcon parallel_attn, Phi); the norms of such a block are
     * norms-per-layer. @since 0.1.0 */
    LLMEM_MODEL_PARALLEL_BLOCK = 36,
    /** Bytes per element of the checkpoint's torch_dtype (4 float32, 2 bfloat16/float16,
     * 1 float8); 0 = unknown. Informative: the estimate follows the training precision.
     * @since 0.1.0 */
    LLMEM_MODEL_DTYPE_BYTES = 37,
    /** #llmem_activation of the MLP ("silu", "gelu", "gelu-tanh", "gelu-new",
     * "gelu-fast", "relu"), as the config's hidden_act (activation_function,
     * activation) names it; setting the family sets its default. What autograd
     * keeps depends on it: relu saves its output, the native kernels their input,
     * gelu-new and gelu-fast are Python expressions of several ops. @since 0.2.0 */
    LLMEM_MODEL_ACTIVATION = 38,
    /** 0/1: the layer norms come after the residual additions instead of before
     * attention and MLP (OPT do_layer_norm_before false, OPT-350m). @since 0.2.0 */
    LLMEM_MODEL_POST_NORM = 39,
    /** Dropout probability in [0, 1) (a real field) on the attention probabilities:
     * the config's attn_pdrop (GPT-2) or attention_dropout. Setting the family sets
     * its configuration class's default. An estimate uses it unless the training
     * setup's #LLMEM_TRAIN_DROPOUT is set. @since 0.2.0 */
    LLMEM_MODEL_ATTENTION_DROPOUT = 40,
    /** Dropout probability in [0, 1) (real) on the attention's and the MLP's outputs
     * before the residual additions: resid_pdrop (GPT-2, Phi, Phi-3), hidden_dropout
     * (BLOOM, GPT-NeoX, Falcon), dropout (OPT), residual_dropout (StarCoder2).
     * @since 0.2.0 */
    LLMEM_MODEL_HIDDEN_DROPOUT = 41,
    /** Dropout probability in [0, 1) (real) on the embedding's output: embd_pdrop
     * (GPT-2, Phi), hidden_dropout (GPT-NeoX's emb_dropout), embedding_dropout
     * (StarCoder2). A family whose code has no such dropout site takes only 0 at it
     * (llmem_model_validate() says which). @since 0.2.0 */
    LLMEM_MODEL_EMBEDDING_DROPOUT = 42,
    /** Sliding-window attention span in tokens: the config's sliding_window (0 or
     * null: none; Qwen2's use_sliding_window false: none). Under SDPA, transformers
     * 5.x hands every layer a full [batch, 1, seq, seq] boolean mask once seq >=
     * the window, which the kernel turns into a saved additive bias per layer
     * (Mistral-7B-v0.1: 4096, Phi-3-mini-4k: 2047). Only families whose code has
     * such a window take a non-zero value (Llama's path for Mistral/Qwen2,
     * Phi-3, StarCoder2, Gemma-2, whose layers alternate). @since 0.2.0 */
    LLMEM_MODEL_SLIDING_WINDOW = 43,
    /** 1: the checkpoint's linear weights are stored in bitsandbytes 4-bit (a
     * pre-quantized QLoRA checkpoint: config.json's quantization_config with
     * load_in_4bit and double quantization). Such weights do not train and
     * PEFT's LoRA on them is QLoRA: every method but qlora (#llmem_method) is
     * refused (#LLMEM_ENOTSUP), and QLoRA's estimate is the unquantized
     * checkpoint's. 0 (the default): as the dtype says. @since 0.2.0 */
    LLMEM_MODEL_BNB_4BIT = 44
};

/** Code-path families: which operations a layer runs. @since 0.1.0 */
enum llmem_family {
    LLMEM_FAMILY_GPT2 = 1,   /**< GPT-2: fused Conv1D qkv, gelu_new MLP */
    LLMEM_FAMILY_LLAMA = 2,  /**< Llama/Mistral/Qwen2/Qwen3/Mixtral/Qwen2-MoE: RMSNorm, RoPE, GQA, SwiGLU */
    LLMEM_FAMILY_OPT = 3,    /**< OPT: learned positions (+2), ReLU MLP */
    LLMEM_FAMILY_BLOOM = 4,  /**< BLOOM: ALiBi, fused qkv, embedding LayerNorm */
    LLMEM_FAMILY_GEMMA2 = 5, /**< Gemma-2: four norms a layer, GeGLU, soft-capping */
    LLMEM_FAMILY_PHI3 = 6,   /**< Phi-3: fused qkv and gate_up projections */
    LLMEM_FAMILY_GEMMA = 7,  /**< Gemma: Llama layout, GeGLU, scaled embedding, tied. @since 0.1.0 */
    /** GPT-NeoX/Pythia: fused qkv, LayerNorm, parallel residual, partial rotary,
     * untied embed_out. @since 0.1.0 */
    LLMEM_FAMILY_GPT_NEOX = 8,
    /** Falcon: fused multi-query/grouped qkv, parallel attention, one or two LayerNorms,
     * tied. @since 0.1.0 */
    LLMEM_FAMILY_FALCON = 9,
    /** Phi-1/1.5/2: parallel block with one LayerNorm, partial rotary, biases, lm_head
     * bias. @since 0.1.0 */
    LLMEM_FAMILY_PHI = 10,
    /** StarCoder2: Llama layout with LayerNorm, a plain GELU MLP and biases. @since 0.1.0 */
    LLMEM_FAMILY_STARCODER2 = 11,
    /** DeepSeek-V2/V3: multi-head latent attention, shared and routed experts, dense
     * first layers. @since 0.1.0 */
    LLMEM_FAMILY_DEEPSEEK = 12,
    /** Megatron-LM's GPT: pre-LayerNorm, fused qkv, a 4h GeLU MLP, biases, learned
     * positions, tied output, dropout everywhere; the layer Korthikanti et al. (2022)
     * count activations for. @since 0.2.0 */
    LLMEM_FAMILY_MEGATRON_GPT = 13
};
/** Norm kinds. @since 0.1.0 */
enum llmem_norm { LLMEM_NORM_LAYERNORM = 1, LLMEM_NORM_RMSNORM = 2 };
/** MLP kinds. @since 0.1.0 */
enum llmem_mlp { LLMEM_MLP_PLAIN = 1, LLMEM_MLP_GATED = 2 };
/** MLP activations (#LLMEM_MODEL_ACTIVATION). @since 0.2.0 */
enum llmem_activation {
    LLMEM_ACTIVATION_SILU = 1,      /**< SiLU (Llama's gated MLP) */
    LLMEM_ACTIVATION_GELU = 2,      /**< exact GELU, one kernel (GPT-NeoX, Falcon) */
    LLMEM_ACTIVATION_GELU_TANH = 3, /**< tanh-approximated GELU, one kernel (StarCoder2, Gemma) */
    LLMEM_ACTIVATION_GELU_NEW = 4,  /**< NewGELUActivation, Python ops (GPT-2, Phi) */
    LLMEM_ACTIVATION_GELU_FAST = 5, /**< FastGELUActivation, Python ops (GPT-NeoX-20B) */
    LLMEM_ACTIVATION_RELU = 6       /**< ReLU (OPT) */
};
/** Position encodings. @since 0.1.0 */
enum llmem_positions {
    LLMEM_POSITIONS_LEARNED = 1, LLMEM_POSITIONS_ROTARY = 2, LLMEM_POSITIONS_ALIBI = 3
};

/**
 * Create a model with the defaults of @p family (an #llmem_family), sizes
 * unset: hidden, layers, heads, intermediate and vocab must be set before use.
 * @since 0.1.0
 */
LLMEM_API int llmem_model_new(llmem_ctx *ctx, int family, llmem_model **out);
/**
 * Create a model from a built-in preset (see llmem_preset_name()).
 * @return #LLMEM_ENOTFOUND for an unknown name. @since 0.1.0
 */
LLMEM_API int llmem_model_new_preset(llmem_ctx *ctx, const char *name, llmem_model **out);
/** Free a model; NULL is allowed. @since 0.1.0 */
LLMEM_API void llmem_model_free(llmem_model *model);
/**
 * Set an integer field. Setting #LLMEM_MODEL_FAMILY resets the layout fields
 * (norm, MLP, positions, biases, tying, norm counts) and the dropout
 * probabilities to that family's defaults and keeps the sizes: set the family
 * first.
 * @return #LLMEM_ERANGE for a value out of bounds. @since 0.1.0
 */
LLMEM_API int llmem_model_set_int(llmem_model *model, int key, int64_t value);
/** Set an enumerated field by name ("llama", "rmsnorm", ...). @since 0.1.0 */
LLMEM_API int llmem_model_set_str(llmem_model *model, int key, const char *value);
/** Read a field (defaults resolved: kv-heads 0 reads as heads). A real field
 * (llmem_model_field_is_real()) is refused: read it with llmem_model_get_double().
 * @since 0.1.0 */
LLMEM_API int llmem_model_get_int(const llmem_model *model, int key, int64_t *out);
/**
 * Set a real field (the dropout probabilities, #LLMEM_MODEL_ATTENTION_DROPOUT and
 * after); NaN, infinities and values outside [0, 1) are refused (#LLMEM_ERANGE).
 * llmem_model_set_int() sets a real field to an integer's value too. @since 0.2.0
 */
LLMEM_API int llmem_model_set_double(llmem_model *model, int key, double value);
/** Read a real field; an integer field is refused (#LLMEM_EINVAL). @since 0.2.0 */
LLMEM_API int llmem_model_get_double(const llmem_model *model, int key, double *out);
/**
 * Whether model field @p key is real (1: set and read as a double), or an
 * integer or enumerated field (0). @return #LLMEM_EINVAL for an unknown key.
 * @since 0.2.0
 */
LLMEM_API int llmem_model_field_is_real(int key);
/**
 * Describe a model field: its name as the CLI and messages spell it
 * ("kv-heads"), and its bounds. Any pointer may be NULL.
 * @return #LLMEM_EINVAL for an unknown key. @since 0.1.0
 */
LLMEM_API int llmem_model_field_info(int key, const char **name, int64_t *min, int64_t *max);
/**
 * Name of @p value of an enumerated model field ("llama", "rmsnorm"), or NULL
 * when the field is not enumerated or the value has no name. @since 0.1.0
 */
LLMEM_API const char *llmem_model_value_name(int key, int64_t value);
/**
 * The @p index-th name an enumerated or bitmask model field accepts (in
 * value order, aliases included), with its value in @p value (may be NULL);
 * NULL past the last name or for a field without names. @since 0.2.0
 */
LLMEM_API const char *llmem_model_choice(int key, size_t index, int64_t *value);
/**
 * Check the fields together: sizes set and positive, heads dividing hidden
 * (when head_dim is 0), kv-heads dividing heads, top-k not above experts, and
 * the parameter count fitting in 64 bits. @since 0.1.0
 */
LLMEM_API int llmem_model_validate(llmem_model *model);
/**
 * Exact parameter count (embeddings, attention, MLP or experts, norms,
 * biases, untied head); tied weights are counted once. @since 0.1.0
 */
LLMEM_API int llmem_model_param_count(llmem_model *model, uint64_t *out);

/** Number of built-in presets. @since 0.1.0 */
LLMEM_API size_t llmem_preset_count(void);
/** Name of preset @p index (Hugging Face id style), or NULL past the end. @since 0.1.0 */
LLMEM_API const char *llmem_preset_name(size_t index);
/** @} */

/**
 * @defgroup hf Hugging Face inputs
 * Models from a Hugging Face `config.json`, and parameter counts from
 * safetensors headers (never the tensor data). Optional at build time: a
 * library built without its JSON reader (json-c) returns #LLMEM_ENOTSUP from
 * these. docs/hf-inputs.md lists the model types and the fields read.
 * @{
 */
/**
 * Create a model from a Hugging Face configuration: @p path is a
 * `config.json` or a directory holding one. Supported `model_type`s: llama,
 * mistral, mixtral, qwen2, qwen2_moe, qwen3, gemma, gemma2, phi, phi3, gpt2,
 * opt, bloom, gpt_neox, falcon, starcoder2, deepseek_v2, deepseek_v3; the
 * parameter count of the model equals the checkpoint's.
 * @return #LLMEM_EIO when the file cannot be read, is not a regular file (a
 * FIFO, device or socket is never opened for reading), or the directory has
 * no config.json; #LLMEM_EPARSE for text that is not strict JSON (RFC 8259),
 * a missing field ("config.json: missing field 'hidden_size' for model_type
 * 'llama'"), a field of the wrong JSON type or out of bounds, or fields that
 * contradict each other; #LLMEM_ENOTSUP for an unknown `model_type` (the
 * message names it). *out is NULL on failure. @since 0.1.0
 */
LLMEM_API int llmem_model_new_hf_config(llmem_ctx *ctx, const char *path, llmem_model **out);
/**
 * As llmem_model_new_hf_config(), from @p len bytes of JSON text (no NUL
 * needed; bytes after @p len are not read). @since 0.1.0
 */
LLMEM_API int llmem_model_new_hf_config_json(llmem_ctx *ctx, const char *json, size_t len,
                                             llmem_model **out);

/** Opaque summary of safetensors weights. @since 0.1.0 */
typedef struct llmem_weights llmem_weights;

/** Keys for llmem_weights_get_u64(). @since 0.1.0 */
enum llmem_weights_key {
    /** Parameters: elements over all tensors, except that a bitsandbytes
     * 4-bit weight counts two a stored byte and its quantization state
     * counts none (#LLMEM_WEIGHTS_QUANT_STATE_BYTES). */
    LLMEM_WEIGHTS_PARAMS = 1,
    LLMEM_WEIGHTS_BYTES = 2,   /**< bytes of tensor data, quantization state included */
    LLMEM_WEIGHTS_TENSORS = 3, /**< number of tensors, quantization state included */
    LLMEM_WEIGHTS_FILES = 4,   /**< safetensors files read */
    /** Bytes of bitsandbytes 4-bit quantization state: the tensors saved next
     * to a packed weight X.weight (X.weight.absmax, .quant_map,
     * .nested_absmax, .nested_quant_map and .quant_state.bitsandbytes__nf4
     * or __fp4), part of #LLMEM_WEIGHTS_BYTES; 0 for other checkpoints.
     * @since 0.2.0 */
    LLMEM_WEIGHTS_QUANT_STATE_BYTES = 5,
    /** Number of those tensors, part of #LLMEM_WEIGHTS_TENSORS. @since 0.2.0 */
    LLMEM_WEIGHTS_QUANT_STATE_TENSORS = 6
};

/**
 * Read the headers of safetensors weights: a `.safetensors` file, a
 * `model.safetensors.index.json` (any path ending in `.json`) with its
 * shards, each header read once, or a directory holding
 * model.safetensors.index.json or else model.safetensors. Only headers are
 * read, never tensor data. Every tensor in the files counts (bitsandbytes
 * 4-bit state as bytes only: #LLMEM_WEIGHTS_PARAMS), so buffers a
 * checkpoint stores (GPT-2's attention masks, FP8 scales, DeepSeek-V3's
 * multi-token-prediction layer, a tied head saved twice) make the totals
 * exceed llmem_model_param_count().
 * @return #LLMEM_EIO for a missing or unreadable file, or one that is not a
 * regular file (a FIFO, device or socket is never opened for reading);
 * #LLMEM_EPARSE, with a message naming the file and tensor, for a header
 * length beyond the file or above the format's 100,000,000 bytes, a header
 * that is not one strict JSON (RFC 8259) object, an unknown dtype, a shape
 * whose size disagrees with its data_offsets, overlapping, out-of-range or
 * gapped offsets (the data region must be covered exactly), a shape product
 * overflowing 64 bits, or an index whose weight_map disagrees with its
 * shards. @since 0.1.0
 */
LLMEM_API int llmem_weights_open(llmem_ctx *ctx, const char *path, llmem_weights **out);
/** As llmem_weights_open(), from one safetensors file's bytes in memory
 * (header and data; the data is not read). @since 0.1.0 */
LLMEM_API int llmem_weights_open_buffer(llmem_ctx *ctx, const void *data, size_t len,
                                        llmem_weights **out);
/** Free weights; NULL is allowed. @since 0.1.0 */
LLMEM_API void llmem_weights_free(llmem_weights *weights);
/** Read a total (#llmem_weights_key). @since 0.1.0 */
LLMEM_API int llmem_weights_get_u64(const llmem_weights *weights, int key, uint64_t *out);
/** Number of distinct dtypes present. @since 0.1.0 */
LLMEM_API size_t llmem_weights_dtype_count(const llmem_weights *weights);
/**
 * Dtype @p index (in order of first appearance): its safetensors name
 * ("BF16", "F32", "F8_E4M3", ...), elements and bytes; any output may be
 * NULL. A bitsandbytes 4-bit checkpoint's packed weights (a U8 tensor
 * X.weight saved with X.weight.quant_state.bitsandbytes__nf4 or __fp4 in
 * any of its files) are listed under "bnb-nf4" or "bnb-fp4" (since 0.2.0):
 * two parameters a stored byte (exact for an even in x out; an odd one is
 * counted one more), their stored bytes; their quantization state is in no
 * dtype (#LLMEM_WEIGHTS_QUANT_STATE_BYTES), so the dtypes' parameters add
 * up to #LLMEM_WEIGHTS_PARAMS and their bytes with the state's to
 * #LLMEM_WEIGHTS_BYTES. @return #LLMEM_ERANGE past the last dtype.
 * @since 0.1.0
 */
LLMEM_API int llmem_weights_dtype(const llmem_weights *weights, size_t index, const char **name,
                                  uint64_t *params, uint64_t *bytes);
/** @} */

/**
 * @defgroup train Training setup
 * How the model is trained: precision, optimizer, method, batch, sequence,
 * checkpointing and kernels. Defaults are what a user of Hugging Face
 * transformers 5.x with PyTorch 2.11 on a Hopper GPU gets when setting
 * nothing (docs/memory-model.md, "Defaults"): batch 1, sequence 512,
 * bf16-mixed, AdamW with the fused implementation (the Trainer's
 * `adamw_torch_fused`, its default with torch >= 2.8), full fine-tuning, no
 * checkpointing (non-reentrant when asked for: transformers' default since
 * 5.x), SDPA attention (the Trainer's `attn_implementation` default), the
 * model's own dropout probabilities (the Trainer trains in train mode),
 * LoRA dropout 0 (PEFT's default), fp32-upcast loss, phased formula, no
 * GPU chosen (a Hopper GPU's CUDA context and cuBLAS workspace).
 * Before 0.2.0 the defaults were eager attention, the foreach AdamW step and
 * dropout 0.
 * @{
 */
/** Opaque training setup. @since 0.1.0 */
typedef struct llmem_train llmem_train;

/** Keys of training fields. Values are never reused. @since 0.1.0 */
enum llmem_train_key {
    LLMEM_TRAIN_BATCH = 1,          /**< micro-batch size (int) */
    LLMEM_TRAIN_SEQ = 2,            /**< sequence length in tokens (int) */
    LLMEM_TRAIN_PRECISION = 3,      /**< #llmem_precision */
    LLMEM_TRAIN_OPTIMIZER = 4,      /**< #llmem_optimizer */
    LLMEM_TRAIN_GRAD_CKPT = 5,      /**< #llmem_grad_ckpt */
    LLMEM_TRAIN_ATTENTION = 6,      /**< #llmem_attention */
    /** Dropout probability in [0, 1) (double) at every dropout site of the model, or -1
     * (the default; "model" as text): each site at the model's own probability
     * (#LLMEM_MODEL_ATTENTION_DROPOUT, #LLMEM_MODEL_HIDDEN_DROPOUT,
     * #LLMEM_MODEL_EMBEDDING_DROPOUT), as the Trainer runs the model. Until 0.2.0 the
     * default was 0. */
    LLMEM_TRAIN_DROPOUT = 7,
    LLMEM_TRAIN_METHOD = 8,         /**< #llmem_method */
    LLMEM_TRAIN_LORA_RANK = 9,      /**< LoRA rank r (int) */
    /** bitmask of #llmem_lora_target roles; or, as text, Hugging Face module names
     * ("q_proj,v_proj") resolved in the model's family when an estimate runs: names
     * the family lacks select nothing, and none matching fails, as with PEFT.
     * "all-linear" (since 0.2.0) is PEFT's keyword: every linear module of the
     * decoder layers, not the output head (docs/memory-model.md says which in each
     * family); llmem_train_lora_modules() names what the targets select */
    LLMEM_TRAIN_LORA_TARGETS = 10,
    LLMEM_TRAIN_FROZEN_LAYERS = 11, /**< first N decoder layers frozen (method freeze) */
    LLMEM_TRAIN_LOSS = 12,          /**< #llmem_loss */
    LLMEM_TRAIN_GRAD_ACCUM = 13,    /**< gradient accumulation steps (int) */
    LLMEM_TRAIN_FORMULA = 14,       /**< #llmem_formula */
    LLMEM_TRAIN_ARTICLE_TMP_FACTOR = 15, /**< article mode: m_tmp = factor x m_p (double) */
    LLMEM_TRAIN_ARTICLE_PARAM_BYTES = 16, /**< article mode: bytes per parameter (int) */
    /** #llmem_optimizer_impl: how a torch.optim optimizer runs its step (fused, foreach,
     * forloop); the others run their own kernels and ignore it. Setting the optimizer by
     * a Trainer `optim` name that implies one ("adamw_torch": foreach,
     * "adamw_torch_fused": fused) sets this field too. @since 0.2.0 */
    LLMEM_TRAIN_OPTIMIZER_IMPL = 17,
    /** PEFT's `lora_dropout` in [0, 1) (double): with p > 0 each adapted module runs
     * its own nn.Dropout on its input before lora_A. Default 0 (PEFT's). @since 0.2.0 */
    LLMEM_TRAIN_LORA_DROPOUT = 18,
    /** The GPU the step runs on, from the @ref gpu "GPU catalog": set it by name
     * with llmem_train_set_str() (any name llmem_gpu_find() accepts: "H100",
     * "A100-80GB", "NVIDIA H100 80GB HBM3"; the message of an unknown or
     * ambiguous name says why); read, its value is the catalog index + 1 and
     * llmem_train_value_name() gives the canonical name. Like the catalog's
     * indices, values are stable within one library version only: keep the
     * name. 0, the default and the field's lower bound, is no GPU chosen:
     * the estimate then assumes a Hopper GPU (sm_90). The reserved
     * level counts two of the GPU's cuBLAS workspaces (#LLMEM_GPU_WORKSPACE_BYTES:
     * the forward's thread's and autograd's backward thread's) and
     * the device level its CUDA context (#LLMEM_GPU_CONTEXT_BYTES); the
     * planner takes its usable memory as #LLMEM_PLAN_GPU_BYTES when that is 0.
     * Whether the step fits is the caller's comparison: #LLMEM_EST_PEAK_DEVICE
     * against #LLMEM_GPU_USABLE_BYTES. @since 0.2.0 */
    LLMEM_TRAIN_GPU = 19,
    /** #llmem_experts_impl: how a mixture-of-experts layer runs its routed experts
     * (transformers' `experts_implementation`); read by models with routed
     * experts only. @since 0.2.0 */
    LLMEM_TRAIN_EXPERTS_IMPL = 20
};

/** Precision recipes. @since 0.1.0 */
enum llmem_precision {
    LLMEM_PRECISION_FP32 = 1,       /**< "fp32": everything fp32 */
    LLMEM_PRECISION_BF16_MIXED = 2, /**< "bf16-mixed": fp32 weights/master, bf16 autocast */
    LLMEM_PRECISION_FP16_MIXED = 3, /**< "fp16-mixed": fp32 weights/master, fp16 autocast */
    LLMEM_PRECISION_BF16 = 4,       /**< "bf16": weights, grads and states in bf16 */
    /** "bf16-autocast": bf16 weights, gradients and states under bf16
     * autocast: what `from_pretrained` (dtype "auto", transformers 5.x) of a
     * bf16 checkpoint gives with `TrainingArguments(bf16=True)`. @since 0.2.0 */
    LLMEM_PRECISION_BF16_AUTOCAST = 5
};
/**
 * Optimizers. Each is also accepted by its Hugging Face Trainer `optim` name
 * (llmem_train_choice() lists them): "adamw_torch" and "adamw_torch_fused"
 * (AdamW with the foreach or fused step), "adamw_bnb_8bit" and
 * "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "lion_8bit",
 * "lion_32bit", "paged_lion_8bit", "paged_lion_32bit"; "adafactor" and "sgd"
 * are spelled alike. @since 0.1.0
 */
enum llmem_optimizer {
    LLMEM_OPTIMIZER_ADAMW = 1, LLMEM_OPTIMIZER_ADAM = 2, LLMEM_OPTIMIZER_SGD = 3,
    LLMEM_OPTIMIZER_SGD_MOMENTUM = 4, LLMEM_OPTIMIZER_ADAFACTOR = 5,
    LLMEM_OPTIMIZER_ADAMW_8BIT = 6, LLMEM_OPTIMIZER_LION = 7,
    /** "paged-adamw-8bit": bitsandbytes' PagedAdamW8bit. Its states live in CUDA
     * unified memory, outside PyTorch's allocator: they count at the device level,
     * not in allocated or reserved. @since 0.1.0 */
    LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT = 8,
    /** "paged-adamw": bitsandbytes' PagedAdamW (32-bit states), paged likewise. @since 0.1.0 */
    LLMEM_OPTIMIZER_PAGED_ADAMW = 9,
    /** "lion-8bit": bitsandbytes' Lion8bit (Trainer "lion_8bit"): one blockwise 8-bit
     * state, one fused kernel per tensor. @since 0.2.0 */
    LLMEM_OPTIMIZER_LION_8BIT = 10,
    /** "lion-32bit": bitsandbytes' Lion32bit (Trainer "lion_32bit"): one fp32 state.
     * @since 0.2.0 */
    LLMEM_OPTIMIZER_LION_32BIT = 11,
    /** "paged-lion-8bit": bitsandbytes' PagedLion8bit, states in unified memory.
     * @since 0.2.0 */
    LLMEM_OPTIMIZER_PAGED_LION_8BIT = 12,
    /** "paged-lion": bitsandbytes' PagedLion (32-bit states, Trainer
     * "paged_lion_32bit"), paged likewise. @since 0.2.0 */
    LLMEM_OPTIMIZER_PAGED_LION = 13
};
/** How a torch.optim optimizer (AdamW, Adam, SGD) runs its step. @since 0.2.0 */
enum llmem_optimizer_impl {
    /** "fused": one kernel (`fused=True`, the Trainer's `adamw_torch_fused`): no
     * temporaries; Adam(W) keeps each parameter's step count as an fp32 scalar on the
     * GPU. The default. */
    LLMEM_OPTIMIZER_IMPL_FUSED = 1,
    /** "foreach": the multi-tensor path (torch's default on CUDA without `fused`):
     * Adam(W)'s `_foreach_sqrt` holds one tensor per parameter of a group. */
    LLMEM_OPTIMIZER_IMPL_FOREACH = 2,
    /** "forloop": `foreach=False`, one parameter at a time: Adam(W) holds the sqrt and
     * the quotient of one parameter while the previous parameter's denominator is still
     * bound. */
    LLMEM_OPTIMIZER_IMPL_FORLOOP = 3
};
/** How the routed experts of a mixture-of-experts layer run. @since 0.2.0 */
enum llmem_experts_impl {
    /** "grouped-mm": transformers 5.x's default where `torch._grouped_mm` dispatches
     * (PyTorch 2.9 and later on CUDA): each layer's experts are two 3-D parameters
     * (gate_up_proj, down_proj), the routed rows sorted by expert and run as one
     * grouped matmul each (integrations/moe.py, grouped_mm_experts_forward), the
     * router's weights kept fp32. The default. */
    LLMEM_EXPERTS_IMPL_GROUPED_MM = 1,
    /** "loop": one module per expert, run in a Python loop over the experts hit
     * (transformers 4.x's MixtralSparseMoeBlock and its relatives; DeepSeek's own
     * code of 4.54). */
    LLMEM_EXPERTS_IMPL_LOOP = 2
};
/** Gradient checkpointing (torch.utils.checkpoint per decoder layer). @since 0.1.0 */
enum llmem_grad_ckpt {
    LLMEM_GRAD_CKPT_NONE = 1,
    /** "full": what transformers does by default: non-reentrant since transformers 5.x
     * (reentrant before 0.2.0 of this library, transformers 4.35 to 4.57). */
    LLMEM_GRAD_CKPT_FULL = 2,
    /** "reentrant": `use_reentrant=True`: the layer runs under no_grad and is recomputed
     * whole in backward, its output and incoming gradient held. @since 0.2.0 */
    LLMEM_GRAD_CKPT_REENTRANT = 3,
    /** "non-reentrant": `use_reentrant=False`: saved-tensor hooks keep nothing; the first
     * unpack in backward recomputes the layer up to its last saved tensor, each tensor
     * freed once used. @since 0.2.0 */
    LLMEM_GRAD_CKPT_NON_REENTRANT = 4
};
/** Attention kernels. @since 0.1.0 */
enum llmem_attention {
    LLMEM_ATTENTION_EAGER = 1, /**< "eager": scores materialized (batch x heads x seq^2) */
    LLMEM_ATTENTION_FLASH = 2, /**< "flash": FlashAttention-2 (flash-attn), only log-sum-exp saved */
    /** "sdpa": torch.nn.functional.scaled_dot_product_attention as transformers calls it
     * (no padding: no mask, is_causal), on the backend PyTorch 2.11 picks: a fused
     * flash/cuDNN kernel for 16-bit inputs, memory-efficient for fp32 without grouped kv
     * heads, the math fallback otherwise. The default. @since 0.2.0 */
    LLMEM_ATTENTION_SDPA = 3
};
/** Fine-tuning methods. @since 0.1.0 */
enum llmem_method {
    LLMEM_METHOD_FULL = 1, LLMEM_METHOD_LORA = 2, LLMEM_METHOD_QLORA = 3, LLMEM_METHOD_FREEZE = 4
};
/** LoRA target modules by role, as bits of #LLMEM_TRAIN_LORA_TARGETS: each bit selects
 * the linears of that role in whatever family the model is (LLMEM_LORA_Q: q_proj,
 * GPT-2's c_attn, Falcon's query_key_value...). Set by name instead
 * (llmem_train_set_str), the field selects the modules of those Hugging Face names
 * in the model's family, as PEFT's target_modules does. @since 0.1.0 */
enum llmem_lora_target {
    LLMEM_LORA_Q = 1, LLMEM_LORA_K = 2, LLMEM_LORA_V = 4, LLMEM_LORA_O = 8,
    LLMEM_LORA_GATE = 16, LLMEM_LORA_UP = 32, LLMEM_LORA_DOWN = 64,
    /** Multi-head latent attention's query compression, q_a_proj (DeepSeek with
     * q-lora-rank); LLMEM_LORA_Q is its up-projection q_b_proj there. @since 0.2.0 */
    LLMEM_LORA_Q_A = 128,
    /** Multi-head latent attention's key/value compression, kv_a_proj_with_mqa;
     * LLMEM_LORA_K and LLMEM_LORA_V select its up-projection kv_b_proj. @since 0.2.0 */
    LLMEM_LORA_KV_A = 256
};
/** Loss implementations. @since 0.1.0 */
enum llmem_loss {
    LLMEM_LOSS_UPCAST = 1, /**< "upcast": transformers' fp32 logits + cross-entropy */
    LLMEM_LOSS_CHUNKED = 2 /**< "chunked": fused/chunked cross-entropy, no full logits */
};
/** Formulas. @since 0.1.0 */
enum llmem_formula {
    LLMEM_FORMULA_PHASED = 1, /**< "phased": peak over the phases of a step (default) */
    LLMEM_FORMULA_ARTICLE = 2 /**< "article": m_p + m_os + m_data + m_tmp, the source article's sum */
};

/** Create a training setup with the defaults above. @since 0.1.0 */
LLMEM_API int llmem_train_new(llmem_ctx *ctx, llmem_train **out);
/** Free a training setup; NULL is allowed. @since 0.1.0 */
LLMEM_API void llmem_train_free(llmem_train *train);
/** Set an integer or enumerated field; a real field takes the integer as that real,
 * checked as llmem_train_set_double() checks it. @since 0.1.0 */
LLMEM_API int llmem_train_set_int(llmem_train *train, int key, int64_t value);
/** Set a real field (dropout, article factor); NaN and infinities are rejected; dropout
 * also takes -1, the model's own. @since 0.1.0 */
LLMEM_API int llmem_train_set_double(llmem_train *train, int key, double value);
/** Set a field by name ("bf16-mixed", "adamw", "q_proj,v_proj") or by number as the
 * CLI spells one: an integer is an optional sign and decimal digits, a real a
 * decimal number ("0.1", ".5", "1e-3"); white space, hexadecimal, "inf" and "nan"
 * are refused (#LLMEM_EINVAL, naming the field and the text). @since 0.1.0 */
LLMEM_API int llmem_train_set_str(llmem_train *train, int key, const char *value);
/** Read an integer or enumerated field. @since 0.1.0 */
LLMEM_API int llmem_train_get_int(const llmem_train *train, int key, int64_t *out);
/** Read a real field. @since 0.1.0 */
LLMEM_API int llmem_train_get_double(const llmem_train *train, int key, double *out);
/**
 * Describe a training field: its name ("lora-rank"), its bounds (for real
 * fields, the bounds rounded toward zero; dropout's upper bound is
 * exclusive, and it also takes -1, the model's own) and whether it is real
 * (1) or integer/enumerated (0). Any pointer may be NULL.
 * @return #LLMEM_EINVAL for an unknown key. @since 0.1.0
 */
LLMEM_API int llmem_train_field_info(int key, const char **name, int64_t *min, int64_t *max,
                                     int *is_real);
/**
 * Name of @p value of an enumerated training field ("bf16-mixed", "adamw"),
 * or NULL when the field is not enumerated (LoRA targets are a bitmask: see
 * #llmem_lora_target) or the value has no name. @since 0.1.0
 */
LLMEM_API const char *llmem_train_value_name(int key, int64_t value);
/**
 * The @p index-th name an enumerated or bitmask training field accepts, with
 * its value in @p value (may be NULL): the LoRA target modules, aliases
 * included ("c_attn" is q | k | v), or an enumeration's names in value order.
 * NULL past the last name or for a field without names. @since 0.2.0
 */
LLMEM_API const char *llmem_train_choice(int key, size_t index, int64_t *value);
/**
 * Why the setup as it stands does not read field @p key: a sentence in
 * static storage ("needs method lora or qlora"), or NULL when the estimate
 * reads the field (or @p train is NULL or the key unknown). The LoRA fields
 * need method lora or qlora, freeze-layers method freeze, the article-*
 * fields formula article, optimizer-impl a torch.optim optimizer, and the
 * article's formula reads none of the phased model's fields.
 * An estimate refuses a field it does not read that was set away from its
 * default (#LLMEM_EINCONSISTENT, naming the field): a value that would be
 * ignored is a mistake. A front end can call this to refuse such a setting
 * even at its default. @since 0.2.0
 */
LLMEM_API const char *llmem_train_unread(const llmem_train *train, int key);
/**
 * The Hugging Face module names the LoRA targets of @p train select in
 * @p model's family, with commas ("c_attn" for GPT-2's default q and v roles,
 * "q_proj,v_proj" for Llama's, "qkv_proj" for Phi-3's; every linear module
 * of the decoder layers for "all-linear"): names that, set as
 * #LLMEM_TRAIN_LORA_TARGETS, give the same estimate, for showing a setup.
 * Writes at most @p cap bytes with a terminating NUL into @p buf; @p len_out
 * (may be NULL) gets the length without the NUL; a NULL @p buf asks for the
 * length. Errors are recorded on @p train's context.
 * @return #LLMEM_EBUFFER when @p cap is too small; #LLMEM_ENOTSUP when no
 * names select exactly the linears role bits select (GPT-2's c_proj is both
 * output projections: the o role alone has no name); an invalid model's or
 * a target's error (no module matches: #LLMEM_EINCONSISTENT) as an estimate
 * would report it. @since 0.2.0
 */
LLMEM_API int llmem_train_lora_modules(const llmem_train *train, llmem_model *model, char *buf,
                                       size_t cap, size_t *len_out);
/** @} */

/**
 * @defgroup parallel Layouts across GPUs
 * How a training job is split over GPUs: data parallelism with or without
 * sharding (ZeRO, FSDP) and offload, tensor, sequence, pipeline, expert and
 * context parallelism. A layout goes into llmem_estimate_run_parallel() beside
 * the model and the training setup; the estimate then answers per rank.
 * docs/partitioning.md says what each engine holds, with its sources.
 * @{
 */
/** Opaque layout. @since 0.2.0 */
typedef struct llmem_parallel llmem_parallel;

/** Keys of layout fields. Values are never reused. @since 0.2.0 */
enum llmem_parallel_key {
    LLMEM_PARALLEL_DP = 1,            /**< data-parallel degree (replicas or shards) */
    LLMEM_PARALLEL_TP = 2,            /**< tensor-parallel degree (Megatron column/row split) */
    LLMEM_PARALLEL_PP = 3,            /**< pipeline stages */
    LLMEM_PARALLEL_EP = 4,            /**< expert-parallel degree (experts split; divides dp) */
    LLMEM_PARALLEL_CP = 5,            /**< context-parallel degree (sequence split, ring attention) */
    LLMEM_PARALLEL_SP = 6,            /**< 0/1: sequence parallelism in the tensor-parallel group */
    LLMEM_PARALLEL_SHARDING = 7,      /**< #llmem_sharding */
    LLMEM_PARALLEL_SHARD_GROUP = 8,   /**< fsdp-hybrid: ranks a shard spans (divides dp); 0 = dp */
    LLMEM_PARALLEL_OFFLOAD = 9,       /**< #llmem_offload */
    LLMEM_PARALLEL_MICRO_BATCHES = 10,/**< micro-batches per step and pipeline (>= pp keeps it full) */
    LLMEM_PARALLEL_SCHEDULE = 11,     /**< #llmem_schedule */
    LLMEM_PARALLEL_VIRTUAL_STAGES = 12,/**< interleaved schedule: model chunks per stage */
    /** Elements of a data-parallel gradient bucket: DeepSpeed's reduce_bucket_size
     * (ZeRO), or 0 for the engine's default (DeepSpeed 500,000,000; with zero3,
     * the Hugging Face Trainer's "auto", hidden x hidden). DDP's buckets hold every
     * gradient whatever their size. */
    LLMEM_PARALLEL_BUCKET_ELEMENTS = 13
};

/** Data-parallel sharding engines. @since 0.2.0 */
enum llmem_sharding {
    LLMEM_SHARDING_NONE = 1,      /**< "none": replicas (PyTorch DDP) */
    LLMEM_SHARDING_ZERO1 = 2,     /**< "zero1": DeepSpeed ZeRO-1, optimizer states sharded */
    LLMEM_SHARDING_ZERO2 = 3,     /**< "zero2": ZeRO-2, and gradients */
    LLMEM_SHARDING_ZERO3 = 4,     /**< "zero3": ZeRO-3, and parameters */
    LLMEM_SHARDING_FSDP_FULL = 5, /**< "fsdp-full": PyTorch FSDP2 fully_shard, resharded after forward */
    LLMEM_SHARDING_FSDP_GRAD_OP = 6, /**< "fsdp-grad-op": FSDP parameters kept from forward to backward */
    LLMEM_SHARDING_FSDP_HYBRID = 7   /**< "fsdp-hybrid": full shard within a shard group, replicas across */
};
/** What lives in host memory instead. @since 0.2.0 */
enum llmem_offload {
    LLMEM_OFFLOAD_NONE = 1,       /**< "none" */
    LLMEM_OFFLOAD_OPTIMIZER = 2,  /**< "optimizer": fp32 master weights, states and their gradients */
    LLMEM_OFFLOAD_PARAMETERS = 3  /**< "parameters": those and the parameter shards (zero3, fsdp) */
};
/** Pipeline schedules. @since 0.2.0 */
enum llmem_schedule {
    LLMEM_SCHEDULE_1F1B = 1,       /**< "1f1b": one forward, one backward (PipeDream-Flush) */
    LLMEM_SCHEDULE_INTERLEAVED = 2 /**< "interleaved": Megatron's virtual stages */
};

/** Create a layout of one GPU (every degree 1, no sharding). @since 0.2.0 */
LLMEM_API int llmem_parallel_new(llmem_ctx *ctx, llmem_parallel **out);
/** Free a layout; NULL is allowed. @since 0.2.0 */
LLMEM_API void llmem_parallel_free(llmem_parallel *layout);
/** Set a field (#llmem_parallel_key). @return #LLMEM_ERANGE out of bounds. @since 0.2.0 */
LLMEM_API int llmem_parallel_set_int(llmem_parallel *layout, int key, int64_t value);
/** Set a field by name ("zero3", "1f1b") or as decimal text. @since 0.2.0 */
LLMEM_API int llmem_parallel_set_str(llmem_parallel *layout, int key, const char *value);
/** Read a field. @since 0.2.0 */
LLMEM_API int llmem_parallel_get_int(const llmem_parallel *layout, int key, int64_t *out);
/** Name and bounds of a field; any pointer may be NULL. @since 0.2.0 */
LLMEM_API int llmem_parallel_field_info(int key, const char **name, int64_t *min, int64_t *max);
/** Name of a value of an enumerated field, or NULL. @since 0.2.0 */
LLMEM_API const char *llmem_parallel_value_name(int key, int64_t value);
/**
 * Why the layout as it stands does not read field @p key, or NULL when it
 * does (or @p layout is NULL or the key unknown): shard-group needs sharding
 * fsdp-hybrid, virtual-stages schedule interleaved, bucket-elements sharding
 * zero1, zero2 or zero3. An estimate refuses such a field set away from its
 * default (#LLMEM_EINCONSISTENT, naming the field); a front end can call this
 * to refuse it even at its default. @since 0.2.0
 */
LLMEM_API const char *llmem_parallel_unread(const llmem_parallel *layout, int key);
/** The @p index-th name an enumerated field accepts, with its value; NULL past the end.
 * @since 0.2.0 */
LLMEM_API const char *llmem_parallel_choice(int key, size_t index, int64_t *value);
/** GPUs the layout spans: dp x tp x pp x cp. @since 0.2.0 */
LLMEM_API uint64_t llmem_parallel_gpus(const llmem_parallel *layout);
/**
 * The values of #LLMEM_TRAIN_BATCH or #LLMEM_TRAIN_SEQ (@p key) the layout
 * splits are the multiples of this: 2 x cp for seq under context
 * parallelism, the least common multiple with cp x tp under sequence
 * parallelism (a rank's seq / cp positions split over tp ranks); 1 for any
 * batch, another key, or a NULL layout. The smallest value
 * llmem_estimate_max() tries. @since 0.2.0
 */
LLMEM_API uint64_t llmem_parallel_step(const llmem_parallel *layout, int key);
/** @} */

/**
 * @defgroup estimate Estimate
 * The memory of one training step. An estimate handle is reusable: run it
 * again with other inputs without allocating (what a scheduler does in a loop).
 * @{
 */
/** Opaque estimate. @since 0.1.0 */
typedef struct llmem_estimate llmem_estimate;
/** Opaque term estimator result, owned by its estimate. @since 0.1.0 */
typedef struct llmem_term llmem_term;

/** Result keys for llmem_estimate_get_u64(). @since 0.1.0 */
enum llmem_estimate_key {
    LLMEM_EST_PARAMS_TOTAL = 1,      /**< parameters of the model */
    LLMEM_EST_PARAMS_TRAINABLE = 2,  /**< parameters that receive gradients */
    LLMEM_EST_PEAK_ALLOCATED = 3,    /**< bytes of live tensors at the peak */
    LLMEM_EST_PEAK_RESERVED = 4,     /**< plus caching-allocator rounding/segments */
    LLMEM_EST_PEAK_DEVICE = 5,       /**< plus CUDA context and library workspaces */
    LLMEM_EST_PEAK_PHASE = 6,        /**< #llmem_phase holding the peak; 0 with the article
                                          formula, which sums terms (every phase reads 0 too) */
    LLMEM_EST_PARAMS_ACTIVE = 7      /**< parameters a token passes through (MoE) */
};

/** Per-rank result keys for llmem_estimate_rank_get_u64(), besides every
 * #llmem_estimate_key. @since 0.2.0 */
enum llmem_rank_key {
    LLMEM_RANK_STAGE = 101,       /**< pipeline stage (0 = the first); with
                                       #LLMEM_RANK_STAGES > 1, the first of those it stands for */
    LLMEM_RANK_LAYER_FIRST = 102, /**< first decoder layer it runs */
    LLMEM_RANK_LAYERS = 103,      /**< decoder layers it runs (over all its model chunks) */
    LLMEM_RANK_GPUS = 104,        /**< GPUs of the layout that hold what this rank holds */
    LLMEM_RANK_HOST = 105,        /**< host (CPU) bytes it needs: offloaded states, pinned buffers */
    LLMEM_RANK_IN_FLIGHT_X1000 = 106, /**< micro-batches whose forward state it holds at once, x 1000 */
    LLMEM_RANK_STAGES = 107,      /**< consecutive stages holding the same kinds of layers that this
                                       rank class stands for (the first: the most micro-batches in
                                       flight, so the most memory) */
    LLMEM_RANK_CHUNKS = 108,      /**< model chunks it runs: the interleaved schedule's virtual
                                       stages, else 1; chunk c is the layers from
                                       LAYER_FIRST + c x CHUNK_STRIDE, LAYERS / CHUNKS of them */
    LLMEM_RANK_CHUNK_STRIDE = 109 /**< layers from one model chunk's first to the next's (0: one
                                       chunk) */
};

/** Phases of a training step. @since 0.1.0 */
enum llmem_phase {
    LLMEM_PHASE_FORWARD = 1,       /**< "forward": layers, logits and loss */
    LLMEM_PHASE_LOSS_BACKWARD = 2, /**< "loss-backward": gradient of the loss and head */
    LLMEM_PHASE_BACKWARD = 3,      /**< "backward": through the layers */
    LLMEM_PHASE_OPTIMIZER = 4      /**< "optimizer": the optimizer step */
};
/** Name of a phase ("forward", ...), or NULL for an unknown value. @since 0.1.0 */
LLMEM_API const char *llmem_phase_name(int phase);

/** The four terms of the source article's decomposition. @since 0.1.0 */
enum llmem_term_kind {
    LLMEM_TERM_PARAMETERS = 1, /**< weights by dtype, quantization constants */
    LLMEM_TERM_OPTIMIZER = 2,  /**< gradients, optimizer states, fp32 master weights */
    LLMEM_TERM_DATA = 3,       /**< the batch tensors */
    /** activations, attention and loss buffers, transients; its components:
     * "activations" (a peak in forward), "activations_and_grads" (in
     * backward: saved activations and gradients in flight), "optimizer_step",
     * "gathered_parameters", "gradient_bucket" */
    LLMEM_TERM_TEMPORARY = 4
};
/** Name of a term ("parameters", ...), or NULL for an unknown value. @since 0.1.0 */
LLMEM_API const char *llmem_term_name(int kind);

/**
 * Create an empty estimate: one allocation of about 664 KiB, holding the
 * simulator's scratch and its caches, not cleared (memory is touched as the
 * caches fill, so a new handle costs well under a microsecond). A handle
 * remembers the segments it simulated, keyed by what they depend on but batch
 * and seq, and soon evaluates polynomials of batch and seq instead of
 * simulating, then compiles whole steps the same way; it keeps recent models,
 * setups and layouts too, so reuse one handle in a loop
 * (docs/benchmarks.md). @since 0.1.0
 */
LLMEM_API int llmem_estimate_new(llmem_ctx *ctx, llmem_estimate **out);
/** Free an estimate and its terms; NULL is allowed. @since 0.1.0 */
LLMEM_API void llmem_estimate_free(llmem_estimate *est);
/**
 * Compute the estimate of @p model trained as @p train. Validates both;
 * allocates nothing. On failure the previous result is kept. @since 0.1.0
 */
LLMEM_API int llmem_estimate_run(llmem_estimate *est, llmem_model *model,
                                 const llmem_train *train);
/**
 * Compute the estimate of @p model trained as @p train, laid out as @p layout
 * (NULL: one GPU, the result of llmem_estimate_run()). The ranks whose
 * memory differs (pipeline stages: the first, a middle one, the last) each
 * get their result; llmem_estimate_get_u64() and the other getters answer for
 * the most loaded one. @return #LLMEM_EINCONSISTENT for a layout the model
 * cannot take (tp not dividing the heads, pp above the layers, ...), the
 * message naming the field. @since 0.2.0
 */
LLMEM_API int llmem_estimate_run_parallel(llmem_estimate *est, llmem_model *model,
                                          const llmem_train *train,
                                          const llmem_parallel *layout);
/** Number of ranks with a result of their own (1 without a layout). @since 0.2.0 */
LLMEM_API size_t llmem_estimate_rank_count(const llmem_estimate *est);
/** Index of the most loaded rank (highest device-level peak). @since 0.2.0 */
LLMEM_API size_t llmem_estimate_peak_rank(const llmem_estimate *est);
/** A result of rank @p rank: a #llmem_estimate_key or a #llmem_rank_key. @since 0.2.0 */
LLMEM_API int llmem_estimate_rank_get_u64(const llmem_estimate *est, size_t rank, int key,
                                          uint64_t *out);
/** Peak live bytes of rank @p rank within one phase. @since 0.2.0 */
LLMEM_API int llmem_estimate_rank_phase_bytes(const llmem_estimate *est, size_t rank, int phase,
                                              uint64_t *out);
/** A term estimator of rank @p rank. @since 0.2.0 */
LLMEM_API int llmem_estimate_rank_term(const llmem_estimate *est, size_t rank, int kind,
                                       const llmem_term **out);
/** Levels of a peak, for llmem_estimate_max(). @since 0.2.0 */
enum llmem_level {
    LLMEM_LEVEL_ALLOCATED = 1, /**< live tensors (#LLMEM_EST_PEAK_ALLOCATED) */
    LLMEM_LEVEL_RESERVED = 2,  /**< plus the caching allocator (#LLMEM_EST_PEAK_RESERVED) */
    LLMEM_LEVEL_DEVICE = 3     /**< plus the CUDA context (#LLMEM_EST_PEAK_DEVICE): what must fit */
};
/**
 * The largest value of the training field @p key (#LLMEM_TRAIN_BATCH or
 * #LLMEM_TRAIN_SEQ) for which the most loaded rank's peak at @p level stays
 * within @p capacity bytes, the other fields as @p train has them; 0 when
 * even the smallest does not fit. Only values the layout splits are tried:
 * multiples of 2 x cp for seq under context parallelism, of cp x tp under
 * sequence parallelism (a rank's seq / cp positions split over tp ranks;
 * otherwise 1, 2, 3, ...; any batch); a sequence longer than a model's
 * learned positions does not fit.
 * Solved by bisection over the field's bounds (the peak grows with batch and
 * with sequence length), about 2 x log2(bound) estimates. The estimate is
 * left with the result of the largest value that fits (or of the smallest).
 * When the next value is beyond what the estimate can count for the model
 * (#LLMEM_EOVERFLOW from a run) rather than over @p capacity, the call fails
 * with #LLMEM_EOVERFLOW, @p out holds that last countable value (a floor of
 * the answer, not the answer) and the estimate its result; likewise with
 * #LLMEM_ENOTSUP when the next value is one the estimate does not model
 * (a run refusing the field itself: Gemma-2 under sdpa from its sliding window on).
 * @since 0.2.0
 */
LLMEM_API int llmem_estimate_max(llmem_estimate *est, llmem_model *model, const llmem_train *train,
                                 const llmem_parallel *layout, int key, int level,
                                 uint64_t capacity, int64_t *out);
/**
 * The same job at many batch sizes and sequence lengths, in one call (a
 * table of what fits, a scheduler's sweep): point i is @p train with its
 * batch set to @p batch[i] and its seq to @p seq[i] (a NULL array keeps the
 * train's value at every point), and @p peak[i] gets the most loaded rank's
 * peak at @p level (#llmem_level): exactly what llmem_estimate_run_parallel()
 * then llmem_estimate_get_u64() give at that point. Once the handle has
 * compiled the configuration's walk (a grid swept before), a point costs
 * its peak alone: about 6 ns for Llama-3.1-8B where several points share
 * a seq (a row), a few tens of ns otherwise; any other point costs its run
 * (docs/benchmarks.md). A binding makes one call for all of them.
 * @p train is left unchanged; the estimate holds the result of the last
 * point that succeeded.
 * A point that fails stops the sweep with that run's status, its message
 * prefixed with the point ("sweep point 3 (batch 0, seq 2048): batch: ...")
 * and its field kept for llmem_ctx_error_field(); @p peak is then written up
 * to that point.
 * @since 0.2.0
 */
LLMEM_API int llmem_estimate_sweep(llmem_estimate *est, llmem_model *model,
                                   const llmem_train *train, const llmem_parallel *layout,
                                   const int64_t *batch, const int64_t *seq, size_t n, int level,
                                   uint64_t *peak);
/**
 * Record the timeline of every later run: points through the step, each with
 * its phase, the part of the model it is in and the live bytes of the four
 * terms. One layer of each run of identical layers is shown op by op (the one
 * that holds that run's peak), the others by one point each, unless
 * @p expand is 1. Allocates room for @p capacity points a rank once, here
 * (runs allocate nothing); @p capacity 0 turns the timeline off and frees it.
 * A step with more points keeps the first @p capacity: a count equal to
 * @p capacity means the room filled, so record again with more. The article's formula
 * has no timeline. @return #LLMEM_ENOMEM; #LLMEM_ERANGE for a @p capacity
 * whose room (320 bytes a point) would not fit in a size_t. @since 0.2.0
 */
LLMEM_API int llmem_estimate_timeline(llmem_estimate *est, size_t capacity, int expand);
/** Points of rank @p rank's timeline (0 when off). @since 0.2.0 */
LLMEM_API size_t llmem_estimate_timeline_count(const llmem_estimate *est, size_t rank);
/** Index of the first point of rank @p rank's timeline holding the largest total
 * among the points kept: the rank's peak (#LLMEM_EST_PEAK_ALLOCATED) unless the
 * room filled first (a count equal to the capacity). @since 0.2.0 */
LLMEM_API size_t llmem_estimate_timeline_peak(const llmem_estimate *est, size_t rank);
/**
 * Point @p index of rank @p rank's timeline: its phase (#llmem_phase), the
 * part of the model (a static string: "embedding", "norm", "attention",
 * "mlp", "head", "loss", "recompute", "layer" for a layer shown by one point,
 * "optimizer"), the decoder layer (-1 outside the layers), and the live bytes
 * of each term at the allocated level (#llmem_term_kind order); any pointer
 * may be NULL. The four add up to the live bytes then; their largest sum is
 * #LLMEM_EST_PEAK_ALLOCATED. @since 0.2.0
 */
LLMEM_API int llmem_estimate_timeline_point(const llmem_estimate *est, size_t rank, size_t index,
                                            int *phase, const char **part, int64_t *layer,
                                            uint64_t *parameters, uint64_t *optimizer,
                                            uint64_t *data, uint64_t *temporary);
/** Read a result (#llmem_estimate_key). @since 0.1.0 */
LLMEM_API int llmem_estimate_get_u64(const llmem_estimate *est, int key, uint64_t *out);
/** Peak live bytes within one phase (#llmem_phase). @since 0.1.0 */
LLMEM_API int llmem_estimate_phase_bytes(const llmem_estimate *est, int phase, uint64_t *out);
/** The term estimator of kind @p kind (#llmem_term_kind). @since 0.1.0 */
LLMEM_API int llmem_estimate_term(const llmem_estimate *est, int kind, const llmem_term **out);

/** Bytes of the term at the instant of the overall peak; the four sum to it. @since 0.1.0 */
LLMEM_API uint64_t llmem_term_bytes_at_peak(const llmem_term *term);
/** The term's own largest value over the step. @since 0.1.0 */
LLMEM_API uint64_t llmem_term_max_bytes(const llmem_term *term);
/** Number of named components of the term. @since 0.1.0 */
LLMEM_API size_t llmem_term_component_count(const llmem_term *term);
/**
 * Component @p index: its static name ("gradients", "activations", ...) and
 * its bytes at the peak. @since 0.1.0
 */
LLMEM_API int llmem_term_component(const llmem_term *term, size_t index,
                                   const char **name, uint64_t *bytes_at_peak);
/** @} */

/**
 * @defgroup plan Planner
 * Which layouts of a job fit a number of GPUs of a given memory, best first.
 * The planner enumerates data, tensor, pipeline, context and expert
 * parallelism with valid divisibility, the sharding engines, sequence
 * parallelism and gradient checkpointing; for each, solves the largest
 * micro-batch that fits (llmem_estimate_max()); and ranks what fits by a
 * documented throughput proxy (docs/partitioning.md: compute, communication
 * volume and the pipeline bubble). Rejected families of layouts are kept
 * with their reason.
 * @{
 */
/** Opaque planner. @since 0.2.0 */
typedef struct llmem_plan llmem_plan;

/** Keys of planner fields. @since 0.2.0 */
enum llmem_plan_key {
    LLMEM_PLAN_GPUS = 1,            /**< GPUs to lay the job on */
    /** Bytes one GPU holds at the device level: required, unless the training
     * setup names a GPU (#LLMEM_TRAIN_GPU), whose #LLMEM_GPU_USABLE_BYTES a 0
     * here stands for. */
    LLMEM_PLAN_GPU_BYTES = 2,
    /** GPUs a node holds (8), 0 to 1024; 0: no node boundary, every GPU in one node
     * (as #LLMEM_PACK_GPUS_PER_NODE's 0). Ranks are placed node by node, tp fastest; a
     * job on more GPUs than a node holds takes whole nodes: llmem_plan_run() refuses a
     * value that neither divides #LLMEM_PLAN_GPUS nor is at least it
     * (#LLMEM_EINCONSISTENT naming this field). Tensor-parallel groups stay within a
     * node: tp (a power of two) up to the GPUs when the job fits one node, else the tp
     * that divide this (a node of 6 takes tp 1 and 2, of 3 only tp 1). */
    LLMEM_PLAN_GPUS_PER_NODE = 3,
    LLMEM_PLAN_MAX_MICRO_BATCH = 4, /**< largest micro-batch tried (64) */
    LLMEM_PLAN_GLOBAL_BATCH = 5,    /**< sequences per optimizer step; 0: 2 x pp micro-batches */
    LLMEM_PLAN_MARGIN_PERMILLE = 6, /**< safety margin kept free, in thousandths (50 = 5%) */
    LLMEM_PLAN_OFFLOAD = 7          /**< 0/1: also try offloading the optimizer or parameters */
};

/** Numeric keys of a planned layout, for llmem_plan_result_get_u64(). @since 0.2.0 */
enum llmem_plan_result_key {
    LLMEM_PLAN_MICRO_BATCH = 1,     /**< the largest micro-batch that fits */
    LLMEM_PLAN_MICRO_BATCHES = 2,   /**< micro-batches per step and pipeline */
    LLMEM_PLAN_GRAD_CKPT = 3,       /**< #llmem_grad_ckpt */
    LLMEM_PLAN_PEAK_DEVICE = 4,     /**< device-level peak of its most loaded rank */
    LLMEM_PLAN_HEADROOM = 5,        /**< bytes left on that GPU (below the margin's line: 0) */
    LLMEM_PLAN_COMM_BYTES = 6,      /**< bytes a GPU sends per step (the cost model's volume) */
    LLMEM_PLAN_BUBBLE_PERMILLE = 7, /**< pipeline bubble, in thousandths of the compute time */
    LLMEM_PLAN_TOKENS_PER_SECOND = 8/**< the throughput proxy: tokens a second over all GPUs */
};

/** Create a planner. @since 0.2.0 */
LLMEM_API int llmem_plan_new(llmem_ctx *ctx, llmem_plan **out);
/** Free a planner; NULL is allowed. @since 0.2.0 */
LLMEM_API void llmem_plan_free(llmem_plan *plan);
/** Set a field (#llmem_plan_key). @since 0.2.0 */
LLMEM_API int llmem_plan_set_int(llmem_plan *plan, int key, int64_t value);
/** Read a field. @since 0.2.0 */
LLMEM_API int llmem_plan_get_int(const llmem_plan *plan, int key, int64_t *out);
/** Name and bounds of a field; any pointer may be NULL. @since 0.2.0 */
LLMEM_API int llmem_plan_field_info(int key, const char **name, int64_t *min, int64_t *max);
/**
 * Enumerate the layouts of @p model trained as @p train over the planner's
 * GPUs. The planner solves the micro-batch (leave the batch at 1) and tries
 * no checkpointing and the setup's (full, non-reentrant, when it has none;
 * the setup's alone under the article's formula). Allocates the results in
 * the planner.
 * @return #LLMEM_OK even when nothing fits (llmem_plan_result_count() is 0
 * and the rejections say why). #LLMEM_EINCONSISTENT naming
 * #LLMEM_PLAN_GPU_BYTES when no capacity is set, #LLMEM_PLAN_GPUS_PER_NODE
 * when it neither divides #LLMEM_PLAN_GPUS nor is at least it, or a training
 * field: a batch other than 1, grad-accum with #LLMEM_PLAN_GLOBAL_BATCH (the
 * micro-batches are the accumulation), the article's formula over more than
 * one GPU. A setup no layout can estimate fails as an estimate does, naming
 * its field. The planner is then unchanged. @since 0.2.0
 */
LLMEM_API int llmem_plan_run(llmem_plan *plan, llmem_model *model, const llmem_train *train);
/** Layouts that fit, best first. @since 0.2.0 */
LLMEM_API size_t llmem_plan_result_count(const llmem_plan *plan);
/** A number of result @p index (#llmem_plan_result_key). @since 0.2.0 */
LLMEM_API int llmem_plan_result_get_u64(const llmem_plan *plan, size_t index, int key,
                                        uint64_t *out);
/** Copy result @p index's layout into @p layout (a handle of the same context). @since 0.2.0 */
LLMEM_API int llmem_plan_result_layout(const llmem_plan *plan, size_t index,
                                       llmem_parallel *layout);
/** Number of kinds of rejected layouts. @since 0.2.0 */
LLMEM_API size_t llmem_plan_rejected_count(const llmem_plan *plan);
/**
 * Rejection @p index: a static reason ("tp does not divide the heads",
 * "does not fit at micro-batch 1") and how many layouts it rejected; an
 * example in @p example (owned by the planner, never empty): the first such
 * layout's message; for "does not fit at micro-batch 1" the layout that comes
 * closest (the least bytes at micro-batch 1) and those bytes against the
 * capacity less the margin. @since 0.2.0
 */
LLMEM_API int llmem_plan_rejected(const llmem_plan *plan, size_t index, const char **reason,
                                  uint64_t *layouts, const char **example);
/** @} */

/**
 * @defgroup gpu GPU catalog
 * The GPUs people fine-tune on, as const data: the memory a process can use
 * (what `torch.cuda.mem_get_info()` reports as total, not the marketing
 * number), the CUDA context and cuBLAS workspace of the architecture, and the
 * MIG profiles of MIG-capable GPUs with their usable memory, compute and
 * memory slices and valid placements. Every value has its source
 * (docs/mig.md, docs/gpu-constants.md); estimates are flagged. GPUs and
 * profiles are addressed by index; indices are stable within one library
 * version only, so look them up by name (llmem_gpu_find(),
 * llmem_mig_profile_find()).
 * @{
 */
/** Numeric keys of a GPU for llmem_gpu_get_u64(). Values are never reused. @since 0.2.0 */
enum llmem_gpu_key {
    /** Bytes a process can use: `torch.cuda.mem_get_info()` total (the CUDA
     * context comes out of it). */
    LLMEM_GPU_USABLE_BYTES = 1,
    /** 1 when #LLMEM_GPU_USABLE_BYTES is derived, not measured (docs/mig.md
     * gives the rule), else 0. */
    LLMEM_GPU_USABLE_ESTIMATED = 2,
    /** Bytes one training process holds outside PyTorch's caching allocator
     * on this architecture: its CUDA (ROCm) context and the kernel modules it
     * loads (#LLMEM_GPU_CONTEXT_ESTIMATED says whether it was measured). */
    LLMEM_GPU_CONTEXT_BYTES = 3,
    /** Bytes of the cuBLAS workspace PyTorch allocates per handle and stream
     * on this architecture (part of reserved memory; a training step holds
     * two: its forward's thread's and autograd's backward thread's). */
    LLMEM_GPU_WORKSPACE_BYTES = 4,
    /** Streaming multiprocessors (compute units on AMD); 0 when unknown. */
    LLMEM_GPU_SMS = 5,
    /** CUDA compute capability as major * 10 + minor (80, 90, 100); 0 for AMD. */
    LLMEM_GPU_COMPUTE_CAPABILITY = 6,
    /** Number of MIG profiles (0: the GPU has no MIG). */
    LLMEM_GPU_MIG_PROFILES = 7,
    /** Placement slots of the MIG grid: memory slices (8 on A100/H100/H200/B200,
     * 4 on A30) or placement units (12 on the RTX PRO 6000); 0 without MIG. */
    LLMEM_GPU_MIG_SLOTS = 8,
    /** Compute slices of the MIG grid (7, or 4 on A30 and RTX PRO 6000); 0 without MIG. */
    LLMEM_GPU_MIG_COMPUTE_SLICES = 9,
    /** 1 when the context bytes are a default, not measured on this architecture. */
    LLMEM_GPU_CONTEXT_ESTIMATED = 10
};

/** Text keys of a GPU for llmem_gpu_get_str(). Values are never reused. @since 0.2.0 */
enum llmem_gpu_text {
    LLMEM_GPU_ARCH = 1,             /**< architecture: "sm_80", "sm_90", "CDNA3" */
    LLMEM_GPU_DEVICE_NAME = 2,      /**< the name the driver reports ("NVIDIA A100-SXM4-80GB") */
    LLMEM_GPU_MEMORY_SOURCE = 3,    /**< where #LLMEM_GPU_USABLE_BYTES comes from */
    LLMEM_GPU_CONSTANTS_SOURCE = 4, /**< where the context and workspace bytes come from */
    LLMEM_GPU_ALIASES = 5           /**< other names llmem_gpu_find() accepts, '|'-separated */
};

/** Number of GPUs in the catalog. @since 0.2.0 */
LLMEM_API size_t llmem_gpu_count(void);
/** Canonical name of GPU @p gpu ("A100-80GB", "H100-SXM"), or NULL past the end. @since 0.2.0 */
LLMEM_API const char *llmem_gpu_name(size_t gpu);
/**
 * Find a GPU by name: its canonical name, an alias or the driver's name,
 * case-insensitively and ignoring spaces, '-' and '_' ("H100", "h100-sxm",
 * "NVIDIA H100 80GB HBM3" all name the H100 SXM 80 GB). @p ctx may be NULL;
 * otherwise a failure leaves a message there naming the close matches.
 * @return #LLMEM_OK, #LLMEM_ENOTFOUND for an unknown or ambiguous name
 * ("A100" could be 40 or 80 GB), #LLMEM_EINVAL for a NULL pointer.
 * @since 0.2.0
 */
LLMEM_API int llmem_gpu_find(llmem_ctx *ctx, const char *name, size_t *gpu);
/**
 * Read a number of GPU @p gpu (#llmem_gpu_key).
 * @return #LLMEM_ERANGE past the last GPU, #LLMEM_EINVAL for an unknown key
 * or a NULL @p out. @since 0.2.0
 */
LLMEM_API int llmem_gpu_get_u64(size_t gpu, int key, uint64_t *out);
/** A text of GPU @p gpu (#llmem_gpu_text), or NULL for a bad index or key. @since 0.2.0 */
LLMEM_API const char *llmem_gpu_get_str(size_t gpu, int key);

/** Numeric keys of a MIG profile for llmem_mig_profile_get_u64(). @since 0.2.0 */
enum llmem_mig_key {
    /** Bytes usable inside the instance, as `nvidia-smi mig -lgip` reports them
     * (the lowest figure among the drivers reported). */
    LLMEM_MIG_USABLE_BYTES = 1,
    LLMEM_MIG_COMPUTE_SLICES = 2, /**< compute slices (of #LLMEM_GPU_MIG_COMPUTE_SLICES) */
    LLMEM_MIG_SLOTS = 3,          /**< placement slots it occupies (of #LLMEM_GPU_MIG_SLOTS) */
    /** Valid placements: bit s set when an instance may start at slot s (it
     * then occupies slots s .. s + #LLMEM_MIG_SLOTS - 1). */
    LLMEM_MIG_STARTS = 4,
    LLMEM_MIG_MAX_COUNT = 5,      /**< most instances of this profile on one GPU */
    LLMEM_MIG_SMS = 6,            /**< SMs of an instance; 0 when unknown */
    /** #llmem_mig_variant: plain, or a media/graphics variant sharing its base
     * profile's placements. Fitting and packing use plain profiles only. */
    LLMEM_MIG_VARIANT = 7,
    /** Bit mask of #llmem_mig_uncertain; 0 when every value was observed on this GPU. */
    LLMEM_MIG_UNCERTAIN = 8,
    /** The first NVIDIA driver branch that has the profile, as NVIDIA states
     * it (the A100 40 GB's `1g.10gb`: 525); 0 when no source gives one (every
     * branch that drives the GPU). docs/mig.md, "Driver versions".
     * @since 0.2.0 */
    LLMEM_MIG_SINCE_DRIVER = 9
};

/** Variants of a MIG profile. @since 0.2.0 */
enum llmem_mig_variant {
    LLMEM_MIG_PLAIN = 0,  /**< "1g.10gb" */
    LLMEM_MIG_ME = 1,     /**< "+me": one instance per GPU may hold the media engines */
    LLMEM_MIG_GFX = 2,    /**< "+gfx": graphics-capable (RTX PRO 6000) */
    LLMEM_MIG_ME_ALL = 3, /**< "+me.all": all media engines (RTX PRO 6000) */
    LLMEM_MIG_NO_ME = 4   /**< "-me": no media engines (RTX PRO 6000) */
};

/** Bits of #LLMEM_MIG_UNCERTAIN. @since 0.2.0 */
enum llmem_mig_uncertain {
    LLMEM_MIG_MEMORY_ESTIMATED = 1, /**< usable bytes derived, not reported for this GPU */
    LLMEM_MIG_PLACEMENTS_INFERRED = 2 /**< placements inferred from the GPU family's geometry */
};

/** Name of profile @p profile of GPU @p gpu ("3g.40gb"), or NULL. @since 0.2.0 */
LLMEM_API const char *llmem_mig_profile_name(size_t gpu, size_t profile);
/**
 * Kubernetes extended-resource name the NVIDIA GPU operator exposes for the
 * profile under its "mixed" MIG strategy ("nvidia.com/mig-3g.40gb"), or NULL.
 * As NVIDIA's device plugin names it, a variant's '+' is '.':
 * "1g.10gb+me" is "nvidia.com/mig-1g.10gb.me" (a '+' is not valid in a
 * resource name). The name does not say which GPU type: docs/mig.md.
 * @since 0.2.0
 */
LLMEM_API const char *llmem_mig_profile_resource(size_t gpu, size_t profile);
/** Where the profile's values come from, or NULL. @since 0.2.0 */
LLMEM_API const char *llmem_mig_profile_source(size_t gpu, size_t profile);
/**
 * Read a number of a MIG profile (#llmem_mig_key).
 * @return #LLMEM_ERANGE for a bad GPU or profile index, #LLMEM_EINVAL for an
 * unknown key or a NULL @p out. @since 0.2.0
 */
LLMEM_API int llmem_mig_profile_get_u64(size_t gpu, size_t profile, int key, uint64_t *out);
/**
 * Name of profile @p profile of GPU @p gpu as NVIDIA driver branch @p driver
 * names it: the major version (535 for 535.129.03), 0 for the newest
 * (llmem_mig_profile_name()). Drivers 535 and 545 name the A100 80 GB's
 * `3g.40gb` "3g.39gb" (the same instance). NULL for a bad index, a driver
 * outside 0-999, or a profile the branch does not have
 * (#LLMEM_MIG_SINCE_DRIVER). @since 0.2.0
 */
LLMEM_API const char *llmem_mig_profile_driver_name(size_t gpu, size_t profile, int64_t driver);
/**
 * Kubernetes resource of the profile under driver branch @p driver, as
 * llmem_mig_profile_resource() of llmem_mig_profile_driver_name()'s name
 * ("nvidia.com/mig-3g.39gb" on 535); NULL likewise. @since 0.2.0
 */
LLMEM_API const char *llmem_mig_profile_driver_resource(size_t gpu, size_t profile,
                                                        int64_t driver);
/**
 * Find a profile of GPU @p gpu by name, case-insensitively ("3g.40gb",
 * "1g.10gb+me"): its catalog name or a name any driver branch gives it
 * (llmem_mig_profile_driver_name(): the A100 80 GB's "3g.39gb", as
 * nvidia-smi lists it on 535 and 545), whatever the branch, since no name
 * stands for two profiles of one GPU. @p ctx may be NULL.
 * @return #LLMEM_ENOTFOUND for a name the GPU does not have (the message
 * lists the GPU's profiles under their catalog names), #LLMEM_ERANGE for a
 * bad GPU index. @since 0.2.0
 */
LLMEM_API int llmem_mig_profile_find(llmem_ctx *ctx, size_t gpu, const char *name,
                                     size_t *profile);
/** @} */

/**
 * @defgroup fit Fitting a job to a GPU or MIG slice
 * Which MIG profiles of a GPU, and whether the whole GPU, hold a job's
 * memory with a safety margin: every plain profile (of the driver branch,
 * #LLMEM_FIT_DRIVER), smallest usable memory first, then the whole GPU, each
 * with its budget, headroom or shortfall. The job is a byte
 * count of a #llmem_level: either its device-level peak (#LLMEM_LEVEL_DEVICE,
 * llmem_estimate_get_u64() with #LLMEM_EST_PEAK_DEVICE, which counts the CUDA
 * context), or a count without the context (#LLMEM_LEVEL_RESERVED: a
 * reserved-level peak, from PyTorch or a scheduler), to which the GPU's
 * context is added: every MIG instance runs its own process with its own
 * context. The margin is the planner's share: of an option's U usable bytes
 * it keeps exactly ceil(U x margin / 1000) free, so the option holds a need N
 * when N <= U - ceil(U x margin / 1000) (with margin 0, N <= U). Three byte
 * counts say by how much, as llmem_plan_run() and the estimate count them:
 * the budget B = U - ceil(U x margin / 1000) (#LLMEM_FIT_BUDGET_BYTES), the
 * headroom B - N when the option holds the need (#LLMEM_FIT_HEADROOM_BYTES,
 * room left below the margin's line), and otherwise the shortfall R - U
 * (#LLMEM_FIT_SHORTFALL_BYTES), R the least usable bytes that hold N
 * (#LLMEM_FIT_REQUIRED_BYTES): the usable bytes, not the budget, that the
 * option lacks. B >= N exactly when U >= R. A need or a
 * requirement beyond 64 bits is held by no option (see
 * #LLMEM_FIT_SHORTFALL_BYTES). Changing a setting drops the options of the
 * last run (llmem_fit_count() is 0 again); setting a value it has keeps them.
 *
 * A GPU that already runs MIG instances it keeps (a scheduler admitting a
 * job next to them): declare each with llmem_fit_add_running(), and each
 * option says whether one more instance of it can be created next to them
 * (#LLMEM_FIT_PLACEABLE) and where (#LLMEM_FIT_START, #LLMEM_FIT_STARTS),
 * by the placement rules llmem_pack_run() lays GPUs out with (docs/mig.md,
 * "Placement rules"); #LLMEM_FIT_FITS then also asks that. Without running
 * instances every option is placeable on the empty GPU and the other values
 * are what they are without this feature.
 * @{
 */
/** Opaque fit: settings and the options of the last run. @since 0.2.0 */
typedef struct llmem_fit llmem_fit;


/** Keys of fit settings. Values are never reused. @since 0.2.0 */
enum llmem_fit_key {
    /** Safety margin kept free of an option's usable bytes, in thousandths
     * (0-900; default 50 = 5 %, docs/mig.md says why), as #LLMEM_PLAN_MARGIN_PERMILLE. */
    LLMEM_FIT_MARGIN_PERMILLE = 1,
    /** Minimum compute slices the job asks for (0-7, int); the whole GPU
     * satisfies any. Default 0. */
    LLMEM_FIT_MIN_COMPUTE = 2,
    /** The NVIDIA driver's major branch on the GPU (0-999: 535 for
     * 535.129.03); default 0, the newest. The options are the profiles that
     * branch has (#LLMEM_MIG_SINCE_DRIVER: no A100 40 GB `1g.10gb` before
     * 525), named as it names them (llmem_fit_name(): "3g.39gb" on 535 and
     * 545 for the A100 80 GB's `3g.40gb`, with the same bytes).
     * @since 0.2.0 */
    LLMEM_FIT_DRIVER = 3
};

/** Keys of one option of a fit, for llmem_fit_get_u64(). @since 0.2.0 */
enum llmem_fit_result {
    /** Index of the MIG profile (llmem_mig_profile_name()), or the GPU's
     * #LLMEM_GPU_MIG_PROFILES (one past the last profile) for the whole GPU. */
    LLMEM_FIT_PROFILE = 1,
    LLMEM_FIT_WHOLE_GPU = 2,      /**< 1 for the whole GPU (MIG disabled), else 0 */
    /** 1 when the option holds the job with the margin, has the compute
     * slices asked (#LLMEM_FIT_MIN_COMPUTE) and can be created
     * (#LLMEM_FIT_PLACEABLE) */
    LLMEM_FIT_FITS = 3,
    LLMEM_FIT_USABLE_BYTES = 4,   /**< the option's usable bytes */
    /** The job's device-level bytes (context included); UINT64_MAX when
     * reserved-level bytes plus the context exceed 64 bits (saturated). */
    LLMEM_FIT_NEED_BYTES = 5,
    /** The least usable bytes that hold the need with the margin:
     * ceil(1000 x need / (1000 - margin)); UINT64_MAX when that, or the
     * need, exceeds 64 bits (saturated: no option holds it). */
    LLMEM_FIT_REQUIRED_BYTES = 6,
    /** budget - need (#LLMEM_FIT_BUDGET_BYTES) when the budget holds the
     * need, else 0: the bytes left below the margin's line. With no minimum
     * of compute slices that is when #LLMEM_FIT_FITS is 1. */
    LLMEM_FIT_HEADROOM_BYTES = 7,
    /** required - usable when the option's memory does not hold the job
     * (usable < required), else 0: the usable bytes it lacks, margin
     * included (a budget short by S lacks about S x 1000 / (1000 - margin)
     * usable bytes); UINT64_MAX when the need or the requirement exceeds 64
     * bits. Headroom and shortfall are never both nonzero. */
    LLMEM_FIT_SHORTFALL_BYTES = 8,
    LLMEM_FIT_COMPUTE_SLICES = 9, /**< the option's compute slices (the GPU's for the whole GPU) */
    /** The option's usable bytes less the margin, usable - ceil(usable x
     * margin / 1000): what the need must fit (the option's memory holds the
     * job exactly when budget >= need); the margin kept free is usable -
     * budget. @since 0.2.0 */
    LLMEM_FIT_BUDGET_BYTES = 10,
    /** 1 when one more instance of the option can be created next to the
     * running instances (llmem_fit_add_running()): at one of its starts
     * (#LLMEM_MIG_STARTS), on no slot they use, within its maximum count,
     * the GPU's compute slices and the driver branch's pair rules; the whole
     * GPU only when no instance runs. Without running instances, 1 for every
     * option. #LLMEM_FIT_FITS is 0 where this is 0. @since 0.2.0 */
    LLMEM_FIT_PLACEABLE = 11,
    /** Where to create the option: of #LLMEM_FIT_STARTS, the start that leaves
     * the most placements open for later instances (each plain profile at each
     * start where one more could then be created), the lowest of equals: a
     * `1g` at 6 on an empty 8-slot GPU, keeping a `4g` at 0 and a `2g` at 4.
     * In the GPU's slots (#LLMEM_GPU_MIG_SLOTS), NVML's placement start, what
     * `nvidia-smi mig -cgi PROFILE:START` takes. 0 for the whole GPU;
     * UINT64_MAX when the option is not placeable. @since 0.2.0 */
    LLMEM_FIT_START = 12,
    /** Bit mask of every start where the option can be created now (bit s:
     * at slot s), as #LLMEM_MIG_STARTS; 0 when not placeable, 1 for a
     * placeable whole GPU. @since 0.2.0 */
    LLMEM_FIT_STARTS = 13
};

/** Create a fit with the default settings. @since 0.2.0 */
LLMEM_API int llmem_fit_new(llmem_ctx *ctx, llmem_fit **out);
/** Free a fit; NULL is allowed. @since 0.2.0 */
LLMEM_API void llmem_fit_free(llmem_fit *fit);
/**
 * Set a setting (#llmem_fit_key); a new value drops the options of the last
 * run. @return #LLMEM_ERANGE out of bounds. @since 0.2.0
 */
LLMEM_API int llmem_fit_set_int(llmem_fit *fit, int key, int64_t value);
/** Set a setting from text ("50"), as llmem_fit_set_int(). @since 0.2.0 */
LLMEM_API int llmem_fit_set_str(llmem_fit *fit, int key, const char *value);
/** Read a setting. @since 0.2.0 */
LLMEM_API int llmem_fit_get_int(const llmem_fit *fit, int key, int64_t *out);
/**
 * Declare a MIG instance the GPU runs and keeps: profile @p profile
 * (llmem_mig_profile_name(), a variant such as "1g.10gb+me" included) at
 * placement start @p start (in the GPU's slots, as `nvidia-smi mig -lgi`
 * shows it in "Placement Start:Size"). The instances are checked by
 * llmem_fit_run(), against its GPU and #LLMEM_FIT_DRIVER, in the order
 * added, each next to those before it; the first refused fails the run,
 * named "running instance N (NAME@START)" (N from 1) with why:
 * #LLMEM_ERANGE for a profile index the GPU lacks (any, on a GPU without
 * MIG) or a start that is not one of the profile's placements;
 * #LLMEM_EINVAL for a profile the driver branch lacks, slots another
 * instance uses, a profile past its maximum count (a variant counts as its
 * plain profile too), compute slices past the GPU's, or a pair the branch
 * refuses (the A100's `4g` + `3g` before R510). They stay declared until
 * llmem_fit_clear_running(). Adding one drops the options of the last run.
 * @return #LLMEM_ERANGE past 16 instances (no MIG GPU holds more than 7).
 * @since 0.2.0
 */
LLMEM_API int llmem_fit_add_running(llmem_fit *fit, size_t profile, size_t start);
/**
 * Forget the running instances (an empty GPU again); drops the options of
 * the last run when there were any. @since 0.2.0
 */
LLMEM_API int llmem_fit_clear_running(llmem_fit *fit);
/**
 * Describe a fit setting: its name ("margin-permille") and bounds. Any pointer
 * may be NULL. @return #LLMEM_EINVAL for an unknown key. @since 0.2.0
 */
LLMEM_API int llmem_fit_field_info(int key, const char **name, int64_t *min, int64_t *max);
/**
 * Fit @p bytes at @p level (#LLMEM_LEVEL_DEVICE, or #LLMEM_LEVEL_RESERVED to
 * add the GPU's CUDA context) to GPU @p gpu: every plain MIG profile and the
 * whole GPU, ordered by usable bytes (then compute slices), the whole GPU
 * last (a MIG profile's lgip figure may exceed the whole GPU's: docs/mig.md).
 * Allocates nothing.
 * A need beyond 64 bits, or one whose margin takes the requirement there, is
 * no error: no option holds it, as llmem_pack_run() places such a job
 * nowhere (#LLMEM_FIT_SHORTFALL_BYTES is UINT64_MAX).
 * @return #LLMEM_ERANGE for a bad GPU index or zero bytes, #LLMEM_EINVAL for
 * another level; a running instance the GPU cannot hold as declared:
 * llmem_fit_add_running() says which status. On failure the previous result
 * is kept. @since 0.2.0
 */
LLMEM_API int llmem_fit_run(llmem_fit *fit, size_t gpu, uint64_t bytes, int level);
/** Number of options of the last run (0 before any). @since 0.2.0 */
LLMEM_API size_t llmem_fit_count(const llmem_fit *fit);
/**
 * The first option that holds the job (the smallest slice), in @p option;
 * with running instances, the first that can also be created next to them
 * (#LLMEM_FIT_FITS requires #LLMEM_FIT_PLACEABLE).
 * @return #LLMEM_OK, or #LLMEM_ENOTFOUND when none does. @since 0.2.0
 */
LLMEM_API int llmem_fit_best(const llmem_fit *fit, size_t *option);
/** Read a value of option @p option (#llmem_fit_result). @since 0.2.0 */
LLMEM_API int llmem_fit_get_u64(const llmem_fit *fit, size_t option, int key, uint64_t *out);
/** Name of option @p option: the profile's name as the #LLMEM_FIT_DRIVER
 * branch names it, or "whole" for the whole GPU. @since 0.2.0 */
LLMEM_API const char *llmem_fit_name(const llmem_fit *fit, size_t option);
/** @} */

/**
 * @defgroup pack Packing jobs onto MIG slices
 * Many jobs (each a byte count and optionally a minimum of compute slices)
 * onto a fleet of GPUs of one or more types, using only valid MIG layouts
 * (placements by memory slice, per-profile maximum counts), or a whole GPU
 * with MIG disabled: as many jobs as the fleet holds (every one that fits,
 * unless a limited fleet runs out of GPUs), on as few GPUs as possible. Every
 * result comes with a proven lower bound on the GPUs and a proven upper bound
 * on the jobs; docs/mig.md describes the algorithm.
 * Deterministic: the same input gives the same layout. The result feeds NVIDIA
 * mig-parted (llmem_pack_mig_parted()), `nvidia-smi mig -cgi`
 * (llmem_pack_nvidia_smi()) and the Kubernetes resource of each job
 * (llmem_pack_job_resource()).
 * @{
 */
/** Opaque packing problem and its result. @since 0.2.0 */
typedef struct llmem_pack llmem_pack;

/** Keys of pack settings. Values are never reused. @since 0.2.0 */
enum llmem_pack_key {
    /** Safety margin kept free of a slice, in thousandths, as
     * #LLMEM_FIT_MARGIN_PERMILLE (default 50 = 5 %). */
    LLMEM_PACK_MARGIN_PERMILLE = 1,
    /** GPUs per node in the mig-parted output, 0 to 1024 (as
     * #LLMEM_PLAN_GPUS_PER_NODE): one config per node, devices numbered within
     * the node; 0 (default): no node boundary, one config for all GPUs. */
    LLMEM_PACK_GPUS_PER_NODE = 2,
    /** Largest exact search: the number of states (product over job classes of
     * count + 1) up to which the optimum is searched exactly (default 200000;
     * 0 = never). */
    LLMEM_PACK_EXACT_LIMIT = 3,
    /** The NVIDIA driver's major branch on the fleet (0-999), as
     * #LLMEM_FIT_DRIVER; default 0, the newest. Every step uses only the
     * profiles that branch has and only the layouts it accepts (no `4g` with
     * a `3g` on an A100 before 510), and the outputs (mig-parted, nvidia-smi,
     * llmem_pack_job_resource()) use its names. @since 0.2.0 */
    LLMEM_PACK_DRIVER = 4
};

/** Keys of the result for llmem_pack_get_u64(). @since 0.2.0 */
enum llmem_pack_result {
    LLMEM_PACK_GPUS_USED = 1,     /**< GPUs the layout uses */
    /** Proven lower bound on the GPUs any valid layout of the fleet, its
     * counts kept, needs for the placed jobs: the largest of the four bounds
     * below (each takes a limited type's GPUs first, as many as it has). */
    LLMEM_PACK_LOWER_BOUND = 2,
    /** memory slices: the jobs' smallest slots against the GPUs' slots, those
     * of limited types first (docs/mig.md) */
    LLMEM_PACK_BOUND_MEMORY = 3,
    LLMEM_PACK_BOUND_COMPUTE = 4, /**< compute slices, likewise */
    /** Profiles that cannot share a GPU: for each set of jobs that only some
     * profiles hold, the jobs over the most such profiles one GPU can have,
     * the GPUs that hold the most first, within the counts. */
    LLMEM_PACK_BOUND_COUNT = 5,
    /** The configuration linear program over every way one GPU can be filled,
     * each limited type's GPUs capped at its count (its dual, rounded up); 0
     * when it was not solved (too many classes). */
    LLMEM_PACK_BOUND_LP = 6,
    /** 1 when the layout is proven optimal: the most jobs any layout of the
     * fleet places (#LLMEM_PACK_JOBS_BOUND), on the fewest GPUs any layout
     * placing that many needs (the bound met, or an exact search ran); else 0,
     * a heuristic result, within the two bounds. */
    LLMEM_PACK_OPTIMAL = 7,
    LLMEM_PACK_JOBS_PLACED = 8,   /**< jobs with a slice */
    LLMEM_PACK_JOBS_UNPLACED = 9, /**< jobs that fit nowhere or found no room */
    /** Proven upper bound on the jobs any valid layout of the fleet places:
     * the jobs that fit somewhere, or less when the fleet's counts leave some
     * without room (docs/mig.md: knapsacks of slices, the jobs LP, or the
     * exact search). @since 0.2.0 */
    LLMEM_PACK_JOBS_BOUND = 10
};

/** Where a job ended up, for #LLMEM_PACK_JOB_STATUS. @since 0.2.0 */
enum llmem_pack_status {
    LLMEM_PACK_PLACED = 1,       /**< on a GPU, in a MIG instance or the whole GPU */
    LLMEM_PACK_FITS_NOWHERE = 2, /**< no option of any GPU type holds it */
    LLMEM_PACK_NO_ROOM = 3       /**< it fits, but the fleet's GPUs are all used */
};

/** Keys of one job's result for llmem_pack_job_u64(). @since 0.2.0 */
enum llmem_pack_job_key {
    LLMEM_PACK_JOB_STATUS = 1,     /**< #llmem_pack_status */
    LLMEM_PACK_JOB_GPU = 2,        /**< index of its GPU in the layout (llmem_pack_gpu_u64()) */
    /** Its MIG profile (index on the GPU's type), or #LLMEM_GPU_MIG_PROFILES of
     * the type for a whole GPU. */
    LLMEM_PACK_JOB_PROFILE = 3,
    LLMEM_PACK_JOB_START = 4,      /**< first placement slot of its instance (0 for a whole GPU) */
    /** Device-level need on its GPU type (context included); for a job that
     * fits nowhere, on the type of #LLMEM_PACK_JOB_LARGEST_GPU, UINT64_MAX when
     * reserved-level bytes plus the context exceed 64 bits (saturated); for a
     * job without room, its bytes as given (no type chosen). */
    LLMEM_PACK_JOB_NEED_BYTES = 5,
    LLMEM_PACK_JOB_USABLE_BYTES = 6, /**< usable bytes of its slice */
    /** Its slice's budget less its need: usable - ceil(usable x margin /
     * 1000) - need, the bytes left below the margin's line, as
     * #LLMEM_FIT_HEADROOM_BYTES (a placed job's slice holds its need, so
     * never negative). */
    LLMEM_PACK_JOB_HEADROOM_BYTES = 7,
    /** For a job that fits nowhere: the usable bytes it would need with the
     * margin (as #LLMEM_FIT_REQUIRED_BYTES) minus those of the largest option
     * (see #LLMEM_PACK_JOB_LARGEST_GPU); UINT64_MAX when the need or that
     * requirement exceeds 64 bits. */
    LLMEM_PACK_JOB_SHORTFALL_BYTES = 8,
    /** For a job that fits nowhere: the catalog index of the GPU type whose
     * largest option (MIG profile or whole GPU) comes closest. */
    LLMEM_PACK_JOB_LARGEST_GPU = 9,
    /** For a job that fits nowhere: that option, as #LLMEM_PACK_JOB_PROFILE. */
    LLMEM_PACK_JOB_LARGEST_PROFILE = 10
};

/** Keys of one GPU of the layout for llmem_pack_gpu_u64(). @since 0.2.0 */
enum llmem_pack_gpu_key {
    LLMEM_PACK_GPU_TYPE = 1,      /**< catalog index of its type (llmem_gpu_name()) */
    LLMEM_PACK_GPU_MIG = 2,       /**< 1 with MIG enabled, 0 for a whole GPU */
    LLMEM_PACK_GPU_JOBS = 3,      /**< jobs on it (one per instance) */
    /** Its node in the mig-parted output (#LLMEM_PACK_GPUS_PER_NODE), else 0. */
    LLMEM_PACK_GPU_NODE = 4,
    LLMEM_PACK_GPU_DEVICE = 5     /**< its device index within the node */
};

/** Create an empty packing problem with the default settings. @since 0.2.0 */
LLMEM_API int llmem_pack_new(llmem_ctx *ctx, llmem_pack **out);
/** Free a pack; NULL is allowed. @since 0.2.0 */
LLMEM_API void llmem_pack_free(llmem_pack *pack);
/**
 * Set a setting (#llmem_pack_key); a new value drops the last result (see
 * llmem_pack_run()). @return #LLMEM_ERANGE out of bounds. @since 0.2.0
 */
LLMEM_API int llmem_pack_set_int(llmem_pack *pack, int key, int64_t value);
/** Set a setting from text, as llmem_pack_set_int(). @since 0.2.0 */
LLMEM_API int llmem_pack_set_str(llmem_pack *pack, int key, const char *value);
/** Read a setting. @since 0.2.0 */
LLMEM_API int llmem_pack_get_int(const llmem_pack *pack, int key, int64_t *out);
/** Describe a pack setting, as llmem_fit_field_info(). @since 0.2.0 */
LLMEM_API int llmem_pack_field_info(int key, const char **name, int64_t *min, int64_t *max);
/**
 * Add @p count GPUs of type @p gpu (a catalog index) to the fleet; @p count 0
 * means as many as needed. Types are tried in the order added; adding a type
 * again adds to its count. At most 8 types. Drops the last result (see
 * llmem_pack_run()). @since 0.2.0
 */
LLMEM_API int llmem_pack_add_gpu(llmem_pack *pack, size_t gpu, uint64_t count);
/**
 * Add a job: its @p id (copied; any text), its memory @p bytes at @p level
 * (#LLMEM_LEVEL_DEVICE, or #LLMEM_LEVEL_RESERVED to add each GPU type's CUDA
 * context) and the compute slices it needs at least
 * (@p min_compute, 0 for any). Any @p bytes from 1 to UINT64_MAX; a need
 * beyond 64 bits fits nowhere. Drops the last result (see llmem_pack_run()).
 * @return #LLMEM_ERANGE for zero bytes or a
 * negative or too large @p min_compute, #LLMEM_EINVAL for a NULL id or a bad
 * level; the message names the job (a refused job drops nothing). @since 0.2.0
 */
LLMEM_API int llmem_pack_add_job(llmem_pack *pack, const char *id, uint64_t bytes, int level,
                                 int64_t min_compute);
/** Remove every job and GPU type, keeping the settings. @since 0.2.0 */
LLMEM_API void llmem_pack_clear(llmem_pack *pack);
/**
 * Pack the jobs onto the fleet: the most jobs it holds, then the fewest GPUs
 * (then the larger jobs). The result lasts until the problem changes: a job
 * or a GPU added, a setting changed to a new value, or llmem_pack_clear()
 * drops it, and the getters and outputs then answer as before any run
 * (#LLMEM_EINCONSISTENT, a NULL resource). @return #LLMEM_OK even when some
 * jobs fit nowhere or find no room (see #LLMEM_PACK_JOBS_UNPLACED);
 * #LLMEM_EINCONSISTENT when no GPU type was added; #LLMEM_ENOMEM.
 * @since 0.2.0
 */
LLMEM_API int llmem_pack_run(llmem_pack *pack);
/** Read a value of the last result (#llmem_pack_result). @since 0.2.0 */
LLMEM_API int llmem_pack_get_u64(const llmem_pack *pack, int key, uint64_t *out);
/** Number of jobs added. @since 0.2.0 */
LLMEM_API size_t llmem_pack_job_count(const llmem_pack *pack);
/** Id of job @p job (in the order added), or NULL. @since 0.2.0 */
LLMEM_API const char *llmem_pack_job_id(const llmem_pack *pack, size_t job);
/**
 * Read a value of job @p job's result (#llmem_pack_job_key). @return
 * #LLMEM_ENOTFOUND, leaving no message in the context, for a key the job's
 * status has no value of (#LLMEM_PACK_JOB_GPU, _PROFILE, _START,
 * _USABLE_BYTES and _HEADROOM_BYTES of a job not placed;
 * #LLMEM_PACK_JOB_LARGEST_GPU and _LARGEST_PROFILE of one that is not
 * #LLMEM_PACK_FITS_NOWHERE); #LLMEM_ERANGE past the last job;
 * #LLMEM_EINCONSISTENT before a run; #LLMEM_EINVAL for an unknown key.
 * @since 0.2.0
 */
LLMEM_API int llmem_pack_job_u64(const llmem_pack *pack, size_t job, int key, uint64_t *out);
/**
 * The Kubernetes extended resource job @p job requests: "nvidia.com/mig-3g.40gb"
 * (GPU operator, mixed strategy) or "nvidia.com/gpu" for a whole GPU; NULL for
 * a job not placed. @since 0.2.0
 */
LLMEM_API const char *llmem_pack_job_resource(const llmem_pack *pack, size_t job);
/** Read a value of GPU @p gpu of the layout (#llmem_pack_gpu_key). @since 0.2.0 */
LLMEM_API int llmem_pack_gpu_u64(const llmem_pack *pack, size_t gpu, int key, uint64_t *out);
/**
 * The layout as an NVIDIA mig-parted configuration (YAML: `version: v1`,
 * `mig-configs`, per GPU or group of equal GPUs `devices`, `mig-enabled` and
 * `mig-devices` counts). The config is named @p name ("llmem" when NULL), or
 * "<name>-node-<k>" per node with #LLMEM_PACK_GPUS_PER_NODE, written as a
 * quoted YAML key. The GPU operator selects a config by the node label
 * nvidia.com/mig.config, so each config name must be a Kubernetes label
 * value: at most 63 characters, "-node-<k>" included, of letters, digits,
 * '.', '_' and '-', beginning and ending with a letter or digit; else
 * #LLMEM_EINVAL, the message naming the value. No `device-filter`: an entry
 * applies to the GPUs at its indices whatever their type. Writes at most
 * @p cap bytes with a terminating NUL into @p buf; @p len_out (may be NULL)
 * gets the length without the NUL. A NULL @p buf asks for the length.
 * @return #LLMEM_EBUFFER when @p cap is too small (nothing useful written).
 * @since 0.2.0
 */
LLMEM_API int llmem_pack_mig_parted(const llmem_pack *pack, const char *name, char *buf,
                                    size_t cap, size_t *len_out);
/**
 * The layout as `nvidia-smi` commands: per GPU with MIG, its compute and GPU
 * instances destroyed first (`nvidia-smi mig -i 0 -dci || true`, then `-dgi`:
 * a destroy that finds none exits nonzero), its MIG mode set, and its
 * instances created in one line, largest profiles first with explicit
 * placements (`nvidia-smi mig -i 0 -cgi 3g.40gb:4,2g.20gb:0 -C`), so creation
 * never fails on fragmentation. Buffer as llmem_pack_mig_parted().
 * @since 0.2.0
 */
LLMEM_API int llmem_pack_nvidia_smi(const llmem_pack *pack, char *buf, size_t cap,
                                    size_t *len_out);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* LLMEM_H */
