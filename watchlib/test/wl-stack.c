/*
 * wl-stack: TAP test of the ulpt-watch agent's stack captures at malloc and free
 * (watchlib/preload/stack.c): the frames its rule cache walks are libunwind's own, at each
 * capture of a set of programs' shapes. A table of tests run by tap_run (tests/lib/tap.h:
 * selection by name, --list), each one check in a forked child (tests/lib/tap-fork.h):
 *   wl-stack [NAME...]
 *   wl-stack --list
 * It runs under the agent: started without it, it executes itself again with LD_PRELOAD
 * ($WL_STACK_AGENT, or ../libulpt-watch-agent.so beside it), --check and
 * --malloc-context-size=$WL_STACK_CONTEXT (30 unless set). While a test runs, the agent makes
 * each capture again by libunwind's unw_backtrace and counts the differences
 * (ulpt_watch_stack_verify); a test passes with none, and with most captures walked by the
 * cache rather than handed to libunwind where the cache should serve.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tap-fork.h"

/* The agent's test hooks (stack.c). */
static void (*verify_on)(int on);
static void (*verified)(unsigned long count[4], uintptr_t *a, int *na, uintptr_t *b, int *nb,
			int max);

static unsigned long base[4];
static void *volatile sink;

static void start(void)
{
	uintptr_t a[1], b[1];
	int na, nb;

	verified(base, a, &na, b, &nb, 0);
	verify_on(1);
}

static void frames(const char *what, const uintptr_t *pcs, int n)
{
	printf("# %s (%d frames):\n", what, n);
	for (int i = 0; i < n; i++) {
		Dl_info di;
		const char *fn = dladdr((void *)(pcs[i] - 1), &di) && di.dli_sname ? di.dli_sname : "?";
		printf("#   %2d 0x%lx %s\n", i, (unsigned long)pcs[i], fn);
	}
}

/* After a test's work: captures at least min, none unlike libunwind's, and at least pct% of
 * them walked by the cache. */
static int finish(const char *what, unsigned long min, unsigned pct)
{
	unsigned long c[4];
	uintptr_t a[64], b[64];
	int na, nb, ok;

	verify_on(0);
	verified(c, a, &na, b, &nb, 64);
	for (int i = 0; i < 4; i++)
		c[i] -= base[i];
	ok = c[0] >= min && !c[3] && c[1] * 100 >= c[0] * pct;
	printf("# %s: %lu captures, %lu walked by the rule cache, %lu by libunwind, %lu unlike "
	       "libunwind's\n", what, c[0], c[1], c[2], c[3]);
	if (c[3]) {
		frames("the first unlike: the cache's", a, na);
		frames("libunwind's", b, nb);
	}
	if (c[0] < min)
		printf("# fewer captures than %lu\n", min);
	if (c[1] * 100 < c[0] * pct)
		printf("# fewer than %u%% walked by the cache\n", pct);
	return ok ? 0 : 1;
}

static __attribute__((noinline)) void alloc_here(size_t n)
{
	void *p = malloc(n), *q = calloc(1, n);

	sink = p;
	p = realloc(p, 2 * n);
	sink = p;
	free(q);
	free(p);
	__asm__ volatile("");
}

/* --- deep: recursion through three functions of different frames, past the context --- */
static __attribute__((noinline)) void rec_b(int d);
static __attribute__((noinline)) void rec_a(int d)
{
	volatile char pad[40];

	pad[0] = (char)d;
	if (d <= 0)
		alloc_here(24);
	else
		rec_b(d - 1);
	__asm__ volatile("" ::: "memory");
	(void)pad[0];
}

static __attribute__((noinline)) void rec_c(int d)
{
	volatile char pad[300];

	pad[0] = (char)d;
	if (d <= 0)
		alloc_here(100);
	else
		rec_a(d - 1);
	__asm__ volatile("" ::: "memory");
	(void)pad[0];
}

static __attribute__((noinline)) void rec_b(int d)
{
	if (d <= 0)
		alloc_here(8);
	else if (d % 3)
		rec_c(d - 1);
	else
		rec_a(d - 1);
	__asm__ volatile("");
}

static int t_deep(void)
{
	start();
	for (int d = 0; d < 70; d++)
		rec_b(d);
	return finish("deep", 4 * 70, 95);
}

/* --- libc: its own allocations, and ours from its callbacks --- */
static int cmp_alloc(const void *x, const void *y)
{
	alloc_here(16);
	return *(const int *)x - *(const int *)y;
}

static int cmp_int(const void *x, const void *y)
{
	return *(const int *)x - *(const int *)y;
}

