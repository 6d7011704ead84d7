/* SPDX-License-Identifier: MIT */
/*
 * The whole GPUs people fine-tune on, one row each: usable memory as
 * torch.cuda.mem_get_info() reports its total (= cudaDeviceProp.totalGlobalMem,
 * what deviceQuery prints and torch.cuda.get_device_properties().total_memory
 * holds), not the marketing number.
 *
 * Measured rows quote a deviceQuery or PyTorch report (torch prints
 * total_memory in MiB, rounded down: such a row is at most 1 MiB low); where
 * reports differ by driver, the lowest. Rows without a report are estimates
 * (usable_estimated = 1), by one of two rules (docs/mig.md, "Whole GPUs"):
 *  - a MIG GPU: its full MIG instance's lgip figure; on the measured A100
 *    40/80 GB, H100 SXM and H200 the whole GPU is within 0.5 % of it;
 *  - otherwise 0.98 x the memory, less the 1/16 that ECC takes on GDDR6 boards
 *    with ECC on by default (T4, A10, A10G, L4, L40S): every measured row is
 *    at or above that (A10G 22587 MiB vs 22579, RTX 5090 32117 vs 32112,
 *    T4 15110 vs 15052, V100 16130 vs 16056).
 */
#include "gpu/gpu.h"

#define MIB(n) ((uint64_t)(n) * GPU_MIB)
/* 0.98 x capacity in MiB, rounded down. */
#define EST(mib) ((uint64_t)(mib) * 98 / 100 * GPU_MIB)
/* GDDR6 with ECC on: 15/16 of the capacity is addressable. */
#define EST_ECC(mib) ((uint64_t)(mib) * 15 / 16 * 98 / 100 * GPU_MIB)

#define TORCH "torch.cuda.get_device_properties total_memory="
#define DQ "deviceQuery: "
#define RULE_098 "estimate: 0.98 x capacity"
#define RULE_ECC "estimate: 0.98 x capacity, less ECC's 1/16 (GDDR6, ECC on)"
#define RULE_MIG "estimate: the full MIG instance's lgip figure"

/* A row of GPU id: its name_value first (the field engine's view of the
 * catalog, llmem_names_gpu), at index id - 1. */
#define ROW(id, name) [GPU_##id - 1] = { { name, GPU_##id }

