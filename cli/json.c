/* SPDX-License-Identifier: MIT */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Length of the UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t extra;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        extra = 2;
        lo = c == 0xE0 ? 0xA0 : lo;
        hi = c == 0xED ? 0x9F : hi;
    } else if (c >= 0xF0 && c <= 0xF4) {
        extra = 3;
        lo = c == 0xF0 ? 0x90 : lo;
        hi = c == 0xF4 ? 0x8F : hi;
    } else {
        return 0;
    }
    /* A NUL ends the string before any continuation byte is missed. */
    for (size_t k = 1; k <= extra; k++)
        if (s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xBF))
            return 0;
    return extra + 1;
}

/* A JSON string is Unicode text: bytes that are not UTF-8 (a path on a
 * Latin-1 file system) each become U+FFFD, the replacement character, so the
 * output stays valid UTF-8 JSON (RFC 8259 section 8.1). */
static void write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_seq(p);
        if (n == 0) {
            fputs("\\ufffd", out);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, n, out);
            p += n;
            continue;
        }
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
        p++;
    }
    fputc('"', out);
}

static void indent(json_writer *w)
{
    fputc('\n', w->out);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->out);
}

/* Separator, indentation and key of the next value. */
static void start_value(json_writer *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first)
            fputc(',', w->out);
        indent(w);
    }
    w->first = 0;
    if (key != NULL) {
        write_escaped(w->out, key);
        fputs(": ", w->out);
    }
}

static void open_container(json_writer *w, const char *key, char bracket)
{
    start_value(w, key);
    fputc(bracket, w->out);
    w->depth++;
    w->first = 1;
}

static void close_container(json_writer *w, char bracket)
{
    w->depth--;
    if (!w->first)
        indent(w);
    fputc(bracket, w->out);
    w->first = 0;
}

void json_begin(json_writer *w, FILE *out)
{
    w->out = out;
    w->depth = 0;
    w->first = 1;
}

void json_end(json_writer *w)
{
    fputc('\n', w->out);
}

void json_object_begin(json_writer *w, const char *key)
{
    open_container(w, key, '{');
}

void json_object_end(json_writer *w)
{
    close_container(w, '}');
}

void json_array_begin(json_writer *w, const char *key)
{
    open_container(w, key, '[');
}

void json_array_end(json_writer *w)
{
    close_container(w, ']');
}

void json_string(json_writer *w, const char *key, const char *value)
{
    start_value(w, key);
    if (value != NULL)
        write_escaped(w->out, value);
    else
        fputs("null", w->out);
}

void json_u64(json_writer *w, const char *key, uint64_t value)
{
    start_value(w, key);
    fprintf(w->out, "%llu", (unsigned long long)value);
}

void json_i64(json_writer *w, const char *key, int64_t value)
{
    start_value(w, key);
    fprintf(w->out, "%lld", (long long)value);
}

void json_real(json_writer *w, const char *key, double value)
{
    start_value(w, key);
    if (!isfinite(value)) {
        fputs("null", w->out);
        return;
    }
    /* The shortest form that reads back as the same double: 0.1, not 0.10000000000000001. */
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, value);
        if (strtod(buf, NULL) == value)
            break;
    }
    /* Keep a real a real for readers that type numbers by their form ("0.0", not "0"). */
    fprintf(w->out, "%s%s", buf, strpbrk(buf, ".eE") ? "" : ".0");
}

void json_null(json_writer *w, const char *key)
{
    start_value(w, key);
    fputs("null", w->out);
}

void json_bool(json_writer *w, const char *key, int value)
{
    start_value(w, key);
    fputs(value ? "true" : "false", w->out);
}
