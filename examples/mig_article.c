/* SPDX-License-Identifier: MIT */
/*
 * mig_article: the source article's scenario. One A100 80GB split by MIG into
 * seven instances, each fine-tuning its own small model at the same time.
 * Each job is estimated on the A100 (its device-level peak, that GPU's CUDA
 * context and cuBLAS workspace included),
 * fitted to the smallest MIG slice that holds it with the default 5 % margin,
 * and the seven are packed onto one GPU with a valid MIG layout, printed as
 * an NVIDIA mig-parted configuration and `nvidia-smi` commands.
 *
 * Build against an installed libllmem:
 *     cc mig_article.c $(pkg-config --cflags --libs libllmem) -o mig_article
 *
 * Exit status 0 when the seven jobs share one A100 80GB.
 */
#include <llmem.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        int rc_ = (call);                                                               \
        if (rc_ != LLMEM_OK) {                                                          \
            fprintf(stderr, "mig_article: %s: %s: %s\n", #call, llmem_status_str(rc_),  \
                    llmem_ctx_error(ctx));                                              \
            goto cleanup;                                                               \
        }                                                                               \
    } while (0)

/* One fine-tuning job: a preset and how it is trained. */
typedef struct job {
    const char *id, *preset, *method;
    int64_t batch, seq, lora_rank;
    int grad_ckpt; /* recompute activations in backward */
} job;

/* Seven small models, LoRA or QLoRA or full, with flash attention and the
 * chunked loss (the memory-lean choices a shared GPU calls for). */
static const job jobs[] = {
    { "gpt2-full", "openai-community/gpt2", "full", 8, 512, 8, 0 },
    { "gpt2-medium-lora", "openai-community/gpt2-medium", "lora", 4, 512, 8, 0 },
    { "gpt2-large-lora", "openai-community/gpt2-large", "lora", 2, 512, 8, 0 },
    { "qwen2.5-0.5b-lora", "Qwen/Qwen2.5-0.5B", "lora", 4, 512, 8, 0 },
    { "llama-3.2-1b-lora", "meta-llama/Llama-3.2-1B", "lora", 2, 512, 16, 0 },
    { "llama-3.2-3b-qlora", "meta-llama/Llama-3.2-3B", "qlora", 2, 1024, 8, 1 },
    { "phi-3-mini-qlora", "microsoft/Phi-3-mini-4k-instruct", "qlora", 2, 1024, 8, 1 },
};
#define JOBS (sizeof jobs / sizeof jobs[0])

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
    llmem_fit *fit = NULL;
    llmem_pack *pack = NULL;
    char *config = NULL;
    size_t a100 = 0, len = 0, option = 0;
    uint64_t peak[JOBS], used = 0, bound = 0, placed = 0;
    int status = EXIT_FAILURE;

    if (llmem_ctx_new(&ctx, NULL) != LLMEM_OK)
        return EXIT_FAILURE;
    CHECK(llmem_gpu_find(ctx, "A100-80GB", &a100));
    CHECK(llmem_estimate_new(ctx, &est));
    CHECK(llmem_fit_new(ctx, &fit));
    CHECK(llmem_pack_new(ctx, &pack));
    CHECK(llmem_pack_add_gpu(pack, a100, 1)); /* one GPU, as in the article */

    printf("%-20s %-34s %10s  %s\n", "job", "model", "peak", "smallest slice (5% margin)");
    for (size_t i = 0; i < JOBS; i++) {
        const job *j = &jobs[i];
        CHECK(llmem_model_new_preset(ctx, j->preset, &model));
        CHECK(llmem_train_new(ctx, &train));
        CHECK(llmem_train_set_str(train, LLMEM_TRAIN_METHOD, j->method));
        CHECK(llmem_train_set_int(train, LLMEM_TRAIN_BATCH, j->batch));
        CHECK(llmem_train_set_int(train, LLMEM_TRAIN_SEQ, j->seq));
        CHECK(llmem_train_set_int(train, LLMEM_TRAIN_LORA_RANK, j->lora_rank));
        CHECK(llmem_train_set_str(train, LLMEM_TRAIN_ATTENTION, "flash"));
        CHECK(llmem_train_set_str(train, LLMEM_TRAIN_LOSS, "chunked"));
        /* The A100's CUDA context and cuBLAS workspace in the peak. */
        CHECK(llmem_train_set_str(train, LLMEM_TRAIN_GPU, "A100-80GB"));
        if (j->grad_ckpt)
            CHECK(llmem_train_set_str(train, LLMEM_TRAIN_GRAD_CKPT, "full"));
        CHECK(llmem_estimate_run(est, model, train));
        /* The device level is what must fit in a MIG slice: each instance
         * runs its own process with its own CUDA context. */
        CHECK(llmem_estimate_get_u64(est, LLMEM_EST_PEAK_DEVICE, &peak[i]));
        CHECK(llmem_fit_run(fit, a100, peak[i], LLMEM_LEVEL_DEVICE));
        int found = llmem_fit_best(fit, &option) == LLMEM_OK;
        printf("%-20s %-34s %6.2f GiB  %s\n", j->id, j->preset, gib(peak[i]),
               found ? llmem_fit_name(fit, option) : "none");
        CHECK(llmem_pack_add_job(pack, j->id, peak[i], LLMEM_LEVEL_DEVICE, 0));
        llmem_train_free(train);
        llmem_model_free(model);
        train = NULL;
        model = NULL;
    }

    CHECK(llmem_pack_run(pack));
    CHECK(llmem_pack_get_u64(pack, LLMEM_PACK_GPUS_USED, &used));
    CHECK(llmem_pack_get_u64(pack, LLMEM_PACK_LOWER_BOUND, &bound));
    CHECK(llmem_pack_get_u64(pack, LLMEM_PACK_JOBS_PLACED, &placed));
    printf("\n%" PRIu64 " of %zu jobs on %" PRIu64 " A100 80GB (at least %" PRIu64 " needed)\n",
           placed, JOBS, used, bound);
    for (size_t i = 0; i < JOBS; i++) {
        uint64_t start = 0;
        const char *resource = llmem_pack_job_resource(pack, i);
        if (resource != NULL)
            CHECK(llmem_pack_job_u64(pack, i, LLMEM_PACK_JOB_START, &start));
        printf("  %-20s %-24s slot %" PRIu64 "\n", jobs[i].id, resource ? resource : "(unplaced)",
               start);
    }

    /* The mig-parted configuration: ask for its length, then write it. */
    CHECK(llmem_pack_mig_parted(pack, "article", NULL, 0, &len));
    config = malloc(len + 1);
    if (config == NULL)
        goto cleanup;
    CHECK(llmem_pack_mig_parted(pack, "article", config, len + 1, NULL));
    printf("\n%s", config);
    free(config);
    CHECK(llmem_pack_nvidia_smi(pack, NULL, 0, &len));
    config = malloc(len + 1);
    if (config == NULL)
        goto cleanup;
    CHECK(llmem_pack_nvidia_smi(pack, config, len + 1, NULL));
    printf("\n%s", config);
    status = placed == JOBS && used == 1 ? EXIT_SUCCESS : EXIT_FAILURE;

cleanup:
    free(config);
    llmem_pack_free(pack);
    llmem_fit_free(fit);
    llmem_estimate_free(est);
    llmem_train_free(train);
    llmem_model_free(model);
    llmem_ctx_free(ctx);
    return status;
}
