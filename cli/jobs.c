/* SPDX-License-Identifier: MIT */
#include "jobs.h"

#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A jobs file larger than this is refused (a million jobs fit in far less). */
#define JOBS_MAX_FILE (256u << 20)

typedef struct parser {
    const char *path;
    const char *s, *end;
    int line;
    int failed;
} parser;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void fail(parser *p, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    if (p->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_error("%s:%d: %s", p->path, p->line, msg);
    p->failed = 1;
}

static void skip_space(parser *p)
{
    while (p->s < p->end) {
        char c = *p->s;
        if (c == '\n')
            p->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        p->s++;
    }
}

static int peek(parser *p)
{
    skip_space(p);
    return p->s < p->end ? (unsigned char)*p->s : -1;
}

static int expect(parser *p, char c, const char *what)
{
    if (peek(p) != c) {
        unsigned char got = p->s < p->end ? (unsigned char)*p->s : 0;
        if (p->s >= p->end)
            fail(p, "unexpected end of file (expected %s)", what);
        else if (got >= 0x20 && got < 0x7f)
            fail(p, "expected %s, got '%c'", what, got);
        else /* a control or non-ASCII byte, named rather than written raw */
            fail(p, "expected %s, got byte 0x%02x", what, got);
        return 0;
    }
    p->s++;
    return 1;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string after its opening quote, into a new buffer. */
static char *string(parser *p)
{
    /* The value is never longer than its text (an escape shrinks or keeps
     * it): measure the text up to the closing quote. */
    const char *q = p->s;
    while (q < p->end && *q != '"')
        q += *q == '\\' && q + 1 < p->end ? 2 : 1;
    char *out = malloc((size_t)(q - p->s) + 1), *o = out;
    if (out == NULL) {
        fail(p, "out of memory");
        return NULL;
    }
    while (p->s < p->end) {
        unsigned char c = (unsigned char)*p->s++;
        if (c == '"') {
            *o = '\0';
            return out;
        }
        if (c < 0x20) {
            fail(p, "a control character inside a string (escape it)");
            break;
        }
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        if (p->s >= p->end)
            break;
        char e = *p->s++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && simple != NULL) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            *o++ = map[simple - "\"\\/bfnrt"];
            continue;
        }
        unsigned cp, lo;
        if (e != 'u' || p->end - p->s < 4 || !hex4(p->s, &cp)) {
            fail(p, "a bad escape in a string");
            break;
        }
        p->s += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' || !hex4(p->s + 2, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF) {
                fail(p, "an unpaired surrogate escape in a string");
                break;
            }
            p->s += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(p, "an unpaired surrogate escape in a string");
            break;
        }
        if (cp == 0) {
            fail(p, "a NUL character in a string");
            break;
        }
        o += put_utf8(o, cp);
    }
    if (!p->failed)
        fail(p, "unterminated string");
    free(out);
    return NULL;
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* A number literal, checked against the JSON grammar and copied. */
static char *number(parser *p)
{
    const char *q = p->s;
    if (q < p->end && *q == '-')
        q++;
    if (q < p->end && *q == '0')
        q++;
    else if (q < p->end && is_digit(*q))
        while (q < p->end && is_digit(*q))
            q++;
    else {
        fail(p, "a malformed number");
        return NULL;
    }
    if (q < p->end && *q == '.') {
        q++;
        if (q >= p->end || !is_digit(*q)) {
            fail(p, "a malformed number");
            return NULL;
        }
        while (q < p->end && is_digit(*q))
            q++;
    }
    if (q < p->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < p->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= p->end || !is_digit(*q)) {
            fail(p, "a malformed number");
            return NULL;
        }
        while (q < p->end && is_digit(*q))
            q++;
    }
    size_t n = (size_t)(q - p->s);
    char *out = malloc(n + 1);
    if (out == NULL) {
        fail(p, "out of memory");
        return NULL;
    }
    memcpy(out, p->s, n);
    out[n] = '\0';
    p->s = q;
    return out;
}

static int literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(p->end - p->s) >= n && strncmp(p->s, word, n) == 0) {
        p->s += n;
        return 1;
    }
    return 0;
}

static int add_field(parser *p, jobs_spec *job, jobs_field *f)
{
    for (size_t i = 0; i < job->count; i++)
        if (strcmp(job->field[i].key, f->key) == 0) {
            fail(p, "field '%s' given twice in one job", f->key);
            return 0;
        }
    jobs_field *a = realloc(job->field, (job->count + 1) * sizeof *a);
    if (a == NULL) {
        fail(p, "out of memory");
        return 0;
    }
    job->field = a;
    job->field[job->count++] = *f;
    return 1;
}

