#!/usr/bin/env bash
# Host test of the ulpt-watch front end (TAP). It needs no ULPT CPU and not the real agent: a
# fake agent, built here, writes a fixed result file and records the environment it was given.
#
#   bash watchlib/test/cli.sh build/watchlib/ulpt-watch
#
# Checks: every bad input exits 2 with exactly one "ulpt-watch: " line on stderr, before the
# program runs and without leaving a result file; symbols resolve to r: (PIE) or a: (non-PIE)
# addresses as nm shows them; the settings reach the agent; the exit status, signals and the
# report (summary and JSON) come out right.
set -u
TOOL=$(realpath "${1:?usage: cli.sh PATH-TO-ulpt-watch}")
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/tmp" "$T/bin"
export TMPDIR=$T/tmp        # the tool's result files go here; it must be empty at the end
. "$(dirname "$0")/../../tests/lib/tap-checks.sh"
tap_checks_begin

# check DESC COMMAND...: one test, passing when COMMAND succeeds.
check() { local d=$1; shift; "$@"; tap_check $? "$d"; }
# run ARGS...: the tool with stdout, stderr and the exit status in $T/out, $T/err, $rc.
run() { "$TOOL" "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
errtext() { head -c 300 "$T/err" | tr '\n' '|'; }
# bad DESC ARGS...: exit status 2 and exactly one stderr line, "ulpt-watch: ...".
bad() {
	local d=$1; shift
	run "$@"
	local lines; lines=$(wc -l <"$T/err")
	if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q '^ulpt-watch: ' "$T/err" &&
	   [ ! -e "$T/ran" ]; then
		tap_check 0 "bad input: $d"
	else
		tap_check 1 "bad input: $d (status $rc, $lines stderr lines: $(errtext))"
	fi
	rm -f "$T/ran"
}
has() { grep -qF -- "$1" "$2"; }
envval() { sed -n "s/^$1=//p" "$T/env"; }
# optval KEY: KEY's value in the ULPT_WATCH_OPTIONS the agent got (unescaped), or <unset>.
optval() {
	envval ULPT_WATCH_OPTIONS | python3 -c "$optval_py" "$1"
}
optval_py='import re, sys
items = re.split(r"(?<!\\):", sys.stdin.read().rstrip("\n"))
kv = dict(i.split("=", 1) for i in items if "=" in i)
print(re.sub(r"\\(.)", r"\1", kv.get(sys.argv[1], "<unset>")))'


# The program under test: a global, a static (twice, in two files), a thread-local and a
# zero-sized variable; -O0 keeps them all. It leaves $T/ran behind so refusals can be told
# apart from runs, prints argv[0] on demand, and exits 3.
cat >"$T/a.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int counter;
static int hidden;
__thread int tlsvar;
char zerosize[0];
int bump(void);
int main(int argc, char **argv)
{
	const char *ran = getenv("CLI_TEST_RAN");
	(void)argc;
	if (ran)
		fclose(fopen(ran, "w"));
	if (getenv("CLI_TEST_ARGV0"))
		printf("%s\n", argv[0]);
	counter++; hidden++; tlsvar++;
	return 3 + bump() - 1;
}
EOF
cat >"$T/b.c" <<'EOF'
static int hidden;
int bump(void) { return ++hidden; }
EOF
# The fake agent: ULPT_WATCH_OPTIONS, ULPT_BACKEND and LD_PRELOAD to $FAKE_AGENT_ENV, a fixed
# report (or the one in $FAKE_AGENT_RESULT) to the file of the options' result=.
cat >"$T/fake.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((constructor)) static void fake_agent(void)
{
	static const char *names[] = {"ULPT_WATCH_OPTIONS", "ULPT_BACKEND", "LD_PRELOAD", NULL};
	const char *env = getenv("FAKE_AGENT_ENV"), *opts = getenv("ULPT_WATCH_OPTIONS");
	const char *text = getenv("FAKE_AGENT_RESULT"), *r = opts ? strstr(opts, "result=") : NULL;
	char res[4096] = "";
	FILE *f;
	int i;

	if (env && (f = fopen(env, "w"))) {
		for (i = 0; names[i]; i++)
			fprintf(f, "%s=%s\n", names[i], getenv(names[i]) ? getenv(names[i]) : "<unset>");
		fclose(f);
	}
	if (r)
		sscanf(r + 7, "%4095[^:]", res);
	if (*res && (f = fopen(res, "w"))) {
		fputs(text ? text : "backend\tmprotect\nwatch\t0\t0x1000\t4\t2\t3\nstats\t5\t5\t0\t100\n", f);
		fclose(f);
	}
}
EOF
if ! gcc -O0 -fPIE -pie -o "$T/pie" "$T/a.c" "$T/b.c" ||
   ! gcc -O0 -fno-pie -no-pie -o "$T/nopie" "$T/a.c" "$T/b.c" ||
   ! gcc -O0 -Wl,--dynamic-linker=/nonexistent/ld.so -o "$T/badinterp" "$T/a.c" "$T/b.c" ||
   ! gcc -O2 -shared -fPIC -o "$T/fake.so" "$T/fake.c"; then
	echo "Bail out! cannot build the test programs with gcc"
	exit 1
fi
export ULPT_WATCH_AGENT=$T/fake.so FAKE_AGENT_ENV=$T/env CLI_TEST_RAN=$T/ran
unset LD_PRELOAD ULPT_BACKEND FAKE_AGENT_RESULT
P=$T/pie
addr() { printf '0x%x' "$((16#$(nm "$1" | awk -v s="$2" '$3 == s { print $1; exit }')))"; }

# --- bad input ---
bad "unknown long option" --bogus -- "$P"
bad "unknown short option" -x -- "$P"
bad "option without its value" -w
bad "--check with a value other than 0 or 1" --check=2 -- "$P"
bad "missing PROGRAM" 
bad "missing PROGRAM after options" -v --
bad "bad LEN number" -w counter:12x -- "$P"
bad "negative LEN" -w counter:-1 -- "$P"
bad "LEN overflowing 64 bits" -w counter:99999999999999999999999 -- "$P"
bad "bad mode" -w counter/x -- "$P"
bad "empty mode" -w counter/ -- "$P"
bad "empty symbol" -w :4 -- "$P"
bad "empty symbol before a mode" -w /rw -- "$P"
bad "LEN 0" -w counter:0 -- "$P"
bad "address without 0x" -w 4096:4 -- "$P"
bad "address without LEN" -w 0x1000 -- "$P"
bad "bad address" -w 0x10g0:4 -- "$P"
bad "address + LEN wraps" -w 0xffffffffffffffff:2 -- "$P"
bad "address + LEN above user space" -w 0x7fffffffffff:2 -- "$P"
bad "unknown symbol" -w nosuchvar -- "$P"
check "unknown symbol message names symbol and program" has "ulpt-watch: no symbol 'nosuchvar' in $P" "$T/err"
bad "a function is not a variable" -w main -- "$P"
bad "thread-local variable" -w tlsvar -- "$P"
check "thread-local message" has "thread-local variables cannot be watched" "$T/err"
bad "zero-sized symbol without LEN" -w zerosize -- "$P"
bad "program not in PATH" -- no-such-program-ulpt-watch-test
bad "program path does not exist" -- "$T/no/such/program"
cp "$P" "$T/noexec"; chmod 644 "$T/noexec"
bad "program not executable" -- "$T/noexec"
bad "program is a directory" -- "$T"
printf '#!/bin/sh\nexit 0\n' >"$T/script"; chmod 755 "$T/script"
bad "program not an ELF file" -- "$T/script"
if [ -x /bin/busybox ] && ! readelf -l /bin/busybox 2>/dev/null | grep -q INTERP; then
	bad "statically linked program" -- /bin/busybox true
	check "statically linked message" has "is statically linked; LD_PRELOAD cannot inject the agent" "$T/err"
else
	tap_skip "statically linked program (no static /bin/busybox)"
	tap_skip "statically linked message (no static /bin/busybox)"
fi
bad "--heap and --check together" --heap --check -- "$P"
check "--heap/--check message" has "ulpt-watch: choose one of --heap and --check" "$T/err"
bad "--align without --check" --align=16 -- "$P"
bad "--align not a power of two" --check --align=3 -- "$P"
bad "--align above 4096" --check --align=8192 -- "$P"
bad "--redzone without --check" --redzone=line -- "$P"
bad "--redzone neither line nor exact" --check --redzone=page -- "$P"
bad "bad --heap mode" --heap=x -- "$P"
bad "bad --backend" --backend fast -- "$P"
ULPT_WATCH_AGENT=/nonexistent bad "agent not found, with a known symbol" -w counter -- "$P"
ULPT_WATCH_AGENT=/nonexistent bad "agent not found, no watches" -- "$P"
bad "--json file cannot be written" --json "$T/no/dir/out.json" -- "$P"
bad "--precise without --check" --precise -- "$P"
bad "--delivery with --check but not --precise" --check --delivery=fault -- "$P"
bad "--delivery alone" --delivery=log -- "$P"
bad "--delivery neither count, log nor fault" --heap --delivery=sync -- "$P"
check "--delivery's message names the values" has "ulpt-watch: bad --delivery 'sync' (count, log or fault)" "$T/err"
bad "--delivery=count with --check --precise (a count has no bytes to decide)" --check --precise --delivery=count -- "$P"
check "--check --precise --delivery=count message" has "ulpt-watch: --delivery=count works only with --heap (--check --precise: log or fault)" "$T/err"
bad "--delivery=count with --check alone" --check --delivery=count -- "$P"
bad "--check with a value that is not 0 or 1" --check=yes -- "$P"
bad "unknown option" --no-such-option -- "$P"
bad "--log-file in a directory that does not exist" --log-file="$T/no/dir/log" -- "$P"
bad "--error-exitcode above 255" --check --error-exitcode=256 -- "$P"
bad "--error-exitcode not a number" --check --error-exitcode=x -- "$P"
bad "--leaks neither none, definite nor all" --check --leaks=some -- "$P"
bad "--leaks without --check" --leaks=all -- "$P"
bad "--suppressions file that cannot be read" --check --suppressions="$T/no/such.supp" -- "$P"
check "--suppressions message" has "cannot read the suppressions file" "$T/err"
bad "--suppressions without --check" --suppressions=/dev/null -- "$P"
bad "--gen-suppressions without --check" --gen-suppressions -- "$P"
check "--gen-suppressions message names the option as typed" has "ulpt-watch: --gen-suppressions works only with --check" "$T/err"
bad "--halt-on-error with a value other than 0 or 1" --check --halt-on-error=yes -- "$P"
bad "--malloc-context-size without --check" --malloc-context-size=5 -- "$P"
bad "--malloc-context-size above 255" --check --malloc-context-size=256 -- "$P"
bad "--malloc-context-size not a number" --check --malloc-context-size=deep -- "$P"

# --- help and version ---
run --help
check "--help exits 0 with usage on stdout" eval '[ "$rc" -eq 0 ] && has Usage: "$T/out" && [ ! -s "$T/err" ]'
run --version
check "--version exits 0" eval '[ "$rc" -eq 0 ] && has ulpt-watch "$T/out"'

# --- running with the fake agent ---
run -w counter -- "$P"
check "the program's exit status (3) passes through" [ "$rc" -eq 3 ]
check "summary: backend" has "ulpt-watch: backend mprotect" "$T/err"
check "summary: the watch by its spec, with counts" has "ulpt-watch: watch 0 counter (0x1000, 4 bytes, w): 2 reads, 3 writes" "$T/err"
check "summary: stats" has "ulpt-watch: 5 faults, 5 hits, 0 false faults, handler 0.000 ms" "$T/err"
check "summary: peak memory and exit status" grep -q '^ulpt-watch: peak memory [0-9]* KiB, exit status 3$' "$T/err"
check "every summary line is prefixed" eval '! grep -qv "^ulpt-watch: " "$T/err"'
want="r,$(addr "$P" counter),4,w"
check "PIE: the watches option is $want" [ "$(optval watches)" = "$want" ]
run -w counter -- "$T/nopie"
want="a,$(addr "$T/nopie" counter),4,w"
check "non-PIE: the watches option is $want" eval '[ "$rc" -eq 3 ] && [ "$(optval watches)" = "$want" ]'
run -w counter:0x10/rw --watch 0x7f0000001000:64/r -w zerosize:2 -- "$P"
want="r,$(addr "$P" counter),16,rw;a,0x7f0000001000,64,r;r,$(addr "$P" zerosize),2,w"
check "several watches in order, hex LEN, modes" [ "$(optval watches)" = "$want" ]
run -v -w counter:0x10/rw -w zerosize:2 -- "$P"
check "-v: the names option has the specs as typed, one per line, ':' escaped" \
	eval 'grep -qF "names=counter\:0x10/rw" "$T/env" && grep -qx "zerosize.:2:*" "$T/env"'
run -w hidden -- "$P"
check "two statics named hidden: runs, one warning naming the count" \
	eval '[ "$rc" -eq 3 ] && [ "$(grep -c "warning: 2 symbols named '\''hidden'\''" "$T/err")" -eq 1 ]'
