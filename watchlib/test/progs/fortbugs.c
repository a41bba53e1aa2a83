/*
 * fortbugs CASE: strbugs.c and wcsbugs.c for a program built as Debian builds its own, with
 * -O2 -D_FORTIFY_SOURCE=2: its calls go to glibc's fortified entry points (__memcpy_chk, ...),
 * which take the size the compiler knows of the destination. Each block comes from one of two
 * malloc calls, so the compiler knows only a bound (twice the block): the call passes glibc's
 * test and reaches one byte (one wchar_t) outside the block, past its end or, in the "-under"
 * cases, before its start. Each case prints "fortbugs: CASE fn=FN block=B size=N addr=A
 * line=L" on stderr (N in bytes, A the first byte outside the block), then makes the call at
 * line L; --check must report one heap-overflow at A, "in FN" (the entry point the program
 * calls), from main at line L. Run natively, every case exits 0, but "abort": a copy past
 * what the compiler knows, which glibc stops (SIGABRT) and --check reports first. "clean"
 * makes every call within blocks of exactly its size, for sizes 1 to 40: no error.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

/* The bugs are planted: what the compiler sees of them is expected. */
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wunused-result"

static volatile size_t sink, one = 1, pick;

/* A block of n bytes of which the compiler knows only that it is at most 2n. */
#define BLOCK(n) (pick ? malloc(2 * (n)) : malloc(n))

/* main's blocks stay reachable from here: the leak check at exit has nothing to say. */
static void *volatile kept[32];
static unsigned nkept;

static inline void *keep(void *p)
{
	kept[nkept++ % 32] = p;
	return p;
}
#define KB(n) keep(BLOCK(n))

/* What the compiler must not see through: a string's contents, so that a call stays a call. */
__attribute__((noipa)) static void *opaque(void *p)
{
	return p;
}

/* vswprintf's caller, not inlined: __vswprintf_chk is called with no bound known. */
__attribute__((noinline)) static int vsw(wchar_t *s, size_t n, const wchar_t *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vswprintf(s, n, fmt, ap);
	va_end(ap);
	return r;
}

static void say(const char *c, const char *fn, const void *b, size_t n, const void *a, int line)
{
	fprintf(stderr, "fortbugs: %s fn=%s block=%p size=%zu addr=%p line=%d\n", c, fn, b, n, a, line);
}

/* Every fortified function, each call within blocks of n bytes (n wchar_t for the wide ones)
 * that it fills exactly; inlined, so that the compiler knows the blocks' bound. */
static inline __attribute__((always_inline)) void fits(size_t n, const char *s, const wchar_t *ws,
						       int fd, FILE *f)
{
	char *d = BLOCK(n), *e = BLOCK(n + 3);
	wchar_t *w = BLOCK(n * sizeof(wchar_t)), *x = BLOCK((n + 3) * sizeof(wchar_t));
	size_t k = n * one, l = k - 1;          /* lengths the compiler does not know */
	mbstate_t st;
	const char *ms;
	const wchar_t *wp;

	memset(&st, 0, sizeof(st));
	memcpy(d, s, k);
	memmove(d, s, k);
	memset(d, 'a', k);
	strncpy(d, s, k);
	sink += (size_t)read(fd, d, k) + fread(d, 1, k, f) + (size_t)fgets(d, (int)k, f);
	sink += (size_t)snprintf(d, k, "%s", s);
	memcpy(e, s, l);
	e[l] = 0;
	strcpy(d, e);
	strcpy(opaque(e), "abc");
	strcat(e, opaque(d));           /* 3 + n - 1 + 1 */
	strcpy(opaque(e), "abc");
	strncat(e, s, l);
	wmemcpy(w, ws, k);
	wmemmove(w, ws, k);
	wmemset(w, L'a', k);
	wcsncpy(w, ws, k);
	sink += (size_t)swprintf(w, k, L"%ls", ws) + (size_t)vsw(w, k, L"%ls", ws);
	wmemcpy(x, ws, l);
	x[l] = 0;
	wcscpy(w, x);
	wcscpy(opaque(x), L"abc");
	wcscat(x, opaque(w));
	wcscpy(opaque(x), L"abc");
	wcsncat(x, ws, l);
	sink += mbstowcs(w, s, k) + wcstombs(d, ws, k);
	ms = s;
	sink += mbsrtowcs(w, &ms, k, &st);
	ms = s;
	sink += mbsnrtowcs(w, &ms, k, k, &st);
	wp = ws;
	sink += wcsrtombs(d, &wp, k, &st);
	wp = ws;
	sink += wcsnrtombs(d, &wp, k, k, &st);
	free(d);
	free(e);
	free(w);
	free(x);
}

