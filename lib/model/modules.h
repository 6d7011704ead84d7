/* SPDX-License-Identifier: MIT */
/*
 * The Hugging Face module names of a decoder layer's linears, family by
 * family, and the llmem_lora_target roles each name selects: what PEFT's
 * target_modules matches (the last component of a module's name).
 */
#ifndef LLMEM_MODEL_MODULES_H
#define LLMEM_MODEL_MODULES_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

/* The roles of the modules named in names (bit i: row i of
 * llmem_names_lora_target) that a model of shape m has; names it lacks select
 * nothing, as PEFT ignores a target that matches no module. */
unsigned llmem_lora_modules_roles(const model_shape *m, uint64_t names);

/* The bits (as above) of a comma-separated list of known names. */
uint64_t llmem_lora_modules_mask(const char *text);

/* "a, b, c": the module names a model of shape m has, for messages. */
void llmem_lora_modules_list(const model_shape *m, char *buf, size_t cap);

#endif
