/*
 * The C side of the ULPT entry stubs (entry.S): turns the CPU's frame into a fault record,
 * calls the program's handler and writes its decision back into the frame for UIRET.
 * Built with -mgeneral-regs-only: with ULPT_HANDLER_GPR_ONLY the stub saves no vector state,
 * so nothing here may touch it.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ulpt/arch.h>
#include "ulpt.h"
#include "internal.h"

/* The thread id without a system call on every fault; fork clears it (the child's differs). */
static __thread pid_t tid_cache __attribute__((tls_model("initial-exec")));

static void forget_tid(void)
{
	tid_cache = 0;
}

static pthread_key_t recs_key;         /* a thread's records (below): freed at its exit */
static void recs_free(void *p);
static void pool_init(void);

static void register_forget(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
	pthread_key_create(&recs_key, recs_free);
	pool_init();
}

/*
 * Where glibc keeps a thread's id in its thread descriptor: the offset libthread_db's
 * descriptor of struct pthread's tid gives ({ bits, count, offset }, exported for debuggers),
 * checked against this thread's id; -1 if not known. Read there, a thread's first fault makes
 * no system call, which would end a debugger's single step inside the handler (so the fork
 * handler is registered here, at ulpt_init, too: pthread_once wakes waiters with one).
 */
static long tid_offset = -1;

void ulpt_tid_init_(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const uint32_t *d = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");
	pid_t tid = (pid_t)syscall(SYS_gettid);

	pthread_once(&once, register_forget);
	if (d && d[0] == 32 && d[1] == 1 && d[2] < 4096 &&
	    *(const pid_t *)((const char *)pthread_self() + d[2]) == tid)
		__atomic_store_n(&tid_offset, (long)d[2], __ATOMIC_RELAXED);
}

static pid_t my_tid(void)
{
	long off;

	if (!tid_cache) {
		off = __atomic_load_n(&tid_offset, __ATOMIC_RELAXED);
		tid_cache = off >= 0 ? *(const pid_t *)((const char *)pthread_self() + off) : 0;
		if (tid_cache <= 0)
			tid_cache = (pid_t)syscall(SYS_gettid);
	}
	return tid_cache;
}

/* errno's address, per thread, without a call into libc on every fault. */
static __thread int *errno_ptr __attribute__((tls_model("initial-exec")));

/*
 * ULPT_PERMIT_STEP: UIRET lets the instruction through with the frame's PERMIT and STEP bits,
 * and the CPU delivers an after event (reason AFTER) here once it has completed
 * (docs/spec.md R-RET-4), with no signal, TF or kernel entry; the after-call then runs in
 * ulpt_after_tramp_ (below). The record is that of the last fault of the instruction whose
 * decision was ULPT_PERMIT_STEP. A later fault of the same instruction (an RMW denied both
 * kinds) ends the CPU's request, so the decision for it asks again unless it is ULPT_SKIP
 * (the record is then that fault's only if its decision was ULPT_PERMIT_STEP).
 * The program's own TF (a debugger stepping it) stays in the frame: the CPU reports that trap
 * after the after event's UIRET.
 */
#define MAX_STEPS 4
struct step {
	struct ulpt_fault rec;      /* for the after-call */
	uintptr_t addr, start;      /* of the frame UIRET last read for it: the after event's */
};
static __thread unsigned step_live __attribute__((tls_model("initial-exec")));   /* bit per step */

/*
 * Records are kept per pending request, not one per thread: a signal handler that runs
 * between a decision and its UIRET may fault and step too, and the after event tells which
 * request it ends by the access words it carries.
 */
/*
 * After-calls run in ulpt_after_tramp_ (entry.S), after the UIRET of the after event: outside
 * the ULPT handler, so that faults inside them are delivered (watchlib and the agent read and
 * report there), with the full register state saved. Their records wait in afters, last in
 * first out: one that a signal handler or the after-call itself starts meanwhile ends first.
 */
#define MAX_AFTERS 8
#define RFLAGS_TF 0x100ull
static __thread unsigned after_depth __attribute__((tls_model("initial-exec")));

/*
 * The records of a thread's steps and after-calls: in static TLS they would be most of the
 * 2 KiB that kept the library out of a running program (dlopen finds some 1.6 KiB of static
 * TLS room there, and ulpt-gdb -p loads the agent so). A thread takes a set from a pool at
 * its first ULPT_PERMIT_STEP and gives it back at its exit (pthread key destructor). The pool
 * is address space reserved at ulpt_init and committed as touched, and taking from it makes
 * no system call: one in the handler would end a debugger's single step there (see above).
 * Free sets form a lock-free stack of indices, tagged against ABA: a signal handler on top of
 * a taking thread may take one too.
 */
