/*
 * The "ulpt" CPU model and the accelerator-independent parts of the ULPT state:
 * migration, `info registers` and `info ulpt`.
 *
 * "max" never enables ULPT by itself (the feature is in
 * no_autoenable_flags), so -cpu max is the stock baseline and -cpu ulpt
 * differs from it only by ULPT. -cpu max,+ulpt is equivalent.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/qemu-print.h"
#include "cpu.h"
#include "ulpt-qemu.h"
#ifndef CONFIG_USER_ONLY
#include "migration/vmstate.h"
#include "monitor/monitor.h"
#include "monitor/hmp-target.h"
#endif

static void ulpt_x86_cpu_initfn(Object *obj)
{
    object_property_set_bool(obj, "ulpt", true, &error_abort);
    object_property_set_str(obj, "model-id",
                            "QEMU TCG CPU with User Level Page Tables",
                            &error_abort);
}

static void ulpt_x86_cpu_class_init(ObjectClass *oc, void *data)
{
    X86CPUClass *xcc = X86_CPU_CLASS(oc);

    xcc->ordering = 9;
    xcc->model_description = "max plus User Level Page Tables (TCG)";
}

static const TypeInfo ulpt_x86_cpu_type_info = {
    .name = X86_CPU_TYPE_NAME("ulpt"),
    .parent = X86_CPU_TYPE_NAME("max"),
    .instance_init = ulpt_x86_cpu_initfn,
    .class_init = ulpt_x86_cpu_class_init,
};

static void ulpt_x86_cpu_register_types(void)
{
    type_register_static(&ulpt_x86_cpu_type_info);
}

type_init(ulpt_x86_cpu_register_types)

static bool ulpt_in_use(CPUX86State *env)
{
    const UlptState *u = &env->ulpt;

    return u->ctl || u->root || u->view || u->handler || u->stkadj || u->status;
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
    }
};

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
                       " view_stores %" PRIu64 " remote_syncs %" PRIu64 "\n",
                       s->walks, s->checks, s->violations, s->deliveries,
                       s->escalations, s->returns, s->view_stores,
                       s->remote_syncs);
    }
}
#endif
