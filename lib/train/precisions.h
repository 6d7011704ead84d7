/* SPDX-License-Identifier: MIT */
/* The precision recipes as data: storage dtype of the parameters, compute
 * dtype, and whether autocast casts per op (mixed precision). */
#ifndef LLMEM_TRAIN_PRECISIONS_H
#define LLMEM_TRAIN_PRECISIONS_H

#include "core/names.h"

typedef struct precision_desc {
    name_value id;   /* first member: the name table steps over rows */
    int param_dt;    /* bytes per element of weights, gradients and torch's states */
    int compute_dt;  /* bytes per element of the matmuls */
    int autocast;    /* torch.autocast: low-precision matmuls, the fp32 list in fp32 */
} precision_desc;

/* Row of an llmem_precision value, or NULL. */
const precision_desc *llmem_precision(int precision);

extern const name_table llmem_names_precision;

#endif
