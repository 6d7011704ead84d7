/* SPDX-License-Identifier: MIT */
/*
 * The sharding engines (parallel.h), from their code:
 * - PyTorch DDP (torch/nn/parallel/distributed.py, reducer.cpp): replicas;
 *   flat gradient buckets beside .grad (gradient_as_bucket_view=False).
 * - DeepSpeed ZeRO (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py):
 *   16-bit model, fp32 master partitions and Adam states partitioned;
 *   stage 2 also reduces gradients into partitions; stage 3 partitions the
 *   16-bit parameters and gathers each module's around its use.
 * - PyTorch FSDP2 (torch/distributed/fsdp/_fully_shard): fp32 parameter
 *   shards that the optimizer updates; 16-bit copies gathered per block
 *   (MixedPrecisionPolicy param_dtype), resharded after forward unless
 *   reshard_after_forward=False (SHARD_GRAD_OP in FSDP1); HSDP shards within
 *   a group and replicates across groups.
 */
#include "parallel/parallel.h"

#define ROW(value, name) [LLMEM_SHARDING_##value] = { { name, LLMEM_SHARDING_##value }

static const sharding_desc rows[] = {
    /*                               states grads params deepspeed fsdp keep hybrid */
    ROW(NONE, "none"),               0,     0,    0,     0,        0,   0,   0 },
    ROW(ZERO1, "zero1"),             1,     0,    0,     1,        0,   0,   0 },
    ROW(ZERO2, "zero2"),             1,     1,    0,     1,        0,   0,   0 },
    ROW(ZERO3, "zero3"),             1,     1,    1,     1,        0,   0,   0 },
    ROW(FSDP_FULL, "fsdp-full"),     1,     1,    1,     0,        1,   0,   0 },
    ROW(FSDP_GRAD_OP, "fsdp-grad-op"), 1,   1,    1,     0,        1,   1,   0 },
    ROW(FSDP_HYBRID, "fsdp-hybrid"), 1,     1,    1,     0,        1,   0,   1 },
};

#define ROW_COUNT (sizeof rows / sizeof rows[0])
typedef char sharding_rows_cover_every_value[ROW_COUNT == LLMEM_SHARDING_FSDP_HYBRID + 1 ? 1 : -1];

const name_table llmem_names_sharding = NAME_TABLE_OF_ROWS(rows + 1, ROW_COUNT - 1);

static const name_value offload[] = { { "none", LLMEM_OFFLOAD_NONE },
                                      { "optimizer", LLMEM_OFFLOAD_OPTIMIZER },
                                      { "parameters", LLMEM_OFFLOAD_PARAMETERS } };
static const name_value schedule[] = { { "1f1b", LLMEM_SCHEDULE_1F1B },
                                       { "interleaved", LLMEM_SCHEDULE_INTERLEAVED } };
const name_table llmem_names_offload = NAME_TABLE(offload);
const name_table llmem_names_schedule = NAME_TABLE(schedule);

const sharding_desc *llmem_sharding(int sharding)
{
    if (sharding < 1 || (size_t)sharding >= ROW_COUNT)
        return NULL;
    return &rows[sharding];
}
