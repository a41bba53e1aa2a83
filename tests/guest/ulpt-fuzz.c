/*
 * ulpt-fuzz: a random fuzzer of the ULPT kernel API (docs/linux-api.md), run in the guest on
 * two vCPUs. Usage:
 *
 *   ulpt-fuzz [--seed N] [--seconds S] [--seq N] [--jobs N] [--stall S] [NAME...] | --list
 *
 * A run is a series of sequences; sequence i is a fresh process whose random operations come
 * from (seed, i) alone, and so do those of every process and thread it creates (a child's
 * stream from its parent's at the fork): the same seed gives the same operations per process
 * (the interleaving between processes and vCPUs is the only thing left to chance). --seq N
 * runs sequence N alone; a sequence whose processes count nothing (calls, accesses, forks) for
 * --stall S seconds (120) is reported hung, with its tasks' kernel stacks. The operations: the six ARCH_ULPT_* calls with valid and hostile
 * arguments (bad, kernel and non-canonical pointers, read-only and straddling structures,
 * non-zero flags, handler addresses around the user limit, unknown codes; access logs that are
 * misaligned, at kernel or non-canonical addresses, around the user limit, too big, with a
 * threshold above their size, on unmapped or read-only memory; count tables, with a size or
 * threshold, and unknown flags), accesses logged through entries with ULPT_LOG (each record
 * checked and consumed, each counter taken; log events), the view and
 * restricted memory through mmap, munmap, mremap, mprotect, madvise and brk, accesses that the
 * table denies (with and without a handler), fork, exec, threads, clone(CLONE_VM), signals
 * inside the handler, processes that die inside it, PTRACE_ARCH_PRCTL, an address space too
 * full for the view.
 *
 * Oracles: each call's errno is one the table of docs/linux-api.md (encoded below, want_*)
 * gives for its argument class, and what GET_STATE, /proc/PID/arch_status and the view then
 * show is what the doc says; the kernel log gets no oops, BUG, WARNING, KASAN, lockdep or
 * kmemleak report (kmemleak: a scan through debugfs when the kernel has it); the table memory
 * comes back when the processes are gone (free memory against the tables' sizes).
 * TAP tests: regress (the regression list: sequences that once failed), fuzz, memory, klog.
 * The last lines: "# sequences: N, distinct failures: M" and one line per distinct failure
 * with the sequence that first showed it (rerun it with --seed S --seq N).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <asm/ulpt.h>
#include "tap.h"
#include "ulpt-handler.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#define MADV_KEEPONFORK 19
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#define MADV_PAGEOUT 21
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef PTRACE_ARCH_PRCTL
#define PTRACE_ARCH_PRCTL 30
#endif

#define PG 4096UL
#define NP 16                       /* pages of restricted data memory */
#define NCODE 2                     /* pages of restricted code (a ret at each line start) */
/* The user address limit of the paging mode: 2^47 - 4096, or 2^56 - 4096 with 5-level paging */
static unsigned long user_limit = (1UL << 47) - PG, va_top = 1UL << 47;
#define USER_LIMIT user_limit

/* ---- the run's shared record: counters and distinct failures, across every process ---- */
#define MAXFAIL 64
struct failure { char sig[200]; unsigned long seq, count; };
struct shared {
    int lock;
    long seqs, procs, calls, accesses, handled, forks, execs, again, again_pf, logged, counted;
    long table_kb;                  /* sum over processes of their table's size at exit */
    long progress[8];               /* per job slot: counted events of its sequence's processes */
    long fails, nfail, nnote;
    struct failure fail[MAXFAIL], note[MAXFAIL];
};
static struct shared *sh;
static uint64_t seed0;
static unsigned long cur_seq;
static int nodev;                   /* no ULPT (or noulpt): every ARCH_ULPT_* is ENODEV */
static int nolog;                   /* a ULPT CPU without the access log: the log calls ENODEV */
static int nocount;                 /* one without count tables: a count table is ENODEV */

static void sh_lock(void) { while (__atomic_exchange_n(&sh->lock, 1, __ATOMIC_ACQUIRE)) sched_yield(); }
static void sh_unlock(void) { __atomic_store_n(&sh->lock, 0, __ATOMIC_RELEASE); }
static int my_slot;                 /* the job slot whose sequence this process belongs to */
static void add(long *c, long n)
{
    __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sh->progress[my_slot], 1, __ATOMIC_RELAXED);
}

static void record(struct failure *t, long *n, const char *sig)
{
    sh_lock();
    long i;
    for (i = 0; i < *n; i++)
        if (strcmp(t[i].sig, sig) == 0)
            break;
    if (i == *n && *n < MAXFAIL) {
        snprintf(t[i].sig, sizeof(t[i].sig), "%s", sig);
        t[i].seq = cur_seq;
        (*n)++;
    }
    if (i < *n)
        t[i].count++;
    sh_unlock();
}

/* A failure, by signature (no addresses or pids in it: the same bug gives the same text). */
static void fail(const char *fmt, ...)
{
    char sig[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sig, sizeof(sig), fmt, ap);
    va_end(ap);
    add(&sh->fails, 1);
    record(sh->fail, &sh->nfail, sig);
}

/* A case the doc does not decide (we accept every reading it allows): reported once. */
static void note(const char *fmt, ...)
{
    char sig[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sig, sizeof(sig), fmt, ap);
    va_end(ap);
    record(sh->note, &sh->nnote, sig);
}

/* ---- randomness: xorshift64*, one stream per process and thread ---- */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (x ^ (x >> 31)) | 1;
}
static uint64_t rnd(uint64_t *s) { *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27; return *s * 2685821657736338717ull; }
static unsigned rn(uint64_t *s, unsigned n) { return (unsigned)(rnd(s) % n); }

/* ---- system calls ---- */
static long aprctl(int op, unsigned long a) { return syscall(SYS_arch_prctl, op, a); }
static int err_of(long rc) { return rc < 0 ? errno : 0; }
static const char *ename(int e)
{
    static __thread char b[16];
    switch (e) {
    case 0: return "0";
    case EINVAL: return "EINVAL"; case EFAULT: return "EFAULT"; case EBUSY: return "EBUSY";
    case ENOMEM: return "ENOMEM"; case ENODEV: return "ENODEV"; case EINTR: return "EINTR";
    case EPERM: return "EPERM"; case EACCES: return "EACCES"; case ESRCH: return "ESRCH";
    case EIO: return "EIO";
    }
    snprintf(b, sizeof(b), "errno%d", e);
    return b;
}

/*
 * The oracle of a call: got must be one of the n errnos of want (0: success). call and cls
 * name the call and its argument class in the failure's signature.
 */
static int expect(const char *call, const char *cls, int got, int n, const int *want)
{
    char w[64] = "";

    add(&sh->calls, 1);
    for (int i = 0; i < n; i++)
        if (got == want[i])
            return 1;
    for (int i = 0; i < n; i++)
        snprintf(w + strlen(w), sizeof(w) - strlen(w), "%s%s", i ? "|" : "", ename(want[i]));
    fail("%s(%s): errno %s, docs/linux-api.md says %s", call, cls, ename(got), w);
    return 0;
}
#define EXPECT(call, cls, got, ...) \
    expect(call, cls, got, sizeof((int[]){ __VA_ARGS__ }) / sizeof(int), (int[]){ __VA_ARGS__ })

/* ---- the process's tracked state (what the doc says the kernel holds) ---- */
static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled;
static unsigned long view;           /* 0 when not enabled */
static long epoch;                   /* DISABLEs so far: a thread's handler dies with its table */
static struct { unsigned long lo, hi; } holes[16];
static int nholes;                   /* parts of the view unmapped (view stays reachable elsewhere) */
static int view_dontfork;            /* parts of the view not copied to children (df[]) */
static struct { unsigned long lo, hi; } df[4];
static unsigned long markers[8];     /* our pages mapped where the view was: DISABLE must keep them */
static int nmarkers;
static uint8_t *region, *code;       /* restricted memory */
static uint64_t w0[NP + NCODE], w1[NP + NCODE];   /* their entries as we stored them */
static int depth;
static char path[64];                /* this process in its sequence: 0, 0.3, 0.3.1 ... */

/* per thread */
static __thread unsigned long my_handler;
static __thread long my_epoch;
static __thread sigjmp_buf t_jmp;
static __thread volatile int t_armed, t_sig, t_code, t_hmode;
static __thread volatile unsigned long t_addr, t_err;
static __thread volatile long t_hits, t_usr1, t_inh_bad;
/* The thread's page faults when its handler last returned (-1: not in a checked access), and
   whether one came between that return and the next delivery: what ends a permit (R-RET-2). */
static __thread volatile long t_flt_ret = -1, t_flt_between;
/* The thread's access log as set (base 0: none), valid in table epoch my_log_epoch; its
   memory: the thread's own page (each record consumed at once), or one that faults */
enum { LM_OWN, LM_HOLE, LM_RO, LM_OTHER };
static __thread struct ulpt_log my_log;
static __thread long my_log_epoch;
static __thread int my_log_mem;
/* Two pages: 2^7 records, or the counters of our NP pages (16 bytes per 128) */
static __thread struct ulpt_log_record *my_log_buf;
static __thread uint64_t t_ls;        /* the log operations' own stream: the others' unchanged */
static __thread uint64_t t_cs;        /* the count tables' own: the log operations' unchanged */
static __thread volatile long t_logev, t_full;
static __thread volatile uint64_t t_logev_index;

static int in_hole(unsigned long a)
{
    for (int i = 0; i < nholes; i++)
        if (a >= holes[i].lo && a < holes[i].hi)
            return 1;
    return 0;
}
static unsigned long ent_addr(unsigned long va) { return view + (va >> 12) * 16; }

/* ---- the handler ---- */
enum { H_PERMIT, H_SIGNAL, H_FAULT, H_EXIT, H_ABORT, H_HANG, H_EXEC, H_DISABLE, H_SLEEP, H_NMODES };
void fuzz_entry(void);
void fuzz_handler(uint64_t *f);
/* The stub saves the registers a C call clobbers, flags included, and returns with UIRET. */
asm(".text\n.globl fuzz_entry\nfuzz_entry:\n"
    "pushfq\npush %rax\npush %rcx\npush %rdx\npush %rsi\npush %rdi\n"
    "push %r8\npush %r9\npush %r10\npush %r11\n"
    "lea 80(%rsp), %rdi\nmov %rsp, %rax\nand $-16, %rsp\npush %rax\npush %rax\n"
    "call fuzz_handler\npop %rax\nmov %rax, %rsp\n"
    "pop %r11\npop %r10\npop %r9\npop %r8\npop %rdi\npop %rsi\npop %rdx\npop %rcx\npop %rax\npopfq\n"
    ".byte 0xf3, 0x0f, 0x01, 0xec\n");

static char *self_exe = "/proc/self/exe";

static int in_handler_now(void)
{
    struct ulpt_state s;
    if (aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&s))
        return -1;
    return !!(s.flags & ULPT_STATE_IN_HANDLER);
}

__attribute__((noinline)) static void touch_r(volatile uint64_t *p) { (void)*p; }

static long thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

