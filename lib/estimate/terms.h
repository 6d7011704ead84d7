/* SPDX-License-Identifier: MIT */
/* The four term estimators from a walk: what each term holds at the peak,
 * its components, and its own maximum. */
#ifndef LLMEM_ESTIMATE_TERMS_H
#define LLMEM_ESTIMATE_TERMS_H

#include "estimate/results.h"
#include "estimate/walk.h"

/* Peaks, phases and the four terms of r from the walk w over statics st;
 * backward_bucket: bytes live through backward, apart from activations
 * (ZeRO-1/2's contiguous-gradient bucket). */
void llmem_terms_phased(est_results *r, const step_static *st, const walk_result *w,
                        uint64_t backward_bucket);

#endif
