/*
 * Modeled time (docs/spec.md 11.1), on -cpu ulpt with model=on. tests/suites/cpu.sh boots
 * this image three ways: R-MODEL-1:query to R-MODEL-4 with the parameters below, R-MODEL-5
 * with the defaults (model=on only), and R-MODEL-1:off without model=on.
 */
#include <cpuid.h>
#include "bm.h"

/* The parameters cpu.sh passes (all but the defaults' test), with ulpt-model-kernel=on. */
#define P_CPI 2
#define P_DELIVER 1000
#define P_UIRET 100
#define P_UIRET_PERMIT 300
#define P_VIEW_STORE 7
#define P_KENTRY 50
#define P_LOG_RECORD 3
#define P_BOUNDS 5

static uint8_t tp[4 * PAGE] __attribute__((aligned(4096)));
static uint8_t np[PAGE] __attribute__((aligned(4096)));  /* made not present */
static volatile int handled;

static volatile int retry;       /* the handler opens the page (a plain UIRET) */

/* A log of 16 records (docs/spec.md 6.2); the handler consumes them all at a log event. */
static uint8_t logbuf[16 * ULPT_REC_SIZE] __attribute__((aligned(64)));

void ulpt_handler(uint64_t *f)
{
    if (ULPT_INFO_REASON(f[ULPT_FRAME_INFO]) == ULPT_REASON_LOG) {
        for (unsigned i = 0; i < 16; i++)
            ((volatile uint64_t *)logbuf)[4 * i + ULPT_REC_INFO] = 0;
        return;
    }
    handled++;
    if (retry)
        ulpt_view_entry(f[ULPT_FRAME_ADDR])[0] = 0;
    else
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
}

static uint32_t model_op(uint32_t op, uint32_t *ebx, uint32_t *edx)
{
    unsigned a, b, c, d;

    __cpuid_count(ULPT_MODEL_LEAF, op, a, b, c, d);
    (void)c;
    *ebx = b;
    *edx = d;
    return a;
}

/* Field f of the last region, or ~0 if the read says there is none. */
static uint64_t field(unsigned f)
{
    uint32_t b, d, a = model_op(ULPT_MODEL_READ + f, &b, &d);

    return b == 1 ? (uint64_t)d << 32 | a : ~0ull;
}

static void end(void)
{
    uint32_t b, d;

    model_op(ULPT_MODEL_END, &b, &d);
}

/*
 * Marked sequences in assembly, so that their instruction counts are known: BEGIN, the body,
 * then the three instructions of END (mov, mov, cpuid), which the region counts.
 */
#define BEGIN "mov $0x4c505400, %%eax; mov $1, %%ecx; cpuid\n"
#define END   "mov $0x4c505400, %%eax; mov $2, %%ecx; cpuid\n"
#define CLOBBERS "rax", "rbx", "rcx", "rdx", "memory"

/* 100 nops: 103 instructions. */
static void seq_nops(void *arg)
{
    (void)arg;
    asm volatile(BEGIN ".rept 100; nop; .endr\n" END ::: CLOBBERS);
}

/* BEGIN, 50 nops, BEGIN again, 100 nops, END: 103 instructions. */
static void seq_restart(void *arg)
{
    (void)arg;
    asm volatile(BEGIN ".rept 50; nop; .endr\n" BEGIN ".rept 100; nop; .endr\n" END ::: CLOBBERS);
}

/* A loop of 1000 turns across blocks: 1 + 2 * 1000 + 3 = 2004 instructions. */
static void seq_loop(void *arg)
{
    (void)arg;
    asm volatile(BEGIN "mov $1000, %%esi\n1: dec %%esi; jnz 1b\n" END ::: CLOBBERS, "rsi");
}

/* 10 nops, then a load that faults to the kernel (#PF): 10 instructions at CPL 3, the load
 * and the nops after it in its block given back. The region ends at CPL 0. */
static void seq_fault(void *arg)
{
    asm volatile(BEGIN ".rept 10; nop; .endr\n mov (%0), %%rax\n .rept 5; nop; .endr\n"
                 :: "D"(arg) : CLOBBERS);
}

