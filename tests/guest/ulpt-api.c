/*
 * Guest tests of the Linux ULPT API (docs/linux-api.md), in the style of
 * tools/testing/selftests/x86/protection_keys.c: arch_prctl, the SIGSEGV fallback, the
 * user-level handler, fork, exec, threads, munmap, and leaks.
 *   ulpt-api            everything, on -cpu ulpt
 *   ulpt-api nocpu      on a CPU without ULPT: the API answers ENODEV
 *   ulpt-api exec-check (internal) after exec: no table
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <asm/ulpt.h>
#include "tap.h"
#include "ulpt-handler.h"
#include <ulpt/arch.h>

static long ulpt(int op, void *arg) { return syscall(SYS_arch_prctl, op, arg); }
static long ulpt_ul(int op, unsigned long arg) { return syscall(SYS_arch_prctl, op, arg); }

static struct ulpt_enable en;
static volatile uint64_t *view_entry(void *p)
{
    return (volatile uint64_t *)(uintptr_t)(en.view + ((uintptr_t)p >> 12) * 16);
}

/* --- SIGSEGV: record and jump back --------------------------------------------------- */
static sigjmp_buf segv_jmp;
static volatile int segv_code;
static volatile uintptr_t segv_addr;
static volatile unsigned long segv_err;

static volatile int segv_in_handler;      /* IN_HANDLER as the signal handler saw it */
static long ulpt(int op, void *arg);
static void on_segv(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    struct ulpt_state s;
    (void)sig;
    segv_in_handler = ulpt(ARCH_ULPT_GET_STATE, &s) == 0 && (s.flags & ULPT_STATE_IN_HANDLER);
    segv_code = si->si_code;
    segv_addr = (uintptr_t)si->si_addr;
    segv_err = uc->uc_mcontext.gregs[REG_ERR];
    siglongjmp(segv_jmp, 1);
}

/* Runs fn(arg); returns 0 if it returned, else 1 after a SIGSEGV (details in segv_*). */
static int try(void (*fn)(void *), void *arg)
{
    segv_code = 0;
    if (sigsetjmp(segv_jmp, 1))
        return 1;
    fn(arg);
    return 0;
}

static void write8(void *p) { *(volatile uint64_t *)p = 0x55; }
static void read8(void *p) { (void)*(volatile uint64_t *)p; }

/* --- the user-level handler ---------------------------------------------------------- */
ULPT_HANDLER_ENTRY(ulpt_entry, ulpt_handler);

/* That <asm/ulpt.h> and the ABI header agree is checked by tests/unit/abi-agree.c. */

enum { H_PERMIT, H_FAULT, H_FLAGS, H_SIGNAL };
static volatile int usr1_in_handler = -1, h_in_handler_after = -1;
static void on_usr1(int sig)
{
    struct ulpt_state s;
    (void)sig;
    usr1_in_handler = ulpt(ARCH_ULPT_GET_STATE, &s) == 0 && (s.flags & ULPT_STATE_IN_HANDLER);
}
static volatile int h_count, h_action;
static volatile uint64_t h_addr, h_info, h_rip;
static void *volatile h_fault_at;

#define FL_CF 0x1ull
#define FL_ZF 0x40ull
#define FL_SF 0x80ull
#define FL_DF 0x400ull

void ulpt_handler(uint64_t *frame)
{
    struct ulpt_frame *f = (struct ulpt_frame *)frame;

    h_count++;
    h_addr = f->addr;
    h_info = f->info;
    h_rip = f->rip;
    if (h_action == H_FAULT)
        (void)*(volatile uint64_t *)h_fault_at;
    if (h_action == H_FLAGS)
        f->rflags |= FL_DF | FL_ZF | FL_SF | FL_CF;
    if (h_action == H_SIGNAL) {                 /* a signal handler runs inside this one */
        struct ulpt_state s;
        raise(SIGUSR1);
        h_in_handler_after = ulpt(ARCH_ULPT_GET_STATE, &s) == 0 && (s.flags & ULPT_STATE_IN_HANDLER);
    }
    f->info |= ULPT_INFO_PERMIT;
}

/*
 * After a UIRET that set DF ZF SF CF from the frame: flags set by the next instruction are
 * exact, and stay so across a system call and timer interrupts. Each returns the flags (of
 * DF ZF SF CF) that are wrongly set, or a flag the CPU should have cleared.
 */
