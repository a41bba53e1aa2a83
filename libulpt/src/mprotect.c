/*
 * The mprotect backend: page rights with mprotect(), faults through SIGSEGV.
 *
 * - Rights live in a radix table of one byte per page (mmap'ed, so the signal handler can read
 *   it without locks and ulpt_protect may run inside a handler).
 * - A page's protection is PROT_READ|PROT_WRITE minus its denials (x86 cannot deny reads and
 *   allow writes: a page denied reads is PROT_NONE, and a write to it that is allowed by its
 *   rights is let through without calling the handler). The backend is for data pages: it never
 *   grants PROT_EXEC. A page denied writes only, in anonymous memory, is write-protected with
 *   userfaultfd instead where the kernel has it (uffd.c, SLOT_WP): system calls can write it.
 * - ULPT_PERMIT opens the page, single-steps the instruction (TF, then SIGTRAP) and closes it
 *   again, with asynchronous signals blocked meanwhile. Other threads can reach the page
 *   during that one instruction: a limit of mprotect.
 *   ULPT_PERMIT_STEP does the same, and the SIGTRAP handler then makes the after-call.
 * - The access log (ULPT_DENY_LOG pages, ulpt_log_start) is emulated on the same steps: a
 *   logged access is let through without the handler and its records appended when its
 *   instruction completes (below, "The access log, emulated"); a count table
 *   (ulpt_count_start) the same, with counters added to instead of records appended.
 * - Faults that are not on a protected page, or not of a denied kind, go to the SIGSEGV (or
 *   SIGTRAP) handler the program had before ulpt_init.
 * - Byte bounds (ulpt_page_bounds): a page whose rights are its lines' union has every line
 *   denied them, and its bounds, read at each fault, open bytes in them: an access to open
 *   bytes only is let through as an allowed one (below, "Byte bounds").
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "internal.h"

/* Page numbers below 2^35 (addresses below 2^47): 11 + 12 + 12 bits. */
#define L1_BITS 11
#define L2_BITS 12
#define L3_BITS 12
static unsigned char **table[1u << L1_BITS];

static struct sigaction old_segv, old_trap;
static int installed;           /* the handlers above are in place */

/* The pages opened for the instruction being single-stepped in this thread. */
#define MAX_STEP 4
static __thread uintptr_t step_page[MAX_STEP] __attribute__((tls_model("initial-exec")));
static __thread int step_n __attribute__((tls_model("initial-exec")));
/* The kinds let through for that instruction so far. */
static __thread unsigned step_kinds __attribute__((tls_model("initial-exec")));
static __thread int in_handler __attribute__((tls_model("initial-exec")));
/* ULPT_PERMIT_STEP: the record for the after-call of that instruction. */
static __thread struct ulpt_fault step_fault __attribute__((tls_model("initial-exec")));
static __thread int step_pending __attribute__((tls_model("initial-exec")));
/* The program had TF set itself (a debugger steps it): the trap is its own too. */
static __thread int step_own_tf __attribute__((tls_model("initial-exec")));
/* The thread's signal mask while no step is live: the stepped instruction runs with every
 * asynchronous signal blocked, so that no signal handler can run between the permit and the
 * trap (its own faults would take the step's state, and the trap that follows its return
 * would find none and kill the process). */
static __thread sigset_t step_mask __attribute__((tls_model("initial-exec")));
/* The step runs out of line (ool.c: a guard read ends it), not with TF. */
static __thread int step_ool __attribute__((tls_model("initial-exec")));
static int ool_ready;           /* ulpt_ool_init_ succeeded: capstone is there */

static void *zalloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static unsigned char *slot(uintptr_t page_nr, int alloc)
{
	unsigned i1 = page_nr >> (L2_BITS + L3_BITS), i2 = (page_nr >> L3_BITS) & ((1u << L2_BITS) - 1);
	unsigned char **l2 = __atomic_load_n(&table[i1], __ATOMIC_ACQUIRE), *l3;

	if (!l2) {
		if (!alloc || !(l2 = zalloc(sizeof(*l2) << L2_BITS)))
			return NULL;
		__atomic_store_n(&table[i1], l2, __ATOMIC_RELEASE);
	}
	l3 = __atomic_load_n(&l2[i2], __ATOMIC_ACQUIRE);
	if (!l3) {
		if (!alloc || !(l3 = zalloc(1u << L3_BITS)))
			return NULL;
		__atomic_store_n(&l2[i2], l3, __ATOMIC_RELEASE);
	}
	return &l3[page_nr & ((1u << L3_BITS) - 1)];
}

/*
 * A page's byte: its denied rights, or LIFTING while mp_protect takes its last rights away
 * (the table first, the page's protection after): a fault on it then is the library's, not
 * the program's (its own thread may fault there, the call to mprotect pushing onto a watched
 * stack page), and the page gets its new protection at once.
 */
#define LIFTING 0x80u
#define SLOT_LOG 0x08u          /* ULPT_DENY_LOG, in a byte */
/* Denied writes (and not reads) through userfaultfd (uffd.c), the page PROT_READ|PROT_WRITE:
 * the kernel's own writes to it (a system call's) then go on, and are counted. */
#define SLOT_WP 0x10u
/* The rights are the union of the page's lines' (ulpt_protect_line_word), not page rights
 * (ulpt_protect): its bounds open bytes in them (R-BND-1 never opens page rights). */
#define SLOT_LINES 0x20u

static unsigned slot_of(uintptr_t addr)
{
	unsigned char *s = slot(addr >> 12, 0);
	return s ? __atomic_load_n(s, __ATOMIC_RELAXED) : 0;
}

/* The page's rights as the API gives them (ULPT_DENY_*). */
static unsigned rights_of(uintptr_t addr)
{
	unsigned b = slot_of(addr);

	return (b & 7) | (b & SLOT_LOG ? ULPT_DENY_LOG : 0);
}

static int prot_for(unsigned deny)
{
	if (deny & ULPT_DENY_R)
		return PROT_NONE;
	return (deny & ULPT_DENY_W) ? PROT_READ : PROT_READ | PROT_WRITE;
}

static uintptr_t slot_wp(uintptr_t page)
{
	return slot_of(page) & SLOT_WP;
}

/* Whether rights deny go through userfaultfd's write protection. */
static int wp_for(unsigned deny)
{
	return (deny & ULPT_DENY_W) && !(deny & ULPT_DENY_R) && ulpt_uffd_on_();
}

/* The slot byte of [a, a + len) without SLOT_WP: the range keeps mprotect (not anonymous
 * memory), unless another change came meanwhile. */
static void wp_refused(uintptr_t a, size_t len)
{
	for (uintptr_t p = a; p < a + len; p += ULPT_PAGE_SIZE)
		__atomic_fetch_and(slot(p >> 12, 0), (unsigned char)~SLOT_WP, __ATOMIC_RELEASE);
}

/* Gives [a, a + len) the protection of the slot byte b: 0 or -errno. was_wp: some page had
 * SLOT_WP before (its write protection goes, its waiters go on). */
