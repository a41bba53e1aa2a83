# Sourced by the suites (POSIX sh; the guest's sh too): tap_sub NAME COMMAND... runs COMMAND,
# a program printing TAP, and prints its stream whole as a sub-stream of the suite's, which
# tests/tap-run checks as it checks a program (its plan, its exit status, a run with no test)
# and prefixes with NAME. Returns COMMAND's exit status.
tap_sub() {
  _tap_sub_name=$1
  shift
  echo "#@@ begin $_tap_sub_name"
  "$@"
  _tap_sub_rc=$?
  echo
  echo "#@@ end $_tap_sub_name $_tap_sub_rc"
  return $_tap_sub_rc
}