static int t_libc(void)
{
	static int v[20000];
	char *buf = NULL, line[256];
	size_t len = 0;
	FILE *f;

	start();
	for (int i = 0; i < 20000; i++)
		v[i] = (i * 7919) % 20011;
	qsort(v, 16, sizeof(v[0]), cmp_alloc);
	qsort(v, 20000, sizeof(v[0]), cmp_int);     /* its own buffer */
	for (int i = 0; i < 10; i++)
		free(strdup("a string"));
	if ((f = fopen("/proc/self/maps", "r"))) {
		while (fgets(line, sizeof(line), f))
			;
		fclose(f);
	}
	if ((f = open_memstream(&buf, &len))) {
		for (int i = 0; i < 2000; i++)
			fprintf(f, "%d ", i);
		fclose(f);
		free(buf);
	}
	return finish("libc", 20, 90);
}

/* --- rbp: frames whose CFA is on RBP (a variable-length array, a frame pointer, -O0) --- */
static __attribute__((noinline)) void vla(int n, int d);

static __attribute__((noinline, optimize("no-omit-frame-pointer"))) void with_fp(int n, int d)
{
	volatile int x = n;

	if (d > 0)
		vla(n + 1, d - 1);
	else
		alloc_here((size_t)x);
	__asm__ volatile("");
}

static __attribute__((noinline, optimize("O0"))) void at_o0(int n, int d)
{
	if (d > 0)
		with_fp(n, d - 1);
	else
		alloc_here((size_t)n);
}

static __attribute__((noinline)) void vla(int n, int d)
{
	volatile char a[n];

	a[0] = 1;
	if (d % 3 == 0)
		at_o0(n, d);
	else if (d > 0)
		with_fp(n + 2, d - 1);
	else
		alloc_here((size_t)n);
	__asm__ volatile("" ::: "memory");
	(void)a[0];
}

static int t_rbp(void)
{
	start();
	for (int d = 0; d < 40; d++)
		vla(16 + d, d);
	for (int d = 0; d < 20; d++)
		rec_b(d);               /* normal frames above, after RBP ones were cached */
	return finish("rbp", 4 * 60, 95);
}

/* --- signal: in a handler, raised where it is sent and at arbitrary instructions --- */
static volatile sig_atomic_t hits;

static void on_signal(int sig)
{
	(void)sig;
	alloc_here(32);
	hits++;
}

static __attribute__((noinline)) unsigned long spin_work(unsigned long n)
{
	unsigned long x = n;
	char a[64], b[64];

	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		memset(a, (int)x, sizeof(a));
		memcpy(b, a, sizeof(b));
		x += strlen((char *)memchr(b, (int)(x & 0xff), sizeof(b)) ? "ab" : "abc");
	}
	return x;
}

static int t_signal(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	time_t t0 = time(NULL);

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGPROF, &sa, NULL)) {
		printf("# sigaction: %s\n", strerror(errno));
		return 1;
	}
	start();
	for (int i = 0; i < 50; i++)
		raise(SIGUSR1);
	hits = 0;
	setitimer(ITIMER_PROF, &it, NULL);
	while (hits < 300 && time(NULL) - t0 < 20)
		sink = (void *)spin_work(2000);
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &it, NULL);
	printf("# %d signals at arbitrary instructions\n", (int)hits);
	return finish("signal", 4 * 50 + 4 * 100, 50);
}

/* --- altstack: a handler on an alternate stack (libunwind walks it) --- */
static int t_altstack(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	stack_t ss = { .ss_size = 1 << 16 };

	ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK;
	if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL)) {
		printf("# sigaltstack: %s\n", strerror(errno));
		return 1;
	}
	start();
	for (int i = 0; i < 20; i++)
		raise(SIGUSR1);
	for (int d = 0; d < 10; d++)
		rec_b(d);
	return finish("altstack", 4 * 30, 0);
}

/* --- threads: each on its own stack --- */
static void *thread_main(void *arg)
{
	for (int d = 0; d < 40; d++)
		rec_b(d + (int)(intptr_t)arg);
	return NULL;
}

static int t_threads(void)
{
	pthread_t t[4];

	start();
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return finish("threads", 4 * 4 * 40, 95);
}

/* --- dlopen: the loader's own allocations --- */
static int t_dlopen(void)
{
	void *h;

	start();
	for (int i = 0; i < 3; i++) {
		if ((h = dlopen("libz.so.1", RTLD_NOW)))
			dlclose(h);
		h = dlopen("libno-such-library-wl-stack.so", RTLD_NOW);
	}
	return finish("dlopen", 10, 90);
}

