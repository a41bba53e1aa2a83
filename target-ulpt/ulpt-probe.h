/*
 * Accesses QEMU makes in parts, checked whole first (ulpt-probe.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_PROBE_H
#define ULPT_PROBE_H

#include "ulpt-qemu.h"

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
    if (ulpt_en(env) && (env->hflags & HF_CPL_MASK) == 3) {
        ulpt_probe_range(env, addr, size, type, ra);
    }
#endif
}

#endif /* ULPT_PROBE_H */
