/*
 * watchlib: exact watchpoints over libulpt (see watchlib.h).
 *
 * Tables. A watchpoint is a record in an array indexed by its id. Every page that holds watched
 * bytes has a record in an open-addressing hash table keyed by page number: the ids of the
 * watchpoints on it and, per 128-byte line, how many watch reads and writes. A fault looks up
 * the page (O(1) expected) and scans that page's watchpoints only, so the cost does not grow
 * with watchpoints elsewhere. Rights: on ULPT each page's line word is recomputed from the
 * counts and stored through the view; on mprotect the page gets the union of its lines.
 *
 * The fault path (wl_handle_fault) is built -mgeneral-regs-only: libulpt's cheap entry stub
 * saves no vector state. Anything that may use vector registers (the program's callback) runs
 * in the after-call of ULPT_PERMIT_STEP, where libulpt (ULPT) or the kernel (mprotect: a
 * signal handler) has saved them.
 *
 * Counting. An access is counted once per watchpoint whose bytes it touches and whose mode has
 * the access's kind. A read-modify-write on bytes watched for writes faults twice on ULPT (read,
 * then write, the same instruction and address): the read is counted, and undone when the write
 * of the same instruction follows, so it counts once, as a write.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "wl-internal.h"

#define MAX_WATCHES   (1u << 22)
#define PAGE          4096u
#define LINE          128u

struct watch {
	uintptr_t addr;
	size_t len;
	unsigned mode;              /* 0: free slot */
	uint64_t reads, writes;
};

struct wpage {
	uintptr_t pageno;
	uint32_t n, cap;
	int32_t *ids;
	uint32_t cnt_r[32], cnt_w[32];
	void *bounds_mem;               /* its bounds (bounds_of) for open_gap, or NULL */
	int no_bounds;                  /* the page has bounds of someone else's */
};

static struct {
	volatile int lock;
	struct watch *w;            /* MAX_WATCHES slots, committed as used */
	int top;                    /* slots ever used */
	int32_t *free_ids;
	int nfree;
	struct wpage **tab;
	size_t cap, used;
	wl_callback_t cb;
	void *cb_arg;
	int backend;
	int mem_fd;
	int ready;
	uint64_t faults, hits, false_faults, handler_ticks, active;
	uint64_t mono0, tsc0;       /* CLOCK_MONOTONIC and the TSC at wl_init (wl_ticks_ns) */
	uint64_t tsc_mul;           /* ns = ticks * tsc_mul >> 32, once measured over RATE_NS */
} wl;

/* Per-thread state of the instruction being let through with ULPT_PERMIT_STEP (callback). */
#define WL_PENDING_MAX 8
static __thread struct {
	uintptr_t ip;                   /* 0: nothing pending */
	unsigned kind;                  /* WL_READ, or WL_WRITE once the instruction wrote */
	uintptr_t start;
	size_t size;
	int n;
	int ids[WL_PENDING_MAX];
	uintptr_t vaddr[WL_PENDING_MAX];        /* watched bytes the access covers */
	uint8_t vlen[WL_PENDING_MAX];
	uint8_t old[WL_PENDING_MAX][WL_VALUE_MAX];
} pending __attribute__((tls_model("initial-exec")));

/* The last read counted by this thread, to undo when it turns out to be a read-modify-write. */
static __thread struct {
	uintptr_t ip, start;
	int n;
	int ids[WL_PENDING_MAX];
} last_read __attribute__((tls_model("initial-exec")));

