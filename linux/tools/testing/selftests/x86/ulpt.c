// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of the User Level Page Tables (ULPT) API, one per rule of
 * Documentation/x86/ulpt.rst. Each test runs in a child process of its own,
 * so it starts without a table and cannot disturb the next one.
 *
 *   ulpt             every test (on a CPU without ULPT, or with "noulpt",
 *                    only those for a kernel without ULPT; the rest skip)
 *   ulpt nocpu       the tests for a kernel without ULPT
 *   ulpt --list      the names of the tests and the rule each checks
 *   ulpt NAME...     the named tests only
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#undef PAGE_SIZE			/* <sys/user.h>'s; this file has its own */
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <asm/ulpt.h>

#include "../kselftest.h"

#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#define PAGE_SIZE		4096
#define LINE_SIZE		128
#define X86_PF_WRITE		0x2UL
#define X86_PF_USER		0x4UL
#define X86_PF_ULPT		0x100UL	/* the ULPT bit of the #PF error code */
#define FL_CF			0x1UL
#define FL_ZF			0x40UL
#define FL_SF			0x80UL
#define FL_DF			0x400UL
#define FL_TESTED		(FL_DF | FL_ZF | FL_SF | FL_CF)

static const char *argv0;
static int failures;

/* One check of a test: printed as a diagnostic, counted if it failed. */
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("# %s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

static long ulpt(int op, void *arg)
{
	return syscall(SYS_arch_prctl, op, arg);
}

static long ulpt_ul(int op, unsigned long arg)
{
	return syscall(SYS_arch_prctl, op, arg);
}

static struct ulpt_enable en;

static uint64_t *view_entry(void *p)
{
	return (uint64_t *)(uintptr_t)(en.view + ((uintptr_t)p >> 12) * ULPT_ENTRY_SIZE);
}

static void set_entry(void *p, int word, uint64_t v)
{
	WRITE_ONCE(view_entry(p)[word], v);
}

static uint64_t get_entry(void *p, int word)
{
	return READ_ONCE(view_entry(p)[word]);
}

/* The ULPT: line of /proc/self/arch_status has want (NULL: there is a ULPT: line) */
static bool status_says(const char *want)
{
	FILE *f = fopen("/proc/self/arch_status", "r");
	bool found = false;
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "ULPT:", 5) == 0)
			found = !want || strstr(line, want);
	if (f)
		fclose(f);
	return found;
}

static long mem_free_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static void *page(void)
{
	void *p = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(p, 0, PAGE_SIZE);
	return p;
}

/* --- SIGSEGV: record and jump back ----------------------------------------------- */

static sigjmp_buf segv_jmp;
static int segv_code, segv_in_handler;
static uintptr_t segv_addr;
static unsigned long segv_err;

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct ulpt_state s;

	WRITE_ONCE(segv_in_handler, ulpt(ARCH_ULPT_GET_STATE, &s) == 0 &&
		   (s.flags & ULPT_STATE_IN_HANDLER));
	WRITE_ONCE(segv_code, si->si_code);
	WRITE_ONCE(segv_addr, (uintptr_t)si->si_addr);
	WRITE_ONCE(segv_err, uc->uc_mcontext.gregs[REG_ERR]);
	siglongjmp(segv_jmp, 1);
}

/* Runs fn(arg): false if it returned, true after a SIGSEGV (details in segv_*). */
static bool faults(void (*fn)(void *), void *arg)
{
	WRITE_ONCE(segv_code, 0);
	if (sigsetjmp(segv_jmp, 1))
		return true;
	fn(arg);
	return false;
}

/* faults(), with a SIGSEGV of ULPT */
static bool ulpt_faults(void (*fn)(void *), void *arg)
{
	return faults(fn, arg) && READ_ONCE(segv_code) == SEGV_ULPTERR;
}

static void write8(void *p)
{
	WRITE_ONCE(*(uint64_t *)p, 0x55);
}

static void read8(void *p)
{
	(void)READ_ONCE(*(uint64_t *)p);
}

/* --- the user-level handler ---------------------------------------------------------- */

enum { H_PERMIT, H_FAULT, H_FLAGS, H_SIGNAL, H_STEP, H_STEP_SYSCALL, H_SIGWORD, H_FORK };
static int h_count, h_action, usr1_in_handler = -1, h_in_handler_after = -1;
static uint64_t h_addr, h_info, h_rip;
static int h_after;			/* after events (ULPT_INFO_STEP) */
static uint64_t h_after_rip, h_after_seen;
static void *h_fault_at;
static sigjmp_buf h_jmp;		/* H_SIGWORD: out of a handler that is no longer one */
static pid_t h_fork_pid = -1;		/* H_FORK: the child (0 in the child) */
static int h_fork_in_handler = -1;	/* H_FORK: the child's in-handler state in the handler */

static bool in_handler(void)
{
	struct ulpt_state s;

	return ulpt(ARCH_ULPT_GET_STATE, &s) == 0 && (s.flags & ULPT_STATE_IN_HANDLER);
}

static void on_usr1(int sig)
{
	WRITE_ONCE(usr1_in_handler, in_handler());
}

/*
 * Signals: the word of the signal frame that holds the in-handler state,
 * uc_mcontext.reserved1[0] (glibc: __reserved1[0]). SIGUSR2's handler records
 * it and edits it (w_edit), or disables the table (and enables a new one).
 */
#define SIGFRAME_TAG		0x554c505400000000ULL	/* "ULPT" in bits 63:32 */

enum { W_KEEP, W_SET, W_DISABLE, W_REENABLE };
static int w_edit;
static uint64_t w_seen, w_new;

