/*
 * ULPT CPU tests without a kernel: one function per rule of docs/spec.md (R-...), or per topic
 * of a rule ("R-DEL-1:frame"), listed in ulpt_tests[] at the end and run by bm_run() (bm.c),
 * each from a fresh table. On a CPU without ULPT (-cpu max) only the enumeration rules of
 * absent_tests[] run. One test alone: -append NAME; the names: -append list.
 */
#include <cpuid.h>
#include "bm.h"

#define PF_P 1u
#define PF_W 2u
#define PF_U 4u
#define PF_I 16u

static uint8_t tp[8][PAGE] __attribute__((aligned(4096)));    /* test pages */

/* --- the user-mode handler: logs frames, then does what the test asks ----------------- */
enum { ACT_PERMIT, ACT_FIX, ACT_SKIP, ACT_FAULT, ACT_BADRIP, ACT_SETFLAGS,
       ACT_STEP,        /* violation: PERMIT | STEP and hflags into rflags; after event: nothing */
       ACT_STEP_FIX,    /* violation: clear the entry, STEP alone */
       ACT_STEP_IRQ,    /* as ACT_STEP, and make the test interrupt pending (IF is 0) */
       ACT_STEP_CLRTF,  /* as ACT_STEP; after event: clear TF in the frame */
       ACT_STEP_TO,     /* violation: STEP alone, rip = hskip (another instruction) */
       ACT_W_STEP_ONCE, /* the first write violation: STEP alone; everything else: PERMIT */
       ACT_DRAIN,       /* LOG and FULL: consume every record of the test log; else PERMIT */
};
struct hlog { uint64_t w[8], frame, seen; };
static volatile struct hlog hlog[16];
static volatile int hcount, haction;
static volatile uint64_t hskip, hfault_addr, hflags;
static volatile uint64_t *volatile hwatch;  /* memory the handler records (what is stored yet) */

/* The test access log (section 6.2): up to 128 records, the handler's consumed count. */
static uint8_t logbuf[PAGE] __attribute__((aligned(4096)));
static volatile unsigned log_nslots, log_drained;
static volatile uint64_t *rec(unsigned i) { return (volatile uint64_t *)(logbuf + ULPT_REC_SIZE * i); }
static void log_drain(void)
{
    for (unsigned i = 0; i < log_nslots; i++) {
        if (rec(i)[ULPT_REC_INFO] & ULPT_REC_V) {
            rec(i)[ULPT_REC_INFO] = 0;
            log_drained++;
        }
    }
}

void ulpt_handler(uint64_t *f)
{
    if (hcount < 16) {
        for (int i = 0; i < 8; i++)
            hlog[hcount].w[i] = f[i];
        hlog[hcount].frame = (uint64_t)f;
        hlog[hcount].seen = hwatch ? *hwatch : 0;
    }
    hcount++;
    switch (haction) {
    case ACT_PERMIT:
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        break;
    case ACT_FIX: {                      /* one CPL 3 store per word through the view */
        volatile uint64_t *e = ulpt_view_entry(f[ULPT_FRAME_ADDR]);
        e[0] = 0;
        e[1] = 0;
        break;
    }
    case ACT_SKIP:
        f[ULPT_FRAME_RIP] += hskip;
        break;
    case ACT_FAULT:
        (void)*(volatile uint8_t *)hfault_addr;
        break;
    case ACT_BADRIP:
        f[ULPT_FRAME_RIP] = 0x0000800000000000ull;
        break;
    case ACT_SETFLAGS:
        f[ULPT_FRAME_RFLAGS] |= hflags;
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        break;
    case ACT_STEP:
    case ACT_STEP_IRQ:
    case ACT_STEP_CLRTF:
        if (ULPT_INFO_REASON(f[ULPT_FRAME_INFO]) == ULPT_REASON_AFTER) {
            if (haction == ACT_STEP_CLRTF)
                f[ULPT_FRAME_RFLAGS] &= ~0x100ull;
            break;
        }
        if (haction == ACT_STEP_IRQ)
            *LAPIC_ICR = LAPIC_SELF_IPI;
        f[ULPT_FRAME_RFLAGS] |= hflags;
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT | ULPT_INFO_STEP;
        break;
    case ACT_STEP_FIX:
    case ACT_STEP_TO:
        if (ULPT_INFO_REASON(f[ULPT_FRAME_INFO]) == ULPT_REASON_AFTER)
            break;
        if (haction == ACT_STEP_TO) {
            f[ULPT_FRAME_RIP] = hskip;
        } else {
            volatile uint64_t *e = ulpt_view_entry(f[ULPT_FRAME_ADDR]);
            e[0] = 0;
            e[1] = 0;
        }
        f[ULPT_FRAME_INFO] |= ULPT_INFO_STEP;
        break;
    case ACT_DRAIN:
        if (ULPT_INFO_REASON(f[ULPT_FRAME_INFO]) == ULPT_REASON_LOG ||
            ULPT_INFO_REASON(f[ULPT_FRAME_INFO]) == ULPT_REASON_FULL)
            log_drain();
        else
            f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        break;
    case ACT_W_STEP_ONCE:
        if (ULPT_INFO_KIND(f[ULPT_FRAME_INFO]) == ULPT_KIND_W && !hskip) {
            hskip = 1;
            f[ULPT_FRAME_INFO] |= ULPT_INFO_STEP;
        } else {
            f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        }
        break;
    }
}

static void hreset(int action)
{
    hcount = 0;
    haction = action;
    hflags = 0;
}

/* --- user-mode bodies: one labelled instruction each, so tests know the faulting RIP ---- */
#define USER_INSN(name, insn, ...)                                              \
    extern char name##_insn[];                                                  \
    static void __attribute__((noinline)) name(void *p)                         \
    {                                                                           \
        asm volatile(".globl " #name "_insn\n" #name "_insn: " insn             \
                     :: "r"(p), ##__VA_ARGS__ : "memory", "cc");                \
    }
USER_INSN(u_write8, "movq $0x55, (%0)")
/* The same write, then a labelled next instruction (where a trap after it reports). */
USER_INSN(u_write8_next, "movq $0x55, (%0)\n.globl u_write8_next_after\nu_write8_next_after: nop")
extern char u_write8_next_after[];
USER_INSN(u_read8_next, "movq (%0), %%rax\n.globl u_read8_next_after\nu_read8_next_after: nop", "a"(0))
extern char u_read8_next_after[];
USER_INSN(u_add_next, "addq $1, (%0)\n.globl u_add_next_after\nu_add_next_after: nop")
extern char u_add_next_after[];
/* Two writes to the line at p and the next one, each a labelled instruction. */
USER_INSN(u_two_writes, "movq $1, (%0)\n.globl u_two_writes_2\nu_two_writes_2: movq $2, 128(%0)\n"
                        ".globl u_two_writes_end\nu_two_writes_end: nop")
extern char u_two_writes_2[], u_two_writes_end[];
/* RSP loaded from memory: the next frame goes where *p points. */
USER_INSN(u_load_rsp, "movq (%0), %%rsp\n.globl u_load_rsp_after\nu_load_rsp_after: nop")
extern char u_load_rsp_after[];
/* TF set by POPF: the write after it runs single-stepped (as under a debugger). */
USER_INSN(u_tf_write, "pushfq\norq $0x100, (%%rsp)\npopfq\n.globl u_tf_write_store\nu_tf_write_store: movq $0x55, (%0)\n"
                      ".globl u_tf_write_next\nu_tf_write_next: nop")
extern char u_tf_write_store[], u_tf_write_next[];
/* An instruction that raises #UD, for a handler to send the permit to. */
asm(".text\n.globl u_ud2_insn\nu_ud2_insn: ud2\n");
extern char u_ud2_insn[];
USER_INSN(u_read8, "movq (%0), %%rax", "a"(0))
USER_INSN(u_write1, "movb $0x66, (%0)")
USER_INSN(u_add, "addq $1, (%0)")
USER_INSN(u_lock_add, "lock addq $1, (%0)")
USER_INSN(u_lock_neg, "lock negl (%0)")
USER_INSN(u_cmpxchg, "movq (%0), %%rax; lock cmpxchgq %%rax, (%0)", "a"(0))

static void u_call(void *p) { ((void (*)(void))p)(); }
struct call_args { void *code, *arg; uint64_t arg2; };
static void u_call_arg(void *p)
{
    struct call_args *a = p;
    ((void (*)(void *, uint64_t))a->code)(a->arg, a->arg2);
}

struct rep_args { void *dst, *src; uint64_t n; };
extern char u_stos_insn[], u_movs_insn[];
static void __attribute__((noinline)) u_stos(void *p)
{
    struct rep_args *a = p;
    asm volatile("cld\n.globl u_stos_insn\nu_stos_insn: rep stosb"
                 : "+D"(a->dst), "+c"(a->n) : "a"(0x77) : "memory");
}
static void __attribute__((noinline)) u_movs(void *p)
{
    struct rep_args *a = p;
    asm volatile("cld\n.globl u_movs_insn\nu_movs_insn: rep movsq"
                 : "+D"(a->dst), "+S"(a->src), "+c"(a->n) :: "memory");
}

/* A loop of `n` writes by the same instruction. */
struct loop_args { uint64_t *p; int n; };
extern char u_loop_insn[];
static void __attribute__((noinline)) u_loop(void *v)
{
    struct loop_args *a = v;
    for (int i = 0; i < a->n; i++)
        asm volatile(".globl u_loop_insn\nu_loop_insn: movq %1, (%0)" :: "r"(a->p), "r"((uint64_t)i) : "memory");
}

/* Store through the view, then the protected access: the single-store rule. */
struct view_args { volatile uint64_t *entry; uint64_t page, lines; uint64_t *target; };
static void u_view_then_write(void *v)
{
    struct view_args *a = v;
    a->entry[1] = a->lines;
    a->entry[0] = a->page;
    *(volatile uint64_t *)a->target = 0x1234;
}

/* The same, then a read. */
static void u_view_then_read(void *v)
{
    struct view_args *a = v;
    a->entry[1] = a->lines;
    a->entry[0] = a->page;
    (void)*(volatile uint64_t *)a->target;
}

/* Self-modifying code: run `mov $1, %eax; ret` at code, patch its immediate, run it again. */
struct smc_args { uint8_t *code; uint64_t first, second; };
static void u_smc(void *v)
{
    struct smc_args *a = v;
    a->first = ((uint64_t (*)(void))a->code)() & 0xff;
    ((volatile uint8_t *)a->code)[1] = 7;
    a->second = ((uint64_t (*)(void))a->code)() & 0xff;
}

/* Store through the view, then call the page (its code was translated before). */
static void u_view_then_call(void *v)
{
    struct view_args *a = v;
    a->entry[0] = a->page;
    u_call(tp[2]);
}

/* Push onto a stack whose line is denied. */
extern char u_push_insn[];
static void __attribute__((noinline)) u_push(void *p)
{
    asm volatile("mov %%rsp, %%rbx\n mov %0, %%rsp\n.globl u_push_insn\nu_push_insn: pushq $7\n"
                 "mov %%rbx, %%rsp" :: "r"(p) : "rbx", "memory");
}

/* Red zone: a canary below RSP must survive a delivery. */
static volatile uint64_t redzone_seen;
extern char u_redzone_insn[];
static void __attribute__((noinline)) u_redzone(void *p)
{
    asm volatile("movq $0x1eedface, -64(%%rsp)\n.globl u_redzone_insn\nu_redzone_insn: movq $1, (%1)\n"
                 "movq -64(%%rsp), %0" : "=r"(redzone_seen) : "r"(p) : "memory");
}

/* Flags travel through UIRET: returns RFLAGS after the access. */
static volatile uint64_t flags_after;
extern char u_flags_insn[];
static void __attribute__((noinline)) u_flags(void *p)
{
    uint64_t f;
    asm volatile("stc\n.globl u_flags_insn\nu_flags_insn: movq $1, (%1)\npushfq\npopq %0\ncld"
                 : "=r"(f) : "r"(p) : "memory", "cc");
    flags_after = f;
}

static void u_uiret(void *p) { (void)p; asm volatile(".byte 0xf3, 0x0f, 0x01, 0xec"); }

/* After UIRET, flags come from the instructions that follow, not from the frame. */
static volatile uint64_t flags_exact;
static void __attribute__((noinline)) u_flags_exact(void *p)
{
    uint64_t f;
    asm volatile("movq $1, (%1)\ncld\ntest %%rsp, %%rsp\npushfq\npopq %0"
                 : "=r"(f) : "r"(p) : "memory", "cc");
    flags_exact = f;
}

/* Accesses QEMU makes in parts, or splits at a page boundary. */
USER_INSN(u_write4, "movl $0x11223344, (%0)")
USER_INSN(u_movdqu_st, "movdqu %%xmm0, (%0)")
USER_INSN(u_movdqu_ld, "movdqu (%0), %%xmm1")
USER_INSN(u_vmovdqu_st, "vmovdqu %%ymm0, (%0)")
USER_INSN(u_fstpt, "fstpt (%0)")


/* --- helpers --------------------------------------------------------------------------- */
static uint64_t va(void *p) { return (uint64_t)p; }

static int escalated(uint64_t vec, unsigned kind, uint64_t addr)
{
    unsigned want = PF_P | PF_U | ULPT_PF_ERROR_BIT |
                    (kind == ULPT_KIND_W ? PF_W : 0) | (kind == ULPT_KIND_X ? PF_I : 0);
    return vec == 14 && last_trap.error == want && last_trap.cr2 == addr;
}

/* A frame describes the whole access: start, size, first denied byte; no part is done. */
static int frame_is(volatile struct hlog *h, unsigned kind, uint64_t addr, uint64_t start, unsigned size)
{
    return ULPT_INFO_KIND(h->w[ULPT_FRAME_INFO]) == kind && h->w[ULPT_FRAME_ADDR] == addr &&
           h->w[ULPT_FRAME_START] == start && ULPT_INFO_SIZE(h->w[ULPT_FRAME_INFO]) == size;
}

#define FRAME_FMT "addr %lx start %lx size %u"
#define FRAME_ARGS(h) (h)->w[ULPT_FRAME_ADDR], (h)->w[ULPT_FRAME_START], ULPT_INFO_SIZE((h)->w[ULPT_FRAME_INFO])


/* Every test starts from here: an empty table, ULPT enabled with this handler (0: none, so
   violations escalate), not in a handler, the user-mode handler logging and permitting. */
static void fresh(uint64_t handler)
{
    ulpt_clear_all();
    ulpt_enable(handler);
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    wrmsr(MSR_ULPT_LOG_CTL, 0);
    wrmsr(MSR_ULPT_LOG_INDEX, 0);
    hreset(ACT_PERMIT);
    hwatch = 0;
}

/* SSE, AVX and x87 need the OS bits: CR4.OSFXSR, CR4.OSXSAVE and XCR0 = x87|SSE|AVX.
   Returns whether the CPU has AVX. */
static int enable_fpu(void)
{
    unsigned a, b, c, d;
    uint64_t cr4;

    __cpuid(1, a, b, c, d);
    int avx = (c >> 28) & 1;
    asm volatile("mov %%cr4, %0" : "=r"(cr4));
    asm volatile("mov %0, %%cr4" :: "r"(cr4 | (1ull << 9) | (avx ? 1ull << 18 : 0)));
    if (avx)
        asm volatile("xsetbv" :: "c"(0), "a"(7), "d"(0));
    asm volatile("fninit");
    return avx;
}

/* === Section 2: enumeration ============================================================ */

/* On a CPU without ULPT (-cpu max). */
static void enum1_absent(void)
{
    unsigned a, b, c, d;

    __cpuid_count(7, 0, a, b, c, d);
    bm_ok(!((d >> ULPT_CPUID_EDX_BIT) & 1), "R-ENUM-1: no ULPT CPUID bit on this model");
}

static void enum2_absent(void)
{
    uint64_t v;

    bm_ok(try_rdmsr(MSR_ULPT_CTL, &v) == -1 && last_trap.vector == 13, "R-ENUM-2: RDMSR ULPT_CTL #GP");
    bm_ok(try_wrmsr(MSR_ULPT_CTL, 1) == -1 && last_trap.vector == 13, "R-ENUM-2: WRMSR ULPT_CTL #GP");
    bm_ok(run_user_default(u_uiret, 0) == 6, "R-ENUM-2: UIRET #UD");
}

static void enum1_present(void)
{
    unsigned a, b, c, d;

    __cpuid_count(7, 0, a, b, c, d);
    bm_ok((d >> ULPT_CPUID_EDX_BIT) & 1, "R-ENUM-1: CPUID.7.0:EDX[6] set");
}

/* === Section 10: reset (first: every other test writes the MSRs) ======================= */

static void state1_reset(void)
{
    uint64_t v;
    int ok = 1;

    for (uint32_t m = MSR_ULPT_FIRST; m <= MSR_ULPT_LAST; m++)
        ok &= try_rdmsr(m, &v) == 0 && v == 0;
    bm_ok(ok, "R-STATE-1: all ULPT MSRs read 0 after reset");
}

/* === Section 3: MSRs =================================================================== */

static void msr1_readback(void)
{
    uint64_t v;
    static const struct { uint32_t msr; uint64_t good, bad; } mt[] = {
        { MSR_ULPT_CTL, 1, 2 },
        { MSR_ULPT_ROOT, 0x123000, 0x123008 },
        { MSR_ULPT_VIEW, VIEW_BASE, VIEW_BASE + 8 },
        { MSR_ULPT_HANDLER, 0x401000, 0x0000800000000000ull },
        { MSR_ULPT_STKADJ, 128, 0x10000 },
        { MSR_ULPT_STATUS, 1, 2 },
        { MSR_ULPT_LOG_BASE, 0x401020, 0x401010 },
        { MSR_ULPT_LOG_CTL, 3 | 8ull << 32, 3 | 9ull << 32 },
        { MSR_ULPT_LOG_INDEX, ~0ull, 0 },
    };
    for (unsigned i = 0; i < 9; i++) {
        if (mt[i].msr == MSR_ULPT_LOG_INDEX) {       /* any value: no #GP */
            bm_ok(try_wrmsr(mt[i].msr, mt[i].good) == 0 && try_rdmsr(mt[i].msr, &v) == 0 &&
                  v == mt[i].good, "R-MSR-1: LOG_INDEX reads back any value");
            try_wrmsr(mt[i].msr, 0);
            continue;
        }
        bm_ok(try_wrmsr(mt[i].msr, mt[i].good) == 0 && try_rdmsr(mt[i].msr, &v) == 0 && v == mt[i].good &&
              try_wrmsr(mt[i].msr, mt[i].bad) == -1 && last_trap.vector == 13 &&
              try_rdmsr(mt[i].msr, &v) == 0 && v == mt[i].good,
              "R-MSR-1/2: MSR %x reads back %lx; %lx is #GP and leaves it", mt[i].msr, mt[i].good, mt[i].bad);
        try_wrmsr(mt[i].msr, 0);
    }
}

static void msr2_limits(void)
{
    bm_ok(try_wrmsr(MSR_ULPT_ROOT, 1ull << 52) == -1, "R-MSR-2: ROOT above MAXPHYADDR #GP");
    bm_ok(try_wrmsr(MSR_ULPT_VIEW, (1ull << 47) - (1ull << 38)) == -1, "R-MSR-2: VIEW + 2^39 beyond 2^47 #GP");
    bm_ok(try_wrmsr(MSR_ULPT_LOG_BASE, 0x0000800000000000ull) == -1, "R-MSR-2: a non-canonical LOG_BASE #GP");
    bm_ok(try_wrmsr(MSR_ULPT_LOG_CTL, 25) == -1 && try_wrmsr(MSR_ULPT_LOG_CTL, 1ull << 6) == -1 &&
          try_wrmsr(MSR_ULPT_LOG_CTL, 1ull << 31) == -1 &&
          try_wrmsr(MSR_ULPT_LOG_CTL, 24 | (1ull << 24) << 32) == 0 && try_wrmsr(MSR_ULPT_LOG_CTL, 0) == 0,
          "R-MSR-2: LOG_CTL SIZE above 24 and reserved bits #GP; THRESH = 2^SIZE is fine");
    uint64_t v = 0;
    bm_ok(try_wrmsr(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT | 1) == -1 &&
          try_wrmsr(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT | 1ull << 32) == -1 &&
          try_wrmsr(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT) == 0 && try_rdmsr(MSR_ULPT_LOG_CTL, &v) == 0 &&
          v == ULPT_LOG_CTL_COUNT && try_wrmsr(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT | 1ull << 6) == -1 &&
          try_wrmsr(MSR_ULPT_LOG_CTL, 0) == 0,
          "R-MSR-2: LOG_CTL COUNT with SIZE or THRESH not 0 #GP; COUNT alone reads back");
}

/* ROOT and CTL writes apply at once; with CTL.EN=0 nothing is checked. */
static void msr3_apply(void)
{
    uint64_t r;

    fresh(0);
    wrmsr(MSR_ULPT_ROOT, 0xf000000000ull);            /* root outside RAM: everything denied */
    r = run_user_default(u_write8, tp[0]);
    wrmsr(MSR_ULPT_ROOT, ulpt_root_pa());
    bm_ok(r == 14 && run_user_default(u_write8, tp[0]) == 0x80, "R-MSR-3: writing ROOT back applies at once");

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), ULPT_NW, 0);
    wrmsr(MSR_ULPT_CTL, 0);
    bm_ok(run_user_default(u_write8, tp[3]) == 0x80, "R-ACC-1: with CTL.EN=0 nothing is checked");
    wrmsr(MSR_ULPT_CTL, 1);
    hreset(ACT_FIX);
    r = run_user_default(u_write8, tp[3]);
    bm_ok(r == 0x80 && hcount == 1, "R-MSR-3: CTL.EN=1 applies at once");
}

