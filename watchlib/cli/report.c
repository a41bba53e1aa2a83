/*
 * ulpt-watch: reads the agent's result file (TAB-separated records, one per line; their table
 * is watchlib/common/results.inc) and reports it, as a summary on stderr or as JSON. The file comes from another program, so every line is
 * checked: a malformed one is skipped with a warning, an unknown record type is ignored (newer
 * agents may write more).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Room for one more element in *p, an array of n with room for *cap. */
static void grow(void *p, size_t n, size_t *cap, size_t size)
{
	if (n == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		*(void **)p = xrealloc(*(void **)p, *cap, size);
	}
}

static void add_error(struct report *rep, const struct wl_result_error *r)
{
	struct heap_error e = {
		.kind = xstrdup(r->kind), .access = xstrdup(r->access), .found = xstrdup(r->found),
		.addr = r->address, .size = r->size, .ip = r->ip, .block = r->block,
		.block_size = r->block_size, .objects = r->objects,
		.detail = r->pair[0] ? xstrdup(r->pair) : NULL,
	};

	grow(&rep->errors, rep->nerrors, &rep->cap, sizeof(*rep->errors));
	rep->errors[rep->nerrors++] = e;
}

/* A frame of e; -1 for one of no known stack. */
static int add_frame(struct heap_error *e, const struct wl_result_frame *r)
{
	static const char stacks[][8] = { "access", "alloc", "free" }, kinds[] = "alf";
	struct frame fr = { .pc = r->pc };

	for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++)
		if (!strcmp(r->stack, stacks[i]))
			fr.kind = kinds[i];
	if (!fr.kind)
		return -1;
	fr.function = strcmp(r->function, "?") ? xstrdup(r->function) : NULL;
	fr.location = strcmp(r->location, "?") ? xstrdup(r->location) : NULL;
	grow(&e->frames, e->nframes, &e->cap, sizeof(*e->frames));
	e->frames[e->nframes++] = fr;
	return 0;
}

/* Takes a record (results.inc): 0, or -1 for one that does not fit what came before. cur is
 * the error whose frames follow. */
static int take_record(const struct wl_result *r, struct report *rep, struct options *opt,
		       struct heap_error **cur)
{
	const struct wl_result_watch *wr = &r->u.watch;
	struct watch *w;

	switch (r->type) {
	case WL_RESULT_backend:
		free(rep->backend);
		rep->backend = xstrdup(r->u.backend.name);
		break;
	case WL_RESULT_watch:
		if (wr->index >= opt->nwatches)
			return -1;
		w = &opt->watches[wr->index];
		w->reported = 1;
		w->rep_addr = wr->address;
		w->rep_len = wr->length;
		w->reads = wr->reads;
		w->writes = wr->writes;
		break;
	case WL_RESULT_heap:
		rep->heap_allocs = r->u.heap.allocations;
		rep->heap_reads = r->u.heap.reads;
		rep->heap_writes = r->u.heap.writes;
		rep->have_heap = 1;
		break;
	case WL_RESULT_suppressed:
		rep->suppressed = r->u.suppressed.reports;
		rep->have_suppressed = 1;
		break;
	case WL_RESULT_leakcheck:
		rep->leak_ns = r->u.leakcheck.ns;
		rep->have_leak_ns = 1;
		break;
	case WL_RESULT_stats:
		rep->faults = r->u.stats.faults;
		rep->hits = r->u.stats.hits;
		rep->false_faults = r->u.stats.false_faults;
		rep->handler_ns = r->u.stats.handler_ns;
		rep->have_stats = 1;
		break;
	case WL_RESULT_error:
		add_error(rep, &r->u.error);
		*cur = &rep->errors[rep->nerrors - 1];
		break;
	case WL_RESULT_frame:
		return *cur ? add_frame(*cur, &r->u.frame) : -1;
	case WL_RESULT_end:
		if (!*cur)
			return -1;
		*cur = NULL;
		break;
	case WL_RESULT_COUNT:
		break;
	}
	return 0;
}

void report_read(const char *path, struct report *rep, struct options *opt)
{
	struct heap_error *cur = NULL;
	struct wl_result res;
	char *line = NULL, **f = NULL;
	size_t cap = 0, fcap = 0, lineno = 0;
	ssize_t n;
	FILE *in;

	memset(rep, 0, sizeof(*rep));
	in = fopen(path, "re");
	if (!in) {
		warn("warning: cannot read the agent's result file %s: %s", path, strerror(errno));
		return;
	}
	while ((n = getline(&line, &cap, in)) > 0) {
		size_t nf = 0;
		char *p = line;
		int r;

		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (!n)
			continue;
		if (strlen(line) != (size_t)n) {
			/* An embedded NUL: a torn or corrupt write. */
			warn("warning: agent result line %zu is malformed, skipped", lineno);
			continue;
		}
		while (p) {
			grow(&f, nf, &fcap, sizeof(*f));
			f[nf++] = strsep(&p, "\t");
		}
		r = wl_result_parse(f, nf, &res);
		/* A record after an "error" that is not one of its frames ends it implicitly. */
		if (res.type != WL_RESULT_frame && res.type != WL_RESULT_end)
			cur = NULL;
		if (r > 0)
			r = take_record(&res, rep, opt, &cur) ? -1 : 1;
		if (r < 0)
			warn("warning: agent result line %zu is malformed (%.20s), skipped", lineno,
			     f[0]);
		else if (r > 0)
			rep->records++;
	}
	free(f);
	free(line);
	fclose(in);
}

