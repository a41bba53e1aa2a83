#!/usr/bin/env bash
# The kernel API fuzzer (tests/guest/ulpt-fuzz.c: random ARCH_ULPT_* calls with hostile
# arguments, the view and restricted memory through mmap/munmap/mremap/mprotect/madvise/brk,
# fork, exec, threads, signals and deaths inside the handler, PTRACE_ARCH_PRCTL) on two vCPUs,
# booted alone (--isolated): its regression list, then random sequences for ULPT_FUZZ_SECONDS
# (default 40: make test's budget) from seed ULPT_FUZZ_SEED (default 1 here: make test runs
# the same sequences each time; make fuzz-kernel passes a new one), then the oracles: every
# errno as docs/linux-api.md says, table memory back, no kernel report in the log (with
# kmemleak, KASAN and lockdep on the debug kernel: ULPT_KERNEL, which make fuzz-kernel sets).
# The fuzzer's last lines give the sequences run and each distinct failure with its seed and
# sequence number (rerun one: ulpt-fuzz --seed S --seq N in the guest).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
t=/usr/libexec/ulpt-tests
secs=${ULPT_FUZZ_SECONDS:-40}
seed=${ULPT_FUZZ_SEED:-1}
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "Bail out! ULPT_FUZZ_SECONDS: '$secs' is not a number of seconds"; exit 2; }
[ -n "${ULPT_FUZZ_SEED+x}" ] && [ -z "$ULPT_FUZZ_SEED" ] && seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
[[ "$seed" =~ ^[0-9]+$ ]] || { echo "Bail out! ULPT_FUZZ_SEED: '$seed' is not a number"; exit 2; }
# The sequences running at the deadline finish (the debug kernel is several times slower).
exec "$top/scripts/ulpt-run" --isolated --no-share --smp 2 --mem 1G --timeout $((secs * 2 + 600)) -- \
  "$t/ulpt-fuzz" --seed "$seed" --seconds "$secs"