/* === Section 4.3: leaf entries ========================================================== */

/* Page rights: NR, NW, NX, each for its kind only. */
static void tbl1_page(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[1]), ULPT_NR, 0);
    r = run_user_default(u_read8, tp[1] + 16);
    bm_ok(escalated(r, ULPT_KIND_R, va(tp[1]) + 16), "R-TBL-1: NR page denies reads (#PF W=0, ULPT bit)");
    bm_ok(last_trap.rip == (uint64_t)u_read8_insn, "R-ESC-1: #PF reported at the faulting instruction");
    bm_ok(run_user_default(u_write8, tp[1]) == 0x80, "R-TBL-1: NR page allows writes");

    tp[2][0] = 0xc3;                                   /* ret */
    bm_ok(run_user_default(u_call, tp[2]) == 0x80, "code on a page without NX runs");
    ulpt_kset(va(tp[2]), ULPT_NX, 0);
    r = run_user_default(u_call, tp[2]);
    bm_ok(escalated(r, ULPT_KIND_X, va(tp[2])), "R-TBL-1: NX denies instruction fetch (#PF I/D=1)");
    ulpt_kset(va(tp[2]), ULPT_NX, 0);
    bm_ok(run_user_default(u_write1, tp[2] + 1) == 0x80, "NX alone allows data writes");
}

/* Line rights: only the denied line. */
static void tbl1_lines(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(3));
    bm_ok(run_user_default(u_write8, tp[3] + 2 * 128) == 0x80, "R-TBL-1: line 2 writable");
    r = run_user_default(u_write8, tp[3] + 3 * 128 + 40);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[3]) + 3 * 128 + 40), "R-TBL-1: line 3 write denied, exact CR2");
    bm_ok(run_user_default(u_write8, tp[3] + 4 * 128) == 0x80 && run_user_default(u_read8, tp[3] + 3 * 128) == 0x80,
          "R-TBL-1: line 4 writable, line 3 readable");
}

/*
 * Pages whose lines deny one kind only keep the other kind on QEMU's fast path (the TLB
 * comparator of the denied kind alone is invalid): the rights stay exact for both kinds
 * (here), a view store denying the fast kind applies to the next access (coh1_fast_path),
 * and code on such pages (self-modifying, NX) behaves as on any other page (acc1_fast_path_code).
 */
static void tbl1_fast_path(void)
{
    uint64_t r;
    uint8_t *w = tp[4], *rd = tp[5];

    fresh(0);
    ulpt_kset(va(w), 0, ULPT_LINE_NW(3));
    bm_ok(run_user_default(u_read8, w + 384) == 0x80 && run_user_default(u_write8, w) == 0x80,
          "fast path: on a page whose lines deny writes only, a load from the denied line and a store to another line go through");
    r = run_user_default(u_write8, w + 392);
    bm_ok(escalated(r, ULPT_KIND_W, va(w) + 392), "fast path: a store to the write-denied line still faults (vec %lu cr2 %lx)",
          r, last_trap.cr2);
    ulpt_kset(va(rd), 0, ULPT_LINE_NR(3));
    bm_ok(run_user_default(u_write8, rd + 384) == 0x80 && run_user_default(u_read8, rd) == 0x80,
          "fast path: on a page whose lines deny reads only, a store to the denied line and a load from another line go through");
    r = run_user_default(u_read8, rd + 400);
    bm_ok(escalated(r, ULPT_KIND_R, va(rd) + 400), "fast path: a load from the read-denied line still faults (vec %lu cr2 %lx)",
          r, last_trap.cr2);
}

/* A cleared entry restores the fast path: the entry installed afterwards is ordinary,
   so a burst of accesses is fast; here we check the rights, the speed is in the bench. */
static void tbl1_empty_entry(void)
{
    struct loop_args la = { (uint64_t *)tp[3], 100 };

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    run_user_default(u_read8, tp[3]);                  /* the page's TLB entry has line rights */
    ulpt_kset(va(tp[3]), 0, 0);
    hreset(ACT_PERMIT);
    bm_ok(run_user_default(u_loop, &la) == 0x80 && hcount == 0, "R-TBL-1: an empty entry never delivers");
}

/* Malformed entries and tables. */
static void tbl2_malformed(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[7]), 1ull << 3, 0);
    r = run_user_default(u_read8, tp[7]);
    bm_ok(escalated(r, ULPT_KIND_R, va(tp[7])), "R-TBL-2: reserved leaf bit: malformed, access denied");
    ulpt_kset(va(tp[7]), 0xa5ull << 56, 0);
    bm_ok(run_user_default(u_write8, tp[7]) == 0x80, "R-TBL-2: software bits 63:56 restrict nothing");

    /* Root outside RAM: everything malformed, including instruction fetch. */
    wrmsr(MSR_ULPT_ROOT, 0xf000000000ull);
    r = run_user_default(u_write8, tp[0]);
    bm_ok(r == 14 && (last_trap.error & ULPT_PF_ERROR_BIT) && (last_trap.error & PF_I),
          "R-TBL-2: a root outside RAM denies everything, even the first fetch");
    wrmsr(MSR_ULPT_ROOT, ulpt_root_pa());
}

/*
 * QEMU's inline line check: on a page with line rights, the generated code makes an access to
 * an allowed line itself (no C helper) once the page's TLB entry is warm. Every line in turn is
 * the one allowed, the 31 others denied, for loads and stores of 1-16 bytes at both ends of the
 * line; then, with the entry still warm, the next line must be denied.
 */
struct acc_args { uint8_t *p; unsigned size; };
static void __attribute__((noinline)) u_load(void *v)
{
    struct acc_args *a = v;
    switch (a->size) {
    case 1: (void)*(volatile uint8_t *)a->p; break;
    case 2: (void)*(volatile uint16_t *)a->p; break;
    case 4: (void)*(volatile uint32_t *)a->p; break;
    case 8: (void)*(volatile uint64_t *)a->p; break;
    default: asm volatile("movdqu (%0), %%xmm1" :: "r"(a->p) : "memory"); break;
    }
}
static void __attribute__((noinline)) u_store(void *v)
{
    struct acc_args *a = v;
    switch (a->size) {
    case 1: *(volatile uint8_t *)a->p = 1; break;
    case 2: *(volatile uint16_t *)a->p = 2; break;
    case 4: *(volatile uint32_t *)a->p = 4; break;
    case 8: *(volatile uint64_t *)a->p = 8; break;
    default: asm volatile("movdqu %%xmm0, (%0)" :: "r"(a->p) : "memory"); break;
    }
}

static void tbl1_inline_lines(void)
{
    static const unsigned sizes[] = { 1, 2, 4, 8, 16 };
    uint8_t *pg = tp[6];

    enable_fpu();
    fresh(0);
    for (unsigned kind = ULPT_KIND_R; kind <= ULPT_KIND_W; kind <<= 1) {
        void (*fn)(void *) = kind == ULPT_KIND_W ? u_store : u_load;
        int allowed = 1, denied = 1;
        unsigned bad = 0;

        for (unsigned line = 0; line < ULPT_LINES_PER_PAGE; line++) {
            uint64_t lines = kind == ULPT_KIND_W ? ULPT_LINES_NW_ALL & ~ULPT_LINE_NW(line)
                                                 : ULPT_LINES_NR_ALL & ~ULPT_LINE_NR(line);
            ulpt_kset(va(pg), 0, lines);
            for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                for (unsigned end = 0; end < 2; end++)
                    for (int twice = 0; twice < 2; twice++) {   /* the first may fill the TLB */
                        struct acc_args a = { pg + line * 128 + (end ? 128 - sizes[i] : 0), sizes[i] };
                        if (run_user_default(fn, &a) != 0x80 && allowed) {
                            allowed = 0;
                            bad = line * 100 + sizes[i];
                        }
                    }
            unsigned next = (line + 1) % ULPT_LINES_PER_PAGE;
            struct acc_args d = { pg + next * 128 + 8, 8 };
            if (!escalated(run_user_default(fn, &d), kind, va(pg) + next * 128 + 8) && denied) {
                denied = 0;
                bad = line;
            }
        }
        bm_ok(allowed, "inline check: %ss of 1-16 bytes at both ends of the one allowed line pass, for each of the 32 lines (first failure: line*100+size %u)",
              kind == ULPT_KIND_W ? "store" : "load", bad);
        bm_ok(denied, "inline check: with the entry warm, a %s to the next line is still denied (first failure after line %u)",
              kind == ULPT_KIND_W ? "store" : "load", bad);
    }
    ulpt_kset(va(pg), 0, 0);
}

/*
 * What tests/suites/gdbstub.sh watches through QEMU's gdbstub: a store to an allowed line of a
 * page whose line 31 denies writes, with the page's entry warm (so the store would take QEMU's
 * inline line check, were the gdbstub's watchpoint not there). Alone, it only checks the store.
 */
uint8_t gdb_page[PAGE] __attribute__((aligned(4096)));
static void tbl1_gdbstub_target(void)
{
    struct acc_args warm = { gdb_page, 8 }, watched = { gdb_page + 8, 8 };

    fresh(0);
    ulpt_kset(va(gdb_page), 0, ULPT_LINE_NW(31));
    run_user_default(u_store, &warm);
    run_user_default(u_store, &warm);
    bm_ok(run_user_default(u_store, &watched) == 0x80 && *(volatile uint64_t *)(gdb_page + 8) == 8,
          "the store the gdbstub test watches (8 bytes at gdb_page+8) is made");
    ulpt_kset(va(gdb_page), 0, 0);
}

/*
 * Accesses that straddle an allowed and a denied line of a warm entry, in both directions:
 * delivered with the whole access and its first denied byte, nothing of a store made first.
 */
static void acc1_inline_straddle(void)
{
    static const unsigned sizes[] = { 2, 4, 8 };
    uint8_t *pg = tp[6];
    int into = 1, outof = 1;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(pg), 0, ULPT_LINE_NW(6) | ULPT_LINE_NR(6));
    for (unsigned kind = ULPT_KIND_R; kind <= ULPT_KIND_W; kind <<= 1) {
        void (*fn)(void *) = kind == ULPT_KIND_W ? u_store : u_load;
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            unsigned n = sizes[i];
            struct acc_args warm = { pg, 8 };
            struct acc_args a = { pg + 6 * 128 - n / 2, n };     /* line 5 into line 6 */
            run_user_default(fn, &warm);
            *(volatile uint64_t *)(pg + 6 * 128 - 8) = 0xeeee;
            hreset(ACT_PERMIT);
            hwatch = (volatile uint64_t *)(pg + 6 * 128 - 8);
            into &= run_user_default(fn, &a) == 0x80 && hcount == 1 && hlog[0].seen == 0xeeee &&
                    frame_is(&hlog[0], kind, va(pg) + 6 * 128, va(a.p), n);
            a.p = pg + 7 * 128 - n / 2;                              /* line 6 into line 7 */
            run_user_default(fn, &warm);
            hreset(ACT_PERMIT);
            outof &= run_user_default(fn, &a) == 0x80 && hcount == 1 &&
                     frame_is(&hlog[0], kind, va(a.p), va(a.p), n);
        }
    }
    bm_ok(into, "inline check: loads and stores of 2-8 bytes straddling into a denied line are delivered whole, nothing stored first");
    bm_ok(outof, "inline check: accesses straddling out of a denied line are delivered at their first byte");
    hwatch = 0;
    ulpt_kset(va(pg), 0, 0);
}

/* === Section 4.4: the view and coherence ================================================ */

static void coh1_view_store(void)
{
    uint64_t r;

    fresh(0);
    bm_ok(run_user_default(u_write8, tp[0]) == 0x80 && run_user_default(u_read8, tp[0]) == 0x80,
          "empty table: user read and write succeed");
    struct view_args vw = { ulpt_view_entry(va(tp[0])), ULPT_NW, 0, (uint64_t *)(tp[0] + 8) };
    *(volatile uint64_t *)(tp[0] + 8) = 0;
    r = run_user_default(u_view_then_write, &vw);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[0]) + 8),
          "R-COH-1: one user store through the view denies the next write (vec %lu err %lx cr2 %lx)",
          r, last_trap.error, last_trap.cr2);
    bm_ok(last_trap.rip != 0 && *(volatile uint64_t *)(tp[0] + 8) != 0x1234, "R-ESC-1: the write did not happen");
    bm_ok(run_user_default(u_read8, tp[0]) == 0x80, "R-TBL-1: NW page still allows reads");
    vw.page = 0;
    bm_ok(run_user_default(u_view_then_write, &vw) == 0x80 && *(volatile uint64_t *)(tp[0] + 8) == 0x1234,
          "R-COH-1: clearing the entry with one store allows the write again");
}

/* R-COH-1 for the kind on the fast path: warm it, then one view store denies it. */
static void coh1_fast_path(void)
{
    uint64_t r;
    uint8_t *w = tp[4], *rd = tp[5];

    fresh(0);
    ulpt_kset(va(w), 0, ULPT_LINE_NW(3));
    ulpt_kset(va(rd), 0, ULPT_LINE_NR(3));
    bm_ok(run_user_default(u_read8, w + 8) == 0x80, "fast path: loads from the write-only-denied page are warm");
    struct view_args vr = { ulpt_view_entry(va(w)), 0, ULPT_LINE_NW(3) | ULPT_LINE_NR(0), (uint64_t *)(w + 8) };
    r = run_user_default(u_view_then_read, &vr);
    bm_ok(escalated(r, ULPT_KIND_R, va(w) + 8),
          "R-COH-1 on the fast path: one view store denying reads applies to the next load (vec %lu cr2 %lx)", r, last_trap.cr2);
    bm_ok(run_user_default(u_write8, rd + 16) == 0x80, "fast path: stores to the read-only-denied page are warm");
    struct view_args vw = { ulpt_view_entry(va(rd)), 0, ULPT_LINE_NR(3) | ULPT_LINE_NW(0), (uint64_t *)(rd + 16) };
    r = run_user_default(u_view_then_write, &vw);
    bm_ok(escalated(r, ULPT_KIND_W, va(rd) + 16),
          "R-COH-1 on the fast path: one view store denying writes applies to the next store (vec %lu cr2 %lx)", r, last_trap.cr2);
}

/*
 * Change word 1 with one store, then access, all in one block (no code lookup in between):
 * first a store of the current lines (the view page's TLB entry may be cold, and a store
 * through QEMU's TLB fill drops the target's entries) and a load of the target (its entry
 * warm), then the change, which the warm entry takes in place, and the access.
 */
struct lines_args { volatile uint64_t *entry; uint64_t before, after; uint64_t *target, *warm; };
static void u_lines_then_write(void *v)
{
    struct lines_args *a = v;
    a->entry[1] = a->before;
    *(volatile uint64_t *)a->warm = 0;     /* a store: an entry filled by a load may lack write */
    a->entry[1] = a->after;
    *(volatile uint64_t *)a->target = 0x1234;
}
static void u_lines_then_read(void *v)
{
    struct lines_args *a = v;
    a->entry[1] = a->before;
    (void)*(volatile uint64_t *)a->warm;
    a->entry[1] = a->after;
    (void)*(volatile uint64_t *)a->target;
}
static void u_page_then_write(void *v)
{
    struct lines_args *a = v;
    a->entry[1] = a->before;
    *(volatile uint64_t *)a->warm = 0;
    a->entry[0] = a->after;
    *(volatile uint64_t *)a->target = 0x1234;
}

/*
 * R-COH-1 with the entries warm (the view store updates the target's TLB entry in place), for
 * each way a view store changes a page with line rights: a newly denied line, a line allowed
 * again, a kind checked for the first time, page rights over line rights, and NX over code
 * translated from such a page.
 */
