// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the table through the life of an address space.
 *
 * fork copies the table, so the child starts with its parent's rights and
 * its thread keeps its handler (and its in-handler state) and its access log
 * (the child's copy of the buffer holds the same records, or counts); a new
 * thread has no log; exec starts the new program without a handler or a log
 * (the new mm has no table);
 * munmap, brk and the source of mremap clear the entries of the range, so
 * that memory mapped there later is not restricted by rights set on what
 * was there before; the table is freed with the address space.
 */
#include <linux/mm.h>
#include <linux/mmu_context.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <asm/msr.h>
#include <asm/ulpt.h>
#include <asm/ulpt_table.h>

/* destroy_context(): nothing runs the address space any more. */
void ulpt_destroy(struct mm_struct *mm)
{
	struct ulpt_mm *u = mm->context.ulpt;

	if (!u)
		return;
	mm->context.ulpt = NULL;
	ulpt_mm_free(u);
}

/* arch_dup_mmap(): the child gets a copy (its view VMA is inherited empty). */
int ulpt_dup_mmap(struct mm_struct *oldmm, struct mm_struct *mm)
{
	struct ulpt_mm *old = READ_ONCE(oldmm->context.ulpt);

	mm->context.ulpt = NULL;
	if (!old)
		return 0;
	mm->context.ulpt = ulpt_mm_copy(old);
	return mm->context.ulpt ? 0 : -ENOMEM;
}

/*
 * copy_thread(): a child that is a copy of the calling thread (fork, vfork) is
 * where the thread is, inside its handler if the thread is, so that its UIRET
 * returns as the parent's does, and it appends to its log where the thread
 * would. Both are in the MSRs while the thread runs (thread.ulpt_status is 0
 * then, ulpt_load_thread()), as PKRU is. A new thread sharing the mm starts at
 * its own function: outside any handler, and without a log (two threads never
 * append to one log).
 */
void ulpt_fork_thread(struct task_struct *p, unsigned long clone_flags)
{
	p->thread.ulpt_status = 0;
	if ((clone_flags & CLONE_VM) && !(clone_flags & CLONE_VFORK)) {
		p->thread.ulpt_log_base = 0;
		p->thread.ulpt_log_ctl = 0;
		p->thread.ulpt_log_index = 0;
		return;
	}
	if (!cpu_feature_enabled(X86_FEATURE_ULPT))
		return;
	preempt_disable();
	if (this_cpu_read(ulpt_cpu_owner) == current) {
		rdmsrl(MSR_ULPT_STATUS, p->thread.ulpt_status);
		if (this_cpu_read(ulpt_cpu_log))
			rdmsrl(MSR_ULPT_LOG_INDEX, p->thread.ulpt_log_index);
	}
	preempt_enable();
}

/* arch_unmap(): rights do not outlive the mapping they were set on. */
void ulpt_unmap(struct mm_struct *mm, unsigned long start, unsigned long end)
{
	struct ulpt_mm *u = READ_ONCE(mm->context.ulpt);

	if (u)
		ulpt_mm_clear(u, start, end);
}

/* arch_setup_new_exec(): the new program starts without a handler or a log. */
void ulpt_exec(struct task_struct *tsk)
{
	tsk->thread.ulpt_handler = 0;
	tsk->thread.ulpt_status = 0;
	tsk->thread.ulpt_log_base = 0;
	tsk->thread.ulpt_log_ctl = 0;
	tsk->thread.ulpt_log_index = 0;
	tsk->thread.ulpt_gen = 0;
	if (!cpu_feature_enabled(X86_FEATURE_ULPT))
		return;
	/*
	 * The MSRs still hold the old program's state: do not save it into this thread,
	 * and let the CPU append to no log of the old program's.
	 */
	preempt_disable();
	if (this_cpu_read(ulpt_cpu_owner) == tsk)
		ulpt_release_cpu();
	preempt_enable();
}
