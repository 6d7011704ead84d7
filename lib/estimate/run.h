/* SPDX-License-Identifier: MIT */
/* What a run (estimate.c) shares with a sweep's points and rows (row.c):
 * the step's bound, a rank's walk key, and the checks and levels a run
 * makes of a walk, inline where a point reads them. */
#ifndef LLMEM_ESTIMATE_RUN_H
#define LLMEM_ESTIMATE_RUN_H

#include "estimate/shard.h"

/* Defined in estimate.h, whose unit (estimate.c) includes this header:
 * named here, not included, as the layers test refuses a circle of
 * includes. */
struct step_bound;
struct est_config;

/* Whether a step of s overflows the bound on its byte counts (2^62). */
int llmem_step_overflows(const struct step_bound *sb, const setup *s, int scores_formed);
/* The most tokens (batch x seq) a step of this setup may have within the
 * bound (llmem_step_overflows); 0 when none may. */
uint64_t llmem_step_token_limit(const struct step_bound *sb, const setup *s, int scores_formed);
/* The walk key of a configuration's rank at run's point (walk_scratch). */
uint64_t llmem_estimate_walk_key(const struct est_config *cf, int rank, const setup *run);

/* How far the end of backward may be off: the sharded classes' rounding,
 * where the gradients shard (den = 2 x the gradient shards: walk_keep,
 * llmem_rank_share). */
static inline uint64_t end_rounding(const rank_share *share, const rank_class *c, const layout *l)
{
    int apart = share->keep.expert > 0 && share->keep.expert_den != share->keep.den;
    return share->keep.den > 2 ? (c->layers + 2 + l->shard) * (apart ? 2 : 1) : 0;
}

/* The walk must end backward holding exactly what the rank holds from the
 * start and its gradients; anything else means the layer model and the
 * tensor list disagree: refuse rather than print a wrong number. Shards are
 * rounded per segment: a byte a layer at most (two where experts shard
 * apart). The bytes off, or 0 (st's statics, but the batch's bytes: given). */
static inline uint64_t unaccounted(const step_static *st, uint64_t data, uint64_t end,
                                   const rank_share *share, const rank_class *c, const layout *l)
{
    uint64_t expected = statics_held(st) + data;
    uint64_t off = end > expected ? end - expected : expected - end;
    return off > end_rounding(share, c, l) ? off : 0;
}

/* A rank's peak reserved by the caching allocator: what it allocates at its
 * peak and what rounding and the cuBLAS workspace add. */
static inline uint64_t reserved_of(uint64_t allocated, const rank_share *share)
{
    return allocated + share->overhead;
}


#endif
