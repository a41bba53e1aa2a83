/*
 * Leaks at a process's end (--check, the leaks option), found as LeakSanitizer and memcheck
 * find them: a live block no pointer reaches is lost.
 *
 *  1. Roots: every readable and writable mapping of the process (/proc/self/maps), as
 *     memcheck's root set: the data and bss of every loaded object, every thread's stack
 *     (whole; this thread's from its stack pointer up) and static TLS, the program's own
 *     mmap'd memory (an interpreter's object arenas), glibc's heap from before the agent
 *     started; minus what is the agent's: watchlib's mappings (the arena itself, the block
 *     table, the stack depot), the ULPT table view, the agent's own data. This thread's
 *     registers are spilled onto its stack first. Memory is read through /proc/self/mem, so
 *     a page the program or ulpt-watch denies (a -w watch) or a mapping past its file's end
 *     cannot fault; no ptrace, so it works under a debugger too. Pages of anonymous memory
 *     that were never written (/proc/self/pagemap) are skipped, in roots and blocks alike.
 *  2. Every aligned word that points into a live block's bytes (its start or inside it)
 *     marks that block reachable, and the marked blocks are scanned in turn.
 *  3. A block left unmarked that another unmarked block points to is indirectly lost; the
 *     others are directly ("definitely") lost. Pointers of a block to itself do not count.
 *     In a lost cycle the block found first stays direct and the others are indirect, as
 *     memcheck's clique leaders (LeakSanitizer calls the whole cycle indirect, so that a
 *     leaked ring goes unreported by default).
 *  4. The lost blocks are grouped by allocation stack, largest total first, and reported in
 *     LeakSanitizer's format ("Direct leak of N byte(s) in M object(s) allocated from:").
 *
 * Other threads are not stopped: one still running at exit may change the heap under the
 * scan, and a pointer held only in its registers is not seen (memcheck and LeakSanitizer stop
 * them). leaks=definite reports the direct leaks, leaks=all the indirect ones too; direct
 * leaks count as errors (error_exitcode).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"

enum { UNSEEN, REACHABLE, INDIRECT };
#define SCANNED 4

static struct {
	uint8_t *mark;              /* per block id: UNSEEN, REACHABLE, INDIRECT, | SCANNED */
	uint32_t *work, nwork, cap;
	uint32_t nblocks;
	int memfd;
	int pagemap;                /* /proc/self/pagemap, or -1 */
	uint8_t *buf;               /* a chunk read from /proc/self/mem */
	uintptr_t view;             /* the ULPT table view (a mapping never scanned) */
	uint32_t source;            /* the block being scanned (its pointers to itself skip) */
	uint32_t leader;            /* the lost block the indirect ones are being found from */
} lk;

#define CHUNK (64u << 10)

static void push(uint32_t id)
{
	if (lk.nwork < lk.cap)
		lk.work[lk.nwork++] = id;
}

/* One word: marks the live block it points into (its start or inside it), if any. */
static inline __attribute__((always_inline)) void mark_word(uintptr_t v, int tag)
{
	uint32_t id;
	const struct blk *b;

	if (!in_arena(v))
		return;
	id = __atomic_load_n(&ag.owner[line_of(v)], __ATOMIC_RELAXED);
	if (!id || id >= lk.nblocks || id == lk.source || id == lk.leader || lk.mark[id] & 3)
		return;
	b = &ag.blocks[id];
	if (b->state != BLK_LIVE || v < b->user || v - b->user >= (b->size ? b->size : 1))
		return;
	lk.mark[id] = (uint8_t)tag;
	push(id);
}

/*
 * The aligned words of [p, p + n) (memory already readable here). Most words point nowhere
 * near the arena: four at a time are first compared, by their bits from 36 up, with the
 * arena's (ARENA_BYTES is 2^36, so its words have one of two such values), in SSE2 registers,
 * and only a group with a candidate is looked at word by word: a third of the instructions
 * of a word-by-word scan, which a program with a large heap (xz) spent most of its check on.
 */
