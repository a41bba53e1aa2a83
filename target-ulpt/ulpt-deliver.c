/*
 * User-level delivery and UIRET (docs/spec.md sections 6 and 7): the frame
 * written at delivery, and UIRET reading it back.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "exec/helper-proto.h"
#include "tcg/helper-tcg.h"
#include "tcg/tcg.h"
#include "ulpt-core.h"
#include "ulpt-deliver.h"
#include "trace.h"

/*
 * UIRET restores the RFLAGS bits that POPF may change at CPL 3.
 * cpu_load_eflags takes the arithmetic flags and DF from its value argument
 * whatever the mask; the mask names only the bits QEMU keeps in env->eflags
 * (arithmetic flags left there would come back at the next
 * cpu_compute_eflags), as in helper_iret.
 */
#define ULPT_UIRET_FLAGS (TF_MASK | NT_MASK | AC_MASK | ID_MASK)

void ulpt_deliver(CPUX86State *env)
{
    CPUState *cs = env_cpu(env);
    uint64_t rsp = env->regs[R_ESP];
    uint64_t base = ulpt_frame_base(rsp, env->ulpt.stkadj);
    uint64_t w[ULPT_FRAME_WORDS];
    UlptFrame f = {
        .addr = env->ulpt.fault_addr,
        .info = env->ulpt.fault_info,
        .entry0 = env->ulpt.fault_entry0,
        .entry1 = env->ulpt.fault_entry1,
        .rip = env->eip,
        .rflags = cpu_compute_eflags(env),
        .rsp = rsp,
        .start = env->ulpt.fault_start,
    };

    ulpt_event(env);
    ulpt_frame_encode(&f, w);
    /*
     * A fault here is the ordinary #PF of the push, with nothing changed
     * (R-DEL-2).
     */
    env->ulpt.frame_access = true;
    for (int i = 0; i < ULPT_FRAME_WORDS; i++) {
        cpu_stq_mmuidx_ra(env, base + 8 * i, w[i], MMU_USER64_IDX, 0);
    }
    env->ulpt.frame_access = false;
    env->regs[R_ESP] = base;
    env->eip = env->ulpt.handler;
    env->eflags &= ~(RF_MASK | TF_MASK);
    env->ulpt.status |= ULPT_STATUS_IN_HANDLER;
    env->ulpt_stats.deliveries++;
    trace_ulpt_deliver(cs->cpu_index, f.addr, f.rip, base, env->ulpt.handler);
}

/*
 * The end of a permitted instruction's block (translate.c): the next block
 * through the lookup, as after a jump, unless an interrupt waits; it was
 * held for the instruction (HF_INHIBIT_IRQ), so the main loop takes it.
 */
const void *helper_ulpt_next_tb(CPUX86State *env)
{
    if (qatomic_read(&env_cpu(env)->interrupt_request)) {
        return tcg_code_gen_epilogue;
    }
    return helper_lookup_tb_ptr(env);
}

void ulpt_event(CPUX86State *env)
{
    env->hflags &= ~HF_ULPT_PERMIT_MASK;
    env->ulpt.frame_access = false;
    env->ulpt.sync_step = false;
}

void helper_ulpt_uiret(CPUX86State *env)
{
    uintptr_t ra = GETPC();
    uint64_t w[ULPT_FRAME_WORDS];
    UlptFrame f;

    if (!(env->features[FEAT_7_0_EDX] & CPUID_7_0_EDX_ULPT) ||
        !ulpt_enabled(env)) {
        raise_exception_ra(env, EXCP06_ILLOP, ra);
    }
    if ((env->hflags & HF_CPL_MASK) != 3 || !(env->hflags & HF_CS64_MASK) ||
        !(env->ulpt.status & ULPT_STATUS_IN_HANDLER)) {
        raise_exception_err_ra(env, EXCP0D_GPF, 0, ra);
    }
    env->ulpt.frame_access = true;
    for (int i = 0; i < ULPT_FRAME_WORDS; i++) {
        w[i] = cpu_ldq_mmuidx_ra(env, env->regs[R_ESP] + 8 * i,
                                 MMU_USER64_IDX, ra);
    }
    env->ulpt.frame_access = false;
    ulpt_frame_decode(w, &f);
    if (!ulpt_canonical(f.rip, ulpt_va_bits(env))) {
        raise_exception_err_ra(env, EXCP0D_GPF, 0, ra);
    }
    env->eip = f.rip;
    env->regs[R_ESP] = f.rsp;
    cpu_load_eflags(env, f.rflags, ULPT_UIRET_FLAGS);
    env->ulpt.status &= ~ULPT_STATUS_IN_HANDLER;
    if (f.info & ULPT_INFO_PERMIT) {
        /*
         * R-RET-2: the next instruction runs alone (see translate.c) with
         * these kinds let through, and interrupts wait for it, as after STI.
         */
        env->ulpt.permit_kinds = ULPT_INFO_KIND(f.info) |
                                 ULPT_INFO_PERMITTED(f.info);
        env->hflags |= HF_ULPT_PERMIT_MASK | HF_INHIBIT_IRQ_MASK;
    }
    env->ulpt_stats.returns++;
    trace_ulpt_uiret(env_cpu(env)->cpu_index, f.rip, f.rsp,
                     (env->hflags & HF_ULPT_PERMIT_MASK) ?
                     env->ulpt.permit_kinds : 0);
}