void report_free(struct report *rep)
{
	size_t i, j;

	for (i = 0; i < rep->nerrors; i++) {
		struct heap_error *e = &rep->errors[i];

		for (j = 0; j < e->nframes; j++) {
			free(e->frames[j].function);
			free(e->frames[j].location);
		}
		free(e->frames);
		free(e->kind);
		free(e->access);
		free(e->found);
		free(e->detail);
	}
	free(rep->errors);
	free(rep->backend);
	memset(rep, 0, sizeof(*rep));
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* "3 errors (2 heap-overflow, 1 use-after-free)": kinds in order of first appearance. */
static void summary_errors(const struct report *rep)
{
	const char **kinds = xcalloc(rep->nerrors + 1, sizeof(*kinds));
	size_t *counts = xcalloc(rep->nerrors + 1, sizeof(*counts));
	size_t i, j, nk = 0, len = 0;
	char *text = NULL;
	FILE *ms;

	for (i = 0; i < rep->nerrors; i++) {
		for (j = 0; j < nk && strcmp(kinds[j], rep->errors[i].kind); j++)
			;
		if (j == nk)
			kinds[nk++] = rep->errors[i].kind;
		counts[j]++;
	}
	/* Built in memory and printed by warn(), which makes the agent's text one safe line. */
	ms = open_memstream(&text, &len);
	if (!ms)
		die("out of memory");
	fprintf(ms, "%zu %s", rep->nerrors, plural(rep->nerrors, "error", "errors"));
	for (j = 0; j < nk; j++)
		fprintf(ms, "%s%zu %s", j ? ", " : " (", counts[j], kinds[j]);
	fprintf(ms, "%s", nk ? ")" : "");
	if (rep->suppressed)
		fprintf(ms, ", %" PRIu64 " suppressed", rep->suppressed);
	if (fclose(ms))
		die("out of memory");
	warn("%s", text);
	free(text);
	free(kinds);
	free(counts);
}

void report_summary(const struct report *rep, const struct options *opt, int status,
		    const struct rusage *ru)
{
	size_t i;

	if (rep->backend)
		warn("backend %s", rep->backend);
	for (i = 0; i < opt->nwatches; i++) {
		const struct watch *w = &opt->watches[i];

		if (w->reported)
			warn("watch %zu %s (0x%" PRIx64 ", %" PRIu64 " %s, %s): %" PRIu64 " %s, %"
			     PRIu64 " %s", i, w->spec, w->rep_addr, w->rep_len,
			     plural(w->rep_len, "byte", "bytes"), wl_mode_name(w->mode), w->reads,
			     plural(w->reads, "read", "reads"), w->writes,
			     plural(w->writes, "write", "writes"));
		else
			warn("watch %zu %s (%s0x%" PRIx64 ", %" PRIu64 " %s, %s): not reported", i,
			     w->spec, w->relative ? "base+" : "", w->addr, w->len,
			     plural(w->len, "byte", "bytes"), wl_mode_name(w->mode));
	}
	if (rep->have_heap)
		warn("heap: %" PRIu64 " %s watched, %" PRIu64 " %s, %" PRIu64 " %s",
		     rep->heap_allocs, plural(rep->heap_allocs, "allocation", "allocations"),
		     rep->heap_reads, plural(rep->heap_reads, "read", "reads"), rep->heap_writes,
		     plural(rep->heap_writes, "write", "writes"));
	else if (opt->set.heap && rep->records)
		warn("heap: not reported");
	if ((opt->set.check && rep->records) || rep->nerrors || rep->suppressed)
		summary_errors(rep);
	if (rep->have_stats)
		warn("%" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64 " false %s, handler %.3f ms",
		     rep->faults, plural(rep->faults, "fault", "faults"), rep->hits,
		     plural(rep->hits, "hit", "hits"), rep->false_faults,
		     plural(rep->false_faults, "fault", "faults"), (double)rep->handler_ns / 1e6);
	if (!rep->records)
		warn("the agent left no report");
	else if (!rep->have_stats)
		warn("the agent's report is incomplete");
	warn("peak memory %ld KiB, exit status %d", ru->ru_maxrss, status);
}

static json_object *hex(uint64_t v)
{
	char buf[24];           /* "0x" + 16 digits + NUL */

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

/* Length of the valid UTF-8 sequence at s, or 0 (overlong forms, surrogates and code points
 * above U+10FFFF are invalid too). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* JSON text must be UTF-8, and json-c passes bytes through: argv, specs and the agent's names
 * can be anything, so invalid bytes become U+FFFD. */
static json_object *jstr(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0, n;
	json_object *o;
	char *buf, *q;

	while (*p && (n = utf8_len(p)))
		p += n;
	if (!*p)
		return json_object_new_string(s);
	buf = q = xcalloc(3 * strlen(s) + 1, 1);
	for (p = (const unsigned char *)s; *p; p += n ? n : 1) {
		n = utf8_len(p);
		if (n) {
			memcpy(q, p, n);
			q += n;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
		}
	}
	len = (size_t)(q - buf);
	o = json_object_new_string_len(buf, (int)len);
	free(buf);
	return o;
}

static json_object *str_or_null(const char *s)
{
	return s ? jstr(s) : NULL;
}

static json_object *frames_json(const struct heap_error *e, char kind)
{
	json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < e->nframes; i++) {
		const struct frame *fr = &e->frames[i];
		json_object *o;

		if (fr->kind != kind)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "pc", hex(fr->pc));
		json_object_object_add(o, "function", str_or_null(fr->function));
		json_object_object_add(o, "location", str_or_null(fr->location));
		json_object_array_add(a, o);
	}
	return a;
}

