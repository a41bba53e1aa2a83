/*
 * ulpt-gdb's side of the agent: what its GDB extension (watchlib/gdb/ulpt.py) calls in the
 * stopped program, and where a hit stops.
 *
 * - ulpt_gdb_watch and ulpt_gdb_unwatch add and remove a watchpoint; GDB calls them as
 *   inferior functions (`call`), so they are plain C and return a negative errno on failure.
 * - Every hit of a watchpoint, once the access has completed (the after-call of
 *   ULPT_PERMIT_STEP), calls ulpt_gdb_stop with the hit, unless the agent can tell that GDB
 *   would not stop for it: a write that left a `watch' watchpoint's value as it was, an
 *   access by another thread than the watchpoint's. The extension's breakpoint there decides
 *   the rest (conditions) and stops the program at its next instruction, in its own frame.
 *   Without a debugger the call costs a few instructions per hit.
 * - GDB single-steps with TF. When its step covers an instruction that hits a watchpoint, the
 *   handler and the after-call run inside that step (libulpt keeps TF for the program's next
 *   instruction), and a breakpoint trap in the after-call would end the step in the agent's
 *   code. So the agent clears the step's TF and says so to ulpt_gdb_stop (`stepping'): the
 *   extension then ends the step itself at the program's next instruction, as GDB ends a step
 *   at a hardware watchpoint's hit.
 * - On the mprotect backend GDB's single step goes into libulpt's SIGSEGV handler: GDB puts a
 *   breakpoint (int3) at the instruction and waits for the handler to return there, but
 *   libulpt runs the instruction out of line and goes on after it: the step would never end.
 *   So every access that has a debugger's breakpoint on its instruction gets an after-call,
 *   and one without a hit to stop for calls ulpt_gdb_stop with no hit: the extension ends
 *   the step at the next instruction, unless GDB was stepping over a breakpoint of the
 *   user's or its own there (for a `continue', which goes on).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include "agent.h"

#define GDB_API __attribute__((visibility("default"), used))
#define RFLAGS_TF 0x100ull

__thread struct gdb_after gdb_after __attribute__((tls_model("initial-exec")));

/* Read by the extension: the interface it was written for. */
GDB_API const int ulpt_gdb_version = 1;

/* Per watchpoint id: what filters its hits before they stop (ids are watchlib's, dense from
 * 0; the table is address space committed as touched). */
#define GDB_CHANGES 0x100u      /* ulpt_gdb_watch's mode bit: writes that change the value */
#define GDB_IDS (1u << 22)      /* watchlib's MAX_WATCHES */
static struct filter {
	uint32_t changes;           /* stop for a write only if it changed the watched bytes */
	pid_t tid;                  /* 0, or the one thread whose accesses stop */
} *filters;

/* The breakpoint's place. Its arguments stay in RDI, RSI and RDX at its first instruction,
 * where the extension's breakpoint is: the hit, whether GDB's single step covered the access
 * (the step is then over: see the top), and the program's next instruction (0: not known,
 * the extension finds it by unwinding). */
GDB_API __attribute__((noinline)) void ulpt_gdb_stop(const struct wl_hit *hit, int stepping,
						     uintptr_t resume, uintptr_t ip)
{
	__asm__ volatile("" : : "D"(hit), "S"(stepping), "d"(resume), "c"(ip) : "memory");
}

/* The agent has started (its constructor's end): the extension's breakpoint here sets the
 * watchpoints made before the program ran. */
GDB_API __attribute__((noinline)) void ulpt_gdb_ready(void)
{
	__asm__ volatile("" : : : "memory");
}

static void gdb_hit(const struct wl_hit *h, void *arg)
{
	struct ulpt_fault *f = gdb_after.f;
	const struct filter *flt;

	(void)arg;
	if (ag.verbose)
		report_hit(h, NULL);
	if (!filters || h->id < 0 || (unsigned)h->id >= GDB_IDS)
		return;
	flt = &filters[h->id];
	if (flt->tid && flt->tid != h->tid)
		return;
	if (flt->changes && h->kind == WL_WRITE &&
	    !memcmp(h->old_value, h->new_value, h->value_len))
		return;
	/* One instruction may hit several watchpoints: the first call takes the step over,
	 * and the after-call's later hits are in it too. */
	if (f && (f->rflags & RFLAGS_TF)) {
		f->rflags &= ~RFLAGS_TF;
		gdb_after.stepping = 1;
	}
	ulpt_gdb_stop(h, gdb_after.stepping, f ? f->next_ip : 0, f ? f->ip : 0);
}

/* A fault that a debugger's single step ran into, on the mprotect backend, while ulpt-gdb
 * watches (see the top): its decision must be ULPT_PERMIT_STEP. */
int gdb_step_fault(const struct ulpt_fault *f)
{
	uint8_t op = 0;

	if (!filters || ulpt_backend() != ULPT_BACKEND_MPROTECT)
		return 0;
	wl_read_bytes(f->ip, &op, 1);
	return op == 0xcc;      /* the instruction faulted: an int3 there came after, GDB's */
}

/* The after-call of such a fault, once its hits are made: if none of them ended the step,
 * the extension ends it (or not: see the top). */
void gdb_step_end(struct ulpt_fault *f)
{
	if (!gdb_step_fault(f) || gdb_after.stepping)
		return;
	ulpt_gdb_stop(NULL, 1, f->next_ip, f->ip);
}

/* Starts the stop calls, once; -ENODEV if the agent could not start (the program runs
 * unwatched: its start said why). */
static int gdb_start(void)
{
	if (!ag.ready)
		return -ENODEV;
	if (!filters) {
		filters = wl_mem_reserve(GDB_IDS * sizeof(*filters));
		if (!filters)
			return -ENOMEM;
	}
	return wl_set_callback(gdb_hit, NULL);
}

/*
 * Watches [addr, addr + len) for mode (WL_READ, WL_WRITE or both, | GDB_CHANGES for GDB's
 * `watch', which does not stop for a write of the same value), only for thread tid if it is
 * not 0: the watchpoint's id, or a negative errno (wl_watch's).
 */
GDB_API int ulpt_gdb_watch(uintptr_t addr, size_t len, unsigned mode, pid_t tid)
{
	int r;

	if (mode & ~(WL_RW | GDB_CHANGES) || tid < 0)
		return -EINVAL;
	in_agent++;
	r = gdb_start();
	if (r >= 0)
		r = wl_watch((const void *)addr, len, mode & WL_RW);
	if (r >= 0 && (unsigned)r < GDB_IDS)
		filters[r] = (struct filter){ .changes = mode & GDB_CHANGES, .tid = tid };
	in_agent--;
	return r;
}

GDB_API int ulpt_gdb_unwatch(int id)
{
	int r;

	in_agent++;
	r = ag.ready ? wl_unwatch(id) : -ENODEV;
	in_agent--;
	return r;
}

/* The backend in use: 1 ULPT, 2 mprotect (enum ulpt_backend), 0 none. */
GDB_API int ulpt_gdb_backend(void)
{
	return ag.ready ? ulpt_backend() : 0;
}
