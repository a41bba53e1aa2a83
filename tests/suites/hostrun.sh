#!/usr/bin/env bash
# The guest runs the host's programs as the host would (scripts/ulpt-run without --isolated):
# dynamically linked binaries and Debian's tools at their paths, the share read-write at its
# own path, the rest of the host read-only, stdin/stdout/stderr byte-exact and separate, exit
# statuses (signals as 128+N), --env, --isolated, and ulpt-run from any directory or installed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
# Scratch space the guest can see: not under /tmp, which is the guest's own.
tmp=$(mktemp -d "$top/build/hostrun.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
echo "1..22"

printf '#include <stdio.h>\nint main(void) { puts("hello, dynamic"); return 3; }\n' > hello.c
gcc -O2 -o hello hello.c
out=$("$run" -- ./hello 2>&1); rc=$?
ok $([ $rc = 3 ] && [ "$out" = "hello, dynamic" ]; echo $?) "a dynamically linked program built with plain gcc runs (rc=$rc, out=$out)"

out=$("$run" -- perl -e 'print 1+1' 2>&1)
ok $([ "$out" = 2 ]; echo $?) "perl starts (out=$out)"
out=$("$run" -- python3 -c 'print(2)' 2>&1)
ok $([ "$out" = 2 ]; echo $?) "python3 starts (out=$out)"
out=$("$run" -- gdb --batch -ex 'show version' 2>&1 | head -n1)
ok $([[ "$out" == "GNU gdb"* ]]; echo $?) "gdb starts ($out)"
out=$("$run" -- valgrind --version 2>&1)
ok $([[ "$out" == valgrind-* ]]; echo $?) "valgrind starts ($out)"
out=$("$run" -- sqlite3 :memory: 'select 1+1' 2>&1)
ok $([ "$out" = 2 ]; echo $?) "sqlite3 starts ($out)"

out=$(echo data | "$run" -- wc -c 2>&1)
ok $([ "$out" = 5 ]; echo $?) "stdin reaches the command: echo data | ulpt-run -- wc -c prints 5 ($out)"
out=$("$run" -- sh -c 'echo out; echo err >&2' 2>/dev/null)
ok $([ "$out" = out ]; echo $?) "stdout alone on stdout ($out)"
out=$("$run" -- sh -c 'echo out; echo err >&2' 2>&1 >/dev/null)
ok $([ "$out" = err ]; echo $?) "stderr alone on stderr ($out)"
"$run" -- cat /bin/true | cmp -s - /bin/true
ok $? "binary output is byte-exact: cat /bin/true | cmp - /bin/true"
head -c 300000 /dev/urandom > blob
"$run" -- cat < blob | cmp -s - blob
ok $? "300 kB of binary stdin comes back byte-exact"

"$run" -- false; rc1=$?
"$run" -- sh -c 'exit 42'; rc2=$?
"$run" -- sh -c 'kill -TERM $$' 2>/dev/null; rc3=$?
"$run" -- sh -c 'kill -KILL $$' 2>/dev/null; rc4=$?
ok $([ $rc1 = 1 ] && [ $rc2 = 42 ] && [ $rc3 = 143 ] && [ $rc4 = 137 ]; echo $?) \
   "exit statuses: false 1, exit 42, SIGTERM 143, SIGKILL 137 (got $rc1 $rc2 $rc3 $rc4)"

"$run" -- sh -c 'echo from-guest > written; mkdir -p sub && echo deep > sub/f' 2>&1
ok $([ "$(cat written 2>/dev/null)" = from-guest ] && [ "$(cat sub/f 2>/dev/null)" = deep ]; echo $?) \
   "files written in the share appear on the host"
out=$("$run" -- sh -c "pwd; echo x > '$top/README.md.guest' || echo refused; echo y > /etc/ulpt-guest-write || echo refused" 2>/dev/null)
ok $([ "$out" = "$(pwd -P)
refused
refused" ] && [ ! -e "$top/README.md.guest" ] && [ ! -e /etc/ulpt-guest-write ]; echo $?) \
   "the share is the working directory; writes outside it fail and reach nothing ($(echo $out))"
out=$("$run" -- sh -c 'echo t > /tmp/own && cat /tmp/own && test ! -e /tmp/'"${tmp##*/}" 2>&1)
ok $([ "$out" = t ] && [ ! -e /tmp/own ]; echo $?) "the guest's /tmp is its own ($out)"

out=$("$run" --isolated --no-share -- sh -c 'ls /usr/bin/perl /etc/debian_version 2>&1 | wc -l; test -e /usr/bin/perl && echo host-visible' 2>&1)
ok $([ "$out" = 2 ] || [[ "$out" != *host-visible* ]]; echo $?) "--isolated sees no host files ($out)"

out=$("$run" --env FOO=bar --env 'SPACED=a b' -- sh -c 'echo "$FOO|$SPACED|$HOME"' 2>&1)
ok $([ "$out" = "bar|a b|/tmp" ]; echo $?) "--env passes variables; HOME is /tmp ($out)"
"$run" --env 1BAD=x -- true 2>/dev/null; rc=$?
ok $([ $rc = 125 ]; echo $?) "--env with a bad name is a usage error (rc=$rc)"
out=$("$run" -- sh -c 'command -v ulpt-info; echo "$PATH"' 2>&1)
ok $([[ "$out" == */ulpt-info*/usr/bin* ]]; echo $?) "PATH has Debian's directories and the ULPT guest programs"

out=$(cd / && "$run" --share "$tmp" -- ./hello 2>&1); rc=$?
ok $([ $rc = 3 ] && [ "$out" = "hello, dynamic" ]; echo $?) "ulpt-run works from another directory (rc=$rc)"
out=$(cd / && "$run" --no-share -- sh -c 'pwd; { echo x > /f; } 2>/dev/null || echo ro' 2>&1)
ok $([ "$out" = "/
ro" ]; echo $?) "--no-share: the current directory, read-only ($(echo $out))"

make -s -C "$top" install PREFIX="$tmp/inst" >/dev/null 2>&1
out=$(cd / && "$tmp/inst/bin/ulpt-run" --share "$tmp" -- sh -c './hello; ulpt-info | head -n1' 2>&1)
ok $([[ "$out" == "hello, dynamic"*"kernel:"*6.1* ]]; echo $?) "make install PREFIX=...: the installed ulpt-run runs programs ($(echo $out | head -c 80))"
