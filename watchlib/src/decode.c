/*
 * The access an instruction makes, for the mprotect backend: SIGSEGV gives the address but not
 * the size, and a read-modify-write looks like a write. Capstone decodes the instruction; its
 * memory comes from watchlib's allocator (the agent replaces the program's malloc).
 * Capstone is loaded with dlopen when the mprotect backend needs it: the ULPT backend never
 * does, and loading it costs some 4.5 MB of resident memory (its relocated tables), which
 * would be most of the agent's own.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "wl-internal.h"

static csh cs;
static cs_insn *insn;

/* Capstone's entry points, from the library this was built against (its soname). */
#define STR_(x) #x
#define STR(x) STR_(x)
#define CAPSTONE_SONAME "libcapstone.so." STR(CS_API_MAJOR)
static struct {
	__typeof__(cs_option) *option;
	__typeof__(cs_open) *open;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_disasm_iter) *disasm_iter;
} cap;

static int load_capstone(void)
{
	void *h = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return -1;
	cap.option = (__typeof__(cap.option))dlsym(h, "cs_option");
	cap.open = (__typeof__(cap.open))dlsym(h, "cs_open");
	cap.malloc = (__typeof__(cap.malloc))dlsym(h, "cs_malloc");
	cap.disasm_iter = (__typeof__(cap.disasm_iter))dlsym(h, "cs_disasm_iter");
	return cap.option && cap.open && cap.malloc && cap.disasm_iter ? 0 : -1;
}
static int code_fd = -1;
static volatile int lock;

static void *cs_calloc(size_t n, size_t m)
{
	return m && n > SIZE_MAX / m ? NULL : wl_mem_alloc(n * m);
}

int wl_decode_init(void)
{
	cs_opt_mem mem = {
		.malloc = wl_mem_alloc, .calloc = cs_calloc, .realloc = wl_mem_realloc,
		.free = wl_mem_free, .vsnprintf = vsnprintf,
	};

	if (insn)
		return 0;
	if (load_capstone() < 0 || cap.option(0, CS_OPT_MEM, (size_t)&mem) != CS_ERR_OK ||
	    cap.open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -1;
	cap.option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cap.malloc(cs);
	/* The code may be unreadable (execute-only, or rights we denied): read it as the kernel. */
	code_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (!insn || code_fd < 0)
		return -1;
	/* The first decode builds capstone's tables (qsort, which allocates): do it now, not in
	 * a fault handler. */
	struct wl_access a;
	return wl_decode((uintptr_t)wl_decode_init, 0, &a);
}

int wl_decode(uintptr_t ip, uintptr_t addr, struct wl_access *a)
{
	uint8_t code[16];
	const uint8_t *c = code;
	size_t left;
	uint64_t pc = ip;
	int r = -1;

	if (!insn || code_fd < 0)
		return -1;
	long got = syscall(SYS_pread64, code_fd, code, sizeof(code), (off_t)ip);
	if (got <= 0)
		return -1;
	left = (size_t)got;
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	if (cap.disasm_iter(cs, &c, &left, &pc, insn)) {
		const cs_x86 *x = &insn->detail->x86;
		a->start = addr;
		a->size = 0;
		a->reads = a->writes = 0;
		for (int i = 0; i < x->op_count; i++) {
			if (x->operands[i].type != X86_OP_MEM)
				continue;
			if (x->operands[i].size > a->size)
				a->size = x->operands[i].size;
			a->reads |= !!(x->operands[i].access & CS_AC_READ);
			a->writes |= !!(x->operands[i].access & CS_AC_WRITE);
		}
		/* Implicit stack accesses (push, call) and string instructions have no memory
		 * operand in every form: one byte at the address is the least that is true. */
		if (!a->size)
			a->size = 1;
		r = 0;
	}
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	return r;
}
