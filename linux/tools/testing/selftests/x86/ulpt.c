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

/*
 * The access log of the thread under test (lg_*) and its consumer: records are taken in
 * order from lg_next into lg_seen[], each slot freed (V cleared) after it was read.
 */
#define LG_SEEN			64
static struct ulpt_log_record *lg_buf, lg_seen[LG_SEEN];
static unsigned int lg_size;		/* records in lg_buf */
static uint64_t lg_next;		/* the next record to consume */
static int lg_nseen;
static int lg_full, lg_events;		/* deliveries of reason FULL and LOG */
static bool lg_drain = true;		/* the handler consumes the log */
static bool lg_permit;			/* the handler lets a FULL access through */
static struct ulpt_frame lg_frame;	/* the last FULL or LOG frame */

static void lg_init(struct ulpt_log_record *buf, unsigned int shift, uint64_t index)
{
	lg_buf = buf;
	lg_size = 1U << shift;
	lg_next = index;
	lg_nseen = 0;
	lg_full = 0;
	lg_events = 0;
	lg_drain = true;
	lg_permit = false;
}

/* Consumes the records that wait in order: how many */
static int lg_consume(void)
{
	int n = 0;

	for (;;) {
		struct ulpt_log_record *r = &lg_buf[lg_next & (lg_size - 1)];

		if (!(__atomic_load_n(&r->info, __ATOMIC_ACQUIRE) & ULPT_REC_V))
			return n;
		if (lg_nseen < LG_SEEN)
			lg_seen[lg_nseen++] = *r;
		__atomic_store_n(&r->info, 0, __ATOMIC_RELEASE);
		lg_next++;
		n++;
	}
}

/* The handler's part for a full log (R-LOG-4) and a log event (R-LOG-5) */
static void lg_handler(struct ulpt_frame *f)
{
	lg_frame = *f;
	if (ULPT_INFO_REASON(f->info) == ULPT_REASON_FULL)
		lg_full++;
	else
		lg_events++;
	if (lg_drain)
		lg_consume();
	if (ULPT_INFO_REASON(f->info) == ULPT_REASON_FULL && lg_permit)
		f->info |= ULPT_INFO_PERMIT;
}

