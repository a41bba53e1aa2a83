/* libulpt internals shared by its sources (both backends and their common parts).
 * SPDX-License-Identifier: MIT */
#ifndef LIBULPT_INTERNAL_H
#define LIBULPT_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include "ulpt.h"

#define HIDDEN __attribute__((visibility("hidden")))

struct ulpt_lib {
	pthread_mutex_t lock;           /* init, fini, and the mprotect backend's table */
	ulpt_handler_t handler;         /* read in fault context: atomic */
	void *handler_arg;
	uint64_t view_size;
};
extern struct ulpt_lib ulpt_lib_ HIDDEN;

/*
 * What the backends do differently, one table each: the ULPT one in ulpt.c, the mprotect one
 * in mprotect.c. ulpt.c checks the arguments and calls through the table. Ranges are aligned
 * and below ULPT_VA_LIMIT_; rights are valid for the call.
 */
struct ulpt_ops {
	int backend;                                    /* enum ulpt_backend */
	int (*fini)(void);
	int (*set_handler)(unsigned flags);             /* after ulpt_lib_.handler is set */
	int (*protect)(void *addr, size_t len, unsigned deny);
	int (*protect_lines)(void *addr, size_t len, unsigned deny);
	int (*line_word)(uintptr_t page, uint64_t word);
	int (*bounds)(uintptr_t page, const struct ulpt_bounds *b);    /* b valid or NULL */
	int (*claim_bounds)(uintptr_t page, const struct ulpt_bounds *b);      /* b valid */
	void (*get)(uintptr_t addr, unsigned *page, unsigned *line);  /* neither NULL */
	struct sigaction *(*chained)(int sig);          /* see ulpt_chained_action_ */
};
extern const struct ulpt_ops ulpt_mprotect_ops_ HIDDEN;
int ulpt_mprotect_init_(void) HIDDEN;
void ulpt_default_segv_(void) HIDDEN;
void ulpt_tid_init_(void) HIDDEN;       /* dispatch.c: at ulpt_init */

/* log.c: a thread's access log (ulpt_log_start), in one mapping: this, then the ring; or its
 * count table (ulpt_count_start): this alone, with count_base set and no ring. */
#define LOG_MAX_PEND 4
struct ulpt_log_st {
	struct ulpt_log_ring ring;      /* first: ulpt_log_ring() */
	uintptr_t count_base;           /* a count table's base: the log is one (0: a ring) */
	ulpt_log_fn fn;
	ulpt_log_raw_fn raw;            /* instead of fn: reads the ring itself (ulpt_log_set_raw) */
	void *arg;
	size_t map_len;
	uint32_t thresh;                /* as asked */
	uint32_t cur_thresh;            /* in effect: 0 while a consumer thread runs */
	int draining;                   /* a drain of this thread's is under way */
	/* The consumer thread. */
	int consumer_on;
	volatile int stop;
	uint32_t sleeping;              /* futex word: the consumer waits on it */
	pthread_t consumer;
	/* mprotect backend: the write index, and the records of the instruction being stepped,
	 * appended (or counted) when it completes (R-LOG-2); a REP string instruction's RCX at
	 * the plan and its direction, for one record per iteration (0: not one). */
	uint64_t index;
	int planned;
	unsigned npend;
	uintptr_t pend_ip;
	uint64_t rep_rcx;
	int rep_down;
	struct { uintptr_t start; uint32_t size; unsigned kind; uint64_t value; int has_value; }
		pend[LOG_MAX_PEND];
};
extern __thread struct ulpt_log_st *ulpt_log_st_ __attribute__((tls_model("initial-exec"))) HIDDEN;
int ulpt_log_drain_(struct ulpt_log_st *st, int vec_saved) HIDDEN;
int ulpt_log_room_(const struct ulpt_log_st *st, unsigned n) HIDDEN;
void ulpt_log_wait_(struct ulpt_log_st *st, unsigned n) HIDDEN;
void ulpt_log_event_(unsigned reason, int vec_saved) HIDDEN;      /* FULL or LOG */
void ulpt_log_fini_(void) HIDDEN;
int ulpt_view_ensure_handler_(void) HIDDEN;      /* ulpt.c: this thread enters the stub */

/* ool.c: the mprotect backend's out-of-line steps. */
int ulpt_ool_init_(void) HIDDEN;
/* ulpt_owned(3)'s ranges: a mapping of libulpt's own (kept to the process's end). */
void ulpt_own_add_(const void *p, size_t len) HIDDEN;
#define ULPT_OOL_DONE 1ul
uintptr_t ulpt_ool_prepare_(uintptr_t ip, void *uc) HIDDEN;
uintptr_t ulpt_ool_done_(uintptr_t rip, uintptr_t addr) HIDDEN;
uintptr_t ulpt_ool_program_ip_(uintptr_t rip) HIDDEN;
void ulpt_ool_cancel_(void *uc) HIDDEN;
uintptr_t ulpt_ool_jump_(void) HIDDEN;
/* The memory accesses of the instruction at ip, from the context's registers. */
struct ulpt_ool_mem {
	uintptr_t start;
	uint32_t size;
	unsigned kinds;                 /* ULPT_DENY_R | ULPT_DENY_W */
};
int ulpt_ool_mem_(uintptr_t ip, const void *uc, struct ulpt_ool_mem *m, int max) HIDDEN;
int ulpt_ool_read_(uintptr_t addr, void *buf, size_t n) HIDDEN;


/* uffd.c: write protection through userfaultfd for the mprotect backend (see there). A
 * SIGSEGV it sends has si_code SI_QUEUE and one of these in si_errno. */
#define UFFD_SIG_FAULT   0x554c5001     /* a write from user mode, at si_value */
#define UFFD_SIG_SYSCALL 0x554c5002     /* a system call wrote pages: ulpt_uffd_take_ them */
int ulpt_uffd_init_(uintptr_t (*is_wp)(uintptr_t page)) HIDDEN;
void ulpt_uffd_fini_(void) HIDDEN;
int ulpt_uffd_on_(void) HIDDEN;
int ulpt_uffd_protect_(uintptr_t a, size_t len, int protect, int wake) HIDDEN;
unsigned ulpt_uffd_take_(pid_t tid, uintptr_t *addr, unsigned max) HIDDEN;
void ulpt_uffd_rearm_(void) HIDDEN;     /* mprotect.c: a forked child protects its pages */
void ulpt_uffd_lost_(void) HIDDEN;      /* mprotect.c: ... or puts them back on mprotect */

/*
 * The action the library chains to for a signal it handles (SIGSEGV and SIGTRAP on mprotect;
 * none on ULPT), or NULL when it does not handle sig now. A program that installs its own
 * handler after ulpt_init would take the signal from the library; an LD_PRELOAD agent (the
 * ulpt-watch agent) wraps sigaction and swaps the chained action instead.
 */
struct sigaction *ulpt_chained_action_(int sig) HIDDEN;

#endif
