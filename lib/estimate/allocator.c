/* SPDX-License-Identifier: MIT */
/*
 * From allocated to reserved to device bytes. Constants (docs/gpu-constants.md):
 * PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) rounds
 * every request up to kMinBlockSize = 512 B and serves requests of
 * kMinLargeAlloc = 10 MiB or more from segments rounded to kRoundLarge = 2 MiB.
 * The cuBLAS workspace and the CUDA context are the GPU's architecture's, from
 * the catalog (lib/gpu/archs.c), resolved into the setup.
 */
#include "estimate/statics.h"

#include "train/optimizers.h"

#define MIB (UINT64_C(1) << 20)
#define MIN_BLOCK UINT64_C(512)
#define MIN_LARGE_ALLOC (10 * MIB)
#define ROUND_LARGE (2 * MIB)
/* A training step's cuBLAS handles, each with its workspace: the forward's
 * thread's and autograd's backward thread's (a handle per thread; measured
 * on an H200, 33,554,432 B at the first matmul of each: docs/gpu-constants.md,
 * section c). */
#define CUBLAS_WORKSPACES 2

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

static uint64_t block_size(uint64_t bytes)
{
    if (bytes >= MIN_LARGE_ALLOC)
        return round_up(bytes, ROUND_LARGE);
    return bytes < MIN_BLOCK ? MIN_BLOCK : round_up(bytes, MIN_BLOCK);
}

uint64_t llmem_allocator_overhead(const tensor_list *l, const setup *s)
{
    /* torch's states are tensors of the parameter's size, rounded like it;
     * bitsandbytes' and Adafactor's are not. */
    const optimizer_desc *o = llmem_optimizer(s->optimizer);
    uint64_t states = o->state_rule == STATES_LIKE_PARAM ? (uint64_t)o->states : 0;
    uint64_t waste = 0;
    for (int i = 0; i < l->n; i++) {
        const tensor_class *c = &l->c[i];
        uint64_t bytes = class_tensor_bytes(c);
        uint64_t copies = 1 + (c->trainable ? 1 + states : 0);
        waste += (block_size(bytes) - bytes) * copies * c->count;
        /* The fused step's 4-byte step counters take a 512-byte block each. */
        if (c->trainable && o->step_counter && s->optimizer_impl == LLMEM_OPTIMIZER_IMPL_FUSED)
            waste += (block_size(STEP_COUNTER_BYTES) - STEP_COUNTER_BYTES) * c->count;
    }
    /* PyTorch allocates the workspaces through the caching allocator
     * (CublasHandlePool.cpp, getNewWorkspace). */
    return waste + CUBLAS_WORKSPACES * s->cublas_workspace;
}

uint64_t llmem_allocator_device(const setup *s, uint64_t reserved, uint64_t paged)
{
    return reserved + s->cuda_context + paged;
}
