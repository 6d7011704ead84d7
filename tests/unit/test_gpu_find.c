/* SPDX-License-Identifier: MIT */
/*
 * llmem_gpu_find() answers as folding every name would: the library compares
 * the folded query with each catalog name as it stands (lib/gpu/lookup.c);
 * here a plain reference folds every canonical name, alias and driver's name
 * into a buffer and compares, as lookup.c's header describes. For many
 * spellings of every name (cases, separators, vendor words, truncations, one
 * byte changed, too long, not ASCII) both must give the same status, GPU and
 * message, ambiguity and suggestions included.
 */
#include <criterion/criterion.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmem.h"

/* The reference ------------------------------------------------------------ */

/* A name of this many letters and digits or more folds to nothing. */
#define REF_CAP 96

static const char *const ref_vendors[] = { "nvidia", "tesla", "geforce", "amd", "instinct" };

/* s[0..len) folded into out: letters and digits, lower case, then the
 * leading vendor words dropped while something follows each; 0 when too
 * long. */
static int ref_fold(const char *s, size_t len, char out[REF_CAP])
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c))
            continue;
        if (n + 1 >= REF_CAP)
            return 0;
        out[n++] = (char)tolower(c);
    }
    out[n] = '\0';
    for (int dropped = 1; dropped;) {
        dropped = 0;
        for (size_t v = 0; v < sizeof ref_vendors / sizeof ref_vendors[0]; v++) {
            size_t k = strlen(ref_vendors[v]);
            if (strncmp(out, ref_vendors[v], k) == 0 && out[k] != '\0') {
                memmove(out, out + k, strlen(out + k) + 1);
                dropped = 1;
            }
        }
    }
    return 1;
}

static int ref_same(const char *name, size_t len, const char *folded)
{
    char f[REF_CAP];
    return ref_fold(name, len, f) && strcmp(f, folded) == 0;
}

/* Whether an alias or the driver's name of GPU g folds to folded. */
static int ref_other_name(size_t g, const char *folded)
{
    const char *list = llmem_gpu_get_str(g, LLMEM_GPU_ALIASES);
    const char *device = llmem_gpu_get_str(g, LLMEM_GPU_DEVICE_NAME);
    for (const char *s = list; s != NULL;) {
        const char *bar = strchr(s, '|');
        size_t n = bar != NULL ? (size_t)(bar - s) : strlen(s);
        if (ref_same(s, n, folded))
            return 1;
        s = bar != NULL ? bar + 1 : NULL;
    }
    return ref_same(device, strlen(device), folded);
}

/* The status of a lookup of name, its GPU and its message (msg, cap 2048). */
static int ref_find(const char *name, size_t *gpu, char *msg)
{
    char folded[REF_CAP], f[REF_CAP], list[200];
    size_t found = 0, hits = 0, used = 0;
    msg[0] = '\0';
    if (!ref_fold(name, strlen(name), folded) || folded[0] == '\0') {
        snprintf(msg, 2048, "gpu: unknown GPU '%.80s' (see `llmem gpus`)", name);
        return LLMEM_ENOTFOUND;
    }
    for (size_t g = 0; g < llmem_gpu_count(); g++)
        if (ref_same(llmem_gpu_name(g), strlen(llmem_gpu_name(g)), folded)) {
            *gpu = g;
            return LLMEM_OK;
        }
    for (size_t g = 0; g < llmem_gpu_count(); g++)
        if (ref_other_name(g, folded)) {
            found = g;
            hits++;
        }
    if (hits == 1) {
        *gpu = found;
        return LLMEM_OK;
    }
    /* Suggestions: the canonical names whose folded text holds the query's. */
    list[0] = '\0';
    for (size_t g = 0; g < llmem_gpu_count() && used < sizeof list; g++) {
        const char *n = llmem_gpu_name(g);
        if (!ref_fold(n, strlen(n), f) || strstr(f, folded) == NULL)
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", n);
        used += (size_t)w;
    }
    if (hits > 1)
        snprintf(msg, 2048, "gpu: '%.80s' is ambiguous: one of %s (see `llmem gpus`)", name,
                 list);
    else if (list[0] != '\0')
        snprintf(msg, 2048, "gpu: unknown GPU '%.80s' (did you mean %s? see `llmem gpus`)", name,
                 list);
    else
        snprintf(msg, 2048, "gpu: unknown GPU '%.80s' (see `llmem gpus`)", name);
    return LLMEM_ENOTFOUND;
}

