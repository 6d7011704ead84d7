/* SPDX-License-Identifier: MIT */
/*
 * The walk's cache of segments (sim/compiled.h): what each segment costs,
 * keyed by everything its tape depends on but batch and seq, learnt from the
 * simulations the walk runs anyway. A segment simulated at a few batches of
 * one seq is then evaluated at any batch of that seq (a row), at a few seqs
 * of one batch at any seq (a column), and from three rows or two columns at
 * any batch and seq of its regime; a point simulated once is remembered. So
 * no call pays more than one simulation of a segment plus a fit, and a sweep
 * soon evaluates polynomials only.
 *
 * The key: the model shape the walk runs and the build's settings (the
 * context, looked up once per walk), then the builder, its seg_spec, the
 * grad mode, the sim_mode (how a checkpoint recomputes it), what it holds,
 * the regime of (batch, seq), the seq itself for a regime of one seq, and
 * the builder's piece (layers.h). Everything lives in the handle: nothing is allocated,
 * and a full arena starts over.
 */
#ifndef LLMEM_ESTIMATE_CACHE_H
#define LLMEM_ESTIMATE_CACHE_H

#include "layers/layers.h"
#include "sim/compiled.h"

#define SEG_CONTEXTS 8    /* model shapes x build settings */
#define SEG_ENTRIES 64    /* segments x regimes x pieces */
#define SEG_SAMPLES 8     /* simulated points an entry keeps: a column needs four of one
                             batch, which a sweep over two batches interleaves */
#define SEG_FORMS 4       /* rows and columns an entry keeps */
#define SEG_LOG GRAPH_MAX_EVENTS /* steps one simulation may log */
#define SEG_ARENA 49152   /* words of samples and forms, for every entry */
#define SEG_HINTS 8       /* segments a walk asks for, remembered in order */
#define SEG_WALKS 4       /* walks whose entries are remembered (a configuration's ranks) */

/* A full form is checked at an entry's samples off its rows or columns
 * (cache.c: lift): every one of them, which the fits' room must cover. */
typedef char seg_samples_all_checked[SEG_SAMPLES <= FIT_MAX_CHECKS ? 1 : -1];

/* A walk key (estimate.c: walk_key): bits 0-4 its loss's chunk code, bit 5
 * WALK_KEY_WINDOW (walk.h), the configuration's rank from bit
 * WALK_KEY_RANK_SHIFT on. */
#define WALK_KEY_WINDOW 32
#define WALK_KEY_RANK_SHIFT 6

/* The slot of a walk key: the ranks of one configuration, and the chunks of
 * one rank, take different slots. */
static inline int llmem_walk_slot(uint64_t walk_key)
{
    return (int)(((walk_key >> WALK_KEY_RANK_SHIFT) ^ walk_key) % SEG_WALKS);
}

typedef void (*segment_builder)(build *, const model_shape *, const seg_spec *);

/* The caller's name for a walk's context (its model shape and build
 * settings): words that decide it (estimate.c: the model's serial, the rank's
 * setup, the layout's splits). Walks of one name share their context, which
 * the cache then looks up once, not at every walk; a first word 0 names
 * none. */
#define SEG_NAME_WORDS 6

typedef struct seg_context_name {
    uint64_t w[SEG_NAME_WORDS];
} seg_context_name;

typedef struct seg_context {
    uint64_t serial; /* 0: free */
    uint64_t used, hash;
    model_shape shape;
    build settings;  /* the build but its batch, seq, tokens, hold_input and graph */
} seg_context;

/* What a walk asks of a segment. */
typedef struct seg_query {
    segment_builder fn;
    const seg_spec *spec;
    int grad_enabled, mode, hold_input, regime; /* mode: sim_mode */
    uint64_t at;    /* the seq of a regime of one seq (REGIME_ROW_AT, REGIME_POINT_AT), else 0 */
    uint64_t piece;
} seg_query;

typedef struct seg_sample {
    uint64_t batch, seq;
    seg_cost cost;
} seg_sample;

