/*
 * The hooks QEMU's i386 target calls into the ULPT extension (see
 * qemu/patches): ulpt-tcg.c and ulpt-cpu.c implement them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_QEMU_H
#define ULPT_QEMU_H

#include "ulpt-arch.h"

/*
 * Does this CPU check CPL 3 accesses now? The only test on QEMU's ordinary
 * TLB miss path.
 */
static inline bool ulpt_enabled(CPUX86State *env)
{
    return env->ulpt.ctl & ULPT_CTL_EN;
}

/*
 * HF_ULPT_EN mirrors ULPT_CTL.EN, so that translation knows when to check
 * wide accesses.
 */
static inline void ulpt_update_hflags(CPUX86State *env)
{
    env->hflags = (env->hflags & ~HF_ULPT_EN_MASK) |
                  (ulpt_enabled(env) ? HF_ULPT_EN_MASK : 0);
}

/*
 * x86_cpu_tlb_fill, a user MMU index (is_mmu_index_user), ULPT enabled:
 * ulpt_tlb_fill runs after a successful page walk, installs the TLB entry
 * itself and returns true, or handles a violation (returns false only for a
 * probe).
 */
bool ulpt_tlb_fill(CPUState *cs, vaddr addr, int size, MMUAccessType type,
                   int mmu_idx, bool probe, uintptr_t ra, hwaddr paddr,
                   int prot, int page_size);
/*
 * tcg_ops->tlb_check: an access of a kind that some line of the page denies,
 * or a store to the view (the entry has TLB_CHECK). Returns if it may go on,
 * else delivers or escalates the violation.
 */
void ulpt_tlb_check(CPUState *cs, vaddr addr, int size, MMUAccessType type,
                    int mmu_idx, CPUTLBEntryFull *full, const uint64_t *val,
                    uintptr_t ra);

/*
 * RDMSR (is_write false: stores the value in *val) or WRMSR (is_write true:
 * writes *val) of MSR_ULPT_*. Returns false when the access raises #GP.
 */
bool ulpt_msr_access(CPUX86State *env, uint32_t msr, uint64_t *val,
                     bool is_write);

/*
 * Accesses that QEMU makes in parts (SSE/AVX, x87 80-bit and environment,
 * FXSAVE, XSAVE, CMPXCHG16B) are checked whole before any part is made: a
 * violation then reports the whole access and leaves memory and registers
 * unchanged (spec R-DEL-1).
 */
void ulpt_probe_range(CPUX86State *env, vaddr addr, unsigned size,
                      MMUAccessType type, uintptr_t ra);
static inline void ulpt_probe(CPUX86State *env, vaddr addr, unsigned size,
                              MMUAccessType type, uintptr_t ra)
{
#ifndef CONFIG_USER_ONLY
    if (ulpt_enabled(env) && (env->hflags & HF_CPL_MASK) == 3) {
        ulpt_probe_range(env, addr, size, type, ra);
    }
#endif
}

/* EXCP_ULPT from x86_cpu_do_interrupt: push the frame, enter the handler. */
void ulpt_deliver(CPUX86State *env);
/* Every exception or interrupt delivery: ends a permit and any frame access. */
void ulpt_event(CPUX86State *env);

/* `info registers`, `info ulpt`, vmstate. */
void ulpt_dump_state(CPUX86State *env, FILE *f);
extern const VMStateDescription vmstate_ulpt;

#endif /* ULPT_QEMU_H */