static void coh1_warm_lines(void)
{
    uint8_t *pg = tp[6];
    volatile uint64_t *e = ulpt_view_entry(va(pg));
    uint64_t r, *w0 = (uint64_t *)pg;

    fresh(0);
    ulpt_kset(va(pg), 0, ULPT_LINE_NW(3));
    struct lines_args v = { e, ULPT_LINE_NW(3), ULPT_LINE_NW(3) | ULPT_LINE_NW(4), (uint64_t *)(pg + 4 * 128 + 16), w0 };
    r = run_user_default(u_lines_then_write, &v);
    bm_ok(escalated(r, ULPT_KIND_W, va(pg) + 4 * 128 + 16),
          "R-COH-1 warm: a line denied by one store is denied at the next store (vec %lu cr2 %lx)", r, last_trap.cr2);
    v = (struct lines_args){ e, ULPT_LINE_NW(3) | ULPT_LINE_NW(4), 0, (uint64_t *)(pg + 3 * 128), w0 };
    bm_ok(run_user_default(u_lines_then_write, &v) == 0x80 && *(volatile uint64_t *)(pg + 3 * 128) == 0x1234,
          "R-COH-1 warm: lines allowed by one store are allowed at the next store");
    v = (struct lines_args){ e, 0, ULPT_LINE_NR(5), (uint64_t *)(pg + 5 * 128 + 8), w0 };
    r = run_user_default(u_lines_then_read, &v);
    bm_ok(escalated(r, ULPT_KIND_R, va(pg) + 5 * 128 + 8),
          "R-COH-1 warm: the first read-denied line of a page is denied at the next load (vec %lu cr2 %lx)", r, last_trap.cr2);
    v = (struct lines_args){ e, ULPT_LINE_NR(5), ULPT_NW, (uint64_t *)(pg + 8), w0 };
    r = run_user_default(u_page_then_write, &v);
    bm_ok(escalated(r, ULPT_KIND_W, va(pg) + 8),
          "R-COH-1 warm: page rights set by one store over line rights deny the next store (vec %lu cr2 %lx)", r, last_trap.cr2);
    ulpt_kset(va(tp[2]), 0, ULPT_LINE_NW(5));
    tp[2][0] = 0xc3;                                             /* ret */
    run_user_default(u_call, tp[2]);                             /* translated */
    struct view_args nx = { ulpt_view_entry(va(tp[2])), ULPT_NX, 0, 0 };
    r = run_user_default(u_view_then_call, &nx);
    bm_ok(escalated(r, ULPT_KIND_X, va(tp[2])), "R-COH-5 warm: NX set by one store over line rights denies the next call (vec %lu)", r);
    ulpt_kset(va(tp[2]), 0, 0);
    ulpt_kset(va(pg), 0, 0);
}

/* The view is never restricted. */
static void coh3_view(void)
{
    fresh(0);
    struct view_args vw = { ulpt_view_entry(va(tp[0])), 0, 0, (uint64_t *)tp[0] };
    bm_ok(run_user_default(u_view_then_write, &vw) == 0x80, "R-COH-3: user stores to the view succeed");
}

/* Kernel stores are not noticed until INVLPG. */
static void coh4_kernel_store(void)
{
    fresh(0);
    bm_ok(run_user_default(u_write8, tp[0]) == 0x80, "write allowed before a kernel-side table change");
    ulpt_phys_entry(va(tp[0]))[0] = ULPT_NW;            /* through the direct map: not noticed */
    invlpg(tp[0]);
    bm_ok(escalated(run_user_default(u_write8, tp[0]), ULPT_KIND_W, va(tp[0])),
          "R-COH-4: after INVLPG the kernel's table change applies");
}

/* NX set by one store applies to the next fetch after a taken branch, also for code that
   already ran (translated, looked up without the TLB, chained). */
static void coh5_nx(void)
{
    uint64_t r;
    int ok;

    fresh(0);
    tp[2][0] = 0xc3;                                   /* ret */
    bm_ok(run_user_default(u_call, tp[2]) == 0x80, "R-COH-5: the page's code runs (and is now translated)");
    struct view_args nx = { ulpt_view_entry(va(tp[2])), ULPT_NX, 0, 0 };
    r = run_user_default(u_view_then_call, &nx);
    bm_ok(escalated(r, ULPT_KIND_X, va(tp[2])), "R-COH-5: after one store setting NX, a call into translated code faults");
    ulpt_kset(va(tp[2]), 0, 0);
    static const uint8_t self_nx[] = { 0x48, 0x89, 0x37,   /* mov %rsi, (%rdi): word 0 of its own entry */
                                       0xeb, 0x00,         /* jmp .+2 (a taken branch) */
                                       0xc3 };             /* ret */
    for (unsigned i = 0; i < sizeof(self_nx); i++)
        tp[2][16 + i] = self_nx[i];
    struct call_args ca = { tp[2] + 16, (void *)ulpt_view_entry(va(tp[2])), 0 };
    ok = run_user_default(u_call_arg, &ca) == 0x80 && run_user_default(u_call_arg, &ca) == 0x80;
    ca.arg2 = ULPT_NX;
    r = run_user_default(u_call_arg, &ca);
    bm_ok(ok && escalated(r, ULPT_KIND_X, va(tp[2]) + 16 + 5),
          "R-COH-5: code setting NX on its own page faults at the fetch after its branch (vec %lu cr2 %lx)",
          r, last_trap.cr2);
    ulpt_kset(va(tp[2]), 0, 0);
}

/* === Section 5: which accesses are checked ============================================== */

/* Accesses straddling into a denied line, within a page and across pages. */
static void acc1_straddle(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(3));
    r = run_user_default(u_write8, tp[3] + 3 * 128 - 4);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[3]) + 3 * 128), "R-ACC-1: unaligned write straddling into line 3 denied at its first byte");
    ulpt_kset(va(tp[4]), 0, ULPT_LINE_NW(0));
    r = run_user_default(u_write8, tp[4] - 4);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[4])), "R-ACC-1: write straddling a page boundary into a denied line");
    bm_ok(run_user_default(u_write8, tp[4] - 8) == 0x80, "write ending at the page boundary allowed");
}

/* String, locked and stack instructions. */
static void acc1_instructions(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NR(5));
    struct rep_args rm = { tp[5], tp[3] + 512, 32 };
    r = run_user_default(u_movs, &rm);
    bm_ok(escalated(r, ULPT_KIND_R, va(tp[3]) + 640), "R-ACC-1: rep movsq reading through a NR line (vec %lu err %lx cr2 %lx)",
          r, last_trap.error, last_trap.cr2);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(1));
    r = run_user_default(u_cmpxchg, tp[3] + 136);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[3]) + 136), "R-ACC-1: lock cmpxchg on a NW line reports a write (vec %lu err %lx cr2 %lx)",
          r, last_trap.error, last_trap.cr2);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NR(1));
    r = run_user_default(u_lock_add, tp[3] + 136);
    bm_ok(escalated(r, ULPT_KIND_R, va(tp[3]) + 136), "R-ACC-1: lock add on a NR line reports its read");

    uint8_t *stk = user_stack + USER_STACK_SIZE - 2 * PAGE;
    ulpt_kset(va(stk), 0, ULPT_LINE_NW(31));
    r = run_user_default(u_push, stk + PAGE);
    bm_ok(escalated(r, ULPT_KIND_W, va(stk) + PAGE - 8) && last_trap.rip == (uint64_t)u_push_insn,
          "R-ACC-1: a push to a denied stack line escalates");
    ulpt_kset(va(stk), 0, 0);
}

/*
 * Accesses that cross into a denied page, or into a denied first line of the next page
 * (whose entry QEMU checks in its slow path, the first page's being plain): the whole
 * access, from its first byte, and nothing of it done.
 */
static void acc1_cross_page(void)
{
    uint64_t r;
    uint8_t *p;
    static const struct { void (*fn)(void *); unsigned kind, size, back; const char *what; } cross[] = {
        { u_write8, ULPT_KIND_W, 8, 4, "8-byte store" },
        { u_write4, ULPT_KIND_W, 4, 2, "4-byte store" },
        { u_movdqu_st, ULPT_KIND_W, 16, 8, "16-byte store" },
        { u_read8, ULPT_KIND_R, 8, 4, "8-byte load" },
        { u_movdqu_ld, ULPT_KIND_R, 16, 4, "16-byte load" },
        /* Last: QEMU decides 32-byte accesses inline when the page is plain and the
         * access stays in it, so crossing must take the whole check. */
        { u_vmovdqu_st, ULPT_KIND_W, 32, 8, "32-byte AVX store" },
    };
    unsigned n = sizeof(cross) / sizeof(cross[0]);

    if (!enable_fpu()) {
        n--;
        bm_ok(1, "# SKIP no AVX on this CPU model");
        bm_ok(1, "# SKIP no AVX on this CPU model");
    }
    fresh((uint64_t)ulpt_entry);
    for (unsigned lines = 0; lines < 2; lines++) {
        if (lines) {
            ulpt_kset(va(tp[5]), 0, ULPT_LINE_NW(0) | ULPT_LINE_NR(0));
        } else {
            ulpt_kset(va(tp[5]), ULPT_NW | ULPT_NR, 0);
        }
        for (unsigned i = 0; i < n; i++) {
            p = tp[5] - cross[i].back;
            *(volatile uint64_t *)(tp[5] - 8) = 0xeeee;
            if (lines) {
                run_user_default(u_read8, tp[5] + 256);     /* the checked entry is live */
            }
            hreset(ACT_PERMIT);
            hwatch = (volatile uint64_t *)(tp[5] - 8);
            r = run_user_default(cross[i].fn, p);
            bm_ok(r == 0x80 && hcount == 1 && hlog[0].seen == 0xeeee &&
                  frame_is(&hlog[0], cross[i].kind, va(tp[5]), va(p), cross[i].size),
                  "R-DEL-1: a %s crossing into a denied %s: nothing done, whole access reported (" FRAME_FMT ")",
                  cross[i].what, lines ? "first line" : "page", FRAME_ARGS(&hlog[0]));
        }
    }
    ulpt_kset(va(tp[5]), 0, 0);
    hwatch = 0;
}

/* Code on a page whose lines deny writes elsewhere: self-modifying code, then NX. */
static void acc1_fast_path_code(void)
{
    uint64_t r;
    uint8_t *code = tp[7];
    static const uint8_t ret1[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3 };  /* mov $1,%eax; ret */

    fresh(0);
    for (unsigned i = 0; i < sizeof(ret1); i++)
        code[i] = ret1[i];
    ulpt_kset(va(code), 0, ULPT_LINE_NW(31));
    struct smc_args sa = { code, 0, 0 };
    r = run_user_default(u_smc, &sa);
    bm_ok(r == 0x80 && sa.first == 1 && sa.second == 7,
          "fast path: self-modifying code on a page with write-denied lines runs the new code (%lu, %lu)", sa.first, sa.second);
    for (unsigned i = 0; i < sizeof(ret1); i++)
        code[i] = ret1[i];
    ulpt_kset(va(code), 0, ULPT_LINE_NW(31) | ULPT_LINE_NR(31));
    sa = (struct smc_args){ code, 0, 0 };
    r = run_user_default(u_smc, &sa);
    bm_ok(r == 0x80 && sa.first == 1 && sa.second == 7,
          "self-modifying code on a page whose lines deny both kinds runs the new code (%lu, %lu)", sa.first, sa.second);
    ulpt_kset(va(code), ULPT_NX, ULPT_LINE_NW(31));
    r = run_user_default(u_call, code);
    bm_ok(escalated(r, ULPT_KIND_X, va(code)), "fast path: NX on a page with write-denied lines denies the fetch (vec %lu)", r);
    ulpt_clear_all();
}

/* Not checked: CPL 0. */
static void acc2_cpl0(void)
{
    fresh(0);
    ulpt_kset(va(tp[6]), ULPT_NW, 0);
    *(volatile uint64_t *)tp[6] = 9;
    bm_ok(*(volatile uint64_t *)tp[6] == 9, "R-ACC-2: CPL 0 writes a ULPT-denied page");
}

/* The paging check comes first. */
static void acc3_paging_first(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[6]), ULPT_NW, 0);
    *pte_of(tp[6]) &= ~2ull;                            /* read-only in the page tables */
    invlpg(tp[6]);
    r = run_user_default(u_write8, tp[6]);
    bm_ok(r == 14 && last_trap.error == (PF_P | PF_W | PF_U), "R-ACC-3: paging fault first, without the ULPT bit");
    *pte_of(tp[6]) &= ~1ull;                            /* not present */
    invlpg(tp[6]);
    r = run_user_default(u_read8, tp[6]);
    bm_ok(r == 14 && last_trap.error == PF_U, "R-ACC-3: not-present page faults without the ULPT bit");
    *pte_of(tp[6]) |= 3;
    invlpg(tp[6]);
    /* An access that spans pages: a paging fault on its second page comes before the
     * ULPT violation on its first (else a handler's PERMIT is spent on an instruction that
     * then takes the #PF, and the access is delivered twice). */
    ulpt_kset(va(tp[5]), 0, ULPT_LINE_NW(31) | ULPT_LINE_NR(31));
    *pte_of(tp[6]) &= ~1ull;
    invlpg(tp[6]);
    r = run_user_default(u_write8, tp[6] - 4);
    bm_ok(r == 14 && last_trap.error == (PF_W | PF_U) && last_trap.cr2 == va(tp[6]),
          "R-ACC-3: a store spanning into a not-present page: its #PF first, not the ULPT violation of its first page (err %lx cr2 %lx)",
          last_trap.error, last_trap.cr2);
    r = run_user_default(u_read8, tp[6] - 4);
    bm_ok(r == 14 && last_trap.error == PF_U && last_trap.cr2 == va(tp[6]),
          "R-ACC-3: a load spanning into a not-present page: its #PF first (err %lx cr2 %lx)",
          last_trap.error, last_trap.cr2);
    *pte_of(tp[6]) |= 3;
    invlpg(tp[6]);
    r = run_user_default(u_write8, tp[6] - 4);
    bm_ok(r == 14 && (last_trap.error & ULPT_PF_ERROR_BIT) && last_trap.cr2 == va(tp[6]) - 4,
          "R-ACC-3: once the page is present, the ULPT violation (err %lx cr2 %lx)",
          last_trap.error, last_trap.cr2);
    ulpt_kset(va(tp[5]), 0, 0);
    {   /* Protection keys come first too: key 1 write-disabled, ULPT NW as well. */
        uint64_t cr4;
        asm volatile("mov %%cr4, %0" : "=r"(cr4));
        asm volatile("mov %0, %%cr4" :: "r"(cr4 | (1ull << 22)));          /* CR4.PKE */
        *pte_of(tp[6]) |= 1ull << 59;                                       /* key 1 */
        invlpg(tp[6]);
        asm volatile("wrpkru" :: "a"(1u << 3), "c"(0), "d"(0));            /* key 1: WD */
        r = run_user_default(u_write8, tp[6]);
        bm_ok(r == 14 && last_trap.error == (PF_P | PF_W | PF_U | 0x20),
              "R-ACC-3: a protection-key fault comes first, without the ULPT bit (err %lx)", last_trap.error);
        asm volatile("wrpkru" :: "a"(0), "c"(0), "d"(0));
        *pte_of(tp[6]) &= ~(0xfull << 59);
        asm volatile("mov %0, %%cr4" :: "r"(cr4));
        invlpg(tp[6]);
    }
}

/* REP string instructions fault per iteration. */
static void acc4_rep(void)
{
    uint64_t r;

    fresh(0);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(3));
    struct rep_args ra = { tp[3] + 100, 0, 400 };
    r = run_user_default(u_stos, &ra);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[3]) + 384) && last_trap.rdi == va(tp[3]) + 384 &&
          last_trap.rcx == 400 - (384 - 100u),
          "R-ACC-4: rep stosb stops at the denied line with RDI/RCX of that iteration (rdi %lx rcx %lu)",
          last_trap.rdi, last_trap.rcx);
}

/* === Section 6: delivery ================================================================ */

static void del1_frame(void)
{
    uint64_t r, v;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(2));
    hreset(ACT_FIX);
    uint64_t ursp = (uint64_t)user_stack + USER_STACK_SIZE - 64;
    r = run_user(u_write8, tp[3] + 256 + 24, ursp);
    volatile struct hlog *h = &hlog[0];
    bm_ok(r == 0x80 && hcount == 1, "R-DEL-1: the handler ran once and the program finished (r %lu, %d deliveries)", r, hcount);
    bm_ok(h->w[ULPT_FRAME_ADDR] == va(tp[3]) + 256 + 24 && ULPT_INFO_KIND(h->w[1]) == ULPT_KIND_W &&
          ULPT_INFO_REASON(h->w[1]) == ULPT_REASON_LINE && ULPT_INFO_SIZE(h->w[1]) == 8 &&
          ULPT_INFO_PERMITTED(h->w[1]) == 0 && !(h->w[1] & ULPT_INFO_PERMIT),
          "R-DEL-1: frame addr and info (kind W, reason line, size 8): %lx %lx", h->w[0], h->w[1]);
    bm_ok(h->w[ULPT_FRAME_ENTRY0] == 0 && h->w[ULPT_FRAME_ENTRY1] == ULPT_LINE_NW(2) &&
          h->w[ULPT_FRAME_START] == va(tp[3]) + 256 + 24,
          "R-DEL-1: frame carries the entry words and the access's start");
    bm_ok(h->w[ULPT_FRAME_RIP] == (uint64_t)u_write8_insn, "R-DEL-1: frame rip is the faulting instruction");
    bm_ok(h->frame == ((h->w[ULPT_FRAME_RSP] - 128 - 64) & ~15ull) && (h->frame & 15) == 0,
          "R-DEL-1: frame at (rsp - STKADJ - 64) & ~15 (frame %lx rsp %lx)", h->frame, h->w[ULPT_FRAME_RSP]);
    bm_ok(*(volatile uint64_t *)(tp[3] + 256 + 24) == 0x55 && ulpt_phys_entry(va(tp[3]))[1] == 0,
          "R-COH-1: the handler cleared the entry through the view; the write then completed");
    bm_ok(try_rdmsr(MSR_ULPT_STATUS, &v) == 0 && v == 0, "R-RET-1: IN_HANDLER is 0 after UIRET");
}

