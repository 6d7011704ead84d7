/* SPDX-License-Identifier: MIT */
/* Segment builders: the embedding, one decoder layer, and the head with the
 * loss, per family, following the Hugging Face transformers eager code. */
#ifndef LLMEM_ESTIMATE_LAYERS_H
#define LLMEM_ESTIMATE_LAYERS_H

#include "estimate/ops.h"
#include "model/model.h"

/* LoRA adapters' bytes per element: PEFT keeps adapters in fp32
 * (LoraModel's autocast_adapter_dtype=True, the default). */
#define LORA_DT 4

/* Which weights of a segment train, and how LoRA wraps its linears. */
typedef struct seg_spec {
    int input_rg;          /* the segment's input requires grad */
    int weights_trainable; /* dense weights (attention, MLP, embedding, head) */
    int norms_trainable;
    unsigned lora_targets; /* llmem_lora_target bits; 0 = no adapters */
    uint64_t lora_rank;
    int nf4;               /* QLoRA: frozen linears are 4-bit, dequantized per use */
    int chunked_loss;
    int moe;               /* the layer's MLP is routed experts (not one of the dense layers) */
} seg_spec;

void build_embedding(build *b, const model_shape *m, const seg_spec *s);
void build_layer(build *b, const model_shape *m, const seg_spec *s);
void build_head(build *b, const model_shape *m, const seg_spec *s);

/* Bytes of the tensors the model's forward creates for every layer: the
 * rotary tables (saved by the layers), and the position ids and attention
 * mask (the forward's locals, saved only by checkpoints). */
typedef struct shared_bytes {
    uint64_t rope, locals;
} shared_bytes;

shared_bytes shared_layer_bytes(const build *b, const model_shape *m);

#endif
