/*
 * Large blocks under --heap=rw: each delivery must count exactly 672 writes and 385 reads
 * (the count table's take reads only the resident pages of a block's many counters, count.c).
 * A 1 MiB block written once a page, a 3 MiB calloc'd one written every 8 KiB with a read of
 * the first, the first freed, a 2 MiB one written every 64 KiB and counted at exit.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	volatile char *a = malloc(1 << 20), *b = calloc(1, 3 << 20), *c;

	if (!a || !b)
		return 2;
	for (int i = 0; i < (1 << 20); i += 4096)
		a[i] = 1;                               /* 256 writes */
	for (int i = 0; i < (3 << 20); i += 8192)
		b[i] = (char)(a[i % (1 << 20)] + 1);    /* 384 reads, 384 writes */
	free((void *)a);
	c = malloc(2 << 20);
	if (!c)
		return 2;
	for (int i = 0; i < (2 << 20); i += 65536)
		c[i] = 2;                               /* 32 writes */
	if (b[0] != 2)                              /* 1 read */
		return 1;
	/* write(2) from a static buffer: on mprotect stdout's (a heap block) would be denied. */
	return write(1, "bigblocks: ok\n", 14) == 14 ? 0 : 3;
}
