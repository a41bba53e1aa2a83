/*
 * primitives: the two operations every watchpoint or guard-page scheme is built from, on each
 * mechanism Linux and ULPT offer for changing a process's own access rights:
 *   protect_ns           one rights change of one page, followed by an access the new rights
 *                        allow (a load after denying writes, a store after allowing them):
 *                        the page stays populated and recently touched, as a watchpoint
 *                        tool's page is, so each change also pays for the TLB entry it makes
 *                        stale (a change of an untouched page skips that work: the guest's
 *                        TLB flush for mprotect(), the refill after a ULPT page change). The
 *                        page is the middle one of a populated 16-page mapping, as a watched
 *                        page lies in a larger mapping (data, bss, heap): mprotect() splits
 *                        the mapping and merges it back, which a page alone in its mapping
 *                        does not pay (4-5x less in QEMU)
 *   fault_roundtrip_ns   one denied write: the fault, the handler, the write retried/let through
 * Backends:
 *   ulpt      libulpt on the ULPT backend. protect: ulpt_page_deny() (a load and a store through the
 *             table view); line_protect_ns: ulpt_line_deny() of one 128-byte line (a load and a
 *             store). Round trip: a write to a line denied with line rights, delivered through
 *             libulpt's default (vector-saving) entry stub to a C handler that returns
 *             ULPT_PERMIT; the line stays denied, so nothing is re-armed.
 *             fault_roundtrip_gpr_ns: the same through the general-register-only stub
 *             (ULPT_HANDLER_GPR_ONLY), as watchlib's fault path takes it.
 *             fault_roundtrip_raw_ns: the same through a raw stub set with the kernel call
 *             directly (bench/raw-stub.h), no library: what the CPU and kernel give.
 *             fault_roundtrip_raw_step_ns: the raw stub with PERMIT and STEP: the write, then
 *             the after event (docs/spec.md R-RET-4) to the same stub.
 *             fault_roundtrip_gpr_step_ns: libulpt's ULPT_PERMIT_STEP through the
 *             general-register stub, the after-call reading the value written (watchlib -v).
 *             step_sigtraps: SIGTRAPs during both (the step needs none: 0).
 *             store_plain_ns, store_counted_ns, store_logged_ns, store_logged_raw_ns,
 *             store_logged_consumer_ns: an 8-byte store in a loop to a plain page, and to a
 *             line that a ULPT_DENY_LOG page denies writes, counted in a count table, or
 *             logged and drained at the thread's log events (through the callback, or through
 *             a lean drain that reads records in place, ulpt_log_set_raw), or by a consumer
 *             thread (ulpt_log_consumer_start); each store counted or drained once, checked.
 *   mprotect  protect: mprotect() of one page (read-only and read-write alternately). Round
 *             trip: a write to the read-only page, SIGSEGV, the handler mprotects it read-write,
 *             the write retries.
 *   pkeys     one key from pkey_alloc(), given to the page once with pkey_mprotect(). protect:
 *             pkey_set() (RDPKRU + WRPKRU) denying and allowing writes alternately. Round trip:
 *             a write with the key write-disabled, SIGSEGV with si_code SEGV_PKUERR, the handler
 *             allows the key in the PKRU image of the signal frame's XSAVE area (as the kernel's
 *             protection_keys selftest does), sigreturn loads it and the write retries.
 *   uffd      userfaultfd write protection of one populated anonymous page (UFFDIO_REGISTER with
 *             UFFDIO_REGISTER_MODE_WP). protect: one UFFDIO_WRITEPROTECT ioctl (protecting and
 *             unprotecting alternately). Round trip: a write to the protected page blocks; a
 *             handler thread reads the fault message and unprotects the page (which wakes the
 *             writer), the write retries. This needs a context switch each way (with one CPU,
 *             always).
 * Except on ULPT, the handler leaves the page open, so each timed round trip is preceded by a
 * re-arm (one protect of the same backend) inside the timed loop; the backend's median
 * protect_ns is subtracted from every batch's per-operation time. The page is already in the
 * TLB and page tables in every case (nothing measures a first touch).
 * Timing: batches sized to about 20 ms each (by doubling, which also warms up), 21 batches;
 * the per-operation time of each batch gives the median, min and max (ns, CLOCK_MONOTONIC).
 * On a machine that models time (docs/spec.md 11.1) each line also has cycles=<modeled cycles
 * an operation>, from one more batch.
 * Prints, per backend, either
 *   primitive <backend> protect_ns <median> <min> <max>
 *   primitive ulpt line_protect_ns <median> <min> <max>           (ULPT only)
 *   primitive ulpt fault_roundtrip_gpr_ns <median> <min> <max>    (ULPT only)
 *   primitive ulpt fault_roundtrip_raw_ns <median> <min> <max>    (ULPT only)
 *   primitive ulpt fault_roundtrip_raw_step_ns, fault_roundtrip_gpr_step_ns (ULPT only)
 *   primitive ulpt step_sigtraps <n> <n> <n>                      (ULPT only)
 *   primitive <backend> fault_roundtrip_ns <median> <min> <max>
 * or
 *   primitive <backend> unavailable <reason>
 * Usage: primitives [BACKEND...]    (default: mprotect pkeys uffd ulpt)
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <ulpt.h>
#include "raw-stub.h"

#define BATCH_NS 20000000ull        /* target duration of one batch */
#define BATCHES  21

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

