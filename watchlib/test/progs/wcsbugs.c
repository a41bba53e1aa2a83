/*
 * wcsbugs CASE: strbugs.c for the wide-character functions and the multibyte converters
 * (watchlib/preload/wcsmem.c): one call that reaches one wchar_t (or, for a narrow buffer,
 * one byte) outside a heap block. Each case prints "wcsbugs: CASE fn=FN block=B size=N
 * addr=A line=L" on stderr (N in bytes, A the first byte outside the block), then makes the
 * call at line L; --check must report one heap-overflow at A, "in FN", from main at line L.
 * Run natively, every case exits 0. Cases ending in "-under" start one element before their
 * block; "-count" ones convert with no destination (a count) from an unterminated source;
 * "-invalid" stops at a character the C locale cannot convert, after an overflowing prefix.
 * "clean" makes every call within its blocks, over strings of every length 0..99 in blocks
 * of exactly their size (and conversions that stop early, in UTF-8 too): no error.
 */
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static volatile size_t sink;

static int vsw(wchar_t *s, size_t n, const wchar_t *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vswprintf(s, n, fmt, ap);
	va_end(ap);
	return r;
}

static wchar_t *wdup(const wchar_t *s, size_t n)     /* n wchar_t, no terminator added */
{
	return memcpy(malloc(n * sizeof(wchar_t)), s, n * sizeof(wchar_t));
}

static size_t mbs(wchar_t *d, const char *s, size_t n, size_t nms, int restartable)
{
	mbstate_t st;

	memset(&st, 0, sizeof(st));
	return restartable > 1 ? mbsnrtowcs(d, &s, nms, n, &st) :
	       restartable ? mbsrtowcs(d, &s, n, &st) : mbstowcs(d, s, n);
}

static size_t wcs(char *d, const wchar_t *s, size_t n, size_t nwc, int restartable)
{
	mbstate_t st;

	memset(&st, 0, sizeof(st));
	return restartable > 1 ? wcsnrtombs(d, &s, nwc, n, &st) :
	       restartable ? wcsrtombs(d, &s, n, &st) : wcstombs(d, s, n);
}

/* Every function within blocks of exactly a string's size, for lengths 0..99. */
static void sweep(void)
{
	wchar_t src[100], *a, *b, *d;
	char m[512];

	for (size_t i = 0; i < 100; i++)
		src[i] = L'a' + (wchar_t)(i % 26);
	for (size_t n = 0; n < 100; n++) {
		wchar_t last = n ? src[n - 1] : 0;
		a = wdup(src, n + 1);
		b = wdup(src, n + 1);
		d = malloc((n + 1) * sizeof(wchar_t));
		a[n] = b[n] = 0;
		sink += wcslen(a) + wcsnlen(a, n + 1) + (size_t)wcscmp(a, b) +
			(size_t)wcsncmp(a, b, n + 5) + (size_t)wcschr(a, L'z' + 1) +
			(size_t)wcschr(a, 0) + (size_t)wcsrchr(a, last) +
			(size_t)wmemchr(a, L'#', n + 1) + (size_t)wmemcmp(a, b, n + 1);
		wcscpy(d, a);
		wcsncpy(d, a, n + 1);
		wmemcpy(d, a, n + 1);
		wmemmove(d, d, n + 1);
		wmemset(d, L'x', n);
		d[0] = 0;
		wcscat(d, a);
		d[0] = 0;
		wcsncat(d, a, n);
		free(wcsdup(a));
		sink += wcstombs(m, a, n + 1) + wcs(m, a, n + 1, n + 1, 1) + wcs(m, a, n, n, 2) +
			wcs(NULL, a, 0, n + 1, 2) + mbs(d, m, n + 1, n + 1, 0) + mbs(NULL, m, 0, n + 1, 1);
		swprintf(d, n + 1, L"%ls", a);
		vsw(d, n + 1, L"%ls", a);
		free(a);
		free(b);
		free(d);
	}
	/* Stopped by an invalid character, the last element of its block (no terminator). */
	char *x = memcpy(malloc(3), "ab\xff", 3);
	wchar_t *y = wdup(L"ab\x100", 3);
	d = malloc(3 * sizeof(wchar_t));
	sink += mbstowcs(NULL, x, 0) + mbstowcs(d, x, 3) + wcstombs(NULL, y, 0) + wcstombs(m, y, 3) +
		mbs(NULL, x, 0, 3, 2) + wcs(NULL, y, 0, 3, 2);
	free(x);
	free(y);
	free(d);
	/* UTF-8: a character that does not fit, or is cut by the bound, ends a conversion. */
	if (setlocale(LC_ALL, "C.UTF-8")) {
		char *e = memcpy(malloc(4), "h\xc3\xa9", 4), *o = malloc(3);       /* "hé" */
		wchar_t *z = wdup(L"h\xe9", 3);
		d = malloc(2 * sizeof(wchar_t));
		sink += wcs(o, z, 2, 2, 2) + wcs(o, z, 2, 0, 0) + wcs(o, z, 3, 0, 1) +
			mbs(d, e, 2, 3, 2) + mbs(d, e, 2, 2, 2) + mbs(d, e, 2, 0, 0) + mbs(NULL, e, 0, 0, 1);
		free(e);
		free(o);
		free(z);
		free(d);
		setlocale(LC_ALL, "C");
	}
}

