/*
 * Backtraces (libunwind), symbols (elfutils' libdw) and the reports, in the format Valgrind's
 * and ASan's users read: kind, access, address, the block, where it was allocated and freed.
 * Runs with in_agent set, so what libunwind and libdw allocate comes from watchlib's memory.
 *
 * libdw (with libelf, libz, libbz2 and liblzma) is loaded at the first symbol a process needs,
 * not with the agent: five libraries that every program would otherwise map and relocate at
 * its start, most of a short run's cost in an emulator, for reports most runs never make. A
 * dlopen while the loader is amid a dlopen or dlclose (a fault inside ld.so) would abort in
 * ld.so's consistency check, so then the frames go without names.
 *
 * Stacks are kept once each in a depot (a hash of their program counters), so a malloc-heavy
 * program costs one table entry per distinct allocation site, not per allocation.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <libunwind.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/mman.h>
#include "agent.h"

#define MAX_FRAMES   16
#define DEPOT_SLOTS_MIN (1u << 12)  /* the hash table doubles from here, at half full */
#define DEPOT_WORDS  (64u << 20)

static struct {
	volatile int lock;
	uint32_t *slots;            /* hash -> offset into words (0: empty) */
	uint32_t nslots, used;
	uintptr_t *words;           /* [n, pc0, pc1, ...] */
	uint32_t top;
	Dwfl *dwfl;
	volatile int dwfl_lock;
	uint32_t seen[4096];        /* (kind, ip) of errors reported (hashed), to report each once */
} d;

