/*
 * The symboliser: a frame's function, source line and module, with elfutils' libelf (and
 * libdw for source lines). Runs with in_agent set, so what libelf and libdw allocate comes
 * from watchlib's memory.
 *
 * libelf (with libz) is loaded at the first symbol a process needs, libdw (with libbz2) at
 * the first source line it looks up, not with the agent: libraries that every program would
 * otherwise map and relocate at its start, most of a short run's cost in an emulator, for
 * reports most runs never make. A dlopen while the loader is amid a dlopen or dlclose (a fault
 * inside ld.so) would abort in ld.so's consistency check, so then the frames go without names.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "stack.h"

static volatile int dwfl_lock;      /* the symbols' (libelf's and libdw's state) */

void symbolize_lock(void)
{
	spin(&dwfl_lock);
}

void symbolize_unlock(void)
{
	unspin(&dwfl_lock);
}

/*
 * Symbols. libelf reads a module's symbol table itself, the one libdw (libdwfl) would choose:
 * the main file's .symtab, else that of its separate debug file found by build id, else its
 * .dynsym. libdw is loaded only for what needs it: source lines (a module with DWARF of its
 * own) and the odd module (the vDSO, a MiniDebugInfo table, prelink, compressed tables),
 * whose symbols it reads as before. Loading libdw, its report of every mapping, a call of it
 * per symbol and qsort's were two thirds of perl's leak check in the emulator (of 100 ms),
 * for frames that in most programs come from stripped system files.
 */
#define FN(name) __typeof__(name) *name;

/* libelf's functions, from dlopen (the libelf.so.1 the agent was built against). */
#define EL_FNS(X) \
	X(elf_version) X(elf_begin) X(elf_end) X(elf_kind) X(elf64_getehdr) X(elf64_getphdr) \
	X(elf_getphdrnum) X(elf_nextscn) X(elf_getscn) X(elf64_getshdr) X(elf_getshdrnum) \
	X(elf_getshdrstrndx) X(elf_getdata) X(elf_strptr) X(gelf_getnote)
static struct {
	int state;                  /* 0: not tried, 1: loaded, -1: not there */
	EL_FNS(FN)
} el;

/* libdw's, likewise (libdw.so.1). */
#define DW_FNS(X) \
	X(dwfl_begin) X(dwfl_report_begin_add) X(dwfl_report_module) X(dwfl_report_end) \
	X(dwfl_module_addrname) X(dwfl_module_getsrc) X(dwfl_module_info) X(dwfl_lineinfo) \
	X(dwfl_module_getsymtab) X(dwfl_module_getsym_info) X(dwfl_module_addrdie) \
	X(dwarf_getscopes) X(dwarf_tag) X(dwarf_attr) X(dwarf_formudata) X(dwarf_getsrcfiles) \
	X(dwarf_filesrc)
static struct {
	int state;
	Dwfl_Callbacks cb;
	DW_FNS(FN)
} dw;
#undef FN

/* dlopen of a library, under dwfl_lock: NULL while the loader is amid a dlopen (*state stays
 * 0: try again at the next report), or (*state -1) when it is not there. */
