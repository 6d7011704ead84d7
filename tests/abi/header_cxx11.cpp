// SPDX-License-Identifier: MIT
// The public header compiles on its own as C++11 (-pedantic -Werror), with
// C linkage for what it declares, and links against the shared library.
#include "llmem.h"

#include <cstdio>
#include <cstring>

static_assert(LLMEM_VERSION_CHECK(0, 1, 0), "LLMEM_VERSION_CHECK(0, 1, 0) must hold");
static_assert(LLMEM_OK == 0 && LLMEM_EINVAL < 0, "status codes");

int main()
{
    llmem_allocator allocator = LLMEM_ALLOCATOR_INIT;
    (void)allocator;
    llmem_ctx *ctx = nullptr;
    if (llmem_version_number() != static_cast<unsigned>(LLMEM_VERSION_NUMBER))
        return 1;
    if (llmem_ctx_new(&ctx, nullptr) != LLMEM_OK)
        return 1;
    bool ok = std::strlen(llmem_status_str(LLMEM_ENOMEM)) > 0;
    llmem_ctx_free(ctx);
    std::printf("C++11 consumer of llmem.h %s: %s\n", llmem_version_string(), ok ? "ok" : "bad");
    return ok ? 0 : 1;
}