/* The frame describes the whole access: its start, its size, nothing of it done. */
static void del1_whole_access(void)
{
    uint64_t r;
    uint8_t *p;
    int avx = enable_fpu();

    fresh((uint64_t)ulpt_entry);
    /* A line straddle: start before the denied line. */
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(3));
    hreset(ACT_PERMIT);
    hwatch = 0;
    r = run_user_default(u_write8, tp[3] + 3 * 128 - 4);
    bm_ok(r == 0x80 && hcount == 1 && frame_is(&hlog[0], ULPT_KIND_W, va(tp[3]) + 384, va(tp[3]) + 380, 8),
          "R-DEL-1: frame start is the access's first byte, addr its first denied byte (" FRAME_FMT ")",
          FRAME_ARGS(&hlog[0]));

    /* 16-byte store whose second half is in a denied line: nothing stored before the handler. */
    p = tp[3] + 3 * 128 - 8;
    *(volatile uint64_t *)p = 0xaaaa;
    *(volatile uint64_t *)(p + 8) = 0xbbbb;
    hreset(ACT_PERMIT);
    hwatch = (volatile uint64_t *)p;
    asm volatile("pcmpeqb %xmm0, %xmm0");           /* all ones (CPL 0 code uses no SSE) */
    r = run_user_default(u_movdqu_st, p);
    bm_ok(r == 0x80 && hcount == 1 && hlog[0].seen == 0xaaaa &&
          frame_is(&hlog[0], ULPT_KIND_W, va(p) + 8, va(p), 16) && *(volatile uint64_t *)p == ~0ull &&
          *(volatile uint64_t *)(p + 8) == ~0ull,
          "R-DEL-1: a denied 16-byte store has stored nothing when delivered, reports 16 bytes (seen %lx, " FRAME_FMT ")",
          hlog[0].seen, FRAME_ARGS(&hlog[0]));
    hreset(ACT_PERMIT);
    r = run_user_default(u_movdqu_ld, p);
    bm_ok(r == 0x80 && hcount == 0, "a 16-byte load of a write-denied line is allowed");

    /* Same without a handler: the #PF comes with nothing stored. */
    wrmsr(MSR_ULPT_HANDLER, 0);
    *(volatile uint64_t *)p = 0xaaaa;
    r = run_user_default(u_movdqu_st, p);
    bm_ok(escalated(r, ULPT_KIND_W, va(p) + 8) && *(volatile uint64_t *)p == 0xaaaa,
          "R-ESC-1: a denied 16-byte store escalates with nothing stored (first half %lx)", *(volatile uint64_t *)p);
    wrmsr(MSR_ULPT_HANDLER, (uint64_t)ulpt_entry);

    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NR(3));
    hreset(ACT_PERMIT);
    hwatch = 0;
    r = run_user_default(u_movdqu_ld, p);
    bm_ok(r == 0x80 && hcount == 1 && frame_is(&hlog[0], ULPT_KIND_R, va(p) + 8, va(p), 16),
          "R-DEL-1: a 16-byte load into a read-denied line reports 16 bytes (" FRAME_FMT ")", FRAME_ARGS(&hlog[0]));

    if (avx) {
        ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(3));
        p = tp[3] + 3 * 128 - 24;
        *(volatile uint64_t *)p = 0xcccc;
        hreset(ACT_PERMIT);
        hwatch = (volatile uint64_t *)p;
        r = run_user_default(u_vmovdqu_st, p);
        bm_ok(r == 0x80 && hcount == 1 && hlog[0].seen == 0xcccc &&
              frame_is(&hlog[0], ULPT_KIND_W, va(p) + 24, va(p), 32),
              "R-DEL-1: a denied 32-byte AVX store: nothing stored, 32 bytes reported (" FRAME_FMT ")",
              FRAME_ARGS(&hlog[0]));
    } else {
        bm_ok(1, "# SKIP no AVX on this CPU model");
    }

    /* x87 80-bit store straddling into a denied line (QEMU stores it as 8 + 2 bytes). */
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(3));
    p = tp[3] + 3 * 128 - 8;
    *(volatile uint64_t *)p = 0xdddd;
    hreset(ACT_PERMIT);
    hwatch = (volatile uint64_t *)p;
    asm volatile("fldpi");
    r = run_user_default(u_fstpt, p);
    bm_ok(r == 0x80 && hcount == 1 && hlog[0].seen == 0xdddd &&
          frame_is(&hlog[0], ULPT_KIND_W, va(p) + 8, va(p), 10) && *(volatile uint64_t *)p != 0xdddd,
          "R-DEL-1: fstpt into a denied line: nothing stored, 10 bytes reported (" FRAME_FMT ")", FRAME_ARGS(&hlog[0]));
    ulpt_kset(va(tp[3]), 0, 0);
    hwatch = 0;
}

/* A fetch violation: kind X, rip and start = the fetched address, size 0. */
static void del1_fetch(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    tp[2][0] = 0xc3;                                   /* ret */
    ulpt_kset(va(tp[2]), ULPT_NX, 0);
    hreset(ACT_FIX);
    r = run_user_default(u_call, tp[2]);
    bm_ok(r == 0x80 && hcount == 1 && ULPT_INFO_KIND(hlog[0].w[1]) == ULPT_KIND_X &&
          hlog[0].w[ULPT_FRAME_RIP] == va(tp[2]) && hlog[0].w[0] == va(tp[2]),
          "R-DEL-1: fetch violation delivered with kind X and rip = the fetched address");

    /* A fetch has size 0; its start is the fetched address. */
    ulpt_kset(va(tp[2]), ULPT_NX, 0);
    hreset(ACT_FIX);
    r = run_user_default(u_call, tp[2]);
    bm_ok(r == 0x80 && hcount == 1 && frame_is(&hlog[0], ULPT_KIND_X, va(tp[2]), va(tp[2]), 0),
          "R-DEL-1: a fetch reports size 0 and start = addr (" FRAME_FMT ")", FRAME_ARGS(&hlog[0]));
}

/* The frame skips the red zone. */
static void del1_red_zone(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_PERMIT);
    r = run_user_default(u_redzone, tp[3]);
    bm_ok(r == 0x80 && hcount == 1 && redzone_seen == 0x1eedface, "R-DEL-1: the frame skips the 128-byte red zone");
}

/* The handler's first fetch faults: an ordinary #PF, after the frame was pushed. */
static void del1_handler_not_present(void)
{
    uint64_t r, v;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_PERMIT);
    wrmsr(MSR_ULPT_HANDLER, va(tp[6]) + 0x100);       /* handler in a non-present page */
    *pte_of(tp[6]) &= ~1ull;
    invlpg(tp[6]);
    r = run_user_default(u_write8, tp[3]);
    bm_ok(r == 14 && last_trap.cr2 == va(tp[6]) + 0x100 && (last_trap.error & PF_I) &&
          !(last_trap.error & ULPT_PF_ERROR_BIT),
          "a handler on a non-present page: ordinary fetch #PF at the handler");
    bm_ok(try_rdmsr(MSR_ULPT_STATUS, &v) == 0 && v == 1, "  ...with the frame pushed and IN_HANDLER set");
    *pte_of(tp[6]) |= 1;
    invlpg(tp[6]);
    wrmsr(MSR_ULPT_STATUS, 0);
    wrmsr(MSR_ULPT_HANDLER, (uint64_t)ulpt_entry);
}

/* Writing the frame faults: an ordinary #PF, nothing changed. */
static void del2_frame_fault(void)
{
    uint64_t r, v;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_PERMIT);
    uint8_t *ro = user_stack;                         /* make the frame's page read-only */
    *pte_of(ro) &= ~2ull;
    invlpg(ro);
    /* RSP in the writable page above, the frame (RSP - 192) in the read-only one. */
    r = run_user(u_write8, tp[3], va(ro) + PAGE + 64);
    uint64_t fb = (va(ro) + PAGE + 64 - 8 - 128 - 64) & ~15ull;
    bm_ok(r == 14 && !(last_trap.error & ULPT_PF_ERROR_BIT) && (last_trap.error & PF_W) &&
          last_trap.cr2 >= fb && last_trap.cr2 < fb + 64 && last_trap.rip == (uint64_t)u_write8_insn && hcount == 0,
          "R-DEL-2: a frame write that faults is an ordinary #PF at the faulting instruction (err %lx cr2 %lx)",
          last_trap.error, last_trap.cr2);
    bm_ok(try_rdmsr(MSR_ULPT_STATUS, &v) == 0 && v == 0, "R-DEL-2: nothing changed: IN_HANDLER still 0");
    *pte_of(ro) |= 2;
    invlpg(ro);
}

/* === Section 6.1: escalation ============================================================ */

static void esc1_in_handler(void)
{
    uint64_t r, v;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    ulpt_kset(va(tp[4]), ULPT_NR, 0);
    hreset(ACT_FAULT);
    hfault_addr = va(tp[4]) + 8;
    r = run_user_default(u_write8, tp[3]);
    bm_ok(escalated(r, ULPT_KIND_R, va(tp[4]) + 8) && hcount == 1,
          "R-ESC-1: a violation inside the handler escalates to #PF (err %lx cr2 %lx)", last_trap.error, last_trap.cr2);
    bm_ok(try_rdmsr(MSR_ULPT_STATUS, &v) == 0 && v == 1, "R-ESC-1: IN_HANDLER stays set after escalation from the handler");
    wrmsr(MSR_ULPT_STATUS, 0);
    ulpt_kset(va(tp[4]), 0, 0);
}

/* === Section 7: UIRET =================================================================== */

/* Where UIRET faults: disabled, at CPL 0, outside a handler, to a non-canonical rip. */
static void ret1_faults(void)
{
    uint64_t r;

    ulpt_disable();
    bm_ok(run_user_default(u_uiret, 0) == 6, "R-RET-1: UIRET with ULPT disabled #UD");
    fresh(0);
    bm_ok(kernel_uiret() == -1 && last_trap.vector == 13, "R-RET-1: UIRET at CPL 0 #GP");
    bm_ok(run_user_default(u_uiret, 0) == 13, "R-RET-1: UIRET outside a handler #GP");

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_BADRIP);
    r = run_user_default(u_write8, tp[3]);
    bm_ok(r == 13 && hcount == 1, "R-RET-1: UIRET to a non-canonical rip #GP");
    wrmsr(MSR_ULPT_STATUS, 0);
}

/* Flags after UIRET: the frame's arithmetic flags and DF, never IOPL or IF; then exactly
   what the following instructions set. */
static void ret1_flags(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_SETFLAGS);
    hflags = 0x400 /* DF */ | 0x3000 /* IOPL */;
    r = run_user_default(u_flags, tp[3]);
    bm_ok(r == 0x80 && (flags_after & 1) && (flags_after & 0x400) && !(flags_after & 0x3000) && !(flags_after & 0x200),
          "R-RET-1: UIRET restores CF and DF from the frame, never IOPL or IF (rflags %lx)", flags_after);

    /* The handler sets DF ZF SF CF in the frame and lets the write through. */
    hreset(ACT_SETFLAGS);
    hflags = 0x400 | 0x40 | 0x80 | 0x1;
    r = run_user_default(u_flags_exact, tp[3]);
    bm_ok(r == 0x80 && hcount == 1 && !(flags_exact & (0x400 | 0x40 | 0x80 | 0x1)),
          "R-RET-1: after UIRET, cld and test set DF ZF SF CF exactly (rflags %lx)", flags_exact);
}

/* TF restored by UIRET traps after the instruction it returns to, as after IRET: the
   permitted write is made, then #DB reports the next instruction (UIRET goes on to the next
   block through a lookup, which must still find the single-stepping one). */
static void ret1_tf(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[3] = 0;
    hreset(ACT_SETFLAGS);
    hflags = 0x100;                     /* TF */
    r = run_user_default(u_write8_next, tp[3]);
    bm_ok(r == 1 && hcount == 1 && *(volatile uint64_t *)tp[3] == 0x55 &&
          last_trap.rip == (uint64_t)u_write8_next_after,
          "R-RET-1: TF restored by UIRET traps after the permitted write (trap %lu at %lx, %d deliveries)",
          r, last_trap.rip, hcount);
}

/* UIRET single-stepped (TF set before it, as a debugger stepping the handler does): with a
   permit its trap comes after the let-through instruction, so the step makes progress;
   without one, at the restored RIP. */
static void ret2_uiret_tf(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry_tf);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[3] = 0;
    hreset(ACT_PERMIT);
    r = run_user_default(u_write8_next, tp[3]);
    bm_ok(r == 1 && hcount == 1 && *(volatile uint64_t *)tp[3] == 0x55 &&
          last_trap.rip == (uint64_t)u_write8_next_after,
          "R-RET-2: a single-stepped UIRET with PERMIT traps after the permitted write (trap %lu at %lx, %d deliveries)",
          r, last_trap.rip, hcount);
    wrmsr(MSR_ULPT_STATUS, 0);
    hreset(ACT_SKIP);
    hskip = (uint64_t)u_write8_next_after - (uint64_t)u_write8_next_insn;
    r = run_user_default(u_write8_next, tp[3]);
    bm_ok(r == 1 && hcount == 1 && last_trap.rip == (uint64_t)u_write8_next_after,
          "R-RET-2: a single-stepped UIRET without a permit traps at the restored RIP (trap %lu at %lx)",
          r, last_trap.rip);
    wrmsr(MSR_ULPT_STATUS, 0);
}

/* A permit lets the instruction through once; each execution faults again. */
static void ret2_permit_once(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(2));
    hreset(ACT_PERMIT);
    struct loop_args la = { (uint64_t *)(tp[3] + 256), 3 };
    r = run_user_default(u_loop, &la);
    bm_ok(r == 0x80 && hcount == 3 && *(volatile uint64_t *)(tp[3] + 256) == 2 &&
          ulpt_phys_entry(va(tp[3]))[1] == ULPT_LINE_NW(2),
          "R-RET-2: permit lets each write through once, table unchanged (%d deliveries)", hcount);
    bm_ok(hlog[1].w[ULPT_FRAME_RIP] == (uint64_t)u_loop_insn, "R-RET-2: every iteration faults again at the same instruction");
}

/* ... and once per REP iteration. */
static void ret2_rep(void)
{
    uint64_t r;
    int ok;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NR(4));
    ulpt_kset(va(tp[5]), 0, ULPT_LINE_NW(0));
    for (int i = 0; i < 16; i++)
        ((volatile uint64_t *)(tp[3] + 512))[i] = 100 + i;
    for (int i = 0; i < 16; i++)
        ((volatile uint64_t *)(tp[5] + 64))[i] = 0;
    hreset(ACT_PERMIT);
    struct rep_args rm = { tp[5] + 64, tp[3] + 512, 16 };
    r = run_user_default(u_movs, &rm);
    ok = r == 0x80;
    for (int i = 0; i < 16; i++)
        ok &= ((volatile uint64_t *)(tp[5] + 64))[i] == (uint64_t)(100 + i);
    bm_ok(ok && hcount == 16 + 8, "R-RET-2/R-ACC-4: rep movsq through a NR source line and a NW destination line copies everything (%d deliveries, r %lu, trap %lu at %lx)", hcount, r, last_trap.vector, last_trap.rip);
}

/* A read-modify-write on a line denying both kinds: both reported, the access done once. */
/* The word of a line that denies both kinds, holding 40; the handler does `action`. */
static volatile uint64_t *rmw_setup(int action)
{
    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NR(2) | ULPT_LINE_NW(2));
    *(volatile uint64_t *)(tp[3] + 256) = 40;
    hreset(action);
    return (volatile uint64_t *)(tp[3] + 256);
}

static void ret3_rmw(void)
{
    uint64_t r;

    rmw_setup(ACT_PERMIT);
    r = run_user_default(u_add, tp[3] + 256);
    bm_ok(r == 0x80 && hcount == 2 && *(volatile uint64_t *)(tp[3] + 256) == 41,
          "R-RET-3: add on an R+W-denied line completes once after two deliveries (%d)", hcount);
    bm_ok(ULPT_INFO_KIND(hlog[0].w[1]) == ULPT_KIND_R && ULPT_INFO_KIND(hlog[1].w[1]) == ULPT_KIND_W &&
          ULPT_INFO_PERMITTED(hlog[1].w[1]) == ULPT_KIND_R,
          "R-RET-3: read reported, then write with the read already permitted");
    hreset(ACT_PERMIT);
    r = run_user_default(u_lock_add, tp[3] + 256);
    bm_ok(r == 0x80 && hcount == 2 && *(volatile uint64_t *)(tp[3] + 256) == 42 &&
          ((ULPT_INFO_KIND(hlog[0].w[1]) | ULPT_INFO_KIND(hlog[1].w[1])) == (ULPT_KIND_R | ULPT_KIND_W)),
          "R-RET-3: lock add reports both its write and its read, completes once (%d)", hcount);
}

/*
 * Found by the CPU differential fuzzer (tests/baremetal/ulpt-fuzz.c), each fixed in
 * qemu/patches/0016-0020: the order of a read-modify-write's two deliveries (section 6: a locked
 * one is checked for its write first, a non-locked one reads first; one vCPU used to report
 * a locked one's read first, and CMPXCHG16B the write first also without LOCK).
 */
USER_INSN(u_xchg_mem, "xchgq %%rax, (%0)", "a"(0))
USER_INSN(u_lock_cx16, "lock cmpxchg16b (%0)", "a"(0), "d"(0), "b"(1), "c"(2))
USER_INSN(u_cx16, "cmpxchg16b (%0)", "a"(0), "d"(0), "b"(1), "c"(2))
static void ret3_rmw_order(void)
{
    static const struct { void (*fn)(void *); unsigned first; const char *name; } c[] = {
        { u_lock_add, ULPT_KIND_W, "lock add" }, { u_xchg_mem, ULPT_KIND_W, "xchg (locked)" },
        { u_lock_cx16, ULPT_KIND_W, "lock cmpxchg16b" }, { u_cx16, ULPT_KIND_R, "cmpxchg16b" },
    };
    for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        unsigned second = c[i].first ^ (ULPT_KIND_R | ULPT_KIND_W);
        rmw_setup(ACT_PERMIT);
        uint64_t r = run_user_default(c[i].fn, tp[3] + 256);
        bm_ok(r == 0x80 && hcount == 2 && ULPT_INFO_KIND(hlog[0].w[1]) == c[i].first &&
              ULPT_INFO_KIND(hlog[1].w[1]) == second && ULPT_INFO_PERMITTED(hlog[1].w[1]) == c[i].first,
              "R-RET-3: %s on an R+W-denied line reports its %s first, then the other (%lu, %d, info %lx %lx)",
              c[i].name, c[i].first == ULPT_KIND_W ? "write" : "read", r, hcount, hlog[0].w[1], hlog[1].w[1]);
    }
}

/*
 * Found by the fuzzer too: no state changed before a delivery (R-DEL-1), so the flags in the
 * frame are those before the instruction, and a permitted or skipped instruction ends as
 * an undisturbed one. CMPXCHG8B computed RFLAGS from a stale operation after a flag-setting
 * instruction in the same block (CF lost: a run interrupted by a delivery differed from an
 * undisturbed one); RCR computed the flags in place before its load and store; an x87 store
 * set FSW's exception flags before its store was checked.
 */
