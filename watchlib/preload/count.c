/*
 * --heap's count table (--delivery=count, the default; docs/spec.md 6.3, ulpt_count_start(3)).
 * Each 128-byte line of the arena has a read and a write counter, which the CPU (libulpt on
 * mprotect) adds to at each of the program's accesses to a watched line, in every thread that
 * has the table: the main thread and each thread pthread_create starts (a thread without one
 * has its accesses delivered as faults, counted by fault.c). Nothing waits to be drained.
 *
 * A block owns whole lines (heap.c), so its reads and writes are the sums of its lines'
 * counters, taken (read and cleared with XCHG: other threads may be counting) when it is freed
 * or reallocated, and for a live block at exit. Counts on the other lines of a slot (a freed
 * or never used one, a block's red-zone line) are false faults, as the log's records of those
 * accesses are: taken when the slot is reused and at exit. The agent's own accesses to a block
 * (calloc's clearing where its page stays denied, realloc's copy) are taken right after them
 * and dropped. The totals are kept under the heap's lock and join the agent's at the end.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include "agent.h"

/* Taken so far (under heap_lock): the program's reads and writes of live blocks, the counts
 * on other lines. */
static struct {
	uint64_t reads, writes, falses;
} tot;

int heap_count_init(void)
{
	size_t len = (ARENA_BYTES >> LINE_SHIFT) * sizeof(struct ulpt_count);
	void *t = wl_mem_reserve(len);

	if (!t) {
		agent_no_space("the heap's count table", len);
		return -1;
	}
	ag.count_table = t;
	ag.count_base = ulpt_count_base(t, ag.arena);
	return 0;
}

int heap_count_start(void)
{
	/* The base is below the table, by an eighth of the arena's address: mmap puts both high
	 * enough, and ulpt_count_start refuses a base that is not (EINVAL: the log then). */
	return (uintptr_t)ag.count_base < (uintptr_t)ag.count_table ?
	       ulpt_count_start(ag.count_base) : -EINVAL;
}

/* Counters [c, e): added to *r and *w, and cleared. XCHG only where a counter is not 0: most
 * lines of a large block are cold. */
static inline void take_range(struct ulpt_count *c, struct ulpt_count *e, uint64_t *r, uint64_t *w)
{
	for (; c < e; c++) {
		if (__atomic_load_n(&c->reads, __ATOMIC_RELAXED))
			*r += __atomic_exchange_n(&c->reads, 0, __ATOMIC_RELAXED);
		if (__atomic_load_n(&c->writes, __ATOMIC_RELAXED))
			*w += __atomic_exchange_n(&c->writes, 0, __ATOMIC_RELAXED);
	}
}

/* Whether a table page (its 256 lines' counters) holds only zeroes: eight words a step, where
 * take_range tests each counter on its own. */
#define PAGE_COUNTERS (4096 / sizeof(struct ulpt_count))
static int page_zero(const struct ulpt_count *p)
{
	const uint64_t *q = (const uint64_t *)p;

	for (unsigned i = 0; i < 512; i += 8) {
		uint64_t x = 0;
		for (unsigned k = 0; k < 8; k++)
			x |= __atomic_load_n(&q[i + k], __ATOMIC_RELAXED);
		if (x)
			return 0;
	}
	return 1;
}

/*
 * Lines [first, first + n). A table page that no counter of was ever written is not resident
 * and holds zeroes: a range of several pages reads only the resident ones (mincore), where
 * reading every page would fault each in (xz's 17 MB of blocks: 530 faults and 2 loads a
 * line, at each allocation, free and exit); of those, a page of zeroes is passed over.
 */
static void take(uint32_t first, uint32_t n, uint64_t *r, uint64_t *w)
{
	struct ulpt_count *c = ag.count_table + first, *e = c + n;
	unsigned char vec[64];

	if (n < 4 * PAGE_COUNTERS) {
		take_range(c, e, r, w);
		return;
	}
	struct ulpt_count *lo = (struct ulpt_count *)(((uintptr_t)c + 4095) & ~(uintptr_t)4095);
	struct ulpt_count *hi = (struct ulpt_count *)((uintptr_t)e & ~(uintptr_t)4095);

	take_range(c, lo, r, w);
	take_range(hi, e, r, w);
	for (struct ulpt_count *p = lo; p < hi;) {
		size_t pages = (size_t)(hi - p) / PAGE_COUNTERS;

		if (pages > sizeof(vec))
			pages = sizeof(vec);
		if (mincore(p, pages << 12, vec)) {
			take_range(p, hi, r, w);
			return;
		}
		for (size_t i = 0; i < pages; i++)
			if ((vec[i] & 1) && !page_zero(p + i * PAGE_COUNTERS))
				take_range(p + i * PAGE_COUNTERS, p + (i + 1) * PAGE_COUNTERS, r, w);
		p += pages * PAGE_COUNTERS;
	}
}

/* The lines [*lo, *hi) that hold block b's bytes: those the rights watch (heap.c's
 * protect_live); none for malloc(0). */
static void block_lines(const struct blk *b, uint32_t *lo, uint32_t *hi)
{
	*lo = *hi = 0;
	if (b->size) {
		*lo = line_of(b->user);
		*hi = line_of(b->user + b->size + LINE_BYTES - 1);
	}
}

/* Counts a watched kind's as the program's accesses of a live block; an unwatched kind's (a
 * page the mprotect backend denies whole) as false faults, as fault.c does. */
