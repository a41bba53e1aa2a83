/*
 * The agent's replacements of libc's memory and string functions (and the buffers of read,
 * write, fread, fwrite, fgets and snprintf; the wide ones are wcsmem.c's), for --check (the
 * idea of Valgrind's mc_replace_strmem.c and ASan's interceptors): the byte range a call
 * reads or writes is checked against the heap's blocks before the real function runs, and an
 * access outside a live block is reported at the call ("WRITE of size 17 ... in memcpy", the
 * caller's backtrace). The real function then runs as the agent's access (in_agent), so the
 * faults it takes in red zones are not reported again, and its whole-chunk reads past a
 * string's end need no excuse. A range outside the arena, or inside one live block, costs a
 * few compares.
 *
 * glibc's _FORTIFY_SOURCE entry points (__memcpy_chk, ...) share their plain function's body
 * and then keep glibc's own abort (strmem.h's fortify).
 *
 * The real functions come from the next object in the lookup order (libc) at the agent's
 * start; calls before that (the loader's and libc's start-up) use the plain loops below.
 * Built with -fno-builtin -fno-tree-loop-distribute-patterns: the loops must not become calls
 * of the functions they stand for.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <langinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "strmem.h"

REAL(memcpy, void *, void *, const void *, size_t);
REAL(memmove, void *, void *, const void *, size_t);
REAL(memset, void *, void *, int, size_t);
REAL(memcmp, int, const void *, const void *, size_t);
REAL(memchr, void *, const void *, int, size_t);
REAL(strlen, size_t, const char *);
REAL(strnlen, size_t, const char *, size_t);
REAL(strcmp, int, const char *, const char *);
REAL(strncmp, int, const char *, const char *, size_t);
REAL(strchr, char *, const char *, int);
REAL(strrchr, char *, const char *, int);
REAL(strcoll, int, const char *, const char *);

/* Called once the agent has started (agent_init). */
void strmem_init(void)
{
	GET(memcpy); GET(memmove); GET(memset); GET(memcmp); GET(memchr); GET(strlen);
	GET(strnlen); GET(strcmp); GET(strncmp); GET(strchr); GET(strrchr);
	GET(strcoll);
	wcsmem_init();
}

void strmem_check(uintptr_t s, size_t n, unsigned access, const char *fn, uintptr_t ip)
{
	uintptr_t e = s + n;
	uint32_t bid = 0;
	enum err_kind k;

	if (!n || (!in_arena(s) && !in_arena(e - 1)))
		return;
	k = heap_classify(s, e, 0, 0, &bid);
	if (!k)
		return;
	struct err er = {
		.kind = k, .access = access, .addr = heap_bad_byte(k, bid, s), .size = n,
		.ip = ip, .tid = agent_tid(), .block = bid, .fn = fn,
	};
	in_agent++;
	report_error(&er);
	in_agent--;
}

/* --- fallbacks before the agent has started ------------------------------------------------ */
static size_t plain_strlen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }

typedef uint64_t __attribute__((may_alias, aligned(1))) word_u;
#define ONES 0x0101010101010101ull
#define HAS_ZERO(w) (((w) - ONES) & ~(w) & (ONES << 7))

/*
 * The open end of the live block that holds a (its last byte + 1), or 0. glibc's vector
 * string functions read whole 32-byte vectors past a string's terminator: where that is a
 * block's closed bytes (its padding, the next red zone), each call costs a fault of the
 * agent's own, permitted (a delivery). Strings in the heap are scanned up to there instead.
 */
static uintptr_t open_end(const char *a)
{
	uintptr_t p = (uintptr_t)a;
	const struct blk *b = &ag.blocks[slot_id_of(p)];      /* id 0: never live */

	if (b->state != BLK_LIVE || p < b->user || p >= b->user + b->size)
		return 0;
	return b->user + b->size;
}

/* strlen of a string in a block: aligned words while they lie in the block, then bytes (past
 * the block's end too: an unterminated string, whose reads there fault, permitted, as the
 * agent's own, and are then reported by check). */
static size_t heap_strlen(const char *s, uintptr_t end)
{
	const char *p = s;

	in_agent++;
	while (((uintptr_t)p & 7) && (uintptr_t)p < end && *p)
		p++;
	if (((uintptr_t)p & 7) == 0)
		for (; (uintptr_t)p + 8 <= end; p += 8) {
			uint64_t w = *(const uint64_t *)p;
			if (HAS_ZERO(w))
				break;
		}
	while (*p)
		p++;
	in_agent--;
	return (size_t)(p - s);
}

