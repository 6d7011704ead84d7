/* SPDX-License-Identifier: MIT */
/*
 * The optimizer term: gradients, states, and the transient of the step, as
 * PyTorch 2.x implements each optimizer on CUDA (foreach by default).
 */
#include "estimate/tensors.h"

/* bitsandbytes Optimizer8bit: tensors under min_8bit_size = 4096 elements
 * keep 32-bit states; the others are quantized blockwise, 256 per block,
 * with one fp32 absmax per block (bitsandbytes/optim/optimizer.py). */
#define BNB_MIN_8BIT 4096
#define BNB_BLOCK 256

static uint64_t adafactor_states(const tensor_class *c)
{
    /* transformers' Adafactor factors the second moment of matrices into a
     * row and a column vector (fp32); vectors keep a full one. Plus RMS, step. */
    if (c->cols > 1)
        return (c->rows + c->cols) * 4;
    return c->rows * 4;
}

static uint64_t adamw8bit_states(const tensor_class *c)
{
    uint64_t n = class_elems(c);
    if (n < BNB_MIN_8BIT)
        return 2 * n * 4;
    return 2 * (n + (n + BNB_BLOCK - 1) / BNB_BLOCK * 4);
}

void optimizer_term(const tensor_list *l, const setup *s, step_static *st)
{
    uint64_t grads = 0, states = 0, largest = 0, largest_elems = 0;
    uint64_t decay_bytes = 0, no_decay_bytes = 0;
    for (int i = 0; i < l->n; i++) {
        const tensor_class *c = &l->c[i];
        if (!c->trainable)
            continue;
        /* Trainable tensors are never NF4; .grad and torch's states take their dtype. */
        uint64_t bytes = class_elems(c) * (uint64_t)c->dt;
        grads += bytes * c->count;
        /* The HF Trainer's two parameter groups: biases and norm weights (the
         * vectors) take no weight decay. */
        if (c->cols == 1)
            no_decay_bytes += bytes * c->count;
        else
            decay_bytes += bytes * c->count;
        if (bytes > largest)
            largest = bytes;
        if (class_elems(c) > largest_elems)
            largest_elems = class_elems(c);
        switch (s->optimizer) {
        case LLMEM_OPTIMIZER_ADAMW:
        case LLMEM_OPTIMIZER_ADAM: states += 2 * bytes * c->count; break;
        case LLMEM_OPTIMIZER_SGD_MOMENTUM:
        case LLMEM_OPTIMIZER_LION: states += bytes * c->count; break;
        case LLMEM_OPTIMIZER_ADAFACTOR: states += adafactor_states(c) * c->count; break;
        case LLMEM_OPTIMIZER_ADAMW_8BIT:
        case LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT: states += adamw8bit_states(c) * c->count; break;
        case LLMEM_OPTIMIZER_PAGED_ADAMW: states += 2 * class_elems(c) * 4 * c->count; break;
        default: break;
        }
    }
    st->grads = grads;
    st->states = states;
    st->paged_states = 0;
    if (s->optimizer == LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT ||
        s->optimizer == LLMEM_OPTIMIZER_PAGED_ADAMW) {
        /* bitsandbytes allocates paged states with cudaMallocManaged (F.get_paged,
         * functional.py): torch's allocator never sees them, and the driver may
         * page them out to host memory under pressure. */
        st->paged_states = states;
        st->states = 0;
    }
    switch (s->optimizer) {
    case LLMEM_OPTIMIZER_ADAMW:
    case LLMEM_OPTIMIZER_ADAM:
        /* _multi_tensor_adam(w): exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)
         * holds one tensor per parameter of a group at once (groups run one after
         * the other); the other updates are in place. */
        st->optimizer_step = decay_bytes > no_decay_bytes ? decay_bytes : no_decay_bytes;
        break;
    case LLMEM_OPTIMIZER_LION:
        /* lion-pytorch: update = exp_avg.clone().mul_(beta1).add(grad, ...): a clone and
         * an out-of-place add of the parameter being updated. */
        st->optimizer_step = 2 * largest;
        break;
    case LLMEM_OPTIMIZER_ADAFACTOR:
        /* transformers' Adafactor, per parameter in fp32: grad**2 + eps, then the
         * factored approximation and -update, two parameter-sized tensors at once. */
        st->optimizer_step = 2 * largest_elems * 4;
        break;
    default:
        /* SGD (with momentum): _foreach_add_/_foreach_mul_ in place; bitsandbytes'
         * 8-bit step is one fused kernel. */
        st->optimizer_step = 0;
        break;
    }
}
