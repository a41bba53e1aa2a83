# Sourced by the suites that decide their checks after their runs (watch.sh, stress.sh): the
# checks are numbered as they are made and printed after the plan, which only the last one
# knows (tests/tap-run wants the plan first or last, and the suites also print sub-streams).
#   tap_checks_begin FILE      start (FILE holds the checks until tap_checks_end)
#   tap_check STATUS DESC [DIAG]  one check: ok when STATUS is 0; DIAG's lines as comments
#   tap_note TEXT              a comment line (TEXT starts with "# ") or any TAP line
#   tap_checks_end             print the plan and the checks
# tap_fails counts the failed checks (a suite adds its sub-streams' and exits non-zero).
tap_checks_begin() {
  _tap_checks=$1
  : > "$_tap_checks"
  _tap_n=0
  tap_fails=0
}
tap_note() { printf '%s\n' "$*" >> "$_tap_checks"; }
tap_check() {
  _tap_n=$((_tap_n + 1))
  if [ "$1" = 0 ]; then
    tap_note "ok $_tap_n - $2"
  else
    tap_note "not ok $_tap_n - $2"
    tap_fails=$((tap_fails + 1))
  fi
  if [ -n "${3:-}" ]; then tap_note "$(printf '%s\n' "$3" | sed 's/^/# /')"; fi
}
tap_checks_end() {
  echo "1..$_tap_n"
  cat "$_tap_checks"
}