/* memchr of [s, s + n) in the heap, reading no byte past it (see open_end). */
static const char *heap_memchr(const char *s, int c, size_t n)
{
	const char *p = s, *e = s + n;
	const uint64_t cc = ONES * (unsigned char)c;
	const char *r = NULL;

	in_agent++;
	while (p < e && ((uintptr_t)p & 7) && *p != (char)c)
		p++;
	if (p < e && *p != (char)c)
		for (; p + 8 <= e && !HAS_ZERO(*(const word_u *)p ^ cc); p += 8)
			;
	for (; p < e; p++)
		if (*p == (char)c) {
			r = p;
			break;
		}
	in_agent--;
	return r;
}

/* memcmp of two ranges checked whole, reading no byte past either (see open_end). */
static int heap_memcmp(const unsigned char *a, const unsigned char *b, size_t n)
{
	size_t i = 0;
	int r = 0;

	in_agent++;
	while (i + 8 <= n && *(const word_u *)(a + i) == *(const word_u *)(b + i))
		i += 8;
	for (; i < n; i++)
		if (a[i] != b[i]) {
			r = a[i] - b[i];
			break;
		}
	in_agent--;
	return r;
}

static size_t len_of(const char *s)
{
	uintptr_t end;

	if (!real_strlen)
		return plain_strlen(s);
	end = ag.bounds ? open_end(s) : 0;
	return end ? heap_strlen(s, end) : AS_AGENT(real_strlen(s));
}

/* strnlen(s, max) as the agent's access (nread: the bytes it reads, the terminator too). */
static size_t nlen_of(const char *s, size_t max)
{
	size_t n = 0;

	if (real_strnlen)
		return AS_AGENT(real_strnlen(s, max));
	while (n < max && s[n])
		n++;
	return n;
}

/* The bytes strcmp-like functions read: up to the first difference or terminator, n at most. */
static size_t cmp_span(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	in_agent++;
	while (i < n && a[i] && a[i] == b[i])
		i++;
	in_agent--;
	return i < n ? i + 1 : n;
}

/* memcpy and memmove (move: the ranges may overlap). */
BOTH void *memcpy_at(void *d, const void *s, size_t n, int move, size_t room, const char *fn,
		    uintptr_t ip)
{
	__typeof__(real_memcpy) real = move ? real_memmove : real_memcpy;

	if (checking()) {
		check(s, n, WL_READ, fn, ip);
		check(d, n, WL_WRITE, fn, ip);
		fortify(n, room);
		return AS_AGENT(real(d, s, n));
	}
	fortify(n, room);
	if (real)
		return real(d, s, n);
	if (!move || d < s)
		for (size_t i = 0; i < n; i++)
			((char *)d)[i] = ((const char *)s)[i];
	else
		for (size_t i = n; i-- > 0;)
			((char *)d)[i] = ((const char *)s)[i];
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	return memcpy_at(d, s, n, 0, ANY, "memcpy", CALLER);
}

void *__memcpy_chk(void *d, const void *s, size_t n, size_t room)
{
	return memcpy_at(d, s, n, 0, room, "__memcpy_chk", CALLER);
}

void *memmove(void *d, const void *s, size_t n)
{
	return memcpy_at(d, s, n, 1, ANY, "memmove", CALLER);
}

void *__memmove_chk(void *d, const void *s, size_t n, size_t room)
{
	return memcpy_at(d, s, n, 1, room, "__memmove_chk", CALLER);
}

BOTH void *memset_at(void *d, int c, size_t n, size_t room, const char *fn, uintptr_t ip)
{
	if (checking()) {
		check(d, n, WL_WRITE, fn, ip);
		fortify(n, room);
		return AS_AGENT(real_memset(d, c, n));
	}
	fortify(n, room);
	if (real_memset)
		return real_memset(d, c, n);
	for (size_t i = 0; i < n; i++)
		((char *)d)[i] = (char)c;
	return d;
}

void *memset(void *d, int c, size_t n)
{
	return memset_at(d, c, n, ANY, "memset", CALLER);
}

void *__memset_chk(void *d, int c, size_t n, size_t room)
{
	return memset_at(d, c, n, room, "__memset_chk", CALLER);
}

