/*
 * The agent's replacements of libc's wide-character functions (wchar.h: wmem*, wcs*, wcsdup,
 * swprintf, vswprintf) and of the multibyte converters (mbstowcs, wcstombs and their
 * restartable forms), for --check: strmem.c's checks (see its top), lengths counted in
 * wchar_t, ranges reported in bytes. Copies and fills are the agent's own memcpy, memmove and
 * memset (libc's; plain loops before the agent has started): glibc's wmemcpy is that memcpy.
 * The rest call the real function, looked up at the agent's start, or a plain loop before.
 * glibc's _FORTIFY_SOURCE entry points (__wmemcpy_chk, ...) are replaced as in strmem.c.
 * Built with -fno-builtin -fno-tree-loop-distribute-patterns, as strmem.c.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include "strmem.h"

#define W sizeof(wchar_t)

REAL(wmemset, wchar_t *, wchar_t *, wchar_t, size_t);
REAL(wmemcmp, int, const wchar_t *, const wchar_t *, size_t);
REAL(wmemchr, wchar_t *, const wchar_t *, wchar_t, size_t);
REAL(wcslen, size_t, const wchar_t *);
REAL(wcsnlen, size_t, const wchar_t *, size_t);
REAL(wcscmp, int, const wchar_t *, const wchar_t *);
REAL(wcsncmp, int, const wchar_t *, const wchar_t *, size_t);
REAL(wcschr, wchar_t *, const wchar_t *, wchar_t);
REAL(wcsrchr, wchar_t *, const wchar_t *, wchar_t);
/* glibc's fortified entry points, which the agent replaces too: with a room of ANY they are
 * the plain functions, and reach the conversion with the program's arguments. */
REAL(__vswprintf_chk, int, wchar_t *, size_t, int, size_t, const wchar_t *, va_list);
REAL(__mbsrtowcs_chk, size_t, wchar_t *, const char **, size_t, mbstate_t *, size_t);
REAL(__mbsnrtowcs_chk, size_t, wchar_t *, const char **, size_t, size_t, mbstate_t *, size_t);
REAL(__wcsrtombs_chk, size_t, char *, const wchar_t **, size_t, mbstate_t *, size_t);
REAL(__wcsnrtombs_chk, size_t, char *, const wchar_t **, size_t, size_t, mbstate_t *, size_t);

/* From strmem_init, once the agent has started. */
void wcsmem_init(void)
{
	GET(wmemset); GET(wmemcmp); GET(wmemchr); GET(wcslen); GET(wcsnlen); GET(wcscmp);
	GET(wcsncmp); GET(wcschr); GET(wcsrchr); GET(__vswprintf_chk); GET(__mbsrtowcs_chk);
	GET(__mbsnrtowcs_chk); GET(__wcsrtombs_chk); GET(__wcsnrtombs_chk);
}

/* wcsnlen and wcslen as the agent's accesses (as strmem.c's len_of). */
static size_t wnlen_of(const wchar_t *s, size_t max)
{
	size_t n = 0;

	if (real_wcsnlen)
		return AS_AGENT(real_wcsnlen(s, max));
	while (n < max && s[n])
		n++;
	return n;
}

static size_t wlen_of(const wchar_t *s)
{
	return real_wcslen ? AS_AGENT(real_wcslen(s)) : wnlen_of(s, (size_t)-1);
}

/* The wchar_t that wcscmp-like functions read: up to the first difference or terminator. */
static size_t wcmp_span(const wchar_t *a, const wchar_t *b, size_t n)
{
	size_t i = 0;

	in_agent++;
	while (i < n && a[i] && a[i] == b[i])
		i++;
	in_agent--;
	return i < n ? i + 1 : n;
}

static int wcmp(wchar_t a, wchar_t b)
{
	return a < b ? -1 : a > b;          /* glibc's: signed, -1 or 1 */
}

/* A copy of n wchar_t from s to d; a comparison reading n of both. */
static void check_copy(wchar_t *d, const wchar_t *s, size_t n, const char *fn, uintptr_t ip)
{
	check(s, n * W, WL_READ, fn, ip);
	check(d, n * W, WL_WRITE, fn, ip);
}

static void check_cmp(const wchar_t *a, const wchar_t *b, size_t n, const char *fn,
		      uintptr_t ip)
{
	check(a, n * W, WL_READ, fn, ip);
	check(b, n * W, WL_READ, fn, ip);
}

/*
 * After a check the copy runs as the agent's access (its faults are reported already);
 * unchecked (--heap) it stays the program's, counted. chk: checking() at the call.
 */
