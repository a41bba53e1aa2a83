/*
 * Modeled time (docs/spec.md 11.1).
 *
 * Counting: with model=on every translation block adds its instruction count
 * to its CPU's insns_user or insns_kernel (by the CPL it was translated for)
 * when it starts, and a block left early gives back what did not run
 * (ulpt_model_refund, from restore_state_to_opc, as icount does). A CPUID
 * marker ends its block, so that the instructions after it count after it.
 *
 * The region is machine-wide: BEGIN takes the sums over all CPUs, END the
 * differences, priced by cycles_of() with the parameters of the first CPU.
 * Other CPUs' counters are read while they run: exact with one CPU, and
 * within a block per other running CPU with several.
 *
 * QEMU's own work is taken with the region too (work_now), for `info ulpt`
 * only: translation blocks and their host code, TB flushes and
 * invalidations, TLB flushes, TLB fills for CPL 3 MMU indexes (counted
 * by ulpt_enabled() while the model is on), and QEMU's host CPU time and
 * the host's clock. Two CPU models running the same
 * program can so be compared on what QEMU did, not on a host's noisy clock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "monitor/monitor.h"
#include "hw/qdev-core.h"
#include "exec/cputlb.h"
#include "tcg/tcg.h"
#include "accel/tcg/tb-context.h"
#include "ulpt-model.h"
#include "ulpt-log.h"

/* QEMU's work: tcg_nb_tbs() and tcg_code_size() restart at a TB flush. */
enum {
    WORK_TBS, WORK_CODE_BYTES, WORK_TB_FLUSHES, WORK_TB_INVALIDATES,
    WORK_TLB_FULL, WORK_TLB_PART, WORK_TLB_ELIDED, WORK_USER_FILLS,
    WORK_HOST_CPU_US, WORK_HOST_US, WORK_N
};

static const char *const work_names[WORK_N] = {
    [WORK_TBS] = "tbs",
    [WORK_CODE_BYTES] = "code_bytes",
    [WORK_TB_FLUSHES] = "tb_flushes",
    [WORK_TB_INVALIDATES] = "tb_invalidates",
    [WORK_TLB_FULL] = "tlb_full_flushes",
    [WORK_TLB_PART] = "tlb_part_flushes",
    [WORK_TLB_ELIDED] = "tlb_elided_flushes",
    [WORK_USER_FILLS] = "user_fills",
    [WORK_HOST_CPU_US] = "host_cpu_us",
    [WORK_HOST_US] = "host_us",
};

static const char *const field_names[ULPT_MODEL_NFIELDS] = {
    [ULPT_MODEL_F_CYCLES] = "cycles",
    [ULPT_MODEL_F_INSNS_USER] = "insns_user",
    [ULPT_MODEL_F_INSNS_KERNEL] = "insns_kernel",
    [ULPT_MODEL_F_DELIVERIES] = "deliveries",
    [ULPT_MODEL_F_RETURNS] = "returns",
    [ULPT_MODEL_F_RETURNS_PERMIT] = "returns_permit",
    [ULPT_MODEL_F_AFTER_EVENTS] = "after_events",
    [ULPT_MODEL_F_VIEW_STORES] = "view_stores",
    [ULPT_MODEL_F_REMOTE_SYNCS] = "remote_syncs",
    [ULPT_MODEL_F_ESCALATIONS] = "escalations",
    [ULPT_MODEL_F_KERNEL_ENTRIES] = "kernel_entries",
    [ULPT_MODEL_F_LOG_RECORDS] = "log_records",
    [ULPT_MODEL_F_BOUNDS_READS] = "bounds_reads",
    [ULPT_MODEL_F_LOG_EVENTS] = "log_events",
};

static struct {
    QemuMutex lock;
    bool configured;
    UlptModelConfig cfg;        /* the first CPU's */
    double cpi;
    bool open, have_last;
    uint64_t start[ULPT_MODEL_NFIELDS], last[ULPT_MODEL_NFIELDS];
    uint64_t work_start[WORK_N], work_last[WORK_N];
} model;

void ulpt_model_realize(X86CPU *cpu, Error **errp)
{
    UlptModelConfig *c = &cpu->ulpt_model;
    double cpi = 1.0;
    char *end = NULL;

    if (!c->enabled) {
        return;
    }
    if (c->cpi) {
        errno = 0;
        cpi = strtod(c->cpi, &end);
        if (errno || end == c->cpi || *end || !(cpi > 0 && cpi <= 1000)) {
            error_setg(errp, "ulpt-model-cpi must be a number above 0 and "
                       "at most 1000, not '%s'", c->cpi);
            return;
        }
    }
    if (model.configured) {
        return;                 /* the first CPU's parameters hold */
    }
    if (phase_check(PHASE_MACHINE_READY)) {
        /* Blocks translated before would not count, nor refund rightly. */
        error_setg(errp,
                   "ulpt-model=on is for the CPUs the machine starts with");
        return;
    }
    qemu_mutex_init(&model.lock);
    model.cfg = *c;
    model.cfg.cpi = NULL;
    model.cpi = cpi;
    model.configured = true;
    ulpt_model_counting = true;
}

