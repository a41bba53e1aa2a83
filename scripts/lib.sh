# Shared helpers for the build and run scripts (sourced, not run).
die() { echo "${0##*/}: error: $*" >&2; exit 1; }
need() { local c; for c; do command -v "$c" >/dev/null 2>&1 || die "'$c' not found: run scripts/install-deps"; done; }
# Downloaded sources live outside the work tree so a fresh clone does not download them again.
ulpt_cache() { echo "${ULPT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ulpt}"; }
# Let ccache hit across checkouts in different folders (CI builds a fresh clone elsewhere).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