static void copy(int chk, void *d, const void *s, size_t bytes)
{
	in_agent += chk;
	memcpy(d, s, bytes);
	in_agent -= chk;
}

/* wmemcpy and wmemmove (move: may overlap). room: the destination's, in wchar_t. */
BOTH wchar_t *wmemcpy_at(wchar_t *d, const wchar_t *s, size_t n, int move, size_t room,
			const char *fn, uintptr_t ip)
{
	int chk = checking();

	if (chk)
		check_copy(d, s, n, fn, ip);
	fortify(n, room);
	in_agent += chk;
	if (move)
		memmove(d, s, n * W);
	else
		memcpy(d, s, n * W);
	in_agent -= chk;
	return d;
}

wchar_t *wmemcpy(wchar_t *d, const wchar_t *s, size_t n)
{
	return wmemcpy_at(d, s, n, 0, ANY, "wmemcpy", CALLER);
}

wchar_t *__wmemcpy_chk(wchar_t *d, const wchar_t *s, size_t n, size_t room)
{
	return wmemcpy_at(d, s, n, 0, room, "__wmemcpy_chk", CALLER);
}

wchar_t *wmemmove(wchar_t *d, const wchar_t *s, size_t n)
{
	return wmemcpy_at(d, s, n, 1, ANY, "wmemmove", CALLER);
}

wchar_t *__wmemmove_chk(wchar_t *d, const wchar_t *s, size_t n, size_t room)
{
	return wmemcpy_at(d, s, n, 1, room, "__wmemmove_chk", CALLER);
}

BOTH wchar_t *wmemset_at(wchar_t *d, wchar_t c, size_t n, size_t room, const char *fn,
			uintptr_t ip)
{
	if (checking()) {
		check(d, n * W, WL_WRITE, fn, ip);
		fortify(n, room);
		return AS_AGENT(real_wmemset(d, c, n));
	}
	fortify(n, room);
	if (real_wmemset)
		return real_wmemset(d, c, n);
	for (size_t i = 0; i < n; i++)
		d[i] = c;
	return d;
}

wchar_t *wmemset(wchar_t *d, wchar_t c, size_t n)
{
	return wmemset_at(d, c, n, ANY, "wmemset", CALLER);
}

wchar_t *__wmemset_chk(wchar_t *d, wchar_t c, size_t n, size_t room)
{
	return wmemset_at(d, c, n, room, "__wmemset_chk", CALLER);
}

int wmemcmp(const wchar_t *a, const wchar_t *b, size_t n)
{
	if (checking()) {
		check_cmp(a, b, n, "wmemcmp", CALLER);       /* both whole, as memcmp */
		return AS_AGENT(real_wmemcmp(a, b, n));
	}
	if (real_wmemcmp)
		return real_wmemcmp(a, b, n);
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return wcmp(a[i], b[i]);
	return 0;
}

wchar_t *wmemchr(const wchar_t *s, wchar_t c, size_t n)
{
	if (checking()) {
		const wchar_t *r = AS_AGENT(real_wmemchr(s, c, n));
		check(s, (r ? (size_t)(r - s) + 1 : n) * W, WL_READ, "wmemchr", CALLER);
		return (wchar_t *)r;
	}
	if (real_wmemchr)
		return real_wmemchr(s, c, n);
	for (size_t i = 0; i < n; i++)
		if (s[i] == c)
			return (wchar_t *)s + i;
	return NULL;
}

size_t wcslen(const wchar_t *s)
{
	size_t n = wlen_of(s);

	if (checking())
		check(s, (n + 1) * W, WL_READ, "wcslen", CALLER);
	return n;
}

size_t wcsnlen(const wchar_t *s, size_t max)
{
	size_t n = wnlen_of(s, max);

	if (checking())
		check(s, nread(n, max) * W, WL_READ, "wcsnlen", CALLER);
	return n;
}

BOTH wchar_t *wcscpy_at(wchar_t *d, const wchar_t *s, size_t room, const char *fn, uintptr_t ip)
{
	size_t n = wlen_of(s) + 1;
	int chk = checking();

	if (chk)
		check_copy(d, s, n, fn, ip);
	fortify(n, room);
	copy(chk, d, s, n * W);
	return d;
}

wchar_t *wcscpy(wchar_t *d, const wchar_t *s)
{
	return wcscpy_at(d, s, ANY, "wcscpy", CALLER);
}

wchar_t *__wcscpy_chk(wchar_t *d, const wchar_t *s, size_t room)
{
	return wcscpy_at(d, s, room, "__wcscpy_chk", CALLER);
}

