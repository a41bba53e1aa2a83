/*
 * The agent's result file (results.inc): a struct per record type, the agent's formatter of
 * each and ulpt-watch's parser of them all. Nothing here allocates: the agent formats its
 * records in its own buffers.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef WL_RESULTS_H
#define WL_RESULTS_H

#include <stddef.h>
#include <stdint.h>

enum wl_result_type {
#define WL_RESULT(type, required, fields) WL_RESULT_##type,
#include "results.inc"
#undef WL_RESULT
	WL_RESULT_COUNT
};

/* struct wl_result_TYPE: its fields by name; a text is NULL in a record to be written when
 * it is empty. (end's struct has no field.) */
#define WL_DEC(name) uint64_t name;
#define WL_HEX(name) uint64_t name;
#define WL_DEC_OR(name, def) uint64_t name;
#define WL_TEXT(name) const char *name;
#define WL_TEXT_OR(name, def) const char *name;
#define WL_RESULT(type, required, fields) struct wl_result_##type { fields };
#include "results.inc"
#undef WL_RESULT

/* Writes one record, its newline included, into buf (cap bytes): the length written,
 * NUL-terminated and cut short if it does not fit (0 when cap is 0). */
#define WL_RESULT(type, required, fields) \
	size_t wl_result_format_##type(char *buf, size_t cap, const struct wl_result_##type *r);
#include "results.inc"
#undef WL_RESULT
#undef WL_DEC
#undef WL_HEX
#undef WL_DEC_OR
#undef WL_TEXT
#undef WL_TEXT_OR

/* The same, from the fields by name: WL_RESULT_FORMAT(buf, cap, heap, .allocations = n, ...). */
#define WL_RESULT_FORMAT(buf, cap, type, ...) \
	wl_result_format_##type(buf, cap, &(const struct wl_result_##type){ __VA_ARGS__ })

/* A record read back: its type and fields (the texts point into the line parsed). */
struct wl_result {
	enum wl_result_type type;
	union {
#define WL_RESULT(type, required, fields) struct wl_result_##type type;
#include "results.inc"
#undef WL_RESULT
	} u;
};

/* Parses a record split at its TABs (f[0] its type, nf fields in all): 1 and *r for a record
 * of the table, 0 for an unknown type (a newer agent's), -1 for a malformed one; r->type is
 * the type either way (WL_RESULT_COUNT when unknown). */
int wl_result_parse(char **f, size_t nf, struct wl_result *r);

#endif
