/*
 * ulpt-watch: the program's ELF file. Refuses what LD_PRELOAD cannot inject into (not ELF, not
 * an executable, statically linked) and resolves the -w symbols to addresses: absolute for an
 * ET_EXEC program, relative to the load base for an ET_DYN (PIE) one.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct symtab {
	Elf_Data *data;
	size_t count;
	size_t strndx;
};

/* .symtab when the program has one (it also lists static variables), else .dynsym. */
static int find_symtab(Elf *elf, struct symtab *st)
{
	Elf_Scn *scn = NULL, *dyn = NULL, *sym = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !sym)
			sym = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dyn)
			dyn = scn;
	}
	scn = sym ? sym : dyn;
	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -1;
	st->data = elf_getdata(scn, NULL);
	if (!st->data)
		return -1;
	st->count = sh.sh_size / sh.sh_entsize;
	st->strndx = sh.sh_link;
	return 0;
}

static const char *type_name(int type)
{
	switch (type) {
	case STT_FUNC: return "a function";
	case STT_GNU_IFUNC: return "a function";
	case STT_SECTION: return "a section";
	case STT_FILE: return "a file name";
	default: return "not a variable";
	}
}

static void resolve(Elf *elf, const struct symtab *st, int relative, const char *path,
		    struct watch *w)
{
	GElf_Sym sym, first;
	size_t i, nobj = 0;
	int other_type = -1;

	memset(&first, 0, sizeof(first));

	for (i = 0; i < st->count; i++) {
		const char *name;
		int type;

		if (!gelf_getsym(st->data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, st->strndx, sym.st_name);
		if (!name || strcmp(name, w->symbol))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_OBJECT || type == STT_TLS) {
			if (!nobj++)
				first = sym;
		} else if (other_type < 0) {
			other_type = type;
		}
	}
	if (!nobj) {
		if (other_type >= 0)
			die("symbol '%s' in %s is %s, not a variable", w->symbol, path,
			    type_name(other_type));
		die("no symbol '%s' in %s", w->symbol, path);
	}
	if (GELF_ST_TYPE(first.st_info) == STT_TLS)
		die("'%s' is thread-local: thread-local variables cannot be watched", w->symbol);
	if (!w->have_len) {
		if (!first.st_size)
			die("symbol '%s' has size 0: give a length (%s:LEN)", w->symbol, w->symbol);
		w->len = first.st_size;
	}
	w->addr = first.st_value;
	w->relative = relative;
	/* Relative addresses get the base added later; they must at least not wrap. */
	if (w->addr > USER_ADDR_END || w->len > USER_ADDR_END - w->addr)
		die("watch '%s': 0x%llx + %llu bytes ends above user space", w->spec,
		    (unsigned long long)w->addr, (unsigned long long)w->len);
	if (nobj > 1)
		warn("warning: %zu symbols named '%s' in %s; watching the first (0x%llx)", nobj,
		     w->symbol, path, (unsigned long long)w->addr);
}

void check_program_and_resolve(const char *path, struct watch *watches, size_t nwatches)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, nph;
	int fd, interp = 0, need_syms = 0;
	struct symtab st;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		die("libelf is too old: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot read %s: %s", path, strerror(errno));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		die("%s is not an ELF file", path);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		die("%s is not an executable ELF file (e_type %u)", path, (unsigned)eh.e_type);
#if defined(__x86_64__)
	/* The agent is an x86-64 shared object; the dynamic loader would only warn and skip it. */
	if (gelf_getclass(elf) != ELFCLASS64 || eh.e_machine != EM_X86_64)
		die("%s is not an x86-64 program; the agent cannot be injected", path);
#endif
	if (elf_getphdrnum(elf, &nph))
		die("%s: bad ELF program headers: %s", path, elf_errmsg(-1));
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			interp = 1;
	/* No PT_INTERP: no dynamic loader runs, so nothing reads LD_PRELOAD. */
	if (!interp)
		die("%s is statically linked; LD_PRELOAD cannot inject the agent", path);

	for (i = 0; i < nwatches; i++)
		need_syms |= watches[i].symbol != NULL;
	if (need_syms) {
		if (find_symtab(elf, &st))
			die("%s has no symbol table; watch addresses (0xADDR:LEN) instead", path);
		for (i = 0; i < nwatches; i++)
			if (watches[i].symbol)
				resolve(elf, &st, eh.e_type == ET_DYN, path, &watches[i]);
	}
	elf_end(elf);
	close(fd);
}
