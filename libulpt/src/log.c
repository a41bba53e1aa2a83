/*
 * The access log (docs/spec.md 6.2, ulpt_log_start(3)): a thread's ring of records, the drains
 * that hand them to the program's callback, the consumer thread, and the ULPT backend's log
 * events (reasons FULL and LOG, from dispatch.c); and a thread's count table (spec 6.3,
 * ulpt_count_start(3)), which takes the log's place with nothing to drain. On the mprotect
 * backend mprotect.c appends the records itself, to the same ring, or adds to the counters.
 *
 * Built with -mgeneral-regs-only: the ULPT backend drains in its handler, whose stub may have
 * saved no vector state (the callback then runs through ulpt_log_call_vec_, entry.S).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ulpt/arch.h>
#include "ulpt.h"
#include "internal.h"
#include "uapi.h"

_Static_assert(ULPT_DENY_LOG == ULPT_LOG && ULPT_LOG_V_ == ULPT_REC_V && ULPT_LOG_VAL_ == ULPT_REC_VAL &&
	       sizeof(struct ulpt_log_slot) == ULPT_REC_SIZE &&
	       __builtin_offsetof(struct ulpt_log_slot, info) == ULPT_REC_INFO * 8 &&
	       __builtin_offsetof(struct ulpt_log_slot, ip) == ULPT_REC_RIP * 8 &&
	       __builtin_offsetof(struct ulpt_log_slot, value) == ULPT_REC_VALUE * 8 &&
	       sizeof(struct ulpt_log_st) <= ULPT_PAGE_SIZE,
	       "libulpt's log records follow include/ulpt/arch.h");
_Static_assert(sizeof(struct ulpt_count) == ULPT_CNT_SIZE &&
	       __builtin_offsetof(struct ulpt_count, reads) == ULPT_CNT_READ * 8 &&
	       __builtin_offsetof(struct ulpt_count, writes) == ULPT_CNT_WRITE * 8 &&
	       (1u << ULPT_LINE_SHIFT) == ULPT_LINE_SIZE,
	       "libulpt's count table follows include/ulpt/arch.h");

__thread struct ulpt_log_st *ulpt_log_st_ __attribute__((tls_model("initial-exec")));

void ulpt_log_call_vec_(ulpt_log_fn fn, const struct ulpt_log_rec *recs, size_t n, void *arg) HIDDEN;

#define BATCH 32        /* records per call of the callback (on the handler's stack) */

static int on_ulpt(void)
{
	return ulpt_lib_state_.backend == ULPT_BACKEND_ULPT;
}

/* The calling thread's log if it is a ring: the ring's calls see a count table as no log. */
static struct ulpt_log_st *ring_st(void)
{
	struct ulpt_log_st *st = ulpt_log_st_;

	return st && !st->count_base ? st : NULL;
}

static int set_log(struct ulpt_log_arg *a)
{
	return syscall(SYS_arch_prctl, ARCH_ULPT_SET_LOG, (unsigned long)a) != 0 ? -errno : 0;
}

/* The records waiting, in order, to fn in batches; their number. vec_saved 0: in the ULPT
 * handler entered through the general-register-only stub. */
int ulpt_log_drain_(struct ulpt_log_st *st, int vec_saved)
{
	struct ulpt_log_rec b[BATCH];
	size_t n;
	int total = 0;

	st->draining++;
	if (st->raw) {
		/* Built general-register-only by contract: no vector state to save. */
		total = (int)st->raw(&st->ring, st->arg);
		st->draining--;
		return total;
	}
	do {
		for (n = 0; n < BATCH && ulpt_log_next(&st->ring, &b[n]); n++)
			;
		if (n && vec_saved)
			st->fn(b, n, st->arg);
		else if (n)
			ulpt_log_call_vec_(st->fn, b, n, st->arg);
		total += (int)n;
	} while (n == BATCH);
	st->draining--;
	return total;
}

