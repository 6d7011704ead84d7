/* SPDX-License-Identifier: MIT */
/* A strict JSON scanner (RFC 8259) that hands out one token at a time: it
 * allocates nothing and reads each byte once.
 *
 * Why a scanner next to json-c: json-c's strict mode still accepts what
 * RFC 8259 rejects ("1.", NaN, raw control characters and invalid UTF-8 in
 * strings, lone surrogate escapes), so every input is checked here first; and
 * a safetensors header or index of a million entries must not become a tree of
 * a million objects (an 82 MB header took 1.9 GB in json-c): the safetensors
 * reader walks them token by token. */
#ifndef LLMEM_HF_SCAN_H
#define LLMEM_HF_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* The types of JSON values, as the scanner (llmem_hf_tok_type_name) and the
 * trees of hf/json.h name them. */
enum hf_jtype {
    HF_JNULL = 1,
    HF_JBOOL,
    HF_JINT,    /* a number written without fraction or exponent */
    HF_JDOUBLE, /* any other number */
    HF_JSTRING,
    HF_JARRAY,
    HF_JOBJECT
};

/* Nesting deeper than this is an error (safetensors headers need 3 levels,
 * config.json files fewer than 8). */
#define HF_JSON_MAX_DEPTH 32

/* Name of a type, for messages ("an integer", "a string", ...). */
const char *llmem_hf_json_type_name(int type);

/* A string as it stands in the text, between its quotes. */
typedef struct hf_str {
    const char *raw;
    size_t len;
    int escaped; /* holds a backslash escape: compare and decode with llmem_hf_str_* */
} hf_str;

enum hf_tok_kind {
    HF_TOK_END = 0, /* the one value of the document is complete */
    HF_TOK_OBJECT,
    HF_TOK_OBJECT_END,
    HF_TOK_ARRAY,
    HF_TOK_ARRAY_END,
    HF_TOK_KEY, /* a member name; its ':' is consumed */
    HF_TOK_STRING,
    HF_TOK_NUMBER,
    HF_TOK_TRUE,
    HF_TOK_FALSE,
    HF_TOK_NULL
};

typedef struct hf_tok {
    int kind;
    size_t at;      /* byte offset of the token */
    hf_str str;     /* KEY, STRING */
    /* NUMBER: */
    int integer;    /* written without fraction or exponent */
    int negative;   /* written with a leading '-' */
    int fits;       /* an integer whose magnitude fits in 64 bits */
    uint64_t magnitude;
} hf_tok;

typedef struct hf_scan {
    const unsigned char *text;
    size_t len, at;
    int depth, want;
    unsigned char open[HF_JSON_MAX_DEPTH]; /* '{' or '[' of each open level */
    char err[128];                         /* why the last call failed */
} hf_scan;

void llmem_hf_scan_begin(hf_scan *s, const char *text, size_t len);
/* The next token: 1; 0 (and HF_TOK_END) once the document's value is complete
 * and only whitespace follows; -1 with s->err ("invalid JSON at byte N: ...",
 * "JSON text ends early (N bytes)") at the first thing RFC 8259 rejects or
 * nesting deeper than HF_JSON_MAX_DEPTH. After -1 every call returns -1. */
int llmem_hf_scan_next(hf_scan *s, hf_tok *t);
/* Skip the rest of the value t begins (t just returned by scan_next): 0 or -1. */
int llmem_hf_scan_skip(hf_scan *s, const hf_tok *t);
/* The JSON type of the value t begins, for messages ("an integer", "a string",
 * ...), as llmem_hf_json_type_name() words them. */
const char *llmem_hf_tok_type_name(const hf_tok *t);

/* Whether len bytes are exactly one JSON value with only whitespace around:
 * 0, or -1 with the scanner's message in err. */
int llmem_hf_json_check(const char *text, size_t len, char *err, size_t errcap);

/* Strings of a scanned (so well-formed) text, by their decoded bytes. */
int llmem_hf_str_cmp(const hf_str *a, const hf_str *b);
int llmem_hf_str_eq(const hf_str *a, const char *cstr);
/* Decode into buf, which has room for s->len bytes (decoding never lengthens
 * a string); returns the decoded length. A "\u0000" escape decodes to a NUL. */
size_t llmem_hf_str_decode(const hf_str *s, char *buf);
/* How many of the first max bytes of s to show in a message without cutting
 * a UTF-8 sequence or an escape in two. */
int llmem_hf_str_shown(const hf_str *s, size_t max);

#endif