static uint64_t flags_after_uiret(void *p)
{
    uint64_t f;

    asm volatile("movq $1, (%1)\n cld\n test %%rsp, %%rsp\n pushfq\n popq %0"
                 : "=r"(f) : "r"(p) : "memory", "cc");
    return f & (FL_DF | FL_ZF | FL_SF | FL_CF);
}

static uint64_t flags_after_syscall(void *p)
{
    uint64_t f, z;

    asm volatile("movq $1, (%2)\n cld\n test %%rsp, %%rsp\n"
                 "mov %3, %%eax\n syscall\n setz %%al\n movzbl %%al, %%eax\n mov %%rax, %1\n"
                 "pushfq\n popq %0"
                 : "=r"(f), "=r"(z) : "r"(p), "i"(SYS_getpid) : "rax", "rcx", "r11", "memory", "cc");
    return (f & (FL_DF | FL_SF | FL_CF)) | (z ? FL_ZF : 0);
}

static uint64_t flags_across_ticks(void *p)
{
    struct timespec t0, t;
    uint64_t bad = flags_after_uiret(p);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {                                /* 50 ms: a dozen timer ticks at HZ=250 */
        uint64_t f;
        for (int i = 0; i < 1000; i++) {
            asm volatile("test %%rsp, %%rsp\n pushfq\n popq %0" : "=r"(f) :: "cc");
            bad |= f & (FL_DF | FL_ZF | FL_SF | FL_CF);
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000ll + t.tv_nsec - t0.tv_nsec < 50000000);
    return bad;
}

/* A write made by code at `code` (movq $1, (%rdi); ret), mapped anywhere. */
static const uint8_t write_insn[] = { 0x48, 0xc7, 0x07, 0x01, 0x00, 0x00, 0x00, 0xc3 };

/* An executable page at a fixed address (above 2^47 needs 5-level paging), or NULL. */
static uint8_t *code_page_at(uintptr_t at)
{
    void *q = mmap((void *)at, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    return q == (void *)at ? q : NULL;
}

static void *page(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memset(p, 0, 4096);
    return p;
}

static int status_says(const char *want)
{
    char line[256];
    int found = 0;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "ULPT:", 5) == 0)
            found = strstr(line, want) != NULL;
    if (f)
        fclose(f);
    return found;
}

/* --- threads ------------------------------------------------------------------------- */
static volatile int t_revoked, t_result;
static uint64_t *t_page;

static void *writer(void *arg)
{
    (void)arg;
    for (long i = 0;; i++) {
        int r = t_revoked;
        if (try(write8, t_page)) {
            t_result = (segv_code == SEGV_ULPTERR) ? 1 : 3;
            return NULL;
        }
        if (r) {
            t_result = 2;               /* a write succeeded after the flag was seen */
            return NULL;
        }
    }
}


