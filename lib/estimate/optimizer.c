/* SPDX-License-Identifier: MIT */
/*
 * The optimizer term: gradients, states, and the transient of the step, from
 * the optimizer's row (train/optimizers.c): its state rule sizes the states
 * of each trainable tensor, its step rule the step's transient.
 */
#include "estimate/statics.h"

#include "train/optimizers.h"

/* bitsandbytes Optimizer8bit: tensors under min_8bit_size = 4096 elements
 * keep 32-bit states; the others are quantized blockwise, 256 per block,
 * with one fp32 absmax per block (bitsandbytes/optim/optimizer.py). */
#define BNB_MIN_8BIT 4096
#define BNB_BLOCK 256

/* Bytes of the states of one tensor of class c (dtype bytes per element). */
static uint64_t state_bytes(const optimizer_desc *o, const tensor_class *c, uint64_t bytes)
{
    uint64_t n = class_elems(c), states = (uint64_t)o->states;
    switch ((enum state_rule)o->state_rule) {
    case STATES_LIKE_PARAM:
        return states * bytes;
    case STATES_FACTORED:
        /* transformers' Adafactor factors the second moment of matrices into a
         * row and a column vector (fp32); vectors keep a full one. */
        return (c->cols > 1 ? c->rows + c->cols : c->rows) * 4;
    case STATES_BLOCKWISE_8BIT:
        if (n < BNB_MIN_8BIT)
            return states * n * 4;
        return states * (n + (n + BNB_BLOCK - 1) / BNB_BLOCK * 4);
    case STATES_FP32:
        return states * n * 4;
    }
    return 0;
}

/* The HF Trainer's two parameter groups: biases and norm weights (the
 * vectors) take no weight decay. */
static int in_decay_group(const tensor_class *c)
{
    return c->cols > 1;
}

/* _single_tensor_adam walks a group's parameters in order, each iteration
 * computing denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): the
 * sqrt and the quotient of this parameter coexist while `denom` still holds
 * the previous one's, so the transient is the largest previous + 2 x current
 * over the group (the groups run in calls of their own). The order is the
 * tensor list's, which follows the modules' (named_parameters()): classes of
 * one place (segment and layer range) repeat once a layer, each class's
 * tensors of a layer consecutive. */
static uint64_t forloop_denom(const tensor_list *l, int decay)
{
    uint64_t best = 0, prev = 0;
    int i = 0;
    while (i < l->n) {
        const tensor_class *first = &l->c[i];
        int j = i;
        uint64_t layer_first = 0, last = 0;
        int any = 0;
        while (j < l->n && l->c[j].segment == first->segment &&
               l->c[j].layer_first == first->layer_first && l->c[j].layers == first->layers)
            j++;
        /* One layer's sequence: each member class `per_layer` times in a row. */
        for (int k = i; k < j; k++) {
            const tensor_class *c = &l->c[k];
            if (!c->trainable || in_decay_group(c) != decay)
                continue;
            uint64_t bytes = class_elems(c) * (uint64_t)c->dt;
            uint64_t per_layer = c->layers > 0 ? c->count / c->layers : c->count;
            if (!any)
                layer_first = bytes;
            uint64_t enter = (any ? last : prev) + 2 * bytes; /* the class's first in a layer */
            if (enter > best)
                best = enter;
            if (per_layer > 1 && 3 * bytes > best) /* one of its tensors after another */
                best = 3 * bytes;
            last = bytes;
            any = 1;
        }
        if (any) {
            /* The next layer's first tensor follows this layer's last. */
            if (first->layers > 1 && last + 2 * layer_first > best)
                best = last + 2 * layer_first;
            prev = last;
        }
        i = j;
    }
    return best;
}

/* The step's transient, from the sizes the trainable tensors reach. */
static uint64_t step_bytes(const optimizer_desc *o, int impl, const tensor_list *l,
                           uint64_t decay_bytes, uint64_t no_decay_bytes, uint64_t largest,
                           uint64_t largest_elems)
{
    switch ((enum step_rule)o->step_rule[impl]) {
    case STEP_IN_PLACE:
        return 0;
    case STEP_FOREACH_SQRT:
        /* _multi_tensor_adam(w): exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)
         * holds one tensor per parameter of a group at once (groups run one
         * after the other). */
        return decay_bytes > no_decay_bytes ? decay_bytes : no_decay_bytes;
    case STEP_CLONE_AND_ADD:
        return 2 * largest;
    case STEP_FACTORED_FP32:
        return 2 * largest_elems * 4;
    case STEP_FORLOOP_DENOM: {
        uint64_t decay = forloop_denom(l, 1), no_decay = forloop_denom(l, 0);
        return decay > no_decay ? decay : no_decay;
    }
    }
    return 0;
}

void llmem_statics_optimizer(const tensor_list *l, const setup *s, step_static *st)
{
    const optimizer_desc *o = llmem_optimizer(s->optimizer);
    uint64_t grads = 0, states = 0, largest = 0, largest_elems = 0, tensors = 0;
    uint64_t decay_bytes = 0, no_decay_bytes = 0;
    for (int i = 0; i < l->n; i++) {
        const tensor_class *c = &l->c[i];
        if (!c->trainable)
            continue;
        /* Trainable tensors are never NF4; .grad and torch's states take their dtype. */
        uint64_t bytes = class_elems(c) * (uint64_t)c->dt;
        grads += bytes * c->count;
        tensors += c->count;
        if (in_decay_group(c))
            decay_bytes += bytes * c->count;
        else
            no_decay_bytes += bytes * c->count;
        if (bytes > largest)
            largest = bytes;
        if (class_elems(c) > largest_elems)
            largest_elems = class_elems(c);
        states += state_bytes(o, c, bytes) * c->count;
    }
    /* The fused step keeps each parameter's step count on the GPU. */
    if (o->step_counter && s->optimizer_impl == LLMEM_OPTIMIZER_IMPL_FUSED)
        states += tensors * STEP_COUNTER_BYTES;
    st->grads = grads;
    st->states = o->paged ? 0 : states;
    st->paged_states = o->paged ? states : 0;
    st->optimizer_step = step_bytes(o, s->optimizer_impl, l, decay_bytes, no_decay_bytes, largest,
                                    largest_elems);
}
