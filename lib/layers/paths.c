/* SPDX-License-Identifier: MIT */
/* The code paths of the segment builders, and what the phased model covers:
 * a family on a path, with its own layout defaults, and the optional fields
 * its row says the path builds (model/families.c). */
#include "layers/common.h"

#include <stdio.h>

static const layer_path *const paths[PATH_COUNT] = {
    [PATH_GPT2] = &llmem_path_gpt2,     [PATH_LLAMA] = &llmem_path_llama,
    [PATH_MEGATRON] = &llmem_path_megatron,
    [PATH_OPT] = &llmem_path_opt,       [PATH_BLOOM] = &llmem_path_bloom,
    [PATH_NEOX] = &llmem_path_neox,     [PATH_FALCON] = &llmem_path_falcon,
    [PATH_LATENT] = &llmem_path_latent,
};

const layer_path *llmem_layer_path(int path)
{
    return path > PATH_NONE && path < PATH_COUNT ? paths[path] : NULL;
}

/* The layout fields a path builds at their family's default only, unless it
 * accepts them (layer_accept bits). */
int llmem_layers_fixed(const model_shape *m, unsigned accept, const char **why)
{
    const family_desc *f = llmem_family(m->family);
    static const struct {
        int key;
        unsigned bit;
        const char *why;
    } checks[] = {
        { LLMEM_MODEL_NORMS_PER_LAYER, ACCEPT_NORMS, "norms-per-layer" },
        { LLMEM_MODEL_EMBED_DIM, ACCEPT_EMBED_DIM, "embed-dim" },
        { LLMEM_MODEL_EMBED_NORM, 0, "embed-norm" },
        { LLMEM_MODEL_V_HEAD_DIM, ACCEPT_LATENT, "v-head-dim" },
        { LLMEM_MODEL_KV_LORA_RANK, ACCEPT_LATENT, "kv-lora-rank (multi-head latent attention)" },
        { LLMEM_MODEL_PARALLEL_BLOCK, ACCEPT_PARALLEL, "parallel-block" },
        { LLMEM_MODEL_ROTARY_DIM, ACCEPT_PARTIAL_ROTARY, "rotary-dim (partial rotary)" },
        { LLMEM_MODEL_POST_NORM, ACCEPT_POST_NORM, "post-norm" },
        { LLMEM_MODEL_ACTIVATION, ACCEPT_ACTIVATION, "activation" },
        { LLMEM_MODEL_POSITIONS, ACCEPT_ALIBI, "positions" },
    };
    int differs[sizeof checks / sizeof checks[0]] = {
        m->norms_per_layer != (uint64_t)f->norms_per_layer,
        m->embed_dim != m->hidden,
        m->embed_norm != f->embed_norm,
        m->v_head_dim != m->head_dim,
        m->kv_lora_rank != 0,
        m->parallel_block != f->parallel_block,
        m->rotary_dim != m->head_dim,
        m->post_norm != 0,
        m->activation != f->activation,
        m->positions != f->positions, /* the other positions are refused before */
    };
    *why = NULL;
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (differs[i] && !(accept & checks[i].bit)) {
            *why = checks[i].why;
            return checks[i].key;
        }
    }
    return 0;
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
    };
    /* ALiBi on a family of other positions is the path's to accept (llmem_layers_fixed) */
    int differs[sizeof checks / sizeof checks[0]] = {
        m->norm != f->norm,
        m->mlp != f->mlp,
        m->positions != f->positions && m->positions != LLMEM_POSITIONS_ALIBI,
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (differs[i]) {
            *why = checks[i].why;
            return checks[i].key;
        }
    }
    /* Rotary embeddings turn pairs of dimensions: rotate_half splits the
     * rotated part into two halves, and the inverse frequencies
     * (arange(0, dim, 2)) make cos and sin 2 x ceil(dim / 2) wide, which an
     * odd part does not match, so no such model runs (and the halves would
     * make a size no polynomial in batch and seq, which the cache needs). */
    if (m->positions == LLMEM_POSITIONS_ROTARY && m->rotary_dim % 2 != 0) {
        /* A whole-head rotary part is the head's size: blame the field set. */
        int whole = m->rotary_dim == m->head_dim;
        *why = whole ? "head-dim (odd, and rotary embeddings turn pairs of dimensions)"
                     : "rotary-dim (odd, and rotary embeddings turn pairs of dimensions)";
        return whole ? LLMEM_MODEL_HEAD_DIM : LLMEM_MODEL_ROTARY_DIM;
    }
    int key = path->unsupported(m, why);
    if (key != 0)
        return key;
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
