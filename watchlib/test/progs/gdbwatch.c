/*
 * gdbwatch: the program ulpt-gdb's scripted sessions debug (watchlib/test/gdb/). Each part is
 * a function the sessions name, so their output does not depend on line numbers elsewhere.
 *   gdbwatch [steps | array | threads | segv | wait]   (no argument: steps)
 * steps: writes to a global, a heap block and a local, a write of the same value, reads;
 * array: writes 10 of the 1000 ints of arr; threads: two threads each write a global;
 * segv: the program's own SIGSEGV handler recovers from a fault, then writes a global;
 * wait: waits (for ulpt-gdb -p) until `go' is set, then writes a global.
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* volatile: each store in the source is one in the program (built -O1), as the sessions'
 * expected stops have them. */
volatile int counter;
volatile long total;
volatile int arr[1000];
volatile int sink;
volatile int go;
volatile int by_thread[2];

__attribute__((noinline)) void local_part(void)
{
	volatile int loc = 1;

	loc += 2;
	loc *= 3;
	sink = loc;
}

__attribute__((noinline)) void steps(void)
{
	volatile int *h = malloc(16 * sizeof(int));

	counter = 1;
	counter = 1;                    /* the same value: a watch does not stop */
	counter = 2;
	sink = counter;                 /* a read */
	h[3] = 7;
	total = 100;
	h[3] = 8;
	local_part();
	counter = 3;
	printf("steps: %d %ld %d\n", counter, total, h[3]);
	free((void *)h);
}

__attribute__((noinline)) void array(void)
{
	for (int i = 0; i < 1000; i += 100)
		arr[i] = i + 1;
	printf("array: %d\n", arr[900]);
}

static void *thread_main(void *p)
{
	int i = (int)(long)p;

	by_thread[i] = 10 + i;
	return NULL;
}

__attribute__((noinline)) void threads(void)
{
	pthread_t t[2];

	/* One after the other, so that the order of the stops is fixed. */
	for (long i = 0; i < 2; i++) {
		pthread_create(&t[i], NULL, thread_main, (void *)i);
		pthread_join(t[i], NULL);
	}
	printf("threads: %d %d\n", by_thread[0], by_thread[1]);
}

static sigjmp_buf env;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

__attribute__((noinline)) void segv(void)
{
	char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	signal(SIGSEGV, on_segv);
	if (!sigsetjmp(env, 1))
		page[0] = 1;            /* the program's own fault: its handler recovers */
	else
		puts("segv: recovered");
	counter = 5;
	printf("segv: %d\n", counter);
}

__attribute__((noinline)) void wait_part(void)
{
	printf("wait: %d\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	counter = 9;
	printf("wait: %d\n", counter);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "steps";

	if (!strcmp(what, "steps"))
		steps();
	else if (!strcmp(what, "array"))
		array();
	else if (!strcmp(what, "threads"))
		threads();
	else if (!strcmp(what, "segv"))
		segv();
	else if (!strcmp(what, "wait"))
		wait_part();
	else
		return 2;
	return 0;
}
