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

void cli_format_gib(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes >= 1073741824u)
        snprintf(buf, cap, "%.2f GiB", (double)bytes / 1073741824.0);
    else
        snprintf(buf, cap, "%.0f MiB", (double)bytes / 1048576.0);
}
