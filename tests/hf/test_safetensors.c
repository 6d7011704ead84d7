/* SPDX-License-Identifier: MIT */
/*
 * Safetensors headers through the public API: llmem_weights_open_buffer() on
 * files built here, llmem_weights_open() on files, directories and sharded
 * checkpoints in a temporary directory, every malformation the format rules
 * out, and the cross-check: a checkpoint written by gen_safetensors.py from a
 * config's module tree holds exactly the parameters libllmem counts from the
 * same config.
 */
#define _XOPEN_SOURCE 700

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "budget_alloc.h"
#include "llmem.h"

#ifndef HF_TEST_DIR
#error "HF_TEST_DIR (the tests/hf source directory) must be defined"
#endif
#ifndef PYTHON3
#error "PYTHON3 (the python3 used to generate test checkpoints) must be defined"
#endif

#define NAME_CAP 64
#define PATH_CAP 512

static llmem_ctx *ctx;
static char tmpdir[PATH_CAP];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    snprintf(tmpdir, sizeof tmpdir, "%s/llmem-st-XXXXXX", base && base[0] ? base : "/tmp");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
    nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    llmem_ctx_free(ctx);
    ctx = NULL;
}

/* A safetensors file: 8-byte little-endian header length, the header's text
 * (text_len bytes, which may hold a NUL), data_len zero bytes. */
static unsigned char *build_n(const char *header, size_t text_len, uint64_t header_len,
                              uint64_t data_len, size_t *len)
{
    *len = 8 + text_len + (size_t)data_len;
    unsigned char *p = calloc(1, *len);
    cr_assert_not_null(p);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(header_len >> (8 * i));
    memcpy(p + 8, header, text_len);
    return p;
}

static unsigned char *build(const char *header, uint64_t header_len, uint64_t data_len,
                            size_t *len)
{
    return build_n(header, strlen(header), header_len, data_len, len);
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[PATH_CAP + NAME_CAP];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void write_st(const char *dir, const char *name, const char *header, uint64_t data_len)
{
    size_t len;
    unsigned char *p = build(header, strlen(header), data_len, &len);
    write_file(dir, name, p, len);
    free(p);
}

static uint64_t get(const llmem_weights *w, int key)
{
    uint64_t v = 0;
    cr_assert_eq(llmem_weights_get_u64(w, key, &v), LLMEM_OK);
    return v;
}

/* ------------------------------------------------------------------ */
/* Valid headers. */

typedef struct valid_case {
    char name[NAME_CAP];
    char header[512];
    uint64_t data_len, params, tensors;
    size_t dtypes;
} valid_case;

static const valid_case valid_cases[] = {
    { "one F32 vector", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}", 12,
      3, 1, 1 },
    { "no tensors", "{}", 0, 0, 0, 0 },
    { "metadata only", "{\"__metadata__\":{\"format\":\"pt\"}}", 0, 0, 0, 0 },
    { "scalar (empty shape)", "{\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]}}", 8,
      1, 1, 1 },
    { "zero-sized tensor", "{\"z\":{\"dtype\":\"BF16\",\"shape\":[4,0],\"data_offsets\":[0,0]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, 2, 2, 2 },
    { "two dtypes, out of order",
      "{\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[8,20]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"}}",
      20, 8, 2, 2 },
    { "F4 packs two per byte", "{\"q\":{\"dtype\":\"F4\",\"shape\":[4,2],\"data_offsets\":[0,4]}}",
      4, 8, 1, 1 },
    { "F6 packs four in three bytes",
      "{\"q\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[0,3]}}", 3, 4, 1, 1 },
    { "padding after the JSON",
      "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[5],\"data_offsets\":[0,5]}}      ", 5, 5, 1, 1 },
    { "UTF-8 tensor name", "{\"\xc3\xa9t\xc3\xa9\":{\"dtype\":\"BOOL\",\"shape\":[1],"
      "\"data_offsets\":[0,1]}}", 1, 1, 1, 1 },
};

ParameterizedTestParameters(safetensors, valid)
{
    return cr_make_param_array(valid_case, valid_cases, sizeof valid_cases / sizeof valid_cases[0]);
}

ParameterizedTest(const valid_case *c, safetensors, valid, .init = setup, .fini = teardown)
{
    size_t len;
    llmem_weights *w = NULL;
    unsigned char *p = build(c->header, strlen(c->header), c->data_len, &len);
    cr_assert_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_OK, "%s: %s", c->name,
                 llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), c->params, "%s", c->name);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_BYTES), c->data_len, "%s", c->name);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_TENSORS), c->tensors, "%s", c->name);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), 1);
    cr_expect_eq(llmem_weights_dtype_count(w), c->dtypes, "%s", c->name);
    llmem_weights_free(w);
    free(p);
}