struct result {
	double median, min, max;
	double cycles;          /* modeled cycles an operation, or -1 (no model) */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static volatile long handled;   /* faults the current backend's handler took */
static volatile long handled_after;     /* ULPT_PERMIT_STEP's after-calls, after events */
static long attempts;           /* denied writes the timed loops made */
static const char *failure;     /* set by a batch that went wrong: the backend is unavailable */

/* Runs fn(n) in batches of about BATCH_NS; per-operation ns of each batch minus sub. */
static const struct result NONE = { 0, 0, 0, -1 };

static struct result measure(void (*fn)(long), struct result sub)
{
	struct ulpt_model m;
	double cycles = -1;
	double v[BATCHES] = { 0 };
	long n = 2;
	uint64_t t;

	/* A first call's misses (code, TLB) once, not in the calibration: a slow first call
	 * left n at 1, and the loops that change rights do two operations a step, so one step
	 * was counted as one operation (twice the cost). n stays even for them. */
	fn(2);
	for (;;) {
		uint64_t t0 = now_ns();
		fn(n);
		t = now_ns() - t0;
		if (failure || t >= BATCH_NS / 2 || n >= (1l << 40))
			break;
		n = t < BATCH_NS / 64 ? n * 8 : n * 2;
	}
	if (t < BATCH_NS && t > 0)
		n = (long)((double)n * BATCH_NS / t) + 1;
	n += n & 1;
	for (int b = 0; b < BATCHES && !failure; b++) {
		uint64_t t0 = now_ns();
		fn(n);
		v[b] = (double)(now_ns() - t0) / n - sub.median;
	}
	/* On a machine that models time, one more batch is the measured region: counted, so the
	 * same every run. */
	if (!failure && ulpt_model_begin() == 0) {
		fn(n);
		if (ulpt_model_end(&m) == 0)
			cycles = (double)m.cycles / n - (sub.cycles > 0 ? sub.cycles : 0);
	}
	qsort(v, BATCHES, sizeof(v[0]), cmp_double);
	return (struct result){ v[BATCHES / 2], v[0], v[BATCHES - 1], cycles };
}

static void print(const char *backend, const char *what, struct result r)
{
	printf("primitive %s %s %.1f %.1f %.1f", backend, what, r.median, r.min, r.max);
	if (r.cycles >= 0)
		printf(" cycles=%.1f", r.cycles);
	printf("\n");
}

static void unavailable(const char *backend, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void unavailable(const char *backend, const char *fmt, ...)
{
	va_list ap;

	printf("primitive %s unavailable ", backend);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Checks that every denied write since the counts were reset faulted exactly once. */
static int check_handled(const char *backend)
{
	if (failure) {
		unavailable(backend, "%s", failure);
		return -1;
	}
	if (handled != attempts) {
		unavailable(backend, "%ld faults handled for %ld denied writes", handled, attempts);
		return -1;
	}
	return 0;
}

static volatile uint64_t *page;     /* the page every backend works on (its first 8 bytes) */
static long pagesz;

/* --- mprotect and pkeys: one SIGSEGV handler ------------------------------------------------ */

static int mode;                    /* 1: mprotect, 2: pkeys */
static int pkey = -1;
static unsigned pkru_offset;        /* of PKRU in the standard-format XSAVE area */
static sigjmp_buf bail;

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t a = (uintptr_t)si->si_addr, p = (uintptr_t)page;

	(void)sig;
	if (a < p || a >= p + pagesz) {
		signal(SIGSEGV, SIG_DFL);   /* not ours: crash at the access */
		return;
	}
	if (mode == 1 && si->si_code == SEGV_ACCERR) {
		mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE);
		handled++;
		return;
	}
	if (mode == 2 && si->si_code == SEGV_PKUERR && (int)si->si_pkey == pkey) {
		char *xs = (char *)uc->uc_mcontext.fpregs;
		/* fpregs->sw_reserved (at 464) says whether an XSAVE area follows the legacy one. */
		if (!xs || *(uint32_t *)(xs + 464) != 0x46505853u || !pkru_offset) {
			failure = "no XSAVE area with PKRU in the signal frame";
			siglongjmp(bail, 1);
		}
		*(uint32_t *)(xs + pkru_offset) &= ~(3u << (2 * pkey));
		*(uint64_t *)(xs + 512) |= 1ull << 9;   /* XSTATE_BV: PKRU present */
		handled++;
		return;
	}
	failure = "unexpected SIGSEGV si_code";
	siglongjmp(bail, 1);
}

static void mp_protect(long n)
{
	for (long i = 0; i < n; i += 2) {
		mprotect((void *)page, pagesz, PROT_READ);
		(void)page[1];                          /* touched: see protect_ns above */
		mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE);
		page[1] = i;
	}
}

