/* SPDX-License-Identifier: MIT */
/* What the segment builders share, internal to lib/layers: the pieces every
 * code path uses (common.c) and the table of code paths (paths.c). */
#ifndef LLMEM_LAYERS_COMMON_H
#define LLMEM_LAYERS_COMMON_H

#include "layers/layers.h"
#include "model/families.h"

#define INT64 8

/* Shared per-forward tensors, created by the embedding segment in the model
 * and read by every layer: the attention mask and the rotary tables. */
typedef struct shared_tensors {
    tid mask, cos, sin;
} shared_tensors;

/* A code path: how its decoder layer is built, and what of a family's
 * fields it does not build beyond what every path checks (paths.c). */
typedef struct layer_path {
    /* The layer's ops from its input x; returns the output. */
    tid (*block)(build *b, const model_shape *m, const seg_spec *s, tid x,
                 const shared_tensors *sh);
    /* The model key this path cannot build for m (with *why), or 0; NULL: none. */
    int (*unsupported)(const model_shape *m, const char **why);
} layer_path;

/* Name the part of the segment the next ops belong to (the timeline's labels). */
static inline void llmem_region(build *b, const char *name)
{
    b->g->region = name;
}

/* The code path of a code_path value. */
const layer_path *llmem_layer_path(int path);

extern const layer_path llmem_path_gpt2, llmem_path_llama, llmem_path_megatron;

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

#endif
