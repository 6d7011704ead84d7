/* SPDX-License-Identifier: MIT */
/* The training setup's fields for the field engine (core/fields.h): one row a
 * key, in key order, with the documented defaults. */
#include "train/train.h"

#include "gpu/gpu.h"
#include "train/optimizers.h"
#include "train/precisions.h"

#define INT(key, name, min, max, def) \
    { LLMEM_TRAIN_##key, name, FIELD_INT, min, max, 0, def, NULL }
#define NAMED(key, name, max, def, values) \
    { LLMEM_TRAIN_##key, name, FIELD_ENUM, 1, max, 0, def, values }

static const field_desc rows[] = {
    INT(BATCH, "batch", 1, 1 << 24, 1),
    INT(SEQ, "seq", 1, 1 << 28, 512),
    NAMED(PRECISION, "precision", LLMEM_PRECISION_BF16_AUTOCAST, LLMEM_PRECISION_BF16_MIXED,
          &llmem_names_precision),
    NAMED(OPTIMIZER, "optimizer", LLMEM_OPTIMIZER_PAGED_LION, LLMEM_OPTIMIZER_ADAMW,
          &llmem_names_optimizer),
    /* The Trainer's gradient_checkpointing defaults to False. */
    NAMED(GRAD_CKPT, "grad-ckpt", LLMEM_GRAD_CKPT_NON_REENTRANT, LLMEM_GRAD_CKPT_NONE,
          &llmem_names_grad_ckpt),
    /* transformers 5.x loads models with attn_implementation "sdpa" by default. */
    NAMED(ATTENTION, "attention", LLMEM_ATTENTION_SDPA, LLMEM_ATTENTION_SDPA,
          &llmem_names_attention),
    /* p = 1 zeroes everything and divides by zero: the bound is open. The
     * default, TRAIN_DROPOUT_MODEL, is each site at the model's own
     * probability: the Trainer trains the model in train mode. */
    { LLMEM_TRAIN_DROPOUT, "dropout", FIELD_REAL, 0, 1, 1, TRAIN_DROPOUT_MODEL, NULL },
    NAMED(METHOD, "method", 4, LLMEM_METHOD_FULL, &llmem_names_method),
    /* PEFT's default LoraConfig: r = 8, target modules q_proj and v_proj for Llama. */
    INT(LORA_RANK, "lora-rank", 1, 1 << 20, 8),
    { LLMEM_TRAIN_LORA_TARGETS, "lora-targets", FIELD_MASK, 1, 511, 0,
      LLMEM_LORA_Q | LLMEM_LORA_V, &llmem_names_lora_target },
    INT(FROZEN_LAYERS, "freeze-layers", 0, 1 << 20, 0),
    NAMED(LOSS, "loss", 2, LLMEM_LOSS_UPCAST, &llmem_names_loss),
    INT(GRAD_ACCUM, "grad-accum", 1, 1 << 20, 1),
    NAMED(FORMULA, "formula", 2, LLMEM_FORMULA_PHASED, &llmem_names_formula),
    { LLMEM_TRAIN_ARTICLE_TMP_FACTOR, "article-tmp-factor", FIELD_REAL, 0, 1000, 0, 0, NULL },
    /* The article's example stores parameters in fp32: 4 bytes each. */
    INT(ARTICLE_PARAM_BYTES, "article-param-bytes", 1, 8, 4),
    /* The Trainer's default optim is "adamw_torch_fused" with torch >= 2.8
     * (transformers training_args.py, default_optim). */
    NAMED(OPTIMIZER_IMPL, "optimizer-impl", LLMEM_OPTIMIZER_IMPL_FORLOOP,
          LLMEM_OPTIMIZER_IMPL_FUSED, &llmem_names_optimizer_impl),
    /* PEFT's LoraConfig.lora_dropout defaults to 0.0; p = 1 is open, as for dropout. */
    { LLMEM_TRAIN_LORA_DROPOUT, "lora-dropout", FIELD_REAL, 0, 1, 1, 0, NULL },
    /* A GPU of the catalog, or 0 (the default): none chosen, the estimate
     * takes GPU_DEFAULT_ARCH's constants. */
    { LLMEM_TRAIN_GPU, "gpu", FIELD_ENUM, 0, GPU_END - 1, 0, 0, &llmem_names_gpu },
    /* transformers 5.x picks grouped_mm where torch._grouped_mm dispatches
     * (modeling_utils.py, get_correct_experts_implementation). */
    NAMED(EXPERTS_IMPL, "experts-impl", 2, LLMEM_EXPERTS_IMPL_GROUPED_MM, &llmem_names_experts_impl),
};

/* The handle's arrays have one slot a key: a new key needs its row here. */
typedef char train_fields_cover_every_key[sizeof rows / sizeof rows[0] + 1 == TRAIN_KEY_END ? 1 : -1];

const field_table llmem_train_fields = FIELD_TABLE(LLMEM_OBJECT_TRAIN, "train", rows);