void fuzz_handler(uint64_t *f)
{
    if (ULPT_INFO_REASON(f[1]) == ULPT_REASON_LOG) {    /* records wait: they are consumed later */
        t_logev++;
        t_logev_index = f[2];
        return;
    }
    if (ULPT_INFO_REASON(f[1]) == ULPT_REASON_FULL) {   /* never: each record is consumed at once */
        t_full++;
        f[1] |= ULPT_INFO_PERMIT;
        return;
    }
    t_hits++;
    if (t_flt_ret >= 0 && thread_faults() > t_flt_ret)
        t_flt_between++;
    if (in_handler_now() != 1)
        t_inh_bad++;
    switch (t_hmode) {
    case H_SIGNAL:
        syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1);
        if (in_handler_now() != 1)       /* rt_sigreturn put us back in the handler */
            t_inh_bad++;
        break;
    case H_FAULT:                        /* a violation inside the handler: SIGSEGV */
        if (ULPT_INFO_KIND(f[1]) == ULPT_KIND_X)
            ((void (*)(void))f[0])();
        else if (ULPT_INFO_KIND(f[1]) == ULPT_KIND_W)
            *(volatile uint64_t *)f[0] = 0;    /* denied: writes nothing */
        else
            touch_r((volatile uint64_t *)f[0]);   /* the denied address again */
        break;
    case H_EXIT: syscall(SYS_exit_group, 7); break;
    case H_ABORT: abort();
    case H_HANG: for (;;) pause();
    case H_EXEC: {
        char *argv[] = { "ulpt-fuzz", "--exec-check", NULL };
        syscall(SYS_execve, self_exe, argv, environ);
        syscall(SYS_exit_group, 5);
        break;
    }
    case H_SLEEP: {                      /* switched out inside the handler */
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        syscall(SYS_nanosleep, &ts, NULL);
        break;
    }
    case H_DISABLE:                      /* the UIRET below raises SIGILL */
        aprctl(ARCH_ULPT_DISABLE, 0);
        break;
    }
    f[1] |= ULPT_INFO_PERMIT;
    t_flt_ret = thread_faults();
}

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    if (!t_armed) {
        char m[128];
        int n = snprintf(m, sizeof(m), "ulpt-fuzz: unexpected signal %d code %d addr %p at rip %#llx\n", sig,
                         si->si_code, si->si_addr, (unsigned long long)uc->uc_mcontext.gregs[REG_RIP]);
        if (write(2, m, n) < 0) { }
        fail("unexpected signal %d (si_code %d) outside a checked access", sig, si->si_code);
        _exit(99);
    }
    t_sig = sig;
    t_code = si->si_code;
    t_addr = (unsigned long)si->si_addr;
    t_err = uc->uc_mcontext.gregs[REG_ERR];
    if (in_handler_now() == 1)            /* the state is cleared while a signal handler runs */
        t_inh_bad++;
    siglongjmp(t_jmp, 1);
}

static void on_usr1(int sig)
{
    (void)sig;
    t_usr1++;
    if (in_handler_now() == 1)
        t_inh_bad++;
}

/* ---- checked accesses ---- */
enum { K_R, K_W, K_X };
/* Runs one access; returns 0 when it completed, else the signal (t_code, t_addr tell more). */
static int access_(void *p, int kind, uint64_t v)
{
    t_sig = 0;
    if (sigsetjmp(t_jmp, 1) == 0) {
        t_armed = 1;
        if (kind == K_R)
            (void)*(volatile uint64_t *)p;
        else if (kind == K_W)
            *(volatile uint64_t *)p = v;
        else
            ((void (*)(void))p)();
    }
    t_armed = 0;
    return t_sig;
}

static int denied(int idx, unsigned off, int kind)
{
    if (kind == K_X)
        return !!(w0[idx] & ULPT_NX);
    int line = off / 128;
    if (kind == K_R)
        return (w0[idx] & ULPT_NR) || (w1[idx] & ULPT_LINE_NR(line));
    return (w0[idx] & ULPT_NW) || (w1[idx] & ULPT_LINE_NW(line));
}

static uint8_t *page_of(int idx) { return idx < NP ? region + idx * PG : code + (idx - NP) * PG; }

/* A load or store through the view: 0, or the signal it raised. */
static int view_rw(unsigned long a, int write, uint64_t *v)
{
    t_sig = 0;
    if (sigsetjmp(t_jmp, 1) == 0) {
        t_armed = 1;
        if (write)
            *(volatile uint64_t *)a = *v;
        else
            *v = *(volatile uint64_t *)a;
    }
    t_armed = 0;
    return t_sig;
}

/* Store an entry of our memory (only when the view page is there). */
static void set_entry(int idx, uint64_t a, uint64_t b)
{
    unsigned long e = ent_addr((unsigned long)page_of(idx));
    if (!enabled || in_hole(e))
        return;
    if (view_rw(e, 1, &a) || view_rw(e + 8, 1, &b)) {
        fail("store to the view (entry of our memory): signal %d code %d", t_sig, t_code);
        return;
    }
    w0[idx] = a;
    w1[idx] = b;
}

/* The entries of our memory read through the view are the ones we stored (and only those). */
static void check_entries(const char *when)
{
    if (!enabled)
        return;
    for (int i = 0; i < NP + NCODE; i++) {
        unsigned long e = ent_addr((unsigned long)page_of(i));
        uint64_t a, b;
        if (in_hole(e))
            continue;
        if (view_rw(e, 0, &a) || view_rw(e + 8, 0, &b)) {
            fail("load from the view (%s): signal %d code %d", when, t_sig, t_code);
            return;
        }
        if (a != w0[i] || b != w1[i]) {
            fail("entry read through the view (%s) is not the one stored", when);
            return;
        }
    }
}

/* ---- the access log ---- */
static int log_live(void) { return enabled && my_log.base && my_log_epoch == epoch; }

/*
 * An access that entries with ULPT_LOG deny, by a thread with a log: made and recorded, not
 * delivered; with thresh 1 (the one record waits) a log event when a handler is there. A log
 * on unmapped or read-only memory: the ordinary SIGSEGV of its slot, the access not made.
 */
static void check_logged(int idx, int kind, uint8_t *p, uint64_t v, int sig, long hits, long ev, int handler)
{
    uint64_t n = 1ull << my_log.size_shift;
    unsigned long slot = my_log.base + 32 * (my_log.index & (n - 1));
    uint64_t pr = kind == K_R ? ULPT_NR : ULPT_NW, lr = 0;

    for (int l = 0; l < 32; l++)
        lr |= w1[idx] & (kind == K_R ? ULPT_LINE_NR(l) : ULPT_LINE_NW(l));
    if (my_log_mem != LM_OWN) {
        int want = my_log_mem == LM_HOLE ? SEGV_MAPERR : SEGV_ACCERR;
        if (sig != SIGSEGV || t_code != want || t_addr - slot >= 32 || (t_err & 0x100) || hits || ev)
            fail("an access logged into %s memory: want SIGSEGV %s in its slot, got signal %d code %d%s",
                 my_log_mem == LM_HOLE ? "unmapped" : "read-only", my_log_mem == LM_HOLE ? "SEGV_MAPERR" : "SEGV_ACCERR",
                 sig, t_code, t_addr - slot < 32 ? "" : " (elsewhere)");
        return;
    }
    struct ulpt_log_record *r = (struct ulpt_log_record *)slot;
    uint64_t info = __atomic_load_n(&r->info, __ATOMIC_ACQUIRE);
    unsigned reason = ULPT_INFO_REASON(info);
    add(&sh->logged, 1);
    if (sig || hits)
        fail("a logged access: signal %d code %d, handler ran %ld", sig, t_code, hits);
    else if (!(info & ULPT_REC_V) || r->start != (unsigned long)p ||
             ULPT_INFO_KIND(info) != (kind == K_R ? ULPT_KIND_R : ULPT_KIND_W) || ULPT_INFO_SIZE(info) != 8 ||
             !((reason == ULPT_REASON_PAGE && (w0[idx] & pr)) || (reason == ULPT_REASON_LINE && lr)) ||
             !!(info & ULPT_REC_VAL) != (kind == K_W) || r->value != (kind == K_W ? v : 0) || !r->rip) {
        fail("a logged %s: the record at the write index is not the access's", kind == K_R ? "read" : "write");
        printf("# logged %s: record start %#llx info %#llx value %#llx at index %llu of %llu; the log %s the view's range\n",
               kind == K_R ? "read" : "write", (unsigned long long)r->start, (unsigned long long)info,
               (unsigned long long)r->value, (unsigned long long)my_log.index, (unsigned long long)n,
               my_log.base - view < ULPT_VIEW_SIZE ? "lies in" : "is outside");
    }
    __atomic_store_n(&r->info, 0, __ATOMIC_RELEASE);
    my_log.index++;
    int want_ev = my_log.thresh == 1 && handler;
    if (ev != want_ev)
        fail("a logged access with thresh %u%s: %ld log events", my_log.thresh, handler ? " and a handler" : "", ev);
    else if (ev && t_logev_index != my_log.index)
        fail("a log event: frame word 2 is not the write index");
}

/*
 * The same for a count table: made, and one added to the counter of its kind of the line of
 * p (taken at once, so it must hold 1); never a log event.
 */
