/* libulpt internals shared by ulpt.c and mprotect.c. SPDX-License-Identifier: MIT */
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
	void (*get)(uintptr_t addr, unsigned *page, unsigned *line);  /* neither NULL */
	struct sigaction *(*chained)(int sig);          /* see ulpt_chained_action_ */
};
extern const struct ulpt_ops ulpt_mprotect_ops_ HIDDEN;
int ulpt_mprotect_init_(void) HIDDEN;
void ulpt_default_segv_(void) HIDDEN;
void ulpt_tid_init_(void) HIDDEN;       /* dispatch.c: at ulpt_init */

/* ool.c: the mprotect backend's out-of-line steps. */
int ulpt_ool_init_(void) HIDDEN;
#define ULPT_OOL_DONE 1ul
uintptr_t ulpt_ool_prepare_(uintptr_t ip, void *uc) HIDDEN;
uintptr_t ulpt_ool_done_(uintptr_t rip, uintptr_t addr) HIDDEN;
uintptr_t ulpt_ool_program_ip_(uintptr_t rip) HIDDEN;
void ulpt_ool_cancel_(void *uc) HIDDEN;
uintptr_t ulpt_ool_jump_(void) HIDDEN;


/*
 * The action the library chains to for a signal it handles (SIGSEGV and SIGTRAP on mprotect;
 * none on ULPT), or NULL when it does not handle sig now. A program that installs its own
 * handler after ulpt_init would take the signal from the library; an LD_PRELOAD agent (the
 * ulpt-watch agent) wraps sigaction and swaps the chained action instead.
 */
struct sigaction *ulpt_chained_action_(int sig) HIDDEN;

#endif