/* The spellings ----------------------------------------------------------- */

typedef struct spellings {
    char **items;
    size_t count, cap;
} spellings;

static void add(spellings *sp, const char *s)
{
    if (sp->count == sp->cap) {
        sp->cap = sp->cap ? 2 * sp->cap : 1024;
        sp->items = realloc(sp->items, sp->cap * sizeof *sp->items);
        cr_assert_not_null(sp->items);
    }
    size_t n = strlen(s) + 1;
    sp->items[sp->count] = malloc(n);
    cr_assert_not_null(sp->items[sp->count]);
    memcpy(sp->items[sp->count++], s, n);
}

static void add_prefixed(spellings *sp, const char *prefix, const char *s)
{
    char b[512];
    snprintf(b, sizeof b, "%s%s", prefix, s);
    add(sp, b);
}

/* Spellings of one catalog name: the lookups a user or a driver may make,
 * and near misses. */
static void add_variants(spellings *sp, const char *name)
{
    static const char *const prefixes[] = { "NVIDIA ", "nvidia-", "Tesla ", "GeForce ",
                                            "AMD Instinct ", "NVIDIA NVIDIA ", "nv ", "NVIDIA_" };
    char b[512];
    size_t n = strlen(name);
    add(sp, name);
    for (size_t i = 0; i <= n; i++)
        b[i] = (char)toupper((unsigned char)name[i]);
    add(sp, b);
    for (size_t i = 0; i <= n; i++)
        b[i] = (char)tolower((unsigned char)name[i]);
    add(sp, b);
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++)
        add_prefixed(sp, prefixes[p], name);
    /* Separators: each of ' ', '-', '_' after every byte; the name's own
     * separators swapped or dropped. */
    for (const char *sep = " -_"; *sep != '\0'; sep++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            b[k++] = name[i];
            b[k++] = *sep;
        }
        b[k] = '\0';
        add(sp, b);
        for (size_t i = 0; i <= n; i++)
            b[i] = isalnum((unsigned char)name[i]) || name[i] == '\0' ? name[i] : *sep;
        add(sp, b);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isalnum((unsigned char)name[i]))
            b[k++] = name[i];
    b[k] = '\0';
    add(sp, b);
    /* Every truncation, every byte changed, dropped or doubled. */
    for (size_t len = 0; len < n; len++) {
        memcpy(b, name, len);
        b[len] = '\0';
        add(sp, b);
        add(sp, name + len + 1);
    }
    for (size_t i = 0; i < n; i++) {
        static const char repl[] = { 'x', '0', '9', '-', '|', (char)0xc3 };
        for (size_t r = 0; r < sizeof repl; r++) {
            memcpy(b, name, n + 1);
            b[i] = repl[r];
            add(sp, b);
        }
        memcpy(b, name, i);
        memcpy(b + i, name + i + 1, n - i);
        add(sp, b);
        memcpy(b, name, i + 1);
        memcpy(b + i + 1, name + i, n - i + 1);
        add(sp, b);
    }
    /* Suffixed, and not ASCII around it. */
    snprintf(b, sizeof b, "%s-", name);
    add(sp, b);
    snprintf(b, sizeof b, "%sX", name);
    add(sp, b);
    snprintf(b, sizeof b, "%s\xc3\xa9", name);
    add(sp, b);
    snprintf(b, sizeof b, "\xc2\xa0%s\xc2\xa0", name);
    add(sp, b);
    /* Vendor words ahead, for REF_CAP - 2 to REF_CAP + 1 letters and digits
     * in all: found below the cap, not at it. */
    size_t alnum = 0;
    for (size_t i = 0; i < n; i++)
        alnum += isalnum((unsigned char)name[i]) != 0;
    for (size_t total = REF_CAP - 2; total <= REF_CAP + 1; total++) {
        size_t rest = total - alnum, at = 0;
        for (size_t teslas = 0; 5 * teslas <= rest; teslas++) {
            if ((rest - 5 * teslas) % 3 != 0)
                continue;
            for (size_t a = 0; a < (rest - 5 * teslas) / 3; a++)
                at += (size_t)snprintf(b + at, sizeof b - at, "AMD ");
            for (size_t t = 0; t < teslas; t++)
                at += (size_t)snprintf(b + at, sizeof b - at, "Tesla-");
            snprintf(b + at, sizeof b - at, "%s", name);
            add(sp, b);
            break;
        }
    }
    /* Too long: the name among more than REF_CAP letters and digits. */
    snprintf(b, sizeof b, "%s %0100d", name, 0);
    add(sp, b);
    snprintf(b, sizeof b, "%.*s%s", (int)(REF_CAP - 1 - (n < REF_CAP ? n : 0)),
             "nvidianvidianvidianvidianvidianvidianvidianvidianvidianvidianvidianvidianvidianvidi"
             "anvidianvidianvidia",
             name);
    add(sp, b);
}

