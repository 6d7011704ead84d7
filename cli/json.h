/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: indented output, commas placed for the
 * caller, strings escaped (RFC 8259). Keys are NULL inside arrays and at the
 * top level. */
#ifndef LLMEM_CLI_JSON_H
#define LLMEM_CLI_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct json_writer {
    FILE *out;
    int depth;
    int first; /* nothing written yet in the innermost container */
} json_writer;

void json_begin(json_writer *w, FILE *out);
/* Ends the document with a newline. */
void json_end(json_writer *w);

void json_object_begin(json_writer *w, const char *key);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w, const char *key);
void json_array_end(json_writer *w);

/* A NULL value is written as null. */
void json_string(json_writer *w, const char *key, const char *value);
void json_u64(json_writer *w, const char *key, uint64_t value);
void json_i64(json_writer *w, const char *key, int64_t value);
/* A finite real; a non-finite one (which JSON cannot hold) is written as null. */
void json_real(json_writer *w, const char *key, double value);
void json_bool(json_writer *w, const char *key, int value);
void json_null(json_writer *w, const char *key);

#endif
