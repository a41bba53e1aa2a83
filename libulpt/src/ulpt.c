/*
 * libulpt: the API of <ulpt.h>, which checks the arguments and calls the backend's table
 * (struct ulpt_ops, internal.h), and the ULPT backend's table. The mprotect backend is in
 * mprotect.c, the handler dispatch in dispatch.c, the entry stubs in entry.S.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <ulpt/arch.h>
#include "ulpt.h"
#include "internal.h"
#include "uapi.h"

/* The public header's copy of the modeled-time interface is the ABI header's. */
_Static_assert(ULPT_MODEL_LEAF_ == ULPT_MODEL_LEAF && ULPT_MODEL_SIGNATURE_ == ULPT_MODEL_SIGNATURE &&
	       ULPT_MODEL_NFIELDS_ == ULPT_MODEL_NFIELDS &&
	       sizeof(struct ulpt_model) == ULPT_MODEL_NFIELDS * sizeof(uint64_t) &&
	       __builtin_offsetof(struct ulpt_model, kernel_entries) ==
	       ULPT_MODEL_F_KERNEL_ENTRIES * sizeof(uint64_t) &&
	       __builtin_offsetof(struct ulpt_model, insns_kernel) ==
	       ULPT_MODEL_F_INSNS_KERNEL * sizeof(uint64_t),
	       "libulpt's struct ulpt_model and constants follow include/ulpt/arch.h");
/* ulpt_page_bounds stores b << 3 under the ABI's mask: the field is the address's bits 46:6. */
_Static_assert(ULPT_BOUNDS_MASK_ == ULPT_BOUNDS_MASK && sizeof(struct ulpt_bounds) == ULPT_BOUNDS_SIZE &&
	       _Alignof(struct ulpt_bounds) == ULPT_BOUNDS_SIZE &&
	       ULPT_BOUNDS_FIELD(ULPT_VA_LIMIT_ - 64) == (ULPT_VA_LIMIT_ - 64) << 3 &&
	       ULPT_BOUNDS_ADDR((ULPT_VA_LIMIT_ - 64) << 3) == ULPT_VA_LIMIT_ - 64,
	       "libulpt's byte bounds follow include/ulpt/arch.h");

struct ulpt_lib_state_ ulpt_lib_state_;
uint64_t ulpt_xsave_size_ __attribute__((visibility("hidden")));

struct ulpt_lib ulpt_lib_ = { .lock = PTHREAD_MUTEX_INITIALIZER };

void ulpt_entry_gpr_(void);
void ulpt_entry_xsave_(void);
void ulpt_entry_avx_(void);
/* XCR0 enables x87, SSE and AVX and no larger vector state: the cheaper stub (entry.S) fits. */
static int avx_stub_fits;
/* The after trampoline saves the vector state as ulpt_entry_avx_ does (entry.S). */
char ulpt_vec_avx_ __attribute__((visibility("hidden")));

static long arch_prctl(int op, unsigned long arg)
{
	return syscall(SYS_arch_prctl, op, arg);
}

const char *ulpt_backend_name(int backend)
{
	switch (backend) {
	case ULPT_BACKEND_ULPT: return "ulpt";
	case ULPT_BACKEND_MPROTECT: return "mprotect";
	case ULPT_BACKEND_AUTO: return "auto";
	default: return NULL;
	}
}

int ulpt_backend(void)
{
	return ulpt_lib_state_.backend ? ulpt_lib_state_.backend : -EINVAL;
}

/* ULPT_BACKEND=ulpt|mprotect in the environment overrides ULPT_BACKEND_AUTO. */
static int backend_from_env(void)
{
	const char *e = getenv("ULPT_BACKEND");

	if (!e || !*e || !strcmp(e, "auto"))
		return ULPT_BACKEND_AUTO;
	if (!strcmp(e, "ulpt"))
		return ULPT_BACKEND_ULPT;
	if (!strcmp(e, "mprotect"))
		return ULPT_BACKEND_MPROTECT;
	return -EINVAL;
}

