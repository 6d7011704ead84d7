/* SPDX-License-Identifier: MIT */
/* A tape retargeted to what requires grad now (graph.h: llmem_graph_retarget). */
#include "sim/graph.h"

#include <string.h>

/* Op i no longer keeps x: 1 when a later op still does (x's first_save is
 * then stale). */
static inline int unkeep(g_tensor *x, int i)
{
    return --x->saved > 0 && x->first_save == i;
}

/* Op i keeps x, in any order (a retarget). */
static inline void keep_any(g_tensor *x, int i)
{
    if (x->saved++ == 0 || i < x->first_save)
        x->first_save = (int16_t)i;
}

static const unsigned save_bits[5] = { BIT(0), BIT(1), BIT(2), SAVE_OUT, SAVE_AUX };

/* The tensor whose storage save_bits[j] of op keeps. */
static g_tensor *kept(g_tensor *t, const g_op *op, int j)
{
    return j < GRAPH_MAX_IN ? &t[t[op->in[j]].base] : &t[j == 3 ? op->out : op->aux];
}

/* Redo op i's saves and backward workspace for what requires grad now.
 * Returns 1 when a first_save went stale. */
static int redo_op(g_tensor *t, g_op *op, int i, int any_rg)
{
    unsigned old = op->save, diff;
    int stale = 0;
    graph_apply_rule(t, op, any_rg);
    diff = old ^ op->save;
    for (int j = 0; diff != 0 && j < 5; j++) {
        if (!(diff & save_bits[j]))
            continue;
        if (op->save & save_bits[j])
            keep_any(kept(t, op, j), i);
        else
            stale |= unkeep(kept(t, op, j), i);
    }
    return stale;
}

/* Count every op's saves again, in order. */
static void recount(graph *g)
{
    for (int i = 0; i < g->nt; i++)
        g->t[i].saved = 0;
    for (int i = 0; i < g->nop; i++)
        for (int j = 0; j < 5; j++)
            if (g->op[i].save & save_bits[j])
                keep_any(kept(g->t, &g->op[i], j), i);
}

/* Only ops with an input whose requires-grad changed are redone: a LoRA
 * layer's input turning on leaves the ops past its weights as they were. */
void llmem_graph_retarget(graph *g, int input_rg, int params_rg)
{
    g_tensor *t = g->t;
    uint8_t changed[GRAPH_MAX_TENSORS];
    uint8_t input = (uint8_t)(input_rg && g->grad_enabled);
    uint8_t params = (uint8_t)(params_rg && g->grad_enabled);
    int stale = 0;
    g->fate.valid = 0;
    memset(changed, 0, (size_t)g->nt);
    for (int k = 0; k < graph_input_count(g); k++) {
        g_tensor *x = &t[graph_input_at(g, k)];
        if (x->role == ROLE_INPUT && x->rg != input) {
            x->rg = input;
            changed[graph_input_at(g, k)] = 1;
        }
    }
    /* The parameters are scanned unless the last retarget gave them all
     * this flag already (a layer's first trainable run, then the rest's). */
    int params_known = g->params_rg == params && g->params_nt == g->nt;
    for (int i = 0; params_rg >= 0 && !params_known && i < g->nt; i++)
        if (t[i].role == ROLE_PARAM && t[i].rg != params) {
            t[i].rg = params;
            changed[i] = 1;
        }
    if (params_rg >= 0) {
        g->params_rg = params;
        g->params_nt = g->nt;
    }
    for (int i = 0; i < g->nop; i++) {
        g_op *op = &g->op[i];
        int any_rg = 0, redo = 0;
        /* What requires grad is read only for the ops redone. */
        for (int j = 0; j < op->nin; j++)
            redo |= changed[op->in[j]];
        if (!redo)
            continue;
        for (int j = 0; j < op->nin; j++)
            any_rg |= t[op->in[j]].rg;
        changed[op->out] = any_rg != t[op->out].rg;
        t[op->out].rg = (uint8_t)any_rg;
        stale |= redo_op(t, op, i, any_rg);
    }
    if (stale)
        recount(g);
}
