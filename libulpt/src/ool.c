/*
 * Out-of-line steps for the mprotect backend: ULPT_PERMIT runs the permitted instruction in a
 * trampoline of the thread's own, followed by a read of a guard page, instead of single-
 * stepping it in place with RFLAGS.TF. The guard's SIGSEGV ends the step (mprotect.c), so the
 * backend raises no SIGTRAP: a debugger (GDB) passes a SIGSEGV on to the program cleanly, but
 * cannot pass a SIGTRAP without passing those of its own breakpoints and steps as well.
 *
 * - The instruction is decoded with capstone (dlopen'ed at init, as watchlib does: the ULPT
 *   backend never needs it). Control transfers (jumps, calls, returns, interrupts) cannot run
 *   elsewhere; nor can an instruction whose bytes GDB replaced with a breakpoint (int3): those
 *   are single-stepped in place, as before.
 * - A RIP-relative operand is rebased on a scratch register that the instruction does not use:
 *   the trampoline saves it, loads it with the instruction's next RIP, runs the instruction
 *   with ModRM's [RIP + disp32] turned into [scratch + disp32] (same length, same address),
 *   and loads it back. MOV leaves the flags alone, so the instruction's are the program's.
 * - Each thread has one page of code (read, write, execute) and a guard page after it, made at
 *   its first out-of-line step and unmapped at its exit (pthread key destructor). A system
 *   call here is fine: this runs in a signal handler already.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CAPSTONE_SONAME "libcapstone.so." STR(CS_API_MAJOR)

static struct {
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_disasm_iter) *disasm_iter;
	__typeof__(cs_insn_group) *insn_group;
	__typeof__(cs_regs_access) *regs_access;
} cap;
static csh cs;
static cs_insn *insn;
static int code_fd = -1;
static volatile int decode_lock;        /* capstone's handle is not thread-safe */
static pthread_key_t tramp_key;

#define PAGE 4096ul
struct tramp {
	uint8_t code[160];
	uint8_t jump[8];                /* jmp *next_ip(%rip): see ulpt_ool_jump_ */
	uint64_t save;                  /* the scratch register's value, while it is borrowed */
	uintptr_t ip, next_ip;          /* the program's instruction and the one after it */
	uintptr_t insn_at, guard_at;    /* where the instruction and the guard read are in code */
	int scratch;                    /* its gregs index, or -1 */
};
static __thread struct tramp *tr __attribute__((tls_model("initial-exec")));

static void tramp_free(void *p)
{
	tr = NULL;
	munmap(p, 2 * PAGE);
}

int ulpt_ool_init_(void)
{
	void *h;
	uint8_t nop = 0x90;
	const uint8_t *c = &nop;
	size_t n = 1;
	uint64_t pc = 0;

	if (insn)
		return 0;
	h = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	cap.open = (__typeof__(cap.open))dlsym(h, "cs_open");
	cap.option = (__typeof__(cap.option))dlsym(h, "cs_option");
	cap.malloc = (__typeof__(cap.malloc))dlsym(h, "cs_malloc");
	cap.disasm_iter = (__typeof__(cap.disasm_iter))dlsym(h, "cs_disasm_iter");
	cap.insn_group = (__typeof__(cap.insn_group))dlsym(h, "cs_insn_group");
	cap.regs_access = (__typeof__(cap.regs_access))dlsym(h, "cs_regs_access");
	if (!cap.open || !cap.option || !cap.malloc || !cap.disasm_iter || !cap.insn_group ||
	    !cap.regs_access || cap.open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -1;
	cap.option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (pthread_key_create(&tramp_key, tramp_free) != 0)
		return -1;
	/* The code may be unreadable (execute-only): read it as the kernel. */
	code_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	insn = cap.malloc(cs);
	if (code_fd < 0 || !insn)
		return -1;
	/* The first decode builds capstone's tables (it allocates): now, not in a handler. */
	cap.disasm_iter(cs, &c, &n, &pc, insn);
	return 0;
}

/* The scratch candidates, by ModRM number (REX.B clear), with their gregs index and the
 * capstone registers that overlap them. */
static const struct {
	int num, greg;
	x86_reg regs[5];
} scratch_regs[] = {
	{ 0, REG_RAX, { X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH } },
	{ 1, REG_RCX, { X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH } },
	{ 2, REG_RDX, { X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH } },
	{ 3, REG_RBX, { X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH } },
	{ 6, REG_RSI, { X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_SIL } },
	{ 7, REG_RDI, { X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_DIL } },
};

static int uses(const uint16_t *list, uint8_t n, const x86_reg *regs)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 5; k++)
			if (list[i] == regs[k])
				return 1;
	return 0;
}

