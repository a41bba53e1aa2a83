#!/usr/bin/env bash
# CPU tests without a kernel: bare-metal images (tests/baremetal) booted with PVH on
# -cpu ulpt, on -cpu max for the enumeration rules, and on two vCPUs (multi-threaded TCG)
# for cross-CPU coherence, through scripts/ulpt-baremetal. They print TAP on port 0xE9.
# One test alone: the image's command line names it (--append NAME; --append list lists them);
# the last cases check that: only that test runs, and an unknown name fails.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run() { # cpu image [smp [ulpt-baremetal options...]]
  "$top/scripts/ulpt-baremetal" --cpu "$1" --smp "${3:-1}" "${@:4}" "$top/build/baremetal/$2.elf" ||
    { echo "# $2 on -cpu $1 failed"; return 1; }
}
# report DESCRIPTION STATUS OUTPUT: one TAP line, the run's output as comments when it failed.
report() {
  if [ "$2" = 0 ]; then echo "ok - $1"; else echo "not ok - $1"; sed 's/^/#   /' <<<"$3"; fi
  return "$2"
}
by_name() {
  local out r rc=0 oks
  # A single test: its plan, its checks (all R-ACC-4), nothing else.
  out=$(run ulpt ulpt-cpu 1 --append R-ACC-4 2>&1); r=$?
  oks=$(grep -cE '^(not )?ok ' <<<"$out")
  [ $r = 0 ] && grep -qx '1\.\.1' <<<"$out" && [ "$oks" = 1 ] && grep -q '^ok 1 - R-ACC-4: ' <<<"$out"; r=$?
  report "by name: --append R-ACC-4 runs only that test's check" $r "$out" || rc=1
  # A rule runs each test named after it, in table order, and only those.
  out=$(run ulpt ulpt-cpu 1 --append 'R-TBL-1 R-MSR-2' 2>&1); r=$?
  [ $r = 0 ] && [ "$(grep '^# R-' <<<"$out" | tr '\n' ' ')" = "# R-MSR-2 # R-TBL-1:page # R-TBL-1:lines # R-TBL-1:fast-path # R-TBL-1:empty-entry # R-TBL-1:inline " ] &&
    [ "$(grep -cE '^ok ' <<<"$out")" = 23 ] && ! grep -q '^not ok' <<<"$out"; r=$?
  report "by name: --append 'R-TBL-1 R-MSR-2' runs the five R-TBL-1 tests and R-MSR-2 (23 checks)" $r "$out" || rc=1
  # list: the names, no test run.
  out=$(run ulpt ulpt-cpu 1 --append list 2>&1); r=$?
  [ $r = 0 ] && grep -qx 'R-ACC-4' <<<"$out" && grep -qx 'R-DEL-1:frame' <<<"$out" && ! grep -qE '^(not )?ok' <<<"$out"; r=$?
  report "by name: --append list lists the tests and runs none" $r "$out" || rc=1
  # An unknown name is an error, not an empty pass.
  out=$(run ulpt ulpt-cpu 1 --append R-NONE-9 2>&1); r=$?
  [ $r != 0 ] && grep -q '^Bail out! no test named "R-NONE-9"' <<<"$out" && ! grep -qE '^(not )?ok' <<<"$out"; r=$?
  report "by name: an unknown name fails the run" $r "$out" || rc=1
  # On a CPU without ULPT: the enumeration rule alone.
  out=$(run max ulpt-cpu 1 --append R-ENUM-2 2>&1); r=$?
  [ $r = 0 ] && grep -qx '1\.\.3' <<<"$out" && [ "$(grep -c '^ok [0-9]* - R-ENUM-2: ' <<<"$out")" = 3 ] &&
    [ "$(grep -cE '^(not )?ok ' <<<"$out")" = 3 ]; r=$?
  report "by name: --append R-ENUM-2 on -cpu max runs its 3 checks only" $r "$out" || rc=1
  # The two-CPU image: one test alone starts the second CPU itself.
  out=$(run ulpt ulpt-smp 2 --append R-COH-2:fast-path 2>&1); r=$?
  [ $r = 0 ] && grep -qx '1\.\.3' <<<"$out" && [ "$(grep -cE '^ok ' <<<"$out")" = 3 ] && ! grep -q '^not ok' <<<"$out"; r=$?
  report "by name: ulpt-smp runs R-COH-2:fast-path alone" $r "$out" || rc=1
  return $rc
}
# Modeled time (R-MODEL-*): the parameters tests/baremetal/ulpt-model.c expects, the
# defaults, the model off; a bad parameter is QEMU's one-line error at start-up.
model() {
  local out r rc=0 p=ulpt,ulpt-model=on,ulpt-model-cpi=2,ulpt-model-deliver=1000,ulpt-model-uiret=100
  p=$p,ulpt-model-uiret-permit=300,ulpt-model-view-store=7,ulpt-model-kentry=50,ulpt-model-kernel=on
  p=$p,ulpt-model-log-record=3,ulpt-model-bounds=5
  run "$p" ulpt-model 1 --append 'R-MODEL-1:query R-MODEL-2 R-MODEL-3 R-MODEL-4' || rc=1
  run ulpt,ulpt-model=on ulpt-model 1 --append R-MODEL-5 || rc=1
  # One charge changed between two runs: the cycles differ by exactly its change times the
  # events (R-MODEL-4 makes 4 deliveries; bare metal runs the same instructions each time).
  local c1 c2
  c1=$(run "$p" ulpt-model 1 --append R-MODEL-4 | sed -n 's/.*the charges (\([0-9]*\), want.*/\1/p')
  c2=$(run "$p,ulpt-model-deliver=1500" ulpt-model 1 --append R-MODEL-4 2>/dev/null |
       sed -n 's/.*the charges (\([0-9]*\), want.*/\1/p')
  [ -n "$c1" ] && [ -n "$c2" ] && [ $((c2 - c1)) = $((4 * 500)) ]; r=$?
  report "R-MODEL-4: ulpt-model-deliver 1000 -> 1500 adds exactly 4 x 500 cycles ($c1 -> $c2)" $r "" || rc=1
  run ulpt ulpt-model 1 --append R-MODEL-1:off || rc=1
  for bad in ulpt-model-cpi=abc ulpt-model-cpi=0 ulpt-model-cpi=1e9 ulpt-model-deliver=x; do
    # QEMU itself: the bare-metal runner reads status 1 as the image's success. -S: a
    # machine that did start waits, and the timeout ends it (status 124).
    out=$(timeout 60 "${ULPT_QEMU:-$top/build/qemu/obj/qemu-system-x86_64}" -M pc -accel tcg \
      -cpu "ulpt,ulpt-model=on,$bad" -display none -nodefaults -S -monitor none </dev/null 2>&1); r=$?
    [ $r = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q "ulpt-model-" <<<"$out"; r=$?
    report "R-MODEL: -cpu ulpt,ulpt-model=on,$bad: QEMU refuses to start, one line naming the parameter" $r "$out" || rc=1
  done
  return $rc
}
{
  rc=0
  model || rc=1
  run ulpt ulpt-cpu || rc=1
  run max ulpt-cpu || rc=1
  run ulpt ulpt-smp 2 || rc=1
  by_name || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* - /\1ok - /'