#define ARENA_SHIFT 36
_Static_assert(ARENA_BYTES == 1ull << ARENA_SHIFT, "the arena's high bits");
static void scan_words(const uintptr_t *p, size_t n, int tag)
{
	const uintptr_t a = (uintptr_t)ag.arena;
	const size_t nw = n / sizeof(*p);
	size_t i = 0;

	if (!a)
		return;
	const __m128i k0 = _mm_set_epi32(0, (int)(a >> ARENA_SHIFT), 0, (int)(a >> ARENA_SHIFT));
	const __m128i k1 = _mm_add_epi32(k0, _mm_set_epi32(0, 1, 0, 1));

	for (; i + 4 <= nw; i += 4) {
		__m128i x = _mm_srli_epi64(_mm_loadu_si128((const __m128i *)(p + i)), ARENA_SHIFT);
		__m128i y = _mm_srli_epi64(_mm_loadu_si128((const __m128i *)(p + i + 2)), ARENA_SHIFT);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi32(x, k0), _mm_cmpeq_epi32(x, k1)),
					 _mm_or_si128(_mm_cmpeq_epi32(y, k0), _mm_cmpeq_epi32(y, k1)));

		/* Each lane's high half compares 0 with 0: its mask bits are always set. */
		if (__builtin_expect(_mm_movemask_epi8(m) & 0x0f0f, 0))
			for (size_t k = i; k < i + 4; k++)
				mark_word(p[k], tag);
	}
	for (; i < nw; i++)
		mark_word(p[i], tag);
}

/* [lo, hi) through /proc/self/mem, in chunks; a chunk that cannot be read goes page by page
 * (a page the kernel will not give is skipped). */
static void scan_mem(uintptr_t lo, uintptr_t hi, int tag)
{
	lo = (lo + 7) & ~(uintptr_t)7;
	hi &= ~(uintptr_t)7;
	while (lo < hi) {
		size_t n = hi - lo < CHUNK ? hi - lo : CHUNK;
		ssize_t r = pread(lk.memfd, lk.buf, n, (off_t)lo);

		if (r <= 0 && n > 4096 - (lo & 4095)) {
			n = 4096 - (lo & 4095);           /* to the end of this page */
			r = pread(lk.memfd, lk.buf, n, (off_t)lo);
		}
		if (r > 0)
			scan_words((const uintptr_t *)lk.buf, (size_t)r, tag);
		lo += r > 0 ? (size_t)r : n;
	}
}

/* [lo, hi) directly (memory this thread may read) or through /proc/self/mem. */
static void scan_range(uintptr_t lo, uintptr_t hi, int tag, int direct)
{
	if (!direct) {
		scan_mem(lo, hi, tag);
		return;
	}
	lo = (lo + 7) & ~(uintptr_t)7;
	hi &= ~(uintptr_t)7;
	if (hi > lo)
		scan_words((const uintptr_t *)lo, hi - lo, tag);
}

#define SPARSE_MIN (64u << 10)
#define PM_PRESENT_OR_SWAPPED (3ull << 62)

/*
 * A private anonymous range (a block in the arena, an anonymous root): its pages that are
 * neither present nor swapped out (/proc/self/pagemap) were never written or were dropped, so
 * hold zeros and no pointer, and are skipped. Reading them would fault each one in: most of
 * the check's time on a program with big, barely used buffers (xz's match finder). Only for
 * ranges of SPARSE_MIN bytes or more (a pagemap read per range).
 */
static void scan_anon(uintptr_t lo, uintptr_t hi, int tag, int direct)
{
	uint64_t ent[512];
	uintptr_t page = lo & ~(uintptr_t)4095, run = 0;

	if (hi - lo < SPARSE_MIN || lk.pagemap < 0) {
		scan_range(lo, hi, tag, direct);
		return;
	}
	while (page < hi) {
		size_t n = (hi - page + 4095) / 4096;
		ssize_t r;

		if (n > sizeof(ent) / sizeof(ent[0]))
			n = sizeof(ent) / sizeof(ent[0]);
		r = pread(lk.pagemap, ent, n * sizeof(ent[0]), (off_t)(page / 4096 * sizeof(ent[0])));
		if (r < (ssize_t)sizeof(ent[0])) {
			scan_range(run ? run : page < lo ? lo : page, hi, tag, direct);
			return;                 /* no pagemap: the whole rest */
		}
		n = (size_t)r / sizeof(ent[0]);
		for (size_t i = 0; i < n; i++, page += 4096) {
			if (ent[i] & PM_PRESENT_OR_SWAPPED) {
				if (!run)
					run = page < lo ? lo : page;
			} else if (run) {
				scan_range(run, page, tag, direct);
				run = 0;
			}
		}
	}
	if (run)
		scan_range(run, hi, tag, direct);
}

