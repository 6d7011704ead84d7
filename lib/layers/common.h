/* SPDX-License-Identifier: MIT */
/* What the segment builders share, internal to lib/layers: the pieces every
 * code path uses (common.c) and the table of code paths (paths.c). */
#ifndef LLMEM_LAYERS_COMMON_H
#define LLMEM_LAYERS_COMMON_H

#include "layers/layers.h"
#include "model/families.h"

/* Shared per-forward tensors, created by the embedding segment in the model
 * and read by every layer: the attention mask and the rotary tables. */
typedef struct shared_tensors {
    tid mask, cos, sin;
    tid window; /* the sliding window's mask (-1: none), also where the layer
                   takes none (a full-attention layer's mask is -1): a marked
                   tape's other kind may (layers/llama.c) */
    tid alibi; /* BLOOM's ALiBi slopes times positions, [batch x heads, 1, seq] */
} shared_tensors;

/* A code path: how its decoder layer is built, and what of a family's
 * fields it does not build beyond what every path checks (paths.c). */
typedef struct layer_path {
    /* The layer's ops from its input x; returns the output. */
    tid (*block)(build *b, const model_shape *m, const seg_spec *s, tid x,
                 const shared_tensors *sh);
    /* The model key this path cannot build for m (with *why), or 0. */
    int (*unsupported)(const model_shape *m, const char **why);
    /* A path whose block marks the tape where its two kinds of layer part,
     * when the model or setup has both (graph.h: llmem_graph_mark): the ops
     * from there on, given the marked tensors; returns the output. NULL:
     * no mark. */
    tid (*tail)(build *b, const model_shape *m, const seg_spec *s, const tid *carry);
    /* Where in a seg_spec the int is that tells those kinds apart (latent:
     * moe, a dense MLP or the experts; llama: full_attention, Gemma-2's
     * layers with and without the window); 0 where tail is NULL. */
    size_t kind;
} layer_path;

/* Name the part of the segment the next ops belong to (the timeline's labels). */
static inline void llmem_region(build *b, const char *name)
{
    b->g->region = name;
}

/* Layout fields a path builds at other values than its family's default
 * (llmem_layers_fixed checks the rest). */
enum layer_accept {
    ACCEPT_NORMS = 1u << 0,          /* norms-per-layer */
    ACCEPT_EMBED_DIM = 1u << 1,      /* embed-dim with projections (OPT-350m) */
    ACCEPT_LATENT = 1u << 2,         /* kv-lora-rank and v-head-dim (MLA) */
    ACCEPT_PARALLEL = 1u << 3,       /* parallel-block */
    ACCEPT_PARTIAL_ROTARY = 1u << 4, /* rotary-dim below head-dim */
    ACCEPT_POST_NORM = 1u << 5,      /* post-norm */
    ACCEPT_ACTIVATION = 1u << 6,     /* activation (the path checks which) */
    ACCEPT_ALIBI = 1u << 7           /* ALiBi positions instead of the family's (Falcon-RW) */
};
int llmem_layers_fixed(const model_shape *m, unsigned accept, const char **why);

/* The code path of a code_path value. */
const layer_path *llmem_layer_path(int path);

extern const layer_path llmem_path_gpt2, llmem_path_llama, llmem_path_megatron, llmem_path_opt,
    llmem_path_bloom, llmem_path_neox, llmem_path_falcon, llmem_path_latent;

/* nn.Linear (or Conv1D) of a segment, wrapped by PEFT's LoRA when targeted,
 * NF4 under QLoRA. */
tid llmem_seg_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f, int bias,
                     unsigned target);
/* A tensor-parallel linear under sequence parallelism: column-parallel
 * (gathers its input) or row-parallel (reduce-scatters its output). */
tid llmem_seg_linear_sp(build *b, tid x, uint64_t in_f, uint64_t out_f, int trainable, int bias,
                        int column);
