/*
 * The hooks QEMU's i386 target calls into the ULPT extension (see qemu/patches).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_QEMU_H
#define ULPT_QEMU_H

#include "ulpt-arch.h"

/* Does this CPU check CPL 3 accesses now? The only test on QEMU's ordinary TLB miss path. */
static inline bool ulpt_enabled(CPUX86State *env)
{
    return env->ulpt.ctl & ULPT_CTL_EN;
}

/*
 * x86_cpu_tlb_fill, a user MMU index (is_mmu_index_user), ULPT enabled. ulpt_tlb_fill_cached runs first: it answers
 * from the TLB entry of a page with line rights (no page walk) and returns true when done.
 * ulpt_tlb_fill runs after a successful page walk, installs the TLB entry itself and returns
 * true, or handles a violation (returns false only for a probe).
 */
bool ulpt_tlb_fill_cached(CPUState *cs, vaddr addr, int size, MMUAccessType type,
                          int mmu_idx, bool probe, uintptr_t ra);
bool ulpt_tlb_fill(CPUState *cs, vaddr addr, int size, MMUAccessType type, int mmu_idx,
                   bool probe, uintptr_t ra, hwaddr paddr, int prot, int page_size);

/* RDMSR/WRMSR of MSR_ULPT_*: false means #GP. */
bool ulpt_rdmsr(CPUX86State *env, uint32_t msr, uint64_t *val);
bool ulpt_wrmsr(CPUX86State *env, uint32_t msr, uint64_t val);

/* EXCP_ULPT from x86_cpu_do_interrupt: push the frame, enter the handler. */
void ulpt_deliver(CPUX86State *env);
/* Every exception or interrupt delivery: ends a permit and any frame access. */
void ulpt_event(CPUX86State *env);

/* `info registers`, `info ulpt`, vmstate. */
void ulpt_dump_state(CPUX86State *env, FILE *f);
extern const VMStateDescription vmstate_ulpt;

#endif /* ULPT_QEMU_H */