#define MAX_RECS 65536u         /* threads with records at once */
struct records {
	struct step steps[MAX_STEPS];
	struct {
		struct ulpt_fault rec;
		uint64_t rflags;    /* the program's, restored after the call */
	} afters[MAX_AFTERS];
	uint32_t next;              /* free: the next free set's index + 1, or 0 */
};
static __thread struct records *recs __attribute__((tls_model("initial-exec")));
static struct records *pool;
static uint64_t pool_free;      /* tag << 32 | (index + 1) of the first free set, or tag << 32 */
static uint32_t pool_top;       /* sets below it have been handed out */

static void pool_init(void)
{
	void *p = mmap(NULL, MAX_RECS * sizeof(struct records), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p != MAP_FAILED) {
		pool = p;
		ulpt_own_add_(p, MAX_RECS * sizeof(struct records));
	}
}

static void recs_free(void *p)
{
	struct records *r = p;
	uint64_t h = __atomic_load_n(&pool_free, __ATOMIC_ACQUIRE);

	recs = NULL;
	step_live = 0;              /* none can be live at a thread's exit: never a stale one */
	after_depth = 0;
	do
		__atomic_store_n(&r->next, (uint32_t)h, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&pool_free, &h,
					    ((h >> 32) + 1) << 32 | (uint32_t)(r - pool + 1), 1,
					    __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
}

/* This thread's records, taken if need be; NULL if the pool has none. */
static struct records *recs_get(void)
{
	struct records *r = recs;
	uint64_t h;
	uint32_t i;

	if (__builtin_expect(r != NULL, 1))
		return r;
	if (!pool)
		return NULL;
	h = __atomic_load_n(&pool_free, __ATOMIC_ACQUIRE);
	while ((uint32_t)h) {
		uint32_t next = __atomic_load_n(&pool[(uint32_t)h - 1].next, __ATOMIC_RELAXED);

		if (__atomic_compare_exchange_n(&pool_free, &h, ((h >> 32) + 1) << 32 | next, 1,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
			r = &pool[(uint32_t)h - 1];
			break;
		}
	}
	if (!r) {
		i = __atomic_fetch_add(&pool_top, 1, __ATOMIC_RELAXED);
		if (i >= MAX_RECS)
			return NULL;
		r = &pool[i];
	}
	recs = r;
	pthread_setspecific(recs_key, r);
	return r;
}

static int step_find_ip(uintptr_t ip)
{
	for (int i = 0; i < MAX_STEPS; i++)
		if ((step_live >> i & 1) && recs->steps[i].rec.ip == ip)
			return i;
	return -1;
}

/* Request i for f, or -1 without memory for the records. */
static int step_add(const struct ulpt_fault *f)
{
	int i;

	if (!recs_get())
		return -1;
	i = step_find_ip(f->ip);
	if (i < 0)
		i = step_live == (1u << MAX_STEPS) - 1 ? 0 : __builtin_ctz(~step_live);
	recs->steps[i].rec = *f;
	step_live |= 1u << i;
	return i;
}

/* The frame going back to UIRET with STEP for request i: the after event will carry it. */
static void step_key(int i, const uint64_t *frame)
{
	recs->steps[i].addr = frame[ULPT_FRAME_ADDR];
	recs->steps[i].start = frame[ULPT_FRAME_START];
}
void ulpt_after_tramp_(void) HIDDEN;

/* Below the program's red zone; with ULPT_STKADJ 128 (Linux's) this is the frame's start
 * word or the padding above the frame, which UIRET does not read. */
#define TRAMP_SLOT (128 + 8)

void ulpt_after_run_(uint64_t *rflags_slot) HIDDEN;
void ulpt_after_run_(uint64_t *rflags_slot)
{
	unsigned d = after_depth - 1;
	struct ulpt_fault f = recs->afters[d].rec;
	uint64_t rflags = recs->afters[d].rflags;
	ulpt_handler_t handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	int saved_errno = *errno_ptr;

	after_depth = d;
	f.rflags = rflags;
	f.next_ip = rflags_slot[1];         /* the program's RIP, above its RFLAGS (entry.S) */
	if (handler)
		handler(&f, ulpt_lib_.handler_arg);
	*errno_ptr = saved_errno;
	/* The handler may clear TF (ulpt-gdb's agent, which stops the program itself): nothing
	 * else of the program's flags. It may also send the program elsewhere first (the same
	 * agent's stop for a debugger, which then goes on to the program's RIP). */
	*rflags_slot = rflags & ~(f.rflags & RFLAGS_TF ? 0 : RFLAGS_TF);
	rflags_slot[1] = f.next_ip;
}

/* The after event: send UIRET to the trampoline with the request's record. */
static void after_event(uint64_t *frame, ulpt_handler_t handler)
{
	struct ulpt_fault f;
	uint64_t rsp = frame[ULPT_FRAME_RSP];
	int i;

	for (i = 0; i < MAX_STEPS; i++)
		if ((step_live >> i & 1) && recs->steps[i].addr == frame[ULPT_FRAME_ADDR] &&
		    recs->steps[i].start == frame[ULPT_FRAME_START])
			break;
	if (i == MAX_STEPS || !handler)
		return;                     /* not a request of this library, or no handler now */
	f = recs->steps[i].rec;
	step_live &= ~(1u << i);
	f.after = 1;
	if (after_depth == MAX_AFTERS) {
		handler(&f, ulpt_lib_.handler_arg);     /* nested too deep: here, as a last resort */
		return;
	}
	recs->afters[after_depth].rec = f;
	recs->afters[after_depth].rflags = frame[ULPT_FRAME_RFLAGS];
	after_depth++;
	*(uint64_t *)(rsp - TRAMP_SLOT) = frame[ULPT_FRAME_RIP];
	frame[ULPT_FRAME_RSP] = rsp - TRAMP_SLOT;
	frame[ULPT_FRAME_RIP] = (uintptr_t)ulpt_after_tramp_;
	frame[ULPT_FRAME_RFLAGS] &= ~RFLAGS_TF;     /* the trampoline's POPFQ restores it */
}

/*
 * Called by the entry stubs with the CPU's frame. It starts a page of its own, and the stubs
 * follow it in the same section: the emulated CPU chains translated blocks only within a page,
 * and each jump across pages costs a lookup, several per fault.
 */
void ulpt_dispatch_(uint64_t *frame, int vec_saved) __attribute__((visibility("hidden")));
__attribute__((section(".text.ulpt_fault"), aligned(4096)))
void ulpt_dispatch_(uint64_t *frame, int vec_saved)
{
	uint64_t info = frame[ULPT_FRAME_INFO];
	ulpt_handler_t handler;
	int saved_errno;

	if (__builtin_expect(!errno_ptr, 0))
		errno_ptr = &errno;
	saved_errno = *errno_ptr;

	/* The access log's events are the library's (log.c): UIRET as the frame is, to the
	 * access again (FULL) or to the next instruction (LOG). */
	if (__builtin_expect(ULPT_INFO_REASON(info) == ULPT_REASON_FULL ||
			     ULPT_INFO_REASON(info) == ULPT_REASON_LOG, 0)) {
		ulpt_log_event_(ULPT_INFO_REASON(info), vec_saved);
		*errno_ptr = saved_errno;
		return;
	}
	handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	struct ulpt_fault f = {
		.addr = frame[ULPT_FRAME_ADDR],
		.start = frame[ULPT_FRAME_START],
		.size = ULPT_INFO_SIZE(info),
		.kind = ULPT_INFO_KIND(info),
		.reason = ULPT_INFO_REASON(info),
		.ip = frame[ULPT_FRAME_RIP],
		.entry = { frame[ULPT_FRAME_ENTRY0], frame[ULPT_FRAME_ENTRY1] },
		.tid = my_tid(),
	};

	if (__builtin_expect(f.reason == ULPT_REASON_AFTER, 0)) {
		after_event(frame, handler);
		*errno_ptr = saved_errno;
		return;
	}
	/* A later fault of the instruction being stepped keeps its request (see above). */
	int stepping = __builtin_expect(step_live != 0, 0) ? step_find_ip(f.ip) : -1;

	switch (handler ? handler(&f, ulpt_lib_.handler_arg) : ULPT_DEFAULT) {
	case ULPT_RETRY:
		if (stepping >= 0) {
			frame[ULPT_FRAME_INFO] = info | ULPT_INFO_STEP;
			step_key(stepping, frame);
		}
		break;
	case ULPT_PERMIT:
		frame[ULPT_FRAME_INFO] = info | ULPT_INFO_PERMIT;
		if (stepping >= 0) {
			frame[ULPT_FRAME_INFO] |= ULPT_INFO_STEP;
			step_key(stepping, frame);
		}
		break;
	case ULPT_SKIP:
		if (stepping >= 0)      /* the instruction never completes: no after-call */
			step_live &= ~(1u << stepping);
		frame[ULPT_FRAME_RIP] = f.next_ip;
		break;
	case ULPT_PERMIT_STEP: {
		int i = step_add(&f);

		if (i < 0) {
			ulpt_default_segv_();       /* no memory for the after-call's record */
			break;
		}
		step_key(i, frame);
		frame[ULPT_FRAME_INFO] = info | ULPT_INFO_PERMIT | ULPT_INFO_STEP;
		break;
	}
	default:
		ulpt_default_segv_();
	}
	*errno_ptr = saved_errno;
}
