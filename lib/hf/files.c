/* SPDX-License-Identifier: MIT */
/* The file side of the Hugging Face readers: path kinds, joining, reading a
 * small file whole and a safetensors file's header only.
 *
 * Only regular files are read. A FIFO, a terminal or a socket named as a
 * config or a shard would block open() or read() forever, so a file is opened
 * non-blocking and checked with fstat() before the first read (a check of the
 * path alone could be raced). */
#define _POSIX_C_SOURCE 200809L

#include "hf/hf.h"

#include "core/ctx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why a path cannot be used, in the words of the messages. */
static const char *describe(int err)
{
    switch (err) {
    case ENOENT: return "no such file or directory";
    case EACCES: return "permission denied";
    case ELOOP: return "too many levels of symbolic links (a symlink loop?)";
    case ENOTDIR: return "a component of the path is not a directory";
    case ENAMETOOLONG: return "file name too long";
    default: return strerror(err);
    }
}

static int io_fail(llmem_ctx *ctx, const char *what, const char *path, int err)
{
    return llmem__fail(ctx, LLMEM_EIO, "%s: cannot %s: %s", path, what, describe(err));
}

static int kind_of(mode_t mode)
{
    return S_ISREG(mode) ? HF_PATH_FILE : S_ISDIR(mode) ? HF_PATH_DIR : HF_PATH_OTHER;
}

int llmem_hf_path_kind(llmem_ctx *ctx, const char *path, int *kind)
{
    struct stat st;
    *kind = HF_PATH_MISSING;
    if (path[0] == '\0')
        return llmem__fail(ctx, LLMEM_EIO, "the path is empty");
    if (stat(path, &st) == 0) {
        *kind = kind_of(st.st_mode);
        return LLMEM_OK;
    }
    if (errno == ENOENT)
        return LLMEM_OK;
    return llmem__fail(ctx, LLMEM_EIO, "%s: %s", path, describe(errno));
}

int llmem_hf_not_regular(llmem_ctx *ctx, const char *path, int kind)
{
    if (kind == HF_PATH_MISSING)
        return llmem__fail(ctx, LLMEM_EIO, "%s: no such file or directory", path);
    if (kind == HF_PATH_DIR)
        return llmem__fail(ctx, LLMEM_EIO, "%s: is a directory, not a regular file", path);
    return llmem__fail(ctx, LLMEM_EIO,
                       "%s: not a regular file (a FIFO, device or socket is not read)", path);
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

/* Open path for reading if it is a regular file; *size from fstat(). */
static int open_regular(llmem_ctx *ctx, const char *path, FILE **out, uint64_t *size)
{
    struct stat st;
    int kind, rc;
    *out = NULL;
    /* stat() first, so that a socket says what it is rather than ENXIO. */
    if ((rc = llmem_hf_path_kind(ctx, path, &kind)) != LLMEM_OK)
        return rc;
    if (kind != HF_PATH_FILE)
        return kind == HF_PATH_MISSING ? io_fail(ctx, "open", path, ENOENT)
                                       : llmem_hf_not_regular(ctx, path, kind);
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return io_fail(ctx, "open", path, errno);
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return io_fail(ctx, "stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return llmem_hf_not_regular(ctx, path, kind_of(st.st_mode));
    }
    /* O_NONBLOCK has no effect on a regular file; clear it all the same. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        int err = errno;
        close(fd);
        return io_fail(ctx, "open", path, err);
    }
    *out = f;
    *size = (uint64_t)st.st_size;
    return LLMEM_OK;
}

/* Files such as those of /proc report a size of 0 and have contents: a whole
 * file is read to its end, whatever its size said, up to max bytes. */
#define READ_STEP ((size_t)1 << 16)

int llmem_hf_read_file(llmem_ctx *ctx, const char *path, size_t max, char **buf, size_t *len)
{
    uint64_t size;
    FILE *f;
    *buf = NULL;
    *len = 0;
    int rc = open_regular(ctx, path, &f, &size);
    if (rc != LLMEM_OK)
        return rc;
    if (size > max) {
        fclose(f);
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: %llu bytes is larger than the %zu allowed",
                           path, (unsigned long long)size, max);
    }
    /* One byte more than the file should hold shows whether it holds more. */
    size_t cap = (size_t)size + 1, got = 0;
    char *p = llmem__alloc(ctx, cap + 1);
    for (;;) {
        if (p == NULL) {
            fclose(f);
            return llmem__fail(ctx, LLMEM_ENOMEM, "%s: out of memory", path);
        }
        got += fread(p + got, 1, cap - got, f);
        if (got < cap || got > max)
            break;
        size_t bigger = cap + (cap < READ_STEP ? READ_STEP : cap);
        if (bigger > max + 1)
            bigger = max + 1;
        char *q = llmem__alloc(ctx, bigger + 1);
        if (q != NULL)
            memcpy(q, p, got);
        llmem__free(ctx, p);
        p = q;
        cap = bigger;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err != 0 || got > max) {
        llmem__free(ctx, p);
        if (err != 0)
            return io_fail(ctx, "read", path, err);
        return llmem__fail(ctx, LLMEM_EPARSE, "%s: more than the %zu bytes allowed", path, max);
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
    FILE *f;
    *header = NULL;
    *header_len = 0;
    int rc = open_regular(ctx, path, &f, &size);
    if (rc != LLMEM_OK)
        return rc;
    if (size < sizeof n_le) {
        /* A /proc or /sys file reports a size of 0 and holds data. */
        size_t got = fread(n_le, 1, sizeof n_le, f);
        if (got > size)
            rc = llmem__fail(ctx, LLMEM_EPARSE,
                             "%s: reports a size of %llu bytes but holds more (a /proc or /sys "
                             "file?), so its data region cannot be checked", path,
                             (unsigned long long)size);
        else
            rc = llmem__fail(ctx, LLMEM_EPARSE,
                             "%s: %llu bytes is shorter than the 8-byte header length", path,
                             (unsigned long long)size);
        goto out;
    }
    if (fread(n_le, 1, sizeof n_le, f) != sizeof n_le) {
        rc = ferror(f) ? io_fail(ctx, "read", path, errno)
                       : llmem__fail(ctx, LLMEM_EIO, "%s: file shrank while being read", path);
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
