/* SPDX-License-Identifier: MIT */
/*
 * MIG profiles of the Blackwell GPUs, from ../shared/reference/mig_profiles.csv
 * and mig_configs.md (conventions and source codes as in mig_ampere.c and
 * mig_hopper.c; GO<n> = a gpu-operator issue, RTX-BLOG = an lgip/lgipp
 * transcript of the RTX PRO 6000). Unreported 4- and 8-slot figures are twice
 * the next smaller profile's, as in mig_hopper.c.
 */
#include "gpu/mig_rows.h"

/* B200 180GB: lgip quoted in mig-parted #166 / gpu-operator #1242 (Jan 2025
 * driver: 1g 22.00 GiB) and mig-parted #187 / gpu-operator #1351 (Mar 2025:
 * 20.50 GiB); placements inferred. */
static const mig_profile_desc b200[] = {
    MIG_ROW("1g.23gb", 1, 1, S8_1G, 7, PL_INF, 18, 20992,
            "UG; MP187 lgip 20.50 GiB (Mar 2025) / MP166 22.00 (Jan 2025), SM 18"),
    MIG_VARIANT_ROW("1g.23gb", ME, 1, 1, S8_1G, 1, PL_INF, 18, 20992, "UG; MP166; MP187"),
    MIG_ROW("1g.45gb", 1, 2, S8_1G2X, 4, PL_INF, 30, 45312, "UG; MP166 lgip 44.25 GiB, SM 30"),
    MIG_ROW("2g.45gb", 2, 2, S8_2G, 3, PL_INF, 36, 45312, "UG; MP166 lgip 44.25 GiB, SM 36"),
    MIG_ROW("3g.90gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 2 * 45312,
            "UG; memory not reported: estimated as twice 2g.45gb's"),
    MIG_ROW("4g.90gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 2 * 45312,
            "UG; GO1351 (added Mar 2025); memory estimated as twice 2g.45gb's"),
    MIG_ROW("7g.180gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 4 * 45312,
            "UG; memory estimated as twice the 4-slot estimate"),
};
const mig_table llmem_mig_b200 = MIG_TABLE(8, 7, b200);

/* GB200 186GB: GPUOP; lgip quoted in mig-parted #227/#228 and gpu-operator
 * #1303 (production boards); no UG table; placements inferred. */
static const mig_profile_desc gb200[] = {
    MIG_ROW("1g.23gb", 1, 1, S8_1G, 7, PL_INF, 18, 22528,
            "GPUOP; MP227 lgip 22.00 GiB, SM 18 (early firmware named it 1g.24gb)"),
    MIG_VARIANT_ROW("1g.23gb", ME, 1, 1, S8_1G, 1, PL_INF, 18, 22528,
                    "GPUOP; MP227 lgip 22.00 GiB"),
    MIG_ROW("1g.47gb", 1, 2, S8_1G2X, 4, PL_INF, 32, 46592,
            "GPUOP; MP227, GO1303 lgip 45.50 GiB, SM 32"),
    MIG_ROW("2g.47gb", 2, 2, S8_2G, 3, PL_INF, 38, 46592, "GPUOP; MP227 lgip 45.50 GiB, SM 38"),
    MIG_ROW("3g.93gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 2 * 46592,
            "GPUOP; AWS MIGProfileType; memory estimated as twice 2g.47gb's"),
    MIG_ROW("4g.93gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 2 * 46592,
            "GPUOP; memory estimated as twice 2g.47gb's"),
    MIG_ROW("7g.186gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 4 * 46592,
            "GPUOP; memory estimated as twice the 4-slot estimate (a 7g.189gb variant also "
            "exists in GPUOP)"),
};
const mig_table llmem_mig_gb200 = MIG_TABLE(8, 7, gb200);

/* B300 and GB300: profile names and counts from GPUOP only (uncertain), the
 * 8-slot geometry assumed. No usable figure is reported: each is the name's
 * size x 0.88 GiB, below the lowest usable-to-name ratio measured on any
 * profile (0.885, H100 94GB 1g.12gb at 10.62 GiB). */