/* Fits for sizes 1 to 40 (each a constant where fits is inlined). */
static void sweep(void)
{
	char *s = opaque(BLOCK(64));
	wchar_t *ws = opaque(BLOCK(64 * sizeof(wchar_t)));
	int fd = open("/dev/zero", O_RDONLY);
	FILE *f = fopen("/dev/zero", "r");

	memset(s, 'x', 63);
	s[63] = 0;
	wmemset(ws, L'x', 63);
	ws[63] = 0;
#define FITS(n) fits(n, s, ws, fd, f);
#define FITS8(n) FITS(n) FITS(n + 1) FITS(n + 2) FITS(n + 3) FITS(n + 4) FITS(n + 5) \
		 FITS(n + 6) FITS(n + 7)
	FITS8(1) FITS8(9) FITS8(17) FITS8(25) FITS8(33)
	fclose(f);
	close(fd);
	free(s);
	free(ws);
}

#define MS(x) (ms = (x), &ms)
#define WS(x) (wsp = (x), &wsp)
#define CASE(name, fn, blk, size, bad, call) \
	else if (!strcmp(c, name)) { say(c, fn, blk, size, bad, __LINE__); call; sink += __LINE__; }
/* A wide block of n wchar_t, the element at index bad outside it. */
#define WCASE(name, fn, blk, n, bad, call) \
	CASE(name, fn, blk, (n) * sizeof(wchar_t), blk + (bad), call)

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	char *p = KB(16), *d7 = KB(7), *d10 = KB(10), *d6 = KB(6), *m = KB(7);
	char *q = KB(64);                       /* a destination of "" (the compiler does not know) */
	char *big = opaque(keep(malloc(256))), *s = opaque(keep(malloc(8)));
	char *ab = opaque(keep(strdup("ab")));
	wchar_t *w = KB(16), *wd7 = KB(28), *wd10 = KB(40), *wd6 = KB(24), *wq = KB(256);
	wchar_t *wbig = opaque(keep(malloc(256))), *ws = opaque(keep(malloc(32)));
	wchar_t *wab = opaque(keep(wcsdup(L"ab")));
	int fd = open("/dev/zero", O_RDONLY);
	FILE *f = fopen("/dev/zero", "r");
	const char *ms;
	const wchar_t *wsp;
	mbstate_t st;
	size_t two = 1 + one;                   /* 2, which the compiler does not know */

	memset(&st, 0, sizeof(st));
	memset(big, 'b', 256);
	memcpy(s, "abcdefg", 8);                /* 7 letters and a terminator */
	wmemset(wbig, L'b', 64);
	wmemcpy(ws, L"abcdefg", 8);
	strcpy(opaque(d10), "abc");
	strcpy(opaque(d6), "abc");
	wcscpy(opaque(wd10), L"abc");
	wcscpy(opaque(wd6), L"abc");
	*(char *)opaque(q) = 0;
	*(wchar_t *)opaque(wq) = 0;
	if (0) {
	}
	CASE("memcpy", "__memcpy_chk", p, 16, p + 16, memcpy(p, big, 16 + one))
	CASE("memcpy-under", "__memcpy_chk", p, 16, p - 1, memcpy(p - 1, big, 1 + one))
	CASE("memmove", "__memmove_chk", p, 16, p + 16, memmove(p, big, 16 + one))
	CASE("memmove-under", "__memmove_chk", p, 16, p - 1, memmove(p - 1, big, 1 + one))
	CASE("memset", "__memset_chk", p, 16, p + 16, memset(p, 0, 16 + one))
	CASE("memset-under", "__memset_chk", p, 16, p - 1, memset(p - 1, 0, 1 + one))
	CASE("strcpy", "__strcpy_chk", d7, 7, d7 + 7, strcpy(d7, s))
	CASE("strcpy-under", "__strcpy_chk", p, 16, p - 1, strcpy(p - 1, ab))
	CASE("strcpy-src-under", "__strcpy_chk", s, 8, s - 1, strcpy(q, s - 1))
	CASE("strncpy", "__strncpy_chk", p, 16, p + 16, strncpy(p, s, 16 + one))
	CASE("strncpy-under", "__strncpy_chk", p, 16, p - 1, strncpy(p - 1, s, 1 + one))
	CASE("strcat", "__strcat_chk", d10, 10, d10 + 10, strcat(d10, s))      /* 3 + 7 + 1 */
	CASE("strcat-under", "__strcat_chk", s, 8, s - 1, strcat(q, s - 1))
	CASE("strncat", "__strncat_chk", d6, 6, d6 + 6, strncat(d6, s, 2 + one))   /* 3 + 3 + 1 */
	CASE("strncat-under", "__strncat_chk", s, 8, s - 1, strncat(q, s - 1, 2 + one))
	CASE("read", "__read_chk", p, 16, p + 16, sink = (size_t)read(fd, p, 16 + one))
	CASE("read-under", "__read_chk", p, 16, p - 1, sink = (size_t)read(fd, p - 1, 1 + one))
	CASE("fread", "__fread_chk", p, 16, p + 16, sink = fread(p, 1, 16 + one, f))
	CASE("fread-under", "__fread_chk", p, 16, p - 1, sink = fread(p - 1, 1, 1 + one, f))
	CASE("fgets", "__fgets_chk", p, 16, p + 16, sink = (size_t)fgets(p, 16 + (int)one, f))
	CASE("fgets-under", "__fgets_chk", p, 16, p - 1, fgets(p - 1, 1 + (int)one, f))
	CASE("snprintf", "__snprintf_chk", p, 16, p + 16, snprintf(p, 16 + one, "%s", s))
	CASE("snprintf-under", "__snprintf_chk", p, 16, p - 1, snprintf(p - 1, 1 + one, "%s", s))
	WCASE("wmemcpy", "__wmemcpy_chk", w, 4, 4, wmemcpy(w, wbig, 4 + one))
	WCASE("wmemcpy-under", "__wmemcpy_chk", w, 4, -1, wmemcpy(w - 1, wbig, 1 + one))
	WCASE("wmemmove", "__wmemmove_chk", w, 4, 4, wmemmove(w, wbig, 4 + one))
	WCASE("wmemmove-under", "__wmemmove_chk", w, 4, -1, wmemmove(w - 1, wbig, 1 + one))
	WCASE("wmemset", "__wmemset_chk", w, 4, 4, wmemset(w, 0, 4 + one))
	WCASE("wmemset-under", "__wmemset_chk", w, 4, -1, wmemset(w - 1, 0, 1 + one))
	WCASE("wcscpy", "__wcscpy_chk", wd7, 7, 7, wcscpy(wd7, ws))
	WCASE("wcscpy-under", "__wcscpy_chk", w, 4, -1, wcscpy(w - 1, wab))
	WCASE("wcscpy-src-under", "__wcscpy_chk", ws, 8, -1, wcscpy(wq, ws - 1))
	WCASE("wcsncpy", "__wcsncpy_chk", w, 4, 4, wcsncpy(w, ws, 4 + one))
	WCASE("wcsncpy-under", "__wcsncpy_chk", w, 4, -1, wcsncpy(w - 1, ws, 1 + one))
	WCASE("wcscat", "__wcscat_chk", wd10, 10, 10, wcscat(wd10, ws))        /* 3 + 7 + 1 */
	WCASE("wcscat-under", "__wcscat_chk", ws, 8, -1, wcscat(wq, ws - 1))
	WCASE("wcsncat", "__wcsncat_chk", wd6, 6, 6, wcsncat(wd6, ws, 2 + one))
	WCASE("wcsncat-under", "__wcsncat_chk", ws, 8, -1, wcsncat(wq, ws - 1, 2 + one))
	WCASE("swprintf", "__swprintf_chk", w, 4, 4, swprintf(w, 4 + one, L"%ls", ws))
	WCASE("swprintf-under", "__swprintf_chk", w, 4, -1, swprintf(w - 1, 1 + one, L"a"))
	WCASE("vswprintf", "__vswprintf_chk", w, 4, 4, vsw(w, 4 + one, L"%ls", ws))
	WCASE("vswprintf-under", "__vswprintf_chk", w, 4, -1, vsw(w - 1, 1 + one, L"a"))
	WCASE("mbstowcs", "__mbstowcs_chk", w, 4, 4, sink = mbstowcs(w, s, 4 + one))
	WCASE("mbstowcs-under", "__mbstowcs_chk", w, 4, -1, sink = mbstowcs(w - 1, s, 1 + one))
	WCASE("mbsrtowcs", "__mbsrtowcs_chk", w, 4, 4, sink = mbsrtowcs(w, MS(s), 4 + one, &st))
	WCASE("mbsrtowcs-under", "__mbsrtowcs_chk", w, 4, -1, mbsrtowcs(w - 1, MS(s), 1 + one, &st))
	WCASE("mbsnrtowcs", "__mbsnrtowcs_chk", w, 4, 4, mbsnrtowcs(w, MS(s), 8, 4 + one, &st))
	WCASE("mbsnrtowcs-under", "__mbsnrtowcs_chk", w, 4, -1, mbsnrtowcs(w - 1, MS(s), 8, two, &st))
	CASE("wcstombs", "__wcstombs_chk", m, 7, m + 7, sink = wcstombs(m, ws, 7 + one))
	CASE("wcstombs-under", "__wcstombs_chk", m, 7, m - 1, sink = wcstombs(m - 1, ws, 1 + one))
	CASE("wcsrtombs", "__wcsrtombs_chk", m, 7, m + 7, sink = wcsrtombs(m, WS(ws), 7 + one, &st))
	CASE("wcsrtombs-under", "__wcsrtombs_chk", m, 7, m - 1, wcsrtombs(m - 1, WS(ws), 1 + one, &st))
	CASE("wcsnrtombs", "__wcsnrtombs_chk", m, 7, m + 7, wcsnrtombs(m, WS(ws), 8, 7 + one, &st))
	CASE("wcsnrtombs-under", "__wcsnrtombs_chk", m, 7, m - 1, wcsnrtombs(m - 1, WS(ws), 8, two, &st))
	CASE("abort", "__memcpy_chk", p, 16, p + 16, memcpy(p, big, 32 + one))
	else if (!strcmp(c, "clean")) {
		sweep();
		printf("fortbugs: clean ok\n");
	} else {
		fprintf(stderr, "usage: fortbugs CASE (see the source)\n");
		return 2;
	}
	return 0;
}
