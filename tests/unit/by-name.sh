#!/usr/bin/env bash
# Unit test of the by-name runner of the host and guest C tests (tap_run in tests/lib/tap.h):
# `prog NAME` runs that test only (a rule runs every test named after it), `prog --list` lists
# the names, an unknown name fails, and a test that makes another number of checks than it
# declares fails the run. Then the same on a real program, build/tests/unit/ulpt-core.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/t.c" <<'C'
#include "tap.h"
static void one(void) { tap_ok(1, "one"); }
static void two_a(void) { tap_ok(1, "two a"); tap_ok(1, "two a again"); }
static void two_b(void) { tap_ok(1, "two b"); }
static void short_(void) { tap_ok(1, "short: one of two"); }
static const struct test_case t[] = {
    { "R-ONE-1", one, 1 }, { "R-TWO-1:a", two_a, 2 }, { "R-TWO-1:b", two_b, 1 }, { "short", short_, 2 },
};
int main(int argc, char **argv) { return tap_run(t, TAP_NTESTS(t), argc - 1, argv + 1); }
C
n=0
check() { # description command...
  local d=$1; shift
  n=$((n + 1))
  if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fi
}
echo 1..11
check "the runner compiles (tests/lib/tap.h)" \
  "${CC:-cc}" -Wall -Wextra -Werror -I"$top/tests/lib" -o "$tmp/t" "$tmp/t.c"
check "--list prints the names, one a line, and runs nothing" \
  test "$("$tmp/t" --list | tr '\n' ' ')" = "R-ONE-1 R-TWO-1:a R-TWO-1:b short "
out=$("$tmp/t" R-ONE-1); r=$?
check "NAME runs that test only: plan 1, one check, exit 0" \
  test "$r:$(grep -vE '^#' <<<"$out" | tr '\n' '|')" = "0:1..1|ok 1 - one|"
out=$("$tmp/t" R-TWO-1); r=$?
check "a rule runs every test named after it (R-TWO-1:a and R-TWO-1:b)" \
  test "$r:$(grep -c '^ok' <<<"$out"):$(grep -c '^# R-TWO-1:' <<<"$out"):$(head -1 <<<"$out")" = "0:3:2:1..3"
out=$("$tmp/t" R-TWO-1:b R-ONE-1); r=$?
check "several names run in table order" \
  test "$r:$(grep '^ok' <<<"$out" | tr '\n' '|')" = "0:ok 1 - one|ok 2 - two b|"
out=$("$tmp/t" R-NONE-1); r=$?
check "an unknown name fails (Bail out!, non-zero exit, nothing run)" \
  test "$r:$(grep -c '^ok' <<<"$out"):$(grep -c '^Bail out! no test named "R-NONE-1"' <<<"$out")" = "2:0:1"
check "a prefix that is not a whole rule is unknown" \
  bash -c '! "$1" R-TWO >/dev/null' _ "$tmp/t"
out=$("$tmp/t" short); r=$?
check "a test that makes fewer checks than it declares fails the run" \
  test "$r:$(grep -c '^# short made 1 checks, declares 2' <<<"$out")" = "1:1"
check "through tap-run, an unknown name counts as a failure" \
  test "$("$top/tests/tap-run" --summary "$tmp/t R-NONE-1" | tail -1)" = "0 passed, 1 failed"
core=$top/build/tests/unit/ulpt-core
out=$("$core" R-TBL-3); r=$?
check "ulpt-core R-TBL-3 runs its one check only" \
  test "$r:$(grep -cE '^(not )?ok' <<<"$out"):$(grep -c '^ok 1 - addresses at or above 2^47' <<<"$out")" = "0:1:1"
check "ulpt-core --list names R-TBL-2 and R-DEL-1:frame" \
  bash -c '"$1" --list | grep -qx R-TBL-2 && "$1" --list | grep -qx R-DEL-1:frame' _ "$core"
