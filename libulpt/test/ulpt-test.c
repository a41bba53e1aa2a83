/*
 * libulpt test suite: one function per behaviour, listed in tests[] and run by tap_run
 * (tests/lib/tap.h: the table's shape, selection by name, --list), on one backend:
 *   ulpt-test ulpt|mprotect [NAME...]  TAP on stdout; "ulpt" on a CPU without ULPT checks that
 *                                      the backend reports itself unavailable
 *   ulpt-test --list                   the names, one a line
 * Each test is one check and runs in a forked child (tests/lib/tap-fork.h), so a crash fails
 * that test only; its CHECKs print the failing condition's line and stop it.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <ulpt.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include "tap-fork.h"

static int backend;                     /* the backend under test */
static const char *self;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "# %s:%d: ", __func__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); return 1; } } while (0)

/* A test that cannot run here (a CPU feature missing): TAP's SKIP. */
static int skip(const char *why)
{
	fprintf(stderr, "# skipped: %s\n", why);
	return TAP_SKIP_STATUS;
}

static void *pages(int n)
{
	void *p = mmap(NULL, n * ULPT_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	memset(p, 0, n * ULPT_PAGE_SIZE);
	return p;
}

/* --- handlers --------------------------------------------------------------------------- */
static volatile int h_count;
static struct ulpt_fault h_last;
static enum ulpt_action h_action;
static volatile uint64_t h_skip;        /* ULPT_SKIP: bytes to skip */

static enum ulpt_action record(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	h_count++;
	h_last = *f;
	switch (h_action) {
	case ULPT_RETRY:
		ulpt_protect((void *)(f->addr & ~(uintptr_t)4095), ULPT_PAGE_SIZE, 0);
		ulpt_protect_lines((void *)(f->addr & ~(uintptr_t)127), ULPT_LINE_SIZE, 0);
		break;
	case ULPT_SKIP:
		f->next_ip = f->ip + h_skip;
		break;
	default:
		break;
	}
	return h_action;
}

static int setup(enum ulpt_action action)
{
	int r = ulpt_init(backend);
	if (r)
		return r;
	h_count = 0;
	h_action = action;
	return ulpt_set_handler(record, NULL, 0);
}

/* A store whose length is known, for ULPT_SKIP. */
extern const char skip_insn[], skip_end[];
static void store_known(volatile uint64_t *p)
{
	asm volatile("skip_insn: movq $0x77, (%0)\nskip_end:" :: "r"(p) : "memory");
}

/* --- tests ------------------------------------------------------------------------------ */
static int t_bad_arguments(void)
{
	char *p = pages(2);

	CHECK(ulpt_protect(p, ULPT_PAGE_SIZE, ULPT_DENY_W) == -EINVAL, "use before init");
	CHECK(ulpt_page_lines(p, 2) == -EINVAL, "a line word before init");
	CHECK(ulpt_set_handler(record, NULL, 0) == -EINVAL, "handler before init");
	CHECK(ulpt_backend() == -EINVAL, "backend before init");
	CHECK(ulpt_init(7) == -EINVAL, "bad backend value");
	CHECK(ulpt_init(backend) == 0, "init");
	CHECK(ulpt_init(backend) == -EBUSY, "init twice");
	CHECK(ulpt_backend() == backend, "backend reported");
	CHECK(ulpt_set_handler(NULL, NULL, 0) == -EINVAL, "NULL handler");
	CHECK(ulpt_set_handler(record, NULL, 0x80) == -EINVAL, "unknown handler flag");
	CHECK(ulpt_protect(p + 1, ULPT_PAGE_SIZE, ULPT_DENY_W) == -EINVAL, "unaligned address");
	CHECK(ulpt_protect(p, 100, ULPT_DENY_W) == -EINVAL, "unaligned length");
	CHECK(ulpt_protect(p, 0, ULPT_DENY_W) == -EINVAL, "empty range");
	CHECK(ulpt_protect((void *)-4096ul, 8192, ULPT_DENY_W) == -EINVAL, "wrapping range");
	CHECK(ulpt_protect((void *)(1ul << 47), 4096, ULPT_DENY_W) == -EINVAL, "beyond the table");
	CHECK(ulpt_protect(p, ULPT_PAGE_SIZE, 8) == -EINVAL, "unknown right");
	CHECK(ulpt_protect_lines(p + 64, 128, ULPT_DENY_W) == -EINVAL, "unaligned line");
	CHECK(ulpt_protect_lines(p, 128, ULPT_DENY_X) == -EINVAL, "execute right on a line");
	CHECK(ulpt_get((void *)(1ul << 47), NULL, NULL) == -EINVAL, "get beyond the table");
	CHECK(ulpt_protect_line_word((void *)(1ul << 47), 1) == -EINVAL &&
	      ulpt_page_lines((void *)(1ul << 47), 1) == -EINVAL, "a line word beyond the table");
	if (backend == ULPT_BACKEND_MPROTECT)
		CHECK(ulpt_protect_lines(p, 128, ULPT_DENY_W) == -EOPNOTSUPP, "lines on mprotect");
	CHECK(ulpt_backend_name(backend) && !ulpt_backend_name(9), "backend names");
	CHECK(ulpt_fini() == 0 && ulpt_fini() == -EINVAL, "fini, twice");
	return 0;
}

static int t_page_rights(void)
{
	volatile uint64_t *p = pages(1);
	unsigned page, line;

	CHECK(setup(ULPT_RETRY) == 0, "setup");
	CHECK(ulpt_protect((void *)p, ULPT_PAGE_SIZE, ULPT_DENY_W) == 0, "protect");
	CHECK(ulpt_get((void *)p, &page, &line) == 0 && page == ULPT_DENY_W && line == 0, "get");
	CHECK(ulpt_page_rights((void *)p) == (int)ULPT_DENY_W, "inline get");
	(void)p[3];
	CHECK(h_count == 0, "a read of a write-denied page is allowed (%d)", h_count);
	p[3] = 5;
	CHECK(h_count == 1 && p[3] == 5, "the write faulted once, the handler lifted it (%d)", h_count);
	CHECK(h_last.kind == ULPT_DENY_W && h_last.addr == (uintptr_t)&p[3] && h_last.tid == gettid(),
	      "fault record: kind %u addr %#lx tid %d", h_last.kind, (unsigned long)h_last.addr, h_last.tid);
	CHECK(ulpt_page_rights((void *)p) == 0, "restored");
	CHECK(ulpt_page_deny((void *)p, ULPT_DENY_R) == 0 && ulpt_page_rights((void *)p) == (int)ULPT_DENY_R, "inline set");
	(void)p[0];
	CHECK(h_count == 2 && h_last.kind == ULPT_DENY_R, "read denied (%d, kind %u)", h_count, h_last.kind);
	return 0;
}

static int t_line_rights(void)
{
	volatile uint64_t *p = pages(1);
	unsigned line;

	CHECK(setup(ULPT_RETRY) == 0, "setup");
	if (backend != ULPT_BACKEND_ULPT) {
		CHECK(ulpt_protect_lines((void *)p, 128, ULPT_DENY_W) == -EOPNOTSUPP, "lines need ULPT");
		return 0;
	}
	CHECK(ulpt_protect_lines((void *)(p + 32), 256, ULPT_DENY_W) == 0, "protect lines 2-3");
	CHECK(ulpt_get((void *)(p + 32), NULL, &line) == 0 && line == ULPT_DENY_W, "get line");
	p[0] = 1;
	p[31] = 1;
	p[64] = 1;
	CHECK(h_count == 0, "writes to lines 0, 1 and 4 allowed (%d)", h_count);
	p[50] = 1;
	CHECK(h_count == 1 && h_last.addr == (uintptr_t)&p[50] && h_last.reason == ULPT_REASON_LINE_RIGHTS &&
	      h_last.size == 8 && h_last.start == (uintptr_t)&p[50], "line 3 write delivered with start and size");
	CHECK(ulpt_line_deny((void *)(p + 16), ULPT_DENY_R) == 0, "inline line deny");
	(void)p[17];
	CHECK(h_count == 2 && h_last.kind == ULPT_DENY_R, "line 1 read denied");
	return 0;
}

/* ulpt_page_lines: a page's 32 lines from one word; on mprotect the page gets their union. */
static int t_line_word(void)
{
	volatile uint64_t *p = pages(1);
	unsigned page, line;
	uint64_t word = (uint64_t)ULPT_DENY_W << (2 * 3) | (uint64_t)ULPT_DENY_R << (2 * 7);

	CHECK(setup(ULPT_RETRY) == 0, "setup");
	CHECK(ulpt_page_lines((void *)(p + 100), word) == 0, "set the word (any address in the page)");
	if (backend != ULPT_BACKEND_ULPT) {
		CHECK(ulpt_get((void *)p, &page, &line) == 0 && page == ULPT_DENY_RW && line == 0,
		      "mprotect: the page denies the union of the lines' rights (%u)", page);
		CHECK(ulpt_page_lines((void *)p, 0) == 0 && ulpt_get((void *)p, &page, NULL) == 0 && page == 0,
		      "mprotect: no line denied, the page open");
		return 0;
	}
	CHECK(ulpt_get((void *)(p + 48), &page, &line) == 0 && page == 0 && line == ULPT_DENY_W,
	      "line 3 denies writes");
	CHECK(ulpt_get((void *)(p + 112), NULL, &line) == 0 && line == ULPT_DENY_R, "line 7 denies reads");
	p[0] = 1;
	(void)p[48];
	CHECK(h_count == 0, "other lines and other kinds allowed (%d)", h_count);
	p[49] = 1;
	CHECK(h_count == 1 && h_last.addr == (uintptr_t)&p[49] && h_last.reason == ULPT_REASON_LINE_RIGHTS,
	      "a write to line 3 delivered (%d)", h_count);
	CHECK(ulpt_protect_line_word((void *)p, 0) == 0 && ulpt_get((void *)(p + 112), NULL, &line) == 0 &&
	      line == 0, "the general call clears them");
	return 0;
}

static int t_retry(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(setup(ULPT_RETRY) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "setup");
	for (int i = 0; i < 3; i++)
		p[i] = i + 1;
	CHECK(h_count == 1 && p[2] == 3, "RETRY: one fault, then the lifted rights hold (%d)", h_count);
	return 0;
}

static int t_permit(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "setup");
	for (int i = 0; i < 3; i++)
		p[i] = i + 1;
	CHECK(h_count == 3 && p[0] == 1 && p[2] == 3, "PERMIT: every write faults once and completes (%d)", h_count);
	CHECK(ulpt_page_rights((void *)p) == (int)ULPT_DENY_W, "PERMIT: the rights stay");
	return 0;
}

static int t_skip(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(setup(ULPT_SKIP) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "setup");
	h_skip = skip_end - skip_insn;
	store_known(p);
	CHECK(h_count == 1 && p[0] == 0 && h_last.ip == (uintptr_t)skip_insn,
	      "SKIP: the store did not happen and execution went on (%d, %#lx)", h_count, (unsigned long)p[0]);
	return 0;
}

/* Signals that arrive while a permitted access is under way: their handler's own permitted
 * access must not take the step of the access it interrupted. The handler writes a second
 * denied page (a permit of its own) and then lifts the interrupted access's rights, so that
 * if the interrupted step were lost the access would complete with nothing left to close it. */
static volatile uint64_t *sig_a, *sig_b;
static volatile int sig_stop, sig_hits;
static pthread_t sig_target;

static void on_rt_permit(int s)
{
	(void)s;
	sig_b[0]++;
	ulpt_protect((void *)sig_a, 4096, 0);
	sig_hits++;
}

static void *rt_sender(void *a)
{
	(void)a;
	while (!sig_stop) {        /* one at a time: a flood would starve the target */
		int h = sig_hits;

		pthread_kill(sig_target, SIGRTMIN + 3);
		while (sig_hits == h && !sig_stop)
			sched_yield();
	}
	return NULL;
}

static int t_permit_signals(void)
{
	volatile uint64_t *p = pages(2);
	struct sigaction sa = { .sa_handler = on_rt_permit };
	pthread_t t;
	int i, n = 200000;

	sig_a = p;
	sig_b = p + 512;
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)sig_b, 4096, ULPT_DENY_W) == 0 &&
	      sigaction(SIGRTMIN + 3, &sa, NULL) == 0, "setup");
	sig_target = pthread_self();
	CHECK(pthread_create(&t, NULL, rt_sender, NULL) == 0, "sender");
	for (i = 0; i < n && sig_hits < 3000; i++) {
		ulpt_protect((void *)sig_a, 4096, ULPT_DENY_W);
		sig_a[1] = (uint64_t)i;
	}
	sig_stop = 1;
	pthread_join(t, NULL);
	CHECK(sig_a[1] == (uint64_t)(i - 1) && sig_hits > 0 && sig_b[0] == (uint64_t)sig_hits,
	      "every access and every handler's completed (%d accesses, %d signals, %d faults)",
	      i, sig_hits, h_count);
	return 0;
}

static int child_status(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return status;
}

static void default_child(void)
{
	volatile uint64_t *p = pages(1);
	if (setup(ULPT_DEFAULT) || ulpt_protect((void *)p, 4096, ULPT_DENY_W))
		_exit(2);
	p[0] = 1;
}

static int t_default(void)
{
	int st = child_status(default_child);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "DEFAULT: the process dies of SIGSEGV (status %#x)", st);
	return 0;
}

static int t_range(void)
{
	volatile char *p = pages(3);

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 3 * 4096, ULPT_DENY_W) == 0, "setup");
	p[0] = 1;
	p[4096 + 100] = 1;
	p[2 * 4096 + 4095] = 1;
	CHECK(h_count == 3, "a range of three pages: each page faults (%d)", h_count);
	CHECK(ulpt_protect((void *)(p + 4096), 4096, 0) == 0, "lift the middle page");
	p[4096] = 2;
	CHECK(h_count == 3, "the middle page is free, the others not (%d)", h_count);
	return 0;
}

/* The records of a load, a store, a read-modify-write, a string instruction and 16-byte
 * vector accesses: the same start, size and kinds (in order) on both backends. */
static struct ulpt_fault rec_log[8];
static volatile int rec_n;
static enum ulpt_action record_all(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (rec_n < 8)
		rec_log[rec_n] = *f;
	rec_n++;
	return ULPT_PERMIT;
}

/* The accesses, each at p (a page denying reads and writes; p + 4096 open), and the records
 * each makes: offset from p, size and kind of each, in order. */
static void fr_load(volatile char *p) { (void)*(volatile uint64_t *)(p + 8); }
static void fr_store(volatile char *p) { *(volatile uint32_t *)(p + 16) = 1; }
static void fr_rmw(volatile char *p) { asm volatile("addq $1, (%0)" :: "r"(p + 24) : "memory", "cc"); }
static void fr_movsb(volatile char *p)
{
	char *d = (char *)p + 4096, *sv = (char *)p + 40;
	asm volatile("movsb" : "+D"(d), "+S"(sv) : : "memory");
}
static void fr_movdqu(volatile char *p)
{
	asm volatile("movdqu (%0), %%xmm0\n movdqu %%xmm0, 16(%0)" :: "r"(p + 64) : "memory", "xmm0");
}

static const struct {
	void (*fn)(volatile char *);
	const char *what;
	int n;
	struct { unsigned off, size, kind; } r[2];
} fr_cases[] = {
	{ fr_load, "a load: 8 bytes, R", 1, { { 8, 8, ULPT_DENY_R } } },
	{ fr_store, "a store: 4 bytes, W", 1, { { 16, 4, ULPT_DENY_W } } },
	{ fr_rmw, "a read-modify-write: R, then W, 8 bytes each", 2,
	  { { 24, 8, ULPT_DENY_R }, { 24, 8, ULPT_DENY_W } } },
	{ fr_movsb, "movsb from the page: its read, 1 byte", 1, { { 40, 1, ULPT_DENY_R } } },
	{ fr_movdqu, "movdqu load and store: 16 bytes each", 2,
	  { { 64, 16, ULPT_DENY_R }, { 80, 16, ULPT_DENY_W } } },
};