static void on_usr2(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	WRITE_ONCE(w_seen, uc->uc_mcontext.__reserved1[0]);
	switch (READ_ONCE(w_edit)) {
	case W_SET:
		uc->uc_mcontext.__reserved1[0] = READ_ONCE(w_new);
		break;
	case W_REENABLE:
		ulpt_ul(ARCH_ULPT_DISABLE, 0);
		ulpt(ARCH_ULPT_ENABLE, &en);
		break;
	case W_DISABLE:
		ulpt_ul(ARCH_ULPT_DISABLE, 0);
		break;
	}
}

/* SIGUSR2's handler, to edit the word as edit and new say */
static void sigword_arm(int edit, uint64_t new)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR2, &sa, NULL);
	WRITE_ONCE(w_edit, edit);
	WRITE_ONCE(w_new, new);
	WRITE_ONCE(w_seen, ~0ULL);
}

/* The word of a signal raised here (outside any ULPT handler), edited as edit and new say */
static uint64_t sigword_outside(int edit, uint64_t new)
{
	sigword_arm(edit, new);
	raise(SIGUSR2);
	return READ_ONCE(w_seen);
}

/* Called by ulpt_entry */
void ulpt_handler(struct ulpt_frame *f)
{
	if (ULPT_INFO_REASON(f->info) == ULPT_REASON_AFTER) {
		WRITE_ONCE(h_after, READ_ONCE(h_after) + 1);
		WRITE_ONCE(h_after_rip, f->rip);
		WRITE_ONCE(h_after_seen, READ_ONCE(*(uint64_t *)f->start));
		return;
	}
	WRITE_ONCE(h_count, READ_ONCE(h_count) + 1);
	WRITE_ONCE(h_addr, f->addr);
	WRITE_ONCE(h_info, f->info);
	WRITE_ONCE(h_rip, f->rip);
	switch (READ_ONCE(h_action)) {
	case H_FAULT:
		read8(READ_ONCE(h_fault_at));
		break;
	case H_FLAGS:
		f->rflags |= FL_TESTED;
		break;
	case H_SIGNAL:		/* a signal handler runs inside this one */
		raise(SIGUSR1);
		WRITE_ONCE(h_in_handler_after, in_handler());
		break;
	case H_SIGWORD:		/* a signal whose handler may edit the saved word */
		raise(SIGUSR2);
		WRITE_ONCE(h_in_handler_after, in_handler());
		if (!READ_ONCE(h_in_handler_after))
			siglongjmp(h_jmp, 1);	/* no UIRET outside the handler */
		break;
	case H_STEP_SYSCALL:	/* a system call, then as H_STEP */
		syscall(SYS_getppid);
		f->info |= ULPT_INFO_STEP;
		break;
	case H_STEP:
		f->info |= ULPT_INFO_STEP;
		break;
	case H_FORK:		/* both return with UIRET and complete the access */
		/* once: the access may come back after the fork's copy-on-write fault */
		WRITE_ONCE(h_action, H_PERMIT);
		h_fork_pid = fork();
		if (h_fork_pid == 0)
			h_fork_in_handler = in_handler();
		break;
	}
	f->info |= ULPT_INFO_PERMIT;
}

/*
 * The entry stub: RSP points at the frame; save what a C function may
 * clobber, call ulpt_handler(frame), return with UIRET (f3 0f 01 ec).
 */
void ulpt_entry(void);
asm(".text\n"
	".globl ulpt_entry\n"
	"ulpt_entry:\n"
	"push %rax\n push %rcx\n push %rdx\n push %rsi\n push %rdi\n"
	"push %r8\n push %r9\n push %r10\n push %r11\n"
	"lea 72(%rsp), %rdi\n sub $8, %rsp\n call ulpt_handler\n add $8, %rsp\n"
	"pop %r11\n pop %r10\n pop %r9\n pop %r8\n pop %rdi\n pop %rsi\n pop %rdx\n"
	"pop %rcx\n pop %rax\n"
	".byte 0xf3, 0x0f, 0x01, 0xec\n");

static void handle(int action)
{
	WRITE_ONCE(h_action, action);
	WRITE_ONCE(h_count, 0);
}

/* A table and the SIGSEGV recorder: what most tests start from. */
static void setup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	memset(&en, 0, sizeof(en));
	if (ulpt(ARCH_ULPT_ENABLE, &en))
		ksft_exit_fail_msg("ARCH_ULPT_ENABLE: %s\n", strerror(errno));
}

/* setup(), and this thread's handler */
static void setup_handler(void)
{
	setup();
	if (ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry))
		ksft_exit_fail_msg("ARCH_ULPT_SET_HANDLER: %s\n", strerror(errno));
}

/* --- tests for a kernel without ULPT ------------------------------------------------- */

/* Return value: ENODEV; feature detection: arch_status says unsupported */
static void test_nocpu(void)
{
	if (!status_says(NULL) && ulpt(ARCH_ULPT_GET_STATE, &en) == -1 && errno == EINVAL) {
		ksft_print_msg("a kernel without CONFIG_X86_USER_PAGE_TABLES\n");
		fflush(stdout);
		_exit(KSFT_SKIP);
	}
	check(ulpt(ARCH_ULPT_ENABLE, &en) == -1 && errno == ENODEV,
	      "no ULPT CPU: ENABLE is ENODEV");
	check(status_says("unsupported"), "no ULPT CPU: /proc/self/arch_status says unsupported");
	check(sigword_outside(W_KEEP, 0) == 0, "no ULPT CPU: the signal frame's word is 0");
}

/* --- the arch_prctl() calls ---------------------------------------------------------- */

/* Feature detection: ULPT in /proc/<pid>/arch_status */
static void test_arch_status(void)
{
	check(status_says("disabled"), "/proc/self/arch_status: ULPT disabled");
	setup();
	check(status_says("enabled"), "/proc/self/arch_status: ULPT enabled");
}

