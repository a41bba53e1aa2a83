/*
 * The agent's start and end: configuration from the environment ulpt-watch sets, the
 * watchpoints of -w, and the result file (records described in watchlib/cli/ulpt-watch.c).
 *   ULPT_WATCH_SPECS   watches: "<r|a>:<hex address>:<length>:<r|w|rw>" joined by ';'
 *                      (r: relative to the main program's load base, for PIE symbols)
 *   ULPT_WATCH_HEAP    r, w or rw: watch every heap block (--heap)
 *   ULPT_WATCH_CHECK   1: the heap checker (--check); ULPT_WATCH_ALIGN: N or auto;
 *                      ULPT_WATCH_REDZONE: line (default) or exact
 *   ULPT_WATCH_VERBOSE 1: print every hit; ULPT_WATCH_NAMES: the watches' names, one a line
 *   ULPT_WATCH_RESULT  the file to append results to
 *   ULPT_WATCH_FOLLOW_EXEC 1: programs this one execs keep the agent (default: removed from
 *                      LD_PRELOAD, so they run plain)
 *   ULPT_BACKEND       read by libulpt
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"

#define MAX_SPECS 4096

static int spec_ids[MAX_SPECS], nspecs;
static const char *spec_names[MAX_SPECS];
static uintptr_t spec_addr[MAX_SPECS];
static size_t spec_len[MAX_SPECS];
static volatile int init_state;     /* 0, 1 running, 2 done */

void agent_write(const char *s, size_t n)
{
	if (ag.result_fd < 0 || getpid() != ag.pid)
		return;
	while (n) {
		ssize_t w = write(ag.result_fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void say(const char *msg)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "ulpt-watch agent: %s\n", msg);
	if (n > 0 && write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1) < 0) {
		/* stderr is gone */
	}
}

static int main_base_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;                   /* the first object is the program */
}

static void add_watches(const char *specs)
{
	uintptr_t base = 0;
	const char *s = specs;

	dl_iterate_phdr(main_base_cb, &base);
	/* Names for -v (a copy: the program may change its environment). */
	const char *names = getenv("ULPT_WATCH_NAMES");
	char *copy = names ? wl_mem_alloc(strlen(names) + 1) : NULL;
	if (copy) {
		strcpy(copy, names);
		for (int i = 0; i < MAX_SPECS && copy && *copy; i++) {
			spec_names[i] = copy;
			copy = strchr(copy, '\n');
			if (copy)
				*copy++ = 0;
		}
	}
	while (s && *s && nspecs < MAX_SPECS) {
		char rel = *s, mode[4] = "";
		unsigned long long addr, len;
		int used = 0;

		if (sscanf(s, "%*c:%llx:%llu:%3[rw]%n", &addr, &len, mode, &used) < 3 || !used) {
			say("malformed ULPT_WATCH_SPECS");
			return;
		}
		unsigned m = (strchr(mode, 'r') ? WL_READ : 0) | (strchr(mode, 'w') ? WL_WRITE : 0);
		int id = wl_watch((void *)(uintptr_t)(addr + (rel == 'r' ? base : 0)), len, m);
		if (id < 0) {
			char msg[128];
			snprintf(msg, sizeof(msg), "cannot watch 0x%llx: %s", addr, strerror(-id));
			say(msg);
		}
		spec_addr[nspecs] = (uintptr_t)(addr + (rel == 'r' ? base : 0));
		spec_len[nspecs] = (size_t)len;
		spec_ids[nspecs++] = id;
		s += used;
		if (*s == ';')
			s++;
	}
}

/* libc's and the loader's code, whose string routines over-read (fault.c). */
static int libc_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *n = info->dlpi_name, *base = n ? strrchr(n, '/') : NULL;
	int slot;

	(void)size; (void)data;
	base = base ? base + 1 : n;
	if (!base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    (uintptr_t)agent_init - lo < ph->p_memsz) {
			ag.self_text[0] = lo;
			ag.self_text[1] = lo + ph->p_memsz;
		}
	}
	if (!strncmp(base, "libc.so", 7))
		slot = 0;
	else if (!strncmp(base, "ld-linux", 8))
		slot = 1;
	else
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ag.libc_text[slot][0] = info->dlpi_addr + ph->p_vaddr;
			ag.libc_text[slot][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		}
	}
	return 0;
}

/* The name -v gives a watchpoint: its spec as typed, or NULL. */
const char *agent_watch_name(int id)
{
	for (int i = 0; i < nspecs; i++)
		if (spec_ids[i] == id)
			return spec_names[i];
	return NULL;
}

/* The agent stays out of programs this one execs, unless asked. */
static void drop_from_preload(void)
{
	extern char **environ;
	Dl_info self;

	if (!dladdr((void *)agent_init, &self) || !self.dli_fname)
		return;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		size_t len = strlen(*e);
		char *n = wl_mem_alloc(len + 1), *o = n;
		const char *p = *e + 11;
		memcpy(o, "LD_PRELOAD=", 11);
		o += 11;
		while (*p) {
			size_t k = strcspn(p, ": ");
			if (k && !(k == strlen(self.dli_fname) && !strncmp(p, self.dli_fname, k))) {
				if (o > n + 11)
					*o++ = ':';
				memcpy(o, p, k);
				o += k;
			}
			p += k;
			while (*p == ':' || *p == ' ')
				p++;
		}
		*o = 0;
		*e = n;
	}
}

