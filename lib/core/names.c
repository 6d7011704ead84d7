/* SPDX-License-Identifier: MIT */
#include "core/names.h"

#include "llmem.h"

#include <stdio.h>
#include <string.h>

static const name_value norm[] = { { "layernorm", LLMEM_NORM_LAYERNORM },
                                   { "rmsnorm", LLMEM_NORM_RMSNORM } };
static const name_value mlp[] = { { "plain", LLMEM_MLP_PLAIN }, { "gated", LLMEM_MLP_GATED } };
static const name_value positions[] = { { "learned", LLMEM_POSITIONS_LEARNED },
                                        { "rotary", LLMEM_POSITIONS_ROTARY },
                                        { "alibi", LLMEM_POSITIONS_ALIBI } };
static const name_value activation[] = {
    { "silu", LLMEM_ACTIVATION_SILU },           { "gelu", LLMEM_ACTIVATION_GELU },
    { "gelu-tanh", LLMEM_ACTIVATION_GELU_TANH }, { "gelu-new", LLMEM_ACTIVATION_GELU_NEW },
    { "gelu-fast", LLMEM_ACTIVATION_GELU_FAST }, { "relu", LLMEM_ACTIVATION_RELU },
};
static const name_value grad_ckpt[] = { { "none", LLMEM_GRAD_CKPT_NONE },
                                        { "full", LLMEM_GRAD_CKPT_FULL },
                                        { "reentrant", LLMEM_GRAD_CKPT_REENTRANT },
                                        { "non-reentrant", LLMEM_GRAD_CKPT_NON_REENTRANT } };
static const name_value attention[] = { { "eager", LLMEM_ATTENTION_EAGER },
                                        { "flash", LLMEM_ATTENTION_FLASH },
                                        { "sdpa", LLMEM_ATTENTION_SDPA } };
static const name_value optimizer_impl[] = { { "fused", LLMEM_OPTIMIZER_IMPL_FUSED },
                                             { "foreach", LLMEM_OPTIMIZER_IMPL_FOREACH },
                                             { "forloop", LLMEM_OPTIMIZER_IMPL_FORLOOP } };
static const name_value experts_impl[] = { { "grouped-mm", LLMEM_EXPERTS_IMPL_GROUPED_MM },
                                      { "loop", LLMEM_EXPERTS_IMPL_LOOP } };
static const name_value method[] = {
    { "full", LLMEM_METHOD_FULL }, { "lora", LLMEM_METHOD_LORA },
    { "qlora", LLMEM_METHOD_QLORA }, { "freeze", LLMEM_METHOD_FREEZE },
};
static const name_value loss[] = { { "upcast", LLMEM_LOSS_UPCAST },
                                   { "chunked", LLMEM_LOSS_CHUNKED } };
static const name_value formula[] = { { "phased", LLMEM_FORMULA_PHASED },
                                      { "article", LLMEM_FORMULA_ARTICLE } };
