/*
 * Boot test: the guest CPU enumerates ULPT exactly when it should, and the kernel reports it.
 *   cpuid-ulpt CPUID CPUINFO    expected CPUID.7.0:EDX[6] and "ulpt" in /proc/cpuinfo (0 or 1)
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

int main(int argc, char **argv)
{
    unsigned a, b, c, d;
    int want_cpuid = argc > 1 && strcmp(argv[1], "1") == 0;
    int want_info = argc > 2 && strcmp(argv[2], "1") == 0;

    tap_plan(3);
    tap_ok(__get_cpuid_max(0, NULL) >= ULPT_CPUID_LEAF, "CPUID max leaf reaches leaf 7");
    __cpuid_count(ULPT_CPUID_LEAF, ULPT_CPUID_SUBLEAF, a, b, c, d);
    (void)a; (void)b; (void)c;
    tap_ok(((d >> ULPT_CPUID_EDX_BIT) & 1) == (unsigned)want_cpuid,
           "CPUID.7.0:EDX[%u] is %d (EDX=%#x)", ULPT_CPUID_EDX_BIT, want_cpuid, d);
    tap_ok(cpuinfo_has("ulpt") == want_info, "/proc/cpuinfo %s the ulpt flag",
           want_info ? "shows" : "does not show");
    return tap_done();
}
