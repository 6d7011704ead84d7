/* SPDX-License-Identifier: MIT */
/* What the segment builders share: layers.c defines these, the family files
 * (layers_gpt2.c, layers_llama.c) use them. Internal to lib/estimate. */
#ifndef LLMEM_ESTIMATE_LAYERS_COMMON_H
#define LLMEM_ESTIMATE_LAYERS_COMMON_H

#include "estimate/layers.h"

#define FP32 4
#define INT64 8

/* Shared per-forward tensors, created by the embedding segment in the model
 * and read by every layer: the attention mask and the rotary tables. */
typedef struct shared_tensors {
    tid mask, cos, sin;
} shared_tensors;

/* nn.Linear (or Conv1D) of a segment, wrapped by PEFT's LoRA when targeted,
 * NF4 under QLoRA. */
tid seg_linear(build *b, const seg_spec *s, tid x, uint64_t in_f, uint64_t out_f, int bias,
               unsigned target);
tid seg_rms_norm(build *b, const seg_spec *s, tid x, uint64_t dim);
/* The model's norm (LayerNorm, LlamaRMSNorm or Gemma's) over the hidden size. */
tid seg_norm(build *b, const model_shape *m, const seg_spec *s, tid x);
int seg_gemma_like(const model_shape *m);
tid seg_rotary(build *b, tid x, tid cos, tid sin);
/* Scores, mask, softmax, dropout and the value product; or the fused kernel. */
tid seg_attention(build *b, const model_shape *m, tid q, tid k, tid v, tid mask);

/* The family files. */
tid gpt2_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                   const shared_tensors *sh);
tid gpt2_mlp(build *b, const model_shape *m, const seg_spec *s, tid h);
tid llama_attention(build *b, const model_shape *m, const seg_spec *s, tid h,
                    const shared_tensors *sh);
tid llama_mlp(build *b, const model_shape *m, const seg_spec *s, tid h);

#endif
