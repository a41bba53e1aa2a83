/*
 * threads: 4 threads, each writing its own watched int N times and reading a shared one.
 *
 * One 128-byte aligned line holds int w0, w1, w2, w3 (+0..+15), int shared (+16) and a hot
 * int pad[27] that every thread writes too (false faults, and the four threads' watched ints
 * share a line, so the threads fault on the same line at the same time).
 *
 *   ulpt-watch -w w0 -w w1 -w w2 -w w3 -w shared/r:
 *     w0..w3:  writes = 5000 each, reads = 0 (main reads them after the join: mode w, so
 *              those reads count nothing)
 *     shared:  reads = 20000 (5000 per thread), writes = 0
 * Exit status 0 and "threads: ok" when every thread saw shared == 7 and w_k == N - 1.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

asm(".pushsection .data\n"
    ".balign 128\n"
    ".globl w0\n.type w0, @object\n.size w0, 4\nw0: .long 0\n"
    ".globl w1\n.type w1, @object\n.size w1, 4\nw1: .long 0\n"
    ".globl w2\n.type w2, @object\n.size w2, 4\nw2: .long 0\n"
    ".globl w3\n.type w3, @object\n.size w3, 4\nw3: .long 0\n"
    ".globl shared\n.type shared, @object\n.size shared, 4\nshared: .long 7\n"
    ".globl pad\n.type pad, @object\n.size pad, 108\npad: .zero 108\n"
    ".popsection\n");
extern volatile int w0, w1, w2, w3, shared, pad[27];

#define NTHREADS 4
#define N 5000

/* On main's stack: a futex on the watched page (.bss shares it with .data here) would make
 * the mprotect backend's denials visible to the kernel (EFAULT), which is another test. */
static pthread_barrier_t *start;

static void *thread(void *arg)
{
	int k = (int)(intptr_t)arg;
	volatile int *mine = k == 0 ? &w0 : k == 1 ? &w1 : k == 2 ? &w2 : &w3;
	long sum = 0;
	int i;

	pthread_barrier_wait(start);
	for (i = 0; i < N; i++) {
		pad[k * 6 + (i & 3)] = i;       /* unwatched, same line */
		*mine = i;                       /* 1 write of w_k */
		sum += shared;                   /* 1 read of shared */
	}
	return (void *)(intptr_t)(sum == 7L * N);
}

int main(void)
{
	pthread_barrier_t barrier;
	pthread_t t[NTHREADS];
	int k, ok = 1;
	void *r;

	start = &barrier;
	pthread_barrier_init(start, NULL, NTHREADS);
	for (k = 0; k < NTHREADS; k++)
		if (pthread_create(&t[k], NULL, thread, (void *)(intptr_t)k) != 0)
			return 2;
	for (k = 0; k < NTHREADS; k++) {
		pthread_join(t[k], &r);
		ok &= r != NULL;
	}
	ok &= w0 == N - 1 && w1 == N - 1 && w2 == N - 1 && w3 == N - 1;
	printf("threads: %s writes=%d each, shared reads=%d\n", ok ? "ok" : "FAILED", N, NTHREADS * N);
	return ok ? 0 : 1;
}
