#!/usr/bin/env bash
# Unit test of tests/tap-run, the TAP merger every test result goes through: it must count
# failures it is shown, and turn crashes, short runs and empty runs into failures.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mk() { printf '#!/bin/sh\n%s\n' "$2" > "$tmp/$1"; chmod +x "$tmp/$1"; }
mk pass 'echo 1..2; echo ok 1 - a; echo ok 2 - b'
mk fail 'echo 1..2; echo ok 1 - a; echo not ok 2 - b'
mk short 'echo 1..3; echo ok 1 - a'
mk crash 'echo 1..1; echo ok 1 - a; exit 3'
mk empty 'true'
mk skip 'echo 1..1; echo "ok 1 - x # SKIP not here"'
mk todo 'echo 1..1; echo "not ok 1 - x # TODO later"'
mk noise 'echo 1..1; echo "some output"; echo ok 1 - a'
mk args 'echo 1..1; echo "ok 1 - got $1"'
# Suites printing other programs' streams as sub-streams (tests/lib/tap-sub.sh).
sub() { printf '#!/bin/sh\n. %s/tests/lib/tap-sub.sh\n%s\n' "$top" "$2" > "$tmp/$1"; chmod +x "$tmp/$1"; }
sub suite 'echo 1..1; echo ok 1 - own; tap_sub a "$0.d/pass"; tap_sub b "$0.d/pass"; exit 0'
sub subfail 'tap_sub a "$0.d/fail"; exit 1'
sub subshort 'tap_sub a "$0.d/short"; exit 1'
sub subcrash 'tap_sub a "$0.d/crash"; exit 1'
sub subempty 'tap_sub a "$0.d/empty"; exit 0'
sub subnest 'echo 1..1; echo ok 1 - own; tap_sub outer "$0.d/suite"'
sub substop 'echo "#@@ begin a"; echo 1..2; echo ok 1 - a; exit 0'
sub subplan 'echo 1..3; echo ok 1 - own; tap_sub a "$0.d/pass"'
for s in suite subfail subshort subcrash subempty subnest substop subplan; do
  mkdir "$tmp/$s.d" && cp "$tmp/pass" "$tmp/fail" "$tmp/short" "$tmp/crash" "$tmp/empty" "$tmp/$s.d/"
done
cp "$tmp/suite" "$tmp/subnest.d/suite" && mkdir "$tmp/subnest.d/suite.d" && cp "$tmp/pass" "$tmp/subnest.d/suite.d/"
n=0
check() { # name expected-summary args...
  local name=$1 want=$2; shift 2
  local out; out=$("$top/tests/tap-run" --summary "$@" 2>&1)
  n=$((n + 1))
  if [ "$(tail -n1 <<<"$out")" = "$want" ]; then echo "ok $n - $name"; else echo "not ok $n - $name: got '$(tail -n1 <<<"$out")', want '$want'"; fi
}
echo 1..18
check "all passing" "2 passed, 0 failed" "$tmp/pass"
check "a failing test counts" "1 passed, 1 failed" "$tmp/fail"
check "fewer tests than planned fails" "1 passed, 1 failed" "$tmp/short"
check "non-zero exit without failures fails" "1 passed, 1 failed" "$tmp/crash"
check "a program that runs no test fails" "0 passed, 1 failed" "$tmp/empty"
check "skips are counted apart" "0 passed, 0 failed, 1 skipped" "$tmp/skip"
check "TODO failures do not fail" "1 passed, 0 failed" "$tmp/todo"
check "non-TAP output is kept as comments" "1 passed, 0 failed" "$tmp/noise"
check "arguments in the same word reach the program" "3 passed, 0 failed" "$tmp/pass" "$tmp/args x"
check "sub-streams: each one's plan apart from the suite's own" "5 passed, 0 failed" "$tmp/suite"
check "a failing test in a sub-stream counts, and no more failure for the suite's status" "1 passed, 1 failed" "$tmp/subfail"
check "a sub-stream that runs fewer tests than planned fails" "1 passed, 1 failed" "$tmp/subshort"
check "a sub-stream that exits non-zero without failures fails" "1 passed, 1 failed" "$tmp/subcrash"
check "a sub-stream that runs no test fails" "0 passed, 1 failed" "$tmp/subempty"
check "sub-streams nest" "6 passed, 0 failed" "$tmp/subnest"
check "a stream that stops inside a sub-stream fails (and the short sub-stream)" "1 passed, 2 failed" "$tmp/substop"
check "the suite's plan counts only its own tests" "3 passed, 1 failed" "$tmp/subplan"
out=$("$top/tests/tap-run" "$tmp/subnest" 2>&1)
n=$((n + 1))
if grep -q '^ok [0-9]* subnest: outer: b: b$' <<<"$out" && grep -q '^ok 1 subnest: own$' <<<"$out"
then echo "ok $n - sub-stream lines are prefixed with the program's and the sub-streams' names"
else echo "not ok $n - sub-stream lines are prefixed with the program's and the sub-streams' names: $(tr '\n' '|' <<<"$out")"; fi
