/* SPDX-License-Identifier: MIT */
/* Defaults each family brings: the layout of its Hugging Face implementation
 * (modeling_<family>.py in transformers). Sizes stay unset. */
#include "model/model.h"

#include <stddef.h>

typedef struct family_defaults {
    int family;
    int norm, mlp, positions;
    int qkv_bias, out_bias, mlp_bias, norm_bias, head_bias, tie;
    int norms_per_layer, final_norm, embed_norm, position_offset;
} family_defaults;

static const family_defaults table[] = {
    /* GPT-2: Conv1D layers with biases, LayerNorm, learned positions, tied head. */
    { LLMEM_FAMILY_GPT2, LLMEM_NORM_LAYERNORM, LLMEM_MLP_PLAIN, LLMEM_POSITIONS_LEARNED,
      1, 1, 1, 1, 0, 1, 2, 1, 0, 0 },
    /* Llama: RMSNorm, SwiGLU, rotary, no biases, untied head. */
    { LLMEM_FAMILY_LLAMA, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY,
      0, 0, 0, 0, 0, 0, 2, 1, 0, 0 },
    /* OPT: OPTLearnedPositionalEmbedding keeps 2 extra rows (offset = 2). */
    { LLMEM_FAMILY_OPT, LLMEM_NORM_LAYERNORM, LLMEM_MLP_PLAIN, LLMEM_POSITIONS_LEARNED,
      1, 1, 1, 1, 0, 1, 2, 1, 0, 2 },
    /* BLOOM: ALiBi, word_embeddings_layernorm, fused qkv with bias. */
    { LLMEM_FAMILY_BLOOM, LLMEM_NORM_LAYERNORM, LLMEM_MLP_PLAIN, LLMEM_POSITIONS_ALIBI,
      1, 1, 1, 1, 0, 1, 2, 1, 1, 0 },
    /* Gemma-2: pre and post norms around attention and MLP (4), GeGLU, tied. */
    { LLMEM_FAMILY_GEMMA2, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY,
      0, 0, 0, 0, 0, 1, 4, 1, 0, 0 },
    /* Phi-3: fused qkv_proj and gate_up_proj, no biases, untied. */
    { LLMEM_FAMILY_PHI3, LLMEM_NORM_RMSNORM, LLMEM_MLP_GATED, LLMEM_POSITIONS_ROTARY,
      0, 0, 0, 0, 0, 0, 2, 1, 0, 0 },
};

void model_apply_family_defaults(int64_t *f, int family)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const family_defaults *d = &table[i];
        if (d->family != family)
            continue;
        f[LLMEM_MODEL_FAMILY] = family;
        f[LLMEM_MODEL_NORM] = d->norm;
        f[LLMEM_MODEL_MLP] = d->mlp;
        f[LLMEM_MODEL_POSITIONS] = d->positions;
        f[LLMEM_MODEL_QKV_BIAS] = d->qkv_bias;
        f[LLMEM_MODEL_OUT_BIAS] = d->out_bias;
        f[LLMEM_MODEL_MLP_BIAS] = d->mlp_bias;
        f[LLMEM_MODEL_NORM_BIAS] = d->norm_bias;
        f[LLMEM_MODEL_HEAD_BIAS] = d->head_bias;
        f[LLMEM_MODEL_TIE_EMBEDDINGS] = d->tie;
        f[LLMEM_MODEL_NORMS_PER_LAYER] = d->norms_per_layer;
        f[LLMEM_MODEL_FINAL_NORM] = d->final_norm;
        f[LLMEM_MODEL_EMBED_NORM] = d->embed_norm;
        f[LLMEM_MODEL_POSITION_OFFSET] = d->position_offset;
        return;
    }
}
