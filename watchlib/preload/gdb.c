/*
 * ulpt-gdb's side of the agent: what its GDB extension (watchlib/gdb/ulpt.py) calls in the
 * stopped program, and where a hit stops.
 *
 * - ulpt_gdb_watch and ulpt_gdb_unwatch add and remove a watchpoint; GDB calls them as
 *   inferior functions (`call`), so they are plain C and return a negative errno on failure.
 * - Every hit of a watchpoint, once the access has completed (the after-call of
 *   ULPT_PERMIT_STEP), is a stop for GDB, unless the agent can tell that GDB would not stop
 *   for it: a write that left a `watch' watchpoint's value as it was, an access by another
 *   thread than the watchpoint's.
 * - One stop per hit, as a hardware watchpoint's, on both backends. The hits go into the
 *   thread's stop record (gdb_rec, at ulpt_gdb_rec_tpoff from its thread pointer) and the
 *   after-call sends the program on through ulpt_gdb_trap instead of straight to its next
 *   instruction (next_ip: libulpt honours it on both backends, on mprotect as the signal
 *   handler's return): a stub that runs with every register the program's and jumps to that
 *   instruction (the record's resume). The extension keeps a breakpoint on the stub's first
 *   instruction; its stop() reads the record, sets the PC to the program's next instruction,
 *   and decides (conditions, in the program's frame). So the stop is at the program's next
 *   instruction, and since the PC has moved off the breakpoint GDB never steps over it.
 *   Without a debugger the stub's first instruction is a nop: the detour costs a few
 *   instructions per hit, and a debugger that has gone (its breakpoints taken out) leaves
 *   nothing that traps. A hit with no after-call (none is known) calls ulpt_gdb_stop, where
 *   the extension's breakpoint puts a second one at the program's next instruction.
 * - GDB single-steps with TF. When its step covers an instruction that hits a watchpoint, the
 *   handler and the after-call run inside that step (libulpt keeps TF for the program's next
 *   instruction), and a breakpoint trap in the after-call would end the step in the agent's
 *   code. So the agent clears the step's TF and says so (`stepping', in the stop record or to
 *   ulpt_gdb_stop): the extension then ends the step itself at the program's next
 *   instruction, as GDB ends a step at a hardware watchpoint's hit.
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
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

#define GDB_API __attribute__((visibility("default"), used))
#define RFLAGS_TF 0x100ull

__thread struct gdb_after gdb_after __attribute__((tls_model("initial-exec")));

/* Read by the extension: the interface it was written for. */
GDB_API const int ulpt_gdb_version = 7;

/* Per watchpoint id: what filters its hits before they stop (ids are watchlib's, dense from
 * 0; the table is address space committed as touched). */
#define GDB_CHANGES 0x100u      /* ulpt_gdb_watch's mode bit: writes that change the value */
#define GDB_IDS (1u << 22)      /* watchlib's MAX_WATCHES */
static struct filter {
	uint32_t changes;           /* stop for a write only if it changed the watched bytes */
	pid_t tid;                  /* 0, or the one thread whose accesses stop */
	uintptr_t addr;             /* the watched bytes, for the door's record of their value */
	size_t len;
} *filters;

/* The thread's stop record (ULPT backend), read by the extension at ulpt_gdb_trap through
 * the thread pointer (FS_BASE) and ulpt_gdb_rec_tpoff: its layout is the extension's too. */
#define GDB_REC_HITS 8          /* watchlib's WL_PENDING_MAX: the hits of one instruction */
struct gdb_rec {
	uint64_t resume;            /* the program's next instruction (first: the stub's jump) */
	uint64_t ip;                /* the instruction that hit */
	uint32_t n;                 /* hits below */
	uint32_t stepping;          /* GDB_STEPPED, GDB_STEP_END (see the top) */
	struct { int32_t id; uint32_t kind; } hits[GDB_REC_HITS];
};
__thread struct gdb_rec gdb_rec __attribute__((tls_model("initial-exec"), visibility("hidden")));
GDB_API long ulpt_gdb_rec_tpoff;        /* &gdb_rec - the thread pointer, the same in each */
/* The last thread sent to the stub and its record: the extension finds the record here
 * without reading the thread's registers (FS_BASE made GDB build the stub's frame: 1.2 ms of
 * a stop's 5.4 ms of extension time in the guest); a thread that finds another's here reads
 * FS_BASE. */
