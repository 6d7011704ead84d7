/* SPDX-License-Identifier: MIT */
/* The kinds of dropout site a decoder has. A model's config gives each its
 * own probability (docs/hf-inputs.md), which the Trainer's train mode runs;
 * the training setup's dropout, when set, replaces them all. */
#ifndef LLMEM_MODEL_DROPOUT_H
#define LLMEM_MODEL_DROPOUT_H

enum dropout_site {
    /* the attention probabilities (attn_pdrop, attention_dropout) */
    DROPOUT_ATTENTION,
    /* the attention's and the MLP's outputs before the residual additions
     * (resid_pdrop, hidden_dropout, OPT's dropout, residual_dropout) */
    DROPOUT_HIDDEN,
    /* the embedding's output (embd_pdrop, emb_dropout, embedding_dropout) */
    DROPOUT_EMBEDDING,
    DROPOUT_SITES
};

/* Bit of a site in a family's mask of the sites its code has. */
#define DROPOUT_AT(site) (1u << (site))

#endif
