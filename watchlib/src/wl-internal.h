/*
 * watchlib's internals, shared with the ulpt-watch agent (watchlib/preload).
 * SPDX-License-Identifier: MIT
 */
#ifndef WL_INTERNAL_H
#define WL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "watchlib.h"

#define WL_HIDDEN __attribute__((visibility("hidden")))

/* mem.c: memory that never comes from the program's malloc. */
void *wl_mem_alloc(size_t n) WL_HIDDEN;           /* zeroed */
void wl_mem_free(void *p) WL_HIDDEN;
void *wl_mem_realloc(void *p, size_t n) WL_HIDDEN;
size_t wl_mem_usable(void *p) WL_HIDDEN;
int wl_mem_owns(const void *p) WL_HIDDEN;
void *wl_mem_reserve(size_t len) WL_HIDDEN;       /* address space, committed when touched */
void wl_mem_unreserve(void *p, size_t len) WL_HIDDEN;
int wl_mem_reserved(uintptr_t lo, uintptr_t hi, uintptr_t *rlo, uintptr_t *rhi) WL_HIDDEN;
void wl_mem_fork_lock(void) WL_HIDDEN;             /* its lock, held across a fork */
void wl_mem_fork_unlock(void) WL_HIDDEN;

/* An access as watchlib decides it: from the fault record (libulpt fills it on both backends;
 * a record it could not decode has size 0: one byte at the address). */
struct wl_access {
	uintptr_t start;
	size_t size;
	int reads, writes;
};

/* watch.c */
/* The watchpoint part of the fault handler: ULPT_DEFAULT means "not a watched address"
 * (the caller decides). Call it for after-calls too (fault->after). */
enum ulpt_action wl_handle_fault(struct ulpt_fault *f) WL_HIDDEN;
/* wl_init without taking libulpt's handler (the agent installs its own, which calls
 * wl_handle_fault). */
int wl_init_shared(void) WL_HIDDEN;

/* Reads n bytes at addr whatever its rights (through /proc/self/mem when they deny reads). */
void wl_read_bytes(uintptr_t addr, void *buf, size_t n) WL_HIDDEN;

/* A cheap clock for handler time: TSC ticks, summed as they are and converted to ns when
 * read (wl_ticks_ns: the rate measured since wl_init). */
uint64_t wl_ticks(void) WL_HIDDEN;
uint64_t wl_ticks_ns(uint64_t ticks) WL_HIDDEN;
/* CLOCK_MONOTONIC in ns. */
uint64_t wl_mono_ns(void) WL_HIDDEN;


#endif
