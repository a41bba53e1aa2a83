/*
 * watchlib's own memory: watchlib runs inside fault handlers, and the ulpt-watch agent replaces
 * the program's malloc, so neither may use malloc. Blocks come from one reserved region (pages
 * are committed when first touched) in power-of-two classes of 16 bytes to 1 MiB, each with a
 * 16-byte header; larger blocks are mappings of their own. Signals are blocked while the lock is
 * held, so a signal handler that allocates (through the agent) cannot deadlock on it.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "wl-internal.h"

#define REGION_SIZE   (64ull << 30)     /* virtual only: MAP_NORESERVE */
#define MIN_SHIFT     4
#define MAX_SHIFT     20
#define HDR           16u
#define MAGIC_SMALL   0x574c4d534d414c4cull
#define MAGIC_BIG     0x574c4d4249474249ull

struct hdr {
	uint64_t magic;
	uint32_t shift;             /* class, or 0 for a mapping of its own */
	uint32_t pages;             /* a mapping's length in pages */
};

static char *region, *bump, *region_end;
static char *big, *big_bump, *big_end;      /* blocks above 1 MiB: a region of their own */
static void *freelist[MAX_SHIFT + 1];
static volatile int lock;

/* Every mapping watchlib made, so that a scan of the process's memory (the agent's leak
 * check) can leave watchlib's own out: [lo, hi), 0 where a slot is free. */
#define MAX_RESERVED 128
static uintptr_t reserved[MAX_RESERVED][2];

static void note_reserved(void *p, size_t len)
{
	for (int i = 0; i < MAX_RESERVED; i++) {
		uintptr_t zero = 0;
		if (__atomic_compare_exchange_n(&reserved[i][0], &zero, (uintptr_t)p, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&reserved[i][1], (uintptr_t)p + len, __ATOMIC_RELEASE);
			return;
		}
	}
}

/* The raw system call: the agent's own sigprocmask must not recurse through the program. */
static void block_all(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, old, 8);
}

static void restore(const sigset_t *old)
{
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, 8);
}

static void acquire(sigset_t *old)
{
	block_all(old);
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

static void release(const sigset_t *old)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	restore(old);
}

/* Held across a fork by the ulpt-watch agent's atfork handlers (heap.c), so that a forked
 * child never finds it held by a thread it does not have; signals stay blocked meanwhile. */
static sigset_t fork_mask;

void wl_mem_fork_lock(void)
{
	acquire(&fork_mask);
}

void wl_mem_fork_unlock(void)
{
	release(&fork_mask);
}

static int ensure_region(void)
{
	if (region)
		return 0;
	void *p = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	note_reserved(p, REGION_SIZE);
	region = bump = p;
	region_end = region + REGION_SIZE;
	return 0;
}

void *wl_mem_alloc(size_t n)
{
	unsigned shift = MIN_SHIFT;
	sigset_t old;
	struct hdr *h;

	if (n > (1ull << 40))
		return NULL;
	while ((1ull << shift) < n + HDR && shift <= MAX_SHIFT)
		shift++;
	if (shift > MAX_SHIFT) {
		/* From their own reserved region, so that wl_mem_owns is a range check; freed
		 * ones give their pages back, their addresses are not reused. */
		size_t len = (n + HDR + 4095) & ~(size_t)4095;
		acquire(&old);
		if (!big) {
			void *p = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p != MAP_FAILED) {
				note_reserved(p, REGION_SIZE);
				big = big_bump = p, big_end = big + REGION_SIZE;
			}
		}
		if (!big || big_bump + len > big_end) {
			release(&old);
			return NULL;
		}
		h = (struct hdr *)big_bump;
		big_bump += len;
		release(&old);
		h->magic = MAGIC_BIG;
		h->shift = 0;
		h->pages = (uint32_t)(len / 4096);
		return (char *)h + HDR;
	}
	acquire(&old);
	if (freelist[shift]) {
		h = freelist[shift];
		freelist[shift] = *(void **)((char *)h + HDR);
		release(&old);
		memset((char *)h + HDR, 0, (1ull << shift) - HDR);
	} else {
		if (ensure_region() || bump + (1ull << shift) > region_end) {
			release(&old);
			return NULL;
		}
		h = (struct hdr *)bump;
		bump += 1ull << shift;
		release(&old);
	}
	h->magic = MAGIC_SMALL;
	h->shift = shift;
	return (char *)h + HDR;
}

static struct hdr *header(void *p)
{
	return (struct hdr *)((char *)p - HDR);
}

size_t wl_mem_usable(void *p)
{
	struct hdr *h = header(p);

	return h->shift ? (1ull << h->shift) - HDR : (size_t)h->pages * 4096 - HDR;
}

int wl_mem_owns(const void *p)
{
	const char *c = p;

	if (!c)
		return 0;
	return (region && c >= region + HDR && c < bump) || (big && c >= big + HDR && c < big_bump);
}

void wl_mem_free(void *p)
{
	struct hdr *h;
	sigset_t old;

	if (!p)
		return;
	h = header(p);
	if (h->magic == MAGIC_BIG && h->shift == 0) {
		h->magic = 0;
		madvise(h, (size_t)h->pages * 4096, MADV_DONTNEED);
		return;
	}
	if (h->magic != MAGIC_SMALL)
		return;                 /* not ours: leak rather than corrupt */
	acquire(&old);
	*(void **)p = freelist[h->shift];
	freelist[h->shift] = h;
	release(&old);
}

void *wl_mem_realloc(void *p, size_t n)
{
	void *q;
	size_t have;

	if (!p)
		return wl_mem_alloc(n);
	have = wl_mem_usable(p);
	if (n <= have)
		return p;
	q = wl_mem_alloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, have);
	wl_mem_free(p);
	return q;
}

/* Reserves len bytes of address space, committed as touched (tables indexed by address). */
void *wl_mem_reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	note_reserved(p, len);
	return p;
}

void wl_mem_unreserve(void *p, size_t len)
{
	for (int i = 0; i < MAX_RESERVED; i++)
		if (__atomic_load_n(&reserved[i][0], __ATOMIC_ACQUIRE) == (uintptr_t)p) {
			reserved[i][1] = 0;
			__atomic_store_n(&reserved[i][0], 0, __ATOMIC_RELEASE);
			break;
		}
	munmap(p, len);
}

/* The first of watchlib's mappings that overlaps [lo, hi), in *rlo and *rhi: 1, or 0. */
int wl_mem_reserved(uintptr_t lo, uintptr_t hi, uintptr_t *rlo, uintptr_t *rhi)
{
	for (int i = 0; i < MAX_RESERVED; i++) {
		uintptr_t a = __atomic_load_n(&reserved[i][0], __ATOMIC_ACQUIRE);
		uintptr_t b = __atomic_load_n(&reserved[i][1], __ATOMIC_ACQUIRE);
		if (a && b && a < hi && b > lo) {
			*rlo = a;
			*rhi = b;
			return 1;
		}
	}
	return 0;
}
