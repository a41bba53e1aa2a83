#!/usr/bin/env bash
# watchlib and ulpt-watch: the test programs of watchlib/test/progs run under ulpt-watch on the
# host (mprotect backend) and in the guest (ULPT backend; one boot, 2 vCPUs), each run's JSON
# report, output and status checked against its expectations in watchlib/test/expected/:
#   counts     exact reads and writes of an int among hot neighbours (-w SYMBOL, /rw, mode w,
#              SYMBOL:LEN), and by address (-w 0xADDR:LEN) on a -no-pie build made here;
#              in the guest also with --backend mprotect
#   heap       --heap=rw, C and C++: the allocations made by the program, plus at most 3 of
#              libc's and libstdc++'s own (stdout's buffer, the exception pool); reads and
#              writes at least the program's own and at most 400 more (libc's clearing and
#              copying inside calloc and realloc, printf's stores into stdout's buffer)
#   deliveries --heap=w and --heap=rw with --delivery=count (and the default), =log and =fault:
#              the same exact counts (calloc, a realloc past the log's threshold, stores
#              across into an untouched page, read-modify-writes: a read and a write each,
#              SSE stores and loads, a block freed)
#   bigblocks   --heap=rw on blocks of 1 to 3 MiB, each delivery: exact reads and writes
#   sysread    --heap=w, each delivery: read(2) into a watched block gets its data; the
#              kernel's write is one write on mprotect (userfaultfd; in the guest too), none
#              on ULPT (it does not check the kernel's accesses)
#   heapthreads --heap=rw in 4 threads, each delivery: the same counts, exactly the threads'
#              own and a few of glibc's; with count every thread has its share of the table
#   heapbugs   --check: one report per bug (far ones too: into heap memory not handed out
#              yet, against the last block), with kind, access, address, size, block, the bad
#              access's line in main's frame, main in the allocation (and free) backtraces
#   strbugs    --check: each checked libc function (memcpy ... strndup) one byte outside its
#              block, past its end and before its start: one report at that byte, "in" the function, from main's line; and all of
#              them within their blocks: no error
#   wcsbugs    the same for the wide functions (wmemcpy ... wcsdup, swprintf, vswprintf) and
#              the multibyte converters, one wchar_t (a narrow buffer: one byte) outside; a
#              converter's count from an unterminated source, its stop at an invalid
#              character; all of them within blocks of every string length 0..99: no error
#   fortbugs   the same for a program built with -O2 -D_FORTIFY_SOURCE=2, whose calls go to
#              glibc's fortified entry points (__memcpy_chk ... __wcsnrtombs_chk): each one
#              element outside its block, "in" the entry point, from main's line; a copy that
#              glibc aborts is reported first; all of them within blocks of sizes 1..40: no error
#   dlopens    --check on dlopen of libraries (the loader's unreplaceable string routines)
#   clean      --check on a correct program doing tricky things: no error, status 0, output kept
#   sigmalloc  --check on a program that allocates in a signal handler: no deadlock, no error
#   sigmask    --check on a program that changes its signal mask: as without the agent
#   badargs    --check: bad arguments to the malloc family: NULL with ENOMEM and a warning
#              for a size that overflows or cannot be served, EINVAL for a bad alignment, an
#              error for malloc_usable_size or realloc of a pointer malloc never returned
#   mismatch   --check: each release by the wrong family (malloc, new, new[] against free,
#              delete, delete[]) reported once with both stacks; every new/delete variant used
#              rightly, no error
#   ownsegv    a program installing its own SIGSEGV and SIGTRAP handlers after the agent started
#              (also under -v, whose after-calls must not reach its SIGTRAP handler)
#   threads    4 threads on watched ints of one line, in the guest (2 vCPUs): exact counts
#   leaks      --check's leak check at exit: direct and indirect leaks, a lost cycle, none when
#              all is reachable, at _exit, at abort, in a forked child; --leaks, verdicts
#   supp-*     --suppressions by function, anchored, by source file; a bad rule; and
#              --gen-suppressions
#   exit3      the program's exit status passes through
#   *-context  --malloc-context-size: 0 (a leak without a stack), 2 (a leak's first two frames),
#              3 (a use-after-free's allocation and release; the access's stack is not cut);
#              256 under a bare LD_PRELOAD refused
# then watchlib/test/wl-api (the C API) on both backends, watchlib/test/wl-stack (the stacks of
# malloc and free against libunwind's) on the host, and watchlib/test/cli.sh if present.
# The runs write NAME.json, .out, .err and .rc under build/watchlib/test/suite/{host,guest}
# (kept for inspection; the guest writes there through --share); each is checked against
# watchlib/test/expected/NAME.pred (see below and watchlib/test/expect.py), and a few canonical
# --check reports also against NAME.stderr.exp, literal text after watchlib/test/filter-report.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
tool=$top/build/watchlib/ulpt-watch
progs=$top/build/watchlib/test/progs
api=$top/build/watchlib/test/wl-api
wlstack=$top/build/watchlib/test/wl-stack
agent=$top/build/watchlib/libulpt-watch-agent.so
d=$top/build/watchlib/test/suite
rm -rf "$d" && mkdir -p "$d/host" "$d/guest" || exit 1
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin "$d/tap"

