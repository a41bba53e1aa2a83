#!/usr/bin/env bash
# Unit test of tests/lib/tap-checks.sh, the checks of every shell suite: the exact TAP it
# prints streamed and kept for the end, a failed check's diagnostics (and only a failed one's),
# skips, the failure count, under POSIX sh with unset variables an error (as the suites run).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$top/tests/lib/tap-checks.sh"
# script NAME BODY: a sh -u script sourcing the helper; its output is NAME.out.
script() {
  printf '. %s/tests/lib/tap-checks.sh\n%s\n' "$top" "$2" > "$tmp/$1"
  sh -u "$tmp/$1" > "$tmp/$1.out" 2>&1
}
same() { # DESC FILE EXPECTED
  tap_check "$([ "$(cat "$2")" = "$3" ]; echo $?)" "$1" "$(printf '%s\n' "$3" | diff -u - "$2")"
}
tap_checks_begin
echo 1..5

script stream 'tap_checks_begin
tap_check 0 "passes" "not shown"
tap_check 1 "fails" "first
second"
tap_skip "not here"
tap_checks_end
echo "fails $tap_fails"'
same "streamed: each line at once, a failed check's diagnostics as comments, the plan at the end" \
  "$tmp/stream.out" 'ok 1 - passes
not ok 2 - fails
# first
# second
ok 3 # SKIP not here
1..3
fails 1'

script kept 'tap_checks_begin "$0.tap"
tap_check 0 "one"
tap_note "# a note"
tap_check 3 "two"
echo "before the end"
tap_checks_end
echo "fails $tap_fails"'
same "kept in a file: nothing before tap_checks_end, then the plan and the checks in order" \
  "$tmp/kept.out" 'before the end
1..2
ok 1 - one
# a note
not ok 2 - two
fails 1'

script plan 'echo 1..2
tap_checks_begin
tap_check 0 "a"
tap_check 0 "b"
echo "fails $tap_fails"'
same "a fixed plan printed first: checks numbered from 1, no failure counted" \
  "$tmp/plan.out" '1..2
ok 1 - a
ok 2 - b
fails 0'

# Through tests/tap-run, as a suite's checks are counted.
printf '#!/bin/sh\n. %s/tests/lib/tap-checks.sh\ntap_checks_begin\ntap_check 0 a\ntap_check 1 b\ntap_skip c\ntap_checks_end\n[ "$tap_fails" = 0 ]\n' \
  "$top" > "$tmp/suite"
chmod +x "$tmp/suite"
out=$("$top/tests/tap-run" --summary "$tmp/suite" 2>&1); rc=$?
tap_check "$([ "$(tail -n1 <<<"$out")" = "1 passed, 1 failed, 1 skipped" ] && [ $rc = 1 ]; echo $?)" \
  "tests/tap-run counts a suite's checks: 1 passed, 1 failed, 1 skipped, status 1" "$out"
sed -i 's/tap_check 1 b/tap_check 0 b/' "$tmp/suite"
out=$("$top/tests/tap-run" --summary "$tmp/suite" 2>&1); rc=$?
tap_check "$([ "$(tail -n1 <<<"$out")" = "2 passed, 0 failed, 1 skipped" ] && [ $rc = 0 ]; echo $?)" \
  "...and a suite whose checks pass exits 0" "$out"
[ "$tap_fails" = 0 ]
