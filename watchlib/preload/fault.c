/*
 * The agent's fault handler. Built -mgeneral-regs-only: it runs in libulpt's entry stub that
 * saves no vector state, on every fault, so it must be cheap and must not call libc's string
 * functions.
 *
 * One error report, in order (the whole pipeline; nothing else keeps its state):
 *  1. The CPU delivers the denied access to libulpt's entry stub (libulpt/src/entry.S); its C
 *     side (dispatch.c) makes the fault record and calls agent_fault (below). On the mprotect
 *     backend the SIGSEGV handler (mprotect.c) does.
 *  2. agent_fault sends faults in the heap arena to heap_fault, the rest to watchlib's
 *     wl_handle_fault (the -w watches).
 *  3. heap_fault decides with heap_classify: an access inside a live block is let through
 *     (ULPT_PERMIT, counted as a false fault); an error is kept in this thread's `pending`
 *     and the access is let through with ULPT_PERMIT_STEP. A later fault of the same
 *     instruction (an RMW, a REP string) keeps the first error: one report.
 *  4. Once the instruction has completed, libulpt calls agent_fault again with f->after set:
 *     on ULPT from the after event (docs/spec.md R-RET-4) in a trampoline outside the handler,
 *     on mprotect from its SIGTRAP handler; every register is saved there. agent_fault reports
 *     the pending error (report.c: report_error, which unwinds, symbolises and may allocate)
 *     and passes the call on to watchlib, whose own pending watch hit it ends.
 * Errors found outside a fault (a bad free, a canary, a checked libc function's range: heap.c,
 * strmem.c) call report_error directly.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include "agent.h"

/* The error of the instruction being let through with ULPT_PERMIT_STEP (ip 0: none). */
static __thread struct err pending __attribute__((tls_model("initial-exec")));

static struct blk *blk_of(uintptr_t a)
{
	uint32_t id = slot_id_of(a);

	return id ? &ag.blocks[id] : NULL;
}

static int inside(const struct blk *b, uintptr_t s, uintptr_t e)
{
	return b && b->state == BLK_LIVE && s >= b->user && e <= b->user + b->size;
}

static int overlaps(const struct blk *b, uintptr_t s, uintptr_t e, int state)
{
	return b && b->state == state && s < b->user + b->size && e > b->user;
}

/* The block slot that ends where b's slot begins (b's red zone is its right red zone). */
static struct blk *before(const struct blk *b)
{
	return b->first_line ? blk_of((uintptr_t)ag.arena +
				      ((uintptr_t)(b->first_line - 1) << LINE_SHIFT)) : NULL;
}

static int in_libc(uintptr_t ip)
{
	for (int i = 0; i < 2; i++)
		if (ip - ag.libc_text[i][0] < ag.libc_text[i][1] - ag.libc_text[i][0])
			return 1;
	return 0;
}

/* The error an access [s, e) by the instruction at ip makes, or 0; *bid is the block. */
enum err_kind heap_classify(uintptr_t s, uintptr_t e, uintptr_t ip, int reads_only, uint32_t *bid)
{
	struct blk *b = blk_of(s), *c = blk_of(e - 1), *prev;
	uint64_t dl, dr;

	if (inside(b, s, e) || inside(c, s, e))
		return 0;
	/* libc's vectorised string routines (strlen, strcmp, strchr...) read whole chunks
	 * around the bytes they want: aligned chunks, and unaligned ones that stop short of a
	 * page boundary (near one, strcmp goes on in 8- and 4-byte chunks). A read that overlaps
	 * a live block is one of those when it is made by libc's (or the loader's) code and is 4
	 * bytes or more, or elsewhere is an aligned vector read of 16 bytes or more; not a bug
	 * (a read overflow inside libc is caught at its first chunk wholly past the block). Writes
	 * are never excused, nor reads of freed blocks, except by an unaligned libc chunk that
	 * starts in a live block's bytes (reading on past its end) or ends in them (the last
	 * chunk of a buffer, loaded back from its end, as memcmp does): the freed bytes it
	 * also covers are not the ones the routine wants. */
	int chunk = reads_only && (in_libc(ip) ? e - s >= 4 : e - s >= 16 && !(s & (e - s - 1)));

