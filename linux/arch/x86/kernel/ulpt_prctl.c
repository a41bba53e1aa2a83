// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the arch_prctl() API.
 *
 * ARCH_ULPT_ENABLE creates the table of the calling process and maps its
 * view, ARCH_ULPT_DISABLE removes both, ARCH_ULPT_SET_HANDLER sets the
 * calling thread's handler, ARCH_ULPT_SET_LOG its access log, and
 * ARCH_ULPT_GET_STATE and ARCH_ULPT_GET_LOG report. The table pointer of an
 * mm changes only under mmap_lock held for writing.
 */
#include <linux/cache.h>
#include <linux/init.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <asm/msr.h>
#include <asm/prctl.h>
#include <asm/proto.h>
#include <asm/ulpt.h>
#include <asm/ulpt_table.h>

/*
 * A ULPT CPU model older than the access log has no ULPT_LOG_* MSRs, and one
 * older than count tables takes ULPT_LOG_CTL_COUNT for a reserved bit: the
 * calls that need them are ENODEV there, not a #GP of the kernel's WRMSR.
 */
static bool ulpt_log_cpu __ro_after_init;
static bool ulpt_count_cpu __ro_after_init;

static int __init ulpt_log_probe(void)
{
	u64 ctl;

	ulpt_log_cpu = cpu_feature_enabled(X86_FEATURE_ULPT) &&
		       !rdmsrl_safe(MSR_ULPT_LOG_CTL, &ctl);
	/* No thread's log is loaded yet (ULPT_LOG_BASE 0): the write counts nothing */
	ulpt_count_cpu = ulpt_log_cpu &&
			 !wrmsrl_safe(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT) &&
			 !wrmsrl_safe(MSR_ULPT_LOG_CTL, ctl);
	return 0;
}
late_initcall(ulpt_log_probe);

static long ulpt_enable(struct ulpt_enable __user *uarg)
{
	struct mm_struct *mm = current->mm;
	struct ulpt_enable a;
	struct ulpt_mm *u;
	unsigned long addr;
	long ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags)
		return -EINVAL;
	u = ulpt_mm_alloc();
	if (!u)
		return -ENOMEM;
	if (mmap_write_lock_killable(mm)) {
		ret = -EINTR;
		goto free;
	}
	if (mm->context.ulpt) {
		ret = -EBUSY;
		goto unlock;
	}
	addr = ulpt_view_map(mm);
	if (IS_ERR_VALUE(addr)) {
		ret = addr;
		goto unlock;
	}
	u->view = addr;
	WRITE_ONCE(mm->context.ulpt, u);
	mmap_write_unlock(mm);
	ulpt_reload(mm);

	a.view = addr;
	a.view_size = ULPT_VIEW_SIZE;
	if (copy_to_user(uarg, &a, sizeof(a)))
		return -EFAULT;		/* enabled all the same: ARCH_ULPT_GET_STATE tells */
	return 0;
unlock:
	mmap_write_unlock(mm);
free:
	ulpt_mm_free(u);
	return ret;
}

static long ulpt_disable(void)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct ulpt_mm *u;

	if (mmap_write_lock_killable(mm))
		return -EINTR;
	u = mm->context.ulpt;
	if (!u) {
		mmap_write_unlock(mm);
		return -EINVAL;
	}
	WRITE_ONCE(mm->context.ulpt, NULL);
	/*
	 * Unmap the view if it is still there (it cannot be split, moved or resized: it is
	 * whole or gone). Not the range it had: a process that unmapped the view may have
	 * mapped its own memory there since.
	 */
	vma = find_vma(mm, u->view);
	if (vma && vma->vm_start == u->view && ulpt_vma_is_view(vma))
		do_munmap(mm, vma->vm_start, vma->vm_end - vma->vm_start, NULL);
	mmap_write_unlock(mm);
	ulpt_reload(mm);		/* no CPU walks the table after this */
	ulpt_mm_free(u);
	return 0;
}

/* The calling thread's ULPT_STATUS: in the MSR if this CPU holds it. */
static u64 ulpt_current_status(struct ulpt_mm *u)
{
	u64 status = ulpt_thread_status(current, u);

	if (this_cpu_read(ulpt_cpu_owner) == current)
		rdmsrl(MSR_ULPT_STATUS, status);
	return status;
}

static long ulpt_get_state(struct ulpt_state __user *uarg)
{
	struct mm_struct *mm = current->mm;
	struct ulpt_state s = { };
	struct ulpt_mm *u;
	u64 status;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	u = mm->context.ulpt;		/* freed only after a writer dropped it */
	if (u) {
		s.flags = ULPT_STATE_ENABLED;
		s.view = u->view;
		s.view_size = ULPT_VIEW_SIZE;
		s.handler = ulpt_thread_handler(current, u);
		s.stack_adjust = ULPT_RED_ZONE;
		s.table_bytes = READ_ONCE(u->pages) * PAGE_SIZE;
		preempt_disable();
		status = ulpt_current_status(u);
		preempt_enable();
		if (status & ULPT_STATUS_IN_HANDLER)
			s.flags |= ULPT_STATE_IN_HANDLER;
	}
	mmap_read_unlock(mm);
	return copy_to_user(uarg, &s, sizeof(s)) ? -EFAULT : 0;
}