/* Per-dtype totals, in order of first appearance in the header. */
Test(safetensors, dtype_totals, .init = setup, .fini = teardown)
{
    static const char header[] =
        "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,4],\"data_offsets\":[0,16]},"
        "\"s\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]},"
        "\"v\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[32,38]}}";
    size_t len;
    const char *name = NULL;
    uint64_t params = 0, bytes = 0;
    llmem_weights *w = NULL;
    unsigned char *p = build(header, strlen(header), 38, &len);
    cr_assert_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_assert_eq(llmem_weights_dtype_count(w), 2);
    cr_assert_eq(llmem_weights_dtype(w, 0, &name, &params, &bytes), LLMEM_OK);
    cr_expect_str_eq(name, "BF16");
    cr_expect_eq(params, 11);
    cr_expect_eq(bytes, 22);
    cr_assert_eq(llmem_weights_dtype(w, 1, &name, &params, &bytes), LLMEM_OK);
    cr_expect_str_eq(name, "F32");
    cr_expect_eq(params, 4);
    cr_expect_eq(bytes, 16);
    cr_expect_eq(llmem_weights_dtype(w, 2, &name, &params, &bytes), LLMEM_ERANGE);
    cr_expect_eq(llmem_weights_dtype(w, 0, NULL, NULL, NULL), LLMEM_OK);
    cr_expect_eq(llmem_weights_get_u64(w, 99, &params), LLMEM_EINVAL);
    cr_expect_eq(llmem_weights_get_u64(w, LLMEM_WEIGHTS_PARAMS, NULL), LLMEM_EINVAL);
    llmem_weights_free(w);
    llmem_weights_free(NULL);
    cr_expect_eq(llmem_weights_dtype_count(NULL), 0);
    free(p);
}

/* Every dtype of the format, with its size (safetensors/src/tensor.rs). */
Test(safetensors, every_dtype, .init = setup, .fini = teardown)
{
    static const struct {
        const char *name;
        unsigned bits;
    } dtypes[] = {
        { "BOOL", 8 }, { "F4", 4 },       { "F6_E2M3", 6 },  { "F6_E3M2", 6 }, { "U8", 8 },
        { "I8", 8 },   { "F8_E5M2", 8 },  { "F8_E4M3", 8 },  { "F8_E8M0", 8 }, { "I16", 16 },
        { "U16", 16 }, { "F16", 16 },     { "BF16", 16 },    { "I32", 32 },    { "U32", 32 },
        { "F32", 32 }, { "C64", 64 },     { "F64", 64 },     { "I64", 64 },    { "U64", 64 },
    };
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        char header[160];
        size_t len;
        llmem_weights *w = NULL;
        unsigned bytes = 8 * dtypes[i].bits / 8; /* 8 elements */
        snprintf(header, sizeof header,
                 "{\"t\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[0,%u]}}",
                 dtypes[i].name, bytes);
        unsigned char *p = build(header, strlen(header), bytes, &len);
        cr_expect_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_OK, "%s: %s",
                     dtypes[i].name, llmem_ctx_error(ctx));
        if (w != NULL) {
            cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), 8, "%s", dtypes[i].name);
            cr_expect_eq(get(w, LLMEM_WEIGHTS_BYTES), bytes, "%s", dtypes[i].name);
        }
        llmem_weights_free(w);
        free(p);
    }
}

/* ------------------------------------------------------------------ */
/* Malformed headers: LLMEM_EPARSE and a message naming the tensor or field. */

typedef struct bad_case {
    char name[NAME_CAP];
    char header[400];
    uint64_t data_len;
    char message[128];
} bad_case;