/* ARCH_ULPT_ENABLE and ARCH_ULPT_GET_STATE, their errors */
static void test_enable(void)
{
	struct ulpt_state st;
	long r;

	memset(&st, 0xff, sizeof(st));
	check(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == 0,
	      "GET_STATE before ENABLE: not enabled");
	en.flags = 1;
	check(ulpt(ARCH_ULPT_ENABLE, &en) == -1 && errno == EINVAL,
	      "ENABLE with unknown flags: EINVAL");
	check(ulpt(ARCH_ULPT_ENABLE, (void *)16) == -1 && errno == EFAULT,
	      "ENABLE with a bad pointer: EFAULT");
	en.flags = 0;
	r = ulpt(ARCH_ULPT_ENABLE, &en);
	check(r == 0 && en.view && en.view_size == ULPT_VIEW_SIZE && (en.view & 4095) == 0,
	      "ENABLE: view at %#llx, %llu GiB", (unsigned long long)en.view,
	      (unsigned long long)(en.view_size >> 30));
	check(ulpt(ARCH_ULPT_ENABLE, &en) == -1 && errno == EBUSY, "ENABLE twice: EBUSY");
	check(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == ULPT_STATE_ENABLED &&
	      st.view == en.view && st.handler == 0 && st.stack_adjust == 128,
	      "GET_STATE: enabled, view, no handler, red zone 128");
	check(ulpt(ARCH_ULPT_GET_STATE, (void *)16) == -1 && errno == EFAULT,
	      "GET_STATE with a bad pointer: EFAULT");
}

/* Return value: EINVAL without a table and for unknown codes */
static void test_einval(void)
{
	check(ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) == -1 && errno == EINVAL,
	      "SET_HANDLER before ENABLE: EINVAL");
	check(ulpt_ul(ARCH_ULPT_DISABLE, 0) == -1 && errno == EINVAL,
	      "DISABLE before ENABLE: EINVAL");
	setup();
	check(ulpt_ul(0x60ff, 0) == -1 && errno == EINVAL, "unknown ULPT arch_prctl: EINVAL");
}

/* ARCH_ULPT_ENABLE: one store to an entry denies; SIGSEGV without a handler */
static void test_store_denies(void)
{
	uint64_t *p;
	bool denied;

	setup();
	p = page();
	check(!faults(write8, p), "write before any restriction");
	set_entry(p, 0, ULPT_NW);
	denied = ulpt_faults(write8, p + 1);
	check(denied && READ_ONCE(segv_addr) == (uintptr_t)(p + 1),
	      "one store denies the next write: SIGSEGV SEGV_ULPTERR at the address (code %d)",
	      READ_ONCE(segv_code));
	check((segv_err & (X86_PF_ULPT | X86_PF_WRITE | X86_PF_USER)) ==
	      (X86_PF_ULPT | X86_PF_WRITE | X86_PF_USER),
	      "the sigcontext error code has the ULPT and write bits (%#lx)",
	      READ_ONCE(segv_err));
	check(!faults(read8, p), "reads still allowed");
	set_entry(p, 0, 0);
	set_entry(p, 1, ULPT_LINE_NR(3));
	check(ulpt_faults(read8, (char *)p + 3 * LINE_SIZE + 8) && !(segv_err & X86_PF_WRITE) &&
	      !faults(read8, (char *)p + 2 * LINE_SIZE),
	      "line rights: a read of line 3 faults as a read, line 2 does not");
}

/* ARCH_ULPT_SET_HANDLER: the handler runs, ULPT_INFO_PERMIT lets an access through once */
static void test_handler(void)
{
	struct ulpt_state st;
	uint64_t *p;
	int i;

	setup();
	p = page();
	check(ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) == 0 &&
	      ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.handler == (uintptr_t)ulpt_entry,
	      "SET_HANDLER");
	set_entry(p, 1, ULPT_LINE_NW(0));
	handle(H_PERMIT);
	for (i = 0; i < 3; i++)
		WRITE_ONCE(p[1], i);
	check(READ_ONCE(h_count) == 3 && p[1] == 2 && READ_ONCE(h_addr) == (uintptr_t)&p[1] &&
	      ULPT_INFO_KIND(h_info) == ULPT_KIND_W,
	      "handler runs without the kernel; each write completes once (%d deliveries)",
	      READ_ONCE(h_count));
	check(get_entry(p, 1) == ULPT_LINE_NW(0), "the table is unchanged by let-through-once");
}

/* A labelled store and the instruction after it. */
extern char step_store[], step_next[];
static void step_write(void *p)
{
	asm volatile(".globl step_store\nstep_store: movq $0x77, (%0)\n"
		     ".globl step_next\nstep_next: nop" :: "r"(p) : "memory");
}

static int traps;
static void on_trap(int sig)
{
	traps++;
}

/* ULPT_INFO_STEP: the handler is entered again after the instruction, with no signal */
static void test_step_after(void)
{
	uint64_t *p;

	setup_handler();
	p = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	signal(SIGTRAP, on_trap);
	handle(H_STEP);
	step_write(&p[1]);
	check(READ_ONCE(h_count) == 1 && READ_ONCE(h_after) == 1 &&
	      READ_ONCE(h_after_rip) == (uintptr_t)step_next && READ_ONCE(h_after_seen) == 0x77 &&
	      p[1] == 0x77, "an after event at the next instruction, the value stored (%d, %d)",
	      READ_ONCE(h_count), READ_ONCE(h_after));
	check(traps == 0, "no SIGTRAP (%d)", traps);
}

/*
 * PTRACE_SINGLESTEP over a store that faults into a handler that makes a system call: the
 * step ends at that call's exit, inside the handler; more steps reach the next instruction.
 */