/* A count the agent may not have reported: null then, so 0 always means "counted zero". */
static json_object *count(int have, uint64_t v)
{
	return have ? json_object_new_uint64(v) : NULL;
}

int report_json(FILE *out, const char *outname, const struct report *rep,
		const struct options *opt, int status, const struct rusage *ru)
{
	json_object *root = json_object_new_object(), *a;
	size_t i;
	int err;

	json_object_object_add(root, "backend", str_or_null(rep->backend));
	a = json_object_new_array();
	for (i = 0; i < (size_t)opt->argc; i++)
		json_object_array_add(a, jstr(opt->argv[i]));
	json_object_object_add(root, "program", a);
	json_object_object_add(root, "exit_status", json_object_new_int(status));

	a = json_object_new_array();
	for (i = 0; i < opt->nwatches; i++) {
		const struct watch *w = &opt->watches[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "spec", jstr(w->spec));
		json_object_object_add(o, "address", w->reported ? hex(w->rep_addr) :
					       w->relative ? NULL : hex(w->addr));
		json_object_object_add(o, "length",
				       json_object_new_uint64(w->reported ? w->rep_len : w->len));
		json_object_object_add(o, "mode", jstr(wl_mode_name(w->mode)));
		json_object_object_add(o, "reads", count(w->reported, w->reads));
		json_object_object_add(o, "writes", count(w->reported, w->writes));
		json_object_array_add(a, o);
	}
	json_object_object_add(root, "watches", a);

	if (opt->set.heap) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "allocations", count(rep->have_heap, rep->heap_allocs));
		json_object_object_add(o, "reads", count(rep->have_heap, rep->heap_reads));
		json_object_object_add(o, "writes", count(rep->have_heap, rep->heap_writes));
		json_object_object_add(root, "heap", o);
	}
	if (opt->set.check) {
		a = json_object_new_array();
		for (i = 0; i < rep->nerrors; i++) {
			const struct heap_error *e = &rep->errors[i];
			json_object *o = json_object_new_object(), *b = NULL;

			json_object_object_add(o, "kind", jstr(e->kind));
			json_object_object_add(o, "access", jstr(e->access));
			json_object_object_add(o, "found", jstr(e->found));
			json_object_object_add(o, "address", hex(e->addr));
			json_object_object_add(o, "size", json_object_new_uint64(e->size));
			json_object_object_add(o, "ip", hex(e->ip));
			if (e->block || e->block_size) {
				b = json_object_new_object();
				json_object_object_add(b, "address", hex(e->block));
				json_object_object_add(b, "size",
						       json_object_new_uint64(e->block_size));
			}
			json_object_object_add(o, "block", b);
			if (!strcmp(e->kind, "leak"))
				json_object_object_add(o, "objects", json_object_new_uint64(e->objects));
			if (e->detail)
				json_object_object_add(o, "pair", jstr(e->detail));
			json_object_object_add(o, "backtrace", frames_json(e, 'a'));
			json_object_object_add(o, "allocated", frames_json(e, 'l'));
			json_object_object_add(o, "freed", frames_json(e, 'f'));
			json_object_array_add(a, o);
		}
		json_object_object_add(root, "errors", a);
		json_object_object_add(root, "suppressed",
				       count(rep->have_suppressed, rep->suppressed));
		json_object_object_add(root, "leak_check_ns", count(rep->have_leak_ns, rep->leak_ns));
	}
	json_object_object_add(root, "false_faults", count(rep->have_stats, rep->false_faults));
	json_object_object_add(root, "faults", count(rep->have_stats, rep->faults));
	json_object_object_add(root, "hits", count(rep->have_stats, rep->hits));
	json_object_object_add(root, "handler_ns", count(rep->have_stats, rep->handler_ns));
	json_object_object_add(root, "peak_memory_kib", json_object_new_int64(ru->ru_maxrss));
	json_object_object_add(root, "agent_report", json_object_new_boolean(rep->records > 0));

	fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
					     JSON_C_TO_STRING_NOSLASHESCAPE), out);
	fputc('\n', out);
	json_object_put(root);
	err = ferror(out);
	if (fclose(out) || err) {
		warn("cannot write %s: %s", outname, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}