/* Where ModRM is for a [RIP + disp32] operand: the one place whose byte is the decoded
 * ModRM with the displacement after it; -1 if there is not exactly one. */
static int modrm_at(const uint8_t *code, unsigned len, uint8_t modrm, int32_t disp)
{
	int at = -1;

	for (unsigned p = 1; p + 5 <= len; p++) {
		int32_t d;

		memcpy(&d, code + p + 1, 4);
		if (code[p] == modrm && d == disp) {
			if (at >= 0)
				return -1;
			at = (int)p;
		}
	}
	return at;
}

/* Whether the REX or VEX prefix sets B (which [scratch] would then use), or the instruction
 * is EVEX-encoded; those stay in place. The prefix follows the legacy ones. */
static int prefix_b(const uint8_t *code, int modrm)
{
	static const uint8_t legacy[] = { 0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65,
					  0x66, 0x67 };
	int p = 0;

	while (p < modrm && memchr(legacy, code[p], sizeof(legacy)))
		p++;
	if (p >= modrm)
		return 0;
	if (code[p] == 0x62)
		return 1;                       /* EVEX (always, in 64-bit mode) */
	if (code[p] == 0xc4)
		return !(code[p + 1] & 0x20);   /* VEX3: B inverted */
	if ((code[p] & 0xf0) == 0x40)
		return code[p] & 1;             /* REX */
	return 0;                               /* none, or VEX2 (no B) */
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* A RIP-relative reference from the instruction ending at code + end to target. */
static int32_t rel(const struct tramp *t, unsigned end, uintptr_t target)
{
	return (int32_t)(target - (uintptr_t)(t->code + end));
}

static struct tramp *tramp_get(void)
{
	void *p;

	if (tr)
		return tr;
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect((char *)p + PAGE, PAGE, PROT_NONE) != 0) {
		munmap(p, 2 * PAGE);
		return NULL;
	}
	tr = p;
	pthread_setspecific(tramp_key, p);
	return tr;
}

/*
 * The program's bytes at ip where memory holds a debugger's breakpoint (int3: GDB puts one at
 * an instruction that it was single-stepping when the signal came, to stop at the handler's
 * return): those of the file mapped there, from /proc/self/maps (no loader lock in a signal
 * handler). They must agree with memory everywhere but at other int3 bytes. 0 if they are
 * there, -1 if not (anonymous memory, a file changed since).
 */
static const char *hex(const char *p, unsigned long *v)
{
	const char *q = p;

	*v = 0;
	for (;; q++) {
		unsigned d = *q >= '0' && *q <= '9' ? (unsigned)(*q - '0') :
			     *q >= 'a' && *q <= 'f' ? (unsigned)(*q - 'a' + 10) : 16;
		if (d == 16)
			return q == p ? NULL : q;
		*v = *v << 4 | d;
	}
}

static const char *skip_field(const char *p)
{
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	return p;
}

/* One line of /proc/self/maps ("start-end perms offset dev inode   path"), parsed by hand:
 * sscanf is not async-signal-safe. *file is the path, or NULL (anonymous). */
