/* SPDX-License-Identifier: MIT */
/*
 * Fitting and packing jobs onto GPUs and MIG slices (docs/mig.md). Depends
 * only on core and gpu, so schedulers can feed their own byte counts.
 *
 * Vocabulary. A GPU type offers kinds: its plain MIG profiles and the whole
 * GPU (MIG disabled). A GPU's content is a count vector over kinds, encoded in
 * mixed radix as a state; a state is feasible when some positional layout
 * (placements by slot, no overlap, maximum counts, compute slices) realizes it
 * (layouts.c). Jobs with the same set of kinds that hold them on every type
 * form a class; a filling is a vector of class counts one GPU can hold.
 */
#ifndef LLMEM_PACK_PACK_H
#define LLMEM_PACK_PACK_H

#include "core/fields.h"
#include "llmem.h"

#include <stddef.h>
#include <stdint.h>

#define PACK_MAX_TYPES 8
#define PACK_RESULT_END (LLMEM_PACK_JOBS_BOUND + 1)
#define PACK_NO_LIMIT UINT64_MAX /* a fleet without a total GPU cap */
#define PACK_MAX_KINDS 8 /* plain profiles (6 at most in the catalog) + the whole GPU */
#define PACK_MAX_UNITS 16 /* instances on one GPU (7 on the 8-slot grid) */
#define PACK_NO_KIND 0xFF

typedef struct pack_kind {
    int whole;          /* the whole GPU, MIG disabled */
    size_t profile;     /* catalog profile index (the type's profile count for the whole GPU) */
    uint8_t slots, compute, max;
    uint16_t starts;
    uint64_t usable;
} pack_kind;

typedef struct pack_type {
    size_t gpu;         /* catalog index */
    uint64_t limit;     /* GPUs of this type available; 0 = as many as needed */
    uint8_t grid;       /* placement slots; 0 without MIG */
    uint8_t compute;    /* compute slices; 0 without MIG */
    uint64_t context;   /* CUDA context bytes (added to reserved-level jobs) */
    int nkinds;
    pack_kind kind[PACK_MAX_KINDS]; /* by usable bytes, then compute, then slots */
    uint32_t step[PACK_MAX_KINDS];  /* mixed-radix weight of each kind's count */
    uint32_t states;    /* number of count vectors */
    uint8_t *feasible;  /* [states]: 1 when a positional layout realizes it */
    uint8_t most_units; /* most instances one GPU holds */
    int64_t driver;     /* the branch it was set up for (its names) */
    uint8_t apart[PACK_MAX_KINDS]; /* bit j of apart[k]: kinds k and j never share a GPU */
} pack_type;

/* --- layouts.c: a type's kinds and feasible states --- */
/* Set up type t for catalog GPU gpu under driver branch driver (0: the
 * newest): the profiles and layouts that branch has (allocates t->feasible). */
int llmem_pack_type_init(llmem_ctx *ctx, pack_type *t, size_t gpu, uint64_t limit,
                         int64_t driver);
void llmem_pack_type_free(llmem_ctx *ctx, pack_type *t);
/* Type t's kinds alone (the first half of llmem_pack_type_init: no states,
 * nothing allocated, nothing to free), for fit's running instances. */
int llmem_pack_type_kinds(llmem_ctx *ctx, pack_type *t, size_t gpu, uint64_t limit,
                          int64_t driver);
/* Count of kind k in state s. */
unsigned llmem_pack_count(const pack_type *t, uint32_t s, int k);

/* Instances placed on one GPU of type t, one at a time: the rules the layout
 * walk applies (layouts.c), for fit's running instances. Zeroed: empty. */
typedef struct pack_placed {
    uint8_t count[PACK_MAX_KINDS];
    unsigned compute;   /* compute slices used */
    uint32_t occupied;  /* bit s: slot s used */
} pack_placed;

