/*
 * Modeled time (docs/spec.md 11.1): with -cpu ...,model=on the translated
 * code counts the instructions it executes (per CPU, at CPL 3 and at CPL
 * 0-2), and a measured region, opened and closed by CPUID markers, is
 * priced as instructions times CPI plus a charge for each ULPT event and
 * kernel entry. Counts are exact and deterministic; the cycles are a model,
 * not a pipeline or cache simulation.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_MODEL_H
#define ULPT_MODEL_H

/*
 * ulpt-qemu.h declares ulpt_model_counting, set once by the first CPU
 * realized with model=on, before any code is translated: every translation
 * block then counts its instructions (and x86_cpu_tlb_fill its CPL 3 fills).
 */
#include "ulpt-qemu.h"

/* At realize: checks and takes the CPU's model properties. */
void ulpt_model_realize(X86CPU *cpu, Error **errp);

/*
 * CPUID.(EAX=ULPT_MODEL_LEAF): the markers and the reads of a region. true
 * when it handled the leaf (the model is on), with the four registers set.
 */
bool ulpt_model_cpuid(CPUX86State *env, uint32_t leaf, uint32_t sub,
                      uint32_t *eax, uint32_t *ebx, uint32_t *ecx,
                      uint32_t *edx);

/*
 * A block left at its instruction 'index' (an exception, or a restart): the
 * instructions from there to its end did not run, but its start counted
 * them.
 */
void ulpt_model_refund(CPUX86State *env, const TranslationBlock *tb,
                       uint64_t index);

/* CPL 3 to the kernel: an exception, an interrupt or SYSCALL. */
static inline void ulpt_model_kernel_entry(CPUX86State *env)
{
    if ((env->hflags & HF_CPL_MASK) == 3) {
        env->ulpt_stats.kernel_entries++;
    }
}

/* `info ulpt`: the parameters, the totals and the last region. */
void ulpt_model_info(Monitor *mon);

#endif /* ULPT_MODEL_H */
