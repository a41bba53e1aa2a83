#!/usr/bin/env bash
# watchlib and ulpt-watch: the test programs of watchlib/test/progs run under ulpt-watch on the
# host (mprotect backend) and in the guest (ULPT backend; one boot, 2 vCPUs), their JSON
# reports checked with python3:
#   counts     exact reads and writes of an int among hot neighbours (-w SYMBOL, /rw, mode w,
#              SYMBOL:LEN), and by address (-w 0xADDR:LEN) on a -no-pie build made here;
#              in the guest also with --backend mprotect
#   heap       --heap=rw, C and C++: the allocations made by the program, plus at most 3 of
#              libc's and libstdc++'s own (stdout's buffer, the exception pool); reads and
#              writes at least the program's own and at most 400 more (libc's clearing and
#              copying inside calloc and realloc, printf's stores into stdout's buffer)
#   heapbugs   --check: one report per bug, with kind, access, address, size, block, the bad
#              access's line in main's frame, main in the allocation (and free) backtraces
#   strbugs    --check: each checked libc function (memcpy ... strndup) one byte outside its
#              block, past its end and before its start: one report at that byte, "in" the function, from main's line; and all of
#              them within their blocks: no error
#   dlopens    --check on dlopen of libraries (the loader's unreplaceable string routines)
#   clean      --check on a correct program doing tricky things: no error, status 0, output kept
#   sigmalloc  --check on a program that allocates in a signal handler: no deadlock, no error
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
# then watchlib/test/wl-api (the C API) on both backends, and watchlib/test/cli.sh if present.
# The runs write NAME.json, .out, .err and .rc under build/watchlib/test/suite/{host,guest}
# (kept for inspection; the guest writes there through --share).
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
tool=$top/build/watchlib/ulpt-watch
progs=$top/build/watchlib/test/progs
api=$top/build/watchlib/test/wl-api
agent=$top/build/watchlib/libulpt-watch-agent.so
d=$top/build/watchlib/test/suite
rm -rf "$d" && mkdir -p "$d/host" "$d/guest" || exit 1
buf=$d/tap
: > "$buf"
i=0 fails=0
emit() { printf '%s\n' "$*" >> "$buf"; }
ok() {
  i=$((i + 1))
  if [ "$1" = 0 ]; then emit "ok $i - $2"; else emit "not ok $i - $2"; fails=$((fails + 1)); fi
}

# A copy of counts built without PIE, for -w 0xADDR:LEN.
nopie=$d/counts-nopie
gcc -O1 -g -Wall -Wextra -Werror -fno-builtin -no-pie -o "$nopie" "$top/watchlib/test/progs/counts.c" \
  > "$d/nopie.log" 2>&1
addr=$(nm "$nopie" 2>/dev/null | awk '$3 == "watched" { print $1 }')
[ -n "$addr" ] && addr=$(printf '0x%x' "$((16#$addr))") || addr=0x0

# strbugs: a call of each checked libc function one byte outside its block.
strcases="memcpy-write memcpy-read memcpy-read-under strcpy-under memmove memset-under memcmp memchr strlen strnlen strcpy strncpy
strcat strncat strcmp strncmp strchr strrchr strdup strndup read write fread fwrite fgets snprintf
memcpy-write-under memmove-under memcmp-under memchr-under strlen-under strnlen-under strcpy-src-under
strncpy-under strcat-under strncat-under strcmp-under strncmp-under strchr-under strrchr-under
strdup-under strndup-under read-under write-under fread-under fwrite-under fgets-under snprintf-under"
strcases=$(echo $strcases)

# mismatch: a release by the wrong family (malloc/new/new[] against free/delete/delete[]).
mmcases="malloc-delete malloc-delete-array new-free new-delete-array new-array-delete new-array-free"

# badargs: bad arguments to the malloc family, case|expected stdout|warnings|error kind (or -).
bacases="calloc-overflow reallocarray-overflow malloc-huge memalign-bad aligned-alloc-bad posix-memalign-bad usable-size-foreign realloc-foreign"
baexpect="calloc-overflow|result=0 errno=ENOMEM|1|-
reallocarray-overflow|result=0 errno=ENOMEM|1|-
malloc-huge|result=0 errno=ENOMEM|1|-
memalign-bad|result=0 errno=EINVAL|0|-
aligned-alloc-bad|result=0 errno=EINVAL|0|-
posix-memalign-bad|result=22 errno=EINVAL|0|-
usable-size-foreign|result=0 errno=0|0|bad-malloc_usable_size
realloc-foreign|result=0|0|invalid-free"

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
r check-pad-underflow-free --check -- '$progs/heapbugs' pad-underflow-free
r check-overflow-odd-write-a1 --check --align=1 -- '$progs/heapbugs' overflow-odd-write
r clean --check -- '$progs/clean'
for b in far-overflow-4k far-overflow-64k far-underflow-64k pad-write-realloc; do
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
if [ "\$2" = guest ]; then
  r padding-precise-read --check --precise -- '$progs/padding' read
  r padding-precise-write --check --precise -- '$progs/padding' write
  r check-underflow-read-precise --check --precise -- '$progs/heapbugs' underflow-read
  r clean-precise --check --precise -- '$progs/clean'
  r strbugs-clean-precise --check --precise -- '$progs/strbugs' clean
  r dlopens-precise --check --precise -- '$progs/dlopens' $dllibs
  bare bare-precise check=1:precise=1 '$progs/heapbugs' underflow-read
  bare bare-redzone check=1:redzone=exact '$progs/heapbugs' underflow-read
