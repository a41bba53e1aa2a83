/*
 * stack-icount: the instructions the ulpt-watch agent spends on the stack of each malloc and
 * free (its stack_capture, watchlib/preload/stack.c), 16 frames deep, counted by
 * single-stepping (ptrace): exact and repeatable where callgrind cannot run the agent (its
 * 64 GiB reservations exceed Valgrind's address space).
 *
 *   build/bench/stack-icount [AGENT] [PAIRS]
 *
 * runs itself under AGENT (build/watchlib/libulpt-watch-agent.so by default) with --check:
 * PAIRS (200) mallocs and frees at the bottom of a chain of 16 frames (leaf, c1..c11, main,
 * __libc_start_call_main, __libc_start_main, _start). It prints the count of each call after
 * the first 10 (warm: the first ones fill the caches): median, min and max for malloc's and
 * for free's. Needs nm (binutils) and ptrace.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- the traced program: malloc and free 16 frames deep --- */
void *volatile sink;

static __attribute__((noinline)) void leaf(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(24);
		sink = p;
		free(p);
	}
	__asm__ volatile("");
}
#define LINK(a, b) static __attribute__((noinline)) void a(int n) { b(n); __asm__ volatile(""); }
LINK(c1, leaf) LINK(c2, c1) LINK(c3, c2) LINK(c4, c3) LINK(c5, c4) LINK(c6, c5) LINK(c7, c6)
LINK(c8, c7) LINK(c9, c8) LINK(c10, c9) LINK(c11, c10)

/* --- the tracer --- */
static uintptr_t base_of(pid_t pid, const char *path)
{
	char f[64], line[4096], p[4096];
	uintptr_t lo = 0;
	FILE *m;

	snprintf(f, sizeof(f), "/proc/%d/maps", (int)pid);
	if (!(m = fopen(f, "r")))
		return 0;
	while (fgets(line, sizeof(line), m)) {
		unsigned long a, off;
		if (sscanf(line, "%lx-%*x %*s %lx %*s %*d %4095s", &a, &off, p) == 3 && off == 0 &&
		    !strcmp(p, path)) {
			lo = a;
			break;
		}
	}
	fclose(m);
	return lo;
}

static uintptr_t nm_offset(const char *path, const char *sym)
{
	char cmd[4200], line[512], name[256], type;
	unsigned long v, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -- '%s'", path);
	if (!(p = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%lx %c %255s", &v, &type, name) == 3 && !strcmp(name, sym))
			found = v;
	pclose(p);
	return found;
}

static void poke(pid_t pid, uintptr_t a, long v)
{
	ptrace(PTRACE_POKETEXT, pid, (void *)a, (void *)v);
}

static int cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
	return x < y ? -1 : x > y;
}

static void summary(const char *what, unsigned long *v, int n)
{
	if (n <= 0)
		return;
	qsort(v, n, sizeof(*v), cmp);
	printf("%s: %lu instructions (median of %d calls; min %lu, max %lu)\n", what, v[n / 2], n,
	       v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
	char self[4096], given[4096], agent[4096], pairs[16] = "200";
	unsigned long *count, nc = 0;
	uintptr_t fn_off, fn = 0, mainp, ret = 0, sp = 0;
	long fn_orig = 0, main_orig;
	int st, stepping = 0;
	ssize_t n;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--work")) {
		c11(atoi(argv[2]));
		return 0;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0)
		return 2;
	self[n] = 0;
	if (argc > 1)
		snprintf(given, sizeof(given), "%s", argv[1]);
	else
		snprintf(given, sizeof(given), "%s/../watchlib/libulpt-watch-agent.so",
			 dirname(strdup(self)));
	if (argc > 2)
		snprintf(pairs, sizeof(pairs), "%s", argv[2]);
	if (!realpath(given, agent) || !(fn_off = nm_offset(agent, "stack_capture"))) {
		fprintf(stderr, "stack-icount: no stack_capture in %s (nm)\n", agent);
		return 2;
	}
	if (!(count = calloc(2 * (size_t)atoi(pairs) + 16, sizeof(*count))))
		return 2;
	if (!(pid = fork())) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		setenv("LD_PRELOAD", agent, 1);
		setenv("ULPT_WATCH_OPTIONS", "check=1:leaks=none", 1);
		execl(self, self, "--work", pairs, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);                   /* at its exec: main, then the agent's function */
	mainp = base_of(pid, self) + ((uintptr_t)&main - base_of(getpid(), self));
	main_orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)mainp, 0);
	poke(pid, mainp, (main_orig & ~0xffL) | 0xcc);
	ptrace(PTRACE_CONT, pid, 0, 0);
	while (waitpid(pid, &st, 0) == pid && WIFSTOPPED(st)) {
		struct user_regs_struct r;
		int sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);

		ptrace(PTRACE_GETREGS, pid, 0, &r);
		if (stepping) {
			if (!sig)
				count[nc]++;
			if (r.rip == ret && r.rsp > sp) {       /* returned */
				stepping = 0;
				nc++;
				poke(pid, fn, (fn_orig & ~0xffL) | 0xcc);
				ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
			} else {
				ptrace(PTRACE_SINGLESTEP, pid, 0, (void *)(long)sig);
			}
			continue;
		}
		if (!sig && r.rip - 1 == mainp) {
			poke(pid, mainp, main_orig);
			r.rip--;
			ptrace(PTRACE_SETREGS, pid, 0, &r);
			fn = base_of(pid, agent) + fn_off;
			fn_orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)fn, 0);
			poke(pid, fn, (fn_orig & ~0xffL) | 0xcc);
		} else if (!sig && fn && r.rip - 1 == fn) {
			poke(pid, fn, fn_orig);         /* step the call from its first instruction */
			r.rip--;
			ptrace(PTRACE_SETREGS, pid, 0, &r);
			ret = (uintptr_t)ptrace(PTRACE_PEEKDATA, pid, (void *)r.rsp, 0);
			sp = r.rsp;
			stepping = 1;
			ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
			continue;
		}
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
	}
	if (nc < 22) {
		fprintf(stderr, "stack-icount: %lu calls counted: is %s the agent?\n", nc, agent);
		return 1;
	}
	/* Calls alternate: malloc's, free's. */
	unsigned long *m = malloc(nc * sizeof(*m)), *f = malloc(nc * sizeof(*f)), nm = 0, nf = 0;
	for (unsigned long i = 10; i < nc; i++) {
		if (i % 2)
			f[nf++] = count[i];
		else
			m[nm++] = count[i];
	}
	printf("stack_capture of %s, 16 frames:\n", agent);
	summary("malloc", m, (int)nm);
	summary("free", f, (int)nf);
	return 0;
}
