// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the ULPT MSRs on context switch.
 *
 * ULPT_CTL, ULPT_ROOT and ULPT_VIEW follow the address space (switch_mm);
 * ULPT_HANDLER, ULPT_STKADJ, ULPT_STATUS and the access log's ULPT_LOG_BASE,
 * ULPT_LOG_CTL and ULPT_LOG_INDEX follow the thread (__switch_to). Each CPU
 * remembers what its MSRs hold, so that switching between tasks that do not
 * use ULPT writes no MSR.
 */
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <asm/msr.h>
#include <asm/tlbflush.h>
#include <asm/ulpt.h>

/* The table in use on this CPU (0: ULPT off), and its view */
DEFINE_PER_CPU(u64, ulpt_cpu_root);
static DEFINE_PER_CPU(u64, ulpt_cpu_view);
/*
 * What ULPT_ROOT and ULPT_VIEW hold: kept when ULPT is turned off, which a clear
 * ULPT_CTL.EN alone does (the CPU reads neither then; docs/spec.md section 9). Each
 * write discards the CPU's cached translations (R-MSR-3): a debugger's stop switches
 * to the debugger and back, and so writes one MSR each way, not three.
 */
static DEFINE_PER_CPU(u64, ulpt_msr_root);
static DEFINE_PER_CPU(u64, ulpt_msr_view);
/* The thread whose ULPT_STATUS the MSR holds, or NULL */
DEFINE_PER_CPU(struct task_struct *, ulpt_cpu_owner);
/* ULPT_LOG_BASE: the owner's log, or 0 */
DEFINE_PER_CPU(u64, ulpt_cpu_log);

/* Load the table of an address space, or turn ULPT off for u == NULL. */
void ulpt_load_mm(struct ulpt_mm *u)
{
	u64 root = u ? __pa(u->root) : 0, view = u ? u->view : 0;
	u64 was = this_cpu_read(ulpt_cpu_root);

	if (was == root && this_cpu_read(ulpt_cpu_view) == view)
		return;
	if (root) {
		if (this_cpu_read(ulpt_msr_root) != root) {
			wrmsrl(MSR_ULPT_ROOT, root);
			this_cpu_write(ulpt_msr_root, root);
		}
		if (this_cpu_read(ulpt_msr_view) != view) {
			wrmsrl(MSR_ULPT_VIEW, view);
			this_cpu_write(ulpt_msr_view, view);
		}
		if (!was)
			wrmsrl(MSR_ULPT_CTL, ULPT_CTL_EN);
	} else {
		wrmsrl(MSR_ULPT_CTL, 0);
	}
	this_cpu_write(ulpt_cpu_root, root);
	this_cpu_write(ulpt_cpu_view, view);
}

/*
 * Load a thread's handler state and log for table u; this CPU then owns its ULPT_STATUS
 * and ULPT_LOG_INDEX. While a CPU owns them, the MSRs alone hold them (the CPU changes
 * them) and thread.ulpt_status is 0: a copy of the thread (fork, clone) then starts
 * outside the handler, not in a state saved at some earlier switch that the thread has
 * left by UIRET since. A thread without a log runs with ULPT_LOG_BASE 0, written only
 * when the MSR holds another thread's log.
 */
void ulpt_load_thread(struct task_struct *tsk, struct ulpt_mm *u)
{
	u64 log = ulpt_thread_log(tsk, u);

	wrmsrl(MSR_ULPT_HANDLER, ulpt_thread_handler(tsk, u));
	wrmsrl(MSR_ULPT_STKADJ, ULPT_RED_ZONE);
	wrmsrl(MSR_ULPT_STATUS, ulpt_thread_status(tsk, u));
	if (log) {
		wrmsrl(MSR_ULPT_LOG_CTL, tsk->thread.ulpt_log_ctl);
		wrmsrl(MSR_ULPT_LOG_INDEX, tsk->thread.ulpt_log_index);
		wrmsrl(MSR_ULPT_LOG_BASE, log);
		this_cpu_write(ulpt_cpu_log, log);
	} else if (this_cpu_read(ulpt_cpu_log)) {
		wrmsrl(MSR_ULPT_LOG_BASE, 0);
		this_cpu_write(ulpt_cpu_log, 0);
	}
	tsk->thread.ulpt_status = 0;
	this_cpu_write(ulpt_cpu_owner, tsk);
}

/*
 * Copy what the CPU changes (the in-handler state, the log's write index) back into the
 * thread, if this CPU holds it. The records of a user instruction are in the log before
 * the kernel is entered, so the index saved is exact.
 */
void ulpt_save_thread(struct task_struct *tsk)
{
	if (this_cpu_read(ulpt_cpu_owner) != tsk)
		return;
	rdmsrl(MSR_ULPT_STATUS, tsk->thread.ulpt_status);
	if (this_cpu_read(ulpt_cpu_log))
		rdmsrl(MSR_ULPT_LOG_INDEX, tsk->thread.ulpt_log_index);
}

/* No thread's state on this CPU: no owner, and no log the CPU could append to. */
void ulpt_release_cpu(void)
{
	if (this_cpu_read(ulpt_cpu_log)) {
		wrmsrl(MSR_ULPT_LOG_BASE, 0);
		this_cpu_write(ulpt_cpu_log, 0);
	}
	this_cpu_write(ulpt_cpu_owner, NULL);
}

/* The slow path of ulpt_switch_to(). */
void __ulpt_switch_to(struct task_struct *prev, struct task_struct *next)
{
	struct ulpt_mm *u;

	ulpt_save_thread(prev);
	u = next->mm ? READ_ONCE(next->mm->context.ulpt) : NULL;
	if (u)
		ulpt_load_thread(next, u);
	else
		ulpt_release_cpu();
}

static void ulpt_reload_ipi(void *info)
{
	struct mm_struct *mm = info;
	struct ulpt_mm *u = READ_ONCE(mm->context.ulpt);

	if (this_cpu_read(cpu_tlbstate.loaded_mm) != mm)
		return;
	ulpt_load_mm(u);
	if (current->mm == mm && u) {
		ulpt_save_thread(current);
		ulpt_load_thread(current, u);
	} else {
		ulpt_release_cpu();
	}
}

/*
 * After the table of an address space was created or removed: every CPU
 * running it reloads its MSRs, so that no CPU walks a freed table.
 */
void ulpt_reload(struct mm_struct *mm)
{
	on_each_cpu_mask(mm_cpumask(mm), ulpt_reload_ipi, mm, true);
}