fi
r clean-a1 --check --align=1 -- '$progs/clean'
r sigmalloc --check -- '$progs/sigmalloc'
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
fi
EOF
cat > "$d/guest.sh" <<EOF
sh '$d/runs.sh' '$d/guest' guest
timeout -k 5 150 '$api' ulpt > '$d/guest/wl-api.tap' 2>&1
echo \$? > '$d/guest/wl-api.rc'
EOF

# check.py ENV/NAME EXPR...: every python EXPR holds for the run's report j (watches W,
# errors E, leaks L, heap H), its exit status rc, stdout out and stderr err; B is heapbugs' (or
# strbugs') line.
cat > "$d/check.py" <<'EOF'
import glob, json, os, re, sys
base, exprs = sys.argv[1], sys.argv[2:]
def text(ext):
    try:
        with open(base + ext, errors='replace') as f:
            return f.read()
    except OSError:
        return ''
out, err = text('.out'), text('.err')
rc = int(text('.rc').strip() or -1)
res = text('.res')               # a bare run's result file
def logs(prefix):                # the log files PREFIX-PID.txt next to the run's: {pid: text}
    return {int(re.search(r'-(\d+)\.txt$', f)[1]): open(f, errors='replace').read()
            for f in glob.glob(os.path.join(os.path.dirname(base), prefix + '-*.txt'))}
mm = re.search(r'mismatch: \S+ block=(\S+) pair=(\S+)/(\S+)', err)
MM = mm and dict(block=int(mm[1], 16), pair=('%s vs %s' % (mm[2], mm[3])).replace('_', ' '))
fk = re.search(r'forkbug: parent (\d+) child (\d+) status (-?\d+)', out)
FK = fk and dict(parent=int(fk[1]), child=int(fk[2]), status=int(fk[3]))
try:
    j = {} if base.split('/')[-1].startswith('bare-') else json.loads(text('.json'))
    if not isinstance(j, dict):
        raise ValueError('not an object')
except ValueError as e:
    print('%s.json: %s; exit status %d; stderr: %s' % (base, e or 'missing', rc, err.strip()[-300:]))
    sys.exit(1)
W, E, H = j.get('watches') or [], j.get('errors') or [], j.get('heap') or {}
L = [e for e in E if e.get('kind') == 'leak']    # the leak check's, at exit
E = [e for e in E if e.get('kind') != 'leak']
def h(x):                        # "0x1f" or 31 -> 31
    return int(x, 16) if isinstance(x, str) else x
def fns(frames):                 # the function names of a backtrace
    return [f.get('function') for f in frames or []]
def locs(frames, fn):            # the locations of fn's frames
    return [f.get('location') or '' for f in frames or [] if f.get('function') == fn]
P = [dict(addr=int(m[1], 16), size=int(m[2]), align=int(m[3]), side=m[4])
     for m in re.finditer(r'padding: addr=(\S+) size=(\d+) align=(\d+) side=(\S+)', err)]
m = re.search(r'(?:heapbugs|strbugs): \S+ (?:fn=(\S+) )?block=(\S+) size=(\d+) addr=(\S+) line=(\d+)', err)
B = m and dict(fn=m[1], block=0 if m[2] == '(nil)' else int(m[2], 16), size=int(m[3]),
               addr=int(m[4], 16), line=int(m[5]))
bad = []
for x in exprs:
    try:
        if not eval(x):
            bad.append(x)
    except Exception as e:
        bad.append('%s (%s: %s)' % (x, type(e).__name__, e))
if bad:
    for x in bad[:3]:
        print('failed: ' + x)
    if len(bad) > 3:
        print('and %d more' % (len(bad) - 3))
    brief = dict(j)
    for k in ('errors',):
        if brief.get(k):
            brief[k] = brief[k][:2]
    print('exit status %d; report: %s' % (rc, json.dumps(brief)[:1500]))
    if err.strip():
        print('stderr: ' + err.strip()[-600:].replace('\n', ' | '))
    sys.exit(1)
