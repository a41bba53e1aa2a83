// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the ULPT MSRs on context switch.
 *
 * ULPT_CTL, ULPT_ROOT and ULPT_VIEW follow the address space (switch_mm);
 * ULPT_HANDLER, ULPT_STKADJ and ULPT_STATUS follow the thread
 * (__switch_to). Each CPU remembers what its MSRs hold, so that switching
 * between tasks that do not use ULPT writes no MSR.
 */
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <asm/msr.h>
#include <asm/tlbflush.h>
#include <asm/ulpt.h>

DEFINE_PER_CPU(u64, ulpt_cpu_root);
static DEFINE_PER_CPU(u64, ulpt_cpu_view);
/* The thread whose ULPT_STATUS the MSR holds, or NULL */
DEFINE_PER_CPU(struct task_struct *, ulpt_cpu_owner);

/* Load the table of an address space, or turn ULPT off for u == NULL. */
void ulpt_load_mm(struct ulpt_mm *u)
{
	u64 root = u ? __pa(u->root) : 0, view = u ? u->view : 0;

	if (this_cpu_read(ulpt_cpu_root) == root && this_cpu_read(ulpt_cpu_view) == view)
		return;
	if (root) {
		wrmsrl(MSR_ULPT_ROOT, root);
		wrmsrl(MSR_ULPT_VIEW, view);
		wrmsrl(MSR_ULPT_CTL, ULPT_CTL_EN);
	} else {
		wrmsrl(MSR_ULPT_CTL, 0);
		wrmsrl(MSR_ULPT_ROOT, 0);
		wrmsrl(MSR_ULPT_VIEW, 0);
	}
	this_cpu_write(ulpt_cpu_root, root);
	this_cpu_write(ulpt_cpu_view, view);
}

/*
 * Load a thread's handler state for table u; this CPU then owns its ULPT_STATUS. While a
 * CPU owns it, the MSR alone holds it (the CPU sets and clears it) and thread.ulpt_status
 * is 0: a copy of the thread (fork, clone) then starts outside the handler, not in a state
 * saved at some earlier switch that the thread has left by UIRET since.
 */
void ulpt_load_thread(struct task_struct *tsk, struct ulpt_mm *u)
{
	wrmsrl(MSR_ULPT_HANDLER, ulpt_thread_handler(tsk, u));
	wrmsrl(MSR_ULPT_STKADJ, ULPT_RED_ZONE);
	wrmsrl(MSR_ULPT_STATUS, ulpt_thread_status(tsk, u));
	tsk->thread.ulpt_status = 0;
	this_cpu_write(ulpt_cpu_owner, tsk);
}

/* The slow path of ulpt_switch_to(). */
void __ulpt_switch_to(struct task_struct *prev, struct task_struct *next)
{
	struct ulpt_mm *u;

	/* The CPU sets and clears the in-handler state: save it. */
	if (this_cpu_read(ulpt_cpu_owner) == prev)
		rdmsrl(MSR_ULPT_STATUS, prev->thread.ulpt_status);
	u = next->mm ? READ_ONCE(next->mm->context.ulpt) : NULL;
	if (u)
		ulpt_load_thread(next, u);
	else
		this_cpu_write(ulpt_cpu_owner, NULL);
}

static void ulpt_reload_ipi(void *info)
{
	struct mm_struct *mm = info;
	struct ulpt_mm *u = READ_ONCE(mm->context.ulpt);

	if (this_cpu_read(cpu_tlbstate.loaded_mm) != mm)
		return;
	ulpt_load_mm(u);
	if (current->mm == mm && u)
		ulpt_load_thread(current, u);
	else
		this_cpu_write(ulpt_cpu_owner, NULL);
}

/*
 * After the table of an address space was created or removed: every CPU
 * running it reloads its MSRs, so that no CPU walks a freed table.
 */
void ulpt_reload(struct mm_struct *mm)
{
	on_each_cpu_mask(mm_cpumask(mm), ulpt_reload_ipi, mm, true);
}
