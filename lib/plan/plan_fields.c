/* SPDX-License-Identifier: MIT */
/* The planner's fields for the field engine, in key order. */
#include "plan/plan.h"

#include "gpu/gpu.h"

#define INT(key, name, min, max, def) { LLMEM_PLAN_##key, name, FIELD_INT, min, max, 0, def, NULL }

static const field_desc rows[] = {
    INT(GPUS, "gpus", 1, 1 << 20, 1),
    INT(GPU_BYTES, "gpu-bytes", 0, 9.0e18, 0),
    INT(GPUS_PER_NODE, "gpus-per-node", 0, GPU_MAX_PER_NODE, 8), /* 0: one node */
    INT(MAX_MICRO_BATCH, "max-micro-batch", 1, 1 << 16, 64),
    INT(GLOBAL_BATCH, "global-batch", 0, 1 << 30, 0),
    INT(MARGIN_PERMILLE, "margin-permille", 0, 900, 50),
    INT(OFFLOAD, "plan-offload", 0, 1, 0),
};

typedef char plan_fields_cover_every_key[sizeof rows / sizeof rows[0] + 1 == PLAN_KEY_END ? 1 : -1];

const field_table llmem_plan_fields = FIELD_TABLE(LLMEM_OBJECT_PLAN, "plan", rows);