static int enforce(uintptr_t a, size_t len, unsigned b, int was_wp)
{
	unsigned r = b & 7;

	if (b & SLOT_WP) {
		if (mprotect((void *)a, len, PROT_READ | PROT_WRITE) != 0)
			return -errno;
		if (ulpt_uffd_protect_(a, len, 1, 0) == 0)
			return 0;
		wp_refused(a, len);
	}
	if (mprotect((void *)a, len, prot_for(r)) != 0)
		return -errno;
	if (was_wp)
		ulpt_uffd_protect_(a, len, 0, 1);
	return 0;
}

/* Gives [addr, addr + len) the rights deny: the page's own, or (lines) its lines' union. */
static int set_rights(void *addr, size_t len, unsigned deny, int lines)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned b = (deny & 7) | (deny & ULPT_DENY_LOG ? SLOT_LOG : 0) | (wp_for(deny) ? SLOT_WP : 0) |
		     (lines && (deny & 7) ? SLOT_LINES : 0);
	int was_wp = 0, e;

	/* The table first, so that a fault racing with the change finds the new rights. */
	for (uintptr_t p = a; p < a + len; p += ULPT_PAGE_SIZE) {
		unsigned char *s = slot(p >> 12, 1);
		if (!s)
			return -ENOMEM;
		was_wp |= __atomic_exchange_n(s, (unsigned char)(b ? b : LIFTING), __ATOMIC_ACQ_REL) & SLOT_WP;
	}
	if ((e = enforce(a, len, b, was_wp)) != 0)
		return e;
	/* Another thread, or a signal handler on this one, may have changed some of these pages
	 * between our stores and our mprotect, and made its own mprotect first: such a page gets
	 * the protection of its rights now, until the table and the page agree (each caller ends
	 * with a check that its last mprotect matched the table). */
	for (uintptr_t p = a; p < a + len; p += ULPT_PAGE_SIZE) {
		unsigned r = b, now;

		while (((now = slot_of(p)) & ~LIFTING) != r) {
			r = now & ~LIFTING;
			enforce(p, ULPT_PAGE_SIZE, r, 1);
		}
		if (!deny) {    /* lifted: its faults are the program's again */
			unsigned char *sl = slot(p >> 12, 0), l = LIFTING;
			__atomic_compare_exchange_n(sl, &l, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		}
	}
	return 0;
}

static int mp_protect(void *addr, size_t len, unsigned deny)
{
	return set_rights(addr, len, deny, 0);
}

/*
 * Byte bounds (ulpt_page_bounds, docs/spec.md 4.5). A page's bounds pointer is in a second
 * radix table, made as pages get bounds; the bounds stay in the program's memory and are read
 * at each fault, so that a store to them applies to the next access (R-BND-2). There are no
 * lines here: a page with SLOT_LINES has every line denied its rights, and an access is denied
 * only at a byte that those rights deny and its line's bounds do not open (closed, below). An
 * access with no closed byte is let through as an allowed one: no handler, no record, no
 * count. One whose size is not decoded is taken as closed at its first byte.
 */
static uintptr_t **btable[1u << L1_BITS];

