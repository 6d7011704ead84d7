/* SPDX-License-Identifier: MIT */
/*
 * Combinatorial lower bounds on the GPUs a demand needs (docs/mig.md):
 *  - memory slices: the instances of one GPU never overlap, so their slots add
 *    up to at most the grid; a job takes at least the slots of its smallest
 *    holding kind (the whole GPU takes all). With several types, each job
 *    counts its smallest share over the types, in 24ths of a GPU.
 *  - compute slices: likewise, in 28ths.
 *  - count: take the jobs whose holding kinds on every type lie within a class
 *    c's; one GPU of type t holds at most cap_t(c) of them, the most instances
 *    of c's kinds any feasible layout has (1 for 7g or a whole GPU, 2 for the
 *    half-GPU profiles, 3 for 2g). So they need at least count / max_t cap_t(c)
 *    GPUs: the "profiles that cannot share a GPU".
 */
#include "pack/pack.h"

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* The most instances of the kinds in mask one feasible layout of t has. */
static unsigned capacity(const pack_type *t, uint8_t mask)
{
    unsigned best = 0;
    if (mask == 0)
        return 0;
    for (uint32_t s = 0; s < t->states; s++) {
        if (!t->feasible[s])
            continue;
        unsigned n = 0;
        for (int k = 0; k < t->nkinds; k++)
            if (mask >> k & 1)
                n += llmem_pack_count(t, s, k);
        if (n > best)
            best = n;
    }
    return best;
}

void llmem_pack_bounds(const pack_run *r, const uint64_t *demand, uint64_t *memory,
                       uint64_t *compute, uint64_t *count)
{
    uint64_t mem = 0, comp = 0;
    *count = 0;
    for (uint32_t c = 0; c < r->nclasses; c++) {
        mem += demand[c] * r->classes[c].memw;
        comp += demand[c] * r->classes[c].compw;
    }
    *memory = div_up(mem, 24);
    *compute = div_up(comp, 28);
    for (uint32_t c = 0; c < r->nclasses; c++) {
        if (demand[c] == 0)
            continue;
        unsigned cap = 0;
        for (int t = 0; t < r->ntypes; t++) {
            unsigned ct = capacity(&r->types[t], r->classes[c].mask[t]);
            if (ct > cap)
                cap = ct;
        }
        uint64_t within = 0;
        for (uint32_t d = 0; d < r->nclasses; d++) {
            int inside = 1;
            for (int t = 0; t < r->ntypes && inside; t++)
                inside = (r->classes[d].mask[t] & ~r->classes[c].mask[t]) == 0;
            if (inside)
                within += demand[d];
        }
        if (cap > 0 && div_up(within, cap) > *count)
            *count = div_up(within, cap);
    }
}
