/* Bare-metal harness runtime; see bm.h. */
#include "bm.h"

struct last_trap last_trap;
uint8_t user_stack[USER_STACK_SIZE] __attribute__((aligned(4096)));
static uint8_t kstack[4 * PAGE] __attribute__((aligned(16)));
extern uint64_t pml4[], pdpt[], pt0[];
extern uint64_t gdt_tss[2];

static inline void outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" :: "a"(v), "Nd"(port)); }
static inline void outl(uint16_t port, uint32_t v) { asm volatile("outl %0, %1" :: "a"(v), "Nd"(port)); }

static void putc_(char c) { outb(0xe9, (uint8_t)c); }
static void puts_(const char *s) { while (*s) putc_(*s++); }

static void putnum(uint64_t v, unsigned base, int neg, int width, char pad)
{
    char buf[24];
    int n = 0;
    do {
        buf[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (neg) buf[n++] = '-';
    while (n < width--) putc_(pad);
    while (n) putc_(buf[--n]);
}

static void vprint(const char *f, va_list ap)
{
    for (; *f; f++) {
        if (*f != '%') { putc_(*f); continue; }
        f++;
        char pad = ' ';
        int width = 0, lng = 0;
        if (*f == '0') { pad = '0'; f++; }
        while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
        while (*f == 'l') { lng = 1; f++; }
        switch (*f) {
        case 'd': {
            int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
            putnum(v < 0 ? -(uint64_t)v : (uint64_t)v, 10, v < 0, width, pad);
            break;
        }
        case 'u': putnum(lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 10, 0, width, pad); break;
        case 'x': putnum(lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 16, 0, width, pad); break;
        case 'p': puts_("0x"); putnum((uint64_t)va_arg(ap, void *), 16, 0, width, pad); break;
        case 's': puts_(va_arg(ap, const char *)); break;
        case 'c': putc_((char)va_arg(ap, int)); break;
        default: putc_(*f); break;
        }
    }
}

void bm_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
}

void bm_exit(int fail)
{
    outl(0xf4, fail ? 1 : 0);       /* isa-debug-exit: QEMU exits with (value << 1) | 1 */
    for (;;) asm volatile("cli; hlt");
}

static int n_tests, n_failed, n_planned;

void bm_plan(int n) { n_planned = n; bm_printf("1..%d\n", n); }

int bm_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    bm_printf("%s %d - ", cond ? "ok" : "not ok", ++n_tests);
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
    putc_('\n');
    if (!cond) n_failed++;
    return cond;
}

int bm_done(void)
{
    bm_exit(n_failed != 0 || n_tests != n_planned);
}

/* --- the kernel command line and the test runner --------------------------------------- */
uint32_t pvh_start_info;                    /* EBX at the PVH entry (boot.S) */
static char cmdline[256];

/* hvm_start_info (Xen's public/arch-x86/hvm/start_info.h): magic at 0, cmdline_paddr at 24. */
static void save_cmdline(void)
{
    const uint8_t *si = (const uint8_t *)(uint64_t)pvh_start_info;
    if (!si || *(const uint32_t *)si != 0x336ec578u)
        return;
    const char *c = (const char *)*(const uint64_t *)(si + 24);
    for (unsigned i = 0; c && i < sizeof(cmdline) - 1 && c[i]; i++)
        cmdline[i] = c[i];
}

const char *bm_cmdline(void) { return cmdline; }

static int next_word(const char **p, unsigned *len)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    unsigned n = 0;
    while (s[n] && s[n] != ' ' && s[n] != '\t')
        n++;
    *p = s;
    *len = n;
    return n != 0;
}

