#!/usr/bin/env bash
# The agent's stress run: watchlib/test/progs/stress.c under ulpt-watch in the guest (ULPT
# backend, 2 vCPUs, one boot), every count it reports compared with the program's own:
#   check   --check --leaks=all --follow-exec --log-file, STRESS_SECONDS (20): 4 threads
#           allocate, resize, hand over, verify and free blocks by every call of the malloc
#           family, take signals whose handler allocates, fork (the child allocates, leaks one
#           block, or executes the program again, which leaks one of its own), park blocks that
#           the signal handler frees; the program's
#           own checks hold, no report but its deliberate leaks, exactly those (direct and
#           indirect, in the original process's report; one per child in its own log file)
#   heap    --heap=rw, STRESS_HEAP_SECONDS (half of it), and a 0-second run for libc's own
#           share (its handler allocating nothing): the allocations and reads counted are
#           exactly the program's; its writes within 8 of the program's plus libc's share, in
#           a run with forks (heap) and one without (heapnf): libc's own writes, taken from the
#           other run, vary by a few (seen: -2 to +3), and a write permitted just before
#           another thread's fork can be delivered again after the copy-on-write fault ends
#           its permit (docs/spec.md R-RET-2)
#   forks   STRESS_FORKS (100) forks while 3 threads allocate and take signals: no child stuck
#   as      RLIMIT_AS below what the agent reserves (one line, status 2; on ULPT it needs some
#           650 GiB: the table's view is 512 GiB); the address space exhausted by the
#           program under an 800 GiB limit (its run completes)
#   maps    vm.max_map_count reached by the program, ULPT and mprotect backends
# Every run has a timeout: a deadlock is a failed check, not a hung suite. `make stress`
# runs it longer (STRESS_SECONDS, default 180) and prints its figures.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
tool=$top/build/watchlib/ulpt-watch
prog=$top/build/watchlib/test/progs/stress
secs=${STRESS_SECONDS:-20}
hsecs=${STRESS_HEAP_SECONDS:-$((secs / 2))}
nforks=${STRESS_FORKS:-100}
d=$top/build/watchlib/test/stress
rm -rf "$d" && mkdir -p "$d/logs" || exit 1
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin "$d/tap"

# In the guest: each run's stdout, stderr, status and wall time (NAME.out, .err, .rc, .secs).
cat > "$d/guest.sh" <<EOF
d='$d'
r() {
  n=\$1; t=\$2; shift 2
  s=\$(date +%s.%N)
  timeout -k 5 \$t "\$@" > \$d/\$n.out 2> \$d/\$n.err
  echo \$? > \$d/\$n.rc
  echo \$s \$(date +%s.%N) | awk '{ printf "%.1f\n", \$2 - \$1 }' > \$d/\$n.secs
}
r check $((secs * 2 + 120)) '$tool' --check --leaks=all --follow-exec --log-file=\$d/logs/log-%p.txt --json \$d/check.json -- '$prog' run $secs 4
r heap0 120 '$tool' --heap=rw --json \$d/heap0.json -- '$prog' run 0 4 native
r heap $((hsecs * 2 + 120)) '$tool' --heap=rw --json \$d/heap.json -- '$prog' run $hsecs 4 heap
r heapnf $((hsecs * 2 + 120)) '$tool' --heap=rw --json \$d/heapnf.json -- '$prog' run $hsecs 4 heap-nofork
r forks $((nforks * 2 + 120)) '$tool' --check --leaks=none --json \$d/forks.json -- '$prog' forks $nforks
(ulimit -v 2000000; r as-low 60 '$tool' --check --json \$d/as-low.json -- '$prog' as)
(ulimit -v 104857600; r as-mid 60 '$tool' --check --json \$d/as-mid.json -- '$prog' as)
(ulimit -v 838860800; r as 120 '$tool' --check --json \$d/as.json -- '$prog' as)
# Last: the lowered limit stays until the guest stops.
echo 3000 > /proc/sys/vm/max_map_count
r maps 120 '$tool' --check --json \$d/maps.json -- '$prog' maps
r maps-mprotect 120 '$tool' --check --backend mprotect --json \$d/maps-mprotect.json -- '$prog' maps
EOF
"$run" --share "$d" --smp 2 --timeout $((secs * 2 + hsecs * 2 + nforks * 2 + 900)) -- sh "$d/guest.sh" \
  > "$d/guest.log" 2>&1
