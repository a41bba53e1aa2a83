/*
 * deliveries: accesses that --heap must count the same with --delivery=count, log and fault,
 * where they once counted differently (tests/suites/watch.sh runs it each way, with --heap=w
 * and --heap=rw).
 *
 *                                                                  writes      reads (rw)
 *   calloc then a store into the cleared bytes, 200 times          200
 *     (the agent clears them: its stores, logged or counted where the page stays denied on
 *     mprotect, must not count, nor hide the program's)
 *   a 70,000-byte block written byte by byte, then realloc'd       70,000
 *     to 140,000 bytes (the agent's copy is not the program's,
 *     also when the log fills during it); a read and one more       1           1
 *     store into the new block
 *   two 8-byte stores across a page boundary into a page not      4
 *     yet touched, each after a store into the page before
 *     (paging comes first: the page's #PF must not cost a second delivery)
 *   two counters cleared, 300 add-to-memory and 100 locked          402         400
 *     increments (a read and a write each, as the CPU's counters
 *     count them), then the two counters read                                    2
 *   64 16-byte SSE stores and 32 SSE loads: a store is a write      64          32
 *     only, a load a read only
 *   10 stores into a block, then freed (its counts are taken at     10
 *     free); a block of the same size after it (the slot again)
 *
 *   allocations: 200 + 1 + 1 (realloc) + 1 + 1 + 1 + 2 = 207; writes 70,681; with
 *   --heap=rw reads 435. No stdio: write(2) only, so libc allocates and accesses nothing of
 *   its own, and no REP string instruction of the program's (mprotect's faults count one per
 *   page there, where the CPU and the count table count each iteration).
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
	int *c = malloc(64);
	if (!c)
		return 1;
	unsigned adds, incs;
	asm volatile("movl $0, (%0)\n\tmovl $0, 4(%0)" :: "r"(c) : "memory");      /* 2 writes */
	for (int i = 0; i < 300; i++)
		asm volatile("addl $1, (%0)" :: "r"(c) : "memory", "cc");
	for (int i = 0; i < 100; i++)
		asm volatile("lock incl 4(%0)" :: "r"(c) : "memory", "cc");
	asm volatile("movl (%2), %0\n\tmovl 4(%2), %1" : "=&r"(adds), "=&r"(incs) : "r"(c) : "memory");
	if (adds != 300 || incs != 100)
		return 1;
	char *v = malloc(1024);
	if (!v)
		return 1;
	for (int i = 0; i < 64; i++)
		asm volatile("pxor %%xmm0, %%xmm0\n\tmovdqu %%xmm0, (%0)" :: "r"(v + 16 * (i & 63)) :
			     "xmm0", "memory");
	for (int i = 0; i < 32; i++)
		asm volatile("movdqu (%0), %%xmm0" :: "r"(v + 32 * i) : "xmm0", "memory");
	volatile char *f = malloc(200);
	if (!f)
		return 1;
	for (int i = 0; i < 10; i++)
		f[i * 20] = (char)i;
	free((void *)f);
	if (!malloc(200))
		return 1;
	static const char ok[] = "deliveries: ok\n";
	return write(1, ok, sizeof(ok) - 1) == sizeof(ok) - 1 ? 0 : 1;
}
