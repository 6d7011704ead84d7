/* SPDX-License-Identifier: MIT */
/*
 * consumer: what a vendoring project does with libllmem. Prints the
 * library's version, whether its Hugging Face readers are built in, and the
 * peak of the default training setup of a preset (argv[1], else
 * meta-llama/Llama-3.2-1B); exits 1 on any failure.
 */
#include <llmem.h>

#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *preset = argc > 1 ? argv[1] : "meta-llama/Llama-3.2-1B";
    llmem_ctx *ctx = NULL;
    llmem_model *model = NULL, *hf = NULL;
    llmem_train *train = NULL;
    llmem_estimate *est = NULL;
    uint64_t peak = 0;
    int rc;

    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK)
        return 1;
    printf("version: %s\n", llmem_version_string());
    rc = llmem_model_new_hf_config_json(ctx, "{}", 2, &hf);
    printf("hf readers: %s\n", rc == LLMEM_ENOTSUP ? "absent" : "present");
    if ((rc = llmem_model_new_preset(ctx, preset, &model)) == LLMEM_OK &&
        (rc = llmem_train_new(ctx, &train)) == LLMEM_OK &&
        (rc = llmem_estimate_new(ctx, &est)) == LLMEM_OK &&
        (rc = llmem_estimate_run(est, model, train)) == LLMEM_OK &&
        (rc = llmem_estimate_get_u64(est, LLMEM_EST_PEAK_ALLOCATED, &peak)) == LLMEM_OK)
        printf("peak allocated: %" PRIu64 " bytes\n", peak);
    else
        fprintf(stderr, "consumer: %s: %s\n", llmem_status_str(rc), llmem_ctx_error(ctx));
    llmem_estimate_free(est);
    llmem_train_free(train);
    llmem_model_free(hf);
    llmem_model_free(model);
    llmem_ctx_free(ctx);
    return rc != LLMEM_OK;
}