/* 4 stores to a page whose writes ULPT denies: each delivered, PERMIT. */
static void seq_deliveries(void *arg)
{
    volatile uint64_t *p = arg;

    for (int i = 0; i < 4; i++)
        p[i * 16] = i;
}

static void seq_view_store(void *arg)
{
    ulpt_view_entry((uint64_t)arg)[1] = 0;
}

static void seq_syscall(void *arg)
{
    (void)arg;
    asm volatile("int $0x80" ::: "memory");
}

static void open_region(void)
{
    uint32_t b, d;

    model_op(ULPT_MODEL_BEGIN, &b, &d);
}

/* R-MODEL-1: the query says the model is on and whether a region is open. */
static void model1_query(void)
{
    uint32_t b, d, a;

    end();                                   /* none open */
    a = model_op(ULPT_MODEL_QUERY, &b, &d);
    bm_ok(a == ULPT_MODEL_VERSION && b == ULPT_MODEL_SIGNATURE && (d & 1) == 0,
          "R-MODEL-1: query: version %u, signature 0x%x, no region open (edx 0x%x)", a, b, d);
    open_region();
    model_op(ULPT_MODEL_QUERY, &b, &d);
    bm_ok(d & 1, "R-MODEL-1: query after BEGIN: a region is open");
    end();
    bm_ok(model_op(ULPT_MODEL_END, &b, &d) == 0, "R-MODEL-1: END with no region open returns 0");
    bm_ok(field(ULPT_MODEL_NFIELDS) == ~0ull, "R-MODEL-1: a read past the last field says none");
    {
        unsigned ra, rb, rc, rd;
        __cpuid_count(ULPT_MODEL_LEAF, 3, ra, rb, rc, rd);
        bm_ok(!ra && !rb && !rc && !rd, "R-MODEL-1: another operation returns zeros");
    }
    run_user_default(seq_restart, 0);
    bm_ok(field(ULPT_MODEL_F_INSNS_USER) == 103,
          "R-MODEL-1: a second BEGIN starts the region again (%lu, want 103)",
          field(ULPT_MODEL_F_INSNS_USER));
}

/* R-MODEL-1 without model=on: the leaf is an ordinary one, no signature. */
static void model1_off(void)
{
    uint32_t b, d;

    model_op(ULPT_MODEL_QUERY, &b, &d);
    bm_ok(b != ULPT_MODEL_SIGNATURE, "R-MODEL-1: without model=on, no signature (ebx 0x%x)", b);
}

/* R-MODEL-2: exact counts of the instructions between the markers, at CPL 3 and CPL 0. */
static void model2_exact(void)
{
    uint64_t first;

    run_user_default(seq_nops, 0);
    bm_ok(field(ULPT_MODEL_F_INSNS_USER) == 103 && field(ULPT_MODEL_F_INSNS_KERNEL) == 0,
          "R-MODEL-2: 100 nops and END at CPL 3: 103 user instructions (%lu), 0 kernel (%lu)",
          field(ULPT_MODEL_F_INSNS_USER), field(ULPT_MODEL_F_INSNS_KERNEL));
    run_user_default(seq_loop, 0);
    first = field(ULPT_MODEL_F_INSNS_USER);
    bm_ok(first == 2004, "R-MODEL-2: a 1000-turn loop: 2004 instructions (%lu)", first);
    run_user_default(seq_loop, 0);
    bm_ok(field(ULPT_MODEL_F_INSNS_USER) == first, "R-MODEL-2: the same count again");
    seq_nops(0);
    bm_ok(field(ULPT_MODEL_F_INSNS_KERNEL) == 103 && field(ULPT_MODEL_F_INSNS_USER) == 0,
          "R-MODEL-2: the same at CPL 0: 103 kernel instructions (%lu)",
          field(ULPT_MODEL_F_INSNS_KERNEL));
    bm_ok(field(ULPT_MODEL_F_CYCLES) == P_CPI * 103,
          "R-MODEL-2: cycles = CPI x instructions (%lu)", field(ULPT_MODEL_F_CYCLES));
}