static void free_spec(jobs_spec *job)
{
    for (size_t i = 0; i < job->count; i++) {
        free(job->field[i].key);
        free(job->field[i].text);
    }
    free(job->field);
}

/* One job object, after its opening brace. */
static int object(parser *p, jobs_spec *job, size_t index)
{
    if (peek(p) == '}') {
        p->s++;
        return 1;
    }
    for (;;) {
        jobs_field f;
        memset(&f, 0, sizeof f);
        if (!expect(p, '"', "a field name in quotes"))
            return 0;
        f.line = p->line;
        f.key = string(p);
        if (f.key == NULL)
            return 0;
        if (!expect(p, ':', "':' after a field name")) {
            free(f.key);
            return 0;
        }
        int c = peek(p);
        if (c == '"') {
            p->s++;
            f.kind = JOBS_STRING;
            f.text = string(p);
        } else if (c == '-' || is_digit(c)) {
            f.kind = JOBS_NUMBER;
            f.text = number(p);
        } else if (literal(p, "true")) {
            f.kind = JOBS_TRUE;
        } else if (literal(p, "false")) {
            f.kind = JOBS_FALSE;
        } else if (literal(p, "null")) {
            f.kind = JOBS_NULL;
        } else if (c == '{' || c == '[') {
            fail(p, "job #%zu: field '%s': a job's values are strings, numbers or booleans", index,
                 f.key);
        } else {
            fail(p, "job #%zu: field '%s': a malformed value", index, f.key);
        }
        if (p->failed || (f.kind <= JOBS_NUMBER && f.text == NULL) || !add_field(p, job, &f)) {
            free(f.key);
            free(f.text);
            return 0;
        }
        c = peek(p);
        if (c == ',') {
            p->s++;
            continue;
        }
        return expect(p, '}', "',' or '}' in a job");
    }
}

int cli_jobs_read(const char *path, jobs_file *out)
{
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        cli_error("%s: cannot open: %s", path, strerror(errno));
        return 0;
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text != NULL && (got = fread(text + len, 1, cap - len, fp)) > 0) {
        len += got;
        if (len == cap) {
            char *more = cap >= JOBS_MAX_FILE ? NULL : realloc(text, cap * 2);
            if (more == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = more;
            cap *= 2;
        }
    }
    int read_error = ferror(fp);
    fclose(fp);
    if (text == NULL || read_error) {
        free(text);
        cli_error("%s: cannot read (or larger than %u MiB)", path, JOBS_MAX_FILE >> 20);
        return 0;
    }
    parser p = { path, text, text + len, 1, 0 };
    /* A UTF-8 byte-order mark is skipped: RFC 8259 (section 8.1) lets a
     * parser "ignore the presence of a byte order mark rather than treating
     * it as an error", and editors on Windows write one. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p.s += 3;
    if (expect(&p, '[', "a JSON array of jobs ('[')")) {
        if (peek(&p) == ']') {
            p.s++;
        } else {
            for (;;) {
                peek(&p); /* the job's own line, past the blank lines before it */
                int line = p.line;
                if (!expect(&p, '{', "a job object ('{')"))
                    break;
                jobs_spec job;
                memset(&job, 0, sizeof job);
                job.line = line;
                if (!object(&p, &job, out->count + 1)) {
                    free_spec(&job);
                    break;
                }
                jobs_spec *a = realloc(out->job, (out->count + 1) * sizeof *a);
                if (a == NULL) {
                    free_spec(&job);
                    fail(&p, "out of memory");
                    break;
                }
                out->job = a;
                out->job[out->count++] = job;
                int c = peek(&p);
                if (c == ',') {
                    p.s++;
                    continue;
                }
                expect(&p, ']', "',' or ']' between jobs");
                break;
            }
        }
        if (!p.failed && peek(&p) != -1)
            fail(&p, "text after the array of jobs");
    }
    free(text);
    if (p.failed) {
        cli_jobs_free(out);
        return 0;
    }
    return 1;
}

void cli_jobs_free(jobs_file *f)
{
    for (size_t i = 0; i < f->count; i++)
        free_spec(&f->job[i]);
    free(f->job);
    memset(f, 0, sizeof *f);
}

const jobs_field *cli_jobs_get(const jobs_spec *job, const char *key)
{
    for (size_t i = 0; i < job->count; i++)
        if (strcmp(job->field[i].key, key) == 0)
            return &job->field[i];
    return NULL;
}
