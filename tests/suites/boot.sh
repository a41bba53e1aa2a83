#!/usr/bin/env bash
# Boot tests: the guest comes up on -cpu ulpt and sees the ULPT CPUID bit, and does not see it
# on -cpu max. Runs the guest-side TAP programs through tap-run inside the guest.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=/usr/libexec/ulpt-tests
{
  rc=0
  "$top/scripts/ulpt-run" --no-share -- $t/tap-run "$t/cpuid-ulpt 1" || rc=1
  "$top/scripts/ulpt-run" --no-share --cpu max -- $t/tap-run "$t/cpuid-ulpt 0" || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* /\1ok /'
