/* SPDX-License-Identifier: MIT */
/* Segment builders: the embedding, one decoder layer, and the head with the
 * loss, following the Hugging Face transformers eager code of each family's
 * code path. The walk (lib/estimate/walk.c) simulates what they record. */
#ifndef LLMEM_LAYERS_LAYERS_H
#define LLMEM_LAYERS_LAYERS_H

#include "model/model.h"
#include "sim/ops.h"

#include <stddef.h>

/* Bytes per element of the embedding segment's output, in the parameters'
 * dtype. Under autocast with fp32 weights the low-precision branches
 * promote back to fp32; with bf16 weights they are bf16 already, unless a
 * LayerNorm on the embedding (BLOOM's word_embeddings_layernorm, on
 * autocast's fp32 list) makes it fp32. */
static inline int embedding_dt(const build *b, const model_shape *m)
{
    return b->autocast && m->embed_norm ? FP32 : b->param_dt;
}

/* Bytes per element of the residual stream between layers and into the
 * head: the embedding's, unless a post-norm layer (OPT-350m's
 * do_layer_norm_before false) ends in a LayerNorm, whose fp32 output under
 * autocast every later residual sum keeps. */
static inline int residual_dt(const build *b, const model_shape *m)
{
    return b->autocast && m->post_norm ? FP32 : embedding_dt(b, m);
}

/* The builders index build's dropouts by model/dropout.h's sites. */
typedef char build_dropout_sites_match[BUILD_DROPOUT_SITES == DROPOUT_SITES ? 1 : -1];

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
    int projections_trainable; /* OPT's project_in / project_out (they train with the embedding) */
    int embedded_input;    /* a decoder layer fed by the embedding, in embedding_dt (layer_input_dt) */
    int full_attention;    /* a layer without the sliding window where the others have it
                              (Gemma-2's odd layers): no window mask */
    int model_locals;      /* the head: the model's forward locals ride through the final
                              norm (build's model_locals bytes); nonzero, a key of what
                              decides them besides batch, seq and the build (walk.c) */
    int zero;              /* always 0: the padding made a field, as specs are compared and
                              cached as bytes (a copy need not copy padding) */
} seg_spec;

/* No padding: every byte of a spec is a field's. */
typedef char seg_spec_has_no_padding[offsetof(seg_spec, zero) + sizeof(int) == sizeof(seg_spec) &&
                                     offsetof(seg_spec, lora_rank) == 4 * sizeof(int) ? 1 : -1];

/* Bytes per element of a decoder layer's input: the residual stream's,
 * or the embedding's for the first layer where they differ. */
static inline int layer_input_dt(const build *b, const model_shape *m, const seg_spec *s)
{
    return s->embedded_input ? embedding_dt(b, m) : residual_dt(b, m);
}

void llmem_layers_embedding(build *b, const model_shape *m, const seg_spec *s);
void llmem_layers_decoder(build *b, const model_shape *m, const seg_spec *s);
void llmem_layers_head(build *b, const model_shape *m, const seg_spec *s);
/* The decoder layer of spec s on b's graph, which holds a marked layer's
 * tape (graph's mark: a model with two kinds of layer, DeepSeek's dense and
 * experts' ones, Gemma-2's with and without the window) that differs from
 * s at most in its kind (llmem_layers_take_kind) and what requires grad,
 * rewound to its mark (llmem_graph_rewind) and retargeted to s: s's tail
 * recorded after it. */
void llmem_layers_decoder_tail(build *b, const model_shape *m, const seg_spec *s);
/* to's kind of layer made from's, where m's layers come in two kinds whose
 * tapes share their part up to a mark (the seg_spec field that tells them
 * apart, layers/common.h: layer_path's kind); else to unchanged. */
void llmem_layers_take_kind(const model_shape *m, seg_spec *to, const seg_spec *from);
/* What a decoder layer recorded with hold_input adds last: its input stays
 * referenced to the end (a checkpoint's recomputation), applied to a tape
 * recorded without it (graph's hold_input: llmem_graph_reset clears it). */
void llmem_layers_hold_input(graph *g);

/* Bytes of the tensors the model's forward creates for every layer: the
 * rotary tables (saved by the layers), and the position ids and attention
 * mask (the forward's locals, saved only by checkpoints); of the locals,
 * ids_saved: the position ids a trainable learned position table's
 * EmbeddingBackward keeps until the embedding's backward. emb: the
 * embedding's spec. */
typedef struct shared_bytes {
    uint64_t rope, locals, ids_saved;
    uint64_t ids_unheld; /* of the locals, position ids that no layer takes and nothing
                            saves: checkpoints do not hold them (GPT-2's, its table frozen) */
    uint64_t in_call;    /* of the locals, the masks a checkpointed layer takes in its call
                            (transformers 5.x's GradientCheckpointingLayer: a sliding
                            window's, Gemma-2's): a reentrant checkpoint's node keeps
                            its call to the end of backward, a non-reentrant one to
                            the layer's backward */
    uint64_t mask_other; /* of those, the second mask of a mask per layer type (Gemma-2
                            eager): the one the first layer in the graph does not take */
} shared_bytes;

shared_bytes llmem_layers_shared_bytes(const build *b, const model_shape *m, const seg_spec *emb);

/* What the model's forward keeps of its embedding step as locals through
 * the decoder loop, until it returns: bytes of the tensors besides the
 * first layer's input that nothing saves, and in *input_kept whether that
 * input is one of them (hidden_states = inputs_embeds), held however the
 * layer frees it. s: the embedding's spec. */
uint64_t llmem_layers_embedding_locals(const build *b, const model_shape *m, const seg_spec *s,
                                       int *input_kept);

/* What batch and seq change in a segment's tape beyond its sizes (the
 * estimate compiles a segment into polynomials of them, sim/compiled.h): a
 * builder may branch on batch == 1, and sizes may coincide only below seq 4;
 * every other size must be a polynomial in 1, S, B, B*S and B*S^2 with
 * nonnegative integer coefficients, or its choice be told here. Today: the
 * fused loss's chunk (a power of two), 0 when the chunk is all the tokens or
 * the segment has none. */
uint64_t llmem_layers_piece(const build *b, const model_shape *m, const seg_spec *s);

/* Whether the attention kernel (llmem_attention) forms batch x heads x seq^2
 * elements for m in compute dtype dt (bytes): the scores of eager attention or
 * of SDPA's math kernel, or a full mask handed to SDPA; FlashAttention-2 and
 * SDPA's fused and memory-efficient kernels form none. */
int llmem_layers_quadratic_attention(const model_shape *m, int attention, int dt);

/* The model key of a field the phased model does not build for m, with a
 * short reason in *why; 0 when m is covered. */
int llmem_layers_unsupported(const model_shape *m, const char **why);
/* The covered families, "gpt2, llama, ...", for messages. */
void llmem_layers_covered(char *buf, size_t cap);

#endif