static const name_value lora_target[] = {
    { "q_proj", LLMEM_LORA_Q },       { "k_proj", LLMEM_LORA_K },   { "v_proj", LLMEM_LORA_V },
    { "o_proj", LLMEM_LORA_O },       { "gate_proj", LLMEM_LORA_GATE },
    { "up_proj", LLMEM_LORA_UP },     { "down_proj", LLMEM_LORA_DOWN },
    /* Each name's roles where the name is the module's in most families: an
     * estimate resolves names in the model's own family (model/modules.c). */
    { "c_attn", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    { "c_proj", LLMEM_LORA_O | LLMEM_LORA_DOWN },
    { "c_fc", LLMEM_LORA_UP },
    /* Fused projections: Phi-3's qkv_proj and gate_up_proj; query_key_value of
     * BLOOM, GPT-NeoX and Falcon. */
    { "qkv_proj", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    { "gate_up_proj", LLMEM_LORA_GATE | LLMEM_LORA_UP },
    { "query_key_value", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    /* Mixtral's experts (MixtralBlockSparseTop2MLP): w1 gate, w3 up, w2 down. */
    { "w1", LLMEM_LORA_GATE },
    { "w3", LLMEM_LORA_UP },
    { "w2", LLMEM_LORA_DOWN },
    /* The attention output and MLP projections of OPT (out_proj, fc1, fc2),
     * Phi (dense, fc1, fc2), BLOOM, GPT-NeoX and Falcon (dense, dense_h_to_4h,
     * dense_4h_to_h); multi-head latent attention's compressions (DeepSeek). */
    { "out_proj", LLMEM_LORA_O },       { "dense", LLMEM_LORA_O },
    { "fc1", LLMEM_LORA_UP },           { "fc2", LLMEM_LORA_DOWN },
    { "dense_h_to_4h", LLMEM_LORA_UP }, { "dense_4h_to_h", LLMEM_LORA_DOWN },
    { "q_a_proj", LLMEM_LORA_Q_A },     { "q_b_proj", LLMEM_LORA_Q },
    { "kv_a_proj_with_mqa", LLMEM_LORA_KV_A },
    { "kv_b_proj", LLMEM_LORA_K | LLMEM_LORA_V },
    /* Megatron-LM's linear_qkv, linear_proj, linear_fc1, linear_fc2. */
    { "linear_qkv", LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V },
    { "linear_proj", LLMEM_LORA_O },
    { "linear_fc1", LLMEM_LORA_UP },    { "linear_fc2", LLMEM_LORA_DOWN },
};
/* A set of these names is a 64-bit mask of rows (model/modules.c). */
typedef char lora_target_names_fit_a_mask[sizeof lora_target / sizeof lora_target[0] <= 64 ? 1 : -1];
static const name_value phase[] = {
    { "forward", LLMEM_PHASE_FORWARD },
    { "loss-backward", LLMEM_PHASE_LOSS_BACKWARD },
    { "backward", LLMEM_PHASE_BACKWARD },
    { "optimizer", LLMEM_PHASE_OPTIMIZER },
};
static const name_value term[] = {
    { "parameters", LLMEM_TERM_PARAMETERS }, { "optimizer", LLMEM_TERM_OPTIMIZER },
    { "data", LLMEM_TERM_DATA },             { "temporary", LLMEM_TERM_TEMPORARY },
};

const name_table llmem_names_norm = NAME_TABLE(norm);
const name_table llmem_names_mlp = NAME_TABLE(mlp);
const name_table llmem_names_positions = NAME_TABLE(positions);
const name_table llmem_names_grad_ckpt = NAME_TABLE(grad_ckpt);
const name_table llmem_names_attention = NAME_TABLE(attention);
const name_table llmem_names_optimizer_impl = NAME_TABLE(optimizer_impl);
const name_table llmem_names_method = NAME_TABLE(method);
const name_table llmem_names_experts_impl = NAME_TABLE(experts_impl);
const name_table llmem_names_loss = NAME_TABLE(loss);
const name_table llmem_names_formula = NAME_TABLE(formula);
const name_table llmem_names_lora_target = NAME_TABLE(lora_target);
const name_table llmem_names_phase = NAME_TABLE(phase);
const name_table llmem_names_term = NAME_TABLE(term);
const name_table llmem_names_activation = NAME_TABLE(activation);

size_t llmem_names_count(const name_table *t)
{
    return t->count + (t->more != NULL ? t->more_count : 0);
}

const name_value *llmem_names_at(const name_table *t, size_t i)
{
    if (i >= t->count)
        return (const name_value *)(const void *)((const char *)t->more +
                                                  (i - t->count) * t->more_stride);
    return (const name_value *)(const void *)((const char *)t->first + i * t->stride);
}

int llmem_names_lookup(const name_table *t, const char *name)
{
    if (name == NULL)
        return 0;
    for (size_t i = 0; i < llmem_names_count(t); i++)
        if (strcmp(llmem_names_at(t, i)->name, name) == 0)
            return llmem_names_at(t, i)->value;
    return 0;
}

const char *llmem_names_name(const name_table *t, int value)
{
    for (size_t i = 0; i < t->count; i++)
        if (llmem_names_at(t, i)->value == value)
            return llmem_names_at(t, i)->name;
    return NULL;
}

void llmem_names_list(const name_table *t, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < llmem_names_count(t) && used < cap; i++) {
        int n = snprintf(buf + used, cap - used, "%s%s", i ? "|" : "", llmem_names_at(t, i)->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

const char *llmem_phase_name(int value)
{
    return llmem_names_name(&llmem_names_phase, value);
}

const char *llmem_term_name(int value)
{
    return llmem_names_name(&llmem_names_term, value);
}
