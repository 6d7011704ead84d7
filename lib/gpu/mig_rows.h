/* SPDX-License-Identifier: MIT */
/* Helpers for the MIG tables (mig_*.c): one row a profile. */
#ifndef LLMEM_GPU_MIG_ROWS_H
#define LLMEM_GPU_MIG_ROWS_H

#include "gpu/gpu.h"
#include "llmem.h"

/* The Kubernetes resource of a profile is the name NVIDIA's k8s-device-plugin
 * gives it under the "mixed" MIG strategy: "mig-" and the profile's name with
 * every '+' replaced by '.', under the "nvidia.com/" prefix
 * (NVIDIA/k8s-device-plugin internal/rm/rm.go, AddDefaultResourcesToConfig:
 * strings.ReplaceAll("mig-"+p.String(), "+", "."), commit 014b4ec; the name
 * must pass k8s.io NameIsDNSSubdomain, api/config/v1/resources.go, where '+'
 * is not allowed). So "1g.10gb" is nvidia.com/mig-1g.10gb and "1g.10gb+me"
 * nvidia.com/mig-1g.10gb.me. A variant's suffix is written twice below, as
 * nvidia-smi names it and as the resource does; tests/unit/test_gpu.c checks
 * every resource against the rule. */
#define MIG_SUFFIX_ME "+me"
#define MIG_RESOURCE_SUFFIX_ME ".me"
#define MIG_SUFFIX_GFX "+gfx"
#define MIG_RESOURCE_SUFFIX_GFX ".gfx"
#define MIG_SUFFIX_ME_ALL "+me.all"
#define MIG_RESOURCE_SUFFIX_ME_ALL ".me.all"
#define MIG_SUFFIX_NO_ME "-me"
#define MIG_RESOURCE_SUFFIX_NO_ME "-me"

/* A plain profile's row that exists from driver branch `since` on (a fact
 * the row's source states, "R525+"): name, compute slices, slots, start
 * mask, maximum count, uncertainty bits, SMs, usable MiB, source. */
#define MIG_ROW_FROM(since, name, compute, slots, starts, max, uncertain, sms, mib, source)      \
    { name, "nvidia.com/mig-" name, compute, slots, starts, max, LLMEM_MIG_PLAIN, uncertain, sms, \
      (uint64_t)(mib) * GPU_MIB, source, since }

/* A row without a driver fact: on every branch. */
#define MIG_ROW(...) MIG_ROW_FROM(0, __VA_ARGS__)

/* A variant's row: its base profile's name and the variant, ME, GFX, ME_ALL
 * or NO_ME (llmem_mig_variant without LLMEM_MIG_), then as MIG_ROW. */
#define MIG_VARIANT_ROW_FROM(since, base, v, compute, slots, starts, max, uncertain, sms, mib,  \
                             source)                                                           \
    { base MIG_SUFFIX_##v, "nvidia.com/mig-" base MIG_RESOURCE_SUFFIX_##v, compute, slots,     \
      starts, max, LLMEM_MIG_##v, uncertain, sms, (uint64_t)(mib) * GPU_MIB, source, since }
#define MIG_VARIANT_ROW(...) MIG_VARIANT_ROW_FROM(0, __VA_ARGS__)

#define MIG_TABLE(slots, compute, rows) \
    { slots, compute, rows, sizeof(rows) / sizeof((rows)[0]), NULL, 0 }
/* A table with pair rules (combinations older drivers refuse). */
#define MIG_TABLE_PAIRS(slots, compute, rows, pairs)                                    \
    { slots, compute, rows, sizeof(rows) / sizeof((rows)[0]), pairs,                   \
      sizeof(pairs) / sizeof((pairs)[0]) }

/* Placements on the 8-memory-slice grid (mig_configs.md, section 1):
 * 1g {0..6}:1, the double-memory 1g {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4,
 * 4g {0}:4, 7g {0}:8. Slot 7 is reachable only by 1g.2x at 6, 3g/4g at 4, 7g. */
#define S8_1G 0x7Fu
#define S8_1G2X 0x55u
#define S8_2G 0x15u
#define S8_3G 0x11u
#define S8_4G 0x01u
#define S8_7G 0x01u

#define MEM_EST MIG_MEMORY_ESTIMATED
#define PL_INF MIG_PLACEMENTS_INFERRED

#endif
