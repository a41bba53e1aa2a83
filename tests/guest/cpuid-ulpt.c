/*
 * Boot test: the guest CPU enumerates ULPT exactly when it should.
 *   cpuid-ulpt 1   on -cpu ulpt: CPUID.7.0:EDX[6] is set
 *   cpuid-ulpt 0   on -cpu max: it is clear (max never turns ULPT on by itself)
 */
#include <cpuid.h>
#include <string.h>
#include "tap.h"
#include "ulpt-arch.h"

int main(int argc, char **argv)
{
    unsigned a, b, c, d;
    int want = argc > 1 && strcmp(argv[1], "1") == 0;

    tap_plan(2);
    tap_ok(__get_cpuid_max(0, NULL) >= ULPT_CPUID_LEAF, "CPUID max leaf reaches leaf 7");
    __cpuid_count(ULPT_CPUID_LEAF, ULPT_CPUID_SUBLEAF, a, b, c, d);
    (void)a; (void)b; (void)c;
    tap_ok(((d >> ULPT_CPUID_EDX_BIT) & 1) == (unsigned)want,
           "CPUID.7.0:EDX[%u] is %d (EDX=%#x)", ULPT_CPUID_EDX_BIT, want, d);
    return tap_done();
}