static volatile uint64_t cx8_flags;
static void __attribute__((noinline)) u_cx8_cf(void *p)
{
    asm volatile("movl $1, %%eax\n cmpl $2, %%eax\n cmpxchg8b (%0)\n cmpxchg8b (%0)\n"
                 "pushfq\n popq %%rax\n movq %%rax, (%1)"
                 :: "r"(p), "r"(&cx8_flags) : "rax", "rbx", "rcx", "rdx", "memory", "cc");
}
USER_INSN(u_rcr, "stc\n .globl u_rcr_at\n u_rcr_at: rcrq $1, (%0)")
extern char u_rcr_at[];
static volatile uint16_t fst_fsw;
static void __attribute__((noinline)) u_fst(void *p)
{
    asm volatile("fninit\n fldpi\n .globl u_fst_at\n u_fst_at: fsts (%0)\n .globl u_fst_next\n"
                 "u_fst_next: fnstsw %%ax\n movw %%ax, (%1)"
                 :: "r"(p), "r"(&fst_fsw) : "rax", "memory", "cc");
}
extern char u_fst_at[], u_fst_next[];
/* XSAVE of x87 and SSE state (EDX:EAX = 3). */
static void __attribute__((noinline)) u_xsave(void *p)
{
    asm volatile(".globl u_xsave_at\n u_xsave_at: xsave (%0)\n .globl u_xsave_next\n u_xsave_next:"
                 :: "r"(p), "a"(3), "d"(0) : "memory");
}
extern char u_xsave_at[], u_xsave_next[];
static void del1_no_state(void)
{
    fresh((uint64_t)ulpt_entry);
    uint64_t r = run_user_default(u_cx8_cf, tp[3]);
    bm_ok(r == 0x80 && (cx8_flags & 1), "R-DEL-1: CF set before two CMPXCHG8B stays set (flags %lx)", cx8_flags);
    /* RCR on a line denying writes: the frame has CF 1; permitted, it rotates CF in once. */
    rmw_setup(ACT_PERMIT);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(2));
    r = run_user_default(u_rcr, tp[3] + 256);
    bm_ok(r == 0x80 && hcount == 1 && (hlog[0].w[ULPT_FRAME_RFLAGS] & 1) &&
          hlog[0].w[ULPT_FRAME_RIP] == va(u_rcr_at) && *(volatile uint64_t *)(tp[3] + 256) == 0x8000000000000014ull,
          "R-DEL-1: RCR delivered with CF as before it (rflags %lx), then rotates it in once (%lx)",
          hlog[0].w[ULPT_FRAME_RFLAGS], *(volatile uint64_t *)(tp[3] + 256));
    /* FST of pi to single precision (inexact) on a write-denied line, skipped by the handler:
       FSW's precision flag stays clear. */
    enable_fpu();
    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(2));
    hreset(ACT_SKIP);
    hskip = (uint64_t)(u_fst_next - u_fst_at);
    fst_fsw = 0xffff;
    r = run_user_default(u_fst, tp[3] + 256);
    bm_ok(r == 0x80 && hcount == 1 && fst_fsw != 0xffff && !(fst_fsw & 0x3f),
          "R-DEL-1: a skipped FST to a denied line leaves FSW's exception flags clear (FSW %x)", fst_fsw);
    /* XSAVE reads XSTATE_BV after writing the other parts: a line denying reads of the
       header makes a delivery before any byte is written. */
    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[4]), 0, ULPT_LINE_NR(4));            /* the header: tp[4] + 512 */
    hreset(ACT_SKIP);
    hskip = (uint64_t)(u_xsave_next - u_xsave_at);
    for (int i = 0; i < 1024; i++) tp[4][i] = 0x5a;
    r = run_user_default(u_xsave, tp[4]);
    int same = 1;
    for (int i = 0; i < 1024; i++) same &= tp[4][i] == 0x5a;
    bm_ok(r == 0x80 && hcount == 1 && frame_is(&hlog[0], ULPT_KIND_R, va(tp[4]) + 512, va(tp[4]) + 512, 8) && same,
          "R-ACC-1: XSAVE with its header's line denying reads: delivered before anything is written "
          "(%d, " FRAME_FMT ", area unchanged %d)", hcount, FRAME_ARGS(&hlog[0]), same);
}

/*
 * Found by the fuzzer (code page NX): a UIRET whose frame lets no fetch through (STEP
 * alone) returned to an instruction whose block an earlier permit had translated, and it ran
 * without its fetch being checked. The fix (target-ulpt/ulpt-deliver.c) checks the fetch in
 * UIRET. Code on an NX page writes to a line denying writes: fetch (let through), write
 * (STEP alone: nothing let through), so the fetch again, then the write, then RET's fetch.
 */
static void ret4_step_alone_fetch(void)
{
    static const uint8_t code[] = { 0x48, 0xc7, 0x07, 0x55, 0, 0, 0, 0xc3 };   /* movq $0x55,(%rdi); ret */
    for (unsigned i = 0; i < sizeof(code); i++)
        tp[7][i] = code[i];
    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[7]), ULPT_NX, 0);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(2));
    *(volatile uint64_t *)(tp[3] + 256) = 0;
    hreset(ACT_W_STEP_ONCE);
    hskip = 0;
    struct call_args ca = { tp[7], tp[3] + 256, 0 };
    uint64_t r = run_user_default(u_call_arg, &ca);
    bm_ok(r == 0x80 && hcount == 5 && ULPT_INFO_KIND(hlog[0].w[1]) == ULPT_KIND_X &&
          ULPT_INFO_KIND(hlog[1].w[1]) == ULPT_KIND_W && ULPT_INFO_KIND(hlog[2].w[1]) == ULPT_KIND_X &&
          ULPT_INFO_PERMITTED(hlog[2].w[1]) == 0 && hlog[2].w[ULPT_FRAME_RIP] == va(tp[7]) &&
          ULPT_INFO_KIND(hlog[3].w[1]) == ULPT_KIND_W && ULPT_INFO_KIND(hlog[4].w[1]) == ULPT_KIND_X &&
          *(volatile uint64_t *)(tp[3] + 256) == 0x55,
          "R-RET-4: STEP alone after a permitted fetch: the instruction's fetch faults again "
          "(r %lu, %d deliveries, third: kind %u permitted %u)", r, hcount,
          ULPT_INFO_KIND(hlog[2].w[1]), ULPT_INFO_PERMITTED(hlog[2].w[1]));
}

/* --- R-RET-4: STEP, the after event --------------------------------------------------- */

/* Is log entry i an after event for the access of entry v, reported at rip? */
static int after_of(int i, int v, uint64_t rip)
{
    volatile struct hlog *a = &hlog[i], *b = &hlog[v];
    uint64_t ai = a->w[ULPT_FRAME_INFO], bi = b->w[ULPT_FRAME_INFO];

    return ULPT_INFO_REASON(ai) == ULPT_REASON_AFTER && a->w[ULPT_FRAME_RIP] == rip &&
           a->w[ULPT_FRAME_ADDR] == b->w[ULPT_FRAME_ADDR] &&
           a->w[ULPT_FRAME_START] == b->w[ULPT_FRAME_START] &&
           a->w[ULPT_FRAME_ENTRY0] == b->w[ULPT_FRAME_ENTRY0] &&
           a->w[ULPT_FRAME_ENTRY1] == b->w[ULPT_FRAME_ENTRY1] &&
           ULPT_INFO_KIND(ai) == ULPT_INFO_KIND(bi) && ULPT_INFO_SIZE(ai) == ULPT_INFO_SIZE(bi) &&
           ULPT_INFO_PERMITTED(ai) == ULPT_INFO_PERMITTED(bi) &&
           !(ai & (ULPT_INFO_PERMIT | ULPT_INFO_STEP | ULPT_INFO_TRAP));
}

/* A store with PERMIT | STEP: the after event follows it, with the stored value visible,
   the frame of the next instruction and the access's words. */
static void ret4_store(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[3] = 0;
    hwatch = (volatile uint64_t *)tp[3];
    hreset(ACT_STEP);
    r = run_user_default(u_write8_next, tp[3]);
    hwatch = 0;
    bm_ok(r == 0x80 && hcount == 2 && *(volatile uint64_t *)tp[3] == 0x55,
          "R-RET-4: a store let through with STEP completes once, then one after event (%d deliveries)", hcount);
    bm_ok(after_of(1, 0, (uint64_t)u_write8_next_after) && hlog[0].seen == 0 && hlog[1].seen == 0x55,
          "R-RET-4: the after event has reason AFTER, the access's addr, start, kind, size and entry words, rip of the next instruction, the value stored");
    bm_ok(hlog[1].w[ULPT_FRAME_RSP] == hlog[0].w[ULPT_FRAME_RSP] && hlog[1].frame == hlog[0].frame,
          "R-RET-4: the after event's frame: rsp after the instruction, placed as for a violation");
}

static void ret4_load(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NR(1));
    hreset(ACT_STEP);
    r = run_user_default(u_read8_next, tp[3] + 128 + 8);
    bm_ok(r == 0x80 && hcount == 2 && ULPT_INFO_KIND(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_KIND_R &&
          after_of(1, 0, (uint64_t)u_read8_next_after),
          "R-RET-4: a load let through with STEP: the after event at the next instruction (%d deliveries)", hcount);
}

/* A read-modify-write on an R+W-denied line: the write's delivery ends the first STEP
   (as any event does), the handler asks again, one after event follows the instruction. */
static void ret4_rmw(void)
{
    uint64_t r;

    rmw_setup(ACT_STEP);
    r = run_user_default(u_add_next, tp[3] + 256);
    bm_ok(r == 0x80 && hcount == 3 && *(volatile uint64_t *)(tp[3] + 256) == 41 &&
          ULPT_INFO_REASON(hlog[1].w[ULPT_FRAME_INFO]) == ULPT_REASON_LINE &&
          after_of(2, 1, (uint64_t)u_add_next_after),
          "R-RET-4: add on an R+W-denied line: read, write, then one after event (%d deliveries)", hcount);
}

/* REP STOSB into a denied line: an after event per permitted iteration, at the string
   instruction while iterations remain, then at the next one. */
static void ret4_rep(void)
{
    uint64_t r;
    int ok;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[5]), 0, ULPT_LINE_NW(0));
    for (int i = 0; i < 16; i++)
        tp[5][120 + i] = 0;
    hreset(ACT_STEP);
    struct rep_args ra = { tp[5] + 124, 0, 4 };      /* the last 4 bytes of line 0 */
    r = run_user_default(u_stos, &ra);
    ok = r == 0x80 && hcount == 8 && tp[5][128] == 0;
    for (int i = 0; i < 4; i++)
        ok &= tp[5][124 + i] == 0x77;
    for (int i = 0; i < 8 && ok; i += 2)
        ok &= after_of(i + 1, i, i < 6 ? (uint64_t)u_stos_insn : (uint64_t)u_stos_insn + 2) &&
              hlog[i].w[ULPT_FRAME_ADDR] == va(tp[5]) + 124 + i / 2;
    bm_ok(ok, "R-RET-4/R-ACC-4: rep stosb: an after event per permitted iteration, at the string instruction until the last (%d deliveries, r %lu)",
          hcount, r);
}

/* The next instruction faults too: its violation comes after the after event. */
static void ret4_next_faults(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0) | ULPT_LINE_NW(1));
    hreset(ACT_STEP);
    r = run_user_default(u_two_writes, tp[3]);
    bm_ok(r == 0x80 && hcount == 4 && after_of(1, 0, (uint64_t)u_two_writes_2) &&
          ULPT_INFO_REASON(hlog[2].w[ULPT_FRAME_INFO]) == ULPT_REASON_LINE &&
          hlog[2].w[ULPT_FRAME_RIP] == (uint64_t)u_two_writes_2 && after_of(3, 2, (uint64_t)u_two_writes_end),
          "R-RET-4: a faulting next instruction: after event, then its violation, then its after event (%d deliveries)", hcount);
}

/* STEP without PERMIT, after the handler lifted the right: the instruction runs normally,
   then the after event. */
static void ret4_step_alone(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_STEP_FIX);
    r = run_user_default(u_write8_next, tp[3]);
    bm_ok(r == 0x80 && hcount == 2 && after_of(1, 0, (uint64_t)u_write8_next_after) &&
          *(volatile uint64_t *)tp[3] == 0x55,
          "R-RET-4: STEP alone: the instruction runs as the table allows, then the after event (%d deliveries)", hcount);
}

/* The instruction raises an exception: no after event; the request does not outlive it. */
static void ret4_insn_faults(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_STEP_TO);
    hskip = (uint64_t)u_ud2_insn;
    r = run_user_default(u_write8, tp[3]);
    bm_ok(r == 6 && hcount == 1, "R-RET-4: an exception in the instruction drops the after event (trap %lu, %d deliveries)",
          r, hcount);
    wrmsr(MSR_ULPT_STATUS, 0);
    hreset(ACT_PERMIT);
    r = run_user_default(u_write8, tp[3]);
    bm_ok(r == 0x80 && hcount == 1, "R-RET-4: a later PERMIT alone gets no after event (%d deliveries)", hcount);

    /* A #PF of the instruction's second access, after its first was let through. */
    ulpt_kset(va(tp[4]), 0, ULPT_LINE_NR(0));
    *pte_of(tp[6]) &= ~1ull;
    invlpg(tp[6]);
    hreset(ACT_STEP);
    struct rep_args rm = { tp[6], tp[4], 1 };
    r = run_user_default(u_movs, &rm);
    bm_ok(r == 14 && hcount == 1 && last_trap.cr2 == va(tp[6]) && last_trap.rip == (uint64_t)u_movs_insn,
          "R-RET-4: a #PF of the instruction drops the after event (trap %lu cr2 %lx, %d deliveries)",
          r, last_trap.cr2, hcount);
    *pte_of(tp[6]) |= 1;
    invlpg(tp[6]);
    ulpt_kset(va(tp[4]), 0, 0);
}

/* An interrupt that becomes pending in the handler waits for the instruction (R-RET-2);
   the after event comes first, so the interrupt arrives at the handler's first
   instruction. With IOPL 3, the handler's stub ends with STI; UIRET. */
static void ret4_irq(void)
{
    uint64_t r;

    lapic_enable();
    fresh((uint64_t)ulpt_entry_sti);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[3] = 0;
    bm_irq.count = 0;
    user_rflags = 0x3002;                        /* IOPL 3, IF 0 */
    hreset(ACT_STEP_IRQ);
    r = run_user_default(u_write8_next, tp[3]);
    user_rflags = 0x2;
    bm_ok(r == 0x80 && hcount == 2 && bm_irq.count == 1 && bm_irq.rip == (uint64_t)ulpt_entry_sti &&
          after_of(1, 0, (uint64_t)u_write8_next_after) && *(volatile uint64_t *)tp[3] == 0x55,
          "R-RET-4: an interrupt pending at UIRET waits for the instruction and its after event (irqs %lu at %lx, %d deliveries)",
          bm_irq.count, bm_irq.rip, hcount);
}

/* TF with STEP: the after event carries TRAP, and its UIRET raises the single-step #DB at
   the next instruction; a handler that clears TF in the after frame gets no #DB. */
static void ret4_tf(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[3]), 0, ULPT_LINE_NW(0));
    hreset(ACT_STEP);
    hflags = 0x100;
    r = run_user_default(u_write8_next, tp[3]);
    bm_ok(r == 1 && hcount == 2 && last_trap.rip == (uint64_t)u_write8_next_after &&
          (hlog[1].w[ULPT_FRAME_INFO] & ULPT_INFO_TRAP) && (hlog[1].w[ULPT_FRAME_RFLAGS] & 0x100) &&
          ULPT_INFO_REASON(hlog[1].w[ULPT_FRAME_INFO]) == ULPT_REASON_AFTER,
          "R-RET-4: TF: the after event has TRAP, its UIRET traps at the next instruction (trap %lu at %lx, %d deliveries)",
          r, last_trap.rip, hcount);
    hreset(ACT_STEP_CLRTF);
    hflags = 0x100;
    r = run_user_default(u_write8_next, tp[3]);
    bm_ok(r == 0x80 && hcount == 2, "R-RET-4: TRAP with TF cleared by the handler: no #DB (r %lu)", r);
    /* TF already set at the faulting write (a debugger's step): the same. */
    *(volatile uint64_t *)tp[3] = 0;
    hreset(ACT_STEP);
    r = run_user_default(u_tf_write, tp[3]);
    bm_ok(r == 1 && hcount == 2 && last_trap.rip == (uint64_t)u_tf_write_next &&
          *(volatile uint64_t *)tp[3] == 0x55 && hlog[0].w[ULPT_FRAME_RIP] == (uint64_t)u_tf_write_store &&
          (hlog[1].w[ULPT_FRAME_INFO] & ULPT_INFO_TRAP),
          "R-RET-4: a single-stepped write that faults: handler, after event with TRAP, then #DB at the next instruction (trap %lu at %lx, %d deliveries)",
          r, last_trap.rip, hcount);
}

/* Writing the after event's frame faults: the ordinary #PF, at the next instruction. */
static void ret4_frame_fault(void)
{
    uint64_t r, v;
    volatile uint64_t *slot = (volatile uint64_t *)tp[4];

    fresh((uint64_t)ulpt_entry);
    ulpt_kset(va(tp[4]), 0, ULPT_LINE_NR(0));
    *pte_of(tp[6]) &= ~1ull;                           /* RSP goes into a page not present */
    invlpg(tp[6]);
    slot[0] = va(tp[6]) + 2048;
    hreset(ACT_STEP);
    r = run_user_default(u_load_rsp, (void *)slot);
    uint64_t fb = (va(tp[6]) + 2048 - 128 - 64) & ~15ull;
    bm_ok(r == 14 && hcount == 1 && !(last_trap.error & ULPT_PF_ERROR_BIT) && last_trap.cr2 >= fb &&
          last_trap.cr2 < fb + 64 && last_trap.rip == (uint64_t)u_load_rsp_after,
          "R-RET-4: an after event whose frame write faults is a #PF at the next instruction (trap %lu cr2 %lx rip %lx)",
          r, last_trap.cr2, last_trap.rip);
    bm_ok(try_rdmsr(MSR_ULPT_STATUS, &v) == 0 && v == 0, "R-RET-4: IN_HANDLER stays 0 after the frame fault");
    *pte_of(tp[6]) |= 1;
    invlpg(tp[6]);
    ulpt_kset(va(tp[4]), 0, 0);
}

/* === The tables ========================================================================= */

/* On a CPU without ULPT: the enumeration rules only. */

/* === Section 6.2: the access log ======================================================== */

/* A log of 2^shift records at logbuf, every slot free, the write index at 0. */
static void log_setup(unsigned shift, unsigned thresh)
{
    for (unsigned i = 0; i < PAGE; i++)
        logbuf[i] = 0;
    log_nslots = 1u << shift;
    log_drained = 0;
    wrmsr(MSR_ULPT_LOG_BASE, va(logbuf));
    wrmsr(MSR_ULPT_LOG_CTL, shift | (uint64_t)thresh << ULPT_LOG_CTL_THRESH_SHIFT);
    wrmsr(MSR_ULPT_LOG_INDEX, 0);
}

static unsigned log_count(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < log_nslots; i++)
        n += !!(rec(i)[ULPT_REC_INFO] & ULPT_REC_V);
    return n;
}

static int rec_is(unsigned i, uint64_t start, unsigned kind, unsigned reason, unsigned size, uint64_t rip)
{
    uint64_t info = rec(i)[ULPT_REC_INFO];
    return (info & ULPT_REC_V) && rec(i)[ULPT_REC_START] == start && ULPT_INFO_KIND(info) == kind &&
           ULPT_INFO_REASON(info) == reason && ULPT_INFO_SIZE(info) == size &&
           rec(i)[ULPT_REC_RIP] == rip;
}

#define REC_FMT "start %lx info %lx rip %lx value %lx"
#define REC_ARGS(i) rec(i)[ULPT_REC_START], rec(i)[ULPT_REC_INFO], rec(i)[ULPT_REC_RIP], rec(i)[ULPT_REC_VALUE]

