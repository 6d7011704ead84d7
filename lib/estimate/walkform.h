/* SPDX-License-Identifier: MIT */
/*
 * A compiled walk: what the walk of one configuration's rank does at any
 * batch (B) and seq (S) of a regime, once its segments are compiled
 * (sim/compiled.h). The walk's moments are each a base plus the forward or
 * backward peak of one segment; the bases are sums of the segments' fields
 * and of sizes the walk computes (the residual stream, the rotary tables,
 * the batch), polynomials in the monomials 1, S, B, BS, BS^2, S^2 like every
 * size of a segment. So the bases of a regime are found exactly from the
 * walk run at a grid of small points (B in {2, 3} x S in {4, 5, 6}; a line
 * in B for S = 1..3 and at a seq of its own, a quadratic in S for B = 1),
 * checked at points off the
 * grid, and an estimate then evaluates them with the segments' frontiers
 * instead of walking.
 *
 * Only the bases are fitted. The moments that never decide their phase's
 * peak nor the temporaries' maximum anywhere in the regime are dropped
 * once, at the fit; which of the others is the largest is decided at each
 * call with the walk's own rules (walk.c), or for a sweep's row once per
 * seq (its peak set: llmem_walkform_peak_set). Coefficients may be
 * negative (a base subtracts a segment's input); arithmetic wraps, which is
 * exact whenever the true value fits, and the checks confirm it does.
 */
#ifndef LLMEM_ESTIMATE_WALKFORM_H
#define LLMEM_ESTIMATE_WALKFORM_H

#include "estimate/cache.h"

#define WALK_MOMENTS 40 /* moments a compiled walk may have */
#define WALK_GRID 6     /* grid points a fit needs at most */
#define WALK_CHECKS 2   /* points off the grid it is checked at (with the caller's) */
#define WALK_REGIMES 6  /* regimes compiled: all but the points (REGIME_POINT1..) */

/* What a walk logs: its moments in order, and what finishing needs. */
typedef struct walk_log {
    int n, overflow;                   /* moments; overflow: more than WALK_MOMENTS */
    int8_t phase[WALK_MOMENTS];
    int8_t src[WALK_MOMENTS];          /* segment position x 2 + (0 forward, 1 backward), -1 none */
    uint64_t base[WALK_MOMENTS], grads[WALK_MOMENTS];
    uint64_t gathered[WALK_MOMENTS];   /* parameters gathered at each (constant in a regime) */
    uint64_t fixed, stash, end_of_backward;
    int positions;                     /* segments asked for */
} walk_log;

/* The values of a log, in one vector: base[n], grads[n], fixed, stash, end. */
#define WALK_VALUES(n) (2 * (n) + 3)

#define WALK_TERMS 64 /* polynomials a compiled walk may have for its moments */

/* A compiled walk: each moment as its base plus each step of its segment's
 * frontier (so the segments' own forms are copied in, not referred to),
 * its gradients (constant within a regime), and what finishing needs. */
typedef struct walk_form {
    int state;                         /* 0: none (key seen once), 1: compiled, -1: refused */
    uint64_t key;                      /* the walk's key (walk_scratch) */
    uint64_t at;                       /* REGIME_ROW_AT's slot: the seq it is of */
    int kind;                          /* FORM_ROW, FORM_COL or FORM_FULL */
    int n;                             /* moments, one per frontier step, phase by phase */
    int phase_end[4];                  /* where each phase's moments end (phases 1..4) */
    int8_t phase[WALK_TERMS];
    uint64_t grads[WALK_TERMS], gathered[WALK_TERMS];
    int64_t total[WALK_TERMS][6];
    int64_t fixed[6], stash[6], end_of_backward[6];
    /* The moments that can hold the peak alone (a sweep's rows): those no
     * other is at least everywhere in the regime (the first of equals kept);
     * npeak -1 until a row asks (llmem_walkform_peak_set). */
    int npeak;
    int8_t peak[WALK_TERMS];
} walk_form;

/* Whether f (a walk's slot, or NULL) holds a compiled walk of key: the
 * slot's state may be of its key, and its key of an earlier walk. */
static inline int llmem_walkform_ready(const walk_form *f, uint64_t key)
{
    return f != NULL && f->state == 1 && f->key == key;
}

/* The grid of a regime (its points: batch[i], seq[i]) and the checks; the
 * count of grid points, or 0 for a regime of one point. */
int llmem_walkform_grid(int regime, uint64_t seq, uint64_t batch[WALK_GRID + WALK_CHECKS],
                        uint64_t seqs[WALK_GRID + WALK_CHECKS]);

/* Fit f from the logs at the grid and check points (llmem_walkform_grid's
 * order) and at one more (at: the caller's own walk, b, s), with seg[p] the
 * compiled form of the segment at position p. 1, or 0 when the logs differ
 * in their moments, a value is not the polynomial, a moment's gradients
 * change within the regime or the moments outnumber WALK_TERMS. */
int llmem_walkform_fit(walk_form *f, int regime, const walk_log *logs, int nlogs,
                       const walk_log *at, uint64_t b, uint64_t s,
                       const compiled_form *const seg[SEG_HINTS]);

/* f's peak set (walk_form's peak): a moment under another is dropped; the
 * order is strict and transitive, so each dropped one has a kept one over
 * it. n^2 tests, once per compiled walk that a row reads. */
void llmem_walkform_peak_set(walk_form *f);

#endif
