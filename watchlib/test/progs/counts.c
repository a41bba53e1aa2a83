/*
 * counts: exact read and write counts on one watched int between hot neighbours.
 *
 * One 128-byte aligned line holds int before[16] (+0), int watched (+64), int after[16] (+68);
 * the symbols are defined in assembly so that the layout is fixed, with ELF sizes (-w watched
 * finds 4 bytes). Every iteration of every loop also reads and writes before[15] and after[0]
 * (the bytes right next to watched) and one more element of each: hundreds of false faults.
 *
 *   ulpt-watch -w watched/rw:  reads = 1000, writes = 2000
 *   ulpt-watch -w watched:     reads = 0,    writes = 2000   (mode w: reads are not watched)
 *   ulpt-watch -w after:8:     writes = 3384: 3000 of after[0] (one per iteration, by
 *                              hammer) and 384 stores of after[(i >> 2) & 15] that land in
 *                              after[0..1] (i % 64 < 8); reads = 3000 with /rw
 *     1500 plain stores  (movl %reg, watched)
 *      500 read-modify-writes (addl $1, watched): each counts once, as a write
 *     1000 loads         (movl watched, %reg)
 * Nothing else touches watched (it is in .data, with no relocation). Exit status 0 and
 * "counts: ok" when the final value (read by the 1000 loads) is right.
 */
#include <stdint.h>
#include <stdio.h>

asm(".pushsection .data\n"
    ".balign 128\n"
    ".globl before\n.type before, @object\n.size before, 64\n"
    "before: .zero 64\n"
    ".globl watched\n.type watched, @object\n.size watched, 4\n"
    "watched: .long 0\n"
    ".globl after\n.type after, @object\n.size after, 64\n"
    "after: .zero 64\n"
    ".popsection\n");
extern volatile int before[16], watched, after[16];

#define READS   1000
#define STORES  1500
#define RMWS    500

/* Two reads and two writes of the watched int's closest neighbours, and of one more each. */
static inline void hammer(int i)
{
	before[15] = before[15] + 1;
	after[0] = after[0] + 1;
	before[i & 15] = i;
	after[(i >> 2) & 15] = i;
}

int main(void)
{
	long sum = 0;
	int i;

	if ((uintptr_t)&watched / 128 != (uintptr_t)&before[0] / 128 ||
	    (uintptr_t)&watched / 128 != (uintptr_t)&after[14] / 128) {
		printf("counts: bad layout %p %p %p\n", (void *)before, (void *)&watched, (void *)after);
		return 1;
	}
	for (i = 0; i < STORES; i++) {           /* 1500 writes */
		hammer(i);
		watched = i;
	}
	for (i = 0; i < RMWS; i++) {             /* 500 writes (read-modify-write) */
		hammer(i);
		asm volatile("addl $1, %0" : "+m"(*(int *)&watched));
	}
	for (i = 0; i < READS; i++) {            /* 1000 reads */
		hammer(i);
		sum += watched;
	}
	/* watched ends at STORES - 1 + RMWS = 1999 */
	if (sum != (long)READS * (STORES - 1 + RMWS)) {
		printf("counts: wrong sum %ld\n", sum);
		return 1;
	}
	printf("counts: ok reads=%d writes=%d\n", READS, STORES + RMWS);
	return 0;
}
