/* SPDX-License-Identifier: MIT */
/*
 * The GPU catalog as const data: architectures (CUDA context, cuBLAS
 * workspace), whole GPUs (usable memory, SMs, aliases) and the MIG profiles
 * of MIG-capable GPUs (usable memory, slices, placements, maximum counts).
 * Every row carries its source; docs/mig.md and docs/gpu-constants.md
 * explain the sources and the rules behind the estimates.
 */
#ifndef LLMEM_GPU_GPU_H
#define LLMEM_GPU_GPU_H

#include "core/names.h"
#include "llmem.h"

#include <stddef.h>
#include <stdint.h>

#define GPU_MIB (UINT64_C(1) << 20)

/* The most GPUs a node may hold, in the planner's and the pack's
 * gpus-per-node (both take 0 for no node boundary): well above the largest
 * NVLink domain sold (GB200 NVL72: 72 GPUs; NVL576 announced), so a larger
 * number is more likely a slip than a node. */
#define GPU_MAX_PER_NODE 1024

/* Architectures; every value has a row in archs.c (a compile-time check). */
typedef enum gpu_arch {
    ARCH_SM70 = 1, /* Volta: V100 */
    ARCH_SM75,     /* Turing: T4 */
    ARCH_SM80,     /* Ampere GA100: A100, A30 */
    ARCH_SM86,     /* Ampere GA10x: A10, A10G, A6000, RTX 3090 */
    ARCH_SM89,     /* Ada: L4, L40S, RTX 4090 */
    ARCH_SM90,     /* Hopper: H100, H200, H20, GH200 */
    ARCH_SM100,    /* Blackwell: B200, GB200 */
    ARCH_SM103,    /* Blackwell Ultra: B300, GB300 */
    ARCH_SM120,    /* Blackwell GB20x: RTX 5090, RTX PRO 6000 */
    ARCH_CDNA3,    /* AMD Instinct MI300X (ROCm) */
    ARCH_END
} gpu_arch;

/* The architecture the estimate assumes when no GPU is chosen (the training
 * defaults' Hopper GPU, include/llmem.h): its context and workspace are the
 * device level's defaults. */
#define GPU_DEFAULT_ARCH ARCH_SM90

typedef struct arch_desc {
    const char *name;          /* "sm_80" */
    unsigned capability;       /* major * 10 + minor; 0 for AMD */
    uint64_t context;          /* bytes of one process's CUDA/ROCm context */
    int context_estimated;     /* 1: a default, not measured on this architecture */
    uint64_t workspace;        /* bytes of PyTorch's cuBLAS workspace per stream */
    const char *source;        /* of both numbers */
} arch_desc;

/* Bits of mig_profile_desc.uncertain (the public llmem_mig_uncertain). */
#define MIG_MEMORY_ESTIMATED 1u
#define MIG_PLACEMENTS_INFERRED 2u

typedef struct mig_profile_desc {
    const char *name;     /* "1g.10gb" */
    const char *resource; /* "nvidia.com/mig-1g.10gb" */
    uint8_t compute;      /* compute slices */
    uint8_t slots;        /* placement slots occupied */
    uint16_t starts;      /* bit s: may start at slot s */
    uint8_t max_count;
    uint8_t variant;      /* llmem_mig_variant */
    uint8_t uncertain;    /* MIG_* bits */
    uint16_t sms;         /* 0: unknown */
    uint64_t usable;      /* bytes, as nvidia-smi mig -lgip reports inside the instance */
    const char *source;
    uint16_t since;       /* the first driver branch that has it; 0: every branch (no fact) */
} mig_profile_desc;

/* The highest driver branch the driver settings take (LLMEM_FIT_DRIVER,
 * LLMEM_PACK_DRIVER): branches are three digits (R450 to R580 today). */
#define GPU_DRIVER_MAX 999

/* Two profiles, by their (slots, compute slices), that drivers before branch
 * `since` refuse to hold together on one GPU. */
typedef struct mig_pair_rule {
    uint8_t slots_a, compute_a, slots_b, compute_b;
    uint16_t since;
    const char *source;
} mig_pair_rule;

/* The MIG profiles one GPU (or a family sharing them) offers. */
typedef struct mig_table {
    uint8_t slots;   /* placement grid: 8 memory slices, 4 on A30, 12 units on RTX PRO 6000 */
    uint8_t compute; /* compute slices: 7, or 4 */
    const mig_profile_desc *profiles;
    size_t count;
    const mig_pair_rule *pairs; /* combinations older drivers refuse (NULL: none) */
    size_t npairs;
} mig_table;

