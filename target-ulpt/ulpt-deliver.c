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
#include "ulpt-log.h"
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

    /*
     * An after event comes once its instruction has completed: that
     * instruction's records go first (R-LOG-2). A violation's instruction
     * was abandoned and has none.
     */
    ulpt_log_publish(env);
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
 * R-RET-4: the instruction that UIRET let through with STEP has completed.
 * The after event carries the frame words UIRET read (which access it was)
 * with reason AFTER, and the state of the next instruction. A single-step
 * trap that TF asks for now waits in the frame (TRAP) for the UIRET that
 * returns from this event, so that a debugger stepping the program stops
 * at the next instruction, not one later.
 */
static bool ulpt_deliver_after(CPUX86State *env, bool trap)
{
    env->ulpt.step = false;
    if (!ulpt_en(env) || !ulpt_can_deliver(env)) {
        return false;                   /* dropped: CPL 0 (SYSCALL), CS.L 0 */
    }
    env->ulpt.fault_addr = env->ulpt.step_addr;
    env->ulpt.fault_info = ulpt_info(ULPT_INFO_KIND(env->ulpt.step_info),
                                     ULPT_INFO_PERMITTED(env->ulpt.step_info),
                                     ULPT_REASON_AFTER,
                                     ULPT_INFO_SIZE(env->ulpt.step_info)) |
                           (trap ? ULPT_INFO_TRAP : 0);
    env->ulpt.fault_entry0 = env->ulpt.step_entry0;
    env->ulpt.fault_entry1 = env->ulpt.step_entry1;
    env->ulpt.fault_start = env->ulpt.step_start;
    env->ulpt_stats.after_events++;
    /* A fault on the frame is the #PF of the next instruction (R-RET-4). */
    ulpt_deliver(env);
    return true;
}

/*
 * The end of a permitted instruction's block (translate.c), with the state
 * of the next instruction in env: the after event if UIRET asked for one,
 * else the single-step trap if TF is set; then the next block through the
 * lookup, as after a jump, unless an interrupt waits (it was held for the
 * instruction, HF_INHIBIT_IRQ, so the main loop takes it now) or the block
 * may not chain.
 */
const void *helper_ulpt_next_tb(CPUX86State *env, uint32_t how)
{
    bool tf = (how & ULPT_NEXT_TF) || env->ulpt.uiret_tf ||
              ((how & ULPT_NEXT_RECHECK_TF) && (env->eflags & TF_MASK));

    env->ulpt.uiret_tf = false;

    if (env->ulpt.step && ulpt_deliver_after(env, tf)) {
        tf = false;
    }
    if (tf) {
        helper_single_step(env);
    }
    if (!(how & ULPT_NEXT_LOOKUP) ||
        qatomic_read(&env_cpu(env)->interrupt_request)) {
        return tcg_code_gen_epilogue;
    }
    return helper_lookup_tb_ptr(env);
}

/*
 * After a UIRET made with TF set (translate.c): its single-step trap,
 * unless it let an instruction through (R-RET-2): that instruction's block
 * then traps after it, or its after event carries the trap (R-RET-4), as
 * MOV SS holds the trap for one instruction.
 */
void helper_ulpt_uiret_tf(CPUX86State *env)
{
    if (!(env->hflags & HF_ULPT_PERMIT_MASK)) {
        helper_single_step(env);
    }
    env->ulpt.uiret_tf = true;
}

void ulpt_event(CPUX86State *env)
{
    env->hflags &= ~HF_ULPT_PERMIT_MASK;
    env->ulpt.frame_access = false;
    env->ulpt.sync_step = false;
    env->ulpt.step = false;
    env->ulpt.uiret_tf = false;
}

void helper_ulpt_uiret(CPUX86State *env)
{
    uintptr_t ra = GETPC();
    uint64_t w[ULPT_FRAME_WORDS];
    UlptFrame f;

    if (!(env->features[FEAT_7_0_EDX] & CPUID_7_0_EDX_ULPT) ||
        !ulpt_en(env)) {
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
    env->ulpt_stats.returns++;
    if ((f.info & ULPT_INFO_TRAP) && (f.rflags & TF_MASK)) {
        /*
         * R-RET-4: the single-step trap of the instruction before the
         * after event, reported at the restored RIP before it runs. The
         * state is in env (cpu_load_eflags set CC_OP), so no restore.
         */
        trace_ulpt_uiret(env_cpu(env)->cpu_index, f.rip, f.rsp, 0);
        helper_single_step(env);
    }
    if (f.info & (ULPT_INFO_PERMIT | ULPT_INFO_STEP)) {
        /*
         * The instruction runs alone in a block of its own, which a lookup
         * may find translated when an earlier permit let its fetch through:
         * when this one does not let fetches through (STEP alone, or kinds
         * without X), check the fetch here. A violation is delivered at
         * f.rip with the state UIRET restored (no restore: ra 0).
         */
        if (!(f.info & ULPT_INFO_PERMIT) ||
            !((ULPT_INFO_KIND(f.info) | ULPT_INFO_PERMITTED(f.info)) &
              ULPT_KIND_X)) {
            probe_access(env, f.rip, 1, MMU_INST_FETCH,
                         cpu_mmu_index(env, false), 0);
        }
        /*
         * R-RET-2: the next instruction runs alone (see translate.c) with
         * these kinds let through, and interrupts wait for it, as after STI.
         * R-RET-4: with STEP, its block ends in the after event.
         */
        env->ulpt.permit_kinds = (f.info & ULPT_INFO_PERMIT) ?
                                 ULPT_INFO_KIND(f.info) |
                                 ULPT_INFO_PERMITTED(f.info) : 0;
        env->ulpt.step = f.info & ULPT_INFO_STEP;
        env->ulpt.step_addr = f.addr;
        env->ulpt.step_info = f.info;
        env->ulpt.step_entry0 = f.entry0;
        env->ulpt.step_entry1 = f.entry1;
        env->ulpt.step_start = f.start;
        env->hflags |= HF_ULPT_PERMIT_MASK | HF_INHIBIT_IRQ_MASK;
        env->ulpt_stats.returns_permit++;
    }
    trace_ulpt_uiret(env_cpu(env)->cpu_index, f.rip, f.rsp,
                     (env->hflags & HF_ULPT_PERMIT_MASK) ?
                     env->ulpt.permit_kinds : 0);
}