/* The first of the agent's own ranges (watchlib's mappings, libulpt's, the agent's data) that
 * overlaps [lo, hi), in *rlo and *rhi: 1, or 0. libulpt's fault records hold the addresses of
 * accesses, which would keep a leaked block reachable, and its 160 MiB reserve for them cost
 * forty reads of /proc/self/pagemap at each check. */
static int agent_range(uintptr_t lo, uintptr_t hi, uintptr_t *rlo, uintptr_t *rhi)
{
	if (wl_mem_reserved(lo, hi, rlo, rhi) || ulpt_owned(lo, hi, rlo, rhi) == 1)
		return 1;
	if (ag.self_data[1] <= lo || ag.self_data[0] >= hi)
		return 0;
	*rlo = ag.self_data[0];
	*rhi = ag.self_data[1];
	return 1;
}

/* A root range minus the agent's own; anon: private anonymous memory (scan_anon). */
static void scan_root(uintptr_t lo, uintptr_t hi, int anon)
{
	uintptr_t rlo, rhi;

	if (lo >= hi)
		return;
	if (agent_range(lo, hi, &rlo, &rhi)) {
		scan_root(lo, rlo < lo ? lo : rlo, anon);
		scan_root(rhi > hi ? hi : rhi, hi, anon);
		return;
	}
	if (anon)
		scan_anon(lo, hi, REACHABLE, 0);
	else
		scan_mem(lo, hi, REACHABLE);
}

/* A block's bytes: directly where they are open (lines open, or opened by byte bounds; the
 * words read lie inside the block), else through /proc/self/mem (--precise and
 * --redzone=exact without bounds deny the lines it shares). */
static void scan_block(uint32_t id, int tag)
{
	const struct blk *b = &ag.blocks[id];

	lk.mark[id] |= SCANNED;
	lk.source = id;
	scan_anon(b->user, b->user + b->size, tag, !exact_lines() || ag.bounds);
	lk.source = 0;
}

static void drain(int tag)
{
	while (lk.nwork) {
		uint32_t id = lk.work[--lk.nwork];
		if (!(lk.mark[id] & SCANNED))
			scan_block(id, tag);
	}
}

/* The roots: each line of /proc/self/maps. This thread's alternate signal stack (libulpt's,
 * on mprotect) holds only the dead frames of handlers unless the scan runs on it: those
 * would keep what they pointed to reachable, as the dead frames below sp would. */
static void scan_roots(char *maps, uintptr_t sp)
{
	stack_t ss;
	uintptr_t alo = 0, ahi = 0;

	if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & (SS_DISABLE | SS_ONSTACK))) {
		alo = (uintptr_t)ss.ss_sp;
		ahi = alo + ss.ss_size;
	}
	for (char *line = maps, *next; line && *line; line = next) {
		struct maps_entry e;
		unsigned long lo, hi;
		const char *perms, *path;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!agent_maps_line(line, &e))
			continue;
		lo = e.lo;
		hi = e.hi;
		perms = e.perms;
		path = e.path;
		if (strncmp(perms, "rw", 2))
			continue;
		/* The kernel's pages, and devices (reading one may do something). */
		if (!strcmp(path, "[vvar]") || !strcmp(path, "[vsyscall]") ||
		    (!strncmp(path, "/dev/", 5) && strncmp(path, "/dev/shm/", 9) &&
		     strncmp(path, "/dev/zero", 9)))
			continue;
		if (lk.view && lk.view >= lo && lk.view < hi)
			continue;
		if (sp >= lo && sp < hi)
			lo = sp;                        /* this thread: its live frames */
		/* inode 0: private anonymous (a shared one has its shmem file's inode). */
		if (alo < hi && ahi > lo) {             /* the mapping holds the alternate stack */
			if (lo < alo)
				scan_root(lo, alo, e.ino == 0 && perms[3] == 'p');
			if (ahi < hi)
				scan_root(ahi, hi, e.ino == 0 && perms[3] == 'p');
			continue;
		}
		scan_root(lo, hi, e.ino == 0 && perms[3] == 'p');
	}
}

struct group {
	uint32_t stack;             /* depot id */
	uint32_t first;             /* a block of it */
	uint64_t bytes, count;
	int indirect;
};

