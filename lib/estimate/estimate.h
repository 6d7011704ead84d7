/* SPDX-License-Identifier: MIT */
/* The estimate handle: the top of the estimator. It resolves the model and
 * the setup, computes the statics (cached per model and setup), walks the
 * step and keeps the results. */
#ifndef LLMEM_ESTIMATE_ESTIMATE_H
#define LLMEM_ESTIMATE_ESTIMATE_H

#include "estimate/results.h"
#include "estimate/shard.h"
#include "estimate/walk.h"
#include "llmem.h"
#include "model/model.h"
#include "train/setup.h"

/* What a run computes once for a model, a setup but batch and seq, and a
 * layout: its ranks, their shape and what each holds. */
#define ESTIMATE_CONFIGS 8

typedef struct est_config {
    uint64_t used;                    /* 0: free */
    uint64_t serial;                  /* when it was computed (a slot is reused) */
    uint64_t model;                   /* the key: the model's serial, */
    uint64_t setup;                   /* the setup's (est_setup), */
    layout layout;                    /* and the layout */
    int nranks;
    rank_class classes[RANKS_MAX];
    model_shape shape;                /* a rank's model (divided by tensor parallelism) */
    rank_share share[RANKS_MAX];
    uint64_t trainable;
} est_config;

/* The setups (but batch and seq) of the last runs, each named by a serial,
 * so that the keys of what a run computes once (its configuration, its
 * tensor list) compare one word, not a setup. */
#define ESTIMATE_SETUPS 8

typedef struct est_setup {
    uint64_t id;
    setup s;                          /* its batch and seq are not compared */
} est_setup;

/* The sums of the last ranks (shard.h: rank_sums), by what they depend on:
 * the model (its serial), the rank's setup (run: 2 x its setup's serial +
 * the recipe's cast, which also decides the master dtype), tensor and
 * expert parallelism, the rank's layers and ends. */
#define ESTIMATE_SUMS 8

typedef struct sums_key {
    uint64_t model, run, tp, ep;
    uint64_t layer_first, layers, chunks, chunk_stride;
    uint64_t ends;                    /* embedding | head << 1 */
} sums_key;

typedef struct est_sums {
    uint64_t used;                    /* 0: free */
    sums_key key;
    uint64_t trainable;               /* the whole model's trainable parameters */
    rank_sums sums;
} est_sums;

/* The model's part of the bound on the step's byte counts (estimate.c). */
typedef struct step_bound {
    uint64_t per_token, per_layer, heads;
    uint64_t window; /* the model's sliding window (its mask and bias count once reached) */
    int overflow;
} step_bound;

struct llmem_estimate {
    llmem_ctx *ctx;
    int valid;
    est_results r;                    /* the most loaded rank's: what the 0.1 getters read */
    size_t nranks, peak_rank;
    est_results rank[RANKS_MAX];      /* ranks whose memory differs */
    rank_class rank_class[RANKS_MAX];
    uint64_t rank_host[RANKS_MAX];
    step_static rank_static[RANKS_MAX]; /* what each rank held: the timeline's terms */
    walk_trace *trace;                /* NULL unless llmem_estimate_timeline() */
    trace_point *trace_room;          /* RANKS_MAX x trace->cap points */
    size_t trace_count[RANKS_MAX], trace_peak[RANKS_MAX];
    uint64_t end_of_backward;         /* live bytes the walk ends backward with (white-box check) */
    /* The model last resolved, kept while its fields stay the same. */
    int model_valid, model_checked;   /* model_checked: covered and within 64-bit bounds */
    uint64_t model_serial, clock;
    int64_t model_field[MODEL_KEY_END];
    model_shape model;
    model_params params;
    step_bound bound;
    est_config config[ESTIMATE_CONFIGS];
    /* The last setups: setups[(id - 1) % ESTIMATE_SETUPS] holds serial id,
     * the oldest replaced first; setup_last is the last run's slot. */
    uint64_t setup_serial;
    int setup_last;
    est_setup setups[ESTIMATE_SETUPS];
    /* The parameter tensors under the last rank setup (but batch and seq),
     * named by its setup's serial and its recipe's cast (tensors_run). */
    int tensors_valid;
    uint64_t tensors_model, tensors_run, tensors_trainable;
    tensor_list tensors;
    int nsums;                        /* sums[0 .. nsums) have been used */
    est_sums sums[ESTIMATE_SUMS];
    const est_config *last_config;    /* the configuration of the last walks, and its serial */
    uint64_t last_serial;
    walk_scratch walk;                /* reused by every run: no allocation */
};

/* What a run resolved, kept for a sweep's next points: its setup (at its
 * batch and seq) and layout, its configuration, and whether a rank's
 * attention kernel forms the scores (the bound on the step counts them). */
typedef struct est_job {
    setup s;
    layout l;
    rank_recipe rc;
    const est_config *cf;
    int scores;
} est_job;

/* llmem_estimate_run_parallel, which also fills job (when not NULL) on success. */
int llmem_estimate_run_job(llmem_estimate *e, llmem_model *model, const llmem_train *train,
                           const llmem_parallel *parallel, est_job *job);