static int ulpt_open(void)
{
	struct ulpt_enable_arg en = { 0 };
	unsigned a, b, c, d;

	/* No ULPT CPU, or a kernel without the API (a stock kernel says EINVAL): ENODEV. */
	if (!__get_cpuid_count(ULPT_CPUID_LEAF, ULPT_CPUID_SUBLEAF, &a, &b, &c, &d) ||
	    !((d >> ULPT_CPUID_EDX_BIT) & 1))
		return -ENODEV;
	if (arch_prctl(ARCH_ULPT_ENABLE, (unsigned long)&en) != 0)
		return errno == EINVAL ? -ENODEV : -errno;
	ulpt_lib_.view_size = en.view_size;
	/* The XSAVE area for every feature the kernel enabled (CPUID.(0xD,0).EBX). */
	if (__get_cpuid_count(0xd, 0, &a, &b, &c, &d) && b >= 576)
		ulpt_xsave_size_ = b;
	else
		ulpt_xsave_size_ = 4096;
	if (__get_cpuid_count(1, 0, &a, &b, &c, &d) && (c & (1u << 27))) {    /* OSXSAVE */
		uint32_t lo, hi;
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		/* x87, SSE and AVX on, no AVX-512 (bits 5-7); MPX (3-4) and PKRU (9) are state a
		 * C function does not change. */
		avx_stub_fits = (lo & 7) == 7 && !(lo & 0xe0) && !(lo & ~0x21fu) && !hi;
		ulpt_vec_avx_ = (char)avx_stub_fits;
	}
	ulpt_lib_state_.view = (volatile uint64_t *)(uintptr_t)en.view;
	return 0;
}

/* --- the ULPT backend: the table view, the handler register --------------------------- */

static int view_fini(void)
{
	int r = arch_prctl(ARCH_ULPT_DISABLE, 0) != 0 ? -errno : 0;

	ulpt_lib_state_.view = NULL;
	return r;
}

static int view_set_handler(unsigned flags)
{
	/* The handler register is per thread: threads created later inherit it (docs/linux-api.md);
	   threads that exist already call ulpt_set_handler themselves. */
	void (*entry)(void) = (flags & ULPT_HANDLER_GPR_ONLY) ? ulpt_entry_gpr_ :
			      avx_stub_fits ? ulpt_entry_avx_ : ulpt_entry_xsave_;

	return arch_prctl(ARCH_ULPT_SET_HANDLER, (unsigned long)entry) != 0 ? -errno : 0;
}

static int view_protect(void *addr, size_t len, unsigned deny)
{
	for (uintptr_t p = (uintptr_t)addr; p < (uintptr_t)addr + len; p += ULPT_PAGE_SIZE) {
		volatile uint64_t *w = ulpt_entry_((void *)p);

		*w = (*w & ULPT_BOUNDS_MASK) | deny;    /* the page keeps its bounds */
	}
	return 0;
}

static int view_protect_lines(void *addr, size_t len, unsigned deny)
{
	unsigned log = deny & ULPT_DENY_LOG;

	deny &= ULPT_DENY_RW;
	for (uintptr_t p = (uintptr_t)addr; p < (uintptr_t)addr + len;) {
		/* Whole lines of one page with one read-modify-write of its line word. */
		uintptr_t end = (p | (ULPT_PAGE_SIZE - 1)) + 1;
		unsigned first = (p >> 7) & 31, last;
		uint64_t mask = 0, set = 0;

		if (end > (uintptr_t)addr + len)
			end = (uintptr_t)addr + len;
		last = ((end - 1) >> 7) & 31;
		for (unsigned i = first; i <= last; i++) {
			mask |= 3ull << (2 * i);
			set |= (uint64_t)deny << (2 * i);
		}
		/* One load and one store: see ulpt_line_deny in ulpt.h about concurrent changes. */
		volatile uint64_t *w = &ulpt_entry_((void *)p)[1];
		*w = (*w & ~mask) | set;
		if (log && !(w[-1] & ULPT_LOG))
			w[-1] |= ULPT_LOG;      /* LOG is the page's (word 0) */
		p = end;
	}
	return 0;
}

static int view_line_word(uintptr_t page, uint64_t word)
{
	ulpt_entry_((void *)page)[1] = word;
	return 0;
}

static int view_bounds(uintptr_t page, const struct ulpt_bounds *b)
{
	volatile uint64_t *w = ulpt_entry_((void *)page);

	*w = (*w & ~ULPT_BOUNDS_MASK) | ULPT_BOUNDS_FIELD((uint64_t)(uintptr_t)b);
	return 0;
}

/* A load and a store of word 0, as the rights stores: a caller that shares pages with another
 * component that sets bounds synchronises with it as for rights (ulpt_line_deny). */
