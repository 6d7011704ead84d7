/* SPDX-License-Identifier: MIT */
/* The strict JSON scanner of hf/scan.h: the grammar of RFC 8259 sections 2 to
 * 7, and UTF-8 as RFC 3629 defines it (section 8.1: JSON text exchanged
 * between systems is UTF-8). */
#include "hf/scan.h"

#include <stdio.h>
#include <string.h>

/* What the next token may be. */
enum want {
    WANT_VALUE,
    WANT_VALUE_OR_CLOSE, /* just after '[' */
    WANT_KEY,
    WANT_KEY_OR_CLOSE,   /* just after '{' */
    WANT_SEPARATOR,      /* after a value inside a container: ',' or its close */
    WANT_END,            /* after the top-level value: whitespace only */
    WANT_DONE,
    WANT_FAILED
};

void llmem_hf_scan_begin(hf_scan *s, const char *text, size_t len)
{
    s->text = (const unsigned char *)text;
    s->len = len;
    s->at = 0;
    s->depth = 0;
    s->want = WANT_VALUE;
    s->err[0] = '\0';
}

static int fail(hf_scan *s, size_t at, const char *why)
{
    snprintf(s->err, sizeof s->err, "invalid JSON at byte %zu: %s", at, why);
    s->want = WANT_FAILED;
    return -1;
}

static int ends_early(hf_scan *s)
{
    snprintf(s->err, sizeof s->err, "JSON text ends early (%zu bytes)", s->len);
    s->want = WANT_FAILED;
    return -1;
}

static int unexpected(hf_scan *s, size_t at)
{
    char why[40];
    unsigned c = s->text[at];
    if (c > 0x20 && c < 0x7f)
        snprintf(why, sizeof why, "unexpected character '%c'", (char)c);
    else
        snprintf(why, sizeof why, "unexpected byte 0x%02x", c);
    return fail(s, at, why);
}

