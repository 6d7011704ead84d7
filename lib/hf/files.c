/* SPDX-License-Identifier: MIT */
/* The file side of the Hugging Face readers: path kinds, joining, reading a
 * small file whole and a safetensors file's header only. */
#define _POSIX_C_SOURCE 200809L

#include "hf/hf.h"

#include "core/ctx.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int llmem_hf_path_kind(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return HF_PATH_MISSING;
    return S_ISDIR(st.st_mode) ? HF_PATH_DIR : HF_PATH_FILE;
}

char *llmem_hf_path_join(llmem_ctx *ctx, const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = llmem__alloc(ctx, a + b + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, a);
    size_t n = a;
    if (a > 0 && dir[a - 1] != '/')
        p[n++] = '/';
    memcpy(p + n, name, b + 1);
    return p;
}

char *llmem_hf_path_dir(llmem_ctx *ctx, const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash == NULL ? 1 : (slash == path ? 1 : (size_t)(slash - path));
    char *p = llmem__alloc(ctx, n + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, slash == NULL ? "." : path, n);
    p[n] = '\0';
    return p;
}

const char *llmem_hf_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int io_fail(llmem_ctx *ctx, const char *what, const char *path, int err)
{
    return llmem__fail(ctx, LLMEM_EIO, "%s: cannot %s: %s", path, what, strerror(err));
}

/* Size of an open regular file. */
static int file_size(llmem_ctx *ctx, FILE *f, const char *path, uint64_t *size)
{
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        return io_fail(ctx, "stat", path, errno);
    if (!S_ISREG(st.st_mode))
        return llmem__fail(ctx, LLMEM_EIO, "%s: not a regular file", path);
    *size = (uint64_t)st.st_size;
    return LLMEM_OK;
}

int llmem_hf_read_file(llmem_ctx *ctx, const char *path, size_t max, char **buf, size_t *len)
{
    uint64_t size;
    int rc;
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return io_fail(ctx, "open", path, errno);
    if ((rc = file_size(ctx, f, path, &size)) != LLMEM_OK) {
        fclose(f);
        return rc;
    }
    if (size > max) {
        fclose(f);
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: %llu bytes is larger than the %zu allowed",
                           path, (unsigned long long)size, max);
    }
    char *p = llmem__alloc(ctx, (size_t)size + 1);
    if (p == NULL) {
        fclose(f);
        return llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory", path);
    }
    size_t got = fread(p, 1, (size_t)size, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (got != (size_t)size) {
        llmem__free(ctx, p);
        return err ? io_fail(ctx, "read", path, err)
                   : llmem__fail(ctx, LLMEM_EIO, "%s: file shrank while being read", path);
    }
    p[got] = '\0';
    *buf = p;
    *len = got;
    return LLMEM_OK;
}

int llmem_hf_read_st_header(llmem_ctx *ctx, const char *path, char **header, size_t *header_len,
                      uint64_t *data_len)
{
    unsigned char n_le[8];
    uint64_t size, n = 0;
    int rc;
    *header = NULL;
    *header_len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return io_fail(ctx, "open", path, errno);
    if ((rc = file_size(ctx, f, path, &size)) != LLMEM_OK)
        goto out;
    if (size < sizeof n_le) {
        rc = llmem__fail(ctx, LLMEM_EPARSE,
                         "%s: %llu bytes is shorter than the 8-byte header length", path,
                         (unsigned long long)size);
        goto out;
    }
    if (fread(n_le, 1, sizeof n_le, f) != sizeof n_le) {
        rc = io_fail(ctx, "read", path, errno);
        goto out;
    }
    for (int i = 7; i >= 0; i--)
        n = n << 8 | n_le[i];
    if ((rc = llmem_hf_st_lengths(ctx, llmem_hf_basename(path), size, n, data_len)) != LLMEM_OK)
        goto out;
    char *p = llmem__alloc(ctx, (size_t)n + 1);
    if (p == NULL) {
        rc = llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory for a %llu-byte header", path,
                         (unsigned long long)n);
        goto out;
    }
    if (fread(p, 1, (size_t)n, f) != (size_t)n) {
        llmem__free(ctx, p);
        rc = llmem__fail(ctx, LLMEM_EIO, "%s: cannot read the %llu-byte header", path,
                         (unsigned long long)n);
        goto out;
    }
    p[n] = '\0';
    *header = p;
    *header_len = (size_t)n;
out:
    fclose(f);
    return rc;
}
