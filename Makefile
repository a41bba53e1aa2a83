# ULPT on QEMU: top-level build. `make run` boots the demo, `make test` runs every test.
# Everything is built under build/; see README.md.
SHELL := /bin/bash
B := build
QEMU_BIN := $(B)/qemu/obj/qemu-system-x86_64
KERNEL := $(B)/linux/obj/arch/x86/boot/bzImage
INITRAMFS := $(B)/initramfs.cpio
CC := gcc
GUEST_CFLAGS := -O2 -g -Wall -Wextra -Werror -static -Iguest -Iinclude -Ilibulpt/include -I$(B)/linux/headers/include

GUEST_PROGS := $(patsubst guest/%.c,$(B)/guest/bin/%,$(wildcard guest/*.c))
GUEST_TESTS := $(patsubst tests/guest/%.c,$(B)/guest/tests/%,$(wildcard tests/guest/*.c)) $(B)/guest/tests/ulpt
# Host unit tests (no guest) and suites that boot the guest; each prints TAP.
UNIT_TESTS := $(wildcard tests/unit/*.sh)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/*.c))
SUITES := $(wildcard tests/suites/*.sh tests/suites/*.py)
# Single-source compiles write the headers they read (the installed kernel uapi headers among
# them) to .TARGET.d next to the target (hidden, so globs of programs skip it), and a header
# change rebuilds what includes it; -MP keeps a removed header from breaking the build.
DEPFLAGS = -MMD -MP -MF $(@D)/.$(@F).d

.PHONY: all deps qemu kernel initramfs libulpt watchlib run check check-qemu-bisect check-real test bench bench-quick install clean
all: qemu kernel initramfs libulpt watchlib

# install-deps runs once, and again whenever it changes (it lists the packages): the stamp
# keeps make from asking dpkg about every package on every call.
deps: $(B)/.deps-stamp
$(B)/.deps-stamp: scripts/install-deps
	@scripts/install-deps
	@mkdir -p $(@D) && touch $@

qemu: | deps
	@scripts/build-qemu

kernel: | deps
	@scripts/build-kernel
# The same kernel with KASAN, lockdep, kmemleak and DEBUG_VM (linux/debug.config), in its own
# build directory, for make fuzz-kernel. Not part of all.
KERNEL_DEBUG := $(B)/linux-debug/obj/arch/x86/boot/bzImage
.PHONY: kernel-debug
kernel-debug: | deps
	@scripts/build-kernel --dir $(B)/linux-debug --fragment linux/debug.config

initramfs: $(INITRAMFS)

$(B)/guest/bin/%: guest/%.c guest/ulpt-handler.h include/ulpt/arch.h libulpt/include/ulpt.h | kernel
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(DEPFLAGS) -o $@ $<
$(B)/guest/tests/%: tests/guest/%.c tests/lib/tap.h tests/lib/select.h guest/ulpt-handler.h include/ulpt/arch.h | kernel
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) $(DEPFLAGS) -Itests/lib -o $@ $< -lpthread

# The kernel's ULPT selftest, built as kselftest builds it, from the patched tree (scripts/
# build-kernel copies linux/tools/testing/selftests/x86/ulpt.c there) and the installed headers.
SELFTESTS := $(B)/linux/src/tools/testing/selftests
$(B)/guest/tests/ulpt: linux/tools/testing/selftests/x86/ulpt.c linux/arch/x86/include/uapi/asm/ulpt.h | kernel
	@mkdir -p $(@D)
	$(CC) -O2 -g -std=gnu99 -pthread -Wall -Werror -static $(DEPFLAGS) -I$(SELFTESTS) \
	  -I$(B)/linux/headers/include -o $@ $(SELFTESTS)/x86/ulpt.c

$(INITRAMFS): $(GUEST_PROGS) $(GUEST_TESTS) guest/init tests/tap-run scripts/build-initramfs | kernel
	@scripts/build-initramfs $@

# The kernel's uapi header and the ABI header agree (needs the installed kernel headers).
$(B)/tests/unit/abi-agree: tests/unit/abi-agree.c include/ulpt/arch.h tests/lib/tap.h tests/lib/select.h | kernel
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror $(DEPFLAGS) -Iinclude -I$(B)/linux/headers/include -Itests/lib -o $@ $<

# Host unit tests of the ULPT decision logic, built against target-ulpt/ulpt-core.c.
$(B)/tests/unit/%: tests/unit/%.c target-ulpt/ulpt-core.c target-ulpt/ulpt-core.h include/ulpt/arch.h tests/lib/tap.h tests/lib/select.h
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Itarget-ulpt -Itests/lib -o $@ $< target-ulpt/ulpt-core.c

# Bare-metal CPU tests (no kernel): PVH-booted ELF images run by tests/suites/cpu.sh.
BM_CFLAGS := -O1 -g -ffreestanding -fno-pic -no-pie -nostdlib -static -mno-red-zone \
	-mgeneral-regs-only -fno-stack-protector -fno-asynchronous-unwind-tables -Wall -Wextra \
	-Werror -Iinclude -Itests/lib -Wl,-T,tests/baremetal/kernel.ld -Wl,--build-id=none -Wl,-z,noexecstack
BM_COMMON := tests/baremetal/boot.S tests/baremetal/bm.c
BM_IMAGES := $(patsubst tests/baremetal/%.c,$(B)/baremetal/%.elf,$(filter-out tests/baremetal/bm.c,$(wildcard tests/baremetal/*.c)))
$(B)/baremetal/%.elf: tests/baremetal/%.c $(BM_COMMON) tests/baremetal/bm.h tests/lib/select.h tests/baremetal/kernel.ld include/ulpt/arch.h
	@mkdir -p $(@D)
	$(CC) $(BM_CFLAGS) -o $@ $(BM_COMMON) $<

# libulpt: a static and a shared library (soname libulpt.so.0), its pkg-config file, its test
# suite and the examples. Built for the host; the guest runs the same binaries from the host's
# files (scripts/ulpt-run).
LIBULPT_VERSION := 0.1.0
LIBULPT_SONAME := libulpt.so.0
LB := $(B)/libulpt
LIB_CFLAGS := -O2 -g -Wall -Wextra -Werror -fPIC -Ilibulpt/include -Iinclude
LIB_OBJS := $(LB)/ulpt.o $(LB)/mprotect.o $(LB)/ool.o $(LB)/dispatch.o $(LB)/log.o $(LB)/entry.o \
	    $(LB)/uffd.o
LIB_HDRS := libulpt/include/ulpt.h libulpt/src/internal.h libulpt/src/uapi.h include/ulpt/arch.h
$(LB)/%.o: libulpt/src/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) $(DEPFLAGS) -c -o $@ $<
$(LB)/dispatch.o $(LB)/log.o: LIB_CFLAGS += -mgeneral-regs-only
$(LB)/%.o: libulpt/src/%.S include/ulpt/arch.h
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) $(DEPFLAGS) -c -o $@ $<
$(LB)/libulpt.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
$(LB)/$(LIBULPT_SONAME).1.0: $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,$(LIBULPT_SONAME) -o $@ $^ -lpthread
$(LB)/libulpt.so: $(LB)/$(LIBULPT_SONAME).1.0
	ln -sf $(LIBULPT_SONAME).1.0 $(LB)/$(LIBULPT_SONAME) && ln -sf $(LIBULPT_SONAME) $@
# Tests and examples link the shared library from the build tree ($ORIGIN-relative rpath).
$(LB)/test/%: libulpt/test/%.c libulpt/include/ulpt.h tests/lib/tap.h tests/lib/tap-fork.h tests/lib/select.h $(LB)/libulpt.so
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Ilibulpt/include -Itests/lib -o $@ $< -L$(LB) -lulpt -lunwind -lpthread '-Wl,-rpath,$$ORIGIN/..'
$(B)/examples/%: examples/%.c libulpt/include/ulpt.h $(LB)/libulpt.so
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Ilibulpt/include -o $@ $< -L$(LB) -lulpt -lpthread '-Wl,-rpath,$$ORIGIN/../libulpt'
# Plain programs for the watch demo and the README tutorial (no libulpt: ulpt-watch injects).
$(B)/examples/%: examples/demo/%.c
	@mkdir -p $(@D)
	$(CC) -O0 -g -Wall -Wextra -Werror -o $@ $<
$(B)/bench/%: bench/%.c bench/raw-stub.h libulpt/include/ulpt.h $(LB)/libulpt.so
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Ilibulpt/include -Iinclude -o $@ $< -L$(LB) -lulpt -lpthread '-Wl,-rpath,$$ORIGIN/../libulpt'
# primitives' lean log drain, built general-register-only as ulpt_log_set_raw(3) asks.
$(B)/bench/primitives: bench/primitives.c bench/log-drain.c bench/raw-stub.h libulpt/include/ulpt.h $(LB)/libulpt.so
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -mgeneral-regs-only -Ilibulpt/include -Iinclude -c -o $@-drain.o bench/log-drain.c
	$(CC) -O2 -g -Wall -Wextra -Werror -Ilibulpt/include -Iinclude -o $@ $< $@-drain.o -L$(LB) -lulpt -lpthread '-Wl,-rpath,$$ORIGIN/../libulpt'
LIBULPT := $(patsubst bench/%.c,$(B)/bench/%,$(filter-out bench/lsan-init.c bench/fixed-clock.c bench/log-drain.c,$(wildcard bench/*.c))) $(B)/bench/lsan-init.so $(B)/bench/fixed-clock.so $(LB)/libulpt.a $(LB)/libulpt.so $(patsubst libulpt/test/%.c,$(LB)/test/%,$(wildcard libulpt/test/*.c)) \
	$(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
libulpt: $(LIBULPT)

# watchlib (exact watchpoints over libulpt), the ulpt-watch agent (LD_PRELOAD) and tool, their
# test programs. The agent links libulpt's objects in, so it needs nothing installed.
WB := $(B)/watchlib
WL_CFLAGS := -O2 -g -Wall -Wextra -Werror -fPIC -Iwatchlib/include -Iwatchlib/src -Ilibulpt/include -Iinclude
WL_HDRS := $(wildcard watchlib/include/*.h watchlib/src/*.h watchlib/preload/*.h watchlib/common/*.h watchlib/common/*.inc) libulpt/include/ulpt.h
WL_OBJS := $(patsubst watchlib/src/%.c,$(WB)/%.o,$(wildcard watchlib/src/*.c))
# common/: what the agent and the tool share (their settings, the agent's result records).
AGENT_OBJS := $(patsubst watchlib/preload/%.c,$(WB)/preload/%.o,$(wildcard watchlib/preload/*.c)) \
	$(patsubst watchlib/common/%.c,$(WB)/common/%.o,$(wildcard watchlib/common/*.c))
WL_LIBS := -lunwind -ldw -lelf -ldl -lpthread
# The agent loads libelf and libdw itself, at its first report (symbolize.c).
AGENT_LIBS := -lunwind -ldl -lpthread
# The fault path runs in libulpt's general-register-only entry stub (see watch.c).
WL_CFLAGS_watch := -mgeneral-regs-only -fno-tree-loop-distribute-patterns
WL_CFLAGS_fault := $(WL_CFLAGS_watch)
# Its fallback loops must not become calls of the functions they stand for.
WL_CFLAGS_strmem := -fno-builtin -fno-tree-loop-distribute-patterns
WL_CFLAGS_wcsmem := $(WL_CFLAGS_strmem)
# C++'s delete operators take sizes, alignments and tags that only libstdc++ would use.
WL_CFLAGS_cxx := -Wno-unused-parameter
$(WB)/%.o: watchlib/src/%.c $(WL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) $(WL_CFLAGS_$*) $(DEPFLAGS) -c -o $@ $<
$(WB)/preload/%.o: watchlib/preload/%.c $(WL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) $(WL_CFLAGS_$*) -Iwatchlib/common -ftls-model=initial-exec $(DEPFLAGS) -c -o $@ $<
$(WB)/common/%.o: watchlib/common/%.c $(WL_HDRS)
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fvisibility=hidden $(DEPFLAGS) -c -o $@ $<
# libwatch, static and shared (soname libwatch.so.0), has watchlib's objects only: its users
# link libulpt too (libwatch.so names libulpt.so.0; watchlib.pc requires libulpt).
WL_SONAME := libwatch.so.0
$(WB)/libwatch.a: $(WL_OBJS)
	rm -f $@ && ar rcs $@ $^
$(WB)/$(WL_SONAME).1.0: $(WL_OBJS) $(LB)/libulpt.so
	$(CC) -shared -Wl,-soname,$(WL_SONAME) -o $@ $(WL_OBJS) -L$(LB) -lulpt $(WL_LIBS)
$(WB)/libwatch.so: $(WB)/$(WL_SONAME).1.0
	ln -sf $(WL_SONAME).1.0 $(WB)/$(WL_SONAME) && ln -sf $(WL_SONAME) $@
$(WB)/libulpt-watch-agent.so: $(AGENT_OBJS) $(WL_OBJS) $(LIB_OBJS)
	$(CC) -shared -Wl,-z,nodelete -o $@ $^ $(AGENT_LIBS)
# libelf, json-c and zlib linked in: every watched run starts ulpt-watch first; this saves the dynamic
# loader's work for three more libraries: 5-6 ms of a run in an idle guest (20 interleaved runs
# of ulpt-watch --check -- /bin/true: 262 ms against 267, under setarch -R 188 against 194).
$(WB)/ulpt-watch: $(wildcard watchlib/cli/*.c watchlib/cli/*.h watchlib/common/*.c) $(WL_HDRS)
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Iwatchlib/include -Ilibulpt/include -Iwatchlib/cli -Iwatchlib/common -o $@ $(wildcard watchlib/cli/*.c watchlib/common/*.c) -Wl,-Bstatic -lelf -ljson-c -lz -Wl,-Bdynamic
# Programs the tests run under ulpt-watch (ordinary, dynamically linked), and tests of the C API.
$(WB)/test/progs/%: watchlib/test/progs/%.c
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -g -Wall -Wextra -Werror -o $@ $< -lpthread -ldl $(PROG_LDFLAGS)
PROG_CFLAGS = -O1 -fno-builtin
# fortbugs is built as Debian builds its programs: its calls go to glibc's fortified entry points.
$(WB)/test/progs/fortbugs: PROG_CFLAGS = -O2 -D_FORTIFY_SOURCE=2
# ulpt-gdb's sessions on the mprotect backend: with lazy binding, the loader's writes of GOT
# entries on the page of the watched globals open that page (one instruction, out of line)
# while another thread may write a watched one: a hit missed, the limit of page protection
# (ulpt-gdb(1)); bound at load, the sessions' stops do not depend on that timing.
$(WB)/test/progs/gdbwatch $(WB)/test/progs/gdbqueue: PROG_LDFLAGS = -Wl,-z,now
$(WB)/test/progs/%: watchlib/test/progs/%.cc
	@mkdir -p $(@D)
	g++ -O1 -g -Wall -Wextra -Werror -o $@ $< -lpthread
$(WB)/test/%: watchlib/test/%.c tests/lib/tap.h tests/lib/tap-fork.h tests/lib/select.h $(WB)/libwatch.a $(LB)/libulpt.a
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Iwatchlib/include -Ilibulpt/include -Itests/lib -o $@ $< $(WB)/libwatch.a $(LB)/libulpt.a $(WL_LIBS)
# ulpt-gdb: a script and GDB's extension, laid out in the build as they are installed
# (ulpt-gdb finds gdb/ulpt.py beside it, or ../share/ulpt/gdb/ulpt.py).
$(WB)/ulpt-gdb: watchlib/gdb/ulpt-gdb
	@mkdir -p $(@D)
	install -m 755 $< $@
$(WB)/gdb/ulpt.py: watchlib/gdb/ulpt.py
	@mkdir -p $(@D)
	install -m 644 $< $@
WATCHLIB := $(WB)/libwatch.a $(WB)/libwatch.so $(WB)/libulpt-watch-agent.so $(WB)/ulpt-watch \
	$(WB)/ulpt-gdb $(WB)/gdb/ulpt.py \
	$(patsubst examples/demo/%.c,$(B)/examples/%,$(wildcard examples/demo/*.c)) \
	$(patsubst watchlib/test/progs/%.c,$(WB)/test/progs/%,$(wildcard watchlib/test/progs/*.c)) \
	$(patsubst watchlib/test/progs/%.cc,$(WB)/test/progs/%,$(wildcard watchlib/test/progs/*.cc)) \
	$(patsubst watchlib/test/%.c,$(WB)/test/%,$(wildcard watchlib/test/*.c))
watchlib: $(WATCHLIB)
# Benchmarks of watchlib link it statically (before the generic bench rule above takes them);
# heap-* are plain programs, for memory and time under heap checkers.
$(B)/bench/watch-%: bench/watch-%.c $(WB)/libwatch.a $(LB)/libulpt.a
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Iwatchlib/include -Ilibulpt/include -o $@ $< $(WB)/libwatch.a $(LB)/libulpt.a $(WL_LIBS)
$(B)/bench/heap-%: bench/heap-%.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $<
# Preloaded after liblsan by the bench's LeakSanitizer runs (no libulpt); fixed-clock.so under
# lua5.4 in the bench's phase 3 (see there).
$(B)/bench/lsan-init.so $(B)/bench/fixed-clock.so: $(B)/bench/%.so: bench/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -shared -fPIC -o $@ $<

# The demo: what the guest's CPU is, then a watch session in it: who writes to `balance`?
run: all
	scripts/ulpt-run -- sh -c 'ulpt-info && echo && \
	  echo "\$$ ulpt-watch -v -w balance -- build/examples/bank" && \
	  build/watchlib/ulpt-watch -v -w balance -- build/examples/bank'

# Static checks (scripts/check): both checkpatch scripts, on the sources the builds extract,
# and the duplicate finder. make test runs them as its first suite.
check: qemu kernel
	@tests/tap-run --summary scripts/check

# Builds QEMU at every prefix of qemu/patches (each with its patches' target-ulpt files): the
# series stays bisectable. About one full QEMU build plus the rebuilds; not part of make test.
check-qemu-bisect: | deps
	@scripts/check-qemu-bisect
# CPython's regression tests under ulpt-watch --check (minutes; not part of make test).
check-real: all
	@scripts/check-real
# The agent's stress run (tests/suites/stress.sh) for STRESS_SECONDS (default 180) under
# ulpt-watch --check, half as long under --heap, STRESS_FORKS forks; prints its figures.
# make test runs it for 20 s.
STRESS_SECONDS ?= 180
STRESS_FORKS ?= 300
.PHONY: stress
stress: all
	@STRESS_SECONDS=$(STRESS_SECONDS) STRESS_FORKS=$(STRESS_FORKS) \
	  tests/tap-run --summary tests/suites/stress.sh
# The CPU differential fuzzer's long campaign (scripts/fuzz-cpu; make test runs a short fixed
# budget, tests/suites/fuzz-cpu.sh): SEED (default: the time), COUNT sequences per batch,
# DURATION seconds (0: one batch), SMP vCPUs.
.PHONY: fuzz-cpu
fuzz-cpu: $(B)/baremetal/ulpt-fuzz.elf
	@scripts/fuzz-cpu $(if $(SEED),--seed $(SEED)) --count $(or $(COUNT),4000) \
	  --duration $(or $(DURATION),600) --smp $(or $(SMP),1)
# The kernel API fuzzer (tests/guest/ulpt-fuzz.c) for FUZZ_SECONDS (default 1200) from seed
# FUZZ_SEED (default: a new one, printed), on the debug kernel when make kernel-debug built it;
# prints the sequences run and the distinct failures. make test runs a short fixed budget.
FUZZ_SECONDS ?= 1200
FUZZ_SEED ?=
.PHONY: fuzz-kernel
fuzz-kernel: qemu kernel initramfs
	@ULPT_FUZZ_SECONDS=$(FUZZ_SECONDS) ULPT_FUZZ_SEED=$(FUZZ_SEED) \
	  ULPT_KERNEL=$(abspath $(if $(wildcard $(KERNEL_DEBUG)),$(KERNEL_DEBUG),$(KERNEL))) \
	  tests/tap-run --summary tests/suites/fuzz-kernel.sh

test: all $(UNIT_BINS) $(BM_IMAGES)
	@tests/tap-run --summary scripts/check $(UNIT_TESTS) $(UNIT_BINS) $(SUITES)

# The evaluation (scripts/bench): everything in the guest; writes build/bench/results.json,
# docs/results.md and docs/bench-*.png, prints a summary. bench-quick: under 10 minutes.
bench: all
	@scripts/bench --no-build
bench-quick: all
	@scripts/bench --no-build --quick
# -cpu ulpt vs -cpu max on programs that do not use ULPT (scripts/bench-cpumodel): QEMU's own
# counts for both CPU models, then 20 pairs of boots timed by CPU time and 20 by the clock; about
# 25 minutes. Not in make test (tests/suites/model.sh checks the counts on one program).
.PHONY: bench-cpumodel
bench-cpumodel: all
	@scripts/bench-cpumodel --no-build

# `make install PREFIX=DIR`: ulpt-run and what it boots, libulpt, watchlib (libwatch and
# watchlib.pc), ulpt-watch with its agent, and ulpt-gdb. PREFIX/bin/ulpt-run finds the rest in
# PREFIX/lib/ulpt (QEMU, kernel, initramfs) and PREFIX/libexec/ulpt (guest programs, on PATH
# in the guest). QEMU takes its firmware from Debian's seabios and qemu-system-data.
PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/ulpt $(DESTDIR)$(PREFIX)/libexec/ulpt
	install -m 755 scripts/ulpt-run $(DESTDIR)$(PREFIX)/bin/ulpt-run
	install -m 755 $(QEMU_BIN) scripts/host-tsc-khz $(DESTDIR)$(PREFIX)/lib/ulpt/
	install -m 644 $(KERNEL) $(INITRAMFS) $(DESTDIR)$(PREFIX)/lib/ulpt/
	install -m 755 $(GUEST_PROGS) $(DESTDIR)$(PREFIX)/libexec/ulpt/
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 libulpt/include/ulpt.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(LB)/libulpt.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LB)/$(LIBULPT_SONAME).1.0 $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(LIBULPT_SONAME).1.0 $(DESTDIR)$(PREFIX)/lib/$(LIBULPT_SONAME)
	ln -sf $(LIBULPT_SONAME) $(DESTDIR)$(PREFIX)/lib/libulpt.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LIBULPT_VERSION)|' libulpt/libulpt.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libulpt.pc
	install -m 644 libulpt/man/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	# watchlib: its header, libwatch (linked against libulpt, not a copy of it), watchlib.pc.
	install -m 644 watchlib/include/watchlib.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(WB)/libwatch.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(WB)/$(WL_SONAME).1.0 $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(WL_SONAME).1.0 $(DESTDIR)$(PREFIX)/lib/$(WL_SONAME)
	ln -sf $(WL_SONAME) $(DESTDIR)$(PREFIX)/lib/libwatch.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LIBULPT_VERSION)|' watchlib/watchlib.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/watchlib.pc
	# ulpt-watch finds its agent in ../lib/ulpt next to its own directory.
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(WB)/ulpt-watch $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(WB)/libulpt-watch-agent.so $(DESTDIR)$(PREFIX)/lib/ulpt/
	install -m 644 watchlib/man/ulpt-watch.1 watchlib/man/ulpt-gdb.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 755 watchlib/gdb/ulpt-gdb $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/ulpt/gdb
	install -m 644 watchlib/gdb/ulpt.py $(DESTDIR)$(PREFIX)/share/ulpt/gdb/
	install -d $(DESTDIR)$(PREFIX)/share/ulpt/suppressions
	install -m 644 watchlib/suppressions/*.supp $(DESTDIR)$(PREFIX)/share/ulpt/suppressions/

clean:
	rm -rf $(B)

# The dependency files of the compiles above (only our own build directories: QEMU's and the
# kernel's trees have their own).
-include $(wildcard $(B)/guest/*/.*.d $(B)/tests/unit/.*.d $(B)/libulpt/.*.d $(B)/watchlib/.*.d $(B)/watchlib/preload/.*.d $(B)/watchlib/common/.*.d)