/* The level below *at, made if alloc (a racing maker's copy wins). */
static void *blevel(void **at, size_t size, int alloc)
{
	void *l = __atomic_load_n(at, __ATOMIC_ACQUIRE), *n;

	if (l || !alloc || !(n = zalloc(size)))
		return l;
	if (__atomic_compare_exchange_n(at, &l, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return n;
	munmap(n, size);
	return l;
}

static uintptr_t *bslot(uintptr_t page_nr, int alloc)
{
	unsigned i1 = page_nr >> (L2_BITS + L3_BITS), i2 = (page_nr >> L3_BITS) & ((1u << L2_BITS) - 1);
	uintptr_t **l2 = blevel((void **)&btable[i1], sizeof(*l2) << L2_BITS, alloc), *l3;

	l3 = l2 ? blevel((void **)&l2[i2], sizeof(*l3) << L3_BITS, alloc) : NULL;
	return l3 ? &l3[page_nr & ((1u << L3_BITS) - 1)] : NULL;
}

/* The bounds of the page at p whose slot byte is sb, if they apply to an access of kind k. */
static const uint8_t *bounds_for(uintptr_t p, unsigned sb, unsigned k)
{
	uintptr_t *b;

	if (!(sb & SLOT_LINES) || !(sb & k) || !(b = bslot(p >> 12, 0)))
		return NULL;
	return (const uint8_t *)__atomic_load_n(b, __ATOMIC_ACQUIRE);
}

/* Line i's lo and hi (hi at most 128), as the program left them: through the kernel where the
 * library denies their page reads (the CPU's read is not checked by ULPT either); unreadable,
 * they open nothing. */
static void bounds_line(const uint8_t *b, unsigned i, unsigned *lo, unsigned *hi)
{
	uint8_t v[2] = { 0, 0 };
	uintptr_t a = (uintptr_t)b + 2 * i;

	if (!(rights_of(a) & ULPT_DENY_R)) {
		v[0] = ((const volatile uint8_t *)a)[0];
		v[1] = ((const volatile uint8_t *)a)[1];
	} else if (ulpt_ool_read_(a, v, 2) != 0) {
		v[0] = v[1] = 0;
	}
	*lo = v[0];
	*hi = v[1] < ULPT_LINE_SIZE ? v[1] : ULPT_LINE_SIZE;
}

/* The first closed byte of [a, end) (end == a: a size not known), all in the page at p whose
 * slot byte is sb, for an access of kind k: 1 and *at, or 0. */
static int part_closed(uintptr_t p, unsigned sb, uintptr_t a, uintptr_t end, unsigned k, uintptr_t *at)
{
	const uint8_t *b;

	if (!(sb & k))
		return 0;
	if (end == a || !(b = bounds_for(p, sb, k))) {
		*at = a;
		return 1;
	}
	for (uintptr_t l = a & ~(uintptr_t)(ULPT_LINE_SIZE - 1); l < end; l += ULPT_LINE_SIZE) {
		unsigned lo, hi, x = (unsigned)(a > l ? a - l : 0);
		unsigned y = (unsigned)(end - l < ULPT_LINE_SIZE ? end - l : ULPT_LINE_SIZE);

		bounds_line(b, (unsigned)(l >> 7) & 31, &lo, &hi);
		if (x >= lo && y <= hi)
			continue;               /* open: lo <= x < y <= hi */
		*at = l + (x < lo || x >= hi ? x : hi);
		return 1;
	}
	return 0;
}

/* The pages of [start, start + size) (size 0: not known), each with its part, to fn until it
 * returns non-zero; that value, or 0. Pages at or above 2^47 are not covered. */
static int each_part(uintptr_t start, size_t size,
		     int (*fn)(uintptr_t p, uintptr_t a, uintptr_t end, void *arg), void *arg)
{
	uintptr_t last = start + (size ? size - 1 : 0);

	if (last < start)
		return 0;
	for (uintptr_t p = start & ~(uintptr_t)(ULPT_PAGE_SIZE - 1); p <= last && p < ULPT_VA_LIMIT_;
	     p += ULPT_PAGE_SIZE) {
		uintptr_t a = p > start ? p : start;
		uintptr_t end = !size ? a : last - p < ULPT_PAGE_SIZE ? last + 1 : p + ULPT_PAGE_SIZE;
		int r = fn(p, a, end, arg);

		if (r)
			return r;
	}
	return 0;
}

struct closed_arg {
	unsigned k;
	uintptr_t at;
};

static int closed_part(uintptr_t p, uintptr_t a, uintptr_t end, void *arg)
{
	struct closed_arg *c = arg;

	return part_closed(p, slot_of(p), a, end, c->k, &c->at);
}

/* The first closed byte of an access of kind k: 1 and *at, or 0 if it has none. */
static int first_closed(uintptr_t start, size_t size, unsigned k, uintptr_t *at)
{
	struct closed_arg c = { k, 0 };

	if (!each_part(start, size, closed_part, &c))
		return 0;
	*at = c.at;
	return 1;
}

/* Whether the page of addr has bounds that apply to an access of kind k. */
static int bounded(uintptr_t addr, unsigned k)
{
	return addr < ULPT_VA_LIMIT_ && bounds_for(addr, slot_of(addr), k) != NULL;
}

/* The access of the instruction at ip that holds addr, decoded: its extent, and for each
 * kind it has (kind, the fault's, at least) whether a byte of it is closed, and the first. */
struct bnd_access {
	uintptr_t start;
	size_t size;
	unsigned kinds;                 /* those with a closed byte */
	uintptr_t at[2];                /* the first closed byte, reads' and writes' */
};

/* 1 if the access is decoded, 0 if not (it is then closed at addr). */
static int bounds_decide(uintptr_t ip, const ucontext_t *uc, uintptr_t addr, unsigned kind,
			 struct bnd_access *ba)
{
	struct ulpt_ool_mem m[LOG_MAX_PEND];
	int n = ool_ready ? ulpt_ool_mem_(ip, uc, m, LOG_MAX_PEND) : -1;

	for (int i = 0; i < n; i++) {
		unsigned kinds = (kind | m[i].kinds) & ULPT_DENY_RW;

		if (addr - m[i].start >= m[i].size)
			continue;
		ba->start = m[i].start;
		ba->size = m[i].size;
		ba->kinds = 0;
		for (unsigned k = ULPT_DENY_R; k <= ULPT_DENY_W; k <<= 1)
			if ((kinds & k) && first_closed(m[i].start, m[i].size, k, &ba->at[k - 1]))
				ba->kinds |= k;
		return 1;
	}
	return 0;
}

static int mp_bounds(uintptr_t page, const struct ulpt_bounds *b)
{
	uintptr_t *s = bslot(page >> 12, b != NULL);

	if (!s)
		return b ? -ENOMEM : 0;         /* none to clear */
	/* No protection changes: the page faults as before, and the fault reads them. */
	__atomic_store_n(s, (uintptr_t)b, __ATOMIC_RELEASE);
	return 0;
}

/* The slot from none to b, or -EBUSY: as mp_bounds, if the page has none. */
static int mp_claim_bounds(uintptr_t page, const struct ulpt_bounds *b)
{
	uintptr_t *s = bslot(page >> 12, 1), none = 0;

	if (!s)
		return -ENOMEM;
	return __atomic_compare_exchange_n(s, &none, (uintptr_t)b, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE) ? 0 : -EBUSY;
}

/* The single steps of ULPT_PERMIT and ULPT_PERMIT_STEP trap after the instruction (TF). */
#define RFLAGS_TF 0x100ull

/* Whether the instruction at ip is a string instruction with REP (F2 or F3): legacy prefixes
 * and REX, then MOVS, CMPS, STOS, LODS, SCAS, INS or OUTS. */
static int rep_string(uintptr_t ip)
{
	const uint8_t *c = (const uint8_t *)ip;
	int rep = 0;

	for (int i = 0; i < 15; i++, c++) {
		switch (*c) {
		case 0xf2: case 0xf3:
			rep = 1;
			/* fall through */
		case 0x66: case 0x67: case 0xf0: case 0x2e: case 0x36: case 0x3e: case 0x26:
		case 0x64: case 0x65:
			continue;
		}
		if ((*c & 0xf0) == 0x40)
			continue;               /* REX */
		return rep && ((*c >= 0xa4 && *c <= 0xa7) || (*c >= 0xaa && *c <= 0xaf) ||
			       (*c >= 0x6c && *c <= 0x6f));
	}
	return 0;
}

/*
 * The access log, emulated (ulpt_log_start; log.c keeps the ring). A denied read or write on a
 * ULPT_DENY_LOG page, in a thread with a log, is let through as ULPT_PERMIT lets it, without
 * the handler: its instruction's records are planned at its first such fault (capstone gives
 * each access's start, size and kind) and appended when it completes, after its out-of-line
 * run, with the value a write left; an instruction that does not complete appends nothing.
 * A full ring drains before the instruction runs (or waits for the consumer thread), and the
 * threshold drains after it, as the CPU's events do. A REP string instruction runs whole out
 * of line: the RCX it used up says how many iterations ran, and each iteration's elements on
 * logging pages get their records (R-LOG-2: an iteration is an instruction of its own).
 * A count table (ulpt_count_start) takes the same plan and adds to its counters instead.
 */

/* How the pages of [start, start + size) take an access of kind k: 0 none denies it (its
 * bytes there open, for pages with bounds), 1 those that deny it log it, 2 one denies it
 * without logging (a violation). */
struct status_arg {
	unsigned k;
	int denied;
};

static int status_part(uintptr_t p, uintptr_t a, uintptr_t end, void *arg)
{
	struct status_arg *st = arg;
	unsigned sb = slot_of(p);
	uintptr_t at;

	if (!part_closed(p, sb, a, end, st->k, &at))
		return 0;
	st->denied = 1;
	return (sb & SLOT_LOG) ? 0 : 2;
}

static int log_status(uintptr_t start, size_t size, unsigned k)
{
	struct status_arg st = { k, 0 };
	uintptr_t last = start + (size ? size - 1 : 0);

	if (last < start || last >= ULPT_VA_LIMIT_)
		return 0;
	return each_part(start, size, status_part, &st) ? 2 : st.denied;
}

/* The records of the instruction at ip, whose access at addr faulted: each of its accesses
 * that only logging pages deny, reads first (R-LOG-2). 1 if the faulting access is one of them
 * (no handler), 0 if it goes to the handler. */
static int log_plan(struct ulpt_log_st *lg, uintptr_t ip, ucontext_t *uc, uintptr_t addr,
		    unsigned kind)
{
	struct ulpt_ool_mem m[LOG_MAX_PEND];
	int n = ool_ready ? ulpt_ool_mem_(ip, uc, m, LOG_MAX_PEND) : -1, hit = -1, logged = 1;

	for (int i = 0; i < n && hit < 0; i++)
		if (addr >= m[i].start && addr - m[i].start < m[i].size)
			hit = i;
	if (hit < 0) {          /* not decoded: the faulting access alone, its size unknown */
		m[0] = (struct ulpt_ool_mem){ addr, 0, kind };
		n = 1;
		hit = 0;
	}
	lg->planned = 1;
	lg->npend = 0;
	lg->pend_ip = ip;
	lg->rep_rcx = rep_string(ip) ? (uint64_t)uc->uc_mcontext.gregs[REG_RCX] : 0;
	lg->rep_down = (uc->uc_mcontext.gregs[REG_EFL] & 0x400) != 0;      /* DF */
	for (unsigned k = ULPT_DENY_R; k <= ULPT_DENY_W; k <<= 1)
		for (int i = 0; i < n; i++) {
			int st = (m[i].kinds & k) ? log_status(m[i].start, m[i].size, k) : 0;

			if (st == 2 && i == hit)
				logged = 0;
			if (st == 1 && lg->npend < LOG_MAX_PEND) {
				lg->pend[lg->npend].start = m[i].start;
				lg->pend[lg->npend].size = m[i].size;
				lg->pend[lg->npend].kind = k;
				lg->pend[lg->npend++].has_value = 0;
			}
		}
	return logged;
}

/* The callback, as from the handler: a violation in it is one inside the handler. Its own
 * logged accesses are instructions of their own, so the records planned here (and an
 * after-call due) wait aside meanwhile. */
static void log_drain_here(struct ulpt_log_st *lg)
{
	int was = in_handler, planned = lg->planned, pending = step_pending;
	unsigned npend = lg->npend;
	uintptr_t ip = lg->pend_ip;
	__typeof__(lg->pend) pend;
	struct ulpt_fault f = step_fault;

	memcpy(pend, lg->pend, sizeof(pend));
	lg->planned = 0;
	step_pending = 0;
	in_handler = 1;
	ulpt_log_drain_(lg, 1);
	in_handler = was;
	memcpy(lg->pend, pend, sizeof(pend));
	lg->planned = planned;
	lg->npend = npend;
	lg->pend_ip = ip;
	step_pending = pending;
	step_fault = f;
}

/* No room for n records (R-LOG-4): the consumer thread makes it, or a drain here; inside the
 * handler the CPU would escalate. */
static void log_full(struct ulpt_log_st *lg, unsigned n)
{
	if (lg->consumer_on)
		ulpt_log_wait_(lg, n);
	else if (in_handler)
		ulpt_default_segv_();
	else
		log_drain_here(lg);
}

/* The instruction completed, its pages still open: what its writes left. */
static void log_values(struct ulpt_log_st *lg)
{
	for (unsigned i = 0; lg && lg->planned && !lg->count_base && i < lg->npend; i++) {
		uintptr_t a = lg->pend[i].start, last;
		size_t n = lg->pend[i].size < 8 ? lg->pend[i].size : 8;
		uint64_t v = 0;
		int open = 1;

		if (lg->pend[i].kind != ULPT_DENY_W || !n)
			continue;
		/* Readable: pages opened for the step, or not denied reads. Else as the kernel. */
		last = a + n - 1;
		for (uintptr_t p = a & ~(uintptr_t)(ULPT_PAGE_SIZE - 1); open && p <= last; p += ULPT_PAGE_SIZE) {
			int k = 0;

			while (k < step_n && step_page[k] != p)
				k++;
			open = k < step_n || !(rights_of(p) & ULPT_DENY_R);
		}
		if (open)
			memcpy(&v, (const void *)a, n);
		else if (ulpt_ool_read_(a, &v, n) != 0)
			continue;
		lg->pend[i].value = v;
		lg->pend[i].has_value = 1;
	}
}

/* The iterations a REP string instruction ran since its plan, from its RCX now (1 for any
 * other instruction, and for a REP string single-stepped with TF: it traps after each). */
static uint64_t log_iterations(const struct ulpt_log_st *lg, const ucontext_t *uc)
{
	uint64_t now = (uint64_t)uc->uc_mcontext.gregs[REG_RCX];

	return lg->rep_rcx && now < lg->rep_rcx ? lg->rep_rcx - now : 1;
}

/* Element j of a planned access (j > 0: a later iteration of a REP string instruction), and
 * whether logging pages alone deny it: the plan checked element 0. */
static uintptr_t log_element(const struct ulpt_log_st *lg, unsigned i, uint64_t j, int *logged)
{
	size_t sz = lg->pend[i].size ? lg->pend[i].size : 1;
	uintptr_t a = lg->rep_down ? lg->pend[i].start - j * sz : lg->pend[i].start + j * sz;

	*logged = !j || log_status(a, sz, lg->pend[i].kind) == 1;
	return a;
}

/* A write of a later iteration: what it left, read now that its pages are closed again. */
static int log_value_now(uintptr_t a, size_t size, uint64_t *v)
{
	size_t n = size < 8 ? size : 8;
	uintptr_t last = a + n - 1;

	*v = 0;
	if (!n)
		return 0;
	for (uintptr_t p = a & ~(uintptr_t)(ULPT_PAGE_SIZE - 1); p <= last; p += ULPT_PAGE_SIZE)
		if (rights_of(p) & ULPT_DENY_R)
			return ulpt_ool_read_(a, v, n) == 0;
	memcpy(v, (const void *)a, n);
	return 1;
}

/* A count table's additions (R-CNT-1): one per access, to the counter of its kind in the line
 * of its first byte; a REP string's elements one each, added up per line first. */
static void count_to(const struct ulpt_log_st *lg, uintptr_t line, unsigned kind, uint64_t n)
{
	uintptr_t c = lg->count_base + line * sizeof(struct ulpt_count) +
		      (kind == ULPT_DENY_W ? sizeof(uint64_t) : 0);       /* modulo 2^64 */

	if (n)
		__atomic_add_fetch((uint64_t *)c, n, __ATOMIC_RELAXED);
}

static void count_add(struct ulpt_log_st *lg, uint64_t iters)
{
	for (unsigned i = 0; i < lg->npend; i++) {
		unsigned kind = lg->pend[i].kind;
		uintptr_t line = lg->pend[i].start >> 7;
		uint64_t n = 0;

		for (uint64_t j = 0; j < iters; j++) {
			int logged;
			uintptr_t a = log_element(lg, i, j, &logged);

			if (!logged)
				continue;
			if (a >> 7 != line) {
				count_to(lg, line, kind, n);
				lg->index += n;
				line = a >> 7;
				n = 0;
			}
			n++;
		}
		count_to(lg, line, kind, n);
		lg->index += n;
	}
}

/* ... and its records go to the ring (R-LOG-3), then a log event if thresh of them wait
 * (R-LOG-5), unless an after-call is due (the CPU takes the after event there instead); or
 * its counts to the table. uc: the context once it completed. */
static void log_append(int after_due, const ucontext_t *uc)
{
	struct ulpt_log_st *lg = ulpt_log_st_;
	uint64_t iters;
	unsigned n;

	if (!lg || !lg->planned)
		return;
	iters = log_iterations(lg, uc);
	n = lg->npend;
	if (lg->count_base) {
		count_add(lg, iters);
		lg->planned = 0;
		lg->npend = 0;
		return;
	}
	lg->planned = 0;
	lg->npend = 0;
	for (uint64_t j = 0; j < iters; j++)
		for (unsigned i = 0; i < n; i++) {
			struct ulpt_log_slot *s;
			size_t size = lg->pend[i].size;
			uint64_t value = lg->pend[i].value;
			int logged, has_value = lg->pend[i].has_value;
			uintptr_t start = log_element(lg, i, j, &logged);

			if (!logged)
				continue;
			if (j && lg->pend[i].kind == ULPT_DENY_W)
				has_value = log_value_now(start, size, &value);
			if (!ulpt_log_room_(lg, 1))
				log_full(lg, 1);        /* the check before the step took a drain already */
			s = &lg->ring.slots[lg->index & lg->ring.mask];
			s->start = start;
			s->ip = lg->pend_ip;
			s->value = has_value ? value : 0;
			__atomic_store_n(&s->info, lg->pend[i].kind | ULPT_REASON_PAGE_RIGHTS << 8 |
					 (uint64_t)(size > 0xffff ? 0xffff : size) << 16 |
					 (has_value ? ULPT_LOG_VAL_ : 0) | ULPT_LOG_V_, __ATOMIC_RELEASE);
			lg->index++;
		}
	if (n && lg->cur_thresh && !after_due && !in_handler && !lg->draining &&
	    (__atomic_load_n(&lg->ring.slots[(lg->index - lg->cur_thresh) & lg->ring.mask].info,
			     __ATOMIC_ACQUIRE) & ULPT_LOG_V_))
		log_drain_here(lg);
}

static void log_cancel(void)
{
	if (ulpt_log_st_) {
		ulpt_log_st_->planned = 0;
		ulpt_log_st_->npend = 0;
	}
}

/*
 * The library's signal handlers. Signals that a handler could not take while the library's
 * single-step state is live wait until it is done: an asynchronous signal's handler on top of
 * it might take a step of its own. Faults and traps stay deliverable (blocked, the kernel
 * would kill the process), and SIGSEGV and SIGTRAP themselves too (SA_NODEFER): the handler
 * and the after-call may fault and step again.
 */
static void async_only(sigset_t *m)
{
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };

	sigfillset(m);
	for (unsigned i = 0; i < sizeof(sync_sigs) / sizeof(sync_sigs[0]); i++)
		sigdelset(m, sync_sigs[i]);
}

static int install(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_ONSTACK;
	async_only(&sa.sa_mask);
	return sigaction(sig, &sa, old) != 0 ? -errno : 0;
}

/*
 * A signal that is not the library's goes to the handler the program had before, with the
 * signal mask the kernel would have given it. With SIG_DFL the default action happens as
 * without libulpt: a fault the CPU raised is made again (the core shows the instruction),
 * anything else is raised again. SIG_IGN ignores it.
 */
/*
 * Every signal the library passes on to the program comes through here first: a debugger's
 * breakpoint here sees the program's own faults, which it cannot tell from the library's by
 * the signal alone (ulpt-gdb reports them as GDB reports a signal).
 */
void ulpt_signal_passed_(int sig, siginfo_t *si, void *uc) HIDDEN;
__attribute__((noinline, used)) void ulpt_signal_passed_(int sig, siginfo_t *si, void *uc)
{
	__asm__ volatile("" : : "D"(sig), "S"(si), "d"(uc) : "memory");
}

static void chain(const struct sigaction *old, int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	sigset_t m;

	ulpt_signal_passed_(sig, si, ucv);

	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN)
		return;
	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL) {
		signal(sig, SIG_DFL);
		if (sig == SIGSEGV && si->si_code > 0)
			return;
		sigemptyset(&m);
		sigaddset(&m, sig);
		sigprocmask(SIG_UNBLOCK, &m, NULL);
		raise(sig);
		return;
	}
	m = uc->uc_sigmask;
	sigorset(&m, &m, &old->sa_mask);
	if (!(old->sa_flags & SA_NODEFER))
		sigaddset(&m, sig);
	/* The library's own faults and traps must reach it inside that handler too (a blocked
	 * SIGTRAP or SIGSEGV raised by the CPU kills the process). */
	sigdelset(&m, SIGTRAP);
	sigdelset(&m, SIGSEGV);
	sigprocmask(SIG_SETMASK, &m, NULL);
	if (old->sa_flags & SA_SIGINFO)
		old->sa_sigaction(sig, si, ucv);
	else
		old->sa_handler(sig);
}

