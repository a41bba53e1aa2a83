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
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
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
 * ULPT_PERMIT_STEP: the instruction runs once with the permit and RFLAGS.TF (set in the frame,
 * restored by UIRET), the CPU traps after it, and the library's SIGTRAP handler makes the
 * after-call with this thread's record. STEP_OWN_TF: the program had TF set itself (it
 * single-steps), so the trap is its own too and goes on to its handler after the after-call.
 */
#define STEP_PENDING    1u
#define STEP_OWN_TF     2u
static __thread struct ulpt_fault step_rec __attribute__((tls_model("initial-exec")));
static __thread unsigned step_state __attribute__((tls_model("initial-exec")));
static struct sigaction old_trap;

/* Whether this fault is a later one of the instruction being stepped: our TF, the same ip. */
static int same_step(const uint64_t *frame)
{
	return step_state && (frame[ULPT_FRAME_RFLAGS] & ULPT_RFLAGS_TF) &&
	       step_rec.ip == frame[ULPT_FRAME_RIP];
}

static void step_begin(uint64_t *frame, const struct ulpt_fault *f)
{
	uint64_t rflags = frame[ULPT_FRAME_RFLAGS];

	/* A step whose trap never came (the program's debugger took it) is dropped. */
	if (!same_step(frame))
		step_state = STEP_PENDING | ((rflags & ULPT_RFLAGS_TF) ? STEP_OWN_TF : 0);
	step_rec = *f;
	frame[ULPT_FRAME_RFLAGS] = rflags | ULPT_RFLAGS_TF;
}

/* ULPT_SKIP of a later fault: the instruction never completes, so no after-call. */
static void step_cancel(uint64_t *frame)
{
	if (!same_step(frame))
		return;
	if (!(step_state & STEP_OWN_TF))
		frame[ULPT_FRAME_RFLAGS] &= ~ULPT_RFLAGS_TF;
	step_state = 0;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	unsigned state = step_state;
	ulpt_handler_t handler;
	struct ulpt_fault f;
	int saved_errno;

	/* Ours: the kernel's trap (not a raise or kill) in a thread with a step pending. */
	if (!(state & STEP_PENDING) || si->si_code <= 0) {
		ulpt_trap_chain_(&old_trap, sig, si, ucv);
		return;
	}
	saved_errno = errno;
	f = step_rec;
	step_state = 0;                     /* before the call: it may step again */
	if (!(state & STEP_OWN_TF))
		uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)ULPT_RFLAGS_TF;
	f.after = 1;
	handler = __atomic_load_n(&ulpt_lib_.handler, __ATOMIC_ACQUIRE);
	if (handler)
		handler(&f, ulpt_lib_.handler_arg);
	errno = saved_errno;
	if (state & STEP_OWN_TF)
		ulpt_trap_chain_(&old_trap, sig, si, ucv);
}

static int step_installed;

int ulpt_step_init_(void)
{
	int r = ulpt_trap_install_(on_trap, &old_trap);

	step_installed = !r;
	return r;
}

void ulpt_step_fini_(void)
{
	if (step_installed)
		sigaction(SIGTRAP, &old_trap, NULL);
	step_installed = 0;
}

struct sigaction *ulpt_step_chained_(void)
{
	return step_installed ? &old_trap : NULL;
}

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
		if (__builtin_expect(step_state != 0, 0))
			step_cancel(frame);
		frame[ULPT_FRAME_RIP] = f.next_ip;
		break;
	case ULPT_PERMIT_STEP:
		step_begin(frame, &f);
		frame[ULPT_FRAME_INFO] = info | ULPT_INFO_PERMIT;
		break;
	default:
		ulpt_default_segv_();
	}
	*errno_ptr = saved_errno;
}