EOF
# check ENV NAME DESC EXPR...
check() {
  local env=$1 name=$2 desc=$3 msg s
  shift 3
  msg=$(python3 "$d/check.py" "$d/$env/$name" "$@" 2>&1)
  s=$?
  ok $s "$env: $desc"
  [ -n "$msg" ] && emit "$(printf '%s\n' "$msg" | sed 's/^/# /')"
}
# fold PREFIX FILE RC: another TAP stream, renumbered into this one.
fold() {
  local prefix=$1 file=$2 rc=$3 planned= ran=0 failed=0 line desc s
  if [ ! -s "$file" ]; then ok 1 "$prefix: no output (exit status $rc)"; return; fi
  while IFS= read -r line; do
    case "$line" in
      1..*) planned=${line#1..} ;;
      "ok "*|"not ok "*)
        ran=$((ran + 1)); s=0
        case "$line" in "not ok"*) s=1; failed=$((failed + 1)) ;; esac
        desc=$(printf '%s' "$line" | sed -E 's/^(not )?ok *[0-9]* *(- )?//')
        ok $s "$prefix: $desc" ;;
      "#"*) emit "$line" ;;
      "") ;;
      *) emit "# $line" ;;
    esac
  done < "$file"
  if [ -n "$planned" ] && [ "$planned" != "$ran" ]; then ok 1 "$prefix: planned $planned tests, ran $ran"
  elif [ "$rc" != 0 ] && [ "$failed" = 0 ]; then ok 1 "$prefix: exited with status $rc"; fi
}

# The guest runs alongside the host's (about 140 s on an idle machine; the timeout only
# catches a hung guest, with room for a busy machine).
"$run" --share "$d" --smp 2 --timeout 420 -- sh "$d/guest.sh" > "$d/guest.log" 2>&1 &
guest=$!
sh "$d/runs.sh" "$d/host"
timeout -k 5 120 "$api" mprotect > "$d/host/wl-api.tap" 2>&1
echo $? > "$d/host/wl-api.rc"
wait $guest
grc=$?
[ "$grc" = 0 ] || emit "# the guest run exited with status $grc: $(tail -c 300 "$d/guest.log" | tr '\n' ' ')"