int memcmp(const void *a, const void *b, size_t n)
{
	if (checking()) {
		/* Both ranges whole, as ASan's strict_memcmp: the result may depend on any byte. */
		check(a, n, WL_READ, "memcmp", CALLER);
		check(b, n, WL_READ, "memcmp", CALLER);
		if (ag.bounds && (in_arena((uintptr_t)a) || in_arena((uintptr_t)b)))
			return heap_memcmp(a, b, n);
		return AS_AGENT(real_memcmp(a, b, n));
	}
	if (real_memcmp)
		return real_memcmp(a, b, n);
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)a)[i] != ((const unsigned char *)b)[i])
			return ((const unsigned char *)a)[i] - ((const unsigned char *)b)[i];
	return 0;
}

void *memchr(const void *s, int c, size_t n)
{
	if (checking()) {
		const char *r = ag.bounds && in_arena((uintptr_t)s) ? heap_memchr(s, c, n) :
				AS_AGENT(real_memchr(s, c, n));
		check(s, r ? (size_t)(r - (const char *)s) + 1 : n, WL_READ, "memchr", CALLER);
		return (void *)r;
	}
	if (real_memchr)
		return real_memchr(s, c, n);
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)s)[i] == (unsigned char)c)
			return (char *)s + i;
	return NULL;
}

size_t strlen(const char *s)
{
	size_t n = len_of(s);

	if (checking())
		check(s, n + 1, WL_READ, "strlen", CALLER);
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = nlen_of(s, max);

	if (checking())
		check(s, nread(n, max), WL_READ, "strnlen", CALLER);
	return n;
}

BOTH char *strcpy_at(char *d, const char *s, size_t room, const char *fn, uintptr_t ip)
{
	size_t n = len_of(s) + 1;

	if (checking()) {
		check(s, n, WL_READ, fn, ip);
		check(d, n, WL_WRITE, fn, ip);
	}
	fortify(n, room);
	in_agent++;
	memcpy(d, s, n);
	in_agent--;
	return d;
}

char *strcpy(char *d, const char *s)
{
	return strcpy_at(d, s, ANY, "strcpy", CALLER);
}

char *__strcpy_chk(char *d, const char *s, size_t room)
{
	return strcpy_at(d, s, room, "__strcpy_chk", CALLER);
}

BOTH char *strncpy_at(char *d, const char *s, size_t n, size_t room, const char *fn,
		     uintptr_t ip)
{
	size_t l = nlen_of(s, n);

	if (checking()) {
		check(s, nread(l, n), WL_READ, fn, ip);
		check(d, n, WL_WRITE, fn, ip);     /* the zeroes after the string too */
	}
	fortify(n, room);
	in_agent++;
	memcpy(d, s, l);
	memset(d + l, 0, n - l);
	in_agent--;
	return d;
}

char *strncpy(char *d, const char *s, size_t n)
{
	return strncpy_at(d, s, n, ANY, "strncpy", CALLER);
}

char *__strncpy_chk(char *d, const char *s, size_t n, size_t room)
{
	return strncpy_at(d, s, n, room, "__strncpy_chk", CALLER);
}

/* strcat and strncat: d's string (dl long) read, sl bytes of s and a terminator appended to
 * it, sread bytes of s read. */
static char *cat(char *d, size_t dl, const char *s, size_t sl, size_t sread, size_t room,
		 const char *fn, uintptr_t ip)
{
	if (checking()) {
		check(d, dl + 1, WL_READ, fn, ip);
		check(s, sread, WL_READ, fn, ip);
		check(d + dl, sl + 1, WL_WRITE, fn, ip);
	}
	fortify(dl + sl + 1, room);
	in_agent++;
	memcpy(d + dl, s, sl);
	d[dl + sl] = 0;
	in_agent--;
	return d;
}

char *strcat(char *d, const char *s)
{
	size_t sl = len_of(s);

	return cat(d, len_of(d), s, sl, sl + 1, ANY, "strcat", CALLER);
}

char *__strcat_chk(char *d, const char *s, size_t room)
{
	size_t sl = len_of(s);

	return cat(d, len_of(d), s, sl, sl + 1, room, "__strcat_chk", CALLER);
}

char *strncat(char *d, const char *s, size_t n)
{
	size_t sl = nlen_of(s, n);

	return cat(d, len_of(d), s, sl, nread(sl, n), ANY, "strncat", CALLER);
}

