/*
 * The ULPT MSRs (docs/spec.md section 3), from RDMSR and WRMSR.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "ulpt-core.h"
#include "ulpt-log.h"
#include "ulpt-qemu.h"
#include "trace.h"

bool ulpt_msr_access(CPUX86State *env, uint32_t msr, uint64_t *val,
                     bool is_write)
{
    CPUState *cs = env_cpu(env);
    uint64_t *reg;
    bool flush = false;         /* R-MSR-3: the write discards cached rights */

    if (!(env->features[FEAT_7_0_EDX] & CPUID_7_0_EDX_ULPT)) {
        return false;
    }
    switch (msr) {
    case MSR_ULPT_CTL:
        reg = &env->ulpt.ctl;
        flush = true;
        break;
    case MSR_ULPT_ROOT:
        reg = &env->ulpt.root;
        flush = true;
        break;
    case MSR_ULPT_VIEW:
        reg = &env->ulpt.view;
        flush = true;
        break;
    case MSR_ULPT_HANDLER:
        reg = &env->ulpt.handler;
        break;
    case MSR_ULPT_STKADJ:
        reg = &env->ulpt.stkadj;
        break;
    case MSR_ULPT_STATUS:
        reg = &env->ulpt.status;
        break;
    case MSR_ULPT_LOG_BASE:
        reg = &env->ulpt.log_base;
        break;
    case MSR_ULPT_LOG_CTL:
        reg = &env->ulpt.log_ctl;
        break;
    case MSR_ULPT_LOG_INDEX:
        reg = &env->ulpt.log_index;
        break;
    default:
        return false;
    }
    if (msr == MSR_ULPT_LOG_BASE || msr == MSR_ULPT_LOG_CTL ||
        msr == MSR_ULPT_LOG_INDEX) {
        ulpt_log_fold(env);     /* the generated code's additions */
    }
    if (!is_write) {
        *val = *reg;
        return true;
    }
    if (!ulpt_msr_write_ok(msr, *val, env_archcpu(env)->phys_bits,
                           ulpt_va_bits(env))) {
        return false;
    }
    trace_ulpt_msr_write(cs->cpu_index, msr, *val);
    ulpt_ring_drop(env);        /* where the next record goes, the view */
    if ((msr == MSR_ULPT_LOG_BASE || msr == MSR_ULPT_LOG_CTL) &&
        *reg != *val) {
        flush = true;           /* entries that count into the old table */
    }
    *reg = *val;
    if (msr == MSR_ULPT_CTL || msr == MSR_ULPT_LOG_BASE) {
        ulpt_update_hflags(env);
    }
    if (flush) {
        tlb_flush(cs);
    }
    return true;
}
