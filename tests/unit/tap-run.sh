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
n=0
check() { # name expected-summary args...
  local name=$1 want=$2; shift 2
  local out; out=$("$top/tests/tap-run" --summary "$@" 2>&1)
  n=$((n + 1))
  if [ "$(tail -n1 <<<"$out")" = "$want" ]; then echo "ok $n - $name"; else echo "not ok $n - $name: got '$(tail -n1 <<<"$out")', want '$want'"; fi
}
echo 1..9
check "all passing" "2 passed, 0 failed" "$tmp/pass"
check "a failing test counts" "1 passed, 1 failed" "$tmp/fail"
check "fewer tests than planned fails" "1 passed, 1 failed" "$tmp/short"
check "non-zero exit without failures fails" "1 passed, 1 failed" "$tmp/crash"
check "a program that runs no test fails" "0 passed, 1 failed" "$tmp/empty"
check "skips are counted apart" "0 passed, 0 failed, 1 skipped" "$tmp/skip"
check "TODO failures do not fail" "1 passed, 0 failed" "$tmp/todo"
check "non-TAP output is kept as comments" "1 passed, 0 failed" "$tmp/noise"
check "arguments in the same word reach the program" "3 passed, 0 failed" "$tmp/pass" "$tmp/args x"