#define T_A(dt, shape, b, e) "\"a\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static const bad_case bad_cases[] = {
    { "not an object", "[1,2]", 0, "header does not start with '{'" },
    { "leading space", " {}", 0, "header does not start with '{'" },
    { "invalid JSON", "{\"a\":}", 0, "header: invalid JSON" },
    { "truncated JSON", "{\"a\":{\"dtype\":\"F32\"", 0, "header: JSON text ends early" },
    { "garbage after the object", "{} x", 0, "header: invalid JSON" },
    { "invalid UTF-8", "{\"\xff\":1}", 0, "header: invalid JSON at byte 2: not valid UTF-8" },
    { "overlong UTF-8", "{\"\xc0\xaf\":1}", 0, "header: invalid JSON at byte 2: not valid UTF-8" },
    { "surrogate in UTF-8", "{\"\xed\xa0\x80\":1}", 0,
      "header: invalid JSON at byte 2: not valid UTF-8" },
    { "entry not an object", "{\"a\":5}", 0, "tensor 'a': entry must be an object" },
    { "missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
      "tensor 'a': missing 'dtype'" },
    { "missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
      "tensor 'a': missing 'shape'" },
    { "missing data_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
      "tensor 'a': missing 'data_offsets'" },
    { "unknown dtype", "{" T_A("F33", "[1]", 0, 4) "}", 4, "tensor 'a': unknown dtype 'F33'" },
    { "lower-case dtype", "{" T_A("f32", "[1]", 0, 4) "}", 4, "unknown dtype 'f32'" },
    { "dtype not a string", "{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
      "'dtype' must be a string, not an integer" },
    { "shape not an array", "{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", 16,
      "'shape' must be an array" },
    { "negative dimension", "{" T_A("F32", "[-1]", 0, 4) "}", 4,
      "tensor 'a': 'shape' dimension 0 must be a non-negative integer" },
    { "fractional dimension", "{" T_A("F32", "[1.5]", 0, 4) "}", 4,
      "'shape' dimension 0 must be a non-negative integer" },
    { "shape product overflows", "{" T_A("F32", "[4294967296,4294967296,2]", 0, 4) "}", 4,
      "tensor 'a': shape product overflows 64 bits" },
    { "bytes overflow", "{" T_A("F64", "[4294967296,536870912]", 0, 4) "}", 4,
      "shape product overflows 64 bits" },
    { "F4 not byte aligned", "{" T_A("F4", "[3]", 0, 2) "}", 2,
      "tensor 'a': data does not end on a byte boundary" },
    { "size mismatch", "{" T_A("F32", "[2]", 0, 4) "}", 4,
      "tensor 'a': 'data_offsets' size mismatch (4 bytes) but the shape of F32 needs 8" },
    { "end before begin", "{" T_A("U8", "[0]", 4, 0) "}", 4,
      "'data_offsets' end before begin [4, 0]" },
    { "offsets out of range", "{" T_A("U8", "[4]", 4, 8) "}", 6,
      "tensor 'a': 'data_offsets' out of range [4, 8] (data region 6 bytes)" },
    { "offsets not a pair", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1,
      "'data_offsets' must be [begin, end]" },
    { "offsets negative", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 1,
      "'data_offsets' must be [begin, end]" },
    { "overlap",
      "{" T_A("U8", "[4]", 0, 4) ",\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
      6, "tensor 'b' at [2, 6] overlaps tensor 'a'" },
    { "same region twice",
      "{" T_A("U8", "[4]", 0, 4) ",\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
      4, "overlaps" },
    { "gap", "{" T_A("U8", "[4]", 2, 6) "}", 6,
      "tensor 'a' at [2, 6] leaves bytes [0, 2) of the data region unused" },
    { "data region not covered", "{" T_A("U8", "[4]", 0, 4) "}", 10,
      "tensors cover 4 bytes but the data region holds 10" },
    /* A name given twice is ambiguous, even where the entries cover the data. */
    { "duplicate name",
      "{" T_A("U8", "[4]", 0, 4) "," T_A("U8", "[4]", 4, 8) "}", 8,
      "tensor 'a' appears twice in the header" },
    { "duplicate name, the same entry",
      "{" T_A("U8", "[4]", 0, 4) "," T_A("U8", "[4]", 0, 4) "}", 4,
      "tensor 'a' appears twice in the header" },
    { "duplicate name, one escaped",
      "{" T_A("U8", "[4]", 0, 4) ",\"\\u0061\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[4,8]}}", 8, "tensor 'a' appears twice in the header" },
    { "duplicate metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0,
      "'__metadata__' appears twice in the header" },
    { "metadata not an object", "{\"__metadata__\":[1]}", 0,
      "'__metadata__' must be an object, not an array" },
    { "metadata value not a string", "{\"__metadata__\":{\"n\":1}}", 0,
      "'__metadata__' entry 'n' must be a string" },
    { "dtype with a NUL escape", "{" T_A("F32\\u0000x", "[1]", 0, 4) "}", 4,
      "tensor 'a': 'dtype' holds a NUL character" },
};

ParameterizedTestParameters(safetensors, malformed)
{
    return cr_make_param_array(bad_case, bad_cases, sizeof bad_cases / sizeof bad_cases[0]);
}

ParameterizedTest(const bad_case *c, safetensors, malformed, .init = setup, .fini = teardown)
{
    size_t len;
    static int sentinel;
    llmem_weights *w = (llmem_weights *)&sentinel;
    unsigned char *p = build(c->header, strlen(c->header), c->data_len, &len);
    int rc = llmem_weights_open_buffer(ctx, p, len, &w);
    cr_expect_eq(rc, LLMEM_EPARSE, "%s: status %d (%s)", c->name, rc, llmem_ctx_error(ctx));
    cr_expect_null(w, "%s: out not reset", c->name);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->message), "%s: '%s' lacks '%s'", c->name,
                       llmem_ctx_error(ctx), c->message);
    free(p);
}

/* A NUL byte inside the header text ends nothing early: it is an error. */
Test(safetensors, nul_in_header, .init = setup, .fini = teardown)
{
    static const char header[] = "{\"a\"\0:1}";
    size_t len;
    llmem_weights *w = NULL;
    unsigned char *p = build_n(header, sizeof header - 1, sizeof header - 1, 0, &len);
    cr_expect_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "header: invalid JSON"), "%s",
                       llmem_ctx_error(ctx));
    free(p);
}

