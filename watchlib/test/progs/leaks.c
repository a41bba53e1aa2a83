/*
 * Leaks for --check's leak check, by case (argv[1]):
 *   direct    one 77-byte block lost (leak_one), one 40-byte block kept in a global
 *   list      a 3-node list lost: its head direct, the 2 nodes after it indirect
 *   cycle     two 48-byte blocks pointing at each other, lost: one direct, one indirect
 *   none      every block freed or reachable (a global, a chain from it, an open FILE)
 *   exit      direct's leak, then _exit(0)
 *   abort     direct's leak, then abort()
 *   fork      the child leaks a 33-byte block and exits; the parent leaks nothing
 *   roots     blocks reachable only from another thread's stack (the thread still blocked
 *             at exit), only from that thread's TLS, only from the main thread's TLS, and one
 *             freed by an atexit handler: none lost; plus direct's leak of 55 bytes, so that
 *             the check is seen to run
 *   sparse    big, barely touched memory, whose untouched pages the scan skips: a kept 4 MiB
 *             block whose middle and last words point to blocks (reachable), an 8 MiB
 *             anonymous mapping with one pointer 5 MiB in (reachable), a lost 1 MiB block
 *             pointing from its last word to a 72-byte one (direct and indirect), and
 *             direct's leak of 57 bytes
 * Each leaking function is out of line and the stack is scrubbed after it, so that no stale
 * copy of a pointer stays where the scan looks.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct node { struct node *next; char pad[24]; };
void *keep;
struct node *kept_list;

__attribute__((noipa)) static void *opaque(void *p) { return p; }

__attribute__((noipa)) static void scrub(void)
{
	volatile char b[16384];
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = 0;
}

__attribute__((noipa)) static void leak_one(size_t n)
{
	char *p = opaque(malloc(n));
	strcpy(p, "lost");
}

__attribute__((noipa)) static struct node *make_list(int n)
{
	struct node *h = NULL;
	for (int i = 0; i < n; i++) {
		struct node *x = opaque(malloc(sizeof(*x)));
		x->next = h;
		h = opaque(x);
	}
	return h;
}

__attribute__((noipa)) static void leak_list(void) { opaque(make_list(3)); }

__thread void *tls_block;       /* not static: stores to it stay */
static void *freed_at_exit;
static int ready[2];

static void free_at_exit(void)
{
	free(freed_at_exit);
}

/* Keeps one block on its stack and one in its TLS, says so, and blocks until the end. */
static void *holder(void *arg)
{
	void *volatile on_stack = opaque(malloc(61));
	char c = 0;

	(void)arg;
	tls_block = opaque(malloc(62));
	if (write(ready[1], &c, 1) != 1)
		return NULL;
	for (;;)
		pause();
	return on_stack;
}

__attribute__((noipa)) static int roots(void)
{
	pthread_t t;
	char c;

	tls_block = opaque(malloc(63));
	freed_at_exit = opaque(malloc(64));
	atexit(free_at_exit);
	if (pipe(ready) || pthread_create(&t, NULL, holder, NULL) || read(ready[0], &c, 1) != 1)
		return -1;
	leak_one(55);
	return 0;
}

__attribute__((noipa)) static void leak_cycle(void)
{
	void **a = opaque(malloc(48)), **b = opaque(malloc(48));
	a[0] = b;
	b[0] = a;
}

void **big_kept;

__attribute__((noipa)) static int sparse(void)
{
	size_t n = (4u << 20) / sizeof(void *), m = (1u << 20) / sizeof(void *);
	void **map = mmap(NULL, 8u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void **lost = opaque(malloc(m * sizeof(void *)));

	big_kept = opaque(malloc(n * sizeof(void *)));
	if (map == MAP_FAILED || !big_kept || !lost)
		return -1;
	big_kept[n / 2 + 1] = opaque(malloc(70));
	big_kept[n - 1] = opaque(malloc(69));
	map[(5u << 20) / sizeof(void *)] = opaque(malloc(71));
	lost[m - 1] = opaque(malloc(72));
	leak_one(57);
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	keep = malloc(40);
	if (!strcmp(c, "direct") || !strcmp(c, "exit") || !strcmp(c, "abort"))
		leak_one(77);
	else if (!strcmp(c, "list"))
		leak_list();
	else if (!strcmp(c, "cycle"))
		leak_cycle();
	else if (!strcmp(c, "none")) {
		kept_list = make_list(3);
		free(opaque(malloc(100)));
		if (!fopen("/dev/null", "r"))
			return 1;
	} else if (!strcmp(c, "roots")) {
		if (roots() < 0)
			return 1;
	} else if (!strcmp(c, "sparse")) {
		if (sparse() < 0)
			return 1;
	} else if (!strcmp(c, "fork")) {
		pid_t pid = fork();
		int st;
		if (pid == 0) {
			leak_one(33);
			scrub();
			exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 1;
	} else {
		fprintf(stderr, "usage: leaks direct|list|cycle|none|exit|abort|fork|roots|sparse\n");
		return 2;
	}
	scrub();
	printf("leaks: %s done\n", c);
	fflush(stdout);
	if (!strcmp(c, "exit"))
		_exit(0);
	if (!strcmp(c, "abort"))
		abort();
	return 0;
}
