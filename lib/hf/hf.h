/* SPDX-License-Identifier: MIT */
/* Hugging Face readers: internals shared by config.c, safetensors.c,
 * st_set.c, index.c, weights.c and files.c, and the entry points the
 * white-box tests and fuzzers call. */
#ifndef LLMEM_HF_HF_H
#define LLMEM_HF_HF_H

#include "llmem.h"

#include "hf/scan.h"

#include <stddef.h>
#include <stdint.h>

/* The safetensors format (huggingface/safetensors, safetensors/src/tensor.rs):
 * 8-byte little-endian header length, at most MAX_HEADER_SIZE = 100_000_000
 * bytes of UTF-8 JSON starting with '{', then the data region. */
#define HF_ST_MAX_HEADER UINT64_C(100000000)
/* config.json files are a few kilobytes; an index.json of DeepSeek-V3 (92k
 * tensors) is about 9 MB. */
#define HF_CONFIG_MAX_BYTES ((size_t)16 << 20)
#define HF_INDEX_MAX_BYTES ((size_t)HF_ST_MAX_HEADER)

/* The dtypes of safetensors' Dtype enum, in the crate's order. */
#define HF_DTYPE_COUNT 20

typedef struct hf_dtype {
    const char *name;
    unsigned bits; /* bits per element (F4 is 4, F6_* are 6) */
} hf_dtype;

extern const hf_dtype llmem_hf_dtypes[HF_DTYPE_COUNT];

/* The per-dtype listing has two pseudo-dtypes after the format's: the packed
 * 4-bit weights of a bitsandbytes checkpoint (bnb.c), by quant type. */
enum {
    HF_KIND_BNB_NF4 = HF_DTYPE_COUNT,
    HF_KIND_BNB_FP4,
    HF_KIND_COUNT
};
/* Name of a dtype or pseudo-dtype index ("BF16", "bnb-nf4"). */
const char *llmem_hf_kind_name(int kind);

/* Totals of one or more safetensors headers. params and the per-dtype
 * listing leave out bitsandbytes' quantization state (quant_*), which bytes
 * and tensors include. */
typedef struct hf_totals {
    uint64_t params, bytes, tensors;
    uint64_t quant_bytes, quant_tensors;
    uint64_t dtype_params[HF_KIND_COUNT], dtype_bytes[HF_KIND_COUNT];
    unsigned char order[HF_KIND_COUNT]; /* dtype indices in order of first use */
    size_t ndtypes;
} hf_totals;

struct llmem_weights {
    llmem_ctx *ctx;
    hf_totals t;
    uint64_t files;
};

/* One tensor of a safetensors header as its entry gives it; the name points
 * into the header text, as written (escapes undecoded). 32 bytes: a million
 * of them are sorted, and glibc sorts records above 32 bytes through an array
 * of pointers. Its elements are (end - begin) x 8 / the dtype's bits. */
typedef struct hf_st_tensor {
    const char *name;
    uint32_t name_len; /* headers are at most HF_ST_MAX_HEADER bytes */
    unsigned char name_escaped;
    unsigned char dtype; /* index in llmem_hf_dtypes */
    uint64_t begin, end;
} hf_st_tensor;

/* The tensors of one header, sorted by name (by their decoded bytes). */
typedef struct hf_st_tensors {
    hf_st_tensor *t; /* from ctx's allocator */
    size_t n;
} hf_st_tensors;

/* Tensor names and strings in messages are cut to this many bytes. */
#define HF_NAME_SHOWN 80

/* bitsandbytes 4-bit checkpoints (bnb.c). bitsandbytes' Linear4bit saves
 * its weight X.weight packed, two 4-bit values a byte, and next to it the
 * quantization state: X.weight.absmax, .quant_map, .nested_absmax,
 * .nested_quant_map and .quant_state.bitsandbytes__nf4 (or __fp4), the
 * non-tensor fields packed into a U8 tensor. The set holds each X.weight
 * whose quant_state tensor the checkpoint holds, in any of its files. */
typedef struct hf_bnb_base {
    const char *name; /* decoded: points into a header or index, or owned */
    size_t len;
    unsigned char kind;  /* HF_KIND_BNB_* */
    unsigned char owned; /* name is from ctx's allocator (decoded from escapes) */
} hf_bnb_base;

typedef struct hf_bnb {
    hf_bnb_base *b; /* from ctx's allocator, sorted by name once complete */
    size_t n, cap;
} hf_bnb;

/* Add the base of name to the set when name is a quant_state tensor's. */
int llmem_hf_bnb_add(llmem_ctx *ctx, hf_bnb *set, const hf_str *name);
/* Sort the set once every name is added. */
void llmem_hf_bnb_sort(hf_bnb *set);
void llmem_hf_bnb_free(llmem_ctx *ctx, hf_bnb *set);
/* What a tensor of this dtype and (decoded) name counts as under the set:
 * its dtype, HF_KIND_BNB_* for a packed U8 weight, or HF_BNB_STATE for
 * quantization state. */
