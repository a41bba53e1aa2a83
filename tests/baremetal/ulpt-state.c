/*
 * Leaves distinctive ULPT state behind for tests/suites/monitor.py: MSRs set, one
 * violation delivered and one escalated, then the CPU halts with the state in place.
 */
#include "bm.h"

static uint8_t tp[PAGE] __attribute__((aligned(4096)));
static volatile int handled;

void ulpt_handler(uint64_t *f) { handled++; f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT; }
static void u_write8(void *p) { asm volatile("movq $1, (%0)" :: "r"(p) : "memory"); }
static void u_view_store(void *p) { ulpt_view_entry((uint64_t)p)[1] = 0; }

void tests(void)
{
    bm_plan(3);
    ulpt_clear_all();
    ulpt_enable((uint64_t)ulpt_entry);
    ulpt_kset((uint64_t)tp, ULPT_NW, 0);
    bm_ok(run_user_default(u_write8, tp) == 0x80 && handled == 1, "one violation delivered");
    wrmsr(MSR_ULPT_HANDLER, 0);
    bm_ok(run_user_default(u_write8, tp) == 14, "one violation escalated");
    bm_ok(run_user_default(u_view_store, tp + PAGE) == 0x80, "one store through the view");
    wrmsr(MSR_ULPT_HANDLER, 0x7fffdead0000ull);
    wrmsr(MSR_ULPT_STKADJ, 0x1234);
    wrmsr(MSR_ULPT_STATUS, 1);
    bm_printf("# state ready\n");
    for (;;)
        asm volatile("cli; hlt");
}
