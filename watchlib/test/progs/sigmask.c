/*
 * sigmask: the program's own signal mask under ulpt-watch, whose agent wraps sigprocmask (it
 * makes its stack rules with every signal blocked and answers libunwind's own calls inside
 * that without a system call). Block, query, a signal left pending and delivered at the
 * unblock, a bad `how` (EINVAL), everything blocked but SIGKILL, and the mask restored, each
 * with allocations from call sites the agent has no rule for yet in between; the handler
 * allocates too. Prints "sigmask: ok", or the first check that failed and exits 1.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int got;

static void on_usr1(int sig)
{
	char *p = malloc(40);

	(void)sig;
	if (p)
		memset(p, 1, 40);
	free(p);
	got++;
}

#define CHECK(c) do { if (!(c)) { printf("sigmask: failed: %s\n", #c); return 1; } } while (0)

/* Allocations from a few new call sites, the agent making their rules. */
static __attribute__((noinline)) void churn_a(int n) { free(malloc(8 + n)); }
static __attribute__((noinline)) void churn_b(int n) { char *p = calloc(1, 16 + n); free(p); }
static __attribute__((noinline)) void churn_c(int n) { char *p = malloc(4); free(realloc(p, 64 + n)); }
static void churn(int n)
{
	churn_a(n);
	churn_b(n);
	churn_c(n);
}

int main(void)
{
	struct sigaction sa;
	sigset_t s, old, cur, pend;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);

	CHECK(sigprocmask(SIG_BLOCK, &s, &old) == 0 && !sigismember(&old, SIGUSR1));
	churn(1);
	raise(SIGUSR1);
	churn(2);
	CHECK(got == 0);
	CHECK(sigprocmask(SIG_SETMASK, NULL, &cur) == 0 && sigismember(&cur, SIGUSR1));
	CHECK(sigpending(&pend) == 0 && sigismember(&pend, SIGUSR1));
	CHECK(sigprocmask(SIG_UNBLOCK, &s, NULL) == 0 && got == 1);
	churn(3);
	errno = 0;
	CHECK(sigprocmask(12345, &s, NULL) == -1 && errno == EINVAL);
	sigfillset(&s);
	CHECK(sigprocmask(SIG_BLOCK, &s, &old) == 0 && !sigismember(&old, SIGUSR2));
	churn(4);
	CHECK(sigprocmask(SIG_SETMASK, NULL, &cur) == 0 && sigismember(&cur, SIGUSR2) &&
	      sigismember(&cur, SIGTERM) && !sigismember(&cur, SIGKILL));
	CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0);
	CHECK(sigprocmask(SIG_SETMASK, NULL, &cur) == 0 && !sigismember(&cur, SIGUSR2));
	raise(SIGUSR1);
	CHECK(got == 2);
	printf("sigmask: ok\n");
	return 0;
}
