/*
 * watch-micro: the thesis's watchpoint microbenchmark (CMU-CS-20-124 reports thousands of
 * watchpoints at a 3.25x slowdown, against about 1,000,000x for GDB's software watchpoints):
 * a loop over an array that is mostly read and written, with N write watchpoints on it, of
 * which a few are hit and the rest are not, but sit on the pages (and some on the lines) the
 * loop writes. The same binary runs with no watchlib at all (--backend none) for the baseline
 * and under GDB (bench/micro-gdb).
 *
 * The array: ROWS (4096) rows of 1024 unsigned ints, each row one 4 KiB page (the array is
 * page-aligned in .bss), each 128-byte line 32 ints:
 *   lines 0-29   (ints 0-959)     data: read and written once per row per iteration
 *   line 30      (ints 960-991)   parameters: read (one per row per iteration), never written
 *   line 31      int 992          the row's total: written once per row per iteration
 *                ints 993-1023    never read or written
 * One iteration, for each of the first R rows (R = --rows, default all): c = the row's
 * parameter (k + r) % 32; a running sum over the data, acc += d[j] ^ c, d[j] = acc (a prefix
 * sum: one load, one store per int); the row's total = acc. One untimed warm-up sweep of
 * row 0 runs before any watchpoint is set, so that a short timed run (GDB's software
 * watchpoints use one row) does not include QEMU's translation of the loop and of the clock's
 * vDSO code, or cold caches.
 * The watchpoints (4 bytes each, writes; watchpoint m):
 *   m < 4         hit: data int 64 + 256 m of row m R / 4 (lines 2, 10, 18, 26 of rows spread
 *                 over the swept rows), written once per iteration: 4 K hits in all (or N K)
 *   m >= 4        not hit: q = m - 4, row q % ROWS, slot q / ROWS; rows with row % 8 != 7 get
 *                 it in line 30 (parameter int 960 + slot: a line the loop only reads), rows
 *                 with row % 8 == 7 in line 31 (int 993 + slot: a line whose int 992 the loop
 *                 writes). So 7/8 of them share only a page with written data (no faults on
 *                 ULPT, false faults for every write to the page on mprotect) and 1/8 share a
 *                 line with one written int (on ULPT one false fault per row, the first: it
 *                 opens the gap of the line that holds int 992, watchlib's byte bounds).
 *                 With N >= 1028 every row has watchpoints; at most 4 + 31 * ROWS fit.
 * The hit watchpoints' lines are written 32 times per iteration: one hit and 31 writes of the
 * gap after it, which the first false fault there opened (ULPT; on mprotect each is a fault).
 * Placement depends only on N and R, not on the backend, so GDB can set the same watchpoints
 * (--print-indices gives the array indices, --print-addrs their addresses in this process).
 *
 * Usage: watch-micro [--backend ulpt|mprotect|none] [--watchpoints N] [--iters K] [--rows R]
 *                    [--cols C] [--print-addrs | --print-indices]
 * --rows and --cols shorten the sweep to the first R rows and, in each, the first C data ints
 * (GDB's software watchpoints need it); the hit watchpoints then move into those C ints.
 * Prints (ns: the timed loop only, CLOCK_MONOTONIC; hits: callback calls)
 *   micro backend=<b> watchpoints=<N> iters=<K> ns=<ns> hits=<hits> [model_cycles=<c>]
 *   # micro rows=<R> faults=<f> false_faults=<ff> handler_ns=<ns> checksum=<x>
 * The functions micro_ready() and micro_done() bracket the timed loop, for debuggers. On a
 * machine that models time (docs/spec.md 11.1) the loop is also the measured region:
 * model_cycles, the whole machine's (a debugger's work included).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <watchlib.h>
#include <ulpt.h>

#define ROWS     4096           /* room for 100,000 watchpoints, 31 per row */
#define ROW      1024           /* ints per row: one 4 KiB page */
#define DATA     960            /* lines 0-29 */
#define PARAM    960            /* line 30 */
#define TOTAL    992            /* line 31, first int */
#define SPARE    993            /* line 31, the rest */
#define HITS     4

unsigned array[ROWS * ROW] __attribute__((aligned(4096)));

/*
 * The system call, not the vDSO: GDB's software watchpoints single-step the timed region, and
 * single-stepped (milliseconds a step in the guest) the vDSO's clock_gettime retries for ever,
 * because the timer tick changes the time data between each of its reads.
 */
