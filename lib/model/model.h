/* SPDX-License-Identifier: MIT */
/* Model description internals: raw fields, and the resolved shape the
 * estimators read. */
#ifndef LLMEM_MODEL_MODEL_H
#define LLMEM_MODEL_MODEL_H

#include "core/fields.h"
#include "llmem.h"
#include "model/dropout.h"
#include "model/families.h"

#include <stdint.h>
#include <string.h>

/* One past the largest llmem_model_key (model_fields.c checks its table
 * against it at compile time). */
#define MODEL_KEY_END (LLMEM_MODEL_BNB_4BIT + 1)

/* The model key of a dropout site's probability (the keys follow the sites' order). */
#define MODEL_DROPOUT_KEY(site) (LLMEM_MODEL_ATTENTION_DROPOUT + (site))

struct llmem_model {
    llmem_ctx *ctx;
    /* A real field keeps its double's bits here too (model_real): whatever
     * is keyed on this array (an estimate's resolved model) sees it change. */
    int64_t field[MODEL_KEY_END];
};

static inline double llmem_model_real(const int64_t *field, int key)
{
    double v;
    memcpy(&v, &field[key], sizeof v);
    return v;
}

static inline void llmem_model_put_real(int64_t *field, int key, double v)
{
    memcpy(&field[key], &v, sizeof v);
}

extern const field_table llmem_model_fields;

/* What a layer is made of, resolved from the fields (defaults applied).
 * Sizes are element counts. */
typedef struct model_shape {
    int family;
    int path;         /* code_path of the family (model/families.h) */
    unsigned traits;  /* family_trait bits */
    uint64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
    uint64_t max_positions, position_offset, embed_dim;
    uint64_t experts, experts_per_token, expert_intermediate, shared_intermediate;
    int norm, mlp, positions;
    int qkv_bias, out_bias, mlp_bias, norm_bias, head_bias, tie;
    uint64_t norms_per_layer;
    int final_norm, embed_norm;
    int qk_norm, parallel_block, shared_gate, router_bias;
    int activation;         /* llmem_activation of the MLP */
    int post_norm;          /* norms after the residual additions (OPT-350m) */
    uint64_t sliding_window; /* attention span of the sliding layers in tokens; 0 = none */
    uint64_t rotary_dim;    /* rotary dimensions of a q/k head (<= head_dim) */
    uint64_t v_head_dim;    /* per-head value size (head_dim unless MLA) */
    uint64_t q_lora_rank;   /* MLA query compression; 0 = full q projection */
    uint64_t kv_lora_rank;  /* MLA key/value compression; 0 = no MLA */
    uint64_t dense_layers;  /* MoE models: layers with a dense MLP instead of experts */
    int bnb_4bit;           /* linears stored in bitsandbytes 4-bit (a pre-quantized checkpoint) */
    double dropout[DROPOUT_SITES]; /* the config's probability at each kind of site */
} model_shape;

/* Whether SDPA gets transformers 5.x's sliding-window mask at this seq: its
 * sdpa_mask builds one once seq reaches the window (masking_utils.py,
 * _ignore_causal_mask_sdpa: kv_length >= local_attention_size), even
 * without padding. */
static inline int llmem_window_reached(uint64_t window, int attention, uint64_t seq)
{
    return attention == LLMEM_ATTENTION_SDPA && window > 0 && seq >= window;
}

static inline int llmem_model_window_reached(const model_shape *m, int attention, uint64_t seq)
{
    return llmem_window_reached(m->sliding_window, attention, seq);
}

/* Whether only alternate layers take that mask (Gemma-2: layer_types, the
 * window on even layers, full attention on odd ones). */
static inline int llmem_model_window_alternates(const model_shape *m, int attention, uint64_t seq)
{
    return (m->traits & TRAIT_ALTERNATE_WINDOW) && llmem_model_window_reached(m, attention, seq);
}

/* Parameter counts by part; everything the estimators need to split weights
 * into trainable and frozen sets. */
typedef struct model_params {
    uint64_t embedding;      /* token embedding (and projections when embed_dim != hidden) */
    uint64_t positions;      /* learned position table */
    uint64_t embed_norm;
    /* One layer: q, k, v, o weights and biases, qk-norms; with MLA the
     * compressions and their norms. */
    uint64_t layer_attention;
    uint64_t layer_mlp;      /* one layer: MLP, or all experts + router + shared expert */
    uint64_t layer_mlp_active; /* one layer: what one token passes through */
    uint64_t layer_norms;
    uint64_t layer;          /* sum of the three above (a MoE layer in a MoE model) */
    uint64_t layer_mlp_dense;/* MoE models: the dense MLP of the dense layers */
    uint64_t layer_dense;    /* MoE models: one dense layer (attention + dense MLP + norms) */
    uint64_t final_norm;
    uint64_t head;           /* untied output head (0 when tied) */
    uint64_t total;
    uint64_t active;         /* total less the routed experts a token does not use */
} model_params;

/* Resolve and check the fields; fills shape and params. Sets ctx error. */
int llmem_model_resolve(llmem_model *m, model_shape *shape, model_params *params);

/* The family's layout defaults into field[] (the sizes stay). */
void llmem_model_family_defaults(int64_t *field, int family);

/* The linear layers of one decoder layer, as the family's code has them. */
#define MODEL_MAX_LINEARS 8
/* Tensor-parallel split of a weight, as Megatron-LM shards it. */
enum split_axis {
    SPLIT_NONE = 1, /* replicated on every tensor-parallel rank */
    SPLIT_COLUMN,   /* output features split (q, k, v, gate, up: ColumnParallelLinear) */
    SPLIT_ROW,      /* input features split (o, down: RowParallelLinear) */
    SPLIT_VOCAB,    /* vocabulary rows split (VocabParallelEmbedding, the output layer) */
    SPLIT_EXPERT,   /* whole experts split over expert-parallel ranks */
    SPLIT_EXPERT_STACKED /* the same, the experts stacked as a 3-D parameter's rows
                            (transformers 5.x): its rows split over them */
};

typedef struct model_linear {
    uint64_t in, out;
    unsigned lora_target; /* llmem_lora_target bits that select it */
    int bias;
    int axis;             /* split_axis of its weight */
} model_linear;

/* The llmem_lora_target roles of the attention's linears. */
#define LORA_ATTENTION_ROLES \
    (LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V | LLMEM_LORA_O | LLMEM_LORA_Q_A | LLMEM_LORA_KV_A)

/* Fills lin (MODEL_MAX_LINEARS entries) and returns how many there are. */
int llmem_model_layer_linears(const model_shape *s, model_linear *lin);

#endif
