/*
 * The test table of every C test program here (the shape of pkey_tests[] in Linux's
 * tools/testing/selftests/vm/protection_keys.c) and the by-name selection that tap.h's
 * tap_run() and the bare-metal images' bm_run() share. Freestanding (no libc), so the
 * bare-metal images include it too.
 */
#ifndef ULPT_TEST_SELECT_H
#define ULPT_TEST_SELECT_H

struct test_case {
    const char *name;          /* the rule of docs/spec.md it checks (":topic" if several), or a topic */
    void (*fn)(void);
    int checks;                /* checks it makes: the plan is their sum */
};
#define TEST_NCASES(t) (sizeof(t) / sizeof((t)[0]))

/* Word w (len bytes) selects test name: the whole name, or the rule before its ':'. */
static inline int test_selects(const char *w, unsigned len, const char *name)
{
    unsigned i = 0;

    while (i < len && name[i] && name[i] == w[i])
        i++;
    return i == len && (name[i] == 0 || name[i] == ':');
}

/* Marks in sel[] every test the word selects; returns how many (0: no test has that name). */
static inline unsigned test_select(const struct test_case *t, unsigned n, const char *w,
                                   unsigned len, unsigned char *sel)
{
    unsigned hits = 0;

    for (unsigned i = 0; i < n; i++)
        if (test_selects(w, len, t[i].name))
            sel[i] = 1, hits++;
    return hits;
}

/* The plan: the declared checks of the selected tests, or of them all when none is selected. */
static inline int test_plan(const struct test_case *t, unsigned n, int any,
                            const unsigned char *sel)
{
    int planned = 0;

    for (unsigned i = 0; i < n; i++)
        if (!any || sel[i])
            planned += t[i].checks;
    return planned;
}

#endif