/* Opens a page for this thread's step: no other thread's write waiting on it goes on (they
 * wait for uffd.c, which sends them their own fault). */
static void open_page(uintptr_t page)
{
	if (!(slot_of(page) & SLOT_WP) || ulpt_uffd_protect_(page, ULPT_PAGE_SIZE, 0, 0) != 0)
		mprotect((void *)page, ULPT_PAGE_SIZE, PROT_READ | PROT_WRITE);
}

/* Closes it again with its current rights. */
static void close_page(uintptr_t page)
{
	unsigned b = slot_of(page);

	if (!(b & SLOT_WP) || ulpt_uffd_protect_(page, ULPT_PAGE_SIZE, 2, 0) != 0)
		mprotect((void *)page, ULPT_PAGE_SIZE, prot_for(b & 7));
}

/* Closes the pages opened for this thread's step with their current rights. */
static void close_pages(void)
{
	step_kinds = 0;
	while (step_n)
		close_page(step_page[--step_n]);
}

/* The after-call of ULPT_PERMIT_STEP, if one is due, for an instruction that went on to
 * *rip with the flags *rflags: the handler may send the program elsewhere (next_ip), as on
 * ULPT, and clear TF. */
static void after_call(greg_t *rip, greg_t *rflags)
{
	struct ulpt_fault f = step_fault;
	ulpt_handler_t handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	int was = in_handler;

	if (!step_pending)
		return;
	step_pending = 0;
	f.after = 1;
	f.next_ip = (uintptr_t)*rip;
	f.rflags = (uint64_t)*rflags;
	if (handler) {
		in_handler = 1;
		handler(&f, ulpt_lib_.handler_arg);
		in_handler = was;
	}
	*rip = (greg_t)f.next_ip;
	if (!(f.rflags & RFLAGS_TF))
		*rflags &= ~(greg_t)RFLAGS_TF;
}