tid llmem_seg_rms_norm(build *b, const seg_spec *s, tid x, uint64_t dim);
/* The model's norm (LayerNorm, LlamaRMSNorm or Gemma's) over the hidden size. */
tid llmem_seg_norm(build *b, const model_shape *m, const seg_spec *s, tid x);
tid llmem_seg_rotary(build *b, tid x, tid cos, tid sin);
/* Scores, mask, softmax, dropout and the value product; or the fused kernel. */
tid llmem_seg_attention(build *b, const model_shape *m, tid q, tid k, tid v, tid mask);
/* The same, where the operands named by strided (ATTN_Q, ATTN_K, ATTN_V bits)
 * keep a projection's [B, S, heads, D] memory order though not recorded as
 * views (a head view of an unfused projection, or an elementwise result of
 * one, such as rotary's): eager's matmul copies them when batch > 1. */
enum { ATTN_Q = 1u, ATTN_K = 2u, ATTN_V = 4u };
tid llmem_seg_attention_strided(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                                unsigned strided);

/* Whether SDPA's dispatch sends m's attention in dtype dt (bytes) to its math
 * kernel, which forms the scores; enable_gqa 0 for a family's own call
 * without it. */
int llmem_seg_sdpa_math(const model_shape *m, int dt, int enable_gqa);
/* Whether FalconAttention's SDPA call forms batch x heads x seq^2 elements. */
int llmem_falcon_sdpa_quadratic(const model_shape *m, int dt);

/* SDPA given a float mask (Falcon-RW's ALiBi): the memory-efficient kernel. */
tid llmem_seg_sdpa_masked(build *b, const model_shape *m, tid q, tid k, tid v, tid mask);

/* How a family's attention differs from Llama's eager_attention_forward and
 * transformers' sdpa_attention_forward. */
typedef struct attn_opts {
    int scale;      /* the scores are multiplied by the scaling (OPT scales the query instead) */
    int cast_back;  /* the probabilities are cast back to the query's dtype */
    int softmax_dt; /* softmax's dtype in bytes; 0: float32 (dtype=torch.float32) */
    int dropout;    /* attention dropout */
    int own_sdpa_call; /* F.scaled_dot_product_attention called without enable_gqa (Falcon) */
} attn_opts;
tid llmem_seg_attention_opts(build *b, const model_shape *m, tid q, tid k, tid v, tid mask,
                             const attn_opts *o);
/* PEFT's LoRA around an already computed base output of x. */
tid llmem_seg_lora(build *b, const seg_spec *s, tid x, tid base, uint64_t in_f, uint64_t out_f,
                   unsigned target);
/* A frozen QLoRA linear's base (bitsandbytes' 4-bit matmul). */
tid llmem_seg_nf4_linear(build *b, tid x, uint64_t in_f, uint64_t out_f);
/* The gated MLP of inner size I. */
tid llmem_seg_gated_mlp(build *b, const seg_spec *s, tid h, uint64_t H, uint64_t I, int bias);
/* The routed experts' projection of every routed row, in aggregate, with
 * PEFT's LoRA on every expert when target names it. */
tid llmem_seg_expert_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f,
                            uint64_t experts, unsigned target);
/* The routed experts as transformers 5.x's grouped_mm runs them, on the
 * router's top-k index and weights (common.c). */
tid llmem_seg_grouped_experts(build *b, const model_shape *m, const seg_spec *s, tid h, tid index,
                              tid weights);
/* routed(h) over the tensor-parallel group's tokens under sequence
 * parallelism (gathered before, reduce-scattered after); routed(h) else. */
tid llmem_seg_routed_sp(build *b, const model_shape *m, const seg_spec *s, tid h,
                        tid (*routed)(build *, const model_shape *, const seg_spec *, tid));
/* The MLP activation of m. */
tid llmem_seg_activation(build *b, const model_shape *m, tid x);
/* An operand of torch.matmul folded to 3-D: a head view copied when batch > 1. */
tid llmem_seg_matmul_operand(build *b, tid x);
/* torch.cat of two parts of the last dimension. */
tid llmem_seg_cat(build *b, tid x, tid y);
/* Rotary on the first rotary_dim dims of each of heads heads of x, the rest catted back. */
tid llmem_seg_partial_rotary(build *b, const model_shape *m, tid x, uint64_t heads, tid cos,
                             tid sin);

#endif
