/*
 * What the checked libc functions share: strmem.c (the narrow memory and string functions,
 * the I/O buffers) and wcsmem.c (the wide ones and the multibyte converters).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef WL_STRMEM_H
#define WL_STRMEM_H

#include "agent.h"

/* Is this call the program's, to be checked? */
static inline int checking(void)
{
	return ag.heap == HEAP_CHECK && ag.ready && !in_agent;
}

/* [s, s + n) as the program's call of fn reads (access WL_READ) or writes it: an error if
 * any byte is outside live blocks of the arena. ip is the caller (the report's first frame). */
void strmem_check(uintptr_t s, size_t n, unsigned access, const char *fn, uintptr_t ip) WL_HIDDEN;

/* By address: a buffer read() is to fill is not read here (GCC's access attributes). */
#define check(p, ...) strmem_check((uintptr_t)(p), __VA_ARGS__)
/* The real libc function name, found with GET(name) (dlsym RTLD_NEXT) at start. */
#define REAL(name, ret, ...) static ret (*real_##name)(__VA_ARGS__)
#define GET(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
/* Only in the replacing function itself: the program's call site. */
#define CALLER ((uintptr_t)__builtin_return_address(0))
/* Runs the real function as the agent's own access (see strmem.c's top). */
#define AS_AGENT(expr) ({ in_agent++; __typeof__(expr) r_ = (expr); in_agent--; r_; })

/*
 * _FORTIFY_SOURCE's entry points (__memcpy_chk, ...; what Debian's programs call) are the
 * plain function's checks, reported under the entry point's name, then glibc's own test:
 * glibc aborts (__chk_fail) when the call needs more room than the compiler knows the
 * destination has. The plain functions pass room ANY.
 */
#define ANY ((size_t)-1)
extern void __chk_fail(void) __attribute__((noreturn));
static inline void fortify(size_t need, size_t room)
{
	if (room < need)
		__chk_fail();
}
/* A function that both pass through: inlined, so that CALLER stays the program's call. */
#define BOTH static inline __attribute__((always_inline))
/* A real function looked up at its first use if the agent has not started yet. */
#define REAL_NOW(name) ({ \
	if (!real_##name) \
		GET(name); \
	real_##name; })

/* The elements a bounded scan reads: the string (len long) and its terminator, max at most. */
static inline size_t nread(size_t len, size_t max)
{
	return len < max ? len + 1 : max;
}

/* wcsmem.c: the real wide functions, looked up by strmem_init. */
void wcsmem_init(void) WL_HIDDEN;

#endif
