/*
 * The ULPT state's hooks in QEMU's i386 target (see qemu/patches): the MSRs
 * (ulpt-msr.c), `info registers` and migration (ulpt-state.c). The other
 * concerns have headers of their own: ulpt-deliver.h, ulpt-tlb.h,
 * ulpt-probe.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_QEMU_H
#define ULPT_QEMU_H

#include "ulpt-arch.h"

/* ULPT_CTL.EN: does this CPU check CPL 3 accesses now? */
static inline bool ulpt_en(CPUX86State *env)
{
    return env->ulpt.ctl & ULPT_CTL_EN;
}

/* ulpt-model.c: modeled time is on; x86_cpu_tlb_fill's calls counted. */
extern bool ulpt_model_counting;
extern uint64_t ulpt_model_user_fills;

/*
 * ulpt_en() as x86_cpu_tlb_fill asks it, for a CPL 3 MMU index only: the
 * only ULPT test on QEMU's ordinary TLB miss path. Under modeled time it
 * also counts those fills (`info ulpt`'s user_fills), so that QEMU's work
 * can be compared between CPU models; everything else asks ulpt_en().
 */
static inline bool ulpt_enabled(CPUX86State *env)
{
    if (unlikely(ulpt_model_counting)) {
        qatomic_inc(&ulpt_model_user_fills);
    }
    return ulpt_en(env);
}

/*
 * HF_ULPT_EN mirrors ULPT_CTL.EN, so that translation knows when to check
 * wide accesses; HF_ULPT_LOG says the thread has an access log, so that user
 * code is translated with the test that publishes an instruction's records
 * (ulpt-log.c).
 */
static inline void ulpt_update_hflags(CPUX86State *env)
{
    env->hflags = (env->hflags & ~(HF_ULPT_EN_MASK | HF_ULPT_LOG_MASK)) |
                  (ulpt_en(env) ? HF_ULPT_EN_MASK : 0) |
                  (ulpt_en(env) && env->ulpt.log_base ?
                   HF_ULPT_LOG_MASK : 0);
}

/*
 * RDMSR (is_write false: stores the value in *val) or WRMSR (is_write true:
 * writes *val) of MSR_ULPT_*. Returns false when the access raises #GP.
 */
bool ulpt_msr_access(CPUX86State *env, uint32_t msr, uint64_t *val,
                     bool is_write);

/*
 * Width of linear addresses in the current paging mode: canonical checks
 * follow it.
 */
static inline unsigned ulpt_va_bits(CPUX86State *env)
{
    return (env->cr[4] & CR4_LA57_MASK) ? 57 : 48;
}

/* `info registers`, vmstate. */
void ulpt_dump_state(CPUX86State *env, FILE *f);
extern const VMStateDescription vmstate_ulpt;

#endif /* ULPT_QEMU_H */
