#!/usr/bin/env bash
# CPU tests without a kernel: bare-metal images (tests/baremetal) booted with PVH on
# -cpu ulpt, on -cpu max for the enumeration rules, and on two vCPUs (multi-threaded TCG)
# for cross-CPU coherence, through scripts/ulpt-baremetal. They print TAP on port 0xE9.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run() { # cpu image [smp]
  "$top/scripts/ulpt-baremetal" --cpu "$1" --smp "${3:-1}" "$top/build/baremetal/$2.elf" ||
    { echo "# $2 on -cpu $1 failed"; return 1; }
}
{
  rc=0
  run ulpt ulpt-cpu || rc=1
  run max ulpt-cpu || rc=1
  run ulpt ulpt-smp 2 || rc=1
  exit $rc
} | sed -e '/^1\.\.[0-9]*$/d' -e 's/^\(not \)\{0,1\}ok [0-9]* - /\1ok - /'