extern char step_store2[], step_next2[];
static void test_step_ptrace(void)
{
	struct user_regs_struct regs;
	int st, steps = 0;
	uint64_t *p;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		long r;

		if (ptrace(PTRACE_TRACEME, 0, 0, 0))
			_exit(2);
		setup_handler();
		p = page();
		set_entry(p, 1, ULPT_LINE_NW(0));
		handle(H_STEP_SYSCALL);
		/* kill(getpid(), SIGSTOP) as the instruction before the store */
		asm volatile("syscall\n.globl step_store2\nstep_store2: movq $0x77, (%3)\n"
			     ".globl step_next2\nstep_next2: nop"
			     : "=a"(r) : "a"((long)SYS_kill), "D"((long)getpid()), "r"(&p[1]),
			       "S"((long)SIGSTOP) : "rcx", "r11", "memory");
		_exit(r == 0 && READ_ONCE(h_after) == 1 ? 0 : 3);
	}
	check(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP &&
	      !ptrace(PTRACE_GETREGS, pid, 0, &regs) && regs.rip == (uintptr_t)step_store2,
	      "the child stops at the store");
	check(!ptrace(PTRACE_SINGLESTEP, pid, 0, 0) && waitpid(pid, &st, 0) == pid &&
	      WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && !ptrace(PTRACE_GETREGS, pid, 0, &regs) &&
	      regs.rip != (uintptr_t)step_store2 && regs.rip != (uintptr_t)step_next2,
	      "one step ends at the handler's system call (rip %#llx)", regs.rip);
	while (regs.rip != (uintptr_t)step_next2 && steps++ < 1000000 &&
	       !ptrace(PTRACE_SINGLESTEP, pid, 0, 0) && waitpid(pid, &st, 0) == pid &&
	       WIFSTOPPED(st) && !ptrace(PTRACE_GETREGS, pid, 0, &regs))
		;
	check(regs.rip == (uintptr_t)step_next2,
	      "further steps reach the next instruction (%d steps)", steps);
	check(!ptrace(PTRACE_CONT, pid, 0, 0) && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the child's store and after event happened (%#x)", st);
}

/*
 * After a UIRET that set DF ZF SF CF from the frame: flags set by the next
 * instruction are exact, and stay so across a system call and timer
 * interrupts. Each returns the flags (of DF ZF SF CF) that are wrongly set.
 */
static uint64_t flags_after_uiret(void *p)
{
	uint64_t f;

	asm volatile("movq $1, (%1)\n cld\n test %%rsp, %%rsp\n pushfq\n popq %0"
		     : "=r"(f) : "r"(p) : "memory", "cc");
	return f & FL_TESTED;
}

static uint64_t flags_after_syscall(void *p)
{
	uint64_t f, z;

	asm volatile("movq $1, (%2)\n cld\n test %%rsp, %%rsp\n"
		     "mov %3, %%eax\n syscall\n setz %%al\n movzbl %%al, %%eax\n mov %%rax, %1\n"
		     "pushfq\n popq %0"
		     : "=r"(f), "=r"(z) : "r"(p), "i"(SYS_getpid)
		     : "rax", "rcx", "r11", "memory", "cc");
	return (f & (FL_DF | FL_SF | FL_CF)) | (z ? FL_ZF : 0);
}

