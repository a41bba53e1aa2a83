// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the state of a process in /proc/<pid>/arch_status.
 */
#include <linux/mm.h>
#include <linux/processor.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <asm/ulpt.h>
#include <uapi/asm/ulpt.h>

/*
 * "ULPT: enabled" with the table's size and the thread's access log in
 * records (0: none), "disabled", or "unsupported" without the CPU feature or
 * with "noulpt".
 */
void ulpt_proc_status(struct seq_file *m, struct task_struct *task)
{
	unsigned long pages = 0;
	struct mm_struct *mm;
	u64 records = 0;
	bool on = false;

	if (!cpu_feature_enabled(X86_FEATURE_ULPT)) {
		seq_puts(m, "ULPT:\tunsupported\n");
		return;
	}
	mm = get_task_mm(task);
	if (mm) {
		mmap_read_lock(mm);
		if (mm->context.ulpt) {
			on = true;
			pages = READ_ONCE(mm->context.ulpt->pages);
			/* The thread's own fields: it may change them meanwhile */
			if (READ_ONCE(task->thread.ulpt_gen) == mm->context.ulpt->gen &&
			    READ_ONCE(task->thread.ulpt_log_base))
				records = 1ULL << (READ_ONCE(task->thread.ulpt_log_ctl) &
						   ULPT_LOG_CTL_SIZE_MASK);
		}
		mmap_read_unlock(mm);
		mmput(mm);
	}
	if (on)
		seq_printf(m, "ULPT:\tenabled\nULPT_table:\t%lu kB\nULPT_log:\t%llu records\n",
			   pages * (PAGE_SIZE / 1024), records);
	else
		seq_puts(m, "ULPT:\tdisabled\n");
}
