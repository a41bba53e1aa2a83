/*
 * docs/spec.md section 9, as Linux does it: a switch between a process with a ULPT table and
 * one without writes ULPT_CTL alone, each way; ULPT_ROOT and ULPT_VIEW keep the table's values
 * while ULPT is off. `ulpt-switch ROUNDS` forks a child without a table, enables ULPT in the
 * parent, and passes a byte back and forth ROUNDS times through two pipes, both processes on
 * CPU 0: every round switches to the child and back. tests/suites/kernel.sh counts QEMU's
 * ulpt_msr_write trace events of the boot: ULPT_CTL about twice a round, ULPT_ROOT and
 * ULPT_VIEW a few times in all. Exit status 0 when every round trip was made.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <asm/ulpt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 1000, done = 0;
    int to_child[2], to_parent[2], status;
    struct ulpt_enable en = { .flags = 0 };
    cpu_set_t cpu;
    char c = 0;

    CPU_ZERO(&cpu);
    CPU_SET(0, &cpu);
    if (rounds <= 0 || sched_setaffinity(0, sizeof(cpu), &cpu) || pipe(to_child) || pipe(to_parent)) {
        perror("ulpt-switch: setup");
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {             /* no table: ULPT is off while it runs */
        close(to_child[1]);     /* the parent's close is its end of file */
        while (read(to_child[0], &c, 1) == 1 && write(to_parent[1], &c, 1) == 1)
            ;
        _exit(0);
    }
    if (pid < 0 || syscall(SYS_arch_prctl, ARCH_ULPT_ENABLE, &en) != 0) {
        perror("ulpt-switch: fork or ARCH_ULPT_ENABLE");
        return 2;
    }
    for (; done < rounds; done++)
        if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1)
            break;
    close(to_child[1]);
    waitpid(pid, &status, 0);
    printf("ulpt-switch: %ld round trips\n", done);
    return done == rounds ? 0 : 1;
}
