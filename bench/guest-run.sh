#!/bin/sh
# Runs a benchmark plan inside the guest; scripts/bench writes the plan and boots the guest.
#
#   sh bench/guest-run.sh RUNSTAT PLAN RAWDIR [INPUTS]
#
# INPUTS (a directory) is first copied to /tmp/in, the guest's private RAM file system, so runs
# read their input from memory. Each plan line is
#
#   ID <TAB> TIMEOUT <TAB> FLAGS <TAB> COMMAND
#
# COMMAND is shell-quoted words. FLAGS is a comma-separated list: "show" echoes the command's
# standard output as "out ID LINE" lines; "in=FILE" gives it that standard input (default
# /dev/null); "stop=KEY": when this run times out, KEY is marked; "skip=KEY" (repeatable; "stop"
# implies it): a run is not made when one of its KEYs is marked (status "skipped"), so that
# runs that would take even longer than one that timed out do not wait for their timeout too.
# Each run goes through RUNSTAT (bench/runstat.c) with TIMEOUT seconds, and makes one line:
#
#   run ID wall_ns=N status=exit:N|signal:N|timeout|exec-failed:E|skipped maxrss_kb=N hash=HEX bytes=N note=TEXT
#
# hash and bytes are of the command's standard output; note is the last line of its standard
# error that looks like an error message (else its last line). When a run does not exit with
# status 0 the tail of its standard error is kept in RAWDIR/ID.err (slashes in ID made
# underscores). The last line is "done". Every process started here costs much in the emulated
# guest, so a run starts runstat and nothing else unless it shows its output or fails.
set -u
runstat=$1 plan=$2 raw=$3 inputs=${4:-}
tab=$(printf '\t')
mkdir -p "$raw"
if [ -n "$inputs" ]; then
  rm -rf /tmp/in && cp -r "$inputs" /tmp/in || { echo "guest-run: cannot copy $inputs"; exit 1; }
fi
echo "guest $(uname -r) $(nproc) cpu $(grep -m1 MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2) kB"
stopped=' '
while IFS="$tab" read -r id timeout flags cmd; do
  case "$id" in ''|'#'*) continue ;; esac
  input=/dev/null show= stop= skip=
  oldifs=$IFS; IFS=,
  for f in $flags; do
    case "$f" in
      in=*) input=${f#in=} ;;
      show) show=1 ;;
      stop=*) stop=${f#stop=}; skip="$skip ${f#stop=}" ;;
      skip=*) skip="$skip ${f#skip=}" ;;
    esac
  done
  IFS=$oldifs
  why=
  for k in $skip; do
    case "$stopped" in *" $k "*) why=$k; break ;; esac
  done
  if [ -n "$why" ]; then
    echo "run $id wall_ns=0 status=skipped maxrss_kb=0 hash= bytes=0 note=an earlier run ($why) timed out"
    continue
  fi
  eval "set -- $cmd"
  res=$("$runstat" -t "$timeout" -i "$input" -o /tmp/run.out -e /tmp/run.err -- "$@" </dev/null)
  [ -n "$show" ] && while IFS= read -r line || [ -n "$line" ]; do echo "out $id $line"; done < /tmp/run.out
  case "$res" in
    *status=exit:0\ *) ;;
    *status=timeout*) [ -n "$stop" ] && stopped="$stopped$stop "
      tail -n 40 /tmp/run.err > "$raw/$(printf '%s' "$id" | tr '/ ' '__').err" ;;
    *) tail -n 40 /tmp/run.err > "$raw/$(printf '%s' "$id" | tr '/ ' '__').err" ;;
  esac
  echo "run $id ${res#runstat }"
done < "$plan"
echo done
