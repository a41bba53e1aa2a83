#!/usr/bin/env bash
# QEMU's gdbstub on a page with ULPT line rights (issue: the inline line check must leave the
# gdbstub's watchpoints to QEMU's slow path): GDB attaches to a bare-metal machine stopped at
# reset, sets a hardware watchpoint on 8 bytes of a page whose line 31 denies writes (the
# "gdbstub-target" test of tests/baremetal/ulpt-cpu.c, which warms the page's TLB entry first),
# and the watchpoint must stop the guest at the storing instruction with the old and the new
# value, as on any other page. Then the machine runs to its end and its own check passes.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
image=$top/build/baremetal/ulpt-cpu.elf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${qpid:-}" ] && kill "$qpid" 2>/dev/null' EXIT
sock=$tmp/gdb.sock
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin
echo "1..2"
"$top/scripts/ulpt-baremetal" --timeout 120 --append gdbstub-target --qemu-arg -S \
  --qemu-arg -chardev --qemu-arg "socket,path=$sock,server=on,wait=off,id=gdb0" \
  --qemu-arg -gdb --qemu-arg chardev:gdb0 "$image" > "$tmp/machine.out" 2>&1 &
qpid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
out=$(timeout 120 gdb -nx -batch -ex "set pagination off" -ex "file $image" \
        -ex "target remote $sock" -ex "watch -l *(long *)(gdb_page + 8)" -ex continue \
        -ex continue 2>&1)
grep -q '^Old value = 0$' <<<"$out" && grep -q '^New value = 8$' <<<"$out" &&
  grep -qE '^u_store \(.*\) at .*ulpt-cpu\.c' <<<"$out"
tap_check $? "a gdbstub watchpoint on a warm page with line rights stops the guest at the store (old 0, new 8)" "$out"
wait "$qpid"; rc=$?
qpid=
[ "$rc" = 0 ] && grep -q '^ok 1 - ' "$tmp/machine.out"
tap_check $? "after the watchpoint the machine runs on and its own check passes" "status $rc
$(cat "$tmp/machine.out")"
[ "$tap_fails" = 0 ]