static void check_counted(int kind, uint8_t *p, int sig, long hits, long ev)
{
    uint64_t *c = (uint64_t *)(my_log.base + ((unsigned long)p >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE) +
                  (kind == K_R ? ULPT_CNT_READ : ULPT_CNT_WRITE);
    uint64_t n = __atomic_exchange_n(c, 0, __ATOMIC_ACQ_REL);

    add(&sh->counted, 1);
    if (sig || hits)
        fail("a counted access: signal %d code %d, handler ran %ld", sig, t_code, hits);
    else if (n != 1)
        fail("a counted %s: its line's counter added %llu, not 1", kind == K_R ? "read" : "write",
             (unsigned long long)n);
    if (ev)
        fail("a counted access: %ld log events", ev);
    my_log.index++;
}

/* GET_LOG (and this thread's ULPT_log: line) against the tracked log. */
static void check_log(const char *when)
{
    struct ulpt_log l;
    memset(&l, 0xa5, sizeof(l));
    long rc = aprctl(ARCH_ULPT_GET_LOG, (unsigned long)&l);
    if (nodev || nolog) {
        EXPECT("GET_LOG", "no ULPT (log)", err_of(rc), ENODEV);
        return;
    }
    if (!EXPECT("GET_LOG", "valid pointer", err_of(rc), 0))
        return;
    if (!log_live()) {
        if (l.base || l.size_shift || l.thresh || l.index || l.flags)
            fail("GET_LOG without a log (%s): not all zero", when);
    } else if (l.base != my_log.base || l.size_shift != my_log.size_shift || l.thresh != my_log.thresh ||
               l.index != my_log.index || l.flags != my_log.flags) {
        fail("GET_LOG (%s): not the log set, or not its write index", when);
    }
    char b[512], *t;
    int fd = open("/proc/thread-self/arch_status", O_RDONLY);
    long n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
    if (fd >= 0)
        close(fd);
    b[n > 0 ? n : 0] = 0;
    if (enabled && log_live() && my_log.flags)
        t = strstr(b, "ULPT_log:\tcount table\n") ? NULL : "count table";
    else if (enabled && (!(t = strstr(b, "ULPT_log:\t")) ||
                         strtoull(t + 10, NULL, 10) != (log_live() ? 1ull << my_log.size_shift : 0)))
        t = "size";
    else
        t = NULL;
    if (t)
        fail("arch_status ULPT_log (%s): not the thread's log %s", when, t);
}

/* One access to our memory, checked against the entries and the handler. */
static void checked_access(uint64_t *s)
{
    int idx = rn(s, NP + NCODE), kind = idx < NP ? rn(s, 2) : K_X;
    unsigned off = idx < NP ? (rn(s, PG / 8) * 8) : rn(s, 32) * 128;
    uint8_t *p = page_of(idx) + off;
    long hits = t_hits, usr1 = t_usr1, inh = t_inh_bad, ev = t_logev, full = t_full;
    int den = enabled && denied(idx, off, kind);
    int handler = enabled && my_handler && my_epoch == epoch;
    int mode = t_hmode;

    add(&sh->accesses, 1);
    t_flt_ret = -1;
    t_flt_between = 0;
    uint64_t v = rnd(s);
    int sig = access_(p, kind, v);
    t_flt_ret = -1;
    if (t_inh_bad != inh)
        fail("GET_STATE in-handler flag wrong inside the handler or a signal handler (handler mode %d)", mode);
    if (t_full != full)
        fail("a full log (each record is consumed at once): FULL delivered");
    if (!den) {
        if (sig || t_hits != hits || t_logev != ev)
            fail("access allowed by the table: signal %d code %d, handler ran %ld", sig, t_code, t_hits - hits);
        return;
    }
    if (kind != K_X && (w0[idx] & ULPT_LOG) && log_live()) {
        if (my_log.flags)
            check_counted(kind, p, sig, t_hits - hits, t_logev - ev);
        else
            check_logged(idx, kind, p, v, sig, t_hits - hits, t_logev - ev, handler);
        return;
    }
    if (t_logev != ev)
        fail("a log event after an access that was not logged");
    if (!handler) {
        if (sig != SIGSEGV || t_code != SEGV_ULPTERR || t_addr != (unsigned long)p || !(t_err & 0x100))
            fail("denied access without a handler: want SIGSEGV/SEGV_ULPTERR at the address with error bit 8, got signal %d code %d%s",
                 sig, t_code, t_addr == (unsigned long)p ? "" : " (other address)");
        else if (!!(t_err & 2) != (kind == K_W) || !!(t_err & 16) != (kind == K_X))
            fail("SEGV_ULPTERR error code does not tell the access kind (%d)", kind);
        return;
    }
    add(&sh->handled, 1);
    if (mode == H_FAULT) {
        if (sig != SIGSEGV || t_code != SEGV_ULPTERR)
            fail("violation inside the handler: want SIGSEGV/SEGV_ULPTERR, got signal %d code %d", sig, t_code);
        if (in_handler_now() == 1)
            fail("after siglongjmp out of a signal handler the thread is still in its ULPT handler");
        return;
    }
    if (mode == H_DISABLE) {
        /* DISABLE from inside the handler: its UIRET raises SIGILL (ULPT is off). (st_lock held) */
        enabled = 0; view = 0; nholes = 0; epoch++; view_dontfork = 0;
        memset(w0, 0, sizeof(w0)); memset(w1, 0, sizeof(w1));
        if (sig != SIGILL)
            fail("UIRET after DISABLE inside the handler: want SIGILL, got signal %d", sig);
        t_hmode = H_PERMIT;
        return;
    }
    /* One run, or two: the permit of the first ends at any exception before the instruction
       completes (docs/spec.md R-RET-2), and the access is delivered again. The one seen is a
       page fault on the access (a copy-on-write page after another thread's fork): two runs
       are accepted when the thread's fault count rose between the first UIRET and the second
       delivery. Counted, and printed in the summary. */
    if (t_hits == hits + 2) {
        add(&sh->again, 1);
        if (t_flt_between)
            add(&sh->again_pf, 1);
    }
    else if (t_hits == hits + 2 && !t_flt_between)
        fail("denied access delivered again with no page fault between the handler's UIRET and the access");
    if (sig || t_hits < hits + 1 || t_hits > hits + 2)
        fail("denied access with a handler: want one handler run (two after an exception that ended the permit) and no signal, got %ld runs, signal %d code %d",
             t_hits - hits, sig, t_code);
    if (mode == H_SIGNAL && t_usr1 == usr1)
        fail("signal raised inside the handler was not delivered");
}

/* ---- GET_STATE against the tracked state ---- */
static void check_state(const char *when)
{
    struct ulpt_state s;
    memset(&s, 0xa5, sizeof(s));
    long rc = aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&s);
    if (nodev) {
        EXPECT("GET_STATE", "no ULPT", err_of(rc), ENODEV);
        return;
    }
    if (!EXPECT("GET_STATE", "valid pointer", err_of(rc), 0))
        return;
    unsigned long h = (my_epoch == epoch) ? my_handler : 0;
    if (!enabled) {
        if (s.flags || s.view || s.view_size || s.handler || s.stack_adjust || s.table_bytes)
            fail("GET_STATE without a table (%s): not all zero", when);
        return;
    }
    if (!(s.flags & ULPT_STATE_ENABLED) || s.view != view || s.view_size != ULPT_VIEW_SIZE ||
        s.stack_adjust != 128 || s.table_bytes == 0 || s.table_bytes % PG)
        fail("GET_STATE with a table (%s): flags, view, view_size, stack_adjust or table_bytes wrong", when);
    if (s.handler != h)
        fail("GET_STATE handler (%s) is not the thread's", when);
    if (s.flags & ULPT_STATE_IN_HANDLER)
        fail("GET_STATE outside the handler (%s) says in-handler", when);
}

/* /proc/self/arch_status agrees with GET_STATE. */
static void check_arch_status(void)
{
    char b[512];
    int fd = open("/proc/self/arch_status", O_RDONLY);
    if (fd < 0) {
        fail("/proc/self/arch_status cannot be opened");
        return;
    }
    struct ulpt_state s = { 0 };
    long rc = aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&s);
    long n = read(fd, b, sizeof(b) - 1);
    close(fd);
    b[n > 0 ? n : 0] = 0;
    if (nodev) {
        if (!strstr(b, "ULPT:\tunsupported"))
            fail("arch_status without ULPT does not say unsupported");
        return;
    }
    char *t = strstr(b, "ULPT_table:\t");
    if (rc == 0 && (s.flags & ULPT_STATE_ENABLED)) {
        if (!strstr(b, "ULPT:\tenabled") || !t)
            fail("arch_status of a process with a table does not say enabled");
        /* the table may grow between the two reads (threads touch the view): at least */
        else if (strtoul(t + 12, NULL, 10) * 1024 < s.table_bytes && n > 0)
            fail("arch_status ULPT_table is smaller than GET_STATE table_bytes");
    } else if (rc == 0 && !strstr(b, "ULPT:\tdisabled")) {
        fail("arch_status of a process without a table does not say disabled");
    }
}

/* ---- hostile pointers ---- */
static uint8_t *ro_page, *hole_page, *edge_page;   /* read-only, unmapped, last before a hole */

enum { P_VALID, P_NULL, P_UNMAPPED, P_KERNEL, P_NONCANON, P_READONLY, P_STRADDLE, P_UNALIGNED, P_TOP, P_NCLS };
static const char *pcls[] = { "valid", "NULL", "unmapped", "kernel address", "non-canonical",
                              "read-only", "straddles a hole", "unaligned", "top of user space" };
static unsigned long hostile_ptr(int cls, uint64_t *s, void *valid)
{
    switch (cls) {
    case P_NULL: return 0;
    case P_UNMAPPED: return (unsigned long)hole_page + rn(s, PG - 64);
    case P_KERNEL: return 0xffff888000000000ul + (rnd(s) & 0xffff000);
    case P_NONCANON: return 0x8000000000000000ul >> rn(s, 16) | (1ul << 48);
    case P_READONLY: return (unsigned long)ro_page + rn(s, 8) * 8;
    case P_STRADDLE: return (unsigned long)edge_page + PG - 8 * (1 + rn(s, 2));
    case P_UNALIGNED: return (unsigned long)valid + 1 + rn(s, 7);
    case P_TOP: return USER_LIMIT - 8;
    }
    return (unsigned long)valid;
}

/* ---- the operations ---- */
static void forget_table(void)
{
    enabled = 0; view = 0; nholes = 0; view_dontfork = 0; epoch++;
    memset(w0, 0, sizeof(w0));
    memset(w1, 0, sizeof(w1));
}

static int view_mapped_anywhere(void)
{
    char b[256];
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;
    while (f && fgets(b, sizeof(b), f))
        if (strstr(b, "[ulpt]"))
            found = 1;
    if (f)
        fclose(f);
    return found;
}

static void op_enable(uint64_t *s)
{
    static __thread char buf[64] __attribute__((aligned(16)));
    int cls = rn(s, 4) ? P_VALID : rn(s, P_NCLS);
    int flags = rn(s, 6) == 0;
    struct ulpt_enable *en = (struct ulpt_enable *)(cls == P_UNALIGNED ? buf + 1 + rn(s, 7) : buf);
    unsigned long p = hostile_ptr(cls, s, buf);
    char c[48];

    if (cls == P_VALID || cls == P_UNALIGNED) {
        memset(en, 0, sizeof(*en));
        en->flags = flags ? (1ull << rn(s, 64)) : 0;
        p = (unsigned long)en;
    }
    snprintf(c, sizeof(c), "%s%s", pcls[cls], (cls == P_VALID || cls == P_UNALIGNED) && flags ? ", flags set" : "");
    pthread_mutex_lock(&st_lock);
    long rc = aprctl(ARCH_ULPT_ENABLE, p);
    int e = err_of(rc);
    if (nodev) {
        EXPECT("ENABLE", c, e, ENODEV);
    } else if (cls == P_VALID || cls == P_UNALIGNED) {
        if (flags) {            /* the argument first, also when a table exists */
            EXPECT("ENABLE", c, e, EINVAL);
        } else if (enabled) {
            EXPECT("ENABLE", "a table exists", e, EBUSY);
        } else if (EXPECT("ENABLE", c, e, 0, ENOMEM) && e == 0) {
            if (!en->view || en->view % PG || en->view_size != ULPT_VIEW_SIZE || en->view + ULPT_VIEW_SIZE > (1ul << 47))
                fail("ENABLE: view or view_size not as documented");
            enabled = 1;
            view = en->view;
            nholes = 0;
            view_dontfork = 0;
            epoch++;
            memset(w0, 0, sizeof(w0));
            memset(w1, 0, sizeof(w1));
        }
    } else if (cls == P_READONLY || cls == P_TOP) {
        /* read-only: readable, flags 0 there; TOP: the structure runs past the user limit */
        if (cls == P_READONLY && !enabled) {
            /* enabled all the same: GET_STATE tells */
            if (EXPECT("ENABLE", c, e, EFAULT)) {
                struct ulpt_state st;
                if (aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&st) || !(st.flags & ULPT_STATE_ENABLED))
                    fail("ENABLE whose result cannot be written back: no table (the doc says enabled anyway)");
                else {
                    enabled = 1; view = st.view; nholes = 0; view_dontfork = 0; epoch++;
                    memset(w0, 0, sizeof(w0)); memset(w1, 0, sizeof(w1));
                }
            }
        } else if (cls == P_READONLY) {
            EXPECT("ENABLE", "read-only, a table exists", e, EBUSY);
        } else {
            EXPECT("ENABLE", c, e, EFAULT);
        }
    } else {
        EXPECT("ENABLE", c, e, EFAULT);
    }
    pthread_mutex_unlock(&st_lock);
}

