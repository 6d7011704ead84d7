/* SPDX-License-Identifier: MIT */
/* Compiler hints, empty where the compiler has none. */
#ifndef LLMEM_CORE_COMPILER_H
#define LLMEM_CORE_COMPILER_H

/* Kept out of line: a cold path's large stack frame and code stay off the
 * hot caller's (link-time optimization would otherwise inline it). */
#if defined(__GNUC__)
#define LLMEM_NOINLINE __attribute__((noinline))
#else
#define LLMEM_NOINLINE
#endif

/* A printf-like function: the format is argument fmt, its values start at
 * argument first (0 for a va_list). Callers' formats are checked, and the
 * function may pass fmt on to vprintf without -Wformat-nonliteral. */
#if defined(__GNUC__)
#define LLMEM_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define LLMEM_PRINTF(fmt, first)
#endif

#endif