static uint64_t flags_across_ticks(void *p)
{
	uint64_t bad = flags_after_uiret(p);
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {			/* 50 ms: a dozen timer ticks at HZ=250 */
		uint64_t f;
		int i;

		for (i = 0; i < 1000; i++) {
			asm volatile("test %%rsp, %%rsp\n pushfq\n popq %0" : "=r"(f) :: "cc");
			bad |= f & FL_TESTED;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000LL + t.tv_nsec - t0.tv_nsec < 50000000);
	return bad;
}

/* ARCH_ULPT_SET_HANDLER: UIRET restores the frame's flags once; they do not stick */
static void test_uiret_flags(void)
{
	uint64_t *p, bad;

	setup_handler();
	p = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	handle(H_FLAGS);
	bad = flags_after_uiret(p);
	check(READ_ONCE(h_count) == 1 && bad == 0,
	      "after UIRET, cld and test give exact flags (wrong: %#lx)", bad);
	bad = flags_after_syscall(p);
	check(READ_ONCE(h_count) == 2 && bad == 0,
	      "  ...also after a system call (wrong: %#lx)", bad);
	bad = flags_across_ticks(p);
	check(READ_ONCE(h_count) == 3 && bad == 0,
	      "  ...also across timer interrupts (wrong: %#lx)", bad);
}

/* A write made by code at `code` (movq $1, (%rdi); ret), mapped anywhere. */
static const uint8_t write_insn[] = { 0x48, 0xc7, 0x07, 0x01, 0x00, 0x00, 0x00, 0xc3 };

/* An executable page at a fixed address (above 2^47 needs 5-level paging), or NULL. */
static uint8_t *code_page_at(uintptr_t at)
{
	void *q = mmap((void *)at, PAGE_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	return q == (void *)at ? q : NULL;
}

/* ARCH_ULPT_SET_HANDLER: any address below the user address limit, others EINVAL */
static void test_handler_limit(void)
{
	static const uint8_t jmp_abs[] = { 0xff, 0x25, 0, 0, 0, 0 };	/* jmp *0(%rip) */
	uint8_t *hi_handler, *hi_code;
	void (*entry)(void) = ulpt_entry;
	struct ulpt_state st;
	uint64_t *p;

	setup_handler();
	p = page();
	WRITE_ONCE(p[1], 2);
	set_entry(p, 1, ULPT_LINE_NW(0));
	check(ulpt_ul(ARCH_ULPT_SET_HANDLER, 0xffffffff81000000UL) == -1 && errno == EINVAL,
	      "SET_HANDLER with a kernel address: EINVAL");
	check(ulpt_ul(ARCH_ULPT_SET_HANDLER, 1UL << 57) == -1 && errno == EINVAL,
	      "SET_HANDLER at or above the user address limit: EINVAL");
	hi_handler = code_page_at(0x900000000000UL);
	hi_code = code_page_at(0xa00000000000UL);
	if (!hi_handler || !hi_code) {
		ksft_print_msg("no 5-level paging: no handler or code above 2^47\n");
		return;
	}
	memcpy(hi_handler, jmp_abs, sizeof(jmp_abs));
	memcpy(hi_handler + sizeof(jmp_abs), &entry, sizeof(entry));
	memcpy(hi_code, write_insn, sizeof(write_insn));
	handle(H_PERMIT);
	check(ulpt_ul(ARCH_ULPT_SET_HANDLER, (uintptr_t)hi_handler) == 0 &&
	      ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.handler == (uintptr_t)hi_handler,
	      "SET_HANDLER above 2^47 (5-level paging): accepted");
	((void (*)(void *))hi_code)(&p[1]);
	check(READ_ONCE(h_count) == 1 && p[1] == 1 && READ_ONCE(h_rip) == (uintptr_t)hi_code,
	      "a violation by code above 2^47 runs the handler above 2^47 and UIRET returns there (%d deliveries, rip %#lx, addr %#lx info %#lx, p1 %lu)",
	      READ_ONCE(h_count), READ_ONCE(h_rip), READ_ONCE(h_addr), READ_ONCE(h_info),
	      p[1]);
}

/* Signals: a violation inside the handler is SIGSEGV; siglongjmp leaves the handler */
static void test_fault_in_handler(void)
{
	uint64_t *p, *q;

	setup_handler();
	p = page();
	q = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	set_entry(q, 0, ULPT_NR);
	handle(H_FAULT);
	WRITE_ONCE(h_fault_at, q);
	check(ulpt_faults(write8, p) && READ_ONCE(segv_addr) == (uintptr_t)q,
	      "a violation inside the handler becomes SIGSEGV SEGV_ULPTERR");
	check(!READ_ONCE(segv_in_handler), "the signal handler runs outside the ULPT handler");
	check(!in_handler(), "siglongjmp out of it: out of the ULPT handler too");
	handle(H_PERMIT);
	write8(p);
	check(READ_ONCE(h_count) == 1, "after siglongjmp the next violation reaches the handler");
}

/* Signals: the in-handler state is saved in the signal frame, restored by sigreturn */
static void test_signal_in_handler(void)
{
	uint64_t *p;

	setup_handler();
	p = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	signal(SIGUSR1, on_usr1);
	handle(H_SIGNAL);
	WRITE_ONCE(p[2], 77);
	check(READ_ONCE(h_count) == 1 && READ_ONCE(usr1_in_handler) == 0 &&
	      READ_ONCE(h_in_handler_after) == 1 && p[2] == 77,
	      "a signal inside the handler: not in the handler while it runs (%d), in it again after sigreturn (%d), and UIRET completes the write",
	      READ_ONCE(usr1_in_handler), READ_ONCE(h_in_handler_after));
}

/*
 * A write to p (a denied line) whose ULPT handler raises SIGUSR2, edited as
 * edit and new say: true if the ULPT handler is still one after sigreturn
 * (it then lets the write through with UIRET); if not, it jumps out.
 */
static bool sigword_inside(uint64_t *p, int edit, uint64_t new)
{
	sigword_arm(edit, new);
	WRITE_ONCE(h_in_handler_after, -1);
	handle(H_SIGWORD);
	if (!sigsetjmp(h_jmp, 1))
		write8(p);
	handle(H_PERMIT);
	return READ_ONCE(h_in_handler_after) == 1;
}

/* Signals: the saved word's encoding, rule by rule */
static void test_sigframe_word(void)
{
	uint64_t *p, w;
	bool in;

	w = sigword_outside(W_KEEP, 0);
	check(w == 0, "word rule 1: no table: the word is 0 (%#llx)", (unsigned long long)w);
	setup_handler();
	p = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	w = sigword_outside(W_KEEP, 0);
	check(w == SIGFRAME_TAG,
	      "word rule 2: a table, outside the ULPT handler: the tag, bit 0 clear (%#llx)",
	      (unsigned long long)w);
	in = sigword_inside(p, W_KEEP, 0);
	check(in && READ_ONCE(w_seen) == (SIGFRAME_TAG | 1) && READ_ONCE(p[0]) == 0x55,
	      "word rule 2, 3: inside the ULPT handler: the tag | 1 (%#llx); sigreturn puts the thread back inside (%d), UIRET completes the write",
	      (unsigned long long)READ_ONCE(w_seen), in);
	WRITE_ONCE(p[0], 0);
	in = sigword_inside(p, W_SET, SIGFRAME_TAG);
	check(!in && READ_ONCE(w_seen) == (SIGFRAME_TAG | 1),
	      "word rule 3: the tag with bit 0 clear: sigreturn leaves the thread outside its ULPT handler");
	in = sigword_inside(p, W_SET, 0);
	check(!in, "word rule 3: 0 (no tag): sigreturn restores nothing, the thread stays outside");
	in = sigword_inside(p, W_SET, 1);
	check(!in, "word rule 3: bit 0 without the tag: nothing restored");
	in = sigword_inside(p, W_SET, SIGFRAME_TAG | 3);
	check(!in, "word rule 3: the tag with a bit of 31:1 set: nothing restored");
	in = sigword_inside(p, W_SET, (SIGFRAME_TAG ^ (1ULL << 40)) | 1);
	check(!in, "word rule 3: another tag with bit 0 set: nothing restored");
	check(READ_ONCE(p[0]) == 0, "word rule 3: none of those writes went through");
	handle(H_PERMIT);
	write8(p);
	in = in_handler();
	check(READ_ONCE(h_count) == 1 && READ_ONCE(p[0]) == 0x55 && !in,
	      "word rule 3: afterwards the next violation reaches the ULPT handler");
	WRITE_ONCE(p[0], 0);
	w = sigword_outside(W_SET, SIGFRAME_TAG | 1);
	check(w == SIGFRAME_TAG && in_handler(),
	      "word rule 4: the tag | 1 written by a signal handler outside the ULPT handler: inside it after sigreturn");
	handle(H_PERMIT);
	check(ulpt_faults(write8, p) && READ_ONCE(h_count) == 0 && READ_ONCE(p[0]) == 0,
	      "word rule 4: ...so the next violation is SIGSEGV SEGV_ULPTERR, not a delivery");
	check(!in_handler(), "word rule 4: siglongjmp out of that SIGSEGV: outside again");
	in = sigword_inside(p, W_REENABLE, 0);
	check(!in && READ_ONCE(w_seen) == (SIGFRAME_TAG | 1),
	      "word rule 3: DISABLE and a new ENABLE in the signal handler: the tag | 1 restores nothing");
	w = sigword_outside(W_SET, SIGFRAME_TAG | 1);
	check(w == SIGFRAME_TAG && !in_handler(),
	      "word rule 3: no handler set on the new table: the tag | 1 written by a signal handler restores nothing");
	check(ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) == 0,
	      "SET_HANDLER on the new table");
	set_entry(p, 1, ULPT_LINE_NW(0));
	in = sigword_inside(p, W_DISABLE, 0);
	check(!in && READ_ONCE(w_seen) == (SIGFRAME_TAG | 1),
	      "word rule 3: DISABLE in the signal handler: the tag | 1 restores nothing");
}

/* Signals: a frame that cannot be written is the ordinary SIGSEGV of the stack */
static void test_frame_overflow(void)
{
	uint64_t *p;
	int status;
	pid_t pid;

	setup_handler();
	p = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		uint8_t *stk = mmap(NULL, 2 * PAGE_SIZE, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		munmap(stk, PAGE_SIZE);		/* unmapped below the stack */
		signal(SIGSEGV, SIG_DFL);
		asm volatile("mov %%rsp, %%rbx\n mov %0, %%rsp\n movq $1, (%1)\n mov %%rbx, %%rsp"
			     :: "r"(stk + PAGE_SIZE + 64), "r"(&p[0]) : "rbx", "memory");
		_exit(0);
	}
	waitpid(pid, &status, 0);
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
	      "a frame that cannot be pushed ends in SIGSEGV, no hang, no oops");
}

