/*
 * R-COH-2 on two CPUs: CPU 1 keeps writing a page at CPL 3 (so its TLB holds the page),
 * CPU 0 revokes the write right with one store through the view and then raises a flag.
 * Once CPU 1 has seen the flag, its next write must fault: it may never succeed.
 * Then the same for a kind on QEMU's fast path: CPU 1 keeps reading a page whose lines deny
 * writes only (its loads never leave the inline path), CPU 0 denies reads of a line with one
 * view store, and CPU 1's next read of that line must fault. And for QEMU's inline line
 * check: CPU 1 keeps reading an allowed line of a page whose other line denies reads (the
 * generated code checks the line itself), CPU 0 denies the line CPU 1 reads.
 * The tests (smp_tests[] at the end) run alone too: CPU 1 starts with the first that needs it.
 */
#include "bm.h"

static uint8_t tp[PAGE] __attribute__((aligned(4096)));
static uint8_t tr[PAGE] __attribute__((aligned(4096)));       /* the read phase's page */
static volatile uint64_t phase, r_iters, r_revoked, r_result, r_fault_addr;
static uint8_t ap_ustack[4 * PAGE] __attribute__((aligned(16)));
static volatile uint64_t ap_iters, revoked, ap_result, ap_fault_addr, ap_fault_seen;

static uint8_t ti[PAGE] __attribute__((aligned(4096)));       /* the inline phase's page */
static volatile uint64_t i_iters, i_revoked, i_result, i_fault_addr;
static uint8_t ap_ustack2[4 * PAGE] __attribute__((aligned(16)));

static void ap_read_loop(void);
static void ap_inline_loop(void);

/* Parked at CPL 3 after the write (or inline) phase, until the next phase starts. */
static void ap_park(void)
{
    for (;;) {
        if (phase == 2)
            ap_read_loop();
        if (phase == 3)
            ap_inline_loop();
        asm volatile("pause");
    }
}

static void ap_park_for_good(void)
{
    for (;;)
        asm volatile("pause");
}

static void ap_read_loop(void)
{
    volatile uint64_t *t = (volatile uint64_t *)tr;
    for (;;) {
        uint64_t r = r_revoked;
        (void)*t;
        r_iters++;
        if (r) {
            r_result = 2;               /* a read succeeded after the flag was seen */
            ap_park_for_good();
        }
    }
}

/* Reads of an allowed line of a page whose line 31 denies reads: the inline line check. */
static void ap_inline_loop(void)
{
    volatile uint64_t *t = (volatile uint64_t *)ti;
    for (;;) {
        uint64_t r = i_revoked;
        (void)*t;
        i_iters++;
        if (r) {
            i_result = 2;               /* a read succeeded after the flag was seen */
            ap_park_for_good();
        }
    }
}

/* After the inline phase's fault: wait for it to end, then park (never retry the access). */
static void ap_inline_done(void)
{
    while (phase == 3)
        asm volatile("pause");
    ap_park();
}

/* CPU 1's handler: record the fault and park (never retry the access). */
void ulpt_handler(uint64_t *f)
{
    if (phase == 3) {
        i_fault_addr = f[ULPT_FRAME_ADDR];
        i_result = 1;
        f[ULPT_FRAME_RIP] = (uint64_t)ap_inline_done; /* on a stack of its own, call-aligned */
        f[ULPT_FRAME_RSP] = (uint64_t)ap_ustack2 + sizeof(ap_ustack2) - 8;
        return;
    }
    if (phase == 2) {
        r_fault_addr = f[ULPT_FRAME_ADDR];
        r_result = 1;
        f[ULPT_FRAME_RIP] = (uint64_t)ap_park_for_good;
        return;
    }
    ap_fault_addr = f[ULPT_FRAME_ADDR];
    ap_result = 1;
    f[ULPT_FRAME_RIP] = (uint64_t)ap_park;
}

