/* SPDX-License-Identifier: MIT */
/* The walk's cache of compiled segments (sim/compiled.h): filled on the
 * second run with the same model and setup but for batch and seq, so a
 * caller sweeping batch or sequence length pays the simulation once. */
#ifndef LLMEM_ESTIMATE_CACHE_H
#define LLMEM_ESTIMATE_CACHE_H

#include "layers/layers.h"
#include "sim/compiled.h"

#define SEG_CACHE 8

typedef void (*segment_builder)(build *, const model_shape *, const seg_spec *);

typedef struct seg_cache_entry {
    int used, failed; /* failed: the segment does not compile; keep simulating it */
    segment_builder fn;
    seg_spec spec;
    int grad_enabled, mode, hold_input; /* mode: sim_mode */
    compiled_seg seg;
} seg_cache_entry;

typedef struct seg_cache {
    int runs;         /* runs with the current key: compile from the second */
    seg_cache_entry entry[SEG_CACHE];
    sample samples[COMPILE_POINTS];
    poly scratch[COMPILE_LOG];
} seg_cache;

#endif
