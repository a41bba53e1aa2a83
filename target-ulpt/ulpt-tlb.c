/*
 * ULPT in the TLB (docs/spec.md sections 4 and 5): x86_cpu_tlb_fill asks
 * ulpt_tlb_fill after a successful page walk at CPL 3, and QEMU's slow path
 * asks ulpt_tlb_check for pages whose entries carry TLB_CHECK. The decisions
 * themselves are in ulpt-core.c.
 *
 * How it stays fast:
 * - Pages with an empty entry get an ordinary TLB entry: no cost after the
 *   fill.
 * - Pages with page-wide rights only get an ordinary entry with those rights
 *   removed from prot, so allowed accesses stay on the fast path and denied
 *   ones miss into tlb_fill.
 * - Pages with line rights get a page entry that keeps the ULPT entry
 *   (ULPT_TLB_ENTRY_EXTRA) and sets TLB_CHECK for each kind that some line
 *   denies, with the per-line masks (check_pass) that let the generated code
 *   make accesses to allowed lines itself; only an access to a denied line
 *   reaches ulpt_tlb_check, which answers from the entry with no miss, refill
 *   or walk. A kind no line denies stays on the fast path (the usual write
 *   watchpoint's page keeps its loads fast).
 * - A store to the view updates the target page's entry from the stored
 *   value, as a hardware TLB would (view_store).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "hw/core/cpu.h"
#include "tcg/helper-tcg.h"
#include "svm.h"
#include "ulpt-core.h"
#include "ulpt-deliver.h"
#include "ulpt-log.h"
#include "ulpt-tlb.h"
#include "trace.h"

/* CPL 3 accesses use one of two MMU indexes (64-bit and compatibility mode). */
#define ULPT_USER_IDXMAP ((1 << MMU_USER64_IDX) | (1 << MMU_USER32_IDX))

static unsigned kind_of(MMUAccessType type)
{
    return type == MMU_DATA_STORE ? ULPT_KIND_W :
           type == MMU_INST_FETCH ? ULPT_KIND_X : ULPT_KIND_R;
}

/* Kinds that may violate ULPT right now without a fault. */
static unsigned permitted_kinds(CPUX86State *env)
{
    if (env->ulpt.frame_access) {
        return ULPT_KIND_R | ULPT_KIND_W | ULPT_KIND_X;
    }
    return (env->hflags & HF_ULPT_PERMIT_MASK) ? env->ulpt.permit_kinds : 0;
}

/* Table reads come from RAM only: never from a device (spec R-TBL-2). */
static bool read_phys(void *opaque, uint64_t pa, uint64_t *val)
{
    CPUState *cs = opaque;
    hwaddr xlat, len = 8;
    MemoryRegion *mr;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(cs->as, pa, &xlat, &len, false,
                                 MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || len < 8) {
        return false;
    }
    *val = ldq_le_p((uint8_t *)memory_region_get_ram_ptr(mr) + xlat);
    return true;
}

/*
 * Page rights of an entry with LOG are kept in the line masks, so that its
 * logged accesses reach ulpt_tlb_check with no refill (and the log decides
 * there, from the thread's ULPT_LOG_BASE, whether they are logged).
 */
static uint64_t log_page_lines(uint64_t page)
{
    if (!(page & ULPT_LOG)) {
        return 0;
    }
    return (page & ULPT_NR ? ULPT_LINES_NR_ALL : 0) |
           (page & ULPT_NW ? ULPT_LINES_NW_ALL : 0);
}

/* The TLB kind of an entry that is not for the view. */
static uint8_t entry_kind(uint64_t page, uint64_t lines)
{
    return lines | log_page_lines(page) ? ULPT_TLB_LINES : ULPT_TLB_NONE;
}

/*
 * A line-rights entry: each kind that some line denies goes to
 * ulpt_tlb_check (TLB_CHECK), except in the lines that allow it, which the
 * generated code accesses itself (check_pass), as a hardware TLB holding the
 * line masks would. Other entries keep prot as it is.
 */
