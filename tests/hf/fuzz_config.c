/* SPDX-License-Identifier: MIT */
/* libFuzzer target: arbitrary bytes as config.json text. Whatever the input,
 * the reader returns a status; a model it accepts validates and answers every
 * query; and json-c parses every text the strict check (hf/scan.h) lets
 * through, or the reader would report it as "cannot parse the JSON text". */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "llmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llmem_ctx *ctx = NULL;
    llmem_model *m = NULL;
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK)
        return 0;
    int rc = llmem_model_new_hf_config_json(ctx, (const char *)data, size, &m);
    /* The prefix: the text itself may hold these words (a model_type). */
    static const char disagree[] = "config.json: cannot parse the JSON text";
    if (rc == LLMEM_EPARSE && strncmp(llmem_ctx_error(ctx), disagree, sizeof disagree - 1) == 0)
        __builtin_trap(); /* the check and json-c disagree */
    if (rc == LLMEM_OK) {
        uint64_t n;
        int64_t v;
        if (llmem_model_validate(m) != LLMEM_OK || llmem_model_param_count(m, &n) != LLMEM_OK)
            __builtin_trap(); /* an accepted config must count */
        for (int key = LLMEM_MODEL_FAMILY; key <= LLMEM_MODEL_DTYPE_BYTES; key++)
            (void)llmem_model_get_int(m, key, &v);
        llmem_model_free(m);
    }
    llmem_ctx_free(ctx);
    return 0;
}
