/* SPDX-License-Identifier: MIT */
/*
 * Paths that are no regular file, or that stat() cannot follow, through
 * llmem_model_new_hf_config() and llmem_weights_open(): a FIFO blocked open()
 * forever (each test has a timeout, so a hang fails it), a symlink loop or a
 * permission problem was "no such file", a /proc file (size 0) was "JSON text
 * ends early". And what the sharded reader must get right now that it sorts:
 * names given twice, escaped names, the order of dtypes.
 */
#define _XOPEN_SOURCE 700

#include <criterion/criterion.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmem.h"

#define PATH_CAP 512

static llmem_ctx *ctx;
static char tmpdir[PATH_CAP];
static char path[PATH_CAP + 128];

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    chmod(p, 0700);
    return remove(p);
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    cr_assert_eq(llmem_ctx_new(&ctx, NULL), LLMEM_OK);
    snprintf(tmpdir, sizeof tmpdir, "%s/llmem-sf-XXXXXX", base && base[0] ? base : "/tmp");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
    nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    llmem_ctx_free(ctx);
    ctx = NULL;
}

/* tmpdir/name, in path. */
static const char *at(const char *name)
{
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static void make_dir(const char *name)
{
    cr_assert_eq(mkdir(at(name), 0700), 0, "%s", path);
}

static void make_fifo(const char *name)
{
    cr_assert_eq(mkfifo(at(name), 0600), 0, "%s", path);
}

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "wb");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A safetensors file of header text and data_len zero bytes. */
static void write_st(const char *name, const char *header, size_t data_len)
{
    size_t n = strlen(header);
    FILE *f = fopen(at(name), "wb");
    cr_assert_not_null(f, "%s", path);
    for (int i = 0; i < 8; i++)
        fputc((int)((uint64_t)n >> (8 * i) & 0xff), f);
    fputs(header, f);
    for (size_t i = 0; i < data_len; i++)
        fputc(0, f);
    fclose(f);
}

static void expect_config_error(const char *name, int status, const char *message)
{
    llmem_model *m = NULL;
    int rc = llmem_model_new_hf_config(ctx, at(name), &m);
    cr_expect_eq(rc, status, "%s: status %d (%s)", name, rc, llmem_ctx_error(ctx));
    cr_expect_null(m);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), message), "%s: '%s' lacks '%s'", name,
                       llmem_ctx_error(ctx), message);
}

static void expect_weights_error(const char *name, int status, const char *message)
{
    llmem_weights *w = NULL;
    int rc = llmem_weights_open(ctx, at(name), &w);
    cr_expect_eq(rc, status, "%s: status %d (%s)", name, rc, llmem_ctx_error(ctx));
    cr_expect_null(w);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), message), "%s: '%s' lacks '%s'", name,
                       llmem_ctx_error(ctx), message);
}

static uint64_t get(const llmem_weights *w, int key)
{
    uint64_t v = 0;
    cr_assert_eq(llmem_weights_get_u64(w, key, &v), LLMEM_OK);
    return v;
}

#define NOT_REGULAR "not a regular file"
#define TENSOR_A "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}"
#define INDEX_A "{\"weight_map\":{\"a\":\"shard.safetensors\"}}"

Test(special_files, fifo_config, .init = setup, .fini = teardown, .timeout = 20)
{
    make_fifo("config.json");
    expect_config_error("config.json", LLMEM_EIO, NOT_REGULAR);
    expect_config_error("", LLMEM_EIO, "config.json: " NOT_REGULAR); /* the directory */
}

Test(special_files, fifo_weights, .init = setup, .fini = teardown, .timeout = 20)
{
    make_fifo("model.safetensors");
    expect_weights_error("model.safetensors", LLMEM_EIO, NOT_REGULAR);
    /* Found in the directory, refused, not skipped for a later candidate. */
    expect_weights_error("", LLMEM_EIO, "model.safetensors: " NOT_REGULAR);
}

Test(special_files, fifo_index, .init = setup, .fini = teardown, .timeout = 20)
{
    make_fifo("model.safetensors.index.json");
    write_st("model.safetensors", "{" TENSOR_A "}", 4);
    expect_weights_error("", LLMEM_EIO, "model.safetensors.index.json: " NOT_REGULAR);
}

