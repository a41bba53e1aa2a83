/*
 * Host unit tests of target-ulpt/ulpt-core.c: the table walk, the permission decision, frame
 * layout, MSR validation and view coherence targets, against docs/spec.md: one function per
 * rule (core_tests[] at the end). `ulpt-core NAME` runs one, `ulpt-core --list` lists them.
 */
#include <stdio.h>
#include <string.h>
#include "ulpt-core.h"
#include "tap.h"

/* A fake physical memory: 64 pages of RAM at 0..256 KiB; everything else is not RAM. */
#define RAM_PAGES 64
static uint64_t ram[RAM_PAGES * 512];
static int reads;

static bool rd(void *opaque, uint64_t pa, uint64_t *val)
{
    (void)opaque;
    reads++;
    if (pa >= sizeof(ram) || (pa & 7)) {
        return false;
    }
    *val = ram[pa / 8];
    return true;
}

static void put(uint64_t pa, uint64_t v) { ram[pa / 8] = v; }

/* Builds root(page 1) -> L2(page 2) -> L1(page 3) -> leaf(page 4) covering va. */
static void build(uint64_t va)
{
    memset(ram, 0, sizeof(ram));
    put(0x1000 + ((va >> 38) & 511) * 8, 0x2000 | ULPT_DIR_P);
    put(0x2000 + ((va >> 29) & 511) * 8, 0x3000 | ULPT_DIR_P);
    put(0x3000 + ((va >> 20) & 511) * 8, 0x4000 | ULPT_DIR_P);
}

static uint64_t leaf_pa(uint64_t va) { return 0x4000 + ((va >> 12) & 255) * 16; }

static const uint64_t va = 0x00007f1234567000ull;

/* R-BND-1: the decision with bounds, and which lines' bounds it reads. */
static uint8_t bnd[64];
static unsigned bnd_reads;
static bool rdb(void *opaque, uint64_t va, uint8_t *lo, uint8_t *hi)
{
    (void)opaque;
    bnd_reads++;
    if (va < 0x1000 || va >= 0x1000 + sizeof(bnd)) {
        return false;                   /* not the array: unreadable */
    }
    *lo = bnd[va - 0x1000];
    *hi = bnd[va - 0x1000 + 1];
    return true;
}

static void bounds(void)
{
    UlptEntry e = { .page = ULPT_BOUNDS_FIELD(0x1000ull),
                    .lines = ULPT_LINE_NW(3) | ULPT_LINE_NW(4) };
    unsigned bad = 0;

    memset(bnd, 0, sizeof(bnd));
    bnd[6] = 40;                        /* line 3: [40, 100) */
    bnd[7] = 100;
    bnd[8] = 0;                         /* line 4: [0, 200): all of it */
    bnd[9] = 200;
    tap_ok(ULPT_BOUNDS_ADDR(e.page) == 0x1000 && !(e.page & ULPT_PAGE_RSVD_MASK),
           "BOUNDS holds bits 46:6 of the address in word 0 bits 49:9, not reserved");
    bnd_reads = 0;
    tap_ok(ulpt_check_bounds(&e, ULPT_KIND_W, 3 * 128 + 40, 60, rdb, NULL, &bad) == 0 &&
           bnd_reads == 1, "[lo, hi) open, one line's bounds read");
    tap_ok(ulpt_check_bounds(&e, ULPT_KIND_W, 3 * 128 + 96, 8, rdb, NULL, &bad) ==
           ULPT_REASON_LINE && bad == 3 * 128 + 100, "a write past hi: its first closed byte");
    tap_ok(ulpt_check_bounds(&e, ULPT_KIND_W, 3 * 128 + 36, 8, rdb, NULL, &bad) ==
           ULPT_REASON_LINE && bad == 3 * 128 + 36, "a write starting before lo: its first byte");
    bnd[7] = 128;
    bnd_reads = 0;
    tap_ok(ulpt_check_bounds(&e, ULPT_KIND_W, 3 * 128 + 124, 8, rdb, NULL, &bad) == 0 &&
           bnd_reads == 2, "across lines 3 and 4, both open: both lines' bounds read");
    bnd_reads = 0;
    tap_ok(ulpt_check_bounds(&e, ULPT_KIND_W, 2 * 128 + 124, 8, rdb, NULL, &bad) ==
           ULPT_REASON_LINE && bad == 3 * 128 && bnd_reads == 1,
           "from line 2 (allowed) into line 3 below lo: line 2's bounds not read");
    e.page = ULPT_BOUNDS_FIELD(0x2000ull);
    tap_ok(ulpt_check_bounds(&e, ULPT_KIND_W, 3 * 128 + 50, 1, rdb, NULL, &bad) ==
           ULPT_REASON_LINE && bad == 3 * 128 + 50, "unreadable bounds open nothing");
}

