/*
 * clean: a correct program doing tricky but legal things with the heap. Under
 * ulpt-watch --check it must run as it does natively: no error reported, exit status 0,
 * and its output ends with "clean: ok".
 *   - malloc(0) and free of it, free(NULL)
 *   - realloc growing and shrinking a block (contents kept), realloc(NULL, n)
 *   - calloc (all zero), posix_memalign(64) and (4096), aligned_alloc(256)
 *   - every byte, up to the last one, of blocks of every size 1..67
 *   - strlen, strnlen, strcpy, strcmp, strncmp, memcmp, memchr, strchr, strrchr, memcpy,
 *     memmove, memset, strdup on strings of every length 0..300 in blocks of exactly
 *     length + 1 bytes (libc's vector routines read aligned chunks past the terminator:
 *     legal, since they never cross into another page, and must not be reported)
 *   - memcmp of the last 1..31 bytes of a block whose next slot holds a freed block (libc
 *     reads a 32-byte chunk from there on, over the freed bytes)
 *   - strcmp of heap strings against a key that ends at a page boundary (libc goes on in
 *     8-byte chunks there, past the heap string's end)
 *   - qsort of a heap array, printf of doubles (%f, %g, %e)
 *   - fork: the child frees a block and exits; the parent frees its own copy of it
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failed;

#define CHECK(cond) do { if (!(cond)) { printf("clean: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	failed = 1; } } while (0)

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void zero_size(void)
{
	void *p = malloc(0);
	free(p);
	free(NULL);
}

static void reallocs(void)
{
	char *p = malloc(10), *q;
	int i, ok = 1;

	for (i = 0; i < 10; i++)
		p[i] = (char)('a' + i);
	p = realloc(p, 1000);                   /* grow: the first 10 bytes are kept */
	CHECK(p != NULL);
	for (i = 0; i < 10; i++)
		ok &= p[i] == 'a' + i;
	for (i = 10; i < 1000; i++)
		p[i] = (char)i;
	p = realloc(p, 5);                      /* shrink */
	CHECK(p != NULL);
	for (i = 0; i < 5; i++)
		ok &= p[i] == 'a' + i;
	p = realloc(p, 7);                      /* grow a little, maybe in place */
	for (i = 0; i < 5; i++)
		ok &= p[i] == 'a' + i;
	p[6] = 'z';
	CHECK(ok);
	free(p);
	q = realloc(NULL, 33);                  /* realloc(NULL, n) is malloc(n) */
	memset(q, 1, 33);
	free(q);
}

static void callocs_aligned(void)
{
	unsigned char *c = calloc(1000, 1), *d = calloc(7, 3);
	void *m;
	int i, ok = 1;

	for (i = 0; i < 1000; i++)
		ok &= c[i] == 0;
	for (i = 0; i < 21; i++)
		ok &= d[i] == 0;
	CHECK(ok);
	free(c);
	free(d);
	CHECK(posix_memalign(&m, 64, 100) == 0 && (uintptr_t)m % 64 == 0);
	memset(m, 2, 100);
	free(m);
	CHECK(posix_memalign(&m, 4096, 5000) == 0 && (uintptr_t)m % 4096 == 0);
	memset(m, 3, 5000);
	((char *)m)[4999] = 4;
	free(m);
	m = aligned_alloc(256, 512);
	CHECK(m != NULL && (uintptr_t)m % 256 == 0);
	memset(m, 4, 512);
	free(m);
}

/* Blocks of every size 1..67: write and read every byte, up to the last. */
static void odd_sizes(void)
{
	for (int n = 1; n <= 67; n++) {
		volatile unsigned char *p = malloc(n);
		unsigned sum = 0;

		for (int i = 0; i < n; i++)
			p[i] = (unsigned char)i;
		for (int i = 0; i < n; i++)
			sum += p[i];
		CHECK(sum == (unsigned)(n * (n - 1) / 2));
		CHECK(p[n - 1] == n - 1);
		free((void *)p);
	}
}