# A copy of counts built without PIE, for -w 0xADDR:LEN.
nopie=$d/counts-nopie
gcc -O1 -g -Wall -Wextra -Werror -fno-builtin -no-pie -o "$nopie" "$top/watchlib/test/progs/counts.c" \
  > "$d/nopie.log" 2>&1
addr=$(nm "$nopie" 2>/dev/null | awk '$3 == "watched" { print $1 }')
[ -n "$addr" ] && addr=$(printf '0x%x' "$((16#$addr))") || addr=0x0

# strbugs: a call of each checked libc function one byte outside its block.
strcases="memcpy-write memcpy-read memcpy-read-under strcpy-under memmove memset-under memcmp memchr strlen strnlen strcpy strncpy
strcat strncat strcmp strcoll strncmp strchr strrchr strdup strndup read write fread fwrite fgets snprintf
memcpy-write-under memmove-under memcmp-under memchr-under strlen-under strnlen-under strcpy-src-under
strncpy-under strcat-under strncat-under strcmp-under strcoll-under strncmp-under strchr-under strrchr-under
strdup-under strndup-under read-under write-under fread-under fwrite-under fgets-under snprintf-under"
strcases=$(echo $strcases)
# wcsbugs: the same for the wide functions and the multibyte converters (its source lists them).
wcscases=$(sed -n 's/^\tCASE("\([a-z-]*\)".*/\1/p' "$top/watchlib/test/progs/wcsbugs.c")
wcscases=$(echo $wcscases)
# fortbugs: glibc's fortified entry points (its source lists them).
fortcases=$(sed -n 's/^\tW\?CASE("\([a-z-]*\)".*/\1/p' "$top/watchlib/test/progs/fortbugs.c")
fortcases=$(echo $fortcases)

# mismatch: a release by the wrong family (malloc/new/new[] against free/delete/delete[]).
mmcases="malloc-delete malloc-delete-array new-free new-delete-array new-array-delete new-array-free"

# badargs: bad arguments to the malloc family (expected/badargs-CASE.pred: stdout, warnings, error).
bacases="calloc-overflow reallocarray-overflow malloc-huge memalign-bad aligned-alloc-bad posix-memalign-bad usable-size-foreign realloc-foreign"

# dlopens: libraries the build and the benchmarks need anyway (so present wherever this runs).
dllibs="libunwind.so.8 libdw.so.1 libelf.so.1 libcapstone.so.4 libjson-c.so.5 libz.so.1 liblzma.so.5
libsqlite3.so.0 libffi.so.8 libexpat.so.1 libbz2.so.1.0 libglib-2.0.so.0 libpixman-1.so.0 libm.so.6"
dllibs=$(echo $dllibs)

