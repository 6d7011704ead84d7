/* SPDX-License-Identifier: MIT */
/* A test allocator with a budget: the first `left` allocations succeed, then
 * every one fails; `live` counts what is allocated and not freed, so a test
 * can drive an allocation failure at every step and check nothing leaks. */
#ifndef LLMEM_TESTS_HF_BUDGET_ALLOC_H
#define LLMEM_TESTS_HF_BUDGET_ALLOC_H

#include "llmem.h"

#include <stdlib.h>

typedef struct budget {
    int left;  /* allocations that succeed; then every one fails */
    long live; /* allocated and not freed */
} budget;

static void *budget_alloc(void *user, size_t bytes)
{
    budget *b = user;
    if (b->left-- <= 0)
        return NULL;
    void *p = malloc(bytes);
    b->live += p != NULL;
    return p;
}

static void budget_free(void *user, void *ptr)
{
    budget *b = user;
    b->live--;
    free(ptr);
}

/* An allocator drawing on b. */
static inline llmem_allocator budget_allocator(budget *b)
{
    llmem_allocator a = LLMEM_ALLOCATOR_INIT;
    a.alloc = budget_alloc;
    a.free = budget_free;
    a.user = b;
    return a;
}

#endif