grc=$?
[ "$grc" = 0 ] || tap_note "# the guest run exited with status $grc: $(tail -c 300 "$d/guest.log" | tr '\n' ' ')"

# check NAME DESCRIPTION EXPR...: every Python expression holds for run NAME (py below).
check() {
  local name=$1 desc=$2 msg s
  shift 2
  msg=$(python3 "$d/check.py" "$d" "$name" "$@" 2>&1)
  s=$?
  tap_check $s "$desc" "$msg"
}
cat > "$d/check.py" <<'EOF'
# check.py DIR NAME EXPR...: the names the expressions use: rc, out, err, j (the JSON report),
# c (the program's counts: "stress: name=value ..."), E (errors but leaks), L (leaks), logs
# (each log file's text), lines (err's lines from the agent), secs.
import glob, json, os, re, sys
d, name, exprs = sys.argv[1], sys.argv[2], sys.argv[3:]
def read(ext, default=''):
    try:
        return open(os.path.join(d, name + ext), errors='replace').read()
    except OSError:
        return default
rc = int(read('.rc', '-1').strip() or -1)
out, err, secs = read('.out'), read('.err'), read('.secs').strip()
try:
    j = json.loads(read('.json', 'null'))
except ValueError:
    j = None
c = {}
for m in re.finditer(r'(\w+)=(\d+)', ' '.join(l for l in out.splitlines() if l.startswith('stress: '))):
    c[m.group(1)] = int(m.group(2))
errs = (j or {}).get('errors') or []
E = [e for e in errs if e['kind'] != 'leak']
L = [e for e in errs if e['kind'] == 'leak']
logs = [open(f, errors='replace').read() for f in sorted(glob.glob(os.path.join(d, 'logs', '*')))]
lines = [l for l in err.splitlines() if l.startswith('ulpt-watch agent:')]
def heap(x):
    return (x.get('heap') or {}) if x else {}
bad = []
for e in exprs:
    try:
        if not eval(e):
            bad.append(e)
    except Exception as ex:
        bad.append('%s (%s: %s)' % (e, type(ex).__name__, ex))
for e in bad:
    print('failed: %s' % e)
if bad:
    print('rc=%s; out: %s; err: %s' % (rc, out.strip()[-600:], err.strip()[-600:]))
sys.exit(1 if bad else 0)
EOF

check check "check: the run of $secs s ended by itself (no deadlock) with status 0, the agent's report complete" \
  "rc == 0" "j['backend'] == 'ulpt' and j['agent_report'] and j['faults'] is not None"
check check "check: the program's own checks held: every block's bytes, calloc's zeroes, realloc's kept bytes, alignments, every signal handled, every child ok" \
  "'stress: ok' in out" "c['failures'] == 0 and c['fork_failures'] == 0" \
  "c['signals_sent'] == c['signals_handled'] > 0" "c['forks'] > 0 and c['execs'] > 0 and c['ops'] > 0"
check check "check: no error report but the leaks made on purpose, no fault, nothing suppressed" \
  "E == []" "j['faults'] == 0 and j['false_faults'] == 0" "j['suppressed'] == 0"
check check "check: --leaks=all finds exactly the leaks made: the direct blocks and bytes, the indirect ones" \
  "sum(x['objects'] for x in L if x['access'] == 'direct') == c['leaked_direct']" \
  "sum(x['size'] for x in L if x['access'] == 'direct') == c['leaked_direct_bytes']" \
  "sum(x['objects'] for x in L if x['access'] == 'indirect') == c['leaked_indirect']" \
  "sum(x['size'] for x in L if x['access'] == 'indirect') == c['leaked_indirect_bytes']"