BOTH wchar_t *wcsncpy_at(wchar_t *d, const wchar_t *s, size_t n, size_t room, const char *fn,
			uintptr_t ip)
{
	size_t l = wnlen_of(s, n);
	int chk = checking();

	if (chk) {
		check(s, nread(l, n) * W, WL_READ, fn, ip);
		check(d, n * W, WL_WRITE, fn, ip);     /* the zeroes after the string too */
	}
	fortify(n, room);
	copy(chk, d, s, l * W);
	in_agent += chk;
	memset(d + l, 0, (n - l) * W);
	in_agent -= chk;
	return d;
}

wchar_t *wcsncpy(wchar_t *d, const wchar_t *s, size_t n)
{
	return wcsncpy_at(d, s, n, ANY, "wcsncpy", CALLER);
}

wchar_t *__wcsncpy_chk(wchar_t *d, const wchar_t *s, size_t n, size_t room)
{
	return wcsncpy_at(d, s, n, room, "__wcsncpy_chk", CALLER);
}

/* wcscat and wcsncat: d's string (dl long) read, sl wchar_t of s and a terminator appended
 * to it, sread wchar_t of s read. Then the append, terminator last. */
static wchar_t *cat(wchar_t *d, size_t dl, const wchar_t *s, size_t sl, size_t sread,
		    size_t room, const char *fn, uintptr_t ip)
{
	int chk = checking();

	if (chk) {
		check(d, (dl + 1) * W, WL_READ, fn, ip);
		check(s, sread * W, WL_READ, fn, ip);
		check(d + dl, (sl + 1) * W, WL_WRITE, fn, ip);
	}
	fortify(dl + sl + 1, room);
	copy(chk, d + dl, s, sl * W);
	in_agent += chk;
	d[dl + sl] = 0;
	in_agent -= chk;
	return d;
}

wchar_t *wcscat(wchar_t *d, const wchar_t *s)
{
	size_t sl = wlen_of(s);

	return cat(d, wlen_of(d), s, sl, sl + 1, ANY, "wcscat", CALLER);
}

wchar_t *__wcscat_chk(wchar_t *d, const wchar_t *s, size_t room)
{
	size_t sl = wlen_of(s);

	return cat(d, wlen_of(d), s, sl, sl + 1, room, "__wcscat_chk", CALLER);
}

wchar_t *wcsncat(wchar_t *d, const wchar_t *s, size_t n)
{
	size_t sl = wnlen_of(s, n);

	return cat(d, wlen_of(d), s, sl, nread(sl, n), ANY, "wcsncat", CALLER);
}

wchar_t *__wcsncat_chk(wchar_t *d, const wchar_t *s, size_t n, size_t room)
{
	size_t sl = wnlen_of(s, n);

	return cat(d, wlen_of(d), s, sl, nread(sl, n), room, "__wcsncat_chk", CALLER);
}

int wcscmp(const wchar_t *a, const wchar_t *b)
{
	if (checking()) {
		check_cmp(a, b, wcmp_span(a, b, (size_t)-1), "wcscmp", CALLER);
		return AS_AGENT(real_wcscmp(a, b));
	}
	if (real_wcscmp)
		return real_wcscmp(a, b);
	size_t i = wcmp_span(a, b, (size_t)-1) - 1;
	return wcmp(a[i], b[i]);
}

int wcsncmp(const wchar_t *a, const wchar_t *b, size_t n)
{
	if (checking()) {
		check_cmp(a, b, wcmp_span(a, b, n), "wcsncmp", CALLER);
		return AS_AGENT(real_wcsncmp(a, b, n));
	}
	if (real_wcsncmp)
		return real_wcsncmp(a, b, n);
	size_t i = n ? wcmp_span(a, b, n) - 1 : 0;
	return n ? wcmp(a[i], b[i]) : 0;
}

wchar_t *wcschr(const wchar_t *s, wchar_t c)
{
	if (checking()) {
		const wchar_t *r = AS_AGENT(real_wcschr(s, c));
		check(s, ((r ? (size_t)(r - s) : wlen_of(s)) + 1) * W, WL_READ, "wcschr", CALLER);
		return (wchar_t *)r;
	}
	if (real_wcschr)
		return real_wcschr(s, c);
	for (;; s++) {
		if (*s == c)
			return (wchar_t *)s;
		if (!*s)
			return NULL;
	}
}