/* Why one more instance cannot be placed (the first rule it breaks). */
typedef enum pack_refusal {
    PACK_PLACE_OK = 0,
    PACK_PLACE_WHOLE,   /* the whole GPU is no MIG instance */
    PACK_PLACE_START,   /* not one of the kind's starts, or past the grid */
    PACK_PLACE_OVERLAP, /* a slot it needs is used */
    PACK_PLACE_COUNT,   /* its kind's maximum count is reached */
    PACK_PLACE_COMPUTE, /* the compute slices would exceed the GPU's */
    PACK_PLACE_APART    /* the branch's pair rules refuse it next to a placed kind */
} pack_refusal;

/* Whether kind k may start at slot at next to what p holds. */
pack_refusal llmem_pack_refusal(const pack_type *t, const pack_placed *p, int k, unsigned at);
/* Add kind k at slot at to p (llmem_pack_refusal() said PACK_PLACE_OK). */
void llmem_pack_place(const pack_type *t, pack_placed *p, int k, unsigned at);
/* fillings.c: type t's maximal feasible states (every layout is a part of
 * one; a unit may stay empty): their number, and with count, each one's
 * units of each kind (nkinds a state). */
uint32_t llmem_pack_maximal_states(const pack_type *t, uint8_t *count);
/* A positional layout of state s: start[i] for the i-th instance, instances in
 * kind order (all of kind 0, then kind 1, ...). Returns 1, or 0 when none. */
int llmem_pack_positions(const pack_type *t, uint32_t s, uint8_t *start);

typedef struct layout_stats {
    uint64_t positional;         /* positional layouts, the empty one included */
    uint64_t maximal_positional; /* to which no instance can be added */
    uint64_t multisets;          /* distinct non-empty count vectors */
    uint64_t maximal_multisets;  /* not contained in another one */
    uint64_t maximal_layout_multisets; /* distinct count vectors of maximal layouts */
} layout_stats;
/* Enumerate the layouts of t using only the kinds in kind_mask (bit k: kind
 * k; the whole GPU excluded), for tests and docs/mig.md. */
void llmem_pack_layout_stats(const pack_type *t, unsigned kind_mask, layout_stats *out);

/* --- the fields of the fit and pack handles (pack_fields.c) --- */
#define FIT_KEY_END (LLMEM_FIT_DRIVER + 1)
#define PACK_KEY_END (LLMEM_PACK_DRIVER + 1)
extern const field_table llmem_fit_fields, llmem_pack_fields;

/* Setters and getter over a handle's ints[] (the message names the field);
 * the getter's caller checks out, naming itself. */
int llmem_pack_setting_int(llmem_ctx *ctx, const field_table *t, int64_t *ints, int key,
                           int64_t value);
int llmem_pack_setting_str(llmem_ctx *ctx, const field_table *t, int64_t *ints, int key,
                           const char *value);
int llmem_pack_setting_get(llmem_ctx *ctx, const field_table *t, const int64_t *ints, int key,
                           int64_t *out);

/* The least usable bytes that hold need with the margin (pack_fields.c),
 * ceil(1000 x need / (1000 - margin)): 1, or 0 when it exceeds 64 bits
 * (*required is then UINT64_MAX, which no option has). */
int llmem_pack_required(uint64_t need, int64_t margin_permille, uint64_t *required);

/* What the margin leaves of usable bytes (pack_fields.c): usable -
 * ceil(usable x margin / 1000), floor(usable x (1000 - margin) / 1000); a
 * need fits them exactly when llmem_pack_required() is at most usable. */
uint64_t llmem_pack_budget(uint64_t usable, int64_t margin_permille);

/* --- the packing problem --- */
typedef struct pack_job {
    char *id;
    uint64_t bytes;
    int level;            /* LLMEM_LEVEL_DEVICE or LLMEM_LEVEL_RESERVED */
    uint8_t min_compute;
    uint32_t cls;         /* class index (run) */
    /* result */
    int status;           /* llmem_pack_status */
    uint32_t gpu;         /* index into the pack's GPUs */
    uint8_t kind, start;
    uint64_t need, usable;
    uint64_t shortfall;
    size_t largest_gpu, largest_profile;
} pack_job;

