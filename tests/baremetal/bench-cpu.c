/*
 * ULPT CPU micro-benchmarks, side by side in one boot (times from the HPET):
 *  - an access to an allowed line of a page with line rights vs a plain access,
 *  - a permission change (one store through the view) vs a plain store,
 *  - a fault round trip: violation, user handler, UIRET letting the access through;
 *  - a logged store (docs/spec.md 6.2) vs a plain store, the handler draining the log at its
 *    log events (a record's cost, its drain included);
 *  - a counted store (6.3, a count table instead of the ring) vs a plain store.
 * Prints "# bench NAME NS" lines for scripts/bench-cpu, and TAP so a broken run is visible.
 */
#include "bm.h"

static uint8_t plain[PAGE] __attribute__((aligned(4096)));
static uint8_t lined[PAGE] __attribute__((aligned(4096)));
static uint8_t wlined[PAGE] __attribute__((aligned(4096)));    /* a line denies writes only */
static uint8_t rlined[PAGE] __attribute__((aligned(4096)));    /* a line denies reads only */
static uint8_t watched[PAGE] __attribute__((aligned(4096)));
static uint8_t toggled[PAGE] __attribute__((aligned(4096)));
static uint8_t logged[PAGE] __attribute__((aligned(4096)));
static volatile uint64_t handled, drained;
static volatile uint64_t counters[2] __attribute__((aligned(32)));  /* logged's line 0 (6.3) */

/* The access log: 2^16 records past the red-zone array, a log event at half full. */
#define LOG_SHIFT 16
#define LOG_BASE (BM_FREE_BASE + 2048 * PAGE)     /* past the red-zone array (RZ_PAGES) */
static uint64_t log_tail;
/* Consumes the records in order (R-LOG-6): a record's cost is its drain's too, kept to what a
   consumer must do (read V, clear it), the bench's counting outside the loop. */
static void drain(void)
{
    uint64_t t = log_tail;

    for (;;) {
        volatile uint64_t *r = (volatile uint64_t *)(LOG_BASE + ULPT_REC_SIZE *
                                                     (t & ((1u << LOG_SHIFT) - 1)));
        if (!(r[ULPT_REC_INFO] & ULPT_REC_V))
            break;
        r[ULPT_REC_INFO] = 0;
        t++;
    }
    drained += t - log_tail;
    log_tail = t;
}

void ulpt_handler(uint64_t *f)
{
    unsigned reason = ULPT_INFO_REASON(f[ULPT_FRAME_INFO]);

    if (reason == ULPT_REASON_LOG || reason == ULPT_REASON_FULL) {
        drain();
        return;
    }
    handled++;
    f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
}

#define N 2000000L
#define NF 200000L
static volatile uint64_t t_user;

static void u_store_loop(void *p)
{
    uint64_t t0 = hpet_ns();
    for (long i = 0; i < N; i++)
        *(volatile uint64_t *)p = i;
    t_user = hpet_ns() - t0;
}
static void u_load_loop(void *p)
{
    uint64_t t0 = hpet_ns(), s = 0;
    for (long i = 0; i < N; i++)
        s += *(volatile uint64_t *)p;
    t_user = hpet_ns() - t0 + (s & 0);
}
/* The red-zone pattern: an 8 MiB array whose every page has line 0 denied for both kinds (a
 * heap checker's red zones), summed everywhere but those lines, vs the same with no rights.
 * It lies past the image (BM_FREE_BASE), where the ULPT table still covers it. */
#define RZ_PAGES 2048
#define rzarr ((uint8_t *)BM_FREE_BASE)
_Static_assert(BM_FREE_BASE + RZ_PAGES * PAGE + (ULPT_REC_SIZE << 16) <= BM_FREE_END,
               "the red-zone array and the log fit");
static void u_sum_loop(void *p)
{
    uint64_t t0 = hpet_ns(), s = 0;
    (void)p;
    for (int pass = 0; pass < 2; pass++)
        for (long pg = 0; pg < RZ_PAGES; pg++) {
            const volatile uint64_t *w = (const volatile uint64_t *)(rzarr + pg * PAGE);
            for (int k = 16; k < 512; k++)
                s += w[k];
        }
    t_user = hpet_ns() - t0 + (s & 0);
}
static uint64_t run(void (*fn)(void *), void *arg);
static void rz_rights(int on)
{
    for (long pg = 0; pg < RZ_PAGES; pg++)
        ulpt_kset((uint64_t)(rzarr + pg * PAGE), 0, on ? ULPT_LINE_NR(0) | ULPT_LINE_NW(0) : 0);
}
static uint64_t run_rz(int on)
{
    rz_rights(on);
    uint64_t t = run(u_sum_loop, 0);
    rz_rights(0);
    return t;
}

static void u_view_loop(void *p)
{
    volatile uint64_t *e = ulpt_view_entry((uint64_t)p);
    uint64_t t0 = hpet_ns();
    for (long i = 0; i < N; i += 2) {
        e[0] = ULPT_NW;                  /* revoke: one store */
        e[0] = 0;                        /* restore: one store */
    }
    t_user = hpet_ns() - t0;
}
static void u_view_line_loop(void *p)
{
    volatile uint64_t *e = ulpt_view_entry((uint64_t)p);
    uint64_t t0 = hpet_ns();
    for (long i = 0; i < N; i += 2) {
        e[1] = ULPT_LINE_NW(5);          /* revoke one line: one store */
        e[1] = 0;
    }
    t_user = hpet_ns() - t0;
}
static void u_fault_loop(void *p)
{
    uint64_t t0 = hpet_ns();
    for (long i = 0; i < NF; i++)
        *(volatile uint64_t *)p = i;
    t_user = hpet_ns() - t0;
}

