/*
 * The agent's result file (results.inc): the agent's formatters of its records and
 * ulpt-watch's parser, both made from the one table.
 *
 * SPDX-License-Identifier: MIT
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "options.h"
#include "results.h"

/* A line being written: cut short, still NUL-terminated, when it does not fit. */
struct line {
	char *buf;
	size_t cap, n;
};

static void put_char(struct line *o, char c)
{
	if (o->n + 1 < o->cap) {
		o->buf[o->n++] = c;
		o->buf[o->n] = 0;
	}
}

/* A text field: a TAB or newline in it would split the record. */
static void put_text(struct line *o, const char *s)
{
	put_char(o, '\t');
	for (; s && *s; s++)
		put_char(o, *s == '\t' || *s == '\n' ? ' ' : *s);
}

static void put_u64(struct line *o, uint64_t v, int hex)
{
	char t[24];             /* "0x" + 16 digits + NUL */

	snprintf(t, sizeof(t), hex ? "0x%" PRIx64 : "%" PRIu64, v);
	put_text(o, t);
}

#define WL_DEC(name) put_u64(&o, r->name, 0);
#define WL_HEX(name) put_u64(&o, r->name, 1);
#define WL_DEC_OR(name, def) WL_DEC(name)
#define WL_TEXT(name) put_text(&o, r->name);
#define WL_TEXT_OR(name, def) WL_TEXT(name)
#define WL_RESULT(type, required, fields) \
size_t wl_result_format_##type(char *buf, size_t cap, const struct wl_result_##type *r) \
{ \
	struct line o = { buf, cap, 0 }; \
	\
	(void)r; \
	if (cap) \
		buf[0] = 0; \
	for (const char *t = #type; *t; t++) \
		put_char(&o, *t); \
	fields \
	put_char(&o, '\n'); \
	return o.n; \
}
#include "results.inc"
#undef WL_RESULT
#undef WL_DEC
#undef WL_HEX
#undef WL_DEC_OR
#undef WL_TEXT
#undef WL_TEXT_OR

/* A function, not a compare in the macro: end requires none, an always-false compare. */
static int too_few(size_t nf, size_t required)
{
	return nf < required;
}

/* Each type's parser: field i of f (nf fields, the type not among them) into r->name. */
#define WL_DEC(name) \
	if (i < nf && wl_parse_u64(f[i], &r->name)) \
		return -1; \
	i++;
#define WL_HEX(name) WL_DEC(name)
#define WL_DEC_OR(name, def) \
	r->name = def; \
	WL_DEC(name)
#define WL_TEXT(name) \
	if (i < nf && !f[i][0]) \
		return -1; \
	r->name = i < nf ? f[i] : NULL; \
	i++;
#define WL_TEXT_OR(name, def) \
	r->name = i < nf && f[i][0] ? f[i] : def; \
	i++;
#define WL_RESULT(type, required, fields) \
static int parse_##type(char **f, size_t nf, struct wl_result_##type *r) \
{ \
	size_t i = 0; \
	\
	(void)f; \
	(void)r; \
	if (too_few(nf, required)) \
		return -1; \
	fields \
	(void)i; \
	return 0; \
}
#include "results.inc"
#undef WL_RESULT

static const char *const names[] = {
#define WL_RESULT(type, required, fields) #type,
#include "results.inc"
#undef WL_RESULT
};

int wl_result_parse(char **f, size_t nf, struct wl_result *r)
{
	memset(r, 0, sizeof(*r));
	for (r->type = 0; r->type < WL_RESULT_COUNT; r->type++)
		if (!strcmp(f[0], names[r->type]))
			break;
	switch (r->type) {
#define WL_RESULT(type, required, fields) \
	case WL_RESULT_##type: \
		return parse_##type(f + 1, nf - 1, &r->u.type) ? -1 : 1;
#include "results.inc"
#undef WL_RESULT
	case WL_RESULT_COUNT:
		break;
	}
	return 0;
}