/* The 8-byte length itself. */
Test(safetensors, header_lengths, .init = setup, .fini = teardown)
{
    static const char header[] = "{}";
    llmem_weights *w = NULL;
    size_t len;
    unsigned char *p;

    cr_expect_eq(llmem_weights_open_buffer(ctx, header, 2, &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "shorter than the 8-byte header length"), "%s",
                       llmem_ctx_error(ctx));
    cr_expect_eq(llmem_weights_open_buffer(ctx, "", 0, &w), LLMEM_EPARSE);

    p = build(header, 100000001, 0, &len);
    cr_expect_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "exceeds the safetensors limit"), "%s",
                       llmem_ctx_error(ctx));
    free(p);

    p = build(header, UINT64_MAX, 0, &len);
    cr_expect_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_EPARSE);
    free(p);

    p = build(header, 3, 0, &len); /* one byte past the end */
    cr_expect_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "runs past the end of the file"), "%s",
                       llmem_ctx_error(ctx));
    free(p);

    p = build(header, 0, 0, &len);
    cr_expect_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_EPARSE);
    free(p);

    cr_expect_eq(llmem_weights_open_buffer(ctx, NULL, 10, &w), LLMEM_EINVAL);
    cr_expect_eq(llmem_weights_open_buffer(ctx, header, 2, NULL), LLMEM_EINVAL);
    cr_expect_eq(llmem_weights_open_buffer(NULL, header, 2, &w), LLMEM_EINVAL);
}

/* ------------------------------------------------------------------ */
/* Files, directories and sharded checkpoints. */

#define SHARD1                                                                                 \
    "{\"a.weight\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"              \
    "\"__metadata__\":{\"format\":\"pt\"}}"
#define SHARD2 "{\"b.weight\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[0,20]}}"
#define INDEX(map) "{\"metadata\":{\"total_size\":32},\"weight_map\":{" map "}}"
#define MAP2                                                                                   \
    "\"a.weight\":\"model-00001-of-00002.safetensors\","                                       \
    "\"b.weight\":\"model-00002-of-00002.safetensors\""

#define EXTRA                                                                                  \
    "{\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"                             \
    "\"y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}"

static void write_shards(void)
{
    write_st(tmpdir, "model-00001-of-00002.safetensors", SHARD1, 12);
    write_st(tmpdir, "model-00002-of-00002.safetensors", SHARD2, 20);
    write_st(tmpdir, "extra.safetensors", EXTRA, 2);
}

static void write_index(const char *text)
{
    write_file(tmpdir, "model.safetensors.index.json", text, strlen(text));
}

Test(safetensors, single_file, .init = setup, .fini = teardown)
{
    char path[PATH_CAP + 32];
    llmem_weights *w = NULL;
    write_st(tmpdir, "model.safetensors", SHARD1, 12);
    snprintf(path, sizeof path, "%s/model.safetensors", tmpdir);
    cr_assert_eq(llmem_weights_open(ctx, path, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), 6);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), 1);
    llmem_weights_free(w);
    /* The directory finds model.safetensors. */
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), 6);
    llmem_weights_free(w);
}

Test(safetensors, sharded, .init = setup, .fini = teardown)
{
    char path[PATH_CAP + 32];
    llmem_weights *w = NULL;
    write_shards();
    write_index(INDEX(MAP2));
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", tmpdir);
    cr_assert_eq(llmem_weights_open(ctx, path, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), 11);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_BYTES), 32);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_TENSORS), 2);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), 2);
    cr_expect_eq(llmem_weights_dtype_count(w), 2);
    llmem_weights_free(w);
    /* The index wins over a model.safetensors in the same directory. */
    write_st(tmpdir, "model.safetensors", SHARD1, 12);
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), 2);
    llmem_weights_free(w);
}

typedef struct index_case {
    char name[NAME_CAP];
    char index[400];
    int status;
    char message[128];
} index_case;

static const index_case index_cases[] = {
    { "shard missing",
      INDEX("\"a.weight\":\"model-00001-of-00002.safetensors\",\"c\":\"model-00009.safetensors\""),
      LLMEM_EIO, "model-00009.safetensors: cannot open" },
    { "tensor not in its shard",
      INDEX("\"a.weight\":\"model-00002-of-00002.safetensors\","
            "\"b.weight\":\"model-00002-of-00002.safetensors\""),
      LLMEM_EPARSE, "tensor 'a.weight' is mapped to 'model-00002-of-00002.safetensors' but not" },
    { "weight_map lists a tensor its shard lacks",
      INDEX("\"a.weight\":\"model-00001-of-00002.safetensors\","
            "\"b.weight\":\"model-00002-of-00002.safetensors\","
            "\"c.weight\":\"model-00002-of-00002.safetensors\""),
      LLMEM_EPARSE, "tensor 'c.weight' is mapped" },
    { "shard holds an unlisted tensor", INDEX("\"x\":\"extra.safetensors\""), LLMEM_EPARSE,
      "the shards hold 2 tensors but 'weight_map' lists 1" },
    { "shard name leaves the directory", INDEX("\"a.weight\":\"../x.safetensors\""), LLMEM_EPARSE,
      "weight_map entry 'a.weight' must name a file next to the index" },
    { "shard name not a string", INDEX("\"a.weight\":3"), LLMEM_EPARSE,
      "weight_map entry 'a.weight' must name a file" },
    /* Listed twice, even with the same shard: refused, as a header's name twice. */
    { "tensor listed twice",
      INDEX(MAP2 ",\"a.weight\":\"model-00001-of-00002.safetensors\""), LLMEM_EPARSE,
      "model.safetensors.index.json: tensor 'a.weight' appears twice in 'weight_map'" },
    { "weight_map twice", "{\"weight_map\":{" MAP2 "},\"weight_map\":{" MAP2 "}}",
      LLMEM_EPARSE, "model.safetensors.index.json: 'weight_map' appears twice in the index" },
    { "no weight_map", "{\"metadata\":{}}", LLMEM_EPARSE, "no 'weight_map' object" },
    { "empty weight_map", INDEX(""), LLMEM_EPARSE, "'weight_map' is empty" },
    { "index not JSON", "weight_map", LLMEM_EPARSE, "model.safetensors.index.json: invalid JSON" },
};