for env in host guest; do
  be=$([ $env = host ] && echo mprotect || echo ulpt)
  check $env counts-rw "counts, -w watched/rw: 1000 reads, 2000 writes (500 by addl to memory) exactly; hot neighbours count nothing" \
    "rc == 0 and j['exit_status'] == 0 and 'counts: ok' in out" "j['backend'] == '$be'" "len(W) == 1" \
    "W[0]['reads'] == 1000 and W[0]['writes'] == 2000" "W[0]['length'] == 4 and W[0]['mode'] == 'rw'" \
    "j['false_faults'] > 0 and j['faults'] >= j['false_faults']"
  check $env counts-w "counts, -w watched -w after:8: mode w counts no read; the adjacent 8 bytes get 3384 writes" \
    "rc == 0 and len(W) == 2" "W[0]['reads'] == 0 and W[0]['writes'] == 2000 and W[0]['mode'] == 'w'" \
    "W[1]['reads'] == 0 and W[1]['writes'] == 3384 and W[1]['length'] == 8" \
    "h(W[1]['address']) == h(W[0]['address']) + 4"
  check $env nopie "counts built -no-pie, -w $addr:4/rw by address: 1000 reads, 2000 writes" \
    "rc == 0 and 'counts: ok' in out" "$addr != 0" "h(W[0]['address']) == $addr and W[0]['length'] == 4" \
    "W[0]['reads'] == 1000 and W[0]['writes'] == 2000"
  if [ $env = guest ]; then hm=rw hr="1361 <= H['reads'] <= 1361 + 400" xr="276 <= H['reads'] <= 276 + 400"
  else hm=w hr="H['reads'] == 0" xr="H['reads'] == 0"; fi
  check $env heap "heap, --heap=$hm: 26 allocations of the program's (malloc, calloc, realloc, posix_memalign, aligned_alloc) and at most 3 of libc's; >= 1436 writes" \
    "rc == 0 and 'heap: ok' in out" "26 <= H['allocations'] <= 29" \
    "$hr" "1436 <= H['writes'] <= 1436 + 400"
  check $env heapxx "heapxx, --heap=$hm: 14 allocations by new (and libstdc++'s own, at most 3); >= 176 writes" \
    "rc == 0 and 'heapxx: ok' in out" "14 <= H['allocations'] <= 17" \
    "$xr" "176 <= H['writes'] <= 176 + 400"
  # heapbugs BUG KIND ACCESS: the report of one bug.
  common=("B is not None" "len(E) >= 1" "h(E[0]['ip']) != 0")
  at_line="any(l.endswith('heapbugs.c:%d' % B['line']) for l in locs(E[0]['backtrace'], 'main'))"
  alloc="'main' in fns(E[0]['allocated'])"
  block="E[0]['block'] and h(E[0]['block']['address']) == B['block'] and E[0]['block']['size'] == B['size']"
  access=("len(E) == 1" "E[0]['address'] and h(E[0]['address']) == B['addr']" "E[0]['size'] == 1"
          "fns(E[0]['backtrace'])[:1] == ['main']")
  check $env check-overflow-write "--check: a 1-byte write past malloc(24): heap-overflow, write, block+24, in main at its line" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'write'" \
    "$block" "$at_line" "$alloc"
  check $env check-overflow-odd-write-a1 "--check --align=1: a 1-byte write past malloc(13): heap-overflow, write, block+13" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'write'" \
    "$block" "$at_line" "$alloc"
  check $env check-overflow-odd-write "--check: a 1-byte write past malloc(13), in its 8-byte alignment's padding and never freed: the canary finds it at exit" \
    "rc == 0 and len(E) == 1" "B is not None" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'write' and E[0]['found'] == 'exit'" \
    "h(E[0]['address']) == B['addr'] and E[0]['size'] == 1" "$block" "$alloc"
  check $env check-pad-write-free "--check: 2 bytes written into malloc(13)'s padding, found at free: heap-overflow, write, block+13, size 2, free's caller main" \
    "rc == 0 and len(E) == 1" "B is not None" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'write' and E[0]['found'] == 'free'" \
    "h(E[0]['address']) == B['addr'] and E[0]['size'] == 2" "$block" "$alloc" "$at_line"
  for c in $strcases; do
    check $env strbugs-$c "--check: $c one byte outside its block: one heap-overflow at that byte, in the function, from main at its line" \
      "rc == 0 and len(E) == 1" "B is not None" "E[0]['kind'] == 'heap-overflow' and h(E[0]['address']) == B['addr']" \
      "(' in %s\\n' % B['fn']) in err and 'free of' not in err" \
      "any(l.endswith('strbugs.c:%d' % B['line']) for l in locs(E[0]['backtrace'], 'main'))" \
      "h(E[0]['block']['address']) == B['block'] and E[0]['block']['size'] == B['size']"
  done
  check $env dlopens "--check: dlopen of 14 libraries (the loader's own strlen reads whole chunks past the paths it copies): no error" \
    "rc == 0 and E == [] and 'errors' in j" "'dlopens: ok' in out"
  check $env strbugs-clean "--check: every checked libc function within its blocks: no error" \
    "rc == 0 and E == [] and 'errors' in j" "'strbugs: clean ok' in out"
  check $env check-pad-underflow-free "--check: a 1-byte write before malloc(100), in its open first line, found at free: heap-overflow, block-1" \
    "rc == 0 and len(E) == 1" "B is not None" "E[0]['found'] == 'free' and E[0]['kind'] == 'heap-overflow'" \
    "h(E[0]['address']) == B['addr'] and E[0]['size'] == 1" "$block" "$alloc"
  if [ $env = guest ]; then
  check $env check-underflow-read-exact "--check --redzone=exact: a 1-byte read before malloc(16): heap-overflow, read, block-1" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'read'" \
    "$block" "$at_line" "$alloc"
  check $env check-underflow-read-precise "--check --precise: a 1-byte read before malloc(16): heap-overflow, read, block-1" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'read'" \
    "$block" "$at_line" "$alloc"
  check $env bare-precise "bare LD_PRELOAD, check=1:precise=1: a 1-byte read before malloc(16) reported" \
    "rc == 0 and B is not None" "'heap-overflow on address 0x%x' % B['addr'] in err and 'READ of size 1' in err"
  check $env bare-redzone "bare LD_PRELOAD, check=1:redzone=exact: the same read reported" \
    "rc == 0 and B is not None" "'heap-overflow on address 0x%x' % B['addr'] in err"
  for m in read write; do
    check $env padding-precise-$m "--check --precise: a one-byte $m after and before blocks of 1-32 bytes at each alignment (256): each reported at the access" \
      "len(P) == 256 and len(E) == 256" "sorted(h(e['address']) for e in E) == sorted(p['addr'] for p in P)" \
      "all(e['kind'] == 'heap-overflow' and e['access'] == '$m' and e['found'] == 'access' for e in E)"
  done
  check $env clean-precise "clean under --check --precise: no error, status 0" \
    "rc == 0 and j['exit_status'] == 0" "E == [] and 'errors' in j" "'clean: ok' in out"
  check $env strbugs-clean-precise "--check --precise: every checked libc function within its blocks: no error" \
    "rc == 0 and E == [] and 'errors' in j" "'strbugs: clean ok' in out"
  check $env dlopens-precise "--check --precise: dlopen of 14 libraries: no error" \
    "rc == 0 and E == [] and 'errors' in j" "'dlopens: ok' in out"
  check $env check-underflow-read "--check (red-zone lines): a 1-byte read before malloc(16) is in its open first line: not caught, as documented" \
    "rc == 0 and len(E) == 0" "B is not None"
  check $env check-underflow-far-read "--check: a read 120 bytes before malloc(16), in the red-zone line: heap-overflow, read, block-120" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'read'" \
    "$block" "$at_line" "$alloc"
  else
  # mprotect gives each block whole pages, the block at the end: block-1 is in its own page.
  check $env check-underflow-read "--check on mprotect: a 1-byte read before malloc(16) is not caught (whole-page layout, as documented)" \
    "rc == 0 and len(E) == 0" "B is not None"
  check $env check-underflow-read-exact "--check --redzone=exact on mprotect: the same, whole pages whatever --redzone says" \
    "rc == 0 and len(E) == 0" "B is not None"
  check $env check-underflow-far-read "--check on mprotect: a read 120 bytes before malloc(16) is in the block's page: not caught" \
    "rc == 0 and len(E) == 0" "B is not None"
  fi
  check $env check-use-after-free "--check: a read of a freed block of 20: use-after-free, read, block+4; allocated and freed in main" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'use-after-free' and E[0]['access'] == 'read'" \
    "$block" "$at_line" "$alloc" "'main' in fns(E[0]['freed'])"
  check $env check-double-free "--check: double free of a block of 24: double-free, free; allocated and freed in main" \
    "${common[@]}" "len(E) == 1" "E[0]['kind'] == 'double-free' and E[0]['access'] == 'free'" \
    "h(E[0]['address']) == B['addr']" "$block" "$at_line" "$alloc" "'main' in fns(E[0]['freed'])"
  check $env check-free-middle "--check: free(block + 8) of a block of 32: invalid-free, names the block" \
    "${common[@]}" "len(E) == 1" "E[0]['kind'] == 'invalid-free' and E[0]['access'] == 'free'" \
    "h(E[0]['address']) == B['addr']" "$block" "$at_line" "$alloc"
  check $env check-free-stack "--check: free of a stack address: invalid-free, no block" \
    "${common[@]}" "len(E) == 1" "E[0]['kind'] == 'invalid-free' and E[0]['access'] == 'free'" \
    "h(E[0]['address']) == B['addr']" "E[0]['block'] is None" "$at_line"
  check $env check-memcpy-overflow "--check: memcpy of 17 bytes into malloc(16) inside libc: heap-overflow write, main in the backtrace" \
    "${common[@]}" "all(e['kind'] == 'heap-overflow' and e['access'] == 'write' for e in E)" \
    "B['block'] < h(E[0]['address']) <= B['block'] + 16" "$block" "$at_line" "$alloc"
  check $env check-far-overflow-4k "--check: a write 200 bytes past malloc(4096), whose neighbour is another 4096-byte block: heap-overflow of the first (red zones grow with the block)" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'write'" "$block" "$at_line" "$alloc"
  check $env check-far-overflow-64k "--check: a write 2000 bytes past malloc(65536): heap-overflow, block+65536+2000" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'write'" "$block" "$at_line" "$alloc"
  check $env check-far-underflow-64k "--check: a read 2000 bytes before malloc(65536): heap-overflow, block-2000" \
    "${common[@]}" "${access[@]}" "E[0]['kind'] == 'heap-overflow' and E[0]['access'] == 'read'" "$block" "$at_line" "$alloc"
  check $env check-pad-write-realloc "--check: a write into malloc(13)'s padding, found at realloc: heap-overflow, block+13, realloc's caller main" \
    "rc == 0 and len(E) == 1" "B is not None" "E[0]['kind'] == 'heap-overflow' and E[0]['found'] == 'realloc'" \
    "h(E[0]['address']) == B['addr'] and E[0]['size'] == 1" "$block" "$alloc" "$at_line"
  check $env padding-write "--check: a one-byte write after and before blocks of 1-32 bytes at each alignment (256): each reported, at the access or by the canary at free" \
    "len(P) == 256 and len(E) == 256" "sorted(h(e['address']) for e in E) == sorted(p['addr'] for p in P)" \
    "all(e['kind'] == 'heap-overflow' and e['access'] == 'write' and e['found'] in ('access', 'free') for e in E)"
  check $env bare-check "bare LD_PRELOAD, ULPT_WATCH_OPTIONS=check=1: the overflow reported on stderr, the program's status kept" \
    "rc == 0 and B is not None" "'ERROR: ulpt-watch: heap-overflow on address 0x%x' % B['addr'] in err" "'WRITE of size 1' in err"
  check $env bare-align "bare LD_PRELOAD, check=1:align=1: a write past malloc(13) is caught at the access, not at exit" \
    "rc == 0 and B is not None" "'heap-overflow on address 0x%x' % B['addr'] in err and 'found at' not in err"
  check $env bare-heap "bare LD_PRELOAD, heap=w:result=FILE: the result file has the heap counts" \
    "rc == 0 and 'heap: ok' in out" "re.search(r'^heap\t(2[6-9])\t', res, re.M)"
  check $env bare-backend "bare LD_PRELOAD, backend=mprotect: the agent runs on mprotect (the result file says so) and still finds the overflow" \
    "rc == 0 and 'backend\tmprotect' in res" "'ERROR: ulpt-watch: heap-overflow' in err"
  check $env bare-verbose "bare LD_PRELOAD, verbose=1 with a watch and its name (':' escaped): each hit printed under the name" \
    "rc == 0 and 'counts: ok' in out" "'ulpt-watch: watched:4: write of 4 bytes' in err"
  check $env bare-follow-exec "bare LD_PRELOAD, follow_exec=1: the agent stays in what the program executes" \
    "rc == 0 and 'libulpt-watch-agent.so' in out"
  while IFS='|' read -r c want nwarn kind; do
    check $env badargs-$c "--check: $c: $want, $nwarn warning(s), error: $kind" \
      "rc == 0 and ('badargs: $c $want') in out" "err.count('WARNING: ulpt-watch:') == $nwarn" \
      "[e['kind'] for e in E] == ([] if '$kind' == '-' else ['$kind'])" \
      "'$kind' == '-' or (E[0]['block'] and fns(E[0]['backtrace'])[:1] == ['main'])"
  done <<< "$baexpect"
  for c in $mmcases; do
    check $env mismatch-$c "--check: $c: one alloc-dealloc-mismatch at the block, ASan's pair of names, both stacks in main" \
      "rc == 0 and len(E) == 1" "MM is not None" "E[0]['kind'] == 'alloc-dealloc-mismatch' and E[0]['access'] == 'free'" \
      "h(E[0]['address']) == MM['block'] and h(E[0]['block']['address']) == MM['block']" \
      "('alloc-dealloc-mismatch (%s)' % MM['pair']) in err" \
      "fns(E[0]['backtrace'])[:1] == ['main'] and 'main' in fns(E[0]['allocated'])" \
      "E[0].get('pair') == MM['pair']"
  done
  check $env leaks-direct "--check: a lost block: one direct leak of 77 bytes in 1 object, allocated in leak_one, in LeakSanitizer's words" \
    "rc == 0 and E == [] and len(L) == 1" "L[0]['access'] == 'direct' and L[0]['size'] == 77 and L[0]['objects'] == 1" \
    "fns(L[0]['allocated'])[:2] == ['leak_one', 'main']" "'Direct leak of 77 byte(s) in 1 object(s) allocated from:' in err" \
    "'SUMMARY: ulpt-watch: 77 byte(s) leaked in 1 allocation(s).' in err" "'40 byte' not in err"
  check $env leaks-list "--check --leaks=all: a lost list of 3: its head a direct leak, the 2 nodes it reaches indirect" \
    "rc == 0 and len(L) == 2" "[(x['access'], x['size'], x['objects']) for x in L] == [('direct', 32, 1), ('indirect', 64, 2)]" \
    "'Indirect leak of 64 byte(s) in 2 object(s)' in err"
  check $env leaks-cycle "--check --leaks=all: two lost blocks pointing at each other: one direct, one indirect (memcheck's clique)" \
    "sorted((x['access'], x['size']) for x in L) == [('direct', 48), ('indirect', 48)]"
  check $env leaks-none "--check: blocks freed, kept in globals (a list too) and an open FILE: no leak" \
    "rc == 0 and L == [] and E == [] and 'leak' not in err"
  check $env leaks-exit "--check: a leak, then _exit(0): still checked and reported, status 0" \
    "rc == 0 and len(L) == 1 and L[0]['size'] == 77"
  check $env leaks-abort "--check: a leak, then abort(): the check runs at the signal, and the program still dies of SIGABRT" \
    "rc == 134 and len(L) == 1 and L[0]['size'] == 77 and 'killed by signal 6' in err"
  check $env leaks-fork "--check: a forked child checks its own heap at its exit: its leak on stderr, none in the parent's report" \
    "rc == 0 and L == [] and err.count('Direct leak of 33 byte(s) in 1 object(s)') == 1"
  check $env leaks-roots "--check: blocks held only by another thread's stack, by its TLS, by the main thread's TLS, and one freed by an atexit handler: none lost (the one real leak found)" \
    "rc == 0 and [(x['access'], x['size']) for x in L] == [('direct', 55)]"
  check $env leaks-sparse "--check --leaks=all: pointers in big, barely touched memory (a kept 4 MiB block, an 8 MiB mapping, a lost 1 MiB block): found past the untouched pages" \
    "rc == 0 and [(x['access'], x['size']) for x in L] == [('direct', 1048576), ('direct', 57), ('indirect', 72)]" \
    "j['leak_check_ns'] > 0"
  check $env supp-gen "--gen-suppressions' rules fed back to --suppressions: its reports (an overflow, a leak) silenced and counted" \
    "E == [] and L == [] and j['suppressed'] == 2"
  check $env bare-gen-supp "bare LD_PRELOAD, gen_suppressions=1: the leak's rule after its report" "rc == 0 and 'leak:^leak_one\$' in err"
  check $env bare-leaks-bad "bare LD_PRELOAD, leaks=some: one line, status 2" \
    "rc == 2 and len(err.strip().splitlines()) == 1 and 'leaks' in err"
  check $env leaks-definite "--check (leaks=definite by default): the list's head only" \
    "[(x['access'], x['size']) for x in L] == [('direct', 32)] and 'Indirect' not in err"
  check $env leaks-off "--check --leaks=none: no leak check (and no time of one in the report)" \
    "rc == 0 and L == [] and 'leak' not in err" "j['leak_check_ns'] is None"
  check $env leaks-exitcode "--check --error-exitcode=7: a definite leak is an error: status 7" \
    "rc == 7 and len(L) == 1"
  check $env supp-leak "--suppressions: leak:leak_one (with a comment and a blank line) silences the leak, counts it, status 0 under --error-exitcode" \
    "rc == 0 and L == [] and 'leak of' not in err" "j['suppressed'] == 1"
  check $env supp-overflow "--suppressions: heap-overflow:^main\$ silences the overflow in main" \
    "rc == 0 and E == [] and j['suppressed'] >= 1 and 'heap-overflow' not in err"
  check $env supp-file "--suppressions: leak:heapbugs.c (a source file) silences heapbugs' leak, not its overflow" \
    "L == [] and [e['kind'] for e in E] == ['heap-overflow'] and j['suppressed'] >= 1"
  check $env supp-bad "--suppressions with a bad rule: one line naming the file and line, status 2, the program not run" \
    "rc == 2" "'supp-bad.txt:1:' in err and len(err.strip().splitlines()) <= 2" "'exit3' not in out"
  check $env gen-supp "--gen-suppressions: a ready rule after the report" \
    "len(E) == 1 and 'heap-overflow:^main\$' in err"
  check $env mismatch-variants "--check: every operator new and delete variant (plain, array, nothrow, aligned, sized) used rightly: no error, aligned blocks" \
    "rc == 0 and E == [] and 'errors' in j" "'mismatch: variants ok' in out and 'misaligned' not in err"
  check $env exitcode-twofrees "--check --error-exitcode=9: two errors reported, exit status 9 (the program's is 0), in the report too" \
    "rc == 9 and j['exit_status'] == 9 and len(E) == 2"
  check $env exitcode-clean "--check --error-exitcode=9 on a correct program: its own status, 0, and its output" \
    "rc == 0 and E == [] and 'clean: ok' in out"
  check $env halt-twofrees "--check --halt-on-error: the program stops at its first error, status 1, the report written" \
    "rc == 1 and len(E) == 1 and E[0]['kind'] == 'double-free'"
  check $env halt-exitcode "--check --halt-on-error --error-exitcode=7: stops at the first error with status 7" \
    "rc == 7 and len(E) == 1"
  check $env logfile "--check --log-file=DIR/log-%p.txt --error-exitcode=3 on a program that forks: parent and child each write their own error to their own file, none on stderr; both exit 3" \
    "FK is not None and rc == 3 and FK['status'] == 3" "sorted(logs('log')) == sorted([FK['parent'], FK['child']])" \
    "all(t.count('ERROR: ulpt-watch: heap-overflow') == 1 for t in logs('log').values())" \
    "'ERROR:' not in err and len(E) == 1"
  check $env bare-log "bare LD_PRELOAD, log_file=DIR/bare-log-%p.txt: each process's error in its own file" \
    "FK is not None and rc == 0" "sorted(logs('bare-log')) == sorted([FK['parent'], FK['child']])" "'ERROR:' not in err"
  check $env bare-log-bad "bare LD_PRELOAD, a log_file that cannot be opened: one line, exit status 2" \
    "rc == 2 and len(err.splitlines()) == 1 and 'cannot open the log file' in err"
  check $env bare-leaks "bare LD_PRELOAD, check=1:leaks=all: the direct and the indirect leak on stderr" \
    "rc == 0 and 'Direct leak of 32 byte(s) in 1 object(s)' in err and 'Indirect leak of 64 byte(s) in 2 object(s)' in err"
  check $env bare-supp "bare LD_PRELOAD, suppressions=FILE: the leak silenced" "rc == 0 and 'leak of' not in err"
  check $env bare-error-exitcode "bare LD_PRELOAD, check=1:error_exitcode=5: two errors on stderr, status 5" \
    "rc == 5 and err.count('ERROR: ulpt-watch: double-free') == 2"
  check $env bare-halt "bare LD_PRELOAD, check=1:halt_on_error=1: one error on stderr, status 1" \
    "rc == 1 and err.count('ERROR: ulpt-watch: double-free') == 1"
  for b in bad-value:"check=2 (a switch takes 0 or 1)" unknown:"an unknown name" conflict:"heap and check together"; do
    check $env bare-${b%%:*} "bare LD_PRELOAD, ULPT_WATCH_OPTIONS with ${b#*:}: one line on stderr, exit status 2, the program never runs" \
      "rc == 2 and len(err.splitlines()) == 1 and err.startswith('ulpt-watch agent: ULPT_WATCH_OPTIONS: ')" "out == ''"
  done
  check $env clean "clean under --check: malloc(0), realloc, memalign, string functions on exact blocks, memcmp before a freed block, qsort, printf, fork: no error, status 0" \
    "rc == 0 and j['exit_status'] == 0" "E == [] and 'errors' in j" "'clean: ok' in out"
  check $env clean-a1 "clean under --check --align=1 (string ends at their red zone; strcmp near a page end reads on in 8- and 4-byte chunks): no error" \
    "rc == 0 and j['exit_status'] == 0" "E == [] and 'errors' in j" "'clean: ok' in out"
  check $env ownsegv "a program with its own SIGSEGV and SIGTRAP handlers keeps them, and the watch counts: 100 writes" \
    "rc == 0 and 'ownsegv: ok' in out" "W[0]['writes'] == 100 and W[0]['reads'] == 0"
  check $env ownsegv-v "-v (ULPT_PERMIT_STEP on every hit): no SIGTRAP reaches the program's own handler, 100 hits with their new values" \
    "rc == 0 and 'ownsegv: ok (segv 1, trap 1)' in out" "W[0]['writes'] == 100" "err.count('ulpt-watch: counter: write of 4 bytes') == 100" \
    "', 98 -> 99, by main (' in err"
  check $env verbose "-v prints each hit under the watch's name, with the old and new value and the writer" \
    "'ulpt-watch: code: write of 4 bytes' in err and ', 0 -> 3, by main (' in err and W[0]['writes'] == 1"
  check $env exec "exec: the program the watched one execs runs without the agent" "rc == 0 and 'preload=[]' in out"
  check $env exec-follow "exec with --follow-exec: the agent stays in LD_PRELOAD" "rc == 0 and 'libulpt-watch-agent.so' in out"
  check $env twofrees "--check: double frees at two call sites are two errors; a site's repeats are reported once" \
    "rc == 0 and len(E) == 2" "all(e['kind'] == 'double-free' for e in E)" "E[0]['ip'] != E[1]['ip']"
  check $env sigmalloc "--check on a program calling malloc and free in a signal handler: no deadlock, no error" \
    "rc == 0 and j['exit_status'] == 0" "E == [] and 'errors' in j" "'sigmalloc: ok' in out"
  check $env exit3 "exit3: status 3 passes through (and is in the report); 1 read and 1 write of code" \
    "rc == 3 and j['exit_status'] == 3" "(W[0]['reads'], W[0]['writes']) == (1, 1)"