/* Called by ulpt_entry */
void ulpt_handler(struct ulpt_frame *f)
{
	if (ULPT_INFO_REASON(f->info) == ULPT_REASON_FULL ||
	    ULPT_INFO_REASON(f->info) == ULPT_REASON_LOG) {
		lg_handler(f);
		return;
	}
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
	check(ulpt(ARCH_ULPT_SET_LOG, &(struct ulpt_log){ 0 }) == -1 && errno == ENODEV &&
	      ulpt(ARCH_ULPT_GET_LOG, &(struct ulpt_log){ 0 }) == -1 && errno == ENODEV,
	      "no ULPT CPU: SET_LOG and GET_LOG are ENODEV");
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

/* --- the access log ------------------------------------------------------------------ */

static long set_log(void *base, unsigned int shift, unsigned int thresh, uint64_t index)
{
	struct ulpt_log l = {
		.base = (uintptr_t)base, .size_shift = shift, .thresh = thresh, .index = index,
	};

	return ulpt(ARCH_ULPT_SET_LOG, &l);
}

/* The calling thread's log (all ones if GET_LOG failed) */
static struct ulpt_log get_log(void)
{
	struct ulpt_log l;

	memset(&l, 0xff, sizeof(l));
	if (ulpt(ARCH_ULPT_GET_LOG, &l))
		memset(&l, 0xff, sizeof(l));
	return l;
}

static bool log_is(void *base, unsigned int shift, unsigned int thresh, uint64_t index)
{
	struct ulpt_log l = get_log();

	return l.base == (uintptr_t)base && l.size_shift == shift && l.thresh == thresh &&
	       l.index == index && l.flags == 0;
}

/* Room for 2^shift records, not touched yet: the CPU's first writes fault it in */
static struct ulpt_log_record *log_buf(unsigned int shift)
{
	void *p = mmap(NULL, (size_t)ULPT_REC_SIZE << shift, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	return p;
}

/*
 * Labelled accesses, each a function: a store of 8 bytes, of 4 bytes, a load of 8;
 * log_store_next is the instruction after the store.
 */
extern char log_store_insn[], log_store_next[], log_store4_insn[], log_load_insn[];
asm(".text\n"
	".globl log_store_insn, log_store_next, log_store4_insn, log_load_insn\n"
	"log_store_insn: movq %rsi, (%rdi)\nlog_store_next: ret\n"
	"log_store4_insn: movl %esi, (%rdi)\n ret\n"
	"log_load_insn: movq (%rdi), %rax\n ret\n");

static void log_store(uint64_t *p, uint64_t v)
{
	((void (*)(uint64_t *, uint64_t))(uintptr_t)log_store_insn)(p, v);
}

static void log_store4(uint32_t *p, uint32_t v)
{
	((void (*)(uint32_t *, uint32_t))(uintptr_t)log_store4_insn)(p, v);
}

static uint64_t log_load(uint64_t *p)
{
	return ((uint64_t (*)(uint64_t *))(uintptr_t)log_load_insn)(p);
}

/* The record r is the access [start, start + size) of kind by rip (value with VAL) */
static bool rec_is(const struct ulpt_log_record *r, void *start, unsigned int kind,
		   unsigned int reason, unsigned int size, bool val, uint64_t value, void *rip)
{
	uint64_t info = ULPT_REC_V | (val ? ULPT_REC_VAL : 0) | (uint64_t)size << 16 |
			reason << 8 | kind;

	return r->start == (uintptr_t)start && r->info == info && r->rip == (uintptr_t)rip &&
	       r->value == value;
}

static void rec_print(const char *what, const struct ulpt_log_record *r)
{
	ksft_print_msg("%s: start %#llx info %#llx rip %#llx value %#llx\n", what,
		       (unsigned long long)r->start, (unsigned long long)r->info,
		       (unsigned long long)r->rip, (unsigned long long)r->value);
}

/* The ULPT_log: line of an arch_status file: its records, or -1 */
static long status_log(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[256];
	long n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "ULPT_log: %ld records", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* The user address limit: 2^47 - 4096, or 2^56 - 4096 with 5-level paging */
static uintptr_t user_limit(void)
{
	void *q = mmap((void *)(1UL << 48), PAGE_SIZE, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (q != (void *)(1UL << 48))
		return (1UL << 47) - PAGE_SIZE;
	munmap(q, PAGE_SIZE);
	return (1UL << 56) - PAGE_SIZE;
}

/* ARCH_ULPT_SET_LOG, ARCH_ULPT_GET_LOG: every error */
static void test_log_errors(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	uintptr_t limit = user_limit();
	struct ulpt_log l;
	int st = -1;
	long r = -1;
	pid_t pid;

	check(set_log(buf, 4, 0, 0) == -1 && errno == EINVAL &&
	      set_log(NULL, 0, 0, 0) == -1 && errno == EINVAL,
	      "SET_LOG before ENABLE (a log, or none): EINVAL");
	check(ulpt(ARCH_ULPT_SET_LOG, (void *)16) == -1 && errno == EFAULT,
	      "SET_LOG with a bad pointer before ENABLE: EFAULT (the argument first)");
	check(log_is(NULL, 0, 0, 0), "GET_LOG before ENABLE: all zero");
	setup();
	check(ulpt(ARCH_ULPT_SET_LOG, (void *)16) == -1 && errno == EFAULT,
	      "SET_LOG with a bad pointer: EFAULT");
	check(ulpt(ARCH_ULPT_GET_LOG, (void *)16) == -1 && errno == EFAULT,
	      "GET_LOG with a bad pointer: EFAULT");
	l = (struct ulpt_log){ .base = (uintptr_t)buf, .size_shift = 4, .flags = 2 };
	check(ulpt(ARCH_ULPT_SET_LOG, &l) == -1 && errno == EINVAL,
	      "SET_LOG with a flag other than ULPT_LOG_COUNT: EINVAL");
	l = (struct ulpt_log){ .flags = 2 };
	check(ulpt(ARCH_ULPT_SET_LOG, &l) == -1 && errno == EINVAL,
	      "SET_LOG without a log, with such a flag: EINVAL");
	check(set_log((char *)buf + 16, 4, 0, 0) == -1 && errno == EINVAL,
	      "SET_LOG with a base not 32-byte aligned: EINVAL");
	check(set_log(buf, ULPT_LOG_MAX_SHIFT + 1, 0, 0) == -1 && errno == EINVAL &&
	      set_log(buf, ~0U, 0, 0) == -1 && errno == EINVAL,
	      "SET_LOG with size_shift above %d: EINVAL", ULPT_LOG_MAX_SHIFT);
	check(set_log(buf, 4, 17, 0) == -1 && errno == EINVAL &&
	      set_log(buf, 4, ~0U, 0) == -1 && errno == EINVAL,
	      "SET_LOG with thresh above 2^size_shift: EINVAL");
	check(set_log((void *)0xffff888000000000UL, 0, 0, 0) == -1 && errno == EINVAL &&
	      set_log((void *)(1UL << 57), 0, 0, 0) == -1 && errno == EINVAL,
	      "SET_LOG with a kernel or non-canonical base: EINVAL");
	check(set_log((void *)(limit - 32), 1, 0, 0) == -1 && errno == EINVAL &&
	      set_log((void *)(limit - 32), 0, 0, 0) == 0 &&
	      set_log((void *)(limit - 32 * 65536), 16, 0, 0) == 0 &&
	      set_log((void *)(limit - 32 * 65536), 17, 0, 0) == -1 && errno == EINVAL,
	      "SET_LOG: the whole log below the user address limit %#lx, or EINVAL", limit);
	check(set_log(buf, 4, 16, 0) == 0 && set_log(buf, 0, 1, 0) == 0 &&
	      set_log((void *)(1UL << 32), ULPT_LOG_MAX_SHIFT, 1U << ULPT_LOG_MAX_SHIFT,
		      ~0ULL) == 0,
	      "SET_LOG at the limits: thresh 2^size_shift, size_shift %d, any index",
	      ULPT_LOG_MAX_SHIFT);
	check(set_log(buf, 4, 17, 0) == -1 && errno == EINVAL &&
	      log_is((void *)(1UL << 32), ULPT_LOG_MAX_SHIFT, 1U << ULPT_LOG_MAX_SHIFT, ~0ULL),
	      "  ...an error changes nothing: GET_LOG has the last log set");
	check(ulpt_ul(0x6007, 0) == -1 && errno == EINVAL, "the code after GET_LOG: EINVAL");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		_exit(0);
	}
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFSTOPPED(st)) {
		long a = ptrace(PTRACE_ARCH_PRCTL, pid, &l, ARCH_ULPT_SET_LOG);
		int ea = errno;

		r = ptrace(PTRACE_ARCH_PRCTL, pid, &l, ARCH_ULPT_GET_LOG);
		r = a == -1 && ea == EINVAL && r == -1 && errno == EINVAL;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	check(r == 1, "SET_LOG and GET_LOG through PTRACE_ARCH_PRCTL on another task: EINVAL");
}

/* ARCH_ULPT_GET_LOG reads back what SET_LOG set; base 0 removes the log */
static void test_log_get(void)
{
	struct ulpt_log_record *buf = log_buf(8);
	struct ulpt_log l = { .base = (uintptr_t)buf, .size_shift = 8, .thresh = 5,
			      .index = 0x123456789aULL };

	setup();
	check(log_is(NULL, 0, 0, 0) && status_log("/proc/self/arch_status") == 0,
	      "no log after ENABLE: GET_LOG all zero, arch_status ULPT_log: 0 records");
	check(ulpt(ARCH_ULPT_SET_LOG, &l) == 0 && log_is(buf, 8, 5, 0x123456789aULL),
	      "GET_LOG reads back base, size_shift, thresh and index");
	check(status_log("/proc/self/arch_status") == 256,
	      "arch_status: ULPT_log: 256 records (%ld)", status_log("/proc/self/arch_status"));
	l = (struct ulpt_log){ .base = 0, .size_shift = 99, .thresh = ~0U, .index = 7 };
	check(ulpt(ARCH_ULPT_SET_LOG, &l) == 0 && log_is(NULL, 0, 0, 0) &&
	      status_log("/proc/self/arch_status") == 0,
	      "base 0 removes the log (the other fields ignored): GET_LOG all zero");
}

/* A logged access appends its record and is not delivered */
static void test_log_record(void)
{
	static const uint64_t v = 0x1122334455667788ULL;
	struct ulpt_log_record *buf = log_buf(4);
	uint64_t *p, got;
	int n;

	setup_handler();
	handle(H_PERMIT);
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	check(set_log(buf, 4, 0, 0) == 0, "SET_LOG: 16 records at %p", buf);
	log_store(&p[1], v);
	check(READ_ONCE(h_count) == 0 && p[1] == v && log_is(buf, 4, 0, 1),
	      "a store to a page NW | LOG: done, not delivered, index 1");
	check(rec_is(&buf[0], &p[1], ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, v, log_store_insn),
	      "record 0: start, kind W, reason page, size 8, VAL, V, rip, the value stored");
	log_store4((uint32_t *)&p[2], 0xdeadbeef);
	check(rec_is(&buf[1], &p[2], ULPT_KIND_W, ULPT_REASON_PAGE, 4, true, 0xdeadbeef,
		     log_store4_insn), "a 4-byte store: size 4, its value zero-extended");
	set_entry(p, 0, ULPT_NR | ULPT_LOG);
	got = log_load(&p[1]);
	check(got == v && rec_is(&buf[2], &p[1], ULPT_KIND_R, ULPT_REASON_PAGE, 8, false, 0,
				 log_load_insn), "a load of a page NR | LOG: kind R, no value");
	set_entry(p, 0, ULPT_LOG);
	set_entry(p, 1, ULPT_LINE_NW(1));
	log_store(&p[0], 1);			/* line 0: nothing denied, no record */
	log_store(&p[LINE_SIZE / 8], 2);	/* line 1 */
	check(rec_is(&buf[3], &p[LINE_SIZE / 8], ULPT_KIND_W, ULPT_REASON_LINE, 8, true, 2,
		     log_store_insn) && log_is(buf, 4, 0, 4),
	      "line rights with LOG: reason line; an allowed access appends nothing");
	set_entry(p, 0, ULPT_NW);
	set_entry(p, 1, 0);
	log_store(&p[3], 3);
	check(READ_ONCE(h_count) == 1 && log_is(buf, 4, 0, 4) && !(buf[4].info & ULPT_REC_V),
	      "a page without LOG: delivered, no record");
	for (n = 0; n < 5; n++)
		rec_print("record", &buf[n]);
}

/*
 * Context switches: two threads with logs of their own and one without, on two vCPUs,
 * yielding often. Every store of each log thread is in its log once, in order, and the
 * thread without a log has its accesses delivered, none logged.
 */
#define SW_SHIFT		12
#define SW_RECORDS		4096U		/* 2^SW_SHIFT */
#define SW_START		1000ULL		/* the initial index */

struct sw_thread {
	uint64_t *var;
	struct ulpt_log_record *buf;
	struct ulpt_log end;
	long stores;
	int err;
};

static pthread_barrier_t sw_bar;
static int sw_stop;

static void *sw_logger(void *arg)
{
	struct sw_thread *t = arg;
	unsigned int i;

	t->err = set_log(t->buf, SW_SHIFT, 0, SW_START) ? errno : 0;
	pthread_barrier_wait(&sw_bar);
	for (i = 0; !t->err && i < SW_RECORDS; i++) {
		log_store(t->var, i);
		if (i % 16 == 0)
			sched_yield();
	}
	t->end = get_log();
	return NULL;
}

static void *sw_plain(void *arg)
{
	struct sw_thread *t = arg;
	int i;

	t->err = ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry) ? errno : 0;
	pthread_barrier_wait(&sw_bar);
	/* At least one store, also when the loggers are done before this thread runs. */
	while (!t->err) {
		log_store(t->var, t->stores++);
		if (READ_ONCE(sw_stop))
			break;
		for (i = 0; i < 1000; i++)
			asm volatile("" ::: "memory");
	}
	t->end = get_log();
	return NULL;
}

static bool sw_check(struct sw_thread *t)
{
	unsigned int i, bad = 0;

	for (i = 0; i < SW_RECORDS; i++) {
		struct ulpt_log_record *r = &t->buf[(SW_START + i) % SW_RECORDS];

		if (!rec_is(r, t->var, ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, i, log_store_insn) &&
		    bad++ < 3)
			rec_print("unexpected", r);
	}
	return !t->err && !bad && t->end.index == SW_START + SW_RECORDS;
}

static void test_log_switch(void)
{
	struct sw_thread t[3];
	pthread_t th[3];
	uint64_t *p;
	int i;

	setup();
	handle(H_PERMIT);
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	memset(t, 0, sizeof(t));
	for (i = 0; i < 3; i++)
		t[i].var = &p[i * 8];
	t[0].buf = log_buf(SW_SHIFT);
	t[1].buf = log_buf(SW_SHIFT);
	pthread_barrier_init(&sw_bar, NULL, 3);
	pthread_create(&th[0], NULL, sw_logger, &t[0]);
	pthread_create(&th[1], NULL, sw_logger, &t[1]);
	pthread_create(&th[2], NULL, sw_plain, &t[2]);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	WRITE_ONCE(sw_stop, 1);
	pthread_join(th[2], NULL);
	check(sw_check(&t[0]) && sw_check(&t[1]),
	      "two threads' logs: each has its %u records, in order, and its own index (%llu, %llu; errors %d %d)",
	      SW_RECORDS, (unsigned long long)t[0].end.index, (unsigned long long)t[1].end.index,
	      t[0].err, t[1].err);
	check(!t[2].err && t[2].stores > 0 && READ_ONCE(h_count) == t[2].stores &&
	      t[2].end.base == 0,
	      "the thread without a log: each of its %ld stores delivered (%d), none logged",
	      t[2].stores, READ_ONCE(h_count));
	check(log_is(NULL, 0, 0, 0), "the main thread still has no log");
}

static struct ulpt_log vf_log;

/* Lifecycle: a fork or vfork child's thread keeps the log and its index */
static void test_log_fork(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	int status = -1, i;
	uint64_t *p;
	pid_t pid;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	set_log(buf, 4, 9, 5);
	for (i = 0; i < 3; i++)
		log_store(&p[i], i);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		bool ok = log_is(buf, 4, 9, 8) && rec_is(&buf[7], &p[2], ULPT_KIND_W,
							  ULPT_REASON_PAGE, 8, true, 2,
							  log_store_insn);

		log_store(&p[3], 0xc);
		_exit(ok && log_is(buf, 4, 9, 9) &&
		      rec_is(&buf[8], &p[3], ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, 0xc,
			     log_store_insn) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: the child has the log, the index and the records; its record goes to its copy");
	check(log_is(buf, 4, 9, 8) && !(buf[8].info & ULPT_REC_V),
	      "fork: the parent's log and buffer are unchanged");
	memset(&vf_log, 0xff, sizeof(vf_log));
	pid = vfork();
	if (pid == 0) {
		syscall(SYS_arch_prctl, ARCH_ULPT_GET_LOG, &vf_log);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	check(vf_log.base == (uintptr_t)buf && vf_log.size_shift == 4 && vf_log.thresh == 9 &&
	      vf_log.index == 8, "vfork: the child has the log and the index");
}

static struct ulpt_log th_log;
static int th_delivered;
static long th_status;

static void *log_thread_fn(void *p)
{
	th_log = get_log();
	th_status = status_log("/proc/thread-self/arch_status");
	WRITE_ONCE(th_delivered, READ_ONCE(h_count));
	log_store(p, 1);
	WRITE_ONCE(th_delivered, READ_ONCE(h_count) - th_delivered);
	return NULL;
}

/* Lifecycle: a new thread starts without a log */
static void test_log_threads(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	char file[64];
	pthread_t th;
	uint64_t *p;

	setup_handler();
	handle(H_PERMIT);
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	set_log(buf, 4, 0, 0);
	log_store(&p[0], 1);
	pthread_create(&th, NULL, log_thread_fn, &p[1]);
	pthread_join(th, NULL);
	check(th_log.base == 0 && th_log.size_shift == 0 && th_log.index == 0 && th_status == 0,
	      "a new thread: GET_LOG all zero, its arch_status ULPT_log: 0 records");
	check(th_delivered == 1 && p[1] == 1 && log_is(buf, 4, 0, 1) &&
	      !(buf[1].info & ULPT_REC_V),
	      "its access to a page with LOG is delivered to its handler, not logged in ours");
	snprintf(file, sizeof(file), "/proc/self/task/%d/arch_status", (int)syscall(SYS_gettid));
	check(status_log(file) == 16, "arch_status of this thread: ULPT_log: 16 records");
}

/* Lifecycle: execve starts without a log (ulpt exec-check-log) */
static void test_log_exec(void)
{
	int status = -1;
	pid_t pid;

	setup();
	set_log(log_buf(4), 4, 0, 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv0, "exec-check-log", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "exec: no log, also after a new ENABLE; a store to a page NW | LOG is SIGSEGV (status %#x)",
	      status);
}

/* After exec (ulpt exec-check-log). Answers with the exit status only. */
static int exec_check_log(void)
{
	uint64_t *p;
	bool ok = log_is(NULL, 0, 0, 0);

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	ok = ok && log_is(NULL, 0, 0, 0) && status_log("/proc/self/arch_status") == 0;
	return !(ok && ulpt_faults(write8, p) && READ_ONCE(segv_addr) == (uintptr_t)p);
}

static pthread_barrier_t dis_bar;
static struct ulpt_log dis_log;
static int dis_err;

static void *dis_thread(void *arg)
{
	dis_err = set_log(log_buf(4), 4, 0, 0);
	pthread_barrier_wait(&dis_bar);		/* the log is set */
	pthread_barrier_wait(&dis_bar);		/* DISABLE and ENABLE are done */
	dis_log = get_log();
	return NULL;
}

/* ARCH_ULPT_DISABLE removes every thread's log */
static void test_log_disable(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	pthread_t th;
	uint64_t *p;

	setup();
	pthread_barrier_init(&dis_bar, NULL, 2);
	pthread_create(&th, NULL, dis_thread, NULL);
	set_log(buf, 4, 0, 3);
	pthread_barrier_wait(&dis_bar);
	check(ulpt_ul(ARCH_ULPT_DISABLE, 0) == 0 && log_is(NULL, 0, 0, 0),
	      "DISABLE: GET_LOG all zero");
	check(ulpt(ARCH_ULPT_ENABLE, &en) == 0 && log_is(NULL, 0, 0, 0),
	      "a new ENABLE: still no log");
	pthread_barrier_wait(&dis_bar);
	pthread_join(th, NULL);
	check(!dis_err && dis_log.base == 0 && dis_log.index == 0,
	      "the other thread's log is gone too");
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	check(ulpt_faults(write8, p) && !(buf[3].info & ULPT_REC_V),
	      "a store to a page NW | LOG: SIGSEGV, no record in the old log");
}

/* A full log with a handler: delivered with reason FULL at the access (R-LOG-4) */
static void test_log_full_handler(void)
{
	struct ulpt_log_record *buf = log_buf(1);
	uint64_t *p;
	int i;

	setup_handler();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	lg_init(buf, 1, 0);
	set_log(buf, 1, 0, 0);
	log_store(&p[0], 10);
	log_store(&p[1], 11);
	check(lg_full == 0, "two records fill a log of 2, no delivery");
	log_store(&p[2], 12);
	check(lg_full == 1 && lg_frame.addr == (uintptr_t)&p[2] &&
	      lg_frame.start == (uintptr_t)&p[2] &&
	      lg_frame.info == ((uint64_t)8 << 16 | ULPT_REASON_FULL << 8 | ULPT_KIND_W) &&
	      lg_frame.entry0 == (ULPT_NW | ULPT_LOG) && lg_frame.rip == (uintptr_t)log_store_insn,
	      "the third: FULL, with addr, start, kind W, size 8, the entry and rip (info %#llx)",
	      (unsigned long long)lg_frame.info);
	lg_consume();
	check(lg_nseen == 3 && p[2] == 12 && log_is(buf, 1, 0, 3),
	      "the handler consumed two records; the store ran again and was logged");
	for (i = 0; i < 3 && i < lg_nseen; i++)
		check(rec_is(&lg_seen[i], &p[i], ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, 10 + i,
			     log_store_insn), "record %d in order", i);
	lg_drain = false;
	lg_permit = true;
	log_store(&p[3], 13);
	log_store(&p[4], 14);
	log_store(&p[5], 15);
	check(lg_full == 2 && p[5] == 15 && log_is(buf, 1, 0, 5),
	      "PERMIT on FULL: the store is done without a record");
}

/* A full log without a handler: SIGSEGV SEGV_ULPTERR at the access */
static void test_log_full_signal(void)
{
	struct ulpt_log_record *buf = log_buf(0);
	uint64_t *p;
	bool full;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	set_log(buf, 0, 0, 0);
	check(!faults(write8, &p[0]) && (buf[0].info & ULPT_REC_V), "one record fills a log of 1");
	full = ulpt_faults(write8, &p[1]);
	check(full && READ_ONCE(segv_addr) == (uintptr_t)&p[1] &&
	      (segv_err & (X86_PF_ULPT | X86_PF_WRITE)) == (X86_PF_ULPT | X86_PF_WRITE),
	      "the next store: SIGSEGV SEGV_ULPTERR at its first byte, a write (err %#lx)",
	      READ_ONCE(segv_err));
	check(p[1] == 0 && log_is(buf, 0, 0, 1), "the store was not made, the index stays");
	buf[0].info = 0;
	check(!faults(write8, &p[1]) && p[1] == 0x55 && log_is(buf, 0, 0, 2),
	      "the record consumed: the store is logged");
}

/* THRESH: a log event with reason LOG and the write index in frame word 2 (R-LOG-5) */
static void test_log_event(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	uint64_t *p;

	setup_handler();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	lg_init(buf, 4, 0);
	set_log(buf, 4, 3, 0);
	log_store(&p[0], 1);
	log_store(&p[1], 2);
	check(lg_events == 0, "2 records waiting, THRESH 3: no event");
	log_store(&p[2], 3);
	check(lg_events == 1 && lg_frame.entry0 == 3 && lg_frame.addr == 0 &&
	      lg_frame.start == 0 && lg_frame.info == (ULPT_REASON_LOG << 8) &&
	      lg_frame.rip == (uintptr_t)log_store_next && lg_nseen == 3,
	      "the third: a log event, index 3 in word 2, rip the next instruction (%d events, info %#llx)",
	      lg_events, (unsigned long long)lg_frame.info);
	log_store(&p[3], 4);
	log_store(&p[4], 5);
	check(lg_events == 1, "consumed: no event until 3 wait again");
	log_store(&p[5], 6);
	check(lg_events == 2 && lg_frame.entry0 == 6 && lg_nseen == 6 && !lg_full,
	      "the sixth: a second event, index 6");
}

/* A fault on the log's memory is the ordinary SIGSEGV at the instruction */
static void test_log_fault(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	bool fault;
	uintptr_t a;
	uint64_t *p;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	mprotect(buf, PAGE_SIZE, PROT_READ);
	set_log(buf, 4, 0, 0);
	a = (uintptr_t)buf;
	fault = faults(write8, p);
	check(fault && READ_ONCE(segv_code) == SEGV_ACCERR &&
	      READ_ONCE(segv_addr) - a < ULPT_REC_SIZE && !(segv_err & X86_PF_ULPT),
	      "a read-only log: SIGSEGV SEGV_ACCERR in its slot (code %d, addr %#lx)",
	      READ_ONCE(segv_code), READ_ONCE(segv_addr));
	check(p[0] == 0 && log_is(buf, 4, 0, 0), "the store was not made, the index stays");
	mprotect(buf, PAGE_SIZE, PROT_READ | PROT_WRITE);
	check(!faults(write8, p) && p[0] == 0x55 && log_is(buf, 4, 0, 1) &&
	      rec_is(&buf[0], p, ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, 0x55,
		     (void *)(uintptr_t)buf[0].rip),
	      "made writable: the store runs and is logged");
	munmap(buf, PAGE_SIZE);
	fault = faults(write8, &p[1]);
	check(fault && READ_ONCE(segv_code) == SEGV_MAPERR &&
	      READ_ONCE(segv_addr) - a - ULPT_REC_SIZE < ULPT_REC_SIZE,
	      "an unmapped log: SIGSEGV SEGV_MAPERR in the next slot (code %d, addr %#lx)",
	      READ_ONCE(segv_code), READ_ONCE(segv_addr));
}

static uint64_t *sig_var;

static void on_usr1_log(int sig)
{
	log_store(sig_var, 0x51);
}

/* Signals: the log works in a signal handler, in order with the program's records */
static void test_log_signal(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	uint64_t *p;

	setup();
	p = page();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	sig_var = &p[1];
	signal(SIGUSR1, on_usr1_log);
	set_log(buf, 4, 0, 0);
	log_store(&p[0], 1);
	raise(SIGUSR1);
	log_store(&p[2], 2);
	check(log_is(buf, 4, 0, 3) &&
	      rec_is(&buf[0], &p[0], ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, 1, log_store_insn) &&
	      rec_is(&buf[1], &p[1], ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, 0x51,
		     log_store_insn) &&
	      rec_is(&buf[2], &p[2], ULPT_KIND_W, ULPT_REASON_PAGE, 8, true, 2, log_store_insn),
	      "the signal handler's store is logged between the program's two");
}

/* --- the count table ----------------------------------------------------------------- */

static long set_count(void *base, uint64_t index)
{
	struct ulpt_log l = { .base = (uintptr_t)base, .index = index, .flags = ULPT_LOG_COUNT };

	return ulpt(ARCH_ULPT_SET_LOG, &l);
}

/* SET_LOG's errno (0: done) */
static int set_log_err(uintptr_t base, unsigned int shift, unsigned int thresh, uint64_t flags)
{
	struct ulpt_log l = {
		.base = base, .size_shift = shift, .thresh = thresh, .flags = flags,
	};

	return ulpt(ARCH_ULPT_SET_LOG, &l) ? errno : 0;
}

/* GET_LOG: a count table at base with this write index */
static bool count_is(void *base, uint64_t index)
{
	struct ulpt_log l = get_log();

	return l.base == (uintptr_t)base && l.size_shift == 0 && l.thresh == 0 &&
	       l.index == index && l.flags == ULPT_LOG_COUNT;
}

/* The counters of the line that holds p, in the count table at base */
static struct ulpt_count *counters(void *base, void *p)
{
	return (struct ulpt_count *)((uintptr_t)base +
				     ((uintptr_t)p >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE);
}

/*
 * The base of a count table whose counters for the page p are the 32 pairs at *mem, a
 * page of their own, not touched yet: the CPU's first addition faults it in.
 */
static void *count_table(void *p, struct ulpt_count **mem)
{
	void *m = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (m == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	*mem = m;
	return (char *)m - ((uintptr_t)p >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE;
}

/* With a table: skip the test on a CPU without count tables, where the kernel says ENODEV */
static void count_or_skip(void)
{
	if (set_log_err(0, 0, 0, ULPT_LOG_COUNT) == ENODEV) {
		ksft_print_msg("no count tables: SET_LOG with ULPT_LOG_COUNT is ENODEV\n");
		fflush(stdout);
		_exit(KSFT_SKIP);
	}
}

/* The line of an arch_status file that is want (without its newline) */
static bool status_line(const char *file, const char *want)
{
	FILE *f = fopen(file, "r");
	bool found = false;
	char line[256];

	while (f && !found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		found = !strcmp(line, want);
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * ARCH_ULPT_SET_LOG with ULPT_LOG_COUNT: every error, after which ENODEV on a CPU without
 * count tables (before the check for a table)
 */
static void test_count_errors(void)
{
	struct ulpt_log_record *buf = log_buf(4);
	uintptr_t limit = user_limit(), b = (uintptr_t)buf;
	uint64_t c = ULPT_LOG_COUNT;
	int before, want;

	before = set_log_err(b, 0, 0, c);
	setup();
	want = set_log_err(b, 0, 0, c);
	check(want == 0 ? count_is(buf, 0) : want == ENODEV,
	      "a count table: %s", want == 0 ? "set" : want == ENODEV ? "ENODEV (none in the CPU)" :
	      strerror(want));
	check(before == (want ? ENODEV : EINVAL), "before ENABLE: %s",
	      want ? "ENODEV too" : "EINVAL (no table)");
	check(set_log(buf, 4, 0, 0) == 0, "a ring of 16 records");
	check(set_log_err(b, 0, 0, c | 2) == EINVAL && set_log_err(b, 0, 0, 1ULL << 63) == EINVAL &&
	      set_log_err(0, 0, 0, c | 4) == EINVAL,
	      "a flag other than ULPT_LOG_COUNT, with and without a log: EINVAL");
	check(set_log_err(b, 1, 0, c) == EINVAL &&
	      set_log_err(b, ULPT_LOG_MAX_SHIFT, 0, c) == EINVAL &&
	      set_log_err(b, ~0U, 0, c) == EINVAL,
	      "ULPT_LOG_COUNT with size_shift not 0: EINVAL");
	check(set_log_err(b, 0, 1, c) == EINVAL && set_log_err(b, 0, ~0U, c) == EINVAL,
	      "ULPT_LOG_COUNT with thresh not 0: EINVAL");
	check(set_log_err(b + 16, 0, 0, c) == EINVAL && set_log_err(b + 1, 0, 0, c) == EINVAL,
	      "ULPT_LOG_COUNT with a base not 32-byte aligned: EINVAL");
	check(set_log_err(limit, 0, 0, c) == EINVAL &&
	      set_log_err(0xffff888000000000UL, 0, 0, c) == EINVAL &&
	      set_log_err(1UL << 57, 0, 0, c) == EINVAL && set_log_err(~31UL, 0, 0, c) == EINVAL,
	      "ULPT_LOG_COUNT with a base at the user address limit %#lx, kernel or non-canonical: EINVAL",
	      limit);
	check(log_is(buf, 4, 0, 0) &&
	      (!want || (set_log_err(b, 0, 0, c) == want && log_is(buf, 4, 0, 0))),
	      "  ...an error changes nothing%s: GET_LOG has the ring",
	      want ? ", nor does ENODEV" : "");
	check(set_log_err(limit - 32, 0, 0, c) == want &&
	      (want || count_is((void *)(limit - 32), 0)) &&
	      set_log_err(32, 0, 0, c) == want && (want || count_is((void *)32, 0)),
	      "a base just below the limit, or 32: accepted%s (the table's size is not checked)",
	      want ? " but for ENODEV" : "");
	check(set_log_err(0, 99, ~0U, c) == want && (want || log_is(NULL, 0, 0, 0)),
	      "base 0 with ULPT_LOG_COUNT removes the log%s (the other fields ignored)",
	      want ? " but for ENODEV" : "");
}

/* ARCH_ULPT_GET_LOG and arch_status of a count table; base 0 removes it, and DISABLE */
static void test_count_get(void)
{
	struct ulpt_log_record *buf = log_buf(4);

	setup();
	count_or_skip();
	check(set_count(buf, 0x123456789aULL) == 0 && count_is(buf, 0x123456789aULL),
	      "GET_LOG reads back base and index, flags ULPT_LOG_COUNT, size_shift and thresh 0");
	check(status_line("/proc/self/arch_status", "ULPT_log:\tcount table"),
	      "arch_status: ULPT_log: count table");
	check(set_count(buf, ~0ULL) == 0 && count_is(buf, ~0ULL), "any index");
	check(set_log(buf, 4, 2, 5) == 0 && log_is(buf, 4, 2, 5) &&
	      status_log("/proc/self/arch_status") == 16,
	      "a ring set over it: GET_LOG flags 0, arch_status ULPT_log: 16 records");
	check(set_count(buf, 3) == 0 && set_log_err(0, 99, ~0U, ULPT_LOG_COUNT) == 0 &&
	      log_is(NULL, 0, 0, 0) && status_log("/proc/self/arch_status") == 0,
	      "base 0 removes it: GET_LOG all zero, arch_status ULPT_log: 0 records");
	check(set_count(buf, 3) == 0 && ulpt_ul(ARCH_ULPT_DISABLE, 0) == 0 &&
	      log_is(NULL, 0, 0, 0) && ulpt(ARCH_ULPT_ENABLE, &en) == 0 && log_is(NULL, 0, 0, 0),
	      "DISABLE removes it: GET_LOG all zero, also after a new ENABLE");
}

#define CNT_STORES		5
#define CNT_LOADS		3

/* A logged access adds one to its line's counter of its kind, and is not delivered */
static void test_count(void)
{
	struct ulpt_count *mem, *c;
	uint64_t *p, *x, got = 0;
	void *base;
	int i;

	setup_handler();
	handle(H_PERMIT);
	p = page();
	base = count_table(p, &mem);
	count_or_skip();
	set_entry(p, 0, ULPT_LOG);
	set_entry(p, 1, ULPT_LINE_NR(2) | ULPT_LINE_NW(2) | ULPT_LINE_NW(3));
	check(set_count(base, 100) == 0, "SET_LOG: a count table at %p, the page's counters at %p",
	      base, mem);
	x = &p[2 * LINE_SIZE / 8];
	c = counters(base, x);
	for (i = 0; i < CNT_STORES; i++)
		log_store(&x[i], i + 1);
	for (i = 0; i < CNT_LOADS; i++)
		got += log_load(&x[i]);
	check(c == &mem[2], "line 2's counters are at base + (addr >> 7) * 16");
	/* (Its own loads of line 2 would count: the loads above read what the stores wrote) */
	check(READ_ONCE(h_count) == 0 && got == 1 + 2 + 3,
	      "%d stores and %d loads to a line denied with LOG: made, not delivered",
	      CNT_STORES, CNT_LOADS);
	check(READ_ONCE(c->writes) == CNT_STORES && READ_ONCE(c->reads) == CNT_LOADS &&
	      count_is(base, 100 + CNT_STORES + CNT_LOADS),
	      "its write counter %llu, read counter %llu; the write index advanced by each",
	      (unsigned long long)c->writes, (unsigned long long)c->reads);
	log_store(&p[0], 1);
	log_load(&p[0]);
	log_load(&x[LINE_SIZE / 8]);
	check(!mem[0].reads && !mem[0].writes && !mem[3].reads && !mem[3].writes &&
	      count_is(base, 100 + CNT_STORES + CNT_LOADS),
	      "allowed accesses (line 0, a load of line 3) count nothing");
	log_store((uint64_t *)((char *)x + LINE_SIZE - 4), 7);
	check(c->writes == CNT_STORES + 1 && !mem[3].writes &&
	      count_is(base, 101 + CNT_STORES + CNT_LOADS),
	      "a store across lines 2 and 3: one addition, in line 2");
	got = __atomic_exchange_n(&c->writes, 0, __ATOMIC_SEQ_CST);
	log_store(x, 9);
	check(got == CNT_STORES + 1 && c->writes == 1,
	      "a counter taken with an exchange counts on from 0");
	sig_var = x;
	signal(SIGUSR1, on_usr1_log);
	raise(SIGUSR1);
	check(c->writes == 2 && count_is(base, 103 + CNT_STORES + CNT_LOADS),
	      "a signal handler's store is counted in the same table");
	set_entry(p, 0, 0);
	log_store(x, 10);
	check(READ_ONCE(h_count) == 1 && c->writes == 2 &&
	      count_is(base, 103 + CNT_STORES + CNT_LOADS),
	      "line rights without LOG: delivered, not counted");
}

/* Lifecycle: fork, vfork and execve with a count table */
static void test_count_lifecycle(void)
{
	struct ulpt_count *mem, *c;
	int status = -1, i;
	uint64_t *p;
	void *base;
	pid_t pid;

	setup();
	p = page();
	base = count_table(p, &mem);
	count_or_skip();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	set_count(base, 0);
	c = counters(base, p);
	for (i = 0; i < 3; i++)
		log_store(&p[i], i);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		bool ok = count_is(base, 3) && c->writes == 3;

		log_store(&p[3], 3);
		log_store(&p[4], 4);
		_exit(ok && count_is(base, 5) && c->writes == 5 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: the child has the count table, the index and the counters, and counts into its copy");
	check(count_is(base, 3) && c->writes == 3,
	      "fork: the parent's counters and index are unchanged");
	memset(&vf_log, 0xff, sizeof(vf_log));
	pid = vfork();
	if (pid == 0) {
		log_store(&p[5], 5);
		syscall(SYS_arch_prctl, ARCH_ULPT_GET_LOG, &vf_log);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	check(vf_log.base == (uintptr_t)base && vf_log.flags == ULPT_LOG_COUNT &&
	      vf_log.index == 4 && c->writes == 4 && count_is(base, 3),
	      "vfork: the child has the count table; its addition is in the parent's counter, whose index stays");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv0, "exec-check-log", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "exec: no log, also after a new ENABLE; a store to a page NW | LOG is SIGSEGV (status %#x)",
	      status);
}

#define CT_STORES		2000

struct ct_thread {
	uint64_t *var;
	void *base;
	struct ulpt_log end;
	int err;
};

static void *ct_counter(void *arg)
{
	struct ct_thread *t = arg;
	int i;

	t->err = set_count(t->base, 0) ? errno : 0;
	pthread_barrier_wait(&sw_bar);
	for (i = 0; !t->err && i < CT_STORES; i++) {
		log_store(t->var, i);
		if (i % 16 == 0)
			sched_yield();
	}
	t->end = get_log();
	return NULL;
}

/*
 * Threads: a new one has no log; two threads count into one table, beside a third with a
 * ring, on two vCPUs
 */
static void test_count_threads(void)
{
	struct ulpt_count *mem, *c;
	struct ct_thread ct[2];
	struct sw_thread ring;
	pthread_t th[3];
	uint64_t *p;
	void *base;
	int i;

	setup_handler();
	handle(H_PERMIT);
	p = page();
	base = count_table(p, &mem);
	count_or_skip();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	c = counters(base, p);
	set_count(base, 0);
	log_store(&p[0], 1);
	pthread_create(&th[0], NULL, log_thread_fn, &p[1]);
	pthread_join(th[0], NULL);
	check(th_log.base == 0 && th_log.flags == 0 && th_log.index == 0 && th_status == 0,
	      "a new thread: GET_LOG all zero, its arch_status ULPT_log: 0 records");
	check(th_delivered == 1 && p[1] == 1 && c->writes == 1 && count_is(base, 1),
	      "its store to a page with LOG is delivered to its handler, not counted in our table");
	memset(ct, 0, sizeof(ct));
	memset(&ring, 0, sizeof(ring));
	for (i = 0; i < 2; i++) {
		ct[i].var = &p[LINE_SIZE / 8 + i];
		ct[i].base = base;
	}
	ring.var = &p[2 * LINE_SIZE / 8];
	ring.buf = log_buf(SW_SHIFT);
	pthread_barrier_init(&sw_bar, NULL, 3);
	pthread_create(&th[0], NULL, ct_counter, &ct[0]);
	pthread_create(&th[1], NULL, ct_counter, &ct[1]);
	pthread_create(&th[2], NULL, sw_logger, &ring);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	check(!ct[0].err && !ct[1].err && mem[1].writes == 2 * CT_STORES,
	      "two threads counting into one table: the counter has the %d stores of both (%llu)",
	      2 * CT_STORES, (unsigned long long)mem[1].writes);
	check(ct[0].end.index == CT_STORES && ct[1].end.index == CT_STORES &&
	      ct[0].end.flags == ULPT_LOG_COUNT && ct[1].end.flags == ULPT_LOG_COUNT,
	      "each thread has its own count table and write index (%llu, %llu)",
	      (unsigned long long)ct[0].end.index, (unsigned long long)ct[1].end.index);
	check(sw_check(&ring) && !mem[2].writes,
	      "a thread with a ring beside them: its %u records in order, none counted",
	      SW_RECORDS);
	check(!lg_full && !lg_events, "%d additions to one counter: no FULL, no log event",
	      2 * CT_STORES);
	check(count_is(base, 1) && c->writes == 1, "this thread's count table and index unchanged");
}

/* A fault on a counter is the ordinary SIGSEGV; a counter in the view or not canonical, FULL */
static void test_count_fault(void)
{
	struct ulpt_count *mem, *c;
	void *base, *far;
	uintptr_t in_view;
	uint64_t *p;
	bool fault;

	setup();
	p = page();
	base = count_table(p, &mem);
	count_or_skip();
	set_entry(p, 0, ULPT_NW | ULPT_LOG);
	c = counters(base, p);
	mprotect(mem, PAGE_SIZE, PROT_READ);
	set_count(base, 0);
	fault = faults(write8, p);
	check(fault && READ_ONCE(segv_code) == SEGV_ACCERR &&
	      READ_ONCE(segv_addr) == (uintptr_t)&c->writes && !(segv_err & X86_PF_ULPT),
	      "a read-only table: SIGSEGV SEGV_ACCERR at the write counter (code %d, addr %#lx)",
	      READ_ONCE(segv_code), READ_ONCE(segv_addr));
	check(p[0] == 0 && count_is(base, 0), "the store was not made, the index stays");
	mprotect(mem, PAGE_SIZE, PROT_READ | PROT_WRITE);
	check(!faults(write8, p) && p[0] == 0x55 && c->writes == 1 && count_is(base, 1),
	      "made writable: the store runs and is counted");
	mprotect(mem, PAGE_SIZE, PROT_NONE);
	fault = faults(write8, &p[1]);
	check(fault && READ_ONCE(segv_code) == SEGV_ACCERR &&
	      READ_ONCE(segv_addr) == (uintptr_t)&c->writes && !p[1] && count_is(base, 1),
	      "a PROT_NONE table: SIGSEGV SEGV_ACCERR at the counter, the store not made");
	munmap(mem, PAGE_SIZE);
	fault = faults(write8, &p[LINE_SIZE / 8]);
	check(fault && READ_ONCE(segv_code) == SEGV_MAPERR &&
	      READ_ONCE(segv_addr) == (uintptr_t)&c[1].writes,
	      "an unmapped table: SIGSEGV SEGV_MAPERR at the counter (code %d, addr %#lx)",
	      READ_ONCE(segv_code), READ_ONCE(segv_addr));
	far = (void *)(user_limit() - 32);
	check(set_count(far, 0) == 0 && ulpt_faults(write8, &p[2]) &&
	      READ_ONCE(segv_addr) == (uintptr_t)&p[2] && (segv_err & X86_PF_WRITE) && !p[2] &&
	      count_is(far, 0),
	      "a counter at a non-canonical address: SIGSEGV SEGV_ULPTERR at the store, not made");
	/* The counters of the page p on the entry of page 0 */
	in_view = en.view - ((uintptr_t)p >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE;
	check(in_view < en.view && set_count((void *)in_view, 0) == 0 &&
	      ulpt_faults(write8, &p[2]) && READ_ONCE(segv_addr) == (uintptr_t)&p[2] && !p[2] &&
	      count_is((void *)in_view, 0) && !get_entry(NULL, 0) && !get_entry(NULL, 1),
	      "a counter in the view: SIGSEGV SEGV_ULPTERR at the store, not made, the view unchanged");
	if (ulpt_ul(ARCH_ULPT_SET_HANDLER, (unsigned long)ulpt_entry))
		ksft_exit_fail_msg("ARCH_ULPT_SET_HANDLER: %s\n", strerror(errno));
	lg_drain = false;
	lg_permit = true;
	log_store(&p[3], 3);
	check(lg_full == 1 && lg_frame.addr == (uintptr_t)&p[3] &&
	      lg_frame.info == ((uint64_t)8 << 16 | ULPT_REASON_FULL << 8 | ULPT_KIND_W) &&
	      p[3] == 3 && count_is((void *)in_view, 0) && !get_entry(NULL, 1),
	      "with a handler: FULL at the store, which PERMIT lets through uncounted");
}

/* --- the table of tests -------------------------------------------------------------- */

struct ulpt_test {
	const char *name;
	void (*fn)(void);
	bool nocpu;		/* for a kernel without ULPT */
};

static const struct ulpt_test ulpt_tests[] = {
	{ .name = "nocpu", .fn = test_nocpu, .nocpu = true },
	{ .name = "arch_status", .fn = test_arch_status },
	{ .name = "enable", .fn = test_enable },
	{ .name = "einval", .fn = test_einval },
	{ .name = "store_denies", .fn = test_store_denies },
	{ .name = "handler", .fn = test_handler },
	{ .name = "uiret_flags", .fn = test_uiret_flags },
	{ .name = "handler_limit", .fn = test_handler_limit },
	{ .name = "fault_in_handler", .fn = test_fault_in_handler },
	{ .name = "signal_in_handler", .fn = test_signal_in_handler },
	{ .name = "sigframe_word", .fn = test_sigframe_word },
	{ .name = "frame_overflow", .fn = test_frame_overflow },
	{ .name = "fork", .fn = test_fork },
	{ .name = "fork_in_handler", .fn = test_fork_in_handler },
	{ .name = "exec", .fn = test_exec },
	{ .name = "munmap", .fn = test_munmap },
	{ .name = "mremap_view", .fn = test_mremap_view },
	{ .name = "view_vm", .fn = test_view_vm },
	{ .name = "mprotect", .fn = test_mprotect },
	{ .name = "mremap", .fn = test_mremap },
	{ .name = "kernel_access", .fn = test_kernel_access },
	{ .name = "threads", .fn = test_threads },
	{ .name = "disable", .fn = test_disable },
	{ .name = "leaks", .fn = test_leaks },
	{ .name = "step_after", .fn = test_step_after },
	{ .name = "step_ptrace", .fn = test_step_ptrace },
	{ .name = "log_errors", .fn = test_log_errors },
	{ .name = "log_get", .fn = test_log_get },
	{ .name = "log_record", .fn = test_log_record },
	{ .name = "log_switch", .fn = test_log_switch },
	{ .name = "log_fork", .fn = test_log_fork },
	{ .name = "log_threads", .fn = test_log_threads },
	{ .name = "log_exec", .fn = test_log_exec },
	{ .name = "log_disable", .fn = test_log_disable },
	{ .name = "log_full_handler", .fn = test_log_full_handler },
	{ .name = "log_full_signal", .fn = test_log_full_signal },
	{ .name = "log_event", .fn = test_log_event },
	{ .name = "log_fault", .fn = test_log_fault },
	{ .name = "log_signal", .fn = test_log_signal },
	{ .name = "count_errors", .fn = test_count_errors },
	{ .name = "count_get", .fn = test_count_get },
	{ .name = "count", .fn = test_count },
	{ .name = "count_lifecycle", .fn = test_count_lifecycle },
	{ .name = "count_threads", .fn = test_count_threads },
	{ .name = "count_fault", .fn = test_count_fault },
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
	if (argc > 1 && !strcmp(argv[1], "exec-check-log"))
		return exec_check_log();
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