static void op_disable(uint64_t *s)
{
    pthread_mutex_lock(&st_lock);
    long rc = aprctl(ARCH_ULPT_DISABLE, rnd(s) & (rn(s, 2) ? ~0ul : 0));
    int e = err_of(rc);
    if (nodev)
        EXPECT("DISABLE", "no ULPT", e, ENODEV);
    else if (!enabled)
        EXPECT("DISABLE", "no table", e, EINVAL);
    else if (EXPECT("DISABLE", "a table", e, 0)) {
        forget_table();
        if (view_mapped_anywhere())
            fail("DISABLE left a [ulpt] mapping");
        /* our pages where the view was unmapped: DISABLE removes the view, not them */
        for (int i = 0; i < nmarkers; i++) {
            uint64_t v;
            if (view_rw(markers[i], 0, &v) || v != markers[i])
                fail("DISABLE unmapped memory the process had mapped where part of the view was unmapped");
            munmap((void *)markers[i], PG);
        }
        nmarkers = 0;
    }
    pthread_mutex_unlock(&st_lock);
}

static void op_set_handler(uint64_t *s)
{
    unsigned long h;
    const char *c;
    int cls = rn(s, 10);
    switch (cls) {
    case 0: h = 0; c = "0"; break;
    case 1: h = rnd(s) & (USER_LIMIT - 1); c = "any user address"; break;
    case 2: h = USER_LIMIT - 1 - rn(s, 64); c = "just below the user limit"; break;
    case 3: h = va_top - 1 - rn(s, 4095); c = "in the last page below 2^47 (2^56)"; break;
    case 4: h = va_top + (rnd(s) & 0xffffff); c = "at or above 2^47 (2^56)"; break;
    case 5: h = ~0ul - (rnd(s) & 0xffff); c = "kernel address"; break;
    case 6: h = 1ul << (57 + rn(s, 7)); c = "non-canonical"; break;
    default: h = (unsigned long)fuzz_entry; c = "the handler"; break;
    }
    int hm = rn(s, 4) ? (rn(s, 3) ? H_PERMIT : H_SLEEP) : rn(s, 8) == 0 ? H_DISABLE : (rn(s, 2) ? H_SIGNAL : H_FAULT);
    pthread_mutex_lock(&st_lock);
    long rc = aprctl(ARCH_ULPT_SET_HANDLER, h);
    int e = err_of(rc);
    int ok_addr = h < USER_LIMIT;
    if (e == 0 && h && h != (unsigned long)fuzz_entry)
        aprctl(ARCH_ULPT_SET_HANDLER, 0);   /* never keep another address as the handler */
    /* docs/linux-api.md: "below 2^47 - 4096, or 2^56 - 4096 with 5-level paging" (cls 3: no) */
    if (nodev)
        EXPECT("SET_HANDLER", c, e, ENODEV);
    else if (!ok_addr)
        EXPECT("SET_HANDLER", c, e, EINVAL);
    else if (!enabled)
        EXPECT("SET_HANDLER", "no table", e, EINVAL);
    else if (EXPECT("SET_HANDLER", c, e, 0)) {
        my_handler = h == (unsigned long)fuzz_entry ? h : 0;
        my_epoch = epoch;
        t_hmode = hm;
    }
    if (e == 0 && h && h != (unsigned long)fuzz_entry && enabled)
        my_handler = 0, my_epoch = epoch;
    pthread_mutex_unlock(&st_lock);
}

static void op_get_state(uint64_t *s)
{
    int cls = rn(s, 3) ? P_VALID : rn(s, P_NCLS);
    if (cls == P_VALID || cls == P_UNALIGNED) {
        pthread_mutex_lock(&st_lock);
        check_state("random");
        pthread_mutex_unlock(&st_lock);
        return;
    }
    long rc = aprctl(ARCH_ULPT_GET_STATE, hostile_ptr(cls, s, NULL));
    EXPECT("GET_STATE", pcls[cls], err_of(rc), nodev ? ENODEV : EFAULT);
}

/* The log's checks of SET_LOG's argument (docs/linux-api.md) */
static int log_arg_ok(const struct ulpt_log *l)
{
    if (!l->base)
        return 1;
    if (l->flags & ULPT_LOG_COUNT)       /* sparse: no size to check */
        return !l->size_shift && !l->thresh && l->base % 32 == 0 && l->base < USER_LIMIT;
    return l->size_shift <= 24 && l->thresh <= (1u << l->size_shift) && l->base % 32 == 0 &&
           l->base < USER_LIMIT && (32ull << l->size_shift) <= USER_LIMIT - l->base;
}