	if (chunk && (overlaps(b, s, e, BLK_LIVE) || overlaps(c, s, e, BLK_LIVE)) &&
	    !overlaps(b, s, e, BLK_FREED) && !overlaps(c, s, e, BLK_FREED))
		return 0;
	if (chunk && in_libc(ip) &&
	    (overlaps(b, s, s + 1, BLK_LIVE) || overlaps(c, e - 1, e, BLK_LIVE)))
		return 0;
	/* The loader's own string routines cannot be replaced (strmem.c replaces the program's
	 * calls): they read whole aligned 16- to 64-byte chunks, and may load the next 64-byte
	 * group before testing the one with the terminator. So an aligned chunk of theirs that
	 * starts within 128 bytes after a live block's end, in the same page, is that. */
	if (chunk && in_libc(ip) && (e - s == 16 || e - s == 32 || e - s == 64) && !(s & (e - s - 1))) {
		const struct blk *l = blk_of(s - LINE_BYTES);
		uintptr_t end = l && l->state == BLK_LIVE ? l->user + l->size : 0;
		if (end && s >= end && s < end + 128 && (s >> 12) == ((end - 1) >> 12))
			return 0;
		/* And they start at the 64-byte group that holds the string's first byte: a
		 * chunk before a live block's start within that group (strlen-sse2's first
		 * group, which dlopen's copies of library names reach). */
		if (b && b->state == BLK_LIVE && s < b->user && s >= (b->user & ~(uintptr_t)63) &&
		    e <= b->user + 64)
			return 0;
	}
	if (overlaps(b, s, e, BLK_FREED) || overlaps(c, s, e, BLK_FREED)) {
		*bid = (uint32_t)((overlaps(b, s, e, BLK_FREED) ? b : c) - ag.blocks);
		return ERR_UAF;
	}
	/* An overflow: of the nearest live block, left or right. Past the last block of the
	 * arena the line has no owner yet: the block is the one that ends before it; in the
	 * arena not handed out yet (denied: heap.c), the last one below it, and in its unused
	 * first page the first one. */
	if (!b)
		b = c;
	if (!b)
		b = blk_of(s - LINE_BYTES);
	if (!b && in_arena(s)) {
		uint32_t l = line_of(s), top = heap_bump_line(), first = 4096 / LINE_BYTES;

		if (top > first)
			b = blk_of((uintptr_t)ag.arena +
				   ((uintptr_t)(l >= top ? top - 1 : first) << LINE_SHIFT));
		if (b && b->state == BLK_NONE)
			b = NULL;           /* a slot waiting for reuse: no block to name */
	}
	if (!b)
		return ERR_OVERFLOW;
	prev = before(b);
	dr = b->user > e ? b->user - e : 0;                  /* to b's start */
	dl = prev && prev->state != BLK_NONE && s >= prev->user + prev->size ?
	     s - (prev->user + prev->size) : ~0ull;            /* past prev's end */
	if (s >= b->user + b->size)                           /* past b's own end */
		dl = 0, prev = b;
	*bid = (uint32_t)((dl <= dr && prev ? prev : b) - ag.blocks);
	if (ag.blocks[*bid].state == BLK_FREED)
		return ERR_UAF;
	return ERR_OVERFLOW;
}

/* The address an error of an access from s reports: the first byte it may not touch (ASan
 * reports the access; for a wide one, like memcpy's, the bad byte says more). */
uintptr_t heap_bad_byte(enum err_kind k, uint32_t bid, uintptr_t s)
{
	if (k == ERR_OVERFLOW && bid) {
		const struct blk *b = &ag.blocks[bid];
		if (s >= b->user && s < b->user + b->size)
			return b->user + b->size;
	}
	return s;
}

static enum ulpt_action heap_fault_(struct ulpt_fault *f);

static enum ulpt_action heap_fault(struct ulpt_fault *f)
{
	uint64_t t0 = wl_ticks();
	enum ulpt_action a = heap_fault_(f);

	__atomic_add_fetch(&ag.faults, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ag.handler_ticks, wl_ticks() - t0, __ATOMIC_RELAXED);
	return a;
}

static void false_fault(void)
{
	__atomic_add_fetch(&ag.false_faults, 1, __ATOMIC_RELAXED);
}