GDB_API struct { int64_t tid; uint64_t rec; } ulpt_gdb_last;
#define AFTER_STOP 2            /* gdb_after.stepping: this after-call stops at the stub */
#define AFTER_DOOR 4            /* ... through the door, its hits in ulpt_gdb_door */
#define GDB_STEPPED 1           /* gdb_rec.stepping: GDB's single step covered the access */
#define GDB_STEP_END 2          /* mprotect: GDB waits at the access (its int3 there) for the
				 * handler to return: the step ends at the stub's resume */

/*
 * The door (ULPT backend): a hit's stop with no breakpoint and no PC to write. The extension
 * keeps a hardware access watchpoint of GDB's on door_slot (8 bytes, alone in their line),
 * and the after-call sends the program through ulpt_gdb_door_jump: every register the program's,
 * one indirect jump that reads door_slot, where the agent put the program's next instruction.
 * The debug register traps once the jump has completed, so GDB stops at the program's next
 * instruction, as at its own hardware watchpoint: the PC is never written, which in the guest
 * was about 2.4 ms of the trap stub's 3.2 ms of extension time a stop (the frame that GDB
 * looks for again after a register write). The agent writes door_slot through /proc/self/mem,
 * which the debug register does not see (the kernel writes the page through its own mapping):
 * a store of the agent's would trap in the agent.
 *
 * ulpt_gdb_door.on: 0 no door; DOOR_WATCHED the extension has its watchpoint on the slot (it
 * writes it); DOOR_PROBING the agent is trying it (the first hit after that): the jump lands at
 * ulpt_gdb_door_probe_back, which goes on to the trap stub, and the extension, if its
 * watchpoint trapped there, writes DOOR_TRAPS: every hit that can goes through the door. So a
 * machine whose debug registers never trap (some virtual machines') keeps the trap stub, and
 * its first hit still stops there.
 * One thread at a time goes through: ulpt_gdb_door.lock holds its id from the after-call on.
 * A thread that finds its own id there has been through (it runs again) and goes on holding
 * it; another thread takes the trap stub and sets wanted, and the extension frees the lock at
 * the holder's next stop (or at a trap stub's stop, after a probe that did not trap, or once
 * the holder has exited): a stop in a single-threaded program writes nothing. A hit inside
 * GDB's single step, and one whose next instruction has a breakpoint (its int3 is in the
 * code: GDB's stop there shows both, as at the trap stub) take the trap stub too. A lock that
 * no stop frees (no debugger any more, a forked child) leaves every later hit of the other
 * threads on the trap stub, which needs none. The door's record is ulpt_gdb_door itself
 * (under the lock): with the watched values, so that a stop reads the program once.
 */
#define DOOR_VALUE 8            /* the bytes of a watched value that the record holds */
GDB_API struct gdb_door {
	int32_t on;                 /* the states above */
	int32_t lock;               /* the thread on its way through, 0: none */
	int32_t wanted;             /* another thread found it taken: free it at the stop */
	uint32_t n;                 /* hits below */
	uint64_t resume, ip;        /* the program's next instruction, the one that hit */
	struct { int32_t id; uint32_t kind; uint8_t value[DOOR_VALUE]; } hits[GDB_REC_HITS];
} ulpt_gdb_door;
static uint64_t door_slot __attribute__((aligned(64), used));
GDB_API uint64_t *const ulpt_gdb_door_slot = &door_slot;
static int door_fd = -1;
enum { DOOR_WATCHED = 1, DOOR_TRAPS = 2, DOOR_PROBING = 3 };  /* .on; the extension's too */
enum { DOOR_PROBE = 1, DOOR_PASS = 2 };                         /* door_take's answers */

/*
 * Where the program's stops are, a page of their own: GDB takes its breakpoints out of the code
 * at every stop and puts them back to go on, and QEMU drops the translated code of a page whose
 * bytes change. Beside the agent's fault path, that made every hit translate it again.
 *
 * ulpt_gdb_trap goes on at the record's resume with every register as it was (the program's):
 * past the red zone, the target on the stack, RAX back, and a return that drops both. No flag
 * changes. The nop is where the extension's breakpoint goes. ulpt_gdb_door_jump is the door
 * (above); a probe's jump lands at ulpt_gdb_door_probe_back, which goes on to the trap stub
 * (by its local label: no PLT, no register). ulpt_gdb_stop and ulpt_gdb_ready (below) return
 * at once; the extension's breakpoints are on their first instruction.
 */
