/*
 * Accesses QEMU makes in parts (docs/spec.md R-DEL-1): checked whole before
 * the first part.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/helper-proto.h"
#include "ulpt-log.h"
#include "ulpt-probe.h"

void ulpt_probe_range(CPUX86State *env, vaddr addr, unsigned size,
                      MMUAccessType type, uintptr_t ra)
{
    CPUTLBCommon *split = &env_tlb(env)->c;
    int mmu_idx = cpu_mmu_index(env, false);
    vaddr start = addr;
    unsigned whole = size, staged = env->ulpt.log_staged;

    /* A violation in any page reports the whole access (see violation()). */
    split->split_addr = addr;
    split->split_ra = ra;
    split->split_size = size;
    while (size) {
        unsigned n = MIN(size, TARGET_PAGE_SIZE - (addr & ~TARGET_PAGE_MASK));

        probe_access(env, addr, n, type, mmu_idx, ra);
        addr += n;
        size -= n;
    }
    split->split_size = 0;
    if (env->ulpt.log_staged > staged) {
        /*
         * Logged, the access has its record: its parts add none (R-LOG-2).
         * Only then: the cover lasts until the record is published or
         * forgotten, so one left by an access that logged nothing would
         * swallow a later instruction's record in its range.
         */
        ulpt_log_cover(env, start, whole,
                       type == MMU_DATA_STORE ? ULPT_KIND_W : ULPT_KIND_R);
    }
}

/*
 * Wide SSE/AVX accesses (translate.c): desc is size | store << 8 |
 * aligned << 9.
 */
void helper_ulpt_probe(CPUX86State *env, target_ulong addr, uint32_t desc)
{
    unsigned size = desc & 0xff;
    MMUAccessType type = (desc & (1 << 8)) ? MMU_DATA_STORE : MMU_DATA_LOAD;

    if ((desc & (1 << 9)) && (addr & (size - 1))) {
        return;                         /* the alignment #GP comes first */
    }
    ulpt_probe(env, addr, size, type, GETPC());
}
