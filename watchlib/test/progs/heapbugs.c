/*
 * heapbugs BUG: one heap error, for ulpt-watch --check. Before the bug it prints to stderr
 * (unbuffered: no heap buffer involved) one line
 *     heapbugs: BUG block=0xADDR size=N addr=0xADDR line=L
 * giving the block, the address the report must name and the source line of the bad access
 * (or free). Expected report, one error each:
 *   overflow-write   heap-overflow    write  addr = block + 24, size 1, block of 24
 *   overflow-odd-write heap-overflow  write  addr = block + 13, size 1, block of 13 (caught
 *                    at the access with --align=1; by default the block has 3 bytes of padding
 *                    after it, and the block's canary finds the write at exit)
 *   pad-write-free   heap-overflow    write  addr = block + 13, size 2, block of 13: into the
 *                    padding, found at free (the caller of free, main, is in the backtrace)
 *   pad-underflow-free heap-overflow  write  addr = block - 1, size 1, block of 100: into the
 *                    open bytes before it in its first line, found at free
 *   underflow-read   heap-overflow    read   addr = block - 1, size 1, block of 16
 *                    (with --redzone=exact; by default it is in the block's open first line)
 *   underflow-far-read heap-overflow  read   addr = block - 120, size 1, block of 16 (past
 *                    the 112 bytes before the block in its first line, in the red-zone line)
 *   use-after-free   use-after-free   read   addr = block + 4, size 1, block of 20; "freed" has main
 *   double-free      double-free      free   addr = block, block of 24; "freed" has main
 *   free-middle      invalid-free     free   addr = block + 8, block of 32
 *   free-stack       invalid-free     free   addr = a stack address, block null
 *   memcpy-overflow  heap-overflow    write  by memcpy(block, src, 17), block of 16: the first
 *                    frame may be in libc, main is in the backtrace
 *   far-overflow-4k  heap-overflow    write  addr = block + 4096 + 200, size 1, block of 4096
 *                    (its next neighbour is another 4096-byte block: red zones grow with size)
 *   far-overflow-64k heap-overflow    write  addr = block + 65536 + 2000, block of 65536
 *   far-underflow-64k heap-overflow   read   addr = block - 2000, block of 65536
 *   pad-write-realloc heap-overflow   write  addr = block + 13, size 1, block of 13: into the
 *                    padding, found at realloc (the caller of realloc, main, is in the backtrace)
 *   wild-write       heap-overflow    write  addr = block + 200000, size 1, block of 100, the
 *                    last one allocated: into heap memory the allocator has not handed out
 *   wild-read        heap-overflow    read   addr = block + 5000, size 1, the same
 * Every error but free-stack has an "allocated" backtrace with main in it.
 * Run natively, double-free, free-middle and free-stack abort in glibc; the others exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(const char *bug, const volatile void *block, size_t size, const volatile void *addr,
		int line)
{
	fprintf(stderr, "heapbugs: %s block=%p size=%zu addr=%p line=%d\n", bug, (void *)block,
		size, (void *)addr, line);
}

int main(int argc, char **argv)
{
	const char *bug = argc > 1 ? argv[1] : "";
	volatile char *p;
	char *volatile q;       /* hides pointers from gcc's -Wfree-nonheap-object, -Wuse-after-free */
	char stack[32];
	static char src[17] = "0123456789abcdef";
	volatile char sink;

	if (!strcmp(bug, "overflow-write")) {
		p = malloc(24);
		say(bug, p, 24, p + 24, __LINE__ + 1);
		p[24] = 'x';
	} else if (!strcmp(bug, "overflow-odd-write")) {
		p = malloc(13);
		say(bug, p, 13, p + 13, __LINE__ + 1);
		p[13] = 'x';
	} else if (!strcmp(bug, "pad-write-free")) {
		q = malloc(13);
		say(bug, q, 13, q + 13, __LINE__ + 3);
		q[13] = 'x';
		q[14] = 'y';
		free(q);
	} else if (!strcmp(bug, "pad-underflow-free")) {
		q = malloc(100);
		say(bug, q, 100, q - 1, __LINE__ + 2);
		q[-1] = 'x';
		free(q);
	} else if (!strcmp(bug, "underflow-read")) {
		p = malloc(16);
		say(bug, p, 16, p - 1, __LINE__ + 1);
		sink = p[-1];
	} else if (!strcmp(bug, "underflow-far-read")) {
		p = malloc(16);
		say(bug, p, 16, p - 120, __LINE__ + 1);
		sink = p[-120];
	} else if (!strcmp(bug, "use-after-free")) {
		q = malloc(20);
		memset(q, 1, 20);
		free(q);
		p = q;
		say(bug, p, 20, p + 4, __LINE__ + 1);
		sink = p[4];
	} else if (!strcmp(bug, "double-free")) {
		q = malloc(24);
		free(q);
		say(bug, q, 24, q, __LINE__ + 1);
		free(q);
	} else if (!strcmp(bug, "free-middle")) {
		q = malloc(32);
		say(bug, q, 32, q + 8, __LINE__ + 1);
		free(q + 8);
	} else if (!strcmp(bug, "free-stack")) {
		q = stack;
		say(bug, NULL, 0, q, __LINE__ + 1);
		free(q);
	} else if (!strcmp(bug, "memcpy-overflow")) {
		q = malloc(16);
		say(bug, q, 16, q + 16, __LINE__ + 1);
		memcpy(q, src, 17);
	} else if (!strcmp(bug, "far-overflow-4k")) {
		/* Two neighbours, so that a one-line red zone would let the write land in one. */
		q = malloc(4096);
		p = malloc(4096);
		say(bug, q, 4096, q + 4096 + 200, __LINE__ + 1);
		q[4096 + 200] = 'x';
	} else if (!strcmp(bug, "far-overflow-64k")) {
		q = malloc(65536);
		p = malloc(65536);
		say(bug, q, 65536, q + 65536 + 2000, __LINE__ + 1);
		q[65536 + 2000] = 'x';
	} else if (!strcmp(bug, "far-underflow-64k")) {
		p = malloc(65536);
		q = malloc(65536);
		say(bug, q, 65536, q - 2000, __LINE__ + 1);
		sink = q[-2000];
	} else if (!strcmp(bug, "pad-write-realloc")) {
		q = malloc(13);
		q[13] = 'x';
		say(bug, q, 13, q + 13, __LINE__ + 1);
		q = realloc(q, 100);
	} else if (!strcmp(bug, "wild-write")) {
		p = malloc(100);
		say(bug, p, 100, p + 200000, __LINE__ + 1);
		p[200000] = 'x';
	} else if (!strcmp(bug, "wild-read")) {
		p = malloc(100);
		say(bug, p, 100, p + 5000, __LINE__ + 1);
		sink = p[5000];
	} else {
		fprintf(stderr, "usage: heapbugs overflow-write|overflow-odd-write|pad-write-free|"
			"pad-underflow-free|underflow-read|"
			"underflow-far-read|"
			"use-after-free|double-free|free-middle|free-stack|memcpy-overflow|"
			"far-overflow-4k|far-overflow-64k|far-underflow-64k|pad-write-realloc|"
			"wild-write|wild-read\n");
		return 2;
	}
	(void)sink;
	return 0;
}