/* mprotect: the n slots from the write index on are free. */
int ulpt_log_room_(const struct ulpt_log_st *st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (__atomic_load_n(&st->ring.slots[(st->index + i) & st->ring.mask].info,
				    __ATOMIC_ACQUIRE) & ULPT_LOG_V_)
			return 0;
	return 1;
}

static void wake(struct ulpt_log_st *st)
{
	if (__atomic_exchange_n(&st->sleeping, 0, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &st->sleeping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A full log with a consumer thread: it frees the slot (and must not sleep meanwhile). */
static void wait_free(struct ulpt_log_st *st, const struct ulpt_log_slot *s)
{
	for (unsigned spin = 0; __atomic_load_n(&s->info, __ATOMIC_ACQUIRE) & ULPT_LOG_V_; spin++) {
		wake(st);
		if (spin < 100)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
}

void ulpt_log_wait_(struct ulpt_log_st *st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		wait_free(st, &st->ring.slots[(st->index + i) & st->ring.mask]);
}

/* The ULPT backend's log events (R-LOG-4, R-LOG-5); the program's handler never sees them. */
void ulpt_log_event_(unsigned reason, int vec_saved)
{
	struct ulpt_log_st *st = ulpt_log_st_;
	uint64_t head;

	if (reason == ULPT_REASON_LOG) {
		/* After the instruction. Not inside a drain (its callback logs): the event is level
		 * triggered and comes back after it. */
		if (st && !st->count_base && !st->consumer_on && !st->draining)
			ulpt_log_drain_(st, vec_saved);
		return;
	}
	/* FULL, at the access: it runs again once its slot is free. A log the library did not
	 * set, or a counter the CPU cannot add to (not canonical, not RAM: R-CNT-2), is the
	 * program's error, as a counter that is not mapped is. */
	if (!st || st->count_base) {
		ulpt_default_segv_();
		return;
	}
	head = __atomic_load_n(&st->ring.head, __ATOMIC_RELAXED);
	if (st->consumer_on) {
		wait_free(st, &st->ring.slots[head & st->ring.mask]);
		return;
	}
	if (ulpt_log_drain_(st, vec_saved))
		return;
	/* Full, and nothing at head: the program consumed out of order. Go on from the oldest
	 * record that waits, rather than take this event for ever. */
	for (uint64_t i = 1; i <= st->ring.mask; i++)
		if (__atomic_load_n(&st->ring.slots[(head + i) & st->ring.mask].info,
				    __ATOMIC_ACQUIRE) & ULPT_LOG_V_) {
			__atomic_store_n(&st->ring.head, head + i, __ATOMIC_RELAXED);
			ulpt_log_drain_(st, vec_saved);
			return;
		}
	ulpt_default_segv_();
}

/* --- the consumer thread ------------------------------------------------------------------ */

/* Polls the V bits (R-LOG-6); sleeps a millisecond at a time when idle, woken at a full log. */
static void *consumer_main(void *p)
{
	struct ulpt_log_st *st = p;
	struct timespec ms = { 0, 1000000 };
	unsigned idle = 0;

	for (;;) {
		int stop = __atomic_load_n(&st->stop, __ATOMIC_ACQUIRE);

		if (ulpt_log_drain_(st, 1)) {
			idle = 0;
			continue;
		}
		if (stop)
			return NULL;            /* drained after the producer's last record */
		if (++idle < 64) {
			__builtin_ia32_pause();
			continue;
		}
		if (idle < 80) {
			sched_yield();
			continue;
		}
		__atomic_store_n(&st->sleeping, 1, __ATOMIC_SEQ_CST);
		if (!ulpt_log_peek(&st->ring) && !__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, &st->sleeping, FUTEX_WAIT_PRIVATE, 1, &ms, NULL, 0);
		__atomic_store_n(&st->sleeping, 0, __ATOMIC_RELAXED);
	}
}

/* The threshold in effect: 0 while a consumer thread runs, so the producer only stops at a
 * full log. */
static int set_thresh(struct ulpt_log_st *st, uint32_t t)
{
	struct ulpt_log_arg a;
	int r;

	if (on_ulpt()) {
		if (syscall(SYS_arch_prctl, ARCH_ULPT_GET_LOG, (unsigned long)&a) != 0)
			return -errno;
		a.thresh = t;
		a.flags = 0;
		if ((r = set_log(&a)) != 0)
			return r;
	}
	st->cur_thresh = t;
	return 0;
}

static void consumer_end(struct ulpt_log_st *st)
{
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	wake(st);
	pthread_join(st->consumer, NULL);
	st->consumer_on = 0;
	set_thresh(st, st->thresh);
}

int ulpt_log_consumer_start(void)
{
	struct ulpt_log_st *st = ring_st();
	int r;

	if (!st)
		return -EINVAL;
	if (st->consumer_on)
		return -EBUSY;
	if ((r = set_thresh(st, 0)) != 0)
		return r;
	st->stop = 0;
	st->sleeping = 0;
	st->consumer_on = 1;
	if ((r = pthread_create(&st->consumer, NULL, consumer_main, st)) != 0) {
		st->consumer_on = 0;
		set_thresh(st, st->thresh);
		return -r;
	}
	pthread_setname_np(st->consumer, "ulpt-log");
	return 0;
}

int ulpt_log_consumer_stop(void)
{
	struct ulpt_log_st *st = ring_st();

	if (!st || !st->consumer_on)
		return -EINVAL;
	consumer_end(st);
	return 0;
}

/* --- a thread's log ----------------------------------------------------------------------- */

static pthread_key_t log_key;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/* Ends the calling thread's log: no record after this; the rest to fn. Their number. A
 * count table just ends: its counters are the program's memory. */
static int log_end(struct ulpt_log_st *st)
{
	struct ulpt_log_arg none = { 0 };
	int n;

	if (st->consumer_on)
		consumer_end(st);
	if (on_ulpt())
		set_log(&none);
	ulpt_log_st_ = NULL;            /* mprotect: the emulation stops here */
	pthread_setspecific(log_key, NULL);
	n = st->count_base ? 0 : ulpt_log_drain_(st, 1);
	munmap(st, st->map_len);
	return n;
}

static void log_thread_exit(void *p)
{
	if (ulpt_log_st_ == p)
		log_end(p);
}

/* A fork child has no consumer thread: its own drains take over. */
static void log_atfork_child(void)
{
	struct ulpt_log_st *st = ulpt_log_st_;

	if (st && st->consumer_on) {
		st->consumer_on = 0;
		set_thresh(st, st->thresh);
	}
}

static void log_init(void)
{
	pthread_key_create(&log_key, log_thread_exit);
	pthread_atfork(NULL, NULL, log_atfork_child);
}

int ulpt_log_start(unsigned size_shift, unsigned thresh, ulpt_log_fn fn, void *arg)
{
	struct ulpt_log_st *st;
	size_t len;
	void *p;
	int r = 0;

	/* At least two slots: the records of one instruction (a read-modify-write's two) must
	 * fit in the ring together. */
	if (!ulpt_lib_state_.backend || !fn || size_shift < 1 || size_shift > ULPT_LOG_MAX_SHIFT ||
	    thresh > (1u << size_shift))
		return -EINVAL;
	if (ulpt_log_st_)
		return -EBUSY;
	pthread_once(&log_once, log_init);
	/* Populated: a record write that faults costs a page fault and a rerun. */
	len = ULPT_PAGE_SIZE + ((size_t)ULPT_REC_SIZE << size_shift);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	st = p;
	st->ring.slots = (struct ulpt_log_slot *)((char *)p + ULPT_PAGE_SIZE);
	st->ring.mask = (1ull << size_shift) - 1;
	st->fn = fn;
	st->arg = arg;
	st->map_len = len;
	st->thresh = st->cur_thresh = thresh;
	if (on_ulpt()) {
		/* Log events need the library's entry stub as this thread's handler. */
		struct ulpt_log_arg a = { .base = (uintptr_t)st->ring.slots, .size_shift = size_shift,
					  .thresh = thresh };

		r = ulpt_view_ensure_handler_();
		if (r == 0 && (r = set_log(&a)) == -EINVAL)
			r = -EOPNOTSUPP;        /* arguments checked: a kernel without the log */
	}
	if (r) {
		munmap(p, len);
		return r;
	}
	pthread_setspecific(log_key, st);
	ulpt_log_st_ = st;
	return 0;
}

int ulpt_log_set_raw(ulpt_log_raw_fn raw, void *arg)
{
	struct ulpt_log_st *st = ring_st();

	if (!st)
		return -EINVAL;
	if (st->consumer_on)
		return -EBUSY;
	st->raw = raw;
	if (raw)
		st->arg = arg;
	return 0;
}

int ulpt_log_drain(void)
{
	struct ulpt_log_st *st = ring_st();

	if (!st)
		return -EINVAL;
	if (st->consumer_on)
		return -EBUSY;          /* one consumer at a time */
	return ulpt_log_drain_(st, 1);
}

int ulpt_log_stop(void)
{
	struct ulpt_log_st *st = ring_st();

	return st ? log_end(st) : -EINVAL;
}

struct ulpt_log_ring *ulpt_log_ring(void)
{
	struct ulpt_log_st *st = ring_st();

	return st ? &st->ring : NULL;
}

/* --- a thread's count table ---------------------------------------------------------------- */

/* The table's setting: 0, or EOPNOTSUPP without the count table (arguments checked: EINVAL
 * is a kernel without it, ENODEV a CPU; docs/linux-api.md). No handler needed: nothing to
 * drain, and a FULL without one is the SIGSEGV it is with. */
static int set_count(uintptr_t base)
{
	struct ulpt_log_arg a = { .base = base, .flags = ULPT_LOG_COUNT };
	int r = on_ulpt() ? set_log(&a) : 0;

	return r == -EINVAL || r == -ENODEV ? -EOPNOTSUPP : r;
}

int ulpt_count_start(void *base)
{
	struct ulpt_log_st *st = ulpt_log_st_;
	uintptr_t b = (uintptr_t)base;
	int r;

	/* What ULPT_LOG_BASE takes (R-MSR-2), and below the addresses the table covers: the
	 * kernel wants the log below the user address limit. */
	if (!ulpt_lib_state_.backend || !b || b % ULPT_LOG_ALIGN || b >= ULPT_VA_LIMIT_)
		return -EINVAL;
	if (st && st->count_base)
		return -EBUSY;
	if (st) {
		/* The table takes the log's place, in its memory: the thread's address space does
		 * not change. What the log holds goes to fn first, as at ulpt_log_stop. */
		if (st->consumer_on)
			consumer_end(st);
		if ((r = set_count(b)) != 0)
			return r;
		st->count_base = b;             /* fn's own accesses are counted */
		ulpt_log_drain_(st, 1);
		return 0;
	}
	pthread_once(&log_once, log_init);
	/* The mprotect backend's plans live here (a page: small static TLS, see dispatch.c). */
	st = mmap(NULL, ULPT_PAGE_SIZE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (st == MAP_FAILED)
		return -errno;
	st->count_base = b;
	st->map_len = ULPT_PAGE_SIZE;
	if ((r = set_count(b)) != 0) {
		munmap(st, ULPT_PAGE_SIZE);
		return r;
	}
	pthread_setspecific(log_key, st);
	ulpt_log_st_ = st;
	return 0;
}

int ulpt_count_stop(void)
{
	struct ulpt_log_st *st = ulpt_log_st_;

	if (!st || !st->count_base)
		return -EINVAL;
	log_end(st);
	return 0;
}

/* ulpt_fini: the calling thread's log ends with it. */
void ulpt_log_fini_(void)
{
	if (ulpt_log_st_)
		log_end(ulpt_log_st_);
}
