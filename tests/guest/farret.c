/*
 * Far returns and IRET at CPL 3 (any CPU model): their stack pops are user accesses. QEMU
 * 7.2 made them supervisor accesses, which fault under SMAP and oops the guest kernel
 * ("supervisor read access in user mode"). Each case runs in a child that exits 0 right
 * after the return; then the kernel log must have no oops.
 * `farret NAME` runs one test of farret_tests[], `farret --list` lists them (tests/lib/tap.h).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"

/* After the return, leave at once: no register is trusted after a mode switch. */
#define EXIT0 "mov $60, %%eax\n xor %%edi, %%edi\n syscall\n"

static void lret_same(void)
{
    asm volatile("mov %%cs, %%rax\n push %%rax\n lea 1f(%%rip), %%rax\n push %%rax\n lretq\n"
                 "1:" EXIT0 ::: "rax", "memory");
}

static void iret_same(void)
{
    asm volatile("mov %%ss, %%rax\n push %%rax\n lea 8(%%rsp), %%rax\n push %%rax\n pushfq\n"
                 "mov %%cs, %%rax\n push %%rax\n lea 1f(%%rip), %%rax\n push %%rax\n iretq\n"
                 "1:" EXIT0 ::: "rax", "memory");
}

/* lretq to the 32-bit user code segment (0x23), whose code far-returns to 64-bit (0x33). */
static void lret_compat(void)
{
    uint8_t *low = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (low == MAP_FAILED)
        _exit(2);
    uint32_t l64 = (uint32_t)(uintptr_t)low + 16;
    uint8_t code32[] = { 0x6a, 0x33,                    /* push $0x33 */
                         0x68, 0, 0, 0, 0,              /* push $l64 */
                         0xcb };                        /* lret (32-bit) */
    memcpy(code32 + 3, &l64, 4);
    memcpy(low, code32, sizeof(code32));
    static const uint8_t code64[] = { 0xb8, 60, 0, 0, 0,    /* mov $60, %eax (exit) */
                                      0x31, 0xff,           /* xor %edi, %edi */
                                      0x0f, 0x05 };         /* syscall */
    memcpy(low + 16, code64, sizeof(code64));
    uint64_t stack_top = (uint64_t)(uintptr_t)low + 8192 - 64;  /* ESP must fit 32 bits */
    asm volatile("mov %0, %%rsp\n pushq $0x23\n pushq %1\n lretq"
                 :: "r"(stack_top), "r"((uint64_t)(uintptr_t)low) : "memory");
    _exit(3);
}

static int survives(void (*fn)(void))
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        fn();
        _exit(4);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void t_lret_same(void) { tap_ok(survives(lret_same), "lretq to the same 64-bit code segment at CPL 3"); }
static void t_iret_same(void) { tap_ok(survives(iret_same), "iretq to the same privilege at CPL 3"); }
static void t_lret_compat(void) { tap_ok(survives(lret_compat), "lretq to the 32-bit code segment and back at CPL 3"); }

static void no_oops(void)
{
    static char log[1 << 17];
    int n;

    n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);
    log[n > 0 ? n : 0] = 0;
    tap_ok(n > 0 && !strstr(log, "BUG:") && !strstr(log, "Oops"), "no oops in the kernel log");
}

/* no-oops last: it reads the kernel log the others may have written to. */
static const struct test_case farret_tests[] = {
    { "lret-same", t_lret_same, 1 },
    { "iret-same", t_iret_same, 1 },
    { "lret-compat", t_lret_compat, 1 },
    { "no-oops", no_oops, 1 },
};

int main(int argc, char **argv)
{
    return tap_run(farret_tests, TAP_NTESTS(farret_tests), argc - 1, argv + 1);
}