Test(special_files, fifo_shard, .init = setup, .fini = teardown, .timeout = 20)
{
    write_text("model.safetensors.index.json", INDEX_A);
    make_fifo("shard.safetensors");
    expect_weights_error("", LLMEM_EIO, "shard.safetensors: " NOT_REGULAR);
}

Test(special_files, directory_shard, .init = setup, .fini = teardown, .timeout = 20)
{
    write_text("model.safetensors.index.json", INDEX_A);
    make_dir("shard.safetensors");
    expect_weights_error("", LLMEM_EIO, "shard.safetensors: is a directory");
}

Test(special_files, devices, .init = setup, .fini = teardown, .timeout = 20)
{
    llmem_model *m = NULL;
    llmem_weights *w = NULL;
    cr_expect_eq(llmem_model_new_hf_config(ctx, "/dev/null", &m), LLMEM_EIO);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), NOT_REGULAR), "%s", llmem_ctx_error(ctx));
    cr_expect_eq(llmem_weights_open(ctx, "/dev/zero", &w), LLMEM_EIO);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), NOT_REGULAR), "%s", llmem_ctx_error(ctx));
}

Test(special_files, symlink_loops, .init = setup, .fini = teardown, .timeout = 20)
{
    char target[PATH_CAP + 128];
    snprintf(target, sizeof target, "%s", at("loop2"));
    cr_assert_eq(symlink(target, at("loop1")), 0);
    snprintf(target, sizeof target, "%s", at("loop1"));
    cr_assert_eq(symlink(target, at("loop2")), 0);
    expect_config_error("loop1", LLMEM_EIO, "loop1: too many levels of symbolic links");
    expect_weights_error("loop1", LLMEM_EIO, "symlink loop");
    /* A shard named by the index. */
    write_text("model.safetensors.index.json", "{\"weight_map\":{\"a\":\"loop2\"}}");
    expect_weights_error("", LLMEM_EIO, "loop2: too many levels of symbolic links");
}

Test(special_files, missing_and_empty, .init = setup, .fini = teardown)
{
    expect_config_error("none.json", LLMEM_EIO, "none.json: no such file or directory");
    expect_weights_error("none.safetensors", LLMEM_EIO, "no such file or directory");
    write_text("file", "x");
    expect_config_error("file/config.json", LLMEM_EIO, "not a directory");
    llmem_model *m = NULL;
    cr_expect_eq(llmem_model_new_hf_config(ctx, "", &m), LLMEM_EIO);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "the path is empty"), "%s",
                       llmem_ctx_error(ctx));
}

/* chmod 000 does not deny reading to root or CAP_DAC_OVERRIDE: tried, then
 * skipped honestly. */
static int can_deny_reading(void)
{
    write_text("probe", "x");
    chmod(at("probe"), 0);
    int fd = open(at("probe"), O_RDONLY);
    if (fd >= 0)
        close(fd);
    unlink(at("probe"));
    return fd < 0;
}

Test(special_files, permission_denied, .init = setup, .fini = teardown)
{
    if (!can_deny_reading())
        cr_skip_test("chmod 000 does not deny reading here (root or CAP_DAC_OVERRIDE)");
    write_text("config.json", "{}");
    chmod(at("config.json"), 0);
    expect_config_error("config.json", LLMEM_EIO, "cannot open: permission denied");
    make_dir("locked");
    write_st("locked/model.safetensors", "{" TENSOR_A "}", 4);
    chmod(at("locked"), 0);
    expect_weights_error("locked/model.safetensors", LLMEM_EIO, "permission denied");
    expect_weights_error("locked", LLMEM_EIO, "permission denied");
}

/* stat() says 0 bytes; the file holds text. */
Test(special_files, proc_files, .init = setup, .fini = teardown)
{
    llmem_model *m = NULL;
    llmem_weights *w = NULL;
    cr_expect_eq(llmem_model_new_hf_config(ctx, "/proc/self/status", &m), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "config.json: invalid JSON at byte 0"), "%s",
                       llmem_ctx_error(ctx));
    cr_expect_eq(llmem_weights_open(ctx, "/proc/self/status", &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "reports a size of 0 bytes but holds more"),
                       "%s", llmem_ctx_error(ctx));
}

