/*
 * ulpt-watch's settings (options.inc, options.h): defaults, values by type, and
 * ULPT_WATCH_OPTIONS, "name=value:name=value", where a value writes ':' and '\' as "\:" and
 * "\\". The agent and the tool both use this file, so the two can never disagree on a value.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include "options.h"
#include "watchlib.h"

const char *wl_mode_name(unsigned mode)
{
	return mode == WL_READ ? "r" : mode == WL_WRITE ? "w" : "rw";
}

int wl_parse_mode(const char *s, unsigned *mode)
{
	if (!strcmp(s, "r"))
		*mode = WL_READ;
	else if (!strcmp(s, "w"))
		*mode = WL_WRITE;
	else if (!strcmp(s, "rw"))
		*mode = WL_RW;
	else
		return -1;
	return 0;
}

/* One parser per type: 0, or -1 with what the value must be in *want. */
static int parse_bool(const char *s, wl_opt_bool_t *v, const char **want)
{
	*want = "0 or 1";
	if (strcmp(s, "0") && strcmp(s, "1"))
		return -1;
	*v = *s == '1';
	return 0;
}

static int parse_mode(const char *s, wl_opt_mode_t *v, const char **want)
{
	*want = "r, w or rw";
	return wl_parse_mode(s, v);
}

int wl_parse_u64(const char *s, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (!s || !*s)
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!*s)
			return -1;
	}
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* A number 0..max, or -1. */
static long number(const char *s, long max)
{
	uint64_t v;

	return wl_parse_u64(s, &v) || v > (uint64_t)max ? -1 : (long)v;
}

static int parse_align(const char *s, wl_opt_align_t *v, const char **want)
{
	long n = strcmp(s, "auto") ? number(s, 4096) : 0;

	*want = "a power of two from 1 to 4096, or auto";
	if (n < 0 || (n && (n & (n - 1))) || (!n && strcmp(s, "auto")))
		return -1;
	*v = (unsigned)n;
	return 0;
}

static int parse_exitcode(const char *s, wl_opt_exitcode_t *v, const char **want)
{
	long n = number(s, 255);

	*want = "an exit status from 0 to 255";
	if (n < 0)
		return -1;
	*v = (unsigned)n;
	return 0;
}

static int parse_frames(const char *s, wl_opt_frames_t *v, const char **want)
{
	long n = number(s, 255);

	*want = "a number of frames from 0 to 255";
	if (n < 0)
		return -1;
	*v = (unsigned)n;
	return 0;
}