/* Length of the UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
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
    if (n <= extra)
        return 0;
    for (size_t k = 1; k <= extra; k++) {
        unsigned b = s[k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
            return 0;
    }
    return extra + 1;
}

static int hex_value(unsigned c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

/* The four hex digits at p (known to be there). -1 when one is not hex. */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_value(p[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* A \uXXXX escape at i (text[i] is the backslash), with its low half when it
 * is a high surrogate. Sets *next past it. */
static int unicode_escape(hf_scan *s, size_t i, size_t *next)
{
    if (s->len - i < 6)
        return ends_early(s);
    long cp = hex4(s->text + i + 2);
    if (cp < 0)
        return fail(s, i, "\\u needs four hexadecimal digits");
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(s, i, "a low surrogate escape without its high half");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        long low = -1;
        if (s->len - i >= 12 && s->text[i + 6] == '\\' && s->text[i + 7] == 'u')
            low = hex4(s->text + i + 8);
        if (low < 0xDC00 || low > 0xDFFF)
            return fail(s, i, "a high surrogate escape without its low half");
        *next = i + 12;
        return 0;
    }
    *next = i + 6;
    return 0;
}

/* The string whose opening quote is at s->at. */
static int scan_string(hf_scan *s, hf_str *out)
{
    size_t i = s->at + 1;
    int escaped = 0;
    for (;;) {
        if (i >= s->len)
            return ends_early(s);
        unsigned c = s->text[i];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail(s, i, "a control character in a string must be escaped");
        if (c == '\\') {
            escaped = 1;
            if (i + 1 >= s->len)
                return ends_early(s);
            c = s->text[i + 1];
            if (c == 'u') {
                if (unicode_escape(s, i, &i) != 0)
                    return -1;
                continue;
            }
            if (c == 0 || strchr("\"\\/bfnrt", (int)c) == NULL)
                return fail(s, i, "invalid escape in a string");
            i += 2;
            continue;
        }
        size_t n = utf8_seq(s->text + i, s->len - i);
        if (n == 0)
            return fail(s, i, "not valid UTF-8");
        i += n;
    }
    out->raw = (const char *)s->text + s->at + 1;
    out->len = i - s->at - 1;
    out->escaped = escaped;
    s->at = i + 1;
    return 0;
}

static int is_space(unsigned c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(hf_scan *s, size_t i)
{
    return i < s->len && s->text[i] >= '0' && s->text[i] <= '9';
}

/* number = [ minus ] int [ frac ] [ exp ] (RFC 8259 section 6). */
static int scan_number(hf_scan *s, hf_tok *t)
{
    size_t i = s->at;
    t->integer = 1;
    t->negative = 0;
    t->fits = 1;
    t->magnitude = 0;
    if (s->text[i] == '-') {
        t->negative = 1;
        i++;
    }
    if (i >= s->len)
        return ends_early(s);
    if (s->text[i] == '0') {
        i++;
        if (is_digit(s, i))
            return fail(s, i - 1, "a number cannot start with 0 followed by digits");
    } else if (is_digit(s, i)) {
        for (; is_digit(s, i); i++) {
            unsigned d = s->text[i] - '0';
            if (t->magnitude > (UINT64_MAX - d) / 10)
                t->fits = 0;
            else
                t->magnitude = t->magnitude * 10 + d;
        }
    } else {
        return fail(s, i, "a '-' must be followed by digits");
    }
    if (i < s->len && s->text[i] == '.') {
        t->integer = 0;
        if (++i >= s->len)
            return ends_early(s);
        if (!is_digit(s, i))
            return fail(s, i, "a '.' in a number must be followed by digits");
        while (is_digit(s, i))
            i++;
    }
    if (i < s->len && (s->text[i] == 'e' || s->text[i] == 'E')) {
        t->integer = 0;
        i++;
        if (i < s->len && (s->text[i] == '+' || s->text[i] == '-'))
            i++;
        if (i >= s->len)
            return ends_early(s);
        if (!is_digit(s, i))
            return fail(s, i, "an exponent must have digits");
        while (is_digit(s, i))
            i++;
    }
    if (!t->integer)
        t->fits = 0;
    s->at = i;
    return 0;
}

static int scan_literal(hf_scan *s, const char *word, int kind, hf_tok *t)
{
    size_t n = strlen(word), left = s->len - s->at;
    if (memcmp(s->text + s->at, word, left < n ? left : n) != 0)
        return unexpected(s, s->at);
    if (left < n)
        return ends_early(s);
    s->at += n;
    t->kind = kind;
    return 0;
}

static void after_value(hf_scan *s)
{
    s->want = s->depth > 0 ? WANT_SEPARATOR : WANT_END;
}

static int close_container(hf_scan *s, hf_tok *t)
{
    t->kind = s->text[s->at] == '}' ? HF_TOK_OBJECT_END : HF_TOK_ARRAY_END;
    s->at++;
    s->depth--;
    after_value(s);
    return 1;
}

static int scan_value(hf_scan *s, hf_tok *t)
{
    if (s->at >= s->len)
        return ends_early(s);
    unsigned c = s->text[s->at];
    int rc = 0;
    switch (c) {
    case '{':
    case '[':
        if (s->depth == HF_JSON_MAX_DEPTH)
            return fail(s, s->at, "nesting deeper than 32 levels");
        s->open[s->depth++] = (unsigned char)c;
        s->at++;
        t->kind = c == '{' ? HF_TOK_OBJECT : HF_TOK_ARRAY;
        s->want = c == '{' ? WANT_KEY_OR_CLOSE : WANT_VALUE_OR_CLOSE;
        return 1;
    case '"':
        t->kind = HF_TOK_STRING;
        rc = scan_string(s, &t->str);
        break;
    case 't': rc = scan_literal(s, "true", HF_TOK_TRUE, t); break;
    case 'f': rc = scan_literal(s, "false", HF_TOK_FALSE, t); break;
    case 'n': rc = scan_literal(s, "null", HF_TOK_NULL, t); break;
    default:
        if (c != '-' && (c < '0' || c > '9'))
            return unexpected(s, s->at);
        t->kind = HF_TOK_NUMBER;
        rc = scan_number(s, t);
        break;
    }
    if (rc != 0)
        return -1;
    after_value(s);
    return 1;
}

static int scan_key(hf_scan *s, hf_tok *t)
{
    if (s->at >= s->len)
        return ends_early(s);
    if (s->text[s->at] != '"')
        return fail(s, s->at, "expected a string naming a member");
    if (scan_string(s, &t->str) != 0)
        return -1;
    while (s->at < s->len && is_space(s->text[s->at]))
        s->at++;
    if (s->at >= s->len)
        return ends_early(s);
    if (s->text[s->at] != ':')
        return fail(s, s->at, "expected ':' after a member name");
    s->at++;
    t->kind = HF_TOK_KEY;
    s->want = WANT_VALUE;
    return 1;
}

int llmem_hf_scan_next(hf_scan *s, hf_tok *t)
{
    for (;;) {
        while (s->at < s->len && is_space(s->text[s->at]))
            s->at++;
        t->at = s->at;
        int more = s->at < s->len;
        unsigned c = more ? s->text[s->at] : 0;
        switch (s->want) {
        case WANT_FAILED:
            return -1;
        case WANT_DONE:
            t->kind = HF_TOK_END;
            return 0;
        case WANT_END:
            if (more)
                return fail(s, s->at, "unexpected data after the JSON value");
            s->want = WANT_DONE;
            t->kind = HF_TOK_END;
            return 0;
        case WANT_SEPARATOR: {
            int object = s->open[s->depth - 1] == '{';
            if (!more)
                return ends_early(s);
            if (c == ',') {
                s->at++;
                s->want = object ? WANT_KEY : WANT_VALUE;
                continue;
            }
            if (c == (object ? '}' : ']'))
                return close_container(s, t);
            return fail(s, s->at, object ? "expected ',' or '}' after a member"
                                         : "expected ',' or ']' after an element");
        }
        case WANT_KEY_OR_CLOSE:
            if (more && c == '}')
                return close_container(s, t);
            return scan_key(s, t);
        case WANT_KEY:
            return scan_key(s, t);
        case WANT_VALUE_OR_CLOSE:
            if (more && c == ']')
                return close_container(s, t);
            return scan_value(s, t);
        default:
            return scan_value(s, t);
        }
    }
}

int llmem_hf_scan_skip(hf_scan *s, const hf_tok *t)
{
    hf_tok u;
    if (t->kind != HF_TOK_OBJECT && t->kind != HF_TOK_ARRAY)
        return 0;
    int outer = s->depth - 1;
    while (s->depth > outer)
        if (llmem_hf_scan_next(s, &u) < 0)
            return -1;
    return 0;
}

const char *llmem_hf_json_type_name(int type)
{
    switch (type) {
    case HF_JBOOL: return "a boolean";
    case HF_JINT: return "an integer";
    case HF_JDOUBLE: return "a real number"; /* 256.0 too: no JSON integer */
    case HF_JSTRING: return "a string";
    case HF_JARRAY: return "an array";
    case HF_JOBJECT: return "an object";
    default: return "null";
    }
}

const char *llmem_hf_tok_type_name(const hf_tok *t)
{
    switch (t->kind) {
    case HF_TOK_OBJECT: return llmem_hf_json_type_name(HF_JOBJECT);
    case HF_TOK_ARRAY: return llmem_hf_json_type_name(HF_JARRAY);
    case HF_TOK_STRING: return llmem_hf_json_type_name(HF_JSTRING);
    case HF_TOK_NUMBER: return llmem_hf_json_type_name(t->integer ? HF_JINT : HF_JDOUBLE);
    case HF_TOK_TRUE:
    case HF_TOK_FALSE: return llmem_hf_json_type_name(HF_JBOOL);
    default: return llmem_hf_json_type_name(HF_JNULL);
    }
}

int llmem_hf_json_check(const char *text, size_t len, char *err, size_t errcap)
{
    hf_scan s;
    hf_tok t;
    int rc;
    llmem_hf_scan_begin(&s, text, len);
    while ((rc = llmem_hf_scan_next(&s, &t)) > 0)
        continue;
    if (rc < 0)
        snprintf(err, errcap, "%s", s.err);
    return rc < 0 ? -1 : 0;
}

/* ---- strings, by their decoded bytes ------------------------------------- */

/* The decoded bytes of a well-formed string, one at a time. */
typedef struct str_iter {
    const unsigned char *p, *end;
    unsigned char pending[4];
    int npending, next_pending;
} str_iter;

static void iter_begin(str_iter *it, const hf_str *s)
{
    it->p = (const unsigned char *)s->raw;
    it->end = it->p + s->len;
    it->npending = it->next_pending = 0;
}

/* UTF-8 of code point cp into it->pending; returns its first byte. */
static int iter_encode(str_iter *it, unsigned long cp)
{
    unsigned char *b = it->pending;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        it->npending = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        it->npending = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        it->npending = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        it->npending = 4;
    }
    it->next_pending = 1;
    return b[0];
}

/* The next decoded byte, or -1 at the end. */
static int iter_next(str_iter *it)
{
    if (it->next_pending < it->npending)
        return it->pending[it->next_pending++];
    if (it->p == it->end)
        return -1;
    unsigned c = *it->p++;
    if (c != '\\')
        return (int)c;
    c = *it->p++;
    switch (c) {
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'u': {
        unsigned long cp = (unsigned long)hex4(it->p);
        it->p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned long low = (unsigned long)hex4(it->p + 2);
            it->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        return iter_encode(it, cp);
    }
    default: return (int)c; /* '"', '\\', '/' */
    }
}

int llmem_hf_str_cmp(const hf_str *a, const hf_str *b)
{
    if (!a->escaped && !b->escaped) {
        int c = memcmp(a->raw, b->raw, a->len < b->len ? a->len : b->len);
        if (c != 0)
            return c;
        return a->len < b->len ? -1 : a->len > b->len;
    }
    str_iter x, y;
    iter_begin(&x, a);
    iter_begin(&y, b);
    for (;;) {
        int p = iter_next(&x), q = iter_next(&y);
        if (p != q)
            return p < q ? -1 : 1;
        if (p < 0)
            return 0;
    }
}

int llmem_hf_str_eq(const hf_str *a, const char *cstr)
{
    hf_str b = { cstr, strlen(cstr), 0 };
    return llmem_hf_str_cmp(a, &b) == 0;
}

size_t llmem_hf_str_decode(const hf_str *s, char *buf)
{
    str_iter it;
    size_t n = 0;
    iter_begin(&it, s);
    for (int c; (c = iter_next(&it)) >= 0;)
        buf[n++] = (char)c;
    return n;
}

int llmem_hf_str_shown(const hf_str *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s->raw;
    size_t n = 0;
    while (n < s->len) {
        size_t step = p[n] == '\\' ? (p[n + 1] == 'u' ? 6 : 2) : utf8_seq(p + n, s->len - n);
        if (step == 0 || n + step > max)
            break;
        n += step;
    }
    return (int)n;
}
