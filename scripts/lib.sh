# Shared helpers for the build and run scripts (sourced, not run).
die() { echo "${0##*/}: error: $*" >&2; exit 1; }
need() { local c; for c; do command -v "$c" >/dev/null 2>&1 || die "'$c' not found: run scripts/install-deps"; done; }
# Downloaded sources live outside the work tree so a fresh clone does not download them again.
ulpt_cache() { echo "${ULPT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ulpt}"; }
# Let ccache hit across checkouts in different folders (CI builds a fresh clone elsewhere).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# QEMU's configure flags, one a line (scripts/build-qemu, scripts/check-qemu-bisect).
qemu_configure_flags() {
  printf '%s\n' --target-list=x86_64-softmmu --without-default-features \
    --enable-tcg --enable-kvm --enable-virtfs --enable-attr --enable-cap-ng \
    --enable-trace-backends=log --disable-docs --disable-werror \
    --firmwarepath=/usr/share/qemu:/usr/share/seabios
}
# The pristine QEMU source (Debian's, patches applied) in the cache, or nothing.
qemu_pristine() {
  local d
  d=$(ls -d "$(ulpt_cache)"/qemu/qemu-7.2*/ 2>/dev/null | head -n1 || true)
  echo "${d%/}"
}
# Our QEMU files: qemu/files lists "PATCH FILE" (the patch of the series that adds FILE,
# which is target-ulpt/FILE). Prints "PATCH FILE" lines.
qemu_files() { # DIR (qemu/)
  sed -e '/^#/d' -e '/^$/d' "$1/files"
}

# A patch series is DIR/series (one file name a line, # comments) and the files it names.
series_patches() { sed -e '/^#/d' -e '/^$/d' "$1/series"; }
# Hash of the upstream version and the series: a source tree is re-made when it changes.
series_stamp() { # UPSTREAM DIR
  { echo "$1"; cat "$2/series"; series_patches "$2" | while read -r p; do cat "$2/$p"; done; } |
    sha256sum | cut -d' ' -f1
}
series_apply() { # DIR SRC UPSTREAM
  local p
  series_patches "$1" | while read -r p; do
    patch -s -p1 -d "$2" --no-backup-if-mismatch < "$1/$p" || die "${1#$top/}/$p does not apply to $3"
  done
}

# Our new kernel files: DIR/files lists "PATCH PATH" (the patch of DIR/patches/series that
# adds PATH; the file is DIR/PATH). Prints "PATCH PATH" lines.
linux_files() { # DIR
  sed -e '/^#/d' -e '/^$/d' "$1/files"
}
# Copies the new files into a kernel tree, only those that differ (mtimes kept: make
# rebuilds what changed). DIR SRC
linux_files_install() {
  local p f
  linux_files "$1" | while read -r p f; do
    if ! cmp -s "$1/$f" "$2/$f"; then
      mkdir -p "$(dirname "$2/$f")"
      cp -p "$1/$f" "$2/$f"
    fi
  done
}