/* The value names of the types that are one of a few words, in their values' order. */
static const char *const redzone_names[] = { "line", "exact" };
static const char *const leaks_names[] = { "none", "definite", "all" };
static const char *const backend_names[] = { "auto", "ulpt", "mprotect" };
static const char *const delivery_names[] = { "count", "log", "fault" };     /* wl_delivery */
#define NNAMES(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* s's index among n names, or -1. */
static int choose(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

#define PARSE_CHOICE(type, wanted) \
static int parse_##type(const char *s, wl_opt_##type##_t *v, const char **want) \
{ \
	int k = choose(s, type##_names, NNAMES(type##_names)); \
	*want = wanted; \
	if (k < 0) \
		return -1; \
	*v = k; \
	return 0; \
}
PARSE_CHOICE(redzone, "line or exact")
PARSE_CHOICE(leaks, "none, definite or all")
PARSE_CHOICE(backend, "auto, ulpt or mprotect")
PARSE_CHOICE(delivery, "count, log or fault")

static int parse_text(const char *s, wl_opt_text_t *v, const char **want)
{
	*want = "";
	*v = s;
	return 0;
}

/* And the value's text back (for the defaults in --help and for format): */
static const char *show_bool(const wl_opt_bool_t *v) { return *v ? "1" : "0"; }
static const char *show_exitcode(const wl_opt_exitcode_t *v)
{
	static char text[256][4];       /* one per value: format() holds two at once */
	char *t = text[*v & 255];

	if (!*t)
		snprintf(t, sizeof(text[0]), "%u", *v & 255);
	return t;
}
static const char *show_frames(const wl_opt_frames_t *v) { return show_exitcode(v); }
static const char *show_mode(const wl_opt_mode_t *v) { return *v ? wl_mode_name(*v) : ""; }
static const char *show_text(const wl_opt_text_t *v) { return *v; }
#define SHOW_CHOICE(type) \
static const char *show_##type(const wl_opt_##type##_t *v) \
{ \
	return *v >= 0 && *v < NNAMES(type##_names) ? type##_names[*v] : "?"; \
}
SHOW_CHOICE(redzone)
SHOW_CHOICE(leaks)
SHOW_CHOICE(backend)
SHOW_CHOICE(delivery)
static const char *show_align(const wl_opt_align_t *v)
{
	static const char pow[13][5] = { "1", "2", "4", "8", "16", "32", "64", "128", "256",
					 "512", "1024", "2048", "4096" };
	return *v ? pow[__builtin_ctz(*v)] : "auto";
}

void wl_options_defaults(struct wl_options *o)
{
	const char *want;

	memset(o, 0, sizeof(*o));       /* heap's default, "", is no mode: 0 */
#define WL_OPTION(name, type, def, meta, help) (void)parse_##type(def, &o->name, &want);
#define WL_INTERNAL(name, type, def, help) (void)parse_##type(def, &o->name, &want);
#include "options.inc"
#undef WL_OPTION
#undef WL_INTERNAL
}

int wl_option_set(struct wl_options *o, const char *name, size_t len, const char *value,
		  const char *prefix, char *err, size_t errlen)
{
	const char *want = NULL;
	char key[32];

	if (len >= sizeof(key))
		len = sizeof(key) - 1;
	for (size_t i = 0; i < len; i++)
		key[i] = name[i] == '-' ? '_' : name[i];
	key[len] = 0;
#define WL_OPTION(nm, type, def, meta, help) \
	if (!strcmp(key, #nm)) { \
		if (!parse_##type(value, &o->nm, &want)) { \
			o->given |= 1u << WL_OPT_##nm; \
			return 0; \
		} \
	} else
#define WL_INTERNAL(nm, type, def, help) WL_OPTION(nm, type, def, NULL, help)
#include "options.inc"
#undef WL_OPTION
#undef WL_INTERNAL
	{
		snprintf(err, errlen, "unknown option '%s%.*s'", prefix, (int)len, name);
		return -1;
	}
	snprintf(err, errlen, "bad %s%.*s '%s' (%s)", prefix, (int)len, name, value, want);
	return -1;
}

int wl_options_parse(struct wl_options *o, char *buf, char *err, size_t errlen)
{
	char *r = buf;

	while (*r) {
		char *item = r, *w = r, *eq = NULL;

		/* One item, unescaped in place up to its unescaped ':'. */
		for (; *r && *r != ':'; r++) {
			if (*r == '\\' && (r[1] == ':' || r[1] == '\\'))
				r++;
			else if (*r == '=' && !eq)
				eq = w;
			*w++ = *r;
		}
		if (*r)
			r++;
		*w = 0;
		if (w == item)
			continue;               /* "a::b" or a trailing ':' */
		if (!eq) {
			snprintf(err, errlen, "'%s' is not name=value", item);
			return -1;
		}
		if (wl_option_set(o, item, (size_t)(eq - item), eq + 1, "", err, errlen) < 0)
			return -1;
	}
	return 0;
}

int wl_options_check(const struct wl_options *o, const char *prefix, char *err, size_t errlen)
{
	static const struct { unsigned bit; const char *name; } need_check[] = {
		{ 1u << WL_OPT_precise, "precise" },
		{ 1u << WL_OPT_align, "align" },
		{ 1u << WL_OPT_redzone, "redzone" },
		{ 1u << WL_OPT_leaks, "leaks" },
		{ 1u << WL_OPT_suppressions, "suppressions" },
		{ 1u << WL_OPT_gen_suppressions, "gen-suppressions" },
		{ 1u << WL_OPT_malloc_context_size, "malloc-context-size" },
	};

	if (o->heap && o->check) {
		snprintf(err, errlen, "choose one of %sheap and %scheck", prefix, prefix);
		return -1;
	}
	if ((o->given & 1u << WL_OPT_delivery) && !o->heap && !(o->check && o->precise)) {
		snprintf(err, errlen, "%sdelivery works only with %sheap or %scheck %sprecise",
			 prefix, prefix, prefix, prefix);
		return -1;
	}
	/* A count says how many accesses a line had, not which bytes: --precise needs those. */
	if ((o->given & 1u << WL_OPT_delivery) && o->delivery == WL_DELIVERY_COUNT && !o->heap) {
		snprintf(err, errlen, "%sdelivery=count works only with %sheap (%scheck %sprecise: "
			 "log or fault)", prefix, prefix, prefix, prefix);
		return -1;
	}
	for (size_t i = 0; i < sizeof(need_check) / sizeof(need_check[0]); i++)
		if ((o->given & need_check[i].bit) && !o->check) {
			/* Named as the command line spells it, or as the variable's key. */
			char name[32];
			size_t k = 0;
			for (const char *c = need_check[i].name; *c && k + 1 < sizeof(name); c++)
				name[k++] = *c == '-' && !*prefix ? '_' : *c;
			name[k] = 0;
			snprintf(err, errlen, "%s%s works only with %scheck", prefix, name, prefix);
			return -1;
		}
	return 0;
}

/* Appends s at *at (escaped when asked), keeping the count of what it needs. */
static void put(char *buf, size_t n, size_t *at, const char *s, int escape)
{
	for (; *s; s++) {
		if (escape && (*s == ':' || *s == '\\')) {
			if (*at + 1 < n)
				buf[*at] = '\\';
			++*at;
		}
		if (*at + 1 < n)
			buf[*at] = *s;
		++*at;
	}
}

size_t wl_options_format(const struct wl_options *o, char *buf, size_t n)
{
	struct wl_options d;
	size_t at = 0;

	wl_options_defaults(&d);
#define WL_OPTION(nm, type, def, meta, help) \
	if (strcmp(show_##type(&o->nm), show_##type(&d.nm))) { \
		if (at) \
			put(buf, n, &at, ":", 0); \
		put(buf, n, &at, #nm "=", 0); \
		put(buf, n, &at, show_##type(&o->nm), 1); \
	}
#define WL_INTERNAL(nm, type, def, help) WL_OPTION(nm, type, def, NULL, help)
#include "options.inc"
#undef WL_OPTION
#undef WL_INTERNAL
	if (n)
		buf[at < n ? at : n - 1] = 0;
	return at;
}
