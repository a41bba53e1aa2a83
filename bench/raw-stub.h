/*
 * The raw reference stub of the round-trip benchmarks: what a program without libulpt would
 * write. It saves the registers a C function may clobber, calls a handler that counts the
 * fault and sets PERMIT in the frame, and UIRETs. Set it with ARCH_ULPT_SET_HANDLER directly.
 *   ULPT_RAW_STUB(entry, counter)   defines entry() and its handler entry_c(), which counts
 *                                   in the long lvalue counter (ULPT_RAW_STUB_BITS: with
 *                                   STEP too)
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef BENCH_RAW_STUB_H
#define BENCH_RAW_STUB_H
#include <stdint.h>
#include <ulpt/arch.h>

#define ARCH_ULPT_SET_HANDLER 0x6003     /* docs/linux-api.md */

#define ULPT_RAW_STR_(...) #__VA_ARGS__
#define ULPT_RAW_STR(...) ULPT_RAW_STR_(__VA_ARGS__)
#define ULPT_RAW_STUB(entry, counter) ULPT_RAW_STUB_BITS(entry, counter, counter, ULPT_INFO_PERMIT)
/*
 * The same, setting `bits` in the frame: with ULPT_INFO_PERMIT | ULPT_INFO_STEP, the after
 * event (R-RET-4) comes to the same stub and is counted in `after`, the violation in counter
 * (a PERMIT-only stub gets no after event).
 */
#define ULPT_RAW_STUB_BITS(entry, counter, after, bits)                                      \
	void entry(void);                                                                    \
	void entry##_c(uint64_t *frame);                                                     \
	void entry##_c(uint64_t *frame)                                                      \
	{                                                                                    \
		if (ULPT_INFO_REASON(frame[ULPT_FRAME_INFO]) == ULPT_REASON_AFTER) {        \
			(after)++;                                                           \
			return;                                                              \
		}                                                                            \
		counter++;                                                                   \
		frame[ULPT_FRAME_INFO] |= (bits);                                            \
	}                                                                                    \
	asm(".text\n.globl " #entry "\n" #entry ":\n"                                        \
	    "push %rax\npush %rcx\npush %rdx\npush %rsi\npush %rdi\n"                        \
	    "push %r8\npush %r9\npush %r10\npush %r11\n"                                     \
	    "lea 72(%rsp), %rdi\nsub $8, %rsp\ncall " #entry "_c\nadd $8, %rsp\n"            \
	    "pop %r11\npop %r10\npop %r9\npop %r8\npop %rdi\npop %rsi\npop %rdx\npop %rcx\n" \
	    "pop %rax\n.long " ULPT_RAW_STR(ULPT_UIRET_INSN) "\n")
#endif
