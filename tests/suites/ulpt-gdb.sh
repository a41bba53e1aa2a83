#!/usr/bin/env bash
# ulpt-gdb: scripted GDB sessions (watchlib/test/gdb/NAME.gdb, gdb -batch -x) on
# watchlib/test/progs/gdbwatch, in the guest (ULPT backend; one boot, 2 vCPUs) and on the host
# (mprotect backend), each run in both. Each session's output, with its addresses, process
# and thread ids masked, must equal NAME.exp beside it, the same file for both backends
# (memcheck's tests keep their expected output so):
#   global prerun rwatch heap local cond enable many commands threads step badinput segv mixed
#   inserted batch blocked own57 nextbp
#   attach attach-noagent
# door (its own check): on ULPT the hits after the first stop through the door (gdb.c), on
# mprotect it stays shut; knock (its own check): with a batch, every hit, the first too;
# overflow (its own check): so too after a batch too big for the queue, which a call started;
# quiet (its own check): its output is quiet.exp, the listener's state masked; in the guest
# counter's silent stops (the door's) found GDB's stop event without our listener, on the host
# with it;
# (mixed, with one of GDB's own hardware watchpoints, is skipped on a host whose hardware
# watchpoints never stop: some virtual machines ignore the debug registers; hwexact too)
# and, in each:
#   hwexact    the hits, values and lines of ulpt watch on counter are GDB's own hardware
#              watchpoint's on it, stop for stop (skipped on a host whose hardware
#              watchpoints never stop: some virtual machines ignore the debug registers)
# The runs write NAME.out under build/watchlib/test/gdb-suite/{guest,host}.
set -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
gdbx=$top/build/watchlib/ulpt-gdb
prog=$top/build/watchlib/test/progs/gdbwatch
qprog=$top/build/watchlib/test/progs/gdbqueue
src=$top/watchlib/test/gdb
d=$top/build/watchlib/test/gdb-suite
rm -rf "$d" && mkdir -p "$d/guest" "$d/host" || exit 1
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin
for f in "$gdbx" "$prog" "$qprog"; do
  [ -x "$f" ] || { echo "1..1"; echo "not ok 1 - $f not built"; exit 1; }
done
command -v gdb > /dev/null || { echo "1..1"; echo "not ok 1 - gdb not installed"; exit 1; }

CASES="global prerun rwatch heap local cond enable many commands threads step badinput segv mixed
  inserted batch blocked own57 nextbp"
# The program and its part for each case (gdbqueue: the batches' sessions).
part() {
  case $1 in
    many) echo "$prog array" ;; threads | segv) echo "$prog $1" ;;
    batch) echo "$qprog array" ;; blocked | own57) echo "$qprog $1" ;; *) echo "$prog steps" ;;
  esac
}

# The script for one place (guest or host) in $1: every case, then attach (-p) and the
# hardware watchpoint comparison.
script() {
  echo "cd $d/$1"
  for c in $CASES; do
    echo "timeout 300 $gdbx -q -nx -batch -x $src/$c.gdb --args $(part "$c") > $c.out 2>&1"
  done
  for a in attach attach-noagent; do
    # Started with the agent as ulpt-gdb starts a program (ULPT_NO_UFFD: see ulpt-gdb).
    pre=$([ $a = attach ] && echo "ULPT_NO_UFFD=1 LD_PRELOAD=$top/build/watchlib/libulpt-watch-agent.so")
    echo "$pre $prog wait > $a.prog 2>&1 & pid=\$!"
    echo "sleep 1"
    echo "timeout 300 $gdbx -q -nx -batch -x $src/$a.gdb -p \$pid > $a.out 2>&1"
    echo "sleep 1; kill \$pid 2>/dev/null; wait \$pid; echo \"exit \$?\" >> $a.prog"
  done
  for c in door knock quiet; do
    echo "timeout 300 $gdbx -q -nx -batch -x $src/$c.gdb --args $prog steps > $c.out 2>&1"
  done
  echo "timeout 600 $gdbx -q -nx -batch -x $src/overflow.gdb --args $prog array > overflow.out 2>&1"
  for k in hw ulpt; do
    w=$([ $k = hw ] && echo watch || echo "ulpt watch")
    printf '%s\n' "printf 'break steps\nrun\n$w counter\ncontinue\ncontinue\ncontinue\ncontinue\n' > $k.gdb"
    echo "timeout 300 $gdbx -q -nx -batch -x $k.gdb --args $prog steps > hwexact-$k.out 2>&1"
  done
}
script guest > "$d/guest.sh"
script host > "$d/host.sh"
"$run" --share "$d" --smp 2 --timeout 1200 -- sh "$d/guest.sh" > "$d/guest.log" 2>&1 < /dev/null &
guest=$!
sh "$d/host.sh" > "$d/host.log" 2>&1 < /dev/null
wait $guest
grc=$?

# Masks what changes between runs: addresses, ids, the build's path, libthread_db's lines and
# the threads' start and end, whose order against the stops varies.
mask() {
  sed -E -e '/^\[New Thread 0x[0-9a-f]+ \(LWP [0-9]+\)\]$/d' \
    -e '/^\[Thread 0x[0-9a-f]+ \(LWP [0-9]+\) exited\]$/d' \
    -e '/^\[Thread debugging using libthread_db enabled\]$/d' \
    -e '/^Using host libthread_db library/d' \
    -e "s|$top|TOP|g" -e 's/0x[0-9a-f]{5,}/0xADDR/g' -e 's/process [0-9]+/process PID/g' \
    -e 's/LWP [0-9]+/LWP N/g' -e 's/^wait: [0-9]+$/wait: PID/' "$1"
}