void agent_init(void)
{
	int expect = 0;
	const char *v;
	int r;

	if (!__atomic_compare_exchange_n(&init_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
		return;
	}
	in_agent++;
	ag.pid = getpid();
	ag.result_fd = -1;
	if ((v = getenv("ULPT_WATCH_RESULT")) && *v)
		ag.result_fd = open(v, O_WRONLY | O_APPEND | O_CLOEXEC);
	ag.verbose = (v = getenv("ULPT_WATCH_VERBOSE")) && *v == '1';
	if ((v = getenv("ULPT_WATCH_CHECK")) && *v == '1') {
		ag.heap = HEAP_CHECK;
		v = getenv("ULPT_WATCH_ALIGN");
		ag.align = v && strcmp(v, "auto") ? (unsigned)strtoul(v, NULL, 10) : 0;
		if (ag.align & (ag.align - 1) || ag.align > 4096)
			ag.align = 0;
		ag.redzone_exact = (v = getenv("ULPT_WATCH_REDZONE")) && !strcmp(v, "exact");
	} else if ((v = getenv("ULPT_WATCH_HEAP")) && *v) {
		ag.heap = HEAP_WATCH;
		ag.heap_kinds = (strchr(v, 'r') ? ULPT_DENY_R : 0) | (strchr(v, 'w') ? ULPT_DENY_W : 0);
		if (!ag.heap_kinds)
			ag.heap_kinds = ULPT_DENY_W;
	}
	if (!((v = getenv("ULPT_WATCH_FOLLOW_EXEC")) && *v == '1'))
		drop_from_preload();

	r = ulpt_init(ULPT_BACKEND_AUTO);
	if (r >= 0)
		r = wl_init_shared();
	if (r >= 0)
		r = ulpt_set_handler(agent_fault, NULL, ULPT_HANDLER_GPR_ONLY);
	if (r >= 0 && ulpt_backend() == ULPT_BACKEND_MPROTECT)
		r = wl_decode_init() < 0 ? -ENOMEM : 0;
	if (r < 0) {
		char msg[128];
		snprintf(msg, sizeof(msg), "cannot start: %s; the program runs unwatched",
			 strerror(-r));
		say(msg);
		ag.heap = HEAP_OFF;
	} else {
		dl_iterate_phdr(libc_cb, NULL);         /* our own code, libc's, the loader's */
		strmem_init();
		if (ag.heap != HEAP_OFF)
			heap_init();
		if (ag.verbose)
			wl_set_callback(report_hit, NULL);
		ag.ready = 1;
	}
	in_agent--;
	__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
}

__attribute__((constructor(101)))
static void agent_start(void)
{
	const char *v;

	agent_init();
	if (ag.ready && (v = getenv("ULPT_WATCH_SPECS")) && *v) {
		in_agent++;
		add_watches(v);
		in_agent--;
	}
}

__attribute__((destructor))
static void agent_end(void)
{
	char line[256];
	struct wl_stats st;
	int n;

	if (!ag.ready || getpid() != ag.pid)
		return;
	if (ag.heap == HEAP_CHECK)
		heap_check_canaries();
	in_agent++;
	wl_get_stats(&st);
	n = snprintf(line, sizeof(line), "backend\t%s\n", ulpt_backend_name(ulpt_backend()));
	agent_write(line, (size_t)n);
	for (int i = 0; i < nspecs; i++) {
		uint64_t rd = 0, wr = 0;
		if (spec_ids[i] >= 0)
			wl_counts(spec_ids[i], &rd, &wr);
		n = snprintf(line, sizeof(line), "watch\t%d\t0x%lx\t%zu\t%llu\t%llu\n", i,
			     (unsigned long)spec_addr[i], spec_len[i], (unsigned long long)rd,
			     (unsigned long long)wr);
		agent_write(line, (size_t)n);
	}
	if (ag.heap == HEAP_WATCH) {
		n = snprintf(line, sizeof(line), "heap\t%llu\t%llu\t%llu\n",
			     (unsigned long long)ag.heap_allocs, (unsigned long long)ag.heap_reads,
			     (unsigned long long)ag.heap_writes);
		agent_write(line, (size_t)n);
	}
	n = snprintf(line, sizeof(line), "stats\t%llu\t%llu\t%llu\t%llu\n",
		     (unsigned long long)(st.faults + ag.faults),
		     (unsigned long long)(st.hits + ag.hits),
		     (unsigned long long)(st.false_faults + ag.false_faults),
		     (unsigned long long)(st.handler_ns + ag.handler_ns));
	agent_write(line, (size_t)n);
	in_agent--;
}
