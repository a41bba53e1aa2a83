# Sourced by every shell suite (POSIX sh) for the checks it makes itself, so all of them print
# the same TAP and count failures the same way (sub-streams of other programs: tap-sub.sh).
#   tap_checks_begin [FILE]   start numbering; with FILE the checks are kept there until
#                             tap_checks_end, for a suite that knows its plan only at the end and
#                             prints sub-streams after it (watch.sh, stress.sh; tests/tap-run
#                             wants the plan first or last); without FILE each line goes out at once
#   tap_check STATUS DESC [DIAG]  one check: ok when STATUS is 0; if not, DIAG's lines follow
#                             as comments
#   tap_skip DESC             one check skipped (counts as a test, neither passed nor failed)
#   tap_note TEXT             a comment line (TEXT starts with "# ") or any TAP line
#   tap_checks_end            print the plan "1..N", then the kept checks
# A suite with a fixed plan prints it itself before its first check instead of calling
# tap_checks_end. tap_fails counts the failed checks (a suite adds its sub-streams' and exits
# non-zero when it is not 0).
tap_checks_begin() {
  _tap_checks=${1:-}
  [ -z "$_tap_checks" ] || : > "$_tap_checks"
  _tap_n=0
  tap_fails=0
}
tap_note() {
  if [ -n "${_tap_checks:-}" ]; then printf '%s\n' "$*" >> "$_tap_checks"; else printf '%s\n' "$*"; fi
}
tap_check() {
  _tap_n=$((_tap_n + 1))
  if [ "$1" = 0 ]; then
    tap_note "ok $_tap_n - $2"
    return 0
  fi
  tap_note "not ok $_tap_n - $2"
  tap_fails=$((tap_fails + 1))
  if [ -n "${3:-}" ]; then tap_note "$(printf '%s\n' "$3" | sed 's/^/# /')"; fi
}
tap_skip() {
  _tap_n=$((_tap_n + 1))
  tap_note "ok $_tap_n # SKIP $1"
}
tap_checks_end() {
  echo "1..$_tap_n"
  [ -z "${_tap_checks:-}" ] || cat "$_tap_checks"
}
