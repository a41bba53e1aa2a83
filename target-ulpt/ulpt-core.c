/*
 * ULPT decision logic (see ulpt-core.h and docs/spec.md).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "ulpt-core.h"

UlptWalk ulpt_walk(uint64_t root, uint64_t va, UlptReadPhys rd, void *opaque,
                   UlptEntry *e)
{
    /*
     * Directory levels index bits 46:38, 37:29, 28:20; the leaf indexes
     * bits 19:12.
     */
    static const unsigned shift[3] = { 38, 29, 20 };
    uint64_t table = root & ULPT_DIR_ADDR_MASK;

    e->page = e->lines = 0;
    if (va >> ULPT_VA_BITS) {
        return ULPT_WALK_OK;            /* not covered (R-TBL-3) */
    }
    for (int level = 0; level < 3; level++) {
        uint64_t idx = (va >> shift[level]) & ((1u << ULPT_DIR_SHIFT) - 1);
        uint64_t de;

        if (!rd(opaque, table + idx * 8, &de)) {
            return ULPT_WALK_MALFORMED;
        }
        if (!(de & ULPT_DIR_P)) {
            return ULPT_WALK_OK;        /* nothing below: no restriction */
        }
        if (de & ULPT_DIR_RSVD_MASK) {
            return ULPT_WALK_MALFORMED;
        }
        table = de & ULPT_DIR_ADDR_MASK;
    }
    uint64_t leaf = table +
                    ((va >> ULPT_PAGE_SHIFT) & ((1u << ULPT_LEAF_SHIFT) - 1)) *
                    ULPT_ENTRY_SIZE;
    if (!rd(opaque, leaf, &e->page) || !rd(opaque, leaf + 8, &e->lines)) {
        e->page = e->lines = 0;
        return ULPT_WALK_MALFORMED;
    }
    if (e->page & ULPT_PAGE_RSVD_MASK) {
        return ULPT_WALK_MALFORMED;
    }
    return ULPT_WALK_OK;
}

unsigned ulpt_check(const UlptEntry *e, bool malformed, unsigned kind,
                    unsigned off, unsigned size, unsigned *bad_off)
{
    *bad_off = off;
    if (malformed) {
        return ULPT_REASON_MALFORMED;
    }
    if (ulpt_page_denied(e) & kind) {
        return ULPT_REASON_PAGE;
    }
    if (!e->lines || kind == ULPT_KIND_X) {
        return 0;                       /* fetch is governed by NX only */
    }
    if (size == 0) {
        size = 1;
    }
    uint64_t deny = kind == ULPT_KIND_R ? e->lines & ULPT_LINES_NR_ALL
                                        : (e->lines & ULPT_LINES_NW_ALL) >> 1;
    unsigned first = off >> ULPT_LINE_SHIFT;
    unsigned last = (off + size - 1) >> ULPT_LINE_SHIFT;
    for (unsigned i = first; i <= last && i < ULPT_LINES_PER_PAGE; i++) {
        if (deny & (1ull << (2 * i))) {
            *bad_off = i == first ? off : i << ULPT_LINE_SHIFT;
            return ULPT_REASON_LINE;
        }
    }
    return 0;
}

unsigned ulpt_check_bounds(const UlptEntry *e, unsigned kind, unsigned off,
                           unsigned size, UlptReadBounds rd, void *opaque,
                           unsigned *bad_off)
{
    uint64_t deny = kind == ULPT_KIND_R ? e->lines & ULPT_LINES_NR_ALL
                                        : (e->lines & ULPT_LINES_NW_ALL) >> 1;
    uint64_t bounds = ULPT_BOUNDS_ADDR(e->page);
    unsigned end = off + (size ? size : 1);

    if (end > (1u << ULPT_PAGE_SHIFT)) {
        end = 1u << ULPT_PAGE_SHIFT;
    }
    for (unsigned i = off >> ULPT_LINE_SHIFT;
         i < ULPT_LINES_PER_PAGE && (i << ULPT_LINE_SHIFT) < end; i++) {
        unsigned base = i << ULPT_LINE_SHIFT;
        unsigned a = off > base ? off - base : 0;
        unsigned b = end - base < (1u << ULPT_LINE_SHIFT) ?
                     end - base : (1u << ULPT_LINE_SHIFT);
        uint8_t lo = 0, hi = 0;

        if (!(deny & (1ull << (2 * i)))) {
            continue;
        }
        if (!bounds || !rd(opaque, bounds + 2 * i, &lo, &hi)) {
            lo = hi = 0;                /* nothing open */
        }
        if (hi > (1u << ULPT_LINE_SHIFT)) {
            hi = 1u << ULPT_LINE_SHIFT;
        }
        if (a >= lo && b <= hi) {
            continue;                   /* every byte here is open */
        }
        *bad_off = base + (a < lo || a >= hi ? a : hi);
        return ULPT_REASON_LINE;
    }
    return 0;
}

uint32_t ulpt_lines_denied(uint64_t lines, unsigned kind)
{
    /* Gather every other bit (NR at even, NW at odd positions) into 32. */
    uint64_t x = (kind == ULPT_KIND_W ? lines >> 1 : lines) & ULPT_LINES_NR_ALL;

    x = (x | x >> 1) & 0x3333333333333333ull;
    x = (x | x >> 2) & 0x0f0f0f0f0f0f0f0full;
    x = (x | x >> 4) & 0x00ff00ff00ff00ffull;
    x = (x | x >> 8) & 0x0000ffff0000ffffull;
    x = (x | x >> 16) & 0x00000000ffffffffull;
    return (uint32_t)x;
}