/* The process is being traced (a debugger attached): /proc/self/status's TracerPid. */
static int traced(void)
{
	char buf[1024];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	const char *t;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	t = strstr(buf, "\nTracerPid:");
	return t && strtol(t + 11, NULL, 10) != 0;
}

/* The out-of-line instruction is done (its guard read faulted): the pages close, the program
 * goes on at next_ip with its own TF (a debugger's step) and its signal mask back. */
static void ool_end(ucontext_t *uc, uintptr_t next_ip)
{
	greg_t *gr = uc->uc_mcontext.gregs;

	log_values(ulpt_log_st_);
	close_pages();
	step_ool = 0;
	gr[REG_RIP] = (greg_t)next_ip;
	if (step_own_tf)
		gr[REG_EFL] |= RFLAGS_TF;
	step_own_tf = 0;
	uc->uc_sigmask = step_mask;
	log_append(step_pending, uc);
	after_call(&gr[REG_RIP], &gr[REG_EFL]);
	if (!(gr[REG_EFL] & RFLAGS_TF) || gr[REG_RIP] != (greg_t)next_ip)
		return;     /* sent elsewhere: TF traps after the first instruction there */
	/* TF still set. A debugger's single step (ptrace) went into this signal handler, and
	 * the debugger waits for its return to the instruction (GDB puts a breakpoint there):
	 * it is done, and a trap further on would be one the debugger did not ask for, so the
	 * program goes on without it. The program's own TF: its trap comes at next_ip, through
	 * a jump there, as after the instruction in place. */
	if (traced())
		gr[REG_EFL] &= ~(greg_t)RFLAGS_TF;
	else
		gr[REG_RIP] = (greg_t)ulpt_ool_jump_();
}

