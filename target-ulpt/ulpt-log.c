/*
 * The access log (docs/spec.md section 6.2).
 *
 * A logged access (ulpt-tlb.c decides which) is staged here as it is made:
 * its record is written into its slot at once, without V, and remembered in
 * env->ulpt.log_stage. Code translated for a thread with a log (HF_ULPT_LOG)
 * tests log_staged at the start of each instruction: non-zero, the previous
 * instruction has completed, and helper_ulpt_log_publish sets the V bits and
 * advances ULPT_LOG_INDEX (R-LOG-2). An exception that abandons the
 * instruction goes through x86_restore_state_to_opc, which forgets the staged
 * records: the slots stay free and the instruction logs again when it runs
 * again. So each access that completes has exactly one record, and a
 * consumer on another CPU never sees a record of an abandoned instruction.
 * A count table (6.3) goes the same way: the counter's address is staged
 * and the addition made at publication.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "exec/helper-proto.h"
#include "ulpt-core.h"
#include "ulpt-deliver.h"
#include "ulpt-log.h"

/* A line is the granule of the TLB's line masks and counted stores. */
QEMU_BUILD_BUG_ON(ULPT_LINE_SHIFT != TLB_CHECK_GRANULE_BITS);

/* Walks to a slot or counter before one that is not RAM is FULL. */
#define ULPT_LOG_RETRIES 4

static uint64_t slot_va(const UlptState *u, uint64_t index)
{
    uint64_t n = 1ull << (u->log_ctl & ULPT_LOG_CTL_SIZE_MASK);

    return u->log_base + (index & (n - 1)) * ULPT_REC_SIZE;
}

/*
 * The host address of va from a TLB entry (the main one or a victim) that
 * `usable` accepts, or NULL. It only reads the TLB: a logged access is in
 * flight in the softmmu helper that called the check, with its own TLB
 * entry in hand, and a fill here could evict that entry from under it.
 */
uint8_t *ulpt_tlb_host(CPUX86State *env, uint64_t va, int mmu_idx,
                       bool (*usable)(CPUTLBEntry *, uint64_t))
{
    CPUTLBEntry *te = tlb_entry(env, mmu_idx, va);
    CPUTLBDesc *d = &env_tlb(env)->d[mmu_idx];

    if (usable(te, va)) {
        return (uint8_t *)(uintptr_t)(va + te->addend);
    }
    for (int i = 0; i < CPU_VTLB_SIZE; i++) {
        if (usable(&d->vtable[i], va)) {
            return (uint8_t *)(uintptr_t)(va + d->vtable[i].addend);
        }
    }
    return NULL;
}

/* A slot or counter: its page mapped as plain writable RAM. */
static bool slot_entry(CPUTLBEntry *te, uint64_t va)
{
    target_ulong w = tlb_addr_write(te);

    return tlb_hit(w, va) && !(w & ~TARGET_PAGE_MASK);
}

static void forget(UlptState *u)
{
    u->log_staged = 0;
    u->log_cover_size[0] = u->log_cover_size[1] = 0;
}

void ulpt_log_cover(CPUX86State *env, uint64_t start, unsigned size,
                    unsigned kind)
{
    unsigned k = kind == ULPT_KIND_W;

    env->ulpt.log_cover_start[k] = start;
    env->ulpt.log_cover_size[k] = size;
}

/*
 * Where the access's record goes: its slot (6.2) or, in a count table, the
 * counter of its kind in the line of its first byte (6.3).
 */
