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

/*
 * Call frame information, so that a backtrace taken in a handler (a report, gdb's bt) goes
 * on from a stub into the interrupted program, as through the kernel's signal trampoline:
 * the caller's RSP and RIP are the frame's rsp and rip words, read through the frame at \off
 * bytes above \breg (DWARF 0x77 RSP, 0x76 RBP). The other registers are where the stub put
 * them. The faulting RIP is not a return address, which unwinders look up at RIP - 1, so the
 * caller's RIP is given as the frame's rip + 1 (a backtrace shows the faulting instruction's
 * address + 1, and its function and line). Not a signal frame (.cfi_signal_frame), which
 * would be exact, because libunwind takes every such frame for the kernel's rt_sigframe.
 */
#define DW_RSP 0x77
#define DW_RBP 0x76
.macro FRAME_CFI breg, off
	.cfi_escape 0x0f, 0x03, \breg, (\off + 48), 0x06     /* CFA = *(breg + off + 48) */
	/* RIP = *(breg + off + 32) + 1 (DW_CFA_val_expression): see above */
	.cfi_escape 0x16, 0x10, 0x05, \breg, (\off + 32), 0x06, 0x23, 0x01
.endm

.macro STUB_START name
	.globl \name
	.hidden \name
	.type \name, @function
\name:
	.cfi_startproc
	FRAME_CFI DW_RSP, 0
.endm

.macro STUB_END name
	.cfi_endproc
	.size \name, . - \name
.endm

/* The saved RBP and the registers PUSH_SCRATCH pushes, at RBP and below. */
.macro SAVED_GPRS_CFI
	.cfi_escape 0x10, 0x06, 0x02, DW_RBP, 0x00              /* rbp */
	.cfi_escape 0x10, 0x00, 0x02, DW_RBP, 0x78              /* rax at -8 */
	.cfi_escape 0x10, 0x02, 0x02, DW_RBP, 0x70              /* rcx */
	.cfi_escape 0x10, 0x01, 0x02, DW_RBP, 0x68              /* rdx */
	.cfi_escape 0x10, 0x04, 0x02, DW_RBP, 0x60              /* rsi */
	.cfi_escape 0x10, 0x05, 0x02, DW_RBP, 0x58              /* rdi */
	.cfi_escape 0x10, 0x08, 0x02, DW_RBP, 0x50              /* r8 */
	.cfi_escape 0x10, 0x09, 0x02, DW_RBP, 0x48              /* r9 */
	.cfi_escape 0x10, 0x0a, 0x02, DW_RBP, 0x40              /* r10 */
	.cfi_escape 0x10, 0x0b, 0x03, DW_RBP, 0xb8, 0x7f        /* r11 at -72 */
.endm

/* The registers a C function may clobber (with RBP pushed first and set: they go below it). */
.macro PUSH_SCRATCH
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

/* The vector and x87 state below RSP (clobbers RAX, RDX), and back from there. */
.macro XSAVE_STATE
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
.endm

.macro XRSTOR_STATE
	movl $XSAVE_MASK, %eax
	xorl %edx, %edx
	xrstor64 (%rsp)
.endm

/* Calls \fn (RDI is kept for it) with the vector and x87 state saved: with XSAVE, or with
   plain AVX moves (ymm0-15, MXCSR, the x87 environment) when the x87 stack is empty, falling
   back to XSAVE otherwise. RBP and the scratch registers are saved (RBP - 72 is the last). */
.macro XSAVE_CALL fn
	XSAVE_STATE
	cld
	call \fn
	XRSTOR_STATE
.endm

.macro AVX_CALL fn
	subq $544, %rsp              /* ymm0-15 at 0, x87 environment at 512, MXCSR at 540 */
	andq $-32, %rsp
	fnstenv 512(%rsp)            /* (masks x87 exceptions: FLDENV below restores) */
	cmpw $0xffff, 520(%rsp)      /* tag word: all empty? */
	jne 1f
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
	call \fn
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
	jmp 2f
1:	/* x87 registers in use: the whole state through XSAVE. */
	fldenv 512(%rsp)
	leaq -72(%rbp), %rsp
	XSAVE_CALL \fn
2:
.endm

.macro RESTORE_GPRS
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
.endm

/* A stub saves RBP and the scratch registers, with its CFI: the frame is at 8(%rbp) after. */
.macro STUB_SAVE_GPRS
	pushq %rbp
	FRAME_CFI DW_RSP, 8
	.cfi_escape 0x10, 0x06, 0x02, DW_RSP, 0x00              /* rbp at RSP */
	movq %rsp, %rbp              /* frame at 8(%rbp) */
	FRAME_CFI DW_RBP, 8
	PUSH_SCRATCH
	SAVED_GPRS_CFI
.endm

.macro RESTORE_GPRS_AND_RETURN
	.cfi_remember_state
	RESTORE_GPRS
	FRAME_CFI DW_RSP, 0
	.cfi_same_value %rbp
	.long ULPT_UIRET_INSN                /* uiret */
	.cfi_restore_state