static void hit(void)
{
	__atomic_add_fetch(&ag.hits, 1, __ATOMIC_RELAXED);
}

/* Set while the agent drains the records of its own accesses (realloc's copy): as faults,
 * they are not the program's. */
static __thread int log_discard __attribute__((tls_model("initial-exec")));

/* --heap's counts of a batch of accesses (a fault, or a drain of the log), added to the
 * agent's at its end: one atomic each per batch, not per access. */
struct heap_counts {
	uint64_t hits, falses, writes, reads;
};

static void heap_counts_add(const struct heap_counts *c, uint64_t faults, uint64_t ticks)
{
	if (c->hits)
		__atomic_add_fetch(&ag.hits, c->hits, __ATOMIC_RELAXED);
	if (c->falses)
		__atomic_add_fetch(&ag.false_faults, c->falses, __ATOMIC_RELAXED);
	if (c->writes)
		__atomic_add_fetch(&ag.heap_writes, c->writes, __ATOMIC_RELAXED);
	if (c->reads)
		__atomic_add_fetch(&ag.heap_reads, c->reads, __ATOMIC_RELAXED);
	if (faults) {
		__atomic_add_fetch(&ag.faults, faults, __ATOMIC_RELAXED);
		__atomic_add_fetch(&ag.handler_ticks, ticks, __ATOMIC_RELAXED);
	}
}

/* An access [s, e) of one kind to a line --heap watches, from a fault or a log record: a hit
 * on a live block or a false fault. A read-modify-write is two accesses, a read and a write,
 * as the CPU's counters count it (docs/spec.md R-CNT-1). */
static void heap_watch_count(struct heap_counts *n, uintptr_t s, uintptr_t e, unsigned kind)
{
	struct blk *b = blk_of(s), *c = blk_of(e - 1);

	if (!(ag.heap_kinds & kind) ||
	    !(overlaps(b, s, e, BLK_LIVE) || overlaps(c, s, e, BLK_LIVE))) {
		n->falses++;
		return;
	}
	n->hits++;
	if (kind == WL_WRITE)
		n->writes++;
	else
		n->reads++;
}

void heap_log_records(const struct ulpt_log_rec *r, size_t n, void *arg)
{
	struct heap_counts c = { 0 };
	uint64_t t0 = wl_ticks();

	(void)arg;
	if (log_discard)
		return;
	for (size_t i = 0; i < n; i++) {
		uintptr_t s = r[i].start;
		heap_watch_count(&c, s, s + (r[i].size ? r[i].size : 1),
				 r[i].kind == ULPT_DENY_W ? WL_WRITE : WL_READ);
	}
	heap_counts_add(&c, n, wl_ticks() - t0);
}

/* The record in sl, freed for the CPU (its V bit cleared): 0 if none waits there. A size of 0
 * (not known) is one byte. */
static inline int slot_take(struct ulpt_log_slot *sl, uintptr_t *s, uintptr_t *ip,
			    unsigned *size, unsigned *kind)
{
	uint64_t info = __atomic_load_n(&sl->info, __ATOMIC_ACQUIRE);

	if (!(info & ULPT_LOG_V_))
		return 0;
	*s = sl->start;
	*ip = sl->ip;
	*size = (unsigned)(info >> 16) & 0xffff;
	*size += !*size;
	*kind = info & 7;
	__atomic_store_n(&sl->info, 0, __ATOMIC_RELEASE);
	return 1;
}

/* The same straight from the ring (ulpt_log_set_raw), the hot loop of --heap: a record that
 * lies within the bytes of the block the previous one hit is a hit with no lookup (blocks do
 * not change during a drain: free and realloc drain first), and the ring is walked without a
 * copy of each record. */
