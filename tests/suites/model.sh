#!/usr/bin/env bash
# Modeled time from the guest's side (docs/spec.md 11.1; the CPU's rules are R-MODEL-* in
# tests/baremetal/ulpt-model.c): libulpt's calls (libulpt/test/ulpt-model-test.c) with the
# model and without, the guest tool ulpt-model, ulpt-run --model, two runs of a real program
# giving the same modeled cycles within 0.1%, and QEMU's own counts of a program that does not
# use ULPT on -cpu ulpt and -cpu max (scripts/bench-cpumodel --check).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
t=$top/build/libulpt/test/ulpt-model-test
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin
# ulpt-model-test's runs are sub-streams (tests/lib/tap-sub.sh) that tests/tap-run checks and
# merges; this suite's own plan counts only its own checks (printed at the end).
. "$top/tests/lib/tap-sub.sh"
dir=$(mktemp -d "$top/build/model.XXXXXX")
trap 'rm -rf "$dir"' EXIT

tap_sub host "$t" off
tap_sub "guest -cpu ulpt" "$run" --no-share -- "$t" off
tap_sub "guest -cpu ulpt,ulpt-model=on" "$run" --no-share --cpu ulpt,ulpt-model=on -- "$t" on
tap_sub "guest -cpu ulpt,ulpt-model=on, 2 CPUs" "$run" --no-share --smp 2 --cpu ulpt,ulpt-model=on -- "$t" smp

# ulpt-model without the model: one line, status 2; --available says no.
out=$("$run" --no-share -- sh -c 'ulpt-model -- true; echo "status $?"; ulpt-model --available; echo "available $?"' 2>&1)
tap_check $([[ "$out" == *"does not model time"*"status 2"*"available 1"* ]] &&
     [ "$(grep -c 'ulpt-model:' <<<"$out")" = 1 ]; echo $?) \
  "ulpt-model on a machine without the model: one line, status 2; --available: status 1" "$out"
out=$("$run" --no-share --cpu ulpt,ulpt-model=on -- sh -c 'ulpt-model; echo "status $?"; ulpt-model -o; echo "status $?"' 2>&1)
tap_check $([[ "$out" == *"usage: ulpt-model"*"status 2"*"usage: ulpt-model"*"status 2"* ]]; echo $?) \
  "ulpt-model without a command, or -o without a file: usage, status 2" "$out"

# A measurement inside ulpt-model's command closes the machine's one region: the outer
# ulpt-model says so in one line and exits 2, rather than printing counts it does not have.
out=$("$run" --no-share --cpu ulpt,ulpt-model=on -- sh -c 'ulpt-model -- ulpt-model -- true; echo "status $?"' 2>&1)
tap_check $([[ "$out" == *"ulpt-model: no counts: ulpt-model closed the measured region itself"*"status 2"* ]] &&
     [ "$(grep -c 'modeled cycles' <<<"$out")" = 1 ]; echo $?) \
  "ulpt-model around a command that ends the region itself: one line, status 2, no made-up counts" "$out"

# ulpt-run --model: the command's output and status, then its counts on stderr.
out=$("$run" --share "$dir" --model -- sh -c 'echo out; exit 3' 2>"$dir/err"); rc=$?
err=$(cat "$dir/err")
tap_check $([ $rc = 3 ] && [ "$out" = out ] &&
     grep -qE '^ulpt-model: [0-9]+ modeled cycles: [0-9]+ instructions at CPL 3, [0-9]+ at CPL 0, 0 deliveries' <<<"$err"; echo $?) \
  "ulpt-run --model: the command's output and status (3), its modeled cycles on stderr" "$err"
# --model=... sets the parameters; --model-json writes the counts; kernel=on adds the kernel's.
"$run" --share "$dir" --model=kernel=on,kentry=0 --model-json "$dir/k.json" -- true 2>"$dir/err"; rc=$?
tap_check $([ $rc = 0 ] && python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert set(j) == {"cycles", "insns_user", "insns_kernel", "deliveries", "returns", "returns_permit",
                  "after_events", "view_stores", "remote_syncs", "escalations", "kernel_entries",
                  "log_records", "log_events", "bounds_reads"}
assert j["insns_kernel"] > 0 and j["cycles"] == j["insns_user"] + j["insns_kernel"]
' "$dir/k.json" 2>&1; echo $?) \
  "ulpt-run --model=kernel=on,kentry=0 --model-json: every field; cycles = all instructions" "$(cat "$dir/k.json" "$dir/err" 2>&1)"
out=$("$run" --no-share --model=nosuch=1 -- true 2>&1); rc=$?
tap_check $([ $rc = 125 ] && [ "$(wc -l <<<"$out")" = 1 ] && [[ "$out" == *"unknown parameter 'nosuch'"* ]]; echo $?) \
  "ulpt-run --model=nosuch=1: one line, status 125" "$out"
out=$("$run" --no-share --model=cpi=fast -- true 2>&1); rc=$?
tap_check $([ $rc = 125 ] && [ "$(wc -l <<<"$out")" = 1 ] && [[ "$out" == *"ulpt-model-cpi"*"'fast'"* ]]; echo $?) \
  "ulpt-run --model=cpi=fast: QEMU's one line, status 125" "$out"
out=$("$run" --no-share --model 2>&1); rc=$?
tap_check $([ $rc = 125 ] && [[ "$out" == *"needs a command"* ]]; echo $?) "ulpt-run --model without a command: status 125" "$out"

# Determinism: xz compressing the same input twice in one guest, its input in RAM.
"$run" --share "$dir" --cpu ulpt,ulpt-model=on -- sh -c "seq 1 150000 > /tmp/in &&
  ulpt-model -o '$dir/a.json' -- xz -T1 -2 -c /tmp/in > /dev/null &&
  ulpt-model -o '$dir/b.json' -- xz -T1 -2 -c /tmp/in > /dev/null" 2>"$dir/err"
out=$(python3 -c '
import json, sys
a, b = (json.load(open(f))["cycles"] for f in sys.argv[1:3])
d = abs(a - b) / max(a, b)
print("%d and %d cycles, %.4f%% apart" % (a, b, 100 * d))
sys.exit(0 if a > 10**6 and d <= 0.001 else 1)' "$dir/a.json" "$dir/b.json" 2>&1); r=$?
tap_check $r "two runs of xz in one guest: the same modeled cycles within 0.1% ($out)" "$(cat "$dir/err")"

# A program that does not use ULPT makes QEMU do no more work on -cpu ulpt than on -cpu max:
# xz in a boot on each (scripts/bench-cpumodel --check): no ULPT helper runs, the same user
# instructions, no more TLB flushes, translation blocks or host code per block than the noise
# between boots (its CHECK says how much; the median of 3 boots per model, as one boot of
# either model can land in host code per block's second mode, 1.1% above the first).
out=$("$top/scripts/bench-cpumodel" --quick --no-build --phases counts --reps 3 --programs xz \
  --check --out "$dir/cpumodel" 2>&1); r=$?
tap_check $r "xz on -cpu ulpt vs -cpu max: no more QEMU work ($(grep -c '^check ok' <<<"$out") bounds met)" \
  "$(grep -E '^check|FAILED|Error|error' <<<"$out")"
tap_checks_end
[ "$tap_fails" = 0 ]
