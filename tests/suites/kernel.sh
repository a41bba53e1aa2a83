#!/usr/bin/env bash
# Linux ULPT API tests (tests/guest/ulpt-api.c) and the random stress program
# (tests/guest/ulpt-stress.c, ULPT_STRESS_SECONDS, default 10) on two vCPUs, the API on a CPU
# without ULPT (-cpu max: ENODEV), and a check that the kernel logged no warning meanwhile.
# Also on both CPU models: far returns at CPL 3 (tests/guest/farret.c) and the guest clock
# (tests/guest/clock.c).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=/usr/libexec/ulpt-tests
{
  rc=0
  out=$("$top/scripts/ulpt-run" --isolated --no-share --smp 2 --timeout 900 -- \
        sh -c "$t/tap-run $t/ulpt-api '$t/ulpt-stress ${ULPT_STRESS_SECONDS:-10}' $t/farret $t/clock; r=\$?; dmesg > /tmp/dmesg; \
               if grep -qiE 'warning|bug|oops|call trace' /tmp/dmesg; then echo 'not ok - kernel log has warnings'; \
               grep -iE -A5 'warning|bug|oops|call trace' /tmp/dmesg | sed 's/^/# /'; else echo 'ok - no warning in the kernel log'; fi; exit \$r") || rc=1
  echo "$out"
  "$top/scripts/ulpt-run" --isolated --no-share --cpu max -- $t/tap-run "$t/ulpt-api nocpu" $t/farret $t/clock || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* /\1ok /'
