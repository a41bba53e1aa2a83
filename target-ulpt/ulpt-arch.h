/*
 * ULPT architectural constants: the values docs/spec.md defines, in one place.
 * Plain C with no dependencies, shared by the QEMU model, bare-metal tests and guest programs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_ARCH_H
#define ULPT_ARCH_H

/* Enumeration: CPUID.(EAX=07H,ECX=0):EDX[bit 6]. */
#define ULPT_CPUID_LEAF        0x7u
#define ULPT_CPUID_SUBLEAF     0x0u
#define ULPT_CPUID_EDX_BIT     6u

#endif /* ULPT_ARCH_H */