/* Lifecycle: fork copies the table */
static void test_fork(void)
{
	int status;
	uint64_t *p;
	pid_t pid;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		bool inherited = ulpt_faults(write8, p);

		set_entry(p, 0, 0);	/* the child's copy only */
		_exit(inherited && !faults(write8, p) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: the child inherits the rights and can change its copy");
	check(ulpt_faults(write8, p) && get_entry(p, 0) == ULPT_NW,
	      "fork: the child's change did not reach the parent");
}

/* Lifecycle: fork inside the handler; the child is inside its handler too */
static void test_fork_in_handler(void)
{
	int status = -1, delivered;
	uint64_t *p;

	setup_handler();
	p = page();
	set_entry(p, 1, ULPT_LINE_NW(0));
	handle(H_FORK);
	fflush(stdout);
	WRITE_ONCE(p[1], 0x5a);
	if (h_fork_pid == 0)
		_exit(h_fork_in_handler == 1 && READ_ONCE(p[1]) == 0x5a && !in_handler() ? 0 : 1);
	waitpid(h_fork_pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork in the handler: the child is inside it, and its UIRET completes the access (status %#x)",
	      status);
	delivered = READ_ONCE(h_count);
	check(delivered >= 1 && READ_ONCE(p[1]) == 0x5a && !in_handler(),
	      "fork in the handler: the parent's access completes too");
}

/* Lifecycle: execve starts without a table */
static void test_exec(void)
{
	int status;
	pid_t pid;

	setup_handler();
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv0, "exec-check", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "exec: the program after exec has no table, and /proc/self/arch_status says disabled");
}

/* After exec (ulpt exec-check): no table. Answers with the exit status only. */
static int exec_check(void)
{
	struct ulpt_state st;

	memset(&st, 0xff, sizeof(st));
	return !(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.flags == 0 &&
		 status_says("disabled"));
}

/* Lifecycle: munmap clears the entries of the range */
static void test_munmap(void)
{
	uint64_t *p;
	void *addr;

	setup();
	p = page();
	addr = p;
	set_entry(p, 0, ULPT_NW);
	munmap(p, PAGE_SIZE);
	p = mmap(addr, PAGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	check(p == addr && get_entry(p, 0) == 0 && !faults(write8, p),
	      "munmap + mmap at the same address: fully accessible");
}

/* ARCH_ULPT_ENABLE: the view cannot be moved, grown or shrunk */
static void test_mremap_view(void)
{
	void *v;

	setup();
	v = (void *)(uintptr_t)en.view;
	check(mremap(v, PAGE_SIZE, 2 * PAGE_SIZE, MREMAP_MAYMOVE) == MAP_FAILED &&
	      errno == EINVAL, "mremap growing the view: EINVAL");
	check(mremap(v, 2 * PAGE_SIZE, PAGE_SIZE, 0) == MAP_FAILED && errno == EINVAL,
	      "mremap shrinking the view: EINVAL");
}

/*
 * ARCH_ULPT_ENABLE: the view is one mapping that does not split and never executes;
 * a range that starts below it is not the view's; ENABLE checks its argument first.
 */
static void test_view_vm(void)
{
	char *v, *below;
	int busy;

	setup();
	v = (char *)(uintptr_t)en.view;
	check(munmap(v + PAGE_SIZE, PAGE_SIZE) == -1 && errno == EINVAL,
	      "munmap of a part of the view: EINVAL");
	check(mprotect(v, PAGE_SIZE, PROT_READ) == -1 && errno == EINVAL &&
	      mprotect(v, PAGE_SIZE, PROT_READ | PROT_WRITE) == 0,
	      "mprotect of a part of the view: EINVAL (0 when it changes nothing)");
	check(mprotect(v, ULPT_VIEW_SIZE, PROT_READ | PROT_EXEC) == -1 && errno == EACCES &&
	      mprotect(v + PAGE_SIZE, PAGE_SIZE, PROT_EXEC) == -1 && errno == EACCES,
	      "mprotect(PROT_EXEC) of the view or a part: EACCES");
	check(mremap(v - PAGE_SIZE, 2 * PAGE_SIZE, 3 * PAGE_SIZE, MREMAP_MAYMOVE) == MAP_FAILED &&
	      errno == EFAULT, "mremap growing a range starting below the view: EFAULT");
	below = mmap(v - PAGE_SIZE, PAGE_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (below == v - PAGE_SIZE) {
		*below = 1;
		check(mremap(below, 2 * PAGE_SIZE, 3 * PAGE_SIZE, MREMAP_MAYMOVE) == MAP_FAILED &&
		      errno == EFAULT && *below == 1,
		      "mremap growing our page below the view and the view's first page: EFAULT");
		munmap(below, PAGE_SIZE);
	}
	check(mprotect(v, ULPT_VIEW_SIZE, PROT_READ) == 0 &&
	      mprotect(v, ULPT_VIEW_SIZE, PROT_READ | PROT_WRITE) == 0,
	      "mprotect of the whole view: read-only and back");
	en.flags = 1;
	busy = ulpt(ARCH_ULPT_ENABLE, &en);
	check(busy == -1 && errno == EINVAL,
	      "ENABLE with non-zero flags when a table exists: EINVAL (the argument first)");
	en.flags = 0;
	check(ulpt(ARCH_ULPT_ENABLE, (void *)16) == -1 && errno == EFAULT,
	      "ENABLE with a bad pointer when a table exists: EFAULT");
}

/* Lifecycle: mprotect is independent */
static void test_mprotect(void)
{
	uint64_t *p;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW);
	mprotect(p, PAGE_SIZE, PROT_READ);
	mprotect(p, PAGE_SIZE, PROT_READ | PROT_WRITE);
	check(ulpt_faults(write8, p), "mprotect does not change ULPT rights");
}

/* Lifecycle: mremap clears the old range; the new range starts unrestricted */
static void test_mremap(void)
{
	uint64_t *p;
	void *moved;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW);
	moved = mremap(p, PAGE_SIZE, PAGE_SIZE, MREMAP_MAYMOVE | MREMAP_FIXED, page());
	check(moved != MAP_FAILED && get_entry(p, 0) == 0 && get_entry(moved, 0) == 0 &&
	      !faults(write8, moved),
	      "mremap: the old range's rights are cleared, the new range starts unrestricted");
}

/* Kernel accesses: copy_to_user() is not checked */
static void test_kernel_access(void)
{
	char *buf;
	int fds[2];

	setup();
	buf = page();
	set_entry(buf, 1, ULPT_LINE_NW(0) | ULPT_LINE_NR(0));
	check(pipe(fds) == 0 && write(fds[1], "kernel", 6) == 6 && read(fds[0], buf, 6) == 6 &&
	      ulpt_faults(read8, buf),
	      "read(2) into a denied line succeeds (the kernel is not checked); the user's read still faults");
	set_entry(buf, 1, 0);
	check(memcmp(buf, "kernel", 6) == 0, "  ...and the data arrived");
}

static int t_revoked, t_result;
static uint64_t *t_page;

static void *writer(void *arg)
{
	for (;;) {
		int r = READ_ONCE(t_revoked);

		if (faults(write8, t_page)) {
			WRITE_ONCE(t_result, READ_ONCE(segv_code) == SEGV_ULPTERR ? 1 : 3);
			return NULL;
		}
		if (r) {
			WRITE_ONCE(t_result, 2);	/* a write succeeded after the flag */
			return NULL;
		}
	}
}

/* Lifecycle: threads share the table; a store is seen by every thread's next access */
static void test_threads(void)
{
	pthread_t th;

	setup();
	t_page = page();
	pthread_create(&th, NULL, writer, NULL);
	usleep(200000);
	set_entry(t_page, 0, ULPT_NW);
	WRITE_ONCE(t_revoked, 1);
	pthread_join(th, NULL);
	check(READ_ONCE(t_result) == 1,
	      "threads: after the flag, the other thread's next write faults (result %d)",
	      READ_ONCE(t_result));
}

/* ARCH_ULPT_DISABLE: the table, the view and every handler go */
static void test_disable(void)
{
	struct ulpt_state st;
	uint64_t *p, *q;

	setup_handler();
	p = page();
	set_entry(p, 0, ULPT_NW);
	check(ulpt_ul(ARCH_ULPT_DISABLE, 0) == 0 && ulpt(ARCH_ULPT_GET_STATE, &st) == 0 &&
	      st.flags == 0, "DISABLE: no table any more");
	check(!faults(write8, p), "DISABLE: the restriction is gone");
	check(faults(read8, (void *)(uintptr_t)en.view) && READ_ONCE(segv_code) == SEGV_MAPERR,
	      "DISABLE: the view is unmapped");
	check(ulpt(ARCH_ULPT_ENABLE, &en) == 0, "ENABLE again after DISABLE");
	check(ulpt(ARCH_ULPT_GET_STATE, &st) == 0 && st.handler == 0,
	      "DISABLE removed the handler: a new table starts without one (handler %#llx)",
	      (unsigned long long)st.handler);
	q = page();
	set_entry(q, 0, ULPT_NW);
	handle(H_PERMIT);
	check(ulpt_faults(write8, q) && READ_ONCE(h_count) == 0,
	      "  ...and a violation is a SIGSEGV, not a delivery to the old handler");
}

/*
 * Lifecycle: processes that build a table and exit give all memory back.
 * Free memory moves by a few MiB on its own (per-CPU page lists, slabs);
 * leaking even one page per process would lose 8 MiB here, the tables
 * themselves (65+ pages each) far more.
 */
static void test_leaks(void)
{
	long before, after;
	int i, j, status;
	pid_t pid;

	setup();
	fflush(stdout);
	before = mem_free_kb();
	for (i = 0; i < 2000; i++) {
		pid = fork();
		if (pid == 0) {
			for (j = 0; j < 64; j++)	/* 64 leaves over the address space */
				set_entry((void *)((uintptr_t)j << 30), 0, 0);
			_exit(0);
		}
		waitpid(pid, &status, 0);
	}
	after = mem_free_kb();
	check(before > 0 && after >= before - 6144,
	      "2000 processes with tables: MemFree %ld -> %ld kB", before, after);
	check(status_says("enabled"), "the parent's table survived its children");
}

/* --- the table of tests -------------------------------------------------------------- */

struct ulpt_test {
	const char *name;
	void (*fn)(void);
	bool nocpu;		/* for a kernel without ULPT */
};

#define ULPT_TEST(name, nocpu) { #name, test_##name, nocpu }

static const struct ulpt_test ulpt_tests[] = {
	ULPT_TEST(nocpu, true),
	ULPT_TEST(arch_status, false),
	ULPT_TEST(enable, false),
	ULPT_TEST(einval, false),
	ULPT_TEST(store_denies, false),
	ULPT_TEST(handler, false),
	ULPT_TEST(uiret_flags, false),
	ULPT_TEST(handler_limit, false),
	ULPT_TEST(fault_in_handler, false),
	ULPT_TEST(signal_in_handler, false),
	ULPT_TEST(sigframe_word, false),
	ULPT_TEST(frame_overflow, false),
	ULPT_TEST(fork, false),
	ULPT_TEST(fork_in_handler, false),
	ULPT_TEST(exec, false),
	ULPT_TEST(munmap, false),
	ULPT_TEST(mremap_view, false),
	ULPT_TEST(view_vm, false),
	ULPT_TEST(mprotect, false),
	ULPT_TEST(mremap, false),
	ULPT_TEST(kernel_access, false),
	ULPT_TEST(threads, false),
	ULPT_TEST(disable, false),
	ULPT_TEST(leaks, false),
	ULPT_TEST(step_after, false),
	ULPT_TEST(step_ptrace, false),
};

#define NR_TESTS ARRAY_SIZE(ulpt_tests)

/* Runs a test in a child process: pass, fail, or skip when skip says why. */
static void run(const struct ulpt_test *t, const char *skip)
{
	int status;
	pid_t pid;

	if (skip) {
		ksft_test_result_skip("%s: %s\n", t->name, skip);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0) {
		t->fn();
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		ksft_test_result_pass("%s\n", t->name);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == KSFT_SKIP)
		ksft_test_result_skip("%s\n", t->name);
	else
		ksft_test_result_fail("%s (status %#x)\n", t->name, status);
}

static const struct ulpt_test *find(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_TESTS; i++)
		if (!strcmp(ulpt_tests[i].name, name))
			return &ulpt_tests[i];
	return NULL;
}