static uint64_t now_ns(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* The array index of watchpoint m (see the header). */
static long watch_index(long m, long rows, long cols)
{
	if (m < HITS)
		return m * rows / HITS * ROW + (64 + 256 * m < cols ? 64 + 256 * m : m * cols / HITS);
	long q = m - HITS, row = q % ROWS, slot = q / ROWS;
	return row * ROW + (row % 8 == 7 ? SPARE + slot : PARAM + slot);
}

static volatile unsigned long hits;
static void on_hit(const struct wl_hit *h, void *arg)
{
	(void)h; (void)arg;
	hits++;
}

/* Breakpoint anchors for debuggers: the timed loop runs between the two. */
void micro_ready(void);
void micro_done(void);
__attribute__((noinline)) void micro_ready(void) { asm volatile("" ::: "memory"); }
__attribute__((noinline)) void micro_done(void) { asm volatile("" ::: "memory"); }

__attribute__((noinline)) static void sweep(long iters, long rows, long cols)
{
	for (long k = 0; k < iters; k++)
		for (long r = 0; r < rows; r++) {
			unsigned *row = &array[r * ROW];
			unsigned c = row[PARAM + (k + r) % 32], acc = 0;

			for (int j = 0; j < cols; j++) {
				acc += row[j] ^ c;
				row[j] = acc;
			}
			row[TOTAL] = acc;
		}
}

static void usage(void)
{
	fprintf(stderr, "usage: watch-micro [--backend ulpt|mprotect|none] [--watchpoints N] "
		"[--iters K] [--rows R] [--cols C] [--print-addrs | --print-indices]\n");
	exit(2);
}

static long number(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s ? s : "", &end, 10);
	if (!s || !*s || *end || errno || v < lo || v > hi)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	const char *backend = "ulpt";
	long n = 4096, iters = 25, rows = ROWS, cols = DATA;
	int print = 0;          /* 1: addresses, 2: indices */

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else if (!strcmp(argv[i], "--watchpoints"))
			n = number(argv[++i], 0, HITS + 31l * ROWS);
		else if (!strcmp(argv[i], "--iters"))
			iters = number(argv[++i], 1, 1l << 40);
		else if (!strcmp(argv[i], "--rows"))
			rows = number(argv[++i], 1, ROWS);
		else if (!strcmp(argv[i], "--cols"))
			cols = number(argv[++i], 1, DATA);
		else if (!strcmp(argv[i], "--print-addrs"))
			print = 1;
		else if (!strcmp(argv[i], "--print-indices"))
			print = 2;
		else
			usage();
	}
	if (strcmp(backend, "ulpt") && strcmp(backend, "mprotect") && strcmp(backend, "none"))
		usage();
	if (print) {
		for (long m = 0; m < n; m++) {
			long x = watch_index(m, rows, cols);
			if (print == 1)
				printf("%p\n", (void *)&array[x]);
			else
				printf("%ld\n", x);
		}
		return 0;
	}

	for (long i = 0; i < ROWS * ROW; i++)
		array[i] = (unsigned)i * 2654435761u;
	sweep(1, 1, cols);      /* warm-up, before any watchpoint: QEMU translates the loop and */
	now_ns();               /* the clock's vDSO code here, not in a short timed run */
	now_ns();
	if (strcmp(backend, "none")) {
		int r = wl_init(!strcmp(backend, "ulpt") ? ULPT_BACKEND_ULPT : ULPT_BACKEND_MPROTECT);
		if (r < 0) {
			printf("micro backend=%s unavailable wl_init: %s\n", backend, strerror(-r));
			return 1;
		}
		wl_set_callback(on_hit, NULL);
		for (long m = 0; m < n; m++)
			if ((r = wl_watch(&array[watch_index(m, rows, cols)], sizeof(unsigned), WL_WRITE)) < 0) {
				fprintf(stderr, "wl_watch: %s\n", strerror(-r));
				return 1;
			}
	}

	micro_ready();
	/* The timed loop is also the region of modeled time, when the machine models it. */
	struct ulpt_model model;
	int modeled = ulpt_model_begin() == 0;
	uint64_t t0 = now_ns();
	sweep(iters, rows, cols);
	uint64_t t = now_ns() - t0;
	if (modeled)
		ulpt_model_end(&model);
	micro_done();

	struct wl_stats st = { 0 };
	if (strcmp(backend, "none"))
		wl_get_stats(&st);
	unsigned sum = 0;
	for (long i = 0; i < ROWS * ROW; i++)
		sum += array[i];
	printf("micro backend=%s watchpoints=%ld iters=%ld ns=%llu hits=%lu", backend,
	       strcmp(backend, "none") ? n : 0, iters,
	       (unsigned long long)t, hits);
	if (modeled)
		printf(" model_cycles=%llu", (unsigned long long)model.cycles);
	printf("\n");
	printf("# micro rows=%ld faults=%llu false_faults=%llu handler_ns=%llu checksum=%08x\n", rows,
	       (unsigned long long)st.faults, (unsigned long long)st.false_faults,
	       (unsigned long long)st.handler_ns, sum);
	if (strcmp(backend, "none"))
		wl_fini();
	return 0;
}
