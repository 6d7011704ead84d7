/* SPDX-License-Identifier: MIT */
/* libFuzzer target: arbitrary bytes as a whole safetensors file in memory.
 * Whatever the input, the parser returns a status; totals it accepts are
 * consistent (the per-dtype sums add up to the totals, bytes with those of
 * bitsandbytes' quantization state). */
#include <stddef.h>
#include <stdint.h>

#include "llmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llmem_ctx *ctx = NULL;
    llmem_weights *w = NULL;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK)
        return 0;
    if (llmem_weights_open_buffer(ctx, data, size, &w) == LLMEM_OK) {
        uint64_t params = 0, bytes = 0, state = 0, tensors = 0, state_tensors = 0, p, b;
        uint64_t sum_p = 0, sum_b;
        const char *name;
        (void)llmem_weights_get_u64(w, LLMEM_WEIGHTS_PARAMS, &params);
        (void)llmem_weights_get_u64(w, LLMEM_WEIGHTS_BYTES, &bytes);
        (void)llmem_weights_get_u64(w, LLMEM_WEIGHTS_TENSORS, &tensors);
        (void)llmem_weights_get_u64(w, LLMEM_WEIGHTS_QUANT_STATE_BYTES, &state);
        (void)llmem_weights_get_u64(w, LLMEM_WEIGHTS_QUANT_STATE_TENSORS, &state_tensors);
        sum_b = state;
        if (state_tensors > tensors || (state_tensors == 0 && state != 0))
            __builtin_trap();
        for (size_t i = 0; i < llmem_weights_dtype_count(w); i++) {
            if (llmem_weights_dtype(w, i, &name, &p, &b) != LLMEM_OK || name == NULL)
                __builtin_trap();
            sum_p += p;
            sum_b += b;
        }
        /* The data region is covered exactly by the tensors. */
        if (sum_p != params || sum_b != bytes || bytes > size)
            __builtin_trap();
        llmem_weights_free(w);
    }
    llmem_ctx_free(ctx);
    return 0;
}
