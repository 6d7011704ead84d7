/* SPDX-License-Identifier: MIT */
/* The model's fields for the field engine (core/fields.h): one row a key, in
 * key order. */
#include "model/model.h"

#include "model/families.h"

/* Upper bounds are sanity limits far above any published model; the counts
 * built from them are still overflow-checked. */
#define SIZE_MAX_ELEMS 4294967296.0 /* 2^32 */
#define COUNT_MAX 1048576.0         /* 2^20 */

#define INT(key, name, min, max) { LLMEM_MODEL_##key, name, FIELD_INT, min, max, 0, 0, NULL }
#define FLAG(key, name) INT(key, name, 0, 1)
#define NAMED(key, name, max, values) \
    { LLMEM_MODEL_##key, name, FIELD_ENUM, 1, max, 0, 0, values }
/* p = 1 zeroes everything and divides by zero: the bound is open. */
#define PROBABILITY(key, name) { LLMEM_MODEL_##key, name, FIELD_REAL, 0, 1, 1, 0, NULL }

static const field_desc rows[] = {
    NAMED(FAMILY, "family", FAMILY_LAST, &llmem_names_family),
    INT(HIDDEN, "hidden", 1, SIZE_MAX_ELEMS),
    INT(LAYERS, "layers", 1, COUNT_MAX),
    INT(HEADS, "heads", 1, COUNT_MAX),
    INT(KV_HEADS, "kv-heads", 0, COUNT_MAX),
    INT(HEAD_DIM, "head-dim", 0, COUNT_MAX),
    INT(INTERMEDIATE, "intermediate", 1, SIZE_MAX_ELEMS),
    INT(VOCAB, "vocab", 1, SIZE_MAX_ELEMS),
    INT(MAX_POSITIONS, "max-positions", 1, SIZE_MAX_ELEMS),
    NAMED(NORM, "norm", 2, &llmem_names_norm),
    NAMED(MLP, "mlp", 2, &llmem_names_mlp),
    NAMED(POSITIONS, "positions", 3, &llmem_names_positions),
    FLAG(QKV_BIAS, "qkv-bias"),
    FLAG(OUT_BIAS, "out-bias"),
    FLAG(MLP_BIAS, "mlp-bias"),
    FLAG(NORM_BIAS, "norm-bias"),
    FLAG(TIE_EMBEDDINGS, "tie-embeddings"),
    INT(NORMS_PER_LAYER, "norms-per-layer", 0, 8),
    FLAG(FINAL_NORM, "final-norm"),
    FLAG(EMBED_NORM, "embed-norm"),
    INT(EMBED_DIM, "embed-dim", 0, SIZE_MAX_ELEMS),
    INT(POSITION_OFFSET, "position-offset", 0, COUNT_MAX),
    INT(EXPERTS, "experts", 0, 65536),
    INT(EXPERTS_PER_TOKEN, "experts-per-token", 0, 65536),
    INT(EXPERT_INTERMEDIATE, "expert-intermediate", 0, SIZE_MAX_ELEMS),
    INT(SHARED_EXPERT_INTERMEDIATE, "shared-expert-intermediate", 0, SIZE_MAX_ELEMS),
    FLAG(HEAD_BIAS, "head-bias"),
    FLAG(QK_NORM, "qk-norm"),
    INT(ROTARY_DIM, "rotary-dim", 0, COUNT_MAX),
    INT(V_HEAD_DIM, "v-head-dim", 0, COUNT_MAX),
    INT(Q_LORA_RANK, "q-lora-rank", 0, SIZE_MAX_ELEMS),
    INT(KV_LORA_RANK, "kv-lora-rank", 0, SIZE_MAX_ELEMS),
    INT(DENSE_LAYERS, "dense-layers", 0, COUNT_MAX),
    FLAG(SHARED_EXPERT_GATE, "shared-expert-gate"),
    FLAG(ROUTER_BIAS, "router-bias"),
    FLAG(PARALLEL_BLOCK, "parallel-block"),
    /* float64 is the widest torch_dtype a checkpoint declares. */
    INT(DTYPE_BYTES, "dtype-bytes", 0, 8),
    NAMED(ACTIVATION, "activation", LLMEM_ACTIVATION_RELU, &llmem_names_activation),
    FLAG(POST_NORM, "post-norm"),
    PROBABILITY(ATTENTION_DROPOUT, "attention-dropout"),
    PROBABILITY(HIDDEN_DROPOUT, "hidden-dropout"),
    PROBABILITY(EMBEDDING_DROPOUT, "embedding-dropout"),
    INT(SLIDING_WINDOW, "sliding-window", 0, SIZE_MAX_ELEMS),
    FLAG(BNB_4BIT, "bnb-4bit"),
};

/* The handle's array has one slot a key: a new key needs its row here. */
typedef char model_fields_cover_every_key[sizeof rows / sizeof rows[0] + 1 == MODEL_KEY_END ? 1 : -1];

const field_table llmem_model_fields = FIELD_TABLE(LLMEM_OBJECT_MODEL, "model", rows);
