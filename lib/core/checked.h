/* SPDX-License-Identifier: MIT */
/* Checked 64-bit arithmetic: a sticky flag records any overflow, so long
 * expressions (parameter counts of huge models) are checked once at the end. */
#ifndef LLMEM_CORE_CHECKED_H
#define LLMEM_CORE_CHECKED_H

#include <stdint.h>

typedef struct checked { int overflow; } checked;

static inline uint64_t ck_add(checked *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r))
        c->overflow = 1;
    return r;
}

static inline uint64_t ck_mul(checked *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        c->overflow = 1;
    return r;
}

static inline uint64_t ck_mul3(checked *c, uint64_t a, uint64_t b, uint64_t d)
{
    return ck_mul(c, ck_mul(c, a, b), d);
}

#endif