/* The counts now, summed over the CPUs (cycles left 0). */
static void sum_now(uint64_t *v)
{
    CPUState *cs;

    memset(v, 0, sizeof(uint64_t) * ULPT_MODEL_NFIELDS);
    CPU_FOREACH(cs) {
        const UlptStats *s = &X86_CPU(cs)->env.ulpt_stats;

        v[ULPT_MODEL_F_INSNS_USER] += qatomic_read(&s->insns_user);
        v[ULPT_MODEL_F_INSNS_KERNEL] += qatomic_read(&s->insns_kernel);
        v[ULPT_MODEL_F_DELIVERIES] += qatomic_read(&s->deliveries);
        v[ULPT_MODEL_F_RETURNS] += qatomic_read(&s->returns);
        v[ULPT_MODEL_F_RETURNS_PERMIT] += qatomic_read(&s->returns_permit);
        v[ULPT_MODEL_F_AFTER_EVENTS] += qatomic_read(&s->after_events);
        v[ULPT_MODEL_F_VIEW_STORES] += qatomic_read(&s->view_stores);
        v[ULPT_MODEL_F_REMOTE_SYNCS] += qatomic_read(&s->remote_syncs);
        v[ULPT_MODEL_F_ESCALATIONS] += qatomic_read(&s->escalations);
        v[ULPT_MODEL_F_KERNEL_ENTRIES] += qatomic_read(&s->kernel_entries);
        v[ULPT_MODEL_F_LOG_RECORDS] += qatomic_read(&s->log_records) +
            ulpt_log_unfolded(&X86_CPU(cs)->env);
        v[ULPT_MODEL_F_LOG_EVENTS] += qatomic_read(&s->log_events);
        v[ULPT_MODEL_F_BOUNDS_READS] += qatomic_read(&s->bounds_reads);
    }
}

static void work_now(uint64_t *w)
{
    size_t full, part, elide;
    struct timespec ts;

    tlb_flush_counts(&full, &part, &elide);
    w[WORK_TBS] = tcg_nb_tbs();
    w[WORK_CODE_BYTES] = tcg_code_size();
    w[WORK_TB_FLUSHES] = qatomic_read(&tb_ctx.tb_flush_count);
    w[WORK_TB_INVALIDATES] = qatomic_read(&tb_ctx.tb_phys_invalidate_count);
    w[WORK_TLB_FULL] = full;
    w[WORK_TLB_PART] = part;
    w[WORK_TLB_ELIDED] = elide;
    w[WORK_USER_FILLS] = qatomic_read(&ulpt_model_user_fills);
    /* QEMU's CPU time, all its threads, and the host's clock */
    w[WORK_HOST_CPU_US] = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) ? 0 :
                          ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
    w[WORK_HOST_US] = get_clock() / 1000;
}

/*
 * The modeled cycles of a region's counts: instructions times CPI, plus each
 * event's charge (an after event is a delivery; a UIRET with PERMIT or STEP
 * is charged as such instead of as a plain one; a kernel entry stands for
 * the round trip; a log event is a delivery, a log record has its own
 * charge). The kernel's own instructions count only with
 * ulpt-model-kernel=on: they depend on timer ticks and the page cache, so
 * they would make two runs of one program differ.
 */
static uint64_t cycles_of(const uint64_t *v)
{
    const UlptModelConfig *c = &model.cfg;
    uint64_t insns = v[ULPT_MODEL_F_INSNS_USER] +
                     (c->kernel ? v[ULPT_MODEL_F_INSNS_KERNEL] : 0);
    uint64_t plain = v[ULPT_MODEL_F_RETURNS] - v[ULPT_MODEL_F_RETURNS_PERMIT];
    double cycles = model.cpi * (double)insns;

    cycles += (double)(c->deliver * v[ULPT_MODEL_F_DELIVERIES] +
                       c->uiret * plain +
                       c->uiret_permit * v[ULPT_MODEL_F_RETURNS_PERMIT] +
                       c->view_store * v[ULPT_MODEL_F_VIEW_STORES] +
                       c->remote_sync * v[ULPT_MODEL_F_REMOTE_SYNCS] +
                       c->escalate * v[ULPT_MODEL_F_ESCALATIONS] +
                       c->kentry * v[ULPT_MODEL_F_KERNEL_ENTRIES] +
                       c->log_record * v[ULPT_MODEL_F_LOG_RECORDS] +
                       c->bounds * v[ULPT_MODEL_F_BOUNDS_READS]);
    return (uint64_t)llround(cycles);
}

