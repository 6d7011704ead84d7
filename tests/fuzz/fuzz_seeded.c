/* SPDX-License-Identifier: MIT */
/*
 * A seeded run of a libFuzzer entry point without libFuzzer: the same inputs
 * on every machine and compiler, so `meson test` runs it under any
 * sanitizer the build has, and a failure names the input that broke.
 *
 *   fuzz_estimate_seeded [--seed N] [--inputs N] [--first I] [--max-seconds S]
 *                        [--only I] [--save FILE] [CORPUS_DIR]
 *
 * Input i is drawn from a generator seeded with the seed and i alone:
 * random bytes (8 to 96 of them) for even i, and for odd i, when a corpus
 * is given, one of its files (sorted by name) with one to four mutations
 * (a byte set, a bit flipped, a byte inserted or removed, a record's bytes
 * appended, the tail cut). --first starts at input I (past one that failed),
 * --only runs input I alone, --save writes it to FILE (for the corpus). --max-seconds stops early, after a prefix of the
 * same sequence, and says so. A broken invariant traps in the target; the
 * signal handler names the input before the process dies.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX 4096

/* splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): a full-period 64-bit generator, enough here. */
static uint64_t next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *state, uint64_t n)
{
    return n == 0 ? 0 : next(state) % n;
}

typedef struct corpus {
    char **path;
    size_t n;
} corpus;

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_corpus(const char *dir, corpus *c)
{
    DIR *d = opendir(dir);
    c->path = NULL;
    c->n = 0;
    if (d == NULL) {
        perror(dir);
        return 0;
    }
    size_t cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (c->n == cap) {
            char **bigger = realloc(c->path, (cap = cap ? 2 * cap : 64) * sizeof *bigger);
            if (bigger == NULL)
                break;
            c->path = bigger;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if ((c->path[c->n] = malloc(len)) == NULL)
            break;
        snprintf(c->path[c->n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    /* readdir's order depends on the file system: sort for the same inputs everywhere */
    qsort(c->path, c->n, sizeof *c->path, by_name);
    return 1;
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* Input i of the seed: random bytes, or a corpus file mutated. */
static size_t make_input(uint64_t seed, uint64_t i, const corpus *c, uint8_t *buf)
{
    uint64_t state = seed ^ (i * UINT64_C(0xD1B54A32D192ED03));
    size_t n;
    next(&state);
    if (i % 2 == 0 || c->n == 0) {
        n = 8 + (size_t)below(&state, 89);
        for (size_t k = 0; k < n; k++)
            buf[k] = (uint8_t)next(&state);
        return n;
    }
    n = read_file(c->path[below(&state, c->n)], buf, INPUT_MAX - 8);
    for (int m = 1 + (int)below(&state, 4); m > 0; m--) {
        size_t at = (size_t)below(&state, n + 1);
        switch (below(&state, 6)) {
        case 0: /* a byte set */
            if (at < n)
                buf[at] = (uint8_t)next(&state);
            break;
        case 1: /* a bit flipped */
            if (at < n)
                buf[at] ^= (uint8_t)(1u << below(&state, 8));
            break;
        case 2: /* a byte inserted */
            memmove(buf + at + 1, buf + at, n - at);
            buf[at] = (uint8_t)next(&state);
            n++;
            break;
        case 3: /* a byte removed */
            if (at < n) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            }
            break;
        case 4: /* a record appended: a key, then a value's bytes */
            for (int k = 0; k < 3; k++)
                buf[n++] = (uint8_t)next(&state);
            break;
        default: /* the tail cut */
            n = at;
            break;
        }
        if (n > INPUT_MAX - 8)
            n = INPUT_MAX - 8;
    }
    return n;
}

/* What the signal handler reports: the input running. */
static volatile sig_atomic_t running = -1;
static uint64_t running_seed;

static void put(const char *s)
{
    ssize_t ignored = write(2, s, strlen(s));
    (void)ignored;
}

static void put_u64(uint64_t v)
{
    char digits[24];
    int k = (int)sizeof digits;
    digits[--k] = '\0';
    do
        digits[--k] = (char)('0' + v % 10);
    while ((v /= 10) != 0 && k > 0);
    put(digits + k);
}

static void on_fatal(int sig)
{
    if (running >= 0) {
        put("fuzz_seeded: input ");
        put_u64((uint64_t)running);
        put(" of seed ");
        put_u64(running_seed);
        put(" failed; rerun it with --seed ");
        put_u64(running_seed);
        put(" --only ");
        put_u64((uint64_t)running);
        put(" --save FILE (and the same corpus)\n");
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(void)
{
    fprintf(stderr, "usage: fuzz_seeded [--seed N] [--inputs N] [--first I] [--max-seconds S] "
                    "[--only I] [--save FILE] [CORPUS_DIR]\n");
    return 2;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1, inputs = 1000, only = 0, from = 0;
    double max_seconds = 0;
    int have_only = 0;
    const char *save = NULL, *dir = NULL;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc)
            seed = strtoull(argv[++a], NULL, 0);
        else if (strcmp(argv[a], "--inputs") == 0 && a + 1 < argc)
            inputs = strtoull(argv[++a], NULL, 0);
        else if (strcmp(argv[a], "--first") == 0 && a + 1 < argc)
            from = strtoull(argv[++a], NULL, 0);
        else if (strcmp(argv[a], "--max-seconds") == 0 && a + 1 < argc)
            max_seconds = strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc)
            only = strtoull(argv[++a], NULL, 0), have_only = 1;
        else if (strcmp(argv[a], "--save") == 0 && a + 1 < argc)
            save = argv[++a];
        else if (argv[a][0] != '-' && dir == NULL)
            dir = argv[a];
        else
            return usage();
    }
    corpus c = { NULL, 0 };
    if (dir != NULL && !load_corpus(dir, &c))
        return 1;
    static const int fatal[] = { SIGILL, SIGABRT, SIGSEGV, SIGFPE, SIGBUS };
    for (size_t k = 0; k < sizeof fatal / sizeof fatal[0]; k++)
        signal(fatal[k], on_fatal);
    running_seed = seed;

    static uint8_t buf[INPUT_MAX];
    uint64_t first = have_only ? only : from, last = have_only ? only + 1 : inputs, ran = 0;
    double start = now();
    for (uint64_t i = first; i < last; i++) {
        size_t n = make_input(seed, i, &c, buf);
        if (save != NULL) {
            FILE *f = fopen(save, "wb");
            if (f == NULL || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
                perror(save);
                return 1;
            }
        }
        running = (sig_atomic_t)i;
        LLVMFuzzerTestOneInput(buf, n);
        running = -1;
        ran++;
        if (max_seconds > 0 && now() - start > max_seconds && i + 1 < last) {
            printf("stopped after %.1f s (--max-seconds): ", now() - start);
            break;
        }
    }
    double took = now() - start;
    printf("%llu inputs of seed %llu (%zu corpus files) in %.2f s, %.0f inputs/s\n",
           (unsigned long long)ran, (unsigned long long)seed, c.n, took,
           took > 0 ? (double)ran / took : 0.0);
    for (size_t k = 0; k < c.n; k++)
        free(c.path[k]);
    free(c.path);
    return 0;
}
