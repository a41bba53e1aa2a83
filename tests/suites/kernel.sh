#!/usr/bin/env bash
# The kernel's ULPT selftest (linux/tools/testing/selftests/x86/ulpt.c: the Linux API of
# docs/linux-api.md) and the random stress program (tests/guest/ulpt-stress.c,
# ULPT_STRESS_SECONDS, default 10) on two vCPUs, and a check that the kernel logged no warning
# meanwhile; the API on a CPU without ULPT (-cpu max: ENODEV, "unsupported") and on -cpu ulpt
# booted with "noulpt" (the same: the selftest sees "noulpt" and runs its test for a kernel
# without ULPT).
# Also on both CPU models: far returns at CPL 3 (tests/guest/farret.c) and the guest clock
# (tests/guest/clock.c); on -cpu ulpt, R-COH-5 in a process (tests/guest/ulpt-coh.c), and the
# MSRs written at a switch (section 9: tests/guest/ulpt-switch.c, QEMU's trace).
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
  # docs/spec.md section 9 as Linux does it (tests/guest/ulpt-switch.c): 500 round trips
  # between a process with a table and one without, on one CPU, write ULPT_CTL each way and
  # ULPT_ROOT and ULPT_VIEW a few times in all (QEMU's ulpt_msr_write trace of the boot).
  trace=$(mktemp)
  sw=$("$top/scripts/ulpt-run" --isolated --no-share --qemu-arg -d --qemu-arg trace:ulpt_msr_write \
       --qemu-arg -D --qemu-arg "$trace" -- $t/ulpt-switch 500 2>&1)
  ctl=$(grep -c 'msr 0x990 ' "$trace") root=$(grep -c 'msr 0x991 ' "$trace") view=$(grep -c 'msr 0x992 ' "$trace")
  rm -f "$trace"
  if grep -q '^ulpt-switch: 500 round trips$' <<<"$sw" && [ "$ctl" -ge 1000 ] && [ "$root" -le 10 ] &&
     [ "$view" -le 10 ]; then
    echo "ok - section 9: a switch to a process without a table and back writes ULPT_CTL alone ($ctl CTL, $root ROOT, $view VIEW writes for 500 round trips)"
  else
    echo "not ok - section 9: a switch to a process without a table and back writes ULPT_CTL alone ($ctl CTL, $root ROOT, $view VIEW writes for 500 round trips)"
    echo "$sw" | tail -n 3 | sed 's/^/# /'
    rc=1
  fi
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* /\1ok /'