.endm

	/* ulpt_dispatch_(frame, vec_saved): the log callback needs the vector state saved. */
	STUB_START ulpt_entry_gpr_
	STUB_SAVE_GPRS
	andq $-16, %rsp
	cld
	leaq 8(%rbp), %rdi
	xorl %esi, %esi
	call ulpt_dispatch_
	RESTORE_GPRS_AND_RETURN
	STUB_END ulpt_entry_gpr_

	STUB_START ulpt_entry_xsave_
	STUB_SAVE_GPRS
	leaq 8(%rbp), %rdi
	movl $1, %esi
	XSAVE_CALL ulpt_dispatch_
	RESTORE_GPRS_AND_RETURN
	STUB_END ulpt_entry_xsave_

	STUB_START ulpt_entry_avx_
	STUB_SAVE_GPRS
	leaq 8(%rbp), %rdi
	movl $1, %esi
	AVX_CALL ulpt_dispatch_
	RESTORE_GPRS_AND_RETURN
	STUB_END ulpt_entry_avx_

/*
 * Where the UIRET of an after event goes (dispatch.c): the after-call of ULPT_PERMIT_STEP
 * runs here, outside the ULPT handler, so that its own faults reach the handler as usual (as
 * in a signal handler, without the kernel), and with every register saved, so that it may use
 * the vector registers whatever stub the handler has. On entry every register is the
 * program's, RFLAGS too but TF; RSP is the program's minus 136, below its red zone, where
 * dispatch.c stored the program's RIP (the next instruction). ulpt_after_run_ stores the
 * program's RFLAGS in the slot above RBP: POPFQ puts them back (a TF there traps after the RET, at that RIP, as
 * the CPU would have), and RET $128 returns to the program's RIP and RSP.
 */
	.globl ulpt_after_tramp_
	.hidden ulpt_after_tramp_
	.type ulpt_after_tramp_, @function
ulpt_after_tramp_:
	/* The program's frame: CFA = its RSP = RSP + 136, its RIP at RSP (after the instruction
	   that completed, as a return address is). */
	.cfi_startproc
	.cfi_def_cfa %rsp, 136
	.cfi_offset %rip, -136
	subq $8, %rsp                /* the RFLAGS slot, at 8(%rbp) below; RIP at 16(%rbp) */
	.cfi_adjust_cfa_offset 8
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -152
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	PUSH_SCRATCH
	SAVED_GPRS_CFI
	leaq 8(%rbp), %rdi           /* ulpt_after_run_ writes the RFLAGS there */
	cmpb $0, ulpt_vec_avx_(%rip)
	je 3f
	AVX_CALL ulpt_after_run_
	jmp 4f
3:	XSAVE_CALL ulpt_after_run_
4:	RESTORE_GPRS
	.cfi_def_cfa %rsp, 144
	.cfi_same_value %rbp
	popfq
	.cfi_adjust_cfa_offset -8
	ret $128
	.cfi_endproc
	.size ulpt_after_tramp_, . - ulpt_after_tramp_

/*
 * void ulpt_log_call_vec_(ulpt_log_fn fn, const struct ulpt_log_rec *recs, size_t n, void *arg):
 * fn(recs, n, arg) with the vector and x87 state saved around it, as the after trampoline
 * saves it: for a log drain in a handler entered through ulpt_entry_gpr_ (log.c), since the
 * callback is ordinary C code whatever the handler's flags.
 */
	.globl ulpt_log_call_vec_
	.hidden ulpt_log_call_vec_
	.type ulpt_log_call_vec_, @function
ulpt_log_call_vec_:
	.cfi_startproc
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %rbx
	.cfi_offset %rbx, -24
	pushq %r12
	.cfi_offset %r12, -32
	pushq %r13
	.cfi_offset %r13, -40
	pushq %r14
	.cfi_offset %r14, -48
	subq $40, %rsp               /* RSP = RBP - 72, where the macros' XSAVE fallback starts */
	movq %rdi, %rbx
	movq %rsi, %r12
	movq %rdx, %r13
	movq %rcx, %r14
	cmpb $0, ulpt_vec_avx_(%rip)
	je 3f
	AVX_CALL ulpt_log_thunk_
	jmp 4f
3:	XSAVE_CALL ulpt_log_thunk_
4:	leaq -32(%rbp), %rsp
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size ulpt_log_call_vec_, . - ulpt_log_call_vec_

/* The macros call a fixed label: it puts the arguments in place and goes to fn. */
	.type ulpt_log_thunk_, @function
ulpt_log_thunk_:
	movq %r12, %rdi
	movq %r13, %rsi
	movq %r14, %rdx
	jmp *%rbx
	.size ulpt_log_thunk_, . - ulpt_log_thunk_

	.section .note.GNU-stack, "", @progbits