/* One unit of a GPU's content: a class held by a kind. */
typedef struct pack_unit {
    uint32_t cls;
    uint8_t kind;
} pack_unit;

typedef struct pack_gpu {
    uint8_t type;       /* index into the pack's types */
    uint32_t state;
    uint8_t nunits;
    pack_unit unit[PACK_MAX_UNITS];
    uint32_t node, device;
} pack_gpu;

/* A class: jobs that the same kinds hold on every type. */
typedef struct pack_class {
    uint8_t mask[PACK_MAX_TYPES]; /* bit k: kind k of the type holds it */
    uint64_t count;               /* jobs (placeable ones) */
    uint32_t memw, compw;         /* smallest slots in 24ths, compute in 28ths, of a GPU */
} pack_class;

/* A filling: class counts one GPU of a type holds, with a kind for each unit. */
typedef struct pack_filling {
    uint8_t type;
    uint8_t nunits;
    pack_unit unit[PACK_MAX_UNITS];
} pack_filling;

struct llmem_pack {
    llmem_ctx *ctx;
    int64_t i[PACK_KEY_END];
    double d[PACK_KEY_END];
    size_t type_gpu[PACK_MAX_TYPES];
    uint64_t type_limit[PACK_MAX_TYPES];
    int ntypes;
    pack_job *jobs;
    size_t njobs, cap_jobs;
    /* result */
    pack_gpu *gpus;
    size_t ngpus;
    uint64_t result[PACK_RESULT_END];
    int ran;
    pack_type types[PACK_MAX_TYPES]; /* set up by the run, kept for the output */
};

/* Forget the last result (pack.c). */
void llmem_pack_drop_result(llmem_pack *p);

/* The working state of one run (run.c), shared by the steps. */
typedef struct pack_run {
    llmem_pack *p;
    pack_type *types;
    int ntypes;
    pack_class *classes;
    uint32_t nclasses;
    uint32_t *order;        /* job indices of placeable jobs, by class then input order */
    pack_filling *fill;     /* maximal fillings, every type; or the generated ones */
    size_t nfill;
    int fill_complete;      /* 0: too many to enumerate; the LP generates them, no exact search */
    size_t fill_max;        /* the most fill[] holds: x[] arrays of the LP are this long */
    struct pack_columns *columns; /* without fill_complete: the generated fillings' index */
    const uint64_t *counts; /* room[] when some type has a count, else NULL */
    uint64_t room[PACK_MAX_TYPES]; /* llmem_pack_room() */
} pack_run;

/* classes.c: needs, holding kinds, classes; jobs that fit nowhere. */
int llmem_pack_classify(pack_run *r);
/* fillings.c: the maximal fillings of every type. */
int llmem_pack_fillings(pack_run *r);
/* fillings.c, without fill_complete: the filling of type t worth the most at
 * prices p >= 0 (per class) with at most cap[c] units of class c, exactly
 * (over the type's maximal states, each unit to a class by a transportation
 * problem): its value, and the filling in *f. With fill, the units it leaves
 * empty take classes of no price with room left (the largest first), for
 * the rounding's sake; the value is the same. 0 and no units when nothing of
 * positive price fits. */
double llmem_pack_price(pack_run *r, int t, const double *p, const uint64_t *cap, int fill,
                        pack_filling *f);
/* fillings.c: add f to fill[] unless a filling of its type with the same
 * class counts is there: 1 added, 0 there already (*index: where) or fill[]
 * full (*index: SIZE_MAX), or LLMEM_ENOMEM. */
int llmem_pack_column_add(pack_run *r, const pack_filling *f, size_t *index);
/* fillings.c: free what llmem_pack_fillings() allocated. */
void llmem_pack_fillings_free(pack_run *r);
/* A solution under construction: GPUs in order. */
typedef struct pack_plan {
    pack_gpu *gpu;
    size_t n, cap;
    uint64_t used[PACK_MAX_TYPES];
} pack_plan;
int llmem_pack_plan_push(llmem_ctx *ctx, pack_plan *plan, const pack_gpu *g);
void llmem_pack_plan_free(llmem_ctx *ctx, pack_plan *plan);
/* greedy.c: first fit decreasing over the demands left in remain[class];
 * adds GPUs to plan (respecting type limits); what finds no room stays in remain. */