done
check guest threads "threads on 2 vCPUs, 4 threads x 5000 writes of their own ints, 20000 reads of a shared one, one line: exact counts" \
  "rc == 0 and 'threads: ok' in out" "len(W) == 5" \
  "[(w['reads'], w['writes']) for w in W[:4]] == [(0, 5000)] * 4" \
  "(W[4]['reads'], W[4]['writes'], W[4]['mode']) == (20000, 0, 'r')"
check guest counts-mprotect "counts with --backend mprotect in the guest: 1000 reads, 2000 writes exactly" \
  "rc == 0 and j['backend'] == 'mprotect'" "W[0]['reads'] == 1000 and W[0]['writes'] == 2000"

fold "wl-api mprotect (host)" "$d/host/wl-api.tap" "$(cat "$d/host/wl-api.rc" 2>/dev/null)"
fold "wl-api ulpt (guest)" "$d/guest/wl-api.tap" "$(cat "$d/guest/wl-api.rc" 2>/dev/null || echo none)"

if [ -f "$top/watchlib/test/cli.sh" ]; then
  (cd "$top" && bash watchlib/test/cli.sh build/watchlib/ulpt-watch) > "$d/cli.tap" 2>&1
  fold "cli.sh" "$d/cli.tap" $?
fi

echo "1..$i"
cat "$buf"
[ "$fails" = 0 ]
