/* SPDX-License-Identifier: MIT */
/* What a step holds from start to end, whatever batch and seq: weights,
 * buffers, gradients, optimizer states (and the batch itself), computed from
 * the parameter tensor list once per model and setup. */
#ifndef LLMEM_ESTIMATE_STATICS_H
#define LLMEM_ESTIMATE_STATICS_H

#include "estimate/tensors.h"

/* torch Adam(W) with fused=True: state['step'] = torch.zeros((), dtype=float32,
 * device=p.device) per parameter (torch/optim/adam.py, _init_group). */
#define STEP_COUNTER_BYTES 4

typedef struct step_static {
    uint64_t weights, quant_constants, adapters, buffers;
    uint64_t grads, states, batch;
    uint64_t master;          /* fp32 master weights beside a 16-bit model (DeepSpeed) */
    uint64_t comm;            /* gradient buckets of data parallelism (DDP, ZeRO) */
    uint64_t paged_states;    /* bitsandbytes paged states: unified memory, device level only */
    uint64_t optimizer_step;  /* transient of optimizer.step() */
    uint64_t trainable;       /* parameters that train */
    uint64_t param_tensors;   /* tensors of weights (allocator rounding) */
} step_static;

/* The sums of a step's statics that its terms and the walk read (unsigned,
 * so any order gives the same bytes). The parameters term: */
static inline uint64_t statics_params(const step_static *st)
{
    return st->weights + st->quant_constants + st->adapters + st->buffers;
}

/* the optimizer term's part live throughout, gradients apart: */
static inline uint64_t statics_optimizer_held(const step_static *st)
{
    return st->states + st->master + st->comm;
}

/* what is live from the step's start to its end (but gradients): */
static inline uint64_t statics_fixed(const step_static *st)
{
    return statics_params(st) + statics_optimizer_held(st) + st->batch;
}

/* and what backward must end holding, the batch's data aside (its
 * gradients whole). */
static inline uint64_t statics_held(const step_static *st)
{
    return statics_params(st) + statics_optimizer_held(st) + st->grads;
}

/* The parameters term: weights by dtype, NF4 constants, adapters, buffers. */
void llmem_statics_params(const tensor_list *l, const model_shape *m, const setup *s,
                          step_static *st);
/* The optimizer term: gradients, states, and the step's transient. */
void llmem_statics_optimizer(const tensor_list *l, const setup *s, step_static *st);
/* The data term: the batch as the Trainer moves it to the GPU, batch x
 * llmem_statics_data_sample(seq). */
uint64_t llmem_statics_data(const setup *s);

/* The data term's bytes for one sample of the batch: what the Hugging Face
 * Trainer moves to the GPU is input_ids, attention_mask and labels, int64
 * [batch, seq] each. (A sweep's row reads it as the data's slope in the
 * batch.) */
static inline uint64_t llmem_statics_data_sample(uint64_t seq)
{
    return 3 * seq * 8;
}

/* What reserved adds to allocated: the caching allocator's rounding of the
 * parameter-sized tensors, and the cuBLAS workspace. */
uint64_t llmem_allocator_overhead(const tensor_list *l, const setup *s);
/* Device level: reserved bytes, the CUDA context, and paged optimizer states. */
uint64_t llmem_allocator_device(const setup *s, uint64_t reserved, uint64_t paged);

#endif
