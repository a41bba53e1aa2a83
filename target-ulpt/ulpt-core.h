/*
 * ULPT decision logic: table walk, permission decision, frame layout, MSR
 * validation.
 *
 * Plain C99 with no QEMU headers, so tests/unit can check it on the host.
 * The TCG glue (ulpt-tlb.c, ulpt-deliver.c, ulpt-msr.c) supplies physical
 * memory reads and acts on the decisions.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_CORE_H
#define ULPT_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include "ulpt-arch.h"

/* A leaf entry (spec 4.3). */
typedef struct UlptEntry {
    uint64_t page;   /* word 0: NR/NW/NX, software bits */
    uint64_t lines;  /* word 1: 2 bits per 128-byte line */
} UlptEntry;

/*
 * Reads the 64-bit little-endian word at physical address pa. Returns false
 * when pa is not RAM: the walk then reports the entry malformed (spec
 * R-TBL-2).
 */
typedef bool (*UlptReadPhys)(void *opaque, uint64_t pa, uint64_t *val);

typedef enum UlptWalk {
    ULPT_WALK_OK,         /* *e is the entry (all zero: no restriction) */
    ULPT_WALK_MALFORMED,  /* a reserved bit or a non-RAM table: deny all */
} UlptWalk;

/* Walks the table at root (ULPT_ROOT's value) for linear address va. */
UlptWalk ulpt_walk(uint64_t root, uint64_t va, UlptReadPhys rd, void *opaque,
                   UlptEntry *e);

/* Does the entry restrict anything? */
static inline bool ulpt_entry_empty(const UlptEntry *e)
{
    return ((e->page & ~ULPT_PAGE_SW_MASK) | e->lines) == 0;
}

/* Kinds (ULPT_KIND_*) denied for the whole page by word 0. */
static inline unsigned ulpt_page_denied(const UlptEntry *e)
{
    return (unsigned)(e->page & (ULPT_NR | ULPT_NW | ULPT_NX));
}

/*
 * The decision for one access of `kind` to bytes [off, off + size) of a page
 * (off < 4096, off + size <= 4096; size 0 counts as 1). Returns 0 when
 * allowed, else the reason (ULPT_REASON_PAGE or ULPT_REASON_LINE) and sets
 * *bad_off to the page offset of the first denied byte. `malformed` entries
 * deny everything (ULPT_REASON_MALFORMED).
 */
/*
 * Reads the two bytes of bounds at linear address va (R-BND-2) into lo, hi:
 * false when they cannot be read (they open nothing).
 */
typedef bool (*UlptReadBounds)(void *opaque, uint64_t va, uint8_t *lo,
                               uint8_t *hi);

/*
 * R-BND-1: an access [off, off + size) within one page that ulpt_check
 * found denied by a line right (ULPT_REASON_LINE), decided again with the
 * entry's bounds: 0 if every byte it touches in its denied lines is open,
 * else ULPT_REASON_LINE and *bad_off the first byte that is not. Reads the
 * bounds of each denied line it touches, and only those.
 */
unsigned ulpt_check_bounds(const UlptEntry *e, unsigned kind, unsigned off,
                           unsigned size, UlptReadBounds rd, void *opaque,
                           unsigned *bad_off);

unsigned ulpt_check(const UlptEntry *e, bool malformed, unsigned kind,
                    unsigned off, unsigned size, unsigned *bad_off);

/*
 * The lines a word 1 denies for accesses of `kind` (ULPT_KIND_R or
 * ULPT_KIND_W): bit i for line i.
 */
uint32_t ulpt_lines_denied(uint64_t lines, unsigned kind);

/*
 * A store of `size` bytes of `val` (little-endian) at view offset `off`
 * applied to the entry it lands in, whose old words are in *e. Returns false
 * when the store does not lie within one entry; else updates *e to the
 * stored entry.
 */
bool ulpt_entry_store(UlptEntry *e, uint64_t off, unsigned size,
                      uint64_t val);

/* The frame (spec 6). */
typedef struct UlptFrame {
    uint64_t addr, info, entry0, entry1, rip, rflags, rsp, start;
} UlptFrame;

/* Where the frame goes for a given RSP and ULPT_STKADJ. */
static inline uint64_t ulpt_frame_base(uint64_t rsp, uint64_t stkadj)
{
    return (rsp - (stkadj & ULPT_STKADJ_MASK) - ULPT_FRAME_SIZE) &
           ~(uint64_t)15;
}

static inline uint64_t ulpt_info(unsigned kind, unsigned permitted,
                                 unsigned reason, unsigned size)
{
    return (uint64_t)(kind & 7) | (uint64_t)(permitted & 7) << 4 |
           (uint64_t)(reason & 0xff) << 8 |
           (uint64_t)(size > 0xffff ? 0xffff : size) << 16;
}

void ulpt_frame_encode(const UlptFrame *f, uint64_t w[ULPT_FRAME_WORDS]);
void ulpt_frame_decode(const uint64_t w[ULPT_FRAME_WORDS], UlptFrame *f);

/*
 * Validates a WRMSR of one of the ULPT MSRs (spec 3). phys_bits is
 * MAXPHYADDR; va_bits is the width of linear addresses in the current paging
 * mode (48, or 57 with CR4.LA57). Returns false when the write must raise
 * #GP.
 */
bool ulpt_msr_write_ok(uint32_t msr, uint64_t val, unsigned phys_bits,
                       unsigned va_bits);

/* Is a linear address canonical for va_bits-wide linear addresses? */
static inline bool ulpt_canonical(uint64_t va, unsigned va_bits)
{
    unsigned shift = 64 - va_bits;

    return (uint64_t)((int64_t)(va << shift) >> shift) == va;
}

/*
 * The view (spec 4.4): if [addr, addr + size) overlaps the view at `view`,
 * returns true and the first and last linear page addresses whose entries it
 * touches, and whether it touches a word 0 (page rights).
 */
bool ulpt_view_targets(uint64_t view, uint64_t addr, unsigned size,
                       uint64_t *first_page, uint64_t *last_page,
                       bool *page_word);

/* Is addr inside the view? */
static inline bool ulpt_in_view(uint64_t view, uint64_t addr)
{
    return view != 0 && addr - view < ULPT_VIEW_SIZE;
}

/* #PF error code for an escalated violation of `kind` (spec R-ESC-1). */
static inline uint32_t ulpt_pf_error_code(unsigned kind)
{
    return 1u /* P */ | 4u /* U */ | ULPT_PF_ERROR_BIT |
           ((kind & ULPT_KIND_W) ? 2u : 0u) |
           ((kind & ULPT_KIND_X) ? 16u : 0u);
}

#endif /* ULPT_CORE_H */
