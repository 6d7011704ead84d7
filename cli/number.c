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

/* ASCII case-insensitive equality: units are read in any case. */
static int same_unit(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a) !=
            (*b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b))
            return 0;
    return *a == *b;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    /* IEC binary units (KiB, and Kubernetes' Ki), SI decimal ones (KB, and
     * Kubernetes' K or k): GB has always been 10^9 here, as G is in a
     * Kubernetes quantity. In any case: "80gb" is 80 GB, and "m" is mega, not
     * Kubernetes' milli (a fraction of a byte is no size). */
    static const struct {
        const char *unit;
        double bytes;
    } units[] = {
        { "", 1.0 },   { "B", 1.0 },
        { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
        { "TiB", 1099511627776.0 }, { "PiB", 1125899906842624.0 },
        { "Ki", 1024.0 },  { "Mi", 1048576.0 },  { "Gi", 1073741824.0 },
        { "Ti", 1099511627776.0 },  { "Pi", 1125899906842624.0 },
        { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 }, { "PB", 1e15 },
        { "K", 1e3 },  { "M", 1e6 },  { "G", 1e9 },  { "T", 1e12 },  { "P", 1e15 },
    };
    /* Plain digits are read exactly: a double holds integers to 2^53 only. */
    if (is_digit(*s) && strspn(s, "0123456789") == strlen(s)) {
        errno = 0;
        unsigned long long v = strtoull(s, NULL, 10);
        if (errno == ERANGE || v == 0)
            return 0;
        *out = (uint64_t)v;
        return 1;
    }
    /* strtod also reads " 5", "inf" and "0x10": a size starts with a digit
     * and is decimal. */
    char *end = NULL;
    if (!is_digit(*s) && !(*s == '.' && is_digit(s[1])))
        return 0;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || !(v > 0) || strcspn(s, "xX") < (size_t)(end - s))
        return 0;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        /* bytes are whole: "1.5" or "1.5 B" is no size (1.5 KiB is) */
        if (units[i].bytes == 1.0 && v != floor(v))
            continue;
        if (same_unit(end, units[i].unit) && v * units[i].bytes < 1.8e19) {
            *out = (uint64_t)(v * units[i].bytes);
            return *out > 0;
        }
    }
    return 0;
}
