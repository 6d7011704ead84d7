/* SPDX-License-Identifier: MIT */
/* The optimizers (optimizers.h), as PyTorch 2.x runs them on CUDA. */
#include "train/optimizers.h"

#include <string.h>

#define ROW(value, name) [LLMEM_OPTIMIZER_##value] = { { name, LLMEM_OPTIMIZER_##value }
/* Step rules by implementation: fused, foreach, forloop. */
#define STEPS(fused, foreach, forloop) { 0, fused, foreach, forloop }
/* Optimizers with one implementation of their own ignore the choice. */
#define ONE_STEP(rule) STEPS(rule, rule, rule)

static const optimizer_desc rows[] = {
    /* torch.optim.AdamW / Adam (torch/optim/adam.py): exp_avg and exp_avg_sq like
     * the parameter. _fused_adam: one kernel, state['step'] a 0-dim fp32 tensor on
     * the parameter's device (_get_scalar_dtype(is_fused=True)). _multi_tensor_adam:
     * exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs) for a parameter group.
     * _single_tensor_adam: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
     * per parameter. The article: "momentum and variance", 2 x m_p. */
    ROW(ADAMW, "adamw"), STATES_LIKE_PARAM, 2, 0,
        STEPS(STEP_IN_PLACE, STEP_FOREACH_SQRT, STEP_FORLOOP_DENOM), 1, 2.0, 0 },
    ROW(ADAM, "adam"), STATES_LIKE_PARAM, 2, 0,
        STEPS(STEP_IN_PLACE, STEP_FOREACH_SQRT, STEP_FORLOOP_DENOM), 1, 2.0, 0 },
    /* torch.optim.SGD: no state; every implementation updates in place
     * (_fused_sgd_, _foreach_add_, param.add_). */
    ROW(SGD, "sgd"), STATES_LIKE_PARAM, 0, 0, ONE_STEP(STEP_IN_PLACE), 0, 0, 0 },
    /* SGD with momentum: momentum_buffer like the parameter, updated in place. */
    ROW(SGD_MOMENTUM, "sgd-momentum"), STATES_LIKE_PARAM, 1, 0, ONE_STEP(STEP_IN_PLACE), 0,
        1.0, 0 },
    /* transformers' Adafactor: factored fp32 second moments (plus RMS and step
     * scalars); per parameter, grad**2 + eps and the update in fp32. The
     * article's formula has no term for factored states. */
    ROW(ADAFACTOR, "adafactor"), STATES_FACTORED, 0, 0, ONE_STEP(STEP_FACTORED_FP32), 0, 0, 0 },
    /* bitsandbytes AdamW8bit: two 1-byte states, one fused kernel per tensor. */
    ROW(ADAMW_8BIT, "adamw-8bit"), STATES_BLOCKWISE_8BIT, 2, 0, ONE_STEP(STEP_IN_PLACE), 0,
        0, 2 },
    /* lion-pytorch: exp_avg like the parameter; update = exp_avg.clone()...add(). */
    ROW(LION, "lion"), STATES_LIKE_PARAM, 1, 0, ONE_STEP(STEP_CLONE_AND_ADD), 0, 1.0, 0 },
    /* bitsandbytes PagedAdamW8bit / PagedAdamW: states from cudaMallocManaged
     * (F.get_paged, functional.py), outside torch's allocator. */
    ROW(PAGED_ADAMW_8BIT, "paged-adamw-8bit"), STATES_BLOCKWISE_8BIT, 2, 1,
        ONE_STEP(STEP_IN_PLACE), 0, 0, 2 },
    ROW(PAGED_ADAMW, "paged-adamw"), STATES_FP32, 2, 1, ONE_STEP(STEP_IN_PLACE), 0, 0, 8 },
    /* bitsandbytes Lion (Optimizer1State): one state, 8-bit blockwise or fp32
     * (optim_bits = 32 makes every state fp32), one fused kernel per tensor. */
    ROW(LION_8BIT, "lion-8bit"), STATES_BLOCKWISE_8BIT, 1, 0, ONE_STEP(STEP_IN_PLACE), 0, 0, 1 },
    ROW(LION_32BIT, "lion-32bit"), STATES_FP32, 1, 0, ONE_STEP(STEP_IN_PLACE), 0, 0, 4 },
    ROW(PAGED_LION_8BIT, "paged-lion-8bit"), STATES_BLOCKWISE_8BIT, 1, 1,
        ONE_STEP(STEP_IN_PLACE), 0, 0, 1 },
    ROW(PAGED_LION, "paged-lion"), STATES_FP32, 1, 1, ONE_STEP(STEP_IN_PLACE), 0, 0, 4 },
};

#define ROW_COUNT (sizeof rows / sizeof rows[0])

/* Every llmem_optimizer value has its row: the array ends at the last value. */
typedef char optimizer_rows_cover_every_value[ROW_COUNT == LLMEM_OPTIMIZER_PAGED_LION + 1 ? 1 : -1];

/* The Hugging Face Trainer's optim names (transformers training_args.py,
 * OptimizerNames) for our optimizers, and the implementation a name asks
 * for: "adamw_torch" is torch.optim.AdamW as torch defaults it on CUDA
 * (foreach), "adamw_torch_fused" passes fused=True. "adafactor" and "sgd"
 * are our names too. */
typedef struct trainer_name {
    name_value id; /* first member: the alias rows of the names table */
    int impl;      /* llmem_optimizer_impl, or 0 */
} trainer_name;

static const trainer_name trainer_names[] = {
    { { "adamw_torch", LLMEM_OPTIMIZER_ADAMW }, LLMEM_OPTIMIZER_IMPL_FOREACH },
    { { "adamw_torch_fused", LLMEM_OPTIMIZER_ADAMW }, LLMEM_OPTIMIZER_IMPL_FUSED },
    { { "adamw_bnb_8bit", LLMEM_OPTIMIZER_ADAMW_8BIT }, 0 },
    { { "adamw_8bit", LLMEM_OPTIMIZER_ADAMW_8BIT }, 0 },
    { { "paged_adamw_8bit", LLMEM_OPTIMIZER_PAGED_ADAMW_8BIT }, 0 },
    { { "paged_adamw_32bit", LLMEM_OPTIMIZER_PAGED_ADAMW }, 0 },
    { { "lion_8bit", LLMEM_OPTIMIZER_LION_8BIT }, 0 },
    { { "lion_32bit", LLMEM_OPTIMIZER_LION_32BIT }, 0 },
    { { "paged_lion_8bit", LLMEM_OPTIMIZER_PAGED_LION_8BIT }, 0 },
    { { "paged_lion_32bit", LLMEM_OPTIMIZER_PAGED_LION }, 0 },
};

/* Rows start at value 1; row 0 is the unused slot of no optimizer. */
const name_table llmem_names_optimizer =
    NAME_TABLE_OF_ROWS_AND_ALIASES(rows + 1, ROW_COUNT - 1, trainer_names);

const optimizer_desc *llmem_optimizer(int optimizer)
{
    if (optimizer < 1 || (size_t)optimizer >= ROW_COUNT || rows[optimizer].id.name == NULL)
        return NULL;
    return &rows[optimizer];
}

int llmem_optimizer_implied_impl(const char *name)
{
    if (name == NULL)
        return 0;
    for (size_t i = 0; i < sizeof trainer_names / sizeof trainer_names[0]; i++)
        if (strcmp(trainer_names[i].id.name, name) == 0)
            return trainer_names[i].impl;
    return 0;
}
