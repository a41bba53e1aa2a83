// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the in-handler state across signals.
 *
 * A thread's in-handler state (ULPT_STATUS) is treated like its signal
 * mask: setting up a 64-bit signal frame saves it in the frame's
 * sigcontext.reserved1[0] and clears it while the signal handler runs;
 * rt_sigreturn restores it. A siglongjmp() out of the signal handler
 * leaves the thread outside its ULPT handler.
 */
#include <linux/preempt.h>
#include <linux/sched.h>
#include <asm/msr.h>
#include <asm/sighandling.h>
#include <asm/ulpt.h>

/* Marks a saved state, so that a frame user space built restores nothing */
#define ULPT_SIGFRAME_TAG	0x554c505400000000ULL	/* "ULPT" */

u64 ulpt_signal_enter(void)
{
	struct ulpt_mm *u;
	u64 status;

	if (!cpu_feature_enabled(X86_FEATURE_ULPT) || !current->mm)
		return 0;
	u = READ_ONCE(current->mm->context.ulpt);
	if (!u)
		return 0;
	preempt_disable();
	status = ulpt_thread_status(current, u);
	if (this_cpu_read(ulpt_cpu_owner) == current) {
		rdmsrl(MSR_ULPT_STATUS, status);
		if (status)
			wrmsrl(MSR_ULPT_STATUS, 0);
	}
	current->thread.ulpt_status = 0;
	preempt_enable();
	return ULPT_SIGFRAME_TAG | (status & ULPT_STATUS_IN_HANDLER);
}

void ulpt_signal_return(u64 saved)
{
	u64 status = saved & ULPT_STATUS_IN_HANDLER;
	struct ulpt_mm *u;

	if ((saved & ~ULPT_STATUS_IN_HANDLER) != ULPT_SIGFRAME_TAG ||
	    !cpu_feature_enabled(X86_FEATURE_ULPT) || !current->mm)
		return;
	u = READ_ONCE(current->mm->context.ulpt);
	/* Only into the table the handler belongs to (not after DISABLE and a new ENABLE) */
	if (!u || current->thread.ulpt_gen != u->gen)
		return;
	preempt_disable();
	/* Owned by this CPU: the MSR holds it (ulpt_load_thread()) */
	if (this_cpu_read(ulpt_cpu_owner) == current) {
		wrmsrl(MSR_ULPT_STATUS, status);
		current->thread.ulpt_status = 0;
	} else {
		current->thread.ulpt_status = status;
	}
	preempt_enable();
}