#define HF_BNB_STATE (-1)
int llmem_hf_bnb_kind(const hf_bnb *set, const char *name, size_t len, int dtype);

/* Parse and validate one safetensors header (the JSON after the length),
 * whose file holds data_len bytes after it, and add its tensors to *totals,
 * bitsandbytes 4-bit weights as bnb says (NULL: as this header's own
 * quant_state tensors say). name names the file in messages. The header is
 * walked token by token (hf/scan.h): memory is linear in its tensors, with no JSON tree. A name
 * given twice is refused (which entry holds the tensor is ambiguous). On success, when keep is not NULL, it receives the tensors sorted by
 * name (valid while header lives) for the caller to look names up. Fails with
 * LLMEM_EPARSE (or LLMEM_ENOMEM) and a message naming the tensor or field;
 * *totals is then unchanged. */
int llmem_hf_st_header(llmem_ctx *ctx, const char *name, const char *header, size_t header_len,
                       uint64_t data_len, const hf_bnb *bnb, hf_totals *totals,
                       hf_st_tensors *keep);

/* The tensors of one header together (st_set.c). */
hf_str llmem_hf_st_name(const hf_st_tensor *t);
/* Sorted by offsets, the tensors cover [0, data_len) exactly (file names the
 * file in messages); t is sorted by offsets on return. */
int llmem_hf_st_check_coverage(llmem_ctx *ctx, const char *file, uint64_t data_len,
                               hf_st_tensor *t, size_t n);
/* Totals of t, dtypes in order of first appearance in the header; packed
 * weights and quantization state as bnb says. Fails only for memory (an
 * escaped name is decoded to be looked up). */
int llmem_hf_st_count(llmem_ctx *ctx, const hf_st_tensor *t, size_t n, const hf_bnb *bnb,
                      hf_totals *add);
void llmem_hf_st_sort_by_name(hf_st_tensor *t, size_t n);
/* Add totals (sums checked by the caller). */
void llmem_hf_st_merge(hf_totals *into, const hf_totals *add);

/* Check a header length n read from a file of file_size bytes; sets the data
 * length that follows the header. */
int llmem_hf_st_lengths(llmem_ctx *ctx, const char *name, uint64_t file_size, uint64_t n,
                  uint64_t *data_len);

/* Split a whole safetensors file in memory into its header and data length. */
int llmem_hf_st_split(llmem_ctx *ctx, const char *name, const unsigned char *data, size_t len,
                const char **header, size_t *header_len, uint64_t *data_len);

/* Weights of totals read from files (weights.c). */
int llmem_hf_make_weights(llmem_ctx *ctx, const hf_totals *t, uint64_t files, llmem_weights **out);
/* Read one .safetensors file and add its tensors to *t (bnb as for
 * llmem_hf_st_header). With keep (and text),
 * also its tensors sorted by name, whose names point into *text, the header
 * (free both with llmem__free). */
int llmem_hf_read_single(llmem_ctx *ctx, const char *path, const hf_bnb *bnb, hf_totals *t,
                         char **text, hf_st_tensors *keep);

/* A sharded checkpoint: the index names each tensor's shard (index.c). */
#define HF_INDEX_NAME "model.safetensors.index.json"
int llmem_hf_read_index(llmem_ctx *ctx, const char *path, llmem_weights **out);

/* Files. Paths are UTF-8 (or the platform's) and used as given. */
enum llmem_hf_path_kind {
    HF_PATH_MISSING = 0,
    HF_PATH_FILE = 1, /* a regular file */
    HF_PATH_DIR = 2,
    HF_PATH_OTHER = 3 /* a FIFO, device or socket: never opened */
};
/* What path is, following symlinks: LLMEM_OK and *kind (HF_PATH_MISSING
 * only when it does not exist), or LLMEM_EIO with the cause stat() gives
 * (permission denied, a symlink loop, ...). */
int llmem_hf_path_kind(llmem_ctx *ctx, const char *path, int *kind);
/* LLMEM_EIO, saying why a path of this kind is not read. */
int llmem_hf_not_regular(llmem_ctx *ctx, const char *path, int kind);
/* dir + "/" + name in memory from ctx's allocator; NULL when out of memory. */
char *llmem_hf_path_join(llmem_ctx *ctx, const char *dir, const char *name);
/* The directory part of path ("." when it has none), allocated from ctx. */
char *llmem_hf_path_dir(llmem_ctx *ctx, const char *path);
/* Read a whole regular file of at most max bytes, to its end whatever size
 * it reports (/proc), into a NUL-terminated buffer from ctx's allocator.
 * LLMEM_EIO when it cannot be read or is not a regular file, LLMEM_EPARSE
 * when larger than max. */
int llmem_hf_read_file(llmem_ctx *ctx, const char *path, size_t max, char **buf, size_t *len);
/* Read a safetensors file's header (not its data): *header from ctx's
 * allocator, *data_len the bytes after it. */
int llmem_hf_read_st_header(llmem_ctx *ctx, const char *path, char **header, size_t *header_len,
                      uint64_t *data_len);

/* The last path component, for messages. */
const char *llmem_hf_basename(const char *path);

#endif