static int t_fault_record(void)
{
	volatile char *p = pages(2);

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(record_all, NULL, 0) == 0 &&
	      ulpt_protect((void *)p, 4096, ULPT_DENY_RW) == 0, "setup");
	for (unsigned c = 0; c < sizeof(fr_cases) / sizeof(fr_cases[0]); c++) {
		int ok;

		rec_n = 0;
		fr_cases[c].fn(p);
		asm volatile("" ::: "memory");     /* the handler wrote rec_log */
		ok = rec_n == fr_cases[c].n;
		for (int i = 0; ok && i < rec_n; i++)
			ok = rec_log[i].start == (uintptr_t)(p + fr_cases[c].r[i].off) &&
			     rec_log[i].size == fr_cases[c].r[i].size &&
			     rec_log[i].kind == fr_cases[c].r[i].kind &&
			     rec_log[i].addr - rec_log[i].start < rec_log[i].size;
		CHECK(ok, "%s (%d records; the first: +%ld, %zu bytes, kind %u)", fr_cases[c].what, rec_n,
		      (long)(rec_log[0].start - (uintptr_t)p), rec_log[0].size, rec_log[0].kind);
	}
	return 0;
}

/* A store across two denied pages is one access: one call, on both backends (R-RET-2). A
 * REP MOVSB over 8 denied pages completes (on mprotect it opens more pages than any other
 * instruction), with a call per element on ULPT and at least one per page on mprotect. */
static int t_cross_rep(void)
{
	volatile char *p = pages(10);
	static char src[8 * 4096];
	void *d = (void *)(p + 4096 + 10), *sp = src;
	size_t n = 8 * 4096 - 20;

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 10 * 4096, ULPT_DENY_W) == 0, "setup");
	*(volatile uint64_t *)(p + 4096 - 4) = 0x0102030405060708ull;
	CHECK(h_count == 1 && *(volatile uint64_t *)(p + 4096 - 4) == 0x0102030405060708ull,
	      "a store across two denied pages: one call (%d)", h_count);
	memset(src, 7, sizeof(src));
	h_count = 0;
	asm volatile("rep movsb" : "+D"(d), "+S"(sp), "+c"(n) : : "memory");
	CHECK(n == 0 && p[4096 + 10] == 7 && p[9 * 4096 - 11] == 7, "rep movsb over 8 pages completes");
	CHECK(backend == ULPT_BACKEND_ULPT ? h_count == 8 * 4096 - 20 : h_count >= 8,
	      "one call per element (ULPT) or per page at least (mprotect): %d", h_count);
	return 0;
}

/* A handler that uses SSE/AVX: memcpy of 4 KiB and printf of a double. */
static char big_src[4096], big_dst[4096];
static enum ulpt_action vector_handler(struct ulpt_fault *f, void *arg)
{
	char buf[64];
	(void)f; (void)arg;
	h_count++;
	memset(big_src, h_count, sizeof(big_src));
	memcpy(big_dst, big_src, sizeof(big_dst));
	snprintf(buf, sizeof(buf), "%f", 3.25 * h_count);
	return ULPT_PERMIT;
}

/* Loads xmm0-15 from before, stores 1 to *p (a fault or a log event), stores them to after. */
static void xmm_around_store(uint64_t (*before)[2], uint64_t (*after)[2], volatile uint64_t *p)
{
	for (int i = 0; i < 16; i++)
		before[i][0] = 0x1111111111111111ull * (i + 1), before[i][1] = ~before[i][0];
	asm volatile(
		"movdqu 0(%0), %%xmm0\n movdqu 16(%0), %%xmm1\n movdqu 32(%0), %%xmm2\n movdqu 48(%0), %%xmm3\n"
		"movdqu 64(%0), %%xmm4\n movdqu 80(%0), %%xmm5\n movdqu 96(%0), %%xmm6\n movdqu 112(%0), %%xmm7\n"
		"movdqu 128(%0), %%xmm8\n movdqu 144(%0), %%xmm9\n movdqu 160(%0), %%xmm10\n movdqu 176(%0), %%xmm11\n"
		"movdqu 192(%0), %%xmm12\n movdqu 208(%0), %%xmm13\n movdqu 224(%0), %%xmm14\n movdqu 240(%0), %%xmm15\n"
		"movq $1, (%2)\n"
		"movdqu %%xmm0, 0(%1)\n movdqu %%xmm1, 16(%1)\n movdqu %%xmm2, 32(%1)\n movdqu %%xmm3, 48(%1)\n"
		"movdqu %%xmm4, 64(%1)\n movdqu %%xmm5, 80(%1)\n movdqu %%xmm6, 96(%1)\n movdqu %%xmm7, 112(%1)\n"
		"movdqu %%xmm8, 128(%1)\n movdqu %%xmm9, 144(%1)\n movdqu %%xmm10, 160(%1)\n movdqu %%xmm11, 176(%1)\n"
		"movdqu %%xmm12, 192(%1)\n movdqu %%xmm13, 208(%1)\n movdqu %%xmm14, 224(%1)\n movdqu %%xmm15, 240(%1)\n"
		:: "r"(before), "r"(after), "r"(p)
		: "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
		  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static int t_vector_state(void)
{
	volatile uint64_t *p = pages(1);
	uint64_t before[16][2], after[16][2];

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(vector_handler, NULL, 0) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "protect");
	h_count = 0;
	/* Load xmm0-15, fault (the handler runs memcpy and printf), store them back. */
	xmm_around_store(before, after, p);
	CHECK(h_count == 1 && big_dst[4095] == 1, "the handler ran memcpy and printf (%d)", h_count);
	CHECK(memcmp(before, after, sizeof(before)) == 0, "xmm0-15 of the interrupted code are intact");
	return 0;
}

/* AVX: ymm0-15 whole (glibc's AVX2 memcpy uses ymm and VZEROUPPER), and MXCSR: the handler
 * runs with the default (0x1f80), the interrupted code keeps its own (round toward zero). */
static volatile unsigned h_mxcsr;
static enum ulpt_action avx_handler(struct ulpt_fault *f, void *arg)
{
	unsigned m;
	__asm__ volatile("stmxcsr %0" : "=m"(m));
	h_mxcsr = m;
	return vector_handler(f, arg);
}

static int have_avx(void)
{
	unsigned a, b, c, d, lo, hi;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	if (!(c & (1u << 27)) || !(c & (1u << 28)))
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (lo & 6) == 6;
}

static int t_vector_avx(void)
{
	volatile uint64_t *p = pages(1);
	uint64_t before[16][4], after[16][4];
	unsigned mx_in = 0x7f80, mx_out = 0;

	if (!have_avx())
		return skip("no AVX");
	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(avx_handler, NULL, 0) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "protect");
	for (int i = 0; i < 16; i++)
		for (int k = 0; k < 4; k++)
			before[i][k] = 0x0101010101010101ull * (i + 1) * (k + 3);
	h_count = 0;
	asm volatile(
		"ldmxcsr %4\n"
		"vmovdqu 0(%0), %%ymm0\n vmovdqu 32(%0), %%ymm1\n vmovdqu 64(%0), %%ymm2\n vmovdqu 96(%0), %%ymm3\n"
		"vmovdqu 128(%0), %%ymm4\n vmovdqu 160(%0), %%ymm5\n vmovdqu 192(%0), %%ymm6\n vmovdqu 224(%0), %%ymm7\n"
		"vmovdqu 256(%0), %%ymm8\n vmovdqu 288(%0), %%ymm9\n vmovdqu 320(%0), %%ymm10\n vmovdqu 352(%0), %%ymm11\n"
		"vmovdqu 384(%0), %%ymm12\n vmovdqu 416(%0), %%ymm13\n vmovdqu 448(%0), %%ymm14\n vmovdqu 480(%0), %%ymm15\n"
		"movq $1, (%2)\n"
		"vmovdqu %%ymm0, 0(%1)\n vmovdqu %%ymm1, 32(%1)\n vmovdqu %%ymm2, 64(%1)\n vmovdqu %%ymm3, 96(%1)\n"
		"vmovdqu %%ymm4, 128(%1)\n vmovdqu %%ymm5, 160(%1)\n vmovdqu %%ymm6, 192(%1)\n vmovdqu %%ymm7, 224(%1)\n"
		"vmovdqu %%ymm8, 256(%1)\n vmovdqu %%ymm9, 288(%1)\n vmovdqu %%ymm10, 320(%1)\n vmovdqu %%ymm11, 352(%1)\n"
		"vmovdqu %%ymm12, 384(%1)\n vmovdqu %%ymm13, 416(%1)\n vmovdqu %%ymm14, 448(%1)\n vmovdqu %%ymm15, 480(%1)\n"
		"stmxcsr %3\n"
		"vzeroupper\n"
		"ldmxcsr %5\n"
		:: "r"(before), "r"(after), "r"(p), "m"(mx_out), "m"(mx_in), "m"((unsigned){ 0x1f80 })
		: "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
		  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
	CHECK(h_count == 1 && big_dst[4095] == 1, "the handler ran memcpy and printf (%d)", h_count);
	CHECK(memcmp(before, after, sizeof(before)) == 0, "ymm0-15 of the interrupted code are intact");
	CHECK(mx_out == 0x7f80, "the interrupted code's MXCSR is back (%#x)", mx_out);
	if (backend == ULPT_BACKEND_ULPT)       /* (a signal handler's is the kernel's business) */
		CHECK(h_mxcsr == 0x1f80, "the handler ran with the default MXCSR (%#x)", h_mxcsr);
	return 0;
}

/* x87: the interrupted code holds seven values on the x87 stack; the handler computes with
 * long double (two more slots) correctly, and the seven come back intact. */
static volatile long double h_ld;
static volatile unsigned h_tags;
static enum ulpt_action x87_handler(struct ulpt_fault *f, void *arg)
{
	volatile long double a = 1.5L, b = 3.0L;
	unsigned short env[14];

	__asm__ volatile("fnstenv %0\n fldenv %0" : "+m"(env));
	h_tags = env[4];
	h_ld = a * b + (long double)f->size;
	return vector_handler(f, arg);
}

static int t_vector_x87(void)
{
	volatile uint64_t *p = pages(1);
	long double out[7];
	static const long double want[7] = { 1.0L, 2.0L, 3.0L, 4.0L, 5.0L, 6.0L, 7.0L };

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(x87_handler, NULL, 0) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "protect");
	h_count = 0;
	h_ld = 0;
	asm volatile(
		"fldt 0(%0)\n fldt 16(%0)\n fldt 32(%0)\n fldt 48(%0)\n fldt 64(%0)\n fldt 80(%0)\n fldt 96(%0)\n"
		"movq $1, (%2)\n"
		"fstpt 96(%1)\n fstpt 80(%1)\n fstpt 64(%1)\n fstpt 48(%1)\n fstpt 32(%1)\n fstpt 16(%1)\n fstpt 0(%1)\n"
		:: "r"(want), "r"(out), "r"(p) : "memory", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)");
	CHECK(h_count == 1, "the handler ran (%d)", h_count);
	for (int i = 0; i < 7; i++)
		CHECK(out[i] == want[i], "x87 register %d is intact (%Lg)", i, out[i]);
	CHECK(h_tags == 0xffff, "the handler starts with an empty x87 stack (tags %#x)", h_tags);
	if (backend == ULPT_BACKEND_ULPT)
		CHECK(h_ld == 4.5L + 8, "the handler's long double arithmetic is right (%Lg)", h_ld);
	return 0;
}

/* Threads: each faults on its own page; the handler runs in the faulting thread. */
static volatile int tid_ok[4];
static enum ulpt_action thread_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	for (int i = 0; i < 4; i++)
		if (tid_ok[i] == -f->tid)
			tid_ok[i] = f->tid == gettid();
	return ULPT_PERMIT;
}

static void *thread_body(void *v)
{
	int i = (int)(intptr_t)v;
	volatile uint64_t *p = (volatile uint64_t *)((char *)h_last.start + i * 4096);

	tid_ok[i] = -gettid();
	p[0] = 1;
	return NULL;
}

static int t_threads(void)
{
	pthread_t th[4];
	char *p = pages(4);

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(thread_handler, NULL, 0) == 0, "setup");
	CHECK(ulpt_protect(p, 4 * 4096, ULPT_DENY_W) == 0, "protect");
	h_last.start = (uintptr_t)p;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_body, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(tid_ok[0] == 1 && tid_ok[1] == 1 && tid_ok[2] == 1 && tid_ok[3] == 1,
	      "each thread's fault reached the handler on that thread (%d %d %d %d)",
	      tid_ok[0], tid_ok[1], tid_ok[2], tid_ok[3]);
	return 0;
}

static volatile uint64_t *fork_page;
static void fork_child(void)
{
	fork_page[0] = 9;                   /* inherited rights and handler */
	_exit(h_count == 1 && fork_page[0] == 9 ? 0 : 3);
}

static int t_fork_exec(void)
{
	int st;

	fork_page = pages(1);
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)fork_page, 4096, ULPT_DENY_W) == 0, "setup");
	st = child_status(fork_child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork: the child keeps the rights and the handler (%#x)", st);
	CHECK(h_count == 0, "fork: the child's fault did not reach the parent");
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "exec-check", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec: the new program starts uninitialised and can init (%#x)", st);
	return 0;
}

static volatile uint64_t *denied_read;
static enum ulpt_action faulting_handler(struct ulpt_fault *f, void *arg)
{
	(void)f; (void)arg;
	(void)*denied_read;                 /* a violation inside the handler */
	return ULPT_PERMIT;
}

static void faulting_handler_child(void)
{
	volatile uint64_t *p = pages(1);

	denied_read = pages(1);
	if (ulpt_init(backend) || ulpt_set_handler(faulting_handler, NULL, 0) ||
	    ulpt_protect((void *)p, 4096, ULPT_DENY_W) || ulpt_protect((void *)denied_read, 4096, ULPT_DENY_R))
		_exit(2);
	p[0] = 1;
}

static int t_handler_faults(void)
{
	int st = child_status(faulting_handler_child);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
	      "a fault inside the handler ends the process with SIGSEGV (status %#x)", st);
	return 0;
}

/* ULPT_PERMIT_STEP: the handler's calls in order (after = 0 or 1, the kind, the value it saw). */
#define STEP_MAX 8
static volatile int step_n;
static struct { int after; unsigned kind; uintptr_t addr, ip; uint64_t value; unsigned page, line; } step_log[STEP_MAX];
static enum ulpt_action step_decision[STEP_MAX];  /* by the number of the normal call */
static volatile int step_normal;

static int deny_at(volatile void *p, unsigned deny);

/* A handler must not touch what it denies (any call): lift a read denial to read. */
static uint64_t read_denied(volatile uint64_t *p, unsigned deny)
{
	uint64_t v;

	if (!(deny & ULPT_DENY_R))
		return *p;
	deny_at(p, 0);
	v = *p;
	deny_at(p, deny);
	return v;
}

static enum ulpt_action step_handler(struct ulpt_fault *f, void *arg)
{
	int i = step_n;
	(void)arg;
	if (i < STEP_MAX) {
		step_log[i].after = f->after;
		step_log[i].kind = f->kind;
		step_log[i].addr = f->addr;
		step_log[i].ip = f->ip;
		ulpt_get((void *)f->addr, &step_log[i].page, &step_log[i].line);
		step_log[i].value = read_denied((volatile uint64_t *)(f->addr & ~(uintptr_t)7),
		                                step_log[i].page | step_log[i].line);
	}
	step_n = i + 1;
	if (f->after)
		return ULPT_DEFAULT;            /* ignored in the after-call */
	i = step_normal++;
	if (step_decision[i] == ULPT_SKIP)
		f->next_ip = f->ip + h_skip;
	return step_decision[i];
}

/* Denies `deny` on the line (ULPT) or the page (mprotect) that holds p. */
static int deny_at(volatile void *p, unsigned deny)
{
	if (backend == ULPT_BACKEND_ULPT)
		return ulpt_protect_lines((void *)((uintptr_t)p & ~(uintptr_t)127), ULPT_LINE_SIZE, deny);
	return ulpt_protect((void *)((uintptr_t)p & ~(uintptr_t)4095), ULPT_PAGE_SIZE, deny);
}

static int step_setup(void)
{
	step_n = step_normal = 0;
	for (int i = 0; i < STEP_MAX; i++)
		step_decision[i] = ULPT_PERMIT_STEP;
	if (ulpt_init(backend))
		return -1;
	return ulpt_set_handler(step_handler, NULL, 0);
}

static int t_step_after_write(void)
{
	volatile uint64_t *p = pages(1);
	unsigned deny_page, deny_line;

	CHECK(step_setup() == 0 && deny_at(&p[5], ULPT_DENY_W) == 0, "setup");
	ulpt_get((void *)&p[5], &deny_page, &deny_line);
	p[5] = 0x1122334455667788ull;
	CHECK(step_n == 2, "two calls (%d)", step_n);
	CHECK(step_log[0].after == 0 && step_log[1].after == 1, "after = 0, then 1 (%d %d)",
	      step_log[0].after, step_log[1].after);
	CHECK(step_log[0].value == 0, "the first call saw the old value (%#lx)", (unsigned long)step_log[0].value);
	CHECK(step_log[1].value == 0x1122334455667788ull, "the after-call saw the new value (%#lx)",
	      (unsigned long)step_log[1].value);
	CHECK(step_log[1].kind == ULPT_DENY_W && step_log[1].addr == (uintptr_t)&p[5] &&
	      step_log[1].ip == step_log[0].ip, "the after-call has the same record");
	CHECK(step_log[1].page == deny_page && step_log[1].line == deny_line,
	      "the rights are denied in the after-call (%u %u)", step_log[1].page, step_log[1].line);
	p[5] = 42;
	CHECK(step_n == 4 && step_log[2].after == 0 && step_log[3].after == 1 && step_log[3].value == 42,
	      "a second store faults again, with its own after-call (%d)", step_n);
	CHECK(p[5] == 42 && step_n == 4, "reads are not denied, and nothing is left pending");
	return 0;
}

/* The after-call sends the program elsewhere (next_ip), with its registers, on both backends. */
extern const char nip_skip[], nip_land[];
static __attribute__((noinline)) int store_then_flag(volatile uint64_t *p)
{
	int skipped = 1;
	asm volatile("movq $7, (%1)\nnip_skip: movl $0, %0\nnip_land:"
		     : "+r"(skipped) : "r"(p) : "memory");
	return skipped;
}
static volatile uintptr_t nip_seen;
static enum ulpt_action nip_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (!f->after)
		return ULPT_PERMIT_STEP;
	nip_seen = f->next_ip;
	f->next_ip = (uintptr_t)nip_land;
	return ULPT_DEFAULT;
}
static int t_step_next_ip(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(nip_handler, NULL, 0) == 0 &&
	      deny_at(p, ULPT_DENY_W) == 0, "setup");
	int skipped = store_then_flag(p);
	CHECK(nip_seen == (uintptr_t)nip_skip, "the after-call's next_ip is the next instruction (%#lx)",
	      (unsigned long)nip_seen);
	CHECK(skipped == 1 && *p == 7, "the program went on where the after-call said, the store made");
	return 0;
}