size_t heap_log_raw(struct ulpt_log_ring *r, void *arg)
{
	struct ulpt_log_slot *slots = r->slots;
	uint64_t mask = r->mask, head = r->head, first = head;
	struct heap_counts c = { 0 };
	/* The bytes of the last 4 blocks hit (programs alternate between a few arrays). */
	uintptr_t lo[4] = { 1, 1, 1, 1 }, hi[4] = { 0 };
	unsigned kinds = ag.heap_kinds, next = 0;
	uint64_t t0 = wl_ticks();

	(void)arg;
	for (;; head++) {
		uintptr_t s, ip;
		unsigned size, kind;

		if (!slot_take(&slots[head & mask], &s, &ip, &size, &kind))
			break;
		if (log_discard)
			continue;
		if ((kinds & kind) &&
		    ((s >= lo[0] && s + size <= hi[0]) || (s >= lo[1] && s + size <= hi[1]) ||
		     (s >= lo[2] && s + size <= hi[2]) || (s >= lo[3] && s + size <= hi[3]))) {
			c.hits++;
			c.writes += kind == ULPT_DENY_W;
			c.reads += kind != ULPT_DENY_W;
			continue;
		}
		uint64_t hits = c.hits;
		heap_watch_count(&c, s, s + size, kind == ULPT_DENY_W ? WL_WRITE : WL_READ);
		if (c.hits != hits) {
			const struct blk *b = blk_of(s);
			if (inside(b, s, s + size)) {
				lo[next] = b->user;
				hi[next] = b->user + b->size;
				next = (next + 1) & 3;
			}
		}
	}
	__atomic_store_n(&r->head, head, __ATOMIC_RELAXED);
	if (!log_discard)
		heap_counts_add(&c, head - first, wl_ticks() - t0);
	return (size_t)(head - first);
}

/*
 * --check --precise with the log (the default delivery): every denied access to an arena page
 * is logged, the partial lines' accesses inside their blocks included, and decided at the
 * drain, as ARM MTE's asynchronous mode decides its tag faults. An error found there waits in
 * async_errs until the program is next in the agent's allocator or exits (a drain may run in
 * a log event's handler, where the agent must not report), and is reported with the access's
 * RIP as its first frame and, below it, the stack of that later call.
 * Only the main thread logs, and only its own drains see its records: a free by another
 * thread since the last drain may have freed a block that was live at the access, so a
 * use-after-free found then is not reported (counted in async_unsure).
 */
#define ASYNC_MAX 64
static struct err async_errs[ASYNC_MAX];
static unsigned async_n;
static uint64_t other_frees, other_frees_seen;
uint64_t async_unsure;

size_t heap_check_log_raw(struct ulpt_log_ring *r, void *arg)
{
	struct ulpt_log_slot *slots = r->slots;
	uint64_t mask = r->mask, head = r->head, first = head;
	uint64_t others = __atomic_load_n(&other_frees, __ATOMIC_ACQUIRE);
	/* The bytes of the last 4 live blocks an access was inside (as heap_log_raw's): almost
	 * every record is an access to a block's own bytes in its partial first or last line. */
	uintptr_t lo[4] = { 1, 1, 1, 1 }, hi[4] = { 0 };
	unsigned next = 0;

	(void)arg;
	for (;; head++) {
		struct ulpt_log_slot *sl = &slots[head & mask];
		uint64_t info = __atomic_load_n(&sl->info, __ATOMIC_ACQUIRE);
		uintptr_t s, ip;
		unsigned size, kind;
		uint32_t bid = 0;
		enum err_kind k;

		if (!(info & ULPT_LOG_V_))
			break;
		s = sl->start;
		size = (unsigned)(info >> 16) & 0xffff;
		size += !size;
		if (log_discard || (s >= lo[0] && s + size <= hi[0]) ||
		    (s >= lo[1] && s + size <= hi[1]) || (s >= lo[2] && s + size <= hi[2]) ||
		    (s >= lo[3] && s + size <= hi[3])) {
			__atomic_store_n(&sl->info, 0, __ATOMIC_RELEASE);
			continue;           /* the agent's own, or inside a block found before */
		}
		/* Then the live block that owns the line: the slot is freed only once read. */
		const struct blk *b = blk_of(s);
		if (inside(b, s, s + size)) {
			__atomic_store_n(&sl->info, 0, __ATOMIC_RELEASE);
			lo[next] = b->user;
			hi[next] = b->user + b->size;
			next = (next + 1) & 3;
			continue;
		}
		ip = sl->ip;
		kind = info & 7;
		__atomic_store_n(&sl->info, 0, __ATOMIC_RELEASE);
		k = heap_classify(s, s + size, ip, kind == ULPT_DENY_R, &bid);
		if (!k)
			continue;
		if (k == ERR_UAF && others != other_frees_seen) {
			async_unsure++;
			continue;
		}
		if (async_n < ASYNC_MAX)
			async_errs[async_n++] = (struct err){
				.kind = k, .access = kind == ULPT_DENY_W ? WL_WRITE : WL_READ,
				.addr = heap_bad_byte(k, bid, s), .size = size, .ip = ip,
				.tid = ag.log_tid, .block = bid, .found = "log",
			};
	}
	__atomic_store_n(&r->head, head, __ATOMIC_RELAXED);
	other_frees_seen = others;
	if (head != first)
		__atomic_add_fetch(&ag.faults, head - first, __ATOMIC_RELAXED);
	return (size_t)(head - first);
}

