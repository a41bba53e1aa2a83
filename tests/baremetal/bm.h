/*
 * Bare-metal harness for ULPT CPU tests (no kernel): output on port 0xE9, exit through
 * isa-debug-exit, traps, CPL 3 execution, and a ULPT table with its view.
 * Physical memory is identity-mapped and user-accessible; the first 2 MiB use 4 KiB pages.
 */
#ifndef BM_H
#define BM_H
#include <stdarg.h>
#include <stdint.h>
#include <ulpt/arch.h>
#include "select.h"          /* tests/lib: the test table and by-name selection */

#define PAGE 4096ul
#define VIEW_BASE 0x8000000000ull            /* ULPT_VIEW: PML4 slot 1 */

struct trapframe {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector, error, rip, cs, rflags, rsp, ss;
};

/* The trap that ended the last run_user() or was fixed up at CPL 0. */
struct last_trap {
    uint64_t vector, error, cr2, rip, rsp, rcx, rsi, rdi;
};
extern struct last_trap last_trap;

void bm_printf(const char *fmt, ...);
void bm_exit(int fail) __attribute__((noreturn));
int bm_ok(int cond, const char *fmt, ...);
void bm_plan(int n);
int bm_done(void) __attribute__((noreturn));

/*
 * A test image's tests: a table of named functions, each making a fixed number of checks
 * (bm_ok calls), run in table order by bm_run (the shape of pkey_tests[] in Linux's
 * tools/testing/selftests/vm/protection_keys.c). The kernel command line (PVH start info,
 * QEMU's -append) selects them: empty runs all; "list" prints the names; otherwise each word
 * is a test name, or a rule ("R-DEL-1") standing for every test named after it ("R-DEL-1",
 * "R-DEL-1:frame", ...). A word that names no test is an error (Bail out!, exit status 1).
 * The plan is the sum of the selected tests' counts; a test that makes a different number of
 * checks fails the run.
 */
#define BM_NTESTS(t) TEST_NCASES(t)
void bm_run(const struct test_case *t, unsigned n) __attribute__((noreturn));
const char *bm_cmdline(void);              /* the kernel command line ("" without -append) */

/* Runs fn(arg) at CPL 3 on the user stack; returns 0x80 if it returned, else the vector. */
uint64_t run_user(void (*fn)(void *), void *arg, uint64_t user_rsp);
uint64_t run_user_default(void (*fn)(void *), void *arg);
extern uint8_t user_stack[];
extern uint64_t user_rflags;               /* RFLAGS at CPL 3 entry: 0x2 unless a test sets it */

/*
 * Interrupts: vector BM_IRQ_VECTOR is counted (and the first one's RIP kept) and returns to the
 * interrupted code. lapic_enable maps and enables the local APIC (user-accessible);
 * LAPIC_SELF_IPI written to its ICR (LAPIC_ICR) makes the vector pending on this CPU.
 */
#define BM_IRQ_VECTOR 64
struct bm_irq { uint64_t count, rip; };
extern struct bm_irq bm_irq;
void lapic_enable(void);
#define LAPIC_ICR ((volatile uint32_t *)0xfee00300ull)
#define LAPIC_SELF_IPI (0x40000u | BM_IRQ_VECTOR)
#define USER_STACK_SIZE (4 * PAGE)

int try_wrmsr(uint32_t msr, uint64_t val);   /* 0, or -1 after #GP/#UD */
int try_rdmsr(uint32_t msr, uint64_t *val);
int kernel_uiret(void);

static inline void wrmsr(uint32_t msr, uint64_t v)
{
    asm volatile("wrmsr" :: "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}
static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return (uint64_t)hi << 32 | lo;
}
static inline void invlpg(const void *p) { asm volatile("invlpg (%0)" :: "r"(p) : "memory"); }
static inline void flush_tlb(void)
{
    uint64_t cr3;
    asm volatile("mov %%cr3, %0; mov %0, %%cr3" : "=r"(cr3) :: "memory");
}

/* PTE of a page in the first 2 MiB. */
uint64_t *pte_of(const void *va);

/* Starts the second CPU (APIC ID 1) in long mode at CPL 0 running fn(); returns when it
   has entered fn, or 0 after a timeout. */
int start_ap(void (*fn)(void));
/* Enters CPL 3 at fn(arg) on the given stack, never to return (the second CPU's user part). */
void enter_user(void (*fn)(void *), void *arg, uint64_t user_rsp) __attribute__((noreturn));

/* Nanoseconds from the HPET (for benchmarks); hpet_init() maps and starts it. */
int hpet_init(void);
uint64_t hpet_ns(void);

/*
 * Memory past the image that tests may use (2 MiB pages, identity-mapped, user-writable),
 * covered by the ULPT table up to BM_FREE_END.
 */
#define BM_FREE_BASE 0x400000ull
#define BM_FREE_END 0x1000000ull

/* ULPT table (kernel side). */
uint64_t ulpt_root_pa(void);
volatile uint64_t *ulpt_view_entry(uint64_t va);           /* 2 words via the view */
volatile uint64_t *ulpt_phys_entry(uint64_t va);           /* same entry via the direct map */
void ulpt_kset(uint64_t va, uint64_t page, uint64_t lines); /* kernel store + invlpg */
void ulpt_clear_all(void);                                  /* all leaves zero, TLB flushed */
void ulpt_enable(uint64_t handler);                         /* ROOT, VIEW, STKADJ 128, CTL.EN */
void ulpt_disable(void);

/* The test's user-mode handler (tests define ulpt_handler); the entry stub calls it. */
void ulpt_entry(void);
void ulpt_entry_sti(void);      /* the same, with STI before UIRET (for IOPL 3 code) */
void ulpt_entry_tf(void);       /* the same, with TF set before UIRET (single-stepped) */
void ulpt_handler(uint64_t *frame);

#endif
