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

#endif
