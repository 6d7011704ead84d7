/* SPDX-License-Identifier: MIT */
/* Module names by family (modules.h), as each family's modeling_<type>.py
 * names its linears (transformers v4.48; DeepSeek v4.54), Megatron-LM's as
 * megatron/core names them. */
#include "model/modules.h"

#include "core/names.h"
#include "model/families.h"

#include <stdio.h>
#include <string.h>

#define Q LLMEM_LORA_Q
#define K LLMEM_LORA_K
#define V LLMEM_LORA_V
#define O LLMEM_LORA_O
#define GATE LLMEM_LORA_GATE
#define UP LLMEM_LORA_UP
#define DOWN LLMEM_LORA_DOWN

/* When a family's module exists in a model of it. */
enum module_when {
    ALWAYS = 0,
    MIXTRAL_EXPERTS, /* routed experts without a shared expert: Mixtral's w1, w3, w2 */
    MLP_PROJ,        /* a dense MLP or a shared expert: gate_proj, up_proj, down_proj */
    Q_COMPRESSED,    /* a query compression (q-lora-rank > 0): q_a_proj, q_b_proj */
    Q_FULL           /* no query compression: q_proj */
};

typedef struct module_row {
    const char *name;
    unsigned roles; /* llmem_lora_target bits of the linears it names */
    int when;       /* module_when */
} module_row;

typedef struct family_modules {
    int family;
    const module_row *rows;
    size_t count;
} family_modules;

/* Llama (Mistral, Qwen2/3, Qwen2-MoE's experts and shared expert), Gemma,
 * Gemma-2; Mixtral's experts are MixtralBlockSparseTop2MLP's w1, w3, w2. */
static const module_row llama[] = {
    { "q_proj", Q, ALWAYS },        { "k_proj", K, ALWAYS },
    { "v_proj", V, ALWAYS },        { "o_proj", O, ALWAYS },
    { "gate_proj", GATE, MLP_PROJ }, { "up_proj", UP, MLP_PROJ },
    { "down_proj", DOWN, MLP_PROJ }, { "w1", GATE, MIXTRAL_EXPERTS },
    { "w3", UP, MIXTRAL_EXPERTS },  { "w2", DOWN, MIXTRAL_EXPERTS },
};
/* GPT-2's Conv1D modules: "c_proj" names both the attention's and the MLP's
 * output projections. */
static const module_row gpt2[] = {
    { "c_attn", Q | K | V, ALWAYS }, { "c_proj", O | DOWN, ALWAYS }, { "c_fc", UP, ALWAYS },
};
static const module_row opt[] = {
    { "q_proj", Q, ALWAYS },   { "k_proj", K, ALWAYS }, { "v_proj", V, ALWAYS },
    { "out_proj", O, ALWAYS }, { "fc1", UP, ALWAYS },   { "fc2", DOWN, ALWAYS },
};
/* BLOOM, GPT-NeoX and Falcon. */
static const module_row fused_dense[] = {
    { "query_key_value", Q | K | V, ALWAYS }, { "dense", O, ALWAYS },
    { "dense_h_to_4h", UP, ALWAYS },          { "dense_4h_to_h", DOWN, ALWAYS },
};
static const module_row phi3[] = {
    { "qkv_proj", Q | K | V, ALWAYS },    { "o_proj", O, ALWAYS },
    { "gate_up_proj", GATE | UP, ALWAYS }, { "down_proj", DOWN, ALWAYS },
};
static const module_row phi[] = {
    { "q_proj", Q, ALWAYS }, { "k_proj", K, ALWAYS }, { "v_proj", V, ALWAYS },
    { "dense", O, ALWAYS },  { "fc1", UP, ALWAYS },   { "fc2", DOWN, ALWAYS },
};
static const module_row starcoder2[] = {
    { "q_proj", Q, ALWAYS }, { "k_proj", K, ALWAYS }, { "v_proj", V, ALWAYS },
    { "o_proj", O, ALWAYS }, { "c_fc", UP, ALWAYS },  { "c_proj", DOWN, ALWAYS },
};
/* DeepseekV2Attention: q_proj, or q_a_proj and q_b_proj; the experts, the
 * shared experts and the dense layers' MLP all name gate, up and down so. */
static const module_row deepseek[] = {
    { "q_proj", Q, Q_FULL },
    { "q_a_proj", LLMEM_LORA_Q_A, Q_COMPRESSED },
    { "q_b_proj", Q, Q_COMPRESSED },
    { "kv_a_proj_with_mqa", LLMEM_LORA_KV_A, ALWAYS },
    { "kv_b_proj", K | V, ALWAYS },
    { "o_proj", O, ALWAYS },
    { "gate_proj", GATE, ALWAYS },
    { "up_proj", UP, ALWAYS },
    { "down_proj", DOWN, ALWAYS },
};
/* Megatron-LM's TransformerLayer: SelfAttention's linear_qkv and
 * linear_proj, MLP's linear_fc1 and linear_fc2 (megatron/core/transformer). */
static const module_row megatron[] = {
    { "linear_qkv", Q | K | V, ALWAYS }, { "linear_proj", O, ALWAYS },
    { "linear_fc1", UP, ALWAYS },        { "linear_fc2", DOWN, ALWAYS },
};

