/* Minimal TAP output for guest and bare-metal-free C tests: plan, ok, skip, done. */
#ifndef ULPT_TAP_H
#define ULPT_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