check check "check: each forked child's leak check found exactly its one leak, each program a child executed (--follow-exec) its own, each in its log file; no other report" \
  "len(logs) == 1 + c['forks']" \
  "sum(l.count('Direct leak of %d byte(s) in 1 object(s)' % c['child_leak']) for l in logs) == c['forks'] - c['execs']" \
  "sum(l.count('Direct leak of %d byte(s) in 1 object(s)' % c['exec_leak']) for l in logs) == c['execs']" \
  "sum(l.count('ERROR: ulpt-watch:') for l in logs) == 1 + c['forks']" \
  "all(l.count('ERROR: ulpt-watch:') == l.count('detected memory leaks') for l in logs)"
check check "check: the programs forked children executed under --follow-exec add nothing to the tool's report (it is the original process's)" \
  "not [x for x in L if x['size'] == c['exec_leak']]" "c['execs'] > 0"
check check "check: blocks the main flow parked were freed by the signal handler, half of them after a realloc, also when it interrupted the agent: no deadlock, none lost" \
  "rc == 0" "c['parks'] > 0 and c['handler_frees'] > 0 and c['handler_reallocs'] > 0" "not [x for x in L if x['size'] < 1000]"

# --heap=rw: the agent's counts minus the program's main flow are libc's own share (as in the
# 0-second run), plus the signal handler's when it did not interrupt the agent: n calls of
# one block of handler_size bytes, as many reads and writes each (heap.c: a handler that
# interrupts the agent gets the agent's memory, unwatched).
check heap0 "heap: the 0-second --heap=rw run: status 0, the program's checks held" \
  "rc == 0 and 'stress: ok' in out and heap(j).get('allocations') is not None"
cat > "$d/heapcalc.py" <<'EOF'
def load(n):
    o = open(d + '/' + n + '.out').read()
    c = {m.group(1): int(m.group(2)) for m in re.finditer(r'(\w+)=(\d+)', o)}
    return c, json.load(open(d + '/' + n + '.json'))['heap']
c0, h0 = load('heap0'); c, h = load(name)
a0 = h0['allocations'] - c0['allocs'] - c0['handler_allocs']
n = h['allocations'] - c['allocs'] - a0
w = c['handler_writes'] // max(c['handler_allocs'], 1)
rd = c['handler_reads'] // max(c['handler_allocs'], 1)
libc_r = h0['reads'] - c0['reads'] - c0['handler_reads']
libc_w = h0['writes'] - c0['writes'] - c0['handler_writes']
EOF
check heap "heap: the --heap=rw run of $hsecs s ended by itself, the program's checks held, every signal handled" \
  "rc in (0, 1) and 'stress: seconds=' in out" "c['failures'] == 0" \
  "c['signals_sent'] == c['signals_handled'] > 0"
check heap "heap: children forked by threads that take signals survive their first watched access (the kernel must not give the child's thread a stale in-handler state)" \
  "c['forks'] > 0 and c['fork_failures'] == 0" "rc == 0 and 'stress: ok' in out"
check heap "heap: the allocations counted are exactly the program's, plus libc's own (the 0-second run's) and the handler calls the agent did not serve from its own memory" \
  "exec(open(d + '/heapcalc.py').read()) or True" \
  "c0['handler_allocs'] == 0 or a0 >= 0" \
  "0 <= n <= c['handler_allocs']"
check heap "heap: the reads counted are exactly the program's, plus libc's own and those handler calls'; the writes within 8 of that (libc's own share varies by a few between runs), plus at most one write delivered again per thread and fork (a write permitted as another thread forks is delivered again after the copy-on-write fault ends its permit, docs/spec.md R-RET-2: a 90-second run with 52 forks counted 9 more)" \
  "exec(open(d + '/heapcalc.py').read()) or True" \
  "h['reads'] == c['reads'] + libc_r + n * rd" \
  "-8 <= h['writes'] - (c['writes'] + libc_w + n * w) <= 8 + c['forks'] * c['threads']"
