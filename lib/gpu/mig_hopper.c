/* SPDX-License-Identifier: MIT */
/*
 * MIG profiles of the Hopper GPUs, from ../shared/reference/mig_profiles.csv
 * and mig_configs.md (conventions and source codes as in mig_ampere.c;
 * MP<n> = an NVIDIA/mig-parted issue or PR quoting lgip, COLFAX = a Colfax
 * transcript). Where a 4- or 8-slot profile has no reported figure, it is
 * estimated as twice the GPU's next smaller measured profile: on every GPU
 * with both figures, the larger profile holds at least twice the smaller
 * (A100, H100 80/94/96 GB, H200; a unit test checks it on the measured rows).
 */
#include "gpu/mig_rows.h"

/* H100 80GB SXM5: placements observed (lgipp H100-SXM transcript). */
static const mig_profile_desc h100_80[] = {
    MIG_ROW("1g.10gb", 1, 1, S8_1G, 7, 0, 16, 9856,
            "UG; lgip 9.62 GiB (R525) / 9.75 recent, SM 16"),
    MIG_VARIANT_ROW("1g.10gb", ME, 1, 1, S8_1G, 1, 0, 16, 9856, "UG; lgipp profile ID 20"),
    MIG_ROW("1g.20gb", 1, 2, S8_1G2X, 4, 0, 26, 19968,
            "UG; lgipp profile ID 15; lgip 19.50 GiB (R525) / 19.62, SM 26"),
    MIG_ROW("2g.20gb", 2, 2, S8_2G, 3, 0, 32, 19968, "UG; lgip 19.50-19.62 GiB, SM 32"),
    MIG_ROW("3g.40gb", 3, 4, S8_3G, 2, 0, 60, 40192,
            "UG; nvidia-smi 40192 MiB (R525, GCP) / 40448 (R580), SM 60"),
    MIG_ROW("4g.40gb", 4, 4, S8_4G, 1, 0, 64, 40192, "UG; lgip 39.25 (R525) / 39.50, SM 64"),
    MIG_ROW("7g.80gb", 7, 8, S8_7G, 1, 0, 132, 81152, "UG; lgip 79.25 GiB, SM 132"),
};
const mig_table llmem_mig_h100_80 = MIG_TABLE(8, 7, h100_80);

/* H100 PCIe 80GB: the UG's table covers PCIe and SXM5; no PCIe lgip found, so
 * the SXM5 figures, marked estimates; the 114-SM part's instance SMs are unknown. */
