/* SPDX-License-Identifier: MIT */
/* The families (families.h): defaults as the Hugging Face transformers
 * modeling_<type>.py and configuration_<type>.py build each model (v4.48;
 * the families added later follow v4.50, DeepSeek v4.54: docs/memory-model.md). */
#include "model/families.h"

#include "llmem.h"

#define LN LLMEM_NORM_LAYERNORM
#define RMS LLMEM_NORM_RMSNORM
#define PLAIN LLMEM_MLP_PLAIN
#define GATED LLMEM_MLP_GATED
#define LEARNED LLMEM_POSITIONS_LEARNED
#define ROTARY LLMEM_POSITIONS_ROTARY
#define ALIBI LLMEM_POSITIONS_ALIBI
#define FAMILY(value, name) { name, LLMEM_FAMILY_##value }
#define SILU LLMEM_ACTIVATION_SILU
#define GELU LLMEM_ACTIVATION_GELU
#define GELU_TANH LLMEM_ACTIVATION_GELU_TANH
#define GELU_NEW LLMEM_ACTIVATION_GELU_NEW
#define RELU LLMEM_ACTIVATION_RELU
/* Dropout defaults at the attention, hidden and embedding sites, and the sites. */
#define DROPS(attention, hidden, embedding) { attention, hidden, embedding }
#define ATT DROPOUT_AT(DROPOUT_ATTENTION)
#define HID DROPOUT_AT(DROPOUT_HIDDEN)
#define EMB DROPOUT_AT(DROPOUT_EMBEDDING)

