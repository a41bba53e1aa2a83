/*
 * ulpt-watch, the command-line front end of watchlib: shared declarations of its parts
 * (ulpt-watch.c: options and running the program; spec.c: -w parsing; elfinfo.c: the program's
 * ELF checks and symbols; report.c: the agent's result file, the summary and the JSON report).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ULPT_WATCH_CLI_H
#define ULPT_WATCH_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "options.h"
#include "results.h"
#include "watchlib.h"

/* Access modes are watchlib's WL_READ and WL_WRITE bits (options.c parses and names them). */
#define MODE_R  WL_READ
#define MODE_W  WL_WRITE
#define MODE_RW WL_RW

/* Addresses at or above this are not user space (watchlib's limit). */
#define USER_ADDR_END WL_ADDR_END

/* One -w option: what the user typed, what it resolved to and what the agent reported. */
struct watch {
	const char *spec;           /* as typed: names the watch in the summary and the JSON */
	char *symbol;               /* NULL for 0xADDR specs */
	int have_len;               /* LEN given (else the symbol's st_size) */
	uint64_t addr;              /* absolute, or relative to the load base when relative */
	uint64_t len;
	unsigned mode;              /* MODE_* */
	int relative;               /* a symbol of an ET_DYN program: the agent adds the base */
	/* From the agent's "watch" record. */
	int reported;
	uint64_t rep_addr, rep_len, reads, writes;
};

struct frame {
	char kind;                  /* 'a' access, 'l' alloc, 'f' free */
	uint64_t pc;
	char *function;             /* NULL when the agent wrote "?" */
	char *location;
};

struct heap_error {
	char *kind, *access;
	char *found;                /* "access", or "free"/"realloc"/"exit": by the block's canary */
	uint64_t addr, size, ip, block, block_size;
	uint64_t objects;           /* a leak's blocks (1 for other kinds) */
	char *detail;               /* a mismatch's "malloc vs operator delete", or NULL */
	struct frame *frames;
	size_t nframes, cap;
};

struct report {
	size_t records;             /* well-formed records read; 0 = the agent left no report */
	char *backend;
	int have_heap;
	uint64_t heap_allocs, heap_reads, heap_writes;
	int have_stats;
	uint64_t faults, hits, false_faults, handler_ns;
	int have_suppressed;
	uint64_t suppressed;        /* reports a suppression rule matched */
	int have_leak_ns;
	uint64_t leak_ns;           /* the leak check's time at exit, its report included */
	struct heap_error *errors;
	size_t nerrors, cap;
};

struct options {
	struct watch *watches;
	size_t nwatches;
	struct wl_options set;      /* the agent's settings (watchlib/common/options.inc) */
	const char *json;
	int argc;                   /* the program's argv, argv[0] as typed */
	char **argv;
};

/* ulpt-watch.c */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n, size_t size);
char *xstrdup(const char *s);

/* spec.c */
void parse_spec(const char *spec, struct watch *w);

/* elfinfo.c: refuses (die) what cannot be run with the agent; resolves the symbols. */
void check_program_and_resolve(const char *path, struct watch *watches, size_t nwatches);

/* report.c */
void report_read(const char *path, struct report *rep, struct options *opt);
void report_summary(const struct report *rep, const struct options *opt, int status,
		    const struct rusage *ru);
int report_json(FILE *out, const char *outname, const struct report *rep,
		const struct options *opt, int status, const struct rusage *ru);
void report_free(struct report *rep);

#endif