/* A non-locked read-modify-write: reads first, then writes (docs/spec.md section 6). */
extern const char rmw_insn[], rmw_end[];
static __attribute__((noinline)) void add_one(volatile uint64_t *p)
{
	asm volatile("rmw_insn: addq $1, (%0)\nrmw_end:" :: "r"(p) : "memory", "cc");
}

static int t_step_rmw(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(step_setup() == 0 && deny_at(&p[3], ULPT_DENY_RW) == 0, "setup");
	p = p + 3;
	/* Both faults ULPT_PERMIT_STEP: one after-call, with the last record (the write). */
	add_one(p);
	/* Both backends (mprotect: the kernel's one write fault is delivered as the two). */
	CHECK(step_n == 3, "read fault, write fault, one after-call (%d calls)", step_n);
	CHECK(step_log[0].after == 0 && step_log[0].kind == ULPT_DENY_R &&
	      step_log[1].after == 0 && step_log[1].kind == ULPT_DENY_W,
	      "kinds R then W (%u %u)", step_log[0].kind, step_log[1].kind);
	CHECK(step_log[2].after == 1 && step_log[2].kind == ULPT_DENY_W,
	      "the after-call has the write's record (kind %u)", step_log[2].kind);
	CHECK(step_log[step_n - 1].value == 1, "the after-call saw the incremented value (%lu)",
	      (unsigned long)step_log[step_n - 1].value);
	/* ULPT_PERMIT_STEP for the read, plain ULPT_PERMIT for the write: the step stays. */
	step_n = step_normal = 0;
	step_decision[1] = ULPT_PERMIT;
	add_one(p);
	CHECK(step_n == 3 && step_log[2].after == 1 && step_log[2].kind == ULPT_DENY_R && step_log[2].value == 2,
	      "a later PERMIT keeps the step: the after-call has the read's record (%d calls, kind %u)",
	      step_n, step_log[2].kind);
	/* ULPT_PERMIT_STEP for the read, ULPT_SKIP for the write: no after-call. */
	step_n = step_normal = 0;
	step_decision[1] = ULPT_SKIP;
	h_skip = rmw_end - rmw_insn;
	add_one(p);
	CHECK(step_n == 2 && step_log[1].after == 0, "a later SKIP cancels the step (%d calls)", step_n);
	step_decision[1] = ULPT_PERMIT_STEP;
	CHECK(deny_at(p, 0) == 0, "lift");
	step_n = 0;
	*p += 1;
	CHECK(step_n == 0 && *p == 3, "nothing pending after the skip (%d calls, %lu)", step_n, (unsigned long)*p);
	return 0;
}

/* The program's own SIGTRAP handler, installed before ulpt_init. */
static volatile int trap_count, trap_code;
static void own_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig;
	trap_count++;
	trap_code = si->si_code;
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;   /* ends the program's own single step */
}

static void sigtrap_default_child(void)
{
	if (ulpt_init(backend))
		_exit(2);
	raise(SIGTRAP);
	_exit(3);
}

static int t_step_sigtrap_chain(void)
{
	volatile uint64_t *p = pages(1);
	struct sigaction sa, cur;
	int st;

	st = child_status(sigtrap_default_child);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTRAP, "SIG_DFL before: raise(SIGTRAP) kills (%#x)", st);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = own_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGTRAP, &sa, NULL) == 0, "sigaction");
	CHECK(step_setup() == 0 && deny_at(p, ULPT_DENY_W) == 0, "setup");
	raise(SIGTRAP);
	CHECK(trap_count == 1 && trap_code == SI_TKILL, "raise(SIGTRAP) reached the program's handler (%d, code %d)",
	      trap_count, trap_code);
	asm volatile("int3");
	CHECK(trap_count == 2, "int3 reached the program's handler (%d)", trap_count);
	p[0] = 7;
	CHECK(step_n == 2 && trap_count == 2, "a PERMIT_STEP's trap is the library's (%d calls, %d traps)",
	      step_n, trap_count);
	/* The program single-steps itself: TF with POPF, the trap comes after the next instruction. */
	asm volatile("pushfq\n orq $0x100, (%%rsp)\n popfq\n nop" ::: "memory", "cc");
	CHECK(trap_count == 3 && trap_code == TRAP_TRACE, "the program's own single step (%d, code %d)",
	      trap_count, trap_code);
	raise(SIGTRAP);
	CHECK(trap_count == 4, "still chained after a step (%d)", trap_count);
	CHECK(ulpt_fini() == 0 && sigaction(SIGTRAP, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	      cur.sa_sigaction == own_trap, "ulpt_fini restores the program's SIGTRAP handler");
	return 0;
}

/* ULPT_PERMIT_STEP without the kernel (ULPT backend): many stepped stores, each with its
 * after-call, and not one SIGTRAP reaches the process. */
static volatile int any_trap;
static void count_trap(int sig) { (void)sig; any_trap++; }

static enum ulpt_action count_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after)
		step_n++;
	return ULPT_PERMIT_STEP;
}

static int t_step_no_kernel(void)
{
	volatile uint64_t *p = pages(1);

	if (backend != ULPT_BACKEND_ULPT)
		return skip("the library's own SIGTRAP handler is ULPT-only here: step_rip_relative "
			    "and stack_page check mprotect's steps for SIGTRAP");
	CHECK(signal(SIGTRAP, count_trap) != SIG_ERR, "signal");
	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(count_handler, NULL, 0) == 0 &&
	      deny_at(p, ULPT_DENY_W) == 0, "setup");
	step_n = 0;
	for (int i = 0; i < 1000; i++)
		p[0] = (uint64_t)i;
	/* count_trap is still the SIGTRAP action, so any SIGTRAP at all would have been counted. */
	struct sigaction cur;
	CHECK(sigaction(SIGTRAP, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
	      cur.sa_handler == count_trap, "the library installed no SIGTRAP handler");
	CHECK(step_n == 1000 && p[0] == 999 && any_trap == 0,
	      "1000 stepped stores: 1000 after-calls, no SIGTRAP (%d, %d)", step_n, any_trap);
	return 0;
}

/* The program sets TF itself over a stepped store (as a debugger's step does): the after-call
 * comes first, then the program's trap, at the instruction after the store, once. */
extern char own_tf_store[], own_tf_next[];
static volatile int order_after, order_trap, order_n;
static volatile uintptr_t trap_rip;

static enum ulpt_action order_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after)
		order_after = ++order_n;
	return ULPT_PERMIT_STEP;
}

static void order_trap_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig; (void)si;
	if (!order_trap) {
		order_trap = ++order_n;
		trap_rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	}
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

static int t_step_own_tf(void)
{
	volatile uint64_t *p = pages(1);
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = order_trap_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGTRAP, &sa, NULL) == 0, "sigaction");
	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(order_handler, NULL, 0) == 0 &&
	      deny_at(p, ULPT_DENY_W) == 0, "setup");
	/* POPF sets TF: the trap comes after the next instruction, the store. */
	asm volatile("pushfq\n orq $0x100, (%%rsp)\n popfq\n"
	             ".globl own_tf_store\nown_tf_store: movq $5, (%0)\n"
	             ".globl own_tf_next\nown_tf_next: nop" :: "r"(p) : "memory", "cc");
	CHECK(order_after == 1 && order_trap == 2 && trap_rip == (uintptr_t)own_tf_next && p[0] == 5,
	      "after-call, then the program's trap at the next instruction (after %d, trap %d at %#lx)",
	      order_after, order_trap, (unsigned long)trap_rip);
	return 0;
}

/* A backtrace taken in the handler goes through the entry stub (its CFI) into the program:
 * the faulting function and its caller, in the fault's call and in the after-call (through
 * the after trampoline). tests/suites/libulpt.sh also runs gdb's bt at unwind_handler. */
static volatile unsigned unwind_seen;

static void unwind_victim(volatile uint64_t *p);
static int t_unwind(void);

/* Bit 0 (+ shift): a frame in unwind_victim; bit 1: one in t_unwind after it. */
static unsigned unwind_marks(unw_word_t start, unsigned seen, unsigned shift)
{
	if (start == (uintptr_t)unwind_victim)
		seen |= 1u << shift;
	else if (start == (uintptr_t)t_unwind && (seen & (1u << shift)))
		seen |= 2u << shift;
	return seen;
}

static enum ulpt_action unwind_handler(struct ulpt_fault *f, void *arg)
{
	unw_context_t uc;
	unw_cursor_t c;
	unw_proc_info_t pi;
	void *pcs[32];
	unsigned seen = 0, fast = 0, shift = f->after ? 2 : 0;
	int n;

	(void)arg;
	/* Step by step (unw_step), and libunwind's fast trace (unw_backtrace, which the agent's
	 * reports use in the after-call). */
	unw_getcontext(&uc);
	unw_init_local(&c, &uc);
	for (int depth = 0; depth < 32 && unw_step(&c) > 0; depth++)
		if (unw_get_proc_info(&c, &pi) == 0)
			seen = unwind_marks(pi.start_ip, seen, shift);
	n = unw_backtrace(pcs, 32);
	/* A return address points after its call; the frame a fault interrupted, at the
	 * instruction: look both up. */
	for (int i = 0; i < n; i++)
		for (int back = 0; back < 2; back++)
			if (unw_get_proc_info_by_ip(unw_local_addr_space, (unw_word_t)pcs[i] - back, &pi, NULL) == 0)
				fast = unwind_marks(pi.start_ip, fast, shift);
	/* libunwind's fast trace stops at the fault's stub (it cannot follow a CFA read from
	 * memory, the frame's rsp): only unw_step goes on there. */
	unwind_seen |= f->after ? seen & fast : seen;
	return f->after ? ULPT_DEFAULT : ULPT_PERMIT_STEP;
}

static void __attribute__((noinline)) unwind_victim(volatile uint64_t *p)
{
	*p = 1;
	asm volatile("nop" ::: "memory");       /* the next instruction is still this function's */
}

static int t_unwind(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(unwind_handler, NULL, 0) == 0 &&
	      deny_at(p, ULPT_DENY_W) == 0, "setup");
	unwind_victim(p);
	CHECK((unwind_seen & 3) == 3, "libunwind in the handler finds the faulting function, then its caller (%#x)",
	      unwind_seen);
	CHECK((unwind_seen & 12) == 12, "... and in the after-call (%#x)", unwind_seen);
	return 0;
}

/* A debugger single-steps a store that faults into the handler (PTRACE_SINGLESTEP, as gdb's
 * stepi): the handler and its after-call run, and the step stops at the next instruction.
 * (A handler that makes a system call would stop at its exit: the kernel reports a step there,
 * as for a signal handler; docs/linux-api.md.) */
extern char ptrace_store[], ptrace_next[];
static volatile int *shared_after;

static enum ulpt_action shared_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after)
		__atomic_add_fetch(shared_after, 1, __ATOMIC_RELAXED);
	return ULPT_PERMIT_STEP;
}

static int t_step_ptrace(void)
{
	volatile uint64_t *p = mmap(NULL, ULPT_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct user_regs_struct regs;
	int st;

	if (backend != ULPT_BACKEND_ULPT)
		return skip("on mprotect a ptrace step goes into the SIGSEGV handler (the tracer "
			    "sees the signal): tests/suites/ulpt-gdb.sh steps there with GDB");
	CHECK(p != MAP_FAILED, "mmap");
	shared_after = mmap(NULL, ULPT_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shared_after != MAP_FAILED, "mmap");
	pid_t pid = fork();
	if (pid == 0) {
		long r;
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0 || ulpt_init(backend) ||
		    ulpt_set_handler(shared_handler, NULL, 0) || deny_at(p, ULPT_DENY_W))
			_exit(2);
		/* A first fault makes the library's per-thread setup (gettid): a system call in the
		 * handler under PTRACE_SINGLESTEP would stop there (see below). */
		p[1] = 1;
		/* Stop with RIP at the store: kill(getpid(), SIGSTOP) as the instruction before. */
		asm volatile("syscall\n.globl ptrace_store\nptrace_store: movq $5, (%3)\n"
		             ".globl ptrace_next\nptrace_next: nop"
		             : "=a"(r) : "a"((long)SYS_kill), "D"((long)getpid()), "r"(p), "S"((long)SIGSTOP)
		             : "rcx", "r11", "memory");
		_exit(r == 0 ? 0 : 3);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP,
	      "the child stops before the store (%#x)", st);
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 && regs.rip == (uintptr_t)ptrace_store,
	      "stopped at the store (%#llx)", regs.rip);
	CHECK(ptrace(PTRACE_SINGLESTEP, pid, 0, 0) == 0 && waitpid(pid, &st, 0) == pid &&
	      WIFSTOPPED(st), "one step: a stop (%#x)", st);
	CHECK(WSTOPSIG(st) == SIGTRAP, "one step: SIGTRAP (%#x)", st);
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0, "GETREGS");
	CHECK(regs.rip == (uintptr_t)ptrace_next && p[0] == 5 && *shared_after == 2,
	      "the step ran the handler and the after-call and stopped at the next instruction (rip %#llx, %lu, %d after-calls)",
	      regs.rip, (unsigned long)p[0], *shared_after);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the child goes on and exits (%#x)", st);
	return 0;
}

/* For gdb's stepi (tests/suites/libulpt.sh breaks at gdb_step_store and steps it): a store
 * that faults into the handler, whose after-call counts; a first fault beforehand does the
 * library's per-thread setup (a system call, where a step would stop). */
static volatile int gdb_after;

