/*
 * The accelerator-independent parts of the ULPT state: `info registers` and
 * migration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/qemu-print.h"
#include "cpu.h"
#include "ulpt-qemu.h"
#include "ulpt-log.h"
#ifndef CONFIG_USER_ONLY
#include "migration/vmstate.h"
#endif

/*
 * Modeled time is on (ulpt-model.c sets it), and the TLB fills it counts
 * (ulpt_enabled() in ulpt-qemu.h): defined here, in a file of the series'
 * first state patch, as ulpt-qemu.h refers to them.
 */
bool ulpt_model_counting;
uint64_t ulpt_model_user_fills;

static bool ulpt_in_use(CPUX86State *env)
{
    const UlptState *u = &env->ulpt;

    return u->ctl || u->root || u->view || u->handler || u->stkadj ||
           u->status || u->log_base || u->log_ctl || u->log_index;
}

void ulpt_dump_state(CPUX86State *env, FILE *f)
{
    int permit = (env->hflags & HF_ULPT_PERMIT_MASK) ?
                 (int)env->ulpt.permit_kinds : 0;

    if (!ulpt_in_use(env)) {
        return;
    }
    qemu_fprintf(f, "ULPT CTL=%016" PRIx64 " ROOT=%016" PRIx64
                 " VIEW=%016" PRIx64 "\n"
                 "ULPT HANDLER=%016" PRIx64 " STKADJ=%04" PRIx64
                 " STATUS=%" PRIx64 " PERMIT=%d\n",
                 env->ulpt.ctl, env->ulpt.root, env->ulpt.view,
                 env->ulpt.handler, env->ulpt.stkadj, env->ulpt.status,
                 permit);
    if (env->ulpt.log_base || env->ulpt.log_ctl || env->ulpt.log_index) {
        qemu_fprintf(f, "ULPT LOG_BASE=%016" PRIx64 " LOG_CTL=%016" PRIx64
                     " LOG_INDEX=%016" PRIx64 "\n", env->ulpt.log_base,
                     env->ulpt.log_ctl,
                     env->ulpt.log_index + ulpt_log_unfolded(env));
    }
}

#ifndef CONFIG_USER_ONLY
/*
 * Sent only when ULPT is in use, so other guests stay migratable to a stock
 * QEMU.
 */
static bool ulpt_vmstate_needed(void *opaque)
{
    return ulpt_in_use(&X86_CPU(opaque)->env);
}

static int ulpt_post_load(void *opaque, int version_id)
{
    ulpt_update_hflags(&X86_CPU(opaque)->env);
    return 0;
}

/*
 * The log MSRs in a subsection of their own, sent only when a log is set up,
 * so a stream without one loads into a QEMU from before the log.
 */
static bool ulpt_log_vmstate_needed(void *opaque)
{
    const UlptState *u = &X86_CPU(opaque)->env.ulpt;

    return u->log_base || u->log_ctl || u->log_index;
}

/* LOG_INDEX with the generated code's additions (the CPUs are stopped). */
static int ulpt_log_pre_save(void *opaque)
{
    ulpt_log_fold(&X86_CPU(opaque)->env);
    return 0;
}

static const VMStateDescription vmstate_ulpt_log = {
    .name = "cpu/ulpt/log",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ulpt_log_vmstate_needed,
    .pre_save = ulpt_log_pre_save,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(env.ulpt.log_base, X86CPU),
        VMSTATE_UINT64(env.ulpt.log_ctl, X86CPU),
        VMSTATE_UINT64(env.ulpt.log_index, X86CPU),
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription vmstate_ulpt = {
    .name = "cpu/ulpt",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ulpt_vmstate_needed,
    .post_load = ulpt_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(env.ulpt.ctl, X86CPU),
        VMSTATE_UINT64(env.ulpt.root, X86CPU),
        VMSTATE_UINT64(env.ulpt.view, X86CPU),
        VMSTATE_UINT64(env.ulpt.handler, X86CPU),
        VMSTATE_UINT64(env.ulpt.stkadj, X86CPU),
        VMSTATE_UINT64(env.ulpt.status, X86CPU),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * []) {
        &vmstate_ulpt_log,
        NULL
    }
};
#endif