int main(int argc, char **argv)
{
    struct ulpt_state st;
    struct sigaction sa;
    int status;

    if (argc > 1 && strcmp(argv[1], "exec-check") == 0) {
        /* After exec: no table, and /proc says so. Answers with the exit status only. */
        memset(&st, 0xff, sizeof(st));
        return !(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == 0 && status_says("disabled"));
    }
    if (argc > 1 && strcmp(argv[1], "nocpu") == 0) {
        tap_plan(2);
        tap_ok(ulpt(ARCH_ULPT_ENABLE, &en) == -1 && errno == ENODEV, "no ULPT CPU: ENABLE is ENODEV");
        tap_ok(status_says("unsupported"), "no ULPT CPU: /proc/self/status says unsupported");
        return tap_done();
    }

    tap_plan(38 + 11);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);

    /* Enable, errors. */
    memset(&st, 0xff, sizeof(st));
    tap_ok(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == 0, "GET_STATE before ENABLE: not enabled");
    tap_ok(status_says("disabled"), "/proc/self/status: ULPT disabled");
    tap_ok(ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) == -1 && errno == EINVAL,
           "SET_HANDLER before ENABLE: EINVAL");
    tap_ok(ulpt_ul(ARCH_ULPT_DISABLE, 0) == -1 && errno == EINVAL, "DISABLE before ENABLE: EINVAL");
    en.flags = 1;
    tap_ok(ulpt(ARCH_ULPT_ENABLE, &en) == -1 && errno == EINVAL, "ENABLE with unknown flags: EINVAL");
    tap_ok(ulpt(ARCH_ULPT_ENABLE, (void *)16) == -1 && errno == EFAULT, "ENABLE with a bad pointer: EFAULT");
    en.flags = 0;
    long r = ulpt(ARCH_ULPT_ENABLE, &en);
    tap_ok(r == 0 && en.view && en.view_size == ULPT_VIEW_SIZE && (en.view & 4095) == 0,
           "ENABLE: view at %#llx, %llu GiB", (unsigned long long)en.view,
           (unsigned long long)(en.view_size >> 30));
    tap_ok(ulpt(ARCH_ULPT_ENABLE, &en) == -1 && errno == EBUSY, "ENABLE twice: EBUSY");
    tap_ok(status_says("enabled"), "/proc/self/status: ULPT enabled");
    tap_ok(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == ULPT_STATE_ENABLED && st.view == en.view &&
           st.handler == 0 && st.stack_adjust == 128, "GET_STATE: enabled, view, no handler, red zone 128");
    tap_ok(ulpt(ARCH_ULPT_GET_STATE, (void *)16) == -1 && errno == EFAULT, "GET_STATE with a bad pointer: EFAULT");
    tap_ok(ulpt_ul(ARCH_ULPT_SET_HANDLER, 0xffffffff81000000ul) == -1 && errno == EINVAL,
           "SET_HANDLER with a kernel address: EINVAL");
    tap_ok(ulpt_ul(0x60ff, 0) == -1 && errno == EINVAL, "unknown ULPT arch_prctl: EINVAL");

    /* One store denies; SIGSEGV fallback. */
    uint64_t *p = page();
    tap_ok(try(write8, p) == 0, "write before any restriction");
    view_entry(p)[0] = ULPT_NW;
    r = try(write8, p + 1);
    tap_ok(r == 1 && segv_code == SEGV_ULPTERR && segv_addr == (uintptr_t)(p + 1),
           "one store denies the next write: SIGSEGV SEGV_ULPTERR at the address (code %d)", segv_code);
    tap_ok((segv_err & (ULPT_PF_ERROR_BIT | 2 | 4)) == (ULPT_PF_ERROR_BIT | 2 | 4),
           "the sigcontext error code has the ULPT and write bits (%#lx)", segv_err);
    tap_ok(try(read8, p) == 0, "reads still allowed");
    view_entry(p)[0] = 0;
    view_entry(p)[1] = ULPT_LINE_NR(3);
    tap_ok(try(read8, (char *)p + 3 * 128 + 8) == 1 && segv_code == SEGV_ULPTERR && !(segv_err & 2) &&
           try(read8, (char *)p + 2 * 128) == 0, "line rights: a read of line 3 faults as a read, line 2 does not");
    view_entry(p)[1] = 0;

    /* The handler and let-through-once. */
    tap_ok(ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) == 0 &&
           ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.handler == (uintptr_t)ulpt_entry, "SET_HANDLER");
    view_entry(p)[1] = ULPT_LINE_NW(0);
    h_count = 0;
    h_action = H_PERMIT;
    for (int i = 0; i < 3; i++)
        ((volatile uint64_t *)p)[1] = i;
    tap_ok(h_count == 3 && p[1] == 2 && h_addr == (uintptr_t)&p[1] && ULPT_INFO_KIND(h_info) == ULPT_KIND_W,
           "handler runs without the kernel; each write completes once (%d deliveries)", h_count);
    tap_ok(view_entry(p)[1] == ULPT_LINE_NW(0), "the table is unchanged by let-through-once");

    /* UIRET restores flags once; they do not stick (docs/spec.md R-RET-1). */
    h_action = H_FLAGS;
    h_count = 0;
    uint64_t bad = flags_after_uiret(p);
    tap_ok(h_count == 1 && bad == 0, "after UIRET, cld and test give exact flags (wrong: %#lx)", bad);
    bad = flags_after_syscall(p);
    tap_ok(h_count == 2 && bad == 0, "  ...also after a system call (wrong: %#lx)", bad);
    bad = flags_across_ticks(p);
    tap_ok(h_count == 3 && bad == 0, "  ...also across timer interrupts (wrong: %#lx)", bad);
    h_action = H_PERMIT;

    /* 5-level paging: a handler and faulting code above 2^47 (docs/spec.md R-MSR-2, R-RET-1). */
    uint8_t *hi_handler = code_page_at(0x900000000000ul), *hi_code = code_page_at(0xa00000000000ul);
    if (hi_handler && hi_code) {
        void (*entry)(void) = ulpt_entry;
        static const uint8_t jmp_abs[] = { 0xff, 0x25, 0, 0, 0, 0 };   /* jmp *0(%rip) */
        memcpy(hi_handler, jmp_abs, sizeof(jmp_abs));
        memcpy(hi_handler + sizeof(jmp_abs), &entry, 8);
        memcpy(hi_code, write_insn, sizeof(write_insn));
        h_count = 0;
        tap_ok(ulpt_ul(ARCH_ULPT_SET_HANDLER, (uintptr_t)hi_handler) == 0 &&
               ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.handler == (uintptr_t)hi_handler,
               "SET_HANDLER above 2^47 (5-level paging): accepted");
        ((void (*)(void *))hi_code)(&p[1]);        /* p[1] was 2 */
        tap_ok(h_count == 1 && p[1] == 1 && h_rip == (uintptr_t)hi_code,
               "a violation by code above 2^47 runs the handler above 2^47 and UIRET returns there "
               "(%d deliveries, rip %#lx, addr %#lx info %#lx, p1 %lu)", h_count, h_rip, h_addr, h_info, p[1]);
        ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry);
    } else {
        tap_skip("no 5-level paging", "SET_HANDLER above 2^47");
        tap_skip("no 5-level paging", "a violation by code above 2^47");
    }
    tap_ok(ulpt_ul(ARCH_ULPT_SET_HANDLER, 1ul << 57) == -1 && errno == EINVAL,
           "SET_HANDLER at or above the user address limit: EINVAL");

    /* Fault inside the handler, in a child (the child is left in its handler). */
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t *q = page();
        view_entry(q)[0] = ULPT_NR;
        h_action = H_FAULT;
        h_fault_at = q;
        if (!(try(write8, p) && segv_code == SEGV_ULPTERR && segv_addr == (uintptr_t)q))
            _exit(1);
        if (segv_in_handler)
            _exit(2);                   /* the signal handler must run outside the ULPT handler */
        if (ulpt(ARCH_ULPT_GET_STATE, &st) != 0 || (st.flags & ULPT_STATE_IN_HANDLER))
            _exit(3);                   /* siglongjmp out of it: out of the ULPT handler too */
        h_action = H_PERMIT;
        h_count = 0;
        write8(p);                      /* delivered to the handler again, not SIGSEGV */
        _exit(h_count == 1 ? 0 : 4);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a violation inside the handler becomes SIGSEGV SEGV_ULPTERR; the signal handler runs outside "
           "the ULPT handler, and after siglongjmp the next violation reaches the handler (status %#x)", status);

    /* A signal inside the handler: cleared while the signal handler runs, restored by sigreturn. */
    signal(SIGUSR1, on_usr1);
    h_action = H_SIGNAL;
    h_count = 0;
    ((volatile uint64_t *)p)[2] = 77;
    tap_ok(h_count == 1 && usr1_in_handler == 0 && h_in_handler_after == 1 && p[2] == 77,
           "a signal inside the handler: not in the handler while it runs (%d), in it again after "
           "sigreturn (%d), and UIRET completes the write", usr1_in_handler, h_in_handler_after);
    h_action = H_PERMIT;

    /* Stack overflow during delivery: the frame goes below an unmapped stack. */
    pid = fork();
    if (pid == 0) {
        uint8_t *stk = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(stk, 4096);              /* [stk, stk+4096) unmapped below the stack */
        signal(SIGSEGV, SIG_DFL);
        asm volatile("mov %%rsp, %%rbx\n mov %0, %%rsp\n movq $1, (%1)\n mov %%rbx, %%rsp"
                     :: "r"(stk + 4096 + 64), "r"(&p[0]) : "rbx", "memory");
        _exit(0);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
           "a frame that cannot be pushed ends in SIGSEGV, no hang, no oops");
    view_entry(p)[1] = 0;

    /* fork: the child has a copy. */
    view_entry(p)[0] = ULPT_NW;
    pid = fork();
    if (pid == 0) {
        ulpt_ul(ARCH_ULPT_SET_HANDLER, 0);
        int inherited = try(write8, p) == 1 && segv_code == SEGV_ULPTERR;
        view_entry(p)[0] = 0;            /* the child's copy only */
        _exit(inherited && try(write8, p) == 0 ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork: the child inherits the rights and can change its copy");
    ulpt_ul(ARCH_ULPT_SET_HANDLER, 0);
    tap_ok(try(write8, p) == 1 && segv_code == SEGV_ULPTERR && view_entry(p)[0] == ULPT_NW,
           "fork: the child's change did not reach the parent");
    ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry);

    /* exec drops everything. */
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "exec-check", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "exec: the program after exec has no table, and /proc/self/status says disabled");

    /* munmap: rights die with the mapping. */
    void *addr = p;
    munmap(p, 4096);
    p = mmap(addr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ulpt_ul(ARCH_ULPT_SET_HANDLER, 0);
    tap_ok(p == addr && view_entry(p)[0] == 0 && try(write8, p) == 0,
           "munmap + mmap at the same address: fully accessible");

    /* The view cannot be remapped: not moved, grown or shrunk. */
    void *v = (void *)(uintptr_t)en.view;
    tap_ok(mremap(v, 4096, 8192, MREMAP_MAYMOVE) == MAP_FAILED && errno == EINVAL,
           "mremap growing the view: EINVAL");
    tap_ok(mremap(v, 8192, 4096, 0) == MAP_FAILED && errno == EINVAL, "mremap shrinking the view: EINVAL");

    /* mprotect is independent; mremap leaves the rights behind; the kernel is not checked. */
    view_entry(p)[0] = ULPT_NW;
    mprotect(p, 4096, PROT_READ);
    mprotect(p, 4096, PROT_READ | PROT_WRITE);
    tap_ok(try(write8, p) == 1 && segv_code == SEGV_ULPTERR, "mprotect does not change ULPT rights");
    void *moved = mremap(p, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, page());
    tap_ok(moved != MAP_FAILED && view_entry(p)[0] == 0 && view_entry(moved)[0] == 0 && try(write8, moved) == 0,
           "mremap: the old range's rights are cleared, the new range starts unrestricted");
    int fds[2];
    char *buf = page();
    view_entry(buf)[1] = ULPT_LINE_NW(0) | ULPT_LINE_NR(0);
    tap_ok(pipe(fds) == 0 && write(fds[1], "kernel", 6) == 6 && read(fds[0], buf, 6) == 6 &&
           try(read8, buf) == 1 && segv_code == SEGV_ULPTERR,
           "read(2) into a denied line succeeds (the kernel is not checked); the user's read still faults");
    view_entry(buf)[1] = 0;
    tap_ok(memcmp(buf, "kernel", 6) == 0, "  ...and the data arrived");

    /* Two threads: a revocation by one is seen by the other's next access. */
    t_page = page();
    pthread_t th;
    pthread_create(&th, NULL, writer, NULL);
    usleep(200000);
    view_entry(t_page)[0] = ULPT_NW;
    t_revoked = 1;
    pthread_join(th, NULL);
    tap_ok(t_result == 1, "threads: after the flag, the other thread's next write faults (result %d)", t_result);

    /* Disable. */
    ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry);
    tap_ok(ulpt_ul(ARCH_ULPT_DISABLE, 0) == 0 && ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == 0,
           "DISABLE: no table any more");
    tap_ok(try(write8, t_page) == 0, "DISABLE: the restriction is gone");
    tap_ok(try(read8, (void *)(uintptr_t)en.view) == 1 && segv_code == SEGV_MAPERR, "DISABLE: the view is unmapped");
    tap_ok(ulpt(ARCH_ULPT_ENABLE, &en) == 0, "ENABLE again after DISABLE");
    tap_ok(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.handler == 0,
           "DISABLE removed the handler: a new table starts without one (handler %#llx)",
           (unsigned long long)st.handler);
    uint64_t *q = page();
    view_entry(q)[0] = ULPT_NW;
    h_count = 0;
    tap_ok(try(write8, q) == 1 && segv_code == SEGV_ULPTERR && h_count == 0,
           "  ...and a violation is a SIGSEGV, not a delivery to the old handler");
    view_entry(q)[0] = 0;

    /*
     * Leaks: processes that build a table and exit give all memory back. Free memory moves by
     * a few MiB on its own (per-CPU page lists, slabs); leaking even one page per process
     * would lose 8 MiB here, the tables themselves (65+ pages each) far more.
     */
    long before = ulpt_mem_free_kb();
    for (int i = 0; i < 2000; i++) {
        pid = fork();
        if (pid == 0) {
            for (int j = 0; j < 64; j++)           /* 64 leaves spread over the address space */
                view_entry((void *)(uintptr_t)((uint64_t)j << 30))[0] = 0;
            _exit(0);
        }
        waitpid(pid, &status, 0);
    }
    long after = ulpt_mem_free_kb();
    tap_ok(before > 0 && after >= before - 6144, "2000 processes with tables: MemFree %ld -> %ld kB", before, after);
    tap_ok(status_says("enabled"), "the parent's table survived its children");
    return tap_done();
}