static const mig_profile_desc h100_pcie[] = {
    MIG_ROW("1g.10gb", 1, 1, S8_1G, 7, MEM_EST | PL_INF, 0, 9856, "UG; as H100 SXM5"),
    MIG_VARIANT_ROW("1g.10gb", ME, 1, 1, S8_1G, 1, MEM_EST | PL_INF, 0, 9856, "UG; as H100 SXM5"),
    MIG_ROW("1g.20gb", 1, 2, S8_1G2X, 4, MEM_EST | PL_INF, 0, 19968, "UG; as H100 SXM5"),
    MIG_ROW("2g.20gb", 2, 2, S8_2G, 3, MEM_EST | PL_INF, 0, 19968, "UG; as H100 SXM5"),
    MIG_ROW("3g.40gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 40192, "UG; as H100 SXM5"),
    MIG_ROW("4g.40gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 40192, "UG; as H100 SXM5"),
    MIG_ROW("7g.80gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 81152, "UG; as H100 SXM5"),
};
const mig_table llmem_mig_h100_pcie = MIG_TABLE(8, 7, h100_pcie);

/* H100 94GB (H100 NVL; H100 SXM5 94GB): placements observed (AZ-NVL, COLFAX lgipp). */
static const mig_profile_desc h100_94[] = {
    MIG_ROW("1g.12gb", 1, 1, S8_1G, 7, 0, 16, 10880,
            "UG; AZ-NVL lgip 10.75 GiB (nvidia-smi 11008 MiB, R560) / 10.62 other driver, SM 16"),
    MIG_VARIANT_ROW("1g.12gb", ME, 1, 1, S8_1G, 1, 0, 16, 10880, "UG; AZ-NVL; COLFAX"),
    MIG_ROW("1g.24gb", 1, 2, S8_1G2X, 4, 0, 26, 22144,
            "UG; AZ-NVL lgip 21.62 GiB (nvidia-smi 22144 MiB), SM 26"),
    MIG_ROW("2g.24gb", 2, 2, S8_2G, 3, 0, 32, 22144, "UG; AZ-NVL lgip 21.62 GiB, SM 32"),
    MIG_ROW("3g.47gb", 3, 4, S8_3G, 2, 0, 60, 47488,
            "UG; AZ-NVL lgip 46.38 GiB (nvidia-smi 47488 MiB), SM 60"),
    MIG_ROW("4g.47gb", 4, 4, S8_4G, 1, 0, 64, 47488, "UG; AZ-NVL lgip 46.38 GiB, SM 64"),
    MIG_ROW("7g.94gb", 7, 8, S8_7G, 1, 0, 132, 95360, "UG; AZ-NVL lgip 93.12 GiB, SM 132"),
};
const mig_table llmem_mig_h100_94 = MIG_TABLE(8, 7, h100_94);

/* H100 96GB (GH200 96GB): lgip from a GH200 transcript (GH200-KF); placements inferred. */
static const mig_profile_desc h100_96[] = {
    MIG_ROW("1g.12gb", 1, 1, S8_1G, 7, PL_INF, 16, 11264, "UG; GH200-KF lgip 11.00 GiB, SM 16"),
    MIG_VARIANT_ROW("1g.12gb", ME, 1, 1, S8_1G, 1, PL_INF, 16, 11264,
                    "UG; GH200-KF lgip 11.00 GiB"),
    MIG_ROW("1g.24gb", 1, 2, S8_1G2X, 4, PL_INF, 26, 23552, "UG; GH200-KF lgip 23.00 GiB, SM 26"),
    MIG_ROW("2g.24gb", 2, 2, S8_2G, 3, PL_INF, 32, 23552, "UG; GH200-KF lgip 23.00 GiB, SM 32"),
    MIG_ROW("3g.48gb", 3, 4, S8_3G, 2, PL_INF, 60, 47616, "UG; GH200-KF lgip 46.50 GiB, SM 60"),
    MIG_ROW("4g.48gb", 4, 4, S8_4G, 1, PL_INF, 64, 47616, "UG; GH200-KF lgip 46.50 GiB, SM 64"),
    MIG_ROW("7g.96gb", 7, 8, S8_7G, 1, PL_INF, 132, 95232, "UG; GH200-KF lgip 93.00 GiB, SM 132"),
};
const mig_table llmem_mig_h100_96 = MIG_TABLE(8, 7, h100_96);

/* H20 96GB: the H100 96GB profiles (vGPU guide for H20 SXM5 96GB; GPUOP groups
 * "H100-96GB, PG506-96GB, GH200, H20"); no H20 lgip found, and the H20 has
 * fewer SMs: memory estimated as the H100 96GB's, instance SMs unknown. */
static const mig_profile_desc h20_96[] = {
    MIG_ROW("1g.12gb", 1, 1, S8_1G, 7, MEM_EST | PL_INF, 0, 11264, "VGPU; UG; as H100 96GB"),
    MIG_VARIANT_ROW("1g.12gb", ME, 1, 1, S8_1G, 1, MEM_EST | PL_INF, 0, 11264,
                    "VGPU; as H100 96GB"),
    MIG_ROW("1g.24gb", 1, 2, S8_1G2X, 4, MEM_EST | PL_INF, 0, 23552, "VGPU; as H100 96GB"),
    MIG_ROW("2g.24gb", 2, 2, S8_2G, 3, MEM_EST | PL_INF, 0, 23552, "VGPU; as H100 96GB"),
    MIG_ROW("3g.48gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 47616, "VGPU; as H100 96GB"),
    MIG_ROW("4g.48gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 47616, "VGPU; as H100 96GB"),
    MIG_ROW("7g.96gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 95232, "VGPU; as H100 96GB"),
};
const mig_table llmem_mig_h20_96 = MIG_TABLE(8, 7, h20_96);

/* H200 141GB (SXM5 and NVL): lgip quoted in mig-parted #120 (MP120); placements inferred. */
static const mig_profile_desc h200[] = {
    MIG_ROW("1g.18gb", 1, 1, S8_1G, 7, PL_INF, 16, 16384, "UG; MP120 lgip 16.00 GiB, SM 16"),
    MIG_VARIANT_ROW("1g.18gb", ME, 1, 1, S8_1G, 1, PL_INF, 16, 16384, "UG; MP120 lgip 16.00 GiB"),
    MIG_ROW("1g.35gb", 1, 2, S8_1G2X, 4, PL_INF, 26, 33024, "UG; MP120 lgip 32.25 GiB, SM 26"),
    MIG_ROW("2g.35gb", 2, 2, S8_2G, 3, PL_INF, 32, 33024,
            "UG; MP120 lgip 32.25 GiB (32.50 another driver), SM 32"),
    MIG_ROW("3g.71gb", 3, 4, S8_3G, 2, PL_INF, 60, 71168, "UG; MP120 lgip 69.50 GiB, SM 60"),
    MIG_ROW("4g.71gb", 4, 4, S8_4G, 1, PL_INF, 64, 71168, "UG; MP120 lgip 69.50 GiB, SM 64"),
    MIG_ROW("7g.141gb", 7, 8, S8_7G, 1, PL_INF, 132, 143104,
            "UG; MP120 lgip 139.75 GiB (140.00 another driver), SM 132"),
};
const mig_table llmem_mig_h200 = MIG_TABLE(8, 7, h200);

/* H20 141GB: named in the vGPU guide only (not in the UG's supported GPUs):
 * the H200's profiles, memory estimated as the H200's. */
static const mig_profile_desc h20_141[] = {
    MIG_ROW("1g.18gb", 1, 1, S8_1G, 7, MEM_EST | PL_INF, 0, 16384, "VGPU; as H200"),
    MIG_VARIANT_ROW("1g.18gb", ME, 1, 1, S8_1G, 1, MEM_EST | PL_INF, 0, 16384, "VGPU; as H200"),
    MIG_ROW("1g.35gb", 1, 2, S8_1G2X, 4, MEM_EST | PL_INF, 0, 33024, "VGPU; as H200"),
    MIG_ROW("2g.35gb", 2, 2, S8_2G, 3, MEM_EST | PL_INF, 0, 33024, "VGPU; as H200"),
    MIG_ROW("3g.71gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 71168, "VGPU; as H200"),
    MIG_ROW("4g.71gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 71168, "VGPU; as H200"),
    MIG_ROW("7g.141gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 143104, "VGPU; as H200"),
};
const mig_table llmem_mig_h20_141 = MIG_TABLE(8, 7, h20_141);

/* GH200 144GB HBM3e: GPUOP configs and lgip quoted in mig-parted #139 (MP139);
 * not in the UG v580 table; placements inferred. */
static const mig_profile_desc gh200_144[] = {
    MIG_ROW("1g.18gb", 1, 1, S8_1G, 7, PL_INF, 16, 17920, "GPUOP; MP139 lgip 17.50 GiB, SM 16"),
    MIG_VARIANT_ROW("1g.18gb", ME, 1, 1, S8_1G, 1, PL_INF, 16, 17920,
                    "GPUOP; MP139 lgip 17.50 GiB"),
    MIG_ROW("1g.36gb", 1, 2, S8_1G2X, 4, PL_INF, 26, 36096, "GPUOP; MP139 lgip 35.25 GiB, SM 26"),
    MIG_ROW("2g.36gb", 2, 2, S8_2G, 3, PL_INF, 32, 36096, "GPUOP; MP139 lgip 35.25 GiB, SM 32"),
    MIG_ROW("3g.72gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 2 * 36096,
            "GPUOP; memory not reported: estimated as twice 2g.36gb's"),
    MIG_ROW("4g.72gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 2 * 36096,
            "GPUOP; memory not reported: estimated as twice 2g.36gb's"),
    MIG_ROW("7g.144gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 4 * 36096,
            "GPUOP; memory not reported: estimated as twice the 4-slot estimate"),
};
const mig_table llmem_mig_gh200_144 = MIG_TABLE(8, 7, gh200_144);
