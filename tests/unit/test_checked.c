/* SPDX-License-Identifier: MIT */
/*
 * Checked 64-bit arithmetic (lib/core/checked.h), in both of its builds: the
 * compiler's overflow builtins and the plain C99 checks (this file is
 * compiled twice, once with -DLLMEM_NO_OVERFLOW_BUILTINS).
 */
#include "core/checked.h"

#include <criterion/criterion.h>

Test(checked, sums_and_products_at_the_edge)
{
    checked c = { 0 };
    cr_expect_eq(ck_add(&c, UINT64_MAX - 1, 1), UINT64_MAX);
    cr_expect_eq(ck_mul(&c, UINT64_C(1) << 32, (UINT64_C(1) << 32) - 1),
                 (UINT64_C(1) << 32) * ((UINT64_C(1) << 32) - 1));
    cr_expect_eq(ck_mul(&c, 0, UINT64_MAX), 0);
    cr_expect_eq(ck_mul3(&c, 2, 3, 7), 42);
    cr_expect_eq(c.overflow, 0, "no overflow yet");
    ck_add(&c, UINT64_MAX, 1);
    cr_expect_eq(c.overflow, 1, "UINT64_MAX + 1");
    c.overflow = 0;
    ck_mul(&c, UINT64_C(1) << 32, UINT64_C(1) << 32);
    cr_expect_eq(c.overflow, 1, "2^32 x 2^32");
    c.overflow = 0;
    ck_mul3(&c, UINT64_C(1) << 40, 1, UINT64_C(1) << 30);
    cr_expect_eq(c.overflow, 1, "2^40 x 2^30");
}