bool ulpt_model_cpuid(CPUX86State *env, uint32_t leaf, uint32_t sub,
                      uint32_t *eax, uint32_t *ebx, uint32_t *ecx,
                      uint32_t *edx)
{
    uint64_t now[ULPT_MODEL_NFIELDS];

    if (leaf != ULPT_MODEL_LEAF || !ulpt_model_counting) {
        return false;
    }
    *eax = *ebx = *ecx = *edx = 0;
    qemu_mutex_lock(&model.lock);
    switch (sub) {
    case ULPT_MODEL_QUERY:
        *eax = ULPT_MODEL_VERSION;
        *ebx = ULPT_MODEL_SIGNATURE;
        *ecx = ULPT_MODEL_NFIELDS;
        *edx = model.open;
        break;
    case ULPT_MODEL_BEGIN:
        sum_now(model.start);
        work_now(model.work_start);
        model.open = true;
        *eax = 1;
        break;
    case ULPT_MODEL_END:
        if (!model.open) {
            break;
        }
        sum_now(now);
        for (int i = 0; i < ULPT_MODEL_NFIELDS; i++) {
            model.last[i] = now[i] - model.start[i];
        }
        work_now(model.work_last);
        for (int i = 0; i < WORK_N; i++) {
            model.work_last[i] -= model.work_start[i];
        }
        model.last[ULPT_MODEL_F_CYCLES] = cycles_of(model.last);
        model.open = false;
        model.have_last = true;
        *eax = 1;
        break;
    default:
        if (sub >= ULPT_MODEL_READ &&
            sub < ULPT_MODEL_READ + ULPT_MODEL_NFIELDS && model.have_last) {
            uint64_t v = model.last[sub - ULPT_MODEL_READ];

            *eax = (uint32_t)v;
            *edx = (uint32_t)(v >> 32);
            *ebx = 1;
        }
        break;
    }
    qemu_mutex_unlock(&model.lock);
    return true;
}

void ulpt_model_refund(CPUX86State *env, const TranslationBlock *tb,
                       uint64_t index)
{
    uint64_t *c;

    if (!ulpt_model_counting || index >= tb->icount) {
        return;
    }
    c = (tb->flags & HF_CPL_MASK) == 3 ? &env->ulpt_stats.insns_user
                                       : &env->ulpt_stats.insns_kernel;
    *c -= tb->icount - index;
}

static void print_counts(Monitor *mon, const char *what, const uint64_t *v,
                         const char *const *names, int n)
{
    monitor_printf(mon, "  %s:", what);
    for (int i = 0; i < n; i++) {
        monitor_printf(mon, " %s %" PRIu64, names[i], v[i]);
    }
    monitor_printf(mon, "\n");
}

void ulpt_model_info(Monitor *mon)
{
    const UlptModelConfig *c = &model.cfg;
    uint64_t now[ULPT_MODEL_NFIELDS], work[WORK_N];

    if (!ulpt_model_counting) {
        monitor_printf(mon, "model: off\n");
        return;
    }
    qemu_mutex_lock(&model.lock);
    monitor_printf(mon, "model: on, kernel %s, cpi %g, deliver %" PRIu64
                   " uiret %" PRIu64 " uiret-permit %" PRIu64
                   " view-store %" PRIu64 " remote-sync %" PRIu64
                   " escalate %" PRIu64 " kentry %" PRIu64
                   " log-record %" PRIu64 " bounds %" PRIu64 ", region %s\n",
                   c->kernel ? "on" : "off", model.cpi, c->deliver, c->uiret,
                   c->uiret_permit, c->view_store, c->remote_sync, c->escalate,
                   c->kentry, c->log_record, c->bounds,
                   model.open ? "open" : "closed");
    sum_now(now);
    now[ULPT_MODEL_F_CYCLES] = cycles_of(now);
    print_counts(mon, "since boot", now, field_names, ULPT_MODEL_NFIELDS);
    work_now(work);
    print_counts(mon, "qemu now", work, work_names, WORK_N);
    if (model.have_last) {
        print_counts(mon, "last region", model.last, field_names,
                     ULPT_MODEL_NFIELDS);
        print_counts(mon, "qemu last region", model.work_last, work_names,
                     WORK_N);
    }
    qemu_mutex_unlock(&model.lock);
}
