/* SPDX-License-Identifier: MIT */
/* The training-setup handle: its fields through the field engine. */
#ifndef LLMEM_TRAIN_TRAIN_H
#define LLMEM_TRAIN_TRAIN_H

#include "core/fields.h"
#include "llmem.h"

#include <stdint.h>

/* One past the largest llmem_train_key (train_fields.c checks its table
 * against it at compile time). */
#define TRAIN_KEY_END (LLMEM_TRAIN_EXPERTS_IMPL + 1)

/* The dropout field's value for "the model's own probabilities" (its default;
 * "model" as text): outside the field's [0, 1), so the setters take it
 * before the field engine checks the bounds. */
#define TRAIN_DROPOUT_MODEL (-1.0)
#define TRAIN_DROPOUT_MODEL_NAME "model"

struct llmem_train {
    llmem_ctx *ctx;
    int64_t i[TRAIN_KEY_END]; /* integer and enumerated fields */
    double d[TRAIN_KEY_END];  /* real fields */
    /* The LoRA targets as last set by name (bit i: row i of
     * llmem_names_lora_target), resolved in the model's family; 0 when set
     * as role bits (model/modules.h). */
    uint64_t lora_names;
    /* Bit k: field k set by the caller (an implementation a Trainer optim
     * name implies is not), for the check below. */
    uint32_t given;
};

extern const field_table llmem_train_fields;

/* A field the caller set away from its default that the setup does not
 * read (llmem_train_unread says why): the status, the message naming the
 * field; else LLMEM_OK. */
int llmem_train_check_unread(llmem_ctx *ctx, const llmem_train *t);

#endif
