/* SPDX-License-Identifier: MIT */
/*
 * Finding a GPU or a MIG profile by name. GPU names compare after folding:
 * lower case, letters and digits only, a leading vendor word dropped
 * ("NVIDIA H100 80GB HBM3" ~ "h100-80gb-hbm3"). A canonical name wins; other
 * names (aliases, the driver's name) must point at one GPU, else the name is
 * ambiguous and the message lists the candidates.
 *
 * A scheduler resolves a name per request, and an alias or a driver's name
 * means reading every name of the catalog (does another GPU have it too?).
 * So only the query is folded into a buffer; each catalog name is compared
 * as it stands, from its end, and left at its first difference.
 * tests/unit/test_gpu_find.c checks the answers and messages against
 * folding every name.
 */
#include "core/ctx.h"
#include "gpu/gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* A query of more letters and digits than this names nothing. */
#define FOLD_CAP 96

/* Each byte folded: an ASCII letter or digit in lower case, 0 for any other
 * byte (the C locale's isalnum() and tolower(), whatever locale the process
 * set: a Turkish tolower('I') would not fold "NVIDIA"). */
#define LETTER(upper, lower) [upper] = lower, [lower] = lower
static const char folded_byte[256] = {
    ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
    LETTER('A', 'a'), LETTER('B', 'b'), LETTER('C', 'c'), LETTER('D', 'd'), LETTER('E', 'e'),
    LETTER('F', 'f'), LETTER('G', 'g'), LETTER('H', 'h'), LETTER('I', 'i'), LETTER('J', 'j'),
    LETTER('K', 'k'), LETTER('L', 'l'), LETTER('M', 'm'), LETTER('N', 'n'), LETTER('O', 'o'),
    LETTER('P', 'p'), LETTER('Q', 'q'), LETTER('R', 'r'), LETTER('S', 's'), LETTER('T', 't'),
    LETTER('U', 'u'), LETTER('V', 'v'), LETTER('W', 'w'), LETTER('X', 'x'), LETTER('Y', 'y'),
    LETTER('Z', 'z'),
};
#undef LETTER

static char fold_byte(const char *s)
{
    return folded_byte[(unsigned char)*s];
}

/* Vendor and product-line words a name may start with, by first letter: no
 * two share one, so at most one can match at a place. */
static const char *const vendor_words[26] = {
    ['a' - 'a'] = "amd", ['g' - 'a'] = "geforce", ['i' - 'a'] = "instinct",
    ['n' - 'a'] = "nvidia", ['t' - 'a'] = "tesla",
};

/* The vendor word starting with folded byte c, or NULL. */
static const char *vendor_of(char c)
{
    return c >= 'a' ? vendor_words[c - 'a'] : NULL;
}

/* Where the folded text of name s starts: at its first letter or digit
 * past the leading vendor words, each dropped only while a letter or digit
 * follows it (its end when it has none). */
static const char *folded_start(const char *s)
{
    for (;;) {
        while (*s != '\0' && fold_byte(s) == 0)
            s++;
        const char *w = vendor_of(fold_byte(s)), *t = s;
        if (w == NULL)
            return s;
        for (; *w != '\0' && *t != '\0'; t++) {
            char c = fold_byte(t);
            if (c != 0 && c != *w++)
                return s;
        }
        while (*t != '\0' && fold_byte(t) == 0)
            t++;
        if (*w != '\0' || *t == '\0')
            return s;
        s = t;
    }
}

/* Fold s into buf; the folded text (in buf, NUL-terminated), or NULL when s
 * has FOLD_CAP letters and digits or more. */
static const char *fold(const char *s, char buf[FOLD_CAP], size_t *len)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        char c = fold_byte(s);
        if (c == 0)
            continue;
        if (n + 1 >= FOLD_CAP)
            return NULL;
        buf[n++] = c;
    }
    buf[n] = '\0';
    const char *f = folded_start(buf);
    *len = n - (size_t)(f - buf);
    return f;
}

/* Whether the letters and digits of [s, end) are whole vendor words. */
static int only_vendor_words(const char *s, const char *end)
{
    const char *w = NULL; /* the rest of the word being read */
    for (; s < end; s++) {
        char c = fold_byte(s);
        if (c == 0)
            continue;
        if (w == NULL && (w = vendor_of(c)) == NULL)
            return 0;
        if (c != *w++)
            return 0;
        if (*w == '\0')
            w = NULL;
    }
    return w == NULL;
}

