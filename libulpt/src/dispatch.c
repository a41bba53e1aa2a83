/*
 * The C side of the ULPT entry stubs (entry.S): turns the CPU's frame into a fault record,
 * calls the program's handler and writes its decision back into the frame for UIRET.
 * Built with -mgeneral-regs-only: with ULPT_HANDLER_GPR_ONLY the stub saves no vector state,
 * so nothing here may touch it.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ulpt/arch.h>
#include "ulpt.h"
#include "internal.h"

/* The thread id without a system call on every fault; fork clears it (the child's differs). */
static __thread pid_t tid_cache __attribute__((tls_model("initial-exec")));

static void forget_tid(void)
{
	tid_cache = 0;
}

static void register_forget(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static pid_t my_tid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!tid_cache) {
		pthread_once(&once, register_forget);
		tid_cache = (pid_t)syscall(SYS_gettid);
	}
	return tid_cache;
}

/* errno's address, per thread, without a call into libc on every fault. */
static __thread int *errno_ptr __attribute__((tls_model("initial-exec")));

/*
 * Called by the entry stubs with the CPU's frame. It starts a page of its own, and the stubs
 * follow it in the same section: the emulated CPU chains translated blocks only within a page,
 * and each jump across pages costs a lookup, several per fault.
 */
void ulpt_dispatch_(uint64_t *frame) __attribute__((visibility("hidden")));
__attribute__((section(".text.ulpt_fault"), aligned(4096)))
void ulpt_dispatch_(uint64_t *frame)
{
	uint64_t info = frame[ULPT_FRAME_INFO];
	ulpt_handler_t handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	struct ulpt_fault f = {
		.addr = frame[ULPT_FRAME_ADDR],
		.start = frame[ULPT_FRAME_START],
		.size = ULPT_INFO_SIZE(info),
		.kind = ULPT_INFO_KIND(info),
		.reason = ULPT_INFO_REASON(info),
		.ip = frame[ULPT_FRAME_RIP],
		.entry = { frame[ULPT_FRAME_ENTRY0], frame[ULPT_FRAME_ENTRY1] },
		.tid = my_tid(),
	};
	int saved_errno;

	if (__builtin_expect(!errno_ptr, 0))
		errno_ptr = &errno;
	saved_errno = *errno_ptr;

	switch (handler ? handler(&f, ulpt_lib_.handler_arg) : ULPT_DEFAULT) {
	case ULPT_RETRY:
		break;
	case ULPT_PERMIT:
		frame[ULPT_FRAME_INFO] = info | ULPT_INFO_PERMIT;
		break;
	case ULPT_SKIP:
		frame[ULPT_FRAME_RIP] = f.next_ip;
		break;
	default:
		ulpt_default_segv_();
	}
	*errno_ptr = saved_errno;
}
