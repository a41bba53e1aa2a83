/*
 * watchlib's cost per fault as the number of watchpoints grows (issue: the lookup must not grow
 * with watchpoints on other pages). N 4-byte watchpoints for writes, one every 64 bytes of an
 * array; the loop writes unwatched ints in a watched line (false faults: found, filtered,
 * let through) and, separately, a watched int (a hit, counted). A false fault opens the gap
 * between watched bytes that holds it (watchlib's byte bounds), so the false writes alternate
 * between the line's two gaps, each one moving the open range: a false fault every time (with
 * N = 1 a second watchpoint, 64 bytes on, makes the second gap).
 * Prints, per N:
 *   # bench watch_false_<N>_ns <ns per false fault>
 *   # bench watch_hit_<N>_ns <ns per hit>
 * Usage: watch-lookup [ulpt|mprotect]   (default: the automatic choice)
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <watchlib.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	enum ulpt_backend b = ULPT_BACKEND_AUTO;
	const int counts[] = { 1, 1000, 100000 };
	const size_t span = 100000 * 64 + 4096;

	if (argc > 1)
		b = !strcmp(argv[1], "ulpt") ? ULPT_BACKEND_ULPT : ULPT_BACKEND_MPROTECT;
	int r = wl_init(b);
	if (r < 0) {
		fprintf(stderr, "wl_init: %s\n", strerror(-r));
		return 1;
	}
	int ulpt = ulpt_backend() == ULPT_BACKEND_ULPT;
	long loops = ulpt ? 20000 : 2000;
	char *arr = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(arr, 0, span);
	printf("# backend %s\n", ulpt_backend_name(ulpt_backend()));
	for (unsigned k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		int n = counts[k], *ids = calloc(n, sizeof(int));
		for (int i = 0; i < n; i++)
			ids[i] = wl_watch(arr + (size_t)i * 64, 4, WL_WRITE);
		/* The probe: the middle watchpoint's line. */
		volatile int *hit = (volatile int *)(arr + (size_t)(n / 2) * 64);
		volatile int *miss = hit + 2;           /* same line, not watched: bytes 8-11 */
		volatile int *miss2 = hit + 18;         /* the line's other gap: bytes 72-75 */
		int second = n == 1 ? wl_watch((const void *)(hit + 16), 4, WL_WRITE) : -1;
		uint64_t best_f = ~0ull, best_h = ~0ull;
		for (int round = 0; round < 5; round++) {
			uint64_t t0 = now_ns();
			for (long i = 0; i < loops; i += 2) {
				*miss = (int)i;
				*miss2 = (int)i;
			}
			uint64_t t1 = now_ns();
			for (long i = 0; i < loops; i++)
				*hit = (int)i;
			uint64_t t2 = now_ns();
			if (t1 - t0 < best_f)
				best_f = t1 - t0;
			if (t2 - t1 < best_h)
				best_h = t2 - t1;
		}
		uint64_t w = 0;
		wl_counts(ids[n / 2], NULL, &w);
		printf("# bench watch_false_%d_ns %llu\n", n, (unsigned long long)(best_f / loops));
		printf("# bench watch_hit_%d_ns %llu\n", n, (unsigned long long)(best_h / loops));
		printf("# %d watches: %llu writes counted on the probe (expected %ld)\n", n,
		       (unsigned long long)w, 5 * loops);
		for (int i = 0; i < n; i++)
			wl_unwatch(ids[i]);
		if (second >= 0)
			wl_unwatch(second);
		free(ids);
	}
	return 0;
}