static void op_set_log(uint64_t *s)
{
    static __thread char buf[64] __attribute__((aligned(16)));
    int cls = rn(s, 5) ? P_VALID : rn(s, P_NCLS);
    struct ulpt_log *a = (struct ulpt_log *)(cls == P_UNALIGNED ? buf + 1 + rn(s, 7) : buf);
    unsigned long p = hostile_ptr(cls, s, buf);
    struct ulpt_log l = { 0 };
    int mem = LM_OTHER, count = rn(&t_cs, 3) == 0;
    const char *c;

    if (!my_log_buf) {
        /* two pages, so that it never fills the one-page hole (hole_page must stay unmapped) */
        my_log_buf = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (my_log_buf == MAP_FAILED) {
            my_log_buf = NULL;
            return;
        }
    }
    l.size_shift = rn(s, 8);
    switch (rn(s, 14)) {
    case 0: c = "base 0 (no log)"; l.size_shift = rnd(s); break;
    case 1: case 2: case 3: case 4: case 12: case 13:
        l.base = (unsigned long)my_log_buf; mem = LM_OWN; c = "own memory";
        if (count)              /* the counters of region in my_log_buf (wraps: EINVAL) */
            l.base -= ((unsigned long)region >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE;
        break;
    case 5: l.base = (unsigned long)hole_page; mem = LM_HOLE; c = "unmapped memory"; break;
    case 6: l.base = (unsigned long)ro_page; mem = LM_RO; c = "read-only memory"; break;
    case 7: l.base = (unsigned long)my_log_buf + 1 + rn(s, 31); c = "base not 32-byte aligned"; break;
    case 8: l.base = 0xffff888000000000ul + (rnd(s) & 0xffffe0); c = "kernel address"; break;
    case 9: l.base = (1ul << (57 + rn(s, 7))) | (rnd(s) & 0xffe0); c = "non-canonical"; break;
    case 10:
        l.size_shift = rn(s, 25);
        l.base = USER_LIMIT - (32ul << l.size_shift) + (rn(s, 2) ? 0 : 32 << rn(s, 4));
        c = "ending at or past the user limit";
        break;
    default: l.base = (rnd(s) & (USER_LIMIT - 1)) & ~31ul; l.size_shift = rn(s, 25); c = "any user address"; break;
    }
    if (rn(s, 10) == 0)
        l.size_shift = rn(s, 2) ? 25 + rn(s, 40) : ~0u;
    uint64_t cap = l.size_shift <= 24 ? 1ull << l.size_shift : 1ull << 24;
    switch (rn(s, 6)) {
    case 0: l.thresh = 0; break;
    case 1: l.thresh = 1; break;
    case 2: l.thresh = rn(s, cap + 1); break;
    case 3: l.thresh = cap; break;
    case 4: l.thresh = cap + 1 + rn(s, 100); break;
    default: l.thresh = rnd(s); break;
    }
    l.index = rn(s, 2) ? rnd(s) : rn(s, 100);
    l.flags = rn(s, 8) == 0 ? 1ull << (1 + rn(s, 63)) : 0;
    if (count) {
        if (rn(&t_cs, 8))
            l.size_shift = l.thresh = 0;
        if (mem == LM_OWN)
            c = "count table, own memory";
        else
            mem = LM_OTHER;              /* its counters could land anywhere */
        l.flags |= ULPT_LOG_COUNT;
        if (rn(&t_cs, 16) == 0)
            l.flags |= rnd(&t_cs) & ~ULPT_LOG_COUNT;
    }
    if (cls == P_VALID || cls == P_UNALIGNED) {
        memcpy(a, &l, sizeof(l));
        p = (unsigned long)a;
    } else if (cls == P_READONLY) {
        memset(&l, 0, sizeof(l));        /* the page holds zeros: no log */
        c = "read-only (zeros: no log)";
    } else {
        c = pcls[cls];
    }
    pthread_mutex_lock(&st_lock);
    long rc = aprctl(ARCH_ULPT_SET_LOG, p);
    int e = err_of(rc);
    if (nodev || nolog)
        EXPECT("SET_LOG", c, e, ENODEV);
    else if (cls != P_VALID && cls != P_UNALIGNED && cls != P_READONLY)
        EXPECT("SET_LOG", c, e, EFAULT);
    else if (l.flags & ~ULPT_LOG_COUNT)
        EXPECT("SET_LOG", "unknown flags set", e, EINVAL);
    else if (!log_arg_ok(&l))
        EXPECT("SET_LOG", c, e, EINVAL);
    else if (l.flags && nocount)
        EXPECT("SET_LOG", "count table, none in the CPU", e, ENODEV);
    else if (!enabled)
        EXPECT("SET_LOG", "no table", e, EINVAL);
    else
        EXPECT("SET_LOG", c, e, 0);
    if (e == 0) {
        if (l.base && mem == LM_OTHER) {
            struct ulpt_log none = { 0 };     /* never keep a log where records could land on ours */
            aprctl(ARCH_ULPT_SET_LOG, (unsigned long)&none);
            l.base = 0;
        }
        if (l.base) {
            my_log = l;
            my_log_epoch = epoch;
            my_log_mem = mem;
            if (mem == LM_OWN)
                memset(my_log_buf, 0, 2 * PG);
        } else {
            memset(&my_log, 0, sizeof(my_log));
        }
    }
    pthread_mutex_unlock(&st_lock);
}

static void op_get_log(uint64_t *s)
{
    int cls = rn(s, 3) ? P_VALID : rn(s, P_NCLS);
    if (cls == P_VALID || cls == P_UNALIGNED) {
        pthread_mutex_lock(&st_lock);
        check_log("random");
        pthread_mutex_unlock(&st_lock);
        return;
    }
    long rc = aprctl(ARCH_ULPT_GET_LOG, hostile_ptr(cls, s, NULL));
    EXPECT("GET_LOG", pcls[cls], err_of(rc), nodev || nolog ? ENODEV : EFAULT);
}

static void op_unknown(uint64_t *s)
{
    int code = rn(s, 2) ? 0x6000 : 0x6007 + rn(s, 0xff8);
    long rc = aprctl(code, rnd(s));
    if (nodev)
        note("an unknown ARCH_ULPT_* code without ULPT: EINVAL or ENODEV (both rows apply)");
    if (nodev)
        EXPECT("arch_prctl", "unknown ARCH_ULPT_* code", err_of(rc), EINVAL, ENODEV);
    else
        EXPECT("arch_prctl", "unknown ARCH_ULPT_* code", err_of(rc), EINVAL);
}

/* Entries of our memory, and far away in the view (tables allocated on touch). */
static void op_view_store(uint64_t *s)
{
    pthread_mutex_lock(&st_lock);
    if (!enabled) {
        pthread_mutex_unlock(&st_lock);
        return;
    }
    if (rn(s, 4)) {
        int idx = rn(s, NP + NCODE);
        uint64_t a = 0, b = 0;
        if (idx >= NP)
            a = rn(s, 2) ? ULPT_NX : 0;
        else if (rn(s, 2))
            a = rnd(s) & (ULPT_NR | ULPT_NW | ULPT_NX);
        else
            b = rnd(s) & rnd(s);
        if (rn(s, 3) == 0)
            a |= (rnd(s) & 0xff00000000000000ull);   /* software bits */
        if (idx < NP && rn(&t_ls, 2) == 0)
            a |= ULPT_LOG;                  /* its denials logged by a thread with a log */
        set_entry(idx, a, b);
    } else {
        /* somewhere far: garbage in an entry of memory we do not use */
        unsigned long va = (rnd(s) & ((1ul << 47) - 1)) & ~(PG - 1);
        unsigned long e = ent_addr(va);
        uint64_t v = rnd(s);
        if (va >= (unsigned long)region - (1ul << 30) && va < (unsigned long)region + (1ul << 30))
            va = 0;                      /* not near our memory */
        else if (e >= view && e < view + ULPT_VIEW_SIZE && !in_hole(e)) {
            if (va >= (unsigned long)view && va < view + ULPT_VIEW_SIZE)
                v = 0;                   /* not the view's own entries: they restrict the view */
            int r = view_rw(e, 1, &v);
            if (r)
                fail("store to the view far away: signal %d code %d", r, t_code);
        }
    }
    pthread_mutex_unlock(&st_lock);
}

static void op_access(uint64_t *s)
{
    pthread_mutex_lock(&st_lock);
    checked_access(s);
    pthread_mutex_unlock(&st_lock);
}

/* munmap + mmap again, mremap there and back, brk up and down: the entries of the range go. */
static void op_remap_memory(uint64_t *s)
{
    pthread_mutex_lock(&st_lock);
    int idx = rn(s, NP), k = 1 + rn(s, NP - idx < 4 ? NP - idx : 4);
    uint8_t *p = region + idx * PG;
    int how = rn(s, 4);
    if (how == 0) {
        if (munmap(p, k * PG) || mmap(p, k * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
            fail("munmap/mmap of restricted memory failed");
        for (int i = idx; i < idx + k; i++)
            w0[i] = w1[i] = 0;
        check_entries("after munmap and mmap of restricted memory");
    } else if (how == 1) {
        static uint8_t *scratch;
        k = 1;                           /* one VMA: a range over two is EFAULT */
        if (!scratch)
            scratch = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int flags = MREMAP_MAYMOVE | MREMAP_FIXED;
        if (mremap(p, k * PG, k * PG, flags, scratch) != scratch ||
            mremap(scratch, k * PG, k * PG, flags, p) != p)
            fail("mremap of restricted memory there and back failed");
        scratch = mmap(scratch, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        for (int i = idx; i < idx + k; i++)
            w0[i] = w1[i] = 0;
        check_entries("after mremap of restricted memory there and back");
    } else if (how == 2) {
        /* brk: up, restrict, down: the entries of the freed range are cleared */
        unsigned long cur = syscall(SYS_brk, 0), top = cur + 4 * PG;
        if ((unsigned long)syscall(SYS_brk, top) == top && enabled) {
            unsigned long first = (cur + PG - 1) & ~(PG - 1);
            for (unsigned long a = first; a < top; a += PG) {
                uint64_t v = ULPT_NR | ULPT_NW;
                if (!in_hole(ent_addr(a)))
                    view_rw(ent_addr(a), 1, &v);
            }
            syscall(SYS_brk, cur);
            for (unsigned long a = first; a < top; a += PG) {
                uint64_t v = 0;
                if (!in_hole(ent_addr(a)) && (view_rw(ent_addr(a), 0, &v) || v))
                    fail("shrinking brk left the entries of the freed range");
            }
        } else if ((unsigned long)syscall(SYS_brk, 0) != cur) {
            syscall(SYS_brk, cur);
        }
    } else {
        /* mprotect is independent of the table; madvise keeps the memory where it is */
        int prot = rn(s, 2) ? PROT_READ : PROT_NONE;
        if (mprotect(p, k * PG, prot) || mprotect(p, k * PG, PROT_READ | PROT_WRITE))
            fail("mprotect of restricted memory failed");
        if (madvise(p, k * PG, rn(s, 2) ? MADV_DONTNEED : MADV_COLD) && errno != EINVAL && errno != ENOSYS)
            fail("madvise of restricted memory failed");
        check_entries("after mprotect and madvise of restricted memory");
    }
    pthread_mutex_unlock(&st_lock);
}

/* A part of the view: [lo, hi) page aligned, with a bias towards the page of our entries. */
static void view_range(uint64_t *s, unsigned long *lo, unsigned long *hi)
{
    unsigned long a;
    if (rn(s, 3) == 0)
        a = ent_addr((unsigned long)region) & ~(PG - 1);
    else
        a = view + ((rnd(s) % (ULPT_VIEW_SIZE / PG)) * PG);
    unsigned long n = PG * (1 + (rn(s, 4) ? rn(s, 4) : rnd(s) % 100000));
    if (a + n > view + ULPT_VIEW_SIZE)
        n = view + ULPT_VIEW_SIZE - a;
    if (rn(s, 20) == 0) {
        a = view;
        n = ULPT_VIEW_SIZE;
    }
    *lo = a;
    *hi = a + n;
}

/* Where the view was unmapped the process may have mapped anything since (our markers, and
   glibc's thread stacks and malloc arenas, which take the first free range): a munmap or
   madvise meant for the view must not reach into a hole (seed 3726337696, sequence 61: a fork
   child's munmap took a thread stack cached there, and its next pthread_create faulted). */
static int overlaps_hole(unsigned long lo, unsigned long hi)
{
    for (int i = 0; i < nholes; i++)
        if (holes[i].hi > lo && holes[i].lo < hi)
            return 1;
    return 0;
}

static void op_view_vm(uint64_t *s)
{
    unsigned long lo, hi;
    pthread_mutex_lock(&st_lock);
    if (!enabled || nodev) {
        pthread_mutex_unlock(&st_lock);
        return;
    }
    view_range(s, &lo, &hi);
    int what = rn(s, 10);
    if (what <= 1) {
        /* mremap of any part of the view: EINVAL (only ranges inside one piece of it) */
        if (in_hole(lo) || nholes) {
            pthread_mutex_unlock(&st_lock);
            return;
        }
        static const char *cls[] = { "move", "grow", "shrink", "dontunmap", "old_len 0", "fixed", "from below" };
        int c = rn(s, 7);
        unsigned long len = hi - lo, nlen = len, flags = 0, na = 0;
        switch (c) {
        case 0: flags = MREMAP_MAYMOVE; break;
        case 1: nlen = len + PG * (1 + rn(s, 16)); flags = rn(s, 2) ? MREMAP_MAYMOVE : 0; break;
        case 2: nlen = len > PG ? len - PG : len; if (nlen == len) c = 0, flags = MREMAP_MAYMOVE; break;
        case 3: flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP; break;
        case 4: len = 0; flags = MREMAP_MAYMOVE; break;
        case 5: flags = MREMAP_MAYMOVE | MREMAP_FIXED; na = (unsigned long)hole_page; nlen = PG; len = PG; break;
        case 6:   /* starts below the view (unmapped or another mapping) and runs into it */
            lo = view - PG * (1 + rn(s, 4));
            len = view - lo + PG * (1 + rn(s, 4));
            nlen = len + PG * (1 + rn(s, 4));    /* grown (MREMAP_FIXED unmaps its target first) */
            flags = rn(s, 2) ? MREMAP_MAYMOVE : 0;
            break;
        }
        void *r = mremap((void *)lo, len, nlen, flags, na);
        char cl[40];
        snprintf(cl, sizeof(cl), "view, %s", cls[c]);
        EXPECT("mremap", cl, r == MAP_FAILED ? errno : 0, c == 6 ? EFAULT : EINVAL);
        if (r != MAP_FAILED && r != (void *)lo)
            munmap(r, nlen);
    } else if (what <= 4) {
        /* munmap a part: the table stays in force (our entries keep restricting) */
        if (overlaps_hole(lo, hi) || nholes >= 16) {
            pthread_mutex_unlock(&st_lock);
            return;
        }
        int whole = lo == view && hi == view + ULPT_VIEW_SIZE;
        int rc = munmap((void *)lo, hi - lo) ? errno : 0;
        if (!whole) {
            EXPECT("munmap", "part of the view", rc, EINVAL);
        } else {
            EXPECT("munmap", "the whole view", rc, 0);
        }
        if (rc == 0) {
            holes[nholes].lo = lo;
            holes[nholes++].hi = hi;
            /* map our own page where the view was, sometimes: DISABLE must leave it */
            if (nmarkers < 8 && rn(s, 2)) {
                unsigned long m = lo;
                if (mmap((void *)m, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == (void *)m) {
                    *(volatile uint64_t *)m = m;
                    markers[nmarkers++] = m;
                }
            }
        }
        if (view_mapped_anywhere() && lo == view && hi == view + ULPT_VIEW_SIZE && nholes == 1)
            fail("munmap of the whole view left a [ulpt] mapping");
    } else if (what <= 6) {
        /* mprotect: read-only, then back; stores fault meanwhile (only when no hole is near) */
        if (nholes) {
            pthread_mutex_unlock(&st_lock);
            return;
        }
        int prot = rn(s, 3) == 0 ? PROT_READ | PROT_WRITE | PROT_EXEC : rn(s, 2) ? PROT_READ : PROT_NONE;
        int rc = mprotect((void *)lo, hi - lo, prot);
        int whole = lo == view && hi == view + ULPT_VIEW_SIZE;
        if (prot & PROT_EXEC) {
            EXPECT("mprotect", "view, exec", rc ? errno : 0, EACCES);
        } else if (!whole) {
            EXPECT("mprotect", "part of the view", rc ? errno : 0, EINVAL);
        } else if (EXPECT("mprotect", "view", rc ? errno : 0, 0)) {
            uint64_t v = 0;
            int r = view_rw(lo, 1, &v);
            if (r != SIGSEGV || t_code != SEGV_ACCERR)
                fail("store to a read-only part of the view: want SEGV_ACCERR, got signal %d code %d", r, t_code);
        }
        if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE))
            fail("mprotect of the view back to read-write: errno %s", ename(errno));
    } else {
        /* madvise: whatever it says, the view stays the process's own */
        static const int adv[] = { MADV_DONTNEED, MADV_KEEPONFORK, MADV_WIPEONFORK, MADV_DONTFORK,
                                   MADV_DOFORK, MADV_NORMAL, MADV_RANDOM, MADV_WILLNEED, MADV_FREE,
                                   MADV_REMOVE, MADV_COLD, MADV_PAGEOUT, MADV_DONTDUMP, MADV_MERGEABLE };
        int a = adv[rn(s, sizeof(adv) / sizeof(adv[0]))];
        if (overlaps_hole(lo, hi)) {
            pthread_mutex_unlock(&st_lock);
            return;
        }
        int rc = madvise((void *)lo, hi - lo, a) ? errno : 0;
        if (a == MADV_KEEPONFORK && rc != ENOSYS)
            EXPECT("madvise", "view, MADV_KEEPONFORK", rc, EINVAL);
        if (rc == 0 && a == MADV_DONTFORK) {
            if (view_dontfork < 4)
                df[view_dontfork].lo = lo, df[view_dontfork].hi = hi;
            view_dontfork++;         /* children do not get that part (the table still) */
        }
        add(&sh->calls, 1);
        check_entries("after madvise of the view");
    }
    pthread_mutex_unlock(&st_lock);
}

/* Fill the address space with PROT_NONE mappings the view's size: ENABLE then fails, ENOMEM. */
static void op_exhaust(uint64_t *s)
{
    static void *big[512];
    int n = 0;
    (void)s;
    pthread_mutex_lock(&st_lock);
    while (n < 512) {
        void *p = mmap(NULL, ULPT_VIEW_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            break;
        big[n++] = p;
    }
    struct ulpt_enable en = { 0 };
    long rc = aprctl(ARCH_ULPT_ENABLE, (unsigned long)&en);
    int e = err_of(rc);
    if (nodev)
        EXPECT("ENABLE", "no ULPT", e, ENODEV);
    else if (enabled)
        EXPECT("ENABLE", "a table exists", e, EBUSY);
    else if (n < 512)
        EXPECT("ENABLE", "no room for the view", e, ENOMEM);
    if (e == 0 && !enabled) {
        aprctl(ARCH_ULPT_DISABLE, 0);   /* room after all (n == 512): undo */
    }
    while (n)
        munmap(big[--n], ULPT_VIEW_SIZE);
    pthread_mutex_unlock(&st_lock);
}

static void sequence(uint64_t s0);
static int nthr;
static volatile int threads_stop;
static void wait_child(pid_t pid, int want_code, int want_sig, const char *what);

static void table_kb_at_exit(void)
{
    struct ulpt_state st;
    if (aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&st) == 0)
        add(&sh->table_kb, st.table_bytes / 1024);
}

static void child_exit(int code)
{
    table_kb_at_exit();
    _exit(code);
}

/* fork: the child has a copy (same view, same entries, its handler); stores stay on their side */
static void op_fork(uint64_t *s)
{
    uint64_t cs = rnd(s);
    int kind = rn(s, 8);
    pthread_mutex_lock(&st_lock);
    if (depth >= 3) {
        pthread_mutex_unlock(&st_lock);
        return;
    }
    add(&sh->forks, 1);
    uint64_t save0[NP + NCODE], save1[NP + NCODE];
    memcpy(save0, w0, sizeof(w0));
    memcpy(save1, w1, sizeof(w1));
    pid_t pid = fork();
    if (pid < 0) {
        fail("fork failed: %s", ename(errno));
        pthread_mutex_unlock(&st_lock);
        return;
    }
    if (pid == 0) {
        snprintf(path + strlen(path), sizeof(path) - strlen(path), ".%d", rn(&cs, 100));
        depth++;
        nthr = 0;
        threads_stop = 0;
        add(&sh->procs, 1);
        pthread_mutex_init(&st_lock, NULL);   /* a thread may have held it at the fork */
        if (view_dontfork && enabled) {
            /* those parts of the view are not in the child: its table is there, unreachable */
            if (view_dontfork > 4 || nholes + view_dontfork > 16) {
                holes[0].lo = view; holes[0].hi = view + ULPT_VIEW_SIZE; nholes = 1;
            } else {
                for (int d = 0; d < view_dontfork; d++)
                    holes[nholes++].lo = df[d].lo, holes[nholes - 1].hi = df[d].hi;
            }
        }
        check_state("fork child");
        check_log("fork child (the thread's log, its index)");
        check_entries("fork child: the parent's entries");
        if (kind == 0) {
            /* write other entries: the parent must not see them */
            for (int i = 0; i < NP; i++)
                set_entry(i, ULPT_NX, 0x5555555555555555ull ^ i);
            check_entries("fork child after its stores");
            child_exit(0);
        }
        if (kind == 1) {
            /* die inside the handler */
            static const int modes[] = { H_EXIT, H_ABORT, H_HANG, H_EXEC };
            int m = modes[rn(&cs, 4)];
            if (enabled) {
                set_entry(0, ULPT_NR | ULPT_NW, 0);
                aprctl(ARCH_ULPT_SET_HANDLER, (unsigned long)fuzz_entry);
                t_hmode = m;
                my_handler = (unsigned long)fuzz_entry;
                access_(region, K_R, 0);
            }
            child_exit(0);
        }
        sequence(cs);
        child_exit(0);
    }
    int killed = 0;
    if (kind == 1) {
        /* the child may hang in its handler: give it a moment, then kill it */
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        for (int i = 0; i < 50; i++) {
            int st;
            pid_t r = waitpid(pid, &st, WNOHANG);
            if (r == pid) {
                killed = 2;
                if (!(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 7)) &&
                    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT))
                    fail("a child dying inside its handler: status %#x", st);
                break;
            }
            nanosleep(&ts, NULL);
        }
        if (!killed) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }
    if (killed == 1) {
        int st;
        waitpid(pid, &st, 0);
        if (!(WIFSIGNALED(st) && (WTERMSIG(st) == SIGKILL || WTERMSIG(st) == SIGABRT)) &&
            !(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 7)))
            fail("a child killed inside its handler: status %#x", st);
    } else if (killed == 0)
        wait_child(pid, 0, 0, "fork child");
    if (memcmp(save0, w0, sizeof(w0)) || memcmp(save1, w1, sizeof(w1)))
        fail("internal: tracked entries changed across fork");
    check_entries("parent after the child's stores");
    check_state("parent after fork");
    check_log("parent after fork");
    pthread_mutex_unlock(&st_lock);
}