/* Logged, not delivered: the access is made, one record, no handler entry; without a log the
   same entry delivers; a fetch is never logged. */
static void log1_logged(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(4, 0);
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[1] = 0;
    r = run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && hcount == 0 && *(volatile uint64_t *)tp[1] == 0x55 && log_count() == 1 &&
          rec_is(0, va(tp[1]), ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn) &&
          (rec(0)[ULPT_REC_INFO] & ULPT_REC_VAL) && rec(0)[ULPT_REC_VALUE] == 0x55 &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 1,
          "R-LOG-1: a write to a line a LOG entry denies is made and logged, not delivered (" REC_FMT ")",
          REC_ARGS(0));
    ulpt_kset(va(tp[1]), ULPT_LOG | ULPT_NR, 0);
    r = run_user_default(u_read8, tp[1] + 8);
    bm_ok(r == 0x80 && hcount == 0 && rec_is(1, va(tp[1]) + 8, ULPT_KIND_R, ULPT_REASON_PAGE, 8,
                                             (uint64_t)u_read8_insn) &&
          !(rec(1)[ULPT_REC_INFO] & ULPT_REC_VAL),
          "R-LOG-1: a read a LOG entry's page rights deny is logged (" REC_FMT ")", REC_ARGS(1));
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    r = run_user_default(u_read8, tp[1] + 8);
    bm_ok(r == 0x80 && hcount == 1 && log_count() == 2, "R-LOG-1: with LOG_BASE 0 the same read is delivered");
    wrmsr(MSR_ULPT_LOG_BASE, va(logbuf));
    hcount = 0;
    tp[2][0] = 0xc3;
    ulpt_kset(va(tp[2]), ULPT_LOG | ULPT_NX, 0);
    r = run_user_default(u_call, tp[2]);
    bm_ok(r == 0x80 && hcount == 1 && ULPT_INFO_KIND(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_KIND_X &&
          log_count() == 2, "R-LOG-1: a fetch from a LOG page with NX is delivered, never logged");
    /* A write straddling into a page whose entry has no LOG: a violation, no record. */
    hcount = 0;
    ulpt_kset(va(tp[3]), ULPT_LOG, ULPT_LINE_NW(31));
    ulpt_kset(va(tp[4]), 0, ULPT_LINE_NW(0));
    r = run_user_default(u_write8, tp[4] - 4);
    bm_ok(r == 0x80 && hcount == 1 && hlog[0].w[ULPT_FRAME_ADDR] == va(tp[4]) && log_count() == 2 &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 2,
          "R-LOG-1: a write with a part denied without LOG is delivered (once, permitted) and not logged");
    /* Inside the handler: logged too. */
    ulpt_kset(va(tp[4]), 0, 0);
    wrmsr(MSR_ULPT_STATUS, ULPT_STATUS_IN_HANDLER);
    r = run_user_default(u_write8, tp[3] + PAGE - 8);
    wrmsr(MSR_ULPT_STATUS, 0);
    bm_ok(r == 0x80 && log_count() == 3, "R-LOG-1: an access inside the handler is logged");
}

/* === Section 4.5: byte bounds ============================================================ */

static uint8_t bndpage[PAGE] __attribute__((aligned(4096)));   /* bounds arrays, 64 bytes each */
static void bnd_set(uint8_t *b, unsigned line, unsigned lo, unsigned hi)
{
    b[2 * line] = lo;
    b[2 * line + 1] = hi;
}
/* A write of `size` (1 or 8) at p, permitted by the handler: the frame's addr, or 0 if none. */
static uint64_t bnd_write(uint8_t *p, unsigned size)
{
    hreset(ACT_PERMIT);
    uint64_t r = run_user_default(size == 1 ? u_write1 : u_write8, p);
    if (r != 0x80 || hcount > 1)
        return ~0ull;
    return hcount ? hlog[0].w[ULPT_FRAME_ADDR] : 0;
}

/* Open bytes: line rights do not deny them; the first byte not open is the frame's addr. */
static void bnd1_open(void)
{
    uint8_t *b = bndpage, *p = tp[3], *l3 = p + 3 * 128, *l4 = p + 4 * 128;

    fresh((uint64_t)ulpt_entry);
    for (unsigned i = 0; i < 64; i++)
        b[i] = 0;
    bnd_set(b, 3, 40, 100);
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NW(3) | ULPT_LINE_NW(4) | ULPT_LINE_NR(5));
    bm_ok(bnd_write(l3 + 40, 8) == 0 && bnd_write(l3 + 92, 8) == 0 && bnd_write(l3 + 99, 1) == 0,
          "R-BND-1: writes inside [lo, hi) of a write-denied line are not delivered");
    bm_ok(bnd_write(l3 + 93, 8) == va(l3) + 100 && bnd_write(l3 + 32, 8) == va(l3) + 32 &&
          bnd_write(l3 + 36, 8) == va(l3) + 36 && bnd_write(l3 + 100, 1) == va(l3) + 100 &&
          bnd_write(l3 + 39, 1) == va(l3) + 39,
          "R-BND-1: a write with a byte outside [lo, hi) is delivered at its first such byte");
    bm_ok(ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_LINE &&
          hlog[0].w[ULPT_FRAME_START] == va(l3) + 39,
          "R-BND-1: reason 2 (line right), start the access's first byte");
    bm_ok(bnd_write(l4, 8) == va(l4) && bnd_write(l4 + 127, 1) == va(l4) + 127,
          "R-BND-1: lo >= hi (0, 0): nothing open in line 4");
    bnd_set(b, 4, 10, 10);
    bm_ok(bnd_write(l4 + 10, 1) == va(l4) + 10, "R-BND-1: lo = hi opens nothing");
    bnd_set(b, 4, 0, 200);
    bm_ok(bnd_write(l4, 8) == 0 && bnd_write(l4 + 120, 8) == 0, "R-BND-1: hi above 128 counts as 128");
    /* Straddling lines 3 and 4: each line's bytes against its own bounds. */
    bnd_set(b, 3, 40, 128);
    bnd_set(b, 4, 0, 4);
    bm_ok(bnd_write(l3 + 124, 8) == 0, "R-BND-1: a write across two bounded lines, every byte open");
    bnd_set(b, 4, 0, 3);
    bm_ok(bnd_write(l3 + 124, 8) == va(l4) + 3, "R-BND-1: the same write, one byte of line 4 closed");
    /* Reads of a write-denied line need no bounds; a read-denied line is bounded the same way. */
    bnd_set(b, 5, 8, 16);
    hreset(ACT_PERMIT);
    bm_ok(run_user_default(u_read8, l3) == 0x80 && run_user_default(u_read8, p + 5 * 128 + 8) == 0x80 &&
          hcount == 0, "R-BND-1: reads of a write-denied line, and reads inside a read-denied line's bounds, go through");
    bm_ok(run_user_default(u_read8, p + 5 * 128 + 9) == 0x80 && hcount == 1 &&
          hlog[0].w[ULPT_FRAME_ADDR] == va(p) + 5 * 128 + 16, "R-BND-1: a read past a read-denied line's hi is delivered");
    /* A read from the open end of a read-denied line across into the next page: QEMU loads
       it as two aligned words, the first from before the access, whose bytes do not count. */
    bnd_set(b, 31, 124, 128);
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NR(31));
    ulpt_kset(va(tp[4]), 0, 0);
    hreset(ACT_PERMIT);
    uint64_t r1 = run_user_default(u_read8, p + PAGE - 2);
    int h1 = hcount;
    uint64_t r2 = run_user_default(u_read8, p + PAGE - 5);
    bm_ok(r1 == 0x80 && h1 == 0 && r2 == 0x80 && hcount == 1 && hlog[0].w[ULPT_FRAME_ADDR] == va(p) + PAGE - 5,
          "R-BND-1: a read across a page boundary is judged by its own bytes (deliveries %d, %d)", h1, hcount);
    /* Page rights are not opened. */
    bnd_set(b, 3, 0, 128);
    ulpt_kset(va(p), ULPT_NW | ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NW(3));
    bm_ok(bnd_write(l3, 8) == va(l3) && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_PAGE,
          "R-BND-1: bounds never open what page rights deny");
    /* Escalated: CR2 is the first byte not open. */
    fresh(0);
    bnd_set(b, 3, 40, 100);
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NW(3));
    bm_ok(escalated(run_user_default(u_write8, l3 + 96), ULPT_KIND_W, va(l3) + 100) &&
          run_user_default(u_write8, l3 + 48) == 0x80,
          "R-BND-1: escalated, CR2 is the first byte not open (cr2 %lx)", last_trap.cr2);
    /* Logged: only an access with a byte not open appends a record. */
    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(4, 0);
    ulpt_kset(va(p), ULPT_LOG | ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NW(3));
    bm_ok(run_user_default(u_write8, l3 + 48) == 0x80 && log_count() == 0 &&
          run_user_default(u_write8, l3 + 96) == 0x80 && log_count() == 1 && hcount == 0 &&
          rec_is(0, va(l3) + 96, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn),
          "R-BND-1: a LOG entry logs an access only when a byte of it is not open (" REC_FMT ")", REC_ARGS(0));
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    /* A 16-byte store half outside: checked whole, nothing written (R-ACC-1). */
    enable_fpu();
    fresh((uint64_t)ulpt_entry);
    for (unsigned i = 0; i < 128; i++)
        l3[i] = 0;
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NW(3));
    hreset(ACT_SKIP);
    hskip = 4;                                      /* movdqu %xmm0, (%rax) is 4 bytes */
    struct acc_args a16 = { l3 + 88, 16 };
    asm volatile("pcmpeqb %xmm0, %xmm0");         /* all ones (the compiler uses no vector register) */
    run_user_default(u_store, &a16);
    int untouched = 1;
    for (unsigned i = 88; i < 104; i++)
        untouched &= l3[i] == 0;
    bm_ok(hcount == 1 && hlog[0].w[ULPT_FRAME_ADDR] == va(l3) + 100 &&
          ULPT_INFO_SIZE(hlog[0].w[ULPT_FRAME_INFO]) == 16 && untouched,
          "R-BND-1: a 16-byte store with its last 4 bytes outside is delivered whole, nothing written ("
          FRAME_FMT ")", FRAME_ARGS(&hlog[0]));
}

/* Reading the bounds: only for a denied line the access touches, through paging, never cached. */
static void bnd2_read(void)
{
    uint8_t *b = bndpage, *p = tp[3], *l3 = p + 3 * 128;
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    bnd_set(b, 3, 0, 128);
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b) + 64), ULPT_LINE_NW(3));
    bnd_set(b + 64, 3, 0, 128);
    *pte_of(b) &= ~1ull;                            /* the bounds' page not present */
    invlpg(b);
    hreset(ACT_PERMIT);
    r = run_user_default(u_write8, p + 2 * 128);
    bm_ok(r == 0x80 && run_user_default(u_read8, l3) == 0x80 && hcount == 0,
          "R-BND-2: an access to a line that is not denied for its kind reads no bounds (no #PF)");
    r = run_user_default(u_write8, l3 + 8);
    bm_ok(r == 14 && last_trap.error == PF_U && last_trap.cr2 == va(b) + 64 + 6 && hcount == 0,
          "R-BND-2: the bounds read is a CPL 3 read through paging: #PF without the ULPT bit, CR2 = lo's address (err %lx cr2 %lx)",
          last_trap.error, last_trap.cr2);
    *pte_of(b) |= 1;
    invlpg(b);
    *(volatile uint64_t *)(l3 + 8) = 0;
    bm_ok(run_user_default(u_write8, l3 + 8) == 0x80 && hcount == 0 && *(volatile uint64_t *)(l3 + 8) == 0x55,
          "R-BND-2: once the page is present the instruction runs again and completes");
    /* No copy: a plain store to the bounds applies to the next access. */
    b[64 + 6] = 16;
    bm_ok(run_user_default(u_write8, l3 + 8) == 0x80 && hcount == 1 && hlog[0].w[ULPT_FRAME_ADDR] == va(l3) + 8,
          "R-BND-2: a plain store to the bounds applies to the next access (no view store)");
    b[64 + 6] = 0;
    hreset(ACT_PERMIT);
    bm_ok(run_user_default(u_write8, l3 + 8) == 0x80 && hcount == 0, "R-BND-2: and back");
    /* Bounds in the view: not read, nothing open. */
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(VIEW_BASE), ULPT_LINE_NW(3));
    bm_ok(run_user_default(u_write8, l3 + 8) == 0x80 && hcount == 1 && hlog[0].w[ULPT_FRAME_ADDR] == va(l3) + 8,
          "R-BND-2: bounds in the view open nothing");
    /* Bounds in a page whose own entry denies reads: ULPT does not check their reads (QEMU
       read them only through a TLB entry that its walk for them never installed there). */
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b) + 64), ULPT_LINE_NW(3));
    ulpt_kset(va(b), ULPT_NR | ULPT_NW, ULPT_LINES_NR_ALL | ULPT_LINES_NW_ALL);
    hreset(ACT_PERMIT);
    r = run_user_default(u_write8, l3 + 8);
    bm_ok(r == 0x80 && hcount == 0,
          "R-BND-2: bounds in a page whose entry denies reads are read (vector %lx, deliveries %d)", r, hcount);
    ulpt_kset(va(b), 0, 0);
    /* ... also when that page is the one written: its TLB entry maps it for writes only. */
    bnd_set(p + 64, 3, 0, 128);
    ulpt_kset(va(p), ULPT_NR | ULPT_BOUNDS_FIELD(va(p) + 64), ULPT_LINE_NW(3));
    hreset(ACT_PERMIT);
    r = run_user_default(u_write8, l3 + 8);
    bm_ok(r == 0x80 && hcount == 0,
          "R-BND-2: bounds in the page written, whose entry denies reads, are read (vector %lx, deliveries %d)",
          r, hcount);
}

/* BOUNDS is part of word 0: view stores, the frame, reserved bits around it. */
static void bnd3_entry(void)
{
    uint8_t *b = bndpage, *p = tp[3], *l3 = p + 3 * 128;
    volatile uint64_t *e;

    fresh((uint64_t)ulpt_entry);
    bnd_set(b, 3, 0, 64);
    bnd_set(b + 128, 3, 0, 128);
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)), ULPT_LINE_NW(3));
    bm_ok(bnd_write(l3 + 64, 8) == va(l3) + 64 &&
          hlog[0].w[ULPT_FRAME_ENTRY0] == ULPT_BOUNDS_FIELD(va(b)) &&
          hlog[0].w[ULPT_FRAME_ENTRY1] == ULPT_LINE_NW(3),
          "R-BND-3: the frame carries BOUNDS in word 0 as read (%lx)", hlog[0].w[ULPT_FRAME_ENTRY0]);
    /* A CPL 3 view store that changes BOUNDS: the write right after it sees the new bounds. */
    e = ulpt_view_entry(va(p));
    struct view_args vw = { e, ULPT_BOUNDS_FIELD(va(b) + 128), ULPT_LINE_NW(3), (uint64_t *)(l3 + 64) };
    hreset(ACT_PERMIT);
    bm_ok(run_user_default(u_view_then_write, &vw) == 0x80 && hcount == 0 &&
          *(volatile uint64_t *)(l3 + 64) == 0x1234,
          "R-BND-3: a view store that changes BOUNDS applies to the next access");
    /* Bounds without denied lines restrict nothing and are never read. */
    *pte_of(b) &= ~1ull;
    invlpg(b);
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)), 0);
    bm_ok(bnd_write(l3, 8) == 0,
          "R-BND-3: an entry with bounds and no denied line restricts nothing");
    *pte_of(b) |= 1;
    invlpg(b);
    /* Bits 55:50 stay reserved. */
    ulpt_kset(va(p), ULPT_BOUNDS_FIELD(va(b)) | 1ull << 50, 0);
    hreset(ACT_PERMIT);
    bm_ok(run_user_default(u_read8, p) == 0x80 && hcount == 1 &&
          ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_MALFORMED,
          "R-TBL-2: bit 50, above BOUNDS, is reserved: malformed");
}

/* Exactly once: records appear when the instruction completes; an instruction abandoned by a
   delivery or a fault logs when it runs again; one record per access, two for a RMW. */
struct movs_args { void *src, *dst; };
extern char u_movsq_insn[];
static void __attribute__((noinline)) u_movsq(void *p)
{
    struct movs_args *a = p;
    void *s = a->src, *d = a->dst;
    asm volatile(".globl u_movsq_insn\nu_movsq_insn: movsq" : "+S"(s), "+D"(d) :: "memory");
}
extern char u_cmpsq_insn[];
static void __attribute__((noinline)) u_cmpsq(void *p)
{
    struct movs_args *a = p;
    void *s = a->src, *d = a->dst;
    asm volatile(".globl u_cmpsq_insn\nu_cmpsq_insn: cmpsq" : "+S"(s), "+D"(d) :: "memory", "cc");
}
static void log2_once(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(4, 0);
    /* movs: the read of src is logged, then the write to dst is delivered (PERMIT). */
    ulpt_kset(va(tp[1]), ULPT_LOG | ULPT_NR, 0);
    ulpt_kset(va(tp[2]), 0, ULPT_LINE_NW(0));
    struct movs_args ma = { tp[1], tp[2] };
    r = run_user_default(u_movsq, &ma);
    bm_ok(r == 0x80 && hcount == 1 && log_count() == 1 && rdmsr(MSR_ULPT_LOG_INDEX) == 1 &&
          rec_is(0, va(tp[1]), ULPT_KIND_R, ULPT_REASON_PAGE, 8, (uint64_t)u_movsq_insn),
          "R-LOG-2: movs whose write is delivered after its logged read: one record (%u, index %lu)",
          log_count(), rdmsr(MSR_ULPT_LOG_INDEX));
    /* The same with the write faulting (#PF, page not present): nothing logged, then once. */
    ulpt_kset(va(tp[2]), 0, 0);
    uint64_t *pte = pte_of(tp[2]), old = *pte;
    *pte &= ~1ull;
    invlpg(tp[2]);
    r = run_user_default(u_movsq, &ma);
    int none = r == 14 && log_count() == 1 && rdmsr(MSR_ULPT_LOG_INDEX) == 1;
    *pte = old;
    invlpg(tp[2]);
    r = run_user_default(u_movsq, &ma);
    bm_ok(none && r == 0x80 && log_count() == 2 && rdmsr(MSR_ULPT_LOG_INDEX) == 2,
          "R-LOG-2: a #PF in a later access logs nothing; run again, one record");
    /* A RMW: two records, a read and a write. */
    ulpt_kset(va(tp[3]), ULPT_LOG, ULPT_LINE_NR(1) | ULPT_LINE_NW(1));
    r = run_user_default(u_add, tp[3] + 128);
    unsigned kinds = ULPT_INFO_KIND(rec(2)[ULPT_REC_INFO]) | ULPT_INFO_KIND(rec(3)[ULPT_REC_INFO]);
    bm_ok(r == 0x80 && log_count() == 4 && kinds == (ULPT_KIND_R | ULPT_KIND_W) &&
          rec(2)[ULPT_REC_START] == va(tp[3]) + 128 && rec(3)[ULPT_REC_START] == va(tp[3]) + 128,
          "R-LOG-2: a read-modify-write logs its read and its write");
    /* Straddling two logged lines and two pages: one record of the whole access. */
    ulpt_kset(va(tp[4]), ULPT_LOG, ULPT_LINE_NW(0));
    ulpt_kset(va(tp[3]), ULPT_LOG, ULPT_LINE_NW(31));
    r = run_user_default(u_write8, tp[4] - 4);
    bm_ok(r == 0x80 && log_count() == 5 &&
          rec_is(4, va(tp[4]) - 4, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn),
          "R-LOG-2: a write straddling two logged pages has one record (" REC_FMT ")", REC_ARGS(4));
    /* rep stosb over 3 logged lines: one record per iteration. */
    log_setup(7, 0);
    ulpt_kset(va(tp[5]), ULPT_LOG, ULPT_LINE_NW(0) | ULPT_LINE_NW(1) | ULPT_LINE_NW(2));
    struct rep_args ra = { tp[5] + 100, 0, 120 };
    r = run_user_default(u_stos, &ra);
    bm_ok(r == 0x80 && log_count() == 120 && rec_is(0, va(tp[5]) + 100, ULPT_KIND_W, ULPT_REASON_LINE, 1,
                                                    (uint64_t)u_stos_insn) &&
          rec(119)[ULPT_REC_START] == va(tp[5]) + 219,
          "R-LOG-2: rep stosb of 120 bytes over logged lines: 120 records, one per iteration (%u)", log_count());
    /* A wide store that logs nothing (its line open; another line of the page denied, so
     * QEMU checks it whole) leaves nothing behind: a later store in its bytes, once its
     * line is denied, has its record. (A calloc's memset, then the program's first store.) */
    enable_fpu();
    log_setup(4, 0);
    ulpt_kset(va(tp[6]), ULPT_LOG, ULPT_LINE_NW(5));
    uint64_t r1 = run_user_default(u_movdqu_st, tp[6] + 256);
    int n1 = log_count();
    ulpt_kset(va(tp[6]), ULPT_LOG, ULPT_LINE_NW(5) | ULPT_LINE_NW(2));
    r = run_user_default(u_write8, tp[6] + 264);
    bm_ok(r1 == 0x80 && n1 == 0 && r == 0x80 && log_count() == 1 &&
          rec_is(0, va(tp[6]) + 264, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn),
          "R-LOG-2: a wide store that logs nothing leaves no cover: the next store in its bytes is logged (%lx %d, %u, " REC_FMT ")",
          r1, n1, log_count(), REC_ARGS(0));
    ulpt_kset(va(tp[6]), 0, 0);
}

