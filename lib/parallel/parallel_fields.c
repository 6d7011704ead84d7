/* SPDX-License-Identifier: MIT */
/* The layout's fields for the field engine (core/fields.h), in key order. */
#include "parallel/parallel.h"

#define DEGREE(key, name) { LLMEM_PARALLEL_##key, name, FIELD_INT, 1, 1 << 20, 0, 1, NULL }
#define NAMED(key, name, max, def, values) \
    { LLMEM_PARALLEL_##key, name, FIELD_ENUM, 1, max, 0, def, values }

static const field_desc rows[] = {
    DEGREE(DP, "dp"),
    DEGREE(TP, "tp"),
    DEGREE(PP, "pp"),
    DEGREE(EP, "ep"),
    DEGREE(CP, "cp"),
    { LLMEM_PARALLEL_SP, "sp", FIELD_INT, 0, 1, 0, 0, NULL },
    NAMED(SHARDING, "sharding", LLMEM_SHARDING_FSDP_HYBRID, LLMEM_SHARDING_NONE,
          &llmem_names_sharding),
    { LLMEM_PARALLEL_SHARD_GROUP, "shard-group", FIELD_INT, 0, 1 << 20, 0, 0, NULL },
    NAMED(OFFLOAD, "offload", LLMEM_OFFLOAD_PARAMETERS, LLMEM_OFFLOAD_NONE, &llmem_names_offload),
    DEGREE(MICRO_BATCHES, "micro-batches"),
    NAMED(SCHEDULE, "schedule", LLMEM_SCHEDULE_INTERLEAVED, LLMEM_SCHEDULE_1F1B,
          &llmem_names_schedule),
    { LLMEM_PARALLEL_VIRTUAL_STAGES, "virtual-stages", FIELD_INT, 1, 1024, 0, 1, NULL },
    { LLMEM_PARALLEL_BUCKET_ELEMENTS, "bucket-elements", FIELD_INT, 0, 1e12, 0, 0, NULL },
};

typedef char parallel_fields_cover_every_key[sizeof rows / sizeof rows[0] + 1 == PARALLEL_KEY_END ? 1 : -1];

const field_table llmem_parallel_fields = FIELD_TABLE(LLMEM_OBJECT_PARALLEL, "parallel", rows);
