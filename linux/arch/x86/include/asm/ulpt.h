/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_X86_ULPT_H
#define _ASM_X86_ULPT_H

#ifdef CONFIG_X86_USER_PAGE_TABLES

#include <linux/bits.h>
#include <linux/cpufeature.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>

/*
 * The geometry of a User Level Page Tables table. It is a radix tree of
 * page-sized tables of 8-byte entries: ULPT_DIR_LEVELS directory levels
 * translate the virtual address bits below ULPT_VA_BITS down to
 * ULPT_LEAF_SHIFT, and each leaf holds the ULPT_ENTRY_SIZE-byte entries of
 * the pages in one ULPT_LEAF_SPAN of address space. The leaves are also
 * mapped into the process at the "view", so that the entry of the page at
 * va is at view + (va >> PAGE_SHIFT) * ULPT_ENTRY_SIZE.
 */
#define ULPT_VA_BITS		47
#define ULPT_VA_LIMIT		BIT(ULPT_VA_BITS)
#define ULPT_DIR_BITS		9
#define ULPT_DIR_ENTRIES	BIT(ULPT_DIR_BITS)
#define ULPT_DIR_LEVELS		3
#define ULPT_LEAF_SHIFT		20
#define ULPT_LEAF_SPAN		BIT(ULPT_LEAF_SHIFT)
/* The address bits a directory entry of a level translates start here */
#define ULPT_DIR_SHIFT(level)	\
	(ULPT_LEAF_SHIFT + ULPT_DIR_BITS * (ULPT_DIR_LEVELS - 1 - (level)))
#define ULPT_DIR_P		BIT_ULL(0)
#define ULPT_DIR_ADDR		GENMASK_ULL(51, 12)
/* ULPT_STKADJ: the handler frame goes below the x86-64 ABI's red zone */
#define ULPT_RED_ZONE		128

/* Per address space: the table (kernel-owned directories, leaves also at the view) */
struct ulpt_mm {
	struct mutex lock;		/* the tree and its counters */
	unsigned long view;		/* user address of the view */
	u64 *root;			/* root directory (kernel address) */
	unsigned long pages;		/* table pages allocated */
	u64 gen;			/* new for each table, kept by fork */
};

/* What this CPU's ULPT MSRs hold: the address space's root and view, the thread's state */
DECLARE_PER_CPU(u64, ulpt_cpu_root);
DECLARE_PER_CPU(struct task_struct *, ulpt_cpu_owner);
DECLARE_PER_CPU(u64, ulpt_cpu_log);

void ulpt_load_mm(struct ulpt_mm *u);
void ulpt_load_thread(struct task_struct *tsk, struct ulpt_mm *u);
void ulpt_save_thread(struct task_struct *tsk);
void ulpt_release_cpu(void);
void __ulpt_switch_to(struct task_struct *prev, struct task_struct *next);
void ulpt_reload(struct mm_struct *mm);

/* A thread's handler state belongs to the table it was set for, none in another */
static inline u64 ulpt_thread_handler(struct task_struct *tsk, struct ulpt_mm *u)
{
	return tsk->thread.ulpt_gen == u->gen ? tsk->thread.ulpt_handler : 0;
}

static inline u64 ulpt_thread_status(struct task_struct *tsk, struct ulpt_mm *u)
{
	return tsk->thread.ulpt_gen == u->gen ? tsk->thread.ulpt_status : 0;
}

/* The thread's ULPT_LOG_BASE: 0 when it has no log on table u */
static inline u64 ulpt_thread_log(struct task_struct *tsk, struct ulpt_mm *u)
{
	return tsk->thread.ulpt_gen == u->gen ? tsk->thread.ulpt_log_base : 0;
}

/*
 * switch_mm_irqs_off(), when the address space changes: load its table, or
 * turn ULPT off if the previous one had a table. Switching between address
 * spaces without tables writes no MSR.
 */
static inline void ulpt_switch_mm(struct mm_struct *next)
{
	struct ulpt_mm *u;

	if (!cpu_feature_enabled(X86_FEATURE_ULPT))
		return;
	u = READ_ONCE(next->context.ulpt);
	if (u || this_cpu_read(ulpt_cpu_root))
		ulpt_load_mm(u);
}

/*
 * __switch_to(): save the outgoing thread's in-handler state and log index,
 * load the incoming thread's handler and log. Nothing to do between threads
 * without a table (a CPU with a log loaded has an owner).
 */
static inline void ulpt_switch_to(struct task_struct *prev, struct task_struct *next)
{
	if (!cpu_feature_enabled(X86_FEATURE_ULPT))
		return;
	if (this_cpu_read(ulpt_cpu_owner) ||
	    (next->mm && READ_ONCE(next->mm->context.ulpt)))
		__ulpt_switch_to(prev, next);
}

#else /* !CONFIG_X86_USER_PAGE_TABLES */

struct mm_struct;
struct task_struct;

static inline void ulpt_switch_mm(struct mm_struct *next) { }
static inline void ulpt_switch_to(struct task_struct *prev, struct task_struct *next) { }

#endif /* CONFIG_X86_USER_PAGE_TABLES */

#endif /* _ASM_X86_ULPT_H */
