/*
 * docs/spec.md R-COH-5 in a Linux process: code that has run stops being fetched after the one
 * store that denies fetching it, also when that store makes the page's entry malformed (a
 * reserved bit of word 0, NX clear) rather than setting NX. Each case calls the page, stores
 * into its entry through the view, and calls it again in a child, which must die of SIGSEGV
 * with SEGV_ULPTERR for an instruction fetch (no handler: the violation escalates), 20 times
 * in a row. `ulpt-coh NAME` runs one test, `ulpt-coh --list` lists them (tests/lib/tap.h).
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <asm/ulpt.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"

static volatile uint64_t *view;
static uint8_t *code;

static volatile uint64_t *entry(const void *p)
{
    return view + ((uintptr_t)p >> 12) * 2;
}

/* The child's SIGSEGV: exit 0 only for a ULPT fetch violation at the page. */
static void on_segv(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;
    (void)sig;
    _exit(si->si_code == SEGV_ULPTERR && si->si_addr == code &&
          (uc->uc_mcontext.gregs[REG_ERR] & 16) ? 0 : 3);
}

/* Runs the page's code, makes one store of `bits` into word 0 of its entry (a read-modify-write
 * when `rmw`, so the view's entry is read first), then calls it: 1 when that call faults. */
static int denied_after_store(uint64_t bits, int rmw)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
        sigaction(SIGSEGV, &sa, NULL);
        /* The entry's view page is made present first: the kernel's fault would drop
         * every cached translation and hide a store that does not. */
        entry(code)[0] = 0;
        for (int i = 0; i < 100; i++)
            ((void (*)(void))code)();   /* translated, and in the CPU's jump cache */
        if (rmw)
            entry(code)[0] |= bits;
        else
            entry(code)[0] = bits;
        ((void (*)(void))code)();
        _exit(4);                       /* ran: the store did not take effect */
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int setup(void)
{
    struct ulpt_enable en = { .flags = 0 };

    if (!view) {
        if (syscall(SYS_arch_prctl, ARCH_ULPT_ENABLE, &en) != 0)
            return 0;
        view = (volatile uint64_t *)(uintptr_t)en.view;
        code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (code == MAP_FAILED)
            return 0;
        code[0] = 0xc3;                 /* ret */
    }
    entry(code)[0] = 0;
    return 1;
}

static void repeat(const char *what, uint64_t bits)
{
    unsigned missed = 0;

    if (!setup()) {
        tap_ok(0, "R-COH-5: %s: ULPT enabled", what);
        return;
    }
    for (int i = 0; i < 20; i++)
        missed += !denied_after_store(bits, i & 1);
    tap_ok(missed == 0, "R-COH-5: %s: a call into code that ran faults, 20 times (%u missed)",
           what, missed);
}

static void coh5_nx(void) { repeat("after a store setting NX", ULPT_NX); }
static void coh5_malformed(void) { repeat("after a store making the entry malformed", 1ull << 3); }

static const struct test_case coh_tests[] = {
    { "R-COH-5:nx", coh5_nx, 1 },
    { "R-COH-5:malformed", coh5_malformed, 1 },
};

int main(int argc, char **argv)
{
    return tap_run(coh_tests, TAP_NTESTS(coh_tests), argc - 1, argv + 1);
}