static const family_desc families[] = {
    /* id                        norm mlp    positions qkvb outb mlpb nrmb hdb tie npl fin emb off par act */
    /* GPT-2: Conv1D layers with biases, LayerNorm, learned positions, tied head;
     * GPT2Config's attn_pdrop, resid_pdrop and embd_pdrop are 0.1. */
    { FAMILY(GPT2, "gpt2"),        LN,  PLAIN, LEARNED,  1,   1,   1,   1,   0,  1,  2,  1,  0,  0,  0,  GELU_NEW,
      TRAIT_FUSED_QKV | TRAIT_CAUSAL_BUFFER, PATH_GPT2, 0, DROPS(0.1, 0.1, 0.1), ATT | HID | EMB, 0 },
    /* Llama (Mistral, Qwen2/2.5/3, Mixtral, Qwen2-MoE): RMSNorm, SwiGLU, rotary,
     * no biases, untied head. */
    { FAMILY(LLAMA, "llama"),      RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  0,  2,  1,  0,  0,  0,  SILU,
      TRAIT_WINDOW, PATH_LLAMA, PHASED_EXPERTS | PHASED_QK_NORM, DROPS(0, 0, 0), ATT, 0 },
    /* OPT: OPTLearnedPositionalEmbedding keeps 2 extra rows (offset = 2) and
     * looks up position ids from the attention mask; ReLU (activation_function);
     * OPTConfig's dropout 0.1 on the attention and MLP outputs, attention_dropout 0. */
    { FAMILY(OPT, "opt"),          LN,  PLAIN, LEARNED,  1,   1,   1,   1,   0,  1,  2,  1,  0,  2,  0,  RELU,
      TRAIT_MASK_POSITIONS, PATH_OPT, 0, DROPS(0, 0.1, 0), ATT | HID, 0 },
    /* BLOOM: ALiBi, word_embeddings_layernorm, fused qkv with bias, BloomGelu. */
    { FAMILY(BLOOM, "bloom"),      LN,  PLAIN, ALIBI,    1,   1,   1,   1,   0,  1,  2,  1,  1,  0,  0,  GELU_TANH,
      TRAIT_FUSED_QKV | TRAIT_NO_SDPA, PATH_BLOOM, 0, DROPS(0, 0, 0), ATT | HID, 0 },
    /* Gemma-2: pre and post norms around attention and MLP (4), GeGLU, tied;
     * Gemma2Config's sliding_window 4096, on the even layers (layer_types). */
    { FAMILY(GEMMA2, "gemma2"),    RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  1,  4,  1,  0,  0,  0,  GELU_TANH,
      TRAIT_OFFSET_NORM | TRAIT_SCALED_EMBED | TRAIT_GELU_GATE | TRAIT_SOFTCAP | TRAIT_SANDWICH_NORMS |
      TRAIT_WINDOW | TRAIT_ALTERNATE_WINDOW,
      PATH_LLAMA, 0, DROPS(0, 0, 0), ATT, 4096 },
    /* Phi-3: fused qkv_proj and gate_up_proj, no biases, untied; the decoder
     * layer's resid_attn_dropout and resid_mlp_dropout (resid_pdrop). */
    { FAMILY(PHI3, "phi3"),        RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  0,  2,  1,  0,  0,  0,  SILU,
      TRAIT_FUSED_QKV | TRAIT_FUSED_GATE_UP | TRAIT_LAYER_DROPOUT | TRAIT_WINDOW, PATH_LLAMA, 0,
      DROPS(0, 0, 0), ATT | HID, 0 },
    /* Gemma: GemmaRMSNorm, GeGLU (gelu_pytorch_tanh), no biases, tied (GemmaConfig). */
    { FAMILY(GEMMA, "gemma"),      RMS, GATED, ROTARY,   0,   0,   0,   0,   0,  1,  2,  1,  0,  0,  0,  GELU_TANH,
      TRAIT_OFFSET_NORM | TRAIT_SCALED_EMBED | TRAIT_GELU_GATE, PATH_LLAMA, 0, DROPS(0, 0, 0),
      ATT, 0 },
    /* GPT-NeoX: query_key_value and dense with attention_bias (default true), MLP with
     * biases, two LayerNorms even with use_parallel_residual, emb_dropout, untied
     * embed_out, hidden_act gelu. */
    { FAMILY(GPT_NEOX, "gpt_neox"), LN, PLAIN, ROTARY,   1,   1,   1,   1,   0,  0,  2,  1,  0,  0,  1,  GELU,
      TRAIT_FUSED_QKV | TRAIT_EMBED_DROPOUT, PATH_NEOX, 0, DROPS(0, 0, 0), ATT | HID | EMB, 0 },
    /* Falcon: bias false, parallel_attn true, one input_layernorm, tied lm_head,
     * FalconLinear (x @ weight.T), activation gelu; with alibi (Falcon-RW) the
     * rotary tables are still computed and ALiBi is folded into the mask. */
    { FAMILY(FALCON, "falcon"),    LN,  PLAIN, ROTARY,   0,   0,   0,   1,   0,  1,  1,  1,  0,  0,  1,  GELU,
      TRAIT_FUSED_QKV | TRAIT_UNCACHED_CAST | TRAIT_ROTARY_TABLES | TRAIT_ALIBI_MASK,
      PATH_FALCON, 0, DROPS(0, 0, 0), ATT | HID, 0 },
    /* Phi: one input_layernorm feeding attention and MLP, biases everywhere,
     * lm_head with bias, untied, embd_pdrop, hidden_act gelu_new. */
    { FAMILY(PHI, "phi"),          LN,  PLAIN, ROTARY,   1,   1,   1,   1,   1,  0,  1,  1,  0,  0,  1,  GELU_NEW,
      TRAIT_EMBED_DROPOUT | TRAIT_DROPOUT_REBINDS, PATH_NEOX, PHASED_QK_NORM, DROPS(0, 0, 0),
      ATT | HID | EMB, 0 },
    /* StarCoder2: LayerNorm, c_fc/c_proj MLP (gelu_pytorch_tanh), use_bias true,
     * embedding and residual dropouts, tied. */
    { FAMILY(STARCODER2, "starcoder2"), LN, PLAIN, ROTARY, 1, 1,   1,   1,   0,  1,  2,  1,  0,  0,  0,  GELU_TANH,
      TRAIT_EMBED_DROPOUT | TRAIT_RESID_DROPOUT | TRAIT_WINDOW, PATH_LLAMA, 0, DROPS(0, 0, 0),
      ATT | HID | EMB, 0 },
    /* DeepSeek-V2/V3: RMSNorm, SwiGLU experts, attention_bias false, untied. */
    { FAMILY(DEEPSEEK, "deepseek"), RMS, GATED, ROTARY,  0,   0,   0,   0,   0,  0,  2,  1,  0,  0,  0,  SILU,
      0, PATH_LATENT, PHASED_EXPERTS, DROPS(0, 0, 0), ATT, 0 },
    /* Megatron-LM GPT (megatron/core/models/gpt, the "local" transformer layer
     * spec): LayerNorm, fused linear_qkv, GeLU MLP, biases on, learned absolute
     * positions, output layer tied to the embedding; TransformerConfig's
     * attention_dropout and hidden_dropout (also the embedding's) are 0.1. */
    { FAMILY(MEGATRON_GPT, "megatron-gpt"), LN, PLAIN, LEARNED, 1, 1, 1,   1,   0,  1,  2,  1,  0,  0,  0,  GELU,
      TRAIT_FUSED_QKV, PATH_MEGATRON, 0, DROPS(0.1, 0.1, 0.1), ATT | HID | EMB, 0 },
};

#define FAMILY_COUNT (sizeof families / sizeof families[0])

const name_table llmem_names_family = NAME_TABLE_OF_ROWS(families, FAMILY_COUNT);

const family_desc *llmem_family(int family)
{
    for (size_t i = 0; i < FAMILY_COUNT; i++)
        if (families[i].id.value == family)
            return &families[i];
    return NULL;
}

const family_desc *llmem_family_at(size_t i)
{
    return i < FAMILY_COUNT ? &families[i] : NULL;
}

size_t llmem_family_count(void)
{
    return FAMILY_COUNT;
}