static int view_claim_bounds(uintptr_t page, const struct ulpt_bounds *b)
{
	volatile uint64_t *w = ulpt_entry_((void *)page);
	uint64_t old = *w;

	if (old & ULPT_BOUNDS_MASK)
		return -EBUSY;
	*w = old | ULPT_BOUNDS_FIELD((uint64_t)(uintptr_t)b);
	return 0;
}

static void view_get(uintptr_t a, unsigned *page, unsigned *line)
{
	*page = (unsigned)(ulpt_entry_((void *)a)[0] & ULPT_PAGE_MASK_);
	*line = (unsigned)(ulpt_entry_((void *)a)[1] >> (2 * ((a >> 7) & 31))) & 3;
}

/* Log events reach the thread through the library's stub: this thread gets it if it has no
 * handler yet (violations then end in SIGSEGV, as without one). */
int ulpt_view_ensure_handler_(void)
{
	struct ulpt_state_arg st;

	if (arch_prctl(ARCH_ULPT_GET_STATE, (unsigned long)&st) != 0)
		return -errno;
	return st.handler ? 0 : view_set_handler(0);
}

static struct sigaction *view_chained(int sig)
{
	(void)sig;
	return NULL;                    /* the ULPT backend handles no signal */
}

static const struct ulpt_ops view_ops = {
	.backend = ULPT_BACKEND_ULPT,
	.fini = view_fini,
	.set_handler = view_set_handler,
	.protect = view_protect,
	.protect_lines = view_protect_lines,
	.line_word = view_line_word,
	.bounds = view_bounds,
	.claim_bounds = view_claim_bounds,
	.get = view_get,
	.chained = view_chained,
};

/* --- the API ------------------------------------------------------------------------------ */

/* The backend in use (set with ulpt_lib_state_.backend, under the lock), or NULL. */
static const struct ulpt_ops *ops;

int ulpt_init(enum ulpt_backend backend)
{
	int r = 0;

	if (backend != ULPT_BACKEND_AUTO && backend != ULPT_BACKEND_ULPT &&
	    backend != ULPT_BACKEND_MPROTECT)
		return -EINVAL;
	ulpt_tid_init_();
	pthread_mutex_lock(&ulpt_lib_.lock);
	if (ulpt_lib_state_.backend) {
		r = -EBUSY;
		goto out;
	}
	if (backend == ULPT_BACKEND_AUTO) {
		backend = backend_from_env();
		if ((int)backend < 0) {
			r = -EINVAL;
			goto out;
		}
	}
	if (backend == ULPT_BACKEND_ULPT || backend == ULPT_BACKEND_AUTO) {
		r = ulpt_open();
		if (r == 0)
			ops = &view_ops;
		if (r == 0 || backend == ULPT_BACKEND_ULPT)
			goto out;       /* asked for ULPT: ENODEV without the CPU or the kernel */
	}
	r = ulpt_mprotect_init_();
	if (r == 0)
		ops = &ulpt_mprotect_ops_;
out:
	if (r == 0)
		ulpt_lib_state_.backend = ops->backend;
	pthread_mutex_unlock(&ulpt_lib_.lock);
	return r;
}

int ulpt_fini(void)
{
	int r;

	if (ulpt_lib_state_.backend)
		ulpt_log_fini_();
	pthread_mutex_lock(&ulpt_lib_.lock);
	if (!ulpt_lib_state_.backend) {
		r = -EINVAL;
	} else {
		r = ops->fini();
		ulpt_lib_state_.backend = 0;
		ulpt_lib_.handler = NULL;
		ops = NULL;
	}
	pthread_mutex_unlock(&ulpt_lib_.lock);
	return r;
}

int ulpt_set_handler(ulpt_handler_t handler, void *arg, unsigned flags)
{
	if (!ulpt_lib_state_.backend)
		return -EINVAL;
	if (!handler || (flags & ~ULPT_HANDLER_GPR_ONLY))
		return -EINVAL;
	ulpt_lib_.handler_arg = arg;
	__atomic_store_n(&ulpt_lib_.handler, handler, __ATOMIC_RELEASE);
	return ops->set_handler(flags);
}

/* Arguments common to the rights calls. */
static int check_range(const void *addr, size_t len, size_t align)
{
	uintptr_t a = (uintptr_t)addr;

	if (!ulpt_lib_state_.backend)
		return -EINVAL;
	if ((a | len) & (align - 1) || len == 0)
		return -EINVAL;
	if (a + len < a || a + len > ULPT_VA_LIMIT_)
		return -EINVAL;     /* wraps, or beyond the addresses the table covers */
	return 0;
}