static void strings(void)
{
	for (size_t len = 0; len <= 300; len++) {
		char *s = malloc(len + 1), *d = malloc(len + 1), *t, *e = malloc(len + 1);
		size_t i;

		for (i = 0; i < len; i++)
			s[i] = (char)('a' + i % 26);
		s[len] = 0;
		CHECK(strlen(s) == len);
		CHECK(strnlen(s, 1000) == len);
		CHECK(strcpy(d, s) == d);
		CHECK(strcmp(d, s) == 0);
		CHECK(strncmp(d, s, len + 10) == 0);
		CHECK(memcmp(d, s, len + 1) == 0);
		CHECK(memchr(s, 0, len + 1) == s + len);
		CHECK(memchr(s, '#', len) == NULL);
		CHECK(strchr(s, 0) == s + len);
		CHECK(strchr(s, '#') == NULL);
		CHECK(strrchr(s, 'a') == (len ? s + (len - 1) / 26 * 26 : NULL));
		t = strdup(s);
		CHECK(t && strcmp(t, s) == 0);
		memcpy(e, s, len + 1);
		CHECK(strcmp(e, s) == 0);
		if (len) {
			memmove(e + 1, e, len - 1);     /* overlapping */
			CHECK(e[0] == 'a' && (len < 2 || e[1] == 'a'));
			e[len - 1] = 'A';
			CHECK(strcmp(e, s) != 0);   /* "aa..." vs "ab...", "A" vs "a" */
			CHECK(strcmp(s, "") > 0);
		}
		memset(d, 0, len + 1);
		CHECK(strlen(d) == 0);
		free(s);
		free(d);
		free(t);
		free(e);
	}
}

static void sorting_printing(void)
{
	int n = 200, *a = malloc(n * sizeof(int)), i, ok = 1;
	char *buf = malloc(64);

	for (i = 0; i < n; i++)
		a[i] = (i * 7919) % n;
	qsort(a, n, sizeof(int), cmp_int);
	for (i = 0; i < n; i++)
		ok &= a[i] == i;
	CHECK(ok);
	free(a);
	snprintf(buf, 64, "%f %g %e", 3.25, 1e-5, 12345.678);
	CHECK(strcmp(buf, "3.250000 1e-05 1.234568e+04") == 0);
	printf("clean: %s; pi is about %f\n", buf, 3.14159265);
	free(buf);
}

static void forking(void)
{
	char *p = malloc(100);
	int status;
	pid_t pid;

	memset(p, 5, 100);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		free(p);                                /* the child's copy */
		exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(p[99] == 5);                          /* the parent's block is still its own */
	free(p);
}

/*
 * strcmp near a page end goes on in 8-byte chunks, which can read past the end of the other
 * string's block: the key ends 0..39 bytes before a page boundary, the heap strings at their
 * red zone (or 8-byte alignment padding).
 */
static void strcmp_page_end(void)
{
	static char page[8192] __attribute__((aligned(4096)));

	for (size_t n = 1; n <= 48; n++)
		for (size_t d = 0; d < 40; d++) {
			char *key = page + 4096 - n - 1 - d, *s = malloc(n + 1);

			memset(key, 'a' + n % 26, n);
			key[n] = 0;
			memcpy(s, key, n + 1);
			CHECK(strcmp(key, s) == 0 && strcmp(s, key) == 0);
			free(s);
		}
}

static void before_freed(void)
{
	char key[40];

	/* a ends at a line boundary; b's slot comes right after a's, b starts 8 bytes into its
	 * first line, and is freed. libc's memcmp of a's last n bytes reads 32 bytes from there
	 * on: past a's end, over b's freed bytes. */
	memset(key, 'k', sizeof(key));
	for (size_t n = 1; n <= 31; n++) {
		char *a = malloc(100), *b = malloc(120);

		memset(a, 'k', 100);
		free(b);
		CHECK(memcmp(a + 100 - n, key, n) == 0);
		CHECK(memcmp(key, a + 100 - n, n) == 0);
		free(a);
	}
}

int main(void)
{
	zero_size();
	reallocs();
	callocs_aligned();
	odd_sizes();
	strings();
	before_freed();
	strcmp_page_end();
	sorting_printing();
	forking();
	printf("clean: %s\n", failed ? "FAILED" : "ok");
	return failed;
}
