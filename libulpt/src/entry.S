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
 * ulpt_entry_gpr_ is for handlers built general-register-only; it takes the XSAVE path for
 * an after event (R-RET-4), whose after-call is where such handlers do their vector work.
 *
 * ulpt_entry_avx_ is the default where XCR0 enables x87, SSE and AVX but not AVX-512 (ulpt.c):
 * the same state saved with plain instructions, which the emulated CPU runs inline, where
 * XSAVE and XRSTOR are helpers storing and loading 8 bytes at a time (about 2 us per fault).
 * The x87 registers are saved only if the stack holds values (FNSTENV's tag word): C code
 * leaves it empty between statements, and otherwise the stub falls back to the XSAVE path.
 * Both vector stubs give the handler the default MXCSR and x87 control word and an empty x87
 * stack, as a signal handler gets, whatever the interrupted code set (rounding, unmasked
 * exceptions, values on the x87 stack).
 *
 * SPDX-License-Identifier: MIT
 */
#include <ulpt/arch.h>

	/* After ulpt_dispatch_, in the page it starts (see dispatch.c). */
	.section .text.ulpt_fault, "ax", @progbits

#define XSAVE_MASK 0xe7          /* x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM */

	.section .rodata.ulpt_fault, "a", @progbits
	.balign 4
ulpt_default_mxcsr:
	.long 0x1f80
ulpt_default_fcw:
	.word 0x37f
	.section .text.ulpt_fault, "ax", @progbits

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
	.long ULPT_UIRET_INSN                /* uiret */
.endm

	.globl ulpt_entry_gpr_
	.hidden ulpt_entry_gpr_
	.type ulpt_entry_gpr_, @function
ulpt_entry_gpr_:
	SAVE_GPRS
	/* An after event (reason 4, ULPT_REASON_AFTER: ULPT_PERMIT_STEP's after-call) runs what
	   a general-register handler leaves for later, code that may use vector registers (a
	   callback, a report): it gets the full save. info's reason byte is at 8 + 8 + 1. */
	cmpb $4, 17(%rbp)
	je .Lxsave_body
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
.Lxsave_body:
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
	ldmxcsr ulpt_default_mxcsr(%rip)
	fninit                       /* an empty x87 stack, as C code expects (XRSTOR restores) */
	cld
	leaq 8(%rbp), %rdi
	call ulpt_dispatch_
	movl $XSAVE_MASK, %eax
	xorl %edx, %edx
	xrstor64 (%rsp)
	RESTORE_GPRS_AND_RETURN
	.size ulpt_entry_xsave_, . - ulpt_entry_xsave_

	.globl ulpt_entry_avx_
	.hidden ulpt_entry_avx_
	.type ulpt_entry_avx_, @function
ulpt_entry_avx_:
	SAVE_GPRS
	subq $544, %rsp              /* ymm0-15 at 0, x87 environment at 512, MXCSR at 540 */
	andq $-32, %rsp
	fnstenv 512(%rsp)            /* (masks x87 exceptions: FLDENV below restores) */
	cmpw $0xffff, 520(%rsp)      /* tag word: all empty? */
	jne .Lavx_slow
	stmxcsr 540(%rsp)
	vmovdqu %ymm0, 0(%rsp)
	vmovdqu %ymm1, 32(%rsp)
	vmovdqu %ymm2, 64(%rsp)
	vmovdqu %ymm3, 96(%rsp)
	vmovdqu %ymm4, 128(%rsp)
	vmovdqu %ymm5, 160(%rsp)
	vmovdqu %ymm6, 192(%rsp)
	vmovdqu %ymm7, 224(%rsp)
	vmovdqu %ymm8, 256(%rsp)
	vmovdqu %ymm9, 288(%rsp)
	vmovdqu %ymm10, 320(%rsp)
	vmovdqu %ymm11, 352(%rsp)
	vmovdqu %ymm12, 384(%rsp)
	vmovdqu %ymm13, 416(%rsp)
	vmovdqu %ymm14, 448(%rsp)
	vmovdqu %ymm15, 480(%rsp)
	ldmxcsr ulpt_default_mxcsr(%rip)
	fldcw ulpt_default_fcw(%rip)
	cld
	leaq 8(%rbp), %rdi
	call ulpt_dispatch_
	vmovdqu 0(%rsp), %ymm0
	vmovdqu 32(%rsp), %ymm1
	vmovdqu 64(%rsp), %ymm2
	vmovdqu 96(%rsp), %ymm3
	vmovdqu 128(%rsp), %ymm4
	vmovdqu 160(%rsp), %ymm5
	vmovdqu 192(%rsp), %ymm6
	vmovdqu 224(%rsp), %ymm7
	vmovdqu 256(%rsp), %ymm8
	vmovdqu 288(%rsp), %ymm9
	vmovdqu 320(%rsp), %ymm10
	vmovdqu 352(%rsp), %ymm11
	vmovdqu 384(%rsp), %ymm12
	vmovdqu 416(%rsp), %ymm13
	vmovdqu 448(%rsp), %ymm14
	vmovdqu 480(%rsp), %ymm15
	ldmxcsr 540(%rsp)
	fldenv 512(%rsp)
	RESTORE_GPRS_AND_RETURN
.Lavx_slow:
	/* x87 registers in use: the whole state through XSAVE. */
	fldenv 512(%rsp)
	leaq -72(%rbp), %rsp
	jmp .Lxsave_body
	.size ulpt_entry_avx_, . - ulpt_entry_avx_

	.section .note.GNU-stack, "", @progbits