check heapnf "heap: without forks, the --heap=rw run's allocations and reads counted are exactly the program's, plus libc's own and those handler calls'; the writes within 8 of that" \
  "rc == 0 and 'stress: ok' in out and c['forks'] == 0" \
  "exec(open(d + '/heapcalc.py').read()) or True" \
  "0 <= n <= c['handler_allocs']" \
  "h['reads'] == c['reads'] + libc_r + n * rd" \
  "abs(h['writes'] - (c['writes'] + libc_w + n * w)) <= 8"

check forks "forks: $nforks children forked while 3 threads allocate and take signals: none stuck, none failed" \
  "rc == 0" "'stress: forks: $nforks children, 0 stuck, 0 failed' in out" "E == []"
check as-low "as: RLIMIT_AS below the agent's reservations: one line from the agent naming RLIMIT_AS, status 2" \
  "rc == 2" "len(lines) == 1 and 'RLIMIT_AS' in lines[0]" "'stress: as' not in out"
check as-mid "as: RLIMIT_AS that leaves the agent its own memory but not ULPT's table view (512 GiB) or the heap's: one line naming RLIMIT_AS, status 2 (no run unwatched in a crippled address space)" \
  "rc == 2" "len(lines) == 1 and 'RLIMIT_AS' in lines[0]" "'stress: as' not in out"
check as "as: the address space exhausted by the program's own mappings: it allocates on and ends with status 0, the agent's report complete, no error" \
  "rc == 0" "'Cannot allocate memory' in out and 'blocks allocated with it reached: ok' in out" \
  "j['agent_report'] and j['faults'] is not None and E == [] and L == []"
check maps "maps: vm.max_map_count reached by the program (ULPT backend): it allocates on, status 0, the agent's report complete, no error" \
  "rc == 0" "'Cannot allocate memory' in out and 'blocks allocated with it reached: ok' in out" \
  "j['agent_report'] and j['faults'] is not None and E == [] and L == []"
check maps-mprotect "maps: the same on the mprotect backend: one line saying blocks are no longer checked, status 0" \
  "rc == 0" "'blocks allocated with it reached: ok' in out" \
  "len(lines) == 1 and 'max_map_count' in lines[0]" "E == []"

# The figures (make stress prints them).
python3 - "$d" > "$d/figures" <<'EOF' && tap_note "$(cat "$d/figures")" || tap_note "# (no figures)"
import json, re, sys
d = sys.argv[1]
for n in ('check', 'heap', 'forks'):
    try:
        o = open('%s/%s.out' % (d, n)).read()
        s = open('%s/%s.secs' % (d, n)).read().strip()
        j = json.load(open('%s/%s.json' % (d, n)))
    except (OSError, ValueError):
        continue
    c = {m.group(1): int(m.group(2)) for m in re.finditer(r'(\w+)=(\d+)', o)}
    errs = j.get('errors') or []
    if n == 'forks':
        print('# forks: %s s wall, %s' % (s, o.strip()))
        continue
    print('# %s: %s s wall (%s s of operations, %s threads): %s operations, %s allocations '
          '(%s realloc), %s frees, %s handovers, %s signals handled (%s allocating), %s forks '
          '(%s executing), %s reads and %s writes checked' %
          (n, s, c.get('seconds'), c.get('threads'), c.get('ops'), c.get('allocs'),
           c.get('reallocs'), c.get('frees'), c.get('handoffs'), c.get('signals_handled'),
           c.get('handler_allocs'), c.get('forks'), c.get('execs'), c.get('reads'), c.get('writes')))
    if n == 'check':
        L = [e for e in errs if e['kind'] == 'leak']
        print('# check: reports: %d errors, %d leak groups (%d blocks), %d faults, leak check %.1f ms'
              % (len(errs) - len(L), len(L), sum(e['objects'] for e in L), j['faults'] or 0,
                 (j.get('leak_check_ns') or 0) / 1e6))
    else:
        h = j.get('heap') or {}
        print('# heap: counted %s allocations, %s reads, %s writes; %s faults, handler %.1f ms'
              % (h.get('allocations'), h.get('reads'), h.get('writes'), j.get('faults'),
                 (j.get('handler_ns') or 0) / 1e6))
EOF

tap_checks_end
[ "$tap_fails" = 0 ]
