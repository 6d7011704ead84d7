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

/* The roles of PEFT's "all-linear" in a model of shape m: every linear
 * module of its decoder layers. With grouped_mm experts (experts_impl) the
 * routed experts are 3-D parameters, which PEFT's all-linear, matching
 * nn.Linear modules, leaves out: then the attention's roles, when the model
 * has no other MLP (Mixtral); 0 when it has a shared expert or dense layers,
 * whose MLP PEFT adapts while the experts' is not (the roles cannot say so:
 * not modelled). */
unsigned llmem_lora_all_linear_roles(const model_shape *m, int experts_impl);

/* Whether bit i of the names (as above) is "all-linear". */
int llmem_lora_modules_all_linear(uint64_t names);

/* The module names of m's family, with commas, that select exactly the
 * linears the roles select (in a model with routed experts, the same MLP
 * roles too), as PEFT's target_modules: the names an estimate prints, which
 * set again give the same estimate. Returns the length written (without
 * the NUL, at most cap - 1), or -1 when no set of names does (GPT-2's
 * c_proj is both output projections: the o role alone has no name) or none
 * fits in cap. */
int llmem_lora_modules_names(const model_shape *m, unsigned roles, char *buf, size_t cap);

/* The bits (as above) of a comma-separated list of known names. */
uint64_t llmem_lora_modules_mask(const char *text);

/* "a, b, c": the module names a model of shape m has, for messages. */
void llmem_lora_modules_list(const model_shape *m, char *buf, size_t cap);

#endif
