/*
 * heap: a known number of heap allocations and known reads and writes of them (--heap=rw).
 *
 *   allocations made by main: 26
 *     malloc(100), calloc(50, 4), realloc(the 100-byte block, 400), posix_memalign(64, 256),
 *     aligned_alloc(4096, 4096), malloc(13), and 20 x malloc(32) (each freed at once)
 *     (realloc counts as one allocation: it hands out a block)
 *   reads by main:  1361 = 25 + 50 + 25 + 64 + 1024 + 13 + 20 * 8
 *   writes by main: 1436 = 25 + 50 + 100 + 64 + 1024 + 13 + 20 * 8
 * Every counted access is one load or one store of an int (char for the 13-byte block)
 * through a volatile pointer. libc adds its own accesses to these blocks (calloc's clearing,
 * realloc's copy) and one allocation of its own (stdout's buffer, by the printf at the end),
 * whose bytes printf then writes: the counts are at least the numbers above, and only a few
 * dozen more.
 * Exit status 0 and "heap: ok" when every value read back is right.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#define ALLOCATIONS 26
#define READS 1361
#define WRITES 1436

static int bad;

/* n stores: p[i] = i + base */
static void __attribute__((noinline)) fill(volatile int *p, int n, int base)
{
	for (int i = 0; i < n; i++)
		p[i] = i + base;
}

/* n loads, each checked against i + base */
static void __attribute__((noinline)) check(volatile int *p, int n, int base)
{
	for (int i = 0; i < n; i++)
		if (p[i] != i + base)
			bad = 1;
}

/* n loads, each checked against 0 */
static void __attribute__((noinline)) zero(volatile int *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i] != 0)
			bad = 1;
}

int main(void)
{
	volatile int *a, *b, *c, *d, *f;
	volatile char *e;
	void *m;
	int i;

	a = malloc(100);                            /* 1 */
	fill(a, 25, 1);                             /* W 25 */
	check(a, 25, 1);                            /* R 25 */
	b = calloc(50, sizeof(int));                /* 2 */
	zero(b, 50);                                /* R 50 */
	fill(b, 50, 100);                           /* W 50 */
	a = realloc((void *)a, 400);                /* 3 */
	check(a, 25, 1);                            /* R 25: the contents moved */
	fill(a, 100, 7);                            /* W 100 */
	if (posix_memalign(&m, 64, 256) != 0)       /* 4 */
		return 2;
	c = m;
	fill(c, 64, 3);                             /* W 64 */
	check(c, 64, 3);                            /* R 64 */
	d = aligned_alloc(4096, 4096);              /* 5 */
	fill(d, 1024, 5);                           /* W 1024 */
	check(d, 1024, 5);                          /* R 1024 */
	e = malloc(13);                             /* 6 */
	for (i = 0; i < 13; i++)                    /* W 13 */
		e[i] = (char)i;
	for (i = 0; i < 13; i++)                    /* R 13 */
		if (e[i] != i)
			bad = 1;
	for (i = 0; i < 20; i++) {                  /* 7 .. 26 */
		f = malloc(32);
		fill(f, 8, i);                          /* W 8 */
		check(f, 8, i);                         /* R 8 */
		free((void *)f);
	}
	free((void *)a);
	free((void *)b);
	free((void *)c);
	free((void *)d);
	free((void *)e);
	printf("heap: %s allocations=%d reads=%d writes=%d\n", bad ? "FAILED" : "ok",
	       ALLOCATIONS, READS, WRITES);
	return bad;
}
