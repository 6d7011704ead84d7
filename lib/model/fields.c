/* SPDX-License-Identifier: MIT */
#include "model/fields.h"

#include "llmem.h"

#include <stddef.h>

/* Upper bounds are sanity limits far above any published model; the counts
 * built from them are still overflow-checked. */
#define SIZE_MAX_ELEMS (INT64_C(1) << 32)

static const model_field fields[] = {
    { LLMEM_MODEL_FAMILY, "family", 1, LLMEM_FAMILY_DEEPSEEK, &names_family },
    { LLMEM_MODEL_HIDDEN, "hidden", 1, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_LAYERS, "layers", 1, 1 << 20, NULL },
    { LLMEM_MODEL_HEADS, "heads", 1, 1 << 20, NULL },
    { LLMEM_MODEL_KV_HEADS, "kv-heads", 0, 1 << 20, NULL },
    { LLMEM_MODEL_HEAD_DIM, "head-dim", 0, 1 << 20, NULL },
    { LLMEM_MODEL_INTERMEDIATE, "intermediate", 1, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_VOCAB, "vocab", 1, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_MAX_POSITIONS, "max-positions", 1, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_NORM, "norm", 1, 2, &names_norm },
    { LLMEM_MODEL_MLP, "mlp", 1, 2, &names_mlp },
    { LLMEM_MODEL_POSITIONS, "positions", 1, 3, &names_positions },
    { LLMEM_MODEL_QKV_BIAS, "qkv-bias", 0, 1, NULL },
    { LLMEM_MODEL_OUT_BIAS, "out-bias", 0, 1, NULL },
    { LLMEM_MODEL_MLP_BIAS, "mlp-bias", 0, 1, NULL },
    { LLMEM_MODEL_NORM_BIAS, "norm-bias", 0, 1, NULL },
    { LLMEM_MODEL_TIE_EMBEDDINGS, "tie-embeddings", 0, 1, NULL },
    { LLMEM_MODEL_NORMS_PER_LAYER, "norms-per-layer", 0, 8, NULL },
    { LLMEM_MODEL_FINAL_NORM, "final-norm", 0, 1, NULL },
    { LLMEM_MODEL_EMBED_NORM, "embed-norm", 0, 1, NULL },
    { LLMEM_MODEL_EMBED_DIM, "embed-dim", 0, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_POSITION_OFFSET, "position-offset", 0, 1 << 20, NULL },
    { LLMEM_MODEL_EXPERTS, "experts", 0, 1 << 16, NULL },
    { LLMEM_MODEL_EXPERTS_PER_TOKEN, "experts-per-token", 0, 1 << 16, NULL },
    { LLMEM_MODEL_EXPERT_INTERMEDIATE, "expert-intermediate", 0, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, "shared-expert-intermediate", 0, SIZE_MAX_ELEMS,
      NULL },
    { LLMEM_MODEL_HEAD_BIAS, "head-bias", 0, 1, NULL },
    { LLMEM_MODEL_QK_NORM, "qk-norm", 0, 1, NULL },
    { LLMEM_MODEL_ROTARY_DIM, "rotary-dim", 0, 1 << 20, NULL },
    { LLMEM_MODEL_V_HEAD_DIM, "v-head-dim", 0, 1 << 20, NULL },
    { LLMEM_MODEL_Q_LORA_RANK, "q-lora-rank", 0, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_KV_LORA_RANK, "kv-lora-rank", 0, SIZE_MAX_ELEMS, NULL },
    { LLMEM_MODEL_DENSE_LAYERS, "dense-layers", 0, 1 << 20, NULL },
    { LLMEM_MODEL_SHARED_EXPERT_GATE, "shared-expert-gate", 0, 1, NULL },
    { LLMEM_MODEL_ROUTER_BIAS, "router-bias", 0, 1, NULL },
    { LLMEM_MODEL_PARALLEL_BLOCK, "parallel-block", 0, 1, NULL },
    /* float64 is the widest torch_dtype a checkpoint declares. */
    { LLMEM_MODEL_DTYPE_BYTES, "dtype-bytes", 0, 8, NULL },
};

const model_field *model_field_find(int key)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].key == key)
            return &fields[i];
    return NULL;
}
