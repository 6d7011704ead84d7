/* SPDX-License-Identifier: MIT */
#include "core/names.h"

#include "llmem.h"

#include <stdint.h>
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
    /* PEFT's target_modules="all-linear": every linear of the decoder layers
     * (model/modules.c says which in each family). Last, so a mask of
     * roles is spelled with the names above. */
    { LLMEM_LORA_ALL_LINEAR_NAME, LLMEM_LORA_Q | LLMEM_LORA_K | LLMEM_LORA_V | LLMEM_LORA_O |
                                      LLMEM_LORA_GATE | LLMEM_LORA_UP | LLMEM_LORA_DOWN |
                                      LLMEM_LORA_Q_A | LLMEM_LORA_KV_A },
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

/* strcmp(a, b) == 0 inline: a planner sets a name at every call, and a
 * library strcmp per row cost it more than the rest of the setter. Most
 * rows differ at the first byte. */
static int same_name(const char *a, const char *b)
{
    for (; *a == *b; a++, b++)
        if (*a == '\0')
            return 1;
    return 0;
}

size_t llmem_names_index(const name_table *t, const char *name)
{
    size_t n = llmem_names_count(t);
    if (name == NULL)
        return n;
    for (size_t i = 0; i < n; i++)
        if (same_name(llmem_names_at(t, i)->name, name))
            return i;
    return n;
}

int llmem_names_lookup(const name_table *t, const char *name)
{
    size_t i = llmem_names_index(t, name);
    return i < llmem_names_count(t) ? llmem_names_at(t, i)->value : 0;
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

/* The longest folded name compared; longer ones get no suggestion. */
#define SUGGEST_MAX 96

/* name folded into out (SUGGEST_MAX bytes): its length, or 0 when too long. */
static size_t fold(const char *name, char *out)
{
    size_t n = 0;
    for (; *name; name++) {
        char c = *name;
        if (c == '-' || c == '_' || c == ' ')
            continue;
        if (n + 1 >= SUGGEST_MAX)
            return 0;
        out[n++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    out[n] = '\0';
    return n;
}

/* Edit distance of a (la bytes) and b (lb), both < SUGGEST_MAX: insertions,
 * deletions, substitutions and swaps of two neighbours ("sdap" -> "sdpa"),
 * each 1 (the optimal string alignment distance). Three rows: i - 2, i - 1
 * and i. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t rows[3][SUGGEST_MAX];
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *row = rows[i % 3], *up = rows[(i + 2) % 3], *two = rows[(i + 1) % 3];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = up[j - 1] + (a[i - 1] != b[j - 1]);
            if (up[j] + 1 < best)
                best = up[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                two[j - 2] + 1 < best)
                best = two[j - 2] + 1;
            row[j] = best;
        }
    }
    return rows[la % 3][lb];
}

/* How far candidate c is from the folded name q (lq bytes): lower is
 * closer; SIZE_MAX when it is not close. Prefix matches rank after equal
 * names and before any edit, shorter candidates first. */
static size_t closeness(const char *q, size_t lq, const char *c)
{
    char fc[SUGGEST_MAX];
    size_t lc = fold(c, fc);
    if (lc == 0)
        return SIZE_MAX;
    if (lc == lq && memcmp(fc, q, lq) == 0)
        return 0;
    if (lq >= 3 && lc > lq && memcmp(fc, q, lq) == 0)
        return 1 + (lc - lq); /* < SUGGEST_MAX */
    size_t limit = lq / 3 > 1 ? lq / 3 : 1;
    size_t d = edit_distance(q, lq, fc, lc);
    return d <= limit ? SUGGEST_MAX + d : SIZE_MAX;
}

size_t llmem_names_suggest(const char *name, const char *(*at)(const void *table, size_t i),
                           const void *table, size_t count)
{
    char q[SUGGEST_MAX];
    size_t lq = name != NULL ? fold(name, q) : 0;
    size_t best = count, best_score = SIZE_MAX;
    for (size_t i = 0; lq > 0 && i < count; i++) {
        size_t score = closeness(q, lq, at(table, i));
        if (score < best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

static const char *table_name_at(const void *table, size_t i)
{
    return llmem_names_at(table, i)->name;
}

const char *llmem_names_closest(const name_table *t, const char *name)
{
    size_t count = llmem_names_count(t);
    size_t i = llmem_names_suggest(name, table_name_at, t, count);
    return i < count ? llmem_names_at(t, i)->name : NULL;
}

const char *llmem_phase_name(int value)
{
    return llmem_names_name(&llmem_names_phase, value);
}

const char *llmem_term_name(int value)
{
    return llmem_names_name(&llmem_names_term, value);
}