static void wait_child(pid_t pid, int want_code, int want_sig, const char *what)
{
    int st;
    if (waitpid(pid, &st, 0) != pid) {
        fail("%s: waitpid failed", what);
        return;
    }
    if (want_sig ? !(WIFSIGNALED(st) && WTERMSIG(st) == want_sig)
                 : !(WIFEXITED(st) && WEXITSTATUS(st) == want_code))
        fail("%s: exit status %#x, want %s %d", what, st, want_sig ? "signal" : "code", want_sig ? want_sig : want_code);
}

/* exec: the new program has no table, handler or log (also from a thread, from inside a handler) */
static void op_exec(uint64_t *s)
{
    int how = rn(s, 3);
    char *argv[] = { "ulpt-fuzz", "--exec-check", NULL };
    add(&sh->execs, 1);
    if (how == 0) {
        pid_t pid = vfork();
        if (pid == 0) {
            execve(self_exe, argv, environ);
            _exit(5);
        }
        wait_child(pid, 0, 0, "exec after vfork");
        return;
    }
    pthread_mutex_lock(&st_lock);
    pid_t pid = fork();
    if (pid == 0) {
        if (how == 2 && enabled && !in_hole(ent_addr((unsigned long)region))) {
            uint64_t v = ULPT_NR | ULPT_NW;
            view_rw(ent_addr((unsigned long)region), 1, &v);
            aprctl(ARCH_ULPT_SET_HANDLER, (unsigned long)fuzz_entry);
            t_hmode = H_EXEC;
            access_(region, K_R, 0);
        }
        execve(self_exe, argv, environ);
        _exit(5);
    }
    wait_child(pid, 0, 0, how == 2 ? "exec from inside the handler" : "exec after fork");
    pthread_mutex_unlock(&st_lock);
}

static int exec_check(void)
{
    struct ulpt_state st;
    memset(&st, 0x5a, sizeof(st));
    long rc = aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&st);
    if (rc && errno == ENODEV)
        return 0;
    if (rc || st.flags || st.view || st.handler || st.table_bytes)
        return 3;
    if (aprctl(ARCH_ULPT_SET_HANDLER, (unsigned long)fuzz_entry) != -1 || errno != EINVAL)
        return 4;
    struct ulpt_log l;
    memset(&l, 0x5a, sizeof(l));
    rc = aprctl(ARCH_ULPT_GET_LOG, (unsigned long)&l);
    if ((rc && errno != ENODEV) || (!rc && (l.base || l.size_shift || l.thresh || l.index || l.flags)))
        return 7;
    struct ulpt_enable en = { 0 };
    if (aprctl(ARCH_ULPT_ENABLE, (unsigned long)&en) ||
        aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&st) || st.handler || (st.flags & ULPT_STATE_IN_HANDLER))
        return 6;
    memset(&l, 0x5a, sizeof(l));
    rc = aprctl(ARCH_ULPT_GET_LOG, (unsigned long)&l);
    if ((rc && errno != ENODEV) || (!rc && (l.base || l.size_shift || l.thresh || l.index || l.flags)))
        return 8;
    return 0;
}

/* PTRACE_ARCH_PRCTL with any ARCH_ULPT_* on another task: EINVAL (or ENODEV without ULPT) */
static void op_ptrace(uint64_t *s)
{
    int en = rn(s, 2);
    pid_t pid = fork();
    if (pid == 0) {
        if (en) {
            struct ulpt_enable e = { 0 };
            aprctl(ARCH_ULPT_DISABLE, 0);
            aprctl(ARCH_ULPT_ENABLE, (unsigned long)&e);
        }
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        _exit(0);
    }
    int st;
    if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st)) {
        fail("ptrace: the tracee did not stop");
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return;
    }
    for (int i = 0; i < 3; i++) {
        static struct ulpt_state buf;
        int code = ARCH_ULPT_ENABLE + rn(s, 6);
        unsigned long arg = rn(s, 2) ? (unsigned long)&buf : rnd(s);
        long rc = ptrace(PTRACE_ARCH_PRCTL, pid, (void *)arg, (void *)(long)code);
        if (nodev) {
            note("PTRACE_ARCH_PRCTL of ARCH_ULPT_* without ULPT: EINVAL or ENODEV (both rows apply)");
            EXPECT("PTRACE_ARCH_PRCTL", "another task, no ULPT", err_of(rc), EINVAL, ENODEV);
        } else {
            EXPECT("PTRACE_ARCH_PRCTL", en ? "another task with a table" : "another task", err_of(rc), EINVAL);
        }
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* clone(CLONE_VM) without CLONE_THREAD: the same table, the creator's handler, no log */
static volatile int clone_res;
static unsigned long clone_want_handler;
static int clone_fn(void *a)
{
    (void)a;
    struct ulpt_state st;
    if (aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&st))
        clone_res = 2;
    else if (!!(st.flags & ULPT_STATE_ENABLED) != !!enabled || st.view != view || st.handler != clone_want_handler)
        clone_res = 3;
    else if (!nolog && !nodev) {
        struct ulpt_log l;
        memset(&l, 0x5a, sizeof(l));
        clone_res = aprctl(ARCH_ULPT_GET_LOG, (unsigned long)&l) ? 2 : l.base || l.index ? 4 : 1;
    } else
        clone_res = 1;
    return 0;
}

