/*
 * The kernel's uapi <asm/ulpt.h> and the ABI header <ulpt/arch.h> agree: every name both define
 * is token-identical (built with -Werror, a differing redefinition fails the build), and the
 * kernel's frame, log record and count structures have the architecture's layouts.
 * `abi-agree NAME` runs one test of abi_tests[], `abi-agree --list` lists them.
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

static void log_record_layout(void)
{
    tap_ok(sizeof(struct ulpt_log_record) == ULPT_REC_SIZE &&
           offsetof(struct ulpt_log_record, start) == 8 * ULPT_REC_START &&
           offsetof(struct ulpt_log_record, info) == 8 * ULPT_REC_INFO &&
           offsetof(struct ulpt_log_record, rip) == 8 * ULPT_REC_RIP &&
           offsetof(struct ulpt_log_record, value) == 8 * ULPT_REC_VALUE,
           "struct ulpt_log_record has the record layout of docs/spec.md section 6.2");
}

static void log_fields(void)
{
    tap_ok(ULPT_LOG == 1ull << 8 && ULPT_REASON_FULL == 5 && ULPT_REASON_LOG == 6 &&
           ULPT_REC_V == 1ull << 63 && ULPT_REC_VAL == 1ull << 32 && ULPT_LOG_MAX_SHIFT == 24 &&
           ULPT_LOG_CTL_SIZE_MASK == 0x1f && ULPT_LOG_CTL_THRESH_SHIFT == 32 &&
           ULPT_LOG_CTL_COUNT == 1ull << 5 &&
           ULPT_LOG_CTL_RSVD_MASK == (0xffffffffull & ~0x3full) && ULPT_LOG_ALIGN == 32,
           "the LOG entry bit, the log's reasons, record info bits and ULPT_LOG_CTL fields");
}

/* The count table of docs/spec.md section 6.3: 16 bytes per 128-byte line, reads first */
static void count_layout(void)
{
    tap_ok(sizeof(struct ulpt_count) == ULPT_CNT_SIZE && ULPT_CNT_SIZE == 16 &&
           ULPT_LINE_SHIFT == 7 && offsetof(struct ulpt_count, reads) == 8 * ULPT_CNT_READ &&
           offsetof(struct ulpt_count, writes) == 8 * ULPT_CNT_WRITE && ULPT_CNT_WRITE == 1,
           "struct ulpt_count has the counter layout of docs/spec.md section 6.3");
}

/* The arguments of ARCH_ULPT_SET_LOG and ARCH_ULPT_GET_LOG (docs/linux-api.md) */
static void log_arg_layout(void)
{
    tap_ok(sizeof(struct ulpt_log) == 32 && offsetof(struct ulpt_log, base) == 0 &&
           offsetof(struct ulpt_log, size_shift) == 8 && offsetof(struct ulpt_log, thresh) == 12 &&
           offsetof(struct ulpt_log, index) == 16 && offsetof(struct ulpt_log, flags) == 24 &&
           (1ull << ULPT_LOG_MAX_SHIFT) <= (__typeof__(((struct ulpt_log *)0)->thresh))~0u &&
           ULPT_LOG_COUNT == 1,
           "struct ulpt_log: base, size_shift, thresh, index, flags (ULPT_LOG_COUNT 1); thresh holds 2^24");
}

static const struct test_case abi_tests[] = {
    { "frame-layout", frame_layout, 1 },
    { "view-size", view_size, 1 },
    { "right-bits", right_bits, 1 },
    { "info-fields", info_fields, 1 },
    { "log-record-layout", log_record_layout, 1 },
    { "log-fields", log_fields, 1 },
    { "log-arg-layout", log_arg_layout, 1 },
    { "count-layout", count_layout, 1 },
};

int main(int argc, char **argv)
{
    return tap_run(abi_tests, TAP_NTESTS(abi_tests), argc - 1, argv + 1);
}
