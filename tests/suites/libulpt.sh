#!/usr/bin/env bash
# libulpt's suite (libulpt/test/ulpt-test.c) on every backend where it runs: the mprotect
# backend on the host; both backends in the guest on -cpu ulpt; on -cpu max the mprotect backend,
# and the ULPT backend reports itself unavailable. Then the example on the host and the guest,
# and pkg-config against an installed copy; gdb's bt through the entry stub.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
t=$top/build/libulpt/test/ulpt-test
ex=$top/build/examples/watch-write
# libulpt's runs are sub-streams (tests/lib/tap-sub.sh) that tests/tap-run checks and merges;
# this suite's own plan counts the 8 checks below.
. "$top/tests/lib/tap-sub.sh"
echo "1..8"
rc=0
guest_runs=". '$top/tests/lib/tap-sub.sh'; tap_sub ulpt '$t' ulpt; a=\$?; tap_sub mprotect '$t' mprotect; exit \$((a | \$?))"
tap_sub host "$t" mprotect || rc=1
tap_sub "guest -cpu ulpt" "$run" --no-share --smp 2 -- sh -c "$guest_runs" || rc=1
tap_sub "guest -cpu max" "$run" --no-share --cpu max -- sh -c "$guest_runs" || rc=1
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin

out=$("$ex" 2>&1)
tap_check $([[ "$out" == *"backend: mprotect"*"buffer + 100"*"buffer[100] = 'x'"* ]]; echo $?) "example on the host: caught the write, let it through"
out=$("$run" --no-share -- "$ex" 2>&1)
tap_check $([[ "$out" == *"backend: ulpt"*"write of 1 bytes"*"buffer + 100"*"buffer[100] = 'x'"* ]]; echo $?) "example in the guest on the ULPT backend"
inst=$(mktemp -d "$top/build/inst.XXXXXX")
make -s -C "$top" install PREFIX="$inst" >/dev/null 2>&1
flags=$(PKG_CONFIG_PATH=$inst/lib/pkgconfig pkg-config --cflags --libs libulpt 2>&1)
tap_check $([[ "$flags" == "-I$inst/include -L$inst/lib -lulpt"* ]]; echo $?) "pkg-config --cflags --libs libulpt after make install ($flags)"
gcc -o "$inst/ex" "$top/examples/watch-write.c" $flags -Wl,-rpath,"$inst/lib" 2>&1 && out=$("$inst/ex" 2>&1)
tap_check $([[ "$out" == *"buffer[100] = 'x'"* ]] && [ -f "$inst/share/man/man3/ulpt_protect.3" ]; echo $?) \
   "the example builds against the installed library with pkg-config; man pages installed"
out=$("$inst/bin/ulpt-watch" -w watched -- "$top/build/watchlib/test/progs/counts" 2>&1)
tap_check $([[ "$out" == *"counts: ok"*"watched"*"0 reads, 2000 writes"* ]] && [ -f "$inst/share/man/man1/ulpt-watch.1" ]; echo $?) \
   "the installed ulpt-watch finds its installed agent; its man page is installed"
rm -rf "$inst"

# gdb's bt at a handler goes through libulpt's entry stub (the fault) and its after trampoline
# (ULPT_PERMIT_STEP's after-call) into the program: the CFI of libulpt/src/entry.S.
out=$("$run" --no-share -- gdb -nx -batch -ex 'set follow-fork-mode child' -ex 'break unwind_handler' \
  -ex run -ex bt -ex continue -ex bt -ex continue --args "$t" ulpt unwind 2>&1)
bts=$(printf '%s\n' "$out" | awk '/^#[0-9]/ { printf "%s ", $0 } /hit Breakpoint/ { printf "\n" }')
tap_check $(printf '%s\n' "$bts" | grep -q 'ulpt_dispatch_.*ulpt_entry_[a-z]*_ ().*in unwind_victim .*in t_unwind .*in main'; echo $?) \
   "gdb bt in a handler: through the entry stub into the faulting function and its callers"
tap_check $(printf '%s\n' "$bts" | grep -q 'ulpt_after_tramp_ ().*in unwind_victim .*in t_unwind .*in main' &&
     [[ "$out" == *"ok 1 - ulpt: unwind"* ]]; echo $?) \
   "gdb bt in an after-call: through the after trampoline into the program, which then passes"
# gdb's stepi over a store that faults into the handler: the handler and the after-call run
# and the step stops at the next instruction (R-RET-4's TRAP; no SIGTRAP of the library's).
out=$("$run" --no-share -- gdb -nx -batch -ex 'set follow-fork-mode child' -ex 'break gdb_step_store' \
  -ex run -ex stepi -ex 'p gdb_after' -ex 'x/i $pc' -ex continue --args "$t" ulpt gdb_step 2>&1)
tap_check $([[ "$out" == *'$1 = 2'*'=> 0x'*'<gdb_step_store+'*'>:'*'nop'*"ok 1 - ulpt: gdb_step"* ]]; echo $?) \
   "gdb stepi over a store that faults into the handler stops at the next instruction, after the after-call"
[ "$tap_fails" = 0 ] || rc=1
exit $rc