run -- "$P"
check "no watches: only the result file and the pid that writes it are set, ULPT_BACKEND unset" \
	eval '[ "$(optval watches)" = "<unset>" ] && [ "$(optval heap)" = "<unset>" ] && [ "$(optval check)" = "<unset>" ] && [ "$(envval ULPT_BACKEND)" = "<unset>" ] && [ "$(envval ULPT_WATCH_OPTIONS | tr ":" "\n" | grep -Evc "^(result(_pid)?=.*)?$")" = 0 ]'
check "the settings are padded with empty items to a multiple of 4 KiB (the program's stack does not move with them)" \
	eval '[ $(( $(envval ULPT_WATCH_OPTIONS | tr -d "\n" | wc -c) % 4096 )) = 4095 ] && envval ULPT_WATCH_OPTIONS | grep -q "::::\$"'
check "LD_PRELOAD is the agent" [ "$(envval LD_PRELOAD)" = "$(realpath "$T/fake.so")" ]
LD_PRELOAD=libm.so.6 run -- "$P"
check "LD_PRELOAD: the agent goes before the existing list" [ "$(envval LD_PRELOAD)" = "$(realpath "$T/fake.so"):libm.so.6" ]
# Each option of the table reaches the agent: CLI arguments -> its ULPT_WATCH_OPTIONS entry.
for c in "--heap|heap=w" "--heap=rw|heap=rw" "--heap=r|heap=r" "--check|check=1" \
	 "--check --precise|precise=1" "--check --align=0x40|align=64" "--check --align=1|align=1" \
	 "--check --redzone=exact|redzone=exact" "-v|verbose=1" "--verbose|verbose=1" \
	 "--follow-exec|follow_exec=1" "--backend mprotect|backend=mprotect" "--backend=ulpt|backend=ulpt" \
	 "--check --error-exitcode=3|error_exitcode=3" "--check --error-exitcode 255|error_exitcode=255" \
	 "--check --halt-on-error|halt_on_error=1" "--log-file=$T/log.%p|log_file=$T/log.%p" \
	 "--check --malloc-context-size=0|malloc_context_size=0" \
	 "--check --malloc-context-size 0x10|malloc_context_size=16" \
	 "--heap --delivery=fault|delivery=fault" "--check --precise --delivery=fault|delivery=fault" \
	 "--heap --delivery=log|delivery=log" "--check --precise --delivery=log|delivery=log"; do
	args=${c%|*} kv=${c#*|}
	# shellcheck disable=SC2086
	run $args -- "$P"
	check "$args reaches the agent as $kv" eval '[ "$rc" -eq 3 ] && [ "$(optval "${kv%%=*}")" = "${kv#*=}" ]'
done
for args in "--heap" "--heap --delivery=count" "--check --precise"; do
	# shellcheck disable=SC2086
	run $args -- "$P"
	check "$args: delivery stays the agent's default (unset: count for --heap, log for --check --precise)" \
		eval '[ "$rc" -eq 3 ] && [ "$(optval delivery)" = "<unset>" ]'
done
run --check -- "$P"
check "--check alone: align, redzone and malloc_context_size stay the agent's defaults (unset)" \
	eval '[ "$(optval align)" = "<unset>" ] && [ "$(optval redzone)" = "<unset>" ] && [ "$(optval malloc_context_size)" = "<unset>" ]'
ULPT_BACKEND=ulpt ULPT_WATCH_OPTIONS=heap=rw run --backend auto -- "$P"
check "--backend auto unsets ULPT_BACKEND; a stale ULPT_WATCH_OPTIONS is replaced" \
	eval '[ "$(envval ULPT_BACKEND)" = "<unset>" ] && [ "$(optval heap)" = "<unset>" ] && [ "$(optval backend)" = "<unset>" ]'
# --help and the man page list every option of the table.
run --help
cp "$T/out" "$T/help"
# man_lists NAME: an entry of ulpt-watch(1) (the line after a .TP) names --NAME.
man_lists() { grep -A1 '^\.TP' watchlib/man/ulpt-watch.1 | grep -qF -- "\-\-${1//-/\\-}"; }
for o in $(sed -n 's/^WL_OPTION(\([a-z_]*\),.*/\1/p' watchlib/common/options.inc | tr _ -); do
	check "--help and ulpt-watch(1) list --$o" eval 'grep -q -- "--$o" "$T/help" && man_lists "$o"'
done
cp "$P" "$T/bin/cliprog"
PATH=$T/bin:$PATH CLI_TEST_ARGV0=1 run -- cliprog
check "PATH lookup; argv[0] as typed" eval '[ "$rc" -eq 3 ] && [ "$(cat "$T/out")" = cliprog ]'

# --- JSON ---
run --json "$T/out.json" -w counter -- "$P" arg1
check "--json: exit status 3, no summary on stderr" eval '[ "$rc" -eq 3 ] && [ ! -s "$T/err" ]'
check "--json output parses and holds the counts" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
w = d["watches"][0]
assert d["backend"] == "mprotect" and d["exit_status"] == 3 and d["agent_report"] is True
assert d["program"] == [sys.argv[2], "arg1"]
assert w["spec"] == "counter" and w["address"] == "0x1000" and w["length"] == 4
assert w["mode"] == "w" and w["reads"] == 2 and w["writes"] == 3
assert d["faults"] == 5 and d["hits"] == 5 and d["false_faults"] == 0 and d["handler_ns"] == 100
assert isinstance(d["peak_memory_kib"], int) and "heap" not in d and "errors" not in d
' "$T/out.json" "$P"
run --json "$T/out.json" -- "$P" $'bad\xffutf8'
check "--json stays valid UTF-8 JSON with a non-UTF-8 argument" python3 -c '
import json, sys
assert json.load(open(sys.argv[1], encoding="utf-8"))["program"][1] == "bad\ufffdutf8"
' "$T/out.json"
export FAKE_AGENT_RESULT=$'backend\tulpt\nheap\t7\t8\t9\nstats\t1\t2\t3\t4\n'
run --heap=rw --json "$T/out.json" -- "$P"
check "--json with --heap: the heap object" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["heap"] == {"allocations": 7, "reads": 8, "writes": 9} and d["backend"] == "ulpt"
' "$T/out.json"
FAKE_AGENT_RESULT=$'backend\tmprotect\nerror\theap-overflow\twrite\t0x5010\t1\t0x401000\t0x5000\t16\nframe\taccess\t0x401000\tmain\tt.c:12\nframe\talloc\t0x401100\t?\t?\nframe\tfree\t0x401200\tg\tt.c:3\nend\nerror\tinvalid-free\tfree\t0x9\t0\t0x401300\t0x0\t0\nend\nstats\t1\t1\t0\t10\n'
run --check --json "$T/out.json" -- "$P"
check "--json with --check: error records and frames" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
e, f = d["errors"]
assert e["kind"] == "heap-overflow" and e["access"] == "write" and e["address"] == "0x5010"
assert e["size"] == 1 and e["ip"] == "0x401000" and e["block"] == {"address": "0x5000", "size": 16}
assert e["backtrace"] == [{"pc": "0x401000", "function": "main", "location": "t.c:12"}]
assert e["allocated"] == [{"pc": "0x401100", "function": None, "location": None}]
assert e["freed"][0]["function"] == "g" and f["kind"] == "invalid-free" and f["block"] is None
' "$T/out.json"
run --check -- "$P"
check "summary: errors by kind" has "ulpt-watch: 2 errors (1 heap-overflow, 1 invalid-free)" "$T/err"
# A leak record (its objects), a mismatch's pair, the suppressed count.
FAKE_AGENT_RESULT=$'backend\tulpt\nerror\tleak\tdirect\t0x5000\t96\t0x0\t0x5000\t32\texit\t3\t\nframe\talloc\t0x401100\tmk\tt.c:7\nend\nerror\talloc-dealloc-mismatch\tfree\t0x6000\t0\t0x401200\t0x6000\t8\taccess\t1\tmalloc vs operator delete\nend\nsuppressed\t4\nstats\t0\t0\t0\t0\n'
run --check --json "$T/out.json" -- "$P"
check "--json with --check: a leak's objects, a mismatch's pair, the suppressed count" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
l, m = d["errors"]
assert l["kind"] == "leak" and l["access"] == "direct" and l["size"] == 96 and l["objects"] == 3
assert l["allocated"] == [{"pc": "0x401100", "function": "mk", "location": "t.c:7"}]
assert m["pair"] == "malloc vs operator delete" and "objects" not in m and "pair" not in l
assert d["suppressed"] == 4
' "$T/out.json"
run --check -- "$P"
check "summary: leaks among the errors, and the suppressed reports" has "ulpt-watch: 2 errors (1 leak, 1 alloc-dealloc-mismatch), 4 suppressed" "$T/err"
FAKE_AGENT_RESULT=$'backend\tulpt\nwatch\t9\t0x1\t1\t1\t1\nwatch\tx\nstats\t1\t2\nframe\taccess\t0x1\tf\t?\nend\nfuture\t1\t2\nwatch\t0\t0x2000\t4\tNaN\t1\nstats\t1\t1\t0\t1\n'
run -w counter -- "$P"
check "malformed result lines: skipped with a warning each, no crash" \
	eval '[ "$rc" -eq 3 ] && [ "$(grep -c "malformed" "$T/err")" -eq 6 ] && has "ulpt-watch: watch 0 counter (base+" "$T/err" && ! grep -q future "$T/err"'
FAKE_AGENT_RESULT=
run -w counter -- "$P"
check "empty result file: \"the agent left no report\"" eval '[ "$rc" -eq 3 ] && has "ulpt-watch: the agent left no report" "$T/err"'
run --json "$T/out.json" -w counter -- "$P"
check "--json without a report: agent_report false, counts null" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["agent_report"] is False and d["faults"] is None and d["watches"][0]["reads"] is None
' "$T/out.json"
unset FAKE_AGENT_RESULT

# --- signals and exec failure ---
run -- sh -c 'kill -KILL $$'
check "killed by SIGKILL: exit status 137" [ "$rc" -eq 137 ]
check "killed by SIGKILL: message" has "ulpt-watch: sh killed by signal 9 (SIGKILL)" "$T/err"
"$TOOL" -- sleep 5 >/dev/null 2>"$T/err" & pid=$!
sleep 0.5; kill -TERM "$pid"; wait "$pid"; rc=$?
check "SIGTERM is forwarded to the program: exit status 143" [ "$rc" -eq 143 ]
# A background job of a script starts with SIGINT ignored; python restores the default first.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
	"$TOOL" -- sh -c 'sleep 1; exit 4' >/dev/null 2>"$T/err" & pid=$!
sleep 0.5; kill -INT "$pid"; wait "$pid"; rc=$?
check "SIGINT does not stop ulpt-watch" [ "$rc" -eq 4 ]
run -- "$T/badinterp"
check "exec failure: exit status 127 and one message" \
	eval '[ "$rc" -eq 127 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && has "ulpt-watch: cannot execute" "$T/err"'

check "no result file left behind" [ -z "$(ls -A "$T/tmp")" ]
tap_checks_end
[ "$tap_fails" = 0 ]
