/* SPDX-License-Identifier: MIT */
#include "number.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

cli_number cli_parse_int(const char *s, int64_t *out)
{
    const char *p = s + (*s == '+' || *s == '-');
    if (!is_digit(*p) || strspn(p, "0123456789") != strlen(p))
        return CLI_NUMBER_INVALID;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return CLI_NUMBER_RANGE;
    *out = (int64_t)v;
    return CLI_NUMBER_OK;
}

/* strtod also reads "0x1p3", "inf", "nan" and leading spaces: the text is
 * checked against the decimal form first. */
static int decimal_form(const char *p)
{
    size_t digits = 0;
    p += *p == '+' || *p == '-';
    for (; is_digit(*p); p++)
        digits++;
    if (*p == '.')
        for (p++; is_digit(*p); p++)
            digits++;
    if (digits == 0)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        p += *p == '+' || *p == '-';
        if (!is_digit(*p))
            return 0;
        while (is_digit(*p))
            p++;
    }
    return *p == '\0';
}

cli_number cli_parse_real(const char *s, double *out)
{
    if (!decimal_form(s))
        return CLI_NUMBER_INVALID;
    errno = 0;
    double v = strtod(s, NULL);
    /* An underflow reads as 0 or a denormal, which the bounds then judge. */
    if (errno == ERANGE && isinf(v))
        return CLI_NUMBER_RANGE;
    *out = v;
    return CLI_NUMBER_OK;
}
