/*
 * Bare-metal harness for ULPT CPU tests: PVH entry in 32-bit protected mode, switch to long
 * mode with identity-mapped, user-accessible memory, trap entry, and the CPL 0 <-> CPL 3
 * switch used by run_user(). See bm.h for the C side.
 */
#define KCODE 0x08
#define KDATA 0x10
#define UDATA 0x1b
#define UCODE 0x23

/* From 32-bit protected mode: PAE, our page tables, EFER.LME|NXE, paging (PG | WP | PE). */
.macro ENTER_LONG_MODE
    movl %cr4, %eax
    orl $0x20, %eax
    movl %eax, %cr4
    movl $pml4, %eax
    movl %eax, %cr3
    movl $0xc0000080, %ecx
    rdmsr
    orl $0x900, %eax
    wrmsr
    movl %cr0, %eax
    orl $0x80010001, %eax
    movl %eax, %cr0
.endm

/* QEMU's PVH loader starts us at the XEN_ELFNOTE_PHYS32_ENTRY (18) address. */
    .section .note.Xen, "a", @note
    .align 4
    .long 4, 4, 18
    .asciz "Xen"
    .align 4
    .long _start32

    .section .text.boot, "ax"
    .code32
    .globl _start32
_start32:
    cli
    movl $boot_stack_top, %esp
    /* Clear .bss (page tables, stacks and test memory live there). */
    movl $__bss_start, %edi
    movl $__bss_end, %ecx
    subl %edi, %ecx
    xorl %eax, %eax
    rep stosb
    /* The PVH loader passes the physical address of its hvm_start_info in EBX (bm.c reads
       the kernel command line from it). */
    movl %ebx, pvh_start_info
    /* PML4[0] -> PDPT -> PD; PD[0] -> PT0 (4 KiB pages for the first 2 MiB, so tests can
       change single PTEs); PD[1..511] are 2 MiB pages. Everything is present, writable and
       user-accessible (US): user code runs anywhere. */
    movl $pdpt, %eax
    orl $7, %eax
    movl %eax, pml4
    movl $pd, %eax
    orl $7, %eax
    movl %eax, pdpt
    movl $pt0, %eax
    orl $7, %eax
    movl %eax, pd
    movl $1, %ecx
1:  movl %ecx, %eax
    shll $21, %eax
    orl $0x87, %eax
    movl %eax, pd(,%ecx,8)
    incl %ecx
    cmpl $512, %ecx
    jne 1b
    xorl %ecx, %ecx
2:  movl %ecx, %eax
    shll $12, %eax
    orl $7, %eax
    movl %eax, pt0(,%ecx,8)
    incl %ecx
    cmpl $512, %ecx
    jne 2b
    ENTER_LONG_MODE
    lgdt gdt_desc
    ljmp $KCODE, $long_entry

    .code64
long_entry:
    movw $KDATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movw %ax, %fs
    movw %ax, %gs
    movabsq $boot_stack_top, %rsp
    call kmain
    hlt

/* Trap entry: vector stubs push a dummy error code where the CPU pushes none. */
.macro TRAP vec, err
    .globl trap_\vec
trap_\vec:
    .if \err == 0
    pushq $0
    .endif
    pushq $\vec
    jmp trap_common
.endm
    TRAP 0, 0
    TRAP 1, 0
    TRAP 2, 0
    TRAP 3, 0
    TRAP 4, 0
    TRAP 5, 0
    TRAP 6, 0
    TRAP 7, 0
    TRAP 8, 1
    TRAP 9, 0
    TRAP 10, 1
    TRAP 11, 1
    TRAP 12, 1
    TRAP 13, 1
    TRAP 14, 1
    TRAP 16, 0
    TRAP 17, 1
    TRAP 18, 0
    TRAP 19, 0
    TRAP 64, 0
    TRAP 128, 0

trap_common:
    cld                              /* C code needs DF 0; CPL 3 may have left it set */
    pushq %rax
    pushq %rbx
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rbp
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, %rdi
    subq $8, %rsp
    call trap
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rbp
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rbx
    popq %rax
    addq $16, %rsp
    iretq

/* uint64_t run_user(void (*fn)(void *), void *arg, uint64_t user_rsp): run fn(arg) at CPL 3.
   Returns 0x80 when fn returned, else the vector of the trap that stopped it (see trap()). */
    .globl run_user
run_user:
    pushq %rbx
    pushq %rbp
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, kctx_rsp(%rip)
    jmp enter_user
user_entry:
    movq %rdi, %rax
    movq %rsi, %rdi
    call *%rax
    int $0x80
    ud2

/* void enter_user(void (*fn)(void *), void *arg, uint64_t user_rsp): CPL 3 for good. */
    .globl enter_user
enter_user:
    pushq $UDATA
    pushq %rdx
    pushq user_rflags(%rip)
    pushq $UCODE
    leaq user_entry(%rip), %rax
    pushq %rax
    iretq

