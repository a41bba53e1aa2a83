#!/usr/bin/env bash
# The CPU differential fuzzer (tests/baremetal/ulpt-fuzz.c) on a short fixed budget: the same
# seed every run, so a failure here is reproducible with the seed and sequence it prints
# (scripts/ulpt-baremetal --append 'seed=S start=I count=1 mode=check dump=1'). `make fuzz-cpu`
# runs the long campaign (scripts/fuzz-cpu).
#   oracle 1: -cpu max and -cpu ulpt with a table that allows everything give the same
#             per-sequence result hashes;
#   oracles 2-4: every delivery is the one the spec's rule gives, none is missing, a permitted
#             run ends as the unrestricted one, a skipped faulting instruction changed nothing
#             (rights random, malformed entries and byte bounds included, changed by the
#             sequences' own stores to the view and to the bounds; one sequence in five runs
#             from an NX code page); bounds must have opened accesses and moved the first
#             denied byte of some;
#   the checker itself: a table that differs from the checker's copy in one bit is caught, and
#             so is a checker that ignores the stores to the view, the bounds, or the stores
#             to the bounds;
#   oracle 5: random ULPT MSR writes and UIRETs (at CPL 0, with random frames and bad stacks,
#             in compatibility mode) get the spec's exception, QEMU survives.
# FUZZ_SEED, FUZZ_COUNT change the budget (the default takes about 40 s).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
img=$top/build/baremetal/ulpt-fuzz.elf
seed=${FUZZ_SEED:-20261202}
count=${FUZZ_COUNT:-2500}
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin
run() { # cpu append
  "$top/scripts/ulpt-baremetal" --timeout 120 --cpu "$1" --append "$2" "$img" 2>&1
}
field() { sed -n "s/.* $2 \([0-9]*\).*/\1/p" <<<"$1" | head -n1; }

# Oracle 1.
max=$(run max "seed=$seed count=$count mode=ref"); r1=$?
ulpt=$(run ulpt "seed=$seed count=$count mode=ref"); r2=$?
hm=$(grep '^h ' <<<"$max"); hu=$(grep '^h ' <<<"$ulpt")
n=$(grep -c . <<<"$hm")
ok_=1
[ $r1 = 0 ] && [ $r2 = 0 ] && [ "$n" = "$count" ] && [ "$hm" = "$hu" ] && ok_=0
tap_check $ok_ "oracle 1: $count sequences (seed $seed) end in the same state on -cpu max and on -cpu ulpt with an all-allowing table" \
  "$( { diff <(echo "$hm") <(echo "$hu") | head -20; grep -v '^h ' <<<"$max$ulpt"; } | head -60)"

# Oracles 2-4.
out=$(run ulpt "seed=$seed count=$count mode=check"); r=$?
sum=$(grep '^fuzz: mode check' <<<"$out")
del=$(field "$sum" deliveries); aft=$(field "$sum" after-events); skp=$(field "$sum" skipped)
nx=$(field "$sum" code-nx)
bop=$(field "$sum" bounds-opened); bmv=$(field "$sum" bounds-moved); bst=$(field "$sum" bounds-stores)
ok_=1
[ $r = 0 ] && grep -q '^fuzz: failures 0 distinct 0$' <<<"$out" && [ "${del:-0}" -gt 0 ] &&
  [ "${aft:-0}" -gt 0 ] && [ "${skp:-0}" -gt 0 ] && [ "${nx:-0}" -gt 0 ] &&
  [ "${bop:-0}" -gt 0 ] && [ "${bmv:-0}" -gt 0 ] && [ "${bst:-0}" -gt 0 ] && ok_=0
tap_check $ok_ "oracles 2-4: $count sequences with random rights ($nx with the code page NX): $del deliveries as the spec decides, $aft after events, $skp faulting instructions skipped with nothing done; byte bounds opened $bop accesses and moved the first denied byte of $bmv, $bst stores to them" \
  "$(grep -v '^h ' <<<"$out" | head -60)"

# The checker can fail: its copy of the table differs from the CPU's in one line right.
out=$(run ulpt "seed=$seed count=200 mode=check inject=1"); r=$?
nf=$(sed -n 's/^fuzz: failures \([0-9]*\) .*/\1/p' <<<"$out")
ok_=1
[ $r = 1 ] && [ "${nf:-0}" -gt 0 ] && grep -qE '^fuzz: distinct (missed-delivery|spurious-delivery|frame-mismatch) ' <<<"$out" && ok_=0
tap_check $ok_ "self-test: a table that differs from the checker's copy in one bit fails the run ($nf failures)" "$(tail -20 <<<"$out")"

# ... and one that ignores the sequences' stores to the view (R-COH-1: from the next instruction
# on), one that takes no byte as open (R-BND-1), one that ignores the stores to the bounds (R-BND-2).
ok_=0 nfs= outs=
for inj in 2 3 4; do
  out=$(run ulpt "seed=$seed count=300 mode=check inject=$inj"); r=$?
  nf=$(sed -n 's/^fuzz: failures \([0-9]*\) .*/\1/p' <<<"$out")
  { [ $r = 1 ] && [ "${nf:-0}" -gt 0 ]; } || { ok_=1; outs+="inject=$inj: $(tail -20 <<<"$out")"$'\n'; }
  nfs+="${nfs:+, }${nf:-?}"
done
tap_check $ok_ "self-test: a checker that ignores the sequences' stores to the view, the bounds, or the stores to the bounds fails the run ($nfs failures)" "$outs"

# Oracle 5.
out=$(run ulpt "seed=$seed count=500 mode=msr"); r=$?
ok_=1
[ $r = 0 ] && grep -q '^fuzz: mode msr .* msr-writes 4000 uirets 1000 compat-mode 1000$' <<<"$out" &&
  grep -q '^fuzz: failures 0 distinct 0$' <<<"$out" && ok_=0
tap_check $ok_ "oracle 5: 4000 random ULPT MSR writes, 1000 UIRETs (CPL 0, bad frames, bad stacks) and 1000 UIRETs and denied reads in compatibility mode get the spec's result" "$(head -60 <<<"$out")"

tap_checks_end
[ "$tap_fails" = 0 ]