void bm_run(const struct test_case *t, unsigned n)
{
    static unsigned char sel[128];
    const char *p = cmdline;
    unsigned len, any = 0;

    if (n > sizeof(sel)) {
        bm_printf("Bail out! %u tests, the runner takes %u\n", n, (unsigned)sizeof(sel));
        bm_exit(1);
    }
    for (; next_word(&p, &len); p += len) {
        if (len == 4 && test_selects(p, len, "list")) {
            for (unsigned i = 0; i < n; i++)
                bm_printf("%s\n", t[i].name);
            bm_exit(0);
        }
        if (!test_select(t, n, p, len, sel)) {
            bm_printf("Bail out! no test named \"");
            for (unsigned i = 0; i < len; i++)
                bm_printf("%c", p[i]);
            bm_printf("\" (-append list lists them)\n");
            bm_exit(1);
        }
        any = 1;
    }
    bm_plan(test_plan(t, n, any, sel));
    for (unsigned i = 0; i < n; i++) {
        if (any && !sel[i])
            continue;
        int before = n_tests;
        bm_printf("# %s\n", t[i].name);
        t[i].fn();
        if (n_tests - before != t[i].checks)
            bm_printf("# %s made %d checks, declares %d\n", t[i].name, n_tests - before, t[i].checks);
    }
    bm_done();
}

static void lapic_write(uint32_t reg, uint32_t v);

/* --- traps ---------------------------------------------------------------------------- */
extern char wrmsr_insn[], wrmsr_fixup[], rdmsr_insn[], rdmsr_fixup[], kuiret_insn[], kuiret_fixup[];
static const struct { char *insn, *fixup; } fixups[] = {
    { wrmsr_insn, wrmsr_fixup }, { rdmsr_insn, rdmsr_fixup }, { kuiret_insn, kuiret_fixup },
};
void return_to_kernel(uint64_t result) __attribute__((noreturn));

struct bm_irq bm_irq;

void trap(struct trapframe *tf)
{
    uint64_t cr2;

    if (tf->vector == BM_IRQ_VECTOR) {           /* the test interrupt: count it, go on */
        if (bm_irq.count++ == 0)
            bm_irq.rip = tf->rip;
        lapic_write(0xb0, 0);                     /* EOI */
        return;
    }
    asm volatile("mov %%cr2, %0" : "=r"(cr2));
    last_trap = (struct last_trap){ tf->vector, tf->error, cr2, tf->rip, tf->rsp, tf->rcx,
                                    tf->rsi, tf->rdi };
    if ((tf->cs & 3) == 3) {
        return_to_kernel(tf->vector);
    }
    for (unsigned i = 0; i < sizeof(fixups) / sizeof(fixups[0]); i++) {
        if (tf->rip == (uint64_t)fixups[i].insn) {
            tf->rip = (uint64_t)fixups[i].fixup;
            tf->rax = (uint64_t)-1;
            return;
        }
    }
    bm_printf("Bail out! unexpected trap %lu at CPL 0: rip %lx error %lx cr2 %lx\n",
              tf->vector, tf->rip, tf->error, cr2);
    bm_exit(1);
}

uint64_t run_user_default(void (*fn)(void *), void *arg)
{
    return run_user(fn, arg, (uint64_t)user_stack + USER_STACK_SIZE - 64);
}

struct idt_gate { uint16_t off0, sel; uint8_t ist, type; uint16_t off1; uint32_t off2, zero; };
static struct idt_gate idt[256] __attribute__((aligned(16)));
static struct { uint32_t r0; uint64_t rsp0, rsp1, rsp2, r1, ist[7], r2; uint16_t r3, iomap; }
    __attribute__((packed)) tss;

#define GATE(v) extern char trap_##v[]; set_gate(v, trap_##v, 0x8e)
static void set_gate(int v, char *fn, uint8_t type)
{
    uint64_t a = (uint64_t)fn;
    idt[v] = (struct idt_gate){ (uint16_t)a, 0x08, 0, type, (uint16_t)(a >> 16), (uint32_t)(a >> 32), 0 };
}

static void set_tss_desc(uint64_t *d, void *t, uint64_t size);

