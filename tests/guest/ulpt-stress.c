/*
 * ulpt-stress [SECONDS] [NAME] (or --list; one test, "stress"): random enable / protect / fault / fork / thread / exit sequences for a
 * bounded time (default 10 s). Ends with TAP: the run finished (no hang: the caller's timeout),
 * every child exited as expected, and free memory came back. Run it on --smp 2; `make test`
 * gives it a short budget, run it longer by hand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <asm/ulpt.h>
#include "tap.h"
#include "ulpt-handler.h"
#include <ulpt/arch.h>

#define NPAGES 64
static uint8_t *region;
static struct ulpt_enable en;
static __thread sigjmp_buf jmp;
static volatile long handled, segvs;
static volatile int stop;

static long prctl_(int op, unsigned long a) { return syscall(SYS_arch_prctl, op, a); }
static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }
static volatile uint64_t *entry(void *p) { return (volatile uint64_t *)(uintptr_t)(en.view + ((uintptr_t)p >> 12) * 16); }

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig; (void)uc;
    segvs++;
    if (si->si_code != SEGV_ULPTERR && si->si_code != SEGV_MAPERR && si->si_code != SEGV_ACCERR)
        _exit(90);
    siglongjmp(jmp, 1);
}

ULPT_HANDLER_ENTRY(ulpt_entry, stress_handler);
void stress_handler(uint64_t *f)
{
    handled++;
    f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
}

/* One random step on the table and the region. */
static void step(uint64_t *s)
{
    uint8_t *p = region + (rnd(s) % NPAGES) * 4096 + (rnd(s) % 4088);
    switch (rnd(s) % 8) {
    case 0: case 1:
        if (en.view)
            entry(p)[rnd(s) & 1] = (rnd(s) & 1) ? rnd(s) & (ULPT_NR | ULPT_NW) : rnd(s);
        break;
    case 2:
        prctl_(ARCH_ULPT_SET_HANDLER, (rnd(s) & 1) ? (unsigned long)ulpt_entry : 0);
        break;
    default:
        if (!sigsetjmp(jmp, 1)) {
            if (rnd(s) & 1)
                *(volatile uint64_t *)p += 1;
            else
                (void)*(volatile uint64_t *)p;
        }
    }
}

static void *thread_fn(void *arg)
{
    uint64_t s = (uintptr_t)arg | 1;
    while (!stop)
        step(&s);
    return NULL;
}

/* A child's life: maybe enable, maybe a thread, random steps, maybe a grandchild, exit. */
static void child(uint64_t seed, int depth)
{
    uint64_t s = seed | 1;
    pthread_t th;
    int threaded = rnd(&s) % 3 == 0;

    if (rnd(&s) % 4 == 0) {
        prctl_(ARCH_ULPT_DISABLE, 0);
        en.view = 0;
    }
    if (!en.view && rnd(&s) % 2 == 0 && prctl_(ARCH_ULPT_ENABLE, (unsigned long)&en) != 0)
        en.view = 0;
    if (threaded)
        pthread_create(&th, NULL, thread_fn, (void *)(uintptr_t)rnd(&s));
    for (int i = 0; i < 200; i++)
        step(&s);
    if (depth < 2 && rnd(&s) % 3 == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            child(rnd(&s), depth + 1);
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    if (threaded) {
        stop = 1;
        pthread_join(th, NULL);
    }
    if (rnd(&s) % 8 == 0)
        abort();                         /* die by a signal with the table in place */
}


static double budget = 10;

static void stress(void)
{
    struct timespec t0, t;
    struct sigaction sa;
    long kids = 0, bad = 0;
    uint64_t s = 88172645463325252ull;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    region = mmap(NULL, NPAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long before = ulpt_mem_free_kb();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        pid_t pid = fork();
        if (pid == 0) {
            child(rnd(&s), 0);
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        kids++;
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
            !(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT))
            bad++;
        rnd(&s);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < budget);
    long after = ulpt_mem_free_kb();
    tap_ok(kids > 0, "%ld random child lives in %.0f s ended", kids, budget);
    tap_ok(bad == 0, "every child exited normally or by its own abort (%ld did not)", bad);
    /* Free memory moves by a few MiB on its own; thousands of leaked tables would not. */
    tap_ok(after >= before - 6144, "free memory came back: %ld -> %ld kB", before, after);
}

static const struct test_case stress_tests[] = {
    { "stress", stress, 3 },
};

/* ulpt-stress [SECONDS] [NAME...] | --list */
int main(int argc, char **argv)
{
    int i = 1;

    if (i < argc && argv[i][0] >= '0' && argv[i][0] <= '9')
        budget = atof(argv[i++]);
    return tap_run(stress_tests, TAP_NTESTS(stress_tests), argc - i, argv + i);
}