# The runs, the same on the host and in the guest: sh runs.sh OUTDIR [guest].
cat > "$d/runs.sh" <<EOF
o=\$1
r() {
  n=\$1; shift
  timeout -k 5 90 '$tool' --json "\$o/\$n.json" "\$@" > "\$o/\$n.out" 2> "\$o/\$n.err"
  echo \$? > "\$o/\$n.rc"
}
r counts-rw -w watched/rw -- '$progs/counts'
r counts-w -w watched -w after:8 -- '$progs/counts'
r nopie -w $addr:4/rw -- '$nopie'
# On mprotect a page denied for reads fails the system calls that read it (stdout's buffer is
# a heap block): there --heap watches writes only (see ulpt-watch.1).
hm=rw; [ "\$2" = guest ] || hm=w
r heap --heap=\$hm -- '$progs/heap'
r heapxx --heap=\$hm -- '$progs/heapxx'
# deliveries writes with write(2) from a static buffer: --heap=rw on mprotect too.
for d in count log fault; do
  r deliveries-\$d --heap=w --delivery=\$d -- '$progs/deliveries'
  r deliveries-rw-\$d --heap=rw --delivery=\$d -- '$progs/deliveries'
done
r deliveries-default --heap=w -- '$progs/deliveries'
# A system call's write into a watched block (on mprotect: userfaultfd), each delivery.
for d in count log fault; do
  r sysread-\$d --heap=w --delivery=\$d -- '$progs/sysread'
done
for d in count log fault; do
  r heapthreads-\$d --heap=rw --delivery=\$d -- '$progs/heapthreads'
  r bigblocks-\$d --heap=rw --delivery=\$d -- '$progs/bigblocks'
done
for b in overflow-write underflow-read underflow-far-read use-after-free double-free free-middle free-stack memcpy-overflow; do
  r check-\$b --check -- '$progs/heapbugs' \$b
done
r check-underflow-read-exact --check --redzone=exact -- '$progs/heapbugs' underflow-read
r check-overflow-odd-write --check -- '$progs/heapbugs' overflow-odd-write
r check-pad-write-free --check -- '$progs/heapbugs' pad-write-free
r dlopens --check -- '$progs/dlopens' $dllibs
for c in $strcases clean; do
  r strbugs-\$c --check -- '$progs/strbugs' \$c
done
for c in $wcscases clean; do
  r wcsbugs-\$c --check -- '$progs/wcsbugs' \$c
done
for c in $fortcases clean; do
  r fortbugs-\$c --check -- '$progs/fortbugs' \$c
done
r check-pad-underflow-free --check -- '$progs/heapbugs' pad-underflow-free
r check-overflow-odd-write-a1 --check --align=1 -- '$progs/heapbugs' overflow-odd-write
r clean --check -- '$progs/clean'
# dash: its strlen (glibc's AVX2 one) reads past a short string's end inside the agent's own call.
r check-dash --check -- dash -c 'x=abcdefgh; echo \$x'
for b in far-overflow-4k far-overflow-64k far-underflow-64k pad-write-realloc wild-write wild-read; do
  r check-\$b --check -- '$progs/heapbugs' \$b
done
r padding-write --check -- '$progs/padding' write
for c in $bacases; do
  r badargs-\$c --check -- '$progs/badargs' \$c
done
for c in $mmcases variants; do
  r mismatch-\$c --check -- '$progs/mismatch' \$c