/* Whether the catalog name [s, end) folds to folded[0..len) (len > 0, as
 * fold() leaves it: no vendor word followed by more at its start): its
 * letters and digits end with folded's, and before them come whole vendor
 * words only, which folding drops. Read from the end: the search for the
 * '|' after an alias finds it anyway, and the driver's names, which all
 * start with "NVIDIA", differ there soonest. */
static int folds_to(const char *s, const char *end, const char *folded, size_t len)
{
    while (len > 0) {
        if (end == s)
            return 0;
        char c = fold_byte(--end);
        if (c != 0 && c != folded[--len])
            return 0;
    }
    return only_vendor_words(s, end);
}

static int name_folds_to(const char *name, const char *folded, size_t len)
{
    return folds_to(name, name + strlen(name), folded, len);
}

/* Whether one of the '|'-separated names of list folds to folded[0..len). */
static int in_list(const char *list, const char *folded, size_t len)
{
    while (list != NULL) {
        const char *bar = strchr(list, '|');
        const char *end = bar != NULL ? bar : list + strlen(list);
        if (folds_to(list, end, folded, len))
            return 1;
        list = bar != NULL ? bar + 1 : NULL;
    }
    return 0;
}

static int names_row(const gpu_desc *g, const char *folded, size_t len)
{
    return in_list(g->aliases, folded, len) || name_folds_to(g->device_name, folded, len);
}

/* Whether the folded text of the catalog name contains folded[0..len)
 * (len > 0). */
static int folds_around(const char *name, const char *folded, size_t len)
{
    for (const char *s = folded_start(name); *s != '\0'; s++) {
        size_t i = 0;
        if (fold_byte(s) != folded[0])
            continue;
        for (const char *t = s; i < len && *t != '\0'; t++) {
            char c = fold_byte(t);
            if (c != 0 && c != folded[i])
                break;
            i += c != 0;
        }
        if (i == len)
            return 1;
    }
    return 0;
}

/* "A100-40GB, A100-80GB" for the GPUs whose folded names contain folded. */
static void candidates(const char *folded, size_t len, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < llmem_gpu_rows() && used < cap; i++) {
        const gpu_desc *g = llmem_gpu_row(i);
        if (!folds_around(g->id.name, folded, len))
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", g->id.name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int llmem_gpu_find(llmem_ctx *ctx, const char *name, size_t *gpu)
{
    char buf[FOLD_CAP], list[200];
    const char *folded;
    size_t len = 0, found = 0, hits = 0;
    if (name == NULL || gpu == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "gpu: NULL argument");
    if ((folded = fold(name, buf, &len)) == NULL || len == 0)
        return llmem__fail(ctx, LLMEM_ENOTFOUND, "gpu: unknown GPU '%.80s' (see `llmem gpus`)",
                           name);
    for (size_t i = 0; i < llmem_gpu_rows(); i++)
        if (name_folds_to(llmem_gpu_row(i)->id.name, folded, len)) {
            *gpu = i;
            llmem__ok(ctx);
            return LLMEM_OK;
        }
    for (size_t i = 0; i < llmem_gpu_rows(); i++)
        if (names_row(llmem_gpu_row(i), folded, len)) {
            found = i;
            hits++;
        }
    if (hits == 1) {
        *gpu = found;
        llmem__ok(ctx);
        return LLMEM_OK;
    }
    candidates(folded, len, list, sizeof list);
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
    /* A name some driver branch gives a profile instead (nvidia-smi on R535
     * lists the A100 80 GB's 3g.40gb as 3g.39gb): taken whatever the branch
     * in use, since it names that one profile (tests/unit/test_driver.c
     * checks every branch's names against every other profile's). */
    for (size_t i = 0; i < g->mig->count; i++) {
        const char *other;
        for (size_t k = 0; (other = llmem_mig_other_name(gpu, i, k)) != NULL; k++)
            if (same_ci(other, name)) {
                *profile = i;
                llmem__ok(ctx);
                return LLMEM_OK;
            }
    }
    return llmem__fail(ctx, LLMEM_ENOTFOUND, "mig: %s has no profile '%.40s' (expected %s)",
                       g->id.name, name, list);
}
