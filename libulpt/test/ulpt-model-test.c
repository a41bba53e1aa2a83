/*
 * libulpt's modeled-time calls (ulpt_model_begin(3)), one function per behaviour:
 *   ulpt-model-test off     on a machine without the model: every call says ENOTSUP
 *   ulpt-model-test on      on -cpu ulpt,ulpt-model=on with the default parameters
 *   ulpt-model-test smp     the same on two CPUs: view stores with the other CPU in the process
 *   ulpt-model-test MODE NAME...  only those tests of MODE's table; MODE --list names them
 * TAP on stdout from tap_run (tests/lib/tap.h: the table's shape, the declared checks,
 * selection by name); tests/suites/model.sh runs them.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ulpt.h>
#include "tap.h"

/* The defaults of docs/spec.md 11.1. */
#define D_DELIVER 230
#define D_UIRET 90
#define D_UIRET_PERMIT 90
#define D_VIEW_STORE 100
#define D_REMOTE_SYNC 6000
#define D_ESCALATE 0
#define D_KENTRY 230

static void ok(int cond, const char *what) { tap_ok(cond, "%s", what); }

static uint64_t charges(const struct ulpt_model *m)
{
	return m->deliveries * D_DELIVER + (m->returns - m->returns_permit) * D_UIRET +
	       m->returns_permit * D_UIRET_PERMIT + m->view_stores * D_VIEW_STORE +
	       m->remote_syncs * D_REMOTE_SYNC + m->escalations * D_ESCALATE +
	       m->kernel_entries * D_KENTRY;
}

/* 2 * turns + 1 user instructions. */
static void spin(unsigned long turns)
{
	__asm__ volatile("1: dec %0; jnz 1b" : "+r"(turns) :: "cc");
}

static void test_off(void)
{
	struct ulpt_model m;

	ok(!ulpt_model_available(), "off: ulpt_model_available() is 0");
	ok(ulpt_model_begin() == -ENOTSUP, "off: ulpt_model_begin() is -ENOTSUP");
	ok(ulpt_model_end(&m) == -ENOTSUP, "off: ulpt_model_end() is -ENOTSUP");
}

static void test_calls(void)
{
	ok(ulpt_model_available() == 1, "on: ulpt_model_available() is 1");
	ulpt_model_end(NULL);
	ok(ulpt_model_end(NULL) == -EINVAL, "on: ulpt_model_end() with no region open is -EINVAL");
	ok(ulpt_model_begin() == 0 && ulpt_model_end(NULL) == 0, "on: begin, then end(NULL): 0, 0");
}

/* A region of a known loop: its instructions, and cycles = instructions + charges. */
static void test_count(void)
{
	struct ulpt_model m;
	char what[200];
	int r;

	ulpt_model_begin();
	spin(1000000);
	r = ulpt_model_end(&m);
	snprintf(what, sizeof(what), "on: a 1,000,000-turn loop: %llu instructions at CPL 3 "
		 "(2,000,001 and the calls)", (unsigned long long)m.insns_user);
	ok(r == 0 && m.insns_user >= 2000001 && m.insns_user < 2000001 + 200, what);
	snprintf(what, sizeof(what), "on: cycles (%llu) = CPL 3 instructions x 1 + %llu kernel "
		 "entries x 230, the kernel's instructions left out",
		 (unsigned long long)m.cycles, (unsigned long long)m.kernel_entries);
	ok(m.cycles == m.insns_user + charges(&m) && m.deliveries == 0, what);
}

/* System calls from CPL 3 are kernel entries. */
static void test_syscalls(void)
{
	struct ulpt_model m;
	char what[200];

	ulpt_model_begin();
	for (int i = 0; i < 1000; i++)
		syscall(SYS_getppid);
	ulpt_model_end(&m);
	snprintf(what, sizeof(what), "on: 1,000 system calls: %llu kernel entries (1,000 and "
		 "timer interrupts)", (unsigned long long)m.kernel_entries);
	ok(m.kernel_entries >= 1000 && m.kernel_entries < 1100, what);
}

/* View stores while another thread of the process runs on the other CPU: remote syncs. */
static volatile int stop;

static void *spinner(void *arg)
{
	(void)arg;
	while (!stop)
		;
	return NULL;
}