static void *lib_open(const char *name, int *state)
{
	if (_r_debug.r_state != RT_CONSISTENT)
		return NULL;
	*state = -1;
	return dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

#define GET(lib, name) if (!(*(void **)&lib.name = dlsym(h, #name))) return 0;
#define GET_EL(name) GET(el, name)
#define GET_DW(name) GET(dw, name)

/* 1 once libelf is there; 0 while it cannot be loaded yet. */
static int el_load(void)
{
	void *h;

	if (el.state)
		return el.state > 0;
	if (!(h = lib_open("libelf.so.1", &el.state)))
		return 0;
	EL_FNS(GET_EL)
	el.elf_version(EV_CURRENT);
	el.state = 1;
	return 1;
}

/* 1 once libdw is there; 0 while it cannot be loaded yet. */
static int dw_load(void)
{
	void *h;

	if (dw.state)
		return dw.state > 0;
	if (!(h = lib_open("libdw.so.1", &dw.state)))
		return 0;
	DW_FNS(GET_DW)
	/* Separate debug files by build id, in the local debug directories only: the standard
	 * finder also asks debuginfod for a module it cannot find (perl, most programs), which
	 * loads libcurl and a TLS library whose start waits for the kernel's entropy (most of a
	 * report's first second in the guest), and may go to the network from a checker. */
	if (!(*(void **)&dw.cb.find_elf = dlsym(h, "dwfl_linux_proc_find_elf")) ||
	    !(*(void **)&dw.cb.find_debuginfo = dlsym(h, "dwfl_build_id_find_debuginfo")))
		return 0;
	dw.state = 1;
	return 1;
}
#undef GET
#undef GET_EL
#undef GET_DW

/*
 * A module's symbols sorted by address, read at its first lookup: libdw's
 * dwfl_module_addrname searches the whole symbol table at each call (a libc with its debug
 * file has tens of thousands of symbols), most of a leak report's time once its frames number
 * in the hundreds. The same choice as libdw's: the closest symbol at or below the address
 * that contains it (global before weak before local at one address), else the closest
 * sizeless one.
 */
struct fsym {
	uintptr_t addr, size;
	const char *name;
	int rank;                   /* 2 global, 1 weak, 0 local */
};

/*
 * The process's modules as libdw's dwfl_linux_proc_report finds them: each file's run of
 * consecutive mappings in /proc/self/maps, named as there, and the vDSO as "[vdso: PID]".
 * Read at the first symbol, and again when a pc is in none of them (a library loaded since);
 * a module that is still there keeps what was read of it. Under dwfl_lock.
 */
struct mod {
	uintptr_t lo, hi;
	char *path;
	int read;                   /* its symbols were read */
	int lines;                  /* libdw may find source lines for it */
	struct fsym *s;             /* its symbols by address (NULL: libdw's own search) */
	size_t n;
	Elf *elf[2];                /* its files (the main one, its separate debug file), open */
	int fd[2];
	Dwfl_Module *dwm;           /* libdw's, once needed */
};

static struct {
	struct mod *m;
	int n, read;
} mods;

static void mod_close(struct mod *m)
{
	wl_mem_free(m->s);
	m->s = NULL;
	for (int i = 0; i < 2; i++) {
		el.elf_end(m->elf[i]);
		m->elf[i] = NULL;
		if (m->fd[i] >= 0)
			close(m->fd[i]);
		m->fd[i] = -1;
	}
}

static int mod_add(struct mod **v, int *n, uintptr_t lo, uintptr_t hi, const char *path)
{
	struct mod *t = wl_mem_realloc(*v, (size_t)(*n + 1) * sizeof(**v));
	size_t len = strlen(path) + 1;

	if (!t)
		return -1;
	*v = t;
	t[*n] = (struct mod){ .lo = lo, .hi = hi, .path = wl_mem_alloc(len), .fd = { -1, -1 } };
	if (!t[*n].path)
		return -1;
	memcpy(t[*n].path, path, len);
	(*n)++;
	return 0;
}

/* The modules of maps (its text cut into lines) in *v, as libdw's proc_maps_report makes
 * them (it stops at a line it cannot read): their count. */
static int mods_parse(char *maps, struct mod **v)
{
	char *last = NULL, *next;
	unsigned long vdso = getauxval(AT_SYSINFO_EHDR), low = 0, high = 0, last_dev = 0,
		      last_ino = 0;
	int n = 0;

	for (char *line = maps; *line; line = next) {
		struct maps_entry e;
		unsigned long lo, hi, dev, ino;
		char *path;

		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = 0;
		if (!agent_maps_line(line, &e))
			return n;
		lo = e.lo;
		hi = e.hi;
		dev = e.dev;
		ino = e.ino;
		path = e.path;
		if (lo == vdso && vdso) {
			char name[32];

			if (last)
				mod_add(v, &n, low, high, last);
			last = NULL;
			snprintf(name, sizeof(name), "[vdso: %d]", (int)getpid());
			mod_add(v, &n, lo, hi, name);
		}
		if (path[0] != '/' || (!ino && !dev))
			continue;               /* not a file */
		if (last && ino == last_ino && dev == last_dev) {
			if (strcmp(last, path))
				return n;
			high = hi;              /* the same file's next mapping */
			continue;
		}
		if (last)
			mod_add(v, &n, low, high, last);
		last = path;
		low = lo;
		high = hi;
		last_ino = ino;
		last_dev = dev;
	}
	if (last)
		mod_add(v, &n, low, high, last);
	return n;
}

static void mods_read(void)
{
	char *maps = agent_read_file("/proc/self/maps");
	struct mod *v = NULL;
	int n;

	mods.read = 1;
	if (!maps)
		return;
	n = mods_parse(maps, &v);
	wl_mem_free(maps);
	/* What was read of a module that is still there is kept; the others are closed. */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < mods.n; j++)
			if (mods.m[j].path && mods.m[j].lo == v[i].lo && mods.m[j].hi == v[i].hi &&
			    !strcmp(mods.m[j].path, v[i].path)) {
				wl_mem_free(v[i].path);
				v[i] = mods.m[j];
				mods.m[j].path = NULL;  /* moved */
				break;
			}
	for (int j = 0; j < mods.n; j++)
		if (mods.m[j].path) {
			mod_close(&mods.m[j]);
			wl_mem_free(mods.m[j].path);
		}
	wl_mem_free(mods.m);
	mods.m = v;
	mods.n = n;
}

