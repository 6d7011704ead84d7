/* SPDX-License-Identifier: MIT */
/*
 * The model families as data: one row a family, holding its name, the
 * defaults of the layout fields (as its Hugging Face modeling_<type>.py builds
 * its modules), the traits of its code the estimator follows, and which code
 * path of the segment builders (lib/layers/) builds its layers. Names, bounds,
 * coverage and the phased model's refusals all come from here.
 */
#ifndef LLMEM_MODEL_FAMILIES_H
#define LLMEM_MODEL_FAMILIES_H

#include "core/names.h"
#include "model/dropout.h"

/* Code paths of the segment builders (lib/layers/paths.c maps each to its
 * functions). A family on PATH_NONE gets exact counts and the article formula. */
enum code_path {
    PATH_NONE = 0,
    PATH_GPT2,
    PATH_LLAMA,
    PATH_MEGATRON,
    PATH_OPT,    /* layers/opt.c */
    PATH_BLOOM,  /* layers/bloom.c */
    PATH_NEOX,   /* layers/neox.c: GPT-NeoX and Phi, partial rotary, parallel residual */
    PATH_FALCON, /* layers/falcon.c */
    PATH_LATENT, /* layers/latent.c: DeepSeek's multi-head latent attention and experts */
    PATH_COUNT
};

/* The last llmem_family value: the table has a row for each up to it. */
#define FAMILY_LAST LLMEM_FAMILY_MEGATRON_GPT

/* Traits of a family's code that change what a step holds. */
enum family_trait {
    TRAIT_FUSED_QKV = 1u << 0,     /* q, k, v from one linear (c_attn, qkv_proj, query_key_value) */
    TRAIT_FUSED_GATE_UP = 1u << 1, /* gate and up from one linear (Phi-3 gate_up_proj) */
    TRAIT_OFFSET_NORM = 1u << 2,   /* RMSNorm times (1 + weight), in fp32 (Gemma) */
    TRAIT_SCALED_EMBED = 1u << 3,  /* embeddings times sqrt(hidden) (Gemma) */
    TRAIT_SOFTCAP = 1u << 4,       /* tanh soft-capping of attention and final logits (Gemma-2) */
    TRAIT_SANDWICH_NORMS = 1u << 5,/* norms after attention and MLP as well as before (Gemma-2) */
    /* GPT-2: a bool causal-mask buffer per layer applied with torch.where, a
     * padding mask [batch, 1, 1, seq], softmax in the scores' dtype */
    TRAIT_CAUSAL_BUFFER = 1u << 6,
    TRAIT_GELU_GATE = 1u << 7,     /* gated MLP with tanh GELU, GeGLU (Gemma) */
    /* Learned positions looked up by position ids from the attention mask's
     * cumsum, one row per token ([batch, seq]), offset by position-offset (OPT) */
    TRAIT_MASK_POSITIONS = 1u << 8,
    TRAIT_EMBED_DROPOUT = 1u << 9, /* dropout on the embedding output (GPT-NeoX, Phi, StarCoder2) */
    /* dropout on the attention output and the MLP output before the residual
     * additions (StarCoder2 residual_dropout) */
    TRAIT_RESID_DROPOUT = 1u << 10,
    /* Linears computed as x @ weight.T (+ bias): autocast casts the transposed
     * view at every use and caches nothing (Falcon's FalconLinear) */
    TRAIT_UNCACHED_CAST = 1u << 11,
    /* The rotary tables (and inv_freq) exist even with ALiBi positions (Falcon) */
    TRAIT_ROTARY_TABLES = 1u << 12,
    /* ALiBi folded into the additive attention mask, [batch, heads, seq, seq] (Falcon) */
    TRAIT_ALIBI_MASK = 1u << 13,
    /* No SDPA attention in transformers: its default is eager (BLOOM) */
    TRAIT_NO_SDPA = 1u << 14,
    /* dropout on the attention's and the MLP's outputs in the decoder layer,
     * once they have returned (Phi-3 resid_attn_dropout, resid_mlp_dropout) */
    TRAIT_LAYER_DROPOUT = 1u << 15,
    /* sliding-window attention when the config sets sliding_window (Mistral's
     * and Qwen2's code on the Llama path, Phi-3, StarCoder2, Gemma-2) */
    TRAIT_WINDOW = 1u << 16,
    /* the window on every other layer only, the first included (Gemma-2) */
    TRAIT_ALTERNATE_WINDOW = 1u << 17,
    /* the model's forward rebinds inputs_embeds to the embedding dropout's
     * output (PhiModel: inputs_embeds = self.embed_dropout(inputs_embeds)),
     * so the layers' input is the local it keeps */
    TRAIT_DROPOUT_REBINDS = 1u << 18
};

/* Optional fields a phased code path builds (beyond the family's defaults). */
enum phased_feature {
    PHASED_EXPERTS = 1u << 0, /* mixture-of-experts layers */
    PHASED_QK_NORM = 1u << 1  /* norms on queries and keys */
};

typedef struct family_desc {
    name_value id; /* first member: the families' name table steps over rows */
    /* Defaults of the layout fields. */
    int norm, mlp, positions;
    int qkv_bias, out_bias, mlp_bias, norm_bias, head_bias, tie;
    int norms_per_layer, final_norm, embed_norm, position_offset, parallel_block;
    int activation;    /* llmem_activation */
    unsigned traits;   /* family_trait bits */
    int path;          /* code_path; PATH_NONE: not on the phased model yet */
    unsigned phased;   /* phased_feature bits the path builds for this family */
    /* The configuration class's default dropout probability at each kind of
     * site, and the sites (DROPOUT_AT bits) its code has: a model takes 0
     * at the others. */
    double dropout[DROPOUT_SITES];
    unsigned dropout_sites;
    int64_t sliding_window; /* the configuration class's default sliding_window */
} family_desc;

/* Row of family, or NULL. */
const family_desc *llmem_family(int family);
/* Row i (i < llmem_family_count()). */
const family_desc *llmem_family_at(size_t i);
size_t llmem_family_count(void);

extern const name_table llmem_names_family;

#endif