ParameterizedTestParameters(safetensors, bad_index)
{
    return cr_make_param_array(index_case, index_cases, sizeof index_cases / sizeof index_cases[0]);
}

ParameterizedTest(const index_case *c, safetensors, bad_index, .init = setup, .fini = teardown)
{
    llmem_weights *w = NULL;
    write_shards();
    write_index(c->index);
    int rc = llmem_weights_open(ctx, tmpdir, &w);
    cr_expect_eq(rc, c->status, "%s: %d (%s)", c->name, rc, llmem_ctx_error(ctx));
    cr_expect_null(w);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), c->message), "%s: '%s' lacks '%s'", c->name,
                       llmem_ctx_error(ctx), c->message);
}

Test(safetensors, bad_paths, .init = setup, .fini = teardown)
{
    char path[PATH_CAP + 32];
    llmem_weights *w = NULL;
    cr_expect_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_EIO);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "holds neither"), "%s", llmem_ctx_error(ctx));
    snprintf(path, sizeof path, "%s/none.safetensors", tmpdir);
    cr_expect_eq(llmem_weights_open(ctx, path, &w), LLMEM_EIO);
    cr_expect_eq(llmem_weights_open(ctx, NULL, &w), LLMEM_EINVAL);
    cr_expect_eq(llmem_weights_open(ctx, tmpdir, NULL), LLMEM_EINVAL);
    /* A header length beyond the file's end. */
    size_t len;
    unsigned char *p = build("{}", 4096, 0, &len);
    write_file(tmpdir, "short.safetensors", p, len);
    free(p);
    snprintf(path, sizeof path, "%s/short.safetensors", tmpdir);
    cr_expect_eq(llmem_weights_open(ctx, path, &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "short.safetensors: header length 4096 runs "
                                                    "past the end of the file (10 bytes)"),
                       "%s", llmem_ctx_error(ctx));
    /* Shorter than the length field. */
    write_file(tmpdir, "tiny.safetensors", "{}", 2);
    snprintf(path, sizeof path, "%s/tiny.safetensors", tmpdir);
    cr_expect_eq(llmem_weights_open(ctx, path, &w), LLMEM_EPARSE);
}

/* ------------------------------------------------------------------ */
/* Cross-check: a checkpoint generated from a config's module tree against the
 * count from the same config. The published configs give sparse files of
 * their real size; the crosscheck/ configs exercise every layout switch. */

typedef struct cross_case {
    char dir[16];
    char config[NAME_CAP];
    int shards;
} cross_case;

static void free_params(struct criterion_test_params *p)
{
    cr_free(p->params);
}

#define CROSS_CAP 128

static size_t list_configs(const char *sub, cross_case *out, size_t n, size_t cap, int shards)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s", HF_TEST_DIR, sub);
    DIR *d = opendir(path);
    if (d == NULL)
        return n;
    for (struct dirent *e; n < cap && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len - 5 >= NAME_CAP || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        memset(&out[n], 0, sizeof out[n]);
        snprintf(out[n].dir, sizeof out[n].dir, "%s", sub);
        memcpy(out[n].config, e->d_name, len - 5);
        out[n].shards = shards;
        n++;
    }
    closedir(d);
    return n;
}

ParameterizedTestParameters(safetensors, crosscheck)
{
    cross_case *cases = cr_malloc(CROSS_CAP * sizeof *cases);
    size_t n = list_configs("configs", cases, 0, CROSS_CAP, 1);
    n = list_configs("crosscheck", cases, n, CROSS_CAP, 2);
    return cr_make_param_array(cross_case, cases, n, free_params);
}