static void lines_check(CPUTLBEntryFull *full)
{
    uint32_t deny_r, deny_w;
    uint64_t lines;

    if (full->ulpt_kind != ULPT_TLB_LINES) {
        /* An ordinary entry checks nothing; the view's stores stay checked. */
        if (full->ulpt_kind == ULPT_TLB_NONE) {
            full->prot &= ~(PAGE_READ_CHECK | PAGE_WRITE_CHECK);
        }
        full->check_pass[0] = full->check_pass[1] = 0;
        return;
    }
    lines = full->ulpt_lines | log_page_lines(full->ulpt_page);
    deny_r = ulpt_lines_denied(lines, ULPT_KIND_R);
    deny_w = ulpt_lines_denied(lines, ULPT_KIND_W);
    full->prot &= ~(PAGE_READ_CHECK | PAGE_WRITE_CHECK);
    full->prot |= (deny_r ? PAGE_READ_CHECK : 0) |
                  (deny_w ? PAGE_WRITE_CHECK : 0);
    full->check_pass[0] = ~deny_r;
    full->check_pass[1] = ~deny_w;
}

/*
 * The TLB entry for a page, from the page walk's prot: an ordinary entry
 * (ULPT_TLB_NONE, LINES) takes e's page rights out of prot, denied kinds
 * missing into tlb_fill, and its line rights through lines_check(). The
 * walk's prot is kept for view stores that change page rights in place.
 */
static void install(CPUState *cs, int mmu_idx, vaddr addr, hwaddr paddr,
                    int walk_prot, int lg_page_size, uint8_t kind,
                    const UlptEntry *e)
{
    CPUX86State *env = cs->env_ptr;
    int prot = walk_prot;
    CPUTLBEntryFull full;

    if (kind == ULPT_TLB_VIEW) {
        prot |= PAGE_WRITE_CHECK;
    } else if (kind != ULPT_TLB_ONCE && e) {
        bool log = e->page & ULPT_LOG;

        prot &= ~((e->page & ULPT_NX ? PAGE_EXEC : 0) |
                  (e->page & ULPT_NR && !log ? PAGE_READ : 0) |
                  (e->page & ULPT_NW && !log ? PAGE_WRITE : 0));
    }
    full = (CPUTLBEntryFull) {
        .phys_addr = paddr & TARGET_PAGE_MASK,
        .attrs = cpu_get_mem_attrs(env),
        .prot = prot,
        .lg_page_size = lg_page_size,
        .ulpt_kind = kind,
        .ulpt_prot = walk_prot,
        .ulpt_page = e ? e->page : 0,
        .ulpt_lines = e ? e->lines : 0,
    };
    lines_check(&full);
    if (mmu_idx == MMU_USER32_IDX) {
        env->ulpt.user32 = true;
    }
    tlb_set_page_full(cs, mmu_idx, addr & TARGET_PAGE_MASK, &full);
}

/*
 * The whole access that the part [addr, addr + len) at ra belongs to, when
 * QEMU makes it in parts (patch 0002 records it): true, and *acc, *size are
 * the whole access. A part overlaps it: the first aligned part of an
 * unaligned load starts before it (its bytes there are not the access's).
 */
static bool whole_access(CPUX86State *env, vaddr addr, unsigned len,
                         uintptr_t ra, vaddr *acc, unsigned *size)
{
    CPUTLBCommon *split = &env_tlb(env)->c;

    if (split->split_size && split->split_ra == ra &&
        addr < split->split_addr + split->split_size &&
        split->split_addr < addr + MAX(len, 1)) {
        *acc = split->split_addr;
        *size = split->split_size;
        return true;
    }
    return false;
}

/*
 * R-ACC-3 for an access that spans pages: paging is checked on all its pages
 * before ULPT is consulted, so a page not yet present (or read-only for a
 * write) raises its #PF first. Otherwise the handler's PERMIT would be spent
 * on an instruction that then takes the #PF, and the access would be
 * delivered twice. A non-faulting probe tells "paging refuses" (no ULPT fill)
 * from "ULPT refuses" (a fill that found the walk's translation).
 */