static const gpu_desc rows[] = {
    ROW(V100_16GB, "V100-16GB"), "Tesla V100-SXM2-16GB",
      "V100-SXM2-16GB|V100-PCIE-16GB|Tesla V100-PCIE-16GB|V100-FHHL-16GB", ARCH_SM70,
      MIB(16130), 0, 80, NULL,
      TORCH "16130MB and 16160MB, 80 SMs (YOLOv3/YOLOv5 logs on Tesla V100-SXM2-16GB)" },
    ROW(V100_32GB, "V100-32GB"),
      "Tesla V100-SXM2-32GB", "V100-SXM2-32GB|V100-PCIE-32GB|Tesla V100-PCIE-32GB", ARCH_SM70,
      EST(32 * 1024), 1, 80, NULL, RULE_098 " (32 GiB HBM2); SMs as the 16 GB GV100" },
    ROW(T4, "T4"),
      "Tesla T4", "Tesla T4|NVIDIA T4|T4-16GB", ARCH_SM75, UINT64_C(15843721216), 0, 40, NULL,
      DQ "15110 MBytes (15843721216 bytes), 40 multiprocessors (CUDA 11.0 driver)" },
    ROW(A10, "A10"), "NVIDIA A10", "A10-24GB", ARCH_SM86, EST_ECC(24 * 1024), 1, 0, NULL,
      RULE_ECC " (24 GiB)" },
    ROW(A10G, "A10G"), "NVIDIA A10G", "A10G-24GB", ARCH_SM86, MIB(22587), 0, 80, NULL,
      TORCH "22587MB, multi_processor_count=80" },
    ROW(L4, "L4"), "NVIDIA L4", "L4-24GB", ARCH_SM89, EST_ECC(24 * 1024), 1, 0, NULL,
      RULE_ECC " (24 GiB)" },
    ROW(L40S, "L40S"), "NVIDIA L40S", "L40S-48GB", ARCH_SM89, MIB(45589), 0, 142, NULL,
      TORCH "45589MB, multi_processor_count=142" },
    ROW(A6000, "A6000"),
      "NVIDIA RTX A6000", "RTX-A6000|RTX A6000|A6000-48GB", ARCH_SM86, MIB(48676), 0, 84, NULL,
      TORCH "48676MB, multi_processor_count=84" },
    ROW(RTX_3090, "RTX-3090"),
      "NVIDIA GeForce RTX 3090", "3090|RTX3090|GeForce RTX 3090", ARCH_SM86, MIB(24259), 0, 82, NULL,
      TORCH "24259MB and 24268MB (transformers DeepSpeed docs), multi_processor_count=82" },
    ROW(RTX_4090, "RTX-4090"),
      "NVIDIA GeForce RTX 4090", "4090|RTX4090|GeForce RTX 4090", ARCH_SM89, MIB(24563), 0, 128,
      NULL, TORCH "24563MB, multi_processor_count=128" },
    ROW(RTX_5090, "RTX-5090"),
      "NVIDIA GeForce RTX 5090", "5090|RTX5090|GeForce RTX 5090", ARCH_SM120, UINT64_C(33677180928),
      0, 170, NULL,
      DQ "32117 MBytes (33677180928 bytes), 170 multiprocessors, driver 570.133.04 "
         "(aikitoria/open-gpu-kernel-modules issue #1)" },
    ROW(A30, "A30"), "NVIDIA A30", "A30-24GB", ARCH_SM80, EST(24 * 1024), 1, 56, &llmem_mig_a30,
      RULE_098 " (24 GiB HBM2; above the 4g.24gb instance's 24000 MiB); 56 SMs of the "
               "4g.24gb instance (UG)" },
    ROW(A100_40GB, "A100-40GB"), "NVIDIA A100-SXM4-40GB",
      "A100-SXM4-40GB|A100-PCIE-40GB|A100-40GB-SXM|A100-40GB-PCIe|A100-SXM-40GB", ARCH_SM80,
      UINT64_C(42298834944), 0, 108, &llmem_mig_a100_40,
      DQ "40339 MBytes (42298834944 bytes), 108 multiprocessors, driver 12.2 "
         "(bottlerocket-os/bottlerocket PR #3873); 40441 MBytes on another machine" },
    ROW(A100_80GB, "A100-80GB"), "NVIDIA A100-SXM4-80GB",
      "A100-SXM4-80GB|A100-80GB-PCIe|A100-80GB-SXM|A100 80GB PCIe|A100-SXM-80GB", ARCH_SM80,
      MIB(81251), 0, 108, &llmem_mig_a100_80,
      DQ "81251 MBytes, 108 multiprocessors (A100-SXM4-80GB, quoted in a GPU architecture "
         "write-up); the PCIe board has the same 80 GB and SMs" },
    ROW(H100_SXM, "H100-SXM"), "NVIDIA H100 80GB HBM3",
      "H100|H100-80GB|H100-SXM5|H100-SXM5-80GB|H100-SXM-80GB|H100 80GB HBM3", ARCH_SM90,
      UINT64_C(85017755648), 0, 132, &llmem_mig_h100_80,
      DQ "81079 MBytes (85017755648 bytes), 132 multiprocessors, CUDA 13.0 driver; other "
         "reports 81082-81559 MiB by driver (torch 81089MB with torch 2.7)" },
    ROW(H100_PCIE, "H100-PCIe"),
      "NVIDIA H100 PCIe", "H100-PCIe-80GB|H100 PCIe", ARCH_SM90, MIB(81008), 0, 114,
      &llmem_mig_h100_pcie, TORCH "81008MB, multi_processor_count=114" },
    ROW(H100_NVL, "H100-NVL"),
      "NVIDIA H100 NVL", "H100-94GB|H100 NVL|H100-NVL-94GB", ARCH_SM90, MIB(95360), 1, 132,
      &llmem_mig_h100_94, RULE_MIG " (7g.94gb, 93.12 GiB); 132 SMs of that instance" },
    ROW(H200, "H200"), "NVIDIA H200", "H200-141GB|H200-SXM|H200-SXM5|H200-NVL|H200 NVL", ARCH_SM90,
      MIB(143156), 0, 132, &llmem_mig_h200, TORCH "143156MB, multi_processor_count=132" },
    ROW(H20, "H20"), "NVIDIA H20", "H20-96GB", ARCH_SM90, MIB(97285), 0, 78, &llmem_mig_h20_96,
      TORCH "97285MB, multi_processor_count=78 (quoted in Triton kernel comments)" },
    ROW(H20_141GB, "H20-141GB"),
      "NVIDIA H20", "H20-141G", ARCH_SM90, MIB(143156), 1, 0, &llmem_mig_h20_141,
      "estimate: the H200's measured total (the same 141 GB HBM3e)" },
    ROW(GH200_96GB, "GH200-96GB"),
      "NVIDIA GH200 480GB", "GH200 480GB|GH200-480GB|H100-96GB", ARCH_SM90, MIB(95232), 1, 132,
      &llmem_mig_h100_96,
      RULE_MIG " (7g.96gb, 93.00 GiB); 132 SMs of that instance" },
    ROW(GH200_144GB, "GH200-144GB"),
      "NVIDIA GH200 144G HBM3e", "GH200 144G HBM3e|GH200-144G|GH200-624GB", ARCH_SM90,
      EST(144 * 1024), 1, 0, &llmem_mig_gh200_144,
      RULE_098 " (144 GiB HBM3e; its 7g.144gb figure is itself an estimate)" },
    ROW(B200, "B200"),
      "NVIDIA B200", "B200-180GB|B200-192GB|HGX B200", ARCH_SM100, MIB(182631), 0, 148,
      &llmem_mig_b200, TORCH "182631MB and 182642MB, multi_processor_count=148" },
    ROW(GB200, "GB200"),
      "NVIDIA GB200", "GB200-186GB|GB200 NVL72", ARCH_SM100, EST(186 * 1024), 1, 0, &llmem_mig_gb200,
      RULE_098 " (186 GiB)" },
    ROW(B300, "B300"),
      "NVIDIA B300", "B300-288GB|HGX B300", ARCH_SM103, MIB(269 * 1024 * 88 / 100), 1, 0,
      &llmem_mig_b300,
      "estimate (uncertain): the 7g.269gb instance's estimate (name x 0.88 GiB)" },
    ROW(GB300, "GB300"),
      "NVIDIA GB300", "GB300-288GB|GB300 NVL72", ARCH_SM103, MIB(278 * 1024 * 88 / 100), 1, 0,
      &llmem_mig_gb300,
      "estimate (uncertain): the 7g.278gb instance's estimate (name x 0.88 GiB)" },
    ROW(RTX_PRO_6000, "RTX-PRO-6000"), "NVIDIA RTX PRO 6000 Blackwell Server Edition",
      "RTX PRO 6000|RTX-PRO-6000-Blackwell|RTX PRO 6000 Blackwell|"
      "RTX PRO 6000 Blackwell Server Edition|RTX PRO 6000 Blackwell Workstation Edition|"
      "RTX PRO 6000 Blackwell Max-Q Workstation Edition",
      ARCH_SM120, MIB(97408), 1, 188, &llmem_mig_rtx_pro_6000,
      RULE_MIG " (4g.96gb, 95.12 GiB); 188 SMs of that instance" },
    ROW(MI300X, "MI300X"),
      "AMD Instinct MI300X", "AMD Instinct MI300X|MI300X-192GB|MI300X OAM", ARCH_CDNA3, MIB(196592),
      0, 304, NULL,
      TORCH "196592MB, multi_processor_count=304 (ROCm, torch 2.3 and 2.6)" },
};

#define ROW_COUNT (sizeof rows / sizeof rows[0])

/* Every gpu_id has its row: ROW places each at id - 1, a repeated id is an
 * -Woverride-init warning (in -Wextra), and a unit test checks every row has
 * its name. */
typedef char gpu_rows_cover_every_id[ROW_COUNT == GPU_END - 1 ? 1 : -1];

const name_table llmem_names_gpu = NAME_TABLE_OF_ROWS_FOUND_BY(rows, ROW_COUNT, llmem_gpu_find_id);

size_t llmem_gpu_rows(void)
{
    return ROW_COUNT;
}

const gpu_desc *llmem_gpu_row(size_t index)
{
    return index < ROW_COUNT ? &rows[index] : NULL;
}

const mig_profile_desc *llmem_gpu_profile(size_t gpu, size_t profile)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    if (g == NULL || g->mig == NULL || profile >= g->mig->count)
        return NULL;
    return &g->mig->profiles[profile];
}