static void mp_trip(long n)
{
	for (long i = 0; i < n; i++) {
		mprotect((void *)page, pagesz, PROT_READ);          /* re-arm (subtracted) */
		page[0] = i;                                        /* faults; the handler opens it */
		attempts++;
	}
}

static void pk_protect(long n)
{
	for (long i = 0; i < n; i += 2) {
		pkey_set(pkey, PKEY_DISABLE_WRITE);
		(void)page[1];
		pkey_set(pkey, 0);
		page[1] = i;
	}
}

static void pk_trip(long n)
{
	for (long i = 0; i < n; i++) {
		pkey_set(pkey, PKEY_DISABLE_WRITE);                 /* re-arm (subtracted) */
		page[0] = i;                                        /* faults; sigreturn allows it */
		attempts++;
	}
}

static void install_segv(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
}

static void run_mprotect(void)
{
	struct result p, t;

	mode = 1;
	failure = NULL;
	install_segv();
	if (sigsetjmp(bail, 1)) {
		mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE);
		unavailable("mprotect", "%s", failure);
		return;
	}
	p = measure(mp_protect, NONE);
	handled = attempts = 0;
	t = measure(mp_trip, p);
	if (check_handled("mprotect") < 0)
		return;
	print("mprotect", "protect_ns", p);
	print("mprotect", "fault_roundtrip_ns", t);
}

