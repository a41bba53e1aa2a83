/* libulpt internals shared by ulpt.c and mprotect.c. SPDX-License-Identifier: MIT */
#ifndef LIBULPT_INTERNAL_H
#define LIBULPT_INTERNAL_H

#include <pthread.h>
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

#endif
