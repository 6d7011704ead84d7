/* SPDX-License-Identifier: MIT */
/*
 * The jobs file of `llmem pack`: a JSON array of objects, one a job, each
 * with scalar values only (strings, numbers, true/false). A small strict
 * reader (RFC 8259 grammar; duplicate keys, nesting inside a job and
 * trailing text refused), whose messages give the line and the job.
 */
#ifndef LLMEM_CLI_JOBS_H
#define LLMEM_CLI_JOBS_H

#include <stddef.h>

typedef enum jobs_kind { JOBS_STRING, JOBS_NUMBER, JOBS_TRUE, JOBS_FALSE, JOBS_NULL } jobs_kind;

typedef struct jobs_field {
    char *key;
    jobs_kind kind;
    char *text; /* a string's value (UTF-8), a number's literal, else NULL */
    int line;
} jobs_field;

typedef struct jobs_spec {
    jobs_field *field;
    size_t count;
    int line;   /* of the opening brace */
} jobs_spec;

typedef struct jobs_file {
    jobs_spec *job;
    size_t count;
} jobs_file;

/* Read path; on failure print "PATH:LINE: why" and return 0. */
int cli_jobs_read(const char *path, jobs_file *out);
void cli_jobs_free(jobs_file *f);
/* The field named key, or NULL. */
const jobs_field *cli_jobs_get(const jobs_spec *job, const char *key);

#endif