static void paging_first(CPUX86State *env, vaddr addr, vaddr acc,
                         unsigned size, unsigned kind, uintptr_t ra)
{
    MMUAccessType type = kind == ULPT_KIND_W ? MMU_DATA_STORE : MMU_DATA_LOAD;
    int mmu_idx = cpu_mmu_index(env, false);
    vaddr page, last = (acc + (size ? size : 1) - 1) & TARGET_PAGE_MASK;
    void *host;

    for (page = acc & TARGET_PAGE_MASK; page <= last;
         page += TARGET_PAGE_SIZE) {
        if (page == (addr & TARGET_PAGE_MASK)) {
            continue;                   /* its walk brought us here */
        }
        env->ulpt.paging_ok = false;
        if ((probe_access_flags(env, page, type, mmu_idx, true, &host, ra) &
             TLB_INVALID_MASK) && !env->ulpt.paging_ok) {
            probe_access(env, page, 0, type, mmu_idx, ra);  /* the #PF */
        }
    }
}

/*
 * A violation of the access [acc, acc + size) (as tlb_fill was asked about
 * it) at its first denied byte addr: deliver it (spec R-DEL-1) or escalate it
 * to #PF (R-ESC-1). Only a probe returns (false: "would fault").
 */
static bool violation(CPUState *cs, vaddr addr, vaddr acc, unsigned size,
                      unsigned kind, unsigned reason, const UlptEntry *e,
                      bool probe, uintptr_t ra)
{
    CPUX86State *env = cs->env_ptr;
    CPUTLBCommon *split = &env_tlb(env)->c;
    unsigned permitted = permitted_kinds(env);
    bool malformed = reason == ULPT_REASON_MALFORMED;
    uint32_t err;

    env->ulpt_stats.violations++;
    trace_ulpt_violation(cs->cpu_index, addr, kind, reason, permitted);
    if (probe) {
        return false;
    }
    /*
     * The frame describes the whole access, also when QEMU filled one part
     * of it.
     */
    if (kind == ULPT_KIND_X) {
        acc = addr;
        size = 0;                       /* fetches have no size (spec 6) */
    } else {
        whole_access(env, addr, 1, ra, &acc, &size);
    }
    split->split_size = 0;
    if (kind != ULPT_KIND_X && size > 1 &&
        (acc & TARGET_PAGE_MASK) != ((acc + size - 1) & TARGET_PAGE_MASK)) {
        paging_first(env, addr, acc, size, kind, ra);
    }
    env->ulpt.fault_addr = addr;
    env->ulpt.fault_start = acc;
    env->ulpt.fault_info = ulpt_info(kind, permitted, reason, size);
    env->ulpt.fault_entry0 = malformed ? 0 : e->page;
    env->ulpt.fault_entry1 = malformed ? 0 : e->lines;
    if (ulpt_can_deliver(env)) {
        /*
         * Deliver from here, as hardware would, not through an exception
         * (cpu_handle_exception, the BQL, do_interrupt): the faulting
         * instruction's state once, the frame, then the handler's block.
         * A fault on the frame is the #PF of the push (R-DEL-2), raised by
         * ulpt_deliver with that state.
         */
        cpu_restore_state(cs, ra);
        ulpt_deliver(env);
        cpu_loop_exit(cs);
    }
    err = ulpt_pf_error_code(kind);
    env->ulpt_stats.escalations++;
    trace_ulpt_escalate(cs->cpu_index, addr, kind, err,
                        !!(env->ulpt.status & ULPT_STATUS_IN_HANDLER));
    if (env->intercept_exceptions & (1 << EXCP0E_PAGE)) {
        /* As for paging faults: CR2 is not modified when #PF is intercepted. */
        x86_stq_phys(cs, env->vm_vmcb +
                     offsetof(struct vmcb, control.exit_info_2), addr);
    } else {
        env->cr[2] = addr;
    }
    raise_exception_err_ra(env, EXCP0E_PAGE, err, ra);
}

/* Walks to a line's bounds before they are taken as unreadable. */
#define ULPT_BOUNDS_RETRIES 4