/* The walk reads the leaf's two words, and only the entry of the page accessed. */
static void walk(void)
{
    UlptEntry e;

    memset(ram, 0, sizeof(ram));
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_OK && ulpt_entry_empty(&e),
           "empty root: no restriction");
    build(va);
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_OK && ulpt_entry_empty(&e),
           "present directories, zero leaf: no restriction");
    put(leaf_pa(va), ULPT_NW);
    put(leaf_pa(va) + 8, ULPT_LINE_NR(3));
    reads = 0;
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_OK && e.page == ULPT_NW &&
           e.lines == ULPT_LINE_NR(3), "leaf entry read: both words");
    tap_ok(reads == 5, "a full walk reads 3 directory words and 2 leaf words (%d)", reads);
    tap_ok(ulpt_walk(0x1000, va + 0x1000, rd, NULL, &e) == ULPT_WALK_OK && ulpt_entry_empty(&e),
           "the next page's entry is separate");
    tap_ok(ulpt_walk(0x1000, va + 0x100000, rd, NULL, &e) == ULPT_WALK_OK && ulpt_entry_empty(&e),
           "a different L1 slot (not present) restricts nothing");
}

/* Reserved bits and tables outside RAM: malformed; software bits: ignored. */
static void malformed(void)
{
    UlptEntry e;

    build(va);
    put(leaf_pa(va), ULPT_NW | (0xabull << 56));
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_OK && e.page == (ULPT_NW | (0xabull << 56)),
           "software bits 63:56 are ignored, not malformed");
    put(leaf_pa(va), 1ull << 3);
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_MALFORMED,
           "reserved leaf bit 3: malformed");
    put(leaf_pa(va), ULPT_LOG | ULPT_NW);
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_OK && e.page == (ULPT_LOG | ULPT_NW) &&
           ulpt_page_denied(&e) == ULPT_KIND_W, "LOG (bit 8) is not reserved and denies nothing itself");
    put(leaf_pa(va), 1ull << 55);
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_MALFORMED,
           "reserved leaf bit 55: malformed");
    put(leaf_pa(va), 0);
    put(0x2000 + ((va >> 29) & 511) * 8, 0x3000 | ULPT_DIR_P | (1ull << 5));
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_MALFORMED,
           "reserved directory bit: malformed");
    put(0x2000 + ((va >> 29) & 511) * 8, 0x3000 | (1ull << 5));
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_OK && ulpt_entry_empty(&e),
           "non-present directory entry: its other bits are ignored");
    put(0x2000 + ((va >> 29) & 511) * 8, 0x7fff000 | ULPT_DIR_P);
    tap_ok(ulpt_walk(0x1000, va, rd, NULL, &e) == ULPT_WALK_MALFORMED,
           "directory pointing outside RAM: malformed");
    tap_ok(ulpt_walk(0x40000000, va, rd, NULL, &e) == ULPT_WALK_MALFORMED,
           "root outside RAM: malformed");
}

/* Addresses at or above 2^47 are not covered. */
static void above_2_47(void)
{
    UlptEntry e;

    memset(ram, 0, sizeof(ram));
    tap_ok(ulpt_walk(0x40000000, 1ull << 47, rd, NULL, &e) == ULPT_WALK_OK && ulpt_entry_empty(&e),
           "addresses at or above 2^47 are not covered");
}

