/* SPDX-License-Identifier: MIT */
/* Helpers for the MIG tables (mig_*.c): one row a profile. */
#ifndef LLMEM_GPU_MIG_ROWS_H
#define LLMEM_GPU_MIG_ROWS_H

#include "gpu/gpu.h"
#include "llmem.h"

/* A row: name, compute slices, slots, start mask, maximum count, variant,
 * uncertainty bits, SMs, usable MiB, source. The Kubernetes resource is the
 * GPU operator's "mixed" strategy name, nvidia.com/mig-<profile>. */
#define MIG_ROW(name, compute, slots, starts, max, variant, uncertain, sms, mib, source)     \
    { name, "nvidia.com/mig-" name, compute, slots, starts, max, variant, uncertain, sms, \
      (uint64_t)(mib) * GPU_MIB, source }

#define MIG_TABLE(slots, compute, rows) { slots, compute, rows, sizeof(rows) / sizeof((rows)[0]) }

/* Placements on the 8-memory-slice grid (mig_configs.md, section 1):
 * 1g {0..6}:1, the double-memory 1g {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4,
 * 4g {0}:4, 7g {0}:8. Slot 7 is reachable only by 1g.2x at 6, 3g/4g at 4, 7g. */
#define S8_1G 0x7Fu
#define S8_1G2X 0x55u
#define S8_2G 0x15u
#define S8_3G 0x11u
#define S8_4G 0x01u
#define S8_7G 0x01u

#define PLAIN LLMEM_MIG_PLAIN
#define ME LLMEM_MIG_ME
#define MEM_EST MIG_MEMORY_ESTIMATED
#define PL_INF MIG_PLACEMENTS_INFERRED

#endif
