/*
 * sigmalloc: a program that calls malloc and free from a signal handler (not async-signal-safe
 * by the letter, but real programs do it), while its main loop allocates too. Under
 * ulpt-watch --check it must neither deadlock nor report anything; it prints "sigmalloc: ok".
 * A timer interrupts the loop about every 100 microseconds.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile int handled;

static void on_alarm(int sig)
{
	(void)sig;
	char *p = malloc(24);
	if (p) {
		memset(p, 7, 24);
		free(p);
	}
	handled++;
}

int main(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	long sum = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 20000 && handled < 200; i++) {
		char *q = malloc(1 + i % 200);
		memset(q, 1, 1 + i % 200);
		sum += q[i % 200 / 2];
		free(q);
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	printf("sigmalloc: %s (%d signals, %ld)\n", handled > 0 ? "ok" : "no signal arrived", handled,
	       sum);
	return 0;
}
