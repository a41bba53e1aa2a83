/*
 * The agent's allocator for --heap and --check: it replaces the program's malloc family
 * (glibc's rules for replacing malloc: malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc, malloc_usable_size; C++ new and
 * delete come through them). Without --heap or --check every call goes to glibc's own
 * allocator through its __libc_* entry points (no dlsym: dlsym itself allocates).
 *
 * Layout (agent.h): each block ends exactly at a line boundary, so an access one byte past its
 * end lands in the next line, whose rights deny it; aligned vector reads never cross a line
 * boundary, so they never touch it. With --check, a whole red-zone line before each block is
 * its left red zone and the previous block's right one, and every line that holds block bytes
 * is open: the program's own accesses never fault. On the ULPT backend (--bounds, the default)
 * the block's partial first and last lines are denied too, and the CPU's byte bounds open the
 * block's own bytes in them (block_bounds): every byte beside a block is denied, reads
 * included, and the program's accesses to its block still never fault. With --bounds=0 the
 * slack before the block in its first line is open, so an underflow is caught once it is past
 * that slack (up to 127 bytes).
 * Red zones grow with the block (rz_lines): blocks from 4 KiB get 2 to 16 lines on each side,
 * so a far overflow from a large block lands in its own zone, not in the next block.
 * --precise catches every byte: a block's first and last lines, where they also hold bytes
 * outside it (the slack, the alignment padding), are denied too, and every access to them
 * faults and is decided byte by byte in the fault handler (an access inside the block is let
 * through and counted as a false fault). --redzone=exact does the same but gives a block of
 * one red-zone line none where its slack can serve (a block with no slack, a multiple of the
 * line, still gets one): small blocks use half the memory, but an underflow past the slack
 * into the previous block's bytes goes unseen.
 * With --check, freed blocks keep every line denied while they wait in a
 * quarantine (16 MiB, first in first out) before their slot is reused; the pages wholly
 * inside their slots are given back meanwhile (drop_pages).
 *
 * On the mprotect backend a denied page cannot be handed to a system call (the kernel's copy
 * fails with EFAULT, where ULPT rights bind only the program's own accesses), so there --check
 * gives each block whole pages, as Electric Fence does: the block ends at a page boundary, the
 * red zone is the page after it, and an underflow is caught only past the block's first page.
 *
 * Canaries: with --check (without bounds, --precise or --redzone=exact) the bytes next to a block that its open
 * lines leave reachable, the alignment padding after it and the slack before it in its first
 * line, hold a pattern. A write there faults nowhere; free, realloc and the agent's exit find
 * the changed byte and report a heap-overflow "found at free" (or at exit) with the block's
 * allocation stack, as DUMA and PageHeap do. Reads there still go unseen.
 *
 * Alignment: --align=N places blocks at multiples of N; the default ("auto") is the size's own
 * alignment, at least 8 and up to 16 (a 13-byte block gets 8, a 24-byte block 8, a 48-byte block
 * 16): programs keep pointer tags in the low bits of what malloc returns (CPython fails to start
 * with 1-byte alignment), and a size that is a multiple of 8 still ends exactly at its red zone.
 * Other sizes have up to 7 bytes of padding after them, open with the block's last line (with
 * --redzone=exact, denied with it); --align=1 makes every end exact.
 *
 * Locking: one lock; a thread holding it is "in the agent", and an allocation made then (by a
 * signal handler, or by libunwind or libdw inside the agent) comes from watchlib's own memory.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "agent.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define QUARANTINE_BYTES  (16u << 20)
#define SMALL_SLOTS       1024          /* free lists by slot lines below this */

static struct {
	volatile int lock;
	uint32_t bump_line;             /* next unused arena line */
	uint32_t nblocks;               /* block ids used (id 0 is none) */
	uint32_t free_ids;              /* ids whose slot was given back (linked by next) */
	uint32_t free_slots[SMALL_SLOTS + 1];       /* block ids, by slot lines; [SMALL_SLOTS]: larger */
	uint32_t q_head, q_tail;        /* quarantine */
	uint64_t q_bytes;
	uint64_t *words;                /* per arena page: its line word as last stored */
	int page_units;                 /* mprotect --check: slots of whole pages */
	int degraded;                   /* mprotect failed: new blocks come from glibc */
	uint32_t max_page_blocks;       /* mprotect: block slots the mapping limit allows */
	uint32_t unused_end;            /* --check: arena lines denied up to here (deny_unused) */
	struct ulpt_bounds *bounds;     /* --check with bounds: one per arena page (block_bounds) */
	int state;                      /* 0 not decided, 1 deciding, 2 done */
} h;

