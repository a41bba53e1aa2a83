#!/usr/bin/env bash
# Unit test of the by-name runner of the host and guest C tests (tap_run in tests/lib/tap.h):
# `prog NAME` runs that test only (a rule runs every test named after it), `prog --list` lists
# the names, an unknown name fails, and a test that makes another number of checks than it
# declares fails the run; tap-fork.h's forked tests: a crash or a hang fails that test only, a
# skip is a skip. Then the same on real programs: build/tests/unit/ulpt-core, libulpt's
# ulpt-test and watchlib's wl-api.
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
echo 1..16
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
cat > "$tmp/f.c" <<'C'
#include "tap-fork.h"
static int pass(void) { return 0; }
static int crash(void) { *(volatile int *)0 = 1; return 0; }
static int hang(void) { for (;;) pause(); return 0; }
static int skipped(void) { return TAP_SKIP_STATUS; }
static void t_pass(void) { tap_forked(pass, 0, "passes"); }
static void t_crash(void) { tap_forked(crash, 0, "crashes"); }
static void t_hang(void) { tap_forked(hang, 1, "hangs"); }
static void t_skip(void) { tap_forked(skipped, 0, "skips"); }
static const struct test_case t[] = {
    { "crash", t_crash, 1 }, { "hang", t_hang, 1 }, { "skip", t_skip, 1 }, { "pass", t_pass, 1 },
};
int main(int argc, char **argv) { return tap_run(t, TAP_NTESTS(t), argc - 1, argv + 1); }
C
"${CC:-cc}" -Wall -Wextra -Werror -I"$top/tests/lib" -o "$tmp/f" "$tmp/f.c"; r=$?
out=$("$tmp/f"); rf=$?
check "tap_forked: a crash and a hang fail their tests only, the next ones run (a skip, a pass); the run fails" \
  test "$r:$rf:$(grep -E '^(not )?ok' <<<"$out" | sed -E 's/ [(].*//' | tr '\n' '|')" = \
  "0:1:not ok 1 - crashes|not ok 2 - hangs|ok 3 - skips # SKIP see above|ok 4 - passes|"
check "tap_forked: a crashed test names its signal" \
  bash -c 'grep -q "^not ok 1 - crashes (killed by signal 11, " <<<"$1" && grep -q "^not ok 2 - hangs (killed by signal 14, timeout)" <<<"$1"' _ "$out"
ut=$top/build/libulpt/test/ulpt-test wa=$top/build/watchlib/test/wl-api
out=$("$ut" mprotect skip); r=$?
check "ulpt-test mprotect skip runs its one check only" \
  test "$r:$(grep -cE '^(not )?ok' <<<"$out"):$(grep -c '^ok 1 - mprotect: skip: ' <<<"$out"):$(head -1 <<<"$out")" = "0:1:1:1..1"
check "ulpt-test --list and wl-api --list name their tests" \
  bash -c '"$1" --list | grep -qx step_ptrace && [ "$("$1" --list | wc -l)" = 64 ] && "$1" --list | grep -qx permit_signals && "$2" --list | grep -qx bad_args && [ "$("$2" --list | wc -l)" = 9 ]' _ "$ut" "$wa"
check "ulpt-test and wl-api: an unknown name fails (Bail out!, status 2)" \
  bash -c '"$1" mprotect nosuch | grep -q "^Bail out!"; a=${PIPESTATUS[0]}; "$2" mprotect nosuch | grep -q "^Bail out!"; [ "$a:${PIPESTATUS[0]}" = 2:2 ]' _ "$ut" "$wa"
