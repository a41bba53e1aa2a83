/*
 * The stack depot and the symboliser, apart from the report layer (as compiler-rt's
 * sanitizer_common keeps its stack depot and symbolizer): stack.c captures stacks and keeps
 * each once, symbolize.c names their frames, report.c prints them.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef WL_STACK_H
#define WL_STACK_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include "agent.h"

#define MAX_FRAMES   16

static inline void spin(volatile int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

static inline void unspin(volatile int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* stack.c. A depot stack's frames (its count in *n), or NULL for id 0. */
const uintptr_t *stack_get(uint32_t id, int *n) WL_HIDDEN;
unsigned stack_context(void) WL_HIDDEN;      /* --malloc-context-size */
/* Test hooks, exported (watchlib/test/wl-stack.c): while verifying, each capture is made
 * again by libunwind's own walk and compared; the counts (captures, by the cache's walk, by
 * libunwind's, unlike libunwind's) and the first unlike pair. */
void ulpt_watch_stack_verify(int on);
void ulpt_watch_stack_verified(unsigned long count[4], uintptr_t *a, int *na, uintptr_t *b,
			       int *nb, int max);
/* The current stack from the frame whose pc is from (0: the caller of the agent's entry
 * point) into out: its count. */
int stack_from(uintptr_t from, uintptr_t *out, int max) WL_HIDDEN;
/* A fork: closes the gate new captures wait at and waits for those under way; the depot's
 * lock; and their release (child: in the forked child). */
void stack_fork_gate(void) WL_HIDDEN;
void stack_fork_lock(void) WL_HIDDEN;
void stack_fork_unlock(void) WL_HIDDEN;
void stack_fork_ungate(int child) WL_HIDDEN;
/* While this thread makes a stack rule with every signal blocked: a sigprocmask that leaves
 * them all blocked (libunwind's, around its lookups and locks) is answered without a system
 * call, old as the mask in force; 1 if it was (signals.c's sigprocmask). */
int stack_quiet_sigmask(int how, const sigset_t *set, sigset_t *old) WL_HIDDEN;

/* symbolize.c. "function file:line" of pc (a return address if not the first frame), and
 * the path of its module in modpath (when asked: "" if not known). */
void symbolize(uintptr_t pc, int first, char *fn, size_t fnlen, char *loc, size_t loclen,
	       char *modpath, size_t modlen) WL_HIDDEN;
/* The symbols' lock, held across fork. */
void symbolize_lock(void) WL_HIDDEN;
void symbolize_unlock(void) WL_HIDDEN;

#endif