done
# Verdicts: the status after error reports (twofrees makes two), and at the first with halt.
r exitcode-twofrees --check --error-exitcode=9 -- '$progs/twofrees'
r exitcode-clean --check --error-exitcode=9 -- '$progs/clean'
r halt-twofrees --check --halt-on-error -- '$progs/twofrees'
r halt-exitcode --check --halt-on-error --error-exitcode=7 -- '$progs/twofrees'
rm -f "\$o"/log-*.txt "\$o"/bare-log-*.txt
r logfile --check --error-exitcode=3 --log-file="\$o/log-%p.txt" -- '$progs/forkbug'
# Leaks at exit, and suppressions.
for c in direct list cycle none exit abort fork roots sparse; do
  r leaks-\$c --check --leaks=all -- '$progs/leaks' \$c
done
r leaks-definite --check -- '$progs/leaks' list
r leaks-off --check --leaks=none -- '$progs/leaks' direct
r leaks-exitcode --check --error-exitcode=7 -- '$progs/leaks' direct
r leaks-context-0 --check --malloc-context-size=0 -- '$progs/leaks' direct
r leaks-context-2 --check --leaks=all --malloc-context-size=2 -- '$progs/leaks' list
r check-context-3 --check --malloc-context-size=3 -- '$progs/heapbugs' use-after-free
printf '# a comment\n\nleak:leak_one\n' > "\$o/supp-leak.txt"
printf 'heap-overflow:^main\$\n' > "\$o/supp-overflow.txt"
printf 'leak:heapbugs.c\n' > "\$o/supp-file.txt"
printf 'no-such-kind:x\n' > "\$o/supp-bad.txt"
r supp-leak --check --error-exitcode=7 --suppressions="\$o/supp-leak.txt" -- '$progs/leaks' direct
r supp-overflow --check --suppressions="\$o/supp-overflow.txt" -- '$progs/heapbugs' overflow-write
r supp-file --check --suppressions="\$o/supp-file.txt" -- '$progs/heapbugs' overflow-write
r supp-bad --check --suppressions="\$o/supp-bad.txt" -- '$progs/exit3'
r gen-supp --check --gen-suppressions -- '$progs/heapbugs' overflow-write
# The rules it printed, fed back: both of its reports (the overflow, the leaked block) go.
grep -A1 '^Suppression rule' "\$o/gen-supp.err" | grep -v '^Suppression rule\|^--' > "\$o/supp-gen.txt"
r supp-gen --check --suppressions="\$o/supp-gen.txt" -- '$progs/heapbugs' overflow-write
# The agent under a bare LD_PRELOAD, its settings in ULPT_WATCH_OPTIONS (no JSON: .res is the
# result file when one is named).
bare() {
  n=\$1 opts=\$2; shift 2
  timeout -k 5 90 env ULPT_WATCH_OPTIONS="\$opts" LD_PRELOAD='$agent' "\$@" > "\$o/\$n.out" 2> "\$o/\$n.err"
  echo \$? > "\$o/\$n.rc"
}
bare bare-check check=1 '$progs/heapbugs' overflow-write
bare bare-align check=1:align=1 '$progs/heapbugs' overflow-odd-write
bare bare-heap "heap=w:result=\$o/bare-heap.res" '$progs/heap'
bare bare-backend "backend=mprotect:check=1:result=\$o/bare-backend.res" '$progs/heapbugs' overflow-write
bare bare-verbose "verbose=1:watches=a,$addr,4,w:names=watched\\:4" '$nopie'
bare bare-follow-exec follow_exec=1 '$progs/execenv'
bare bare-bad-value check=2 '$progs/exit3'
bare bare-error-exitcode check=1:error_exitcode=5 '$progs/twofrees'
bare bare-leaks check=1:leaks=all '$progs/leaks' list
bare bare-supp "check=1:suppressions=\$o/supp-leak.txt" '$progs/leaks' direct
bare bare-gen-supp check=1:gen_suppressions=1 '$progs/leaks' direct
bare bare-leaks-bad check=1:leaks=some '$progs/exit3'
bare bare-halt check=1:halt_on_error=1 '$progs/twofrees'
bare bare-log "check=1:log_file=\$o/bare-log-%p.txt" '$progs/forkbug'
bare bare-log-bad check=1:log_file=/nonexistent/dir/log '$progs/exit3'
bare bare-unknown no_such_option=1 '$progs/exit3'
bare bare-conflict heap=w:check=1 '$progs/exit3'
bare bare-context-bad check=1:malloc_context_size=256 '$progs/exit3'
if [ "\$2" = guest ]; then
  # Byte bounds (the default on ULPT) against --bounds=0's open lines and canaries.
  r padding-read --check -- '$progs/padding' read
  for b in overflow-odd-write pad-write-free pad-underflow-free pad-write-realloc underflow-read; do
    r check-\$b-nobounds --check --bounds=0 -- '$progs/heapbugs' \$b
  done
  r padding-precise-read --check --precise -- '$progs/padding' read
  r padding-precise-write --check --precise -- '$progs/padding' write
  r padding-precise-read-fault --check --precise --delivery=fault -- '$progs/padding' read
  r padding-precise-write-fault --check --precise --delivery=fault -- '$progs/padding' write
  r check-underflow-read-precise --check --precise -- '$progs/heapbugs' underflow-read
  r check-underflow-read-precise-fault --check --precise --delivery=fault -- '$progs/heapbugs' underflow-read
  r check-uaf-precise --check --precise -- '$progs/heapbugs' use-after-free
  r clean-precise --check --precise -- '$progs/clean'
  r strbugs-clean-precise --check --precise -- '$progs/strbugs' clean
  r wcsbugs-clean-precise --check --precise -- '$progs/wcsbugs' clean
  r fortbugs-clean-precise --check --precise -- '$progs/fortbugs' clean
  r dlopens-precise --check --precise -- '$progs/dlopens' $dllibs
  bare bare-precise check=1:precise=1 '$progs/heapbugs' underflow-read
  bare bare-redzone check=1:redzone=exact '$progs/heapbugs' underflow-read