/* R-LOG-3: a fault on the log's memory is the #PF of that write, at the instruction, which
   is not done; the slot's words, V last. */
static void log3_fault(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(4, 0);
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[1] = 0;
    uint64_t *pte = pte_of(logbuf), old = *pte;
    *pte &= ~2ull;                                 /* the log read-only */
    invlpg(logbuf);
    r = run_user_default(u_write8, tp[1]);
    *pte = old;
    invlpg(logbuf);
    bm_ok(r == 14 && last_trap.cr2 == va(logbuf) && (last_trap.error & PF_W) &&
          !(last_trap.error & ULPT_PF_ERROR_BIT) && last_trap.rip == (uint64_t)u_write8_insn &&
          *(volatile uint64_t *)tp[1] == 0 && rdmsr(MSR_ULPT_LOG_INDEX) == 0,
          "R-LOG-3: a read-only log: #PF of the record's write (cr2 %lx err %lx), the store not made",
          last_trap.cr2, last_trap.error);
    r = run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && log_count() == 1 && *(volatile uint64_t *)tp[1] == 0x55,
          "R-LOG-3: writable again, the instruction logs and completes");
    /* VAL for writes the check sees in parts: one from an open page into a logged one, and a
       locked read-modify-write (its new value). */
    ulpt_kset(va(tp[2]), ULPT_LOG, ULPT_LINE_NW(0));
    *(volatile uint64_t *)(tp[1] + 128) = 41;
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NR(1) | ULPT_LINE_NW(1));
    r = run_user_default(u_write8, tp[2] - 4);
    r |= run_user_default(u_lock_add, tp[1] + 128);
    int w1 = 0, w2 = 0;
    for (unsigned i = 1; i < log_nslots; i++) {
        uint64_t info = rec(i)[ULPT_REC_INFO];
        if ((info & ULPT_REC_V) && ULPT_INFO_KIND(info) == ULPT_KIND_W && (info & ULPT_REC_VAL)) {
            w1 += rec(i)[ULPT_REC_START] == va(tp[2]) - 4 && rec(i)[ULPT_REC_VALUE] == 0x55;
            w2 += rec(i)[ULPT_REC_START] == va(tp[1]) + 128 && rec(i)[ULPT_REC_VALUE] == 42;
        }
    }
    bm_ok((r & ~0x80ull) == 0 && w1 == 1 && w2 == 1,
          "R-LOG-3: a write across into a logged page and a locked add have VAL and the bytes written "
          "(%d %d; " REC_FMT "; " REC_FMT "; " REC_FMT ")", w1, w2, REC_ARGS(1), REC_ARGS(2), REC_ARGS(3));
}

/* R-LOG-4: a full log is a FULL violation at the access; the handler consumes and it runs
   again; without a handler it escalates. */
static void log4_full(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(1, 0);                               /* 2 slots */
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0) | ULPT_LINE_NW(1));
    run_user_default(u_write8, tp[1]);
    run_user_default(u_write8, tp[1] + 8);
    bm_ok(hcount == 0 && log_count() == 2, "R-LOG-4: two records fill a log of 2");
    *(volatile uint64_t *)(tp[1] + 128) = 0;
    r = run_user_default(u_write8, tp[1] + 128);
    bm_ok(r == 0x80 && hcount == 1 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_FULL &&
          frame_is(&hlog[0], ULPT_KIND_W, va(tp[1]) + 128, va(tp[1]) + 128, 8) &&
          hlog[0].w[ULPT_FRAME_RIP] == (uint64_t)u_write8_insn && log_drained == 2 && log_count() == 1 &&
          rec_is(0, va(tp[1]) + 128, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn) &&
          *(volatile uint64_t *)(tp[1] + 128) == 0x55,
          "R-LOG-4: the third: FULL delivered at the access, drained, run again and logged in slot 0 ("
          FRAME_FMT ")", FRAME_ARGS(&hlog[0]));
    /* 1,000 stores through a log of 2: none lost, none repeated. */
    hcount = 0;
    log_drained = 0;
    log_setup(1, 0);
    struct loop_args la = { (uint64_t *)tp[1], 1000 };
    r = run_user_default(u_loop, &la);
    bm_ok(r == 0x80 && log_drained + log_count() == 1000 && rdmsr(MSR_ULPT_LOG_INDEX) == 1000,
          "R-LOG-4: 1,000 logged stores through 2 slots: %u drained + %u left", log_drained, log_count());
    fresh(0);
    log_setup(1, 0);
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    run_user_default(u_write8, tp[1]);
    run_user_default(u_write8, tp[1]);
    r = run_user_default(u_write8, tp[1] + 4);
    bm_ok(escalated(r, ULPT_KIND_W, va(tp[1]) + 4) && log_count() == 2,
          "R-LOG-4: a full log without a handler escalates (#PF, ULPT bit)");
}

/* R-LOG-5: the log event after the instruction whose record reaches THRESH waiting. */
static void log5_event(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_PERMIT);                             /* a LOG event: keep the records */
    log_setup(2, 2);                               /* 4 slots, event at 2 waiting */
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0) | ULPT_LINE_NW(1));
    r = run_user_default(u_write8_next, tp[1]);
    bm_ok(r == 0x80 && hcount == 0 && log_count() == 1, "R-LOG-5: one record waiting: no event");
    r = run_user_default(u_write8_next, tp[1] + 128);
    bm_ok(r == 0x80 && hcount == 1 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_LOG &&
          hlog[0].w[ULPT_FRAME_RIP] == (uint64_t)u_write8_next_after &&
          hlog[0].w[ULPT_FRAME_ENTRY0] == 2 && hlog[0].w[ULPT_FRAME_ADDR] == 0 &&
          ULPT_INFO_KIND(hlog[0].w[ULPT_FRAME_INFO]) == 0 && log_count() == 2,
          "R-LOG-5: two waiting: a LOG event before the next instruction (rip %lx, index %lu)",
          hlog[0].w[ULPT_FRAME_RIP], hlog[0].w[ULPT_FRAME_ENTRY0]);
    /* Consumed in the handler: no event until THRESH wait again; level-triggered after. */
    hreset(ACT_DRAIN);
    log_drain();
    log_drained = 0;
    r = run_user_default(u_write8_next, tp[1]);
    int quiet = r == 0x80 && hcount == 0;
    r = run_user_default(u_write8_next, tp[1]);
    bm_ok(quiet && r == 0x80 && hcount == 1 && log_drained == 2 && log_count() == 0,
          "R-LOG-5: drained, the event comes again at 2 waiting, and the handler drains them");
    /* Inside the handler there is no event; the next record outside brings it. */
    hreset(ACT_PERMIT);
    wrmsr(MSR_ULPT_STATUS, ULPT_STATUS_IN_HANDLER);
    run_user_default(u_write8_next, tp[1]);
    run_user_default(u_write8_next, tp[1]);
    wrmsr(MSR_ULPT_STATUS, 0);
    quiet = hcount == 0 && log_count() == 2;
    run_user_default(u_write8_next, tp[1]);
    bm_ok(quiet && hcount == 1 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_LOG,
          "R-LOG-5: no event inside the handler; the next record outside brings it");
}

/* R-LOG-6: the slot's V is the only handshake: a slot cleared by software is reused, one still
   valid stops the CPU (FULL) even when the index says it could go on. */
static void log6_slots(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_PERMIT);
    log_setup(1, 0);
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    run_user_default(u_write8, tp[1]);
    run_user_default(u_write8, tp[1]);
    rec(0)[ULPT_REC_INFO] = 0;                     /* consumed out of order: slot 0 only */
    r = run_user_default(u_write8, tp[1]);
    int reused = r == 0x80 && hcount == 0 && log_count() == 2;
    rec(1)[ULPT_REC_INFO] = 0;
    r = run_user_default(u_write8, tp[1]);          /* index 3: slot 1, free */
    r |= run_user_default(u_write8, tp[1]);         /* index 4: slot 0, still valid */
    bm_ok(reused && hcount == 1 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_FULL,
          "R-LOG-6: a slot cleared by software is reused; a valid slot is never overwritten");
}

/* R-LOG-7: the index says where the next record goes; records already written stay. */
static void log7_index(void)
{
    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(3, 0);
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    run_user_default(u_write8, tp[1]);
    wrmsr(MSR_ULPT_LOG_INDEX, 13);                 /* slot 5 */
    run_user_default(u_write8, tp[1] + 8);
    bm_ok(log_count() == 2 && rec_is(0, va(tp[1]), ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn) &&
          rec_is(5, va(tp[1]) + 8, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn) &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 14,
          "R-LOG-7: after INDEX = 13 the next record is in slot 5, the first stays in slot 0");
}

/* Sets bits in word 0 of the entry with a read-modify-write (the view's entry then is warm for
   loads, as in a library that ORs rights in), then calls the page. */
static void u_view_or_then_call(void *v)
{
    struct view_args *a = v;
    a->entry[0] |= a->page;
    u_call(tp[2]);
}

/* R-COH-5 with a malformed entry: a page whose code ran before stops being fetched once one
   store makes its entry malformed (a reserved bit, NX clear); 20 times in a row. */
static void coh5_malformed(void)
{
    unsigned bad = 0;

    fresh(0);
    tp[2][0] = 0xc3;                                   /* ret */
    for (int i = 0; i < 20; i++) {
        uint64_t r;
        ulpt_kset(va(tp[2]), 0, 0);
        if (run_user_default(u_call, tp[2]) != 0x80) {
            bad++;
            continue;
        }
        struct view_args mf = { ulpt_view_entry(va(tp[2])), 1ull << 3, 0, 0 };
        r = run_user_default(i & 1 ? u_view_then_call : u_view_or_then_call, &mf);
        bad += !escalated(r, ULPT_KIND_X, va(tp[2]));
    }
    ulpt_kset(va(tp[2]), 0, 0);
    bm_ok(bad == 0, "R-COH-5: after one store making the entry malformed, a call into code that ran faults (%u of 20 missed)", bad);
}

/* === Section 6.3: counting ============================================================== */

/* A count table covering tp[0..7] (256 lines, 16 bytes each: one page), every counter 0. */
static uint8_t cntbuf[PAGE] __attribute__((aligned(4096)));
static uint64_t cnt_base(void) { return va(cntbuf) - (va(tp[0]) >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE; }
static void cnt_setup(void)
{
    for (unsigned i = 0; i < PAGE; i++)
        cntbuf[i] = 0;
    for (unsigned i = 0; i < PAGE; i++)
        logbuf[i] = 0;
    log_nslots = 1;
    wrmsr(MSR_ULPT_LOG_BASE, cnt_base());
    wrmsr(MSR_ULPT_LOG_CTL, ULPT_LOG_CTL_COUNT);
    wrmsr(MSR_ULPT_LOG_INDEX, 0);
}
/* The counter of `word` (ULPT_CNT_READ or _WRITE) of the line that holds p. */
static volatile uint64_t *cnt(void *p, unsigned word)
{
    return (volatile uint64_t *)(cntbuf + ((va(p) - va(tp[0])) >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE) + word;
}
static uint64_t cnt_sum(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < PAGE / 8; i++)
        n += ((volatile uint64_t *)cntbuf)[i];
    return n;
}

/* R-CNT-1: a logged access adds one to its kind's counter in the line of its first byte, when
   the instruction completes; a straddle once, a RMW one each, a REP string per iteration; no
   record, no event, no full slot. */
static void cnt1_counted(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_PERMIT);
    cnt_setup();
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[1] = 0;
    r = run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && hcount == 0 && *(volatile uint64_t *)tp[1] == 0x55 && *cnt(tp[1], ULPT_CNT_WRITE) == 1 &&
          cnt_sum() == 1 && rdmsr(MSR_ULPT_LOG_INDEX) == 1 && logbuf[8] == 0 && logbuf[0] == 0,
          "R-CNT-1: a write to a line a LOG entry denies is made and counted (write counter %lu, index %lu), no record",
          *cnt(tp[1], ULPT_CNT_WRITE), rdmsr(MSR_ULPT_LOG_INDEX));
    ulpt_kset(va(tp[1]), ULPT_LOG | ULPT_NR, 0);
    r = run_user_default(u_read8, tp[1] + 200);
    bm_ok(r == 0x80 && hcount == 0 && *cnt(tp[1] + 128, ULPT_CNT_READ) == 1 && cnt_sum() == 2,
          "R-CNT-1: a read a LOG entry's page rights deny adds to its line's read counter");
    /* A RMW: one read and one write. */
    ulpt_kset(va(tp[3]), ULPT_LOG, ULPT_LINE_NR(1) | ULPT_LINE_NW(1));
    r = run_user_default(u_add, tp[3] + 128);
    r |= run_user_default(u_lock_add, tp[3] + 136);
    bm_ok(r == 0x80 && *cnt(tp[3] + 128, ULPT_CNT_READ) == 2 && *cnt(tp[3] + 128, ULPT_CNT_WRITE) == 2 &&
          cnt_sum() == 6, "R-CNT-1: a read-modify-write (plain and locked) adds one to each counter");
    r = run_user_default(u_lock_neg, tp[3] + 200);
    bm_ok(r == 0x80 && *cnt(tp[3] + 128, ULPT_CNT_READ) == 3 && *cnt(tp[3] + 128, ULPT_CNT_WRITE) == 3 &&
          cnt_sum() == 8, "R-CNT-1: a locked NEG adds one to each counter (read %lu write %lu)",
          *cnt(tp[3] + 128, ULPT_CNT_READ), *cnt(tp[3] + 128, ULPT_CNT_WRITE));
    /* CMPS with RSI = RDI reads the same bytes twice: one access (R-LOG-2). */
    struct movs_args same = { tp[3] + 160, tp[3] + 160 };
    r = run_user_default(u_cmpsq, &same);
    bm_ok(r == 0x80 && *cnt(tp[3] + 128, ULPT_CNT_READ) == 4 && cnt_sum() == 9,
          "R-CNT-1: cmps with RSI = RDI reads its bytes once (read counter %lu)", *cnt(tp[3] + 128, ULPT_CNT_READ));
    /* Straddling two lines of two pages: once, in the line of the first byte. */
    ulpt_kset(va(tp[4]), ULPT_LOG, ULPT_LINE_NW(0));
    ulpt_kset(va(tp[3]), ULPT_LOG, ULPT_LINE_NW(31));
    r = run_user_default(u_write8, tp[4] - 4);
    bm_ok(r == 0x80 && *cnt(tp[4] - 4, ULPT_CNT_WRITE) == 1 && *cnt(tp[4], ULPT_CNT_WRITE) == 0 &&
          cnt_sum() == 10, "R-CNT-1: a write straddling two counted pages adds one, in its first byte's line");
    /* rep stosb of 120 bytes from offset 100: 28 in line 0, 92 in line 1. */
    ulpt_kset(va(tp[5]), ULPT_LOG, ULPT_LINE_NW(0) | ULPT_LINE_NW(1));
    struct rep_args ra = { tp[5] + 100, 0, 120 };
    r = run_user_default(u_stos, &ra);
    bm_ok(r == 0x80 && *cnt(tp[5], ULPT_CNT_WRITE) == 28 && *cnt(tp[5] + 128, ULPT_CNT_WRITE) == 92 &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 130,
          "R-CNT-1: rep stosb of 120 bytes: one per iteration (%lu + %lu, index %lu)",
          *cnt(tp[5], ULPT_CNT_WRITE), *cnt(tp[5] + 128, ULPT_CNT_WRITE), rdmsr(MSR_ULPT_LOG_INDEX));
    /* movs whose write faults (#PF): nothing counted; run again, once. */
    ulpt_kset(va(tp[6]), ULPT_LOG | ULPT_NR, 0);
    struct movs_args ma = { tp[6], tp[2] };
    uint64_t *pte = pte_of(tp[2]), old = *pte;
    *pte &= ~1ull;
    invlpg(tp[2]);
    r = run_user_default(u_movsq, &ma);
    int none = r == 14 && *cnt(tp[6], ULPT_CNT_READ) == 0 && rdmsr(MSR_ULPT_LOG_INDEX) == 130;
    *pte = old;
    invlpg(tp[2]);
    r = run_user_default(u_movsq, &ma);
    bm_ok(none && r == 0x80 && *cnt(tp[6], ULPT_CNT_READ) == 1 && rdmsr(MSR_ULPT_LOG_INDEX) == 131,
          "R-CNT-1: an instruction a #PF abandons counts nothing; run again, once");
    /* 1,000 stores to one line: no slot fills, no event, no delivery. */
    hcount = 0;
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    for (int i = 0; i < 1000; i++)
        r |= run_user_default(u_write8, tp[1] + 8);
    bm_ok(r == 0x80 && hcount == 0 && *cnt(tp[1], ULPT_CNT_WRITE) == 1001,
          "R-CNT-1: 1,000 more stores to one line: counted (%lu), never full, no event, no delivery",
          *cnt(tp[1], ULPT_CNT_WRITE));
    /* A fetch is never counted; a part denied without LOG is delivered, not counted. */
    hcount = 0;
    uint64_t before = cnt_sum();
    tp[7][0] = 0xc3;
    ulpt_kset(va(tp[7]), ULPT_LOG | ULPT_NX, 0);
    r = run_user_default(u_call, tp[7]);
    ulpt_kset(va(tp[7]), 0, ULPT_LINE_NW(0));
    ulpt_kset(va(tp[6]), ULPT_LOG, ULPT_LINE_NW(31));
    r |= run_user_default(u_write8, tp[7] - 4);
    bm_ok(r == 0x80 && hcount == 2 && cnt_sum() == before,
          "R-CNT-1: a fetch and an access with a part denied without LOG are delivered, not counted");
    /* With LOG_BASE 0 the same entries deliver. */
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    hcount = 0;
    r = run_user_default(u_write8, tp[1]);
    wrmsr(MSR_ULPT_LOG_BASE, cnt_base());
    bm_ok(r == 0x80 && hcount == 1 && *cnt(tp[1], ULPT_CNT_WRITE) == 1001,
          "R-CNT-1: with LOG_BASE 0 the access is delivered and not counted");
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    wrmsr(MSR_ULPT_LOG_CTL, 0);
}