/* R-MODEL-3: an instruction that faults is not counted, nor what follows it in its block. */
static void model3_refund(void)
{
    uint64_t *pte = pte_of(np), saved = *pte;
    uint64_t v;

    *pte &= ~1ull;
    invlpg(np);
    v = run_user_default(seq_fault, np);
    end();
    *pte = saved;
    invlpg(np);
    bm_ok(v == 14 && field(ULPT_MODEL_F_INSNS_USER) == 10,
          "R-MODEL-3: #PF after 10 nops: 10 user instructions (%lu), vector %lu",
          field(ULPT_MODEL_F_INSNS_USER), v);
    bm_ok(field(ULPT_MODEL_F_KERNEL_ENTRIES) == 1,
          "R-MODEL-3: the #PF is one kernel entry from CPL 3 (%lu)",
          field(ULPT_MODEL_F_KERNEL_ENTRIES));
}

/* R-MODEL-3: an interrupt taken at CPL 3 is a kernel entry (a self-IPI with IF set). */
static void seq_irq(void *arg)
{
    (void)arg;
    *LAPIC_ICR = LAPIC_SELF_IPI;
    for (volatile int i = 0; i < 1000; i++)
        ;
}

static void model3_interrupt(void)
{
    uint64_t before = bm_irq.count;

    lapic_enable();
    user_rflags = 0x202;
    open_region();
    run_user_default(seq_irq, 0);
    end();
    user_rflags = 0x2;
    bm_ok(bm_irq.count == before + 1 && field(ULPT_MODEL_F_KERNEL_ENTRIES) == 2,
          "R-MODEL-3: an interrupt at CPL 3 and the return by int $0x80: 2 kernel entries (%lu)",
          field(ULPT_MODEL_F_KERNEL_ENTRIES));
}

/* R-MODEL-4: the events of a region and their charges. */
static void model4_events(void)
{
    uint64_t insns, want;

    ulpt_clear_all();
    ulpt_enable((uint64_t)ulpt_entry);
    ulpt_kset((uint64_t)tp, ULPT_NW, 0);
    handled = 0;
    open_region();
    run_user_default(seq_deliveries, tp);
    run_user_default(seq_view_store, tp + PAGE);
    run_user_default(seq_syscall, 0);
    end();
    ulpt_disable();
    bm_ok(handled == 4 && field(ULPT_MODEL_F_DELIVERIES) == 4 && field(ULPT_MODEL_F_RETURNS) == 4 &&
          field(ULPT_MODEL_F_RETURNS_PERMIT) == 4,
          "R-MODEL-4: 4 deliveries, 4 UIRETs with PERMIT (%lu, %lu, %lu)",
          field(ULPT_MODEL_F_DELIVERIES), field(ULPT_MODEL_F_RETURNS),
          field(ULPT_MODEL_F_RETURNS_PERMIT));
    bm_ok(field(ULPT_MODEL_F_VIEW_STORES) == 1, "R-MODEL-4: 1 view store (%lu)",
          field(ULPT_MODEL_F_VIEW_STORES));
    /* Each run_user ends in a trap or the return vector: 3 kernel entries, int $0x80 one. */
    bm_ok(field(ULPT_MODEL_F_KERNEL_ENTRIES) == 3, "R-MODEL-4: 3 kernel entries (%lu)",
          field(ULPT_MODEL_F_KERNEL_ENTRIES));
    insns = field(ULPT_MODEL_F_INSNS_USER) + field(ULPT_MODEL_F_INSNS_KERNEL);
    want = P_CPI * insns + 4 * (P_DELIVER + P_UIRET_PERMIT) + P_VIEW_STORE + 3 * P_KENTRY;
    bm_ok(field(ULPT_MODEL_F_CYCLES) == want,
          "R-MODEL-4: cycles = CPI x instructions + the charges (%lu, want %lu)",
          field(ULPT_MODEL_F_CYCLES), want);
}

