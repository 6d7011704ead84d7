/* SPDX-License-Identifier: MIT */
/*
 * Finding a GPU or a MIG profile by name. GPU names compare after folding:
 * lower case, letters and digits only, a leading vendor word dropped
 * ("NVIDIA H100 80GB HBM3" ~ "h100-80gb-hbm3"). A canonical name wins; other
 * names (aliases, the driver's name) must point at one GPU, else the name is
 * ambiguous and the message lists the candidates.
 */
#include "core/ctx.h"
#include "gpu/gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define FOLD_CAP 96

/* Vendor and product-line words a name may start with. */
static const char *const prefixes[] = { "nvidia", "tesla", "geforce", "amd", "instinct" };

/* Fold s[0..len) into out (NUL-terminated); 0 when it does not fit. */
static int fold(const char *s, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c))
            continue;
        if (n + 1 >= FOLD_CAP)
            return 0;
        out[n++] = (char)tolower(c);
    }
    out[n] = '\0';
    for (int again = 1; again;) {
        again = 0;
        for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
            size_t k = strlen(prefixes[p]);
            if (strncmp(out, prefixes[p], k) == 0 && out[k] != '\0') {
                memmove(out, out + k, strlen(out + k) + 1);
                again = 1;
            }
        }
    }
    return 1;
}

/* Whether name (folded) equals one of the '|'-separated names of list. */
static int in_list(const char *list, const char *folded)
{
    char f[FOLD_CAP];
    while (list != NULL && *list) {
        size_t n = strcspn(list, "|");
        if (fold(list, n, f) && strcmp(f, folded) == 0)
            return 1;
        list += n;
        if (*list == '|')
            list++;
    }
    return 0;
}

static int names_row(const gpu_desc *g, const char *folded)
{
    char f[FOLD_CAP];
    if (in_list(g->aliases, folded))
        return 1;
    return fold(g->device_name, strlen(g->device_name), f) && strcmp(f, folded) == 0;
}

/* "A100-40GB, A100-80GB" for the GPUs whose folded names contain folded. */
static void candidates(const char *folded, char *buf, size_t cap)
{
    size_t used = 0;
    char f[FOLD_CAP];
    buf[0] = '\0';
    for (size_t i = 0; i < llmem_gpu_rows() && used < cap; i++) {
        const gpu_desc *g = llmem_gpu_row(i);
        if (folded[0] == '\0' || !fold(g->id.name, strlen(g->id.name), f) ||
            strstr(f, folded) == NULL)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", g->id.name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int llmem_gpu_find(llmem_ctx *ctx, const char *name, size_t *gpu)
{
    char folded[FOLD_CAP], list[200];
    size_t found = 0, hits = 0;
    if (name == NULL || gpu == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "gpu: NULL argument");
    if (!fold(name, strlen(name), folded) || folded[0] == '\0')
        return llmem__fail(ctx, LLMEM_ENOTFOUND, "gpu: unknown GPU '%.80s' (see `llmem gpus`)",
                           name);
    for (size_t i = 0; i < llmem_gpu_rows(); i++) {
        const gpu_desc *g = llmem_gpu_row(i);
        char f[FOLD_CAP];
        if (fold(g->id.name, strlen(g->id.name), f) && strcmp(f, folded) == 0) {
            *gpu = i;
            llmem__ok(ctx);
            return LLMEM_OK;
        }
    }
    for (size_t i = 0; i < llmem_gpu_rows(); i++)
        if (names_row(llmem_gpu_row(i), folded)) {
            found = i;
            hits++;
        }
    if (hits == 1) {
        *gpu = found;
        llmem__ok(ctx);
        return LLMEM_OK;
    }
    candidates(folded, list, sizeof list);
    if (hits > 1)
        return llmem__fail(ctx, LLMEM_ENOTFOUND,
                           "gpu: '%.80s' is ambiguous: one of %s (see `llmem gpus`)", name, list);
    if (list[0] != '\0')
        return llmem__fail(ctx, LLMEM_ENOTFOUND,
                           "gpu: unknown GPU '%.80s' (did you mean %s? see `llmem gpus`)", name,
                           list);
    return llmem__fail(ctx, LLMEM_ENOTFOUND, "gpu: unknown GPU '%.80s' (see `llmem gpus`)", name);
}

int llmem_gpu_find_id(llmem_ctx *ctx, const char *name, int *id)
{
    size_t gpu = 0;
    int rc = llmem_gpu_find(ctx, name, &gpu);
    if (rc == LLMEM_OK)
        *id = llmem_gpu_row(gpu)->id.value;
    return rc;
}

const arch_desc *llmem_gpu_id_arch(int id)
{
    const gpu_desc *g = id > 0 ? llmem_gpu_row((size_t)id - 1) : NULL;
    return llmem_gpu_arch_row(g != NULL ? g->arch : GPU_DEFAULT_ARCH);
}

static int same_ci(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

int llmem_mig_profile_find(llmem_ctx *ctx, size_t gpu, const char *name, size_t *profile)
{
    const gpu_desc *g = llmem_gpu_row(gpu);
    char list[240];
    size_t used = 0;
    if (name == NULL || profile == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "mig: NULL argument");
    if (g == NULL)
        return llmem__fail(ctx, LLMEM_ERANGE, "mig: no GPU of index %zu", gpu);
    if (g->mig == NULL)
        return llmem__fail(ctx, LLMEM_ENOTFOUND, "mig: %s has no MIG profiles", g->id.name);
    list[0] = '\0';
    for (size_t i = 0; i < g->mig->count; i++) {
        const char *p = g->mig->profiles[i].name;
        if (same_ci(p, name)) {
            *profile = i;
            llmem__ok(ctx);
            return LLMEM_OK;
        }
        if (used < sizeof list) {
            int n = snprintf(list + used, sizeof list - used, "%s%s", used ? "|" : "", p);
            if (n > 0)
                used += (size_t)n;
        }
    }
    return llmem__fail(ctx, LLMEM_ENOTFOUND, "mig: %s has no profile '%.40s' (expected %s)",
                       g->id.name, name, list);
}