/* The thread's state belongs to table u from now on: none set on an older table survives. */
static void ulpt_thread_adopt(struct ulpt_mm *u)
{
	struct thread_struct *t = &current->thread;

	if (t->ulpt_gen == u->gen)
		return;
	t->ulpt_handler = 0;
	t->ulpt_status = 0;
	t->ulpt_log_base = 0;
	t->ulpt_log_ctl = 0;
	t->ulpt_log_index = 0;
	t->ulpt_gen = u->gen;
}

static long ulpt_set_handler(unsigned long handler)
{
	struct mm_struct *mm = current->mm;
	struct ulpt_mm *u;

	/*
	 * Below the user address limit of the current paging mode is canonical
	 * for the CPU (48 or 57 bits), so the WRMSR below cannot fault.
	 */
	if (handler >= TASK_SIZE_MAX)
		return -EINVAL;
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	u = mm->context.ulpt;		/* DISABLE changes it under the write lock */
	if (!u) {
		mmap_read_unlock(mm);
		return -EINVAL;
	}
	preempt_disable();
	ulpt_save_thread(current);
	ulpt_thread_adopt(u);
	current->thread.ulpt_handler = handler;
	ulpt_load_thread(current, u);
	preempt_enable();
	mmap_read_unlock(mm);
	return 0;
}

static long ulpt_set_log(struct ulpt_log __user *uarg)
{
	struct thread_struct *t = &current->thread;
	struct mm_struct *mm = current->mm;
	struct ulpt_log a;
	struct ulpt_mm *u;
	bool count;
	u64 bytes;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags & ~ULPT_LOG_COUNT)
		return -EINVAL;
	count = a.flags & ULPT_LOG_COUNT;
	if (a.base) {
		if (count ? a.size_shift || a.thresh :
			    a.size_shift > ULPT_LOG_MAX_SHIFT || a.thresh > 1U << a.size_shift)
			return -EINVAL;
		/*
		 * The whole log below the user address limit: the base is canonical for
		 * the CPU, so the WRMSR cannot fault, and no record lands at a kernel
		 * or non-canonical address. A count table is sparse, indexed by the
		 * address counted: its size is no property of it, and a counter beyond
		 * the limit is a user access that faults or a violation (FULL).
		 */
		bytes = count ? 0 : (u64)ULPT_REC_SIZE << a.size_shift;
		if (!IS_ALIGNED(a.base, ULPT_LOG_ALIGN) || a.base >= TASK_SIZE_MAX ||
		    bytes > TASK_SIZE_MAX - a.base)
			return -EINVAL;
	}
	if (count && !ulpt_count_cpu)
		return -ENODEV;
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	u = mm->context.ulpt;		/* DISABLE changes it under the write lock */
	if (!u) {
		mmap_read_unlock(mm);
		return -EINVAL;
	}
	preempt_disable();
	ulpt_save_thread(current);
	ulpt_thread_adopt(u);
	t->ulpt_log_base = a.base;
	if (!a.base)
		t->ulpt_log_ctl = 0;
	else if (count)
		t->ulpt_log_ctl = ULPT_LOG_CTL_COUNT;
	else
		t->ulpt_log_ctl = a.size_shift | (u64)a.thresh << ULPT_LOG_CTL_THRESH_SHIFT;
	t->ulpt_log_index = a.base ? a.index : 0;
	ulpt_load_thread(current, u);
	preempt_enable();
	mmap_read_unlock(mm);
	return 0;
}

static long ulpt_get_log(struct ulpt_log __user *uarg)
{
	struct thread_struct *t = &current->thread;
	struct mm_struct *mm = current->mm;
	struct ulpt_log l = { };
	struct ulpt_mm *u;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	u = mm->context.ulpt;
	if (u && ulpt_thread_log(current, u)) {
		l.base = t->ulpt_log_base;
		l.size_shift = t->ulpt_log_ctl & ULPT_LOG_CTL_SIZE_MASK;
		l.thresh = t->ulpt_log_ctl >> ULPT_LOG_CTL_THRESH_SHIFT;
		if (t->ulpt_log_ctl & ULPT_LOG_CTL_COUNT)
			l.flags = ULPT_LOG_COUNT;
		/* The CPU advances the index: the MSR holds it while the log is loaded */
		preempt_disable();
		l.index = t->ulpt_log_index;
		if (this_cpu_read(ulpt_cpu_owner) == current && this_cpu_read(ulpt_cpu_log))
			rdmsrl(MSR_ULPT_LOG_INDEX, l.index);
		preempt_enable();
	}
	mmap_read_unlock(mm);
	return copy_to_user(uarg, &l, sizeof(l)) ? -EFAULT : 0;
}

long ulpt_arch_prctl(int option, unsigned long arg2)
{
	if (!cpu_feature_enabled(X86_FEATURE_ULPT))
		return -ENODEV;
	switch (option) {
	case ARCH_ULPT_ENABLE:
		return ulpt_enable((struct ulpt_enable __user *)arg2);
	case ARCH_ULPT_DISABLE:
		return ulpt_disable();
	case ARCH_ULPT_SET_HANDLER:
		return ulpt_set_handler(arg2);
	case ARCH_ULPT_GET_STATE:
		return ulpt_get_state((struct ulpt_state __user *)arg2);
	case ARCH_ULPT_SET_LOG:
		if (!ulpt_log_cpu)
			return -ENODEV;
		return ulpt_set_log((struct ulpt_log __user *)arg2);
	case ARCH_ULPT_GET_LOG:
		if (!ulpt_log_cpu)
			return -ENODEV;
		return ulpt_get_log((struct ulpt_log __user *)arg2);
	}
	return -EINVAL;
}
