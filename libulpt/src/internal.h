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

int ulpt_mprotect_init_(void) HIDDEN;
int ulpt_mprotect_fini_(void) HIDDEN;
int ulpt_mprotect_protect_(void *addr, size_t len, unsigned deny) HIDDEN;
unsigned ulpt_mprotect_rights_(uintptr_t addr) HIDDEN;
void ulpt_default_segv_(void) HIDDEN;


/*
 * The action the library chains to for a signal it handles (SIGSEGV and SIGTRAP on mprotect;
 * none on ULPT), or NULL when it does not handle sig now. A program that installs its own
 * handler after ulpt_init would take the signal from the library; an LD_PRELOAD agent (the
 * ulpt-watch agent) wraps sigaction and swaps the chained action instead.
 */
struct sigaction *ulpt_chained_action_(int sig) HIDDEN;
struct sigaction *ulpt_mprotect_chained_(int sig) HIDDEN;       /* mprotect.c */

#endif
