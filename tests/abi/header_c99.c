/* SPDX-License-Identifier: MIT */
/* The public header compiles on its own as strict C99 (-pedantic -Werror),
 * and what it declares links against the shared library: it is included
 * first, before anything that could supply a missing include. */
#include "llmem.h"

#include <stdio.h>
#include <string.h>

#if !LLMEM_VERSION_CHECK(0, 1, 0)
#error "LLMEM_VERSION_CHECK(0, 1, 0) must hold for this header"
#endif

int main(void)
{
    llmem_allocator allocator = LLMEM_ALLOCATOR_INIT;
    llmem_ctx *ctx = NULL;
    int rc;
    (void)allocator;
    if (llmem_version_number() != LLMEM_VERSION_NUMBER) {
        printf("header %d, library %u\n", LLMEM_VERSION_NUMBER, llmem_version_number());
        return 1;
    }
    rc = llmem_ctx_new(&ctx, NULL);
    if (rc != LLMEM_OK || strcmp(llmem_ctx_error(ctx), "") != 0)
        return 1;
    llmem_ctx_free(ctx);
    printf("C99 consumer of llmem.h %s: ok\n", llmem_version_string());
    return 0;
}