/* A REP string instruction running out of line reached a page whose bounds apply, where each
 * element must be decided on its own: its iterations so far are done (their records, an
 * after-call due), and it goes on in place from the element that faulted (on_segv). */
static void ool_rep_pause(ucontext_t *uc)
{
	greg_t *gr = uc->uc_mcontext.gregs;

	ulpt_ool_cancel_(uc);                   /* RIP at the instruction, its registers as left */
	log_values(ulpt_log_st_);
	close_pages();
	step_ool = 0;
	if (step_own_tf)
		gr[REG_EFL] |= RFLAGS_TF;
	step_own_tf = 0;
	uc->uc_sigmask = step_mask;
	log_append(step_pending, uc);
	after_call(&gr[REG_RIP], &gr[REG_EFL]);
}

/* The out-of-line instruction did not complete (a fault that is not the library's, or
 * ULPT_SKIP): back to the program's instruction, as if it had faulted there. */
static void ool_cancel(ucontext_t *uc)
{
	ulpt_ool_cancel_(uc);
	close_pages();
	log_cancel();
	step_ool = 0;
	step_pending = 0;
	if (step_own_tf)
		uc->uc_mcontext.gregs[REG_EFL] |= RFLAGS_TF;
	step_own_tf = 0;
	uc->uc_sigmask = step_mask;
}

/*
 * A write fault that uffd.c passed on (at addr) is the instruction's at the context's RIP if
 * it writes a page whose writes uffd.c denies: the first address it writes there, preferring
 * addr's page, else 0. The message may be an old one (another signal ended the wait and the
 * thread moved on), and the instruction here not the one that faulted: it is taken only if it
 * would fault itself, and then once, as its own fault. Undecoded: addr.
 */
static uintptr_t uffd_write_at(ucontext_t *uc, uintptr_t addr)
{
	struct ulpt_ool_mem m[LOG_MAX_PEND];
	int n = ool_ready ? ulpt_ool_mem_((uintptr_t)uc->uc_mcontext.gregs[REG_RIP], uc, m,
					  LOG_MAX_PEND) : -1;
	uintptr_t at = 0, want = addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);

	if (n <= 0)
		return slot_of(addr) & SLOT_WP ? addr : 0;
	/* A write first; else any access to addr's page: capstone 4 marks the destination of
	 * some writes read (LOCK CMPXCHG's), and the kernel said this one writes. */
	for (int i = 0; i < 2 * n; i++) {
		uintptr_t last = m[i % n].start + (m[i % n].size ? m[i % n].size - 1 : 0);

		if (i == n && at)
			break;
		if ((i < n && !(m[i].kinds & ULPT_DENY_W)) || last < m[i % n].start ||
		    (i >= n && (want < (m[i % n].start & ~(uintptr_t)(ULPT_PAGE_SIZE - 1)) || want > last)))
			continue;
		for (uintptr_t p = m[i % n].start & ~(uintptr_t)(ULPT_PAGE_SIZE - 1); p <= last;
		     p += ULPT_PAGE_SIZE) {
			uintptr_t a = p > m[i % n].start ? p : m[i % n].start;

			if (!(slot_of(p) & SLOT_WP))
				continue;
			if (p == want)
				return a;
			if (!at)
				at = a;
		}
	}
	return at;
}

/* The system call instruction the thread returned from: at RIP when the call is to restart,
 * else just before it. */
static uintptr_t syscall_ip(uintptr_t rip)
{
	const uint8_t *c = (const uint8_t *)rip;

	return c[0] == 0x0f && c[1] == 0x05 ? rip : rip - 2;
}

/*
 * A system call wrote the page at addr (its first byte written there), now that it has
 * returned: a write, as the program's own are taken (counted, logged, or the handler's
 * with reason ULPT_REASON_KERNEL, whose decision is ignored: the write is done).
 */