/* R-MODEL-5: the default parameters (cpu.sh runs this test alone, with model=on only). */
static void model5_defaults(void)
{
    uint64_t insns, want;

    ulpt_clear_all();
    ulpt_enable((uint64_t)ulpt_entry);
    ulpt_kset((uint64_t)tp, ULPT_NW, 0);
    ulpt_kset((uint64_t)tp + 2 * PAGE, ULPT_NW, 0);
    ulpt_kset((uint64_t)tp + 3 * PAGE, ULPT_NW, 0);
    open_region();
    run_user_default(seq_deliveries, tp);
    run_user_default(seq_view_store, tp + PAGE);
    /* A plain UIRET (the handler clears the rights: retry), then an escalation (#PF). */
    retry = 1;
    run_user_default(seq_deliveries, tp + 2 * PAGE);
    retry = 0;
    wrmsr(MSR_ULPT_HANDLER, 0);
    run_user_default(seq_deliveries, tp + 3 * PAGE);
    end();
    ulpt_disable();
    bm_ok(field(ULPT_MODEL_F_RETURNS) == 5 && field(ULPT_MODEL_F_RETURNS_PERMIT) == 4 &&
          field(ULPT_MODEL_F_ESCALATIONS) == 1 && field(ULPT_MODEL_F_VIEW_STORES) == 2,
          "R-MODEL-5: 5 UIRETs (1 plain), 1 escalation, 2 view stores (%lu, %lu, %lu, %lu)",
          field(ULPT_MODEL_F_RETURNS), field(ULPT_MODEL_F_RETURNS_PERMIT),
          field(ULPT_MODEL_F_ESCALATIONS), field(ULPT_MODEL_F_VIEW_STORES));
    insns = field(ULPT_MODEL_F_INSNS_USER);
    /* deliver, UIRET, UIRET with PERMIT, view store, escalation (0), kernel entries:
     * 3 returns by int $0x80 and the escalation's #PF. */
    want = insns + 5 * 230 + 90 + 4 * 90 + 2 * 100 + 0 + 4 * 230;
    bm_ok(field(ULPT_MODEL_F_INSNS_KERNEL) > 0 && field(ULPT_MODEL_F_CYCLES) == want,
          "R-MODEL-5: defaults: CPI 1, the kernel's instructions left out (%lu counted), deliver "
          "230, UIRET 90, with PERMIT 90, view store 100, escalation 0, kernel entry 230 "
          "(%lu, want %lu)",
          field(ULPT_MODEL_F_INSNS_KERNEL), field(ULPT_MODEL_F_CYCLES), want);
}

/* 10 stores, each with a BEGIN before and an END after: the same instructions whatever the
 * rights of the page. */
static void seq_stores(void *arg)
{
    asm volatile(BEGIN ".rept 10; movq $1, (%0); .endr\n" END :: "D"(arg) : CLOBBERS);
}

static uint64_t stores_cycles(uint64_t page, unsigned thresh)
{
    for (unsigned i = 0; i < sizeof(logbuf); i++)
        logbuf[i] = 0;
    ulpt_clear_all();
    ulpt_enable((uint64_t)ulpt_entry);
    wrmsr(MSR_ULPT_LOG_BASE, (uint64_t)logbuf);
    wrmsr(MSR_ULPT_LOG_CTL, 4 | (uint64_t)thresh << ULPT_LOG_CTL_THRESH_SHIFT);
    ulpt_kset((uint64_t)tp, page, 0);
    run_user_default(seq_stores, tp);
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    ulpt_disable();
    return field(ULPT_MODEL_F_CYCLES);
}