static struct mod *mod_at(uintptr_t q)
{
	for (int pass = 0; pass < 2; pass++) {
		if (pass || !mods.read)
			mods_read();
		for (int i = 0; i < mods.n; i++)
			if (q >= mods.m[i].lo && q < mods.m[i].hi)
				return &mods.m[i];
	}
	return NULL;
}

/* libdw's module for m (libdw loaded, and m reported to it, at the first need); NULL while
 * libdw cannot be loaded. */
static Dwfl_Module *dw_module(struct mod *m)
{
	static Dwfl *dwfl;

	if (m->dwm || !dw_load())
		return m->dwm;
	if (!dwfl && !(dwfl = dw.dwfl_begin(&dw.cb)))
		return NULL;
	dw.dwfl_report_begin_add(dwfl);
	m->dwm = dw.dwfl_report_module(dwfl, m->path, m->lo, m->hi);
	dw.dwfl_report_end(dwfl, NULL, NULL);
	return m->dwm;
}

/* Sorts symbols by address, stably (equals keep the table's order): a radix sort, a byte at
 * a time (one they all share is skipped). qsort, a call of its comparison function at each
 * step, took as long as reading the symbols in the emulator. */
static int fsym_sort(struct fsym *s, size_t n)
{
	struct fsym *tmp = n > 1 ? wl_mem_alloc(n * sizeof(*s)) : NULL, *a = s, *b = tmp;

	if (n < 2)
		return 0;
	if (!tmp)
		return -1;
	for (int shift = 0; shift < 64; shift += 8) {
		size_t at[256] = { 0 }, sum = 0;
		struct fsym *t;

		for (size_t i = 0; i < n; i++)
			at[a[i].addr >> shift & 255]++;
		if (at[a[0].addr >> shift & 255] == n)
			continue;
		for (int k = 0; k < 256; k++) {
			size_t c = at[k];
			at[k] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[at[a[i].addr >> shift & 255]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	if (a != s)
		memcpy(s, a, n * sizeof(*s));
	wl_mem_free(tmp);
	return 0;
}

/* The symbols libdw reads (the modules libelf alone is not used for). */
static void dw_symbols(struct mod *m, Dwfl_Module *dm)
{
	int n = dw.dwfl_module_getsymtab(dm);
	size_t k = 0;
	struct fsym *s = n > 0 ? wl_mem_alloc((size_t)n * sizeof(*s)) : NULL;

	for (int i = 1; s && i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr = 0;
		GElf_Word shndx = 0;
		const char *name = dw.dwfl_module_getsym_info(dm, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

		if (!name || !*name || shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		s[k++] = (struct fsym){ addr, sym.st_size, name,
					bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0 };
	}
	if (s && fsym_sort(s, k) < 0) {
		wl_mem_free(s);
		s = NULL;                       /* libdw's own search */
	}
	m->s = s;
	m->n = k;
}

/* An ELF file of the process's own class with libelf, or NULL. */
static Elf *elf_open(const char *path, int *fd)
{
	Elf *e;

	if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	e = el.elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (e && el.elf_kind(e) == ELF_K_ELF && el.elf64_getehdr(e))
		return e;
	el.elf_end(e);
	close(*fd);
	*fd = -1;
	return NULL;
}

/* The GNU build id of an ELF file, as libdw finds it: the first in its SHT_NOTE sections. */
static size_t build_id(Elf *e, const unsigned char **id)
{
	for (Elf_Scn *scn = NULL; (scn = el.elf_nextscn(e, scn));) {
		Elf64_Shdr *sh = el.elf64_getshdr(scn);
		Elf_Data *data = sh && sh->sh_type == SHT_NOTE ? el.elf_getdata(scn, NULL) : NULL;
		size_t pos = 0, name, desc;
		GElf_Nhdr nh;

		while (data && (pos = el.gelf_getnote(data, pos, &nh, &name, &desc)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof("GNU") &&
			    !strcmp((const char *)data->d_buf + name, "GNU")) {
				*id = (const unsigned char *)data->d_buf + desc;
				return nh.n_descsz;
			}
	}
	return 0;
}

/* A module's separate debug file where libdw's dwfl_build_id_find_debuginfo looks for it (by
 * build id, in libdw's default debug directory), if its own build id is the module's. */
static Elf *debug_open(Elf *main, int *fd)
{
	char path[sizeof("/usr/lib/debug/.build-id/") + 2 * 64 + sizeof(".debug")];
	const unsigned char *id, *id2;
	size_t len = build_id(main, &id);
	int k;
	Elf *e;

	if (len < 3 || len > 64)
		return NULL;
	k = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < len; i++)
		k += snprintf(path + k, sizeof(path) - k, "%02x", id[i]);
	snprintf(path + k, sizeof(path) - k, ".debug");
	if (!(e = elf_open(path, fd)) || (build_id(e, &id2) == len && !memcmp(id, id2, len)))
		return e;
	el.elf_end(e);
	close(*fd);
	*fd = -1;
	return NULL;
}

/* What libdw would make of a file: the symbol table its load_symtab picks (the last
 * SHT_SYMTAB, else an SHT_DYNSYM), and for a main file (names) whether it has DWARF and
 * whether it is odd. */
struct elfscan {
	Elf_Scn *sym, *xndx;
	int symtab;                 /* sym is an SHT_SYMTAB */
	int dwarf;                  /* DWARF sections (libdw may find source lines in it) */
	int odd;                    /* prelink's undo section, a MiniDebugInfo table */
	uintptr_t vaddr, sync;      /* libdw's load base and synchronization address */
};

static int elf_scan(Elf *e, struct elfscan *f, int names)
{
	size_t shstr, nph;
	Elf64_Phdr *ph = NULL;
	int done = 0;

	*f = (struct elfscan){ 0 };
	if (el.elf64_getehdr(e)->e_type == ET_REL || el.elf_getphdrnum(e, &nph) ||
	    (nph && !(ph = el.elf64_getphdr(e))) || el.elf_getshdrstrndx(e, &shstr) ||
	    !el.elf_nextscn(e, NULL))
		return -1;
	for (size_t i = 0; i < nph; i++)
		if (ph[i].p_type == PT_LOAD) {
			f->vaddr = ph[i].p_vaddr & -ph[i].p_align;
			f->sync = ph[i].p_vaddr + ph[i].p_memsz;
			break;
		}
	for (Elf_Scn *scn = NULL; (scn = el.elf_nextscn(e, scn));) {
		Elf64_Shdr *sh = el.elf64_getshdr(scn);
		const char *name;

		if (!sh)
			continue;
		switch (done ? SHT_NULL : sh->sh_type) {
		case SHT_SYMTAB:
			if (sh->sh_entsize) {
				f->sym = scn;
				f->symtab = 1;
				done = f->xndx != NULL;
			}
			break;
		case SHT_DYNSYM:
			if (!f->symtab && sh->sh_entsize)
				f->sym = scn;
			break;
		case SHT_SYMTAB_SHNDX:
			f->xndx = scn;
			done = f->symtab;
			break;
		}
		if (!names || !(name = el.elf_strptr(e, shstr, sh->sh_name)))
			continue;
		if (sh->sh_type != SHT_NOBITS && (!strncmp(name, ".debug_", 7) ||
		    !strncmp(name, ".zdebug_", 8) || !strncmp(name, ".gnu.debuglto_", 14)))
			f->dwarf = 1;
		if (!strcmp(name, ".gnu.prelink_undo") || !strcmp(name, ".gnu_debugdata"))
			f->odd = 1;
	}
	if (!f->symtab)
		f->xndx = NULL;
	return 0;
}

/* The symbols of f's table, at their addresses as libdw's dwfl_module_getsym_info gives them
 * (bias added to those of allocated sections; x86-64 has no function descriptors for it to
 * resolve), filtered as dw_symbols filters libdw's. */
static int elf_symbols(struct mod *m, Elf *e, const struct elfscan *f, uintptr_t bias)
{
	Elf64_Shdr *sh = el.elf64_getshdr(f->sym);
	Elf64_Shdr *strsh = sh ? el.elf64_getshdr(el.elf_getscn(e, sh->sh_link)) : NULL;
	Elf_Data *sd = el.elf_getdata(f->sym, NULL), *strd, *xd = NULL;
	size_t nsec, n, nx = 0, k = 0;
	const Elf64_Sym *y;
	const Elf32_Word *x = NULL;
	const char *str;
	uint8_t *alloc;

	if (!strsh || sh->sh_entsize != sizeof(*y) ||
	    (sh->sh_flags | strsh->sh_flags) & SHF_COMPRESSED ||
	    !el.elf_strptr(e, sh->sh_link, 0) || !sd || sd->d_type != ELF_T_SYM ||
	    !(strd = el.elf_getdata(el.elf_getscn(e, sh->sh_link), NULL)) ||
	    (f->xndx && !(xd = el.elf_getdata(f->xndx, NULL))) || el.elf_getshdrnum(e, &nsec))
		return -1;
	y = sd->d_buf;
	n = sh->sh_size / sizeof(*y) < sd->d_size / sizeof(*y) ? sh->sh_size / sizeof(*y) :
	    sd->d_size / sizeof(*y);
	str = strd->d_buf;
	if (xd) {
		x = xd->d_buf;
		nx = xd->d_size / sizeof(*x);
	}
	if (!(alloc = wl_mem_alloc(nsec)) || !(m->s = wl_mem_alloc(n * sizeof(*m->s)))) {
		wl_mem_free(alloc);
		return -1;
	}
	for (size_t i = 0; i < nsec; i++) {
		Elf64_Shdr *s = el.elf64_getshdr(el.elf_getscn(e, i));
		alloc[i] = !s || s->sh_flags & SHF_ALLOC;
	}
	for (size_t i = 1; i < n; i++) {
		unsigned st = y[i].st_shndx, type = ELF64_ST_TYPE(y[i].st_info),
			 bind = ELF64_ST_BIND(y[i].st_info);
		size_t shndx = st == SHN_XINDEX ? (x ? x[i] : 0) : st;
		uintptr_t addr = y[i].st_value;

		if (x && i >= nx)
			continue;               /* libelf finds no such symbol */
		if ((st == SHN_XINDEX || (st < SHN_LORESERVE && st != SHN_UNDEF)) &&
		    shndx < nsec && !alloc[shndx])
			shndx = (size_t)-1;     /* not allocated: libdw's -1, the value as it is */
		else if (st != SHN_ABS && st != SHN_UNDEF && st != SHN_COMMON)
			addr += bias;
		if (y[i].st_name >= strd->d_size || !str[y[i].st_name] || shndx == SHN_UNDEF ||
		    type == STT_SECTION || type == STT_FILE || type == STT_TLS)
			continue;
		m->s[k++] = (struct fsym){ addr, y[i].st_size, str + y[i].st_name,
					   bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0 };
	}
	wl_mem_free(alloc);
	m->n = k;
	return fsym_sort(m->s, k);
}

/* A module's symbols through libelf: -1 for one left to libdw. m->lines: whether libdw may
 * find source lines for it (it looks in the module's own DWARF, or in a separate debug file
 * when the module's .symtab is the main file's). */
static int elf_module(struct mod *m)
{
	struct elfscan f, g;
	struct stat st;
	Elf *e, *de;

	/* As libdw's dwfl_linux_proc_find_elf: a regular file only (a device might block). */
	if (m->path[0] != '/' || stat(m->path, &st) || !S_ISREG(st.st_mode) ||
	    !(e = m->elf[0] = elf_open(m->path, &m->fd[0])) || elf_scan(e, &f, 1) || f.odd)
		return -1;
	de = m->elf[1] = f.symtab && f.dwarf ? NULL : debug_open(e, &m->fd[1]);
	m->lines = f.symtab ? f.dwarf || de : f.dwarf && !de;
	if (f.symtab)
		return elf_symbols(m, e, &f, m->lo - f.vaddr);
	if (de)
		return elf_scan(de, &g, 0) || !g.symtab ? -1 :
		       elf_symbols(m, de, &g, m->lo - f.vaddr + f.sync - g.sync);
	return f.sym ? elf_symbols(m, e, &f, m->lo - f.vaddr) : -1;
}

/* Reads a module's symbols at its first lookup: 1, or 0 while libdw, which it needs, cannot
 * be loaded yet (as before libelf had it, the frame then goes without a name). */
static int mod_read(struct mod *m)
{
	Dwfl_Module *dm;

	if (m->read)
		return 1;
	if (elf_module(m) < 0) {
		mod_close(m);
		if (!(dm = dw_module(m)) && !dw.state)
			return 0;
		if (dm)
			dw_symbols(m, dm);
		m->lines = 1;           /* libdw's files tell, at each frame */
	}
	m->read = 1;
	return 1;
}

static const char *addr_name(const struct mod *m, uintptr_t q)
{
	const struct fsym *s = m->s, *sizeless = NULL;
	size_t lo = 0, hi = m->n, j;

	if (!s)
		return m->dwm ? dw.dwfl_module_addrname(m->dwm, q) : NULL;
	while (lo < hi) {                       /* the first symbol above q */
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].addr <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Back through the closest addresses (a few: nested and overlapping symbols are rare). At
	 * one address: the global before the weak before the local, the larger before the
	 * smaller, else the table's first. */
	for (j = lo; j > 0 && lo - j < 64; ) {
		const struct fsym *best = NULL, *less = NULL;
		size_t g = j - 1;

		while (g > 0 && s[g - 1].addr == s[j - 1].addr)
			g--;
		for (size_t k = g; k < j; k++) {
			if (!s[k].size) {
				if (!less || s[k].rank > less->rank)
					less = &s[k];
			} else if (q - s[k].addr < s[k].size && (!best || s[k].rank > best->rank ||
				   (s[k].rank == best->rank && s[k].size > best->size))) {
				best = &s[k];
			}
		}
		if (best)
			return best->name;
		if (!sizeless)
			sizeless = less;
		j = g;
	}
	return sizeless ? sizeless->name : NULL;
}

/*
 * Where q, in code inlined into its function, is in that function: the call site of the
 * outermost inlined call (a _FORTIFY_SOURCE program's memcpy is an inline wrapper of
 * __memcpy_chk: its line is a header's, its call site the program's). 0, or -1 when q is
 * in no inlined code.
 */
static int call_site(Dwfl_Module *dm, Dwarf_Addr q, char *loc, size_t loclen)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dw.dwfl_module_addrdie(dm, q, &bias), *scopes = NULL, *at = NULL;
	Dwarf_Attribute a;
	Dwarf_Word file, line;
	Dwarf_Files *files;
	size_t nfiles;
	const char *name = NULL;
	int n = cu ? dw.dwarf_getscopes(cu, q - bias, &scopes) : -1;

	/* Innermost first: the inlined calls up to the function that holds them. */
	for (int i = 0; i < n && dw.dwarf_tag(&scopes[i]) != DW_TAG_subprogram; i++)
		if (dw.dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			at = &scopes[i];
	n = at && !dw.dwarf_formudata(dw.dwarf_attr(at, DW_AT_call_file, &a), &file) &&
	    !dw.dwarf_formudata(dw.dwarf_attr(at, DW_AT_call_line, &a), &line) &&
	    !dw.dwarf_getsrcfiles(cu, &files, &nfiles) &&
	    (name = dw.dwarf_filesrc(files, file, NULL, NULL)) ? 0 : -1;
	if (!n)
		snprintf(loc, loclen, "%s:%d", name, (int)line);
	free(scopes);
	return n;
}

/* "function file:line" of pc (a return address if not the first frame), and the path of its
 * module in mod (when asked: "" if not known). */
void symbolize(uintptr_t pc, int first, char *fn, size_t fnlen, char *loc, size_t loclen,
	       char *modpath, size_t modlen)
{
	uintptr_t q = first ? pc : pc - 1;
	struct mod *m;

	snprintf(fn, fnlen, "?");
	snprintf(loc, loclen, "?");
	if (modpath)
		*modpath = 0;
	spin(&dwfl_lock);
	m = el_load() ? mod_at(q) : NULL;
	if (m && mod_read(m) && (!m->lines || dw_module(m) || dw.state)) {
		const char *name = addr_name(m, q), *base = strrchr(m->path, '/');
		Dwfl_Line *line = NULL;
		int lineno = 0;

		/* Source lines from the module's own DWARF (a program or library built with -g);
		 * a system library's, in a separate debug package (libc6-dbg), cost a
		 * decompression of that whole package's DWARF at the first line looked up, ten
		 * times a leak check's own time: its frames get the function's name only. */
		if (m->lines && m->dwm) {
			const char *mod = NULL, *debugfile = NULL;

			dw.dwfl_module_info(m->dwm, NULL, NULL, NULL, NULL, NULL, &mod, &debugfile);
			if (!debugfile || (mod && !strcmp(debugfile, mod)))
				line = dw.dwfl_module_getsrc(m->dwm, q);
		}
		if (modpath)
			snprintf(modpath, modlen, "%s", m->path);
		if (name)
			snprintf(fn, fnlen, "%s", name);
		if (line && call_site(m->dwm, q, loc, loclen)) {
			const char *file = dw.dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
			if (file)
				snprintf(loc, loclen, "%s:%d", file, lineno);
		} else if (!line) {
			/* A function without a name (a stripped program's static one) is told by
			 * its offset in the module, as ASan prints it: a suppression can name it. */
			if (name)
				snprintf(loc, loclen, "%s", base ? base + 1 : m->path);
			else
				snprintf(loc, loclen, "%s+0x%lx", base ? base + 1 : m->path,
					 (unsigned long)(pc - m->lo));
		}
	}
	unspin(&dwfl_lock);
}
