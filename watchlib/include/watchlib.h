/*
 * watchlib: exact watchpoints over libulpt. A watchpoint covers any byte range, from one byte to
 * many MiB, for reads, writes or both; thousands to hundreds of thousands can be active at once.
 * The rights go on the 128-byte lines (ULPT) or pages (mprotect) that hold watched bytes; an
 * access that reaches such a line but no watched byte is a false fault: it goes through and
 * only the statistics see it. An access to watched bytes calls the program's callback.
 *
 * Every function returns 0 (or a value >= 0) on success and a negative errno on failure.
 * Counts are exact on the ULPT backend. On the mprotect backend an access let through is
 * single-stepped with its page open, and other threads' accesses to that page in that window
 * are not seen: counts are exact for one thread.
 * The callback runs in the faulting thread, inside the fault handler: it may call only
 * async-signal-safe functions and must not add or remove watchpoints.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef WATCHLIB_H
#define WATCHLIB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ulpt.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WL_READ   1u            /* watch (or an access that) reads */
#define WL_WRITE  2u            /* watch (or an access that) writes */
#define WL_RW     (WL_READ | WL_WRITE)

/* Watched ranges end at or below this: the user half of x86-64's 48-bit address space. */
#define WL_ADDR_END (1ull << 47)

#define WL_VALUE_MAX 64         /* bytes of old and new value a hit carries */

/* One access to watched bytes. */
struct wl_hit {
	int id;                     /* the watchpoint (wl_watch's return value) */
	unsigned kind;              /* WL_READ or WL_WRITE (a read-modify-write is a write) */
	uintptr_t addr;             /* the access: [addr, addr + size) */
	size_t size;                /* 0 when the backend cannot tell */
	uintptr_t ip;               /* the instruction */
	pid_t tid;                  /* the thread */
	/* For writes: the watched bytes the access covered, [value_addr, value_addr + value_len),
	 * before and after the instruction (at most WL_VALUE_MAX bytes). */
	uintptr_t value_addr;
	size_t value_len;
	uint8_t old_value[WL_VALUE_MAX];
	uint8_t new_value[WL_VALUE_MAX];
};

typedef void (*wl_callback_t)(const struct wl_hit *hit, void *arg);

struct wl_stats {
	uint64_t faults;            /* every fault the handler saw */
	uint64_t hits;              /* accesses that touched watched bytes */
	uint64_t false_faults;      /* accesses to watched lines or pages, no watched byte */
	uint64_t handler_ns;        /* time spent in the handler (CLOCK_MONOTONIC) */
	uint64_t watches;           /* watchpoints active now */
};

/* Starts libulpt on the backend (ULPT_BACKEND_AUTO picks) and takes over its fault handler. */
int wl_init(enum ulpt_backend backend);
/* Removes every watchpoint and stops libulpt. */
int wl_fini(void);

/* The function called for every hit (NULL: count only). */
int wl_set_callback(wl_callback_t cb, void *arg);

/* Watches [addr, addr + len) for mode (WL_READ, WL_WRITE or both); returns the id (>= 0).
 * -EINVAL: addr NULL, len 0, a bad mode, a range that wraps or passes the user address limit. */
int wl_watch(const void *addr, size_t len, unsigned mode);
/* Removes a watchpoint: -ENOENT if the id is not active. */
int wl_unwatch(int id);
/* The reads and writes counted on a watchpoint so far. */
int wl_counts(int id, uint64_t *reads, uint64_t *writes);

void wl_get_stats(struct wl_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* WATCHLIB_H */