static void ap_user(void *p)
{
    volatile uint64_t *t = p;
    for (;;) {
        if (phase == 2)                 /* the read phase, run alone (without the write phase) */
            ap_read_loop();
        if (phase == 3)                 /* the inline phase, run alone */
            ap_inline_loop();
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

/* A locked read-modify-write through the view while CPU 1 runs at CPL 3 on the same table. */
static void bsp_locked_view_rmw(void *p)
{
    (void)p;
    for (int i = 0; i < 100; i++) {
        asm volatile("lock orq %1, %0" : "+m"(ulpt_view_entry((uint64_t)tp)[1]) : "r"(ULPT_LINE_NW(7)) : "memory");
        asm volatile("lock andq %1, %0" : "+m"(ulpt_view_entry((uint64_t)tp)[1]) : "r"(~ULPT_LINE_NW(7)) : "memory");
    }
    asm volatile("lock orq %1, %0" : "+m"(ulpt_view_entry((uint64_t)tp)[1]) : "r"(ULPT_LINE_NR(9)) : "memory");
}

static void bsp_revoke_read(void *p)
{
    (void)p;
    ulpt_view_entry((uint64_t)tr)[1] = ULPT_LINE_NW(31) | ULPT_LINE_NR(0);  /* one store */
    r_revoked = 1;
}

static void bsp_revoke_inline(void *p)
{
    (void)p;
    ulpt_view_entry((uint64_t)ti)[1] = ULPT_LINE_NR(31) | ULPT_LINE_NR(0);  /* one store */
    i_revoked = 1;
}

static int wait_until(volatile uint64_t *v, uint64_t min)
{
    for (long t = 0; t < 2000000000L; t++)
        if (*v >= min)
            return 1;
    return 0;
}

/* CPU 1 runs at CPL 3 on the table, from the first test that needs it. */
static int ap_started;
static void ensure_ap(void)
{
    if (ap_started)
        return;
    ulpt_clear_all();
    ulpt_enable(0);
    ap_started = start_ap(ap_kernel);
    if (!ap_started) {
        bm_printf("Bail out! the second CPU did not start\n");
        bm_exit(1);
    }
}

/* CPU 0 revokes CPU 1's write right with one view store: CPU 1's next write faults. */
static void coh2_write(void)
{
    if (!ap_started) {
        ulpt_clear_all();
        ulpt_enable(0);
        ap_started = start_ap(ap_kernel);
    }
    if (!bm_ok(ap_started, "the second CPU started")) {
        bm_printf("Bail out! the second CPU did not start\n");
        bm_exit(1);
    }
    bm_ok(wait_until(&ap_iters, 100000), "CPU 1 writes the page at CPL 3 (%lu writes)", ap_iters);
    bm_ok(run_user_default(bsp_revoke, 0) == 0x80, "CPU 0 revoked the write right from CPL 3 and raised the flag");
    wait_until(&ap_result, 1);
    bm_ok(ap_result == 1 && ap_fault_addr == (uint64_t)tp,
          "R-COH-2: CPU 1's next write after seeing the flag faulted (result %lu, fault at %lx)",
          ap_result, ap_fault_addr);
}

/* The same for reads on QEMU's fast path (a page whose lines deny writes only). */
static void coh2_fast_path(void)
{
    ensure_ap();
    ulpt_kset((uint64_t)tr, 0, ULPT_LINE_NW(31));     /* loads from tr stay on the fast path */
    phase = 2;
    bm_ok(wait_until(&r_iters, 100000), "CPU 1 reads a page whose lines deny writes only (%lu reads)", r_iters);
    bm_ok(run_user_default(bsp_revoke_read, 0) == 0x80, "CPU 0 denied reads of a line from CPL 3 and raised the flag");
    wait_until(&r_result, 1);
    bm_ok(r_result == 1 && r_fault_addr == (uint64_t)tr,
          "R-COH-2 on the fast path: CPU 1's next read after seeing the flag faulted (result %lu, fault at %lx)",
          r_result, r_fault_addr);
}

/* The same for a line the generated code checks itself (QEMU's inline line check). */
static void coh2_inline(void)
{
    ensure_ap();
    ulpt_kset((uint64_t)ti, 0, ULPT_LINE_NR(31));     /* loads from line 0 pass inline */
    phase = 3;
    bm_ok(wait_until(&i_iters, 100000), "CPU 1 reads an allowed line of a page whose line 31 denies reads (%lu reads)",
          i_iters);
    bm_ok(run_user_default(bsp_revoke_inline, 0) == 0x80, "CPU 0 denied reads of that line from CPL 3 and raised the flag");
    wait_until(&i_result, 1);
    bm_ok(i_result == 1 && i_fault_addr == (uint64_t)ti,
          "R-COH-2 on the inline check: CPU 1's next read after seeing the flag faulted (result %lu, fault at %lx)",
          i_result, i_fault_addr);
    phase = 0;
}

/* CPU 1 is at CPL 3, sharing the table: locked RMWs on the view must complete. */
static void coh3_locked_view(void)
{
    ensure_ap();
    ulpt_kset((uint64_t)tp, 0, 0);
    uint64_t rv = run_user_default(bsp_locked_view_rmw, 0), lines = ulpt_phys_entry((uint64_t)tp)[1];
    bm_ok(rv == 0x80 && lines == ULPT_LINE_NR(9),
          "R-COH-3: 201 locked read-modify-writes through the view complete with another CPU on the table (entry %lx)",
          lines);
}

static const struct test_case smp_tests[] = {
    { "R-COH-2", coh2_write, 4 },
    { "R-COH-2:inline", coh2_inline, 3 },
    { "R-COH-2:fast-path", coh2_fast_path, 3 },
    { "R-COH-3", coh3_locked_view, 1 },
};

void tests(void)
{
    bm_run(smp_tests, BM_NTESTS(smp_tests));
}