wchar_t *wcsrchr(const wchar_t *s, wchar_t c)
{
	if (checking()) {
		check(s, (wlen_of(s) + 1) * W, WL_READ, "wcsrchr", CALLER);
		return AS_AGENT(real_wcsrchr(s, c));
	}
	if (real_wcsrchr)
		return real_wcsrchr(s, c);
	for (size_t i = wnlen_of(s, (size_t)-1) + 1; i-- > 0;)
		if (s[i] == c)
			return (wchar_t *)s + i;
	return NULL;
}

/* The copy is the agent's malloc's block: released by free, as libc's wcsdup. */
wchar_t *wcsdup(const wchar_t *s)
{
	size_t n = wlen_of(s) + 1;
	int chk = checking();
	wchar_t *d;

	if (chk)
		check(s, n * W, WL_READ, "wcsdup", CALLER);
	d = malloc(n * W);
	if (d)
		copy(chk, d, s, n * W);
	return d;
}

/* --- swprintf's buffer and the multibyte converters -------------------------------------
 * Through glibc's real fortified entry points, looked up at the start (or at a first call
 * before it). */

/* As snprintf's: the whole buffer the caller gives, n wchar_t; glibc's flag and abort kept. */
static int wprint(wchar_t *s, size_t n, int flag, size_t room, const wchar_t *fmt, va_list ap,
		  const char *fn, uintptr_t ip)
{
	int chk = checking(), r;

	if (chk && n)
		check(s, n * W, WL_WRITE, fn, ip);
	in_agent += chk;
	r = REAL_NOW(__vswprintf_chk)(s, n, flag, room, fmt, ap);
	in_agent -= chk;
	return r;
}

int vswprintf(wchar_t *s, size_t n, const wchar_t *fmt, va_list ap)
{
	return wprint(s, n, 0, ANY, fmt, ap, "vswprintf", CALLER);
}

int __vswprintf_chk(wchar_t *s, size_t n, int flag, size_t room, const wchar_t *fmt, va_list ap)
{
	return wprint(s, n, flag, room, fmt, ap, "__vswprintf_chk", CALLER);
}

int swprintf(wchar_t *s, size_t n, const wchar_t *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = wprint(s, n, 0, ANY, fmt, ap, "swprintf", CALLER);
	va_end(ap);
	return r;
}

int __swprintf_chk(wchar_t *s, size_t n, int flag, size_t room, const wchar_t *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = wprint(s, n, flag, room, fmt, ap, "__swprintf_chk", CALLER);
	va_end(ap);
	return r;
}

/* The converters, by what they take: a narrow or wide source, and a bound on it or none. */
enum conv { MBS, MBSN, WCS, WCSN };

/* The real one: src and nsrc (source elements, ANY for no bound) as given to the program's. */
static size_t convert(enum conv f, void *d, const void **src, size_t nsrc, size_t n,
		      mbstate_t *ps)
{
	const char *m = *src;
	const wchar_t *w = *src;
	size_t r = 0;

	switch (f) {
	case MBS: r = REAL_NOW(__mbsrtowcs_chk)(d, &m, n, ps, ANY); break;
	case MBSN: r = REAL_NOW(__mbsnrtowcs_chk)(d, &m, nsrc, n, ps, ANY); break;
	case WCS: r = REAL_NOW(__wcsrtombs_chk)(d, &w, n, ps, ANY); break;
	case WCSN: r = REAL_NOW(__wcsnrtombs_chk)(d, &w, nsrc, n, ps, ANY); break;
	}
	*src = f >= WCS ? (const void *)w : (const void *)m;
	return r;
}

/* The source elements before where a count (no destination) stopped at an invalid
 * character, which it does not tell: the conversion again, into a scratch buffer piece by
 * piece, from the state it started with. */
static size_t count_stop(int wide, const void *s, size_t nsrc, mbstate_t *st)
{
	wchar_t buf[64];
	size_t ss = wide ? W : 1, done = 0, r;
	const void *q = s, *at;

	do {
		at = q;
		r = convert(wide ? WCSN : MBSN, buf, &q, nsrc - done, wide ? sizeof(buf) : 64, st);
		if (q)
			done = (size_t)((const char *)q - (const char *)s) / ss;
	} while (r != ANY && q && q != at);
	return done;
}

/*
 * The program's call, checked once it has run (as memchr is): where it stopped is what it
 * read and wrote (a character that does not fit in d ends it early; the locale gives the
 * sizes). An invalid character ends it too: read, after a prefix counted again from the
 * state it started with.
 */