/* Bytes [at, at + n) of word w, n <= 8 and at + n <= 8, from val. */
static uint64_t word_store(uint64_t w, unsigned at, unsigned n, uint64_t val)
{
    uint64_t mask = (n == 8 ? ~0ull : (1ull << (8 * n)) - 1) << (8 * at);

    return (w & ~mask) | ((val << (8 * at)) & mask);
}

bool ulpt_entry_store(UlptEntry *e, uint64_t off, unsigned size,
                      uint64_t val)
{
    unsigned at = off % ULPT_ENTRY_SIZE;

    if (size == 0 || size > 8 || at + size > ULPT_ENTRY_SIZE) {
        return false;
    }
    if (at >= 8) {
        e->lines = word_store(e->lines, at - 8, size, val);
    } else if (at + size <= 8) {
        e->page = word_store(e->page, at, size, val);
    } else {
        /* Straddling the two words: the low bytes go to word 0. */
        e->page = word_store(e->page, at, 8 - at, val);
        e->lines = word_store(e->lines, 0, at + size - 8,
                              val >> (8 * (8 - at)));
    }
    return true;
}

void ulpt_frame_encode(const UlptFrame *f, uint64_t w[ULPT_FRAME_WORDS])
{
    w[ULPT_FRAME_ADDR] = f->addr;
    w[ULPT_FRAME_INFO] = f->info;
    w[ULPT_FRAME_ENTRY0] = f->entry0;
    w[ULPT_FRAME_ENTRY1] = f->entry1;
    w[ULPT_FRAME_RIP] = f->rip;
    w[ULPT_FRAME_RFLAGS] = f->rflags;
    w[ULPT_FRAME_RSP] = f->rsp;
    w[ULPT_FRAME_START] = f->start;
}

void ulpt_frame_decode(const uint64_t w[ULPT_FRAME_WORDS], UlptFrame *f)
{
    f->addr = w[ULPT_FRAME_ADDR];
    f->info = w[ULPT_FRAME_INFO];
    f->entry0 = w[ULPT_FRAME_ENTRY0];
    f->entry1 = w[ULPT_FRAME_ENTRY1];
    f->rip = w[ULPT_FRAME_RIP];
    f->rflags = w[ULPT_FRAME_RFLAGS];
    f->rsp = w[ULPT_FRAME_RSP];
    f->start = w[ULPT_FRAME_START];
}

bool ulpt_msr_write_ok(uint32_t msr, uint64_t val, unsigned phys_bits,
                       unsigned va_bits)
{
    switch (msr) {
    case MSR_ULPT_CTL:
        return (val & ~ULPT_CTL_EN) == 0;
    case MSR_ULPT_ROOT:
        return (val & ~ULPT_DIR_ADDR_MASK) == 0 &&
               (phys_bits >= 64 || (val >> phys_bits) == 0);
    case MSR_ULPT_VIEW:
        return val == 0 ||
               ((val & 0xfff) == 0 &&
                val + ULPT_VIEW_SIZE <= (1ull << ULPT_VA_BITS) &&
                val < (1ull << ULPT_VA_BITS));
    case MSR_ULPT_HANDLER:
        return ulpt_canonical(val, va_bits);
    case MSR_ULPT_STKADJ:
        return (val & ~ULPT_STKADJ_MASK) == 0;
    case MSR_ULPT_STATUS:
        return (val & ~ULPT_STATUS_IN_HANDLER) == 0;
    case MSR_ULPT_LOG_BASE:
        return (val & (ULPT_LOG_ALIGN - 1)) == 0 &&
               ulpt_canonical(val, va_bits);
    case MSR_ULPT_LOG_CTL:
        if (val & ULPT_LOG_CTL_COUNT) {
            /* A count table has no ring: no size, no threshold (6.3). */
            return (val & ~ULPT_LOG_CTL_COUNT) == 0;
        }
        return (val & ULPT_LOG_CTL_RSVD_MASK) == 0 &&
               (val & ULPT_LOG_CTL_SIZE_MASK) <= ULPT_LOG_MAX_SHIFT &&
               (val >> ULPT_LOG_CTL_THRESH_SHIFT) <=
               (1ull << (val & ULPT_LOG_CTL_SIZE_MASK));
    case MSR_ULPT_LOG_INDEX:
        return true;
    default:
        return false;
    }
}

bool ulpt_view_targets(uint64_t view, uint64_t addr, unsigned size,
                       uint64_t *first_page, uint64_t *last_page,
                       bool *page_word)
{
    if (size == 0) {
        size = 1;
    }
    if (view == 0 || addr + size <= view || addr >= view + ULPT_VIEW_SIZE) {
        return false;
    }
    uint64_t lo = addr < view ? 0 : addr - view;
    uint64_t hi = addr + size - 1 - view;
    if (hi >= ULPT_VIEW_SIZE) {
        hi = ULPT_VIEW_SIZE - 1;
    }
    *first_page = (lo / ULPT_ENTRY_SIZE) << ULPT_PAGE_SHIFT;
    *last_page = (hi / ULPT_ENTRY_SIZE) << ULPT_PAGE_SHIFT;
    /* Word 0 is bytes 0-7 of each 16-byte entry. */
    *page_word = (lo % ULPT_ENTRY_SIZE) < 8 ||
                 hi / ULPT_ENTRY_SIZE > lo / ULPT_ENTRY_SIZE;
    return true;
}