static void kernel_write(ucontext_t *uc, uintptr_t addr)
{
	unsigned r = rights_of(addr);
	struct ulpt_log_st *lg = ulpt_log_st_;
	ulpt_handler_t handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	uintptr_t ip = syscall_ip((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);

	if (!(r & ULPT_DENY_W))
		return;
	if (lg && (r & ULPT_DENY_LOG) && !lg->planned && !step_n) {
		lg->planned = 1;
		lg->npend = 1;
		lg->pend_ip = ip;
		lg->rep_rcx = 0;
		lg->pend[0].start = addr;
		lg->pend[0].size = 0;
		lg->pend[0].kind = ULPT_DENY_W;
		lg->pend[0].has_value = 0;
		if (!lg->count_base && !ulpt_log_room_(lg, 1))
			log_full(lg, 1);
		log_append(0, uc);
	} else if (handler && !in_handler) {
		struct ulpt_fault f = {
			.addr = addr, .start = addr, .size = 0, .kind = ULPT_DENY_W,
			.reason = ULPT_REASON_KERNEL, .ip = ip, .entry = { r, 0 },
			.tid = (pid_t)syscall(SYS_gettid), .next_ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
		};

		in_handler = 1;
		handler(&f, ulpt_lib_.handler_arg);
		in_handler = 0;
	}
}

/* uffd.c's signal after a system call that wrote pages denied writes: each contiguous write
 * taken once (the next page's from its first byte continues it), and the pages closed. */
static void syscall_writes(ucontext_t *uc)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	uintptr_t a[64], prev[64];
	unsigned n, np = 0;

	while ((n = ulpt_uffd_take_(tid, a, 64)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			uintptr_t page = a[i] & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);
			int seen = 0;

			for (unsigned k = 0; k < np && !seen; k++)
				seen = prev[k] == page || (a[i] == page && prev[k] == page - ULPT_PAGE_SIZE);
			for (unsigned k = 0; k < i && !seen; k++) {
				uintptr_t pk = a[k] & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);
				seen = pk == page || (a[i] == page && pk == page - ULPT_PAGE_SIZE);
			}
			if (!seen)
				kernel_write(uc, a[i]);
			if (slot_of(page) & SLOT_WP)
				ulpt_uffd_protect_(page, ULPT_PAGE_SIZE, 2, 0);
		}
		for (unsigned i = 0; i < n; i++)
			prev[i] = a[i] & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);
		np = n;
	}
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *gr = uc->uc_mcontext.gregs;
	int from_uffd = si->si_code == SI_QUEUE && (si->si_errno == UFFD_SIG_FAULT ||
		si->si_errno == UFFD_SIG_SYSCALL) && si->si_pid == getpid();
	uintptr_t addr = from_uffd ? (uintptr_t)si->si_value.sival_ptr : (uintptr_t)si->si_addr;
	unsigned deny = (si->si_code == SEGV_ACCERR || from_uffd) && addr < ULPT_VA_LIMIT_ ?
			rights_of(addr) : 0;
	unsigned kind = from_uffd ? ULPT_DENY_W : (gr[REG_ERR] & 16) ? ULPT_DENY_X :
			(gr[REG_ERR] & 2) ? ULPT_DENY_W : ULPT_DENY_R;
	ulpt_handler_t handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	struct ulpt_log_st *lg = ulpt_log_st_;
	enum ulpt_action act;
	int saved_errno = errno, logged = 0, bpage, bnd = 0, open = 0, each = 0;
	uintptr_t ip = (uintptr_t)gr[REG_RIP];
	struct bnd_access ba;

	if (from_uffd) {
		if (si->si_errno == UFFD_SIG_SYSCALL)
			syscall_writes(uc);
		/* A user-mode write that waits on a page: the instruction here faults on it as with
		 * mprotect, unless it is over (see uffd_write_at). */
		if (si->si_errno == UFFD_SIG_SYSCALL || !(addr = uffd_write_at(uc, addr))) {
			errno = saved_errno;
			return;
		}
		deny = rights_of(addr);
	}
	if (step_ool && step_n) {
		uintptr_t next = ulpt_ool_done_(ip, addr);

		if (next) {
			ool_end(uc, next);
			errno = saved_errno;
			return;
		}
		ip = ulpt_ool_program_ip_(ip);  /* the instruction faulted again, out of line */
	}
	if (!deny && si->si_code == SEGV_ACCERR && addr < ULPT_VA_LIMIT_ && (slot_of(addr) & LIFTING)) {
		/* A page whose rights are being lifted: its protection now, and run it again. */
		mprotect((void *)(addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1)), ULPT_PAGE_SIZE,
			 prot_for(rights_of(addr)));
		errno = saved_errno;
		return;
	}
	if (!deny) {
		if (step_ool && step_n)
			ool_cancel(uc);             /* the program's own fault, at its instruction */
		chain(&old_segv, sig, si, ucv);     /* not one of ours */
		return;
	}
	bpage = (deny & kind) && kind != ULPT_DENY_X && bounded(addr, kind);
	/* A page with bounds, where this fault would be delivered rather than logged: a REP string
	 * instruction's elements are accesses of their own (R-LOG-2), run one per fault. */
	if (bpage && !(lg && (deny & ULPT_DENY_LOG)) && rep_string(ip)) {
		if (step_ool && step_n) {
			ool_rep_pause(uc);          /* reached out of line: the rest from here */
			errno = saved_errno;
			return;
		}
		each = 1;
	}
	if (lg && !step_n)
		lg->planned = 0;                    /* a new instruction: its own records */
	if (lg && (deny & ULPT_DENY_LOG) && kind != ULPT_DENY_X) {
		if (lg->planned) {
			logged = 1;                 /* another page of a planned instruction */
		} else {
			logged = log_plan(lg, ip, uc, addr, kind);
			if (!step_n && !lg->count_base && !ulpt_log_room_(lg, lg->npend))
				log_full(lg, lg->npend);        /* else when it completes */
		}
	}
	/* Byte bounds: an access with no closed byte is an allowed one (R-BND-1); a logged one was
	 * decided by its plan (log_status). */
	if (bpage && !logged && !(step_n && (step_kinds & kind) && !rep_string(ip))) {
		bnd = bounds_decide(ip, uc, addr, kind, &ba);
		open = bnd && !ba.kinds;
	}
	if (logged || !(deny & kind) || open) {
		act = ULPT_PERMIT;                  /* logged, allowed by its rights, or open */
	} else if (step_n && (step_kinds & kind) && !rep_string(ip)) {
		/* Another page of the instruction, of a kind already let through (R-RET-2: an
		 * access is delivered whole, once; a REP string instruction's next element is a
		 * new access). */
		act = ULPT_PERMIT;
	} else if (in_handler || !handler) {
		ulpt_default_segv_();               /* a fault inside the handler, or no handler */
		return;
	} else {
		struct ulpt_fault f = {
			.addr = addr, .start = addr, .size = 0, .kind = kind,
			.reason = ULPT_REASON_PAGE_RIGHTS, .ip = ip,
			.entry = { deny, 0 }, .tid = (pid_t)syscall(SYS_gettid),
			.rflags = (uint64_t)gr[REG_EFL],
		};
		struct ulpt_ool_mem m[4];
		/* The record as on ULPT: the whole access the address is in (the decode of the
		 * out-of-line step; at the instruction's first fault, whose registers are the
		 * program's), and each of its kinds the page denies, the read first (R-RET-3): the
		 * kernel reports a read-modify-write as one write fault. Undecoded: size 0. With
		 * bounds, the kinds with a closed byte, each at its first. */
		int nm = !bnd && !step_n && kind != ULPT_DENY_X && ool_ready ? ulpt_ool_mem_(ip, uc, m, 4) : -1;
		unsigned kinds = bnd ? ba.kinds : kind;

		if (bnd) {
			f.start = ba.start;
			f.size = ba.size;
		}

		for (int i = 0; i < nm; i++)
			if (addr - m[i].start < m[i].size) {
				f.start = m[i].start;
				f.size = m[i].size;
				kinds |= m[i].kinds & deny;
				break;
			}
		act = ULPT_PERMIT;
		in_handler = 1;
		for (unsigned k = ULPT_DENY_R; k <= ULPT_DENY_X && act == ULPT_PERMIT; k <<= 1) {
			if (!(kinds & k))
				continue;
			f.kind = k;
			if (bnd)
				f.addr = ba.at[k - 1];
			act = handler(&f, ulpt_lib_.handler_arg);
			if (act == ULPT_PERMIT_STEP) {
				/* The last fault of the instruction gives the after-call's record. */
				step_fault = f;
				step_pending = 1;
				act = ULPT_PERMIT;
			}
			if (act == ULPT_PERMIT)
				step_kinds |= k;
		}
		in_handler = 0;
		if (act == ULPT_SKIP) {
			if (step_ool && step_n)
				ool_cancel(uc);
			gr[REG_RIP] = (greg_t)f.next_ip;
			step_pending = 0;           /* the instruction does not complete */
		}
	}
	if (act == ULPT_PERMIT) {
		uintptr_t page = addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);

		if (!open)
			step_kinds |= kind;         /* open: nothing was let through */
		if (step_n == MAX_STEP && rep_string(ip)) {
			/* A REP string instruction goes on page after page (a memcpy of 20 KiB): the
			 * oldest page it opened is behind it; closed again, it makes room. */
			close_page(step_page[0]);
			memmove(step_page, step_page + 1, sizeof(step_page[0]) * (MAX_STEP - 1));
			step_n--;
		}
		if (step_n == MAX_STEP) {
			ulpt_default_segv_();
			return;
		}
		int first = !step_n;

		step_page[step_n++] = page;
		open_page(page);
		if (first) {
			/* each: in place with TF, which traps after one iteration. */
			uintptr_t at = ool_ready && !each ? ulpt_ool_prepare_(ip, uc) : 0;

			step_own_tf = (gr[REG_EFL] & RFLAGS_TF) != 0;
			step_mask = uc->uc_sigmask;     /* given back by ool_end or on_trap */
			async_only(&uc->uc_sigmask);
			step_ool = at != 0;
			if (at == ULPT_OOL_DONE) {
				ool_end(uc, (uintptr_t)gr[REG_RIP]);    /* a call or return, done */
			} else if (at) {
				gr[REG_RIP] = (greg_t)at;
				gr[REG_EFL] &= ~(greg_t)RFLAGS_TF;  /* not inside the trampoline */
			}
		}
		if (!step_ool && step_n)
			gr[REG_EFL] |= RFLAGS_TF;      /* trap after this instruction */
	} else if (act == ULPT_DEFAULT) {
		ulpt_default_segv_();
	}
	errno = saved_errno;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = errno;

	if (!step_n || si->si_code <= 0) {
		chain(&old_trap, sig, si, ucv);
		return;
	}
	/* The permitted instruction is done: close its pages again with their current rights. */
	log_values(ulpt_log_st_);
	close_pages();
	if (!step_own_tf)
		uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)RFLAGS_TF;
	uc->uc_sigmask = step_mask;         /* asynchronous signals wait no longer */
	log_append(step_pending, uc);
	after_call(&uc->uc_mcontext.gregs[REG_RIP], &uc->uc_mcontext.gregs[REG_EFL]);
	errno = saved_errno;
	/* The program's single step, after ours (unless the after-call took it over: TF clear). */
	if (step_own_tf) {
		step_own_tf = 0;
		if (uc->uc_mcontext.gregs[REG_EFL] & RFLAGS_TF)
			chain(&old_trap, sig, si, ucv);
	}
}