/* The most loaded rank's peak at level (llmem_level) when job runs at batch
 * and seq, if it is known without walking and passes every check a run
 * makes of batch and seq: 1 and *peak, exactly the run's. Else 0: the point
 * needs its run (which reports any failure). The estimate's results are left
 * as they were; the job (moved to the point) must be the last run's on
 * this handle. */
int llmem_estimate_point(llmem_estimate *e, est_job *job, uint64_t batch, uint64_t seq,
                         int level, uint64_t *peak);

/* A sweep's row: a one-rank job's peak at one seq for every batch from 2 to
 * hi, as the upper envelope of its compiled walk's moments at that seq
 * (lines in the batch): pieces by batch, each a line, with every check a
 * run makes that depends on the seq alone done. A point of the row is then
 * its piece's line, exactly its run's peak (llmem_row_peak). */
typedef struct est_row {
    uint64_t seq, hi;                    /* the batches it answers: 2..hi at seq */
    int n;                               /* pieces of the envelope, by batch */
    int off_each;                        /* the end-of-backward check varies: made at each batch */
    uint64_t until[WALK_TERMS];          /* piece k is the peak up to batch until[k] */
    uint64_t a[WALK_TERMS], b[WALK_TERMS]; /* at batch B: a + b B (wrapping, like the forms) */
    uint64_t off_a, off_b, rounding;     /* end of backward less what it must be, within rounding */
    uint64_t add[3];                     /* added to the peak at each level (llmem_level - 1) */
} est_row;

/* The row of job at seq (job as for llmem_estimate_point): 1, or 0 when its
 * points must each be answered by llmem_estimate_point (several ranks, a
 * pipeline's stash, a fused loss's chunks, a walk not compiled, a seq that
 * fails a check, an end of backward off at every batch or no batch within
 * the step's bound). */
int llmem_estimate_row(llmem_estimate *e, est_job *job, uint64_t seq, est_row *row);

/* Whether row r's end of backward passes the walk's white-box check at batch. */
static inline int llmem_row_end_ok(const est_row *r, uint64_t batch)
{
    uint64_t off = r->off_a + r->off_b * batch; /* wraps below zero */
    return off <= r->rounding || 0 - off <= r->rounding;
}

/* The line of the row piece holding batch (2..hi): the pieces passed as
 * arrays, so a loop over many points can keep them in locals. */
static inline uint64_t llmem_row_line(const uint64_t *until, const uint64_t *a,
                                      const uint64_t *slope, uint64_t batch)
{
    int k = 0;
    while (batch > until[k]) /* the last piece's until is hi */
        k++;
    return a[k] + slope[k] * batch;
}

/* The point at batch of row r: 1 and *peak at level, exactly its run's; 0
 * when the row does not answer it (the walk's white-box check failing is
 * left to the run). */
static inline int llmem_row_peak(const est_row *r, uint64_t batch, int level, uint64_t *peak)
{
    if (batch - 2 > r->hi - 2 || (r->off_each && !llmem_row_end_ok(r, batch)))
        return 0;
    *peak = llmem_row_line(r->until, r->a, r->b, batch) + r->add[level - LLMEM_LEVEL_ALLOCATED];
    return 1;
}

/* llmem_row_peak over points i.. of a sweep (batch[], seq[]) while they
 * keep the row's seq: the first point it does not answer (n: none). Only
 * the row's single values are read into locals; until, a and slope point
 * into r. A peak written is a uint64_t like every field of r, so the
 * compiler must assume it may change any of them: the locals spare
 * reloading the single values at each point, the pieces are reloaded (one
 * or two read). No peak does: the sweep's row is its own local, peak its
 * caller's buffer. (Were they to overlap, the loop would read pieces that
 * earlier points overwrote, beside the row's single values: wrong either
 * way, so peak must not overlap r.) */
static inline size_t llmem_row_peaks(const est_row *r, const int64_t *batch, const int64_t *seq,
                                     size_t i, size_t n, int level, uint64_t *peak)
{
    const uint64_t at = r->seq, span = r->hi - 2, add = r->add[level - LLMEM_LEVEL_ALLOCATED];
    const uint64_t *until = r->until, *a = r->a, *slope = r->b;
    if (r->off_each) /* rare: each point on its own */
        for (; i < n && (uint64_t)seq[i] == at; i++)
            if (!llmem_row_peak(r, (uint64_t)batch[i], level, &peak[i]))
                return i;
    for (; i < n && (uint64_t)seq[i] == at; i++) {
        uint64_t b = (uint64_t)batch[i]; /* < 0: past hi */
        if (b - 2 > span)
            break;
        peak[i] = llmem_row_line(until, a, slope, b) + add;
    }
    return i;
}

/* Back to what a new handle is (no results, nothing cached; the timeline's
 * room stays): llmem_estimate_new's initialization, and the white-box tests'
 * fresh handle without a new allocation. */
void llmem_estimate_forget(llmem_estimate *e);

#endif