static int by_bytes(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->indirect != y->indirect)
		return x->indirect - y->indirect;       /* direct leaks first */
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* This thread's registers, on its stack below the scan's start (so scanned). */
__attribute__((noinline)) static uintptr_t spill_and_find_sp(uintptr_t *regs)
{
	uintptr_t sp;

	__asm__ volatile("mov %%rbx, 0(%1)\n\tmov %%rbp, 8(%1)\n\tmov %%r12, 16(%1)\n\t"
			 "mov %%r13, 24(%1)\n\tmov %%r14, 32(%1)\n\tmov %%r15, 40(%1)\n\t"
			 "mov %%rsp, %0" : "=r"(sp) : "r"(regs) : "memory");
	return sp;
}

/* What check() opened and allocated for the scan. */
static void release(void)
{
	if (lk.memfd >= 0)
		close(lk.memfd);
	if (lk.pagemap >= 0)
		close(lk.pagemap);
	wl_mem_free(lk.mark);
	wl_mem_free(lk.work);
	wl_mem_free(lk.buf);
}

static void check(void)
{
	uintptr_t regs[6];
	uintptr_t sp;
	struct group *g = NULL;
	size_t ng = 0, cap = 0;
	uint64_t bytes = 0, objects = 0;
	char *maps;

	in_agent++;
	heap_lock();
	lk.nblocks = heap_nblocks();
	lk.mark = wl_mem_alloc(lk.nblocks);
	lk.cap = lk.nblocks;
	lk.work = wl_mem_alloc((size_t)lk.cap * sizeof(uint32_t));
	lk.buf = wl_mem_alloc(CHUNK);
	lk.memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	lk.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	lk.view = (uintptr_t)ulpt_lib_state_.view;
	maps = agent_read_file("/proc/self/maps");  /* before the scan: not a root of its own */
	if (!lk.mark || !lk.work || !lk.buf || lk.memfd < 0 || !maps) {
		heap_unlock();
		release();
		wl_mem_free(maps);
		in_agent--;
		return;                 /* nothing to say without the means */
	}
	sp = spill_and_find_sp(regs);
	scan_roots(maps, sp - 128);     /* the red zone below the stack pointer too */
	wl_mem_free(maps);
	scan_words(regs, sizeof(regs), REACHABLE);
	drain(REACHABLE);
	/* What only lost blocks reach is indirectly lost. */
	for (uint32_t id = 1; id < lk.nblocks; id++)
		if (ag.blocks[id].state == BLK_LIVE && !(lk.mark[id] & 3) && !(lk.mark[id] & SCANNED)) {
			lk.leader = id;
			scan_block(id, INDIRECT);
			drain(INDIRECT);
			lk.leader = 0;
		}
	/* Group the lost ones by allocation stack (a small table: few sites leak). */
	for (uint32_t id = 1; id < lk.nblocks; id++) {
		const struct blk *b = &ag.blocks[id];
		int ind = (lk.mark[id] & 3) == INDIRECT;
		size_t i;

		if (b->state != BLK_LIVE || (lk.mark[id] & 3) == REACHABLE || (ind && ag.leaks < 2))
			continue;
		for (i = 0; i < ng && (g[i].stack != b->alloc_stack || g[i].indirect != ind); i++)
			;
		if (i == ng) {
			if (ng == cap) {
				struct group *n = wl_mem_realloc(g, (cap = cap ? 2 * cap : 16) * sizeof(*g));
				if (!n)
					break;
				g = n;
			}
			g[ng++] = (struct group){ .stack = b->alloc_stack, .first = id, .indirect = ind };
		}
		g[i].bytes += b->size;
		g[i].count++;
	}
	heap_unlock();
	release();
	if (ng) {
		qsort(g, ng, sizeof(*g), by_bytes);
		for (size_t i = 0; i < ng; i++) {
			if (report_leak(g[i].stack, g[i].first, g[i].bytes, g[i].count, g[i].indirect))
				continue;               /* suppressed */
			bytes += g[i].bytes;
			objects += g[i].count;
		}
		report_leak_summary(bytes, objects);
	}
	wl_mem_free(g);
	in_agent--;
}

/* The check, and its time (ag.leak_ns: what the leaks option costs a run, measured within
 * the run, as the bench reports it beside the side-by-side runs). */
void leak_check(void)
{
	uint64_t t0;

	if (ag.heap != HEAP_CHECK || !ag.leaks)
		return;
	t0 = wl_mono_ns();
	check();
	ag.leak_ns = wl_mono_ns() - t0;
}
