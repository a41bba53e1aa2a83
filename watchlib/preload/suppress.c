/*
 * Suppressions (the suppressions option), in the style of ASan's and LeakSanitizer's files:
 * one rule per line, KIND:PATTERN, where KIND is a report's kind (heap-overflow,
 * use-after-free, double-free, invalid-free, alloc-dealloc-mismatch,
 * bad-malloc_usable_size, or leak for direct and indirect leaks) and PATTERN matches a frame
 * of the report (any of its stacks) by its function's name, its library or program's path,
 * or its source file. '*' matches any run of characters; a PATTERN matches anywhere in the
 * name unless it starts with '^' (at the start) or ends with '$' (at the end), as
 * LeakSanitizer's. '#' starts a comment; blank lines are skipped. A bad line stops the
 * program at its start with one line naming it, and exit status 2.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "agent.h"

#define MAX_RULES 1024

static struct rule {
	char kind[32];
	char *pat;
} rules[MAX_RULES];
static int nrules;

static const char *const kinds[] = {
	"heap-overflow", "use-after-free", "double-free", "invalid-free",
	"alloc-dealloc-mismatch", "bad-malloc_usable_size", "leak",
};

/* '*' globbing of p against all of s. */
static int glob(const char *p, const char *s)
{
	for (; *p; p++, s++) {
		if (*p == '*') {
			while (p[1] == '*')
				p++;
			if (!p[1])
				return 1;
			for (; *s; s++)
				if (glob(p + 1, s))
					return 1;
			return glob(p + 1, s);
		}
		if (*s != *p)
			return 0;
	}
	return !*s;
}

/* LeakSanitizer's TemplateMatch: unanchored unless '^' or '$' says so. */
static int pattern_matches(const char *pat, const char *s)
{
	char buf[600];
	size_t n = strlen(pat);
	int start = pat[0] == '^', end = n > (size_t)start && pat[n - 1] == '$';

	if (!s || !*s)
		return 0;
	snprintf(buf, sizeof(buf), "%s%.*s%s", start ? "" : "*", (int)(n - start - end),
		 pat + start, end ? "" : "*");
	return glob(buf, s);
}

int suppress_match(const char *kind, const char *const *names, int n)
{
	for (int r = 0; r < nrules; r++) {
		if (strcmp(rules[r].kind, kind))
			continue;
		for (int i = 0; i < n; i++)
			if (pattern_matches(rules[r].pat, names[i]))
				return 1;
	}
	return 0;
}

/* Reads the file's rules; 0, or -1 with the reason in err. */
int suppress_load(const char *path, char *err, size_t errlen)
{
	char *text = agent_read_file(path), *line, *next;
	int lineno = 0;

	if (!text) {
		snprintf(err, errlen, "cannot read the suppressions file %s: %s", path,
			 strerror(errno));
		return -1;
	}
	for (line = text; line; line = next) {
		char *colon, *e;
		size_t k;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		if ((e = strchr(line, '#')))
			*e = 0;
		while (*line == ' ' || *line == '\t' || *line == '\r')
			line++;
		for (e = line + strlen(line); e > line && (e[-1] == ' ' || e[-1] == '\t' ||
							 e[-1] == '\r'); e--)
			e[-1] = 0;
		if (!*line)
			continue;
		colon = strchr(line, ':');
		for (k = 0; colon && k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if ((size_t)(colon - line) == strlen(kinds[k]) &&
			    !strncmp(line, kinds[k], strlen(kinds[k])))
				break;
		if (!colon || k == sizeof(kinds) / sizeof(kinds[0]) || !colon[1]) {
			snprintf(err, errlen, "%s:%d: not a rule KIND:PATTERN with a known kind: %.60s",
				 path, lineno, line);
			return -1;
		}
		if (nrules == MAX_RULES) {
			snprintf(err, errlen, "%s:%d: more than %d rules", path, lineno, MAX_RULES);
			return -1;
		}
		snprintf(rules[nrules].kind, sizeof(rules[0].kind), "%s", kinds[k]);
		rules[nrules++].pat = colon + 1;        /* text stays allocated */
	}
	return 0;
}
