#!/usr/bin/env bash
# Boot tests: the guest comes up on -cpu ulpt and sees the ULPT CPUID bit and the kernel's
# "ulpt" cpuinfo flag; on -cpu max neither; with "noulpt" the CPU has it but the kernel does not
# use it. Runs the guest-side TAP programs through tap-run inside the guest.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=/usr/libexec/ulpt-tests
{
  rc=0
  "$top/scripts/ulpt-run" --isolated --no-share -- $t/tap-run "$t/cpuid-ulpt 1 1" || rc=1
  "$top/scripts/ulpt-run" --isolated --no-share --cpu max -- $t/tap-run "$t/cpuid-ulpt 0 0" || rc=1
  "$top/scripts/ulpt-run" --isolated --no-share --append noulpt -- $t/tap-run "$t/cpuid-ulpt 1 0" || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* /\1ok /'
