/*
 * gdbqueue: the program of ulpt-gdb's sessions on watchpoints started in a batch, at the
 * program's resume (watchlib/preload/gdb.c's queue; watchlib/test/gdb/{batch,blocked,own57}.gdb):
 *   gdbqueue [array | blocked | own57]   (no argument: array)
 * array: writes 4 of the 1000 ints of arr; blocked: the same with SIGRTMAX - 7, the batches'
 * signal, blocked (no batch: each watchpoint starts by a call); own57: its own action for that
 * signal, raised once, then array.
 *
 * SPDX-License-Identifier: MIT
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

volatile int arr[1000];
static volatile int seen57;

__attribute__((noinline)) void array(void)
{
	for (int i = 0; i < 400; i += 100)
		arr[i] = i + 1;
	printf("array: %d\n", arr[300]);
}

__attribute__((noinline)) void blocked(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGRTMAX - 7);
	sigprocmask(SIG_BLOCK, &set, NULL);
	array();
}

static void on57(int sig)
{
	(void)sig;
	seen57 = 1;
}

__attribute__((noinline)) void own57(void)
{
	struct sigaction sa = { .sa_handler = on57 };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMAX - 7, &sa, NULL);
	raise(SIGRTMAX - 7);
	printf("own57: %d\n", seen57);
	array();
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "array";

	if (!strcmp(what, "array"))
		array();
	else if (!strcmp(what, "blocked"))
		blocked();
	else if (!strcmp(what, "own57"))
		own57();
	else
		return 2;
	return 0;
}
