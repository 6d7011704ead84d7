/* SPDX-License-Identifier: MIT */
#include "format.h"

#include <stdio.h>

typedef struct unit {
    double binary, decimal;
    const char *binary_name, *decimal_name;
} unit;

/* Largest first. */
static const unit units[] = {
    { 1073741824.0, 1e9, "GiB", "GB" },
    { 1048576.0, 1e6, "MiB", "MB" },
    { 1024.0, 1e3, "KiB", "kB" },
};

void cli_format_bytes(uint64_t bytes, char *buf, size_t cap)
{
    double b = (double)bytes;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (b >= units[i].binary) {
            snprintf(buf, cap, "%.2f %s (%.2f %s)", b / units[i].binary, units[i].binary_name,
                     b / units[i].decimal, units[i].decimal_name);
            return;
        }
    }
    snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
}

void cli_format_count(uint64_t n, char *buf, size_t cap)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    size_t out = 0;
    if (cap == 0)
        return;
    for (int i = 0; i < len && out + 1 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0 && out + 2 < cap)
            buf[out++] = ',';
        buf[out++] = digits[i];
    }
    buf[out] = '\0';
}

void cli_format_count_short(uint64_t n, char *buf, size_t cap)
{
    static const struct {
        double size;
        const char *name;
    } scales[] = { { 1e12, "T" }, { 1e9, "B" }, { 1e6, "M" }, { 1e3, "K" } };
    double v = (double)n;
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
        if (v >= scales[i].size) {
            snprintf(buf, cap, "%.2f %s", v / scales[i].size, scales[i].name);
            return;
        }
    }
    snprintf(buf, cap, "%llu", (unsigned long long)n);
}

void cli_format_size(uint64_t bytes, int decimals, char *buf, size_t cap)
{
    if (bytes >= 1073741824u) {
        snprintf(buf, cap, "%.2f GiB", (double)bytes / 1073741824.0);
        return;
    }
    /* Below a GiB, the largest unit the value reaches: a nonzero count never
     * reads 0 ("0 MiB" for 300 KiB). */
    for (size_t i = 1; i < sizeof units / sizeof units[0]; i++) {
        double v = (double)bytes / units[i].binary;
        if (v >= 1.0) {
            if (decimals < 0) /* three significant digits: "973", "27.2", "2.72" */
                decimals = v >= 99.5 ? 0 : v >= 9.995 ? 1 : 2;
            snprintf(buf, cap, "%.*f %s", decimals, v, units[i].binary_name);
            return;
        }
    }
    snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
}

void cli_format_gib(uint64_t bytes, char *buf, size_t cap)
{
    cli_format_size(bytes, -1, buf, cap);
}
