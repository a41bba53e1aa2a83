// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the arch_prctl() API.
 *
 * ARCH_ULPT_ENABLE creates the table of the calling process and maps its
 * view, ARCH_ULPT_DISABLE removes both, ARCH_ULPT_SET_HANDLER sets the
 * calling thread's handler and ARCH_ULPT_GET_STATE reports. The table
 * pointer of an mm changes only under mmap_lock held for writing.
 */
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
	current->thread.ulpt_status = ulpt_current_status(u);
	current->thread.ulpt_handler = handler;
	current->thread.ulpt_gen = u->gen;
	ulpt_load_thread(current, u);
	preempt_enable();
	mmap_read_unlock(mm);
	return 0;
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
	}
	return -EINVAL;
}