/* void return_to_kernel(uint64_t result): abandon the user context, return from run_user. */
    .globl return_to_kernel
return_to_kernel:
    movq %rdi, %rax
    movq kctx_rsp(%rip), %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbp
    popq %rbx
    ret

/* The user-mode ULPT handler entry: RSP points at the frame. Saves what the C handler may
   clobber, calls ulpt_handler(frame), returns with UIRET. ulpt_entry_sti ends with STI
   before UIRET (with IOPL 3), so that an interrupt made pending in the handler arrives
   right after UIRET; ulpt_entry_tf sets TF before UIRET, as a debugger stepping it does. */
.macro ULPT_ENTRY name, last
    .globl \name
\name:
    pushq %rax
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    leaq 72(%rsp), %rdi
    subq $8, %rsp
    call ulpt_handler
    addq $8, %rsp
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rax
    \last
    .byte 0xf3, 0x0f, 0x01, 0xec     /* uiret */
.endm
.macro SET_TF                         /* TF on: UIRET runs single-stepped */
    pushfq
    orq $0x100, (%rsp)
    popfq
.endm
    ULPT_ENTRY ulpt_entry, nop
    ULPT_ENTRY ulpt_entry_sti, sti
    ULPT_ENTRY ulpt_entry_tf, SET_TF

/* MSR and UIRET accessors that survive a fault: trap() resumes at the fixup label with
   RAX = -1 (see fixups in bm.c). */
    .globl try_wrmsr
try_wrmsr:                           /* int try_wrmsr(uint32_t msr, uint64_t val) */
    movl %edi, %ecx
    movq %rsi, %rax
    movq %rsi, %rdx
    shrq $32, %rdx
    .globl wrmsr_insn
wrmsr_insn:
    wrmsr
    xorl %eax, %eax
    .globl wrmsr_fixup
wrmsr_fixup:
    ret
    .globl try_rdmsr
try_rdmsr:                           /* int try_rdmsr(uint32_t msr, uint64_t *val) */
    movl %edi, %ecx
    .globl rdmsr_insn
rdmsr_insn:
    rdmsr
    shlq $32, %rdx
    movl %eax, %eax
    orq %rdx, %rax
    movq %rax, (%rsi)
    xorl %eax, %eax
    .globl rdmsr_fixup
rdmsr_fixup:
    ret
    .globl kernel_uiret
kernel_uiret:                        /* uiret at CPL 0: must #GP (or #UD) */
    .globl kuiret_insn
kuiret_insn:
    .byte 0xf3, 0x0f, 0x01, 0xec
    xorl %eax, %eax
    .globl kuiret_fixup
kuiret_fixup:
    ret

/* Second-CPU start: real-mode trampoline, copied to AP_TRAMPOLINE (0x8000) by start_ap(). */
#define AP_TRAMPOLINE 0x8000
#define TR(x) (AP_TRAMPOLINE + (x) - ap_tramp_start)
    .code16
    .globl ap_tramp_start, ap_tramp_end
ap_tramp_start:
    cli
    xorw %ax, %ax
    movw %ax, %ds
    lgdtl TR(ap_gdt_desc)
    movl %cr0, %eax
    orl $1, %eax
    movl %eax, %cr0
    ljmpl $0x38, $TR(ap_tramp32)
    .code32
ap_tramp32:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    ENTER_LONG_MODE
    ljmp $KCODE, $ap_long_entry
    .align 8
ap_gdt_desc:
    .word gdt_end - gdt - 1
    .long gdt
ap_tramp_end:

    .code64
ap_long_entry:
    movw $KDATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movabsq $ap_stack_top, %rsp
    call ap_main
1:  cli
    hlt
    jmp 1b

    .data
    .align 16
gdt:
    .quad 0
    .quad 0x00209a0000000000         /* 0x08 kernel code, 64-bit */
    .quad 0x00cf92000000ffff         /* 0x10 kernel data */
    .quad 0x00cff2000000ffff         /* 0x18 user data (DPL 3) */
    .quad 0x0020fa0000000000         /* 0x20 user code, 64-bit (DPL 3) */
    .globl gdt_tss
gdt_tss:
    .quad 0, 0                       /* 0x28 TSS, filled in by kmain */
    .quad 0x00cf9a000000ffff         /* 0x38 32-bit code, for the AP trampoline */
    .globl gdt_tss_ap
gdt_tss_ap:
    .quad 0, 0                       /* 0x40 the second CPU's TSS */
gdt_end:
gdt_desc:
    .word gdt_end - gdt - 1
    .quad gdt
/* RFLAGS that run_user starts CPL 3 code with (bm.h). */
    .align 8
    .globl user_rflags
user_rflags: .quad 0x2

    .bss
    .align 4096
    .globl pml4, pdpt, pd, pt0
pml4: .skip 4096
pdpt: .skip 4096
pd:   .skip 4096
pt0:  .skip 4096
    .align 16
    .skip 16384
boot_stack_top:
    .skip 16384
ap_stack_top:
kctx_rsp: .skip 8
