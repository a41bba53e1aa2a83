/*
 * Minimal TAP output for the host unit tests and the guest programs: plan, ok, skip, done;
 * and a runner for a table of named test functions (the shape of pkey_tests[] in Linux's
 * tools/testing/selftests/vm/protection_keys.c), with the same selection rules as the
 * bare-metal images' bm_run() (tests/baremetal/bm.c):
 *
 *   prog            runs every test in table order
 *   prog NAME...    runs the named ones (in table order); a rule such as R-DEL-1 names every
 *                   test called R-DEL-1 or R-DEL-1:topic
 *   prog --list     prints the names, one a line
 *
 * A name that matches no test is an error (Bail out!, exit status 2). The plan is the sum
 * of the selected tests' declared checks; a test that makes another number fails the run.
 */
#ifndef ULPT_TAP_H
#define ULPT_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "select.h"

static int tap_n, tap_failed;

static inline void tap_plan(int n) { printf("1..%d\n", n); fflush(stdout); }

static inline int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;

    printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!cond)
        tap_failed++;
    return cond;
}

static inline void tap_skip(const char *why, const char *what)
{
    printf("ok %d - %s # SKIP %s\n", ++tap_n, what, why);
    fflush(stdout);
}

static inline int tap_done(void) { return tap_failed ? 1 : 0; }

#define TAP_NTESTS(t) TEST_NCASES(t)

/* Runs the tests that the words argv[0..argc) select (all if none); returns the exit status. */
static inline int tap_run(const struct test_case *t, unsigned n, int argc, char **argv)
{
    unsigned char sel[256] = { 0 };
    int planned;

    if (n > sizeof(sel)) {
        printf("Bail out! %u tests, the runner takes %u\n", n, (unsigned)sizeof(sel));
        return 2;
    }
    for (int a = 0; a < argc; a++) {
        if (strcmp(argv[a], "--list") == 0) {
            for (unsigned i = 0; i < n; i++)
                printf("%s\n", t[i].name);
            return 0;
        }
        if (!test_select(t, n, argv[a], strlen(argv[a]), sel)) {
            printf("Bail out! no test named \"%s\" (--list lists them)\n", argv[a]);
            fflush(stdout);
            return 2;
        }
    }
    planned = test_plan(t, n, argc != 0, sel);
    tap_plan(planned);
    for (unsigned i = 0; i < n; i++) {
        if (argc && !sel[i])
            continue;
        int before = tap_n;
        printf("# %s\n", t[i].name);
        t[i].fn();
        if (tap_n - before != t[i].checks)
            printf("# %s made %d checks, declares %d\n", t[i].name, tap_n - before, t[i].checks);
        fflush(stdout);
    }
    return tap_failed || tap_n != planned ? 1 : 0;
}

#endif
