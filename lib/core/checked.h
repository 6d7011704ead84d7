/* SPDX-License-Identifier: MIT */
/* Checked 64-bit arithmetic: a sticky flag records any overflow, so long
 * expressions (parameter counts of huge models) are checked once at the end.
 * GCC and Clang's overflow builtins where the compiler has them; plain C99
 * checks elsewhere, so the library builds with any C99 compiler. */
#ifndef LLMEM_CORE_CHECKED_H
#define LLMEM_CORE_CHECKED_H

#include <stdint.h>

typedef struct checked { int overflow; } checked;

/* LLMEM_NO_OVERFLOW_BUILTINS forces the plain checks (a unit test does). */
#if defined(LLMEM_NO_OVERFLOW_BUILTINS)
#elif defined(__has_builtin)
#  if __has_builtin(__builtin_add_overflow) && __has_builtin(__builtin_mul_overflow)
#    define LLMEM_HAVE_OVERFLOW_BUILTINS 1
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 5
#  define LLMEM_HAVE_OVERFLOW_BUILTINS 1
#endif

static inline uint64_t ck_add(checked *c, uint64_t a, uint64_t b)
{
#ifdef LLMEM_HAVE_OVERFLOW_BUILTINS
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r))
        c->overflow = 1;
    return r;
#else
    if (a > UINT64_MAX - b)
        c->overflow = 1;
    return a + b;
#endif
}

static inline uint64_t ck_mul(checked *c, uint64_t a, uint64_t b)
{
#ifdef LLMEM_HAVE_OVERFLOW_BUILTINS
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        c->overflow = 1;
    return r;
#else
    if (a != 0 && b > UINT64_MAX / a)
        c->overflow = 1;
    return a * b;
#endif
}

static inline uint64_t ck_mul3(checked *c, uint64_t a, uint64_t b, uint64_t d)
{
    return ck_mul(c, ck_mul(c, a, b), d);
}

#endif
