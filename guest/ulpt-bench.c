/*
 * ulpt-bench: ULPT and what it replaces, side by side in one Linux process.
 *   mprotect_ns          one mprotect() of one page (alternating read-only / read-write), each
 *                        followed by an access it allows, so the page stays populated and in
 *                        the TLB (the rights changes below are followed by the same accesses);
 *                        the page is the middle one of a populated 16-page mapping, as a
 *                        watched page lies in a larger mapping
 *   sigsegv_trip_ns      a write to a read-only page: SIGSEGV, the handler mprotects the page
 *                        writable, the write retries and completes (re-protection not counted)
 *   store_plain_ps       one store in a loop, for scale
 * and, when the kernel and CPU have ULPT:
 *   ulpt_line_change_ps  one store through the view changing a line's rights
 *   ulpt_page_change_ps  one store through the view changing a page's rights
 *   ulpt_trip_ps         a write to a denied line: the user handler runs, UIRET lets it through
 *   ulpt_allowed_line_ps a store to an allowed line of a page that has line rights
 * Prints "# bench NAME VALUE" lines (best of 5 rounds).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <asm/prctl.h>
#include <asm/ulpt.h>
#include "ulpt-handler.h"

static volatile uint64_t *page;
static long pagesz;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig; (void)si; (void)uc;
    mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE);
}

static volatile uint64_t handled;

ULPT_HANDLER_ENTRY(ulpt_entry, bench_handler);
void bench_handler(uint64_t *f)
{
    handled++;
    f[1] |= 1ull << 32;                  /* ULPT_INFO_PERMIT: let the write through once */
}

static void bench_ulpt(void)
{
    struct ulpt_enable en = { 0 };
    const long n = 200000, nt = 20000;   /* short loops: the guest clock resolves 1 ns */
    uint64_t best[4] = { ~0ull, ~0ull, ~0ull, ~0ull };
    volatile uint64_t *e, *w;
    uint64_t *target, *watched;

    if (syscall(SYS_arch_prctl, ARCH_ULPT_ENABLE, &en) != 0 ||
        syscall(SYS_arch_prctl, ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) != 0) {
        printf("# ULPT not available: %s\n", strerror(errno));
        return;
    }
    target = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    watched = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    e = (volatile uint64_t *)(uintptr_t)(en.view + ((uintptr_t)target >> 12) * 16);
    w = (volatile uint64_t *)(uintptr_t)(en.view + ((uintptr_t)watched >> 12) * 16);
    w[1] = ULPT_LINE_NW(0);              /* line 0 watched, the rest of the page allowed */
    for (int round = 0; round < 9; round++) {
        uint64_t t0 = now_ns(), t[4];
        for (long i = 0; i < n; i += 2) {
            e[1] = ULPT_LINE_NW(3);
            (void)((volatile uint64_t *)target)[48];  /* touched after each change, as mprotect */
            e[1] = 0;
            ((volatile uint64_t *)target)[48] = i;
        }
        t[0] = now_ns() - t0;
        t0 = now_ns();
        for (long i = 0; i < n; i += 2) {
            e[0] = ULPT_NW;
            (void)((volatile uint64_t *)target)[1];
            e[0] = 0;
            ((volatile uint64_t *)target)[1] = i;
        }
        t[1] = now_ns() - t0;
        t0 = now_ns();
        for (long i = 0; i < nt; i++)
            ((volatile uint64_t *)watched)[0] = i;
        t[2] = now_ns() - t0;
        t0 = now_ns();
        for (long i = 0; i < n; i++)
            ((volatile uint64_t *)watched)[100] = i;
        t[3] = now_ns() - t0;
        for (int k = 0; k < 4; k++)
            if (t[k] < best[k])
                best[k] = t[k];
    }
    printf("# bench ulpt_line_change_ps %llu\n", (unsigned long long)(best[0] * 1000 / n));
    printf("# bench ulpt_page_change_ps %llu\n", (unsigned long long)(best[1] * 1000 / n));
    printf("# bench ulpt_trip_ps %llu\n", (unsigned long long)(best[2] * 1000 / nt));
    printf("# bench ulpt_allowed_line_ps %llu\n", (unsigned long long)(best[3] * 1000 / n));
    printf("# ulpt deliveries %llu (expected %ld)\n", (unsigned long long)handled, 9 * nt);
}

int main(void)
{
    pagesz = sysconf(_SC_PAGESIZE);
    /*
     * The page a watchpoint tool protects lies inside a larger mapping (data, bss, heap), so
     * mprotect() of it splits the mapping and merges it back: the middle page of 16, all
     * populated. (A page alone in its mapping costs 4-5x less to mprotect in QEMU.)
     */
    char *map = mmap(NULL, 16 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(map, 1, 16 * pagesz);
    page = (volatile uint64_t *)(map + 8 * pagesz);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);

    const long n = 4000, ns = 400000;
    uint64_t best_mp = ~0ull, best_seg = ~0ull, best_st = ~0ull;
    for (int round = 0; round < 9; round++) {
        uint64_t t0 = now_ns();
        for (long i = 0; i < n; i += 2) {
            mprotect((void *)page, pagesz, PROT_READ);
            (void)page[2];               /* populated and recently touched, as a watched page */
            mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE);
            page[2] = i;
        }
        uint64_t mp = (now_ns() - t0) / n;

        uint64_t t_prot = 0, t_all;
        t0 = now_ns();
        for (long i = 0; i < n; i++) {
            uint64_t a = now_ns();
            mprotect((void *)page, pagesz, PROT_READ);
            t_prot += now_ns() - a;
            page[0] = i;                 /* faults; the handler makes it writable */
        }
        t_all = now_ns() - t0;
        uint64_t seg = (t_all - t_prot) / n;

        t0 = now_ns();
        for (long i = 0; i < ns; i++)
            page[1] = i;
        uint64_t st = (now_ns() - t0) * 1000 / ns;

        if (mp < best_mp) best_mp = mp;
        if (seg < best_seg) best_seg = seg;
        if (st < best_st) best_st = st;
    }
    printf("# bench mprotect_ns %llu\n", (unsigned long long)best_mp);
    printf("# bench sigsegv_trip_ns %llu\n", (unsigned long long)best_seg);
    printf("# bench store_plain_ps %llu\n", (unsigned long long)best_st);
    bench_ulpt();
    return 0;
}
