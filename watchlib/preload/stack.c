/*
 * The stack depot: backtraces (libunwind) at malloc and free and of errors, each stack kept
 * once (a hash of its program counters), so a malloc-heavy program costs one table entry per
 * distinct allocation site, not per allocation. Runs with in_agent set, so what libunwind
 * allocates comes from watchlib's memory.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>
#include "stack.h"

#define DEPOT_SLOTS_MIN (1u << 12)  /* the hash table doubles from here, at half full */
#define DEPOT_WORDS  (64u << 20)

static struct {
	volatile int lock;
	uint32_t *slots;            /* hash -> offset into words (0: empty) */
	uint32_t nslots, used;
	uintptr_t *words;           /* [n, pc0, pc1, ...] */
	uint32_t top;
} d;

static uint64_t pcs_hash(const uintptr_t *pcs, int n)
{
	uint64_t hsh = 1469598103934665603ull;

	for (int i = 0; i < n; i++)
		hsh = (hsh ^ pcs[i]) * 1099511628211ull;
	return hsh;
}

/* The slot of the stack (pcs, n) in a table of nslots: its own, or the empty one for it. The
 * table is at most half full, so there is one. */
static int same_pcs(const uintptr_t *a, const uintptr_t *b, int n)
{
	for (int i = 0; i < n; i++)             /* not memcmp: that is the agent's checked one */
		if (a[i] != b[i])
			return 0;
	return 1;
}

static uint32_t *depot_slot(uint32_t *slots, uint32_t nslots, const uintptr_t *pcs, int n)
{
	for (uint32_t i = (uint32_t)pcs_hash(pcs, n) & (nslots - 1);; i = (i + 1) & (nslots - 1)) {
		uint32_t o = slots[i];
		if (!o || (d.words[o] == (uintptr_t)n && same_pcs(&d.words[o + 1], pcs, n)))
			return &slots[i];
	}
}

/* Doubles the table (its pages are touched at random: it starts small, so that a program
 * with few allocation sites does not pay a large table in resident memory). */
static int depot_grow(void)
{
	uint32_t n = d.nslots ? d.nslots * 2 : DEPOT_SLOTS_MIN;
	uint32_t *t = wl_mem_reserve(n * sizeof(uint32_t));

	if (!t)
		return -1;
	for (uint32_t i = 0; i < d.nslots; i++) {
		uint32_t o = d.slots[i];
		if (o)
			*depot_slot(t, n, &d.words[o + 1], (int)d.words[o]) = o;
	}
	if (d.slots)
		wl_mem_unreserve(d.slots, d.nslots * sizeof(uint32_t));
	d.slots = t;
	d.nslots = n;
	return 0;
}

static uint32_t depot_put(uintptr_t *pcs, int n)
{
	uint32_t id = 0, *slot;

	if (n <= 0)
		return 0;
	spin(&d.lock);
	if (!d.words) {
		d.words = wl_mem_reserve(DEPOT_WORDS * sizeof(uintptr_t));
		d.top = 1;
	}
	if (!d.words || ((d.used + 1) * 2 > d.nslots && depot_grow() < 0 && d.used + 1 >= d.nslots))
		goto out;
	slot = depot_slot(d.slots, d.nslots, pcs, n);
	if (*slot) {
		id = *slot;
	} else if (d.top + n + 1 <= DEPOT_WORDS) {
		d.words[d.top] = (uintptr_t)n;
		memcpy(&d.words[d.top + 1], pcs, n * sizeof(*pcs));
		*slot = id = d.top;
		d.top += n + 1;
		d.used++;
	}
out:
	unspin(&d.lock);
	return id;
}

const uintptr_t *stack_get(uint32_t id, int *n)
{
	if (!id || !d.words)
		return NULL;
	*n = (int)d.words[id];
	return &d.words[id + 1];
}

/*
 * fork: a thread inside libunwind holds its mutexes (its memory pools'), and one in the depot,
 * a report or the symbols holds the agent's; a forked child would find them held forever and
 * hang at its first allocation. So a fork (heap.c's atfork handlers, through report.c) closes
 * a gate that new backtraces wait at, waits for those under way, then takes the locks. A
 * backtrace nested in one (a signal handler's) does not wait: its thread is the one the fork
 * waits for.
 */
static int fork_gate, unwinding;
static __thread int my_unwinding __attribute__((tls_model("initial-exec")));

static void unwind_enter(void)
{
	if (my_unwinding++)
		return;
	for (;;) {
		__atomic_add_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&fork_gate, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&fork_gate, __ATOMIC_ACQUIRE))
			__builtin_ia32_pause();
	}
}

static void unwind_leave(void)
{
	if (!--my_unwinding)
		__atomic_sub_fetch(&unwinding, 1, __ATOMIC_RELEASE);
}

void stack_fork_gate(void)
{
	__atomic_add_fetch(&fork_gate, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&unwinding, __ATOMIC_SEQ_CST) > (my_unwinding ? 1 : 0))
		__builtin_ia32_pause();
}

void stack_fork_lock(void)
{
	spin(&d.lock);
}

void stack_fork_unlock(void)
{
	unspin(&d.lock);
}

void stack_fork_ungate(int child)
{
	if (child) {
		/* Threads that were unwinding or waiting at the gate are not in the child. */
		__atomic_store_n(&unwinding, my_unwinding ? 1 : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fork_gate, 0, __ATOMIC_RELEASE);
	} else {
		__atomic_sub_fetch(&fork_gate, 1, __ATOMIC_RELEASE);
	}
}

/* libunwind's caches per thread: its global ones take a lock that blocks and restores every
 * signal, two system calls, at each frame it has not cached yet. */
void report_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static int in_agent_code(uintptr_t pc)
{
	return pc - ag.self_text[0] < ag.self_text[1] - ag.self_text[0];
}

/* The stack of the caller of the agent's entry point (malloc, free): the agent's own frames,
 * the first ones, are left out. */
uint32_t stack_capture(void)
{
	void *pcs[MAX_FRAMES + 8];
	int n, i = 0;

	unwind_enter();
	n = unw_backtrace(pcs, MAX_FRAMES + 8);
	unwind_leave();

	while (i < n && in_agent_code((uintptr_t)pcs[i]))
		i++;
	if (n - i > MAX_FRAMES)
		n = i + MAX_FRAMES;
	return n > i ? depot_put((uintptr_t *)pcs + i, n - i) : 0;
}

/* Frames of the current stack from the frame whose pc is `from` (or just after it, for an
 * interrupted instruction) on; the first is reported as `from` itself. */
int stack_from(uintptr_t from, uintptr_t *out, int max)
{
	void *pcs[64];
	int n, i, k = 0;

	unwind_enter();
	n = unw_backtrace(pcs, 64);
	unwind_leave();

	if (!from) {
		/* A bad free: from the caller of the agent's free on. */
		for (i = 0; i < n && in_agent_code((uintptr_t)pcs[i]); i++)
			;
		for (; i < n && k < max; i++)
			out[k++] = (uintptr_t)pcs[i];
		return k;
	}
	for (i = 0; i < n; i++)
		if ((uintptr_t)pcs[i] >= from && (uintptr_t)pcs[i] <= from + 16)
			break;
	if (i == n)
		i = 0;
	out[k++] = from;
	for (i++; i < n && k < max; i++)
		out[k++] = (uintptr_t)pcs[i];
	return k;
}
