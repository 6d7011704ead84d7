/* SPDX-License-Identifier: MIT */
/* What an estimate reports: peaks at three levels, the phases, and the four
 * term estimators of the source article's decomposition. */
#ifndef LLMEM_ESTIMATE_RESULTS_H
#define LLMEM_ESTIMATE_RESULTS_H

#include "llmem.h"

#include <stddef.h>
#include <stdint.h>

#define TERM_COUNT 4
#define TERM_MAX_COMPONENTS 6
#define PHASE_COUNT 4

struct llmem_term {
    int kind;
    uint64_t at_peak;
    uint64_t max;
    size_t ncomp;
    const char *comp_name[TERM_MAX_COMPONENTS];
    uint64_t comp_bytes[TERM_MAX_COMPONENTS];
};

typedef struct est_results {
    uint64_t params_total, params_trainable, params_active;
    uint64_t peak_allocated, peak_reserved, peak_device;
    int peak_phase;                   /* 0 in article mode: the terms are summed */
    uint64_t phase_peak[PHASE_COUNT]; /* indexed by llmem_phase - 1 */
    struct llmem_term term[TERM_COUNT];
} est_results;

/* The peak at a llmem_level (llmem_estimate_max, llmem_estimate_sweep). */
static inline uint64_t llmem_level_bytes(const est_results *r, int level)
{
    return level == LLMEM_LEVEL_ALLOCATED  ? r->peak_allocated
           : level == LLMEM_LEVEL_RESERVED ? r->peak_reserved
                                           : r->peak_device;
}

void llmem_term_set(struct llmem_term *t, int kind, uint64_t at_peak, uint64_t max);
void llmem_term_add(struct llmem_term *t, const char *name, uint64_t bytes);

#endif