#define B300_SRC "GPUOP only; memory estimated as name GB x 0.88 GiB"
static const mig_profile_desc b300[] = {
    MIG_ROW("1g.34gb", 1, 1, S8_1G, 7, MEM_EST | PL_INF, 0, 34 * 1024 * 88 / 100, B300_SRC),
    MIG_VARIANT_ROW("1g.34gb", ME, 1, 1, S8_1G, 1, MEM_EST | PL_INF, 0, 34 * 1024 * 88 / 100,
                    B300_SRC),
    MIG_ROW("1g.67gb", 1, 2, S8_1G2X, 4, MEM_EST | PL_INF, 0, 67 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("2g.67gb", 2, 2, S8_2G, 3, MEM_EST | PL_INF, 0, 67 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("3g.135gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 135 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("4g.135gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 135 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("7g.269gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 269 * 1024 * 88 / 100, B300_SRC),
};
const mig_table llmem_mig_b300 = MIG_TABLE(8, 7, b300);

static const mig_profile_desc gb300[] = {
    MIG_ROW("1g.35gb", 1, 1, S8_1G, 7, MEM_EST | PL_INF, 0, 35 * 1024 * 88 / 100, B300_SRC),
    MIG_VARIANT_ROW("1g.35gb", ME, 1, 1, S8_1G, 1, MEM_EST | PL_INF, 0, 35 * 1024 * 88 / 100,
                    B300_SRC),
    MIG_ROW("1g.70gb", 1, 2, S8_1G2X, 4, MEM_EST | PL_INF, 0, 70 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("2g.70gb", 2, 2, S8_2G, 3, MEM_EST | PL_INF, 0, 70 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("3g.139gb", 3, 4, S8_3G, 2, MEM_EST | PL_INF, 0, 139 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("4g.139gb", 4, 4, S8_4G, 1, MEM_EST | PL_INF, 0, 139 * 1024 * 88 / 100, B300_SRC),
    MIG_ROW("7g.278gb", 7, 8, S8_7G, 1, MEM_EST | PL_INF, 0, 278 * 1024 * 88 / 100, B300_SRC),
};
const mig_table llmem_mig_gb300 = MIG_TABLE(8, 7, gb300);

/* RTX PRO 6000 Blackwell 96GB (Server, Workstation, Max-Q): 4 compute slices
 * on a 12-unit placement grid, lgipp 1g {0,3,6,9}:3, 2g {0,6}:6, 4g {0}:12
 * (RTX-BLOG, Server Edition; CUBECOS); the +gfx, -me and +me.all variants share
 * their base profile's placements. lgip 23.62 GiB (23.12 another driver),
 * 47.38, 95.12; torch reports 24192 MiB inside a 1g.24gb. */
#define R12_1G 0x249u /* {0,3,6,9} */
#define R12_2G 0x041u /* {0,6} */
#define R12_4G 0x001u
#define RTX_SRC "UG; RTX-BLOG lgip/lgipp"
static const mig_profile_desc rtx_pro_6000[] = {
    MIG_ROW("1g.24gb", 1, 3, R12_1G, 4, 0, 46, 23680,
            "UG; RTX-BLOG lgip 23.62 GiB / 23.12 another driver, SM 46"),
    MIG_VARIANT_ROW("1g.24gb", ME, 1, 3, R12_1G, 1, 0, 46, 23680, RTX_SRC),
    MIG_VARIANT_ROW("1g.24gb", GFX, 1, 3, R12_1G, 4, 0, 46, 23680, RTX_SRC),
    MIG_VARIANT_ROW("1g.24gb", ME_ALL, 1, 3, R12_1G, 1, 0, 46, 23680, RTX_SRC),
    MIG_VARIANT_ROW("1g.24gb", NO_ME, 1, 3, R12_1G, 4, 0, 46, 23680, RTX_SRC),
    MIG_ROW("2g.48gb", 2, 6, R12_2G, 2, 0, 94, 48512, "UG; RTX-BLOG lgip 47.38 GiB, SM 94"),
    MIG_VARIANT_ROW("2g.48gb", GFX, 2, 6, R12_2G, 2, 0, 94, 48512, RTX_SRC),
    MIG_VARIANT_ROW("2g.48gb", ME_ALL, 2, 6, R12_2G, 1, 0, 94, 48512, RTX_SRC),
    MIG_VARIANT_ROW("2g.48gb", NO_ME, 2, 6, R12_2G, 2, 0, 94, 48512, RTX_SRC),
    MIG_ROW("4g.96gb", 4, 12, R12_4G, 1, 0, 188, 97408,
            "UG; RTX-BLOG lgip 95.12 GiB, SM 188"),
    MIG_VARIANT_ROW("4g.96gb", GFX, 4, 12, R12_4G, 1, 0, 188, 97408, RTX_SRC),
};
const mig_table llmem_mig_rtx_pro_6000 = MIG_TABLE(12, 4, rtx_pro_6000);
