#!/usr/bin/env bash
# CPU tests without a kernel: bare-metal images (tests/baremetal) booted with PVH on
# -cpu ulpt, on -cpu max for the enumeration rules, and on two vCPUs (multi-threaded TCG)
# for cross-CPU coherence. They print TAP on port 0xE9 and
# exit through isa-debug-exit ((status << 1) | 1: 1 = all passed).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
qemu=$top/build/qemu/obj/qemu-system-x86_64
run() { # cpu image [smp]
  timeout 120 "$qemu" -M pc -accel tcg,thread=multi -cpu "$1" -smp "${3:-1},sockets=${3:-1}" -m 128M -nodefaults \
    -display none -no-reboot -chardev stdio,id=dbg -device isa-debugcon,iobase=0xe9,chardev=dbg \
    -device isa-debug-exit,iobase=0xf4,iosize=4 -kernel "$top/build/baremetal/$2.elf" </dev/null
  local rc=$?
  [ $rc -eq 1 ] || { echo "# $2 on -cpu $1: QEMU exit status $rc"; return 1; }
}
{
  rc=0
  run ulpt ulpt-cpu || rc=1
  run max ulpt-cpu || rc=1
  run ulpt ulpt-smp 2 || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* - /\1ok - /'