/* The decision: page rights per kind, line rights per byte, never fetch for lines. */
static void decision(void)
{
    unsigned bad;

    UlptEntry pg = { ULPT_NW, 0 };
    tap_ok(ulpt_check(&pg, false, ULPT_KIND_R, 0, 8, &bad) == 0, "NW page allows reads");
    tap_ok(ulpt_check(&pg, false, ULPT_KIND_W, 100, 8, &bad) == ULPT_REASON_PAGE && bad == 100,
           "NW page denies writes at the access address");
    UlptEntry nx = { ULPT_NX, 0 };
    tap_ok(ulpt_check(&nx, false, ULPT_KIND_X, 0, 0, &bad) == ULPT_REASON_PAGE, "NX denies fetch");
    tap_ok(ulpt_check(&nx, false, ULPT_KIND_W, 0, 8, &bad) == 0, "NX alone allows writes");
    UlptEntry ln = { 0, ULPT_LINE_NW(2) | ULPT_LINE_NR(5) };
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_W, 256, 8, &bad) == ULPT_REASON_LINE && bad == 256,
           "write to a NW line is denied");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_R, 256, 8, &bad) == 0, "read of a NW-only line is allowed");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_W, 248, 8, &bad) == 0,
           "write ending just before the line is allowed");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_W, 252, 8, &bad) == ULPT_REASON_LINE && bad == 256,
           "write straddling into the line is denied at the line's first byte");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_W, 384, 8, &bad) == 0, "write after the line is allowed");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_R, 640, 1, &bad) == ULPT_REASON_LINE, "NR line denies a 1-byte read");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_R, 0, 4096, &bad) == ULPT_REASON_LINE && bad == 640,
           "a page-wide read finds the first denied line");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_X, 256, 0, &bad) == 0, "line rights never restrict fetch");
    UlptEntry last = { 0, ULPT_LINE_NW(31) };
    tap_ok(ulpt_check(&last, false, ULPT_KIND_W, 4095, 1, &bad) == ULPT_REASON_LINE && bad == 4095,
           "the last line of the page is line 31");
    tap_ok(ulpt_check(&ln, false, ULPT_KIND_W, 256, 0, &bad) == ULPT_REASON_LINE,
           "size 0 counts as one byte");
    tap_ok(ulpt_check(&ln, true, ULPT_KIND_R, 0, 1, &bad) == ULPT_REASON_MALFORMED,
           "malformed denies everything");
    UlptEntry sw = { 0xffull << 56, 0 };
    tap_ok(ulpt_entry_empty(&sw) && ulpt_check(&sw, false, ULPT_KIND_W, 0, 8, &bad) == 0,
           "software bits alone restrict nothing");
}

/* The frame: layout, info fields, where it goes on the stack. */
static void frame(void)
{
    UlptFrame f = { 0x1234, ulpt_info(ULPT_KIND_W, ULPT_KIND_R, ULPT_REASON_LINE, 8), 1, 2,
                    0x401000, 0x246, 0x7ffff000, 0x1230 }, g;
    uint64_t w[ULPT_FRAME_WORDS];
    memset(w, 0xff, sizeof(w));
    ulpt_frame_encode(&f, w);
    ulpt_frame_decode(w, &g);
    tap_ok(memcmp(&f, &g, sizeof(f)) == 0 && w[ULPT_FRAME_START] == 0x1230 && ULPT_FRAME_START == 7,
           "frame encode/decode round trip, access start at word 7");
    tap_ok(ULPT_INFO_KIND(w[1]) == ULPT_KIND_W && ULPT_INFO_PERMITTED(w[1]) == ULPT_KIND_R &&
           ULPT_INFO_REASON(w[1]) == ULPT_REASON_LINE && ULPT_INFO_SIZE(w[1]) == 8 &&
           !(w[1] & ULPT_INFO_PERMIT), "info fields decode");
    tap_ok(ULPT_INFO_SIZE(ulpt_info(ULPT_KIND_W, 0, ULPT_REASON_LINE, 512)) == 512 &&
           ULPT_INFO_SIZE(ulpt_info(ULPT_KIND_W, 0, ULPT_REASON_LINE, 70000)) == 0xffff &&
           (ulpt_info(ULPT_KIND_R, 0, 1, 0xffff) >> 32) == 0, "size is bits 31:16; PERMIT stays clear");
    tap_ok(w[4] == 0x401000 && w[5] == 0x246 && w[6] == 0x7ffff000, "rip, rflags, rsp at words 4-6");
    tap_ok(ulpt_frame_base(0x7ffff008, 128) == 0x7fffef40, "frame below red zone, 16-byte aligned");
    tap_ok(ulpt_frame_base(0x10000, 0x10080) == ((0x10000ull - 0x80 - 64) & ~15ull),
           "stack adjust is bits 15:0 only");
}