/* R-MODEL-4: each appended record costs log-record; a log event is a delivery. */
static void model4_log(void)
{
    uint64_t plain = stores_cycles(0, 0), logged = stores_cycles(ULPT_LOG | ULPT_NW, 0);

    bm_ok(field(ULPT_MODEL_F_LOG_RECORDS) == 10 && field(ULPT_MODEL_F_LOG_EVENTS) == 0 &&
          field(ULPT_MODEL_F_DELIVERIES) == 0 && logged - plain == 10 * P_LOG_RECORD,
          "R-MODEL-4: 10 logged stores: 10 records, no delivery, %d cycles each (%lu - %lu)",
          P_LOG_RECORD, logged, plain);
    logged = stores_cycles(ULPT_LOG | ULPT_NW, 4);
    bm_ok(field(ULPT_MODEL_F_LOG_RECORDS) == 10 && field(ULPT_MODEL_F_LOG_EVENTS) == 2 &&
          field(ULPT_MODEL_F_DELIVERIES) == 2 && field(ULPT_MODEL_F_RETURNS) == 2,
          "R-MODEL-4: with a threshold of 4: 2 log events, counted as deliveries (%lu, %lu)",
          field(ULPT_MODEL_F_LOG_EVENTS), field(ULPT_MODEL_F_DELIVERIES));
}

/* 10 stores to the open bytes of a write-denied line: each reads the line's bounds once. */
static uint8_t bnd[ULPT_BOUNDS_SIZE] __attribute__((aligned(64)));
static uint64_t bounded_cycles(uint64_t lines)
{
    bnd[0] = 0;
    bnd[1] = 128;                           /* line 0: every byte open */
    ulpt_clear_all();
    ulpt_enable((uint64_t)ulpt_entry);
    ulpt_kset((uint64_t)tp, lines ? ULPT_BOUNDS_FIELD((uint64_t)bnd) : 0, lines);
    run_user_default(seq_stores, tp);
    ulpt_disable();
    return field(ULPT_MODEL_F_CYCLES);
}

/* R-MODEL-4: each line's bounds read costs `bounds` (field 13); none without a denied line. */
static void model4_bounds(void)
{
    uint64_t plain = bounded_cycles(0), reads0 = field(ULPT_MODEL_F_BOUNDS_READS);
    uint64_t bounded = bounded_cycles(ULPT_LINE_NW(0));

    bm_ok(reads0 == 0 && field(ULPT_MODEL_F_BOUNDS_READS) == 10 &&
          field(ULPT_MODEL_F_DELIVERIES) == 0 && bounded - plain == 10 * P_BOUNDS,
          "R-MODEL-4: 10 stores to open bytes of a denied line: 10 bounds reads, no delivery, "
          "%d cycles each (%lu - %lu)", P_BOUNDS, bounded, plain);
}

/* R-MODEL-5: a record's default charge. */
static void model5_log(void)
{
    uint64_t plain = stores_cycles(0, 0), logged = stores_cycles(ULPT_LOG | ULPT_NW, 0);

    bm_ok(field(ULPT_MODEL_F_LOG_RECORDS) == 10 && logged - plain == 10 * 8,
          "R-MODEL-5: log-record 8 by default (%lu - %lu)", logged, plain);
}

/* R-MODEL-5: a bounds read's default charge. */
static void model5_bounds(void)
{
    uint64_t plain = bounded_cycles(0), bounded = bounded_cycles(ULPT_LINE_NW(0));

    bm_ok(field(ULPT_MODEL_F_BOUNDS_READS) == 10 && bounded - plain == 10 * 2,
          "R-MODEL-5: bounds 2 by default (%lu - %lu)", bounded, plain);
}

static const struct test_case model_tests[] = {
    { "R-MODEL-1:query", model1_query, 6 },
    { "R-MODEL-2", model2_exact, 5 },
    { "R-MODEL-3", model3_refund, 2 },
    { "R-MODEL-3:interrupt", model3_interrupt, 1 },
    { "R-MODEL-4", model4_events, 4 },
    { "R-MODEL-4:log", model4_log, 2 },
    { "R-MODEL-4:bounds", model4_bounds, 1 },
    { "R-MODEL-5", model5_defaults, 2 },
    { "R-MODEL-5:log", model5_log, 1 },
    { "R-MODEL-5:bounds", model5_bounds, 1 },
    { "R-MODEL-1:off", model1_off, 1 },
};

void tests(void)
{
    bm_run(model_tests, BM_NTESTS(model_tests));
}
