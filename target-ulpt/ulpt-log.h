/*
 * The access log (docs/spec.md 6.2), ulpt-log.c: logged accesses are staged
 * in their slots as they are made and published when their instruction has
 * completed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_LOG_H
#define ULPT_LOG_H

#include "ulpt-qemu.h"

/* Is an access of `kind` that word 0 `page` denies logged (R-LOG-1)? */
static inline bool ulpt_log_wants(CPUX86State *env, uint64_t page,
                                  unsigned kind)
{
    return (page & ULPT_LOG) && env->ulpt.log_base && kind != ULPT_KIND_X;
}

/*
 * The host address of va from a TLB entry (the main one or a victim) that
 * `usable` accepts, or NULL, without a fill (an access is in flight).
 */
uint8_t *ulpt_tlb_host(CPUX86State *env, uint64_t va, int mmu_idx,
                       bool (*usable)(CPUTLBEntry *, uint64_t));

typedef enum UlptLogStage {
    ULPT_LOG_STAGED,     /* the record waits for the instruction to complete */
    ULPT_LOG_FULL,       /* its slot is in use: a FULL violation (R-LOG-4) */
} UlptLogStage;

/*
 * A logged access [start, start + size) of `kind`, denied for `reason`,
 * storing *val (NULL: not known) at host return address ra. Faults on the
 * log are raised from here (R-LOG-3).
 */
UlptLogStage ulpt_log_stage(CPUX86State *env, uint64_t start, unsigned size,
                            unsigned kind, unsigned reason,
                            const uint64_t *val, uintptr_t ra);
/* A wide access checked whole: its parts are covered by its record. */
void ulpt_log_cover(CPUX86State *env, uint64_t start, unsigned size,
                    unsigned kind);
/*
 * The staged records' instruction has completed: set their V bits and
 * advance the index (R-LOG-2, R-LOG-3). Returns whether a log event is due
 * (R-LOG-5).
 */
bool ulpt_log_publish(CPUX86State *env);
/*
 * A store to the line of a page counted (6.3) or logged (6.2) through the
 * helper: let the generated code make the page's next final stores to those
 * lines, and count them or append their records, itself (tlb_set_count,
 * tlb_set_ring).
 */
void ulpt_count_inline(CPUX86State *env, int mmu_idx, uint64_t addr,
                       const CPUTLBEntryFull *full);
/*
 * The additions the generated code made, into ULPT_LOG_INDEX and the
 * counts (R-CNT-1): before LOG_INDEX is read or written.
 */
void ulpt_log_fold(CPUX86State *env);
/* The generated code appends no more records until ulpt_count_inline. */
void ulpt_ring_drop(CPUX86State *env);

/* Those additions, not yet folded (for readers on other threads). */
static inline uint64_t ulpt_log_unfolded(CPUX86State *env)
{
#if !defined(CONFIG_USER_ONLY) && defined(TARGET_TLB_COUNT)
    return qatomic_read(&env_tlb(env)->c.count_added);
#else
    return 0;
#endif
}
/* The instruction was abandoned (x86_restore_state_to_opc): no records. */
void ulpt_log_abandon(CPUX86State *env);
/*
 * do_interrupt_all: a fault abandons the instruction; an interrupt, a trap
 * or a software interrupt comes after it.
 */
void ulpt_log_event(CPUX86State *env, int intno, int is_int, int is_hw);

#endif /* ULPT_LOG_H */
