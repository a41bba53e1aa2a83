/*
 * ULPT in the TLB: the hooks of x86_cpu_tlb_fill and tcg_ops->tlb_check
 * (ulpt-tlb.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_TLB_H
#define ULPT_TLB_H

#include "ulpt-qemu.h"

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

#endif /* ULPT_TLB_H */
