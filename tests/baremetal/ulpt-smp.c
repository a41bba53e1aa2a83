/*
 * R-COH-2 on two CPUs: CPU 1 keeps writing a page at CPL 3 (so its TLB holds the page),
 * CPU 0 revokes the write right with one store through the view and then raises a flag.
 * Once CPU 1 has seen the flag, its next write must fault: it may never succeed.
 */
#include "bm.h"

static uint8_t tp[PAGE] __attribute__((aligned(4096)));
static uint8_t ap_ustack[4 * PAGE] __attribute__((aligned(16)));
static volatile uint64_t ap_iters, revoked, ap_result, ap_fault_addr, ap_fault_seen;

static void ap_park(void)
{
    for (;;)
        asm volatile("pause");
}

/* CPU 1's handler: record the fault and park (never retry the write). */
void ulpt_handler(uint64_t *f)
{
    ap_fault_addr = f[ULPT_FRAME_ADDR];
    ap_result = 1;
    f[ULPT_FRAME_RIP] = (uint64_t)ap_park;
}

static void ap_user(void *p)
{
    volatile uint64_t *t = p;
    for (;;) {
        uint64_t r = revoked;
        *t = r;
        ap_iters++;
        if (r) {
            ap_result = 2;              /* a write succeeded after the flag was seen */
            ap_park();
        }
    }
}

static void ap_kernel(void)
{
    wrmsr(MSR_ULPT_ROOT, ulpt_root_pa());
    wrmsr(MSR_ULPT_VIEW, VIEW_BASE);
    wrmsr(MSR_ULPT_STKADJ, 128);
    wrmsr(MSR_ULPT_HANDLER, (uint64_t)ulpt_entry);
    wrmsr(MSR_ULPT_CTL, ULPT_CTL_EN);
    enter_user(ap_user, tp, (uint64_t)ap_ustack + sizeof(ap_ustack) - 64);
}

static void bsp_revoke(void *p)
{
    (void)p;
    ulpt_view_entry((uint64_t)tp)[0] = ULPT_NW;   /* the revocation: one store */
    revoked = 1;                                 /* then tell the other thread */
}

static int wait_until(volatile uint64_t *v, uint64_t min)
{
    for (long t = 0; t < 2000000000L; t++)
        if (*v >= min)
            return 1;
    return 0;
}

void tests(void)
{
    bm_plan(4);
    ulpt_clear_all();
    ulpt_enable(0);
    if (!bm_ok(start_ap(ap_kernel), "the second CPU started"))
        return;
    bm_ok(wait_until(&ap_iters, 100000), "CPU 1 writes the page at CPL 3 (%lu writes)", ap_iters);
    bm_ok(run_user_default(bsp_revoke, 0) == 0x80, "CPU 0 revoked the write right from CPL 3 and raised the flag");
    wait_until(&ap_result, 1);
    bm_ok(ap_result == 1 && ap_fault_addr == (uint64_t)tp,
          "R-COH-2: CPU 1's next write after seeing the flag faulted (result %lu, fault at %lx)",
          ap_result, ap_fault_addr);
}