int llmem_pack_first_fit(pack_run *r, pack_plan *plan, uint64_t *remain);
/* greedy.c: with counts, the limited GPUs first, each with the layout worth
 * the most at prices of what the classes cost on the types without a limit,
 * while it saves a GPU; then first fit of the rest. As first fit otherwise. */
int llmem_pack_priced_fit(pack_run *r, pack_plan *plan, uint64_t *remain);
/* lp.c: the configuration LP. With room (GPUs of each type it may use,
 * PACK_NO_LIMIT for any number; llmem_pack_room() gives the fleet's), each
 * limited type's GPUs capped there; without (NULL), or should that LP fail,
 * no cap. Returns 1 with *bound (from the dual) and x[nfill] (the primal),
 * 0 when not solved. */
int llmem_pack_lp(pack_run *r, const uint64_t *demand, const uint64_t *room, uint64_t *bound,
                  double *x);
/* lp.c: the jobs LP of a limited fleet, max sum_c y_c with y_c <= n_c,
 * y <= sum_F F x_F, each limited type's GPUs and (total < PACK_NO_LIMIT) all
 * GPUs capped. Returns 1 with *bound (llmem_pack_jobs_bound() of its duals)
 * and x[nfill] (the primal; x may be NULL), 0 when not solved. */
int llmem_pack_lp_jobs(pack_run *r, const uint64_t *demand, uint64_t total, uint64_t *bound,
                       double *x);
/* exact.c: the fewest GPUs for demand, by dynamic programming over class
 * counts; 1 with plan filled, 0 when over the limit. */
int llmem_pack_exact(pack_run *r, const uint64_t *demand, uint64_t limit, pack_plan *plan);
/* exact.c: the most jobs of demand the fleet (with its limits) holds, then
 * the fewest GPUs, then the most memory slices: a table per type, combined
 * over the types; 1 with plan filled, 0 when over the limit. */
int llmem_pack_exact_limited(pack_run *r, const uint64_t *demand, uint64_t limit,
                             pack_plan *plan);
/* bounds.c: the combinatorial bounds of demand (memory, compute, count),
 * for the fleet as its counts limit it. */
void llmem_pack_bounds(const pack_run *r, const uint64_t *demand, uint64_t *memory,
                       uint64_t *compute, uint64_t *count);
/* bounds.c: room[t], the GPUs of type t the fleet has (PACK_NO_LIMIT: any
 * number). */
void llmem_pack_room(const pack_run *r, uint64_t *room);
/* bounds.c: the fewest GPUs worth `value` when a GPU of type t is worth at
 * most m[t] and room[t] of them are there: the worthiest first. 0 when all
 * of them are worth less (no layout exists, no bound is given). */
uint64_t llmem_pack_cover(const pack_run *r, const uint64_t *room, const double *m, double value);
/* bounds.c: the most instances of the kinds in mask one feasible layout of t has. */
unsigned llmem_pack_capacity(const pack_type *t, uint8_t mask);
/* bounds.c: whether some type without a limit holds class c. */
int llmem_pack_unlimited(const pack_run *r, uint32_t c);
/* bounds.c: an upper bound on the jobs of demand the fleet places, from class
 * prices p >= 0 (weak duality; any p gives one); total caps all GPUs
 * (PACK_NO_LIMIT: no cap). UINT64_MAX when it gives none (no fillings). */
uint64_t llmem_pack_jobs_bound(const pack_run *r, const uint64_t *demand, const double *p,
                               uint64_t total);
/* bounds.c: the same from the fleet's memory slices, compute slices and
 * instances alone (knapsacks of the smallest jobs), and the jobs that fit. */
uint64_t llmem_pack_jobs_bound_simple(const pack_run *r, const uint64_t *demand);
/* assign.c: concrete jobs and placements for the chosen plan. */
int llmem_pack_assign(pack_run *r, const pack_plan *plan);

#endif