static void setup_cpu(void)
{
    GATE(0); GATE(1); GATE(2); GATE(3); GATE(4); GATE(5); GATE(6); GATE(7); GATE(8);
    GATE(9); GATE(10); GATE(11); GATE(12); GATE(13); GATE(14); GATE(16); GATE(17);
    GATE(18); GATE(19); GATE(64);
    extern char trap_128[];
    set_gate(128, trap_128, 0xee);              /* int $0x80 from CPL 3 */
    struct { uint16_t limit; uint64_t base; } __attribute__((packed)) idtr = { sizeof(idt) - 1, (uint64_t)idt };
    asm volatile("lidt %0" :: "m"(idtr));

    tss.rsp0 = (uint64_t)kstack + sizeof(kstack);
    tss.iomap = sizeof(tss);
    set_tss_desc(gdt_tss, &tss, sizeof(tss));
    asm volatile("ltr %w0" :: "r"(0x28));
}

static uint64_t hpet_period_fs;
#define HPET ((volatile uint64_t *)0xfed00000ull)

static void map_high_gib(void)
{
    pdpt[3] = 0xc0000000ull | 0x9f;               /* 3-4 GiB: local APIC, HPET; uncached, user */
    flush_tlb();
}

int hpet_init(void)
{
    map_high_gib();
    hpet_period_fs = HPET[0] >> 32;               /* capabilities: counter period in fs */
    HPET[2] |= 1;                                 /* general configuration: enable */
    return hpet_period_fs != 0 && hpet_period_fs <= 100000000;
}

uint64_t hpet_ns(void)
{
    return HPET[30] * (hpet_period_fs / 1000) / 1000;   /* QEMU's period is whole ps */
}

/* --- the second CPU ------------------------------------------------------------------ */
static struct { uint32_t r0; uint64_t rsp0, rsp1, rsp2, r1, ist[7], r2; uint16_t r3, iomap; }
    __attribute__((packed)) tss_ap;
static uint8_t kstack_ap[4 * PAGE] __attribute__((aligned(16)));
extern uint64_t gdt_tss_ap[2];
extern char ap_tramp_start[], ap_tramp_end[];
static void (*volatile ap_fn)(void);
static volatile int ap_alive;

static void set_tss_desc(uint64_t *d, void *t, uint64_t size)
{
    uint64_t b = (uint64_t)t, l = size - 1;
    d[0] = (l & 0xffff) | (b & 0xffffff) << 16 | 0x89ull << 40 | ((l >> 16) & 0xf) << 48 |
           ((b >> 24) & 0xff) << 56;
    d[1] = b >> 32;
}

void ap_main(void)
{
    struct { uint16_t limit; uint64_t base; } __attribute__((packed)) idtr = { sizeof(idt) - 1, (uint64_t)idt };
    asm volatile("lidt %0" :: "m"(idtr));
    tss_ap.rsp0 = (uint64_t)kstack_ap + sizeof(kstack_ap);
    tss_ap.iomap = sizeof(tss_ap);
    set_tss_desc(gdt_tss_ap, &tss_ap, sizeof(tss_ap));
    asm volatile("ltr %w0" :: "r"(0x40));
    ap_alive = 1;
    ap_fn();
}

static void lapic_write(uint32_t reg, uint32_t v) { *(volatile uint32_t *)(0xfee00000ull + reg) = v; }
static uint32_t lapic_read(uint32_t reg) { return *(volatile uint32_t *)(0xfee00000ull + reg); }

void lapic_enable(void)
{
    /* Mask the legacy PIC first: with IF set its IRQ 0 (the PIT) would arrive as vector 8. */
    outb(0x21, 0xff);
    outb(0xa1, 0xff);
    map_high_gib();
    lapic_write(0xf0, lapic_read(0xf0) | 0x100);  /* software enable */
}
static void delay(long n) { for (volatile long i = 0; i < n; i++) ; }