static int maps_line(const char *p, unsigned long *start, unsigned long *end,
		     unsigned long *off, const char **file)
{
	if (!(p = hex(p, start)) || *p++ != '-' || !(p = hex(p, end)) || *p++ != ' ')
		return 0;
	p = skip_field(p);                      /* perms */
	if (!(p = hex(p, off)))
		return 0;
	p = skip_field(skip_field(p));          /* offset, dev */
	p = skip_field(p);                      /* inode */
	*file = *p ? p : NULL;
	return 1;
}

static int code_from_file(uintptr_t ip, uint8_t *code, size_t n)
{
	char buf[4096 + 512], path[512];
	size_t have = 0;
	unsigned long start, end, off;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), found = 0;
	uint8_t file[16];

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (got <= 0)
			break;
		have += (size_t)got;
		buf[have] = 0;
		while ((nl = strchr(line, '\n'))) {
			const char *file;

			*nl = 0;
			if (maps_line(line, &start, &end, &off, &file) && ip >= start && ip < end) {
				found = file && *file == '/' && strlen(file) < sizeof(path);
				if (found)
					strcpy(path, file);
				break;
			}
			line = nl + 1;
		}
		if (found || (nl && line != buf))
			break;
		have = strlen(line);
		memmove(buf, line, have);
		if (have >= sizeof(buf) - 1)
			break;                      /* a line longer than the buffer */
	}
	close(fd);
	if (!found || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	found = pread(fd, file, n, (off_t)(off + (ip - start))) == (ssize_t)n;
	close(fd);
	for (size_t i = 0; found && i < n; i++)
		found = code[i] == file[i] || code[i] == 0xcc;
	if (!found)
		return -1;
	memcpy(code, file, n);
	return 0;
}

/* The gregs index of a 64-bit general register, or -1. */
static int greg_of(x86_reg r)
{
	static const struct { x86_reg r; int g; } map[] = {
		{ X86_REG_RAX, REG_RAX }, { X86_REG_RBX, REG_RBX }, { X86_REG_RCX, REG_RCX },
		{ X86_REG_RDX, REG_RDX }, { X86_REG_RSI, REG_RSI }, { X86_REG_RDI, REG_RDI },
		{ X86_REG_RBP, REG_RBP }, { X86_REG_RSP, REG_RSP }, { X86_REG_R8, REG_R8 },
		{ X86_REG_R9, REG_R9 }, { X86_REG_R10, REG_R10 }, { X86_REG_R11, REG_R11 },
		{ X86_REG_R12, REG_R12 }, { X86_REG_R13, REG_R13 }, { X86_REG_R14, REG_R14 },
		{ X86_REG_R15, REG_R15 },
	};

	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].r == r)
			return map[i].g;
	return -1;
}

/*
 * A near return, or a call to an immediate target or through a register, whose stack access
 * faulted (a watched stack page): done here, on the context, the page being open. A control
 * transfer cannot run in the trampoline. 1 if done, 0 if not one of those.
 */
static int emulate(const cs_insn *in, ucontext_t *uc)
{
	const cs_x86 *x = &in->detail->x86;
	greg_t *gr = uc->uc_mcontext.gregs;
	uint64_t *sp = (uint64_t *)gr[REG_RSP];
	uint64_t target;

	if (in->id == X86_INS_RET) {
		uint64_t pop = 8;

		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
			pop += (uint64_t)x->operands[0].imm & 0xffff;
		else if (x->op_count)
			return 0;
		gr[REG_RIP] = (greg_t)*sp;
		gr[REG_RSP] += (greg_t)pop;
		return 1;
	}
	if (in->id != X86_INS_CALL || x->op_count != 1)
		return 0;
	if (x->operands[0].type == X86_OP_IMM) {
		target = (uint64_t)x->operands[0].imm;
	} else if (x->operands[0].type == X86_OP_REG && greg_of(x->operands[0].reg) >= 0) {
		target = (uint64_t)gr[greg_of(x->operands[0].reg)];
	} else if (x->operands[0].type == X86_OP_MEM && x->operands[0].size == 8 &&
		   x->operands[0].mem.segment == X86_REG_INVALID) {
		/* call *mem (a PLT's through the GOT): the target read as the kernel reads it,
		 * whatever the rights of its page. */
		const x86_op_mem *m = &x->operands[0].mem;
		uint64_t a = (uint64_t)m->disp;
		int b = greg_of(m->base), i = greg_of(m->index);

		if (m->base == X86_REG_RIP)
			a += (uint64_t)gr[REG_RIP] + in->size;
		else if (b >= 0)
			a += (uint64_t)gr[b];
		else if (m->base != X86_REG_INVALID)
			return 0;
		if (i >= 0)
			a += (uint64_t)gr[i] * (uint64_t)m->scale;
		else if (m->index != X86_REG_INVALID)
			return 0;
		if (pread(code_fd, &target, 8, (off_t)a) != 8)
			return 0;
	} else {
		return 0;
	}
	sp[-1] = (uint64_t)gr[REG_RIP] + in->size;
	gr[REG_RSP] -= 8;
	gr[REG_RIP] = (greg_t)target;
	return 1;
}