static void test_remote(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ulpt_model m;
	pthread_t t;
	char what[200];

	if (p == MAP_FAILED || ulpt_init(ULPT_BACKEND_ULPT) || pthread_create(&t, NULL, spinner, NULL)) {
		ok(0, "smp: set up");
		return;
	}
	usleep(100000);                 /* the spinner on the other CPU */
	ulpt_model_begin();
	for (int i = 0; i < 50; i++)
		ulpt_protect(p, 4096, i & 1 ? ULPT_DENY_W : 0);
	ulpt_model_end(&m);
	stop = 1;
	pthread_join(t, NULL);
	ulpt_fini();
	snprintf(what, sizeof(what), "smp: 50 rights changes with the process on both CPUs: %llu view "
		 "stores, %llu remote syncs; cycles (%llu) = instructions + the charges",
		 (unsigned long long)m.view_stores, (unsigned long long)m.remote_syncs,
		 (unsigned long long)m.cycles);
	ok(m.view_stores >= 50 && m.remote_syncs >= 1 && m.cycles == m.insns_user + charges(&m), what);
}

/* ULPT faults in the region: each a delivery and a UIRET with PERMIT, priced. */
static enum ulpt_action permit(struct ulpt_fault *f, void *arg)
{
	(void)f;
	(void)arg;
	return ULPT_PERMIT;
}

static void test_deliveries(void)
{
	volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ulpt_model m;
	char what[200];
	int r;

	if (p == MAP_FAILED || ulpt_init(ULPT_BACKEND_ULPT) || ulpt_set_handler(permit, NULL, 0) ||
	    ulpt_protect((void *)p, 4096, ULPT_DENY_W)) {
		ok(0, "on: ULPT backend set up");
		ok(0, "on: (not run)");
		return;
	}
	ulpt_model_begin();
	for (int i = 0; i < 100; i++)
		p[i * 8] = (char)i;
	r = ulpt_model_end(&m);
	ulpt_fini();
	snprintf(what, sizeof(what), "on: 100 denied writes: %llu deliveries, %llu UIRETs with "
		 "PERMIT of %llu", (unsigned long long)m.deliveries,
		 (unsigned long long)m.returns_permit, (unsigned long long)m.returns);
	ok(r == 0 && m.deliveries == 100 && m.returns == 100 && m.returns_permit == 100, what);
	snprintf(what, sizeof(what), "on: cycles (%llu) = instructions + 100 x (230 + 90) + "
		 "kernel entries x 230", (unsigned long long)m.cycles);
	ok(m.cycles == m.insns_user + charges(&m), what);
}

/* Two runs of one deterministic program (a child): the same modeled cycles within 0.1%. */
static uint64_t child_cycles(void)
{
	struct ulpt_model m;
	pid_t pid;
	int st;

	ulpt_model_begin();
	pid = fork();
	if (pid == 0) {
		char *buf = malloc(1 << 20);
		for (int i = 0; buf && i < 20; i++)
			memset(buf, i, 1 << 20);
		spin(3000000);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	ulpt_model_end(&m);
	return m.cycles;
}

static void test_deterministic(void)
{
	uint64_t a = child_cycles(), b = child_cycles();
	double d = a > b ? (double)(a - b) / (double)a : (double)(b - a) / (double)b;
	char what[200];

	snprintf(what, sizeof(what), "on: two runs of a forked program: %llu and %llu modeled "
		 "cycles, %.4f%% apart (at most 0.1%%)", (unsigned long long)a,
		 (unsigned long long)b, 100 * d);
	ok(a > 6000000 && d <= 0.001, what);
}

static const struct test_case off_tests[] = {
	{ "off", test_off, 3 },
};
static const struct test_case on_tests[] = {
	{ "calls", test_calls, 3 },
	{ "count", test_count, 2 },
	{ "syscalls", test_syscalls, 1 },
	{ "deliveries", test_deliveries, 2 },
	{ "deterministic", test_deterministic, 1 },
};
static const struct test_case smp_tests[] = {
	{ "remote", test_remote, 1 },
};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "off"))
		return tap_run(off_tests, TAP_NTESTS(off_tests), argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "on"))
		return tap_run(on_tests, TAP_NTESTS(on_tests), argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "smp"))
		return tap_run(smp_tests, TAP_NTESTS(smp_tests), argc - 2, argv + 2);
	fprintf(stderr, "usage: ulpt-model-test off|on|smp [NAME...|--list]\n");
	return 2;
}
