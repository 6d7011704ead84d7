/* SPDX-License-Identifier: MIT */
#include "llmem.h"

#define LLMEM_STR2(x) #x
#define LLMEM_STR(x) LLMEM_STR2(x)

unsigned llmem_version_number(void)
{
    return LLMEM_VERSION_NUMBER;
}

const char *llmem_version_string(void)
{
    return LLMEM_STR(LLMEM_VERSION_MAJOR) "." LLMEM_STR(LLMEM_VERSION_MINOR) "." LLMEM_STR(
        LLMEM_VERSION_PATCH);
}
