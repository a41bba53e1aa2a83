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
 * "ULPT: enabled" with the table's size and the thread's access log: its
 * records (0: none), or "count table"; "disabled", or "unsupported" without
 * the CPU feature or with "noulpt".
 */
void ulpt_proc_status(struct seq_file *m, struct task_struct *task)
{
	bool on = false, count = false;
	unsigned long pages = 0;
	struct mm_struct *mm;
	u64 records = 0, ctl;

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
			    READ_ONCE(task->thread.ulpt_log_base)) {
				ctl = READ_ONCE(task->thread.ulpt_log_ctl);
				count = ctl & ULPT_LOG_CTL_COUNT;
				records = 1ULL << (ctl & ULPT_LOG_CTL_SIZE_MASK);
			}
		}
		mmap_read_unlock(mm);
		mmput(mm);
	}
	if (!on) {
		seq_puts(m, "ULPT:\tdisabled\n");
		return;
	}
	seq_printf(m, "ULPT:\tenabled\nULPT_table:\t%lu kB\n", pages * (PAGE_SIZE / 1024));
	if (count)
		seq_puts(m, "ULPT_log:\tcount table\n");
	else
		seq_printf(m, "ULPT_log:\t%llu records\n", records);
}