static spellings all_spellings(void)
{
    static const char *const extra[] = {
        "", " ", "-", "---", "_-_ -", "|", "||", "\xff\xfe", "\xc3\xa9", "nvidia", "NVIDIA",
        "Tesla", "tesla tesla", "amd", "AMD Instinct", "instinct", "geforce", "nvidia nvidia",
        "nvidia tesla", "NVIDIA GeForce", "amdinstinct", "a", "A1", "0", "8", "80", "80gb", "gb",
        "h", "H1", "H10", "h100", "H200", "h20", "GH", "gh200", "RTX", "rtx pro", "B", "GB",
        "GB200-NVL72", "mi", "mi300", "v100", "nvidia h20", "NVIDIA H20", "nvidia a100",
        "A100 80GB", "A100-SXM", "A100 SXM4", "pcie", "sxm", "nvl", "hbm3", "blackwell",
        "Tesla V100", "NVIDIA Tesla T4", "AMD Instinct MI300X OAM", "nvidia-smi",
    };
    spellings sp = { 0 };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        add(&sp, extra[i]);
    char line[REF_CAP + 200];
    memset(line, 'a', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    add(&sp, line);
    for (size_t len = REF_CAP - 3; len <= REF_CAP + 1; len++) {
        /* Exactly around the cap: "h100" behind filler letters and digits. */
        char b[REF_CAP + 8];
        memset(b, '1', len);
        b[len] = '\0';
        add(&sp, b);
        memcpy(b, "nvidia", 6);
        add(&sp, b);
    }
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        add_variants(&sp, llmem_gpu_name(g));
        add_variants(&sp, llmem_gpu_get_str(g, LLMEM_GPU_DEVICE_NAME));
        const char *list = llmem_gpu_get_str(g, LLMEM_GPU_ALIASES);
        add(&sp, list); /* the whole list, bars and all */
        for (const char *s = list; s != NULL;) {
            char b[256];
            const char *bar = strchr(s, '|');
            size_t n = bar != NULL ? (size_t)(bar - s) : strlen(s);
            snprintf(b, sizeof b, "%.*s", (int)n, s);
            add_variants(&sp, b);
            s = bar != NULL ? bar + 1 : NULL;
        }
    }
    return sp;
}

static void free_spellings(spellings *sp)
{
    for (size_t i = 0; i < sp->count; i++)
        free(sp->items[i]);
    free(sp->items);
}

/* The tests --------------------------------------------------------------- */