/*
 * The handlers run on an alternate signal stack where the thread has one: a watched stack
 * page (ulpt-gdb's `ulpt watch -l' on a local) leaves the kernel no room for a signal frame
 * on the stack itself. The thread that calls ulpt_init gets one if it has none (1 MiB of
 * address space, committed as used: the handler may unwind and symbolise); other threads use
 * theirs, or their stack.
 */
#define ALT_STACK (1u << 20)
static void alt_stack(void)
{
	stack_t cur, ss = { .ss_size = ALT_STACK };

	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	ss.ss_sp = mmap(NULL, ALT_STACK, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ss.ss_sp == MAP_FAILED)
		return;
	if (sigaltstack(&ss, NULL) != 0)
		munmap(ss.ss_sp, ALT_STACK);
	else
		ulpt_own_add_(ss.ss_sp, ALT_STACK);
}

int ulpt_mprotect_init_(void)
{
	int e;

	alt_stack();
	ulpt_uffd_init_(slot_wp);       /* else writes are denied with mprotect too */

	ool_ready = ulpt_ool_init_() == 0;      /* else every step is a TF step */
	e = install(SIGSEGV, on_segv, &old_segv);

	if (e)
		return e;
	e = install(SIGTRAP, on_trap, &old_trap);
	if (e) {
		sigaction(SIGSEGV, &old_segv, NULL);
		return e;
	}
	installed = 1;
	return 0;
}

static struct sigaction *mp_chained(int sig)
{
	if (!installed)
		return NULL;
	return sig == SIGSEGV ? &old_segv : sig == SIGTRAP ? &old_trap : NULL;
}

static int mp_fini(void)
{
	/* Lift every restriction, then give the signals back. */
	ulpt_uffd_fini_();
	for (unsigned i1 = 0; i1 < (1u << L1_BITS); i1++) {
		unsigned char **l2 = table[i1];
		if (!l2)
			continue;
		for (unsigned i2 = 0; i2 < (1u << L2_BITS); i2++) {
			unsigned char *l3 = l2[i2];
			if (!l3)
				continue;
			for (unsigned i3 = 0; i3 < (1u << L3_BITS); i3++) {
				if (l3[i3]) {
					uintptr_t page = ((((uintptr_t)i1 << L2_BITS | i2) << L3_BITS) | i3) << 12;
					mprotect((void *)page, ULPT_PAGE_SIZE, PROT_READ | PROT_WRITE);
				}
			}
			munmap(l3, 1u << L3_BITS);
		}
		munmap(l2, sizeof(*l2) << L2_BITS);
		table[i1] = NULL;
	}
	for (unsigned i1 = 0; i1 < (1u << L1_BITS); i1++) {
		uintptr_t **l2 = btable[i1];

		for (unsigned i2 = 0; l2 && i2 < (1u << L2_BITS); i2++)
			if (l2[i2])
				munmap(l2[i2], sizeof(uintptr_t) << L3_BITS);
		if (l2)
			munmap(l2, sizeof(*l2) << L2_BITS);
		btable[i1] = NULL;
	}
	installed = 0;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGTRAP, &old_trap, NULL);
	return 0;
}

/* Each page with SLOT_WP, to fn (a forked child's, from uffd.c). */
static void each_wp(void (*fn)(uintptr_t page))
{
	for (unsigned i1 = 0; i1 < (1u << L1_BITS); i1++) {
		unsigned char **l2 = table[i1];

		for (unsigned i2 = 0; l2 && i2 < (1u << L2_BITS); i2++) {
			unsigned char *l3 = l2[i2];

			for (unsigned i3 = 0; l3 && i3 < (1u << L3_BITS); i3++)
				if (l3[i3] & SLOT_WP)
					fn(((((uintptr_t)i1 << L2_BITS | i2) << L3_BITS) | i3) << 12);
		}
	}
}

static void lose(uintptr_t page)
{
	__atomic_fetch_and(slot(page >> 12, 0), (unsigned char)~SLOT_WP, __ATOMIC_RELEASE);
	mprotect((void *)page, ULPT_PAGE_SIZE, prot_for(rights_of(page)));
}

static void rearm(uintptr_t page)
{
	if (ulpt_uffd_protect_(page, ULPT_PAGE_SIZE, 1, 0) != 0)
		lose(page);
}

void ulpt_uffd_rearm_(void)
{
	each_wp(rearm);
}

void ulpt_uffd_lost_(void)
{
	each_wp(lose);
}

static int mp_protect_lines(void *addr, size_t len, unsigned deny)
{
	(void)addr; (void)len; (void)deny;
	return -EOPNOTSUPP;             /* pages only */
}

/* A page's lines from one word: the page gets the union of their rights, marked as lines'
 * (SLOT_LINES: its bounds open bytes in them), with no system call when that is what it has. */
static int mp_line_word(uintptr_t page, uint64_t word)
{
	unsigned any = rights_of(page) & ULPT_DENY_LOG;     /* the page's, as word 0's on ULPT */

	for (unsigned i = 0; i < 32; i++)
		any |= (unsigned)(word >> (2 * i)) & 3;
	if (rights_of(page) != any)
		return set_rights((void *)page, ULPT_PAGE_SIZE, any, 1);
	/* The same protection (its rights were page rights): only the mark changes. */
	if ((any & 7) && !(slot_of(page) & SLOT_LINES))
		__atomic_fetch_or(slot(page >> 12, 0), (unsigned char)SLOT_LINES, __ATOMIC_RELEASE);
	return 0;
}

static void mp_get(uintptr_t addr, unsigned *page, unsigned *line)
{
	*page = rights_of(addr);
	*line = 0;
}

static int mp_set_handler(unsigned flags)
{
	(void)flags;
	return 0;                       /* the SIGSEGV handler reads ulpt_lib_.handler */
}

const struct ulpt_ops ulpt_mprotect_ops_ = {
	.backend = ULPT_BACKEND_MPROTECT,
	.fini = mp_fini,
	.set_handler = mp_set_handler,
	.protect = mp_protect,
	.protect_lines = mp_protect_lines,
	.line_word = mp_line_word,
	.bounds = mp_bounds,
	.claim_bounds = mp_claim_bounds,
	.get = mp_get,
	.chained = mp_chained,
};