static void op_clone_vm(uint64_t *s)
{
    static char stack[65536] __attribute__((aligned(16)));
    (void)s;
    pthread_mutex_lock(&st_lock);
    clone_res = 0;
    clone_want_handler = (enabled && my_epoch == epoch) ? my_handler : 0;
    pid_t pid = clone(clone_fn, stack + sizeof(stack), CLONE_VM | SIGCHLD, NULL);
    if (pid < 0)
        fail("clone(CLONE_VM) failed");
    else {
        wait_child(pid, 0, 0, "clone(CLONE_VM) child");
        if (!nodev && clone_res != 1)
            fail("clone(CLONE_VM) child: %s", clone_res == 3 ? "GET_STATE differs from the creator's (table, view or handler)" :
                 clone_res == 4 ? "GET_LOG shows a log (a new thread has none)" : "GET_STATE or GET_LOG failed");
    }
    pthread_mutex_unlock(&st_lock);
}

/* ---- threads ---- */
/* Without the lock: GET_STATE always works; the view may go at any moment. */
static void op_racy(uint64_t *s)
{
    struct ulpt_state st;
    long rc = aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&st);
    EXPECT("GET_STATE", "valid pointer, racing", err_of(rc), nodev ? ENODEV : 0);
    if (rc == 0 && st.view && rn(s, 2)) {
        uint64_t v;
        int r = view_rw(st.view + (rnd(s) % (ULPT_VIEW_SIZE / 8)) * 8, 0, &v);
        if (r && !(r == SIGSEGV && (t_code == SEGV_MAPERR || t_code == SEGV_ACCERR)))
            fail("racing load from the view: signal %d code %d", r, t_code);
    }
}

struct targ { uint64_t seed; unsigned long handler; long epoch; };

static void *thread_fn(void *a)
{
    struct targ *t = a;
    uint64_t s = t->seed;
    pthread_mutex_lock(&st_lock);
    my_handler = t->handler;
    my_epoch = t->epoch;
    t_hmode = H_PERMIT;
    t_ls = mix(t->seed ^ 0x6c6f67);
    t_cs = mix(t->seed ^ 0x636e74);
    check_state("new thread (inherits the handler)");
    check_log("new thread (no log)");
    pthread_mutex_unlock(&st_lock);
    for (int i = 0; i < 40 && !threads_stop; i++) {
        if (rn(&t_ls, 100) < 12)
            (rn(&t_ls, 3) ? op_set_log : op_get_log)(&t_ls);
        switch (rn(&s, 6)) {
        case 0: op_set_handler(&s); break;
        case 1: op_get_state(&s); break;
        case 2: op_view_store(&s); break;
        case 3: op_racy(&s); break;
        default: op_access(&s); break;
        }
    }
    return NULL;
}

/* ---- a sequence: a process's random operations ---- */
static pthread_t thr[4];
static struct targ targ[4];

static void sequence(uint64_t s0)
{
    uint64_t s = mix(s0);
    int nops = 20 + rn(&s, 60);
    t_ls = mix(s0 ^ 0x6c6f67);
    t_cs = mix(s0 ^ 0x636e74);
    for (int i = 0; i < nops; i++) {
        if (rn(&t_ls, 100) < 12)
            (rn(&t_ls, 3) ? op_set_log : op_get_log)(&t_ls);
        unsigned op = rn(&s, 100);
        if (op < 10) op_enable(&s);
        else if (op < 14) op_disable(&s);
        else if (op < 22) op_set_handler(&s);
        else if (op < 28) op_get_state(&s);
        else if (op < 30) op_unknown(&s);
        else if (op < 42) op_view_store(&s);
        else if (op < 60) op_access(&s);
        else if (op < 66) op_remap_memory(&s);
        else if (op < 76) op_view_vm(&s);
        else if (op < 77) op_exhaust(&s);
        else if (op < 82) op_fork(&s);
        else if (op < 84) op_exec(&s);
        else if (op < 86) op_ptrace(&s);
        else if (op < 88) op_clone_vm(&s);
        else if (op < 92) {
            if (nthr < 4) {
                pthread_mutex_lock(&st_lock);
                targ[nthr].seed = mix(rnd(&s));
                targ[nthr].handler = my_handler;
                targ[nthr].epoch = my_epoch;
                if (pthread_create(&thr[nthr], NULL, thread_fn, &targ[nthr]) == 0)
                    nthr++;
                pthread_mutex_unlock(&st_lock);
            }
        } else if (op < 96) {
            pthread_mutex_lock(&st_lock);
            check_state("sequence");
            check_log("sequence");
            check_entries("sequence");
            pthread_mutex_unlock(&st_lock);
            check_arch_status();
        } else if (op < 98) {
            /* exit now, threads and all, maybe with one of them inside its handler */
            if (rn(&s, 2)) {
                threads_stop = 0;
                child_exit(0);
            }
        } else {
            while (nthr)
                pthread_join(thr[--nthr], NULL);
        }
    }
    threads_stop = 1;
    while (nthr)
        pthread_join(thr[--nthr], NULL);
    pthread_mutex_lock(&st_lock);
    check_state("end");
    check_log("end");
    check_entries("end");
    pthread_mutex_unlock(&st_lock);
    check_arch_status();
}

