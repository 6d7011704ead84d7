/* SPDX-License-Identifier: MIT */
/*
 * Strict JSON (RFC 8259), as docs/hf-inputs.md promises, through the public
 * API: config texts (llmem_model_new_hf_config_json) and safetensors headers
 * (llmem_weights_open_buffer). Text RFC 8259 rejects fails with LLMEM_EPARSE
 * and a message saying where; text it accepts gets past the JSON reader (it
 * may still be no config). json-c alone accepted "1.", NaN, raw control
 * characters, invalid UTF-8 and lone surrogates, and called a complete
 * top-level 1 or null "JSON text ends early".
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmem.h"

static llmem_ctx *ctx;

static void setup(void)
{
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
}

static void teardown(void)
{
    llmem_ctx_free(ctx);
    ctx = NULL;
}

typedef struct json_case {
    char name[48];
    char text[160];
    char message[96]; /* a substring of the error */
} json_case;

/* Rejected by RFC 8259 (its grammar, and section 8.1: UTF-8). */
static const json_case invalid[] = {
    { "empty", "", "JSON text ends early (0 bytes)" },
    { "whitespace only", " \n", "JSON text ends early" },
    { "truncated object", "{\"a\":1", "JSON text ends early" },
    { "truncated string", "{\"a", "JSON text ends early" },
    { "1. (fraction without digits)", "{\"a\":1.}", "at byte 7: a '.' in a number must be followed" },
    { ".5", "{\"a\":.5}", "unexpected character '.'" },
    { "leading zero", "{\"a\":01}", "cannot start with 0 followed by digits" },
    { "leading plus", "{\"a\":+1}", "unexpected character '+'" },
    { "exponent without digits", "{\"a\":1e}", "an exponent must have digits" },
    { "exponent sign only", "{\"a\":1e+}", "an exponent must have digits" },
    { "minus alone", "{\"a\":-}", "a '-' must be followed by digits" },
    { "NaN", "{\"a\":NaN}", "unexpected character 'N'" },
    { "Infinity", "{\"a\":Infinity}", "unexpected character 'I'" },
    { "-Infinity", "{\"a\":-Infinity}", "a '-' must be followed by digits" },
    { "hexadecimal", "{\"a\":0x10}", "expected ',' or '}'" },
    { "raw tab in a string", "{\"a\":\"x\ty\"}", "at byte 7: a control character" },
    { "raw newline in a key", "{\"a\nb\":1}", "a control character in a string" },
    { "raw 0x1f", "{\"a\":\"\x1f\"}", "a control character in a string" },
    { "invalid UTF-8 byte", "{\"a\":\"\xff\"}", "at byte 6: not valid UTF-8" },
    { "overlong UTF-8", "{\"a\":\"\xc0\xaf\"}", "not valid UTF-8" },
    { "UTF-8 surrogate", "{\"a\":\"\xed\xa0\x80\"}", "not valid UTF-8" },
    { "UTF-8 above U+10FFFF", "{\"a\":\"\xf4\x90\x80\x80\"}", "not valid UTF-8" },
    { "truncated UTF-8", "{\"a\":\"\xe2\x82\"}", "not valid UTF-8" },
    { "byte order mark", "\xef\xbb\xbf{}", "at byte 0: unexpected byte 0xef" },
    { "lone high surrogate", "{\"a\":\"\\ud800\"}", "a high surrogate escape without its low" },
    { "high surrogate, then not low", "{\"a\":\"\\ud800\\u0041\"}", "without its low half" },
    { "lone low surrogate", "{\"a\":\"\\udc00\"}", "a low surrogate escape without its high" },
    { "short \\u", "{\"a\":\"\\u12\"}", "\\u needs four hexadecimal digits" },
    { "unknown escape", "{\"a\":\"\\x41\"}", "invalid escape in a string" },
    { "single quotes", "{'a':1}", "expected a string naming a member" },
    { "bare key", "{a:1}", "expected a string naming a member" },
    { "trailing comma in object", "{\"a\":1,}", "expected a string naming a member" },
    { "trailing comma in array", "{\"a\":[1,]}", "unexpected character ']'" },
    { "missing colon", "{\"a\" 1}", "expected ':' after a member name" },
    { "missing comma", "{\"a\":[1 2]}", "expected ',' or ']' after an element" },
    { "comment", "{} // x", "unexpected data after the JSON value" },
    { "two values", "{} {}", "at byte 3: unexpected data after the JSON value" },
    { "NUL after the value", "{}\0", "unexpected data after the JSON value" },
    { "TRUE", "{\"a\":TRUE}", "unexpected character 'T'" },
    { "tru", "{\"a\":tru}", "unexpected character 't'" },
    { "33 levels", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
      "nesting deeper than 32 levels" },
};