/*
 * Bounds are read from any RAM the TLB maps (R-BND-2), through an entry
 * that maps their page for reads or for writes (a CPL 3 write that paging
 * allows, it allows to read): ULPT takes reads out of the entry of a page
 * whose word 0 denies them, and the bounds may lie in the very page being
 * written. Sub-page entries count (TLB_INVALID_MASK with the page's
 * address): the walk to bounds in such a page installs one
 * (ULPT_TLB_ONCE). ULPT does not check the bounds' reads; refused, those
 * bounds were never read (nothing open once the retries ran out).
 */
static bool maps_ram(uint64_t tlb_addr, uint64_t va)
{
    tlb_addr &= ~(uint64_t)TLB_INVALID_MASK;
    return tlb_hit(tlb_addr, va) && !(tlb_addr & TLB_MMIO);
}

static bool bounds_entry(CPUTLBEntry *te, uint64_t va)
{
    return maps_ram(te->addr_read, va) || maps_ram(tlb_addr_write(te), va);
}

typedef struct BoundsRead {
    CPUX86State *env;
    uintptr_t ra;
} BoundsRead;

/*
 * A line's two bytes of bounds (R-BND-2), with a CPL 3 read that paging
 * checks and ULPT does not. The access that needs them is in flight, so
 * they come from the TLB; if their page is not there it is walked to (its
 * #PF raised at this instruction) and the instruction runs again. Not RAM,
 * or in the view: nothing open.
 */
static bool read_bounds(void *opaque, uint64_t va, uint8_t *lo, uint8_t *hi)
{
    BoundsRead *br = opaque;
    CPUX86State *env = br->env;
    UlptState *u = &env->ulpt;
    int mmu_idx = cpu_mmu_index(env, false);
    uint8_t *host;

    if (ulpt_in_view(u->view, va) || ulpt_in_view(u->view, va + 1)) {
        return false;
    }
    host = ulpt_tlb_host(env, va, mmu_idx, bounds_entry);
    if (!host) {
        if (u->bounds_retry >= ULPT_BOUNDS_RETRIES) {
            /* Walked to, and still not in the TLB (see ulpt_log_stage). */
            u->bounds_retry = 0;
            return false;
        }
        u->frame_access = true;
        host = probe_access(env, va, 2, MMU_DATA_LOAD, mmu_idx, br->ra);
        u->frame_access = false;
        if (!host) {
            return false;               /* not RAM */
        }
        u->bounds_retry++;
        cpu_loop_exit_restore(env_cpu(env), br->ra);
    }
    u->bounds_retry = 0;
    env->ulpt_stats.bounds_reads++;
    *lo = host[0];
    *hi = host[1];
    return true;
}

/*
 * R-BND-1: an access to a denied line of a page with bounds, decided again
 * byte by byte. Only the bytes of the whole access count: QEMU makes an
 * unaligned access across pages as aligned parts that start before it.
 */
static unsigned bounds_check(CPUX86State *env, const UlptEntry *e,
                             unsigned kind, vaddr addr, unsigned size,
                             uintptr_t ra, unsigned *bad)
{
    BoundsRead br = { .env = env, .ra = ra };
    vaddr start, lo = addr, hi = addr + (size ? size : 1);
    unsigned whole;

    if (whole_access(env, addr, size, ra, &start, &whole)) {
        lo = MAX(lo, start);
        hi = MIN(hi, start + MAX(whole, 1));
    }
    if (hi <= lo) {
        return 0;
    }
    return ulpt_check_bounds(e, kind, lo & ~TARGET_PAGE_MASK, hi - lo,
                             read_bounds, &br, bad);
}

/* Other CPUs that may hold this address space's rights (spec R-COH-2). */
static bool other_cpus_share_cr3(CPUState *cs)
{
    CPUX86State *env = cs->env_ptr;
    uint64_t cr3 = env->cr[3] & ~0xfffull;
    CPUState *other;

    CPU_FOREACH(other) {
        /*
         * A racy read is fine: a CPU that loads this CR3 later flushes its
         * TLB doing so.
         */
        if (other != cs &&
            (qatomic_read(&X86_CPU(other)->env.cr[3]) & ~0xfffull) == cr3) {
            return true;
        }
    }
    return false;
}