/* MSR validation: reserved bits, alignment, MAXPHYADDR, canonical in the paging mode. */
static void msr_validation(void)
{
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_CTL, 1, 48, 48) && !ulpt_msr_write_ok(MSR_ULPT_CTL, 2, 48, 48),
           "CTL: EN ok, reserved bit 1 #GP");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_ROOT, 0x1000, 40, 48) && !ulpt_msr_write_ok(MSR_ULPT_ROOT, 0x1008, 40, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_ROOT, 1ull << 40, 40, 48), "ROOT: aligned ok; misaligned or above MAXPHYADDR #GP");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_VIEW, 0, 48, 48) && ulpt_msr_write_ok(MSR_ULPT_VIEW, 0x100000000000ull, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_VIEW, 0x100000000008ull, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_VIEW, (1ull << 47) - 0x1000, 48, 48),
           "VIEW: 0 or aligned in range ok; misaligned or overflowing #GP");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0xffff800000000000ull, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0x0000800000000000ull, 48, 48), "HANDLER: canonical only");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0x0000900000000000ull, 48, 57) &&
           ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0x00ff000000000000ull, 48, 57) &&
           ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0xff00000000000000ull, 48, 57) &&
           !ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0x0100000000000000ull, 48, 57) &&
           !ulpt_msr_write_ok(MSR_ULPT_HANDLER, 0x0000900000000000ull, 48, 48),
           "HANDLER with 5-level paging: canonical for 57 bits");
    tap_ok(ulpt_canonical(0x00ffffffffffffffull, 57) && !ulpt_canonical(0x00ffffffffffffffull, 48) &&
           ulpt_canonical(0x00007fffffffffffull, 48), "canonical follows the paging mode");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_STKADJ, 0xffff, 48, 48) && !ulpt_msr_write_ok(MSR_ULPT_STKADJ, 0x10000, 48, 48),
           "STKADJ: 16 bits");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_STATUS, 1, 48, 48) && !ulpt_msr_write_ok(MSR_ULPT_STATUS, 4, 48, 48),
           "STATUS: IN_HANDLER only");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_LOG_BASE, 0, 48, 48) && ulpt_msr_write_ok(MSR_ULPT_LOG_BASE, 0x7fffffffffe0ull, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_BASE, 0x1010, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_BASE, 0x0000800000000000ull, 48, 48) &&
           ulpt_msr_write_ok(MSR_ULPT_LOG_BASE, 0x0000800000000000ull, 48, 57),
           "LOG_BASE: 0, or 32-byte aligned and canonical for the paging mode");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, 24 | (1ull << 24) << 32, 48, 48) &&
           ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, 0, 48, 48) && !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, 25, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, 1ull << 6, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, 1ull << 31, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, 3 | 9ull << 32, 48, 48) &&
           ulpt_msr_write_ok(MSR_ULPT_LOG_INDEX, ~0ull, 48, 48),
           "LOG_CTL: SIZE at most 24, THRESH at most 2^SIZE, bits 31:6 reserved; LOG_INDEX any value");
    tap_ok(ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT | 1, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT | 1ull << 32, 48, 48) &&
           !ulpt_msr_write_ok(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT | 1ull << 6, 48, 48),
           "LOG_CTL: COUNT only with SIZE and THRESH 0 (6.3)");
}

/* Which pages a store into the view targets (what it must drop). */
static void view_targets(void)
{
    uint64_t lo, hi;
    bool pw;
    const uint64_t view = 0x100000000000ull;
    tap_ok(ulpt_view_targets(view, view + 0x1234 * 16 + 8, 8, &lo, &hi, &pw) &&
           lo == 0x1234000 && hi == 0x1234000 && !pw, "store to word 1 targets one page, no page word");
    tap_ok(ulpt_view_targets(view, view + 0x10 * 16, 8, &lo, &hi, &pw) && pw,
           "store to word 0 touches the page word");
    tap_ok(ulpt_view_targets(view, view + 8, 16, &lo, &hi, &pw) && lo == 0 && hi == 0x1000 && pw,
           "a 16-byte store across two entries targets two pages");
    tap_ok(!ulpt_view_targets(view, view - 8, 8, &lo, &hi, &pw) &&
           !ulpt_view_targets(0, 0x1000, 8, &lo, &hi, &pw), "outside the view or no view: no target");
}

