/*
 * deliveries: accesses that --heap must count the same with --delivery=log and =fault, where
 * each once counted differently (tests/suites/watch.sh runs it both ways, --heap=w).
 *
 *   calloc then a store into the cleared bytes, 200 times        200 writes
 *     (the agent clears them with wide stores that log nothing: they must not hide the store)
 *   a 70,000-byte block written byte by byte, then realloc'd       70,000 writes
 *     to 140,000 bytes (the agent's copy is not the program's, also when the log fills
 *     during it) and one more store into the new block            1 write
 *   two 8-byte stores across a page boundary into a page not      4 writes
 *     yet touched, each after a store into the page before
 *     (paging comes first: the page's #PF must not cost a second delivery)
 *
 *   allocations: 200 + 1 + 1 (realloc) + 1 = 203; writes 70,205. No stdio: write(2) only, so
 *   libc allocates and writes nothing of its own.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	for (int i = 0; i < 200; i++) {
		volatile long *p = calloc(1, 72);
		if (!p)
			return 1;
		p[7] = i;
	}
	volatile char *big = malloc(70000);
	if (!big)
		return 1;
	for (int i = 0; i < 70000; i++)
		big[i] = (char)i;
	volatile char *bigger = realloc((void *)big, 140000);
	if (!bigger || bigger[69999] != (char)69999)
		return 1;
	bigger[139999] = 1;
	char *q = malloc(5 * 4096);
	if (!q)
		return 1;
	char *b = (char *)(((uintptr_t)q + 4096 + 100) & ~(uintptr_t)4095);
	for (int k = 0; k < 2; k++, b += 4096) {
		*(volatile char *)(b - 100) = 1;
		*(volatile uint64_t *)(b - 4) = 0x0102030405060708ull;
	}
	static const char ok[] = "deliveries: ok\n";
	return write(1, ok, sizeof(ok) - 1) == sizeof(ok) - 1 ? 0 : 1;
}
