/*
 * ulpt-info: what the guest sees of the ULPT platform. The demo `make run` starts with:
 * kernel version, CPU model (CPUID brand string) and whether the CPU enumerates ULPT.
 * Exits 0 when it could read everything, whatever the answer is.
 */
#include <cpuid.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <ulpt/arch.h>

static int cpu_has_ulpt(void)
{
    unsigned a, b, c, d;

    if (__get_cpuid_max(0, NULL) < ULPT_CPUID_LEAF)
        return 0;
    __cpuid_count(ULPT_CPUID_LEAF, ULPT_CPUID_SUBLEAF, a, b, c, d);
    return (d >> ULPT_CPUID_EDX_BIT) & 1;
}

static void cpu_brand(char out[49])
{
    unsigned r[12];

    memset(out, 0, 49);
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) {
        strcpy(out, "(no brand string)");
        return;
    }
    for (unsigned i = 0; i < 3; i++)
        __cpuid(0x80000002u + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
    memcpy(out, r, 48);
}

/* The "flags" line of /proc/cpuinfo names ulpt once the kernel knows the feature. */
static int cpuinfo_has_ulpt(void)
{
    char line[8192];
    FILE *f = fopen("/proc/cpuinfo", "r");
    int found = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "flags", 5) == 0) {
            found = strstr(line, " ulpt") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

int main(void)
{
    struct utsname u;
    char brand[49];
    int ci;

    if (uname(&u) != 0) {
        perror("uname");
        return 1;
    }
    cpu_brand(brand);
    ci = cpuinfo_has_ulpt();
    printf("kernel:        %s %s %s\n", u.sysname, u.release, u.version);
    printf("cpu model:     %s\n", brand);
    printf("cpuid ulpt:    %s\n", cpu_has_ulpt() ? "yes" : "no");
    printf("cpuinfo ulpt:  %s\n", ci < 0 ? "unknown" : ci ? "yes" : "no");
    return 0;
}
