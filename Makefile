# ULPT on QEMU: top-level build. `make run` boots the demo, `make test` runs every test.
# Everything is built under build/; see README.md.
SHELL := /bin/bash
B := build
QEMU_BIN := $(B)/qemu/obj/qemu-system-x86_64
KERNEL := $(B)/linux/obj/arch/x86/boot/bzImage
INITRAMFS := $(B)/initramfs.cpio
CC := gcc
GUEST_CFLAGS := -O2 -g -Wall -Wextra -Werror -static -Iguest -Itarget-ulpt -I$(B)/linux/headers/include

GUEST_PROGS := $(patsubst guest/%.c,$(B)/guest/bin/%,$(wildcard guest/*.c))
GUEST_TESTS := $(patsubst tests/guest/%.c,$(B)/guest/tests/%,$(wildcard tests/guest/*.c))
# Host unit tests (no guest) and suites that boot the guest; each prints TAP.
UNIT_TESTS := $(wildcard tests/unit/*.sh)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/*.c))
SUITES := $(wildcard tests/suites/*.sh tests/suites/*.py)

.PHONY: all deps qemu kernel initramfs run test install clean
all: qemu kernel initramfs

deps:
	@scripts/install-deps

qemu: | deps
	@scripts/build-qemu

kernel: | deps
	@scripts/build-kernel

initramfs: $(INITRAMFS)

$(B)/guest/bin/%: guest/%.c guest/ulpt-handler.h target-ulpt/ulpt-arch.h | kernel
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -o $@ $<
$(B)/guest/tests/%: tests/guest/%.c tests/guest/tap.h guest/ulpt-handler.h target-ulpt/ulpt-arch.h | kernel
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -Itests/guest -o $@ $< -lpthread

$(INITRAMFS): $(GUEST_PROGS) $(GUEST_TESTS) guest/init tests/tap-run scripts/build-initramfs | kernel
	@scripts/build-initramfs $@

# Host unit tests of the ULPT decision logic, built against target-ulpt/ulpt.c.
$(B)/tests/unit/%: tests/unit/%.c target-ulpt/ulpt.c target-ulpt/ulpt.h target-ulpt/ulpt-arch.h tests/guest/tap.h
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -Itarget-ulpt -Itests/guest -o $@ $< target-ulpt/ulpt.c

# Bare-metal CPU tests (no kernel): PVH-booted ELF images run by tests/suites/cpu.sh.
BM_CFLAGS := -O1 -g -ffreestanding -fno-pic -no-pie -nostdlib -static -mno-red-zone \
	-mgeneral-regs-only -fno-stack-protector -fno-asynchronous-unwind-tables -Wall -Wextra \
	-Werror -Itarget-ulpt -Wl,-T,tests/baremetal/kernel.ld -Wl,--build-id=none -Wl,-z,noexecstack
BM_COMMON := tests/baremetal/boot.S tests/baremetal/bm.c
BM_IMAGES := $(patsubst tests/baremetal/%.c,$(B)/baremetal/%.elf,$(filter-out tests/baremetal/bm.c,$(wildcard tests/baremetal/*.c)))
$(B)/baremetal/%.elf: tests/baremetal/%.c $(BM_COMMON) tests/baremetal/bm.h tests/baremetal/kernel.ld target-ulpt/ulpt-arch.h
	@mkdir -p $(@D)
	$(CC) $(BM_CFLAGS) -o $@ $(BM_COMMON) $<

run: all
	scripts/ulpt-run -- ulpt-info

test: all $(UNIT_BINS) $(BM_IMAGES)
	@tests/tap-run --summary $(UNIT_TESTS) $(UNIT_BINS) $(SUITES)

# `make install PREFIX=DIR`: ulpt-run and what it boots. PREFIX/bin/ulpt-run finds the rest in
# PREFIX/lib/ulpt (QEMU, kernel, initramfs) and PREFIX/libexec/ulpt (guest programs, on PATH
# in the guest). QEMU takes its firmware from Debian's seabios and qemu-system-data.
PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/ulpt $(DESTDIR)$(PREFIX)/libexec/ulpt
	install -m 755 scripts/ulpt-run $(DESTDIR)$(PREFIX)/bin/ulpt-run
	install -m 755 $(QEMU_BIN) scripts/host-tsc-khz $(DESTDIR)$(PREFIX)/lib/ulpt/
	install -m 644 $(KERNEL) $(INITRAMFS) $(DESTDIR)$(PREFIX)/lib/ulpt/
	install -m 755 $(GUEST_PROGS) $(DESTDIR)$(PREFIX)/libexec/ulpt/

clean:
	rm -rf $(B)
