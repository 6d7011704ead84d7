/* SPDX-License-Identifier: MIT */
/*
 * The parameter tensors of a model under a training setup, grouped into
 * classes of equal shape. Each class knows where it lives (segment and layer
 * range), what it is (its role) and how tensor parallelism splits it (its
 * axis), so the optimizer, the weights term, the allocator's rounding and the
 * partitioning of a model across ranks all read one list.
 */
#ifndef LLMEM_ESTIMATE_TENSORS_H
#define LLMEM_ESTIMATE_TENSORS_H

#include "model/model.h"
#include "train/setup.h"

#define TENSOR_CLASSES_MAX 96
#define DT_NF4 0 /* storage "dtype" of QLoRA's 4-bit weights */

/* Where a parameter lives in the model. */
enum param_segment { SEG_EMBEDDING = 1, SEG_LAYER, SEG_HEAD };

/* What a parameter is. */
enum param_role {
    PARAM_WEIGHT = 1, /* a linear layer's weight (attention, dense MLP, shared expert) */
    PARAM_BIAS,       /* a linear layer's bias */
    PARAM_NORM,       /* a norm's weight or bias (and q/k or latent norms) */
    PARAM_ADAPTER,    /* a LoRA A or B matrix */
    PARAM_EXPERT,     /* a routed expert's weight */
    PARAM_ROUTER,     /* the router's weight or bias */
    PARAM_EMBEDDING,  /* token embedding (and OPT-350m's projections) */
    PARAM_POSITION,   /* learned position table */
    PARAM_OUTPUT      /* the untied output head and its bias */
};

typedef struct tensor_class {
    uint64_t rows, cols;   /* cols = 1 for vectors */
    uint64_t count;        /* tensors of this shape, over the whole layer range */
    int dt;                /* storage bytes per element; DT_NF4 = 4-bit */
    int trainable;
    uint8_t segment;       /* param_segment */
    uint8_t role;          /* param_role */
    uint8_t axis;          /* split_axis (model/model.h) */
    uint64_t layer_first;  /* SEG_LAYER: the layers [first, first + layers) */
    uint64_t layers;       /* SEG_LAYER: how many; 1 elsewhere */
} tensor_class;

typedef struct tensor_list {
    tensor_class c[TENSOR_CLASSES_MAX];
    int overflow; /* a class did not fit: a bug, reported by llmem_estimate_run */
    int n;
} tensor_list;

void llmem_tensors_list(const model_shape *m, const model_params *p, const setup *s,
                        tensor_list *out);

static inline uint64_t class_elems(const tensor_class *c)
{
    return c->rows * c->cols;
}

/* One tensor of the class as stored: NF4 packs two weights a byte
 * (bitsandbytes' Params4bit, an odd count's last byte half used). */
static inline uint64_t class_tensor_bytes(const tensor_class *c)
{
    return c->dt == DT_NF4 ? (class_elems(c) + 1) / 2 : class_elems(c) * (uint64_t)c->dt;
}

#endif
