/* SPDX-License-Identifier: MIT */
/* The optimizers (optimizers.h), as PyTorch 2.x runs them on CUDA. */
#include "train/optimizers.h"

#include "llmem.h"

#define ROW(value, name) [LLMEM_OPTIMIZER_##value] = { { name, LLMEM_OPTIMIZER_##value }

static const optimizer_desc rows[] = {
    /* torch.optim.AdamW / Adam: exp_avg and exp_avg_sq like the parameter; the
     * foreach step (_multi_tensor_adam) holds torch._foreach_sqrt(exp_avg_sqs)
     * for a parameter group. The article: "momentum and variance", 2 x m_p. */
    ROW(ADAMW, "adamw"), STATES_LIKE_PARAM, 2, 0, STEP_FOREACH_SQRT, 2.0, 0 },
    ROW(ADAM, "adam"), STATES_LIKE_PARAM, 2, 0, STEP_FOREACH_SQRT, 2.0, 0 },
    /* torch.optim.SGD: no state; _foreach_add_ in place. */
    ROW(SGD, "sgd"), STATES_LIKE_PARAM, 0, 0, STEP_IN_PLACE, 0, 0 },
    /* SGD with momentum: momentum_buffer like the parameter, updated in place. */
    ROW(SGD_MOMENTUM, "sgd-momentum"), STATES_LIKE_PARAM, 1, 0, STEP_IN_PLACE, 1.0, 0 },
    /* transformers' Adafactor: factored fp32 second moments (plus RMS and step
     * scalars); per parameter, grad**2 + eps and the update in fp32. The
     * article's formula has no term for factored states. */
    ROW(ADAFACTOR, "adafactor"), STATES_FACTORED, 0, 0, STEP_FACTORED_FP32, 0, 0 },
    /* bitsandbytes AdamW8bit: two 1-byte states, one fused kernel per tensor. */
    ROW(ADAMW_8BIT, "adamw-8bit"), STATES_BLOCKWISE_8BIT, 2, 0, STEP_IN_PLACE, 0, 2 },
    /* lion-pytorch: exp_avg like the parameter; update = exp_avg.clone()...add(). */
    ROW(LION, "lion"), STATES_LIKE_PARAM, 1, 0, STEP_CLONE_AND_ADD, 1.0, 0 },
    /* bitsandbytes PagedAdamW8bit / PagedAdamW: states from cudaMallocManaged
     * (F.get_paged, functional.py), outside torch's allocator. */
    ROW(PAGED_ADAMW_8BIT, "paged-adamw-8bit"), STATES_BLOCKWISE_8BIT, 2, 1, STEP_IN_PLACE, 0, 2 },
    ROW(PAGED_ADAMW, "paged-adamw"), STATES_FP32, 2, 1, STEP_IN_PLACE, 0, 8 },
};

#define ROW_COUNT (sizeof rows / sizeof rows[0])

/* Every llmem_optimizer value has its row: the array ends at the last value. */
typedef char optimizer_rows_cover_every_value[ROW_COUNT == LLMEM_OPTIMIZER_PAGED_ADAMW + 1 ? 1 : -1];

/* Rows start at value 1; row 0 is the unused slot of no optimizer. */
const name_table llmem_names_optimizer = NAME_TABLE_OF_ROWS(rows + 1, ROW_COUNT - 1);

const optimizer_desc *llmem_optimizer(int optimizer)
{
    if (optimizer < 1 || (size_t)optimizer >= ROW_COUNT || rows[optimizer].id.name == NULL)
        return NULL;
    return &rows[optimizer];
}
