/*
 * A test of a tap_run() table (tap.h) whose body runs in a forked child, so that a crash or
 * a hang (alarm) fails that test only and every test starts from the process's first state:
 * the test is one check, "ok" when the child exits 0, SKIP when it exits TAP_SKIP_STATUS
 * (the body has printed why), "not ok" otherwise, the signal named when it was killed. The
 * body's assertions print their own "# " diagnostics before it returns non-zero.
 *
 *   static void case_x(void) { tap_forked(t_x, 0, "x: what it checks"); }
 *   { "x", case_x, 1 },
 */
#ifndef ULPT_TAP_FORK_H
#define ULPT_TAP_FORK_H
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"

#define TAP_SKIP_STATUS 77

/* Runs body() in a child (alarm after timeout_s seconds, if not 0); one check, described by fmt. */
static inline void tap_forked(int (*body)(void), unsigned timeout_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void tap_forked(int (*body)(void), unsigned timeout_s, const char *fmt, ...)
{
    char what[512], why[64] = "";
    va_list ap;
    int st = -1;
    pid_t pid;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int r;

        if (timeout_s)
            alarm(timeout_s);
        r = body();
        fflush(stdout);
        fflush(stderr);
        _exit(r);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        snprintf(why, sizeof(why), " (no child: fork or waitpid failed)");
    else if (WIFSIGNALED(st))
        snprintf(why, sizeof(why), " (killed by signal %d, %s)", WTERMSIG(st),
                 WTERMSIG(st) == SIGALRM ? "timeout" : strsignal(WTERMSIG(st)));
    if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == TAP_SKIP_STATUS)
        tap_skip("see above", what);
    else
        tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s", what, why);
}

#endif
