/* SPDX-License-Identifier: MIT */
/* A tape marked and rewound to its mark (graph.h: llmem_graph_mark). */
#include "sim/graph.h"

void llmem_graph_mark(graph *g, const tid *carry, int n)
{
    struct graph_mark *k = &g->mark;
    if (n > GRAPH_MAX_CARRY || g->overflow) {
        k->nt = 0; /* no mark: the caller records whole tapes */
        return;
    }
    k->nt = g->nt;
    k->nop = g->nop;
    k->nmade = g->nmade;
    for (int i = 0; i < n; i++)
        k->carry[i] = carry[i];
    for (int i = 0; i < g->nt; i++)
        k->last_use[i] = g->t[i].last_use;
}

void llmem_graph_rewind(graph *g)
{
    struct graph_mark *k = &g->mark;
    g_tensor *t = g->t;
    /* The tail's saves of the tensors before the mark (its ops' outputs go
     * with them): a tensor a tail's op saved keeps its first_save when an
     * op before the mark saves it too, as that one comes first; else its
     * count falls to 0, and its next save sets first_save again. */
    for (int i = k->nop; i < g->nop; i++) {
        const g_op *op = &g->op[i];
        for (int j = 0; j < op->nin; j++) {
            tid x = t[op->in[j]].base;
            if ((op->save & BIT(j)) && x < k->nt)
                t[x].saved--;
        }
    }
    for (int i = 0; i < k->nt; i++)
        t[i].last_use = k->last_use[i];
    g->nt = k->nt;
    g->nop = k->nop;
    g->nmade = k->nmade;
    g->output = -1;
    g->params_rg = -1; /* the tail's parameters may come back with another flag */
    g->fate.valid = 0;
}