void heap_lock(void)
{
	while (__atomic_exchange_n(&h.lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

void heap_unlock(void)
{
	__atomic_store_n(&h.lock, 0, __ATOMIC_RELEASE);
}

uint32_t heap_nblocks(void)
{
	return h.nblocks;
}

uint32_t heap_bump_line(void)
{
	return h.bump_line;
}

/* Every lock of the agent's is held across fork (report.c: no thread inside libunwind
 * either), so that the child finds none held by a thread it does not have; in that order
 * (none of them is taken while a later one is held). In the agent meanwhile: a signal handler
 * that allocates then gets the agent's memory instead of waiting for a lock its thread holds. */
static void at_fork_prepare(void)
{
	heap_log_sync();            /* the child starts with an empty log */
	in_agent++;
	report_fork_lock();
	heap_lock();
	wl_mem_fork_lock();
}

static void at_fork_release(int child)
{
	wl_mem_fork_unlock();
	heap_unlock();
	report_fork_unlock(child);
	in_agent--;
}

static void at_fork_parent(void) { at_fork_release(0); }
static void at_fork_child(void) { at_fork_release(1); }

/* Decides the mode from the environment (set by ulpt-watch) at the first allocation. */
static void decide(void)
{
	int expect = 0;

	if (__atomic_load_n(&h.state, __ATOMIC_ACQUIRE) == 2)
		return;
	/* In the agent from before the claim: a signal handler that allocates while this thread
	 * decides gets the agent's memory, instead of waiting for itself below. */
	in_agent++;
	if (!__atomic_compare_exchange_n(&h.state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		in_agent--;
		while (__atomic_load_n(&h.state, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
		return;
	}
	agent_init();
	__atomic_store_n(&h.state, 2, __ATOMIC_RELEASE);
	in_agent--;
}

int heap_init(void)
{
	ag.arena = wl_mem_reserve(ARENA_BYTES);
	ag.owner = wl_mem_reserve((ARENA_BYTES >> LINE_SHIFT) * sizeof(uint32_t));
	ag.blocks = wl_mem_reserve((size_t)MAX_BLOCKS * sizeof(struct blk));
	h.words = wl_mem_reserve((ARENA_BYTES >> 12) * sizeof(uint64_t));
	if (!ag.arena || !ag.owner || !ag.blocks || !h.words) {
		agent_no_space("the heap", ARENA_BYTES + (ARENA_BYTES >> LINE_SHIFT) * 4 +
			       (ARENA_BYTES >> 12) * sizeof(uint64_t) +
			       (size_t)MAX_BLOCKS * sizeof(struct blk));
		ag.heap = HEAP_OFF;
		ag.arena = NULL;
		return -1;
	}
	if (ag.heap == HEAP_WATCH && heap_count_init() < 0) {
		ag.heap = HEAP_OFF;
		ag.arena = NULL;
		return -1;
	}
	h.page_units = ag.heap == HEAP_CHECK && ulpt_backend() == ULPT_BACKEND_MPROTECT;
	/* Byte bounds on the CPU only: on mprotect every access to a page with a denied line
	 * faults anyway, and --check gives blocks whole pages there. */
	if (ag.heap != HEAP_CHECK || ulpt_backend() != ULPT_BACKEND_ULPT)
		ag.bounds = 0;
	if (ag.bounds) {
		h.bounds = wl_mem_reserve((ARENA_BYTES >> 12) * sizeof(struct ulpt_bounds));
		if (!h.bounds)
			ag.bounds = 0;          /* no address space: partial lines decided by faults */
	}
	if (h.page_units) {
		long maps = 65530;
		int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
		char buf[32] = "";
		if (fd >= 0) {
			if (read(fd, buf, sizeof(buf) - 1) > 0)
				maps = strtol(buf, NULL, 10);
			close(fd);
		}
		h.max_page_blocks = maps > 20000 ? (uint32_t)((maps - 16384) / 2) : 2000;
	}
	/* The arena's first page stays unused: line 0 and block id 0 mean "none". */
	h.bump_line = 4096 / LINE_BYTES;
	h.nblocks = 1;
	in_agent++;
	pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
	in_agent--;
	return 0;
}

/* mprotect failed: the kernel's limit on mappings (vm.max_map_count, 65530 by default), which
 * one page of rights per block reaches near 32,000 blocks. Blocks from now on come from glibc,
 * unchecked, and the program goes on; the user is told once. */
static void degrade(void)
{
	static const char msg[] = "ulpt-watch agent: the mprotect backend is out of mappings "
				  "(vm.max_map_count): blocks allocated from now on are not checked\n";

	if (!h.degraded && write(agent_err_fd(), msg, sizeof(msg) - 1) < 0) {
		/* stderr is gone */
	}
	h.degraded = 1;
}

/* The lines [a, b) that fall in the page of lines [pl, pl + 32), as a line word's mask. */
static inline __attribute__((always_inline)) uint64_t span_mask(uint32_t a, uint32_t b,
								 uint32_t pl)
{
	uint32_t s = a > pl ? a - pl : 0, e = b > pl ? b - pl : 0;

	if (e > 32)
		e = 32;
	return e > s ? (~0ull >> (64 - 2 * (e - s))) << (2 * s) : 0;
}

/*
 * Lines [first, first + n) get the rights base, and those of them in [lo, hi) the rights in:
 * each page's line word is computed whole, from the page's word as last stored (h.words), and
 * stored to the view (an mprotect on that backend) only when it changes: a slot reused by a
 * block of the same layout costs no store. A page whose first denied line appears gets
 * ULPT_DENY_LOG when the accesses are logged or counted (a load of its rights otherwise never
 * repeated). Called with the lock held.
 */
static void set_slot(uint32_t first, uint32_t n, unsigned base, uint32_t lo, uint32_t hi,
		     unsigned in)
{
	const uint64_t pb = base * 0x5555555555555555ull, pi = in * 0x5555555555555555ull;
	uint32_t end = first + n;

	for (uint32_t pl = first & ~31u; pl < end; pl += 32) {
		uint64_t ms = span_mask(first, end, pl), mi = span_mask(lo, hi, pl) & ms;
		uint64_t old = h.words[pl >> 5], w = (old & ~ms) | (pb & ms & ~mi) | (pi & mi);
		char *page;

		if (w == old)
			continue;
		page = ag.arena + ((uintptr_t)pl << LINE_SHIFT);
		if (!old && (ag.heap_log || ag.heap_count)) {
			int pr = ulpt_page_rights(page);
			if (pr >= 0 && !(pr & ULPT_DENY_LOG) && ulpt_page_deny(page, pr | ULPT_DENY_LOG) < 0)
				degrade();
		}
		/* The page's bounds, once: from then on only their bytes change (block_bounds). */
		if (!old && ag.bounds && ulpt_page_bounds(page, &h.bounds[pl >> 5]) < 0)
			degrade();
		h.words[pl >> 5] = w;
		if (ulpt_page_lines(page, w) < 0)
			degrade();
	}
}

/* Sets the rights of n arena lines from first; called with the lock held. */
void heap_set_lines(uint32_t first, uint32_t n, unsigned deny)
{
	set_slot(first, n, deny, 0, 0, 0);
}

/*
 * --check: the arena the allocator has not handed out is denied, as ASan poisons its
 * allocator's unused memory and memcheck its unallocated heap, so that a far overflow or a
 * wild pointer landing there is reported (against the nearest block: fault.c). The arena's
 * first page (line 0 is "none") is denied once, and the lines from the bump pointer on are
 * kept denied UNUSED_AHEAD ahead of it, extended a quarter of that at a time as it moves:
 * 256 page stores per MiB the heap grows, where denying all of the arena's reserve would
 * commit its whole table. Past that, far in the reserve, accesses stay unseen. This is
 * also the last block's right red zone. Called with the lock held, after the bump pointer
 * moved.
 */
#define UNUSED_AHEAD (1u << (20 - LINE_SHIFT))          /* 1 MiB of lines */

static void deny_unused(void)
{
	const uint32_t lim = (uint32_t)(ARENA_BYTES >> LINE_SHIFT);
	uint32_t end;

	if (ag.heap != HEAP_CHECK || h.degraded)
		return;
	if (!h.unused_end) {
		heap_set_lines(0, 4096 / LINE_BYTES, ULPT_DENY_RW);
		h.unused_end = 4096 / LINE_BYTES;
	}
	if (h.bump_line + UNUSED_AHEAD - UNUSED_AHEAD / 4 <= h.unused_end)
		return;
	end = (h.bump_line + UNUSED_AHEAD + 31) & ~31u;
	if (end > lim)
		end = lim;
	if (h.unused_end < h.bump_line)
		h.unused_end = h.bump_line;
	if (end > h.unused_end)
		heap_set_lines(h.unused_end, end - h.unused_end, ULPT_DENY_RW);
	h.unused_end = end;
}

static uint32_t new_id(void)
{
	uint32_t id;

	if (h.free_ids) {
		id = h.free_ids;
		h.free_ids = ag.blocks[id].next;
		return id;
	}
	return h.nblocks < MAX_BLOCKS ? h.nblocks++ : 0;
}

/*
 * A slot of `lines` lines (red zone included) and its block id: a recycled slot keeps the id
 * of the block that had it, so that owner[] of its lines is already right (slots are never
 * split or merged); new arena gets a new id, and *fresh is set: its owner[] entries are to be
 * written, and its bytes have never been written. 0: no id or no arena left.
 */
static uint32_t take_slot(uint32_t lines, uint32_t *first, int *fresh)
{
	unsigned k = lines < SMALL_SLOTS ? lines : SMALL_SLOTS;
	uint32_t *pp = &h.free_slots[k], id;

	for (id = *pp; id; pp = &ag.blocks[id].next, id = *pp) {
		if (ag.blocks[id].lines == lines) {
			*pp = ag.blocks[id].next;
			*first = ag.blocks[id].first_line;
			*fresh = 0;
			return id;
		}
		if (k < SMALL_SLOTS)
			break;
	}
	if ((uint64_t)h.bump_line + lines > (ARENA_BYTES >> LINE_SHIFT) || !(id = new_id()))
		return 0;
	*first = h.bump_line;
	h.bump_line += lines;
	*fresh = 1;
	return id;
}

/* A freed block's slot gives back the pages wholly inside it (the addresses stay reserved):
 * in the quarantine its bytes are never read (every line is denied), and a reused slot's
 * bytes are undefined, as malloc's are. Slots of less than a page keep theirs. */
static void drop_pages(const struct blk *b)
{
	uintptr_t lo = (uintptr_t)ag.arena + ((uintptr_t)b->first_line << LINE_SHIFT);
	uintptr_t hi = lo + ((uintptr_t)b->lines << LINE_SHIFT);

	lo = (lo + 4095) & ~(uintptr_t)4095;
	hi &= ~(uintptr_t)4095;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void give_slot(uint32_t id)
{
	struct blk *b = &ag.blocks[id];
	unsigned k = b->lines < SMALL_SLOTS ? b->lines : SMALL_SLOTS;

	b->state = BLK_NONE;
	b->next = h.free_slots[k];
	h.free_slots[k] = id;
}

static unsigned natural_align(size_t size)
{
	unsigned a = 16;

	while (a > 8 && (size & (a - 1)))
		a >>= 1;
	return a;
}

/* The rights a live block's lines get: with --check every line of the slot is a red zone
 * except those wholly inside the block (partial lines are told apart in the fault handler);
 * with --heap the lines that hold the block deny the watched kinds. */
static void protect_live(const struct blk *b)
{
	uintptr_t base = (uintptr_t)ag.arena, end = b->user + b->size;
	uint32_t in_lo = (uint32_t)((b->user - base + LINE_BYTES - 1) >> LINE_SHIFT);
	uint32_t in_hi = (uint32_t)((end - base) >> LINE_SHIFT);       /* lines [in_lo, in_hi) */

	/* The whole slot's rights at once, each page's word stored once. */
	if (ag.heap == HEAP_WATCH) {
		uint32_t lo = line_of(b->user), hi = line_of(end + LINE_BYTES - 1);
		set_slot(b->first_line, b->lines, 0, lo, b->size ? hi : lo, ag.heap_kinds);
	} else if (h.page_units) {
		/* Every page that holds block bytes stays open; the red zone is whole pages. */
		uint32_t lo = line_of(b->user) & ~31u, hi = (line_of(end + 4095) & ~31u);
		set_slot(b->first_line, b->lines, ULPT_DENY_RW, lo, b->size ? hi : lo, 0);
	} else {
		if (!exact_lines()) {
			/* The first line, slack and all; the last, with the alignment padding. */
			in_lo = line_of(b->user);
			in_hi = (uint32_t)((end - base + LINE_BYTES - 1) >> LINE_SHIFT);
		}
		set_slot(b->first_line, b->lines, ULPT_DENY_RW, in_lo,
			 b->size && in_hi > in_lo ? in_hi : in_lo, 0);
	}
}

/*
 * Byte bounds (docs/spec.md 4.5): a block's partial first and last lines are denied
 * (exact_lines), and their bounds open the block's own bytes there, so the program's accesses
 * to its block never fault and one byte before or after it does, reads included. A line
 * belongs to one slot, so its bounds are its block's: opened at allocation, closed (0, 0) at
 * free, before the slot waits in the quarantine. Plain stores: the CPU reads bounds at each
 * access and keeps no copy.
 */
static void line_bounds(uintptr_t off, unsigned lo, unsigned hi)
{
	uint8_t *e = h.bounds[off >> 12].line[(off >> LINE_SHIFT) & 31];

	e[0] = (uint8_t)lo;
	e[1] = (uint8_t)hi;
}

static void block_bounds(const struct blk *b, int open)
{
	uintptr_t u = b->user - (uintptr_t)ag.arena, e = u + b->size;
	uintptr_t l1 = u >> LINE_SHIFT, l2 = (e - 1) >> LINE_SHIFT;

	if (!ag.bounds || !b->size)
		return;                 /* malloc(0): every byte stays a red zone */
	if ((u & (LINE_BYTES - 1)) || (l1 == l2 && (e & (LINE_BYTES - 1))))
		line_bounds(u, open ? u & (LINE_BYTES - 1) : 0,
			    !open ? 0 : l1 == l2 ? ((e - 1) & (LINE_BYTES - 1)) + 1 : LINE_BYTES);
	if (l2 != l1 && (e & (LINE_BYTES - 1)))
		line_bounds(e - 1, 0, open ? e & (LINE_BYTES - 1) : 0);
}

#define CANARY 0xcb

/* The open bytes around a block that hold the canary: [*lo, user) and [user + size, *hi). */
static int canary_span(const struct blk *b, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t end = b->user + b->size;

	if (ag.heap != HEAP_CHECK || (exact_lines() && !h.page_units) || !b->size)
		return 0;               /* exact: those bytes are denied (and malloc(0) has none) */
	*lo = b->user & ~(uintptr_t)(LINE_BYTES - 1);
	*hi = (end + LINE_BYTES - 1) & ~(uintptr_t)(LINE_BYTES - 1);
	return 1;
}

/* [lo, hi) := the canary, with general-register stores: libc's memset would store with
 * vector registers, which on a page with line rights QEMU checks in a helper call each. */
static void canary_set(uintptr_t lo, uintptr_t hi)
{
	const uint64_t pat = 0x0101010101010101ull * CANARY;

	for (; lo < hi && (lo & 7); lo++)
		*(volatile uint8_t *)lo = CANARY;
	for (; lo + 8 <= hi; lo += 8)
		*(volatile uint64_t *)lo = pat;
	for (; lo < hi; lo++)
		*(volatile uint8_t *)lo = CANARY;
}

static void canary_fill(const struct blk *b)
{
	uintptr_t lo, hi;

	if (!canary_span(b, &lo, &hi))
		return;
	canary_set(lo, b->user);
	canary_set(b->user + b->size, hi);
}

/* The first byte of [lo, hi) that is not the canary, or 0: eight at a time (this runs at
 * every free, over up to 254 bytes). */
static uintptr_t canary_first_bad(uintptr_t lo, uintptr_t hi)
{
	const uint64_t pat = 0x0101010101010101ull * CANARY;

	for (; lo < hi && (lo & 7); lo++)
		if (*(const volatile uint8_t *)lo != CANARY)
			return lo;
	for (; lo + 8 <= hi; lo += 8)
		if (*(const volatile uint64_t *)lo != pat)
			break;
	for (; lo < hi; lo++)
		if (*(const volatile uint8_t *)lo != CANARY)
			return lo;
	return 0;
}

/* The first changed canary byte of a live block (and how many follow it changed), or 0. */
static uintptr_t canary_damage(const struct blk *b, size_t *n)
{
	uintptr_t lo, hi, a = 0;
	const volatile uint8_t *p;

	if (b->overflowed || !canary_span(b, &lo, &hi))
		return 0;
	a = canary_first_bad(lo, b->user);
	if (!a)
		a = canary_first_bad(b->user + b->size, hi);
	if (!a)
		return 0;
	for (p = (const uint8_t *)a, *n = 0; (uintptr_t)p < hi && (uintptr_t)p != b->user && *p != CANARY; p++)
		++*n;
	return a;
}

static void canary_report(uint32_t id, uintptr_t a, size_t n, const char *found)
{
	struct err e = {
		.kind = ERR_OVERFLOW, .access = WL_WRITE, .addr = a, .size = n,
		.tid = agent_tid(), .block = id, .found = found,
	};
	in_agent++;
	report_error(&e);
	in_agent--;
}

void heap_check_canaries(void)
{
	for (uint32_t id = 1; id < h.nblocks; id++) {
		const struct blk *b = &ag.blocks[id];
		size_t n = 0;
		uintptr_t a = b->state == BLK_LIVE ? canary_damage(b, &n) : 0;

		if (a)
			canary_report(id, a, n, "exit");
	}
}

/*
 * Red zones grow with the block, as ASan's do (its ComputeRZLog), in whole lines: one line
 * up to 4 KiB - 128 bytes, then 2, 4 and 8 lines, and 16 lines (2 KiB) from 64 KiB - 1024 on.
 * A block of more than one line's zone gets it on both sides, in its own slot: an overflow
 * within its zone lands in lines it owns and is told as its own, not as an underflow of the
 * next block (small blocks share one line between neighbours).
 */
static uint32_t rz_lines(size_t need)
{
	if (need <= 4096 - 128)
		return 1;
	if (need <= (16 << 10) - 256)
		return 2;
	if (need <= (32 << 10) - 512)
		return 4;
	if (need <= (64 << 10) - 1024)
		return 8;
	return 16;
}

/*
 * A request the allocator cannot serve (an overflowing calloc or reallocarray, a size beyond
 * the arena's limit, no arena left): NULL with ENOMEM and a warning on the report stream, as
 * ASan's allocator_may_return_null=1; the program decides what to do with NULL.
 */
static void *refuse(const char *call, size_t n, size_t m)
{
	char msg[160];
	int k;

	if (m)
		k = snprintf(msg, sizeof(msg), "==%d== WARNING: ulpt-watch: %s(%zu, %zu) overflows "
			     "the size: NULL, ENOMEM\n", (int)getpid(), call, n, m);
	else
		k = snprintf(msg, sizeof(msg), "==%d== WARNING: ulpt-watch: %s of %zu bytes cannot "
			     "be served: NULL, ENOMEM\n", (int)getpid(), call, n);
	if (k > 0 && write(agent_err_fd(), msg, (size_t)k) < 0) {
		/* the report stream is gone */
	}
	errno = ENOMEM;
	return NULL;
}

static void *heap_alloc(size_t size, size_t align, int zero, enum alloc_how how)
{
	uint32_t id, first, lines, rz, z = 1, tail = 0;
	int fresh;
	size_t need, a;
	uintptr_t start, user, end;

	if (size > (ARENA_BYTES >> 4))
		return refuse(how == HOW_MALLOC ? "malloc" : "operator new", size, 0);
	a = ag.align ? ag.align : natural_align(size);
	if (align > a)
		a = align;
	need = (size + a - 1) & ~(a - 1);
	if (!need)
		need = a < 16 ? 16 : a;     /* malloc(0): a unique pointer, every byte a red zone */
	/* --check: a red-zone line before the block. With --redzone=exact (and on mprotect's
	 * whole pages), a block whose first line has bytes before it needs none: those bytes,
	 * denied with the line, are its left red zone and the previous block's right one.
	 * Alignments above a line: red-zone lines enough to place the block on a multiple. */
	rz = !(need & (LINE_BYTES - 1));
	if (ag.heap == HEAP_CHECK && !h.page_units) {
		z = rz_lines(need);
		tail = z > 1 ? z : 0;
		if (!ag.redzone_exact || ag.precise || z > 1)
			rz = z;
	}
	if (a > LINE_BYTES)
		rz = z + (uint32_t)(a / LINE_BYTES) - 1;
	lines = rz + (uint32_t)((need + LINE_BYTES - 1) / LINE_BYTES) + tail;
	/* mprotect: whole pages (see the top); the slot is rounded to pages, red zone first. */
	if (h.page_units)
		lines = (lines + 31 + 32) & ~31u;

	if (ag.heap == HEAP_CHECK)
		heap_log_sync();    /* --precise: its records, before a quarantined slot is reused */
	in_agent++;
	heap_lock();
	/* mprotect: each block costs up to two mappings; stop before the kernel's limit, leaving
	 * room for the program's own (see degrade). */
	if (h.page_units && h.nblocks >= h.max_page_blocks) {
		degrade();
		heap_unlock();
		in_agent--;
		return __libc_memalign(align ? align : 16, size);
	}
	id = take_slot(lines, &first, &fresh);
	if (!id) {
		heap_unlock();
		in_agent--;
		return refuse(how == HOW_MALLOC ? "malloc" : "operator new", size, 0);   /* full */
	}
	/* The slot after the last one does not exist yet: its red zone, the memory not handed
	 * out, must already be denied. */
	deny_unused();
	start = (uintptr_t)ag.arena + ((uintptr_t)first << LINE_SHIFT);
	end = start + ((uintptr_t)(lines - tail) << LINE_SHIFT);
	user = end - need;
	if (a > LINE_BYTES) {
		user = (start + ((uintptr_t)z << LINE_SHIFT) + a - 1) & ~(uintptr_t)(a - 1);
		if (user + need > end)
			user -= a;
	}
	struct blk *b = &ag.blocks[id];
	*b = (struct blk){ .user = user, .size = size, .first_line = first, .lines = lines,
			   .state = BLK_LIVE, .alloc_tid = agent_tid(), .how = (uint8_t)how };
	if (fresh) {
		/* Plain stores (a loop the compiler may widen), made visible before the block's
		 * address is: a thread looks a line up only once it has the block. */
		for (uint32_t l = first; l < first + lines; l++)
			ag.owner[l] = id;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		/* Of new arena only the lines on the page of earlier slots can have counts (on
		 * mprotect a page with a denied line is watched whole): false faults. */
		if (ag.heap_count && (first & 31))
			heap_count_false(first, lines < 32 - (first & 31) ? lines : 32 - (first & 31));
	} else if (ag.heap_count) {
		heap_count_take(id, COUNT_FALSE);   /* since the slot was freed */
	}
	/* calloc's zeroes are written while every line is open, then the rights go on. On
	 * mprotect the page stays denied for its other lines: the stores are logged or counted
	 * there, and dropped as the agent's own. New arena is zero already (nothing wrote it
	 * since it was mapped): no clearing. */
	if (zero && !fresh) {
		heap_set_lines(first, lines, 0);
		heap_log_own(1);
		memset((void *)user, 0, need);
		heap_log_own(0);
		if (ag.heap_count)
			heap_count_take(id, COUNT_OWN);
	}
	block_bounds(b, 1);             /* before the lines are denied: the block stays usable */
	protect_live(b);
	if (ag.heap == HEAP_CHECK)
		canary_fill(b);
	ag.heap_allocs++;
	heap_unlock();
	in_agent--;
	if (ag.heap == HEAP_CHECK) {
		in_agent++;
		b->alloc_stack = stack_capture();
		in_agent--;
	}
	return (void *)user;
}

/* The live block that starts at p, or 0. */
static uint32_t block_at(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	uint32_t id = slot_id_of(a);

	return id && ag.blocks[id].user == a ? id : 0;
}

static void bad_free(enum err_kind kind, const void *p, uint32_t id)
{
	struct err e = {
		.kind = kind, .access = 0, .addr = (uintptr_t)p, .size = 0,
		.ip = (uintptr_t)__builtin_return_address(0), .tid = agent_tid(),
		.block = id,
	};
	in_agent++;
	report_error(&e);
	in_agent--;
}

/* The names ASan's reports give the families. */
static const char *const how_alloc[] = { "malloc", "operator new", "operator new []" };
static const char *const how_free[] = { "free", "operator delete", "operator delete []" };

/* A release of block id (at p) by the wrong family: reported with both stacks, as ASan's
 * alloc-dealloc-mismatch; the block is then freed all the same. */
static void check_family(uint32_t id, const void *p, enum alloc_how how)
{
	static char pair[3][3][48];
	const struct blk *b = &ag.blocks[id];

	if (ag.heap != HEAP_CHECK || b->state != BLK_LIVE || b->how == how)
		return;
	char *t = pair[b->how][how];
	if (!*t)
		snprintf(t, sizeof(pair[0][0]), "%s vs %s", how_alloc[b->how], how_free[how]);
	struct err e = {
		.kind = ERR_MISMATCH, .access = 0, .addr = (uintptr_t)p, .tid = agent_tid(),
		.block = id, .pair = t,
	};
	in_agent++;
	report_error(&e);
	in_agent--;
}

/* Frees a block; why names the call for a canary found changed ("free" or "realloc"), how
 * the releasing family (NO_FAMILY_CHECK: none, for realloc and the agent's own). */
#define NO_FAMILY_CHECK (-1)
static void heap_free(void *p, const char *why, int how)
{
	uint32_t id = block_at(p);
	struct blk *b;

	if (!id) {
		uintptr_t a = (uintptr_t)p;
		uint32_t near = slot_id_of(a);
		bad_free(ERR_INVALID_FREE, p, near);
		return;
	}
	if (how != NO_FAMILY_CHECK)
		check_family(id, p, (enum alloc_how)how);
	heap_log_sync();            /* the accesses so far, against the block as it was */
	in_agent++;
	heap_lock();
	b = &ag.blocks[id];
	if (b->state != BLK_LIVE) {
		heap_unlock();
		in_agent--;
		bad_free(ERR_DOUBLE_FREE, p, id);
		return;
	}
	size_t dn = 0;
	uintptr_t damage = ag.heap == HEAP_CHECK ? canary_damage(b, &dn) : 0;
	b->state = BLK_FREED;
	b->free_tid = agent_tid();
	if (ag.heap == HEAP_WATCH) {
		/* The slot keeps its rights: the next block of its size usually has the same lines
		 * watched (no store then, protect_live). The program's accesses to it meanwhile
		 * are false faults with every delivery (taken at reuse and at exit). */
		if (ag.heap_count)
			heap_count_take(id, COUNT_BLOCK);
		if (b->lines >= 64)
			drop_pages(b);      /* small ones are reused soon: keep their pages */
		give_slot(id);
	} else {
		heap_set_lines(b->first_line, b->lines, ULPT_DENY_RW);
		block_bounds(b, 0);     /* after: no moment with its partial lines wholly open */
		drop_pages(b);
		b->next = 0;
		if (h.q_tail)
			ag.blocks[h.q_tail].next = id;
		else
			h.q_head = id;
		h.q_tail = id;
		h.q_bytes += (uint64_t)b->lines << LINE_SHIFT;
		while (h.q_bytes > QUARANTINE_BYTES && h.q_head) {
			uint32_t old = h.q_head;
			h.q_head = ag.blocks[old].next;
			if (!h.q_head)
				h.q_tail = 0;
			h.q_bytes -= (uint64_t)ag.blocks[old].lines << LINE_SHIFT;
			give_slot(old);
		}
	}
	heap_unlock();
	in_agent--;
	if (ag.heap == HEAP_CHECK) {
		in_agent++;
		b->free_stack = stack_capture();
		in_agent--;
	}
	if (damage)
		canary_report(id, damage, dn, why);
}

/* --- the malloc family ---------------------------------------------------------------------
 * The lock is released before in_agent drops: a signal handler that allocates in between
 * would otherwise wait for a lock its own thread holds. */

/*
 * A free of a heap block while the thread is in the agent comes from a signal handler that
 * interrupted it (the agent's own memory is watchlib's), and heap_free would wait for the
 * locks its thread may hold (the heap's, the depot's, libunwind's): such frees wait here, in a
 * table that takes them without a lock, and the next call of the malloc family outside the
 * agent, by any thread, or the process's end (heap_flush_deferred) does them. A full table
 * leaves the block live.
 */
#define DEFERRED 256
static void *deferred[DEFERRED];
static int ndeferred;

static void defer_free(void *p)
{
	for (int i = 0; i < DEFERRED; i++) {
		void *none = NULL;
		if (__atomic_compare_exchange_n(&deferred[i], &none, p, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_add_fetch(&ndeferred, 1, __ATOMIC_RELEASE);
			return;
		}
	}
}

void heap_flush_deferred(void)
{
	if (!__atomic_load_n(&ndeferred, __ATOMIC_ACQUIRE) || in_agent)
		return;
	for (int i = 0; i < DEFERRED; i++) {
		void *p = __atomic_exchange_n(&deferred[i], NULL, __ATOMIC_ACQ_REL);
		if (p) {
			__atomic_sub_fetch(&ndeferred, 1, __ATOMIC_RELEASE);
			heap_free(p, "free", NO_FAMILY_CHECK);
		}
	}
}

static int active(void)
{
	decide();
	heap_flush_deferred();
	return ag.heap != HEAP_OFF && !in_agent && !h.degraded;
}

void *malloc(size_t n)
{
	if (in_agent)
		return wl_mem_alloc(n);
	if (!active())
		return __libc_malloc(n);
	return heap_alloc(n, 0, 0, HOW_MALLOC);
}

int heap_serves(void)
{
	return !in_agent && active();
}

void *heap_new(size_t n, size_t align, enum alloc_how how)
{
	return heap_alloc(n, align, 0, how);
}

/* Releases p by the family how (NO_FAMILY_CHECK inside the agent). */
static void release(void *p, int how)
{
	int e = errno;

	if (!in_agent) {
		decide();           /* a free before any malloc is still checked */
		heap_flush_deferred();
	}
	if (h.state == 2 && ag.heap != HEAP_OFF && in_arena((uintptr_t)p) && in_agent)
		defer_free(p);      /* a signal handler's, inside the agent (above) */
	else if (h.state == 2 && ag.heap != HEAP_OFF && in_arena((uintptr_t)p))
		heap_free(p, "free", how);
	else if (wl_mem_owns(p))
		wl_mem_free(p);
	else if (h.state == 2 && ag.heap != HEAP_OFF && !h.degraded)
		heap_free(p, "free", how);      /* reports the invalid free */
	else
		__libc_free(p);
	errno = e;
}

void heap_delete(void *p, enum alloc_how how)
{
	if (p)
		release(p, in_agent ? NO_FAMILY_CHECK : (int)how);
}

void free(void *p)
{
	heap_delete(p, HOW_MALLOC);
}

void *calloc(size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m) {
		if (!in_agent && h.state == 2 && ag.heap == HEAP_CHECK)
			return refuse("calloc", n, m);
		errno = ENOMEM;
		return NULL;
	}
	if (in_agent)
		return wl_mem_alloc(n * m);
	if (!active())
		return __libc_calloc(n, m);
	return heap_alloc(n * m, 0, 1, HOW_MALLOC);
}

/* Around realloc's copy from block id to q: before it, the program's counts of id so far;
 * after it, the copy's own, of both blocks (q may be glibc's once degraded). */
static void count_own(uint32_t id, const void *q, int begin)
{
	uint32_t qid;
	/* Only the copy's reads touch the old block's counters: without reads watched they are
	 * left to the free that follows. */
	int reads = ag.heap_kinds & ULPT_DENY_R;

	if (begin) {
		if (reads) {
			heap_lock();
			heap_count_take(id, COUNT_BLOCK);
			heap_unlock();
		}
		return;
	}
	if (reads)
		heap_count_take(id, COUNT_OWN);
	if ((qid = block_at(q)))
		heap_count_take(qid, COUNT_OWN);
}

void *realloc(void *p, size_t n)
{
	uint32_t id;
	void *q;

	if (!p)
		return malloc(n);
	if (!in_agent)
		decide();
	if (!(h.state == 2 && ag.heap != HEAP_OFF && in_arena((uintptr_t)p))) {
		if (wl_mem_owns(p))
			return wl_mem_realloc(p, n);
		if (h.state == 2 && ag.heap != HEAP_OFF && !h.degraded && !in_agent) {
			heap_free(p, "free", NO_FAMILY_CHECK);  /* not ours: an invalid free */
			return NULL;
		}
		return __libc_realloc(p, n);
	}
	if (!n) {
		free(p);            /* glibc frees and returns NULL */
		return NULL;
	}
	id = block_at(p);
	if (!id || ag.blocks[id].state != BLK_LIVE) {
		release(p, NO_FAMILY_CHECK);    /* invalid or double free (deferred in the agent) */
		return NULL;
	}
	q = malloc(n);              /* from glibc once degraded; the agent's memory in the agent */
	if (!q)
		return NULL;
	in_agent++;                 /* the copy is the agent's access, not the program's */
	heap_log_own(1);
	if (ag.heap_count)
		count_own(id, q, 1);
	memcpy(q, p, ag.blocks[id].size < n ? ag.blocks[id].size : n);
	heap_log_own(0);
	if (ag.heap_count)
		count_own(id, q, 0);
	in_agent--;
	/* A signal handler's realloc while its thread is in the agent (holding the heap lock)
	 * frees the old block as its free does: deferred, without the lock. */
	if (in_agent)
		defer_free(p);
	else
		heap_free(p, "realloc", NO_FAMILY_CHECK);
	return q;
}

void *reallocarray(void *p, size_t n, size_t m)
{
	if (m && n > SIZE_MAX / m) {
		if (!in_agent && h.state == 2 && ag.heap == HEAP_CHECK)
			return refuse("reallocarray", n, m);
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n * m);
}

static int pow2(size_t a)
{
	return a && !(a & (a - 1));
}

static void *aligned(size_t align, size_t n)
{
	if (in_agent) {
		/* watchlib's classes are powers of two with a 16-byte header: over-allocate. */
		if (align <= 16)
			return wl_mem_alloc(n);
		return NULL;
	}
	if (!active())
		return __libc_memalign(align, n);
	return heap_alloc(n, align, 0, HOW_MALLOC);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (!pow2(align) || align % sizeof(void *))
		return EINVAL;
	p = aligned(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	if (!pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, n);
}

void *memalign(size_t align, size_t n)
{
	if (!pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, n);
}

void *valloc(size_t n)
{
	return aligned(4096, n);
}

void *pvalloc(size_t n)
{
	return aligned(4096, (n + 4095) & ~(size_t)4095);
}

size_t malloc_usable_size(void *p)
{
	uint32_t id;

	if (!p)
		return 0;
	if (wl_mem_owns(p))
		return wl_mem_usable(p);
	if (h.state != 2 || ag.heap == HEAP_OFF || !in_arena((uintptr_t)p)) {
		/* glibc's own; dlsym may allocate, which goes to glibc here (no recursion). */
		static size_t (*libc_usable)(void *);
		if (!libc_usable)
			libc_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
		return libc_usable ? libc_usable(p) : 0;
	}
	id = block_at(p);
	if (id && ag.blocks[id].state == BLK_LIVE)
		return ag.blocks[id].size;
	if (ag.heap == HEAP_CHECK && !in_agent) {
		/* Not a live block's start: reported, as ASan's bad-malloc_usable_size. */
		uint32_t near = __atomic_load_n(&ag.owner[line_of((uintptr_t)p)], __ATOMIC_ACQUIRE);
		struct err e = {
			.kind = ERR_BAD_USABLE, .addr = (uintptr_t)p, .tid = agent_tid(),
			.block = near, .fn = "malloc_usable_size",
		};
		in_agent++;
		report_error(&e);
		in_agent--;
	}
	return 0;
}