void heap_log_sync(void)
{
	if (!ag.heap_log)
		return;
	if (agent_tid() != ag.log_tid) {
		if (ag.heap == HEAP_CHECK)
			__atomic_add_fetch(&other_frees, 1, __ATOMIC_RELEASE);
		return;                 /* only the main thread drains its log */
	}
	ulpt_log_drain();
	/* Here the program called the agent: the errors the log held are reported. */
	for (unsigned i = 0; i < async_n; i++) {
		struct err e = async_errs[i];
		in_agent++;
		report_error(&e);
		in_agent--;
	}
	async_n = 0;
}

void heap_log_own(int begin)
{
	if (!ag.heap_log)
		return;
	/* Begin: the program's records so far are counted, then a threshold event in the
	 * agent's copy drains its own as discarded. End: the copy's go. */
	ulpt_log_drain();
	log_discard = begin;
}

static enum ulpt_action heap_fault_(struct ulpt_fault *f)
{
	struct wl_access acc = { f->start, f->size, f->kind == ULPT_DENY_R, f->kind == ULPT_DENY_W };
	uintptr_t s, e;

	if (!f->size) {                 /* not decoded (mprotect without capstone): one byte */
		acc.start = f->addr;
		acc.size = 1;
	}
	s = acc.start;
	e = s + (acc.size ? acc.size : 1);

	if (ag.heap == HEAP_WATCH) {
		struct heap_counts c = { 0 };
		heap_watch_count(&c, s, e, acc.writes ? WL_WRITE : WL_READ);
		heap_counts_add(&c, 0, 0);
		return ULPT_PERMIT;
	}

	uint32_t bid = 0;
	enum err_kind k = heap_classify(s, e, f->ip, acc.reads && !acc.writes, &bid);
	if (!k) {
		false_fault();
		return ULPT_PERMIT;
	}
	hit();
	/* Report after the instruction, from the after-call (see the top). */
	if (pending.ip == f->ip)
		return ULPT_PERMIT_STEP;    /* the same instruction's second fault: one report */
	pending = (struct err){
		.kind = k, .access = acc.writes ? WL_WRITE : WL_READ, .addr = heap_bad_byte(k, bid, s),
		.size = e - s, .ip = f->ip, .tid = f->tid, .block = bid,
	};
	return ULPT_PERMIT_STEP;
}

enum ulpt_action agent_fault(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after) {
		enum ulpt_action a;

		if (pending.ip == f->ip) {
			struct err e = pending;
			pending.ip = 0;
			in_agent++;
			report_error(&e);
			in_agent--;
		}
		gdb_after = (struct gdb_after){ f, 0 };     /* for a watch hit's stop (gdb.c) */
		a = wl_handle_fault(f);
		gdb_step_end(f);
		gdb_after = (struct gdb_after){ NULL, 0 };
		return a;
	}
	/* The agent's own accesses (realloc's copy) are not the program's. */
	if (in_agent)
		return ULPT_PERMIT;
	/* What the handler allocates is the agent's. */
	enum ulpt_action a;
	in_agent++;
	if (ag.heap != HEAP_OFF && in_arena(f->addr))
		a = heap_fault(f);
	else
		a = wl_handle_fault(f);
	if (a == ULPT_PERMIT && gdb_step_fault(f))
		a = ULPT_PERMIT_STEP;               /* ulpt-gdb ends the debugger's step (gdb.c) */
	in_agent--;
	return a;
}