ParameterizedTest(cross_case *c, safetensors, crosscheck, .init = setup, .fini = teardown)
{
    char config[PATH_CAP], cmd[3 * PATH_CAP], out[64] = "";
    llmem_model *m = NULL;
    llmem_weights *w = NULL;
    uint64_t from_config = 0;
    snprintf(config, sizeof config, "%s/%s/%s.json", HF_TEST_DIR, c->dir, c->config);
    snprintf(cmd, sizeof cmd, "'%s' '%s/gen_safetensors.py' '%s' '%s' --shards %d", PYTHON3,
             HF_TEST_DIR, config, tmpdir, c->shards);
    FILE *gen = popen(cmd, "r");
    cr_assert_not_null(gen, "%s", cmd);
    if (fgets(out, sizeof out, gen) == NULL)
        out[0] = '\0';
    int status = pclose(gen);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        cr_skip_test("%s: this file system cannot hold sparse files", c->config);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (%d)", cmd, status);

    cr_assert_eq(llmem_model_new_hf_config(ctx, config, &m), LLMEM_OK, "%s: %s", c->config,
                 llmem_ctx_error(ctx));
    cr_assert_eq(llmem_model_param_count(m, &from_config), LLMEM_OK);
    llmem_model_free(m);
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s: %s", c->config,
                 llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), from_config,
                 "%s: %" PRIu64 " in the checkpoint, %" PRIu64 " from the config", c->config,
                 get(w, LLMEM_WEIGHTS_PARAMS), from_config);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), strtoull(out, NULL, 10),
                 "%s: the generator printed %s", c->config, out);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_BYTES), 2 * from_config, "%s: BF16 bytes", c->config);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), (uint64_t)c->shards);
    llmem_weights_free(w);
}

/* ------------------------------------------------------------------ */
/* Allocation failure at every step: a clean status, nothing leaked. */


/* Open path with an allocation failing at every step in turn, until it
 * opens: a clean status (ENOMEM, no handle) and nothing leaked at each, and
 * params parameters once open. */
static void open_under_budgets(const char *path, uint64_t params)
{
    for (int k = 1; k < 64; k++) {
        budget b = { k, 0 };
        llmem_allocator a = budget_allocator(&b);
        llmem_ctx *c = NULL;
        llmem_weights *w = NULL;
        cr_assert_eq(llmem_ctx_new(&c, &a), LLMEM_OK);
        int rc = llmem_weights_open(c, path, &w);
        cr_expect(rc == LLMEM_OK || rc == LLMEM_ENOMEM, "budget %d: %d (%s)", k, rc,
                  llmem_ctx_error(c));
        if (rc == LLMEM_OK) {
            cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), params, "%s: %" PRIu64, path,
                         get(w, LLMEM_WEIGHTS_PARAMS));
            llmem_weights_free(w);
        } else {
            cr_expect_null(w);
        }
        llmem_ctx_free(c);
        cr_expect_eq(b.live, 0, "budget %d: %ld blocks leaked", k, b.live);
        if (rc == LLMEM_OK)
            break;
    }
}

Test(safetensors, allocation_failures, .init = setup, .fini = teardown)
{
    write_shards();
    write_index(INDEX(MAP2));
    open_under_budgets(tmpdir, 11);
}

/* ------------------------------------------------------------------ */
/* bitsandbytes 4-bit checkpoints: a U8 X.weight saved with
 * X.weight.quant_state.bitsandbytes__nf4 (or __fp4) in the checkpoint is two
 * 4-bit parameters a byte; its state tensors are bytes, not parameters. */

typedef struct st_entry {
    const char *name, *dtype, *shape;
    uint64_t bytes;
} st_entry;

/* A header holding the entries in order, back to back from offset 0. */
static uint64_t header_of(const st_entry *e, size_t n, char *buf, size_t cap)
{
    uint64_t at = 0;
    size_t used = (size_t)snprintf(buf, cap, "{");
    for (size_t i = 0; i < n; i++) {
        used += (size_t)snprintf(buf + used, cap - used,
                                 "%s\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%" PRIu64
                                 ",%" PRIu64 "]}",
                                 i ? "," : "", e[i].name, e[i].dtype, e[i].shape, at,
                                 at + e[i].bytes);
        at += e[i].bytes;
    }
    snprintf(buf + used, cap - used, "}");
    cr_assert_lt(used + 1, cap);
    return at;
}

static void write_entries(const char *name, const st_entry *e, size_t n)
{
    char header[4096];
    uint64_t data_len = header_of(e, n, header, sizeof header);
    write_st(tmpdir, name, header, data_len);
}

/* A 4 x 3 linear quantized with double quantization, as Linear4bit saves it:
 * 12 values packed in 6 bytes; the state's shapes are bitsandbytes' (one
 * absmax block, 256-entry nested map, 16-entry map, a JSON blob). */
#define EMBED { "model.embed_tokens.weight", "BF16", "[10,4]", 80 }
#define NORM { "model.norm.weight", "BF16", "[4]", 8 }
#define PACKED(x) { x ".weight", "U8", "[6,1]", 6 }
#define ABSMAX(x) { x ".weight.absmax", "U8", "[1]", 1 }
#define NESTED_ABSMAX(x) { x ".weight.nested_absmax", "F32", "[1]", 4 }
#define NESTED_MAP(x) { x ".weight.nested_quant_map", "F32", "[256]", 1024 }
#define QUANT_MAP(x) { x ".weight.quant_map", "F32", "[16]", 64 }
#define QUANT_STATE(x, type) { x ".weight.quant_state.bitsandbytes__" type, "U8", "[40]", 40 }
#define STATE(x, type) ABSMAX(x), NESTED_ABSMAX(x), NESTED_MAP(x), QUANT_MAP(x), QUANT_STATE(x, type)
#define Q "model.layers.0.self_attn.q_proj"
#define K "model.layers.0.self_attn.k_proj"
#define STATE_BYTES (1 + 4 + 1024 + 64 + 40)