char *__strncat_chk(char *d, const char *s, size_t n, size_t room)
{
	size_t sl = nlen_of(s, n);

	return cat(d, len_of(d), s, sl, nread(sl, n), room, "__strncat_chk", CALLER);
}

int strcmp(const char *a, const char *b)
{
	if (checking()) {
		size_t n = cmp_span(a, b, (size_t)-1);
		check(a, n, WL_READ, "strcmp", CALLER);
		check(b, n, WL_READ, "strcmp", CALLER);
		/* The span ends at the first difference or terminator: the result is there (no
		 * vector strcmp reading past either string's end, see open_end). */
		in_agent++;
		int r = (unsigned char)a[n - 1] - (unsigned char)b[n - 1];
		in_agent--;
		return r;
	}
	if (real_strcmp)
		return real_strcmp(a, b);
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

/*
 * strcoll: where the thread's locale has no collation rules (C, POSIX, C.UTF-8) it is strcmp,
 * as glibc decides it (whose strcmp is the vector one, reading past a heap string's end into
 * its block's closed bytes: lua compares every string so); elsewhere glibc's own, as the
 * agent's access. Both strings are read up to where they differ, as strcmp reads them.
 */
int strcoll(const char *a, const char *b)
{
	if (checking()) {
		size_t n = cmp_span(a, b, (size_t)-1);
		check(a, n, WL_READ, "strcoll", CALLER);
		check(b, n, WL_READ, "strcoll", CALLER);
		if (!(uint32_t)(uintptr_t)nl_langinfo(_NL_COLLATE_NRULES)) {
			in_agent++;
			int r = (unsigned char)a[n - 1] - (unsigned char)b[n - 1];
			in_agent--;
			return r;
		}
		return AS_AGENT(real_strcoll(a, b));
	}
	if (real_strcoll)
		return real_strcoll(a, b);
	return strcmp(a, b);
}

int strncmp(const char *a, const char *b, size_t n)
{
	if (checking()) {
		size_t m = cmp_span(a, b, n);
		check(a, m, WL_READ, "strncmp", CALLER);
		check(b, m, WL_READ, "strncmp", CALLER);
		if (!m)
			return 0;
		in_agent++;
		int r = (unsigned char)a[m - 1] - (unsigned char)b[m - 1];
		in_agent--;
		return r;
	}
	if (real_strncmp)
		return real_strncmp(a, b, n);
	for (; n && *a && *a == *b; n--)
		a++, b++;
	return n ? (unsigned char)*a - (unsigned char)*b : 0;
}

char *strchr(const char *s, int c)
{
	if (checking()) {
		char *r;
		if (ag.bounds && open_end(s)) {
			size_t n = len_of(s);
			r = (char)c ? (char *)heap_memchr(s, c, n) : (char *)s + n;
		} else {
			r = AS_AGENT(real_strchr(s, c));
		}
		check(s, r ? (size_t)(r - s) + 1 : len_of(s) + 1, WL_READ, "strchr", CALLER);
		return r;
	}
	if (real_strchr)
		return real_strchr(s, c);
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

char *strrchr(const char *s, int c)
{
	if (checking()) {
		check(s, len_of(s) + 1, WL_READ, "strrchr", CALLER);
		return AS_AGENT(real_strrchr(s, c));
	}
	if (real_strrchr)
		return real_strrchr(s, c);
	const char *r = NULL;
	for (;; s++) {
		if (*s == (char)c)
			r = s;
		if (!*s)
			return (char *)r;
	}
}

char *strdup(const char *s)
{
	size_t n = len_of(s) + 1;
	char *d;

	if (checking())
		check(s, n, WL_READ, "strdup", CALLER);
	d = malloc(n);
	if (d) {
		in_agent++;
		memcpy(d, s, n);
		in_agent--;
	}
	return d;
}

char *strndup(const char *s, size_t max)
{
	size_t n = nlen_of(s, max);
	char *d;

	if (checking())
		check(s, nread(n, max), WL_READ, "strndup", CALLER);
	d = malloc(n + 1);
	if (d) {
		in_agent++;
		memcpy(d, s, n);
		d[n] = 0;
		in_agent--;
	}
	return d;
}

/* --- the buffers of I/O calls ---------------------------------------------------------------
 * The kernel's copies ignore ULPT rights (docs/spec.md R-ACC-2): a read() past a block would
 * go unseen. Each buffer is checked whole before the call, at the size the caller gives for it
 * (as memcheck checks read's buffer and _FORTIFY_SOURCE snprintf's), so that the result is the
 * same on both backends; the call then runs as the agent's access. glibc's own names for the
 * real functions need no lookup. */
extern ssize_t __read(int, void *, size_t);
extern ssize_t __write(int, const void *, size_t);
extern size_t _IO_fread(void *, size_t, size_t, FILE *);
extern size_t _IO_fwrite(const void *, size_t, size_t, FILE *);
extern char *_IO_fgets(char *, int, FILE *);
extern int __vsnprintf_chk(char *, size_t, int, size_t, const char *, va_list);

BOTH ssize_t read_at(int fd, void *buf, size_t n, size_t room, const char *fn, uintptr_t ip)
{
	if (!checking()) {
		fortify(n, room);
		return __read(fd, buf, n);
	}
	check(buf, n, WL_WRITE, fn, ip);
	fortify(n, room);
	return AS_AGENT(__read(fd, buf, n));
}

ssize_t read(int fd, void *buf, size_t n)
{
	return read_at(fd, buf, n, ANY, "read", CALLER);
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t room)
{
	return read_at(fd, buf, n, room, "__read_chk", CALLER);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (!checking())
		return __write(fd, buf, n);
	check(buf, n, WL_READ, "write", CALLER);
	return AS_AGENT(__write(fd, buf, n));
}

BOTH size_t fread_at(void *p, size_t room, size_t size, size_t n, FILE *f, const char *fn,
		    uintptr_t ip)
{
	if (!checking()) {
		fortify(size * n, room);
		return _IO_fread(p, size, n, f);
	}
	check(p, size * n, WL_WRITE, fn, ip);
	fortify(size * n, room);
	return AS_AGENT(_IO_fread(p, size, n, f));
}

size_t fread(void *p, size_t size, size_t n, FILE *f)
{
	return fread_at(p, ANY, size, n, f, "fread", CALLER);
}

/* glibc's also aborts when size * n overflows. */
size_t __fread_chk(void *p, size_t room, size_t size, size_t n, FILE *f)
{
	if (size && size * n / size != n)
		__chk_fail();
	return fread_at(p, room, size, n, f, "__fread_chk", CALLER);
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	if (!checking())
		return _IO_fwrite(p, size, n, f);
	check(p, size * n, WL_READ, "fwrite", CALLER);
	return AS_AGENT(_IO_fwrite(p, size, n, f));
}

/* glibc's __fgets_chk takes size as the int it is: a negative one is a huge size_t too. */
BOTH char *fgets_at(char *s, int size, size_t room, FILE *f, const char *fn, uintptr_t ip)
{
	if (!checking()) {
		fortify((size_t)size, room);
		return _IO_fgets(s, size, f);
	}
	if (size > 0)
		check(s, (size_t)size, WL_WRITE, fn, ip);
	fortify((size_t)size, room);
	return AS_AGENT(_IO_fgets(s, size, f));
}

char *fgets(char *s, int size, FILE *f)
{
	return fgets_at(s, size, ANY, f, "fgets", CALLER);
}

char *__fgets_chk(char *s, size_t room, int size, FILE *f)
{
	return fgets_at(s, size, room, f, "__fgets_chk", CALLER);
}

/* snprintf's buffer; then glibc's own __vsnprintf_chk, flag and all (flag > 0: %n only in
 * a read-only format), which aborts if room < n. flag 0 and room ANY are plain vsnprintf. */
static int print(char *buf, size_t n, int flag, size_t room, const char *fmt, va_list ap,
		 const char *fn, uintptr_t ip)
{
	int r;

	if (checking() && n)
		check(buf, n, WL_WRITE, fn, ip);
	in_agent++;
	r = __vsnprintf_chk(buf, n, flag, room, fmt, ap);
	in_agent--;
	return r;
}

int snprintf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = print(buf, n, 0, ANY, fmt, ap, "snprintf", CALLER);
	va_end(ap);
	return r;
}

int __snprintf_chk(char *buf, size_t n, int flag, size_t room, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = print(buf, n, flag, room, fmt, ap, "__snprintf_chk", CALLER);
	va_end(ap);
	return r;
}