static void run_pkeys(void)
{
	unsigned eax, ebx, ecx, edx;
	struct result p, t;

	mode = 2;
	failure = NULL;
	pkey = pkey_alloc(0, 0);
	if (pkey < 0) {
		unavailable("pkeys", "pkey_alloc: %s", strerror(errno));
		return;
	}
	if (pkey_mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE, pkey) != 0) {
		unavailable("pkeys", "pkey_mprotect: %s", strerror(errno));
		return;
	}
	/* CPUID.(EAX=0DH,ECX=9):EBX is the offset of PKRU (state component 9) in the XSAVE area. */
	if (__get_cpuid_count(0xd, 9, &eax, &ebx, &ecx, &edx) && eax >= 4)
		pkru_offset = ebx;
	install_segv();
	if (sigsetjmp(bail, 1)) {
		pkey_set(pkey, 0);
		unavailable("pkeys", "%s", failure);
		return;
	}
	p = measure(pk_protect, NONE);
	handled = attempts = 0;
	t = measure(pk_trip, p);
	pkey_set(pkey, 0);
	/* Back to the default key, so the other backends see an ordinary page. */
	pkey_mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE, 0);
	pkey_free(pkey);
	if (check_handled("pkeys") < 0)
		return;
	print("pkeys", "protect_ns", p);
	print("pkeys", "fault_roundtrip_ns", t);
}

/* --- userfaultfd write protection ------------------------------------------------------------ */

static int uffd = -1;

static int uf_wp(int on)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)page, .len = (uint64_t)pagesz },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};
	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
}

static void *uf_handler(void *arg)
{
	struct uffd_msg msg;

	(void)arg;
	for (;;) {
		ssize_t r = read(uffd, &msg, sizeof(msg));
		if (r != sizeof(msg)) {
			if (r < 0 && errno == EINTR)
				continue;
			failure = "read(userfaultfd) failed";
			return NULL;
		}
		if (msg.event != UFFD_EVENT_PAGEFAULT || !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
			failure = "unexpected userfaultfd message";
			return NULL;
		}
		handled++;
		if (uf_wp(0) != 0) {                    /* unprotect; wakes the writer */
			failure = "UFFDIO_WRITEPROTECT (unprotect) failed";
			return NULL;
		}
	}
}

static void uf_protect(long n)
{
	for (long i = 0; i < n; i += 2) {
		uf_wp(1);
		(void)page[1];
		uf_wp(0);
		page[1] = i;
	}
}

static void uf_trip(long n)
{
	for (long i = 0; i < n && !failure; i++) {
		uf_wp(1);                               /* re-arm (subtracted) */
		page[0] = i;                            /* blocks until the handler thread unprotects */
		attempts++;
	}
}

static void run_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)page, .len = (uint64_t)pagesz },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct result p, t;
	pthread_t th;
	const char *how = "";

	failure = NULL;
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 && errno == EPERM) {   /* unprivileged: user-mode faults only, enough here */
		uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
		how = " (UFFD_USER_MODE_ONLY)";
	}
	if (uffd < 0) {
		unavailable("uffd", "userfaultfd%s: %s", how, strerror(errno));
		return;
	}
	if (ioctl(uffd, UFFDIO_API, &api) != 0) {
		unavailable("uffd", "UFFDIO_API: %s", strerror(errno));
		goto out;
	}
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
		unavailable("uffd", "UFFDIO_REGISTER (write-protect mode): %s", strerror(errno));
		goto out;
	}
	if (!(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT))) {
		unavailable("uffd", "UFFDIO_WRITEPROTECT not offered on anonymous memory");
		goto out;
	}
	if (uf_wp(1) != 0 || uf_wp(0) != 0) {
		unavailable("uffd", "UFFDIO_WRITEPROTECT: %s", strerror(errno));
		goto out;
	}
	if (pthread_create(&th, NULL, uf_handler, NULL) != 0) {
		unavailable("uffd", "pthread_create failed");
		goto out;
	}
	p = measure(uf_protect, NONE);
	handled = attempts = 0;
	t = measure(uf_trip, p);
	pthread_cancel(th);
	pthread_join(th, NULL);
	if (check_handled("uffd") == 0) {
		print("uffd", "protect_ns", p);
		print("uffd", "fault_roundtrip_ns", t);
	}