static uint64_t target_va(const UlptState *u, uint64_t start, unsigned kind,
                          unsigned n, bool count)
{
    if (count) {
        return u->log_base + (start >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE +
               (kind == ULPT_KIND_W ? 8 * ULPT_CNT_WRITE : 8 * ULPT_CNT_READ);
    }
    return slot_va(u, u->log_index + n);
}

UlptLogStage ulpt_log_stage(CPUX86State *env, uint64_t start, unsigned size,
                            unsigned kind, unsigned reason,
                            const uint64_t *val, uintptr_t ra)
{
    UlptState *u = &env->ulpt;
    unsigned n = u->log_staged;
    int mmu_idx = cpu_mmu_index(env, false);
    bool count = u->log_ctl & ULPT_LOG_CTL_COUNT;
    unsigned len = count ? 8 : ULPT_REC_SIZE;
    unsigned k = kind == ULPT_KIND_W;
    uint64_t va, info, value = 0;
    uint8_t *host;

    /*
     * The generated code's next slot may be this record's (ring_inline),
     * and the records it appended come before it.
     */
    ulpt_ring_drop(env);
    ulpt_log_fold(env);

    /*
     * One record per access: parts of a wide or split access add none, also
     * an aligned part QEMU makes of it that starts before it.
     */
    if (u->log_cover_size[k] &&
        start < u->log_cover_start[k] + u->log_cover_size[k] &&
        u->log_cover_start[k] < start + MAX(size, 1)) {
        return ULPT_LOG_STAGED;
    }
    /*
     * Reads (or writes) of the same bytes by one instruction are one access
     * (R-LOG-2): QEMU makes a LOCK NEG a load, then a compare-and-swap
     * that loads again. And the same guest memory operation (ra) over
     * bytes it already logged is a part of the access: an unaligned load
     * across pages is made as two aligned ones, the first starting before
     * the access.
     */
    for (unsigned i = 0; i < n; i++) {
        const struct UlptLogStaged *st = &u->log_stage[i];

        if (st->kind == kind &&
            ((st->start == start && st->len == MAX(size, 1)) ||
             (st->ra == ra && start < st->start + st->len &&
              st->start < start + MAX(size, 1)))) {
            return ULPT_LOG_STAGED;
        }
    }
    if (n == ARRAY_SIZE(u->log_stage)) {
        /* More accesses than any instruction makes (ENTER's 62 at most). */
        return ULPT_LOG_FULL;
    }
    va = target_va(u, start, kind, n, count);
    /*
     * The slot or counter through paging, not ULPT (R-LOG-3, R-CNT-2): a
     * fault is the #PF of this write, at this instruction, which then logs
     * nothing. Never a store to the table; a counter's address is computed
     * modulo 2^64 and may not be canonical.
     */
    if (ulpt_in_view(u->view, va) || ulpt_in_view(u->view, va + len - 1) ||
        (count && !ulpt_canonical(va, ulpt_va_bits(env)))) {
        env->ulpt_stats.log_full++;
        return ULPT_LOG_FULL;
    }
    host = ulpt_tlb_host(env, va, mmu_idx, slot_entry);
    if (host) {
        u->log_retry = 0;
    } else if (u->log_retry >= ULPT_LOG_RETRIES) {
        /*
         * Walked to, more than once, and still not plain RAM in the TLB (a
         * debugger's watchpoint on it): not written, rather than run again
         * for ever. (Once is not enough: another vCPU's flush, a remote
         * sync of a view store, may drop the entry before the run.)
         */
        u->log_retry = 0;
        env->ulpt_stats.log_full++;
        return ULPT_LOG_FULL;
    } else {
        /*
         * The page is not in the TLB as writable RAM: walk to it (R-LOG-3:
         * its #PF is raised here, at this instruction), then run the
         * instruction again, as the fill may have evicted the entry its
         * access is using. The next time both are in the TLB.
         */
        u->frame_access = true;
        host = probe_access(env, va, len, MMU_DATA_STORE, mmu_idx, ra);
        u->frame_access = false;
        if (!host) {
            env->ulpt_stats.log_full++;
            return ULPT_LOG_FULL;       /* not RAM: never written (R-LOG-3) */
        }
        u->log_retry++;
        cpu_loop_exit_restore(env_cpu(env), ra);
    }
    u->log_stage[n].start = start;
    u->log_stage[n].len = MAX(size, 1);
    u->log_stage[n].ra = ra;
    u->log_stage[n].kind = kind;
    u->log_stage[n].count = count;
    if (count) {
        /* Added to when the instruction completes (R-CNT-1). */
        u->log_stage[n].host = (uint64_t *)host;
        u->log_stage[n].size = 0;
        u->log_staged = n + 1;
        return ULPT_LOG_STAGED;
    }
    info = ldq_le_p(host + 8);
    if (info & ULPT_REC_V) {
        env->ulpt_stats.log_full++;
        return ULPT_LOG_FULL;
    }
    info = (uint64_t)(kind & 7) | (uint64_t)(reason & 0xff) << 8 |
           (uint64_t)MIN(size, 0xffff) << 16;
    if (val && kind == ULPT_KIND_W) {
        value = size >= 8 ? *val : *val & ((1ull << (8 * size)) - 1);
        info |= ULPT_REC_VAL;
    }
    /* A write whose bytes the check did not see (in parts, atomic): later. */
    u->log_stage[n].size = kind == ULPT_KIND_W && !val ? MIN(size, 8) : 0;
    stq_le_p(host, start);
    stq_le_p(host + 8, info);
    stq_le_p(host + 16, u->log_rip);
    stq_le_p(host + 24, value);
    u->log_stage[n].host = (uint64_t *)(host + 8);
    u->log_stage[n].info = info | ULPT_REC_V;
    u->log_staged = n + 1;
    return ULPT_LOG_STAGED;
}

/* One more in a little-endian counter that other CPUs add to (R-CNT-2). */
static void count_one(uint64_t *counter)
{
#if HOST_BIG_ENDIAN
    uint64_t old = qatomic_read(counter), seen;

    while ((seen = qatomic_cmpxchg(counter, old,
                                   cpu_to_le64(le64_to_cpu(old) + 1))) != old) {
        old = seen;
    }
#else
    qatomic_inc(counter);
#endif
}

/*
 * The first `size` (1 to 8) bytes at linear address va, as they are now,
 * into the record's value word: false when a byte is not in RAM that the TLB
 * maps (the record has no VAL).
 */
/*
 * A byte the instruction just wrote: any comparator, read or write, that
 * maps its page as RAM (the write itself may have left only a write entry,
 * or one in the victim TLB). Line rights (TLB_CHECK) are no reason not to
 * read.
 */
static bool ram_comparator(target_ulong cmp, uint64_t va)
{
    return tlb_hit(cmp, va) &&
           !(cmp & ~TARGET_PAGE_MASK & ~(target_ulong)TLB_CHECK);
}

static bool written_entry(CPUTLBEntry *te, uint64_t va)
{
    return ram_comparator(te->addr_read, va) ||
           ram_comparator(tlb_addr_write(te), va);
}

static bool read_back(CPUX86State *env, uint64_t va, unsigned size,
                      uint64_t *value)
{
    int mmu_idx = cpu_mmu_index(env, false);
    uint64_t v = 0;

    for (unsigned i = 0; i < size; ) {
        unsigned k = MIN(size - i,
                         TARGET_PAGE_SIZE - ((va + i) & ~TARGET_PAGE_MASK));
        uint8_t *h = ulpt_tlb_host(env, va + i, mmu_idx, written_entry);

        if (!h) {
            return false;
        }
        for (unsigned j = 0; j < k; j++) {
            v |= (uint64_t)h[j] << (8 * (i + j));
        }
        i += k;
    }
    stq_le_p(value, v);
    return true;
}

#ifdef TARGET_TLB_COUNT
/*
 * Zeroed records: the threshold record of a log without THRESH, for the
 * generated code to find free (advanced with the slot, a page at most).
 */
static const uint64_t no_thresh[TARGET_PAGE_SIZE / 8];

/* A final store's info word, by MO_SIZE (its reason is the entry's). */
#define RING_INFO(size) \
    (ULPT_KIND_W | (uint64_t)(size) << 16 | ULPT_REC_VAL | ULPT_REC_V)
static const uint64_t ring_info[4] = {
    RING_INFO(1), RING_INFO(2), RING_INFO(4), RING_INFO(8)
};

/* Records from the one at linear address va to its page's or the ring's end. */
static uint64_t slots_left(const UlptState *u, uint64_t va, uint64_t index)
{
    uint64_t n = 1ull << (u->log_ctl & ULPT_LOG_CTL_SIZE_MASK);

    return MIN((TARGET_PAGE_SIZE - (va & ~TARGET_PAGE_MASK)) / ULPT_REC_SIZE,
               n - (index & (n - 1)));
}

/* A slot the generated code may write and read: plain RAM, not the table. */
static uint8_t *ring_host(CPUX86State *env, int mmu_idx, uint64_t va)
{
    if (ulpt_in_view(env->ulpt.view, va) ||
        ulpt_in_view(env->ulpt.view, va + ULPT_REC_SIZE - 1)) {
        return NULL;
    }
    return ulpt_tlb_host(env, va, mmu_idx, slot_entry);
}

/*
 * The ring's part of ulpt_count_inline: the generated code appends the
 * records of the next final stores to the page's logged lines itself, from
 * the record after those staged, while they fall in the page of their slot
 * and of their threshold slot (R-LOG-5's, ULPT_LOG_INDEX - THRESH once
 * appended), and the ring does not wrap; it tests both slots' V as the
 * helper does (R-LOG-4, R-LOG-5) and leaves the store to the helper if
 * either is set, so that the helper reports FULL or delivers the log event.
 * A THRESH of 1 (modulo the ring) is the record's own slot: always the
 * helper.
 */
static void ring_inline(CPUX86State *env, int mmu_idx, uint64_t addr,
                        const CPUTLBEntryFull *full)
{
    UlptState *u = &env->ulpt;
    UlptEntry e = { .page = full->ulpt_page, .lines = full->ulpt_lines };
    uint64_t n = 1ull << (u->log_ctl & ULPT_LOG_CTL_SIZE_MASK);
    uint64_t thresh = u->log_ctl >> ULPT_LOG_CTL_THRESH_SHIFT;
    uint64_t k = u->log_index + ulpt_log_unfolded(env) + u->log_staged;
    uint64_t va = slot_va(u, k), tva = -1, m;
    unsigned reason = ulpt_page_denied(&e) & ULPT_KIND_W ? ULPT_REASON_PAGE
                                                         : ULPT_REASON_LINE;
    uint8_t *host, *thost = (uint8_t *)no_thresh;

    if (thresh && !((thresh - 1) & (n - 1))) {
        return;
    }
    host = ring_host(env, mmu_idx, va);
    m = slots_left(u, va, k);
    if (thresh) {
        tva = slot_va(u, k + 1 - thresh);
        thost = ring_host(env, mmu_idx, tva);
        m = MIN(m, slots_left(u, tva, k + 1 - thresh));
    }
    if (!host || !thost || !m) {
        return;
    }
    tlb_set_ring(env, mmu_idx, addr, ~full->check_pass[1], reason,
                 (uintptr_t)host, (uintptr_t)host + m * ULPT_REC_SIZE,
                 (uintptr_t)thost, ring_info, va, tva);
}
#endif

void ulpt_ring_drop(CPUX86State *env)
{
#ifdef TARGET_TLB_COUNT
    qatomic_set(&env_tlb(env)->c.ring_end, 0);
#endif
}

/*
 * The generated code counts a store itself (tcg/i386 tcg_out_count_store)
 * when it is its instruction's only store and last access (the translator's
 * TCGOP_ST_FINAL, never under a PERMIT), to a line that needs the check
 * only to be counted: the page's entry has LOG and no BOUNDS, the thread
 * counts, and the page's 32 counter pairs lie in one page of plain RAM that
 * the TLB maps writable. That is the helper's path for such a store, made
 * inline: the addition at the store is the addition at completion, as
 * nothing after it can abandon the instruction. The TLB drops the entry's
 * counting at any refill or update of it, at a flush of the counters' page,
 * and when their RAM must be tracked (translated code, dirty logging);
 * ulpt_msr_access flushes when the log moves. Only the main TLB entry of the
 * page gets it; the next such store through the helper asks again.
 */
void ulpt_count_inline(CPUX86State *env, int mmu_idx, uint64_t addr,
                       const CPUTLBEntryFull *full)
{
#ifdef TARGET_TLB_COUNT
    UlptState *u = &env->ulpt;
    uint64_t page = addr & TARGET_PAGE_MASK;
    uint64_t cva = u->log_base + (page >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE;
    uint64_t len = (TARGET_PAGE_SIZE >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE;
    uint8_t *host;

    if (full->ulpt_kind != ULPT_TLB_LINES ||
        (full->ulpt_page & ULPT_BOUNDS_MASK)) {
        return;
    }
    if (!(u->log_ctl & ULPT_LOG_CTL_COUNT)) {
        ring_inline(env, mmu_idx, addr, full);
        return;
    }
    if ((cva & ~TARGET_PAGE_MASK) > TARGET_PAGE_SIZE - len ||
        !ulpt_canonical(cva, ulpt_va_bits(env)) ||
        ulpt_in_view(u->view, cva)) {
        return;
    }
    host = ulpt_tlb_host(env, cva, mmu_idx, slot_entry);
    if (host) {
        tlb_set_count(env, mmu_idx, addr, ~full->check_pass[1],
                      (uintptr_t)host -
                      (uintptr_t)((page >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE),
                      cva);
    }
#endif
}

void ulpt_log_fold(CPUX86State *env)
{
#ifdef TARGET_TLB_COUNT
    CPUTLBCommon *c = &env_tlb(env)->c;
    uint64_t n = c->count_added;

    if (n) {
        /*
         * The counts first: a reader on another thread (the model's sum)
         * may count these n twice for a moment, never lose them.
         */
        qatomic_set(&env->ulpt_stats.log_records,
                    env->ulpt_stats.log_records + n);
        qatomic_set(&c->count_added, 0);
        env->ulpt.log_index += n;
    }
#endif
}

bool ulpt_log_publish(CPUX86State *env)
{
    UlptState *u = &env->ulpt;
    unsigned n = u->log_staged;
    uint64_t thresh = u->log_ctl >> ULPT_LOG_CTL_THRESH_SHIFT;
    uint64_t *host;

    if (!n) {
        return false;
    }
    ulpt_log_fold(env);         /* the generated code's records, before */
    /* The values of writes made in parts, now that they are made (R-LOG-3). */
    for (unsigned i = 0; i < n; i++) {
        if (u->log_stage[i].size &&
            read_back(env, u->log_stage[i].start, u->log_stage[i].size,
                      u->log_stage[i].host + 2)) {
            u->log_stage[i].info |= ULPT_REC_VAL;
        }
    }
    /* The other words first, then V (R-LOG-6). */
    smp_wmb();
    for (unsigned i = 0; i < n; i++) {
        if (u->log_stage[i].count) {
            count_one(u->log_stage[i].host);
        } else {
            qatomic_set(u->log_stage[i].host,
                        cpu_to_le64(u->log_stage[i].info));
        }
    }
    u->log_index += n;
    env->ulpt_stats.log_records += n;
    forget(u);
    if (!thresh) {
        return false;
    }
    /* R-LOG-5: THRESH records back from the write index still in use. */
    host = tlb_vaddr_to_host(env, slot_va(u, u->log_index - thresh) + 8,
                             MMU_DATA_LOAD, cpu_mmu_index(env, false));
    return host && (ldq_le_p(host) & ULPT_REC_V);
}

void ulpt_log_abandon(CPUX86State *env)
{
    forget(&env->ulpt);
    ulpt_ring_drop(env);        /* it counted the records forgotten */
}

void ulpt_log_event(CPUX86State *env, int intno, int is_int, int is_hw)
{
    /* A fault (not a trap) abandons its instruction. */
    bool fault = !is_int && !is_hw && intno != EXCP01_DB &&
                 intno != EXCP03_INT3 && intno != EXCP04_INTO;

    /*
     * The walk to a slot or counter (ulpt_log_stage) is good for the run
     * that follows it at once. An interrupt taken in between (a context
     * switch, a TLB flush) may drop the entry again: the next run walks
     * again, rather than take the page for one that is not RAM (FULL).
     */
    env->ulpt.log_retry = 0;

    if (fault) {
        ulpt_log_abandon(env);
    } else {
        /* No log event here: the interrupt or trap comes first (R-LOG-5). */
        ulpt_log_publish(env);
    }
}

/*
 * The start of an instruction, with records staged: the previous one has
 * completed. A log event due is delivered before this instruction.
 */
void helper_ulpt_log_publish(CPUX86State *env)
{
    CPUState *cs = env_cpu(env);

    if (!ulpt_log_publish(env) || !ulpt_can_deliver(env) ||
        (env->hflags & HF_ULPT_PERMIT_MASK)) {
        return;
    }
    cpu_restore_state(cs, GETPC());
    env->ulpt.fault_addr = 0;
    env->ulpt.fault_start = 0;
    env->ulpt.fault_info = ulpt_info(0, 0, ULPT_REASON_LOG, 0);
    env->ulpt.fault_entry0 = env->ulpt.log_index;
    env->ulpt.fault_entry1 = 0;
    env->ulpt_stats.log_events++;
    ulpt_deliver(env);
    cpu_loop_exit(cs);
}
