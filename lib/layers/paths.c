/* SPDX-License-Identifier: MIT */
/* The code paths of the segment builders, and what the phased model covers:
 * a family on a path, with its own layout defaults, and the optional fields
 * its row says the path builds (model/families.c). */
#include "layers/common.h"

#include <stdio.h>

static const layer_path *const paths[PATH_COUNT] = {
    [PATH_GPT2] = &llmem_path_gpt2,
    [PATH_LLAMA] = &llmem_path_llama,
    [PATH_MEGATRON] = &llmem_path_megatron,
};

const layer_path *llmem_layer_path(int path)
{
    return path > PATH_NONE && path < PATH_COUNT ? paths[path] : NULL;
}

/* A field every path builds one way only: the family's default, or the
 * neutral value a path takes for granted. */
int llmem_layers_unsupported(const model_shape *m, const char **why)
{
    const family_desc *f = llmem_family(m->family);
    const layer_path *path = llmem_layer_path(m->path);
    *why = NULL;
    if (path == NULL) {
        *why = "family";
        return LLMEM_MODEL_FAMILY;
    }
    static const struct {
        int key;
        const char *why;
    } checks[] = {
        { LLMEM_MODEL_NORM, "norm" },
        { LLMEM_MODEL_MLP, "mlp" },
        { LLMEM_MODEL_POSITIONS, "positions" },
        { LLMEM_MODEL_NORMS_PER_LAYER, "norms-per-layer" },
        { LLMEM_MODEL_EMBED_DIM, "embed-dim" },
        { LLMEM_MODEL_EMBED_NORM, "embed-norm" },
        { LLMEM_MODEL_V_HEAD_DIM, "v-head-dim" },
    };
    int differs[sizeof checks / sizeof checks[0]] = {
        m->norm != f->norm,
        m->mlp != f->mlp,
        m->positions != f->positions,
        m->norms_per_layer != (uint64_t)f->norms_per_layer,
        m->embed_dim != m->hidden,
        m->embed_norm != 0,
        m->v_head_dim != 0 && m->v_head_dim != m->head_dim,
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (differs[i]) {
            *why = checks[i].why;
            return checks[i].key;
        }
    }
    int key = path->unsupported ? path->unsupported(m, why) : 0;
    if (key != 0)
        return key;
    if (m->kv_lora_rank > 0) {
        *why = "kv-lora-rank (multi-head latent attention)";
        return LLMEM_MODEL_KV_LORA_RANK;
    }
    if (m->parallel_block) {
        *why = "parallel-block";
        return LLMEM_MODEL_PARALLEL_BLOCK;
    }
    if (m->rotary_dim != 0 && m->rotary_dim != m->head_dim) {
        *why = "rotary-dim (partial rotary)";
        return LLMEM_MODEL_ROTARY_DIM;
    }
    if (m->experts > 0 && !(f->phased & PHASED_EXPERTS)) {
        *why = "experts";
        return LLMEM_MODEL_EXPERTS;
    }
    if (m->qk_norm && !(f->phased & PHASED_QK_NORM)) {
        *why = "qk-norm";
        return LLMEM_MODEL_QK_NORM;
    }
    return 0;
}

/* "gpt2, llama, ..." for messages: the families a path builds. */
void llmem_layers_covered(char *buf, size_t cap)
{
    size_t used = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < llmem_family_count() && used < cap; i++) {
        const family_desc *f = llmem_family_at(i);
        if (f->path == PATH_NONE)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", f->id.name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}