static void spin(volatile int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

static void unspin(volatile int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static uint64_t pcs_hash(const uintptr_t *pcs, int n)
{
	uint64_t hsh = 1469598103934665603ull;

	for (int i = 0; i < n; i++)
		hsh = (hsh ^ pcs[i]) * 1099511628211ull;
	return hsh;
}

/* The slot of the stack (pcs, n) in a table of nslots: its own, or the empty one for it. The
 * table is at most half full, so there is one. */
static int same_pcs(const uintptr_t *a, const uintptr_t *b, int n)
{
	for (int i = 0; i < n; i++)             /* not memcmp: that is the agent's checked one */
		if (a[i] != b[i])
			return 0;
	return 1;
}

static uint32_t *depot_slot(uint32_t *slots, uint32_t nslots, const uintptr_t *pcs, int n)
{
	for (uint32_t i = (uint32_t)pcs_hash(pcs, n) & (nslots - 1);; i = (i + 1) & (nslots - 1)) {
		uint32_t o = slots[i];
		if (!o || (d.words[o] == (uintptr_t)n && same_pcs(&d.words[o + 1], pcs, n)))
			return &slots[i];
	}
}

/* Doubles the table (its pages are touched at random: it starts small, so that a program
 * with few allocation sites does not pay a large table in resident memory). */
static int depot_grow(void)
{
	uint32_t n = d.nslots ? d.nslots * 2 : DEPOT_SLOTS_MIN;
	uint32_t *t = wl_mem_reserve(n * sizeof(uint32_t));

	if (!t)
		return -1;
	for (uint32_t i = 0; i < d.nslots; i++) {
		uint32_t o = d.slots[i];
		if (o)
			*depot_slot(t, n, &d.words[o + 1], (int)d.words[o]) = o;
	}
	if (d.slots)
		wl_mem_unreserve(d.slots, d.nslots * sizeof(uint32_t));
	d.slots = t;
	d.nslots = n;
	return 0;
}

static uint32_t depot_put(uintptr_t *pcs, int n)
{
	uint32_t id = 0, *slot;

	if (n <= 0)
		return 0;
	spin(&d.lock);
	if (!d.words) {
		d.words = wl_mem_reserve(DEPOT_WORDS * sizeof(uintptr_t));
		d.top = 1;
	}
	if (!d.words || ((d.used + 1) * 2 > d.nslots && depot_grow() < 0 && d.used + 1 >= d.nslots))
		goto out;
	slot = depot_slot(d.slots, d.nslots, pcs, n);
	if (*slot) {
		id = *slot;
	} else if (d.top + n + 1 <= DEPOT_WORDS) {
		d.words[d.top] = (uintptr_t)n;
		memcpy(&d.words[d.top + 1], pcs, n * sizeof(*pcs));
		*slot = id = d.top;
		d.top += n + 1;
		d.used++;
	}
out:
	unspin(&d.lock);
	return id;
}

/* libunwind's caches per thread: its global ones take a lock that blocks and restores every
 * signal, two system calls, at each frame it has not cached yet. */
void report_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static int in_agent_code(uintptr_t pc)
{
	return pc - ag.self_text[0] < ag.self_text[1] - ag.self_text[0];
}

/* The stack of the caller of the agent's entry point (malloc, free): the agent's own frames,
 * the first ones, are left out. */
uint32_t stack_capture(void)
{
	void *pcs[MAX_FRAMES + 8];
	int n = unw_backtrace(pcs, MAX_FRAMES + 8), i = 0;

	while (i < n && in_agent_code((uintptr_t)pcs[i]))
		i++;
	if (n - i > MAX_FRAMES)
		n = i + MAX_FRAMES;
	return n > i ? depot_put((uintptr_t *)pcs + i, n - i) : 0;
}

/* Frames of the current stack from the frame whose pc is `from` (or just after it, for an
 * interrupted instruction) on; the first is reported as `from` itself. */
static int stack_from(uintptr_t from, uintptr_t *out, int max)
{
	void *pcs[64];
	int n = unw_backtrace(pcs, 64), i, k = 0;

	if (!from) {
		/* A bad free: from the caller of the agent's free on. */
		for (i = 0; i < n && in_agent_code((uintptr_t)pcs[i]); i++)
			;
		for (; i < n && k < max; i++)
			out[k++] = (uintptr_t)pcs[i];
		return k;
	}
	for (i = 0; i < n; i++)
		if ((uintptr_t)pcs[i] >= from && (uintptr_t)pcs[i] <= from + 16)
			break;
	if (i == n)
		i = 0;
	out[k++] = from;
	for (i++; i < n && k < max; i++)
		out[k++] = (uintptr_t)pcs[i];
	return k;
}

/* libdw's functions, from dlopen (the libdw.so.1 the agent was built against). */
static struct {
	int state;                  /* 0: not tried, 1: loaded, -1: not there */
	Dwfl_Callbacks cb;
#define DW_FN(name) __typeof__(name) *name
	DW_FN(dwfl_begin); DW_FN(dwfl_end); DW_FN(dwfl_report_begin); DW_FN(dwfl_report_end);
	DW_FN(dwfl_linux_proc_report); DW_FN(dwfl_addrmodule); DW_FN(dwfl_module_addrname);
	DW_FN(dwfl_module_getsrc); DW_FN(dwfl_module_info); DW_FN(dwfl_lineinfo);
	DW_FN(dwfl_module_getsymtab); DW_FN(dwfl_module_getsym_info);
#undef DW_FN
} dw;

/* Called under dwfl_lock. 1 once libdw is there; 0 while it cannot be loaded yet. */
static int dw_load(void)
{
	void *h;

	if (dw.state)
		return dw.state > 0;
	if (_r_debug.r_state != RT_CONSISTENT)
		return 0;               /* amid a dlopen: try again at the next report */
	h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	dw.state = -1;
	if (!h)
		return 0;
#define DW_GET(name) if (!(*(void **)&dw.name = dlsym(h, #name))) return 0
	DW_GET(dwfl_begin); DW_GET(dwfl_end); DW_GET(dwfl_report_begin); DW_GET(dwfl_report_end);
	DW_GET(dwfl_linux_proc_report); DW_GET(dwfl_addrmodule); DW_GET(dwfl_module_addrname);
	DW_GET(dwfl_module_getsrc); DW_GET(dwfl_module_info); DW_GET(dwfl_lineinfo);
	DW_GET(dwfl_module_getsymtab); DW_GET(dwfl_module_getsym_info);
	/* Separate debug files by build id, in the local debug directories only: the standard
	 * finder also asks debuginfod for a module it cannot find (perl, most programs), which
	 * loads libcurl and a TLS library whose start waits for the kernel's entropy (most of a
	 * report's first second in the guest), and may go to the network from a checker. */
	if (!(*(void **)&dw.cb.find_elf = dlsym(h, "dwfl_linux_proc_find_elf")) ||
	    !(*(void **)&dw.cb.find_debuginfo = dlsym(h, "dwfl_build_id_find_debuginfo")))
		return 0;
#undef DW_GET
	dw.state = 1;
	return 1;
}

/*
 * A module's symbols sorted by address, built at its first lookup: libdw's
 * dwfl_module_addrname searches the whole symbol table at each call (a libc with its debug
 * file has tens of thousands of symbols), most of a leak report's time once its frames number
 * in the hundreds. The same choice as libdw's: the closest symbol at or below the address
 * that contains it (global before weak before local at one address), else the closest
 * sizeless one. Under dwfl_lock; dropped with the Dwfl whose names they point into.
 */
struct fsym {
	uintptr_t addr, size;
	const char *name;
	int rank;                   /* 2 global, 1 weak, 0 local */
};

#define SYM_MODULES 128
static struct {
	Dwfl_Module *m;
	struct fsym *s;             /* NULL: not built (libdw's own search is used) */
	size_t n;
} modsyms[SYM_MODULES];
static int nmodsyms;

static int fsym_order(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

static void modsyms_drop(void)
{
	for (int i = 0; i < nmodsyms; i++)
		wl_mem_free(modsyms[i].s);
	nmodsyms = 0;
}

static int modsyms_build(Dwfl_Module *m)
{
	int n, k = 0;
	struct fsym *s;

	if (nmodsyms == SYM_MODULES)
		return -1;
	n = dw.dwfl_module_getsymtab(m);
	s = n > 0 ? wl_mem_alloc((size_t)n * sizeof(*s)) : NULL;
	for (int i = 1; s && i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr = 0;
		GElf_Word shndx = 0;
		const char *name = dw.dwfl_module_getsym_info(m, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

		if (!name || !*name || shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		s[k++] = (struct fsym){ addr, sym.st_size, name,
					bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0 };
	}
	if (s)
		qsort(s, (size_t)k, sizeof(*s), fsym_order);
	modsyms[nmodsyms].m = m;
	modsyms[nmodsyms].s = s;
	modsyms[nmodsyms].n = (size_t)k;
	return nmodsyms++;
}

static const char *addr_name(Dwfl_Module *m, uintptr_t q)
{
	const struct fsym *s, *sizeless = NULL;
	size_t lo = 0, hi, j;
	int i;

	for (i = 0; i < nmodsyms && modsyms[i].m != m; i++)
		;
	if (i == nmodsyms)
		i = modsyms_build(m);
	if (i < 0 || !modsyms[i].s)
		return dw.dwfl_module_addrname(m, q);
	s = modsyms[i].s;
	hi = modsyms[i].n;
	while (lo < hi) {                       /* the first symbol above q */
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].addr <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Back through the closest addresses (a few: nested and overlapping symbols are rare). */
	for (j = lo; j > 0 && lo - j < 64; ) {
		size_t g = j - 1;

		while (g > 0 && s[g - 1].addr == s[j - 1].addr)
			g--;
		for (size_t k = g; k < j; k++) {
			if (s[k].size && q - s[k].addr < s[k].size)
				return s[k].name;
			if (!s[k].size && !sizeless)
				sizeless = &s[k];
		}
		j = g;
	}
	return sizeless ? sizeless->name : NULL;
}

/* "function file:line" of pc (a return address if not the first frame), and the path of its
 * module in mod (when asked: "" if not known). */
static void symbolize(uintptr_t pc, int first, char *fn, size_t fnlen, char *loc, size_t loclen,
		      char *modpath, size_t modlen)
{
	uintptr_t q = first ? pc : pc - 1;
	Dwfl_Module *m = NULL;

	snprintf(fn, fnlen, "?");
	snprintf(loc, loclen, "?");
	if (modpath)
		*modpath = 0;
	spin(&d.dwfl_lock);
	for (int pass = 0; pass < 2 && !m && dw_load(); pass++) {
		if (!d.dwfl || pass) {
			/* (Re)read the process's modules: libraries may have been loaded since. */
			if (d.dwfl) {
				modsyms_drop();
				dw.dwfl_end(d.dwfl);
			}
			d.dwfl = dw.dwfl_begin(&dw.cb);
			if (!d.dwfl)
				break;
			dw.dwfl_report_begin(d.dwfl);
			dw.dwfl_linux_proc_report(d.dwfl, getpid());
			dw.dwfl_report_end(d.dwfl, NULL, NULL);
		}
		m = dw.dwfl_addrmodule(d.dwfl, q);
	}
	if (m) {
		const char *name = addr_name(m, q);
		const char *mod = NULL, *debugfile = NULL;
		Dwarf_Addr start = 0;
		Dwfl_Line *line = NULL;
		int lineno = 0;

		dw.dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, &mod, &debugfile);
		/* Source lines from the module's own DWARF (a program or library built with -g);
		 * a system library's, in a separate debug package (libc6-dbg), cost a
		 * decompression of that whole package's DWARF at the first line looked up, ten
		 * times a leak check's own time: its frames get the function's name only. */
		if (!debugfile || (mod && !strcmp(debugfile, mod)))
			line = dw.dwfl_module_getsrc(m, q);
		if (modpath && mod)
			snprintf(modpath, modlen, "%s", mod);
		if (name)
			snprintf(fn, fnlen, "%s", name);
		if (line) {
			const char *file = dw.dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
			if (file)
				snprintf(loc, loclen, "%s:%d", file, lineno);
		} else if (mod) {
			/* A function without a name (a stripped program's static one) is told by
			 * its offset in the module, as ASan prints it: a suppression can name it. */
			const char *base = strrchr(mod, '/');
			if (name)
				snprintf(loc, loclen, "%s", base ? base + 1 : mod);
			else
				snprintf(loc, loclen, "%s+0x%lx", base ? base + 1 : mod,
					 (unsigned long)(pc - start));
		}
	}
	unspin(&d.dwfl_lock);
}

/* Appends formatted text to a buffer that goes out in one write. */
struct out {
	char buf[8192];
	size_t n;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (o->n >= sizeof(o->buf))
		return;
	va_start(ap, fmt);
	r = vsnprintf(o->buf + o->n, sizeof(o->buf) - o->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		o->n += (size_t)r < sizeof(o->buf) - o->n ? (size_t)r : sizeof(o->buf) - o->n - 1;
}

/* A report's frames, symbolised before it is printed (a suppression rule may match them):
 * under the report's lock, so static. */
#define REPORT_FRAMES (3 * MAX_FRAMES)
static struct sym {
	uintptr_t pc;
	const char *what;           /* "access", "free", "alloc" */
	int exact;                  /* pc is the instruction, not a return address */
	char fn[256], loc[512], mod[256], file[512];
} syms[REPORT_FRAMES];
static int nsyms;

/* The frames symbolised so far, by pc (and whether it is exact, not a return address): a
 * leak report repeats the same callers in group after group, and each DWARF lookup is slow
 * in an emulator. Only frames in a known module are kept (a library loaded later may yet
 * cover the others). Under the report's lock, or at the end from one thread. */
#define SYM_CACHE 4096
static struct sym *sym_cache[SYM_CACHE];

static struct sym **sym_slot(uintptr_t pc, int exact)
{
	uint32_t i = (uint32_t)(((pc << 1 | (unsigned)exact) * 0x9e3779b97f4a7c15ull) >> 52);

	for (int k = 0; k < SYM_CACHE; k++, i = (i + 1) & (SYM_CACHE - 1)) {
		struct sym *c = sym_cache[i];
		if (!c || (c->pc == pc && c->exact == exact))
			return &sym_cache[i];
	}
	return NULL;
}

static void symbolize_cached(struct sym *y)
{
	struct sym **slot = sym_slot(y->pc, y->exact);

	if (slot && *slot) {
		memcpy(y->fn, (*slot)->fn, sizeof(y->fn));
		memcpy(y->loc, (*slot)->loc, sizeof(y->loc));
		memcpy(y->mod, (*slot)->mod, sizeof(y->mod));
		return;
	}
	symbolize(y->pc, y->exact, y->fn, sizeof(y->fn), y->loc, sizeof(y->loc), y->mod,
		  sizeof(y->mod));
	if (slot && y->mod[0] && (*slot = wl_mem_alloc(sizeof(**slot))))
		memcpy(*slot, y, sizeof(*y));
}

static void collect(const char *what, const uintptr_t *pcs, int n, int first_exact)
{
	for (int i = 0; i < n && nsyms < REPORT_FRAMES; i++) {
		struct sym *y = &syms[nsyms++];
		char *colon;

		y->pc = pcs[i];
		y->what = what;
		y->exact = i == 0 && first_exact;
		symbolize_cached(y);
		memcpy(y->file, y->loc, sizeof(y->file));     /* same size */
		colon = strrchr(y->file, ':');
		if (colon)
			*colon = 0;             /* "file:line": the file */
	}
}

static void collect_depot(const char *what, uint32_t id)
{
	if (id && d.words)
		collect(what, &d.words[id + 1], (int)d.words[id], 0);
}

static void print_frames(struct out *human, struct out *rec, const char *what)
{
	for (int i = 0, k = 0; i < nsyms; i++) {
		const struct sym *y = &syms[i];
		if (strcmp(y->what, what))
			continue;
		put(human, "    #%d 0x%lx in %s %s\n", k++, (unsigned long)y->pc, y->fn, y->loc);
		put(rec, "frame\t%s\t0x%lx\t%s\t%s\n", what, (unsigned long)y->pc, y->fn, y->loc);
	}
}

/* Whether a rule of the suppressions file matches a frame of the report. */
static int suppressed(const char *kind)
{
	static const char *names[3 * REPORT_FRAMES];
	int n = 0;

	for (int i = 0; i < nsyms; i++) {
		names[n++] = syms[i].fn;
		names[n++] = syms[i].mod;
		names[n++] = syms[i].file;
	}
	return suppress_match(kind, names, n);
}

/* gen_suppressions: a rule for this report, by its first frame (the access, or where a
 * leaked block was allocated): the function, or for one without a name its module+offset. */
static void gen_rule(struct out *human, const char *kind)
{
	const char *pick = NULL;

	if (!ag.gen_suppressions)
		return;
	if (nsyms && strcmp(syms[0].fn, "?"))
		pick = syms[0].fn;
	else if (nsyms && strcmp(syms[0].file, "?"))
		pick = syms[0].file;
	if (pick)
		put(human, "Suppression rule for this report (for a --suppressions file):\n%s:^%s$\n\n",
		    kind, pick);
	else
		put(human, "Suppression rule for this report: none (its first frame has no name)\n\n");
}

static const char *kind_name(enum err_kind k)
{
	switch (k) {
	case ERR_OVERFLOW: return "heap-overflow";
	case ERR_UAF: return "use-after-free";
	case ERR_DOUBLE_FREE: return "double-free";
	case ERR_INVALID_FREE: return "invalid-free";
	case ERR_MISMATCH: return "alloc-dealloc-mismatch";
	case ERR_BAD_USABLE: return "bad-malloc_usable_size";
	}
	return "?";
}

static int seen_before(const struct err *e)
{
	/* By where it happened; an error found at exit has no stack: by its address. */
	uintptr_t where = e->ip ? e->ip : e->addr;
	uint32_t key = (uint32_t)(where * 2654435761u) ^ (uint32_t)e->kind ^ (e->access << 8);
	uint32_t i = key & 4095;

	if (!key)
		key = 1;
	for (int probes = 0; probes < 4096; probes++, i = (i + 1) & 4095) {
		uint32_t v = __atomic_load_n(&d.seen[i], __ATOMIC_RELAXED);
		if (v == key)
			return 1;
		if (!v && __atomic_compare_exchange_n(&d.seen[i], &v, key, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
			return 0;
	}
	return 0;
}

void report_error(struct err *e)
{
	static struct out human, rec;       /* large: not on the (signal) stack; under the lock */
	static volatile int lock;
	uintptr_t pcs[MAX_FRAMES];
	const struct blk *b = e->block ? &ag.blocks[e->block] : NULL;
	const char *acc = e->access == WL_WRITE ? "write" : e->access == WL_READ ? "read" :
			  e->fn ? e->fn : "free";
	int n;

	/* A bad free or a canary found at free: from the caller of free on; at exit: none. */
	int at_access = e->access && !e->found;
	n = e->found && !strcmp(e->found, "exit") ? 0 : stack_from(at_access ? e->ip : 0, pcs, MAX_FRAMES);
	if (!at_access && n)
		e->ip = pcs[0];        /* its caller, before telling errors apart by ip */
	if (e->kind == ERR_OVERFLOW && b)
		ag.blocks[e->block].overflowed = 1;    /* one bug, one report (heap.c's canaries) */
	if (seen_before(e))
		return;
	int freed = b && (b->state == BLK_FREED || e->kind == ERR_DOUBLE_FREE);

	spin(&lock);
	nsyms = 0;
	collect("access", pcs, n, at_access && !e->fn);
	if (freed)
		collect_depot("free", b->free_stack);
	if (b)
		collect_depot("alloc", b->alloc_stack);
	if (suppressed(kind_name(e->kind))) {
		__atomic_add_fetch(&ag.suppressed, 1, __ATOMIC_RELAXED);
		unspin(&lock);
		return;
	}
	__atomic_add_fetch(&ag.errors, 1, __ATOMIC_RELAXED);
	human.n = rec.n = 0;
	put(&human, "==%d== ERROR: ulpt-watch: %s%s%s%s on address 0x%lx at pc 0x%lx thread %d\n",
	    (int)getpid(), kind_name(e->kind), e->pair ? " (" : "", e->pair ? e->pair : "",
	    e->pair ? ")" : "", (unsigned long)e->addr, (unsigned long)e->ip, (int)e->tid);
	if (e->access)
		put(&human, "%s of size %zu at 0x%lx thread %d%s%s\n",
		    e->access == WL_WRITE ? "WRITE" : "READ", e->size, (unsigned long)e->addr,
		    (int)e->tid, e->fn ? " in " : "", e->fn ? e->fn : "");
	else
		put(&human, "%s of 0x%lx thread %d\n", e->fn ? e->fn : "free", (unsigned long)e->addr,
		    (int)e->tid);
	if (e->found)
		put(&human, "found at %s: the block's canary (the bytes next to it) was changed\n",
		    e->found);
	put(&rec, "error\t%s\t%s\t0x%lx\t%zu\t0x%lx\t0x%lx\t%zu\t%s\t1\t%s\n", kind_name(e->kind),
	    acc, (unsigned long)e->addr, e->size, (unsigned long)e->ip,
	    (unsigned long)(b ? b->user : 0), b ? b->size : 0, e->found ? e->found : "access",
	    e->pair ? e->pair : "");
	/* The first frame is the faulting instruction itself, but the caller's return address for
	 * a range given to a libc function. */
	print_frames(&human, &rec, "access");
	if (b) {
		uintptr_t end = b->user + b->size;
		if (e->addr < b->user)
			put(&human, "0x%lx is located %lu bytes before %zu-byte region [0x%lx,0x%lx)\n",
			    (unsigned long)e->addr, (unsigned long)(b->user - e->addr), b->size,
			    (unsigned long)b->user, (unsigned long)end);
		else if (e->addr >= end)
			put(&human, "0x%lx is located %lu bytes after %zu-byte region [0x%lx,0x%lx)\n",
			    (unsigned long)e->addr, (unsigned long)(e->addr - end), b->size,
			    (unsigned long)b->user, (unsigned long)end);
		else
			put(&human, "0x%lx is located %lu bytes inside %zu-byte region [0x%lx,0x%lx)\n",
			    (unsigned long)e->addr, (unsigned long)(e->addr - b->user), b->size,
			    (unsigned long)b->user, (unsigned long)end);
		if (freed) {
			put(&human, "freed by thread %d here:\n", (int)b->free_tid);
			print_frames(&human, &rec, "free");
		}
		put(&human, "allocated by thread %d here:\n", (int)b->alloc_tid);
		print_frames(&human, &rec, "alloc");
	} else {
		put(&human, "0x%lx is not the start of a block this process allocated\n",
		    (unsigned long)e->addr);
	}
	put(&human, "\n");
	gen_rule(&human, kind_name(e->kind));
	put(&rec, "end\n");
	if (write(agent_err_fd(), human.buf, human.n) < 0) {
		/* nothing to do: stderr is gone */
	}
	agent_write(rec.buf, rec.n);
	unspin(&lock);
	agent_halt();               /* halt_on_error: this was the first */
}

/* Leaks, in LeakSanitizer's format: a header before the first group, one paragraph per group
 * of lost blocks with their allocation stack, a summary line. Called at the process's end
 * only (leak.c), from one thread. */
int report_leak(uint32_t stack, uint32_t first, uint64_t bytes, uint64_t count, int indirect)
{
	static int header;
	static struct out human, rec;
	const struct blk *b = &ag.blocks[first];

	nsyms = 0;
	collect_depot("alloc", stack);
	if (suppressed("leak")) {
		ag.suppressed++;
		return 1;
	}
	human.n = rec.n = 0;
	if (!header++)
		put(&human, "==%d== ERROR: ulpt-watch: detected memory leaks\n\n", (int)getpid());
	put(&human, "%s leak of %llu byte(s) in %llu object(s) allocated from:\n",
	    indirect ? "Indirect" : "Direct", (unsigned long long)bytes, (unsigned long long)count);
	put(&rec, "error\tleak\t%s\t0x%lx\t%llu\t0x0\t0x%lx\t%zu\texit\t%llu\n",
	    indirect ? "indirect" : "direct", (unsigned long)b->user, (unsigned long long)bytes,
	    (unsigned long)b->user, b->size, (unsigned long long)count);
	print_frames(&human, &rec, "alloc");
	if (!nsyms)
		put(&human, "    (no stack: allocated before the agent took the heap)\n");
	put(&human, "\n");
	gen_rule(&human, "leak");
	put(&rec, "end\n");
	if (!indirect)
		ag.errors++;            /* a definite leak is an error (error_exitcode) */
	if (write(agent_err_fd(), human.buf, human.n) < 0) {
		/* stderr is gone */
	}
	agent_write(rec.buf, rec.n);
	return 0;
}

void report_leak_summary(uint64_t bytes, uint64_t objects)
{
	char line[160];
	int n;

	if (!objects)
		return;
	n = snprintf(line, sizeof(line), "SUMMARY: ulpt-watch: %llu byte(s) leaked in %llu "
		     "allocation(s).\n\n", (unsigned long long)bytes, (unsigned long long)objects);
	if (n > 0 && write(agent_err_fd(), line, (size_t)n) < 0) {
		/* stderr is gone */
	}
}

/* -v: one line per watchpoint hit. */
void report_hit(const struct wl_hit *h, void *arg)
{
	struct out o;
	char fn[256], loc[512];

	(void)arg;
	o.n = 0;
	in_agent++;
	symbolize(h->ip, 1, fn, sizeof(fn), loc, sizeof(loc), NULL, 0);
	in_agent--;
	const char *name = agent_watch_name(h->id);
	if (name)
		put(&o, "ulpt-watch: %s: %s of %zu bytes at 0x%lx", name,
		    h->kind == WL_WRITE ? "write" : "read", h->size, (unsigned long)h->addr);
	else
		put(&o, "ulpt-watch: watch %d: %s of %zu bytes at 0x%lx", h->id,
		    h->kind == WL_WRITE ? "write" : "read", h->size, (unsigned long)h->addr);
	if (h->kind == WL_WRITE && (h->value_len == 1 || h->value_len == 2 || h->value_len == 4 ||
				    h->value_len == 8)) {
		/* An integer-sized value: as a (little-endian, signed) number. */
		int64_t ov = 0, nv = 0;
		for (size_t i = h->value_len; i-- > 0;) {
			ov = (int64_t)((uint64_t)ov << 8 | h->old_value[i]);
			nv = (int64_t)((uint64_t)nv << 8 | h->new_value[i]);
		}
		unsigned sh = 64 - 8 * (unsigned)h->value_len;
		if (sh) {
			ov = (int64_t)((uint64_t)ov << sh) >> sh;
			nv = (int64_t)((uint64_t)nv << sh) >> sh;
		}
		put(&o, ", %lld -> %lld", (long long)ov, (long long)nv);
	} else if (h->kind == WL_WRITE && h->value_len) {
		put(&o, ", 0x");
		for (size_t i = h->value_len; i-- > 0;)
			put(&o, "%02x", h->old_value[i]);
		put(&o, " -> 0x");
		for (size_t i = h->value_len; i-- > 0;)
			put(&o, "%02x", h->new_value[i]);
	}
	put(&o, ", by %s (%s) thread %d\n", fn, loc, (int)h->tid);
	if (write(agent_err_fd(), o.buf, o.n) < 0) {
		/* stderr is gone */
	}
}
