/*
 * The agent's start and end: its settings, the watchpoints of -w, and the result file (its
 * records: watchlib/common/results.inc). Every setting comes in ULPT_WATCH_OPTIONS
 * ("name=value:name=value", the table of options.inc), which ulpt-watch sets, or a user under
 * a plain LD_PRELOAD; a bad one stops the program with one line and exit status 2, as a bad
 * option of the tool does. Without a result file the reports still go to stderr.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "agent.h"

/* The agent's state (agent.h), shared by its files. */
struct agent ag = { .result_fd = -1, .log_fd = -1 };
__thread int in_agent __attribute__((tls_model("initial-exec")));

/* The options, parsed from a copy of ULPT_WATCH_OPTIONS (the program may change its
 * environment): the text values point into it. */
static struct wl_options opts;

/* This thread's id, without a system call at every malloc and free: cached per thread, and
 * forgotten in a forked child, whose id differs (and whose error count starts at 0). */
static __thread pid_t tid_cache __attribute__((tls_model("initial-exec")));

static int open_log(void);

static pid_t self_pid;          /* this process (set at start and in a forked child) */
static pid_t ended;             /* the process that ran agent_finish */

static void forget_tid(void)
{
	pid_t was = tid_cache;     /* the forking thread's (at_fork_prepare asked for it) */

	tid_cache = 0;
	/* The log stays with the thread that forked (docs/linux-api.md), the child's only one. */
	if (ag.heap_log) {
		if (was == ag.log_tid)
			ag.log_tid = agent_tid();
		else
			ag.heap_log = 0;    /* its logged pages are faults in the child */
	}
	self_pid = getpid();
	ag.errors = 0;              /* the child's own verdict (error_exitcode) */
	if (strstr(opts.log_file, "%p")) {
		close(ag.log_fd);
		ag.log_fd = -1;
		open_log();             /* its own file (on failure its reports go to stderr) */
	}
}

pid_t agent_tid(void)
{
	if (!tid_cache)
		tid_cache = (pid_t)syscall(SYS_gettid);
	return tid_cache;
}


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

/* A whole file, NUL-terminated, in watchlib's memory (wl_mem_free it), read with read(2):
 * no stdio, whose FILE would join libc's list of the program's files. NULL with errno set. */
char *agent_read_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	size_t cap = 1 << 16, len = 0;
	char *text = fd >= 0 ? wl_mem_alloc(cap + 1) : NULL;
	ssize_t r = 0;

	if (fd >= 0 && !text)
		errno = ENOMEM;
	while (text && (r = read(fd, text + len, cap - len)) > 0) {
		len += (size_t)r;
		if (len == cap) {
			char *t = wl_mem_realloc(text, 2 * cap + 1);
			if (!t) {
				r = -1;
				errno = ENOMEM;
				break;
			}
			text = t;
			cap *= 2;
		}
	}
	e = errno;
	if (fd >= 0)
		close(fd);
	if (text && r < 0) {
		wl_mem_free(text);
		text = NULL;
	}
	if (text)
		text[len] = 0;
	errno = e;
	return text;
}

/* A line of /proc/self/maps, "lo-hi perms offset major:minor inode   path", into *e (its
 * perms and path point into the line): 1, or 0 if it is not one. Without sscanf, which took
 * a quarter of the leak check's roots in the emulator. */
int agent_maps_line(char *p, struct maps_entry *e)
{
	unsigned long major;

	e->lo = strtoul(p, &p, 16);
	if (*p++ != '-')
		return 0;
	e->hi = strtoul(p, &p, 16);
	e->perms = p + strspn(p, " ");
	p = e->perms + strcspn(e->perms, " ");
	strtoul(p, &p, 16);                     /* the offset */
	major = strtoul(p, &p, 16);
	if (*p++ != ':')
		return 0;
	e->dev = major << 32 | strtoul(p, &p, 16);
	e->ino = strtoul(p, &p, 10);
	e->path = p + strspn(p, " \t");
	return 1;
}

static void say(const char *msg)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "ulpt-watch agent: %s\n", msg);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;

	if (len && write(agent_err_fd(), buf, len) < 0) {
		/* stderr is gone */
	}
}