/* The pages a view store targets, for the other CPUs' flush. */
typedef struct UlptSyncPages {
    uint64_t first, last;
} UlptSyncPages;

/*
 * Runs once the re-executed storing instruction has completed, with every
 * CPU stopped (async_safe_run_on_cpu): the store has landed, so the other
 * CPUs are told to drop the pages only now. Each runs its flush before its
 * next instruction (the request kicks it), so none can see this CPU's later
 * stores with the old rights (R-COH-2). Asked for before the store landed,
 * as it was, another CPU could flush, run on and walk the old entry again.
 */
static void sync_step_done(CPUState *cs, run_on_cpu_data data)
{
    UlptSyncPages *s = data.host_ptr;
    CPUState *other;

    X86_CPU(cs)->env.ulpt.sync_step = false;
    CPU_FOREACH(other) {
        for (uint64_t page = s->first; page <= s->last;
             page += TARGET_PAGE_SIZE) {
            tlb_flush_page_by_mmuidx(other, page, ULPT_USER_IDXMAP);
        }
    }
    g_free(s);
}

/*
 * R-COH-5: directly chained blocks never leave their page, so only a chain in
 * a page whose NX changes (or the one before, for an instruction crossing
 * into it) can run on without a TLB lookup. Stop it at the end of this block.
 */
static void stop_chain(CPUX86State *env, uint64_t first, uint64_t last)
{
    uint64_t pc = (env->eip + env->segs[R_CS].base) & TARGET_PAGE_MASK;

    if (first <= pc + TARGET_PAGE_SIZE && last + TARGET_PAGE_SIZE >= pc) {
        qatomic_set(&cpu_neg(env_cpu(env))->icount_decr.u16.high, -1);
    }
}

/* May code be fetched from a page whose word 0 is `page` (R-TBL-1, R-TBL-2)? */
static bool fetchable(uint64_t page)
{
    return !(page & (ULPT_NX | ULPT_PAGE_RSVD_MASK));
}

/*
 * tlb_set_check_page_by_mmuidx's callback: the target page's entry takes the
 * new word 1 in place, when nothing but its lines changed.
 */
static bool lines_update(CPUTLBEntryFull *full, void *opaque)
{
    const UlptEntry *e = opaque;

    if ((full->ulpt_kind != ULPT_TLB_LINES &&
         full->ulpt_kind != ULPT_TLB_NONE) || full->ulpt_page != e->page) {
        return false;
    }
    full->ulpt_lines = e->lines;
    full->ulpt_kind = entry_kind(e->page, e->lines);
    lines_check(full);
    return true;
}

/*
 * New page rights (not NX) for one MMU index: a cached entry for the page is
 * installed again from what its fill kept (the walk's prot, the physical
 * page), with no page or table walk. Anything else is dropped.
 */
static void page_update(CPUState *cs, int mmu_idx, uint64_t page,
                        const UlptEntry *e)
{
    CPUX86State *env = cs->env_ptr;
    CPUTLBEntry *te = tlb_entry(env, mmu_idx, page);
    const CPUTLBEntryFull *full =
        &env_tlb(env)->d[mmu_idx].fulltlb[tlb_index(env, mmu_idx, page)];

    /*
     * Only an entry of this page at its own index is installed again: that
     * index is not the view page's, whose entry the store in progress uses.
     * Anything else (a victim-TLB copy, a sub-page or view entry) is dropped.
     */
    if ((tlb_hit_page(te->addr_read, page) ||
         tlb_hit_page(tlb_addr_write(te), page) ||
         tlb_hit_page(te->addr_code, page)) &&
        (full->ulpt_kind == ULPT_TLB_NONE ||
         full->ulpt_kind == ULPT_TLB_LINES) &&
        full->lg_page_size >= TARGET_PAGE_BITS) {
        /* install() reads these before tlb_set_page_full overwrites *full. */
        install(cs, mmu_idx, page, full->phys_addr, full->ulpt_prot,
                full->lg_page_size, entry_kind(e->page, e->lines), e);
    } else {
        tlb_flush_page_entry_by_mmuidx(cs, page, 1 << mmu_idx, false);
    }
}