#define FAMILY_MODULES(value, rows) { LLMEM_FAMILY_##value, rows, sizeof rows / sizeof rows[0] }
static const family_modules families[] = {
    FAMILY_MODULES(GPT2, gpt2),           FAMILY_MODULES(LLAMA, llama),
    FAMILY_MODULES(OPT, opt),             FAMILY_MODULES(BLOOM, fused_dense),
    FAMILY_MODULES(GEMMA2, llama),        FAMILY_MODULES(PHI3, phi3),
    FAMILY_MODULES(GEMMA, llama),         FAMILY_MODULES(GPT_NEOX, fused_dense),
    FAMILY_MODULES(FALCON, fused_dense),  FAMILY_MODULES(PHI, phi),
    FAMILY_MODULES(STARCODER2, starcoder2), FAMILY_MODULES(DEEPSEEK, deepseek),
    FAMILY_MODULES(MEGATRON_GPT, megatron),
};

static const family_modules *modules_of(int family)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i].family == family)
            return &families[i];
    return NULL;
}

static int exists(const model_shape *m, int when)
{
    int mixtral = m->experts > 0 && m->shared_intermediate == 0;
    switch (when) {
    case MIXTRAL_EXPERTS:
        return mixtral;
    case MLP_PROJ:
        return !mixtral;
    case Q_COMPRESSED:
        return m->q_lora_rank > 0;
    case Q_FULL:
        return m->q_lora_rank == 0;
    default:
        return 1;
    }
}

/* The row named name that m has, or NULL. */
static const module_row *find(const model_shape *m, const char *name)
{
    const family_modules *f = modules_of(m->family);
    for (size_t i = 0; f != NULL && i < f->count; i++)
        if (strcmp(f->rows[i].name, name) == 0 && exists(m, f->rows[i].when))
            return &f->rows[i];
    return NULL;
}

/* Every role of the modules m has. */
static unsigned all_roles(const model_shape *m)
{
    const family_modules *f = modules_of(m->family);
    unsigned roles = 0;
    for (size_t i = 0; f != NULL && i < f->count; i++)
        if (exists(m, f->rows[i].when))
            roles |= f->rows[i].roles;
    return roles;
}

int llmem_lora_modules_all_linear(uint64_t names)
{
    return (names & llmem_lora_modules_mask(LLMEM_LORA_ALL_LINEAR_NAME)) != 0;
}

unsigned llmem_lora_all_linear_roles(const model_shape *m, int experts_impl)
{
    unsigned roles = all_roles(m);
    if (m->experts == 0 || experts_impl != LLMEM_EXPERTS_IMPL_GROUPED_MM)
        return roles;
    if (m->shared_intermediate > 0 || m->dense_layers > 0)
        return 0;
    return roles & ~(unsigned)(GATE | UP | DOWN);
}

unsigned llmem_lora_modules_roles(const model_shape *m, uint64_t names)
{
    unsigned roles = 0;
    size_t n = llmem_names_count(&llmem_names_lora_target);
    for (size_t i = 0; i < n && i < 64; i++) {
        if (!((names >> i) & 1u))
            continue;
        const module_row *r = find(m, llmem_names_at(&llmem_names_lora_target, i)->name);
        roles |= r != NULL ? r->roles : 0;
    }
    return roles;
}

uint64_t llmem_lora_modules_mask(const char *text)
{
    uint64_t mask = 0;
    size_t count = llmem_names_count(&llmem_names_lora_target);
    while (text != NULL && *text) {
        size_t len = strcspn(text, ",");
        for (size_t i = 0; i < count && i < 64; i++) {
            const char *name = llmem_names_at(&llmem_names_lora_target, i)->name;
            if (strlen(name) == len && strncmp(name, text, len) == 0)
                mask |= UINT64_C(1) << i;
        }
        text += len + (text[len] == ',');
    }
    return mask;
}

void llmem_lora_modules_list(const model_shape *m, char *buf, size_t cap)
{
    const family_modules *f = modules_of(m->family);
    size_t used = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; f != NULL && i < f->count && used < cap; i++) {
        if (!exists(m, f->rows[i].when))
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", f->rows[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Whether roles and other select the same linears of m (and, with routed
 * experts, whose MLP the roles select bit by bit, the same MLP roles). */
static int same_selection(const model_shape *m, unsigned roles, unsigned other)
{
    model_linear lin[MODEL_MAX_LINEARS];
    int n = llmem_model_layer_linears(m, lin);
    for (int i = 0; i < n; i++)
        if (((lin[i].lora_target & roles) != 0) != ((lin[i].lora_target & other) != 0))
            return 0;
    unsigned mlp = GATE | UP | DOWN;
    return m->experts == 0 || (roles & mlp & all_roles(m)) == (other & mlp);
}

int llmem_lora_modules_names(const model_shape *m, unsigned roles, char *buf, size_t cap)
{
    const family_modules *f = modules_of(m->family);
    unsigned named = 0;
    size_t used = 0;
    if (cap == 0)
        return -1;
    buf[0] = '\0';
    for (size_t i = 0; f != NULL && i < f->count; i++) {
        if (!exists(m, f->rows[i].when) || !(f->rows[i].roles & roles))
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s", used ? "," : "", f->rows[i].name);
        if (w < 0 || (size_t)w >= cap - used)
            return -1;
        used += (size_t)w;
        named |= f->rows[i].roles;
    }
    return used > 0 && same_selection(m, roles, named) ? (int)used : -1;
}