fi
r clean-a1 --check --align=1 -- '$progs/clean'
r sigmalloc --check -- '$progs/sigmalloc'
r sigmask --check -- '$progs/sigmask'
r ownsegv -w counter -- '$progs/ownsegv'
r ownsegv-v -v -w counter -- '$progs/ownsegv'
r verbose -v -w code -- '$progs/exit3'
r exec -- '$progs/execenv'
r twofrees --check -- '$progs/twofrees'
r exec-follow --follow-exec -- '$progs/execenv'
r exit3 -w code/rw -- '$progs/exit3'
if [ "\$2" = guest ]; then
  r threads -w w0 -w w1 -w w2 -w w3 -w shared/r -- '$progs/threads'
  r counts-mprotect --backend mprotect -w watched/rw -- '$progs/counts'
  r sysread-mprotect --backend mprotect --heap=w -- '$progs/sysread'
fi
EOF
cat > "$d/guest.sh" <<EOF
sh '$d/runs.sh' '$d/guest' guest
timeout -k 5 150 '$api' ulpt > '$d/guest/wl-api.tap' 2>&1
echo \$? > '$d/guest/wl-api.rc'
EOF

# The guest runs alongside the host's (about 140 s on an idle machine; the timeout only
# catches a hung guest, with room for a busy machine).
"$run" --share "$d" --smp 2 --timeout 420 -- sh "$d/guest.sh" > "$d/guest.log" 2>&1 &
guest=$!
sh "$d/runs.sh" "$d/host"
timeout -k 5 120 "$api" mprotect > "$d/host/wl-api.tap" 2>&1
echo $? > "$d/host/wl-api.rc"
timeout -k 5 300 "$wlstack" > "$d/host/wl-stack.tap" 2>&1
echo $? > "$d/host/wl-stack.rc"
wait $guest
grc=$?
[ "$grc" = 0 ] || tap_note "# the guest run exited with status $grc: $(tail -c 300 "$d/guest.log" | tr '\n' ' ')"

