/*
 * ulpt-watch: reads the agent's result file (TAB-separated records, one per line) and reports
 * it, as a summary on stderr or as JSON. The file comes from another program, so every line is
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

static int parse_fields(char **f, size_t n, uint64_t **out)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (parse_u64(f[i], out[i]))
			return -1;
	return 0;
}

/* Returns 1 for a record taken, 0 for an ignored (unknown) one, -1 for a malformed one. */
static int take_record(char **f, size_t nf, struct report *rep, struct options *opt,
		       struct heap_error **cur)
{
	const char *t = f[0];

	if (!strcmp(t, "backend")) {
		if (nf < 2 || !f[1][0])
			return -1;
		free(rep->backend);
		rep->backend = xstrdup(f[1]);
	} else if (!strcmp(t, "watch")) {
		uint64_t idx, addr, len, reads, writes;
		struct watch *w;

		if (nf < 6 || parse_fields(f + 1, 5, (uint64_t *[]){&idx, &addr, &len, &reads,
								      &writes}))
			return -1;
		if (idx >= opt->nwatches)
			return -1;
		w = &opt->watches[idx];
		w->reported = 1;
		w->rep_addr = addr;
		w->rep_len = len;
		w->reads = reads;
		w->writes = writes;
	} else if (!strcmp(t, "heap")) {
		if (nf < 4 || parse_fields(f + 1, 3, (uint64_t *[]){&rep->heap_allocs,
								      &rep->heap_reads,
								      &rep->heap_writes}))
			return -1;
		rep->have_heap = 1;
	} else if (!strcmp(t, "suppressed")) {
		if (nf < 2 || parse_u64(f[1], &rep->suppressed))
			return -1;
		rep->have_suppressed = 1;
	} else if (!strcmp(t, "leakcheck")) {
		if (nf < 2 || parse_u64(f[1], &rep->leak_ns))
			return -1;
		rep->have_leak_ns = 1;
	} else if (!strcmp(t, "stats")) {
		if (nf < 5 || parse_fields(f + 1, 4, (uint64_t *[]){&rep->faults, &rep->hits,
								      &rep->false_faults,
								      &rep->handler_ns}))
			return -1;
		rep->have_stats = 1;
	} else if (!strcmp(t, "error")) {
		struct heap_error e = {0};

		if (nf < 8 || !f[1][0] || !f[2][0] ||
		    parse_fields(f + 3, 5, (uint64_t *[]){&e.addr, &e.size, &e.ip, &e.block,
							   &e.block_size}))
			return -1;
		e.kind = xstrdup(f[1]);
		e.access = xstrdup(f[2]);
		e.found = xstrdup(nf > 8 && f[8][0] ? f[8] : "access");
		e.objects = 1;
		if (nf > 9 && parse_u64(f[9], &e.objects))
			return -1;
		e.detail = nf > 10 && f[10][0] ? xstrdup(f[10]) : NULL;
		if (rep->nerrors == rep->cap) {
			rep->cap = rep->cap ? 2 * rep->cap : 8;
			rep->errors = xrealloc(rep->errors, rep->cap, sizeof(*rep->errors));
		}
		rep->errors[rep->nerrors] = e;
		*cur = &rep->errors[rep->nerrors++];
	} else if (!strcmp(t, "frame")) {
		struct heap_error *e = *cur;
		struct frame fr = {0};

		if (!e || nf < 5 || parse_u64(f[2], &fr.pc))
			return -1;
		if (!strcmp(f[1], "access"))
			fr.kind = 'a';
		else if (!strcmp(f[1], "alloc"))
			fr.kind = 'l';
		else if (!strcmp(f[1], "free"))
			fr.kind = 'f';
		else
			return -1;
		fr.function = strcmp(f[3], "?") && f[3][0] ? xstrdup(f[3]) : NULL;
		fr.location = strcmp(f[4], "?") && f[4][0] ? xstrdup(f[4]) : NULL;
		if (e->nframes == e->cap) {
			e->cap = e->cap ? 2 * e->cap : 8;
			e->frames = xrealloc(e->frames, e->cap, sizeof(*e->frames));
		}
		e->frames[e->nframes++] = fr;
	} else if (!strcmp(t, "end")) {
		if (!*cur)
			return -1;
		*cur = NULL;
	} else {
		return 0;
	}
	return 1;
}

void report_read(const char *path, struct report *rep, struct options *opt)
{
	struct heap_error *cur = NULL;
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
			if (nf == fcap) {
				fcap = fcap ? 2 * fcap : 16;
				f = xrealloc(f, fcap, sizeof(*f));
			}
			f[nf++] = strsep(&p, "\t");
		}
		/* A record after an "error" that is not one of its frames ends it implicitly. */
		if (cur && strcmp(f[0], "frame") && strcmp(f[0], "end"))
			cur = NULL;
		r = take_record(f, nf, rep, opt, &cur);
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
