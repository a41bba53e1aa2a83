/*
 * ulpt-watch: runs an unmodified, dynamically linked program with the watchlib agent
 * (libulpt-watch-agent.so) preloaded, and exits with the program's exit status.
 *
 *     ulpt-watch [options] -- PROGRAM [ARGS...]
 *
 * This front end only checks the input, resolves -w symbols, passes the settings to the agent
 * in the environment (ULPT_WATCH_OPTIONS, from the table of watchlib/common/options.inc),
 * waits and reports what the agent wrote to its result file.
 * Every bad input is refused with one line on stderr and exit status 2 before the program starts.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define VERSION "0.1.0"
#define AGENT_NAME "libulpt-watch-agent.so"

/* The result file, removed by die() too so a refused run leaves nothing behind. */
static char *result_path;

/* The program's pid for the SIGTERM/SIGHUP forwarder; 0 while there is none. */
static volatile sig_atomic_t child_pid;

/* Messages carry user input (specs, paths): control characters would break the
 * one-line-per-message rule, so they are shown as '?'. */
static void vmessage(const char *fmt, va_list ap)
{
	char *msg = NULL, *p;

	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs("ulpt-watch: out of memory\n", stderr);
		return;
	}
	for (p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	fprintf(stderr, "ulpt-watch: %s\n", msg);
	free(msg);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
	if (result_path)
		unlink(result_path);
	exit(2);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(fmt, ap);
	va_end(ap);
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

void *xrealloc(void *p, size_t n, size_t size)
{
	p = reallocarray(p, n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		die("out of memory");
	return s;
}

/* The table's options on the command line (options.inc): each a long option, getopt's value
 * OPT_TABLE + its index. */
enum { OPT_JSON = 256, OPT_VERSION, OPT_TABLE };
static const struct {
	const char *name, *meta, *help;
	int is_bool, optional;      /* --name alone: 1 for a bool, w for --heap */
} table[] = {
#define WL_OPTION(nm, type, def, mt, hl) \
	{ #nm, mt, hl, !strcmp(#type, "bool"), !strcmp(#type, "bool") || !strcmp(#nm, "heap") },
#define WL_INTERNAL(nm, type, def, hl)
#include "options.inc"
#undef WL_OPTION
#undef WL_INTERNAL
};
#define NTABLE (sizeof(table) / sizeof(table[0]))

/* The option's command-line spelling: underscores as dashes. */
static const char *dashed(const char *name)
{
	static char buf[NTABLE][32];
	size_t i = 0;

	for (size_t k = 0; k < NTABLE; k++) {
		if (table[k].name != name)
			continue;
		for (i = 0; name[i] && i < sizeof(buf[k]) - 1; i++)
			buf[k][i] = name[i] == '_' ? '-' : name[i];
		buf[k][i] = 0;
		return buf[k];
	}
	return name;
}

static void usage(FILE *out)
{
	fputs("Usage: ulpt-watch [options] [--] PROGRAM [ARGS...]\n"
	      "Run a dynamically linked PROGRAM with exact watchpoints (watchlib agent).\n"
	      "\n"
	      "  -w, --watch SPEC       watch SYMBOL[:LEN][/r|/w|/rw] or 0xADDR:LEN[/mode]\n"
	      "                         (repeatable; mode defaults to w)\n", out);
	for (size_t k = 0; k < NTABLE; k++) {
		char left[64];
		int n = snprintf(left, sizeof(left), "  %s--%s%s%s%s",
				 strcmp(table[k].name, "verbose") ? "    " : "-v, ", dashed(table[k].name),
				 table[k].meta ? (table[k].optional ? "[=" : "=") : "",
				 table[k].meta ? table[k].meta : "",
				 table[k].meta && table[k].optional ? "]" : "");
		fprintf(out, n < 25 ? "%-25s%s\n" : "%s\n%25s%s\n", left, n < 25 ? table[k].help : "",
			table[k].help);
	}
	fputs("      --json FILE        write a JSON report to FILE instead of the summary\n"
	      "  -h, --help             this help\n"
	      "      --version          the version\n"
	      "\n"
	      "Each option but -w and --json is also NAME=VALUE in ULPT_WATCH_OPTIONS\n"
	      "(NAME=VALUE:NAME=VALUE, an underscore for a dash), for the agent under a plain\n"
	      "LD_PRELOAD; this tool sets it.\n"
	      "Exit status: PROGRAM's; 128+N if a signal N killed it; 127 if it could not be\n"
	      "executed; 2 for bad input. ULPT_WATCH_AGENT names the agent to use.\n", out);
}

static void parse_options(int argc, char **argv, struct options *opt)
{
	static struct option longopts[NTABLE + 6];
	char err[256];
	size_t nl = 0;
	int c;

	for (size_t k = 0; k < NTABLE; k++)
		longopts[nl++] = (struct option){ dashed(table[k].name),
			table[k].optional ? optional_argument : required_argument, NULL,
			OPT_TABLE + (int)k };
	longopts[nl++] = (struct option){ "watch", required_argument, NULL, 'w' };
	longopts[nl++] = (struct option){ "json", required_argument, NULL, OPT_JSON };
	longopts[nl++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[nl++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	wl_options_defaults(&opt->set);
	opterr = 0;             /* getopt's own messages name argv[0], not "ulpt-watch:" */
	/* '+': the program's own options are not ours; ':': tell missing values apart. */
	while ((c = getopt_long(argc, argv, "+:w:vh", longopts, NULL)) != -1) {
		const char *arg = argv[optind - 1];

		if (c == 'v')
			c = OPT_TABLE + WL_OPT_verbose;
		if (c >= OPT_TABLE) {
			size_t k = (size_t)(c - OPT_TABLE);
			const char *v = optarg ? optarg : table[k].is_bool ? "1" : "w";

			if (wl_option_set(&opt->set, dashed(table[k].name), strlen(table[k].name), v,
					  "--", err, sizeof(err)) < 0)
				die("%s", err);
			continue;
		}
		switch (c) {
		case 'w':
			opt->watches = xrealloc(opt->watches, opt->nwatches + 1,
						sizeof(*opt->watches));
			parse_spec(optarg, &opt->watches[opt->nwatches++]);
			break;
		case OPT_JSON:
			opt->json = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(fflush(stdout) ? 1 : 0);
		case OPT_VERSION:
			printf("ulpt-watch (watchlib) %s\n", VERSION);
			exit(fflush(stdout) ? 1 : 0);
		case ':':
			if (optopt > 0 && optopt < 256)
				die("option '-%c' needs a value (try --help)", optopt);
			die("option '%s' needs a value (try --help)", arg);
		default:
			if (optopt > 0 && optopt < 256 && strncmp(arg, "--", 2))
				die("unknown option '-%c' (try --help)", optopt);
			if (optopt >= 256)
				die("option '%s' takes no value (try --help)", arg);
			/* glibc also lands here for an ambiguous abbreviation (--h). */
			die("unknown or ambiguous option '%s' (try --help)", arg);
		}
	}
	if (optind >= argc)
		die("missing PROGRAM (usage: ulpt-watch [options] -- PROGRAM [ARGS...])");
	opt->argc = argc - optind;
	opt->argv = argv + optind;
	if (wl_options_check(&opt->set, "--", err, sizeof(err)) < 0)
		die("%s", err);
}

/* 0 for a runnable file; otherwise dies, or when quiet returns 1 (missing) or 2 (not runnable). */
static int check_executable(const char *path, int quiet)
{
	struct stat st;

	if (stat(path, &st)) {
		if (quiet)
			return 1;
		if (errno == ENOENT || errno == ENOTDIR)
			die("program '%s' not found", path);
		die("cannot run %s: %s", path, strerror(errno));
	}
	if (S_ISDIR(st.st_mode)) {
		if (quiet)
			return 2;
		die("%s is a directory", path);
	}
	if (!S_ISREG(st.st_mode) || access(path, X_OK)) {
		if (quiet)
			return 2;
		die("%s is not executable", path);
	}
	return 0;
}

/* Like execvp: a name with a '/' is a path, anything else is looked up in PATH (default
 * /bin:/usr/bin; an empty entry is the current directory), skipping files we cannot run. */
static char *find_program(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char *noexec = NULL;

	if (!name[0])
		die("missing PROGRAM (an empty name)");
	if (strchr(name, '/')) {
		check_executable(name, 0);
		return xstrdup(name);
	}
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p = end + 1) {
		size_t dirlen;
		char *cand;
		int r;

		end = strchr(p, ':');
		dirlen = end ? (size_t)(end - p) : strlen(p);
		cand = dirlen ? xasprintf("%.*s/%s", (int)dirlen, p, name) : xasprintf("./%s", name);
		r = check_executable(cand, 1);
		if (!r)
			return cand;
		if (r == 2 && !noexec)
			noexec = cand;
		else
			free(cand);
		if (!end)
			break;
	}
	if (noexec)
		die("%s is not executable", noexec);
	die("program '%s' not found in PATH", name);
}

static char *self_dir(void)
{
	size_t cap = 256;

	for (;;) {
		char *buf = xcalloc(cap, 1), *slash;
		ssize_t n = readlink("/proc/self/exe", buf, cap);

		if (n < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)n < cap) {
			buf[n] = '\0';
			slash = strrchr(buf, '/');
			if (!slash) {
				free(buf);
				return NULL;
			}
			*slash = '\0';
			return buf;
		}
		free(buf);      /* truncated: grow and retry */
		cap *= 2;
	}
}

static int is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, R_OK);
}

/* An absolute path (the program may chdir before it execs with --follow-exec). */
static char *find_agent(void)
{
	const char *env = getenv("ULPT_WATCH_AGENT");
	char *found = NULL, *abs, *dir;

	if (env) {
		if (!is_file(env))
			die("agent '%s' not found (ULPT_WATCH_AGENT)", env);
		found = xstrdup(env);
	} else if ((dir = self_dir())) {
		char *cand[2] = {
			xasprintf("%s/%s", dir, AGENT_NAME),
			xasprintf("%s/../lib/ulpt/%s", dir, AGENT_NAME),
		};

		if (is_file(cand[0]))
			found = cand[0];
		else if (is_file(cand[1]))
			found = cand[1];
		if (!found)
			die("agent %s not found in %s or %s/../lib/ulpt; set ULPT_WATCH_AGENT",
			    AGENT_NAME, dir, dir);
		free(cand[found == cand[0]]);
		free(dir);
	} else {
		die("cannot find the agent (no /proc/self/exe); set ULPT_WATCH_AGENT");
	}
	abs = realpath(found, NULL);
	if (!abs)
		die("agent '%s': %s", found, strerror(errno));
	free(found);
	/* LD_PRELOAD splits at colons and blanks; such a path would load something else. */
	if (strpbrk(abs, ": \t\n"))
		die("agent path '%s' contains a colon or blank, which LD_PRELOAD cannot carry",
		    abs);
	return abs;
}

static char *make_result_file(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path;
	int fd;

	if (!tmp || !tmp[0])
		tmp = "/tmp";
	path = xasprintf("%s/ulpt-watch.XXXXXX", tmp);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		die("cannot create a result file in %s: %s", tmp, strerror(errno));
	close(fd);
	return path;
}

/*
 * The watches for the agent, in -w order (its "watches" and "names" options):
 *   *specs: "<r|a>,<addr-hex>,<len>,<mode>" joined by ';';
 *   *names: the specs as typed, one per line (used with -v), so hits name their watch.
 */
static void watches_env(const struct options *opt, char **specs, char **names)
{
	size_t slen = 0, nlen = 0;
	FILE *sm = open_memstream(specs, &slen), *nm = open_memstream(names, &nlen);

	if (!sm || !nm)
		die("out of memory");
	for (size_t i = 0; i < opt->nwatches; i++) {
		const struct watch *w = &opt->watches[i];

		fprintf(sm, "%s%c,0x%llx,%llu,%s", i ? ";" : "", w->relative ? 'r' : 'a',
			(unsigned long long)w->addr, (unsigned long long)w->len,
			wl_mode_name(w->mode));
		if (i)
			fputc('\n', nm);
		for (const char *p = w->spec; *p; p++)
			fputc(*p == '\n' ? '?' : *p, nm);
	}
	if (fclose(sm) || fclose(nm))
		die("out of memory");
}

static void forward_signal(int sig)
{
	int saved = errno;

	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
	errno = saved;
}

/* In the child: the agent's settings, all in ULPT_WATCH_OPTIONS (set whole, so a value left
 * in the environment, say by an outer ulpt-watch, does not leak into this run); the agent
 * picks the backend itself, so ULPT_BACKEND goes. */
/*
 * The program's environment, set here before the vfork: the agent, its options, no
 * ULPT_BACKEND. result_pid, the program's pid (the child's after exec), is known only in the
 * child, which under vfork must not allocate: the options hold ten zeroes there, and *pid_at
 * is where, for the child to write its pid over them.
 */
static void child_environment(struct options *opt, const char *agent, const char *specs,
			      const char *names, char **pid_at)
{
	const char *old = getenv("LD_PRELOAD");
	char *preload = old && old[0] ? xasprintf("%s:%s", agent, old) : xstrdup(agent);
	char *val, *alt, *env;
	size_t n, padded, k = 0;

	setenv("LD_PRELOAD", preload, 1);
	opt->set.result = result_path;
	opt->set.watches = specs;
	opt->set.names = opt->set.verbose ? names : "";
	/* Padded with empty items (':') to a multiple of 4 KiB: the program's stack starts below
	 * its environment, and some programs hash stack addresses (lua seeds its strings' hash
	 * with one), so the settings' length must not move it: runs with different options (a
	 * --json path, --delivery) then make the same accesses. */
	opt->set.result_pid = "1111111111";
	n = wl_options_format(&opt->set, NULL, 0);
	alt = xcalloc(n + 1, 1);
	wl_options_format(&opt->set, alt, n + 1);
	opt->set.result_pid = "0000000000";
	n = wl_options_format(&opt->set, NULL, 0);
	padded = (n + 4096) & ~(size_t)4095;
	env = xcalloc(sizeof(WL_OPTIONS_ENV) + padded, 1);
	val = env + sizeof(WL_OPTIONS_ENV);
	memcpy(env, WL_OPTIONS_ENV "=", sizeof(WL_OPTIONS_ENV));
	wl_options_format(&opt->set, val, n + 1);
	memset(val + n, ':', padded - 1 - n);
	while (val[k] == alt[k])        /* the placeholder: where the two formats differ */
		k++;
	*pid_at = val + k;
	free(alt);
	putenv(env);                    /* the string itself: the child's write reaches it */
	unsetenv("ULPT_BACKEND");
}

/* The child's pid over the placeholder's ten digits (no allocation: vfork). */
static void put_pid(char *at)
{
	unsigned v = (unsigned)getpid();

	for (int i = 9; i >= 0; i--, v /= 10)
		at[i] = (char)('0' + v % 10);
}

/*
 * The program's process, with vfork: no copy of this process's page tables for a child that
 * only executes the program (a fifth of a fork's cost in the kernel, each run). The child
 * allocates nothing and returns from nothing: it restores the signals' actions (old: SIGINT,
 * SIGQUIT, SIGTERM, SIGHUP) and mask, and tells the parent exec's errno through the pipe.
 */
static pid_t start_child(const char *prog, char **argv, const int pipefd[2], char *pid_at,
			 const sigset_t *oldmask, const struct sigaction old[4])
{
	static const int sigs[4] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
	pid_t pid = vfork();

	if (pid == 0) {
		int e;

		for (int i = 0; i < 4; i++)
			sigaction(sigs[i], &old[i], NULL);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		close(pipefd[0]);
		put_pid(pid_at);
		execv(prog, argv);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			e = 0;  /* the parent then just sees exit status 127 */
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	struct sigaction fwd = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
	struct sigaction old_act[4];
	struct options opt = {0};
	struct report rep;
	struct rusage ru;
	sigset_t fwdset, oldmask;
	char *prog, *agent, *specs, *names, *pid_at;
	int status, code, exec_errno = 0, pipefd[2];
	FILE *json = NULL;
	pid_t pid;
	ssize_t n;

	parse_options(argc, argv, &opt);
	prog = find_program(opt.argv[0]);
	check_program_and_resolve(prog, opt.watches, opt.nwatches);
	agent = find_agent();
	watches_env(&opt, &specs, &names);
	result_path = make_result_file();
	if (*opt.set.suppressions && access(opt.set.suppressions, R_OK))
		die("cannot read the suppressions file %s: %s", opt.set.suppressions, strerror(errno));
	if (*opt.set.log_file) {
		/* The agent opens it in each process (%p: its pid); its directory must take it. */
		char *dir = xstrdup(opt.set.log_file), *slash = strrchr(dir, '/');
		const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
		if (access(d, W_OK | X_OK))
			die("cannot write the log file %s: %s", opt.set.log_file, strerror(errno));
		free(dir);
	}
	if (opt.json) {
		json = fopen(opt.json, "we");
		if (!json)
			die("cannot write %s: %s", opt.json, strerror(errno));
	}
	/* Learns whether execv failed: the write end closes on a successful exec. */
	if (pipe2(pipefd, O_CLOEXEC))
		die("pipe: %s", strerror(errno));

	/* Like system(3): the terminal's SIGINT/SIGQUIT reach the program, which decides; we stay
	 * to report. SIGTERM/SIGHUP are blocked until child_pid is set, then forwarded. */
	sigemptyset(&fwdset);
	sigaddset(&fwdset, SIGTERM);
	sigaddset(&fwdset, SIGHUP);
	sigemptyset(&fwd.sa_mask);
	sigemptyset(&ign.sa_mask);
	sigprocmask(SIG_BLOCK, &fwdset, &oldmask);
	sigaction(SIGINT, &ign, &old_act[0]);
	sigaction(SIGQUIT, &ign, &old_act[1]);
	sigaction(SIGTERM, &fwd, &old_act[2]);
	sigaction(SIGHUP, &fwd, &old_act[3]);
	fflush(NULL);
	child_environment(&opt, agent, specs, names, &pid_at);

	pid = start_child(prog, opt.argv, pipefd, pid_at, &oldmask, old_act);
	if (pid < 0)
		die("fork: %s", strerror(errno));
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	close(pipefd[1]);
	do
		n = read(pipefd[0], &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(exec_errno))
		exec_errno = 0;
	if (exec_errno)
		fprintf(stderr, "ulpt-watch: cannot execute %s: %s\n", prog, strerror(exec_errno));
	close(pipefd[0]);

	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			warn("wait4: %s", strerror(errno));
			unlink(result_path);
			return 1;
		}
	}
	/* The child is reaped: its pid may be reused, so forward nothing more. */
	sigprocmask(SIG_BLOCK, &fwdset, NULL);
	child_pid = 0;

	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbrev = sigabbrev_np(sig);

		code = 128 + sig;
		if (abbrev)
			warn("%s killed by signal %d (SIG%s)", opt.argv[0], sig, abbrev);
		else
			warn("%s killed by signal %d", opt.argv[0], sig);
	} else {
		code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}

	report_read(result_path, &rep, &opt);
	if (json)
		report_json(json, opt.json, &rep, &opt, code, &ru);
	else if (!exec_errno)   /* the child already said why it could not run the program */
		report_summary(&rep, &opt, code, &ru);
	report_free(&rep);
	unlink(result_path);
	free(result_path);
	for (size_t i = 0; i < opt.nwatches; i++)
		free(opt.watches[i].symbol);
	free(opt.watches);
	free(specs);
	free(agent);
	free(prog);
	return code;
}
