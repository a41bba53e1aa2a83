/*
 * forkbug: a heap error in the parent, then one in a forked child, which the parent waits
 * for. Prints on stdout "forkbug: parent PID child PID status N" (N: the child's exit
 * status). Under ulpt-watch --check --log-file=DIR/log.%p each process writes its own error
 * to its own file; with --error-exitcode=3 the child's status is 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	volatile char *p = malloc(16), *q = malloc(24);
	int st = 0;
	pid_t c;

	p[16] = 'x';            /* the parent's: one byte past 16 */
	fflush(stdout);
	c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		q[24] = 'y';    /* the child's: one byte past 24 */
		return 0;
	}
	waitpid(c, &st, 0);
	printf("forkbug: parent %d child %d status %d\n", (int)getpid(), (int)c,
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
