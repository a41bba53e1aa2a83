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

/* SIGTRAP, for the single steps of ULPT_PERMIT (mprotect) and ULPT_PERMIT_STEP (both). */
#define ULPT_RFLAGS_TF 0x100ull
int ulpt_trap_install_(void (*fn)(int, siginfo_t *, void *), struct sigaction *old) HIDDEN;
void ulpt_trap_chain_(const struct sigaction *old, int sig, siginfo_t *si, void *uc) HIDDEN;
int ulpt_step_init_(void) HIDDEN;       /* the ULPT backend's SIGTRAP handler (dispatch.c) */
void ulpt_step_fini_(void) HIDDEN;

/*
 * The action the library chains to for a signal it handles (SIGSEGV and SIGTRAP on mprotect,
 * SIGTRAP on ULPT), or NULL when it does not handle sig now. A program that installs its own
 * handler after ulpt_init would take the signal from the library; an LD_PRELOAD agent (the
 * ulpt-watch agent) wraps sigaction and swaps the chained action instead.
 */
struct sigaction *ulpt_chained_action_(int sig) HIDDEN;
struct sigaction *ulpt_step_chained_(void) HIDDEN;              /* dispatch.c */
struct sigaction *ulpt_mprotect_chained_(int sig) HIDDEN;       /* mprotect.c */

#endif
