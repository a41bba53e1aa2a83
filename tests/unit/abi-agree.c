/*
 * The kernel's uapi <asm/ulpt.h> and the ABI header <ulpt/arch.h> agree: every name both define
 * is token-identical (built with -Werror, a differing redefinition fails the build), and the
 * kernel's frame structure has the architecture's layout. `abi-agree NAME` runs one test of
 * abi_tests[], `abi-agree --list` lists them.
 */
#include <stddef.h>
#include <asm/ulpt.h>
#include <ulpt/arch.h>
#include "tap.h"

static void frame_layout(void)
{
    tap_ok(sizeof(struct ulpt_frame) == ULPT_FRAME_SIZE &&
           offsetof(struct ulpt_frame, addr) == 8 * ULPT_FRAME_ADDR &&
           offsetof(struct ulpt_frame, info) == 8 * ULPT_FRAME_INFO &&
           offsetof(struct ulpt_frame, entry0) == 8 * ULPT_FRAME_ENTRY0 &&
           offsetof(struct ulpt_frame, entry1) == 8 * ULPT_FRAME_ENTRY1 &&
           offsetof(struct ulpt_frame, rip) == 8 * ULPT_FRAME_RIP &&
           offsetof(struct ulpt_frame, rflags) == 8 * ULPT_FRAME_RFLAGS &&
           offsetof(struct ulpt_frame, rsp) == 8 * ULPT_FRAME_RSP &&
           offsetof(struct ulpt_frame, start) == 8 * ULPT_FRAME_START,
           "struct ulpt_frame has the frame layout of docs/spec.md section 6");
}

static void view_size(void)
{
    tap_ok(ULPT_VIEW_SIZE == 1ull << 39 && ULPT_ENTRY_SIZE == 16, "view size and entry size");
}

static void right_bits(void)
{
    tap_ok(ULPT_NR == 1 && ULPT_NW == 2 && ULPT_NX == 4 && ULPT_LINE_NR(31) == 1ull << 62 &&
           ULPT_LINE_NW(31) == 1ull << 63, "page and line right bits");
}

static void info_fields(void)
{
    tap_ok(ULPT_INFO_KIND(ULPT_KIND_W) == ULPT_KIND_W && ULPT_INFO_SIZE(32ull << 16) == 32 &&
           ULPT_INFO_PERMIT == 1ull << 32 && ULPT_REASON_LINE == 2,
           "info fields, kinds and reasons");
}

static const struct test_case abi_tests[] = {
    { "frame-layout", frame_layout, 1 },
    { "view-size", view_size, 1 },
    { "right-bits", right_bits, 1 },
    { "info-fields", info_fields, 1 },
};

int main(int argc, char **argv)
{
    return tap_run(abi_tests, TAP_NTESTS(abi_tests), argc - 1, argv + 1);
}
