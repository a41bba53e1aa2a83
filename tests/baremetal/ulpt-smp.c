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
static volatile uint64_t phase;
static uint8_t ap_ustack[4 * PAGE] __attribute__((aligned(16)));
static volatile uint64_t ap_iters, revoked, ap_result, ap_fault_addr, ap_fault_seen;

/*
 * The read phases (phase 2 and 3): CPU 1 keeps reading line 0 of `page` until CPU 0 denies
 * it with one view store (word 1 becomes `revoke`) and raises `revoked`.
 */
struct read_phase {
    uint8_t *page;
    uint64_t revoke;
    volatile uint64_t iters, revoked, result, fault_addr;
};
static uint8_t tr[PAGE] __attribute__((aligned(4096)));
static uint8_t ti[PAGE] __attribute__((aligned(4096)));
static struct read_phase read_phases[2] = {
    { .page = tr, .revoke = ULPT_LINE_NW(31) | ULPT_LINE_NR(0) },   /* 2: QEMU's fast path */
    { .page = ti, .revoke = ULPT_LINE_NR(31) | ULPT_LINE_NR(0) },   /* 3: the inline check */
};
static uint8_t ap_ustack2[4 * PAGE] __attribute__((aligned(16)));

static void ap_read_loop(struct read_phase *p);

/* The read phase running now, if any. */
static struct read_phase *read_phase_now(void)
{
    uint64_t ph = phase;

    return ph == 2 || ph == 3 ? &read_phases[ph - 2] : 0;
}

/* Parked at CPL 3 after the write (or inline) phase, until the next phase starts. */
static void ap_park(void)
{
    for (;;) {
        struct read_phase *p = read_phase_now();
        if (p)
            ap_read_loop(p);
        asm volatile("pause");
    }
}

static void ap_park_for_good(void)
{
    for (;;)
        asm volatile("pause");
}

static void ap_read_loop(struct read_phase *p)
{
    volatile uint64_t *t = (volatile uint64_t *)p->page;
    for (;;) {
        uint64_t r = p->revoked;
        (void)*t;
        p->iters++;
        if (r) {
            p->result = 2;              /* a read succeeded after the flag was seen */
            ap_park_for_good();
        }
    }
}

/* After a read phase's fault: wait for the phase to end, then park (never retry the read). */
static void ap_read_done(void)
{
    uint64_t ph = phase;

    while (phase == ph)
        asm volatile("pause");
    ap_park();
}

/* CPU 1's handler: record the fault and park (never retry the access). */
void ulpt_handler(uint64_t *f)
{
    for (int i = 0; i < 2; i++) {
        struct read_phase *p = &read_phases[i];
        if ((f[ULPT_FRAME_ADDR] & ~(PAGE - 1)) == (uint64_t)p->page) {
            p->fault_addr = f[ULPT_FRAME_ADDR];
            p->result = 1;
            f[ULPT_FRAME_RIP] = (uint64_t)ap_read_done;  /* on a stack of its own, call-aligned */
            f[ULPT_FRAME_RSP] = (uint64_t)ap_ustack2 + sizeof(ap_ustack2) - 8;
            return;
        }
    }
    ap_fault_addr = f[ULPT_FRAME_ADDR];
    ap_result = 1;
    f[ULPT_FRAME_RIP] = (uint64_t)ap_park;
}

static void ap_user(void *p)
{
    volatile uint64_t *t = p;
    for (;;) {
        struct read_phase *rp = read_phase_now();
        if (rp)                         /* a read phase, run alone (without the write phase) */
            ap_read_loop(rp);
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

static void bsp_revoke_read(void *v)
{
    struct read_phase *p = v;

    ulpt_view_entry((uint64_t)p->page)[1] = p->revoke;   /* one store */
    p->revoked = 1;
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

/*
 * A read phase: CPU 1 reads line 0 of a page whose word 1 is `lines`, CPU 0 denies that line
 * with one view store, and CPU 1's next read after the flag must fault.
 */
static void read_phase_test(uint64_t n, uint64_t lines, const char *what)
{
    struct read_phase *p = &read_phases[n - 2];

    ensure_ap();
    ulpt_kset((uint64_t)p->page, 0, lines);
    phase = n;
    bm_ok(wait_until(&p->iters, 100000), "CPU 1 reads line 0 of %s (%lu reads)", what, p->iters);
    bm_ok(run_user_default(bsp_revoke_read, p) == 0x80, "CPU 0 denied reads of that line from CPL 3 and raised the flag");
    wait_until(&p->result, 1);
    bm_ok(p->result == 1 && p->fault_addr == (uint64_t)p->page,
          "R-COH-2 on %s: CPU 1's next read after seeing the flag faulted (result %lu, fault at %lx)",
          what, p->result, p->fault_addr);
}

/* The same for reads on QEMU's fast path (a page whose lines deny writes only). */
static void coh2_fast_path(void)
{
    read_phase_test(2, ULPT_LINE_NW(31), "a page whose lines deny writes only (QEMU's fast path)");
}

/* The same for a line the generated code checks itself (QEMU's inline line check). */
static void coh2_inline(void)
{
    read_phase_test(3, ULPT_LINE_NR(31), "a page whose line 31 denies reads (QEMU's inline line check)");
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
