/* SPDX-License-Identifier: MIT */
#include "train/precisions.h"

#include "llmem.h"

#define ROW(value, name) [LLMEM_PRECISION_##value] = { { name, LLMEM_PRECISION_##value }

static const precision_desc rows[] = {
    ROW(FP32, "fp32"), 4, 4, 0 },
    /* Mixed precision keeps fp32 weights (master weights) and autocasts. */
    ROW(BF16_MIXED, "bf16-mixed"), 4, 2, 1 },
    ROW(FP16_MIXED, "fp16-mixed"), 4, 2, 1 },
    ROW(BF16, "bf16"), 2, 2, 0 },
    /* bf16 weights (from_pretrained's dtype "auto" on a bf16 checkpoint) under
     * bf16 autocast: no cast copies of the weights, the fp32 list still in
     * fp32; gradients and torch's states follow the weights. */
    ROW(BF16_AUTOCAST, "bf16-autocast"), 2, 2, 1 },
};

#define ROW_COUNT (sizeof rows / sizeof rows[0])

typedef char precision_rows_cover_every_value[ROW_COUNT == LLMEM_PRECISION_BF16_AUTOCAST + 1 ? 1 : -1];

const name_table llmem_names_precision = NAME_TABLE_OF_ROWS(rows + 1, ROW_COUNT - 1);

const precision_desc *llmem_precision(int precision)
{
    if (precision < 1 || (size_t)precision >= ROW_COUNT || rows[precision].id.name == NULL)
        return NULL;
    return &rows[precision];
}
