/*
 * The part of the Linux ULPT API (docs/linux-api.md, <asm/prctl.h> and <asm/ulpt.h> of the
 * patched kernel) that libulpt uses: its own copy, so the library builds against any kernel
 * headers, as liburing carries the io_uring uapi.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef LIBULPT_UAPI_H
#define LIBULPT_UAPI_H

#include <stdint.h>

#define ARCH_ULPT_ENABLE        0x6001
#define ARCH_ULPT_DISABLE       0x6002
#define ARCH_ULPT_SET_HANDLER   0x6003
#define ARCH_ULPT_GET_STATE     0x6004
#define ARCH_ULPT_SET_LOG       0x6005
#define ARCH_ULPT_GET_LOG       0x6006

struct ulpt_enable_arg {
	uint64_t flags;
	uint64_t view;
	uint64_t view_size;
};

struct ulpt_state_arg {
	uint64_t flags;
	uint64_t view;
	uint64_t view_size;
	uint64_t handler;
	uint64_t stack_adjust;
	uint64_t table_bytes;
};

/* The calling thread's access log (struct ulpt_log): base 0 removes it; flags 0 for a ring,
 * ULPT_LOG_COUNT for a count table (size_shift and thresh then 0). */
#define ULPT_LOG_COUNT          0x1
struct ulpt_log_arg {
	uint64_t base;
	uint32_t size_shift;
	uint32_t thresh;
	uint64_t index;
	uint64_t flags;
};

#ifndef SEGV_ULPTERR
#define SEGV_ULPTERR 11
#endif

#endif
