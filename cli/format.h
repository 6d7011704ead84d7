/* SPDX-License-Identifier: MIT */
/* Human-readable numbers for the table output. */
#ifndef LLMEM_CLI_FORMAT_H
#define LLMEM_CLI_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* Room for any formatted number below. */
#define CLI_NUMBER_CAP 64

/* Columns of the tables: a section's label and a gap ("Architecture  "), a
 * row's name (terms, components, phases, dtypes), and a byte count
 * ("12345.67 GiB (13256.78 GB)"). */
#define CLI_LABEL_WIDTH 14
#define CLI_ROW_WIDTH 26
#define CLI_BYTES_WIDTH 28

/* Bytes in a binary unit and the matching decimal one: "23.02 GiB (24.72 GB)";
 * GiB is the largest unit, so values compare with GPU sizes at a glance. */
void cli_format_bytes(uint64_t bytes, char *buf, size_t cap);
/* A count with thousands separators: "1,235,814,400". */
void cli_format_count(uint64_t n, char *buf, size_t cap);
/* A count in short scale: "1.24 B", "124.44 M". */
void cli_format_count_short(uint64_t n, char *buf, size_t cap);

/* Bytes in GiB with two decimals ("9.50 GiB"); below 1 GiB in MiB, below
 * 1 MiB in KiB, with `decimals` decimals ("8.12 MiB"; -1: three significant
 * digits, "287 MiB", "2.72 MiB"); below 1 KiB in bytes ("950 B"). A nonzero
 * count never shows as 0. */
void cli_format_size(uint64_t bytes, int decimals, char *buf, size_t cap);
/* cli_format_size with three significant digits below 1 GiB. */
void cli_format_gib(uint64_t bytes, char *buf, size_t cap);

#endif
