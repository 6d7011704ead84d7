/* SPDX-License-Identifier: MIT */
/*
 * MIG profiles of the Ampere GA100 GPUs (A30, A100 40 GB, A100 80 GB), from
 * ../shared/reference/mig_profiles.csv and mig_configs.md. Usable memory is
 * what `nvidia-smi mig -lgip` prints inside the instance, in GiB with two
 * decimals of sixteenths (9.62 = 9.625 GiB = 9856 MiB); where drivers differ,
 * the lowest figure, so a fit holds on every driver reported. Source codes:
 * UG = NVIDIA MIG User Guide (v580) profile tables; lgip/lgipp = transcripts
 * of `nvidia-smi mig -lgip / -lgipp`; GPUOP = the GPU operator's
 * default-mig-parted-config; AZ = an Azure transcript (docs/mig.md lists them).
 *
 * Driver branches: a row written MIG_*_FROM(R, ...) exists from branch R on,
 * as the UG's notes under its A30 and A100 tables state ("The 1g.6gb+me
 * profile is only available starting with R470 drivers", ...); the A100
 * table covers the 80 GB part by its names ("For A100-SXM4-80GB, the profile
 * names will change according to the memory proportion"), so its notes hold
 * for the 80 GB's profile of the same shape. Every other row has no such
 * fact: on every branch that drives the GPU.
 */
#include "gpu/mig_rows.h"

/* A30 24GB: 4 memory slices, 4 compute slices; lgipp (A30) 1g {0,1,2,3}:1,
 * 2g {0,2}:2, 4g {0}:4. */
static const mig_profile_desc a30[] = {
    MIG_ROW("1g.6gb", 1, 1, 0xFu, 4, 0, 14, 5952, "UG; lgip 5.81 GiB, SM 14 (A30-NOTES)"),
    MIG_VARIANT_ROW_FROM(470, "1g.6gb", ME, 1, 1, 0xFu, 1, 0, 14, 5952,
                         "UG (R470+); lgip 5.81 GiB"),
    MIG_ROW("2g.12gb", 2, 2, 0x5u, 2, 0, 28, 11968, "UG; lgip 11.69 GiB, SM 28"),
    MIG_VARIANT_ROW_FROM(525, "2g.12gb", ME, 2, 2, 0x5u, 1, 0, 28, 11968,
                         "UG (R525+); lgip 11.69 GiB"),
    MIG_ROW("4g.24gb", 4, 4, 0x1u, 1, 0, 56, 24000,
            "UG; lgip 23.44-23.50 GiB by driver (lowest kept), SM 56"),
};
const mig_table llmem_mig_a30 = MIG_TABLE(4, 4, a30);

/* A100 40GB (SXM4 and PCIe): placements observed with lgipp (MIG UG example). */
static const mig_profile_desc a100_40[] = {
    MIG_ROW("1g.5gb", 1, 1, S8_1G, 7, 0, 14, 4864, "UG; UG-lgipp; lgip 4.75 GiB, SM 14"),
    MIG_VARIANT_ROW_FROM(470, "1g.5gb", ME, 1, 1, S8_1G, 1, 0, 14, 4864,
                         "UG (R470+); lgipp profile ID 20"),
    MIG_ROW_FROM(525, "1g.10gb", 1, 2, S8_1G2X, 4, 0, 14, 9856,
                 "UG (R525+); lgipp profile ID 15, size 2; lgip 9.62 GiB"),
    MIG_ROW("2g.10gb", 2, 2, S8_2G, 3, 0, 28, 9856,
            "UG; lgip 9.62-9.75 GiB by driver, SM 28"),
    MIG_ROW("3g.20gb", 3, 4, S8_3G, 2, 0, 42, 19968,
            "UG; lgip 19.50-19.62 GiB (nvidia-smi 20096/20224 MiB in the UG example), SM 42"),
    MIG_ROW("4g.20gb", 4, 4, S8_4G, 1, 0, 56, 19968, "UG; lgip 19.50-19.62 GiB, SM 56"),
    MIG_ROW("7g.40gb", 7, 8, S8_7G, 1, 0, 98, 40192, "UG; lgip 39.25-39.50 GiB, SM 98"),
};
/* "Prior to NVIDIA driver release R510, the combination of a (4 memory, 4
 * compute) and a (4 memory, 3 compute) profile was not supported" (UG v580,
 * Concepts; mig_configs.md): 4g + 3g on one A100 from R510 on. */
static const mig_pair_rule a100_pairs[] = {
    { 4, 4, 4, 3, 510, "UG (Concepts): 4g + 3g from R510" },
};

const mig_table llmem_mig_a100_40 = MIG_TABLE_PAIRS(8, 7, a100_40, a100_pairs);

/* A100 80GB: placements inferred from the A100 40GB's (same GA100 geometry). */
static const mig_profile_desc a100_80[] = {
    MIG_ROW("1g.10gb", 1, 1, S8_1G, 7, PL_INF, 14, 9728,
            "UG; GPUOP; lgip 9.50 GiB (R515, AZ-A100-80) / 9.75 later, SM 14"),
    /* The 40 GB's 1g.5gb+me under the UG's 80 GB names: R470+ as that one. */
    MIG_VARIANT_ROW_FROM(470, "1g.10gb", ME, 1, 1, S8_1G, 1, PL_INF, 14, 9728,
                         "UG (R470+, as 1g.5gb+me); AZ-A100-80 lgip 9.50 GiB"),
    /* No trustworthy lgip seen: the 2-slot figure of the same GPU (2g.20gb).
     * The 40 GB's double-memory 1g.10gb under the UG's 80 GB names: R525+ as
     * that one, and absent from the R515 lgip (AZ-A100-80). */
    MIG_ROW_FROM(525, "1g.20gb", 1, 2, S8_1G2X, 4, MEM_EST | PL_INF, 0, 19968,
                 "UG (R525+, as the 40 GB's 1g.10gb); not in the R515 lgip (AZ-A100-80); "
                 "GPUOP all-1g.20gb = 4; memory estimated as 2g.20gb's 19.50 GiB"),
    MIG_ROW("2g.20gb", 2, 2, S8_2G, 3, PL_INF, 28, 19968,
            "UG; AZ-A100-80 lgip 19.50 GiB (R515), SM 28"),
    MIG_ROW("3g.40gb", 3, 4, S8_3G, 2, PL_INF, 42, 40192,
            "UG; AZ-A100-80 lgip 39.25 GiB, nvidia-smi 40192 MiB; drivers 535/545 name it "
            "3g.39gb (mig-parted #31)"),
    MIG_ROW("4g.40gb", 4, 4, S8_4G, 1, PL_INF, 56, 40192, "UG; AZ-A100-80 lgip 39.25 GiB"),
    MIG_ROW("7g.80gb", 7, 8, S8_7G, 1, PL_INF, 98, 80896,
            "UG; AZ-A100-80 lgip 79.00 GiB (R515), SM 98"),
};
const mig_table llmem_mig_a100_80 = MIG_TABLE_PAIRS(8, 7, a100_80, a100_pairs);
