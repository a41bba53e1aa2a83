/*
 * The "ulpt" CPU model.
 *
 * "max" never enables ULPT by itself (the feature is in
 * no_autoenable_flags), so -cpu max is the stock baseline and -cpu ulpt
 * differs from it only by ULPT. -cpu max,+ulpt is equivalent.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "cpu.h"

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