/* The whole GPUs, in catalog order: row index + 1 (gpus.c places each row by
 * it and checks the count at compile time). The value of the training field
 * LLMEM_TRAIN_GPU; like the catalog's indices, stable within one version. */
typedef enum gpu_id {
    GPU_V100_16GB = 1, GPU_V100_32GB, GPU_T4, GPU_A10, GPU_A10G, GPU_L4, GPU_L40S, GPU_A6000,
    GPU_RTX_3090, GPU_RTX_4090, GPU_RTX_5090, GPU_A30, GPU_A100_40GB, GPU_A100_80GB,
    GPU_H100_SXM, GPU_H100_PCIE, GPU_H100_NVL, GPU_H200, GPU_H20, GPU_H20_141GB, GPU_GH200_96GB,
    GPU_GH200_144GB, GPU_B200, GPU_GB200, GPU_B300, GPU_GB300, GPU_RTX_PRO_6000, GPU_MI300X,
    GPU_END
} gpu_id;

typedef struct gpu_desc {
    name_value id;           /* canonical name ("A100-80GB") and gpu_id */
    const char *device_name; /* as the driver reports it: "NVIDIA A100-SXM4-80GB" */
    const char *aliases;     /* other accepted names, '|'-separated */
    int arch;                /* gpu_arch */
    uint64_t usable;         /* bytes: torch.cuda.mem_get_info() total */
    int usable_estimated;    /* 1: derived (docs/mig.md), not measured */
    uint16_t sms;            /* 0: unknown */
    const mig_table *mig;    /* NULL: no MIG */
    const char *source;      /* of usable and sms */
} gpu_desc;

/* Catalog rows (NULL past the end). */
size_t llmem_gpu_rows(void);
const gpu_desc *llmem_gpu_row(size_t index);
const arch_desc *llmem_gpu_arch_row(int arch);
/* Profile `profile` of GPU `gpu`, or NULL. */
const mig_profile_desc *llmem_gpu_profile(size_t gpu, size_t profile);

/* Driver branches (mig_drivers.c): driver is a major branch (535 for
 * 535.129.03), 0 for the newest. Whether branch driver has profile m. */
int llmem_mig_on_driver(const mig_profile_desc *m, int64_t driver);
/* Whether rule r refuses profiles a and b together on branch driver. */
int llmem_mig_pair_refused(const mig_pair_rule *r, const mig_profile_desc *a,
                           const mig_profile_desc *b, int64_t driver);
/* The name and the Kubernetes resource branch driver gives profile `profile`
 * of GPU `gpu` (a few drivers renamed a profile; the bytes are the same), or
 * NULL for a bad index. */
const char *llmem_mig_driver_name(size_t gpu, size_t profile, int64_t driver);
const char *llmem_mig_driver_resource(size_t gpu, size_t profile, int64_t driver);
/* The k-th name (from 0) that some branch gives profile `profile` of GPU
 * `gpu` other than its catalog name ("3g.39gb" for the A100 80 GB's
 * 3g.40gb), or NULL past the last or for a bad index: the names
 * llmem_mig_profile_find() also takes. */
const char *llmem_mig_other_name(size_t gpu, size_t profile, size_t k);

/* The GPUs as the values of an enumerated field (LLMEM_TRAIN_GPU): canonical
 * names, and text found as llmem_gpu_find() finds it (aliases, folding). */
extern const name_table llmem_names_gpu;
/* The gpu_id of a name, as llmem_gpu_find(); the context says why not. */
int llmem_gpu_find_id(llmem_ctx *ctx, const char *name, int *id);
/* The architecture row of GPU id (0: none chosen, GPU_DEFAULT_ARCH). */
const arch_desc *llmem_gpu_id_arch(int id);

/* The MIG tables, one per GPU or family (mig_*.c). */
extern const mig_table llmem_mig_a30, llmem_mig_a100_40, llmem_mig_a100_80, llmem_mig_h100_80,
    llmem_mig_h100_pcie, llmem_mig_h100_94, llmem_mig_h100_96, llmem_mig_h20_96, llmem_mig_h200,
    llmem_mig_h20_141, llmem_mig_gh200_144, llmem_mig_b200, llmem_mig_gb200, llmem_mig_b300,
    llmem_mig_gb300, llmem_mig_rtx_pro_6000;

#endif
