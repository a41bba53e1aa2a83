/*
 * The ULPT handler entry stubs. The CPU enters here at CPL 3 with RSP pointing at the 64-byte
 * frame (docs/spec.md section 6, 16-byte aligned, below the red zone). A stub saves every
 * register the C ABI lets a callee clobber, calls ulpt_dispatch_(frame) with an aligned stack
 * and DF clear, restores the registers and returns with UIRET, which restores RIP, RSP and
 * RFLAGS (so the flags the handler changes are not the program's).
 *
 * ulpt_entry_xsave_ also saves the x87, SSE, AVX and AVX-512 state with XSAVE (requested-feature
 * mask 0xe7, limited by XCR0; ulpt_xsave_size_ is the standard-format area's size), because
 * compilers use SSE and AVX in memcpy, struct copies and printf. MPX and PKRU are left out: a C
 * function does not change them, and skipping them makes the save a third of the size.
 * ulpt_entry_gpr_ is for handlers built general-register-only.
 *
 * SPDX-License-Identifier: MIT
 */
#include <ulpt/arch.h>

	/* After ulpt_dispatch_, in the page it starts (see dispatch.c). */
	.section .text.ulpt_fault, "ax", @progbits

#define XSAVE_MASK 0xe7          /* x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM */

.macro SAVE_GPRS
	pushq %rbp
	movq %rsp, %rbp              /* frame at 8(%rbp) */
	pushq %rax
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
.endm

.macro RESTORE_GPRS_AND_RETURN
	leaq -72(%rbp), %rsp
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rax
	popq %rbp
	.byte ULPT_UIRET_BYTES               /* uiret */
.endm

	.globl ulpt_entry_gpr_
	.hidden ulpt_entry_gpr_
	.type ulpt_entry_gpr_, @function
ulpt_entry_gpr_:
	SAVE_GPRS
	andq $-16, %rsp
	cld
	leaq 8(%rbp), %rdi
	call ulpt_dispatch_
	RESTORE_GPRS_AND_RETURN
	.size ulpt_entry_gpr_, . - ulpt_entry_gpr_

	.globl ulpt_entry_xsave_
	.hidden ulpt_entry_xsave_
	.type ulpt_entry_xsave_, @function
ulpt_entry_xsave_:
	SAVE_GPRS
	subq ulpt_xsave_size_(%rip), %rsp
	andq $-64, %rsp
	/* XRSTOR wants the header's reserved bytes zero; XSAVE writes only XSTATE_BV. */
	xorl %eax, %eax
	movq %rax, 512(%rsp)
	movq %rax, 520(%rsp)
	movq %rax, 528(%rsp)
	movq %rax, 536(%rsp)
	movq %rax, 544(%rsp)
	movq %rax, 552(%rsp)
	movq %rax, 560(%rsp)
	movq %rax, 568(%rsp)
	movl $XSAVE_MASK, %eax
	xorl %edx, %edx
	xsave64 (%rsp)
	cld
	leaq 8(%rbp), %rdi
	call ulpt_dispatch_
	movl $XSAVE_MASK, %eax
	xorl %edx, %edx
	xrstor64 (%rsp)
	RESTORE_GPRS_AND_RETURN
	.size ulpt_entry_xsave_, . - ulpt_entry_xsave_

	.section .note.GNU-stack, "", @progbits
