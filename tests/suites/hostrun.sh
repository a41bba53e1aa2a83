#!/usr/bin/env bash
# The guest runs the host's programs as the host would (scripts/ulpt-run without --isolated):
# dynamically linked binaries and Debian's tools at their paths, the share read-write at its
# own path, the rest of the host read-only, stdin/stdout/stderr byte-exact and separate, exit
# statuses (signals as 128+N), --env, --isolated, and ulpt-run from any directory or installed;
# the host's /tmp at its paths under the guest's private writable layer (a library installed
# under /tmp used from the guest: libulpt, and watchlib through its pkg-config file).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$top/scripts/ulpt-run
. "$top/tests/lib/tap-checks.sh"
tap_checks_begin
# Scratch space: the share under build/, and a directory under the host's /tmp (which the guest
# sees read-only, with its own writes kept in the guest).
tmp=$(mktemp -d "$top/build/hostrun.XXXXXX"); htmp=$(mktemp -d /tmp/ulpt-hostrun.XXXXXX)
trap 'rm -rf "$tmp" "$htmp"' EXIT
cd "$tmp" || exit 1
echo "1..30"

printf '#include <stdio.h>\nint main(void) { puts("hello, dynamic"); return 3; }\n' > hello.c
gcc -O2 -o hello hello.c
out=$("$run" -- ./hello 2>&1); rc=$?
tap_check $([ $rc = 3 ] && [ "$out" = "hello, dynamic" ]; echo $?) "a dynamically linked program built with plain gcc runs (rc=$rc, out=$out)"

out=$("$run" -- perl -e 'print 1+1' 2>&1)
tap_check $([ "$out" = 2 ]; echo $?) "perl starts (out=$out)"
out=$("$run" -- python3 -c 'print(2)' 2>&1)
tap_check $([ "$out" = 2 ]; echo $?) "python3 starts (out=$out)"
out=$("$run" -- gdb --batch -ex 'show version' 2>&1 | head -n1)
tap_check $([[ "$out" == "GNU gdb"* ]]; echo $?) "gdb starts ($out)"
out=$("$run" -- valgrind --version 2>&1)
tap_check $([[ "$out" == valgrind-* ]]; echo $?) "valgrind starts ($out)"
out=$("$run" -- sqlite3 :memory: 'select 1+1' 2>&1)
tap_check $([ "$out" = 2 ]; echo $?) "sqlite3 starts ($out)"

out=$(echo data | "$run" -- wc -c 2>&1)
tap_check $([ "$out" = 5 ]; echo $?) "stdin reaches the command: echo data | ulpt-run -- wc -c prints 5 ($out)"
out=$("$run" -- sh -c 'echo out; echo err >&2' 2>/dev/null)
tap_check $([ "$out" = out ]; echo $?) "stdout alone on stdout ($out)"
out=$("$run" -- sh -c 'echo out; echo err >&2' 2>&1 >/dev/null)
tap_check $([ "$out" = err ]; echo $?) "stderr alone on stderr ($out)"
"$run" -- cat /bin/true | cmp -s - /bin/true
tap_check $? "binary output is byte-exact: cat /bin/true | cmp - /bin/true"
head -c 300000 /dev/urandom > blob
"$run" -- cat < blob | cmp -s - blob
tap_check $? "300 kB of binary stdin comes back byte-exact"

"$run" -- false; rc1=$?
"$run" -- sh -c 'exit 42'; rc2=$?
"$run" -- sh -c 'kill -TERM $$' 2>/dev/null; rc3=$?
"$run" -- sh -c 'kill -KILL $$' 2>/dev/null; rc4=$?
tap_check $([ $rc1 = 1 ] && [ $rc2 = 42 ] && [ $rc3 = 143 ] && [ $rc4 = 137 ]; echo $?) \
   "exit statuses: false 1, exit 42, SIGTERM 143, SIGKILL 137 (got $rc1 $rc2 $rc3 $rc4)"

"$run" -- sh -c 'echo from-guest > written; mkdir -p sub && echo deep > sub/f' 2>&1
tap_check $([ "$(cat written 2>/dev/null)" = from-guest ] && [ "$(cat sub/f 2>/dev/null)" = deep ]; echo $?) \
   "files written in the share appear on the host"
