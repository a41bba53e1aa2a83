/*
 * heapthreads: --heap in threads. 4 threads each allocate a block of 3 pages, make 5,000
 * stores and 1,000 locked increments into its middle page (a page no other thread touches:
 * on mprotect a page opened for one thread's instruction is open to all), read it once, and
 * free it. Each thread has its own share of the count table (--delivery=count), or its
 * accesses are faults (the log is the main thread's).
 *
 *   --heap=rw: allocations 4, writes 4 x (5,000 + 1,000) = 24,000,
 *              reads 4 x (1,000 + 1) = 4,004 (a locked increment: a read and a write)
 * No stdio: write(2) only. Exit status 0 and "heapthreads: ok" when every value is right.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define NTHREADS 4
#define STORES 5000
#define INCS 1000

static void *work(void *arg)
{
	volatile int *p = malloc(3 * 4096);
	int v;

	(void)arg;
	if (!p)
		return (void *)1;
	p += 1024 + 16;                         /* the middle page */
	for (int i = 1; i < STORES; i++)
		p[i & 31] = i;
	p[0] = 0;                               /* the 5,000th */
	for (int i = 0; i < INCS; i++)
		__atomic_add_fetch(p, 1, __ATOMIC_RELAXED);
	v = p[0];
	free((void *)(p - 1024 - 16));
	return (void *)(long)(v != INCS);
}

int main(void)
{
	pthread_t t[NTHREADS];
	void *r;
	int bad = 0;

	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, work, NULL))
			return 1;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], &r);
		bad |= r != NULL;
	}
	static const char ok[] = "heapthreads: ok\n";
	return !bad && write(1, ok, sizeof(ok) - 1) == sizeof(ok) - 1 ? 0 : 1;
}
