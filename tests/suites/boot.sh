#!/usr/bin/env bash
# Boot tests: the guest comes up on -cpu ulpt and sees the ULPT CPUID bit and the kernel's
# "ulpt" cpuinfo flag; on -cpu max neither; with "noulpt" the CPU has it but the kernel does not
# use it. Runs the guest-side TAP programs through tap-run inside the guest, and one of their
# tests by name.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=/usr/libexec/ulpt-tests
{
  rc=0
  # Also one test by name (tests/lib/tap.h): only its check runs; an unknown name fails.
  "$top/scripts/ulpt-run" --isolated --no-share -- sh -c "$t/tap-run '$t/cpuid-ulpt 1 1'; r=\$?
    out=\$($t/cpuid-ulpt 1 1 R-ENUM-1); s=\$?
    if [ \$s = 0 ] && [ \$(echo \"\$out\" | grep -cE '^(not )?ok') = 1 ] && echo \"\$out\" | grep -q '^ok 1 - CPUID.7.0:EDX'; then
      echo 'ok - by name: cpuid-ulpt 1 1 R-ENUM-1 runs only that test'
    else echo 'not ok - by name: cpuid-ulpt 1 1 R-ENUM-1 runs only that test'; echo \"\$out\" | sed 's/^/#   /'; r=1; fi
    if $t/cpuid-ulpt 1 1 R-NONE-1 >/dev/null; then echo 'not ok - by name: an unknown name fails'; r=1
    else echo 'ok - by name: an unknown name fails'; fi
    exit \$r" || rc=1
  "$top/scripts/ulpt-run" --isolated --no-share --cpu max -- $t/tap-run "$t/cpuid-ulpt 0 0" || rc=1
  "$top/scripts/ulpt-run" --isolated --no-share --append noulpt -- $t/tap-run "$t/cpuid-ulpt 1 0" || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* /\1ok /'