out:
	close(uffd);    /* unregisters the range */
	uffd = -1;
}

/* --- ULPT through libulpt -------------------------------------------------------------------- */

/* Compiled for general registers only, so that it may also run from libulpt's
 * general-register-only stub (ULPT_HANDLER_GPR_ONLY), which watchlib's fault path uses. */
__attribute__((target("general-regs-only")))
static enum ulpt_action permit(struct ulpt_fault *f, void *arg)
{
	(void)f; (void)arg;
	handled++;
	return ULPT_PERMIT;
}

static void ul_protect(long n)
{
	for (long i = 0; i < n; i += 2) {
		ulpt_page_deny((void *)page, ULPT_DENY_W);
		(void)page[1];
		ulpt_page_deny((void *)page, 0);
		page[1] = i;
	}
}

static void ul_line_protect(long n)
{
	for (long i = 0; i < n; i += 2) {
		ulpt_line_deny((void *)(page + 48), ULPT_DENY_W);   /* line 3 */
		(void)page[49];
		ulpt_line_deny((void *)(page + 48), 0);
		page[49] = i;
	}
}

ULPT_RAW_STUB(raw_entry, handled);
ULPT_RAW_STUB_BITS(raw_step_entry, handled, handled_after, ULPT_INFO_PERMIT | ULPT_INFO_STEP);

/* ULPT_PERMIT_STEP: the after-call reads the value the write stored, as a watchpoint does. */
static volatile uint64_t step_seen;
__attribute__((target("general-regs-only")))
static enum ulpt_action permit_step(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	if (f->after) {
		step_seen = *(volatile uint64_t *)f->start;
		handled_after++;
		return ULPT_PERMIT;
	}
	handled++;
	return ULPT_PERMIT_STEP;
}

/* SIGTRAPs during the step measurements: the step must not enter the kernel. */
static volatile long sigtraps;
static void count_sigtrap(int sig)
{
	(void)sig;
	sigtraps++;
}

/* Each fault had its after-call or after event. */
static int check_after(void)
{
	if (handled_after != handled) {
		unavailable("ulpt", "%ld after-calls for %ld faults", handled_after, handled);
		return -1;
	}
	return 0;
}

static void ul_trip(long n)
{
	for (long i = 0; i < n; i++) {
		page[0] = i;                            /* line 0 denied: the handler permits it */
		attempts++;
	}
}

/* A store in a loop: to a plain page, and to a line that a ULPT_DENY_LOG page's entry denies
 * writes, counted (a count table, ulpt_count_start(3)) or logged (the access log, drained by
 * the thread's log events every 2,048 records, ulpt_log_start(3), or by a consumer thread). */
static volatile uint64_t *plain_pg, *log_pg;
static long log_stores, log_seen;

static void ul_store_plain(long n)
{
	for (long i = 0; i < n; i++)
		plain_pg[1] = i;
}

static void ul_store_log(long n)
{
	for (long i = 0; i < n; i++)
		log_pg[1] = i;
	log_stores += n;
}

static void log_seen_fn(const struct ulpt_log_rec *recs, size_t n, void *arg)
{
	(void)recs; (void)arg;
	log_seen += (long)n;
}

/* The lean drain (bench/log-drain.c): arg is the sum of the records' starts. */
size_t bench_log_drain(struct ulpt_log_ring *r, void *arg);
__attribute__((target("general-regs-only")))
static size_t log_raw_fn(struct ulpt_log_ring *r, void *arg)
{
	size_t n = bench_log_drain(r, arg);

	log_seen += (long)n;
	return n;
}
static uint64_t log_sum;