Test(gpu_find, catalog_names_fold_within_the_cap)
{
    /* The library reads catalog names without a buffer, so it has no cap
     * for them: the reference's cap must never bite on one. */
    char f[REF_CAP];
    for (size_t g = 0; g < llmem_gpu_count(); g++) {
        const char *name = llmem_gpu_name(g), *dev = llmem_gpu_get_str(g, LLMEM_GPU_DEVICE_NAME);
        cr_assert(ref_fold(name, strlen(name), f), "%s", name);
        cr_assert(ref_fold(dev, strlen(dev), f), "%s", dev);
        for (const char *s = llmem_gpu_get_str(g, LLMEM_GPU_ALIASES); s != NULL;) {
            const char *bar = strchr(s, '|');
            size_t n = bar != NULL ? (size_t)(bar - s) : strlen(s);
            cr_assert(ref_fold(s, n, f), "%.*s", (int)n, s);
            s = bar != NULL ? bar + 1 : NULL;
        }
    }
}

Test(gpu_find, same_answers_and_messages_as_folding_every_name)
{
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    spellings sp = all_spellings();
    size_t found = 0, ambiguous = 0, suggested = 0;
    char msg[2048];
    for (size_t i = 0; i < sp.count; i++) {
        const char *q = sp.items[i];
        size_t want = SIZE_MAX, got = SIZE_MAX, got_null = SIZE_MAX;
        int rc_want = ref_find(q, &want, msg);
        int rc = llmem_gpu_find(ctx, q, &got);
        cr_assert_eq(rc, rc_want, "'%s': status %d, the reference %d (%s)", q, rc, rc_want, msg);
        cr_assert_eq(llmem_gpu_find(NULL, q, &got_null), rc_want, "'%s' without a context", q);
        if (rc == LLMEM_OK) {
            cr_assert_eq(got, want, "'%s': GPU %s, the reference %s", q, llmem_gpu_name(got),
                         llmem_gpu_name(want));
            cr_assert_eq(got_null, want, "'%s' without a context", q);
            found++;
        } else {
            cr_assert_str_eq(llmem_ctx_error(ctx), msg, "'%s'", q);
            ambiguous += strstr(msg, "is ambiguous") != NULL;
            suggested += strstr(msg, "did you mean") != NULL;
        }
    }
    /* The spellings reach every kind of answer. */
    cr_assert_gt(sp.count, 10000, "%zu spellings", sp.count);
    cr_assert_gt(found, 1000, "%zu found", found);
    cr_assert_gt(suggested, 100, "%zu with suggestions", suggested);
    cr_log_info("%zu spellings: %zu found, %zu ambiguous, %zu with suggestions", sp.count, found,
                ambiguous, suggested);
    free_spellings(&sp);
    llmem_ctx_free(ctx);
}

Test(gpu_find, shared_names_and_suggestions)
{
    /* The driver's "NVIDIA H20" is both H20s' name, but the canonical "H20"
     * wins. (No alias or driver's name of this catalog names two GPUs, so
     * the ambiguity message is not reached here.) */
    char msg[2048];
    size_t want = SIZE_MAX, got = SIZE_MAX;
    llmem_ctx *ctx = NULL;
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    cr_assert_eq(llmem_gpu_find(ctx, "NVIDIA H20", &got), LLMEM_OK);
    cr_assert_str_eq(llmem_gpu_name(got), "H20");
    cr_assert_eq(ref_find("NVIDIA H20", &want, msg), LLMEM_OK);
    cr_assert_eq(got, want);
    cr_assert_eq(llmem_gpu_find(ctx, "A100", &got), LLMEM_ENOTFOUND);
    cr_assert_str_eq(llmem_ctx_error(ctx), "gpu: unknown GPU 'A100' (did you mean A100-40GB, "
                                           "A100-80GB? see `llmem gpus`)");
    llmem_ctx_free(ctx);
}

Test(gpu_find, null_arguments)
{
    size_t g;
    cr_assert_eq(llmem_gpu_find(NULL, NULL, &g), LLMEM_EINVAL);
    cr_assert_eq(llmem_gpu_find(NULL, "H100", NULL), LLMEM_EINVAL);
}
