/*
 * Boot test: the guest CPU enumerates ULPT exactly when it should, and the kernel reports it.
 *   cpuid-ulpt CPUID CPUINFO [NAME...]   expected CPUID.7.0:EDX[6] and "ulpt" in /proc/cpuinfo
 *                                         (0 or 1); NAMEs select tests of cpuid_tests[]
 *   cpuid-ulpt --list                     the test names
 * -cpu ulpt: 1 1; -cpu max: 0 0; -cpu ulpt with "noulpt" on the kernel command line: 1 0.
 */
#include <cpuid.h>
#include <string.h>
#include "tap.h"
#include <ulpt/arch.h>

static int cpuinfo_has(const char *flag)
{
    char line[8192], word[64];
    FILE *f = fopen("/proc/cpuinfo", "r");
    int found = -1;

    if (!f)
        return -1;
    snprintf(word, sizeof(word), " %s", flag);
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "flags", 5) == 0) {
            char *p = strstr(line, word);
            found = p && (p[strlen(word)] == ' ' || p[strlen(word)] == '\n');
            break;
        }
    }
    fclose(f);
    return found;
}

static int want_cpuid, want_info;

static void max_leaf(void)
{
    tap_ok(__get_cpuid_max(0, NULL) >= ULPT_CPUID_LEAF, "CPUID max leaf reaches leaf 7");
}

static void cpuid_bit(void)
{
    unsigned a, b, c, d;

    __cpuid_count(ULPT_CPUID_LEAF, ULPT_CPUID_SUBLEAF, a, b, c, d);
    (void)a; (void)b; (void)c;
    tap_ok(((d >> ULPT_CPUID_EDX_BIT) & 1) == (unsigned)want_cpuid,
           "CPUID.7.0:EDX[%u] is %d (EDX=%#x)", ULPT_CPUID_EDX_BIT, want_cpuid, d);
}

static void cpuinfo_flag(void)
{
    tap_ok(cpuinfo_has("ulpt") == want_info, "/proc/cpuinfo %s the ulpt flag",
           want_info ? "shows" : "does not show");
}

static const struct test_case cpuid_tests[] = {
    { "max-leaf", max_leaf, 1 },
    { "R-ENUM-1", cpuid_bit, 1 },
    { "cpuinfo", cpuinfo_flag, 1 },
};

static int is_01(const char *s) { return (s[0] == '0' || s[0] == '1') && s[1] == 0; }

int main(int argc, char **argv)
{
    int i = 1;

    if (i < argc && is_01(argv[i]))
        want_cpuid = argv[i++][0] == '1';
    if (i < argc && is_01(argv[i]))
        want_info = argv[i++][0] == '1';
    return tap_run(cpuid_tests, TAP_NTESTS(cpuid_tests), argc - i, argv + i);
}