out=$("$run" -- sh -c "pwd; echo x > '$top/README.md.guest' || echo refused; echo y > /etc/ulpt-guest-write || echo refused" 2>/dev/null)
tap_check $([ "$out" = "$(pwd -P)
refused
refused" ] && [ ! -e "$top/README.md.guest" ] && [ ! -e /etc/ulpt-guest-write ]; echo $?) \
   "the share is the working directory; writes outside it fail and reach nothing ($(echo $out))"
echo from-host > "$htmp/host-file"
out=$("$run" --no-share -- cat "$htmp/host-file" 2>&1)
tap_check $([ "$out" = from-host ]; echo $?) "a file made on the host under /tmp is read in the guest at its path ($out)"
g=/tmp/${htmp##*/}-guest
out=$("$run" --no-share -- sh -c "echo changed > '$htmp/host-file' && cat '$htmp/host-file' &&
  echo new > '$htmp/guest-file' && mkdir '$g' && echo deep > '$g/f' && cat '$htmp/guest-file' '$g/f' &&
  rm '$htmp/guest-file' && test ! -e '$htmp/guest-file' && echo removed" 2>&1)
tap_check $([ "$out" = "changed
new
deep
removed" ] && [ "$(cat "$htmp/host-file")" = from-host ] && [ ! -e "$htmp/guest-file" ] && [ ! -e "$g" ]; echo $?) \
   "writes to /tmp in the guest succeed and stay in the guest: the host's file unchanged, no new files ($(echo $out))"
mkdir "$htmp/share"
out=$(cd / && "$run" --share "$htmp/share" -- sh -c 'pwd; echo through > written' 2>&1)
tap_check $([ "$out" = "$htmp/share" ] && [ "$(cat "$htmp/share/written" 2>/dev/null)" = through ]; echo $?) \
   "a share under /tmp is the working directory and its writes reach the host ($out)"

out=$("$run" --isolated --no-share -- sh -c 'ls /usr/bin/perl /etc/debian_version 2>&1 | wc -l; test -e /usr/bin/perl && echo host-visible' 2>&1)
tap_check $([ "$out" = 2 ] || [[ "$out" != *host-visible* ]]; echo $?) "--isolated sees no host files ($out)"
out=$("$run" --isolated --no-share -- sh -c "test -e '$htmp/host-file' && echo host-tmp-visible; echo t > /tmp/own && cat /tmp/own" 2>&1)
tap_check $([ "$out" = t ]; echo $?) "--isolated: /tmp is the guest's own, without the host's files ($out)"

out=$("$run" --env FOO=bar --env 'SPACED=a b' -- sh -c 'echo "$FOO|$SPACED|$HOME"' 2>&1)
tap_check $([ "$out" = "bar|a b|/tmp" ]; echo $?) "--env passes variables; HOME is /tmp ($out)"
"$run" --env 1BAD=x -- true 2>/dev/null; rc=$?
tap_check $([ $rc = 125 ]; echo $?) "--env with a bad name is a usage error (rc=$rc)"
out=$("$run" -- sh -c 'command -v ulpt-info; echo "$PATH"' 2>&1)
tap_check $([[ "$out" == */ulpt-info*/usr/bin* ]]; echo $?) "PATH has Debian's directories and the ULPT guest programs"

out=$(cd / && "$run" --share "$tmp" -- ./hello 2>&1); rc=$?
tap_check $([ $rc = 3 ] && [ "$out" = "hello, dynamic" ]; echo $?) "ulpt-run works from another directory (rc=$rc)"
out=$(cd / && "$run" --no-share -- sh -c 'pwd; { echo x > /f; } 2>/dev/null || echo ro' 2>&1)
tap_check $([ "$out" = "/
ro" ]; echo $?) "--no-share: the current directory, read-only ($(echo $out))"

# One install under /tmp: the installed ulpt-run (its ULPT tree kept read-only in the guest),
# and programs built against the installed libulpt and watchlib with pkg-config, their rpath
# under /tmp, run on the host and in the guest.
inst=$htmp/inst
make -s -C "$top" install PREFIX="$inst" >/dev/null 2>&1
out=$(cd / && "$inst/bin/ulpt-run" --share "$tmp" -- sh -c './hello; ulpt-info | head -n1' 2>&1)
tap_check $([[ "$out" == "hello, dynamic"*"kernel:"*6.1* ]]; echo $?) "make install PREFIX=/tmp/...: the installed ulpt-run runs programs ($(echo $out | head -c 80))"
export PKG_CONFIG_PATH=$inst/lib/pkgconfig
out=$(gcc -o "$htmp/ex" "$top/examples/watch-write.c" $(pkg-config --cflags --libs libulpt) -Wl,-rpath,"$inst/lib" 2>&1 &&
      "$run" --no-share -- "$htmp/ex" 2>&1)
tap_check $([[ "$out" == *"backend: ulpt"*"buffer[100] = 'x'"* ]]; echo $?) \
   "a program built against libulpt installed under /tmp (pkg-config, rpath) runs in the guest ($(echo $out | head -c 80))"
cat > "$htmp/wl.c" <<'C'
#include <stdio.h>
#include <watchlib.h>
static int data[64] __attribute__((aligned(4096)));
static int hits;
static void on_hit(const struct wl_hit *h, void *arg) { (void)arg; hits += h->kind == WL_WRITE; }
int main(void)
{
	volatile int *d = data;
	uint64_t r, w;
	int id, i;

	if (wl_init(ULPT_BACKEND_AUTO) || wl_set_callback(on_hit, NULL))
		return 1;
	id = wl_watch(&data[3], sizeof(int), WL_WRITE);
	for (i = 0; i < 5; i++)
		d[3] += i;
	d[4] = 1;                               /* a neighbour: not counted */
	if (id < 0 || wl_counts(id, &r, &w))
		return 1;
	printf("backend %s: %llu writes, %d hits, data[3] = %d\n",
	       ulpt_backend_name(ulpt_backend()), (unsigned long long)w, hits, d[3]);
	return wl_fini();
}
C
flags=$(pkg-config --cflags --libs watchlib 2>&1)
tap_check $([[ "$flags" == "-I$inst/include -L$inst/lib -lwatch -lulpt"* ]]; echo $?) "pkg-config --cflags --libs watchlib: libwatch and the libulpt it requires ($flags)"
gcc -O2 -o "$htmp/wl" "$htmp/wl.c" $flags -Wl,-rpath,"$inst/lib" >/dev/null 2>&1
out=$("$htmp/wl" 2>&1)
tap_check $([ "$out" = "backend mprotect: 5 writes, 5 hits, data[3] = 10" ]; echo $?) "a watchlib program built with pkg-config runs on the host ($out)"
out=$("$run" --no-share -- "$htmp/wl" 2>&1)
tap_check $([ "$out" = "backend ulpt: 5 writes, 5 hits, data[3] = 10" ]; echo $?) "...and in the guest, on the ULPT backend ($out)"
# libwatch links libulpt: libulpt's global symbols are not among libwatch's own definitions
# (shared or static), ulpt_init is an undefined symbol of libwatch.so, which needs libulpt.so.0.
so=$(readelf -d "$inst/lib/libwatch.so.0" 2>&1)
ulpt_syms=$(nm -g --defined-only "$inst/lib/libulpt.a" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u)
wl_syms=$( { nm -D --defined-only "$inst/lib/libwatch.so.0"; nm -g --defined-only "$inst/lib/libwatch.a"; } 2>/dev/null |
  awk 'NF == 3 { print $3 }' | sort -u)
own=$(comm -12 <(echo "$ulpt_syms") <(echo "$wl_syms") | wc -l)
tap_check $([[ "$so" == *"NEEDED"*"[libulpt.so.0]"* && "$so" == *"SONAME"*"[libwatch.so.0]"* ]] && [ "$own" = 0 ] &&
     [ -n "$wl_syms" ] && [[ $'\n'"$ulpt_syms"$'\n' == *$'\n'ulpt_init$'\n'* ]] &&
     nm -D --undefined-only "$inst/lib/libwatch.so.0" | grep -qw ulpt_init &&
     [ "$(ldd "$htmp/wl" | grep -c "$inst/lib/lib\(watch\|ulpt\)\.so\.0")" = 2 ] && [ -f "$inst/include/watchlib.h" ]; echo $?) \
   "libwatch.so.0 (soname) needs libulpt.so.0; neither it nor libwatch.a defines libulpt's symbols ($own of libulpt's $(echo "$ulpt_syms" | wc -w) defined there)"
[ "$tap_fails" = 0 ]