void ulpt_gdb_trap(void);
void ulpt_gdb_door_jump(void);
extern char ulpt_gdb_door_probe_back[];
__asm__(".pushsection .text.ulpt_gdb_stops, \"ax\", @progbits\n"
	".balign 4096\n"
	".globl ulpt_gdb_trap\n"
	".type ulpt_gdb_trap, @function\n"
	"ulpt_gdb_trap:\n"
	"trap_local:\n"
	"	nop\n"
	"	leaq -128(%rsp), %rsp\n"
	"	pushq %rax\n"
	"	movq gdb_rec@gottpoff(%rip), %rax\n"
	"	movq %fs:(%rax), %rax\n"
	"	xchgq %rax, (%rsp)\n"
	"	ret $128\n"
	".size ulpt_gdb_trap, . - ulpt_gdb_trap\n"
	".globl ulpt_gdb_door_jump\n"
	".type ulpt_gdb_door_jump, @function\n"
	"ulpt_gdb_door_jump:\n"
	"	jmp *door_slot(%rip)\n"
	".size ulpt_gdb_door_jump, . - ulpt_gdb_door_jump\n"
	".globl ulpt_gdb_door_probe_back\n"
	"ulpt_gdb_door_probe_back:\n"
	"	jmp trap_local\n"
	".globl ulpt_gdb_stop\n"
	".type ulpt_gdb_stop, @function\n"
	"ulpt_gdb_stop:\n"
	"	.cfi_startproc\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size ulpt_gdb_stop, . - ulpt_gdb_stop\n"
	".globl ulpt_gdb_ready\n"
	".type ulpt_gdb_ready, @function\n"
	"ulpt_gdb_ready:\n"
	"	.cfi_startproc\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size ulpt_gdb_ready, . - ulpt_gdb_ready\n"
	".balign 4096\n"
	".popsection\n");