/* --- context: deep again with 1, 4 and 255 frames a stack --- */
static int t_context(void)
{
	static const char *const sizes[] = { "1", "4", "255" };
	int bad = 0;

	for (int k = 0; k < 3; k++) {
		char out[4096];
		int fd[2], st = -1;
		ssize_t n = 0, r;
		pid_t pid;

		if (pipe(fd))
			return 1;
		if (!(pid = fork())) {
			dup2(fd[1], 1);
			setenv("WL_STACK_CONTEXT", sizes[k], 1);
			unsetenv("WL_STACK_REEXEC");
			execl("/proc/self/exe", "wl-stack", "deep", (char *)NULL);
			_exit(127);
		}
		close(fd[1]);
		while (n < (ssize_t)sizeof(out) - 1 && (r = read(fd[0], out + n, sizeof(out) - 1 - n)) > 0)
			n += r;
		out[n] = 0;
		close(fd[0]);
		waitpid(pid, &st, 0);
		printf("# --malloc-context-size=%s: deep %s\n", sizes[k],
		       WIFEXITED(st) && !WEXITSTATUS(st) && strstr(out, "\nok 1 ") ? "passes" : "fails");
		if (!WIFEXITED(st) || WEXITSTATUS(st) || !strstr(out, "\nok 1 ")) {
			bad++;
			for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
				printf("#   %s\n", l);
		}
	}
	return bad ? 1 : 0;
}

static void case_deep(void) { tap_forked(t_deep, 120, "deep: recursion to 70 frames, past the context"); }
static void case_libc(void) { tap_forked(t_libc, 120, "libc: its allocations (qsort, strdup, stdio) and ours from its callbacks"); }
static void case_rbp(void) { tap_forked(t_rbp, 120, "rbp: frames with a variable-length array, a frame pointer, -O0"); }
static void case_signal(void) { tap_forked(t_signal, 120, "signal: in a handler, sent and at arbitrary instructions"); }
static void case_altstack(void) { tap_forked(t_altstack, 120, "altstack: a handler on an alternate stack"); }
static void case_threads(void) { tap_forked(t_threads, 120, "threads: 4 threads, each on its stack"); }
static void case_dlopen(void) { tap_forked(t_dlopen, 120, "dlopen: the loader's allocations"); }
static void case_context(void) { tap_forked(t_context, 300, "context: deep with --malloc-context-size 1, 4 and 255"); }

static const struct test_case tests[] = {
	{ "deep", case_deep, 1 },
	{ "libc", case_libc, 1 },
	{ "rbp", case_rbp, 1 },
	{ "signal", case_signal, 1 },
	{ "altstack", case_altstack, 1 },
	{ "threads", case_threads, 1 },
	{ "dlopen", case_dlopen, 1 },
	{ "context", case_context, 1 },
};

/* Runs under the agent: executes itself again with it when started without. */
static void under_agent(char **argv)
{
	char self[4096], agent[4096], opts[128];
	const char *a = getenv("WL_STACK_AGENT"), *c = getenv("WL_STACK_CONTEXT");
	ssize_t n;

	*(void **)&verify_on = dlsym(RTLD_DEFAULT, "ulpt_watch_stack_verify");
	*(void **)&verified = dlsym(RTLD_DEFAULT, "ulpt_watch_stack_verified");
	if (verify_on && verified)
		return;
	if (getenv("WL_STACK_REEXEC")) {
		printf("Bail out! the agent's test hooks are not there (is LD_PRELOAD the agent?)\n");
		exit(2);
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0) {
		printf("Bail out! /proc/self/exe: %s\n", strerror(errno));
		exit(2);
	}
	self[n] = 0;
	if (a)
		snprintf(agent, sizeof(agent), "%s", a);
	else
		snprintf(agent, sizeof(agent), "%s/../libulpt-watch-agent.so", dirname(strdup(self)));
	snprintf(opts, sizeof(opts), "check=1:leaks=none:malloc_context_size=%s", c ? c : "30");
	setenv("LD_PRELOAD", agent, 1);
	setenv("ULPT_WATCH_OPTIONS", opts, 1);
	setenv("WL_STACK_REEXEC", "1", 1);
	execv(self, argv);
	printf("Bail out! cannot execute %s: %s\n", self, strerror(errno));
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return tap_run(tests, TAP_NTESTS(tests), argc - 1, argv + 1);
	under_agent(argv);
	return tap_run(tests, TAP_NTESTS(tests), argc - 1, argv + 1);
}
