/* SPDX-License-Identifier: MIT */
/* The parameter tensors of a model under a training setup, grouped into
 * classes of equal shape: what the optimizer, the weights term and the
 * allocator's rounding iterate over. */
#ifndef LLMEM_ESTIMATE_TENSORS_H
#define LLMEM_ESTIMATE_TENSORS_H

#include "estimate/estimate.h"

#define TENSOR_CLASSES_MAX 96

typedef struct tensor_class {
    uint64_t rows, cols; /* cols = 1 for vectors */
    uint64_t count;      /* tensors of this shape */
    int dt;              /* storage bytes per element; 0 = NF4 (4-bit) */
    int trainable;
} tensor_class;

typedef struct tensor_list {
    tensor_class c[TENSOR_CLASSES_MAX];
    int overflow; /* a class did not fit: a bug, reported by llmem_estimate_run */
    int n;
} tensor_list;

void step_tensors(const model_shape *m, const model_params *p, const setup *s,
                  tensor_list *out);

/* The terms that iterate over the tensors, computed once per run. */
void params_term(const tensor_list *l, const model_shape *m, const setup *s, step_static *st);
void optimizer_term(const tensor_list *l, const setup *s, step_static *st);
/* What reserved adds to allocated: the caching allocator's rounding of the
 * parameter-sized tensors, and the cuBLAS workspace. */
uint64_t allocator_overhead(const tensor_list *l, const setup *s);

static inline uint64_t class_elems(const tensor_class *c)
{
    return c->rows * c->cols;
}

#endif