/* Takes the door's lock for thread tid, which may hold it already: whether it has it. */
static int door_lock(pid_t tid)
{
	int none = 0;

	return __atomic_load_n(&ulpt_gdb_door.lock, __ATOMIC_ACQUIRE) == (int)tid ||
	       __atomic_compare_exchange_n(&ulpt_gdb_door.lock, &none, (int)tid, 0,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Whether this hit's stop goes through the door (DOOR_PASS), tries it (DOOR_PROBE) or takes
 * the trap stub (0); the lock is taken for the first two. */
static int door_take(const struct ulpt_fault *f, pid_t tid)
{
	int on = __atomic_load_n(&ulpt_gdb_door.on, __ATOMIC_ACQUIRE);
	uint8_t op = 0;

	if ((on != DOOR_WATCHED && on != DOOR_TRAPS) || door_fd < 0 || (gdb_after.stepping & 1))
		return 0;
	wl_read_bytes(f->next_ip, &op, 1);
	if (op == 0xcc)
		return 0;
	if (!door_lock(tid)) {
		__atomic_store_n(&ulpt_gdb_door.wanted, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (on == DOOR_WATCHED &&
	    !__atomic_compare_exchange_n(&ulpt_gdb_door.on, &on, DOOR_PROBING, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		goto none;
	uintptr_t to = on == DOOR_WATCHED ? (uintptr_t)ulpt_gdb_door_probe_back : f->next_ip;
	if (pwrite(door_fd, &to, sizeof(to), (off_t)(uintptr_t)&door_slot) != sizeof(to))
		goto none;
	return on == DOOR_WATCHED ? DOOR_PROBE : DOOR_PASS;
none:
	__atomic_store_n(&ulpt_gdb_door.lock, 0, __ATOMIC_RELEASE);
	return 0;
}

/* A forked child is no debugger's (GDB follows one process, and debug registers are not
 * inherited): its hits take the trap stub. */
static void door_fork_child(void)
{
	ulpt_gdb_door.on = 0;
	ulpt_gdb_door.lock = 0;
}

/* The breakpoint's place on the mprotect backend. Its arguments stay in RDI, RSI and RDX at
 * its first instruction, where the extension's breakpoint is: the hit, whether GDB's single
 * step covered the access (the step is then over: see the top), and the program's next
 * instruction (0: not known, the extension finds it by unwinding). */
void ulpt_gdb_stop(const struct wl_hit *hit, int stepping, uintptr_t resume, uintptr_t ip);

/* The agent has started (its constructor's end): the extension's breakpoint here sets the
 * watchpoints made before the program ran. */
void ulpt_gdb_ready(void);

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
		gdb_after.stepping |= 1;
	}
	if (f && f->after) {
		struct gdb_rec *r = &gdb_rec;

		if (!(gdb_after.stepping & AFTER_STOP)) {
			int door = door_take(f, h->tid);

			gdb_after.stepping |= AFTER_STOP;
			if (door == DOOR_PASS) {
				gdb_after.stepping |= AFTER_DOOR;
				ulpt_gdb_door.resume = f->next_ip;
				ulpt_gdb_door.ip = f->ip;
				ulpt_gdb_door.n = 0;
			} else {
				r->resume = f->next_ip;
				r->ip = f->ip;
				r->n = 0;
				ulpt_gdb_last.rec = (uintptr_t)r;
				ulpt_gdb_last.tid = h->tid;
			}
			f->next_ip = door ? (uintptr_t)ulpt_gdb_door_jump : (uintptr_t)ulpt_gdb_trap;
		}
		if (gdb_after.stepping & AFTER_DOOR) {
			struct gdb_door *d = &ulpt_gdb_door;

			if (d->n < GDB_REC_HITS) {
				d->hits[d->n].id = h->id;
				d->hits[d->n].kind = h->kind;
				wl_read_bytes(flt->addr, d->hits[d->n].value,
					      flt->len < DOOR_VALUE ? flt->len : DOOR_VALUE);
				d->n++;
			}
			return;
		}
		r->stepping = gdb_after.stepping & 1 ? GDB_STEPPED : 0;
		if (r->n < GDB_REC_HITS)
			r->hits[r->n++] = (__typeof__(r->hits[0])){ h->id, h->kind };
		return;
	}
	ulpt_gdb_stop(h, gdb_after.stepping & 1, f ? f->next_ip : 0, f ? f->ip : 0);
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
 * the extension ends it (or not: see the top); at the stub if a hit sends the program
 * there, whose stop the extension may not report (a condition). */
void gdb_step_end(struct ulpt_fault *f)
{
	if (!gdb_step_fault(f) || (gdb_after.stepping & 1))
		return;
	if (gdb_after.stepping & AFTER_STOP) {
		gdb_rec.stepping |= GDB_STEP_END;
		return;
	}
	ulpt_gdb_stop(NULL, 1, f->next_ip, f->ip);
}

/*
 * Watches in a batch. An inferior call of ulpt_gdb_watch per `ulpt watch' was 2.0 ms of the
 * command's 2.3 ms on the host and some 27 ms in the guest: ten thousand watchpoints took
 * minutes to set. So, while the program is stopped, the extension writes each request here
 * (req[n], then n) and sends the thread GDB_QUEUE_SIG once: a signal pending at a resume is
 * delivered before the thread's next instruction (GDB passes it on: handle nostop noprint
 * pass), and its handler starts every request queued, as GDB inserts its hardware watchpoints
 * when the program resumes. The extension reads the results (an id, or a negative errno) at
 * the next stop, or calls ulpt_gdb_flush itself when it needs them sooner. sig is 0 where the
 * program has the signal (its own action before the agent's, or set after: signals.c): the
 * extension then makes a call per watch, as it also does when the program has other threads,
 * which could run before the handler, or blocks the signal.
 */
#define GDB_QUEUE 4096
#define GDB_QUEUE_SIG 57        /* SIGRTMAX - 7: the extension reads it from sig */
GDB_API struct gdb_queue {
	int32_t sig;                /* the signal to send, 0: no batch */
	uint32_t max;               /* GDB_QUEUE */
	uint32_t n, done;           /* requests queued, and started */
	uint32_t knock;             /* the handler knocks once it has started them (door_knock):
				     * set with a batch; not for a batch that the extension's
				     * call starts (the signal is delivered inside the call) */
	uint32_t pad;
	struct {
		uint64_t addr, len;
		uint32_t mode;
		int32_t tid;
		int32_t result;         /* ulpt_gdb_watch's */
		int32_t pad;
	} req[GDB_QUEUE];
} ulpt_gdb_queue;

GDB_API int ulpt_gdb_watch(uintptr_t addr, size_t len, unsigned mode, pid_t tid);

/* Starts the requests queued since the last call: how many it started. */
GDB_API int ulpt_gdb_flush(void)
{
	struct gdb_queue *q = &ulpt_gdb_queue;
	uint32_t n = q->n < GDB_QUEUE ? q->n : GDB_QUEUE, k = 0;

	for (uint32_t i = q->done; i < n; i++, k++)
		q->req[i].result = ulpt_gdb_watch(q->req[i].addr, q->req[i].len, q->req[i].mode,
						  q->req[i].tid);
	q->done = n;
	return (int)k;
}

/*
 * A batch's end, where the door traps or may (ULPT backend): one read of door_slot, a silent
 * stop of the extension's watchpoint, whose stop() reads the batch's results there, at the
 * program's resume, as GDB inserts its own watchpoints there. Before, the first hit read them
 * and made the probe's extra stops, inside the program's work: about 9M modeled cycles with a
 * thousand watchpoints in the guest (bench/micro-gdb). The first knock is the probe: if
 * it did not trap, the door stays shut and every hit takes the trap stub, as after a probe at a
 * hit. The record says knock with resume 0, under the lock (this thread's, as a hit takes it),
 * which is let go after. The read runs with SIGTRAP unblocked: the handler blocks every signal,
 * and the kernel resets the action of a blocked signal that a trap forces (the program's own
 * SIGTRAP handler would be lost).
 */
static void door_knock(pid_t tid)
{
	int on = __atomic_load_n(&ulpt_gdb_door.on, __ATOMIC_ACQUIRE), mine = (int)tid;
	sigset_t trap, old;

	if ((on != DOOR_WATCHED && on != DOOR_TRAPS) || door_fd < 0 || !door_lock(tid))
		return;
	ulpt_gdb_door.n = 0;
	ulpt_gdb_door.resume = 0;
	if (on == DOOR_TRAPS || __atomic_compare_exchange_n(&ulpt_gdb_door.on, &on, DOOR_PROBING, 0,
							    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		sigemptyset(&trap);
		sigaddset(&trap, SIGTRAP);
		pthread_sigmask(SIG_UNBLOCK, &trap, &old);
		(void)*(volatile uint64_t *)&door_slot;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	/* The probe's stop let go of the lock already (its stop() writes DOOR_TRAPS and 0s). */
	__atomic_compare_exchange_n(&ulpt_gdb_door.lock, &mine, 0, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

static void queue_handler(int sig)
{
	int e = errno;

	(void)sig;
	if (ulpt_gdb_flush() > 0 && __atomic_exchange_n(&ulpt_gdb_queue.knock, 0, __ATOMIC_RELAXED))
		door_knock(agent_tid());
	errno = e;
}

/* Whether sig is the queue's, its action the agent's (signals.c); take: the program's action
 * is about to replace it, and the batches end. */
int gdb_queue_signal(int sig, int take)
{
	if (sig != GDB_QUEUE_SIG || !__atomic_load_n(&ulpt_gdb_queue.sig, __ATOMIC_RELAXED))
		return 0;
	if (take)
		__atomic_store_n(&ulpt_gdb_queue.sig, 0, __ATOMIC_RELAXED);
	return 1;
}

/* The queue's handler, where the program left the signal at its default. */
static void queue_start(void)
{
	struct sigaction sa = { .sa_handler = queue_handler, .sa_flags = SA_RESTART }, old;

	sigfillset(&sa.sa_mask);
	ulpt_gdb_queue.max = GDB_QUEUE;
	if (!__sigaction(GDB_QUEUE_SIG, NULL, &old) && old.sa_handler == SIG_DFL &&
	    !(old.sa_flags & SA_SIGINFO) && !__sigaction(GDB_QUEUE_SIG, &sa, NULL))
		ulpt_gdb_queue.sig = GDB_QUEUE_SIG;
}

/* Starts the stop calls, once; -ENODEV if the agent could not start (the program runs
 * unwatched: its start said why). */
static int gdb_start(void)
{
	if (!ag.ready)
		return -ENODEV;
	if (!filters) {
		uintptr_t tp;

		filters = wl_mem_reserve(GDB_IDS * sizeof(*filters));
		if (!filters)
			return -ENOMEM;
		__asm__("movq %%fs:0, %0" : "=r"(tp));     /* the TCB's self pointer */
		ulpt_gdb_rec_tpoff = (long)((uintptr_t)&gdb_rec - tp);
		door_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		pthread_atfork(NULL, NULL, door_fork_child);
		queue_start();
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
		filters[r] = (struct filter){ .changes = mode & GDB_CHANGES, .tid = tid,
					      .addr = addr, .len = len };
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
