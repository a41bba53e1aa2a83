#!/usr/bin/env python3
"""Checks one ulpt-watch run of tests/suites/watch.sh against its expectation file.

    expect.py RUN PREDFILE [NAME=VALUE...]

RUN is the run's path without extension: RUN.out, RUN.err, RUN.rc (stdout, stderr, exit
status), RUN.json (the --json report; none for a bare LD_PRELOAD run, named bare-*) and RUN.res
(a bare run's result file). PREDFILE is watchlib/test/expected/NAME.pred, or NAME.host.pred /
NAME.guest.pred where the two differ: its first line is "# " and the check's description, each
further line one Python expression (a predicate) that must hold for the run. NAME=VALUE pairs
are further names for the expressions: watch.sh passes BACKEND (the backend the environment
runs on, a string) and ADDR (the address of `watched` in the -no-pie build, an int). (Literal
expected text, NAME.stderr.exp, watch.sh compares itself after watchlib/test/filter-report.)

What changes from run to run never appears in a .pred: the names below normalise it.
  addresses  are compared to the ones the program prints about itself: B (heapbugs',
             strbugs', wcsbugs' and fortbugs' line: fn, block, size, addr, line), MM
             (mismatch's block and pair of names), P (padding's lines); h() reads a report's
             "0x..." address as an int
  pids       FK (forkbug's parent, child and status), logs(PREFIX) (the log files PREFIX-PID.txt
             beside the run, by pid)
  timings    only ever compared with 0 or None (j['leak_check_ns'] > 0)
  the report j, its watches W, errors E (not the leak check's), leaks L, heap counts H; rc,
  out, err, res; fns(frames) and locs(frames, fn) read a backtrace.

Prints nothing and exits 0 when every expression holds. Otherwise exits 1 and prints a unified
diff of the .pred against this run (each expression that does not hold marked with its value or
error), then the report (addresses masked as 0xADDR, the block's as BLOCK+N, pids as PID) and the
end of stderr.
"""
import difflib, glob, json, os, re, sys

base, predfile = sys.argv[1], sys.argv[2]
extra = {}
for a in sys.argv[3:]:
    k, v = a.split('=', 1)
    extra[k] = int(v, 0) if re.fullmatch(r'0x[0-9a-fA-F]+|\d+', v) else v
with open(predfile) as f:
    lines = f.read().splitlines()
if not lines or not lines[0].startswith('# ') or len(lines) < 2:
    print('%s: a "# description" line and at least one expression needed' % predfile)
    sys.exit(1)
exprs = lines[1:]


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
m = re.search(r'(?:heapbugs|strbugs|wcsbugs|fortbugs): \S+ (?:fn=(\S+) )?block=(\S+) size=(\d+) addr=(\S+) line=(\d+)', err)
B = m and dict(fn=m[1], block=0 if m[2] == '(nil)' else int(m[2], 16), size=int(m[3]),
               addr=int(m[4], 16), line=int(m[5]))
names = dict(globals())
names.update(extra)

got, bad = [], 0
for x in exprs:
    try:
        v = eval(x, names)
        if v:
            got.append(x)
            continue
        got.append('%s    # false (%r)' % (x, v) if not isinstance(v, bool) else x + '    # false')
    except Exception as e:
        got.append('%s    # %s: %s' % (x, type(e).__name__, e))
    bad += 1
if not bad:
    sys.exit(0)


def normalise(s):
    """Masks what changes between runs: the block's addresses as BLOCK+N, other addresses as
    0xADDR, forkbug's pids as PID."""
    blk = B and B['block']

    def addr(mo):
        a = int(mo[0], 16)
        if blk and -65536 <= a - blk <= 65536 + (B['size'] or 0):
            return 'BLOCK%+d' % (a - blk) if a != blk else 'BLOCK'
        return '0xADDR'
    s = re.sub(r'0x[0-9a-fA-F]{5,}', addr, s)
    for p in (FK or {}).get('parent'), (FK or {}).get('child'):
        if p:
            s = re.sub(r'\b%d\b' % p, 'PID', s)
    return s


sys.stdout.writelines(difflib.unified_diff([l + '\n' for l in lines], [lines[0] + '\n'] + [l + '\n' for l in got],
                                           os.path.relpath(predfile), 'this run (%s)' % os.path.basename(base)))
brief = dict(j)
if brief.get('errors'):
    brief['errors'] = brief['errors'][:2]
print(normalise('exit status %d; report: %s' % (rc, json.dumps(brief)[:1500])))
if err.strip():
    print(normalise('stderr: ' + err.strip()[-600:].replace('\n', ' | ')))
sys.exit(1)