int ulpt_protect(void *addr, size_t len, unsigned deny)
{
	int r = check_range(addr, len, ULPT_PAGE_SIZE);

	if (r)
		return r;
	if (deny & ~(ULPT_DENY_R | ULPT_DENY_W | ULPT_DENY_X | ULPT_DENY_LOG))
		return -EINVAL;
	return ops->protect(addr, len, deny);
}

int ulpt_protect_lines(void *addr, size_t len, unsigned deny)
{
	int r = check_range(addr, len, ULPT_LINE_SIZE);

	if (r)
		return r;
	if (deny & ~(ULPT_DENY_R | ULPT_DENY_W | ULPT_DENY_LOG))
		return -EINVAL;     /* lines have no execute right */
	return ops->protect_lines(addr, len, deny);
}

int ulpt_protect_line_word(void *addr, uint64_t word)
{
	uintptr_t page = (uintptr_t)addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1);
	int r = check_range((void *)page, ULPT_PAGE_SIZE, ULPT_PAGE_SIZE);

	return r ? r : ops->line_word(page, word);
}

/* The errors of the bounds calls: 0, -ENOSYS or -EINVAL. */
static int bounds_args(const void *addr, const struct ulpt_bounds *b)
{
	if (!ulpt_lib_state_.backend)
		return -ENOSYS;
	/* The field holds bits 46:6 of the address: 64-byte aligned, below 2^47 (0 is none). */
	if ((uintptr_t)addr >= ULPT_VA_LIMIT_ || ((uintptr_t)b & ~(uintptr_t)(ULPT_VA_LIMIT_ - 64)))
		return -EINVAL;
	return 0;
}

/* The general form of ulpt_page_bounds (ulpt.h): its errors, and the mprotect backend. */
int ulpt_protect_bounds(void *addr, const struct ulpt_bounds *b)
{
	int r = bounds_args(addr, b);

	return r ? r : ops->bounds((uintptr_t)addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1), b);
}

/*
 * libulpt's own mappings, for ulpt_owned(3): a fixed table of (start, end) pairs, each slot taken
 * with a compare-and-swap, read without a lock (a reader may miss a mapping made meanwhile).
 * A full table leaves a mapping out: a leak checker then only scans it.
 */
#define OWN_MAX 16
static uintptr_t own[OWN_MAX][2];

void ulpt_own_add_(const void *p, size_t len)
{
	for (int i = 0; i < OWN_MAX; i++) {
		uintptr_t none = 0;
		if (__atomic_compare_exchange_n(&own[i][0], &none, (uintptr_t)p, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_store_n(&own[i][1], (uintptr_t)p + len, __ATOMIC_RELEASE);
			return;
		}
	}
}

int ulpt_owned(uintptr_t lo, uintptr_t hi, uintptr_t *rlo, uintptr_t *rhi)
{
	if (lo > hi || !rlo || !rhi)
		return -EINVAL;
	for (int i = 0; i < OWN_MAX; i++) {
		uintptr_t a = __atomic_load_n(&own[i][0], __ATOMIC_ACQUIRE);
		uintptr_t b = __atomic_load_n(&own[i][1], __ATOMIC_ACQUIRE);

		if (a && b > a && a < hi && b > lo) {
			*rlo = a;
			*rhi = b;
			return 1;
		}
	}
	return 0;
}

int ulpt_claim_bounds(void *addr, const struct ulpt_bounds *b)
{
	int r = bounds_args(addr, b);

	if (!r && !b)
		r = -EINVAL;
	return r ? r : ops->claim_bounds((uintptr_t)addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1), b);
}

int ulpt_get(const void *addr, unsigned *page_deny, unsigned *line_deny)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned page, line;

	if (!ulpt_lib_state_.backend || a >= ULPT_VA_LIMIT_)
		return -EINVAL;
	ops->get(a, &page, &line);
	if (page_deny)
		*page_deny = page;
	if (line_deny)
		*line_deny = line;
	return 0;
}

/* The default SIGSEGV behaviour, from a handler that gives up. */
void ulpt_default_segv_(void)
{
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
	_exit(128 + SIGSEGV);          /* SIGSEGV blocked: the default action all the same */
}

struct sigaction *ulpt_chained_action_(int sig)
{
	return ulpt_lib_state_.backend ? ops->chained(sig) : NULL;
}