/* The restartable converters' source pointer (the one main has) set to x. */
#define MS(x) (ms = (x), &ms)
#define WS(x) (ws = (x), &ws)
#define CASE(name, fn, blk, size, bad, call) \
	else if (!strcmp(c, name)) { say(c, fn, blk, size, bad, __LINE__); call; sink += __LINE__; }

static void say(const char *c, const char *fn, const void *b, size_t n, const void *a, int line)
{
	fprintf(stderr, "wcsbugs: %s fn=%s block=%p size=%zu addr=%p line=%d\n", c, fn, b, n, a, line);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	wchar_t *volatile p = malloc(16), *volatile q = malloc(16), *volatile big = malloc(256);
	wchar_t *volatile s = wdup(L"abcdefg", 8);     /* 7 letters and a terminator: 32 bytes */
	wchar_t *volatile u = wdup(L"ABCDEFGH", 8);    /* 8 letters, no terminator */
	wchar_t *volatile v = wdup(L"ABCDEFGH", 8);
	wchar_t *volatile d7 = malloc(28), *volatile d10 = malloc(40), *volatile d6 = malloc(24);
	char *volatile m = malloc(7), *volatile n8 = memcpy(malloc(8), "ABCDEFGH", 8);
	const char *ms;
	const wchar_t *ws;
	mbstate_t st;

	memset(&st, 0, sizeof(st));
	wmemset(q, L'q', 4);
	wmemset(big, 0, 64);
	wcscpy(d10, L"abc");
	wcscpy(d6, L"abc");
	if (0) {
	}
	CASE("wmemcpy-write", "wmemcpy", p, 16, p + 4, wmemcpy(p, big, 5))
	CASE("wmemcpy-read", "wmemcpy", q, 16, q + 4, wmemcpy(big, q, 5))
	CASE("wmemmove", "wmemmove", p, 16, p + 4, wmemmove(p + 1, p, 4))
	CASE("wmemset", "wmemset", p, 16, p + 4, wmemset(p, 0, 5))
	CASE("wmemcmp", "wmemcmp", q, 16, q + 4, sink = (size_t)wmemcmp(big, q, 5))
	CASE("wmemchr", "wmemchr", q, 16, q + 4, sink = (size_t)wmemchr(q, L'z', 5))
	CASE("wcslen", "wcslen", u, 32, u + 8, sink = wcslen(u))
	CASE("wcsnlen", "wcsnlen", u, 32, u + 8, sink = wcsnlen(u, 9))
	CASE("wcscpy", "wcscpy", d7, 28, d7 + 7, wcscpy(d7, s))
	CASE("wcsncpy", "wcsncpy", s, 32, s + 8, wcsncpy(s, L"xy", 9))
	CASE("wcscat", "wcscat", d10, 40, d10 + 10, wcscat(d10, s))      /* 3 + 7 + 1 into 10 */
	CASE("wcsncat", "wcsncat", d6, 24, d6 + 6, wcsncat(d6, s, 3))    /* 3 + 3 + 1 into 6 */
	CASE("wcscmp", "wcscmp", u, 32, u + 8, sink = (size_t)wcscmp(u, v))
	CASE("wcsncmp", "wcsncmp", u, 32, u + 8, sink = (size_t)wcsncmp(u, v, 9))
	CASE("wcschr", "wcschr", u, 32, u + 8, sink = (size_t)wcschr(u, L'z'))
	CASE("wcsrchr", "wcsrchr", u, 32, u + 8, sink = (size_t)wcsrchr(u, L'A'))
	CASE("wcsdup", "wcsdup", u, 32, u + 8, sink = (size_t)wcsdup(u))
	CASE("swprintf", "swprintf", p, 16, p + 4, sink = (size_t)swprintf(p, 5, L"%ls", L"0123"))
	CASE("vswprintf", "vswprintf", p, 16, p + 4, sink = (size_t)vsw(p, 5, L"%ls", L"0123"))
	CASE("wcstombs", "wcstombs", m, 7, m + 7, sink = wcstombs(m, s, 9))   /* 7 + 1 into 7 */
	CASE("wcsrtombs", "wcsrtombs", m, 7, m + 7, sink = wcsrtombs(m, WS(s), 9, &st))
	CASE("wcsnrtombs", "wcsnrtombs", m, 7, m + 7, sink = wcsnrtombs(m, WS(s), 8, 9, &st))
	CASE("mbstowcs", "mbstowcs", p, 16, p + 4, sink = mbstowcs(p, "abcd", 5))
	CASE("mbsrtowcs", "mbsrtowcs", p, 16, p + 4, sink = mbsrtowcs(p, MS("abcd"), 5, &st))
	CASE("mbsnrtowcs", "mbsnrtowcs", p, 16, p + 4, sink = mbsnrtowcs(p, MS("abcd"), 5, 5, &st))
	CASE("wcstombs-read", "wcstombs", u, 32, u + 8, sink = wcstombs((char *)big, u, 64))
	CASE("mbstowcs-read", "mbstowcs", n8, 8, n8 + 8, sink = mbstowcs(big, n8, 64))
	CASE("wcstombs-count", "wcstombs", u, 32, u + 8, sink = wcstombs(NULL, u, 0))
	CASE("mbstowcs-count", "mbstowcs", n8, 8, n8 + 8, sink = mbstowcs(NULL, n8, 0))
	CASE("wcsnrtombs-count", "wcsnrtombs", u, 32, u + 8, sink = wcsnrtombs(NULL, WS(u), 9, 0, &st))
	CASE("wcstombs-invalid", "wcstombs", m, 7, m + 7, sink = wcstombs(m, L"abcdefgh\x100", 16))
	CASE("mbstowcs-invalid", "mbstowcs", p, 16, p + 4, sink = mbstowcs(p, "abcde\xff", 8))
	CASE("wmemcpy-write-under", "wmemcpy", p, 16, p - 1, wmemcpy(p - 1, big, 2))
	CASE("wmemcpy-read-under", "wmemcpy", q, 16, q - 1, wmemcpy(big, q - 1, 2))
	CASE("wmemmove-under", "wmemmove", p, 16, p - 1, wmemmove(p - 1, q, 2))
	CASE("wmemset-under", "wmemset", p, 16, p - 1, wmemset(p - 1, 0, 2))
	CASE("wmemcmp-under", "wmemcmp", q, 16, q - 1, sink = (size_t)wmemcmp(q - 1, big, 2))
	CASE("wmemchr-under", "wmemchr", q, 16, q - 1, sink = (size_t)wmemchr(q - 1, L'z', 2))
	CASE("wcslen-under", "wcslen", s, 32, s - 1, sink = wcslen(s - 1))
	CASE("wcsnlen-under", "wcsnlen", s, 32, s - 1, sink = wcsnlen(s - 1, 4))
	CASE("wcscpy-under", "wcscpy", p, 16, p - 1, wcscpy(p - 1, L"ab"))
	CASE("wcscpy-src-under", "wcscpy", s, 32, s - 1, wcscpy(big, s - 1))
	CASE("wcsncpy-under", "wcsncpy", p, 16, p - 1, wcsncpy(p - 1, L"xy", 2))
	CASE("wcscat-under", "wcscat", s, 32, s - 1, (big[0] = 0, wcscat(big, s - 1)))
	CASE("wcsncat-under", "wcsncat", s, 32, s - 1, (big[0] = 0, wcsncat(big, s - 1, 3)))
	CASE("wcscmp-under", "wcscmp", s, 32, s - 1, sink = (size_t)wcscmp(s - 1, L"x"))
	CASE("wcsncmp-under", "wcsncmp", s, 32, s - 1, sink = (size_t)wcsncmp(s - 1, L"x", 3))
	CASE("wcschr-under", "wcschr", s, 32, s - 1, sink = (size_t)wcschr(s - 1, L'g'))
	CASE("wcsrchr-under", "wcsrchr", s, 32, s - 1, sink = (size_t)wcsrchr(s - 1, L'a'))
	CASE("wcsdup-under", "wcsdup", s, 32, s - 1, sink = (size_t)wcsdup(s - 1))
	CASE("swprintf-under", "swprintf", p, 16, p - 1, sink = (size_t)swprintf(p - 1, 2, L"a"))
	CASE("vswprintf-under", "vswprintf", p, 16, p - 1, sink = (size_t)vsw(p - 1, 2, L"a"))
	CASE("wcstombs-under", "wcstombs", m, 7, m - 1, sink = wcstombs(m - 1, L"ab", 3))
	CASE("wcsrtombs-under", "wcsrtombs", m, 7, m - 1, sink = wcsrtombs(m - 1, WS(L"ab"), 3, &st))
	CASE("wcsnrtombs-under", "wcsnrtombs", m, 7, m - 1, sink = wcsnrtombs(m - 1, WS(L"ab"), 3, 3, &st))
	CASE("mbstowcs-under", "mbstowcs", p, 16, p - 1, sink = mbstowcs(p - 1, "ab", 3))
	CASE("mbsrtowcs-under", "mbsrtowcs", p, 16, p - 1, sink = mbsrtowcs(p - 1, MS("ab"), 3, &st))
	CASE("mbsnrtowcs-under", "mbsnrtowcs", p, 16, p - 1, sink = mbsnrtowcs(p - 1, MS("ab"), 3, 3, &st))
	else if (!strcmp(c, "clean")) {
		sweep();
		printf("wcsbugs: clean ok\n");
	} else {
		fprintf(stderr, "usage: wcsbugs CASE (see the source)\n");
		return 2;
	}
	return 0;
}