/* A name given twice is refused (which entry is the tensor is ambiguous),
 * whatever the entries, and a file that names each tensor once still reads:
 * the dtypes come in order of first appearance in the header. */
Test(special_files, repeated_names, .init = setup, .fini = teardown)
{
    llmem_weights *w = NULL;
    const char *name = NULL;
    write_st("same.safetensors", "{" TENSOR_A "," TENSOR_A "}", 4);
    cr_expect_eq(llmem_weights_open(ctx, at("same.safetensors"), &w), LLMEM_EPARSE);
    cr_expect_null(w);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "tensor 'a' appears twice in the header"),
                       "%s", llmem_ctx_error(ctx));
    write_st("order.safetensors",
             "{\"z\":{\"dtype\":\"I8\",\"shape\":[0],\"data_offsets\":[0,0]},"
             "\"y\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]},"
             "\"z\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
             4);
    cr_expect_eq(llmem_weights_open(ctx, at("order.safetensors"), &w), LLMEM_EPARSE);
    cr_expect_not_null(strstr(llmem_ctx_error(ctx), "tensor 'z' appears twice"), "%s",
                       llmem_ctx_error(ctx));
    write_st("order.safetensors",
             "{\"z\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
             "\"y\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}",
             4);
    cr_assert_eq(llmem_weights_open(ctx, at("order.safetensors"), &w), LLMEM_OK, "%s",
                 llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_TENSORS), 2);
    cr_assert_eq(llmem_weights_dtype_count(w), 2);
    cr_expect_eq(llmem_weights_dtype(w, 0, &name, NULL, NULL), LLMEM_OK);
    cr_expect_str_eq(name, "U8");
    cr_expect_eq(llmem_weights_dtype(w, 1, &name, NULL, NULL), LLMEM_OK);
    cr_expect_str_eq(name, "F16");
    llmem_weights_free(w);
}

/* Names compare by their decoded text: "\u0061" in the index is "a" in the
 * shard. A tensor listed twice in weight_map is refused, however spelled and
 * whichever shards (which one holds it is ambiguous), as is weight_map twice;
 * the same entries listed once read. */
Test(special_files, index_names, .init = setup, .fini = teardown)
{
    llmem_weights *w = NULL;
    write_st("shard.safetensors", "{" TENSOR_A "}", 4);
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"\\u0061\":\"gone.safetensors\","
               "\"a\":\"\\u0073hard.safetensors\"}}");
    expect_weights_error("", LLMEM_EPARSE,
                         "model.safetensors.index.json: tensor '\\u0061' appears twice in "
                         "'weight_map' (mapped to 'gone.safetensors' and "
                         "'\\u0073hard.safetensors')");
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"a\":\"shard.safetensors\",\"a\":\"shard.safetensors\"}}");
    expect_weights_error("", LLMEM_EPARSE, "tensor 'a' appears twice in 'weight_map'");
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"a\":\"gone.safetensors\"},"
               "\"weight_map\":{\"a\":\"shard.safetensors\"}}");
    expect_weights_error("", LLMEM_EPARSE,
                         "model.safetensors.index.json: 'weight_map' appears twice in the index");
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"\\u0061\":\"\\u0073hard.safetensors\"}}");
    cr_assert_eq(llmem_weights_open(ctx, tmpdir, &w), LLMEM_OK, "%s", llmem_ctx_error(ctx));
    cr_expect_eq(get(w, LLMEM_WEIGHTS_TENSORS), 1);
    cr_expect_eq(get(w, LLMEM_WEIGHTS_FILES), 1);
    llmem_weights_free(w);
    /* A NUL in a shard name cannot name a file. */
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"a\":\"shard.safetensors\\u0000x\"}}");
    expect_weights_error("", LLMEM_EPARSE, "weight_map entry 'a' must name a file next to");
}
