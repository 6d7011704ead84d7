/* SPDX-License-Identifier: MIT */
/*
 * A walk's result, and the simulator's room every walk of a handle reuses
 * (walk.h). Apart from walk.h so that the walk's pieces (walkparts.h) may
 * read the room inline without including walk.h, which walk.c's
 * walkparts.h would then make a circle of units.
 */
#ifndef LLMEM_ESTIMATE_WALKSCRATCH_H
#define LLMEM_ESTIMATE_WALKSCRATCH_H

#include "estimate/cache.h"
#include "estimate/results.h"
#include "estimate/walkform.h"

typedef struct walk_result {
    uint64_t peak;                    /* allocated bytes at the peak */
    int peak_phase;                   /* llmem_phase */
    uint64_t phase_peak[PHASE_COUNT];
    uint64_t fixed;                   /* live throughout: weights, buffers, states, batch */
    uint64_t peak_grads;              /* gradients live at the peak */
    uint64_t peak_gathered;           /* parameters gathered (ZeRO-3, FSDP) live at the peak */
    uint64_t temp_max;                /* the temporaries' own maximum */
    uint64_t end_of_backward;         /* live when backward ends (a white-box check) */
} walk_result;

/* The simulator's room, reused by every walk: no allocation. */
typedef struct walk_scratch {
    graph graph;
    seg_cache cache;
    int graph_overflow; /* a segment did not fit the graph: a bug, reported as such */
    seg_context_name context_name; /* set by the caller: names this walk's model shape and
                           setup but batch and seq (cache.h), or zeros */
    uint64_t walk_key;  /* set by the caller: nonzero names what the walk asks of the cache
                           (its configuration and rank; seg_cache's walk slots), 0 none */
    int positions;      /* segments asked for so far in this walk */
    int taped;          /* graph holds a decoder layer of this walk, recorded with grad
                           enabled, of spec tape_spec (walksegs.c: layer_tape) */
    seg_spec tape_spec;
    int uncached;       /* this walk's segments are simulated, never cached: see walk.c */
    uint64_t loss_chunk; /* set by the caller: the fused loss's chunk fixed (build's), or 0 */
    int logged;         /* the last llmem_walk logged its moments in log (a walk that may be
                           compiled next) */
    uint64_t compiled, answered; /* walks compiled, and estimates they answered (white-box tests) */
    uint64_t simulated;          /* segments simulated for the cache (white-box tests) */
    walk_log log;
    walk_form forms[SEG_WALKS][WALK_REGIMES]; /* compiled walks: by key slot and regime */
    struct walk_memo {                        /* by key slot: the last result, at its point */
        uint64_t key, batch, seq;             /* key 0: none */
        walk_result r;
    } memo[SEG_WALKS];
} walk_scratch;

#endif