/* R-CNT-2: the counter is written through paging, not ULPT: its #PF at the instruction, which
   is not made; a counter that is not canonical or in the view is a FULL violation; it wraps. */
static void cnt2_addition(void)
{
    uint64_t r;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_PERMIT);
    cnt_setup();
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[1] = 0;
    uint64_t *pte = pte_of(cntbuf), old = *pte;
    *pte &= ~2ull;                                 /* the table read-only */
    invlpg(cntbuf);
    r = run_user_default(u_write8, tp[1]);
    *pte = old;
    invlpg(cntbuf);
    bm_ok(r == 14 && last_trap.cr2 == (uint64_t)cnt(tp[1], ULPT_CNT_WRITE) && (last_trap.error & PF_W) &&
          !(last_trap.error & ULPT_PF_ERROR_BIT) && last_trap.rip == (uint64_t)u_write8_insn &&
          *(volatile uint64_t *)tp[1] == 0 && rdmsr(MSR_ULPT_LOG_INDEX) == 0 && cnt_sum() == 0,
          "R-CNT-2: a read-only table: #PF of the counter's write (cr2 %lx err %lx), the store not made",
          last_trap.cr2, last_trap.error);
    r = run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && *cnt(tp[1], ULPT_CNT_WRITE) == 1 && *(volatile uint64_t *)tp[1] == 0x55,
          "R-CNT-2: writable again, the instruction counts and completes");
    /* It wraps at 2^64. */
    *cnt(tp[1], ULPT_CNT_WRITE) = ~0ull;
    r = run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && *cnt(tp[1], ULPT_CNT_WRITE) == 0 && hcount == 0, "R-CNT-2: a counter wraps at 2^64");
    /* A counter that is not canonical: FULL, delivered at the access; PERMIT: through, uncounted. */
    wrmsr(MSR_ULPT_LOG_BASE, 0x00007fffffffffe0ull);
    r = run_user_default(u_write8, tp[1] + 16);
    bm_ok(r == 0x80 && hcount == 1 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_FULL &&
          hlog[0].w[ULPT_FRAME_START] == va(tp[1]) + 16 && hlog[0].w[ULPT_FRAME_RIP] == (uint64_t)u_write8_insn &&
          cnt_sum() == 0 && rdmsr(MSR_ULPT_LOG_INDEX) == 2,
          "R-CNT-2: a counter that is not canonical: FULL at the access (info %lx); PERMIT lets it through uncounted",
          hlog[0].w[ULPT_FRAME_INFO]);
    /* A counter in the view: FULL, the table untouched. */
    uint64_t vbase = VIEW_BASE - (va(tp[0]) >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE;
    uint64_t e0 = ulpt_view_entry(va(tp[0]))[0], e1 = ulpt_view_entry(va(tp[0]))[1];
    wrmsr(MSR_ULPT_LOG_BASE, vbase);
    r = run_user_default(u_write8, tp[1] + 24);
    bm_ok(r == 0x80 && hcount == 2 && ULPT_INFO_REASON(hlog[1].w[ULPT_FRAME_INFO]) == ULPT_REASON_FULL &&
          ulpt_view_entry(va(tp[0]))[0] == e0 && ulpt_view_entry(va(tp[0]))[1] == e1,
          "R-CNT-2: a counter in the view: FULL, the table not written");
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    wrmsr(MSR_ULPT_LOG_CTL, 0);
}

/* R-CNT-1/2 on a warm page: once a line's stores have been counted, QEMU counts the next ones
   in its generated code. They count once each, in ULPT_LOG_INDEX too; the counter's page made
   read-only (one INVLPG of it) faults at the next store; a new LOG_BASE counts there at once. */
static void cnt_warm(void)
{
    uint64_t r = 0;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_PERMIT);
    cnt_setup();
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    for (int i = 0; i < 50; i++)
        r |= run_user_default(u_write8, tp[1] + 8 * (i & 7));
    bm_ok(r == 0x80 && hcount == 0 && *cnt(tp[1], ULPT_CNT_WRITE) == 50 && cnt_sum() == 50 &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 50,
          "R-CNT-1: 50 stores to a warm line: counter %lu, index %lu", *cnt(tp[1], ULPT_CNT_WRITE),
          rdmsr(MSR_ULPT_LOG_INDEX));
    uint64_t *pte = pte_of(cntbuf), old = *pte;
    *(volatile uint64_t *)tp[1] = 0;
    *pte &= ~2ull;
    invlpg(cntbuf);
    r = run_user_default(u_write8, tp[1]);
    *pte = old;
    invlpg(cntbuf);
    bm_ok(r == 14 && last_trap.cr2 == (uint64_t)cnt(tp[1], ULPT_CNT_WRITE) && (last_trap.error & PF_W) &&
          *(volatile uint64_t *)tp[1] == 0 && *cnt(tp[1], ULPT_CNT_WRITE) == 50 &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 50,
          "R-CNT-2: after warm stores, the table made read-only: #PF of the counter's write (r %lx), the store not made",
          r);
    r = run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && *cnt(tp[1], ULPT_CNT_WRITE) == 51 && *(volatile uint64_t *)tp[1] == 0x55,
          "R-CNT-2: writable again, counted (%lu)", *cnt(tp[1], ULPT_CNT_WRITE));
    /* Another table: the next stores count there, none in the old one. */
    for (unsigned i = 0; i < PAGE; i++)
        logbuf[i] = 0;
    wrmsr(MSR_ULPT_LOG_BASE, va(logbuf) - (va(tp[0]) >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE);
    r = 0;
    for (int i = 0; i < 3; i++)
        r |= run_user_default(u_write8, tp[1]);
    uint64_t moved = *(volatile uint64_t *)(logbuf +
                                            ((va(tp[1]) - va(tp[0])) >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE + 8);
    bm_ok(r == 0x80 && moved == 3 && *cnt(tp[1], ULPT_CNT_WRITE) == 51 && rdmsr(MSR_ULPT_LOG_INDEX) == 54,
          "R-LOG-7: a new LOG_BASE: warm stores count in the new table (%lu), not the old", moved);
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    wrmsr(MSR_ULPT_LOG_CTL, 0);
}

/* The same for records (R-LOG-2 to R-LOG-5): stores to a warm line of a logged page, where QEMU
   appends the records in its generated code, still fill the slots in order with every field,
   report FULL at a slot in use (one that software set V in too), deliver the log event at
   THRESH, and take the #PF of a slot's write. */
static void log_warm(void)
{
    uint64_t r = 0;
    int ok = 1;

    fresh((uint64_t)ulpt_entry);
    hreset(ACT_DRAIN);
    log_setup(6, 0);                               /* 64 slots */
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NW(0));
    for (int i = 0; i < 50; i++)
        r |= run_user_default(u_write8, tp[1] + 8 * (i & 7));
    for (int i = 0; i < 50; i++)
        ok &= rec_is(i, va(tp[1]) + 8 * (i & 7), ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn) &&
              (rec(i)[ULPT_REC_INFO] & ULPT_REC_VAL) && rec(i)[ULPT_REC_VALUE] == 0x55;
    bm_ok(r == 0x80 && hcount == 0 && ok && log_count() == 50 && !(rec(50)[ULPT_REC_INFO] & ULPT_REC_V),
          "R-LOG-3: 50 stores to a warm line: 50 records in slots 0-49, every field (index %u; " REC_FMT ")",
          log_count(), REC_ARGS(49));

    /* R-LOG-4: four slots; the fifth store finds slot 0 in use, the sixth slot 1, set by software. */
    hreset(ACT_DRAIN);
    log_setup(2, 0);
    r = 0;
    for (int i = 0; i < 5; i++)
        r |= run_user_default(u_write8, tp[1] + 8 * i);
    int full1 = hcount == 1 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_FULL &&
                rec_is(0, va(tp[1]) + 32, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn);
    rec(1)[ULPT_REC_INFO] = ULPT_REC_V;
    r |= run_user_default(u_write8, tp[1] + 40);
    bm_ok(r == 0x80 && full1 && hcount == 2 && ULPT_INFO_REASON(hlog[1].w[ULPT_FRAME_INFO]) == ULPT_REASON_FULL &&
          rec_is(1, va(tp[1]) + 40, ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn) &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 6,
          "R-LOG-4: warm stores: FULL at a slot in use, also one software set V in (%u deliveries, index %lu)",
          hcount, rdmsr(MSR_ULPT_LOG_INDEX));

    /* R-LOG-5: THRESH 4 of 16: a log event after the 4th and the 8th record. */
    hreset(ACT_DRAIN);
    log_setup(4, 4);
    r = 0;
    for (int i = 0; i < 10; i++)
        r |= run_user_default(u_write8, tp[1] + 8 * (i & 7));
    bm_ok(r == 0x80 && hcount == 2 && ULPT_INFO_REASON(hlog[0].w[ULPT_FRAME_INFO]) == ULPT_REASON_LOG &&
          hlog[0].w[ULPT_FRAME_ENTRY0] == 4 && ULPT_INFO_REASON(hlog[1].w[ULPT_FRAME_INFO]) == ULPT_REASON_LOG &&
          hlog[1].w[ULPT_FRAME_ENTRY0] == 8 && log_drained == 8 && log_count() == 2 &&
          rdmsr(MSR_ULPT_LOG_INDEX) == 10,
          "R-LOG-5: warm stores, THRESH 4: log events at index 4 and 8 (%u events; %lu, %lu)", hcount,
          hlog[0].w[ULPT_FRAME_ENTRY0], hlog[1].w[ULPT_FRAME_ENTRY0]);

    /* R-LOG-3: the log's page made read-only after warm stores: the #PF of the slot's write. */
    hreset(ACT_DRAIN);
    log_setup(6, 0);
    r = 0;
    for (int i = 0; i < 3; i++)
        r |= run_user_default(u_write8, tp[1]);
    *(volatile uint64_t *)tp[1] = 0;
    uint64_t *pte = pte_of(logbuf), old = *pte;
    *pte &= ~2ull;
    invlpg(logbuf);
    uint64_t rf = run_user_default(u_write8, tp[1]);
    *pte = old;
    invlpg(logbuf);
    int faulted = rf == 14 && last_trap.cr2 == (uint64_t)rec(3) && (last_trap.error & PF_W) &&
                  *(volatile uint64_t *)tp[1] == 0 && log_count() == 3;
    r |= run_user_default(u_write8, tp[1]);
    bm_ok(r == 0x80 && faulted && log_count() == 4 && *(volatile uint64_t *)tp[1] == 0x55 &&
          rec_is(3, va(tp[1]), ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_write8_insn),
          "R-LOG-3: warm stores, the log made read-only: #PF of the slot's write (r %lx), the store not made; "
          "writable again, logged", rf);

    /* R-LOG-2: a read-modify-write on a line that denies both, warm: its read's record, then its
       write's (the store then follows a logged access of its instruction: the C call). */
    hreset(ACT_DRAIN);
    log_setup(6, 0);
    ulpt_kset(va(tp[1]), ULPT_LOG, ULPT_LINE_NR(0) | ULPT_LINE_NW(0));
    *(volatile uint64_t *)tp[1] = 0;
    r = 0;
    for (int i = 0; i < 3; i++)
        r |= run_user_default(u_add_next, tp[1]);
    ok = 1;
    for (int i = 0; i < 3; i++)
        ok &= rec_is(2 * i, va(tp[1]), ULPT_KIND_R, ULPT_REASON_LINE, 8, (uint64_t)u_add_next_insn) &&
              rec_is(2 * i + 1, va(tp[1]), ULPT_KIND_W, ULPT_REASON_LINE, 8, (uint64_t)u_add_next_insn) &&
              rec(2 * i + 1)[ULPT_REC_VALUE] == (uint64_t)i + 1;
    bm_ok(r == 0x80 && hcount == 0 && ok && log_count() == 6 && *(volatile uint64_t *)tp[1] == 3,
          "R-LOG-2: three warm ADDs on a line denying both: read then write records, in order, values 1-3 "
          "(" REC_FMT "; " REC_FMT ")", REC_ARGS(4), REC_ARGS(5));
    wrmsr(MSR_ULPT_LOG_BASE, 0);
    wrmsr(MSR_ULPT_LOG_CTL, 0);
}

static const struct test_case absent_tests[] = {
    { "R-ENUM-1", enum1_absent, 1 },
    { "R-ENUM-2", enum2_absent, 3 },
};

/* On a CPU with ULPT; R-STATE-1 runs before anything writes the MSRs. */
static const struct test_case ulpt_tests[] = {
    { "R-ENUM-1", enum1_present, 1 },
    { "R-STATE-1", state1_reset, 1 },
    { "R-MSR-1", msr1_readback, 9 },
    { "R-MSR-2", msr2_limits, 5 },
    { "R-MSR-3", msr3_apply, 3 },
    { "R-TBL-1:page", tbl1_page, 6 },
    { "R-TBL-1:lines", tbl1_lines, 3 },
    { "R-TBL-1:fast-path", tbl1_fast_path, 4 },
    { "R-TBL-1:empty-entry", tbl1_empty_entry, 1 },
    { "R-TBL-1:inline", tbl1_inline_lines, 4 },
    { "gdbstub-target", tbl1_gdbstub_target, 1 },   /* for tests/suites/gdbstub.sh */
    { "R-TBL-2", tbl2_malformed, 3 },
    { "R-COH-1", coh1_view_store, 5 },
    { "R-COH-1:fast-path", coh1_fast_path, 4 },
    { "R-COH-1:warm-lines", coh1_warm_lines, 5 },
    { "R-COH-3", coh3_view, 1 },
    { "R-COH-4", coh4_kernel_store, 2 },
    { "R-COH-5", coh5_nx, 3 },
    { "R-COH-5:malformed", coh5_malformed, 1 },
    { "R-ACC-1:straddle", acc1_straddle, 3 },
    { "R-ACC-1:instructions", acc1_instructions, 4 },
    { "R-ACC-1:cross-page", acc1_cross_page, 12 },
    { "R-ACC-1:inline-straddle", acc1_inline_straddle, 2 },
    { "R-ACC-1:fast-path-code", acc1_fast_path_code, 3 },
    { "R-ACC-2", acc2_cpl0, 1 },
    { "R-ACC-3", acc3_paging_first, 6 },
    { "R-ACC-4", acc4_rep, 1 },
    { "R-DEL-1:frame", del1_frame, 7 },
    { "R-DEL-1:whole-access", del1_whole_access, 7 },
    { "R-DEL-1:fetch", del1_fetch, 2 },
    { "R-DEL-1:red-zone", del1_red_zone, 1 },
    { "R-DEL-1:handler-not-present", del1_handler_not_present, 2 },
    { "R-DEL-2", del2_frame_fault, 2 },
    { "R-ESC-1", esc1_in_handler, 2 },
    { "R-RET-1:faults", ret1_faults, 4 },
    { "R-RET-1:flags", ret1_flags, 2 },
    { "R-RET-1:tf", ret1_tf, 1 },
    { "R-RET-2", ret2_permit_once, 2 },
    { "R-RET-2:rep", ret2_rep, 1 },
    { "R-RET-2:uiret-tf", ret2_uiret_tf, 2 },
    { "R-RET-3", ret3_rmw, 3 },
    { "R-RET-3:order", ret3_rmw_order, 4 },
    { "R-DEL-1:no-state", del1_no_state, 4 },
    { "R-RET-4:store", ret4_store, 3 },
    { "R-RET-4:load", ret4_load, 1 },
    { "R-RET-4:rmw", ret4_rmw, 1 },
    { "R-RET-4:rep", ret4_rep, 1 },
    { "R-RET-4:next-faults", ret4_next_faults, 1 },
    { "R-RET-4:step-alone", ret4_step_alone, 1 },
    { "R-RET-4:step-alone-fetch", ret4_step_alone_fetch, 1 },
    { "R-RET-4:insn-faults", ret4_insn_faults, 3 },
    { "R-RET-4:irq", ret4_irq, 1 },
    { "R-RET-4:tf", ret4_tf, 3 },
    { "R-RET-4:frame-fault", ret4_frame_fault, 2 },
    { "R-LOG-1", log1_logged, 6 },
    { "R-LOG-2", log2_once, 6 },
    { "R-LOG-3", log3_fault, 3 },
    { "R-LOG-4", log4_full, 4 },
    { "R-LOG-5", log5_event, 4 },
    { "R-LOG-6", log6_slots, 1 },
    { "R-LOG-7", log7_index, 1 },
    { "R-CNT-1", cnt1_counted, 11 },
    { "R-CNT-2", cnt2_addition, 5 },
    { "R-CNT-2:warm", cnt_warm, 4 },
    { "R-LOG-2:warm", log_warm, 5 },
    { "R-BND-1", bnd1_open, 15 },
    { "R-BND-2", bnd2_read, 8 },
    { "R-BND-3", bnd3_entry, 4 },
};

void tests(void)
{
    unsigned a, b, c, d;

    __cpuid_count(7, 0, a, b, c, d);
    if (!((d >> ULPT_CPUID_EDX_BIT) & 1))
        bm_run(absent_tests, BM_NTESTS(absent_tests));
    bm_run(ulpt_tests, BM_NTESTS(ulpt_tests));
}