/*
 * A store of a known value into one entry, on this CPU alone (R-COH-1): the
 * target page's TLB entries take the new rights from the value, as a
 * hardware TLB would: a change of word 1 alone updates them in place (masks
 * and comparators), one of word 0's NR or NW installs them again without a
 * walk (page_update), and one of NX drops them with the page's
 * translated-code lookups (the only change that needs those cleared).
 * Returns false when this does not apply (the caller then drops the
 * entries).
 */
static bool view_store_value(CPUState *cs, int mmu_idx, vaddr addr, int size,
                             uint64_t val, uint16_t idxmap)
{
    CPUX86State *env = cs->env_ptr;
    uint64_t off = addr - env->ulpt.view;
    uint64_t page = (off / ULPT_ENTRY_SIZE) << ULPT_PAGE_SHIFT;
    vaddr base = addr - off % ULPT_ENTRY_SIZE;
    CPUTLBEntry *te;
    uint8_t *host;
    UlptEntry old, new;
    bool fetch_change;

    /*
     * The old entry, through the view's own TLB entry for loads (never
     * checked): plain RAM, else the caller drops the entries.
     */
    if ((base & TARGET_PAGE_MASK) !=
        ((base + ULPT_ENTRY_SIZE - 1) & TARGET_PAGE_MASK)) {
        return false;
    }
    te = tlb_entry(env, mmu_idx, base);
    if (!tlb_hit(te->addr_read, base) ||
        (te->addr_read & ~TARGET_PAGE_MASK)) {
        return false;
    }
    host = (uint8_t *)(uintptr_t)(base + te->addend);
    old.page = ldq_le_p(host);
    old.lines = ldq_le_p(host + 8);
    new = old;
    if (!ulpt_entry_store(&new, off, size, val)) {
        return false;
    }
    if (ulpt_in_view(env->ulpt.view, page)) {
        return true;        /* the view's own rights are ignored (R-COH-3) */
    }
    if (new.page == old.page) {
        if (new.lines != old.lines) {
            tlb_set_check_page_by_mmuidx(cs, page, idxmap, lines_update,
                                         &new);
        }
        return true;
    }
    /*
     * R-COH-5: whether the page may be fetched changes with NX and with the
     * entry becoming malformed or well-formed (R-TBL-2), not with NX alone.
     */
    fetch_change = fetchable(old.page) != fetchable(new.page);
    if (!fetch_change && !((old.page | new.page) & ULPT_PAGE_RSVD_MASK)) {
        for (int idx = 0; idx < NB_MMU_MODES; idx++) {
            if (idxmap & (1 << idx)) {
                page_update(cs, idx, page, &new);
            }
        }
        return true;
    }
    tlb_flush_page_entry_by_mmuidx(cs, page, idxmap, fetch_change);
    if (fetch_change) {
        stop_chain(env, page, page);
    }
    return true;
}

/*
 * A CPL 3 store into the view (spec 4.4), before it is made: the rights it
 * changes take effect at the next instruction on this CPU (R-COH-1) and
 * before this CPU goes on for the others (R-COH-2).
 */
