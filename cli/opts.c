/* SPDX-License-Identifier: MIT */
#include "opts.h"

#include "cli.h"
#include "number.h"

#include <llmem.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static cli_opt *find(cli_opt *opts, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

int cli_opts_take(int *argc, char **argv, cli_opt *opts, size_t n)
{
    int kept = 0;
    for (int i = 0; i < *argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] != '-' || arg[2] == '\0') {
            argv[kept++] = argv[i];
            continue;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = find(opts, n, name, len);
        if (o == NULL) {
            argv[kept++] = argv[i];
            continue;
        }
        if (o->switch_only) {
            if (eq != NULL) {
                cli_error("--%s takes no value (got '%s')", o->name, eq + 1);
                return -1;
            }
            o->value = "";
        } else if (eq != NULL) {
            o->value = eq + 1;
        } else if (i + 1 < *argc && strncmp(argv[i + 1], "--", 2) != 0) {
            o->value = argv[++i];
        } else {
            cli_error("--%s: missing value", o->name);
            return -1;
        }
    }
    *argc = kept;
    return 0;
}

int cli_opt_u64(const char *name, const char *value, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)value[0])) {
        cli_error("--%s '%s': not a non-negative integer", name, value);
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno != 0 || *end != '\0') {
        cli_error("--%s '%s': not a non-negative integer", name, value);
        return 0;
    }
    if (v < min || v > max) {
        cli_error("--%s '%s': out of range [%llu, %llu]", name, value, (unsigned long long)min,
                  (unsigned long long)max);
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

int cli_opt_margin(const char *name, const char *value, int64_t *permille)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (end != value && *end == '%')
        end++;
    /* As `llmem plan` and `llmem estimate --max` read it. */
    if (end == value || *end != '\0' || errno != 0) {
        cli_error("--%s '%s': a percentage in [0, 90)", name, value);
        return 0;
    }
    return cli_margin_permille(name, value, v, permille);
}

int cli_margin_permille(const char *name, const char *value, double percent, int64_t *permille)
{
    if (!(percent >= 0 && percent < 90)) {
        cli_error("--%s '%s': a percentage in [0, 90)", name, value);
        return 0;
    }
    int64_t tenths = (int64_t)(percent * 10.0 + 0.5);
    /* The range holds for the value kept, not only the value typed. */
    if (tenths >= 900) {
        cli_error("--%s '%s': a percentage in [0, 90) (it rounds to %.1f%%, in tenths of a "
                  "percent)", name, value, (double)tenths / 10);
        return 0;
    }
    *permille = tenths;
    return 1;
}

int cli_opt_count(const char *name, const char *value, int64_t *out)
{
    int64_t n = 0;
    cli_number number = cli_parse_int(value, &n);
    if (number == CLI_NUMBER_RANGE) {
        cli_error("--%s '%s': too large for a count", name, value);
        return 0;
    }
    if (number != CLI_NUMBER_OK || n < 0) {
        cli_error("--%s '%s': not a count", name, value);
        return 0;
    }
    *out = n;
    return 1;
}

int cli_opt_driver(const char *name, const char *value, int64_t *branch)
{
    char major[24];
    size_t n = strcspn(value, ".");
    int ok = n > 0 && n < sizeof major;
    /* Digits, then ".<digits>" groups. */
    for (size_t i = 0; ok && value[i] != '\0'; i++)
        ok = value[i] == '.' ? i > 0 && isdigit((unsigned char)value[i + 1])
                             : isdigit((unsigned char)value[i]) != 0;
    if (!ok) {
        cli_error("--%s '%s': a driver branch (535) or version (535.129.03)", name, value);
        return 0;
    }
    memcpy(major, value, n);
    major[n] = '\0';
    if (cli_parse_int(major, branch) != CLI_NUMBER_OK) {
        cli_error("--%s '%s': too large for a driver branch", name, value);
        return 0;
    }
    return 1;
}

const char *cli_message_after_field(const char *message, const char *field)
{
    size_t n = field != NULL ? strlen(field) : 0;
    if (n > 0 && strncmp(message, field, n) == 0 && message[n] == ':' && message[n + 1] == ' ')
        return message + n + 2;
    return message;
}

/* A library message without its leading "<object>: ". */
const char *cli_message_tail(const char *message)
{
    const char *colon = strstr(message, ": ");
    return colon != NULL && colon - message < 12 ? colon + 2 : message;
}

int cli_parse_level(const char *value, int *level)
{
    if (strcmp(value, "device") == 0)
        *level = LLMEM_LEVEL_DEVICE;
    else if (strcmp(value, "reserved") == 0)
        *level = LLMEM_LEVEL_RESERVED;
    else
        return 0;
    return 1;
}

int cli_find_gpu(llmem_ctx *ctx, const char *flag, const char *name, size_t *gpu)
{
    if (llmem_gpu_find(ctx, name, gpu) != LLMEM_OK) {
        cli_error("--%s '%s': %s", flag, name, cli_message_tail(llmem_ctx_error(ctx)));
        return 0;
    }
    return 1;
}

