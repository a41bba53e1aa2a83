/*
 * ulpt-watch's settings (options.inc): their values, and the one parser and printer of
 * ULPT_WATCH_OPTIONS, shared by the tool (watchlib/cli) and its agent. Nothing here allocates:
 * the agent runs it before its allocator is up.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef WL_OPTIONS_H
#define WL_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#define WL_OPTIONS_ENV "ULPT_WATCH_OPTIONS"

/* The mode bits are watchlib's WL_READ and WL_WRITE. */
typedef int wl_opt_bool_t;
typedef unsigned wl_opt_mode_t;         /* 0: off */
typedef unsigned wl_opt_align_t;        /* 0: auto */
typedef unsigned wl_opt_exitcode_t;     /* 0: none */
typedef unsigned wl_opt_frames_t;       /* 0 to 255 */
typedef int wl_opt_redzone_t;           /* 0 line, 1 exact */
typedef int wl_opt_backend_t;           /* 0 auto, 1 ulpt, 2 mprotect */
typedef int wl_opt_delivery_t;          /* enum wl_delivery */
typedef int wl_opt_leaks_t;             /* 0 none, 1 definite, 2 all */
typedef const char *wl_opt_text_t;      /* "" when not set */

/* How --heap's (and --check --precise's) watched accesses reach the agent: counted per line
 * by the CPU (a count table; --heap only, where it is the default), recorded in the access
 * log, or each a fault. --check --precise takes the default as log. */
enum wl_delivery { WL_DELIVERY_COUNT, WL_DELIVERY_LOG, WL_DELIVERY_FAULT };

/* Each option's index: WL_OPT_name (the internal ones come last). */
enum wl_option_index {
#define WL_OPTION(name, ...) WL_OPT_##name,
#define WL_INTERNAL(name, ...) WL_OPT_##name,
#include "options.inc"
#undef WL_OPTION
#undef WL_INTERNAL
	WL_OPT_COUNT
};

struct wl_options {
#define WL_OPTION(name, type, def, meta, help) wl_opt_##type##_t name;
#define WL_INTERNAL(name, type, def, help) wl_opt_##type##_t name;
#include "options.inc"
#undef WL_OPTION
#undef WL_INTERNAL
	unsigned given;             /* bit WL_OPT_name for each option set */
};

/* Every option at its default. */
void wl_options_defaults(struct wl_options *o);

/* Sets one option from its text value; name is the key, len its length (the command line's
 * dashes taken as underscores). 0, or -1 with a one-line reason in err, naming the option
 * with prefix ("--" for the tool). */
int wl_option_set(struct wl_options *o, const char *name, size_t len, const char *value,
		  const char *prefix, char *err, size_t errlen);

/* Parses a ULPT_WATCH_OPTIONS string that buf holds, in place (the text values point into
 * it, unescaped). 0, or -1 with the reason in err. */
int wl_options_parse(struct wl_options *o, char *buf, char *err, size_t errlen);

/* The rules between options (heap or check, not both; precise, align and redzone need
 * check; delivery needs heap or check with precise, and count needs heap): 0, or -1 with the
 * reason in err, naming options with prefix ("--" for the tool). */
int wl_options_check(const struct wl_options *o, const char *prefix, char *err, size_t errlen);

/* Writes the options that differ from their defaults as a ULPT_WATCH_OPTIONS string; the
 * length it needs (as snprintf). */
size_t wl_options_format(const struct wl_options *o, char *buf, size_t n);

/* A number in decimal, or in hex after 0x: anything else (a sign, a blank, overflow) is an
 * error. 0, or -1. (Hand-rolled: strtoull takes signs and blanks, and wraps "-1".) */
int wl_parse_u64(const char *s, uint64_t *out);

/* The value names of each type, and "r", "w", "rw" for a mode. */
const char *wl_mode_name(unsigned mode);
int wl_parse_mode(const char *s, unsigned *mode);

#endif
