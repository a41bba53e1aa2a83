/*
 * The program's own handlers for the signals libulpt handles (SIGSEGV and SIGTRAP on mprotect,
 * none on ULPT). A program that installs one after the agent started would take the
 * signal from the library and break the watching; so sigaction and signal are wrapped here,
 * and for those signals the program's action becomes the one libulpt chains to (it gets every
 * signal that is not the library's), while what sigaction reports back is the program's own.
 *
 * ulpt-gdb's batches' signal (gdb.c) is the program's as soon as it sets an action for it.
 *
 * And the signals that end a process by default: with --check, where the program left one at
 * SIG_DFL, the agent's handler runs the process's end (agent_finish: canaries, the leak check,
 * the results; the leak check not if the signal came inside the agent) and then dies of the
 * signal as the default would, as memcheck reports at a fatal signal. sigaction reports
 * SIG_DFL for those, and a program's own action replaces the agent's.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "agent.h"
#include "stack.h"

extern int __sigaction(int, const struct sigaction *, struct sigaction *);
struct sigaction *ulpt_chained_action_(int sig);        /* libulpt, linked in */

static volatile int lock;

static int from_agent(uintptr_t ret)
{
	return ret - ag.self_text[0] < ag.self_text[1] - ag.self_text[0];
}

/* The fatal signals whose SIG_DFL the agent stands in for (bit sig). */
static uint64_t fatal_ours;

static void on_fatal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;

	if (!in_agent)
		agent_finish();
	__sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	syscall(SYS_tgkill, getpid(), agent_tid(), sig);
}

void signals_init(void)
{
	static const int fatal[] = { SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE,
				     SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
				     SIGXCPU, SIGXFSZ, SIGSYS };

	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
		struct sigaction cur, sa = { .sa_handler = on_fatal, .sa_flags = SA_RESTART };
		int sig = fatal[i];

		if (ulpt_chained_action_(sig))
			continue;               /* libulpt's own (SIGSEGV on mprotect) */
		if (__sigaction(sig, NULL, &cur) || cur.sa_handler != SIG_DFL ||
		    (cur.sa_flags & SA_SIGINFO))
			continue;
		sigemptyset(&sa.sa_mask);
		if (!__sigaction(sig, &sa, NULL))
			fatal_ours |= 1ull << sig;
	}
}

static int wrapped_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
			     uintptr_t caller)
{
	int fatal = sig > 0 && sig < 64 && (__atomic_load_n(&fatal_ours, __ATOMIC_RELAXED) >> sig & 1);

	if ((fatal || gdb_queue_signal(sig, 0)) && !from_agent(caller)) {
		/* Ours stands for SIG_DFL (a fatal signal's, or ulpt-gdb's batches' in gdb.c): so
		 * reported, and the program's own replaces it (the batches then end). */
		int r = 0;
		if (act)
			r = __sigaction(sig, act, NULL);
		if (r)
			return r;
		if (old) {
			memset(old, 0, sizeof(*old));
			old->sa_handler = SIG_DFL;
		}
		if (act && fatal)
			__atomic_and_fetch(&fatal_ours, ~(1ull << sig), __ATOMIC_RELAXED);
		else if (act)
			gdb_queue_signal(sig, 1);
		return 0;
	}
	/* libulpt's own calls (linked into the agent) are real ones: resetting to SIG_DFL. */
	struct sigaction *chained = ag.ready && !from_agent(caller) ? ulpt_chained_action_(sig) : NULL;
	if (!chained)
		return __sigaction(sig, act, old);
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	if (old)
		*old = *chained;
	if (act)
		*chained = *act;
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	return 0;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return wrapped_sigaction(sig, act, old, (uintptr_t)__builtin_return_address(0));
}

/* glibc's signal() is BSD's: the handler stays, system calls restart. */
static sighandler_t wrapped_signal(int sig, sighandler_t fn, uintptr_t caller)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	if (sig <= 0 || sig >= NSIG || wrapped_sigaction(sig, &sa, &old, caller) < 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	return old.sa_handler;
}

sighandler_t signal(int sig, sighandler_t fn)
{
	return wrapped_signal(sig, fn, (uintptr_t)__builtin_return_address(0));
}

sighandler_t bsd_signal(int sig, sighandler_t fn)
{
	return wrapped_signal(sig, fn, (uintptr_t)__builtin_return_address(0));
}

/* glibc's sigprocmask is pthread_sigmask with errno; inside the agent's making of a stack rule,
 * libunwind's own calls are answered there (stack_quiet_sigmask). */
int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int r;

	if (stack_quiet_sigmask(how, set, old))
		return 0;
	if ((r = pthread_sigmask(how, set, old))) {
		errno = r;
		return -1;
	}
	return 0;
}