static void credit(uint64_t r, uint64_t w)
{
	if (ag.heap_kinds & WL_READ)
		tot.reads += r;
	else
		tot.falses += r;
	if (ag.heap_kinds & WL_WRITE)
		tot.writes += w;
	else
		tot.falses += w;
}

/* Lines [first, end) of a small slot (most are one to three lines), in one pass over their
 * counters: the counts of those in [lo, hi) into *r and *w, of the others into *f. */
static inline void take_small(uint32_t first, uint32_t end, uint32_t lo, uint32_t hi,
			      uint64_t *r, uint64_t *w, uint64_t *f)
{
	struct ulpt_count *c = ag.count_table + first;

	for (uint32_t l = first; l < end; l++, c++) {
		uint64_t cr = __atomic_load_n(&c->reads, __ATOMIC_RELAXED);
		uint64_t cw = __atomic_load_n(&c->writes, __ATOMIC_RELAXED);

		if (__builtin_expect(!(cr | cw), 1))
			continue;
		cr = cr ? __atomic_exchange_n(&c->reads, 0, __ATOMIC_RELAXED) : 0;
		cw = cw ? __atomic_exchange_n(&c->writes, 0, __ATOMIC_RELAXED) : 0;
		if (l >= lo && l < hi) {
			*r += cr;
			*w += cw;
		} else {
			*f += cr + cw;
		}
	}
}

/* The same for any slot: a large one range by range (take). */
static void __attribute__((noinline)) take_large(uint32_t first, uint32_t end, uint32_t lo,
						 uint32_t hi, uint64_t *r, uint64_t *w, uint64_t *f)
{
	uint64_t fr = 0, fw = 0;

	take(first, lo - first, &fr, &fw);
	take(lo, hi - lo, r, w);
	take(hi, end - hi, &fr, &fw);
	*f += fr + fw;
}

void heap_count_take(uint32_t id, enum count_to to)
{
	const struct blk *b = &ag.blocks[id];
	uint64_t r = 0, w = 0, f = 0;
	uint32_t lo, hi, end = b->first_line + b->lines;

	if (to == COUNT_FALSE || to == COUNT_OWN) {
		lo = hi = end;
	} else {
		block_lines(b, &lo, &hi);
		if (hi <= lo)
			lo = hi = end;
	}
	if (b->lines <= 64)
		take_small(b->first_line, end, lo, hi, &r, &w, &f);
	else
		take_large(b->first_line, end, lo, hi, &r, &w, &f);
	if (to == COUNT_OWN)
		return;
	credit(r, w);
	tot.falses += f;
}

void heap_count_false(uint32_t first, uint32_t n)
{
	uint64_t r = 0, w = 0, f = 0;

	take_small(first, first + n, first + n, first + n, &r, &w, &f);
	tot.falses += f;
}

void heap_count_finish(void)
{
	uint32_t end, id = 0, lo = 0, hi = 0;

	if (!ag.heap_count)
		return;
	in_agent++;
	heap_lock();
	/* Every line the arena used, and the rest of the last one's page (on mprotect a page is
	 * watched whole). */
	end = (heap_bump_line() + 31) & ~31u;
	unsigned char vec[64];
	uint32_t chunk = 0;     /* the lines of vec[] start here */

	if (mincore(ag.count_table, sizeof(vec) << 12, vec))
		memset(vec, 1, sizeof(vec));
	for (uint32_t l = 0; l < end; l++) {
		uint64_t r = 0, w = 0;
		uint32_t o;

		if (l - chunk == sizeof(vec) * PAGE_COUNTERS) {
			chunk = l;
			if (mincore(ag.count_table + l, sizeof(vec) << 12, vec))
				memset(vec, 1, sizeof(vec));
		}
		/* A table page not resident: its lines counted nothing (see take). */
		if (!(vec[(l - chunk) / PAGE_COUNTERS] & 1)) {
			l += PAGE_COUNTERS - 1;
			continue;
		}
		take_range(ag.count_table + l, ag.count_table + l + 1, &r, &w);
		if (!(r | w))
			continue;
		o = __atomic_load_n(&ag.owner[l], __ATOMIC_ACQUIRE);
		if (o != id) {
			id = o;
			lo = hi = 0;
			if (id && ag.blocks[id].state == BLK_LIVE)
				block_lines(&ag.blocks[id], &lo, &hi);
		}
		if (l >= lo && l < hi)
			credit(r, w);
		else
			tot.falses += r + w;
	}
	ag.heap_reads += tot.reads;
	ag.heap_writes += tot.writes;
	ag.hits += tot.reads + tot.writes;
	ag.false_faults += tot.falses;
	ag.faults += tot.reads + tot.writes + tot.falses;
	tot.reads = tot.writes = tot.falses = 0;
	heap_unlock();
	in_agent--;
}

/* Each thread the program starts gets its share of the table, first thing. */
struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start(void *p)
{
	struct start s = *(struct start *)p;

	wl_mem_free(p);
	heap_count_start();         /* failing, its accesses are faults */
	return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static __typeof__(pthread_create) *real;
	struct start *s;
	int r;

	if (!real) {
		in_agent++;             /* what dlsym allocates is the agent's */
		real = (__typeof__(pthread_create) *)dlsym(RTLD_NEXT, "pthread_create");
		in_agent--;
	}
	if (!ag.heap_count || !(s = wl_mem_alloc(sizeof(*s))))
		return real(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	r = real(t, attr, thread_start, s);
	if (r)
		wl_mem_free(s);
	return r;
}
