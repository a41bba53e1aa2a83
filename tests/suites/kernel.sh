#!/usr/bin/env bash
# The kernel's ULPT selftest (linux/tools/testing/selftests/x86/ulpt.c: the Linux API of
# docs/linux-api.md) and the random stress program (tests/guest/ulpt-stress.c,
# ULPT_STRESS_SECONDS, default 10) on two vCPUs, and a check that the kernel logged no warning
# meanwhile; the API on a CPU without ULPT (-cpu max: ENODEV, "unsupported") and on -cpu ulpt
# booted with "noulpt" (the same: the selftest sees "noulpt" and runs its test for a kernel
# without ULPT).
# Also on both CPU models: far returns at CPL 3 (tests/guest/farret.c) and the guest clock
# (tests/guest/clock.c); on -cpu ulpt, R-COH-5 in a process (tests/guest/ulpt-coh.c).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=/usr/libexec/ulpt-tests
{
  rc=0
  out=$("$top/scripts/ulpt-run" --isolated --no-share --smp 2 --timeout 900 -- \
        sh -c "$t/tap-run $t/ulpt '$t/ulpt-stress ${ULPT_STRESS_SECONDS:-10}' $t/farret $t/clock $t/ulpt-coh; r=\$?; dmesg > /tmp/dmesg; \
               if grep -qiE 'warning|bug|oops|call trace' /tmp/dmesg; then echo 'not ok - kernel log has warnings'; \
               grep -iE -A5 'warning|bug|oops|call trace' /tmp/dmesg | sed 's/^/# /'; else echo 'ok - no warning in the kernel log'; fi; exit \$r") || rc=1
  echo "$out"
  "$top/scripts/ulpt-run" --isolated --no-share --cpu max -- $t/tap-run "$t/ulpt nocpu" $t/farret $t/clock || rc=1
  "$top/scripts/ulpt-run" --isolated --no-share --append noulpt -- $t/tap-run "$t/ulpt" || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* /\1ok /'