static void view_store(CPUState *cs, int mmu_idx, vaddr addr, int size,
                       const uint64_t *val, bool count, uintptr_t ra)
{
    CPUX86State *env = cs->env_ptr;
    uint16_t idxmap = env->ulpt.user32 ? ULPT_USER_IDXMAP
                                       : 1 << MMU_USER64_IDX;
    uint64_t first, last, page;
    bool page_word, remote;

    if (!ulpt_view_targets(env->ulpt.view, addr, size, &first, &last,
                           &page_word)) {
        return;
    }
    remote = other_cpus_share_cr3(cs);
    if (remote && !env->ulpt.sync_step) {
        /*
         * Other CPUs must drop the old rights after the store lands and
         * before this CPU goes on: re-execute the storing instruction alone,
         * then stop for a synced flush.
         */
        env->ulpt.sync_step = true;
        cs->cflags_next_tb = 1 | CF_NOIRQ | curr_cflags(cs);
        cpu_loop_exit_restore(cs, ra);
    }
    if (count) {
        env->ulpt_stats.view_stores++;
    }
    trace_ulpt_view_store(cs->cpu_index, addr, first, last, remote);
    if (!remote && val &&
        view_store_value(cs, mmu_idx, addr, size, *val, idxmap)) {
        return;
    }
    /*
     * Otherwise the value is not known here (a store made in parts, an
     * atomic): drop the entries, so that the next access walks the table
     * once the store is made. Nothing this CPU does between here and the
     * store uses the page.
     */
    for (page = first; page <= last; page += TARGET_PAGE_SIZE) {
        /*
         * The view's own rights are ignored (R-COH-3): its entries, the one
         * being stored through included (tlb_check must keep it), have
         * nothing to forget.
         */
        if (ulpt_in_view(env->ulpt.view, page)) {
            continue;
        }
        tlb_flush_page_entry_by_mmuidx(cs, page, idxmap, page_word);
    }
    if (remote) {
        /*
         * sync_step stays set until the instruction is done, so that its
         * other parts (a 16-byte store is made of two) are synced in this
         * same run instead of starting it again.
         */
        UlptSyncPages *sp = g_new(UlptSyncPages, 1);

        sp->first = first;
        sp->last = last;
        async_safe_run_on_cpu(cs, sync_step_done, RUN_ON_CPU_HOST_PTR(sp));
        if (count) {
            env->ulpt_stats.remote_syncs++;
        }
    } else if (page_word) {
        stop_chain(env, first, last);
    }
}

void ulpt_tlb_check(CPUState *cs, vaddr addr, int size, MMUAccessType type,
                    int mmu_idx, CPUTLBEntryFull *full, const uint64_t *val,
                    uintptr_t ra)
{
    CPUX86State *env = cs->env_ptr;
    unsigned kind = kind_of(type), reason, bad;
    UlptEntry e = { .page = full->ulpt_page, .lines = full->ulpt_lines };

    if (full->ulpt_kind == ULPT_TLB_VIEW) {
        /* Only stores are checked on the view. */
        view_store(cs, mmu_idx, addr, size, val, true, ra);
        return;
    }
    env->ulpt_stats.checks++;
    reason = ulpt_check(&e, false, kind, addr & ~TARGET_PAGE_MASK, size,
                        &bad);
    if (!reason || (kind & permitted_kinds(env))) {
        return;
    }
    if (reason == ULPT_REASON_LINE && (e.page & ULPT_BOUNDS_MASK)) {
        reason = bounds_check(env, &e, kind, addr, size, ra, &bad);
        if (!reason) {
            return;
        }
    }
    if (ulpt_log_wants(env, e.page, kind)) {
        vaddr start = addr;
        unsigned whole = size;

        /* R-LOG-2: the record is the whole access's (val: this part's). */
        if (whole_access(env, addr, size, ra, &start, &whole)) {
            val = NULL;
        }
        if (ulpt_log_stage(env, start, whole, kind, reason, val, ra) ==
            ULPT_LOG_STAGED) {
            if (kind == ULPT_KIND_W) {
                ulpt_count_inline(env, mmu_idx, addr, full);
            }
            return;
        }
        reason = ULPT_REASON_FULL;
    }
    violation(cs, (addr & TARGET_PAGE_MASK) | bad, addr, size, kind, reason,
              &e, false, ra);
}