static enum ulpt_action gdb_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after)
		gdb_after++;
	return ULPT_PERMIT_STEP;
}

static void __attribute__((noinline)) gdb_step_store(volatile uint64_t *p)
{
	*p = 5;
	asm volatile("nop" ::: "memory");
}

static int t_gdb_step(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(gdb_handler, NULL, 0) == 0 &&
	      deny_at(p, ULPT_DENY_W) == 0, "setup");
	p[1] = 1;
	gdb_step_store(p);
	CHECK(p[0] == 5 && gdb_after == 2, "both stores made, two after-calls (%d)", gdb_after);
	return 0;
}

/* No step of the library's may trap: a SIGTRAP action of the test's own, set after ulpt_init
 * with the raw system call (so not chained), counts any, clearing TF to go on. */
static volatile int no_trap_count;

static void no_trap_handler(int sig, siginfo_t *si, void *ucv)
{
	(void)sig; (void)si;
	no_trap_count++;
	((ucontext_t *)ucv)->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

static int catch_traps(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = no_trap_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	no_trap_count = 0;
	return sigaction(SIGTRAP, &sa, NULL);
}

/* A page-aligned global, written RIP-relative (-O2, PIE): on mprotect the instruction runs out
 * of line with its displacement rebased on a scratch register. */
static volatile uint64_t rip_glob[1024] __attribute__((aligned(4096)));
static volatile uint64_t rip_seen[4];
static volatile int rip_after;

static enum ulpt_action rip_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after && rip_after < 4)
		rip_seen[rip_after] = rip_glob[1];
	if (f->after)
		rip_after++;
	return ULPT_PERMIT_STEP;
}

static int t_step_rip_relative(void)
{
	uint64_t rax = 0x1111, rcx = 0x2222, rdx = 0x3333, rbx = 0x4444, out[4];

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(rip_handler, NULL, 0) == 0 &&
	      ulpt_protect((void *)rip_glob, ULPT_PAGE_SIZE, ULPT_DENY_W) == 0 && catch_traps() == 0,
	      "setup");
	for (int i = 0; i < 1000; i++)
		rip_glob[1] = (uint64_t)i;
	CHECK(rip_after == 1000 && rip_glob[1] == 999 && rip_seen[0] == 0 && rip_seen[3] == 3,
	      "1000 stores, each after-call sees its value (%d, %lu)", rip_after,
	      (unsigned long)rip_seen[3]);
	/* A store whose registers include the first scratch candidates: they stay the program's. */
	asm volatile("movq %%rcx, %4\n"
		     : "+a"(rax), "+c"(rcx), "+d"(rdx), "+b"(rbx) : "m"(rip_glob[2]) : "memory");
	out[0] = rax; out[1] = rcx; out[2] = rdx; out[3] = rbx;
	CHECK(rip_glob[2] == 0x2222 && out[0] == 0x1111 && out[1] == 0x2222 && out[2] == 0x3333 &&
	      out[3] == 0x4444, "registers intact around a rebased store");
	CHECK(no_trap_count == 0 || backend == ULPT_BACKEND_ULPT,
	      "no SIGTRAP (%d)", no_trap_count);
	return 0;
}

/* A call, pushes and pops and a return on a stack page denied read and write: on mprotect the
 * call and the return are done on the context (they cannot run out of line), the rest out of
 * line, the handler on the alternate stack ulpt_init gave the thread. */
static volatile int stack_faults;
extern char stack_callee[];
__asm__(".text\n.globl stack_callee\nstack_callee:\n"
	"push %rbx\n movq $7, %rbx\n pushq %rbx\n popq %rax\n pop %rbx\n ret\n");

static enum ulpt_action stack_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (!f->after)
		stack_faults++;
	return ULPT_PERMIT;
}

static int t_stack_page(void)
{
	uint8_t *stk = pages(1);
	uint64_t rax = 0, rbx = 0x5555;

	if (backend != ULPT_BACKEND_MPROTECT)
		return skip("the mprotect backend's calls and returns done on the context");
	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(stack_handler, NULL, 0) == 0 &&
	      catch_traps() == 0 &&
	      ulpt_protect(stk, ULPT_PAGE_SIZE, ULPT_DENY_R | ULPT_DENY_W) == 0, "setup");
	/* The call's stack is the protected page (its top, 16-aligned). */
	asm volatile("movq %%rsp, %%r12\n movq %2, %%rsp\n call stack_callee\n movq %%r12, %%rsp\n"
		     : "+a"(rax), "+b"(rbx) : "r"(stk + ULPT_PAGE_SIZE - 64) : "r12", "memory", "cc");
	CHECK(rax == 7 && rbx == 0x5555, "the call ran and returned (rax %lu, rbx %#lx)",
	      (unsigned long)rax, (unsigned long)rbx);
	CHECK(stack_faults >= 6, "every stack access faulted (%d)", stack_faults);
	CHECK(no_trap_count == 0, "no SIGTRAP (%d)", no_trap_count);
	return 0;
}

/* --- the access log --------------------------------------------------------------------- */
#define LREC_MAX 64
static struct ulpt_log_rec lrecs[LREC_MAX];
static volatile int lrec_n, lcalls;
static size_t lbatch[16];
static volatile pid_t ltid;

/* Keeps the first records and the batch sizes. */
static void log_collect(const struct ulpt_log_rec *r, size_t n, void *arg)
{
	(void)arg;
	if (lcalls < 16)
		lbatch[lcalls] = n;
	lcalls++;
	ltid = gettid();
	for (size_t i = 0; i < n; i++, lrec_n++)
		if (lrec_n < LREC_MAX)
			lrecs[lrec_n] = r[i];
}

/* Checks that the records are writes of 0, 1, 2, ... in order, each once. */
static volatile uint64_t lseq_next, lseq_bad;
static void log_sequence(const struct ulpt_log_rec *r, size_t n, void *arg)
{
	(void)arg;
	lcalls++;
	ltid = gettid();
	for (size_t i = 0; i < n; i++, lseq_next++)
		if (r[i].kind != ULPT_DENY_W || !r[i].has_value || r[i].value != lseq_next ||
		    r[i].size != 8)
			lseq_bad++;
}

static int rec_is(const struct ulpt_log_rec *r, const volatile void *start, size_t size,
		  unsigned kind, const void *ip)
{
	return r->start == (uintptr_t)start && r->size == size && r->kind == kind &&
	       r->ip == (uintptr_t)ip && r->reason == ULPT_REASON_PAGE_RIGHTS;
}

/* A load, a store, a read-modify-write and a store across a page boundary, each at a label. */
extern const char lg_load[], lg_store[], lg_rmw[], lg_cross[];
static void __attribute__((noinline)) log_accesses(volatile uint64_t *p, uint64_t v)
{
	uint64_t t;

	asm volatile("lg_load: movq 8(%1), %0\n"
		     "lg_store: movl $0x11223344, 16(%1)\n"
		     "lg_rmw: addq $5, 24(%1)\n"
		     "lg_cross: movq %2, 4092(%1)\n"
		     : "=&r"(t) : "r"(p), "r"(v) : "memory", "cc");
}

static int t_log_records(void)
{
	volatile uint64_t *p = pages(4);
	volatile char *q = (volatile char *)(p + 1024);         /* pages 2 and 3 */
	const struct ulpt_log_rec *r = lrecs;
	unsigned page;

	CHECK(setup(ULPT_PERMIT) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_RW | ULPT_DENY_LOG) == 0 &&
	      ulpt_protect((void *)(p + 512), 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_protect((void *)(q + 4096), 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0, "protect");
	CHECK(ulpt_get((void *)p, &page, NULL) == 0 && page == (ULPT_DENY_RW | ULPT_DENY_LOG) &&
	      ulpt_page_rights((void *)(p + 512)) == (int)(ULPT_DENY_W | ULPT_DENY_LOG),
	      "ulpt_get and ulpt_page_rights report ULPT_DENY_LOG (%#x)", page);
	CHECK(ulpt_log_start(6, 0, log_collect, NULL) == 0, "start");
	log_accesses(p, 0x0102030405060708ull);
	/* Across into a logged page from an open one. */
	*(volatile uint32_t *)(q + 4094) = 0xaabbccdd;
	CHECK(h_count == 0 && lcalls == 0, "no delivery, no callback yet (%d, %d)", h_count, lcalls);
	CHECK(ulpt_log_drain() == 6 && lrec_n == 6 && lcalls == 1, "six records drained at once (%d)", lrec_n);
	CHECK(rec_is(&r[0], p + 1, 8, ULPT_DENY_R, lg_load) && !r[0].has_value, "the load");
	CHECK(rec_is(&r[1], p + 2, 4, ULPT_DENY_W, lg_store) && r[1].has_value &&
	      r[1].value == 0x11223344, "the store, with its value (%#lx)", (unsigned long)r[1].value);
	CHECK(rec_is(&r[2], p + 3, 8, ULPT_DENY_R, lg_rmw) && !r[2].has_value &&
	      rec_is(&r[3], p + 3, 8, ULPT_DENY_W, lg_rmw) && r[3].has_value && r[3].value == 5,
	      "the read-modify-write: its read, then its write with the new value (kinds %u %u, %#lx)",
	      r[2].kind, r[3].kind, (unsigned long)r[3].value);
	CHECK(rec_is(&r[4], (char *)p + 4092, 8, ULPT_DENY_W, lg_cross) &&
	      r[4].value == 0x0102030405060708ull, "a store across two logged pages: one record");
	CHECK(r[5].start == (uintptr_t)(q + 4094) && r[5].size == 4 && r[5].kind == ULPT_DENY_W &&
	      r[5].value == 0xaabbccdd, "a store from an open page into a logged one: its start (%#lx %zu)",
	      (unsigned long)r[5].start, r[5].size);
	CHECK(ulpt_log_drain() == 0 && lcalls == 1, "nothing left, no call");
	/* Reading the page logs the reads too. */
	CHECK(p[3] == 5 && p[2] == 0x11223344 && ulpt_log_drain() == 2 && lrecs[6].kind == ULPT_DENY_R &&
	      lrecs[6].start == (uintptr_t)&p[3], "the accesses were made; reading them logs two reads");
	lrec_n = 6;
	if (backend == ULPT_BACKEND_ULPT) {
		/* Line rights with LOG: the page's word 0 gets ULPT_DENY_LOG. */
		CHECK(ulpt_protect_lines((void *)(q + 128), 128, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
		      ulpt_page_rights((void *)q) == (int)ULPT_DENY_LOG, "lines with LOG");
		q[130] = 1;
		CHECK(ulpt_log_drain() == 1 && lrecs[6].reason == ULPT_REASON_LINE_RIGHTS &&
		      lrecs[6].start == (uintptr_t)(q + 130) && lrecs[6].size == 1, "a line's record");
	} else {
		CHECK(ulpt_protect_lines((void *)q, 128, ULPT_DENY_W | ULPT_DENY_LOG) == -EOPNOTSUPP,
		      "lines need ULPT");
	}
	CHECK(h_count == 0, "the handler was never called (%d)", h_count);
	return 0;
}

/* A threshold of 4 records: the callback gets them after the instruction that makes 4 wait. */
static int t_log_thresh(void)
{
	volatile uint64_t *p = pages(1);

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(4, 4, log_collect, NULL) == 0, "setup");
	for (int i = 0; i < 3; i++)
		p[i] = i + 1;
	CHECK(lcalls == 0, "three records wait");
	p[3] = 4;
	CHECK(lcalls == 1 && lbatch[0] == 4 && ltid == gettid(), "the fourth: a batch of 4 on this thread (%d, %zu)",
	      lcalls, lbatch[0]);
	for (int i = 4; i < 10; i++)
		p[i] = i + 1;
	CHECK(lcalls == 2 && lbatch[1] == 4 && lrec_n == 8, "the eighth: another 4 (%d, %d)", lcalls, lrec_n);
	CHECK(ulpt_log_drain() == 2 && lcalls == 3 && lrec_n == 10, "the drain takes the last 2");
	for (int i = 0; i < 10; i++)
		CHECK(lrecs[i].start == (uintptr_t)&p[i] && lrecs[i].value == (uint64_t)i + 1 &&
		      lrecs[i].has_value, "record %d in order (%#lx)", i, (unsigned long)lrecs[i].value);
	CHECK(h_count == 0, "no LOG event reached the handler (%d)", h_count);
	return 0;
}

/* A ring of 16 records and 100,000 logged stores (20,000 on mprotect, a signal each): full
 * again and again, each record once. */
static int t_log_full(void)
{
	volatile uint64_t *p = pages(1);
	int n, full = backend == ULPT_BACKEND_ULPT ? 100000 : 20000;

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(4, 0, log_sequence, NULL) == 0, "setup");
	for (int i = 0; i < full; i++)
		p[i & 7] = (uint64_t)i;
	n = ulpt_log_stop();
	CHECK(n > 0 && n <= 16, "stop drains the rest (%d)", n);
	CHECK(lseq_next == (uint64_t)full && lseq_bad == 0,
	      "every store once, in order (%lu records, %lu wrong)", (unsigned long)lseq_next,
	      (unsigned long)lseq_bad);
	CHECK(lcalls >= full / 16, "a drain per full ring (%d calls)", lcalls);
	CHECK(h_count == 0, "no FULL reached the handler (%d)", h_count);
	return 0;
}

/* A consumer thread drains a ring of 4: the producer is only stopped when it is full, and
 * waits for the consumer then (which may be asleep). 50,000 records (10,000 on mprotect). */
static int t_log_consumer(void)
{
	volatile uint64_t *p = pages(1);
	int n = backend == ULPT_BACKEND_ULPT ? 50000 : 10000;

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(2, 4, log_sequence, NULL) == 0, "setup");
	CHECK(ulpt_log_consumer_start() == 0, "consumer start");
	CHECK(ulpt_log_consumer_start() == -EBUSY && ulpt_log_drain() == -EBUSY, "one consumer at a time");
	for (int i = 0; i < n; i++)
		p[i & 7] = (uint64_t)i;
	CHECK(ulpt_log_consumer_stop() == 0, "consumer stop");
	CHECK(lseq_next == (uint64_t)n && lseq_bad == 0, "every store once, in order (%lu, %lu wrong)",
	      (unsigned long)lseq_next, (unsigned long)lseq_bad);
	CHECK(ltid != gettid(), "the callback ran on the consumer thread");
	/* The threshold is back: 16 more stores, a callback here. */
	for (int i = n; i < n + 16; i++)
		p[i & 7] = (uint64_t)i;
	CHECK(ltid == gettid() && lseq_next == (uint64_t)n + 16 && lseq_bad == 0,
	      "after stop, the threshold's callback on this thread (%lu)", (unsigned long)lseq_next);
	CHECK(ulpt_log_stop() == 0 && h_count == 0, "nothing left, no delivery (%d)", h_count);
	return 0;
}

/* A thread without a log has its accesses to ULPT_DENY_LOG pages delivered. */
static volatile uint64_t *nolog_page;
static void *nolog_writer(void *a)
{
	(void)a;
	nolog_page[1] = 7;
	return NULL;
}

