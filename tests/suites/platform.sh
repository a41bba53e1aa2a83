#!/usr/bin/env bash
# Platform tests: scripts/ulpt-run boots the guest, runs a command, streams its output and
# returns its exit status; failures of every kind give a clear message and a non-zero status.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "1..14"

out=$("$run" --no-share -- uname -a 2>&1); rc=$?
tap_check $([ $rc = 0 ] && [[ "$out" == Linux*6.1*x86_64* ]]; echo $?) "uname -a prints a Linux 6.1 banner and exits 0 ($out)"

"$run" --no-share -- false >/dev/null 2>&1; rc=$?
tap_check $([ $rc = 1 ]; echo $?) "false exits non-zero (got $rc)"

out=$("$run" --no-share -- sh -c "echo \"it's a \$0\"; exit 7" 'quoted arg' 2>&1); rc=$?
tap_check $([ $rc = 7 ] && [ "$out" = "it's a quoted arg" ]; echo $?) "arguments survive quoting and exit status 7 travels back (rc=$rc, out=$out)"

cat > "$tmp/hello.c" <<'C'
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) { char d[256]; printf("host-built %s in %s\n", argc > 1 ? argv[1] : "?", getcwd(d, sizeof d)); return 5; }
C
gcc -static -O2 -o "$tmp/hello" "$tmp/hello.c"
real=$(cd "$tmp" && pwd -P)
out=$("$run" --share "$tmp" -- ./hello arg 2>&1); rc=$?
tap_check $([ $rc = 5 ] && [ "$out" = "host-built arg in $real" ]; echo $?) "--share runs a host-compiled static program in the share, at its host path (rc=$rc, out=$out)"

out=$(cd "$tmp" && "$run" -- ./hello cwd 2>&1); rc=$?
tap_check $([ $rc = 5 ] && [ "$out" = "host-built cwd in $real" ]; echo $?) "the current directory is shared by default and is the working directory"

out=$("$run" --isolated --share "$tmp" -- /mnt/host/hello arg 2>&1); rc=$?
tap_check $([ $rc = 5 ] && [ "$out" = "host-built arg in /mnt/host" ]; echo $?) "--isolated: the share is at /mnt/host, the working directory (rc=$rc, out=$out)"

"$run" --share "$tmp" -- sh -c 'echo from-guest > written' >/dev/null 2>&1
tap_check $([ "$(cat "$tmp/written" 2>/dev/null)" = from-guest ]; echo $?) "the guest can write into the shared directory"

out=$("$run" --no-share --smp 2 -- nproc 2>&1); rc=$?
tap_check $([ $rc = 0 ] && [ "$out" = 2 ]; echo $?) "--smp 2 gives the guest two CPUs (nproc=$out)"

out=$("$run" --no-share --mem 256M -- sh -c "awk '/MemTotal/ {print \$2}' /proc/meminfo" 2>&1)
tap_check $([ "${out:-0}" -gt 200000 ] && [ "${out:-0}" -le 262144 ]; echo $?) "--mem 256M sizes guest memory (MemTotal ${out} kB)"

out=$("$run" --no-share --timeout 5 -- sleep 600 2>&1); rc=$?
tap_check $([ $rc = 124 ] && [[ "$out" == *"timed out after 5s"* ]]; echo $?) "a hang past --timeout stops with status 124 and a message (rc=$rc)"

out=$("$run" --no-share --append "rdinit=/nonexistent init=/nonexistent" -- true 2>&1); rc=$?
tap_check $([ $rc = 126 ] && [[ "$out" == *"guest kernel panicked"* ]]; echo $?) "a guest kernel panic gives status 126 and a message (rc=$rc)"

out=$(ULPT_KERNEL=$tmp/no-such-kernel "$run" -- true 2>&1); rc=$?
tap_check $([ $rc = 125 ] && [[ "$out" == *"build output missing"* ]]; echo $?) "a missing build output gives status 125 and names it (rc=$rc)"

out=$("$run" --bogus -- true 2>&1); rc=$?
tap_check $([ $rc = 125 ] && [[ "$out" == *"unknown option"* ]]; echo $?) "an unknown option gives status 125 and a message (rc=$rc)"

out=$("$run" --no-share --cpu max -- ulpt-info 2>&1); rc=$?
tap_check $([ $rc = 0 ] && [[ "$out" == *"cpuid ulpt:    no"* ]]; echo $?) "--cpu max boots the same guest on a stock CPU model"
[ "$tap_fails" = 0 ]
