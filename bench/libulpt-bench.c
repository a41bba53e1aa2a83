/*
 * libulpt's costs on the backend it runs on (ULPT_BACKEND=ulpt|mprotect picks it), per
 * operation, loop included:
 *   page_change   ulpt_page_deny() deny then allow (one operation each), each followed by an
 *                 access it allows (the page stays populated and in the TLB, as a watched one)
 *   line_change   ulpt_line_deny() deny then allow (ULPT only), touched the same way
 *   trip_xsave    a fault round trip through the library: entry stub saving the vector state
 *                 (XSAVE), a C handler that returns ULPT_PERMIT, the access completes; on the
 *                 ULPT backend the watched line has line rights, as in guest/ulpt-bench.c's raw
 *                 round trip (a page-rights fault also costs a page walk)
 *   trip_gpr      the same with a handler registered ULPT_HANDLER_GPR_ONLY (no XSAVE)
 *   trip_raw      (ULPT only) the reference: the same fault through a minimal stub that saves
 *                 the general registers, calls a C function setting PERMIT in the frame and
 *                 UIRETs (as guest/ulpt-bench.c does), set with ARCH_ULPT_SET_HANDLER directly
 * The three trips alternate within each round, so their ratios come from one process: the
 * round trip's absolute cost varies between runs and binaries by up to 3x in QEMU.
 * Prints "# bench <backend>_<what>_ps <picoseconds>" lines (best of 9 rounds) for
 * scripts/bench-cpu.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ulpt.h>
#include <ulpt/arch.h>
#include "raw-stub.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static volatile long handled;
static enum ulpt_action permit(struct ulpt_fault *f, void *arg)
{
	(void)f; (void)arg;
	handled++;
	return ULPT_PERMIT;
}

ULPT_RAW_STUB(raw_entry, handled);

static uint64_t best_of(void (*fn)(long), long n)
{
	uint64_t best = ~0ull;
	for (int r = 0; r < 9; r++) {
		uint64_t t0 = now_ns();
		fn(n);
		uint64_t t = now_ns() - t0;
		if (t < best)
			best = t;
	}
	return best * 1000 / n;
}

static char *page;
static void page_change(long n)
{
	for (long i = 0; i < n; i += 2) {
		ulpt_page_deny(page, ULPT_DENY_W);
		(void)((volatile char *)page)[8];      /* touched after each change */
		ulpt_page_deny(page, 0);
		((volatile char *)page)[8] = (char)i;
	}
}
static void line_change(long n)
{
	for (long i = 0; i < n; i += 2) {
		ulpt_line_deny(page + 384, ULPT_DENY_W);
		(void)((volatile char *)page)[392];
		ulpt_line_deny(page + 384, 0);
		((volatile char *)page)[392] = (char)i;
	}
}
static volatile uint64_t *watched;
static void trip(long n)
{
	for (long i = 0; i < n; i++)
		watched[0] = i;          /* the same 8-byte store as guest/ulpt-bench.c's raw trip */
}

int main(void)
{
	int r = ulpt_init(ULPT_BACKEND_AUTO);
	const char *b;

	if (r < 0) {
		fprintf(stderr, "ulpt_init: %s\n", strerror(-r));
		return 1;
	}
	b = ulpt_backend_name(ulpt_backend());
	/*
	 * The changed page is the middle one of a populated 16-page mapping, as a watched page
	 * lies in a larger one (guest/ulpt-bench.c says why it matters for mprotect).
	 */
	char *map = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	watched = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || watched == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(map, 1, 16 * 4096);
	page = map + 8 * 4096;
	watched[0] = 1;
	int ulpt = ulpt_backend() == ULPT_BACKEND_ULPT;
	long nc = ulpt ? 200000 : 4000, nt = ulpt ? 20000 : 2000;

	printf("# bench %s_page_change_ps %llu\n", b, (unsigned long long)best_of(page_change, nc));
	if (ulpt)
		printf("# bench %s_line_change_ps %llu\n", b, (unsigned long long)best_of(line_change, nc));
	if (ulpt)
		ulpt_protect_lines((void *)watched, ULPT_LINE_SIZE, ULPT_DENY_W);
	else
		ulpt_protect((void *)watched, 4096, ULPT_DENY_W);
	/* Rounds alternate raw, registers-only and XSAVE stubs; the best of each is kept. */
	uint64_t best[3] = { ~0ull, ~0ull, ~0ull };
	int modes = ulpt ? 3 : 1;
	for (int r = 0; r < 9; r++) {
		for (int m = 0; m < modes; m++) {
			if (m == 2)
				syscall(SYS_arch_prctl, ARCH_ULPT_SET_HANDLER, (unsigned long)raw_entry);
			else
				ulpt_set_handler(permit, NULL, m == 1 ? ULPT_HANDLER_GPR_ONLY : 0);
			uint64_t t0 = now_ns();
			trip(nt);
			uint64_t t = now_ns() - t0;
			if (t < best[m])
				best[m] = t;
		}
	}
	printf("# bench %s_trip_xsave_ps %llu\n", b, (unsigned long long)(best[0] * 1000 / nt));
	if (ulpt) {
		printf("# bench %s_trip_gpr_ps %llu\n", b, (unsigned long long)(best[1] * 1000 / nt));
		printf("# bench %s_trip_raw_ps %llu\n", b, (unsigned long long)(best[2] * 1000 / nt));
	}
	printf("# %s deliveries %ld (expected %ld)\n", b, handled, 9 * modes * nt);
	return handled == 9 * modes * nt ? 0 : 1;
}