static int t_log_no_log_thread(void)
{
	pthread_t t;

	nolog_page = pages(1);
	CHECK(setup(ULPT_PERMIT) == 0 &&
	      ulpt_protect((void *)nolog_page, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0, "setup");
	nolog_page[0] = 1;
	CHECK(h_count == 1 && h_last.kind == ULPT_DENY_W && h_last.addr == (uintptr_t)nolog_page,
	      "without a log: delivered (%d)", h_count);
	CHECK(ulpt_log_start(4, 0, log_collect, NULL) == 0, "start");
	nolog_page[0] = 2;
	CHECK(h_count == 1, "with a log: logged (%d)", h_count);
	CHECK(pthread_create(&t, NULL, nolog_writer, NULL) == 0 && pthread_join(t, NULL) == 0, "thread");
	CHECK(h_count == 2 && h_last.addr == (uintptr_t)&nolog_page[1] && h_last.tid != gettid(),
	      "another thread, without a log: delivered there (%d)", h_count);
	CHECK(ulpt_log_stop() == 1 && lrec_n == 1 && lrecs[0].value == 2 && nolog_page[1] == 7,
	      "this thread's one record (%d)", lrec_n);
	nolog_page[0] = 3;
	CHECK(h_count == 3, "after ulpt_log_stop: delivered again (%d)", h_count);
	return 0;
}

/* The ring read directly: peek and consume, next, then the callback takes what is left. */
static int t_log_raw(void)
{
	volatile uint64_t *p = pages(1);
	struct ulpt_log_ring *r;
	struct ulpt_log_slot *s;
	struct ulpt_log_rec rec;

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(3, 0, log_collect, NULL) == 0, "setup");
	CHECK((r = ulpt_log_ring()) != NULL && r->mask == 7 && r->head == 0, "the ring");
	CHECK(ulpt_log_peek(r) == NULL, "empty");
	for (int i = 0; i < 3; i++)
		p[i] = 0x100 + i;
	CHECK((s = ulpt_log_peek(r)) != NULL && s->start == (uintptr_t)p && (s->info & 7) == ULPT_DENY_W &&
	      (s->info >> 16 & 0xffff) == 8 && s->value == 0x100 && (s->info & ULPT_LOG_VAL_), "peek: the first");
	ulpt_log_consume(r, s);
	CHECK(s->info == 0 && r->head == 1, "consume frees the slot");
	CHECK(ulpt_log_next(r, &rec) == 1 && rec.start == (uintptr_t)&p[1] && rec.value == 0x101 &&
	      rec.has_value && rec.kind == ULPT_DENY_W, "next: the second");
	CHECK(ulpt_log_drain() == 1 && lrec_n == 1 && lrecs[0].value == 0x102, "the drain: the third");
	CHECK(ulpt_log_next(r, &rec) == 0 && r->head == 3, "none left");
	return 0;
}

/* A raw drain (ulpt_log_set_raw): it reads the ring itself, in the handler without the vector
 * state saved, so it is built general-register-only. */
static volatile uint64_t raw_next, raw_bad, raw_calls;

__attribute__((target("general-regs-only")))
static size_t raw_drain(struct ulpt_log_ring *r, void *arg)
{
	struct ulpt_log_slot *s;
	size_t n = 0;

	raw_calls++;
	while ((s = ulpt_log_peek(r)) != NULL) {
		raw_bad += s->value != raw_next || s->start != (uintptr_t)arg + 8 * (raw_next & 7);
		raw_next++;
		ulpt_log_consume(r, s);
		n++;
	}
	return n;
}

static int t_log_set_raw(void)
{
	volatile uint64_t *p = pages(1);
	int stores = backend == ULPT_BACKEND_ULPT ? 10000 : 2000;

	CHECK(ulpt_log_set_raw(raw_drain, NULL) == -EINVAL, "no log: EINVAL");
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(2, 2, log_collect, NULL) == 0 && ulpt_log_set_raw(raw_drain, (void *)p) == 0,
	      "setup: 4 slots, a threshold of 2, the raw drain");
	for (int i = 0; i < stores; i++)
		p[i & 7] = (uint64_t)i;
	CHECK(ulpt_log_drain() >= 0 && raw_next == (uint64_t)stores && raw_bad == 0 && lcalls == 0,
	      "every store once, in order, through the raw drain only (%lu, %lu wrong, %d batches)",
	      (unsigned long)raw_next, (unsigned long)raw_bad, lcalls);
	CHECK(raw_calls >= (uint64_t)stores / 4, "a drain per threshold or full ring (%lu)",
	      (unsigned long)raw_calls);
	CHECK(ulpt_log_set_raw(NULL, NULL) == 0, "back to the callback");
	p[0] = 1;
	CHECK(ulpt_log_drain() == 1 && lcalls == 1 && lrecs[0].value == 1, "the callback again");
	CHECK(h_count == 0, "no log event reached the handler (%d)", h_count);
	return 0;
}

/* A callback that writes a logged page itself (a tool keeping records on a logged heap): its
 * writes are logged too, between the records it was given and the access that found the ring
 * full, and none of the program's is lost. */
static volatile uint64_t *cb_page, *cb_prog;
static volatile int cb_writes, cb_records, cb_stopping;

static void log_writes_too(const struct ulpt_log_rec *r, size_t n, void *arg)
{
	(void)arg;
	for (size_t i = 0; i < n; i++) {
		if (r[i].start == (uintptr_t)cb_page)
			cb_records++;
		else if (r[i].start >= (uintptr_t)cb_prog && r[i].start < (uintptr_t)cb_prog + 64 &&
			 r[i].value == lseq_next)
			lseq_next++;
		else
			lseq_bad++;
	}
	if (!cb_stopping) {
		cb_page[0] = (uint64_t)n;
		cb_writes++;
	}
}

static int t_log_callback_logs(void)
{
	volatile uint64_t *p = pages(2);
	int n = backend == ULPT_BACKEND_ULPT ? 20000 : 2000;

	cb_prog = p;
	cb_page = p + 512;
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 8192, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(4, 0, log_writes_too, NULL) == 0, "setup");
	for (int i = 0; i < n; i++)
		p[i & 7] = (uint64_t)i;
	cb_stopping = 1;
	CHECK(ulpt_log_stop() > 0, "stop");
	CHECK(lseq_next == (uint64_t)n && lseq_bad == 0, "the program's records, each once, in order (%lu, %lu wrong)",
	      (unsigned long)lseq_next, (unsigned long)lseq_bad);
	CHECK(cb_writes > 0 && cb_records == cb_writes, "the callback's own writes logged (%d of %d)",
	      cb_records, cb_writes);
	CHECK(h_count == 0, "no delivery (%d)", h_count);
	return 0;
}

/* fork: the child has the thread's log with its records, and no consumer thread. */
static volatile uint64_t *fork_log_page;
static void fork_log_child(void)
{
	int n = ulpt_log_drain();

	fork_log_page[5] = 6;
	_exit(n == 3 && lrec_n == 3 && lrecs[2].value == 3 && ulpt_log_drain() == 1 &&
	      lrecs[3].value == 6 ? 0 : 3);
}

static void fork_consumer_child(void)
{
	_exit(ulpt_log_drain() >= 0 ? 0 : 3);     /* not -EBUSY: its own drains */
}