/* A reservation of address space failed: why, in one line (the usual cause is a limit). */
void agent_no_space(const char *what, unsigned long long bytes)
{
	struct rlimit rl;
	char msg[300];

	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY)
		snprintf(msg, sizeof(msg), "cannot reserve %llu GiB of address space for %s (reserved, "
			 "not used): RLIMIT_AS (ulimit -v) is %llu MiB", bytes >> 30, what,
			 (unsigned long long)rl.rlim_cur >> 20);
	else
		snprintf(msg, sizeof(msg), "cannot reserve %llu GiB of address space for %s: %s",
			 bytes >> 30, what, strerror(errno));
	say(msg);
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
	char *copy = (char *)opts.names;        /* in read_options' buffer (or "": not written) */

	dl_iterate_phdr(main_base_cb, &base);
	/* Names for -v, one per line. */
	if (*copy) {
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

		unsigned m;

		if (sscanf(s, "%*c,%llx,%llu,%3[rw]%n", &addr, &len, mode, &used) < 3 || !used ||
		    wl_parse_mode(mode, &m) < 0) {
			say("malformed watches in " WL_OPTIONS_ENV);
			return;
		}
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
			for (int k = 0; k < info->dlpi_phnum; k++) {
				const ElfW(Phdr) *w = &info->dlpi_phdr[k];
				if (w->p_type == PT_LOAD && (w->p_flags & PF_W)) {
					ag.self_data[0] = (info->dlpi_addr + w->p_vaddr) & ~(uintptr_t)4095;
					ag.self_data[1] = info->dlpi_addr + w->p_vaddr + w->p_memsz;
				}
			}
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

/* The agent stays out of programs this one execs, unless asked; and its settings leave the
 * environment, which the program then sees as it would without the tool but for LD_PRELOAD
 * (perl and python copy it into hashes: a different value changes their accesses). */
static void drop_from_preload(void)
{
	extern char **environ;
	Dl_info self;

	unsetenv(WL_OPTIONS_ENV);
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

/* Where reports go: log_file's descriptor, or stderr. */
int agent_err_fd(void)
{
	return ag.log_fd >= 0 ? ag.log_fd : 2;
}

/* log_file, with each %p replaced by the process id (as Valgrind's --log-file): appended to,
 * so that reports of several runs and of a process's children are kept. */
static int open_log(void)
{
	char path[4096];
	size_t n = 0;

	for (const char *p = opts.log_file; *p && n < sizeof(path) - 24; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid());
			p++;
		} else {
			path[n++] = *p;
		}
	}
	path[n] = 0;
	ag.log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	return ag.log_fd;
}

/* ULPT_WATCH_OPTIONS into opts: a bad value ends the program, as a bad option of the tool. */
static void read_options(void)
{
	const char *v = getenv(WL_OPTIONS_ENV);
	char err[256], *buf;

	wl_options_defaults(&opts);
	if (!v || !*v)
		return;
	buf = wl_mem_alloc(strlen(v) + 1);
	if (!buf) {
		agent_no_space("its own memory", 64ull << 30);
		_exit(2);
	}
	strcpy(buf, v);
	if (wl_options_parse(&opts, buf, err, sizeof(err)) < 0 ||
	    wl_options_check(&opts, "", err, sizeof(err)) < 0) {
		char msg[300];
		snprintf(msg, sizeof(msg), "%s: %s", WL_OPTIONS_ENV, err);
		say(msg);
		_exit(2);
	}
}

/*
 * --heap's (and --check --precise's) delivery, in the main thread. log: it logs its accesses
 * to watched blocks (4,096 records, drained at 2,048); other threads' are faults, counted the
 * same way. fault: the log is set up too, but no page is logged. count: the log is set up, and
 * the count table takes its place (count.c), in its memory; every thread the program starts
 * counts too. The program gets the same address space each way (perl, python and lua hash
 * addresses), so that their counts can be compared (the table is mapped with each, heap.c).
 * --check --precise decides its partial lines' accesses from the log too (fault.c).
 */
