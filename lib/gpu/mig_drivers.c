/* SPDX-License-Identifier: MIT */
/*
 * What a driver branch changes in the MIG catalog: which profiles it has
 * (mig_profile_desc.since), which pairs of profiles it refuses on one GPU
 * (mig_table.pairs) and the names it gives some profiles (the table below).
 * A driver is its major branch (535 for 535.129.03); 0 stands for the
 * newest, the catalog as it is.
 */
#include "gpu/gpu.h"

#include <string.h>

/* A profile some branches name otherwise: the name is cosmetic, the
 * instance the same (no source reports other bytes), so only the name and
 * the resource change. */
typedef struct mig_rename {
    const mig_table *table; /* the GPU's (or family's) profiles */
    const char *name;       /* the catalog's name */
    uint16_t first, last;   /* the branches that rename it, both included */
    const char *driver_name;
    const char *resource;   /* the device plugin's rule (mig_rows.h) on driver_name */
    const char *source;
} mig_rename;

static const mig_rename renames[] = {
    /* NVIDIA/mig-parted issue #31, "MIG partitioning leading to
     * nvidia_a100_3g.39gb instead of 3g.40gb partition for NVIDIA driver
     * versions 535.x and 545.x" (MP31 in mig_profiles.csv). */
    { &llmem_mig_a100_80, "3g.40gb", 535, 545, "3g.39gb", "nvidia.com/mig-3g.39gb", "MP31" },
};

int llmem_mig_on_driver(const mig_profile_desc *m, int64_t driver)
{
    return driver == 0 || driver >= m->since;
}

static int shape_is(const mig_profile_desc *m, uint8_t slots, uint8_t compute)
{
    return m->slots == slots && m->compute == compute;
}

int llmem_mig_pair_refused(const mig_pair_rule *r, const mig_profile_desc *a,
                           const mig_profile_desc *b, int64_t driver)
{
    if (driver == 0 || driver >= r->since)
        return 0;
    return (shape_is(a, r->slots_a, r->compute_a) && shape_is(b, r->slots_b, r->compute_b)) ||
           (shape_is(b, r->slots_a, r->compute_a) && shape_is(a, r->slots_b, r->compute_b));
}

static const mig_rename *rename_of(size_t gpu, size_t profile, int64_t driver)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    const mig_profile_desc *m = llmem_gpu_profile(gpu, profile);
    if (m == NULL || driver == 0)
        return NULL;
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++) {
        const mig_rename *r = &renames[i];
        if (r->table == g->mig && strcmp(r->name, m->name) == 0 && driver >= r->first &&
            driver <= r->last)
            return r;
    }
    return NULL;
}

const char *llmem_mig_driver_name(size_t gpu, size_t profile, int64_t driver)
{
    const mig_profile_desc *m = llmem_gpu_profile(gpu, profile);
    const mig_rename *r = rename_of(gpu, profile, driver);
    return r ? r->driver_name : m ? m->name : NULL;
}

const char *llmem_mig_driver_resource(size_t gpu, size_t profile, int64_t driver)
{
    const mig_profile_desc *m = llmem_gpu_profile(gpu, profile);
    const mig_rename *r = rename_of(gpu, profile, driver);
    return r ? r->resource : m ? m->resource : NULL;
}

const char *llmem_mig_other_name(size_t gpu, size_t profile, size_t k)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    const mig_profile_desc *m = llmem_gpu_profile(gpu, profile);
    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++) {
        const mig_rename *r = &renames[i];
        if (r->table == g->mig && strcmp(r->name, m->name) == 0 && k-- == 0)
            return r->driver_name;
    }
    return NULL;
}