static int t_log_fork(void)
{
	int st;

	fork_log_page = pages(1);
	CHECK(setup(ULPT_PERMIT) == 0 &&
	      ulpt_protect((void *)fork_log_page, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(4, 0, log_collect, NULL) == 0, "setup");
	for (int i = 0; i < 3; i++)
		fork_log_page[i] = (uint64_t)i + 1;
	st = child_status(fork_log_child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child drains the 3 records, then logs its own (%#x)", st);
	CHECK(ulpt_log_drain() == 3 && lrec_n == 3, "the parent still has its 3");
	CHECK(ulpt_log_consumer_start() == 0, "consumer");
	st = child_status(fork_consumer_child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child of a thread with a consumer drains itself (%#x)", st);
	CHECK(ulpt_log_stop() == 0 && h_count == 0, "stop");
	return 0;
}

/* Every bad argument is a negative errno. */
static int t_log_bad_arguments(void)
{
	char *p = pages(1);

	CHECK(ulpt_log_start(4, 0, log_collect, NULL) == -EINVAL, "before init");
	CHECK(ulpt_init(backend) == 0, "init");
	CHECK(ulpt_log_start(0, 0, log_collect, NULL) == -EINVAL, "one slot");
	CHECK(ulpt_log_start(25, 0, log_collect, NULL) == -EINVAL, "size_shift above 24");
	CHECK(ulpt_log_start(4, 17, log_collect, NULL) == -EINVAL, "a threshold above the size");
	CHECK(ulpt_log_start(4, 0, NULL, NULL) == -EINVAL, "no callback");
	CHECK(ulpt_log_drain() == -EINVAL && ulpt_log_stop() == -EINVAL && !ulpt_log_ring() &&
	      ulpt_log_consumer_start() == -EINVAL && ulpt_log_consumer_stop() == -EINVAL, "no log");
	CHECK(ulpt_log_start(4, 16, log_collect, NULL) == 0, "start (a threshold of the size)");
	CHECK(ulpt_log_start(4, 0, log_collect, NULL) == -EBUSY, "start twice");
	CHECK(ulpt_log_consumer_stop() == -EINVAL, "no consumer to stop");
	CHECK(ulpt_protect(p, 4096, 0x200) == -EINVAL && ulpt_protect(p, 4096, ULPT_DENY_LOG << 1) == -EINVAL,
	      "unknown rights");
	CHECK(ulpt_protect_lines(p, 128, ULPT_DENY_X | ULPT_DENY_LOG) == -EINVAL, "execute on a line, logged");
	CHECK(ulpt_protect(p, 4096, ULPT_DENY_LOG) == 0 && ulpt_page_rights(p) == (int)ULPT_DENY_LOG,
	      "LOG alone (it restricts nothing)");
	p[0] = 1;
	CHECK(ulpt_log_stop() == 0 && ulpt_log_stop() == -EINVAL, "stop, twice");
	CHECK(ulpt_fini() == 0 && ulpt_log_drain() == -EINVAL, "fini");
	return 0;
}

/* The callback may use vector registers whatever the handler's flags: the program's survive a
 * log event (ULPT: a GPR-only stub, then ulpt_log_call_vec_; mprotect: a signal). */
static void log_vector(const struct ulpt_log_rec *r, size_t n, void *arg)
{
	char buf[64];

	log_collect(r, n, arg);
	memset(big_src, lcalls, sizeof(big_src));
	memcpy(big_dst, big_src, sizeof(big_dst));
	snprintf(buf, sizeof(buf), "%f", 3.25 * lcalls);
}

static int t_log_vector_state(void)
{
	volatile uint64_t *p = pages(1);
	uint64_t before[16][2], after[16][2];

	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(record, NULL, ULPT_HANDLER_GPR_ONLY) == 0 &&
	      ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(2, 1, log_vector, NULL) == 0, "setup (a threshold of 1)");
	xmm_around_store(before, after, p);
	CHECK(lcalls == 1 && big_dst[4095] == 1, "the callback ran memcpy and printf at the event (%d)", lcalls);
	CHECK(memcmp(before, after, sizeof(before)) == 0, "xmm0-15 of the program are intact");
	return 0;
}

/* A REP string instruction: a record per iteration, of the elements on logging pages (on
 * mprotect too, where it runs whole): 8-byte stores from a logged page into an open one. */
extern const char lg_rep[];
static int t_log_rep(void)
{
	uint64_t *p = pages(2);
	void *d = p + 508;
	unsigned long n = 8;

	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect(p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_log_start(5, 0, log_collect, NULL) == 0, "setup");
	asm volatile("lg_rep: rep stosq" : "+D"(d), "+c"(n) : "a"(0x55ull) : "memory");
	CHECK(ulpt_log_drain() == 4 && lrec_n == 4, "four records, none for the open page (%d)", lrec_n);
	for (int i = 0; i < 4; i++)
		CHECK(rec_is(&lrecs[i], p + 508 + i, 8, ULPT_DENY_W, lg_rep) && lrecs[i].has_value &&
		      lrecs[i].value == 0x55, "record %d: its element, in order, with its value", i);
	CHECK(h_count == 0 && p[511] == 0x55 && p[515] == 0x55, "no delivery; the stores were made");
	return 0;
}

/* --- the count table --------------------------------------------------------------------- */

/* A table for the lines of n pages from p, mapped (16 bytes per line), and its base. */
static void *count_table(volatile void *p, int n, void **base)
{
	void *t = mmap(NULL, (size_t)n * ULPT_PAGE_SIZE / 8, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		abort();
	*base = ulpt_count_base(t, (const void *)p);
	return t;
}

/* The table of n pages from p holds the counts in want (by line from p) and nothing else: 1,
 * or 0 with the first line that differs printed. */
static int counts_match(void *base, volatile void *p, int n, const struct ulpt_count *want)
{
	for (int l = 0; l < n * 32; l++) {
		const struct ulpt_count *c = ulpt_count_line(base, (const char *)p + 128 * l);

		if (c->reads != want[l].reads || c->writes != want[l].writes) {
			fprintf(stderr, "# line %d: %lu reads, %lu writes; want %lu, %lu\n", l,
				(unsigned long)c->reads, (unsigned long)c->writes,
				(unsigned long)want[l].reads, (unsigned long)want[l].writes);
			return 0;
		}
	}
	return 1;
}

/* The accesses of t_log_records, counted: a load, a store and a read-modify-write in line 0,
 * a store across two logged pages in the first one's last line, a store from an open page
 * into a logged one in the open page's line, a store across two lines in the first. */
static int t_count_table(void)
{
	volatile uint64_t *p = pages(4);
	volatile char *q = (volatile char *)(p + 1024);         /* pages 2 and 3 */
	struct ulpt_count want[128] = { 0 }, *c;
	void *base;

	count_table(p, 4, &base);
	CHECK(setup(ULPT_PERMIT) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_RW | ULPT_DENY_LOG) == 0 &&
	      ulpt_protect((void *)(p + 512), 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_protect((void *)(q + 4096), 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0, "protect");
	CHECK(ulpt_count_start(base) == 0, "start");
	log_accesses(p, 0x0102030405060708ull);
	*(volatile uint32_t *)(q + 4094) = 0xaabbccdd;
	*(volatile uint64_t *)((volatile char *)p + 124) = 9;
	want[0] = (struct ulpt_count){ 2, 3 };
	want[31].writes = 1;
	want[95].writes = 1;
	CHECK(counts_match(base, p, 4, want), "line 0: 2 reads (the load, the RMW's), 3 writes; "
	      "one write each in the lines of the two stores' first bytes; no other count");
	CHECK(p[3] == 5 && p[2] == 0x11223344 && *(volatile uint64_t *)((volatile char *)p + 4092) ==
	      0x0102030405060708ull && *(volatile uint32_t *)(q + 4094) == 0xaabbccdd,
	      "the accesses were made");
	want[0].reads += 2;                                     /* those reads of page 0 */
	want[31].reads = 1;
	CHECK(counts_match(base, p, 4, want), "reading them counts their reads");
	if (backend == ULPT_BACKEND_ULPT) {
		CHECK(ulpt_protect_lines((void *)(q + 128), 128, ULPT_DENY_W | ULPT_DENY_LOG) == 0,
		      "a line with LOG");
		q[130] = 1;
		want[65].writes = 1;
		CHECK(counts_match(base, p, 4, want), "a line's write");
	}
	c = ulpt_count_line(base, (const void *)p);
	CHECK(__atomic_exchange_n(&c->reads, 0, __ATOMIC_SEQ_CST) == 4 &&
	      __atomic_exchange_n(&c->writes, 0, __ATOMIC_SEQ_CST) == 3 && !c->reads && !c->writes,
	      "taken with XCHG: 4 and 3, then 0");
	CHECK(h_count == 0 && ulpt_log_ring() == NULL, "no delivery, no ring (%d)", h_count);
	CHECK(ulpt_count_stop() == 0, "stop");
	p[2] = 3;
	CHECK(h_count == 1 && c->writes == 0, "after ulpt_count_stop: delivered, not counted (%d)", h_count);
	return 0;
}

/* Vector loads and stores count with their own kind: a store is a write only, a load a read
 * only (SSE, and AVX where the CPU has it). */
static int t_count_vector(void)
{
	char *p = pages(1);
	struct ulpt_count want[32] = { 0 };
	void *base;
	int avx = have_avx();

	count_table(p, 1, &base);
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect(p, 4096, ULPT_DENY_RW | ULPT_DENY_LOG) == 0 &&
	      ulpt_count_start(base) == 0, "setup");
	asm volatile("pxor %%xmm0, %%xmm0\n\t"
		     "movdqu %%xmm0, 16(%0)\n\t"         /* line 0: a write */
		     "movups %%xmm0, 128(%0)\n\t"        /* line 1: a write */
		     "movq %%xmm0, 256(%0)\n\t"          /* line 2: a write */
		     "movdqu 384(%0), %%xmm0\n\t"        /* line 3: a read */
		     :: "r"(p) : "xmm0", "memory");
	want[0].writes = want[1].writes = want[2].writes = 1;
	want[3].reads = 1;
	if (avx) {
		asm volatile("vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
			     "vmovdqu %%ymm0, 512(%0)\n\t"   /* line 4 */
			     "vmovaps %%ymm0, 640(%0)\n\t"   /* line 5 */
			     "vmovdqu 768(%0), %%ymm0\n\t"   /* line 6: a read */
			     "vzeroupper"
			     :: "r"(p) : "xmm0", "memory");
		want[4].writes = want[5].writes = 1;
		want[6].reads = 1;
	}
	CHECK(counts_match(base, p, 1, want), "each store one write and no read, each load one read%s",
	      avx ? " (SSE and AVX)" : " (SSE; no AVX)");
	CHECK(h_count == 0, "no delivery (%d)", h_count);
	return 0;
}

/* REP string instructions: each iteration counts, its elements on logging pages only; a
 * backward copy; a REPE CMPSB that stops early. Pages 1 and 3 log (1 reads and writes, 3
 * writes), 0 and 2 are open. */
static int t_count_rep(void)
{
	char *p = pages(4), *p1 = p + 4096, *p3 = p + 3 * 4096;
	struct ulpt_count want[128] = { 0 };
	void *base, *d, *s;
	unsigned long n;

	count_table(p, 4, &base);
	CHECK(setup(ULPT_PERMIT) == 0 &&
	      ulpt_protect(p1, 4096, ULPT_DENY_RW | ULPT_DENY_LOG) == 0 &&
	      ulpt_protect(p3, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_count_start(base) == 0, "setup");
	/* 8-byte stores from page 0's last 64 bytes to page 3's first 64. */
	d = p1 - 64;
	n = (64 + 2 * 4096 + 64) / 8;
	asm volatile("rep stosq" : "+D"(d), "+c"(n) : "a"(0x0101010101010101ull) : "memory");
	for (int l = 32; l < 64; l++)
		want[l].writes = 16;
	want[96].writes = 8;
	CHECK(n == 0 && counts_match(base, p, 4, want), "rep stosq: 16 writes in each line of page 1, "
	      "8 in page 3's first, none in the open pages");
	/* 300 bytes backward, [p1 + 2000, +300) to [p3 + 1000, +300). */
	s = p1 + 2299;
	d = p3 + 1299;
	n = 300;
	asm volatile("std\n\trep movsb\n\tcld" : "+S"(s), "+D"(d), "+c"(n) :: "memory", "cc");
	want[32 + 15].reads = 48;
	want[32 + 16].reads = 128;
	want[32 + 17].reads = 124;
	want[96 + 7].writes = 24;
	want[96 + 8].writes = 128;
	want[96 + 9].writes = 128;
	want[96 + 10].writes = 20;
	CHECK(n == 0 && counts_match(base, p, 4, want), "std; rep movsb: a read and a write per byte, "
	      "in their lines");
	/* Pages 1 and 3 agree on their first 64 bytes (the stores above): 65 iterations. */
	s = p1;
	d = p3;
	n = 100;
	asm volatile("repe cmpsb" : "+S"(s), "+D"(d), "+c"(n) :: "memory", "cc");
	want[32].reads += 65;
	CHECK(n == 35 && counts_match(base, p, 4, want), "repe cmpsb stops after 65 iterations: 65 "
	      "reads in page 1 (page 3 does not deny reads) (rcx %lu)", n);
	CHECK(h_count == 0, "no delivery (%d)", h_count);
	return 0;
}

/* A thread takes the counter with XCHG while another counts into it: no addition lost. */
static volatile int take_stop;
static volatile uint64_t taken;
static void *taker(void *a)
{
	struct ulpt_count *c = a;

	while (!take_stop) {
		taken += __atomic_exchange_n(&c->writes, 0, __ATOMIC_SEQ_CST);
		sched_yield();
	}
	return NULL;
}

static int t_count_take(void)
{
	volatile uint64_t *p = pages(1);
	int n = backend == ULPT_BACKEND_ULPT ? 100000 : 20000;
	struct ulpt_count *c;
	pthread_t t;
	void *base;

	count_table(p, 1, &base);
	c = ulpt_count_line(base, (const void *)p);
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_protect((void *)p, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_count_start(base) == 0 && pthread_create(&t, NULL, taker, c) == 0, "setup");
	for (int i = 0; i < n; i++)
		p[i & 7] = (uint64_t)i;
	take_stop = 1;
	pthread_join(t, NULL);
	CHECK(taken + c->writes == (uint64_t)n && c->reads == 0,
	      "taken while counting, and what is left: %d (%lu + %lu)", n, (unsigned long)taken,
	      (unsigned long)c->writes);
	CHECK(h_count == 0, "no delivery (%d)", h_count);
	return 0;
}

/* Four threads with a table each, one shared, each making locked read-modify-writes: on ULPT
 * all four into one line (the additions are atomic), on mprotect each into its own page (a
 * page opened for one thread's instruction is open to the others). */
#define CNT_THREADS 4
static volatile char *cnt_page;
static void *cnt_base;
static volatile int cnt_errors;
static int cnt_each;

static void *cnt_thread(void *a)
{
	volatile uint64_t *w = (volatile uint64_t *)(cnt_page + (backend == ULPT_BACKEND_ULPT ? 0 :
							       4096 * (intptr_t)a));

	if (ulpt_count_start(cnt_base) != 0)
		cnt_errors++;
	for (int i = 0; i < cnt_each; i++)
		__atomic_add_fetch(w, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int t_count_threads(void)
{
	pthread_t t[CNT_THREADS];
	struct ulpt_count want[CNT_THREADS * 32] = { 0 };
	int ulpt = backend == ULPT_BACKEND_ULPT;

	cnt_each = ulpt ? 20000 : 2000;
	cnt_page = pages(CNT_THREADS);
	count_table(cnt_page, CNT_THREADS, &cnt_base);
	CHECK(setup(ULPT_PERMIT) == 0 &&
	      ulpt_protect((void *)cnt_page, CNT_THREADS * 4096, ULPT_DENY_RW | ULPT_DENY_LOG) == 0, "setup");
	for (intptr_t i = 0; i < CNT_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, cnt_thread, (void *)i) == 0, "thread");
	for (int i = 0; i < CNT_THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < CNT_THREADS; i++) {
		struct ulpt_count *w = &want[ulpt ? 0 : 32 * i];
		w->reads += (uint64_t)cnt_each;
		w->writes += (uint64_t)cnt_each;
	}
	CHECK(cnt_errors == 0 && h_count == 0, "each thread started its table, no delivery (%d, %d)",
	      cnt_errors, h_count);
	CHECK(counts_match(cnt_base, cnt_page, CNT_THREADS, want),
	      "a read and a write per lock add, %d of them per thread, none lost", cnt_each);
	return 0;
}

/* Threads without a table, and the count table beside the access log's calls. */
static void *nocount_writer(void *a)
{
	(void)a;
	nolog_page[1] = 7;
	return NULL;
}

static int t_count_no_table_thread(void)
{
	struct ulpt_count *c;
	pthread_t t;
	void *base;

	nolog_page = pages(1);
	count_table(nolog_page, 1, &base);
	c = ulpt_count_line(base, (const void *)nolog_page);
	CHECK(setup(ULPT_PERMIT) == 0 &&
	      ulpt_protect((void *)nolog_page, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0, "setup");
	CHECK(ulpt_count_start(base) == 0, "start");
	nolog_page[0] = 2;
	CHECK(h_count == 0 && c->writes == 1, "with a table: counted (%d, %lu)", h_count,
	      (unsigned long)c->writes);
	CHECK(pthread_create(&t, NULL, nocount_writer, NULL) == 0 && pthread_join(t, NULL) == 0, "thread");
	CHECK(h_count == 1 && h_last.addr == (uintptr_t)&nolog_page[1] && h_last.tid != gettid() &&
	      c->writes == 1, "another thread, without a table: delivered there (%d)", h_count);
	CHECK(ulpt_log_start(4, 0, log_collect, NULL) == -EBUSY, "no access log beside it");
	CHECK(ulpt_log_drain() == -EINVAL && ulpt_log_stop() == -EINVAL && !ulpt_log_ring() &&
	      ulpt_log_set_raw(NULL, NULL) == -EINVAL && ulpt_log_consumer_start() == -EINVAL,
	      "the access log's calls see no log");
	CHECK(ulpt_count_stop() == 0 && ulpt_log_start(4, 0, log_collect, NULL) == 0, "stop; a log");
	CHECK(ulpt_count_stop() == -EINVAL, "no table to stop beside a log");
	nolog_page[0] = 3;
	CHECK(lrec_n == 0 && c->writes == 1 && ulpt_count_start(base) == 0 && lrec_n == 1 &&
	      lrecs[0].value == 3 && !ulpt_log_ring(), "a table in the log's place: the log's record to "
	      "its callback, and no ring (%d)", lrec_n);
	nolog_page[0] = 4;
	CHECK(c->writes == 2 && lrec_n == 1 && ulpt_count_start(base) == -EBUSY, "then counted");
	CHECK(ulpt_count_stop() == 0 && ulpt_log_stop() == -EINVAL && h_count == 1, "stop: no log left");
	return 0;
}

/* fork: the child has the thread's table (its copy of the memory), and counts into it. */
static volatile uint64_t *fork_cnt_page;
static void *fork_cnt_base;
static void fork_count_child(void)
{
	struct ulpt_count *c = ulpt_count_line(fork_cnt_base, (const void *)fork_cnt_page);

	fork_cnt_page[5] = 6;
	fork_cnt_page[6] = 7;
	_exit(c->writes == 5 && h_count == 0 ? 0 : 3);
}

static int t_count_fork(void)
{
	struct ulpt_count *c;
	int st;

	fork_cnt_page = pages(1);
	count_table(fork_cnt_page, 1, &fork_cnt_base);
	c = ulpt_count_line(fork_cnt_base, (const void *)fork_cnt_page);
	CHECK(setup(ULPT_PERMIT) == 0 &&
	      ulpt_protect((void *)fork_cnt_page, 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0 &&
	      ulpt_count_start(fork_cnt_base) == 0, "setup");
	for (int i = 0; i < 3; i++)
		fork_cnt_page[i] = (uint64_t)i + 1;
	st = child_status(fork_count_child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child counts on from 3 to 5 (%#x)", st);
	CHECK(c->writes == 3 && h_count == 0, "the parent's table still says 3 (%lu)",
	      (unsigned long)c->writes);
	return 0;
}

/* Every bad argument is a negative errno. */
static int t_count_bad_arguments(void)
{
	char *p = pages(1);
	void *base;

	count_table(p, 1, &base);
	CHECK(ulpt_count_start(base) == -EINVAL, "before init");
	CHECK(ulpt_init(backend) == 0, "init");
	CHECK(ulpt_count_stop() == -EINVAL, "stop without a table");
	CHECK(ulpt_count_start(NULL) == -EINVAL, "base 0");
	CHECK(ulpt_count_start((char *)base + 16) == -EINVAL, "base not 32-byte aligned");
	CHECK(ulpt_count_start((void *)(1ul << 47)) == -EINVAL, "base at the user limit");
	CHECK(ulpt_count_start((void *)-4096ul) == -EINVAL, "base not canonical");
	CHECK(ulpt_count_start(base) == 0, "start");
	CHECK(ulpt_count_start(base) == -EBUSY, "start twice");
	CHECK(ulpt_count_stop() == 0 && ulpt_count_stop() == -EINVAL, "stop, twice");
	CHECK(ulpt_count_start(base) == 0 && ulpt_fini() == 0 && ulpt_count_stop() == -EINVAL,
	      "ulpt_fini ends it");
	return 0;
}

/*
 * A system call writes pages denied writes: read(2) from a pipe, 6000 bytes across two pages.
 * The data arrives on both backends. mprotect (with userfaultfd): the handler sees the write
 * once, after the call (reason ULPT_REASON_KERNEL, the first byte, the system call's ip), and
 * the pages are closed again. ULPT does not check the kernel's accesses (R-ACC-2): nothing.
 */
static int uffd_missing(void)
{
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0)
		return 1;
	close((int)fd);
	return 0;
}

static int read_pipe(void *to, size_t n)
{
	static char src[8192];
	int fd[2];
	ssize_t got;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 7 + 3);
	if (n > sizeof(src) || pipe(fd) != 0 || write(fd[1], src, n) != (ssize_t)n)
		return 0;
	got = read(fd[0], to, n);
	close(fd[0]);
	close(fd[1]);
	return got == (ssize_t)n && memcmp(to, src, n) == 0;
}

static int t_syscall_write(void)
{
	volatile char *p = pages(3);
	int kernel = backend == ULPT_BACKEND_MPROTECT;

	if (kernel && uffd_missing())
		return skip("no userfaultfd here: the kernel's writes to pages denied writes fail");
	CHECK(setup(ULPT_PERMIT) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 2 * 4096, ULPT_DENY_W) == 0, "protect");
	CHECK(read_pipe((void *)(p + 4000), 6000), "read(2) into the two pages: the data arrived");
	CHECK(h_count == kernel, "delivered %d times, want %d", h_count, kernel);
	if (kernel) {
		const unsigned char *c = (const unsigned char *)h_last.ip;

		CHECK(h_last.reason == ULPT_REASON_KERNEL && h_last.kind == ULPT_DENY_W &&
		      h_last.addr == (uintptr_t)(p + 4000) && h_last.start == h_last.addr &&
		      h_last.size == 0 && !h_last.after && c[0] == 0x0f && c[1] == 0x05,
		      "reason %u, kind %u, addr +%ld, size %zu, at a syscall instruction", h_last.reason,
		      h_last.kind, (long)(h_last.addr - (uintptr_t)p), h_last.size);
	}
	p[4097] = 1;
	CHECK(h_count == kernel + 1 && h_last.reason == ULPT_REASON_PAGE_RIGHTS,
	      "the page denies the program's writes again");
	CHECK(ulpt_protect((void *)p, 2 * 4096, 0) == 0 && read_pipe((void *)p, 100) &&
	      h_count == kernel + 1, "lifted: no delivery");
	return 0;
}

/* The same into a count table: one write in the line of the first byte (mprotect), none
 * (ULPT), and no delivery. */
static int t_syscall_write_count(void)
{
	volatile char *p = pages(2);
	struct ulpt_count want[64] = { 0 };
	void *base;

	if (backend == ULPT_BACKEND_MPROTECT && uffd_missing())
		return skip("no userfaultfd here: the kernel's writes to pages denied writes fail");
	count_table(p, 2, &base);
	CHECK(setup(ULPT_PERMIT) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 2 * 4096, ULPT_DENY_W | ULPT_DENY_LOG) == 0, "protect");
	CHECK(ulpt_count_start(base) == 0, "start");
	CHECK(read_pipe((void *)(p + 300), 5000), "read(2) across the pages: the data arrived");
	want[2].writes = backend == ULPT_BACKEND_MPROTECT;
	CHECK(counts_match(base, p, 2, want), "one write, in line 2");
	p[4096 + 130] = 1;
	want[33].writes = 1;
	CHECK(counts_match(base, p, 2, want) && h_count == 0, "the program's store counted too");
	CHECK(ulpt_count_stop() == 0, "stop");
	return 0;
}

/* A forked child has its own write protection: its read(2) works and is seen once. */
static int t_syscall_write_fork(void)
{
	volatile char *p = pages(1);
	int kernel = backend == ULPT_BACKEND_MPROTECT, st;
	pid_t pid;

	if (kernel && uffd_missing())
		return skip("no userfaultfd here: the kernel's writes to pages denied writes fail");
	CHECK(setup(ULPT_PERMIT) == 0, "setup");
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_W) == 0, "protect");
	pid = fork();
	if (pid == 0) {
		int ok = read_pipe((void *)(p + 8), 64) && h_count == kernel;

		p[1] = 1;
		_exit(ok && h_count == kernel + 1 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child's read(2) arrived, delivered %d time(s), then its store", kernel);
	CHECK(read_pipe((void *)(p + 8), 64) && h_count == kernel, "the parent's too (%d, reason %u)", h_count, h_last.reason);
	return 0;
}

static int t_env_override(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		setenv("ULPT_BACKEND", "mprotect", 1);
		_exit(ulpt_init(ULPT_BACKEND_AUTO) == 0 && ulpt_backend() == ULPT_BACKEND_MPROTECT ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ULPT_BACKEND=mprotect selects mprotect under AUTO");
	pid = fork();
	if (pid == 0) {
		setenv("ULPT_BACKEND", "bogus", 1);
		_exit(ulpt_init(ULPT_BACKEND_AUTO) == -EINVAL ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ULPT_BACKEND=bogus is EINVAL");
	return 0;
}

/* --- byte bounds ------------------------------------------------------------------------- */
/* docs/spec.md 4.5. Lines are denied with ulpt_page_lines on both backends (mprotect: the page
 * denies their union, every line of it, and the bounds open bytes in any line). */
static struct ulpt_bounds bnd;          /* 64-byte aligned by its type */

/* A store of size 1, 2, 4 or 8 at a: one instruction, whose size both backends know. */
static void store_n(volatile char *a, unsigned size, uint64_t v)
{
	switch (size) {
	case 1: *(volatile uint8_t *)a = (uint8_t)v; break;
	case 2: *(volatile uint16_t *)a = (uint16_t)v; break;
	case 4: *(volatile uint32_t *)a = (uint32_t)v; break;
	default: *(volatile uint64_t *)a = v; break;
	}
}

/* A load of size 1 or 8 at a. */
static uint64_t load_n(volatile char *a, unsigned size)
{
	return size == 1 ? *(volatile uint8_t *)a : *(volatile uint64_t *)a;
}

/* The handler's delivery number n was of kind, the access [start, start + size), at its first
 * closed byte at: the reason a line right's on ULPT, the page's on mprotect (it has no lines). */
static int delivered(int n, unsigned kind, volatile char *start, size_t size, volatile char *at)
{
	unsigned reason = backend == ULPT_BACKEND_ULPT ? ULPT_REASON_LINE_RIGHTS : ULPT_REASON_PAGE_RIGHTS;

	if (h_count == n && h_last.kind == kind && h_last.start == (uintptr_t)start &&
	    h_last.size == size && h_last.addr == (uintptr_t)at && h_last.reason == reason)
		return 1;
	fprintf(stderr, "# %d deliveries (want %d): kind %u, start %+ld, size %zu, addr %+ld, reason %u\n",
		h_count, n, h_last.kind, (long)(h_last.start - (uintptr_t)start), h_last.size,
		(long)(h_last.addr - (uintptr_t)at), h_last.reason);
	return 0;
}

static uint64_t line_w(unsigned i) { return (uint64_t)ULPT_DENY_W << (2 * i); }
static uint64_t line_r(unsigned i) { return (uint64_t)ULPT_DENY_R << (2 * i); }

/* The handler (ULPT_PERMIT), the page's bounds, then its lines. */
static int bounds_setup(volatile char *p, uint64_t word)
{
	return setup(ULPT_PERMIT) == 0 && ulpt_page_bounds((void *)p, &bnd) == 0 &&
	       ulpt_page_lines((void *)p, word) == 0;
}

/* R-BND-1, writes: lines 3-5 denied writes, open 16..99, 100..127 (hi 255 counts as 128) and
 * 0..7. A write inside them is not delivered; one with a byte outside is, at that byte. */
static int t_bounds_write(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128, *l4 = p + 4 * 128, *l5 = p + 5 * 128;

	bnd = (struct ulpt_bounds){ .line = { [0] = { 0, 128 }, [3] = { 16, 100 }, [4] = { 100, 255 },
					      [5] = { 0, 8 } } };
	CHECK(bounds_setup(p, line_w(3) | line_w(4) | line_w(5)), "setup");
	store_n(l3 + 16, 8, 1);
	store_n(l3 + 92, 8, 2);
	store_n(l3 + 99, 1, 3);
	store_n(l4 + 124, 8, 4);                /* across lines 4 and 5, open in both */
	store_n(l4 + 100, 2, 5);
	CHECK(h_count == 0, "writes of open bytes: no delivery (%d)", h_count);
	CHECK(load_n(l3 + 16, 8) == 1 && load_n(l3 + 92, 1) == 2 && load_n(l3 + 99, 1) == 3 &&
	      load_n(l4 + 124, 8) == 4 && load_n(l4 + 100, 1) == 5, "and they were made");
	store_n(l3 + 100, 1, 6);
	CHECK(delivered(1, ULPT_DENY_W, l3 + 100, 1, l3 + 100), "the byte at hi: delivered");
	store_n(l3 + 14, 4, 7);
	CHECK(delivered(2, ULPT_DENY_W, l3 + 14, 4, l3 + 14), "from below lo: at its first byte");
	store_n(l3 + 96, 8, 8);
	CHECK(delivered(3, ULPT_DENY_W, l3 + 96, 8, l3 + 100), "across hi: at hi, inside the access");
	store_n(l5 + 4, 8, 9);
	CHECK(delivered(4, ULPT_DENY_W, l5 + 4, 8, l5 + 8), "line 5's 8..11 closed: at 8");
	store_n(l4 + 99, 1, 10);
	CHECK(delivered(5, ULPT_DENY_W, l4 + 99, 1, l4 + 99), "line 4 below its lo");
	CHECK(load_n(l3 + 96, 8) == 8 && load_n(l4 + 99, 1) == 10, "ULPT_PERMIT: the writes were made");
	/* Other lines: not denied on ULPT; on mprotect denied, and open as their bounds say. */
	store_n(p + 8, 8, 11);
	store_n(p + 128 + 8, 8, 12);
	CHECK(h_count == (backend == ULPT_BACKEND_ULPT ? 5 : 6), "line 0 (open 0..127), line 1 (none open): %d", h_count);
	return 0;
}

/* R-BND-1, reads: line 2 denied reads, open 8..23; its writes are allowed. */
static int t_bounds_read(void)
{
	volatile char *p = pages(1), *l2 = p + 2 * 128;
	uint64_t v[2];

	for (int i = 0; i < 128; i++)
		l2[i] = (char)i;
	bnd = (struct ulpt_bounds){ .line = { [2] = { 8, 24 } } };
	CHECK(bounds_setup(p, line_r(2)), "setup");
	CHECK(load_n(l2 + 8, 8) == 0x0f0e0d0c0b0a0908ull && load_n(l2 + 23, 1) == 23, "loads of open bytes");
	asm volatile("movdqu (%1), %%xmm0\n movdqu %%xmm0, %0" : "=m"(v) : "r"(l2 + 8) : "xmm0", "memory");
	CHECK(h_count == 0 && v[0] == 0x0f0e0d0c0b0a0908ull && v[1] == 0x1716151413121110ull,
	      "a 16-byte load of 8..23: no delivery (%d)", h_count);
	CHECK(load_n(l2 + 24, 1) == 24 && delivered(1, ULPT_DENY_R, l2 + 24, 1, l2 + 24), "the byte at hi");
	CHECK(load_n(l2 + 20, 8) == 0x1b1a191817161514ull && delivered(2, ULPT_DENY_R, l2 + 20, 8, l2 + 24),
	      "a load across hi: at hi");
	CHECK(load_n(l2 + 7, 1) == 7 && delivered(3, ULPT_DENY_R, l2 + 7, 1, l2 + 7), "the byte below lo");
	store_n(l2 + 40, 8, 0x99);
	CHECK(h_count == 3, "writes are not denied (%d)", h_count);
	CHECK(load_n(l2 + 40, 8) == 0x99 && delivered(4, ULPT_DENY_R, l2 + 40, 8, l2 + 40), "the write was made");
	return 0;
}

/* R-BND-2: the bounds are read at the access: a plain store to them applies to the next. */
static int t_bounds_store(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128;

	bnd = (struct ulpt_bounds){ 0 };
	CHECK(bounds_setup(p, line_w(3)), "setup");
	store_n(l3 + 50, 1, 1);
	CHECK(delivered(1, ULPT_DENY_W, l3 + 50, 1, l3 + 50), "no byte open");
	bnd.line[3][1] = 64;
	asm volatile("" ::: "memory");          /* the compiler keeps the store before the access */
	store_n(l3 + 50, 1, 2);
	CHECK(h_count == 1, "hi 64: open now (%d)", h_count);
	bnd.line[3][0] = 60;
	asm volatile("" ::: "memory");
	store_n(l3 + 50, 1, 3);
	store_n(l3 + 60, 4, 4);
	CHECK(delivered(2, ULPT_DENY_W, l3 + 50, 1, l3 + 50), "lo 60: 50 closed again, 60..63 open");
	bnd.line[3][0] = 64;
	asm volatile("" ::: "memory");
	store_n(l3 + 60, 4, 5);
	CHECK(delivered(3, ULPT_DENY_W, l3 + 60, 4, l3 + 60), "lo = hi: none open");
	return 0;
}

/* Rights changes keep the bounds: ulpt_page_deny, ulpt_protect, ulpt_page_lines and
 * ulpt_protect_line_word after ulpt_page_bounds. Page rights are never opened (R-BND-1), and
 * on ULPT a violation's word 0 carries the bounds (R-BND-3). */
static int t_bounds_keep(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128;
	uint64_t field = (uint64_t)(uintptr_t)&bnd << 3;

	bnd = (struct ulpt_bounds){ .line = { [3] = { 0, 64 } } };
	CHECK(bounds_setup(p, line_w(3)), "setup");
	store_n(l3 + 64, 1, 1);
	CHECK(delivered(1, ULPT_DENY_W, l3 + 64, 1, l3 + 64), "a closed byte");
	CHECK(backend != ULPT_BACKEND_ULPT || (h_last.entry[0] & ULPT_BOUNDS_MASK_) == field,
	      "ULPT: word 0 as read holds the bounds (%#lx)", (unsigned long)h_last.entry[0]);
	CHECK(ulpt_page_deny((void *)p, ULPT_DENY_W) == 0 && ulpt_page_rights((void *)p) == (int)ULPT_DENY_W,
	      "page rights, the inline call");
	store_n(l3 + 8, 1, 2);
	CHECK(h_count == 2 && h_last.reason == ULPT_REASON_PAGE_RIGHTS && h_last.addr == (uintptr_t)(l3 + 8),
	      "page rights deny the open bytes too (%d, reason %u)", h_count, h_last.reason);
	CHECK(backend != ULPT_BACKEND_ULPT || (h_last.entry[0] & ULPT_BOUNDS_MASK_) == field,
	      "ULPT: ulpt_page_deny kept them (%#lx)", (unsigned long)h_last.entry[0]);
	CHECK(ulpt_page_deny((void *)p, 0) == 0 && ulpt_page_lines((void *)p, line_w(3)) == 0, "lines again");
	store_n(l3 + 8, 8, 3);
	store_n(l3 + 63, 1, 4);
	CHECK(h_count == 2, "open again (%d)", h_count);
	CHECK(ulpt_protect((void *)p, 4096, ULPT_DENY_R) == 0 && ulpt_protect((void *)p, 4096, 0) == 0 &&
	      ulpt_protect_line_word((void *)p, line_w(3)) == 0, "the general calls");
	store_n(l3 + 8, 8, 5);
	store_n(l3 + 60, 8, 6);
	CHECK(delivered(3, ULPT_DENY_W, l3 + 60, 8, l3 + 64), "still open to 63, closed from 64");
	CHECK(ulpt_page_rights((void *)p) == (backend == ULPT_BACKEND_ULPT ? 0 : (int)ULPT_DENY_W),
	      "the bounds are not rights");
	return 0;
}

/* NULL clears the page's bounds; another ulpt_page_bounds sets them again. */
static int t_bounds_clear(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128;

	bnd = (struct ulpt_bounds){ .line = { [3] = { 0, 128 } } };
	CHECK(bounds_setup(p, line_w(3)), "setup");
	store_n(l3 + 8, 8, 1);
	CHECK(h_count == 0, "open (%d)", h_count);
	CHECK(ulpt_page_bounds((void *)(p + 100), NULL) == 0, "clear (any address in the page)");
	store_n(l3 + 8, 8, 2);
	CHECK(delivered(1, ULPT_DENY_W, l3 + 8, 8, l3 + 8), "closed without bounds");
	CHECK(backend != ULPT_BACKEND_ULPT || !(h_last.entry[0] & ULPT_BOUNDS_MASK_), "ULPT: the field is 0");
	CHECK(ulpt_page_bounds((void *)p, NULL) == 0 && ulpt_protect_bounds((void *)p, NULL) == 0,
	      "clearing none is fine");
	CHECK(ulpt_protect_bounds((void *)p, &bnd) == 0, "set again, the general call");
	store_n(l3 + 8, 8, 3);
	CHECK(h_count == 1, "open again (%d)", h_count);
	return 0;
}

/* ulpt_claim_bounds points a page at bounds only if it has none: -EBUSY leaves the page's own
 * bounds in force; once they are cleared, the claim takes the page. */
static int t_bounds_claim(void)
{
	static struct ulpt_bounds mine;
	volatile char *p = pages(2), *l3 = p + 3 * 128, *q = p + 4096, *q3 = q + 3 * 128;

	bnd = (struct ulpt_bounds){ .line = { [3] = { 0, 16 } } };
	mine = (struct ulpt_bounds){ .line = { [3] = { 0, 128 } } };
	CHECK(ulpt_claim_bounds((void *)p, &mine) == -ENOSYS, "before ulpt_init: ENOSYS");
	CHECK(bounds_setup(p, line_w(3)) && ulpt_page_lines((void *)q, line_w(3)) == 0, "setup");
	CHECK(ulpt_claim_bounds((void *)(p + 5), &mine) == -EBUSY, "a page with bounds: EBUSY");
	store_n(l3 + 8, 8, 1);
	store_n(l3 + 40, 8, 2);
	CHECK(delivered(1, ULPT_DENY_W, l3 + 40, 8, l3 + 40), "the page's own bounds still apply");
	CHECK(ulpt_claim_bounds((void *)(q + 100), &mine) == 0, "a page without: claimed");
	store_n(q3 + 40, 8, 3);
	CHECK(h_count == 1, "the claimed bounds apply (%d)", h_count);
	CHECK(ulpt_claim_bounds((void *)q, &bnd) == -EBUSY, "claimed once: EBUSY");
	CHECK(ulpt_page_bounds((void *)p, NULL) == 0 && ulpt_claim_bounds((void *)p, &mine) == 0,
	      "cleared, then claimed");
	store_n(l3 + 40, 8, 4);
	CHECK(h_count == 1, "open now (%d)", h_count);
	CHECK(ulpt_claim_bounds((void *)p, NULL) == -EINVAL &&
	      ulpt_claim_bounds((void *)q, (const void *)((char *)&mine + 32)) == -EINVAL &&
	      ulpt_claim_bounds((void *)(1ul << 47), &mine) == -EINVAL, "NULL, misaligned, uncovered: EINVAL");
	return 0;
}

/* Whether [lo, hi) is mapped, in one line of /proc/self/maps (the kernel may merge it with a
 * neighbour of the same kind). */
static int maps_has(uintptr_t lo, uintptr_t hi)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *dash;
		uintptr_t a = strtoull(line, &dash, 16), b = strtoull(dash + 1, NULL, 16);

		found = a <= lo && hi <= b;
	}
	if (f)
		fclose(f);
	return found;
}

/* ulpt_owned: libulpt's fault records are its own mapping (on mprotect its alternate signal
 * stack too), a page of the program's is not; EINVAL for bad arguments. */
static int t_owned(void)
{
	volatile char *p = pages(1);
	uintptr_t lo = 0, hi = 0, a = 0, b = 0;
	stack_t ss;

	CHECK(setup(ULPT_PERMIT) == 0, "setup");
	CHECK(ulpt_owned(0, UINTPTR_MAX, &lo, &hi) == 1 && hi > lo, "a range of its own");
	CHECK(maps_has(lo, hi), "mapped: 0x%lx-0x%lx", (unsigned long)lo, (unsigned long)hi);
	CHECK(ulpt_owned(lo + 8, lo + 9, &a, &b) == 1 && a == lo && b == hi, "a byte inside it");
	CHECK(ulpt_owned((uintptr_t)p, (uintptr_t)p + 4096, &a, &b) == 0, "the program's page: not");
	CHECK(ulpt_owned(hi, hi, &a, &b) != 1 || a != lo, "an empty range at its end: not it");
	if (backend == ULPT_BACKEND_MPROTECT && sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE))
		CHECK(ulpt_owned((uintptr_t)ss.ss_sp, (uintptr_t)ss.ss_sp + 1, &a, &b) == 1 &&
		      a == (uintptr_t)ss.ss_sp, "mprotect: the alternate signal stack");
	CHECK(ulpt_owned(2, 1, &a, &b) == -EINVAL && ulpt_owned(0, 1, NULL, &b) == -EINVAL &&
	      ulpt_owned(0, 1, &a, NULL) == -EINVAL, "lo > hi, NULL: EINVAL");
	return 0;
}

/* Every bad argument is a negative errno, and changes nothing. */
static int t_bounds_bad_arguments(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128;
	const struct ulpt_bounds *odd = (const void *)((char *)&bnd + 1), *half = (const void *)((char *)&bnd + 32);

	bnd = (struct ulpt_bounds){ .line = { [3] = { 0, 128 } } };
	CHECK(ulpt_page_bounds((void *)p, &bnd) == -ENOSYS && ulpt_protect_bounds((void *)p, &bnd) == -ENOSYS,
	      "before ulpt_init: ENOSYS");
	CHECK(ulpt_page_bounds((void *)p, odd) == -ENOSYS, "before ulpt_init, even with a bad argument");
	CHECK(bounds_setup(p, line_w(3)), "setup");
	CHECK(ulpt_page_bounds((void *)p, odd) == -EINVAL && ulpt_page_bounds((void *)p, half) == -EINVAL &&
	      ulpt_protect_bounds((void *)p, half) == -EINVAL, "bounds not 64-byte aligned");
	CHECK(ulpt_page_bounds((void *)p, (const void *)(1ul << 47)) == -EINVAL &&
	      ulpt_page_bounds((void *)p, (const void *)-64ul) == -EINVAL, "bounds at or above 2^47");
	CHECK(ulpt_page_bounds((void *)(1ul << 47), &bnd) == -EINVAL &&
	      ulpt_page_bounds((void *)-4096ul, NULL) == -EINVAL &&
	      ulpt_protect_bounds((void *)(1ul << 47), &bnd) == -EINVAL, "a page the table does not cover");
	store_n(l3 + 8, 8, 1);
	CHECK(h_count == 0, "the page's bounds unchanged (%d)", h_count);
	CHECK(ulpt_fini() == 0 && ulpt_page_bounds((void *)p, &bnd) == -ENOSYS, "after ulpt_fini: ENOSYS");
	return 0;
}

/* R-BND-1 with the access log: a ULPT_DENY_LOG page logs only the accesses with a closed byte. */
static int t_bounds_log(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128;
	unsigned reason = backend == ULPT_BACKEND_ULPT ? ULPT_REASON_LINE_RIGHTS : ULPT_REASON_PAGE_RIGHTS;

	bnd = (struct ulpt_bounds){ .line = { [3] = { 32, 64 } } };
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_page_bounds((void *)p, &bnd) == 0 &&
	      ulpt_page_deny((void *)p, ULPT_DENY_LOG) == 0 && ulpt_page_lines((void *)p, line_w(3)) == 0 &&
	      ulpt_log_start(5, 0, log_collect, NULL) == 0, "setup");
	store_n(l3 + 32, 8, 1);
	store_n(l3 + 56, 8, 2);
	store_n(l3 + 64, 1, 3);
	store_n(l3 + 40, 4, 4);
	store_n(l3 + 60, 8, 0x0807060504030201ull);
	CHECK(ulpt_log_drain() == 2 && lrec_n == 2, "two records (%d)", lrec_n);
	CHECK(lrecs[0].start == (uintptr_t)(l3 + 64) && lrecs[0].size == 1 && lrecs[0].kind == ULPT_DENY_W &&
	      lrecs[0].reason == reason && lrecs[0].has_value && lrecs[0].value == 3, "the byte at hi");
	CHECK(lrecs[1].start == (uintptr_t)(l3 + 60) && lrecs[1].size == 8 &&
	      lrecs[1].value == 0x0807060504030201ull, "the store across hi, whole");
	CHECK(h_count == 0 && load_n(l3 + 32, 8) == 1 && load_n(l3 + 40, 1) == 4, "no delivery; every store made");
	return 0;
}

/* R-BND-1 with a count table: line 3 denied reads and writes, open 0..63; only the accesses
 * with a closed byte count. */
static int t_bounds_count(void)
{
	volatile char *p = pages(1), *l3 = p + 3 * 128;
	struct ulpt_count want[32] = { 0 };
	void *base;

	count_table(p, 1, &base);
	bnd = (struct ulpt_bounds){ .line = { [3] = { 0, 64 } } };
	CHECK(setup(ULPT_PERMIT) == 0 && ulpt_page_bounds((void *)p, &bnd) == 0 &&
	      ulpt_page_deny((void *)p, ULPT_DENY_LOG) == 0 &&
	      ulpt_page_lines((void *)p, line_w(3) | line_r(3)) == 0 && ulpt_count_start(base) == 0, "setup");
	store_n(l3, 8, 1);
	store_n(l3 + 56, 8, 2);
	(void)load_n(l3 + 8, 8);
	(void)load_n(l3 + 63, 1);
	__atomic_add_fetch((volatile uint64_t *)(l3 + 16), 1, __ATOMIC_RELAXED);
	CHECK(counts_match(base, p, 1, want), "open: nothing counted");
	store_n(l3 + 64, 1, 3);
	store_n(l3 + 60, 8, 4);
	(void)load_n(l3 + 100, 1);
	__atomic_add_fetch((volatile uint64_t *)(l3 + 64), 1, __ATOMIC_RELAXED);
	want[3].writes = 3;
	want[3].reads = 2;
	CHECK(counts_match(base, p, 1, want) && h_count == 0, "closed: counted, no delivery (%d)", h_count);
	CHECK(ulpt_count_stop() == 0, "stop");
	return 0;
}

/* A REP string instruction: each iteration an access of its own. rep stosb from the last 6
 * bytes of page 0, which denies writes without bounds, into line 0 of page 1, open 0..31
 * (mprotect: page 0 takes one delivery, and the run reaches page 1 out of line). Page 1's
 * elements 32 and 33 are delivered, each at its byte, and none before them. */
static volatile uintptr_t rep_at[64];
static volatile int rep_n;

static enum ulpt_action rep_handler(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (rep_n < 64)
		rep_at[rep_n] = f->addr;
	rep_n++;
	return ULPT_PERMIT;
}

static int t_bounds_rep(void)
{
	volatile char *p = pages(2), *q = p + 4096;
	void *d = (void *)(q - 6);
	unsigned long n = 6 + 34;
	int on_q = 0;

	bnd = (struct ulpt_bounds){ .line = { [0] = { 0, 32 } } };
	CHECK(ulpt_init(backend) == 0 && ulpt_set_handler(rep_handler, NULL, 0) == 0 &&
	      ulpt_page_bounds((void *)q, &bnd) == 0 && ulpt_page_lines((void *)q, line_w(0)) == 0 &&
	      ulpt_page_deny((void *)p, ULPT_DENY_W) == 0, "setup");
	asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(0x5a) : "memory");
	CHECK(n == 0 && p[4090] == 0x5a && q[0] == 0x5a && q[33] == 0x5a && q[34] == 0, "the run completed");
	for (int i = 0; i < rep_n && i < 64; i++) {
		if (rep_at[i] < (uintptr_t)q)
			continue;
		CHECK(rep_at[i] == (uintptr_t)(q + 32 + on_q), "page 1's delivery %d at %+ld", on_q,
		      (long)(rep_at[i] - (uintptr_t)q));
		on_q++;
	}
	CHECK(on_q == 2 && rep_n == (backend == ULPT_BACKEND_ULPT ? 8 : 3),
	      "two on page 1; %d in all (page 0's elements: ULPT each, mprotect once)", rep_n);
	return 0;
}

#define TESTS(X) \
	X(bad_arguments, "every bad argument is a negative errno") \
	X(page_rights, "page rights: deny, fault record, restore, inline get/set") \
	X(line_rights, "line rights (ULPT; EOPNOTSUPP on mprotect)") \
	X(line_word, "ulpt_page_lines: a page's lines from one word (the union of them on mprotect)") \
	X(retry, "ULPT_RETRY after the handler lifts the rights") \
	X(permit, "ULPT_PERMIT lets each access through once") \
	X(permit_signals, "signals whose handlers make permitted accesses arrive amid a permitted access") \
	X(skip, "ULPT_SKIP continues at next_ip") \
	X(default, "ULPT_DEFAULT gives the default SIGSEGV") \
	X(range, "a range across pages") \
	X(cross_rep, "a store across two denied pages: one call; rep movsb over 8 denied pages completes") \
	X(fault_record, "the fault record's start, size and kinds: load, store, read-modify-write, movsb, movdqu") \
	X(vector_state, "a handler using SSE (memcpy, printf) leaves xmm0-15 intact") \
	X(vector_avx, "AVX: ymm0-15 intact, MXCSR the program's after and the default in the handler") \
	X(vector_x87, "x87: seven values on the stack survive; the handler starts with an empty stack") \
	X(threads, "faults in four threads reach the handler on their own thread") \
	X(fork_exec, "fork keeps rights and handler; exec starts clean") \
	X(handler_faults, "a handler that itself faults") \
	X(env_override, "ULPT_BACKEND overrides the automatic choice") \
	X(step_after_write, "ULPT_PERMIT_STEP: the after-call sees the value written") \
	X(step_rmw, "ULPT_PERMIT_STEP on a read-modify-write: one after-call") \
	X(step_next_ip, "the after-call's next_ip sends the program elsewhere") \
	X(step_sigtrap_chain, "the program's SIGTRAP handler still gets its traps") \
	X(step_no_kernel, "ULPT_PERMIT_STEP on ULPT: after-calls with no SIGTRAP") \
	X(unwind, "a backtrace in the handler and the after-call reaches the program (libunwind)") \
	X(step_ptrace, "PTRACE_SINGLESTEP over a store that faults into the handler stops at the next instruction") \
	X(gdb_step, "a store that faults into the handler, for gdb's stepi") \
	X(step_own_tf, "a program that sets TF over a stepped store gets its trap after the after-call") \
	X(step_rip_relative, "ULPT_PERMIT_STEP on a RIP-relative global: values, registers, no SIGTRAP") \
	X(stack_page, "a call, pushes, pops and a return on a stack page denied read and write") \
	X(log_records, "the access log: a load, a store, a read-modify-write (read, then write), stores across pages: start, size, kind, ip, value") \
	X(log_thresh, "the access log's threshold: the callback after the instruction that makes it") \
	X(log_full, "the access log full: 100,000 logged stores (mprotect 20,000) through 16 slots, each record once, in order") \
	X(log_consumer, "the access log's consumer thread on a ring of 4: 50,000 records (mprotect 10,000) exactly, the threshold back after it") \
	X(log_no_log_thread, "ULPT_DENY_LOG pages deliver to a thread without a log, and after ulpt_log_stop") \
	X(log_raw, "the access log's ring read directly: peek, consume, next") \
	X(log_set_raw, "a raw drain (ulpt_log_set_raw) reads the ring itself at every event: each record once, in order") \
	X(log_callback_logs, "a log callback whose own writes are logged, at a full ring: no record lost") \
	X(log_fork, "fork: the child has the log and its records, and no consumer thread") \
	X(log_bad_arguments, "every bad argument of the access log is a negative errno") \
	X(log_vector_state, "the log callback uses SSE under a general-register-only handler: the program's xmm0-15 intact") \
	X(log_rep, "the access log: a REP string instruction has a record per iteration, of its elements on logging pages") \
	X(count_table, "the count table: a load, a store, a read-modify-write (a read and a write), stores across lines and pages (their first byte's line): exact counts per line") \
	X(count_vector, "the count table: SSE and AVX stores count as writes only, loads as reads only") \
	X(count_rep, "the count table: REP string instructions count each iteration, forward and backward, and stop with REPE") \
	X(count_take, "the count table: a counter taken with XCHG by another thread while it counts: none lost") \
	X(count_threads, "the count table shared by four threads, each with its own start: every locked add counted once") \
	X(count_no_table_thread, "a thread without a count table is delivered; a log or a table per thread, a table in a log's place") \
	X(count_fork, "fork: the child counts on in its copy of the table") \
	X(count_bad_arguments, "every bad argument of the count table is a negative errno") \
	X(syscall_write, "read(2) into pages denied writes: the data arrives; mprotect: delivered once after the call (ULPT_REASON_KERNEL), the pages denied again; ULPT: not checked") \
	X(syscall_write_count, "read(2) into pages denied writes with a count table: one write in the first byte's line on mprotect, none on ULPT") \
	X(syscall_write_fork, "read(2) into a page denied writes in a forked child and in its parent: each arrives, delivered once on mprotect") \
	X(bounds_write, "byte bounds (R-BND-1): writes of open bytes not delivered, one with a closed byte delivered at it; lines with none (ULPT: not denied)") \
	X(bounds_read, "byte bounds (R-BND-1): loads of a read-denied line's open bytes (a 16-byte one too) not delivered, others at their first closed byte") \
	X(bounds_store, "byte bounds (R-BND-2): a plain store to the bounds applies to the next access") \
	X(bounds_keep, "byte bounds: ulpt_page_deny, ulpt_protect, ulpt_page_lines, ulpt_protect_line_word keep them; page rights are never opened") \
	X(bounds_clear, "byte bounds: NULL clears them, and they can be set again") \
	X(bounds_claim, "byte bounds: ulpt_claim_bounds sets a page's bounds only if it has none (EBUSY), EINVAL for bad arguments") \
	X(owned, "ulpt_owned: libulpt's fault records (and on mprotect its alternate signal stack) are its own mappings, the program's are not; EINVAL for bad arguments") \
	X(bounds_bad_arguments, "byte bounds: ENOSYS before ulpt_init, EINVAL for misaligned bounds or an uncovered page, nothing changed") \
	X(bounds_log, "byte bounds with the access log: only accesses with a closed byte are logged, whole") \
	X(bounds_count, "byte bounds with a count table: only accesses with a closed byte are counted") \
	X(bounds_rep, "byte bounds: rep stosb from a denied page into a bounded line: its closed elements delivered, each at its byte")

/* Each test: one check, its body in a forked child. */
#define CASE(name, what) static void case_##name(void) { tap_forked(t_##name, 0, "%s: " #name ": " what, self_backend); }
static const char *self_backend;
TESTS(CASE)
#define ROW(name, what) { #name, case_##name, 1 },
static const struct test_case tests[] = { TESTS(ROW) };

int main(int argc, char **argv)
{
	unsigned n = TAP_NTESTS(tests);

	self = argv[0];
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && !strcmp(argv[1], "exec-check"))
		return !(ulpt_backend() == -EINVAL && ulpt_init(ULPT_BACKEND_AUTO) == 0 && ulpt_fini() == 0);
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return tap_run(tests, n, argc - 1, argv + 1);
	if (argc < 2 || (strcmp(argv[1], "ulpt") && strcmp(argv[1], "mprotect"))) {
		fprintf(stderr, "usage: ulpt-test ulpt|mprotect [NAME...] | --list\n");
		return 2;
	}
	self_backend = argv[1];
	backend = !strcmp(argv[1], "ulpt") ? ULPT_BACKEND_ULPT : ULPT_BACKEND_MPROTECT;
	if (backend == ULPT_BACKEND_ULPT) {
		int r = ulpt_init(ULPT_BACKEND_ULPT);
		if (r == -ENODEV) {
			/* No test runs without ULPT: the names are still checked. */
			unsigned char sel[TAP_NTESTS(tests)] = { 0 };
			for (int a = 2; a < argc; a++)
				if (!test_select(tests, n, argv[a], strlen(argv[a]), sel)) {
					printf("Bail out! no test named \"%s\" (--list lists them)\n", argv[a]);
					return 2;
				}
			tap_plan(1);
			tap_ok(1, "%s: the ULPT backend reports itself unavailable (ENODEV)", argv[1]);
			return tap_done();
		}
		if (r != 0) {
			tap_plan(1);
			tap_ok(0, "ulpt_init(ULPT): %s", strerror(-r));
			return 1;
		}
		ulpt_fini();
	}
	/* Not a tail call: gdb's backtraces (tests/suites/libulpt.sh) reach main. */
	int r = tap_run(tests, n, argc - 2, argv + 2);
	fflush(stdout);
	return r;
}
