/*
 * The monitor's `info ulpt`: each CPU's ULPT MSRs, handler state and
 * counters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "monitor/monitor.h"
#include "monitor/hmp-target.h"
#include "ulpt-qemu.h"
#include "ulpt-log.h"
#ifdef ULPT_MODEL
#include "ulpt-model.h"
#endif

void hmp_info_ulpt(Monitor *mon, const QDict *qdict)
{
    CPUState *cs;

    CPU_FOREACH(cs) {
        CPUX86State *env = &X86_CPU(cs)->env;
        const UlptStats *s = &env->ulpt_stats;

        bool present = env->features[FEAT_7_0_EDX] & CPUID_7_0_EDX_ULPT;

        monitor_printf(mon, "CPU %d: ulpt %s, %s, in_handler %d\n",
                       cs->cpu_index, present ? "present" : "absent",
                       (env->ulpt.ctl & ULPT_CTL_EN) ? "enabled" : "disabled",
                       (int)(env->ulpt.status & ULPT_STATUS_IN_HANDLER));
        monitor_printf(mon, "  CTL 0x%" PRIx64 " ROOT 0x%" PRIx64
                       " VIEW 0x%" PRIx64 " HANDLER 0x%" PRIx64
                       " STKADJ 0x%" PRIx64 " STATUS 0x%" PRIx64 "\n",
                       env->ulpt.ctl, env->ulpt.root, env->ulpt.view,
                       env->ulpt.handler, env->ulpt.stkadj, env->ulpt.status);
        monitor_printf(mon, "  walks %" PRIu64 " checks %" PRIu64
                       " violations %" PRIu64 " delivered %" PRIu64
                       " escalated %" PRIu64 " returns %" PRIu64
                       " view_stores %" PRIu64 " remote_syncs %" PRIu64
                       " after_events %" PRIu64 "\n",
                       s->walks, s->checks, s->violations, s->deliveries,
                       s->escalations, s->returns, s->view_stores,
                       s->remote_syncs, s->after_events);
        monitor_printf(mon, "  LOG_BASE 0x%" PRIx64 " LOG_CTL 0x%" PRIx64
                       " LOG_INDEX 0x%" PRIx64 " log_records %" PRIu64
                       " log_events %" PRIu64 " log_full %" PRIu64
                       " bounds_reads %" PRIu64 "\n",
                       env->ulpt.log_base, env->ulpt.log_ctl,
                       /* with the generated code's additions (R-CNT-1) */
                       env->ulpt.log_index + ulpt_log_unfolded(env),
                       s->log_records + ulpt_log_unfolded(env),
                       s->log_events,
                       s->log_full, s->bounds_reads);
    }
#ifdef ULPT_MODEL
    ulpt_model_info(mon);
#endif
}