int start_ap(void (*fn)(void))
{
    uint8_t *dst = (uint8_t *)0x8000;
    for (char *p = ap_tramp_start; p < ap_tramp_end; p++)
        *dst++ = (uint8_t)*p;
    ap_fn = fn;
    lapic_enable();
    lapic_write(0x310, 1u << 24);                 /* destination: APIC ID 1 */
    lapic_write(0x300, 0x4500);                   /* INIT */
    delay(100000);
    for (int i = 0; i < 2 && !ap_alive; i++) {
        lapic_write(0x310, 1u << 24);
        lapic_write(0x300, 0x4600 | (0x8000 >> 12));  /* STARTUP at 0x8000 */
        for (long t = 0; t < 50000000 && !ap_alive; t++) ;
    }
    return ap_alive;
}

uint64_t *pte_of(const void *va) { return &pt0[((uint64_t)va >> 12) & 511]; }

/* --- ULPT table ---------------------------------------------------------------------- */
/*
 * Pool: [0] root, [1] L2, [2] L1, [3..18] leaves for 0-16 MiB (the image and the benchmark's
 * memory above it, BM_FREE_BASE); view page tables after.
 */
#define NLEAVES 16
static uint64_t tpool[3 + NLEAVES + 3][512] __attribute__((aligned(4096)));
#define ROOT tpool[0]
#define L2 tpool[1]
#define L1 tpool[2]
#define LEAF(i) tpool[3 + (i)]
#define VPDPT tpool[3 + NLEAVES]
#define VPD tpool[3 + NLEAVES + 1]
#define VPT tpool[3 + NLEAVES + 2]

uint64_t ulpt_root_pa(void) { return (uint64_t)ROOT; }

static void ulpt_build(void)
{
    ROOT[0] = (uint64_t)L2 | ULPT_DIR_P;
    L2[0] = (uint64_t)L1 | ULPT_DIR_P;
    for (int i = 0; i < NLEAVES; i++) {
        L1[i] = (uint64_t)LEAF(i) | ULPT_DIR_P;
        VPT[i] = (uint64_t)LEAF(i) | 7;          /* view page i maps leaf i, user-writable */
    }
    VPD[0] = (uint64_t)VPT | 7;
    VPDPT[0] = (uint64_t)VPD | 7;
    pml4[1] = (uint64_t)VPDPT | 7;
    flush_tlb();
}

volatile uint64_t *ulpt_view_entry(uint64_t va)
{
    return (volatile uint64_t *)(VIEW_BASE + (va >> 12) * 16);
}

volatile uint64_t *ulpt_phys_entry(uint64_t va)
{
    return (volatile uint64_t *)&LEAF(va >> 20)[((va >> 12) & 255) * 2];
}

void ulpt_kset(uint64_t va, uint64_t page, uint64_t lines)
{
    volatile uint64_t *e = ulpt_phys_entry(va);
    e[0] = page;
    e[1] = lines;
    invlpg((void *)va);
}

void ulpt_clear_all(void)
{
    for (int i = 0; i < NLEAVES; i++)
        for (int j = 0; j < 512; j++)
            LEAF(i)[j] = 0;
    flush_tlb();
}

void ulpt_enable(uint64_t handler)
{
    wrmsr(MSR_ULPT_ROOT, ulpt_root_pa());
    wrmsr(MSR_ULPT_VIEW, VIEW_BASE);
    wrmsr(MSR_ULPT_STKADJ, 128);
    wrmsr(MSR_ULPT_HANDLER, handler);
    wrmsr(MSR_ULPT_STATUS, 0);
    wrmsr(MSR_ULPT_CTL, ULPT_CTL_EN);
}

void ulpt_disable(void)
{
    wrmsr(MSR_ULPT_CTL, 0);
    wrmsr(MSR_ULPT_HANDLER, 0);
    wrmsr(MSR_ULPT_STATUS, 0);
}

void tests(void);

void kmain(void)
{
    save_cmdline();
    setup_cpu();
    extern char __bss_end[];
    if ((uint64_t)__bss_end > 0x200000) {
        bm_printf("Bail out! image too large for the 4 KiB-mapped first 2 MiB\n");
        bm_exit(1);
    }
    ulpt_build();
    tests();
    bm_done();
}