typedef struct seg_entry {
    uint64_t stamp;    /* when it was made (hints name an entry and its stamp) */
    uint64_t tag;      /* the key's scalars mixed (a quick first test) */
    uint64_t context;  /* its context's serial; 0: free */
    segment_builder fn;
    seg_spec spec;
    int grad_enabled, mode, hold_input, regime;
    uint64_t at, piece;
    uint64_t used;
    int nfwd, nbwd;    /* steps logged forward and backward (the same at every sample) */
    int unstable;      /* they were not: simulate every time */
    int lift;          /* rows or columns may give the full form: try on a cheap call */
    uint64_t *y;       /* SEG_SAMPLES sample vectors (arena), or NULL */
    seg_sample sample[SEG_SAMPLES];
    int nsamples, next_sample;
    compiled_form form[SEG_FORMS]; /* rows and columns (general regime) */
    int nforms, next_form;
    compiled_form full; /* the whole regime: a full form, or the row or column of one */
} seg_entry;

typedef struct seg_cache {
    int context_known; /* the walk's context is `context` (reset by a walk of another
                          name than context_name, the name it was found for) */
    seg_context_name context_name;
    uint64_t context, serial, clock;
    int context_entries; /* 0: the context is new, no entry is its yet */
    int pos;           /* lookups so far in this walk */
    int hint[SEG_HINTS]; /* the entry found at each position of the last walks */
    /* A walk the caller names (walk_key: its configuration and rank) asks for
     * the same segments in the same order every time, but for their regime
     * and piece: the entry it found at each position, checked by stamp,
     * regime, seq (at) and piece, needs no key compared. */
    int walk;          /* this walk's slot, or -1 */
    int walk_full;     /* every segment of this walk so far came from a compiled form */
    uint64_t walk_key[SEG_WALKS];
    int walk_entry[SEG_WALKS][SEG_HINTS];
    uint64_t walk_stamp[SEG_WALKS][SEG_HINTS]; /* 0: none */
    int high;          /* entries in use: entry[0 .. high) */
    int victim;        /* the next entry to reuse when all are in use */
    uint64_t walk_start; /* the clock when this walk began */
    int reset;         /* the arena is full: start over at the next lookup */
    uint64_t restarts; /* times it started over (white-box tests) */
    seg_entry *last;   /* the entry of the last lookup, or NULL */
    uint64_t tag;      /* the last lookup's tag */
    seg_context contexts[SEG_CONTEXTS];
    seg_entry entry[SEG_ENTRIES];
    size_t top;
    uint64_t log[SEG_LOG];
    int64_t fit_coef[6 * (COST_FIELDS + SEG_LOG)]; /* a fit's room (6: a full form's terms) */
    int16_t fit_front[SEG_LOG];
    uint64_t arena[SEG_ARENA];
} seg_cache;

/* An empty cache (the arena and logs need no clearing; all zeros is one too). */
void llmem_segcache_init(seg_cache *c);
/* A walk starts: its segments will be asked for in order; name: its
 * context's (the context found for the same name is kept, else looked up
 * again at the first lookup); walk_key: nonzero names the walk's structure
 * (the same key, the same segments asked for in the same order), 0 names
 * none. */
void llmem_segcache_begin(seg_cache *c, const seg_context_name *name, uint64_t walk_key);
/* The segment's cost from what c learnt, 1; or 0: simulate it (with
 * c->log as the graph's events), then call llmem_segcache_learn. */
int llmem_segcache_lookup(seg_cache *c, const model_shape *m, const build *b, const seg_query *q,
                          seg_cost *out);
/* The compiled forms this walk's segments came from, by position: 1, or 0
 * when one of the first n was not (or is gone). */
int llmem_segcache_walk_forms(const seg_cache *c, int n, const compiled_form *seg[SEG_HINTS]);
/* Learn from the simulation just run for the last lookup's query. */
void llmem_segcache_learn(seg_cache *c, const seg_query *q, uint64_t batch, uint64_t seq,
                          const seg_cost *cost, int nevents_forward, int nevents);

#endif