# Each run's expectations: watchlib/test/expected/NAME.pred, or NAME.host.pred and
# NAME.guest.pred where the environments differ (a run with only one of them is that
# environment's alone), checked by watchlib/test/expect.py: its first line is the check's
# description, each further line a Python expression (a predicate) that must hold for the
# run; on failure the check's diagnostics are a diff of the .pred against the run. expect.py
# documents the names the expressions use (the normalised addresses, pids and timings among
# them).
# A few canonical reports are pinned as literal text too, as Valgrind's tests pin theirs:
# NAME.stderr.exp (or NAME.host.stderr.exp, NAME.guest.stderr.exp) is the run's stderr after
# watchlib/test/filter-report (addresses, pids, thread ids, library directories and the frames
# below main masked), line for line; the diagnostics are the diff.
exp=$top/watchlib/test/expected
names=$(ls "$exp" | sed -n -E 's/(\.host|\.guest)?\.pred$//p' | sort -u)
lits=$(ls "$exp" | sed -n -E 's/(\.host|\.guest)?\.stderr\.exp$//p' | sort -u)
for env in host guest; do
  be=$([ $env = host ] && echo mprotect || echo ulpt)
  for name in $names; do
    if [ -f "$exp/$name.$env.pred" ]; then f=$exp/$name.$env.pred
    elif [ -f "$exp/$name.pred" ]; then f=$exp/$name.pred
    else continue; fi
    msg=$(python3 "$top/watchlib/test/expect.py" "$d/$env/$name" "$f" BACKEND="$be" ADDR="$addr" 2>&1)
    s=$?
    tap_check $s "$env: $(head -n1 "$f" | sed 's/^# //')" "$msg"
  done
  for name in $lits; do
    if [ -f "$exp/$name.$env.stderr.exp" ]; then f=$exp/$name.$env.stderr.exp
    elif [ -f "$exp/$name.stderr.exp" ]; then f=$exp/$name.stderr.exp
    else continue; fi
    msg=$("$top/watchlib/test/filter-report" 2>&1 < "$d/$env/$name.err" | diff -u "$f" - 2>&1)
    s=$?
    tap_check $s "$env: $name: its report, filtered, is ${f##*/} line for line" "$msg"
  done
  # Every run has its expectations (wl-api's and wl-stack's TAP are streams of their own, below).
  for rcf in "$d/$env"/*.rc; do
    [ -e "$rcf" ] || continue
    name=$(basename "$rcf" .rc)
    [ "$name" = wl-api ] || [ "$name" = wl-stack ] && continue
    [ -f "$exp/$name.$env.pred" ] || [ -f "$exp/$name.pred" ] ||
      tap_check 1 "$env: the run $name has no expectation file in watchlib/test/expected"
  done
done

tap_checks_end
# wl-api's and wl-stack's runs (saved with their exit status) and cli.sh: sub-streams (tests/lib/tap-sub.sh)
# that tests/tap-run checks and merges, apart from this suite's own plan above.
. "$top/tests/lib/tap-sub.sh"
replay() { # NAME TAPFILE RCFILE
  tap_sub "$1" sh -c 'cat "$1" 2>/dev/null; rc=$(cat "$2" 2>/dev/null); exit "${rc:-125}"' _ "$2" "$3" || tap_fails=$((tap_fails + 1))
}
replay "wl-api mprotect (host)" "$d/host/wl-api.tap" "$d/host/wl-api.rc"
replay "wl-stack (host)" "$d/host/wl-stack.tap" "$d/host/wl-stack.rc"
replay "wl-api ulpt (guest)" "$d/guest/wl-api.tap" "$d/guest/wl-api.rc"
if [ -f "$top/watchlib/test/cli.sh" ]; then
  tap_sub cli.sh sh -c 'cd "$1" && bash watchlib/test/cli.sh build/watchlib/ulpt-watch' _ "$top" || tap_fails=$((tap_fails + 1))
fi
[ "$tap_fails" = 0 ]