/*
 * Prepares this thread's trampoline for the program's instruction at ip (the context's RIP
 * is ip, the faulting page open): the address to run it from (the caller puts it in RIP);
 * ULPT_OOL_DONE if it was a call or return, done on the context already; or 0 if it must be
 * single-stepped in place.
 */
uintptr_t ulpt_ool_prepare_(uintptr_t ip, void *ucv)
{
	uint8_t code[16];
	const uint8_t *c = code;
	size_t left;
	uint64_t pc = ip;
	struct tramp *t;
	unsigned len, n = 0;
	int ok = 0, rip_rel = 0, modrm = -1, sc = -1;
	long got;

	if (!insn || !(t = tramp_get()))
		return 0;
	got = syscall(SYS_pread64, code_fd, code, sizeof(code), (off_t)ip);
	if (got <= 0 || (code[0] == 0xcc && code_from_file(ip, code, (size_t)got) < 0))
		return 0;
	left = (size_t)got;
	while (__atomic_exchange_n(&decode_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	if (!cap.disasm_iter(cs, &c, &left, &pc, insn)) {
		ok = 0;
	} else if ((uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP] == ip &&
		   emulate(insn, ucv)) {
		__atomic_store_n(&decode_lock, 0, __ATOMIC_RELEASE);
		return ULPT_OOL_DONE;
	} else if (!cap.insn_group(cs, insn, CS_GRP_JUMP) && !cap.insn_group(cs, insn, CS_GRP_CALL) &&
	    !cap.insn_group(cs, insn, CS_GRP_RET) && !cap.insn_group(cs, insn, CS_GRP_INT) &&
	    !cap.insn_group(cs, insn, CS_GRP_IRET) && insn->id != X86_INS_INT3 &&
	    insn->id != X86_INS_SYSCALL && insn->id != X86_INS_SYSENTER) {
		const cs_x86 *x = &insn->detail->x86;
		cs_regs rd, wr;
		uint8_t nrd, nwr;

		ok = 1;
		for (int i = 0; i < x->op_count; i++)
			if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP)
				rip_rel = 1;
		if (rip_rel) {
			modrm = modrm_at(code, insn->size, x->modrm, (int32_t)x->disp);
			ok = modrm > 0 && (x->modrm & 0xc7) == 0x05 && !prefix_b(code, modrm) &&
			     cap.regs_access(cs, insn, rd, &nrd, wr, &nwr) == CS_ERR_OK;
			for (unsigned i = 0; ok && i < sizeof(scratch_regs) / sizeof(scratch_regs[0]); i++)
				if (!uses(rd, nrd, scratch_regs[i].regs) &&
				    !uses(wr, nwr, scratch_regs[i].regs)) {
					sc = (int)i;
					break;
				}
			ok = ok && sc >= 0;
		}
	}
	len = ok ? insn->size : 0;
	__atomic_store_n(&decode_lock, 0, __ATOMIC_RELEASE);
	if (!ok)
		return 0;

	t->ip = ip;
	t->next_ip = ip + len;
	t->scratch = -1;
	if (rip_rel) {
		int r = scratch_regs[sc].num;

		t->scratch = scratch_regs[sc].greg;
		/* mov %scratch, save(%rip) */
		t->code[n++] = 0x48; t->code[n++] = 0x89; t->code[n++] = (uint8_t)(r << 3 | 5);
		put32(t->code + n, rel(t, n + 4, (uintptr_t)&t->save)); n += 4;
		/* movabs $next_ip, %scratch */
		t->code[n++] = 0x48; t->code[n++] = (uint8_t)(0xb8 + r);
		memcpy(t->code + n, &t->next_ip, 8); n += 8;
	}
	t->insn_at = (uintptr_t)(t->code + n);
	memcpy(t->code + n, code, len);
	if (rip_rel)    /* [RIP + disp32] -> [scratch + disp32]: mod 10, rm scratch */
		t->code[n + modrm] = (uint8_t)((t->code[n + modrm] & 0x38) | 0x80 | scratch_regs[sc].num);
	n += len;
	if (rip_rel) {
		int r = scratch_regs[sc].num;
		/* mov save(%rip), %scratch */
		t->code[n++] = 0x48; t->code[n++] = 0x8b; t->code[n++] = (uint8_t)(r << 3 | 5);
		put32(t->code + n, rel(t, n + 4, (uintptr_t)&t->save)); n += 4;
	}
	/* testb $0, guard(%rip): faults, changing no register or flag */
	t->guard_at = (uintptr_t)(t->code + n);
	t->code[n++] = 0xf6; t->code[n++] = 0x05;
	put32(t->code + n, rel(t, n + 5, (uintptr_t)t + PAGE)); n += 4;
	t->code[n++] = 0;
	/* jmp *next_ip(%rip) */
	t->jump[0] = 0xff; t->jump[1] = 0x25;
	put32(t->jump + 2, (int32_t)((uintptr_t)&t->next_ip - (uintptr_t)(t->jump + 6)));
	return (uintptr_t)t->code;
}

/* A segment register's base (FS and GS; the others are 0 in 64-bit mode). */
static uint64_t seg_base(x86_reg seg)
{
	unsigned long b = 0;

	if (seg == X86_REG_FS || seg == X86_REG_GS)
		syscall(SYS_arch_prctl, seg == X86_REG_FS ? 0x1003 /* ARCH_GET_FS */ : 0x1004, &b);
	return b;
}

/* Capstone 4 gives the memory destination of most SSE and AVX stores as read (for vmovdqu
 * ymmword ptr [rdi], ymm0 its tables say read): beside a vector register, a memory operand is
 * written when it is the destination, operand 0, and read otherwise (no SSE or AVX instruction
 * both reads and writes memory). */
static unsigned mem_kinds(const cs_x86 *x, int i)
{
	for (int k = 0; k < x->op_count; k++)
		if (x->operands[k].type == X86_OP_REG && x->operands[k].reg >= X86_REG_XMM0 &&
		    x->operands[k].reg <= X86_REG_ZMM31)
			return i == 0 ? ULPT_DENY_W : ULPT_DENY_R;
	return x->operands[i].access & (CS_AC_READ | CS_AC_WRITE);
}

/*
 * The memory accesses of the instruction at ip with the registers of the context (the
 * program's, but RIP): its explicit memory operands, and the stack slot of a push, pop, call
 * or return. Up to max of them, their number, or -1 if it cannot be decoded. For the access
 * log: what the CPU would record as start, size and kind.
 */
int ulpt_ool_mem_(uintptr_t ip, const void *ucv, struct ulpt_ool_mem *m, int max)
{
	const greg_t *gr = ((const ucontext_t *)ucv)->uc_mcontext.gregs;
	uint8_t code[16];
	const uint8_t *c = code;
	size_t left;
	uint64_t pc = ip;
	long got;
	int n = 0;

	if (!insn)
		return -1;
	got = syscall(SYS_pread64, code_fd, code, sizeof(code), (off_t)ip);
	if (got <= 0 || (code[0] == 0xcc && code_from_file(ip, code, (size_t)got) < 0))
		return -1;
	left = (size_t)got;
	while (__atomic_exchange_n(&decode_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	if (!cap.disasm_iter(cs, &c, &left, &pc, insn)) {
		__atomic_store_n(&decode_lock, 0, __ATOMIC_RELEASE);
		return -1;
	}
	const cs_x86 *x = &insn->detail->x86;
	for (int i = 0; i < x->op_count && n < max; i++) {
		const cs_x86_op *o = &x->operands[i];
		uint64_t a = (uint64_t)o->mem.disp;
		int b = greg_of(o->mem.base), ix = greg_of(o->mem.index);

		if (o->type != X86_OP_MEM || !(o->access & (CS_AC_READ | CS_AC_WRITE)) ||
		    insn->id == X86_INS_LEA)
			continue;
		if (o->mem.base == X86_REG_RIP)
			a += ip + insn->size;
		else if (b >= 0)
			a += (uint64_t)gr[b];
		else if (o->mem.base != X86_REG_INVALID)
			continue;               /* a 32-bit base: not worth it */
		if (ix >= 0)
			a += (uint64_t)gr[ix] * (uint64_t)o->mem.scale;
		else if (o->mem.index != X86_REG_INVALID)
			continue;               /* VSIB: a vector of addresses */
		a += seg_base(o->mem.segment);
		m[n++] = (struct ulpt_ool_mem){ a, o->size, mem_kinds(x, i) };
	}
	if (n < max && (insn->id == X86_INS_PUSH || insn->id == X86_INS_CALL))
		m[n++] = (struct ulpt_ool_mem){ (uintptr_t)gr[REG_RSP] - 8, 8, ULPT_DENY_W };
	else if (n < max && (insn->id == X86_INS_POP || insn->id == X86_INS_RET))
		m[n++] = (struct ulpt_ool_mem){ (uintptr_t)gr[REG_RSP], 8, ULPT_DENY_R };
	__atomic_store_n(&decode_lock, 0, __ATOMIC_RELEASE);
	return n;
}

/* n bytes at addr as the kernel reads them, whatever their rights: 0 or -1. */
int ulpt_ool_read_(uintptr_t addr, void *buf, size_t n)
{
	return code_fd >= 0 && pread(code_fd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* Where to send a program that single-steps itself (TF) once its out-of-line instruction is
 * done: a jump to its next instruction, so that its trap comes there, before that one runs,
 * as after the instruction in place. */
uintptr_t ulpt_ool_jump_(void)
{
	return tr ? (uintptr_t)tr->jump : 0;
}

/* This thread's trampoline's guard read faulted at rip: the instruction is done. Its next
 * RIP, or 0 if the fault is not that. */
uintptr_t ulpt_ool_done_(uintptr_t rip, uintptr_t addr)
{
	struct tramp *t = tr;

	if (!t || rip != t->guard_at || addr < (uintptr_t)t + PAGE || addr >= (uintptr_t)t + 2 * PAGE)
		return 0;
	t->save = 0;    /* the register is back: no stale pointer here (a leak check's root) */
	return t->next_ip;
}

/* The program's instruction for a RIP in this thread's trampoline (the instruction itself
 * faulted there: another page, or a fault that is not the library's), else rip. */
uintptr_t ulpt_ool_program_ip_(uintptr_t rip)
{
	const struct tramp *t = tr;

	return t && rip == t->insn_at ? t->ip : rip;
}

/* Undoes a trampoline run that stopped at its instruction: the scratch register back, and
 * RIP at the program's instruction (it did not complete; it runs again from there). */
void ulpt_ool_cancel_(void *ucv)
{
	ucontext_t *uc = ucv;
	const struct tramp *t = tr;

	if (!t || (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] != t->insn_at)
		return;
	if (t->scratch >= 0)
		uc->uc_mcontext.gregs[t->scratch] = (greg_t)t->save;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)t->ip;
}