typedef struct dtype_total {
    const char *name;
    uint64_t params, bytes;
} dtype_total;

/* The totals and the dtypes in order. */
static void expect_weights(const llmem_weights *w, uint64_t params, uint64_t bytes,
                           uint64_t tensors, uint64_t state_bytes, uint64_t state_tensors,
                           const dtype_total *dt, size_t ndt)
{
    cr_expect_eq(get(w, LLMEM_WEIGHTS_PARAMS), params, "params %" PRIu64,
                 get(w, LLMEM_WEIGHTS_PARAMS));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_BYTES), bytes, "bytes %" PRIu64,
                 get(w, LLMEM_WEIGHTS_BYTES));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_TENSORS), tensors);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_QUANT_STATE_BYTES), state_bytes, "state %" PRIu64,
                 get(w, LLMEM_WEIGHTS_QUANT_STATE_BYTES));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_QUANT_STATE_TENSORS), state_tensors);
    cr_assert_eq(llmem_weights_dtype_count(w), ndt, "%zu dtypes", llmem_weights_dtype_count(w));
    for (size_t i = 0; i < ndt; i++) {
        const char *name = NULL;
        uint64_t p = 0, b = 0;
        cr_assert_eq(llmem_weights_dtype(w, i, &name, &p, &b), LLMEM_OK);
        cr_expect_str_eq(name, dt[i].name, "dtype %zu", i);
        cr_expect_eq(p, dt[i].params, "%s: %" PRIu64 " params", name, p);
        cr_expect_eq(b, dt[i].bytes, "%s: %" PRIu64 " bytes", name, b);
    }
}

