/* SPDX-License-Identifier: MIT */
/* The planner: layouts of a job over a number of GPUs, the largest
 * micro-batch each fits, ranked by a throughput proxy (cost.c). */
#ifndef LLMEM_PLAN_PLAN_H
#define LLMEM_PLAN_PLAN_H

#include "core/fields.h"
#include "llmem.h"
#include "model/model.h"
#include "parallel/parallel.h"
#include "train/setup.h"

#define PLAN_KEY_END (LLMEM_PLAN_OFFLOAD + 1)
#define PLAN_REJECT_KINDS 16
#define PLAN_EXAMPLE_CAP 240

extern const field_table llmem_plan_fields;

typedef struct plan_result {
    int64_t layout[PARALLEL_KEY_END]; /* the llmem_parallel fields */
    uint64_t micro_batch, micro_batches;
    int grad_ckpt;
    uint64_t peak_device, headroom, comm_bytes, bubble_permille;
    double tokens_per_second;
} plan_result;

typedef struct plan_reject {
    const char *reason; /* static */
    uint64_t layouts;
    uint64_t need;      /* the example's bytes when it is the closest of a kind to fit, else 0 */
    char example[PLAN_EXAMPLE_CAP];
} plan_reject;

struct llmem_plan {
    llmem_ctx *ctx;
    int64_t i[PLAN_KEY_END];
    double unused[PLAN_KEY_END];
    llmem_estimate *est;     /* reused by every estimate of a run */
    llmem_parallel *layout;  /* the layout being tried */
    plan_result *results;
    size_t nresults, cap;
    plan_reject reject[PLAN_REJECT_KINDS];
    size_t nreject;
};

/* What the cost model reads of a layout that fits. */
typedef struct plan_cost_input {
    const model_shape *m;
    const model_params *p;
    const setup *s;          /* seq, precision, grad-ckpt */
    const layout *l;
    uint64_t micro_batch, gpus_per_node;
} plan_cost_input;

/* The proxy's figures for one layout (cost.c). */
void llmem_plan_cost(const plan_cost_input *in, plan_result *out);

/* The memory one GPU holds: LLMEM_PLAN_GPU_BYTES, or when that is 0 the
 * usable memory of the training setup's GPU (LLMEM_TRAIN_GPU); 0 for neither. */
uint64_t llmem_plan_gpu_bytes(const llmem_plan *p, const llmem_train *train);

/* The GPUs a node holds: LLMEM_PLAN_GPUS_PER_NODE, or when that is 0 (no node
 * boundary) all LLMEM_PLAN_GPUS, one node. */
uint64_t llmem_plan_gpus_per_node(const llmem_plan *p);

/* Enumerate and rank (search.c); the planner's fields are checked. */
int llmem_plan_search(llmem_plan *plan, llmem_model *model, const llmem_train *train);

#endif