/* Accepted by RFC 8259: the error, if any, is no JSON syntax error. */
static const json_case valid[] = {
    { "top-level 1", "1", "top level is an integer, not an object" },
    { "top-level 0", "0", "top level is an integer" },
    { "top-level -0", "-0", "top level is an integer" },
    { "top-level null", "null", "top level is null, not an object" },
    { "top-level true", "true", "top level is a boolean" },
    { "top-level 1.5e-3", "1.5e-3", "top level is a real number" },
    { "top-level 1E+400", "1E+400", "top level is a real number" },
    { "top-level string", "\"gpt2\"", "top level is a string" },
    { "top-level array", " [1, 2.0, \"x\", null] ", "top level is an array" },
    { "empty object", "{}", "missing field 'model_type'" },
    { "escapes", "{\"x\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"}",
      "missing field 'model_type'" },
    { "UTF-8 of 2, 3 and 4 bytes", "{\"x\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
      "missing field 'model_type'" },
    { "escaped member name", "{\"model\\u005ftype\":\"mamba\"}", "unsupported model_type 'mamba'" },
    { "a member given twice: the last counts", "{\"model_type\":\"gpt2\",\"model_type\":\"mamba\"}",
      "unsupported model_type 'mamba'" },
    { "32 levels", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
      "top level is an array" },
};

ParameterizedTestParameters(json_strict, invalid_config)
{
    return cr_make_param_array(json_case, invalid, sizeof invalid / sizeof invalid[0]);
}

/* The length is given: a case may hold a NUL. */
static size_t case_len(const json_case *c)
{
    size_t n = strlen(c->text);
    return strcmp(c->name, "NUL after the value") == 0 ? n + 1 : n;
}

ParameterizedTest(const json_case *c, json_strict, invalid_config, .init = setup,
                  .fini = teardown)
{
    llmem_model *m = NULL;
    int rc = llmem_model_new_hf_config_json(ctx, c->text, case_len(c), &m);
    cr_expect_eq(rc, LLMEM_EPARSE, "%s: status %d (%s)", c->name, rc, llmem_ctx_error(ctx));
    cr_expect_null(m);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->message), "%s: '%s' lacks '%s'", c->name,
                       llmem_ctx_error(ctx), c->message);
}

ParameterizedTestParameters(json_strict, valid_config)
{
    return cr_make_param_array(json_case, valid, sizeof valid / sizeof valid[0]);
}

ParameterizedTest(const json_case *c, json_strict, valid_config, .init = setup, .fini = teardown)
{
    llmem_model *m = NULL;
    (void)llmem_model_new_hf_config_json(ctx, c->text, strlen(c->text), &m);
    const char *e = llmem_ctx_error(ctx);
    cr_expect(strstr(e, "invalid JSON") == NULL && strstr(e, "ends early") == NULL,
              "%s: valid JSON refused: %s", c->name, e);
    cr_expect_not_null(strstr(e, c->message), "%s: '%s' lacks '%s'", c->name, e, c->message);
    llmem_model_free(m);
}

/* Bytes past the given length are not read: "1" of "12" is a whole value. */
Test(json_strict, length_bounds_the_text, .init = setup, .fini = teardown)
{
    llmem_model *m = NULL;
    cr_expect_eq(llmem_model_new_hf_config_json(ctx, "{}x", 2, &m), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "missing field 'model_type'"), "%s",
                       llmem_ctx_error(ctx));
    cr_expect_eq(llmem_model_new_hf_config_json(ctx, "12", 1, &m), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "top level is an integer"), "%s",
                       llmem_ctx_error(ctx));
}

/* A safetensors header is walked token by token: the same rules hold in it,
 * in the entries read and in the members skipped. */
static const json_case invalid_headers[] = {
    { "control character in a name", "{\"a\x01\":{}}", "header: invalid JSON at byte 3" },
    { "1. as an offset",
      "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.]}}",
      "a '.' in a number must be followed by digits" },
    { "NaN as a dimension", "{\"a\":{\"dtype\":\"U8\",\"shape\":[NaN],\"data_offsets\":[0,1]}}",
      "unexpected character 'N'" },
    { "lone surrogate in a name", "{\"\\udfff\":{}}", "a low surrogate escape" },
    { "invalid UTF-8 in metadata", "{\"__metadata__\":{\"k\":\"\xfe\"}}", "not valid UTF-8" },
    { "bad JSON in a skipped member",
      "{\"a\":{\"dtype\":\"U8\",\"x\":[01],\"shape\":[1],\"data_offsets\":[0,1]}}",
      "cannot start with 0" },
    { "nesting in a skipped member",
      "{\"a\":{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
      "nesting deeper than 32 levels" },
    { "a second value", "{} {}", "unexpected data after the JSON value" },
    { "a field twice", "{\"a\":{\"shape\":[1],\"shape\":[1]}}", "'shape' appears twice" },
};

ParameterizedTestParameters(json_strict, invalid_header)
{
    return cr_make_param_array(json_case, invalid_headers,
                               sizeof invalid_headers / sizeof invalid_headers[0]);
}

ParameterizedTest(const json_case *c, json_strict, invalid_header, .init = setup,
                  .fini = teardown)
{
    size_t n = strlen(c->text), len = 8 + n + 1;
    unsigned char *p = calloc(1, len);
    llmem_weights *w = NULL;
    cr_assert_not_null(p);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(p + 8, c->text, n);
    int rc = llmem_weights_open_buffer(ctx, p, len, &w);
    cr_expect_eq(rc, LLMEM_EPARSE, "%s: status %d (%s)", c->name, rc, llmem_ctx_error(ctx));
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->message), "%s: '%s' lacks '%s'", c->name,
                       llmem_ctx_error(ctx), c->message);
    llmem_weights_free(w);
    free(p);
}
