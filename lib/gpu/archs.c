/* SPDX-License-Identifier: MIT */
/*
 * Per-architecture constants (docs/gpu-constants.md, sections b and c).
 *
 * CUDA context: 287 MiB (300,941,312 B), the estimator's default since 0.1.0
 * (the device level of a setup with no GPU chosen is GPU_DEFAULT_ARCH's row).
 * Its source is the lazy-loading measurement of pytorch/pytorch PR #86509:
 * `total - free` = 287,047,680 B ("287 MB", read as MiB), GPU not named, with
 * the 20 MiB segment the caching allocator took for the test's 6.4 MB tensor
 * included, so the context alone was 266,076,160 B (253.75 MiB). The default
 * stays above that and within the other reports (256 MiB on an RTX 3090,
 * 426 MiB on an RTX 6000 Ada, "~300 MB" and "around 400MB" from a PyTorch
 * maintainer: gpu-constants.md). No architecture has a better sourced
 * figure, so every row keeps it and says it is a default, but sm_90's.
 *
 * sm_90 (H100, H200): measured on an H200 (torch 2.11.0+cu130, driver
 * 580.159.04; tests/validation/gpu/gpu.csv, docs/validation.md "Ground truth
 * on a GPU"): what a training process holds outside the caching allocator
 * (NVML's used memory minus max_memory_reserved at the end of each phase) was
 * 747 MiB after one GPT-2 step and 763 to 777 MiB after 26 steps of other
 * models in the same process: the context and the kernel modules it loads
 * lazily; 747.6 to 765.6 MiB for one model in a fresh process
 * (tests/validation/gpu/fresh/). The row takes the most seen, 777 MiB.
 *
 * cuBLAS workspace, aten/src/ATen/cuda/CublasHandlePool.cpp
 * (parseChosenWorkspaceSize): ":4096:2:16:8" = 4096 KiB x 2 + 16 KiB x 8 =
 * 8,519,680 B before Hopper; ":4096:8" = 32 MiB for compute capability major
 * 9, 10 and 12 (Hopper and Blackwell).
 */
#include "gpu/gpu.h"

#define CONTEXT_DEFAULT (287 * GPU_MIB)
#define WORKSPACE_PRE_HOPPER (UINT64_C(4096) * 1024 * 2 + UINT64_C(16) * 1024 * 8)
#define WORKSPACE_HOPPER (UINT64_C(4096) * 1024 * 8)

#define CONTEXT_SM90_MEASURED (777 * GPU_MIB)

#define CUDA_SOURCE \
    "context: default 287 MiB (pytorch PR #86509, lazy loading; not measured on this " \
    "architecture); workspace: CublasHandlePool.cpp default"

static const arch_desc rows[] = {
    [ARCH_SM70] = { "sm_70", 70, CONTEXT_DEFAULT, 1, WORKSPACE_PRE_HOPPER, CUDA_SOURCE },
    [ARCH_SM75] = { "sm_75", 75, CONTEXT_DEFAULT, 1, WORKSPACE_PRE_HOPPER, CUDA_SOURCE },
    [ARCH_SM80] = { "sm_80", 80, CONTEXT_DEFAULT, 1, WORKSPACE_PRE_HOPPER, CUDA_SOURCE },
    [ARCH_SM86] = { "sm_86", 86, CONTEXT_DEFAULT, 1, WORKSPACE_PRE_HOPPER, CUDA_SOURCE },
    [ARCH_SM89] = { "sm_89", 89, CONTEXT_DEFAULT, 1, WORKSPACE_PRE_HOPPER, CUDA_SOURCE },
    [ARCH_SM90] = { "sm_90", 90, CONTEXT_SM90_MEASURED, 0, WORKSPACE_HOPPER,
                    "context: 777 MiB, the most measured outside the allocator on an H200 "
                    "(torch 2.11, CUDA 13.0; tests/validation/gpu/gpu.csv); workspace: "
                    "CublasHandlePool.cpp default, measured there" },
    [ARCH_SM100] = { "sm_100", 100, CONTEXT_DEFAULT, 1, WORKSPACE_HOPPER, CUDA_SOURCE },
    [ARCH_SM103] = { "sm_103", 103, CONTEXT_DEFAULT, 1, WORKSPACE_HOPPER, CUDA_SOURCE },
    [ARCH_SM120] = { "sm_120", 120, CONTEXT_DEFAULT, 1, WORKSPACE_HOPPER, CUDA_SOURCE },
    /* ROCm: no measured HIP context here; the workspace is the 76 MiB hipBLASLt
     * buffer CublasHandlePool.cpp gives ROCm (gpu-constants.md, section c);
     * whether the hipBLAS workspace comes on top was not checked. Both estimates. */
    [ARCH_CDNA3] = { "CDNA3", 0, CONTEXT_DEFAULT, 1, 76 * GPU_MIB,
                     "estimate: context as CUDA's default 287 MiB; workspace the 76 MiB "
                     "hipBLASLt buffer of CublasHandlePool.cpp on ROCm" },
};

/* Every gpu_arch value has its row. */
typedef char arch_rows_cover_every_value[sizeof rows / sizeof rows[0] == ARCH_END ? 1 : -1];

const arch_desc *llmem_gpu_arch_row(int arch)
{
    if (arch < 1 || arch >= ARCH_END)
        return NULL;
    return &rows[arch];
}