static bool cmdline_has(const char *word)
{
	FILE *f = fopen("/proc/cmdline", "r");
	char w[256];
	bool found = false;

	while (f && !found && fscanf(f, "%255s", w) == 1)
		found = !strcmp(w, word);
	if (f)
		fclose(f);
	return found;
}

/*
 * The kernel should run ULPT: the CPU has it (CPUID.7.0:EDX[6]) and
 * "noulpt" was not given. Then a kernel answering ENODEV fails the tests.
 */
static bool kernel_has_ulpt(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1U << 6)))
		return false;
	return !cmdline_has("noulpt");
}

int main(int argc, char **argv)
{
	const char *skip = NULL;
	bool nocpu;
	unsigned int i;
	int a;

	argv0 = argv[0];
	if (argc > 1 && !strcmp(argv[1], "exec-check"))
		return exec_check();
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < NR_TESTS; i++)
			printf("%s%s\n", ulpt_tests[i].name,
			       ulpt_tests[i].nocpu ? " (without ULPT)" : "");
		return 0;
	}
	for (a = 1; a < argc; a++)
		if (strcmp(argv[a], "nocpu") && !find(argv[a]))
			ksft_exit_fail_msg("no test %s (ulpt --list names them)\n", argv[a]);

	ksft_print_header();
	if (argc > 1 && !strcmp(argv[1], "nocpu")) {
		nocpu = true;
	} else {
		nocpu = !kernel_has_ulpt();
		if (nocpu)
			ksft_print_msg("the CPU has no ULPT, or the kernel does not use it\n");
	}
	if (argc > 1 && strcmp(argv[1], "nocpu")) {
		ksft_set_plan(argc - 1);
		for (a = 1; a < argc; a++)
			run(find(argv[a]), NULL);
	} else {
		ksft_set_plan(NR_TESTS);
		for (i = 0; i < NR_TESTS; i++) {
			skip = ulpt_tests[i].nocpu == nocpu ? NULL :
			       nocpu ? "needs ULPT" : "for a kernel without ULPT";
			run(&ulpt_tests[i], skip);
		}
	}
	ksft_finished();
}