static void setup_process(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    region = mmap(NULL, NP * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    code = mmap(NULL, NCODE * PG, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(code, 0xc3, NCODE * PG);      /* ret everywhere */
    ro_page = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    edge_page = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(edge_page + PG, PG);
    hole_page = edge_page + PG;
    void *hi = mmap((void *)(1ul << 50), PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hi != MAP_FAILED && (unsigned long)hi >= (1ul << 47)) {
        user_limit = (1ul << 56) - PG;
        va_top = 1ul << 56;
    }
    if (hi != MAP_FAILED)
        munmap(hi, PG);
    nodev = aprctl(ARCH_ULPT_GET_STATE, (unsigned long)&(struct ulpt_state){ 0 }) && errno == ENODEV;
    nolog = !nodev && aprctl(ARCH_ULPT_GET_LOG, (unsigned long)&(struct ulpt_log){ 0 }) && errno == ENODEV;
    nocount = !nodev && !nolog &&
              aprctl(ARCH_ULPT_SET_LOG, (unsigned long)&(struct ulpt_log){ .flags = ULPT_LOG_COUNT }) &&
              errno == ENODEV;
}

/* One sequence in a process of its own, as the root of its tree. */
static void run_sequence(unsigned long i)
{
    cur_seq = i;
    add(&sh->seqs, 1);
    add(&sh->procs, 1);
    setpgid(0, 0);
    snprintf(path, sizeof(path), "%lu", i);
    sequence(seed0 ^ mix(i));
    child_exit(0);
}

/* ---- the regression list: sequences that found bugs, fixed since ---- */
static int reg_keeponfork(void)
{
    /* MADV_KEEPONFORK on the view must not let a child share the parent's leaves */
    struct ulpt_enable en = { 0 };
    if (aprctl(ARCH_ULPT_ENABLE, (unsigned long)&en))
        return nodev ? 1 : 0;
    volatile uint64_t *e = (volatile uint64_t *)(en.view + ((unsigned long)region >> 12) * 16);
    e[1] = 0;                             /* fault the leaf in */
    int rc = madvise((void *)en.view, ULPT_VIEW_SIZE, MADV_KEEPONFORK) ? errno : 0;
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t v = 0x1234;
        t_armed = 0;
        if (view_rw((unsigned long)&e[1], 1, &v) != 0 && t_code != SEGV_MAPERR)
            _exit(1);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    int ok = e[1] == 0;
    aprctl(ARCH_ULPT_DISABLE, 0);
    printf("# keeponfork: madvise(MADV_KEEPONFORK) of the view: %s; the parent's entry after the child's store: %s\n",
           rc == ENOSYS ? "ENOSYS (no madvise in this kernel)" : ename(rc), ok ? "unchanged" : "CHANGED");
    return ok && WIFEXITED(st) && (rc == EINVAL || rc == ENOSYS || nodev);
}

static int reg_disable_hole(void)
{
    /* DISABLE unmaps the view, not what the process mapped where it unmapped part of it */
    struct ulpt_enable en = { 0 };
    if (aprctl(ARCH_ULPT_ENABLE, (unsigned long)&en))
        return nodev ? 1 : 0;
    unsigned long m = en.view + 64 * PG;
    munmap((void *)en.view, ULPT_VIEW_SIZE);
    void *p = mmap((void *)m, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != (void *)m)
        return 0;
    *(volatile uint64_t *)m = 42;
    aprctl(ARCH_ULPT_DISABLE, 0);
    uint64_t v = 0;
    int r = view_rw(m, 0, &v);
    munmap((void *)m, PG);
    printf("# disable-hole: after DISABLE our page %s\n", r ? "is gone" : v == 42 ? "is intact" : "changed");
    return r == 0 && v == 42;
}

static int reg_handler_limit(void)
{
    /* SET_HANDLER: every address below 2^47 - 4096 accepted, the last page below 2^47 not */
    struct ulpt_enable en = { 0 };
    if (aprctl(ARCH_ULPT_ENABLE, (unsigned long)&en))
        return nodev ? 1 : 0;
    long a = aprctl(ARCH_ULPT_SET_HANDLER, USER_LIMIT - 1);
    long b = aprctl(ARCH_ULPT_SET_HANDLER, USER_LIMIT);
    int eb = errno;
    long c = aprctl(ARCH_ULPT_SET_HANDLER, va_top - 1);
    aprctl(ARCH_ULPT_SET_HANDLER, 0);
    aprctl(ARCH_ULPT_DISABLE, 0);
    return a == 0 && b == -1 && eb == EINVAL && c == -1;
}

static int reg_fork_after_switch(void)
{
    /*
     * A thread switched out inside its handler, back out by UIRET, then fork: the child
     * starts outside its handler (the saved in-handler state was stale: the child's
     * violations escalated to SIGSEGV). Seed 250904295585, sequence 20.
     */
    struct ulpt_enable en = { 0 };
    if (aprctl(ARCH_ULPT_ENABLE, (unsigned long)&en))
        return nodev ? 1 : 0;
    enabled = 1;
    view = en.view;
    set_entry(0, ULPT_NR | ULPT_NW, 0);
    aprctl(ARCH_ULPT_SET_HANDLER, (unsigned long)fuzz_entry);
    my_handler = (unsigned long)fuzz_entry;
    t_hmode = H_SLEEP;
    if (access_(region, K_R, 0) || t_hits != 1)
        return 0;
    t_hmode = H_PERMIT;
    pid_t pid = fork();
    if (pid == 0) {
        int inh = in_handler_now();
        int sig = access_(region, K_R, 0);
        printf("# fork after a switch inside the handler: child in-handler %d, its violation: %s\n", inh,
               sig ? "signal" : t_hits == 2 ? "handled" : "not seen");
        _exit(inh == 0 && sig == 0 && t_hits == 2 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    aprctl(ARCH_ULPT_DISABLE, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A whole sequence that once failed, replayed (its failures are recorded as the campaign's) */
static int reg_replay(uint64_t seed, unsigned long seq)
{
    long fails = sh->fails;
    seed0 = seed;
    pid_t pid = fork();
    if (pid == 0)
        run_sequence(seq);
    int st;
    waitpid(pid, &st, 0);
    kill(-pid, SIGKILL);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 && sh->fails == fails;
}

static int reg_thread_stack_in_hole(void)
{
    /* a munmap meant for the view reached into a hole where a thread stack had been mapped */
    return reg_replay(3726337696ull, 61);
}

static int reg_run(int (*fn)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        setup_process();
        _exit(fn() ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void t_regress(void)
{
    tap_ok(reg_run(reg_keeponfork), "regress: MADV_KEEPONFORK on the view does not share the table with a child");
    tap_ok(reg_run(reg_disable_hole), "regress: DISABLE keeps what was mapped where part of the view was unmapped");
    tap_ok(reg_run(reg_handler_limit), "regress: SET_HANDLER takes addresses below the user limit (2^47 or 2^56, less 4096) only");
    tap_ok(reg_run(reg_fork_after_switch), "regress: a fork child starts outside the handler its parent left after a switch in it");
    tap_ok(reg_run(reg_thread_stack_in_hole), "regress: seed 3726337696 sequence 61 (the fuzzer's munmap of the view spares what was mapped in its holes)");
}

/* ---- the campaign ---- */
static double seconds = 20;
static long only_seq = -1;
static int jobs = 2;
static double stall_limit = 120;    /* a sequence that counts nothing for this long is hung */
static long mem_before;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* What a hung sequence's processes wait in (their process group), before they are killed */
static void show_stacks(pid_t pgrp)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd),
             "for p in /proc/[0-9]*; do [ \"$(cut -d' ' -f5 $p/stat 2>/dev/null)\" = %d ] || continue; "
             "for t in $p/task/*; do echo \"# hung: ${t#/proc/} $(sed -n 's/^State:.//p' $t/status) "
             "wchan=$(cat $t/wchan)\"; sed 's/^/#   /' $t/stack 2>/dev/null | head -12; done; done",
             (int)pgrp);
    fflush(stdout);
    if (system(cmd)) { }
}

static void t_fuzz(void)
{
    struct { pid_t pid; unsigned long seq; double t0; int hung; long prog; } run[8] = { { 0 } };
    unsigned long next = only_seq >= 0 ? (unsigned long)only_seq : 0;
    double t0 = now();
    int hung = 0, bad = 0;

    mem_before = ulpt_mem_free_kb();
    /* the campaign's figures: what the regression replays counted is not part of them */
    sh->seqs = sh->procs = sh->calls = sh->accesses = sh->handled = sh->forks = sh->execs = sh->again = sh->again_pf = 0;
    sh->logged = sh->counted = 0;
    for (;;) {
        int live = 0;
        for (int j = 0; j < jobs; j++) {
            if (run[j].pid) {
                int st;
                pid_t r = waitpid(run[j].pid, &st, WNOHANG);
                if (r == run[j].pid) {
                    kill(-run[j].pid, SIGKILL);
                    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
                        cur_seq = run[j].seq;
                        fail("sequence process ended with status %#x", st);
                        bad++;
                    }
                    run[j].pid = 0;
                } else if (sh->progress[j] != run[j].prog) {
                    run[j].prog = sh->progress[j];       /* it moves (the debug kernel is slow) */
                    run[j].t0 = now();
                } else if (now() - run[j].t0 > stall_limit && !run[j].hung++) {
                    cur_seq = run[j].seq;
                    fail("sequence hung (no progress for %g s)", stall_limit);
                    show_stacks(run[j].pid);
                    hung++;
                    kill(-run[j].pid, SIGKILL);
                    kill(run[j].pid, SIGKILL);
                }
            }
            if (!run[j].pid && (only_seq >= 0 ? next == (unsigned long)only_seq : now() - t0 < seconds)) {
                unsigned long i = next++;
                pid_t pid = fork();
                if (pid == 0) {
                    my_slot = j;
                    setup_process();
                    run_sequence(i);
                }
                run[j].pid = pid;
                run[j].seq = i;
                run[j].t0 = now();
                run[j].hung = 0;
                run[j].prog = sh->progress[j];
            }
            live += run[j].pid != 0;
        }
        if (!live)
            break;
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    /* sequences leave grandchildren only when killed: reap them */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    printf("# seed %llu: %ld sequences (%ld processes, %ld forks, %ld execs) in %.0f s: %ld checked calls, %ld accesses (%ld handled, %ld of them delivered again after an exception, %ld of those after a page fault; %ld logged, %ld counted)%s\n",
           (unsigned long long)seed0, sh->seqs, sh->procs, sh->forks, sh->execs, now() - t0, sh->calls,
           sh->accesses, sh->handled, sh->again, sh->again_pf, sh->logged, sh->counted,
           nolog ? "; a CPU without the access log" : nocount ? "; a CPU without count tables" : "");
    tap_ok(sh->seqs > 0 && hung == 0 && bad == 0, "%ld sequences ran, none hung or died (%d hung, %d died)", sh->seqs, hung, bad);
    tap_ok(sh->fails == 0, "every errno and state as docs/linux-api.md says (%ld failed checks, %ld distinct)",
           sh->fails, sh->nfail);
}

static int klog_read(char **out);
static int kasan;                   /* the kernel has KASAN (boot said so, before the log was cleared) */
static void t_memory(void)
{
    /* free memory settles: the kernel frees tables at the last mmput, RCU may lag */
    long after = 0;
    for (int i = 0; i < 20; i++) {
        after = ulpt_mem_free_kb();
        if (after >= mem_before - 2048)
            break;
        usleep(100000);
    }
    /* KASAN's quarantine keeps up to 1/32 of memory in freed slab objects (not table pages) */
    long slack = 4096;
    if (kasan)
        slack += ulpt_meminfo_kb("MemTotal") / 32;
    tap_ok(after >= mem_before - slack,
           "table memory came back: %ld kB of tables at the processes' exits, free memory %ld -> %ld kB (slack %ld kB)",
           sh->table_kb, mem_before, after, slack);
}

/* The kernel log since our start marker: no report of a kernel bug. */
static const char *bad_words[] = {
    "BUG:", "WARNING:", "Oops", "general protection", "KASAN", "kernel BUG", "circular locking",
    "inconsistent lock state", "possible recursive locking", "suspicious RCU", "lockdep",
    "unreferenced object", "list_add corruption", "list_del corruption", "Call Trace",
    "sleeping function called", "scheduling while atomic", "page dumped because", "Bad page",
    "UBSAN", "stack-protector", "double fault",
};
static char start_mark[64];

static int klog_read(char **out)
{
    int n = klogctl(10, NULL, 0);
    if (n <= 0)
        return -1;
    *out = malloc(n + 1);
    n = klogctl(3, *out, n);
    if (n < 0)
        return -1;
    (*out)[n] = 0;
    return n;
}

static void t_klog(void)
{
    char *log = NULL, *p;
    int kmemleak = 0, kmemleak_bad = 0;
    /* kmemleak: make it scan now (objects must be a few seconds old to count) */
    mkdir("/sys/kernel/debug", 0755);
    mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
    int fd = open("/sys/kernel/debug/kmemleak", O_RDWR);
    if (fd >= 0) {
        kmemleak = 1;
        sleep(6);
        if (write(fd, "scan", 4) != 4)
            kmemleak = 0;
        close(fd);
        fd = open("/sys/kernel/debug/kmemleak", O_RDONLY);
        char b[4096];
        long n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            b[n] = 0;
            printf("# kmemleak:\n");
            for (char *l = strtok(b, "\n"); l; l = strtok(NULL, "\n"))
                printf("#   %s\n", l);
            fail("kmemleak reports a leak");
            kmemleak_bad = 1;
        }
    }
    if (klog_read(&log) < 0) {
        tap_ok(0, "kernel log readable");
        return;
    }
    p = log;
    for (char *q = strstr(log, start_mark); q; q = strstr(q + 1, start_mark))
        p = q;
    int bad = 0;
    for (char *l = strtok(p, "\n"); l; l = strtok(NULL, "\n")) {
        for (unsigned i = 0; i < sizeof(bad_words) / sizeof(bad_words[0]); i++)
            if (strstr(l, bad_words[i])) {
                if (bad++ < 40)
                    printf("# klog: %s\n", l);
                if (bad == 1)
                    fail("kernel log: %s", bad_words[i]);
                break;
            }
    }
    tap_ok(bad == 0 && !kmemleak_bad, "no oops, BUG, WARNING, KASAN, lockdep or kmemleak report in the kernel log (%s)",
           kmemleak ? "kmemleak scanned" : "no kmemleak in this kernel");
}

static void t_summary(void)
{
    printf("# sequences: %ld, distinct failures: %ld\n", sh->seqs, sh->nfail);
    for (long i = 0; i < sh->nfail; i++)
        printf("# failure %ld (x%lu, first in --seed %llu --seq %lu): %s\n", i + 1, sh->fail[i].count,
               (unsigned long long)seed0, sh->fail[i].seq, sh->fail[i].sig);
    for (long i = 0; i < sh->nnote; i++)
        printf("# doc-ambiguous (both accepted): %s\n", sh->note[i].sig);
    tap_ok(sh->nfail == 0, "no failure in the whole run");
}

static const struct test_case fuzz_tests[] = {
    { "regress", t_regress, 5 },
    { "fuzz", t_fuzz, 2 },
    { "memory", t_memory, 1 },
    { "klog", t_klog, 1 },
    { "summary", t_summary, 1 },
};

int main(int argc, char **argv)
{
    int i = 1;
    if (argc == 2 && strcmp(argv[1], "--exec-check") == 0)
        return exec_check();
    seed0 = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    while (i < argc && argv[i][0] == '-' && argv[i][1] == '-' && strcmp(argv[i], "--list")) {
        if (i + 1 >= argc) {
            printf("Bail out! %s wants a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--seed")) seed0 = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seq")) only_seq = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--stall")) stall_limit = atof(argv[i + 1]) > 0 ? atof(argv[i + 1]) : 120;
        else if (!strcmp(argv[i], "--jobs")) jobs = atoi(argv[i + 1]) < 1 ? 1 : atoi(argv[i + 1]) > 8 ? 8 : atoi(argv[i + 1]);
        else {
            printf("Bail out! unknown option %s\n", argv[i]);
            return 2;
        }
        i += 2;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    setup_process();
    if (!(argc > i && !strcmp(argv[i], "--list"))) {
        printf("# ulpt-fuzz --seed %llu (rerun a sequence: --seed %llu --seq N)%s\n",
               (unsigned long long)seed0, (unsigned long long)seed0, nodev ? "; no ULPT: every call ENODEV" : "");
        snprintf(start_mark, sizeof(start_mark), "ulpt-fuzz: start %llu", (unsigned long long)seed0);
        /* What boot logged is not ours ("RCU lockdep checking is enabled"): the log starts
           empty, so that the check below is of this run's lines also when the mark is lost
           (writes to /dev/kmsg are rate-limited: a debug-kernel run once found no mark). */
        char *boot = NULL;
        kasan = klog_read(&boot) > 0 && strstr(boot, "KernelAddressSanitizer initialized");
        free(boot);
        klogctl(5 /* SYSLOG_ACTION_CLEAR */, NULL, 0);
        int fd = open("/dev/kmsg", O_WRONLY);
        if (fd >= 0) {
            if (write(fd, start_mark, strlen(start_mark)) < 0) { }
            close(fd);
        }
        int k = open("/sys/kernel/debug/kmemleak", O_WRONLY);
        if (k < 0) {
            mkdir("/sys/kernel/debug", 0755);
            mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
            k = open("/sys/kernel/debug/kmemleak", O_WRONLY);
        }
        if (k >= 0) {
            /* what boot left is not ours */
            if (write(k, "scan", 4) < 0 || write(k, "clear", 5) < 0) { }
            close(k);
        }
    }
    return tap_run(fuzz_tests, TAP_NTESTS(fuzz_tests), argc - i, argv + i);
}