static uint64_t run(void (*fn)(void *), void *arg)
{
    if (run_user_default(fn, arg) != 0x80)
        return 0;
    return t_user;
}

/* The same with the thread's log a count table: logged's line 0 counts into counters[]. */
static uint64_t run_counted(void (*fn)(void *), void *arg)
{
    uint64_t base = rdmsr(MSR_ULPT_LOG_BASE), ctl = rdmsr(MSR_ULPT_LOG_CTL);
    uint64_t idx = rdmsr(MSR_ULPT_LOG_INDEX), t;

    wrmsr(MSR_ULPT_LOG_BASE, (uint64_t)counters - ((uint64_t)logged >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE);
    wrmsr(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT);
    t = run(fn, arg);
    wrmsr(MSR_ULPT_LOG_BASE, base);
    wrmsr(MSR_ULPT_LOG_CTL, ctl);
    wrmsr(MSR_ULPT_LOG_INDEX, idx);
    return t;
}

void tests(void)
{
    bm_plan(6);
    if (!bm_ok(hpet_init(), "HPET available")) {
        bm_ok(0, "every watched store was delivered once");
        bm_ok(0, "the toggled entry ends empty");
        bm_ok(0, "all measurements ran");
        bm_ok(0, "every logged store was drained once");
        bm_ok(0, "every counted store was counted once");
        return;
    }
    ulpt_clear_all();
    ulpt_enable((uint64_t)ulpt_entry);
    ulpt_kset((uint64_t)lined, 0, ULPT_LINE_NW(31) | ULPT_LINE_NR(31));
    ulpt_kset((uint64_t)watched, 0, ULPT_LINE_NW(0));
    ulpt_kset((uint64_t)wlined, 0, ULPT_LINE_NW(31));
    ulpt_kset((uint64_t)rlined, 0, ULPT_LINE_NR(31));
    ulpt_kset((uint64_t)logged, ULPT_LOG, ULPT_LINE_NW(0));
    for (uint64_t i = 0; i < (ULPT_REC_SIZE << LOG_SHIFT) / 8; i++)
        ((volatile uint64_t *)LOG_BASE)[i] = 0;
    wrmsr(MSR_ULPT_LOG_BASE, LOG_BASE);
    wrmsr(MSR_ULPT_LOG_CTL, LOG_SHIFT | (1ull << (LOG_SHIFT - 1)) << ULPT_LOG_CTL_THRESH_SHIFT);
    /* Warm up, then measure alternately and keep the best of 3 rounds. */
    uint64_t best[15] = { ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull,
                          ~0ull, ~0ull, ~0ull, ~0ull, ~0ull };
    for (int round = 0; round < 4; round++) {
        uint64_t t[15] = {
            run(u_store_loop, plain), run(u_store_loop, lined),
            run(u_load_loop, plain), run(u_load_loop, lined),
            run(u_view_loop, toggled), run(u_fault_loop, watched),
            run(u_view_line_loop, toggled),
            run(u_load_loop, wlined), run(u_store_loop, rlined),     /* the kind not denied */
            run(u_store_loop, wlined), run(u_load_loop, rlined),     /* the denied kind */
            run_rz(0), run_rz(1),
            run(u_store_loop, logged), run_counted(u_store_loop, logged),
        };
        for (int i = 0; i < 15 && round > 0; i++)
            if (t[i] && t[i] < best[i])
                best[i] = t[i];
    }
    bm_ok(handled == 4 * NF, "every watched store was delivered once (%lu)", handled);
    bm_ok(ulpt_phys_entry((uint64_t)toggled)[0] == 0 && ulpt_phys_entry((uint64_t)toggled)[1] == 0,
          "the toggled entry ends empty");
    drain();
    bm_ok(drained == 4 * N && rdmsr(MSR_ULPT_LOG_INDEX) == 4 * N,
          "every logged store was drained once (%lu, index %lu)", drained, rdmsr(MSR_ULPT_LOG_INDEX));
    bm_ok(counters[1] == 4 * N && counters[0] == 0, "every counted store was counted once (%lu)", counters[1]);
    int all = 1;
    for (int i = 0; i < 15; i++)
        all &= best[i] != ~0ull && best[i] != 0;
    bm_ok(all, "all measurements ran");
    /* Picoseconds per operation (per loop iteration, loop overhead included). */
    bm_printf("# bench store_plain_ps %lu\n", best[0] * 1000 / N);
    bm_printf("# bench store_allowed_line_ps %lu\n", best[1] * 1000 / N);
    bm_printf("# bench load_plain_ps %lu\n", best[2] * 1000 / N);
    bm_printf("# bench load_allowed_line_ps %lu\n", best[3] * 1000 / N);
    bm_printf("# bench view_store_page_ps %lu\n", best[4] * 1000 / N);
    bm_printf("# bench view_store_line_ps %lu\n", best[6] * 1000 / N);
    bm_printf("# bench fault_round_trip_ps %lu\n", best[5] * 1000 / NF);
    bm_printf("# bench load_wline_page_ps %lu\n", best[7] * 1000 / N);
    bm_printf("# bench store_rline_page_ps %lu\n", best[8] * 1000 / N);
    bm_printf("# bench store_wline_page_ps %lu\n", best[9] * 1000 / N);
    bm_printf("# bench load_rline_page_ps %lu\n", best[10] * 1000 / N);
    bm_printf("# bench sum_8mib_plain_us %lu\n", best[11] / 1000);
    bm_printf("# bench sum_8mib_redzones_us %lu\n", best[12] / 1000);
    bm_printf("# bench store_logged_ps %lu\n", best[13] * 1000 / N);
    bm_printf("# bench store_counted_ps %lu\n", best[14] * 1000 / N);
    ulpt_disable();
}
