/*
 * strbugs CASE: one call of a libc memory or string function that reaches one byte outside a
 * heap block, for ulpt-watch --check's checked functions (watchlib/preload/strmem.c). Each
 * case prints "strbugs: CASE fn=FN block=B size=N addr=A line=L" on stderr, then makes the
 * call at line L; --check must report one heap-overflow at A (the first byte outside the
 * block), "in FN", from main at line L. Run natively, every case exits 0. Cases ending in
 * "-under" start one byte before their block (a destination, a source or a string).
 * "clean" makes every call within its blocks: no error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

static void say(const char *c, const char *fn, const void *b, size_t n, const void *a, int line)
{
	fprintf(stderr, "strbugs: %s fn=%s block=%p size=%zu addr=%p line=%d\n", c, fn, b, n, a, line);
}

static volatile size_t sink;

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	char *volatile p = malloc(16), *volatile q = malloc(16), *volatile big = malloc(64);
	char *volatile s = malloc(8);           /* "abcdefg" and its terminator: 8 bytes */
	char *volatile u = malloc(8);           /* 8 letters, no terminator */

	memcpy(s, "abcdefg", 8);
	memcpy(u, "ABCDEFGH", 8);
	memset(q, 'q', 16);
	if (!strcmp(c, "memcpy-write")) {
		say(c, "memcpy", p, 16, p + 16, __LINE__ + 1);
		memcpy(p, big, 17);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memcpy-read")) {
		say(c, "memcpy", q, 16, q + 16, __LINE__ + 1);
		memcpy(big, q, 17);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memmove")) {
		say(c, "memmove", p, 16, p + 16, __LINE__ + 1);
		memmove(p + 1, p, 16);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memset-under")) {
		say(c, "memset", p, 16, p - 1, __LINE__ + 1);
		memset(p - 1, 0, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memcpy-read-under")) {
		say(c, "memcpy", q, 16, q - 1, __LINE__ + 1);
		memcpy(big, q - 1, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcpy-under")) {
		say(c, "strcpy", p, 16, p - 1, __LINE__ + 1);
		strcpy(p - 1, "ab");
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memcmp")) {
		memset(big, 'q', 64);
		say(c, "memcmp", q, 16, q + 16, __LINE__ + 1);
		sink = (size_t)memcmp(big, q, 17);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memchr")) {
		say(c, "memchr", q, 16, q + 16, __LINE__ + 1);
		sink = (size_t)memchr(q, 'z', 17);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strlen")) {
		say(c, "strlen", u, 8, u + 8, __LINE__ + 1);
		sink = strlen(u);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strnlen")) {
		say(c, "strnlen", u, 8, u + 8, __LINE__ + 1);
		sink = strnlen(u, 9);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcpy")) {
		char *volatile d = malloc(7);
		say(c, "strcpy", d, 7, d + 7, __LINE__ + 1);
		strcpy(d, s);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strncpy")) {
		say(c, "strncpy", s, 8, s + 8, __LINE__ + 1);
		strncpy(s, "xy", 9);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcat")) {
		char *volatile d = malloc(10);
		memcpy(d, "abc", 4);
		say(c, "strcat", d, 10, d + 10, __LINE__ + 1);
		strcat(d, s);                   /* 3 + 7 + 1 bytes into 10 */
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strncat")) {
		char *volatile d = malloc(6);
		memcpy(d, "abc", 4);
		say(c, "strncat", d, 6, d + 6, __LINE__ + 1);
		strncat(d, s, 3);               /* 3 + 3 + 1 bytes into 6 */
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcmp")) {
		char *volatile v = malloc(8);
		memcpy(v, "ABCDEFGH", 8);
		say(c, "strcmp", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strcmp(u, v);    /* equal for 8 bytes, no terminator: reads on */
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcoll")) {
		char *volatile v = malloc(8);
		memcpy(v, "ABCDEFGH", 8);
		say(c, "strcoll", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strcoll(u, v);   /* the C locale: strcmp's reads */
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strncmp")) {
		char *volatile v = malloc(8);
		memcpy(v, "ABCDEFGH", 8);
		say(c, "strncmp", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strncmp(u, v, 9);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strchr")) {
		say(c, "strchr", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strchr(u, 'z');
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strrchr")) {
		say(c, "strrchr", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strrchr(u, 'A');
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strdup")) {
		say(c, "strdup", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strdup(u);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strndup")) {
		say(c, "strndup", u, 8, u + 8, __LINE__ + 1);
		sink = (size_t)strndup(u, 9);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "read")) {
		int fd = open("/dev/zero", O_RDONLY);
		say(c, "read", p, 16, p + 16, __LINE__ + 1);
		sink = (size_t)read(fd, p, 17);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "write")) {
		int fd = open("/dev/null", O_WRONLY);
		say(c, "write", q, 16, q + 16, __LINE__ + 1);
		sink = (size_t)write(fd, q, 17);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "fread")) {
		FILE *f = fopen("/dev/zero", "r");
		say(c, "fread", p, 16, p + 16, __LINE__ + 1);
		sink = fread(p, 1, 17, f);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "fwrite")) {
		FILE *f = fopen("/dev/null", "w");
		say(c, "fwrite", q, 16, q + 16, __LINE__ + 1);
		sink = fwrite(q, 1, 17, f);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "fgets")) {
		FILE *f = fopen(argv[0], "r");          /* a binary: no newline in its first 16 bytes */
		say(c, "fgets", p, 16, p + 16, __LINE__ + 1);
		sink = (size_t)fgets(p, 17, f);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "snprintf")) {
		say(c, "snprintf", p, 16, p + 16, __LINE__ + 1);
		sink = (size_t)snprintf(p, 17, "%s", "0123456789abcdef");
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memcpy-write-under")) {
		say(c, "memcpy", p, 16, p - 1, __LINE__ + 1);
		memcpy(p - 1, big, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memmove-under")) {
		say(c, "memmove", p, 16, p - 1, __LINE__ + 1);
		memmove(p - 1, q, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memcmp-under")) {
		say(c, "memcmp", q, 16, q - 1, __LINE__ + 1);
		sink = (size_t)memcmp(q - 1, big, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "memchr-under")) {
		say(c, "memchr", q, 16, q - 1, __LINE__ + 1);
		sink = (size_t)memchr(q - 1, 'z', 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strlen-under")) {
		say(c, "strlen", s, 8, s - 1, __LINE__ + 1);
		sink = strlen(s - 1);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strnlen-under")) {
		say(c, "strnlen", s, 8, s - 1, __LINE__ + 1);
		sink = strnlen(s - 1, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcpy-src-under")) {
		say(c, "strcpy", s, 8, s - 1, __LINE__ + 1);
		strcpy(big, s - 1);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strncpy-under")) {
		say(c, "strncpy", p, 16, p - 1, __LINE__ + 1);
		strncpy(p - 1, "xy", 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcat-under")) {
		big[0] = 0;
		say(c, "strcat", s, 8, s - 1, __LINE__ + 1);
		strcat(big, s - 1);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strncat-under")) {
		big[0] = 0;
		say(c, "strncat", s, 8, s - 1, __LINE__ + 1);
		strncat(big, s - 1, 3);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcmp-under")) {
		say(c, "strcmp", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strcmp(s - 1, "x");
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strcoll-under")) {
		say(c, "strcoll", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strcoll(s - 1, "x");
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strncmp-under")) {
		say(c, "strncmp", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strncmp(s - 1, "x", 3);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strchr-under")) {
		say(c, "strchr", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strchr(s - 1, 'g');
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strrchr-under")) {
		say(c, "strrchr", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strrchr(s - 1, 'a');
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strdup-under")) {
		say(c, "strdup", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strdup(s - 1);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "strndup-under")) {
		say(c, "strndup", s, 8, s - 1, __LINE__ + 1);
		sink = (size_t)strndup(s - 1, 3);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "read-under")) {
		int fd = open("/dev/zero", O_RDONLY);
		say(c, "read", p, 16, p - 1, __LINE__ + 1);
		sink = (size_t)read(fd, p - 1, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "write-under")) {
		int fd = open("/dev/null", O_WRONLY);
		say(c, "write", q, 16, q - 1, __LINE__ + 1);
		sink = (size_t)write(fd, q - 1, 4);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "fread-under")) {
		FILE *f = fopen("/dev/zero", "r");
		say(c, "fread", p, 16, p - 1, __LINE__ + 1);
		sink = fread(p - 1, 1, 4, f);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "fwrite-under")) {
		FILE *f = fopen("/dev/null", "w");
		say(c, "fwrite", q, 16, q - 1, __LINE__ + 1);
		sink = fwrite(q - 1, 1, 4, f);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "fgets-under")) {
		FILE *f = fopen("/dev/zero", "r");
		say(c, "fgets", p, 16, p - 1, __LINE__ + 1);
		sink = (size_t)fgets(p - 1, 4, f);
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "snprintf-under")) {
		say(c, "snprintf", p, 16, p - 1, __LINE__ + 1);
		sink = (size_t)snprintf(p - 1, 4, "%s", "abc");
		sink += __LINE__;      /* a tail of its own: the call keeps its line */
	} else if (!strcmp(c, "clean")) {
		char *volatile d = malloc(32);
		memcpy(p, q, 16);
		memmove(p + 1, p, 15);
		memset(p, 0, 16);
		sink = (size_t)memcmp(p, q, 16) + (size_t)memchr(q, 'q', 16) + strlen(s) + strnlen(u, 8);
		strcpy(d, s);
		strncpy(d, s, 32);
		strcat(d, s);
		strncat(d, s, 3);
		sink += (size_t)strcmp(d, s) + (size_t)strncmp(u, u, 8) + (size_t)strchr(s, 'g') +
			(size_t)strrchr(s, 'a') + (size_t)strdup(s) + (size_t)strndup(u, 8);
		int fd = open("/dev/zero", O_RDONLY);
		FILE *f = fopen("/dev/zero", "r");
		sink += (size_t)read(fd, p, 16) + fread(q, 1, 16, f) + (size_t)snprintf(p, 16, "%d", 42);
		printf("strbugs: clean ok\n");
	} else {
		fprintf(stderr, "usage: strbugs CASE (see the source)\n");
		return 2;
	}
	return 0;
}