static void lock(void)
{
	while (__atomic_exchange_n(&wl.lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

static void unlock(void)
{
	__atomic_store_n(&wl.lock, 0, __ATOMIC_RELEASE);
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

uint64_t wl_ticks(void)
{
	return rdtsc();
}

uint64_t wl_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* The TSC's rate is taken between wl_init and the first conversion, with no wait at the
 * start (a sleep there delayed every program the agent starts): kept once the interval
 * is RATE_NS long, measured again at each conversion until then. */
#define RATE_NS 100000000ull

uint64_t wl_ticks_ns(uint64_t ticks)
{
	uint64_t mul = __atomic_load_n(&wl.tsc_mul, __ATOMIC_RELAXED);

	if (!mul) {
		uint64_t n = wl_mono_ns() - wl.mono0, t = rdtsc() - wl.tsc0;

		if (!t || !n)
			return 0;
		mul = (uint64_t)(((unsigned __int128)n << 32) / t);
		if (n >= RATE_NS)
			__atomic_store_n(&wl.tsc_mul, mul, __ATOMIC_RELAXED);
	}
	return (uint64_t)(((unsigned __int128)ticks * mul) >> 32);
}

/* Byte copies: no memcpy (vector registers) on the fault path. */
static void copy_bytes(void *dst, const void *src, size_t n)
{
	volatile uint8_t *d = dst;
	const volatile uint8_t *s = src;

	while (n--)
		*d++ = *s++;
}

static int denies_reads(uintptr_t a)
{
	unsigned page = 0, line = 0;

	if (ulpt_get((const void *)a, &page, &line) < 0)
		return 1;
	return ((page | line) & ULPT_DENY_R) != 0;
}

void wl_read_bytes(uintptr_t addr, void *buf, size_t n)
{
	if (!n)
		return;
	if (wl.mem_fd >= 0 && (denies_reads(addr) || denies_reads(addr + n - 1))) {
		if (syscall(SYS_pread64, wl.mem_fd, buf, n, (off_t)addr) == (long)n)
			return;
	}
	copy_bytes(buf, (const void *)addr, n);
}

/* --- the page table ----------------------------------------------------------------------- */

static size_t slot_of(uintptr_t pageno, size_t cap)
{
	return (size_t)((pageno * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct wpage *find_page(uintptr_t pageno)
{
	if (!wl.cap)
		return NULL;
	for (size_t i = slot_of(pageno, wl.cap);; i = (i + 1) & (wl.cap - 1)) {
		struct wpage *p = wl.tab[i];
		if (!p)
			return NULL;
		if (p->pageno == pageno)
			return p;
	}
}

static int grow_table(void)
{
	size_t ncap = wl.cap ? wl.cap * 2 : 1024;
	struct wpage **nt = wl_mem_alloc(ncap * sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < wl.cap; i++) {
		struct wpage *p = wl.tab[i];
		if (!p)
			continue;
		size_t j = slot_of(p->pageno, ncap);
		while (nt[j])
			j = (j + 1) & (ncap - 1);
		nt[j] = p;
	}
	wl_mem_free(wl.tab);
	wl.tab = nt;
	wl.cap = ncap;
	return 0;
}

static struct wpage *get_page(uintptr_t pageno)
{
	struct wpage *p = find_page(pageno);

	if (p)
		return p;
	if ((wl.used + 1) * 2 > wl.cap && grow_table())
		return NULL;
	p = wl_mem_alloc(sizeof(*p));
	if (!p)
		return NULL;
	p->pageno = pageno;
	size_t i = slot_of(pageno, wl.cap);
	while (wl.tab[i])
		i = (i + 1) & (wl.cap - 1);
	wl.tab[i] = p;
	wl.used++;
	return p;
}

/* Stores the page's rights as its counts say. */
static void apply_page(struct wpage *p)
{
	uint64_t word = 0;

	for (unsigned i = 0; i < 32; i++) {
		unsigned d = (p->cnt_r[i] ? ULPT_DENY_R : 0) | (p->cnt_w[i] ? ULPT_DENY_W : 0);
		word |= (uint64_t)d << (2 * i);
	}
	ulpt_page_lines((void *)(p->pageno * PAGE), word);
}

/* The page's bounds for open_gap, made with its first watch (not in the fault handler, which
 * must not allocate: its system calls would stop a debugger's single step there). A page with
 * bounds of another component's (ulpt_claim_bounds: EBUSY) keeps them, and no gap opens. ULPT
 * only: on the mprotect backend an access to open bytes still takes its signal, and libulpt
 * lets it through without the handler, which a debugger's single step over it needs
 * (ulpt-gdb ends such a step from the handler). */
static struct ulpt_bounds *bounds_of(const struct wpage *p)
{
	return (struct ulpt_bounds *)(((uintptr_t)p->bounds_mem + 63) & ~(uintptr_t)63);
}

static void claim_bounds(struct wpage *p)
{
	if (p->bounds_mem || p->no_bounds || wl.backend != ULPT_BACKEND_ULPT)
		return;
	p->bounds_mem = wl_mem_alloc(sizeof(struct ulpt_bounds) + 63);      /* 64-byte aligned inside */
	if (!p->bounds_mem || ulpt_claim_bounds((void *)(p->pageno * PAGE), bounds_of(p)) < 0) {
		wl_mem_free(p->bounds_mem);
		p->bounds_mem = NULL;
		p->no_bounds = 1;
	}
}

/* Closes the lines of [lo, hi) (in page p) that open_gap opened: before a watch there takes
 * effect, so that no access to its bytes goes unseen. */
static void close_gaps(struct wpage *p, uintptr_t lo, uintptr_t hi)
{
	if (!p->bounds_mem)
		return;
	for (uintptr_t l = (lo % PAGE) / LINE; l <= ((hi - 1) % PAGE) / LINE; l++)
		*(volatile uint16_t *)bounds_of(p)->line[l] = 0;
	__asm__ volatile("" ::: "memory");
}

/* Adds (delta 1) or removes (-1) watch id's bytes on every page they cover. */
static int account(int id, int delta)
{
	struct watch *w = &wl.w[id];
	uintptr_t end = w->addr + w->len;

	for (uintptr_t pg = w->addr / PAGE; pg <= (end - 1) / PAGE; pg++) {
		struct wpage *p = delta > 0 ? get_page(pg) : find_page(pg);
		uintptr_t lo = pg * PAGE > w->addr ? pg * PAGE : w->addr;
		uintptr_t hi = (pg + 1) * PAGE < end ? (pg + 1) * PAGE : end;

		if (!p)
			return -ENOMEM;
		if (delta > 0) {
			if (p->n == p->cap) {
				uint32_t nc = p->cap ? p->cap * 2 : 4;
				int32_t *ni = wl_mem_realloc(p->ids, nc * sizeof(*ni));
				if (!ni)
					return -ENOMEM;
				p->ids = ni;
				p->cap = nc;
			}
			p->ids[p->n++] = id;
			claim_bounds(p);
			close_gaps(p, lo, hi);
		} else {
			for (uint32_t i = 0; i < p->n; i++)
				if (p->ids[i] == id) {
					p->ids[i] = p->ids[--p->n];
					break;
				}
		}
		for (uintptr_t l = (lo % PAGE) / LINE; l <= ((hi - 1) % PAGE) / LINE; l++) {
			if (w->mode & WL_READ)
				p->cnt_r[l] += delta;
			if (w->mode & WL_WRITE)
				p->cnt_w[l] += delta;
		}
		apply_page(p);
	}
	return 0;
}

/* --- the API -------------------------------------------------------------------------------- */

int wl_init_shared(void)
{
	if (wl.ready)
		return 0;
	wl.backend = ulpt_backend();
	if (wl.backend <= 0)
		return -EINVAL;
	if (!wl.w) {
		wl.w = wl_mem_reserve((size_t)MAX_WATCHES * sizeof(struct watch));
		wl.free_ids = wl_mem_reserve((size_t)MAX_WATCHES * sizeof(int32_t));
		if (!wl.w || !wl.free_ids)
			return -ENOMEM;
	}
	wl.mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	wl.mono0 = wl_mono_ns();
	wl.tsc0 = rdtsc();
	wl.ready = 1;
	return 0;
}

static enum ulpt_action handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	return wl_handle_fault(f);
}

int wl_init(enum ulpt_backend backend)
{
	int r = ulpt_init(backend);

	if (r < 0)
		return r;
	r = wl_init_shared();
	if (r < 0)
		return r;
	return ulpt_set_handler(handler, NULL, ULPT_HANDLER_GPR_ONLY);
}

int wl_fini(void)
{
	if (!wl.ready)
		return -EINVAL;
	lock();
	for (int id = 0; id < wl.top; id++)
		if (wl.w[id].mode) {
			account(id, -1);
			wl.w[id].mode = 0;
		}
	wl.top = wl.nfree = 0;
	wl.active = 0;
	for (size_t i = 0; i < wl.cap; i++) {
		struct wpage *p = wl.tab[i];

		if (!p)
			continue;
		if (p->bounds_mem)
			ulpt_page_bounds((void *)(p->pageno * PAGE), NULL);
		wl_mem_free(p->bounds_mem);
		p->bounds_mem = NULL;
		p->no_bounds = 0;
	}
	unlock();
	if (wl.mem_fd >= 0)
		close(wl.mem_fd);
	wl.mem_fd = -1;
	wl.ready = 0;
	return ulpt_fini();
}

int wl_set_callback(wl_callback_t cb, void *arg)
{
	if (!wl.ready)
		return -EINVAL;
	lock();
	wl.cb_arg = arg;
	wl.cb = cb;
	unlock();
	return 0;
}

int wl_watch(const void *addr, size_t len, unsigned mode)
{
	uintptr_t a = (uintptr_t)addr;
	int id, r;

	if (!wl.ready)
		return -EINVAL;
	if (!a || !len || !mode || (mode & ~WL_RW) || a + len < a || a + len > WL_ADDR_END)
		return -EINVAL;
	lock();
	if (wl.nfree)
		id = wl.free_ids[--wl.nfree];
	else if (wl.top < (int)MAX_WATCHES)
		id = wl.top++;
	else {
		unlock();
		return -ENOSPC;
	}
	wl.w[id] = (struct watch){ .addr = a, .len = len, .mode = mode };
	r = account(id, 1);
	if (r < 0) {
		account(id, -1);
		wl.w[id].mode = 0;
		wl.free_ids[wl.nfree++] = id;
		unlock();
		return r;
	}
	wl.active++;
	unlock();
	return id;
}

int wl_unwatch(int id)
{
	if (!wl.ready)
		return -EINVAL;
	lock();
	if (id < 0 || id >= wl.top || !wl.w[id].mode) {
		unlock();
		return -ENOENT;
	}
	account(id, -1);
	wl.w[id].mode = 0;
	wl.free_ids[wl.nfree++] = id;
	wl.active--;
	unlock();
	return 0;
}

int wl_counts(int id, uint64_t *reads, uint64_t *writes)
{
	if (!wl.ready)
		return -EINVAL;
	if (id < 0 || id >= wl.top || !wl.w[id].mode)
		return -ENOENT;
	if (reads)
		*reads = __atomic_load_n(&wl.w[id].reads, __ATOMIC_RELAXED);
	if (writes)
		*writes = __atomic_load_n(&wl.w[id].writes, __ATOMIC_RELAXED);
	return 0;
}

void wl_get_stats(struct wl_stats *s)
{
	s->faults = __atomic_load_n(&wl.faults, __ATOMIC_RELAXED);
	s->hits = __atomic_load_n(&wl.hits, __ATOMIC_RELAXED);
	s->false_faults = __atomic_load_n(&wl.false_faults, __ATOMIC_RELAXED);
	s->handler_ns = wl_ticks_ns(__atomic_load_n(&wl.handler_ticks, __ATOMIC_RELAXED));
	s->watches = wl.active;
}

/* --- the fault path ------------------------------------------------------------------------- */

/*
 * A false fault: the access touched no watched byte of its line (a neighbour of a watchpoint:
 * 6,300 of ulpt-gdb's 6,400 deliveries in bench/micro-gdb at 1,000 watchpoints). The line's
 * byte bounds (docs/spec.md 4.5) then open the gap between watched bytes that holds the
 * access, so that the next accesses there complete without a delivery; a watch added in the
 * line closes its bounds first (close_gaps). A line has one open range: a program that goes
 * back and forth between two gaps of one line moves it each time, a false fault as before.
 * A page that has bounds of another component's is left alone (claim_bounds). An access
 * across two lines opens nothing. Called with the lock held.
 */
static void open_gap(uintptr_t start, size_t size)
{
	uintptr_t line = start & ~(uintptr_t)(LINE - 1), end = start + (size ? size : 1);
	uintptr_t lo = line, hi = line + LINE;
	struct wpage *p;

	if (end > hi || !(p = find_page(start / PAGE)) || !p->bounds_mem)
		return;
	for (uint32_t i = 0; i < p->n; i++) {
		const struct watch *w = &wl.w[p->ids[i]];
		uintptr_t ws = w->addr, we = w->addr + w->len;

		if (we <= lo || ws >= hi)
			continue;
		if (we <= start)
			lo = we > lo ? we : lo;
		else if (ws >= end)
			hi = ws < hi ? ws : hi;
		else
			return;         /* watched bytes of another kind: the line stays closed */
	}
	/* lo and hi in one store: a reader never sees a range that mixes the old and new. */
	*(volatile uint16_t *)bounds_of(p)->line[(line % PAGE) / LINE] =
		(uint16_t)((lo - line) | (hi - line) << 8);
}

/* Watchpoints whose bytes [start, start + size) touches, with a mode sharing kinds; 0 if the
 * address is on no watched page at all (-1). */
static int match(uintptr_t start, size_t size, unsigned kinds, int *ids, int max)
{
	uintptr_t end = start + (size ? size : 1);
	int n = 0, known = 0;

	for (uintptr_t pg = start / PAGE; pg <= (end - 1) / PAGE; pg++) {
		struct wpage *p = find_page(pg);
		if (!p)
			continue;
		known = 1;
		for (uint32_t i = 0; i < p->n; i++) {
			struct watch *w = &wl.w[p->ids[i]];
			if (!(w->mode & kinds) || w->addr >= end || w->addr + w->len <= start)
				continue;
			int dup = 0;
			for (int k = 0; k < n; k++)
				dup |= ids[k] == p->ids[i];
			if (!dup && n < max)
				ids[n++] = p->ids[i];
		}
	}
	return known ? n : -1;
}

static void count(int id, unsigned kind, int delta)
{
	if (kind == WL_WRITE)
		__atomic_add_fetch(&wl.w[id].writes, delta, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&wl.w[id].reads, delta, __ATOMIC_RELAXED);
}

/* The watched bytes of watch id that [start, start + size) covers, capped to WL_VALUE_MAX. */
static void value_range(int id, uintptr_t start, size_t size, uintptr_t *va, uint8_t *vl)
{
	struct watch *w = &wl.w[id];
	uintptr_t lo = start > w->addr ? start : w->addr;
	uintptr_t hi = start + (size ? size : 1);

	if (hi > w->addr + w->len)
		hi = w->addr + w->len;
	if (hi - lo > WL_VALUE_MAX)
		hi = lo + WL_VALUE_MAX;
	*va = lo;
	*vl = (uint8_t)(hi - lo);
}

/* After the instruction: the new values, the counts, the program's callback. */
static void after(struct ulpt_fault *f)
{
	__typeof__(pending) *p = &pending;
	wl_callback_t cb = wl.cb;

	for (int k = 0; k < p->n; k++) {
		int id = p->ids[k];
		unsigned kind = ((p->kind & WL_WRITE) && (wl.w[id].mode & WL_WRITE)) ? WL_WRITE : WL_READ;
		struct wl_hit h = {
			.id = id, .kind = kind, .addr = p->start, .size = p->size, .ip = f->ip,
			.tid = f->tid,
		};

		count(id, kind, 1);
		if (kind == WL_WRITE) {
			h.value_addr = p->vaddr[k];
			h.value_len = p->vlen[k];
			copy_bytes(h.old_value, p->old[k], h.value_len);
			wl_read_bytes(h.value_addr, h.new_value, h.value_len);
		}
		if (cb)
			cb(&h, wl.cb_arg);
	}
	p->ip = 0;
	p->n = 0;
}

enum ulpt_action wl_handle_fault(struct ulpt_fault *f)
{
	uint64_t t0 = wl_ticks();
	enum ulpt_action act = ULPT_PERMIT;
	struct wl_access acc = { f->start, f->size, f->kind == ULPT_DENY_R, f->kind == ULPT_DENY_W };
	int ids[WL_PENDING_MAX], n;
	unsigned kind;

	if (f->after) {
		if (pending.ip)
			after(f);
		return ULPT_PERMIT;
	}
	if (f->kind == ULPT_DENY_X)
		return ULPT_DEFAULT;
	if (!f->size) {                 /* not decoded (mprotect without capstone) */
		acc.start = f->addr;
		acc.size = 1;
	}
	kind = acc.writes ? WL_WRITE : WL_READ;

	lock();
	n = match(acc.start, acc.size, acc.writes ? WL_RW : WL_READ, ids, WL_PENDING_MAX);
	if (n < 0) {
		unlock();
		return ULPT_DEFAULT;        /* not a watched page: not ours */
	}
	__atomic_add_fetch(&wl.faults, 1, __ATOMIC_RELAXED);
	/* A write matches only the watches for writes (a read-modify-write's read is its own
	 * fault, on both backends). */
	if (kind == WL_WRITE && !acc.reads) {
		int m = 0;
		for (int k = 0; k < n; k++)
			if (wl.w[ids[k]].mode & WL_WRITE)
				ids[m++] = ids[k];
		n = m;
	}
	if (!n) {
		__atomic_add_fetch(&wl.false_faults, 1, __ATOMIC_RELAXED);
		open_gap(acc.start, acc.size);
		goto out;
	}
	__atomic_add_fetch(&wl.hits, 1, __ATOMIC_RELAXED);
	if (kind == WL_WRITE && last_read.ip == f->ip && last_read.start == acc.start) {
		/* The write of an instruction whose read was just counted: one write instead. */
		for (int k = 0; k < last_read.n; k++)
			count(last_read.ids[k], WL_READ, -1);
		__atomic_sub_fetch(&wl.hits, 1, __ATOMIC_RELAXED);
	}
	last_read.ip = 0;
	if (!wl.cb && kind == WL_READ) {
		for (int k = 0; k < n; k++)
			count(ids[k], WL_READ, 1);
		last_read.ip = f->ip;
		last_read.start = acc.start;
		last_read.n = n;
		for (int k = 0; k < n; k++)
			last_read.ids[k] = ids[k];
	} else if (!wl.cb) {
		for (int k = 0; k < n; k++)
			count(ids[k], kind, 1);
	} else {
		/* The callback wants the values, and runs after the instruction (see the top). */
		__typeof__(pending) *p = &pending;
		if (p->ip != f->ip) {
			p->n = 0;
			p->kind = 0;
		}
		p->ip = f->ip;
		p->kind |= kind;
		p->start = acc.start;
		p->size = acc.size;
		for (int k = 0; k < n; k++) {
			int dup = 0;
			for (int j = 0; j < p->n; j++)
				dup |= p->ids[j] == ids[k];
			if (dup || p->n == WL_PENDING_MAX)
				continue;
			p->ids[p->n] = ids[k];
			value_range(ids[k], acc.start, acc.size, &p->vaddr[p->n], &p->vlen[p->n]);
			wl_read_bytes(p->vaddr[p->n], p->old[p->n], p->vlen[p->n]);
			p->n++;
		}
		act = ULPT_PERMIT_STEP;
	}
out:
	unlock();
	__atomic_add_fetch(&wl.handler_ticks, wl_ticks() - t0, __ATOMIC_RELAXED);
	return act;
}
