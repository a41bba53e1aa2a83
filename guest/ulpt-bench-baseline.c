/*
 * ulpt-bench-baseline: what ULPT replaces, measured in the Linux guest.
 *   mprotect_ns        one mprotect() of one page (alternating read-only / read-write)
 *   sigsegv_trip_ns    a write to a read-only page: SIGSEGV, the handler mprotects the page
 *                      writable, the write retries and completes (re-protection not counted)
 *   store_plain_ns     one store in a loop, for scale
 * Prints "# bench NAME VALUE" lines (best of 5 rounds).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

int main(void)
{
    pagesz = sysconf(_SC_PAGESIZE);
    page = mmap(NULL, pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);

    const long n = 20000, ns = 4000000;
    uint64_t best_mp = ~0ull, best_seg = ~0ull, best_st = ~0ull;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = now_ns();
        for (long i = 0; i < n; i += 2) {
            mprotect((void *)page, pagesz, PROT_READ);
            mprotect((void *)page, pagesz, PROT_READ | PROT_WRITE);
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
    return 0;
}
