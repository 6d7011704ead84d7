/* SPDX-License-Identifier: MIT */
/* The small JSON tree interface the config reader uses. Only json.c includes
 * json-c, so the config parser can be read, tested and fuzzed against this
 * interface alone. (Safetensors headers and indexes are walked with the
 * scanner of hf/scan.h, without a tree.)
 *
 * Why json-c: it is packaged by Debian (libjson-c5, libjson-c-dev) and every
 * other distribution, has kept a versioned, stable ABI for years, is plain C99
 * with no dependencies, and already sits under systemd, rsyslog, cryptsetup and
 * bind9, so linking it adds nothing new to a system image. Its tokener takes an
 * explicit length and a nesting limit. Its strict mode is not RFC 8259, so
 * every text passes hf/scan.h's check first. */
#ifndef LLMEM_HF_JSON_H
#define LLMEM_HF_JSON_H

#include "hf/scan.h" /* the JSON types, their names, the nesting limit */

#include <stddef.h>
#include <stdint.h>

/* A JSON value inside a parsed document; NULL is the JSON null. */
typedef struct hf_jv hf_jv;

/* Parse len bytes of strict JSON (trailing whitespace allowed). On failure
 * returns -1 with a message in err; *root is then NULL. */
int llmem_hf_json_parse(const char *text, size_t len, hf_jv **root, char *err, size_t errcap);
void llmem_hf_json_free(hf_jv *root);

int llmem_hf_json_type(const hf_jv *v);

/* Member key of an object: returns 1 and sets *out (NULL for a JSON null)
 * when present, 0 when absent or when obj is not an object. */
int llmem_hf_json_member(const hf_jv *obj, const char *key, const hf_jv **out);
/* Number of members of an object. */
size_t llmem_hf_json_object_size(const hf_jv *obj);
/* Calls fn for each member in document order; stops at the first nonzero
 * return and returns it. */
int llmem_hf_json_each(const hf_jv *obj, int (*fn)(void *user, const char *key, const hf_jv *value),
                 void *user);

/* An integer value: 0 on success, -1 when v is not an integer or out of range. */
int llmem_hf_json_int64(const hf_jv *v, int64_t *out);
/* A non-negative integer value up to 2^64 - 1 (JSON integers above that are
 * clamped by the parser to 2^64 - 1, which no valid use reaches). */
int llmem_hf_json_uint64(const hf_jv *v, uint64_t *out);
/* Any number. */
int llmem_hf_json_number(const hf_jv *v, double *out);
/* A real number's text as the document wrote it ("256.0", "2.56e2"), for
 * messages (valid while the document lives); "" for any other value. */
const char *llmem_hf_json_real_text(const hf_jv *v);
/* 0/1 of a boolean; -1 when v is not a boolean. */
int llmem_hf_json_bool(const hf_jv *v);
/* Contents of a string (NUL-terminated, valid while the document lives), or
 * NULL when v is not a string or holds a NUL character. */
const char *llmem_hf_json_string(const hf_jv *v);

size_t llmem_hf_json_array_size(const hf_jv *v);
/* Element i of an array (NULL for a JSON null or out of range). */
const hf_jv *llmem_hf_json_array_at(const hf_jv *v, size_t i);

#endif