bool ulpt_tlb_fill(CPUState *cs, vaddr addr, int size, MMUAccessType type,
                   int mmu_idx, bool probe, uintptr_t ra, hwaddr paddr,
                   int prot, int page_size)
{
    CPUX86State *env = cs->env_ptr;
    unsigned kind = kind_of(type), reason, bad;
    int lg = ctz64(page_size);
    bool malformed;
    UlptEntry e;

    if (probe) {
        env->ulpt.paging_ok = true; /* the walk allowed it (paging_first) */
    }

    if (ulpt_in_view(env->ulpt.view, addr)) {
        /*
         * The view is never restricted (R-COH-3); stores to it go to
         * ulpt_tlb_check (TLB_CHECK), loads stay inline. A locked
         * read-modify-write then finds a readable entry: with every
         * comparator invalid, QEMU's atomic path took it for a write-only
         * page and stopped the world, and the view store's cross-CPU sync
         * restarted the instruction every time (a livelock with two vCPUs).
         */
        if (type == MMU_DATA_STORE) {
            /*
             * Counted once, where it is checked next (ulpt_tlb_check), but
             * here if nothing checks it (a non-faulting probe).
             */
            view_store(cs, mmu_idx, addr, size, NULL, probe, ra);
        }
        install(cs, mmu_idx, addr, paddr, prot, TARGET_PAGE_BITS,
                ULPT_TLB_VIEW, NULL);
        return true;
    }

    env->ulpt_stats.walks++;
    malformed = ulpt_walk(env->ulpt.root, addr, read_phys, cs, &e) ==
                ULPT_WALK_MALFORMED;
    if (!malformed && ulpt_entry_empty(&e)) {
        install(cs, mmu_idx, addr, paddr, prot, lg, ULPT_TLB_NONE, NULL);
        return true;
    }
    env->ulpt_stats.checks++;
    reason = ulpt_check(&e, malformed, kind, addr & ~TARGET_PAGE_MASK, size,
                        &bad);
    if (!malformed && (e.page & ULPT_LOG) && kind != ULPT_KIND_X) {
        /*
         * A page with LOG: its reads and writes are decided by
         * ulpt_tlb_check (TLB_CHECK), which the access reaches once this
         * entry is in: logged there (R-LOG-1), or delivered.
         */
        if (!reason || ulpt_log_wants(env, e.page, kind) ||
            (kind & permitted_kinds(env))) {
            install(cs, mmu_idx, addr, paddr, prot, TARGET_PAGE_BITS,
                    entry_kind(e.page, e.lines), &e);
            return true;
        }
    }
    if (reason == ULPT_REASON_LINE && (e.page & ULPT_BOUNDS_MASK)) {
        /*
         * Bounds may open the bytes it touches: decided by ulpt_tlb_check
         * (TLB_CHECK), which reads them, once this entry is in. Bounds are
         * never read here: a fill for them could evict this one.
         */
        install(cs, mmu_idx, addr, paddr, prot, TARGET_PAGE_BITS,
                ULPT_TLB_LINES, &e);
        return true;
    }
    if (reason == ULPT_REASON_LINE) {
        /*
         * The page's line entry, as for an allowed access: this access, and
         * the permitted one after the handler, are decided from it by
         * ulpt_tlb_check (TLB_CHECK), with no further walk.
         */
        install(cs, mmu_idx, addr, paddr, prot, TARGET_PAGE_BITS,
                ULPT_TLB_LINES, &e);
        if (!(kind & permitted_kinds(env))) {
            return violation(cs, (addr & TARGET_PAGE_MASK) | bad, addr, size,
                             kind, reason, &e, probe, ra);
        }
        return true;
    }
    if (reason) {
        if (!(kind & permitted_kinds(env))) {
            return violation(cs, (addr & TARGET_PAGE_MASK) | bad, addr, size,
                             kind, reason, &e, probe, ra);
        }
        /* Let this access through; the next one is checked again. */
        install(cs, mmu_idx, addr, paddr, prot, 0, ULPT_TLB_ONCE, &e);
        return true;
    }
    if (entry_kind(e.page, e.lines) == ULPT_TLB_NONE) {
        install(cs, mmu_idx, addr, paddr, prot, lg, ULPT_TLB_NONE, &e);
    } else {
        install(cs, mmu_idx, addr, paddr, prot, TARGET_PAGE_BITS,
                ULPT_TLB_LINES, &e);
    }
    return true;
}
