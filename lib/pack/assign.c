/* SPDX-License-Identifier: MIT */
/*
 * From the chosen plan to the result: GPUs grouped by type (fleet order),
 * each GPU's kind counts laid out at concrete slots (layouts.c), and each
 * unit given the next job of its class (classes keep input order, so the
 * same input gives the same assignment). Nodes of the mig-parted output
 * split each type's GPUs into groups of LLMEM_PACK_GPUS_PER_NODE.
 */
#include "pack/pack.h"

#include "core/ctx.h"

#include <string.h>

/* Units by kind, then class: the order instances are laid out in. */
static void sort_units(pack_gpu *g)
{
    for (int i = 1; i < g->nunits; i++)
        for (int j = i; j > 0; j--) {
            pack_unit *a = &g->unit[j - 1], *b = &g->unit[j];
            if (a->kind < b->kind || (a->kind == b->kind && a->cls <= b->cls))
                break;
            pack_unit t = *a;
            *a = *b;
            *b = t;
        }
}

int llmem_pack_assign(pack_run *r, const pack_plan *plan)
{
    llmem_pack *p = r->p;
    llmem_ctx *ctx = p->ctx;
    size_t *next = llmem__calloc(ctx, (r->nclasses + 1) * sizeof *next); /* cursor in order */
    size_t *first = llmem__calloc(ctx, (r->nclasses + 1) * sizeof *first);
    p->gpus = plan->n ? llmem__alloc(ctx, plan->n * sizeof *p->gpus) : NULL;
    if (next == NULL || first == NULL || (plan->n && p->gpus == NULL)) {
        llmem__free(ctx, next);
        llmem__free(ctx, first);
        return llmem__fail(ctx, LLMEM_ENOMEM, "pack: out of memory");
    }
    /* Where each class's jobs start in r->order. */
    size_t placeable = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        first[c] = placeable;
        next[c] = placeable;
        placeable += r->classes[c].count;
    }
    first[r->nclasses] = placeable;
    size_t n = 0;
    uint32_t node_base = 0;
    for (int t = 0; t < r->ntypes; t++) {
        uint32_t node = node_base, device = 0;
        uint64_t per_node = (uint64_t)p->i[LLMEM_PACK_GPUS_PER_NODE];
        for (size_t i = 0; i < plan->n; i++) {
            if (plan->gpu[i].type != t)
                continue;
            pack_gpu *g = &p->gpus[n];
            *g = plan->gpu[i];
            sort_units(g);
            if (per_node > 0 && device == per_node) {
                node++;
                device = 0;
            }
            g->node = node;
            g->device = per_node > 0 ? device : (uint32_t)n;
            device++;
            uint8_t start[PACK_MAX_UNITS];
            if (!llmem_pack_positions(&r->types[t], g->state, start)) {
                llmem__free(ctx, next);
                llmem__free(ctx, first);
                return llmem__fail(ctx, LLMEM_EINCONSISTENT, "pack: a plan without a layout");
            }
            for (int u = 0; u < g->nunits; u++) {
                uint32_t c = g->unit[u].cls;
                pack_job *j = &p->jobs[r->order[next[c]++]];
                const pack_kind *kd = &r->types[t].kind[g->unit[u].kind];
                uint64_t need = j->bytes + (j->level == LLMEM_LEVEL_RESERVED
                                                ? r->types[t].context
                                                : 0);
                j->status = LLMEM_PACK_PLACED;
                j->gpu = (uint32_t)n;
                j->kind = g->unit[u].kind;
                j->start = start[u];
                j->need = need;
                j->usable = kd->usable;
            }
            n++;
        }
        /* A node holds one type: the next type starts a new node. */
        if (per_node > 0 && device > 0)
            node_base = node + 1;
    }
    p->ngpus = n;
    /* What the plan left out found no room. */
    for (uint32_t c = 0; c < r->nclasses; c++)
        for (size_t i = next[c]; i < first[c + 1]; i++) {
            pack_job *j = &p->jobs[r->order[i]];
            j->status = LLMEM_PACK_NO_ROOM;
            j->need = j->bytes;
        }
    llmem__free(ctx, next);
    llmem__free(ctx, first);
    return LLMEM_OK;
}