echo "1..$((($(echo $CASES | wc -w) + 7) * 2))"
[ "$grc" = 0 ] || echo "# the guest run exited with status $grc: $(tail -c 300 "$d/guest.log" | tr '\n' ' ')"
# An attach first prints where the program was: somewhere in its wait loop.
masked() { case $2 in attach*) mask "$d/$1/$2.out" | sed '1,2d' ;; *) mask "$d/$1/$2.out" ;; esac; }
# hwexact: the same stops, but for the number and kind GDB gives its own watchpoint.
norm() { mask "$1" | sed -E 's/^(Hardware watchpoint) [0-9]+:/\1 N:/'; }
# door_case NAME STOPS DOORHITS WHERE BACKEND [notrap]: NAME.out made STOPS stops; in the guest
# DOORHITS of them through the door's watchpoint (and, with notrap, none through the trap stub)
# and the door open (ulpt_gdb_door.on 2); on the host none through it and no door (on 0).
door_case() {
  local c=$1 n=$2 want=$3 where=$4 backend=$5 notrap=${6:-} out doorhits traphits stops
  local desc="$where ($backend): $c: $(sed -n '1s/^# //p' "$src/$c.gdb")"
  out=$d/$where/$c.out
  doorhits=$(grep -A1 'acc watchpoint' "$out" 2>/dev/null |
    sed -n 's/.*already hit \([0-9]*\) time.*/\1/p')
  traphits=$(grep -A1 '<ulpt_gdb_trap>' "$out" 2>/dev/null |
    sed -n 's/.*already hit \([0-9]*\) time.*/\1/p' | head -n1)
  stops=$(grep -c '^Old value' "$out" 2>/dev/null)
  if [ $where = guest ]; then
    [ "$stops" = "$n" ] && grep -q '^\$1 = 2$' "$out" && [ "${doorhits:-0}" = "$want" ] &&
      { [ -z "$notrap" ] || [ -z "$traphits" ]; }
  else
    [ "$stops" = "$n" ] && grep -q '^\$1 = 0$' "$out" && [ -z "$doorhits" ]
  fi
  tap_check $? "$desc" "stops $stops, door hits ${doorhits:-none}, trap stub hits ${traphits:-none}: $(grep '^\$1' "$out" 2>/dev/null)"
}

# quiet_case WHERE BACKEND: quiet.out is quiet.exp but for the listener's state at counter's 3
# silent stops. In the guest it is off at the last, a quiet stop through the door (the first
# deletes the agent's start breakpoint at the stop event, the second stops at a breakpoint of
# the user's, through the trap stub); on the host (no door) it is never off.
quiet_case() {
  local where=$1 backend=$2 want n out=$d/$1/quiet.out
  want=$([ "$where" = guest ] && echo 1 || echo 0)
  n=$(grep -c "^listening False$" "$out" 2>/dev/null)
  diff -u "$src/quiet.exp" <(mask "$out" | sed -E 's/^listening (True|False)$/listening X/') \
    > "$d/$where/quiet.diff" 2>&1 && [ "$n" = "$want" ]
  tap_check $? "$where ($backend): quiet: $(sed -n '1s/^# //p' "$src/quiet.gdb")" \
    "listener off at $n of counter's stops, want $want; $(head -30 "$d/$where/quiet.diff")"
}

for where in guest host; do
  backend=$([ $where = guest ] && echo ULPT || echo mprotect)
  hw=$d/$where/hwexact-hw.out
  nohw=
  [ $where = host ] && [ -s "$hw" ] && ! grep -q '^Old value' "$hw" && nohw=1
  for c in $CASES attach attach-noagent; do
    desc="$where ($backend): $c: $(sed -n '1s/^# //p' "$src/$c.gdb")"
    if [ $c = mixed ] && [ -n "$nohw" ]; then
      tap_skip "$desc: GDB's hardware watchpoint never stopped here"
    elif [ -f "$d/$where/$c.out" ] && diff -u "$src/$c.exp" <(masked $where "$c") > "$d/$where/$c.diff"; then
      tap_check 0 "$desc"
    else
      tap_check 1 "$desc" "$(head -40 "$d/$where/$c.diff" 2>/dev/null)"
    fi
  done
  # door: counter's three stops, the first through the trap stub (the probe), two through the
  # door's watchpoint. knock: counter's three stops and total's one, all through the door (the
  # probe was the batch's knock, which is no hit of it). overflow: arr[100]'s and arr[200]'s,
  # both through the door and none through the trap stub (a knock inside the call that started
  # the full queue had left the probe unanswered, the door shut). None through it on mprotect.
  door_case door 3 2 "$where" "$backend"
  door_case knock 4 4 "$where" "$backend"
  door_case overflow 2 2 "$where" "$backend" notrap
  quiet_case "$where" "$backend"
  desc="$where ($backend): hwexact: ulpt watch's stops (hits, values, lines) are GDB's hardware watchpoint's"
  if [ -n "$nohw" ]; then
    # Some virtual machines take the debug registers' values and never trap.
    tap_skip "$desc: GDB's hardware watchpoint never stopped here"
  elif [ -s "$hw" ] && grep -q '^Hardware watchpoint' "$hw" &&
     diff -u <(norm "$hw") <(norm "$d/$where/hwexact-ulpt.out") > "$d/$where/hwexact.diff"; then
    tap_check 0 "$desc"
  else
    tap_check 1 "$desc" "$(head -40 "$d/$where/hwexact.diff" 2>/dev/null)"
  fi
done
[ "$tap_fails" = 0 ]