static llmem_weights *open_entries(const st_entry *e, size_t n)
{
    char header[4096];
    size_t len;
    llmem_weights *w = NULL;
    uint64_t data_len = header_of(e, n, header, sizeof header);
    unsigned char *p = build(header, strlen(header), data_len, &len);
    cr_assert_eq(llmem_weights_open_buffer(ctx, p, len, &w), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    free(p);
    return w;
}

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

Test(safetensors, bnb_nf4_single_file, .init = setup, .fini = teardown)
{
    static const st_entry e[] = { EMBED, PACKED(Q), STATE(Q, "nf4"), NORM };
    static const dtype_total dt[] = { { "BF16", 44, 88 }, { "bnb-nf4", 12, 6 } };
    llmem_weights *w = open_entries(e, COUNT(e));
    expect_weights(w, 56, 88 + 6 + STATE_BYTES, 8, STATE_BYTES, 5, dt, COUNT(dt));
    llmem_weights_free(w);
    /* The same file from a path. */
    char path[PATH_CAP + 32];
    write_entries("model.safetensors", e, COUNT(e));
    snprintf(path, sizeof path, "%s/model.safetensors", tmpdir);
    cr_assert_eq(llmem_weights_open(ctx, path, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    expect_weights(w, 56, 88 + 6 + STATE_BYTES, 8, STATE_BYTES, 5, dt, COUNT(dt));
    llmem_weights_free(w);
}

/* fp4 and nf4 side by side, in order of first appearance; the state may
 * come before its weight in the header. */
Test(safetensors, bnb_fp4_and_nf4, .init = setup, .fini = teardown)
{
    static const st_entry e[] = { STATE(K, "fp4"), PACKED(K), PACKED(Q), STATE(Q, "nf4") };
    static const dtype_total dt[] = { { "bnb-fp4", 12, 6 }, { "bnb-nf4", 12, 6 } };
    llmem_weights *w = open_entries(e, COUNT(e));
    expect_weights(w, 24, 12 + 2 * STATE_BYTES, 12, 2 * STATE_BYTES, 10, dt, COUNT(dt));
    llmem_weights_free(w);
}

/* Without its quant_state tensor, a U8 weight is U8 elements, and so are the
 * tensors named like state; a quant_state tensor makes no other tensor
 * packed (another base, or a weight that is not U8). */
Test(safetensors, bnb_needs_quant_state, .init = setup, .fini = teardown)
{
    static const st_entry plain[] = { PACKED(Q), ABSMAX(Q), QUANT_MAP(Q) };
    static const dtype_total plain_dt[] = { { "U8", 7, 7 }, { "F32", 16, 64 } };
    llmem_weights *w = open_entries(plain, COUNT(plain));
    expect_weights(w, 23, 71, 3, 0, 0, plain_dt, COUNT(plain_dt));
    llmem_weights_free(w);

    static const st_entry other[] = {
        PACKED(Q), { K ".weight", "BF16", "[4,3]", 24 }, QUANT_STATE(K, "nf4"),
        { Q ".weight.quant_state.bitsandbytes__int4", "U8", "[2]", 2 },
        { Q ".weight.quant_state", "U8", "[2]", 2 },
    };
    static const dtype_total other_dt[] = { { "U8", 10, 10 }, { "BF16", 12, 24 } };
    w = open_entries(other, COUNT(other));
    expect_weights(w, 22, 74, 5, 40, 1, other_dt, COUNT(other_dt));
    llmem_weights_free(w);
}

/* Escapes in a name are decoded before its suffix is compared. */
Test(safetensors, bnb_escaped_names, .init = setup, .fini = teardown)
{
    static const st_entry e[] = {
        { "q\\u002eweight", "U8", "[6,1]", 6 },
        { "q.weight.quant\\u005fstate.bitsandbytes__nf4", "U8", "[40]", 40 },
        { "q.weight\\u002eabsmax", "F32", "[1]", 4 },
    };
    static const dtype_total dt[] = { { "bnb-nf4", 12, 6 } };
    llmem_weights *w = open_entries(e, COUNT(e));
    expect_weights(w, 12, 50, 3, 44, 2, dt, COUNT(dt));
    llmem_weights_free(w);
}

#define SHARD_A "model-00001-of-00002.safetensors"
#define SHARD_B "model-00002-of-00002.safetensors"

static void write_bnb_index(const st_entry *a, size_t na, const st_entry *b, size_t nb)
{
    char text[8192];
    size_t used = (size_t)snprintf(text, sizeof text, "{\"weight_map\":{");
    write_entries(SHARD_A, a, na);
    write_entries(SHARD_B, b, nb);
    for (size_t i = 0; i < na + nb; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s\"%s\":\"%s\"",
                                 i ? "," : "", i < na ? a[i].name : b[i - na].name,
                                 i < na ? SHARD_A : SHARD_B);
    snprintf(text + used, sizeof text - used, "}}");
    cr_assert_lt(used + 2, sizeof text);
    write_index(text);
}

/* A sharded checkpoint: the state may sit in another shard than its weight
 * (the index names them all). */
Test(safetensors, bnb_sharded, .init = setup, .fini = teardown)
{
    static const dtype_total dt[] = { { "BF16", 44, 88 }, { "bnb-nf4", 12, 6 } };
    static const dtype_total reversed_dt[] = { { "bnb-nf4", 12, 6 }, { "BF16", 44, 88 } };
    static const st_entry a[] = { EMBED, PACKED(Q) }, b[] = { STATE(Q, "nf4"), NORM };
    static const st_entry c[] = { EMBED, ABSMAX(Q), QUANT_STATE(Q, "nf4") };
    static const st_entry d[] = { PACKED(Q), NESTED_ABSMAX(Q), NESTED_MAP(Q), QUANT_MAP(Q), NORM };
    static const st_entry e[] = { EMBED, PACKED(Q), STATE(Q, "nf4") }, f[] = { NORM };
    llmem_weights *w = NULL;

    write_bnb_index(a, COUNT(a), b, COUNT(b)); /* the weight alone */
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    expect_weights(w, 56, 88 + 6 + STATE_BYTES, 8, STATE_BYTES, 5, dt, COUNT(dt));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), 2);
    llmem_weights_free(w);

    write_bnb_index(c, COUNT(c), d, COUNT(d)); /* quant_state apart, the state split */
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    expect_weights(w, 56, 88 + 6 + STATE_BYTES, 8, STATE_BYTES, 5, dt, COUNT(dt));
    llmem_weights_free(w);

    write_bnb_index(d, COUNT(d), c, COUNT(c)); /* the shard with the weight first */
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    expect_weights(w, 56, 88 + 6 + STATE_BYTES, 8, STATE_BYTES, 5, reversed_dt,
                   COUNT(reversed_dt));
    llmem_weights_free(w);

    write_bnb_index(e, COUNT(e), f, COUNT(f)); /* all together */
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    expect_weights(w, 56, 88 + 6 + STATE_BYTES, 8, STATE_BYTES, 5, dt, COUNT(dt));
    llmem_weights_free(w);
}

/* The quantized weights' sets under failing allocations: a clean status,
 * nothing leaked (escaped names are decoded into allocated buffers). */
Test(safetensors, bnb_allocation_failures, .init = setup, .fini = teardown)
{
    static const st_entry a[] = {
        { "q\\u002eweight", "U8", "[6,1]", 6 }, { "q.weight\\u002eabsmax", "F32", "[1]", 4 },
    };
    static const st_entry b[] = {
        { "q.weight.quant\\u005fstate.bitsandbytes__nf4", "U8", "[40]", 40 }, NORM,
    };
    write_bnb_index(a, COUNT(a), b, COUNT(b));
    char single[PATH_CAP + 64];
    snprintf(single, sizeof single, "%s/" SHARD_B, tmpdir);
    const char *paths[] = { tmpdir, single };
    const uint64_t params[] = { 12 + 4, 4 };
    for (size_t i = 0; i < COUNT(paths); i++)
        open_under_budgets(paths[i], params[i]);
}
