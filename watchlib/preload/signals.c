/*
 * The program's own handlers for the signals libulpt handles (SIGSEGV and SIGTRAP on mprotect,
 * none on ULPT). A program that installs one after the agent started would take the
 * signal from the library and break the watching; so sigaction and signal are wrapped here,
 * and for those signals the program's action becomes the one libulpt chains to (it gets every
 * signal that is not the library's), while what sigaction reports back is the program's own.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include "agent.h"

extern int __sigaction(int, const struct sigaction *, struct sigaction *);
struct sigaction *ulpt_chained_action_(int sig);        /* libulpt, linked in */

static volatile int lock;

static int from_agent(uintptr_t ret)
{
	return ret - ag.self_text[0] < ag.self_text[1] - ag.self_text[0];
}

static int wrapped_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
			     uintptr_t caller)
{
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
