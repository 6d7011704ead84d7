/* SPDX-License-Identifier: MIT */
/*
 * estimate_llama: how much GPU memory does full fine-tuning of Llama-3.1-8B
 * take, in bf16 mixed precision with AdamW, 4 sequences of 2048 tokens per
 * micro-batch?
 *
 * Build against an installed libllmem:
 *     cc estimate_llama.c $(pkg-config --cflags --libs libllmem) -o estimate_llama
 *
 * Every fallible libllmem call returns an int status: 0 (LLMEM_OK) or a
 * negative LLMEM_E* code. On failure the context holds a message naming the
 * offending field and value, so this example checks every status and prints
 * that message.
 */
#include <llmem.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Print the failed call, its status and the context's message; jump to the
 * cleanup code (every object is NULL-safe to free). */
#define CHECK(call)                                                                     \
    do {                                                                                \
        int rc_ = (call);                                                               \
        if (rc_ != LLMEM_OK) {                                                          \
            fprintf(stderr, "estimate_llama: %s: %s: %s\n", #call, llmem_status_str(rc_), \
                    llmem_ctx_error(ctx));                                              \
            goto cleanup;                                                               \
        }                                                                               \
    } while (0)

static double gib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

int main(void)
{
    llmem_ctx *ctx = NULL;
    llmem_model *model = NULL;
    llmem_train *train = NULL;
    llmem_estimate *est = NULL;
    int status = EXIT_FAILURE;
    uint64_t params = 0, allocated = 0, reserved = 0, device = 0, phase = 0;

    /* The header this program was compiled with must not be newer than the
     * library it runs with. */
    if (llmem_version_number() < LLMEM_VERSION_NUMBER) {
        fprintf(stderr, "estimate_llama: libllmem %s is older than its header\n",
                llmem_version_string());
        return EXIT_FAILURE;
    }

    /* A context carries the allocator (NULL: malloc/free) and the last error
     * message. Nothing else in libllmem is global. */
    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK) {
        fprintf(stderr, "estimate_llama: out of memory\n");
        return EXIT_FAILURE;
    }

    /* The model: a built-in preset (`llmem models` lists them). */
    CHECK(llmem_model_new_preset(ctx, "meta-llama/Llama-3.1-8B", &model));

    /* The training setup: fields are set by key, by value or by name. */
    CHECK(llmem_train_new(ctx, &train));
    CHECK(llmem_train_set_str(train, LLMEM_TRAIN_PRECISION, "bf16-mixed"));
    CHECK(llmem_train_set_int(train, LLMEM_TRAIN_OPTIMIZER, LLMEM_OPTIMIZER_ADAMW));
    CHECK(llmem_train_set_int(train, LLMEM_TRAIN_BATCH, 4));
    CHECK(llmem_train_set_int(train, LLMEM_TRAIN_SEQ, 2048));
    CHECK(llmem_train_set_str(train, LLMEM_TRAIN_ATTENTION, "flash"));
    CHECK(llmem_train_set_str(train, LLMEM_TRAIN_GRAD_CKPT, "full"));

    /* Run the estimate. The handle can be run again with other inputs
     * without allocating. */
    CHECK(llmem_estimate_new(ctx, &est));
    CHECK(llmem_estimate_run(est, model, train));

    CHECK(llmem_estimate_get_u64(est, LLMEM_EST_PARAMS_TOTAL, &params));
    /* Three levels: live tensors (torch.cuda.max_memory_allocated), plus the
     * caching allocator, plus the CUDA context (what nvidia-smi shows). */
    CHECK(llmem_estimate_get_u64(est, LLMEM_EST_PEAK_ALLOCATED, &allocated));
    CHECK(llmem_estimate_get_u64(est, LLMEM_EST_PEAK_RESERVED, &reserved));
    CHECK(llmem_estimate_get_u64(est, LLMEM_EST_PEAK_DEVICE, &device));
    CHECK(llmem_estimate_get_u64(est, LLMEM_EST_PEAK_PHASE, &phase));

    printf("model: meta-llama/Llama-3.1-8B, %" PRIu64 " parameters\n", params);
    printf("setup: bf16-mixed, adamw, batch 4 x 2048 tokens, flash attention, "
           "gradient checkpointing\n");
    printf("peak allocated: %" PRIu64 " bytes (%.2f GiB)\n", allocated, gib(allocated));
    printf("peak reserved:  %" PRIu64 " bytes (%.2f GiB)\n", reserved, gib(reserved));
    printf("peak device:    %" PRIu64 " bytes (%.2f GiB)\n", device, gib(device));
    printf("peak phase:     %s\n", llmem_phase_name((int)phase));

    /* The source article's four terms, at the instant of the peak. */
    for (int kind = LLMEM_TERM_PARAMETERS; kind <= LLMEM_TERM_TEMPORARY; kind++) {
        const llmem_term *term = NULL;
        CHECK(llmem_estimate_term(est, kind, &term));
        printf("  %-10s %8.2f GiB\n", llmem_term_name(kind), gib(llmem_term_bytes_at_peak(term)));
    }
    status = EXIT_SUCCESS;

cleanup:
    /* Free every object before its context; each free accepts NULL. */
    llmem_estimate_free(est);
    llmem_train_free(train);
    llmem_model_free(model);
    llmem_ctx_free(ctx);
    return status;
}
