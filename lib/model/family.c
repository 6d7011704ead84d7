/* SPDX-License-Identifier: MIT */
/* Defaults each family brings: the layout of its Hugging Face implementation
 * (modeling_<family>.py in transformers). Sizes stay unset. */
#include "model/model.h"

#include <stddef.h>

typedef struct family_defaults {
    int family;
    int norm, mlp, positions;
    int qkv_bias, out_bias, mlp_bias, norm_bias, head_bias, tie;
    int norms_per_layer, final_norm, embed_norm, position_offset, parallel_block;
} family_defaults;

#define LN LLMEM_NORM_LAYERNORM
#define RMS LLMEM_NORM_RMSNORM
#define PLAIN LLMEM_MLP_PLAIN
#define GATED LLMEM_MLP_GATED
#define LEARNED LLMEM_POSITIONS_LEARNED
#define ROTARY LLMEM_POSITIONS_ROTARY
#define ALIBI LLMEM_POSITIONS_ALIBI

static const family_defaults table[] = {
    /* family                     norm mlp    positions qkvb outb mlpb nrmb hdb tie npl fin emb off par */
    /* GPT-2: Conv1D layers with biases, LayerNorm, learned positions, tied head. */
    { LLMEM_FAMILY_GPT2,          LN,  PLAIN, LEARNED,  1,   1,   1,   1,   0,  1,  2,  1,  0,  0,  0 },
    /* Llama: RMSNorm, SwiGLU, rotary, no biases, untied head. */
    { LLMEM_FAMILY_LLAMA,         RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  0,  2,  1,  0,  0,  0 },
    /* OPT: OPTLearnedPositionalEmbedding keeps 2 extra rows (offset = 2). */
    { LLMEM_FAMILY_OPT,           LN,  PLAIN, LEARNED,  1,   1,   1,   1,   0,  1,  2,  1,  0,  2,  0 },
    /* BLOOM: ALiBi, word_embeddings_layernorm, fused qkv with bias. */
    { LLMEM_FAMILY_BLOOM,         LN,  PLAIN, ALIBI,    1,   1,   1,   1,   0,  1,  2,  1,  1,  0,  0 },
    /* Gemma-2: pre and post norms around attention and MLP (4), GeGLU, tied. */
    { LLMEM_FAMILY_GEMMA2,        RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  1,  4,  1,  0,  0,  0 },
    /* Phi-3: fused qkv_proj and gate_up_proj, no biases, untied. */
    { LLMEM_FAMILY_PHI3,          RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  0,  2,  1,  0,  0,  0 },
    /* Gemma: GemmaRMSNorm, GeGLU (gelu_pytorch_tanh), no biases, tied (GemmaConfig). */
    { LLMEM_FAMILY_GEMMA,         RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  1,  2,  1,  0,  0,  0 },
    /* GPT-NeoX: query_key_value and dense with attention_bias (default true), MLP with
     * biases, two LayerNorms even with use_parallel_residual, untied embed_out. */
    { LLMEM_FAMILY_GPT_NEOX,      LN,  PLAIN, ROTARY,   1,   1,   1,   1,   0,  0,  2,  1,  0,  0,  1 },
    /* Falcon: bias false, parallel_attn true, one input_layernorm, tied lm_head. */
    { LLMEM_FAMILY_FALCON,        LN,  PLAIN, ROTARY,   0,   0,   0,   1,   0,  1,  1,  1,  0,  0,  1 },
    /* Phi: one input_layernorm feeding attention and MLP, biases everywhere,
     * lm_head with bias, untied. */
    { LLMEM_FAMILY_PHI,           LN,  PLAIN, ROTARY,   1,   1,   1,   1,   1,  0,  1,  1,  0,  0,  1 },
    /* StarCoder2: LayerNorm, c_fc/c_proj GELU MLP, use_bias true, tied. */
    { LLMEM_FAMILY_STARCODER2,    LN,  PLAIN, ROTARY,   1,   1,   1,   1,   0,  1,  2,  1,  0,  0,  0 },
    /* DeepSeek-V2/V3: RMSNorm, SwiGLU experts, attention_bias false, untied. */
    { LLMEM_FAMILY_DEEPSEEK,      RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  0,  2,  1,  0,  0,  0 },
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
        f[LLMEM_MODEL_PARALLEL_BLOCK] = d->parallel_block;
        return;
    }
}