/* Each store counted or drained once, or the backend is unavailable. */
static int run_log_stores(struct result *sp, struct result *sc, struct result *sl,
			  struct result *sr, struct result *sk)
{
	char *m = mmap(NULL, 3 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *base;
	struct ulpt_count *c;
	int r;

	if (m == MAP_FAILED) {
		unavailable("ulpt", "mmap: %s", strerror(errno));
		return -1;
	}
	memset(m, 1, 3 * pagesz);
	plain_pg = (volatile uint64_t *)m;
	log_pg = (volatile uint64_t *)(m + pagesz);
	base = ulpt_count_base(m + 2 * pagesz, (const void *)log_pg);
	c = ulpt_count_line(base, (const void *)log_pg);
	memset(m + 2 * pagesz, 0, pagesz);
	if ((r = ulpt_page_deny((void *)log_pg, ULPT_DENY_LOG)) < 0 ||
	    (r = ulpt_line_deny((void *)log_pg, ULPT_DENY_W)) < 0) {
		unavailable("ulpt", "a logged page: %s", strerror(-r));
		return -1;
	}
	*sp = measure(ul_store_plain, NONE);
	/* A count table takes the place of a log (which then ends). */
	log_stores = 0;
	if ((r = ulpt_log_start(12, 1u << 11, log_seen_fn, NULL)) < 0 ||
	    (r = ulpt_count_start(base)) < 0) {
		unavailable("ulpt", "ulpt_count_start: %s", strerror(-r));
		return -1;
	}
	*sc = measure(ul_store_log, NONE);
	ulpt_count_stop();
	if (c->writes != (uint64_t)log_stores) {
		unavailable("ulpt", "%lu of %ld counted stores counted", (unsigned long)c->writes,
			    log_stores);
		return -1;
	}
	/* Drained by the callback, by the lean drain, and by a consumer thread. */
	for (int mode = 0; mode < 3; mode++) {
		log_stores = log_seen = 0;
		if ((r = ulpt_log_start(12, 1u << 11, log_seen_fn, NULL)) < 0 ||
		    (mode == 1 && (r = ulpt_log_set_raw(log_raw_fn, &log_sum)) < 0) ||
		    (mode == 2 && (r = ulpt_log_consumer_start()) < 0)) {
			unavailable("ulpt", "ulpt_log_start: %s", strerror(-r));
			return -1;
		}
		*(mode == 0 ? sl : mode == 1 ? sr : sk) = measure(ul_store_log, NONE);
		ulpt_log_stop();        /* stops the consumer, which drains the rest first */
		if (log_seen != log_stores) {
			unavailable("ulpt", "%ld of %ld logged stores drained", log_seen, log_stores);
			return -1;
		}
	}
	ulpt_page_deny((void *)log_pg, 0);
	ulpt_line_deny((void *)log_pg, 0);
	munmap(m, 3 * pagesz);
	return 0;
}

static void run_ulpt(void)
{
	struct result p, l, t, g, w, ws, gs, sp, sc, sl, sr, sk;
	int r;

	failure = NULL;
	signal(SIGSEGV, SIG_DFL);
	r = ulpt_init(ULPT_BACKEND_ULPT);
	if (r < 0) {
		unavailable("ulpt", "ulpt_init(ULPT_BACKEND_ULPT): %s%s", strerror(-r),
			    r == -ENODEV ? " (no ULPT CPU or kernel)" : "");
		return;
	}
	if ((r = ulpt_set_handler(permit, NULL, 0)) < 0) {
		unavailable("ulpt", "ulpt_set_handler: %s", strerror(-r));
		goto out;
	}
	p = measure(ul_protect, NONE);
	l = measure(ul_line_protect, NONE);
	if ((r = ulpt_protect_lines((void *)page, ULPT_LINE_SIZE, ULPT_DENY_W)) < 0) {
		unavailable("ulpt", "ulpt_protect_lines: %s", strerror(-r));
		goto out;
	}
	handled = attempts = 0;
	t = measure(ul_trip, NONE);
	if (check_handled("ulpt") < 0)
		goto out;
	if ((r = ulpt_set_handler(permit, NULL, ULPT_HANDLER_GPR_ONLY)) < 0) {
		unavailable("ulpt", "ulpt_set_handler(ULPT_HANDLER_GPR_ONLY): %s", strerror(-r));
		goto out;
	}
	handled = attempts = 0;
	g = measure(ul_trip, NONE);
	if (check_handled("ulpt") < 0)
		goto out;
	/* The reference: the same fault through a raw stub, no library (bench/raw-stub.h). */
	if (syscall(SYS_arch_prctl, ARCH_ULPT_SET_HANDLER, (unsigned long)raw_entry) != 0) {
		unavailable("ulpt", "ARCH_ULPT_SET_HANDLER: %s", strerror(errno));
		goto out;
	}
	handled = attempts = 0;
	w = measure(ul_trip, NONE);
	if (check_handled("ulpt") < 0)
		goto out;
	/* Step-after (R-RET-4): the raw stub asks for the after event; libulpt's
	 * ULPT_PERMIT_STEP through the general-register stub (watchlib's -v). */
	signal(SIGTRAP, count_sigtrap);
	if (syscall(SYS_arch_prctl, ARCH_ULPT_SET_HANDLER, (unsigned long)raw_step_entry) != 0) {
		unavailable("ulpt", "ARCH_ULPT_SET_HANDLER: %s", strerror(errno));
		goto out;
	}
	handled = handled_after = attempts = 0;
	ws = measure(ul_trip, NONE);
	if (check_handled("ulpt") < 0 || check_after() < 0)
		goto out;
	if ((r = ulpt_set_handler(permit_step, NULL, ULPT_HANDLER_GPR_ONLY)) < 0) {
		unavailable("ulpt", "ulpt_set_handler(ULPT_HANDLER_GPR_ONLY): %s", strerror(-r));
		goto out;
	}
	handled = handled_after = attempts = 0;
	gs = measure(ul_trip, NONE);
	ulpt_protect_lines((void *)page, ULPT_LINE_SIZE, 0);
	signal(SIGTRAP, SIG_DFL);
	if (check_handled("ulpt") < 0 || check_after() < 0 || run_log_stores(&sp, &sc, &sl, &sr, &sk) < 0)
		goto out;
	{
		print("ulpt", "protect_ns", p);
		print("ulpt", "line_protect_ns", l);
		print("ulpt", "fault_roundtrip_ns", t);
		print("ulpt", "fault_roundtrip_gpr_ns", g);
		print("ulpt", "fault_roundtrip_raw_ns", w);
		print("ulpt", "fault_roundtrip_raw_step_ns", ws);
		print("ulpt", "fault_roundtrip_gpr_step_ns", gs);
		print("ulpt", "step_sigtraps", (struct result){ sigtraps, sigtraps, sigtraps, -1 });
		print("ulpt", "store_plain_ns", sp);
		print("ulpt", "store_counted_ns", sc);
		print("ulpt", "store_logged_ns", sl);
		print("ulpt", "store_logged_raw_ns", sr);
		print("ulpt", "store_logged_consumer_ns", sk);
	}
out:
	ulpt_fini();
}

int main(int argc, char **argv)
{
	static const char *all[] = { "mprotect", "pkeys", "uffd", "ulpt" };
	const char **which = all;
	int n = 4;

	if (argc > 1) {
		which = (const char **)argv + 1;
		n = argc - 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pagesz = sysconf(_SC_PAGESIZE);
	/* The middle page of a populated 16-page mapping (see protect_ns above). */
	char *map = mmap(NULL, 16 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(map, 1, 16 * pagesz);                    /* populated: uffd-wp needs a present page */
	page = (volatile uint64_t *)(map + 8 * pagesz);
	for (int i = 0; i < n; i++) {
		if (!strcmp(which[i], "mprotect"))
			run_mprotect();
		else if (!strcmp(which[i], "pkeys"))
			run_pkeys();
		else if (!strcmp(which[i], "uffd"))
			run_uffd();
		else if (!strcmp(which[i], "ulpt"))
			run_ulpt();
		else {
			fprintf(stderr, "usage: primitives [mprotect|pkeys|uffd|ulpt]...\n");
			return 2;
		}
	}
	return 0;
}