static size_t conv_checked(enum conv f, void *d, const void **src, size_t nsrc, size_t n,
			   mbstate_t *ps, const char *fn, uintptr_t ip)
{
	const void *s = *src;
	mbstate_t st0 = {0};
	int wide = f >= WCS;
	size_t ss = wide ? W : 1, ds = wide ? 1 : W, in = 0, out = 0, r;

	if (ps)
		st0 = *ps;
	r = AS_AGENT(convert(f, d, src, nsrc, n, ps));
	in_agent++;
	if (!d && r == ANY) {   /* a count: src not moved */
		in = count_stop(wide, s, nsrc, &st0) + 1;
	} else if (!d) {
		in = nread(wide ? wnlen_of(s, nsrc) : strnlen(s, nsrc), nsrc);
	} else if (!*src) {     /* its terminator converted */
		in = (wide ? wlen_of(s) : strlen(s)) + 1;
		out = r + 1;
	} else {                /* where it stopped: d full, nsrc taken, or invalid */
		in = (size_t)((const char *)*src - (const char *)s) / ss;
		out = r;
		if (r == ANY) {
			const void *q = s;
			out = convert(wide ? WCSN : MBSN, NULL, &q, in, 0, &st0);
			in++;
		}
	}
	in_agent--;
	check(s, in * ss, WL_READ, fn, ip);
	check(d, out * ds, WL_WRITE, fn, ip);
	return r;
}

/* Each converter: checked, or the real one as the program's. */
#define CONVERT(f, d, s, nsrc, n, ps, fn) ({ \
	const void *s_ = *(s); \
	size_t r_ = checking() ? conv_checked(f, d, &s_, nsrc, n, ps, fn, CALLER) : \
			       convert(f, d, &s_, nsrc, n, ps); \
	*(s) = s_; \
	r_; })

/* Each converter and its fortified entry point: glibc's abort when the destination has less
 * room than n, before anything is converted (how far the conversion would write is not
 * known before it runs), as glibc's. */
size_t mbsrtowcs(wchar_t *d, const char **s, size_t n, mbstate_t *ps)
{
	return CONVERT(MBS, d, s, ANY, n, ps, "mbsrtowcs");
}

size_t __mbsrtowcs_chk(wchar_t *d, const char **s, size_t n, mbstate_t *ps, size_t room)
{
	fortify(n, room);
	return CONVERT(MBS, d, s, ANY, n, ps, "__mbsrtowcs_chk");
}

size_t mbsnrtowcs(wchar_t *d, const char **s, size_t nms, size_t n, mbstate_t *ps)
{
	return CONVERT(MBSN, d, s, nms, n, ps, "mbsnrtowcs");
}

size_t __mbsnrtowcs_chk(wchar_t *d, const char **s, size_t nms, size_t n, mbstate_t *ps,
			size_t room)
{
	fortify(n, room);
	return CONVERT(MBSN, d, s, nms, n, ps, "__mbsnrtowcs_chk");
}

size_t wcsrtombs(char *d, const wchar_t **s, size_t n, mbstate_t *ps)
{
	return CONVERT(WCS, d, s, ANY, n, ps, "wcsrtombs");
}

size_t __wcsrtombs_chk(char *d, const wchar_t **s, size_t n, mbstate_t *ps, size_t room)
{
	fortify(n, room);
	return CONVERT(WCS, d, s, ANY, n, ps, "__wcsrtombs_chk");
}

size_t wcsnrtombs(char *d, const wchar_t **s, size_t nwc, size_t n, mbstate_t *ps)
{
	return CONVERT(WCSN, d, s, nwc, n, ps, "wcsnrtombs");
}

size_t __wcsnrtombs_chk(char *d, const wchar_t **s, size_t nwc, size_t n, mbstate_t *ps,
			size_t room)
{
	fortify(n, room);
	return CONVERT(WCSN, d, s, nwc, n, ps, "__wcsnrtombs_chk");
}

/* A fresh state each call, as glibc's. */
size_t mbstowcs(wchar_t *d, const char *s, size_t n)
{
	mbstate_t st = {0};

	return CONVERT(MBS, d, &s, ANY, n, &st, "mbstowcs");
}

size_t __mbstowcs_chk(wchar_t *d, const char *s, size_t n, size_t room)
{
	mbstate_t st = {0};

	fortify(n, room);
	return CONVERT(MBS, d, &s, ANY, n, &st, "__mbstowcs_chk");
}

size_t wcstombs(char *d, const wchar_t *s, size_t n)
{
	mbstate_t st = {0};

	return CONVERT(WCS, d, &s, ANY, n, &st, "wcstombs");
}

size_t __wcstombs_chk(char *d, const wchar_t *s, size_t n, size_t room)
{
	mbstate_t st = {0};

	fortify(n, room);
	return CONVERT(WCS, d, &s, ANY, n, &st, "__wcstombs_chk");
}
