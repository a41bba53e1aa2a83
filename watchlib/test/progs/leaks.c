/*
 * Leaks for --check's leak check, by case (argv[1]):
 *   direct    one 77-byte block lost (leak_one), one 40-byte block kept in a global
 *   list      a 3-node list lost: its head direct, the 2 nodes after it indirect
 *   cycle     two 48-byte blocks pointing at each other, lost: one direct, one indirect
 *   none      every block freed or reachable (a global, a chain from it, an open FILE)
 *   exit      direct's leak, then _exit(0)
 *   abort     direct's leak, then abort()
 *   fork      the child leaks a 33-byte block and exits; the parent leaks nothing
 * Each leaking function is out of line and the stack is scrubbed after it, so that no stale
 * copy of a pointer stays where the scan looks.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

__attribute__((noipa)) static void leak_cycle(void)
{
	void **a = opaque(malloc(48)), **b = opaque(malloc(48));
	a[0] = b;
	b[0] = a;
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
		fprintf(stderr, "usage: leaks direct|list|cycle|none|exit|abort|fork\n");
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
