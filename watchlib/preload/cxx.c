/*
 * C++'s operator new and delete, every variant (plain, array, nothrow, aligned, sized), for
 * --check's alloc-dealloc-mismatch: a block remembers its family (heap.c), and a release by
 * another (malloc then delete, new[] then delete, new then free) is reported with both stacks,
 * as ASan does. They are defined by their mangled names, in C: the agent does not link
 * libstdc++. When the agent does not serve allocations (no --heap or --check, inside the
 * agent), and when a throwing new gets no memory, new calls libstdc++'s own operator (the next
 * definition), which allocates with malloc, runs the new-handler and throws std::bad_alloc.
 * The size given to a sized delete is not checked.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "agent.h"

/* libstdc++'s definition of a name, looked up once. */
static void *next(const char *name, void **cache)
{
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (!f) {
		in_agent++;             /* what dlsym allocates is the agent's */
		f = dlsym(RTLD_NEXT, name);
		in_agent--;
		__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	}
	return f;
}

/* NEW(name, how, params, align, throws, call-args): one operator new. */
#define NEW(name, how, params, align, throws, ...) \
	void *name params; \
	void *name params \
	{ \
		static void *real; \
		void *p = NULL; \
		if (heap_serves()) { \
			p = heap_new(n, align, how); \
			if (p || !(throws)) \
				return p; \
		} \
		__typeof__(&name) f = (__typeof__(&name))next(#name, &real); \
		return f ? f(__VA_ARGS__) : p; \
	}

/* DEL(name, how, params): one operator delete. libstdc++'s own only calls free, which
 * heap_delete's release does for every pointer (the agent's, glibc's, an arena block), so
 * there is no fallback: a block of the arena is checked whether or not the agent serves new
 * allocations now (after the mprotect backend ran out of mappings, say). */
#define DEL(name, how, params) \
	void name params; \
	void name params \
	{ \
		heap_delete(p, how); \
	}

typedef struct nothrow nothrow_t;       /* std::nothrow_t, passed by reference */

NEW(_Znwm, HOW_NEW, (size_t n), 0, 1, n)
NEW(_Znam, HOW_NEW_ARRAY, (size_t n), 0, 1, n)
NEW(_ZnwmRKSt9nothrow_t, HOW_NEW, (size_t n, const nothrow_t *t), 0, 0, n, t)
NEW(_ZnamRKSt9nothrow_t, HOW_NEW_ARRAY, (size_t n, const nothrow_t *t), 0, 0, n, t)
NEW(_ZnwmSt11align_val_t, HOW_NEW, (size_t n, size_t a), a, 1, n, a)
NEW(_ZnamSt11align_val_t, HOW_NEW_ARRAY, (size_t n, size_t a), a, 1, n, a)
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, HOW_NEW, (size_t n, size_t a, const nothrow_t *t), a, 0,
    n, a, t)
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, HOW_NEW_ARRAY, (size_t n, size_t a, const nothrow_t *t),
    a, 0, n, a, t)

DEL(_ZdlPv, HOW_NEW, (void *p))
DEL(_ZdaPv, HOW_NEW_ARRAY, (void *p))
DEL(_ZdlPvm, HOW_NEW, (void *p, size_t n))
DEL(_ZdaPvm, HOW_NEW_ARRAY, (void *p, size_t n))
DEL(_ZdlPvRKSt9nothrow_t, HOW_NEW, (void *p, const nothrow_t *t))
DEL(_ZdaPvRKSt9nothrow_t, HOW_NEW_ARRAY, (void *p, const nothrow_t *t))
DEL(_ZdlPvSt11align_val_t, HOW_NEW, (void *p, size_t a))
DEL(_ZdaPvSt11align_val_t, HOW_NEW_ARRAY, (void *p, size_t a))
DEL(_ZdlPvmSt11align_val_t, HOW_NEW, (void *p, size_t n, size_t a))
DEL(_ZdaPvmSt11align_val_t, HOW_NEW_ARRAY, (void *p, size_t n, size_t a))
DEL(_ZdlPvSt11align_val_tRKSt9nothrow_t, HOW_NEW, (void *p, size_t a, const nothrow_t *t))
DEL(_ZdaPvSt11align_val_tRKSt9nothrow_t, HOW_NEW_ARRAY, (void *p, size_t a, const nothrow_t *t))