static void start_delivery(void)
{
	char msg[128];
	int lr = ulpt_log_start(12, 1u << 11, heap_log_records, NULL);

	if (lr >= 0 && (lr = ulpt_log_set_raw(ag.heap == HEAP_WATCH ? heap_log_raw :
					      heap_check_log_raw, NULL)) < 0)
		ulpt_log_stop();
	ag.log_tid = agent_tid();
	if (ag.heap == HEAP_WATCH && opts.delivery == WL_DELIVERY_COUNT) {
		int cr = heap_count_start();

		if (cr >= 0) {
			ag.heap_count = 1;
			return;
		}
		snprintf(msg, sizeof(msg), "no count table (%s): the access log counts",
			 strerror(-cr));
		say(msg);
	}
	if (lr < 0 && opts.delivery != WL_DELIVERY_FAULT) {
		snprintf(msg, sizeof(msg), "no access log (%s): each access is a fault",
			 strerror(-lr));
		say(msg);
	}
	ag.heap_log = lr >= 0 && opts.delivery != WL_DELIVERY_FAULT;
}

void agent_init(void)
{
	int expect = 0;
	int r;

	in_agent++;         /* before the claim, as decide() does (heap.c) */
	if (!__atomic_compare_exchange_n(&init_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		in_agent--;
		while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
		return;
	}
	pthread_atfork(NULL, NULL, forget_tid);
	ag.pid = self_pid = getpid();
	ag.result_fd = -1;
	read_options();
	/* Only the process ulpt-watch started writes the results, also after it executes
	 * another program; one that a forked child executes (follow_exec) has another pid. */
	if (*opts.result_pid)
		ag.pid = (pid_t)strtol(opts.result_pid, NULL, 10);
	if (*opts.log_file && open_log() < 0) {
		char msg[300];
		snprintf(msg, sizeof(msg), "cannot open the log file %s: %s", opts.log_file,
			 strerror(errno));
		say(msg);
		_exit(2);
	}
	if (*opts.result)
		ag.result_fd = open(opts.result, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	ag.verbose = opts.verbose;
	if (*opts.suppressions) {
		char msg[400];
		if (suppress_load(opts.suppressions, msg, sizeof(msg)) < 0) {
			say(msg);
			_exit(2);
		}
	}
	ag.gen_suppressions = opts.gen_suppressions;
	if (opts.check) {
		ag.heap = HEAP_CHECK;
		ag.align = opts.align;
		ag.redzone_exact = opts.redzone;
		ag.precise = opts.precise;
		ag.bounds = opts.bounds;        /* heap_init keeps it on ULPT only */
		ag.leaks = opts.leaks;
	} else if (opts.heap) {
		ag.heap = HEAP_WATCH;
		ag.heap_kinds = (opts.heap & WL_READ ? ULPT_DENY_R : 0) |
				(opts.heap & WL_WRITE ? ULPT_DENY_W : 0);
	}
	if (!opts.follow_exec)
		drop_from_preload();

	r = ulpt_init(opts.backend == 1 ? ULPT_BACKEND_ULPT :
		      opts.backend == 2 ? ULPT_BACKEND_MPROTECT : ULPT_BACKEND_AUTO);
	if (r >= 0)
		r = wl_init_shared();
	if (r >= 0)
		/* The stub that saves the vector state: with the general-register one, dash's
		 * strlen (glibc's AVX2 one, faulting in the agent's own call on a block's closed
		 * bytes and permitted) came back with a wrong length on ULPT, and every `sh -c`
		 * under --check reported a heap-overflow that memcheck does not. A delivery's
		 * XSAVE and XRSTOR are cheap beside the agent's work for it. */
		r = ulpt_set_handler(agent_fault, NULL, 0);
	if (r == -ENOMEM) {
		/* The view of ULPT's table is 2^39 bytes of address space (docs/linux-api.md). */
		agent_no_space("ULPT's table view", 1ull << 39);
		_exit(2);           /* as for the heap (heap_init): no unwatched run in its place */
	}
	if (r < 0) {
		char msg[128];
		snprintf(msg, sizeof(msg), "cannot start: %s; the program runs unwatched",
			 strerror(-r));
		say(msg);
		ag.heap = HEAP_OFF;
	} else {
		dl_iterate_phdr(libc_cb, NULL);         /* our own code, libc's, the loader's */
		strmem_init();
		stack_init(opts.malloc_context_size);
		if (ag.heap != HEAP_OFF && heap_init() < 0)
			_exit(2);           /* said why: no check rather than a silent one */
		if (ag.heap == HEAP_WATCH || (ag.heap == HEAP_CHECK && ag.precise))
			start_delivery();
		if (ag.heap == HEAP_CHECK)
			signals_init();
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
	agent_init();
	if (ag.ready && *opts.watches) {
		in_agent++;
		add_watches(opts.watches);
		in_agent--;
	}
	if (ag.ready)
		ulpt_gdb_ready();
}

/* One record to the result file (watchlib/common/results.inc). */
#define RESULT(type, ...) do { \
	char line_[256]; \
	agent_write(line_, WL_RESULT_FORMAT(line_, sizeof(line_), type, __VA_ARGS__)); \
} while (0)

/* The result records (watchlib/cli/report.c reads them): at exit, or at a halt. */
static void write_results(void)
{
	struct wl_stats st;

	in_agent++;
	heap_log_sync();
	heap_count_finish();        /* the count table's totals: only the results use them */
	wl_get_stats(&st);
	RESULT(backend, .name = ulpt_backend_name(ulpt_backend()));
	for (int i = 0; i < nspecs; i++) {
		uint64_t rd = 0, wr = 0;
		if (spec_ids[i] >= 0)
			wl_counts(spec_ids[i], &rd, &wr);
		RESULT(watch, .index = (uint64_t)i, .address = spec_addr[i], .length = spec_len[i],
		       .reads = rd, .writes = wr);
	}
	if (ag.heap == HEAP_WATCH)
		RESULT(heap, .allocations = ag.heap_allocs, .reads = ag.heap_reads,
		       .writes = ag.heap_writes);
	if (ag.heap == HEAP_CHECK) {
		RESULT(suppressed, .reports = ag.suppressed);
		if (ag.leaks)
			RESULT(leakcheck, .ns = ag.leak_ns);
	}
	RESULT(stats, .faults = st.faults + ag.faults, .hits = st.hits + ag.hits,
	       .false_faults = st.false_faults + ag.false_faults,
	       .handler_ns = st.handler_ns + wl_ticks_ns(ag.handler_ticks));
	in_agent--;
}

/*
 * halt_on_error: after the first report the process ends at once, as ASan's does, with the
 * status error_exitcode gives (1 without it); the results are written first, but the
 * program's stdio buffers are not flushed (its state is whatever the bad access left).
 */
void agent_halt(void)
{
	if (!opts.halt_on_error)
		return;
	ended = getpid();           /* no leak check: the program's state is not its own */
	if (ended == ag.pid)
		write_results();
	syscall(SYS_exit_group, opts.error_exitcode ? (int)opts.error_exitcode : 1);
}

/*
 * At a process's end: the canaries of the live blocks, the leak check, the results, then
 * error_exitcode, as memcheck's --error-exitcode: a process (a forked child too) that
 * reported an error or a definite leak ends with that status instead of the program's, after
 * stdio's buffers are flushed. Runs once per process: at exit (the agent's destructor, after
 * the program's atexit handlers and destructors), at _exit (interposed below), or at a fatal
 * signal (signals.c).
 */
int agent_finish(void)
{
	pid_t me = getpid();

	/* Once per process; never in a vfork child, which shares its parent's memory (a fork
	 * child has self_pid from the atfork handler). */
	if (!ag.ready || ended == me || me != self_pid)
		return -1;
	ended = me;
	if (ag.heap != HEAP_OFF)
		heap_flush_deferred();
	heap_log_sync();            /* the log's last records (--precise: its errors, first) */
	if (ag.heap == HEAP_CHECK) {
		heap_check_canaries();
		leak_check();
	}
	if (me == ag.pid)
		write_results();
	return opts.error_exitcode && __atomic_load_n(&ag.errors, __ATOMIC_RELAXED) ?
	       (int)opts.error_exitcode : -1;
}

__attribute__((destructor))
static void agent_end(void)
{
	int code = agent_finish();

	if (code >= 0) {
		fflush(NULL);
		_exit(code);
	}
}

/* A program that ends by _exit or _Exit still gets its leak check and results (a direct
 * exit_group system call does not). */
static void finish_and_exit(int status) __attribute__((noreturn));
static void finish_and_exit(int status)
{
	int code = agent_finish();

	syscall(SYS_exit_group, code >= 0 ? code : status);
	__builtin_unreachable();
}

void _exit(int status)
{
	finish_and_exit(status);
}

void _Exit(int status)
{
	finish_and_exit(status);
}