/* The line masks a TLB entry keeps for the generated code's inline check. */
static void lines_denied(void)
{
    int ok = 1;

    for (unsigned i = 0; i < ULPT_LINES_PER_PAGE; i++) {
        ok &= ulpt_lines_denied(ULPT_LINE_NR(i), ULPT_KIND_R) == 1u << i &&
              ulpt_lines_denied(ULPT_LINE_NR(i), ULPT_KIND_W) == 0 &&
              ulpt_lines_denied(ULPT_LINE_NW(i), ULPT_KIND_W) == 1u << i &&
              ulpt_lines_denied(ULPT_LINE_NW(i), ULPT_KIND_R) == 0;
    }
    tap_ok(ok, "each line's NR and NW bit is that line's bit in the read and write masks");
    tap_ok(ulpt_lines_denied(ULPT_LINES_NR_ALL, ULPT_KIND_R) == ~0u &&
           ulpt_lines_denied(ULPT_LINES_NW_ALL, ULPT_KIND_W) == ~0u &&
           ulpt_lines_denied(ULPT_LINE_NR(0) | ULPT_LINE_NW(31) | ULPT_LINE_NR(17), ULPT_KIND_R) ==
           (1u | 1u << 17), "all lines, and a mix of kinds");
}

/* A store through the view applied to the entry it lands in (what the TLB takes in place). */
static void entry_store(void)
{
    UlptEntry e = { 0x1111111111111111ull, 0x2222222222222222ull };

    tap_ok(ulpt_entry_store(&e, 0x40 * 16 + 8, 8, 0xabcd) && e.page == 0x1111111111111111ull &&
           e.lines == 0xabcd, "an 8-byte store to word 1 replaces it");
    tap_ok(ulpt_entry_store(&e, 0x40 * 16, 8, 4) && e.page == 4 && e.lines == 0xabcd,
           "an 8-byte store to word 0 replaces it");
    e = (UlptEntry){ 0, 0 };
    tap_ok(ulpt_entry_store(&e, 16 + 9, 2, 0xbeef) && e.lines == 0xbeef00 && e.page == 0 &&
           ulpt_entry_store(&e, 16 + 15, 1, 0x80) && e.lines == 0x8000000000beef00ull,
           "byte stores inside word 1 change only their bytes");
    e = (UlptEntry){ 0x1122334455667788ull, 0x99aabbccddeeff00ull };
    tap_ok(ulpt_entry_store(&e, 6, 4, 0x04030201) && e.page == 0x0201334455667788ull &&
           e.lines == 0x99aabbccddee0403ull, "a store straddling the two words splits at byte 8");
    tap_ok(!ulpt_entry_store(&e, 12, 8, 0) && !ulpt_entry_store(&e, 0, 0, 0) &&
           !ulpt_entry_store(&e, 0, 16, 0), "a store across two entries, empty or wider than 8: not applied");
}

static void escalation(void)
{
    tap_ok(ulpt_pf_error_code(ULPT_KIND_W) == (1 | 2 | 4 | 256) &&
           ulpt_pf_error_code(ULPT_KIND_X) == (1 | 4 | 16 | 256), "escalation #PF error codes");
}

static struct test_case const core_tests[] = {
    { "R-TBL-1:walk", walk, 6 },
    { "R-TBL-2", malformed, 8 },
    { "R-TBL-3", above_2_47, 1 },
    { "R-TBL-1:decision", decision, 16 },
    { "R-DEL-1:frame", frame, 6 },
    { "R-MSR-2", msr_validation, 11 },
    { "R-COH-1:view-targets", view_targets, 4 },
    { "R-COH-1:entry-store", entry_store, 5 },
    { "R-TBL-1:line-masks", lines_denied, 2 },
    { "R-ESC-1", escalation, 1 },
    { "R-BND-1", bounds, 7 },
};

int main(int argc, char **argv)
{
    return tap_run(core_tests, TAP_NTESTS(core_tests), argc - 1, argv + 1);
}
