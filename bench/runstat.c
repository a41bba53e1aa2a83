/* runstat: run a command, report its wall time, how it ended and its peak memory.
 *
 *   runstat [-t SECONDS] [-i IN] [-o OUT] [-e ERR] -- CMD [ARGS...]
 *
 * Runs CMD in a process group of its own with stdin, stdout and stderr from/to the files given
 * (default: inherited), waits for it with wait4() and prints one line on stdout:
 *
 *   runstat wall_ns=<ns> status=exit:<n>|signal:<n>|timeout|exec-failed:<errno> maxrss_kb=<KiB>
 *           [model_cycles=<n> model_insns=<n> model_deliveries=<n> model_kernel_entries=<n>
 *            model_log_records=<n>]
 *           [hash=<hex> bytes=<n>] [note=<text>]
 *
 * maxrss_kb is the largest resident set of the process and of any descendant it waited for
 * (getrusage's rule for children). With -t the whole group is killed with SIGKILL after
 * SECONDS and the status is "timeout". With -o, hash (64-bit FNV-1a) and bytes describe what
 * the command wrote to OUT; with -e, note is the last line of ERR that looks like an error
 * message (else its last non-blank line), at most 240 bytes, always the last field. The exit
 * status is 0 when the line was printed. On a machine that models time (-cpu ulpt,ulpt-model=on,
 * docs/spec.md 11.1) the run from fork to wait is the measured region, and model_* give its
 * modeled cycles, all its instructions (CPL 3 and 0), deliveries and kernel entries. (One
 * process per run does all this: every exec is expensive in the emulated guest.) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ulpt.h>

static pid_t child;
static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
	kill(-child, SIGKILL);
	kill(child, SIGKILL);
}

static void redirect(const char *path, int fd, int flags)
{
	int f;

	if (!path)
		return;
	f = open(path, flags, 0644);
	if (f < 0) {
		fprintf(stderr, "runstat: %s: %s\n", path, strerror(errno));
		_exit(126);
	}
	if (f != fd) {
		dup2(f, fd);
		close(f);
	}
}

/* FNV-1a over a file's bytes, and their count. */
static void hash_file(const char *path, unsigned long long *hash, long long *bytes)
{
	unsigned char buf[65536];
	unsigned long long h = 0xcbf29ce484222325ULL;
	long long n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		while ((r = read(fd, buf, sizeof(buf))) > 0) {
			for (ssize_t i = 0; i < r; i++)
				h = (h ^ buf[i]) * 0x100000001b3ULL;
			n += r;
		}
		close(fd);
	}
	*hash = h;
	*bytes = n;
}

static int looks_like_error(const char *line)
{
	static const char *const words[] = { "error", "fatal", "fail", "abort", "cannot", "unable",
					     "killed", "out of" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasestr(line, words[i]))
			return 1;
	return 0;
}

/* The note: the last error-like line of the file, else its last non-blank line. */
static void note_of(const char *path, char *note, size_t size)
{
	char line[4096], last[4096] = "", err[4096] = "";
	FILE *f = fopen(path, "r");

	note[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		size_t l = strcspn(line, "\r\n");
		int blank = 1;

		line[l] = 0;
		for (size_t i = 0; i < l; i++) {
			if (line[i] == '\t')
				line[i] = ' ';
			if (line[i] != ' ')
				blank = 0;
		}
		if (blank)
			continue;
		snprintf(last, sizeof(last), "%s", line);
		if (looks_like_error(line))
			snprintf(err, sizeof(err), "%s", line);
	}
	fclose(f);
	snprintf(note, size, "%s", err[0] ? err : last);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *in = NULL, *out = NULL, *err = NULL;
	unsigned timeout = 0;
	int opt, status, pipefd[2];
	struct rusage ru;
	long long t0, t1;
	char st[64];
	pid_t w;
	struct ulpt_model model;
	int have_model;

	while ((opt = getopt(argc, argv, "+t:i:o:e:")) != -1) {
		switch (opt) {
		case 't': timeout = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'e': err = optarg; break;
		default:
			fprintf(stderr, "usage: runstat [-t SECONDS] [-i IN] [-o OUT] [-e ERR] -- CMD [ARGS...]\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "runstat: no command\n");
		return 2;
	}
	/* The child reports a failed exec through a close-on-exec pipe. */
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		perror("runstat: pipe");
		return 2;
	}
	have_model = ulpt_model_begin() == 0;
	t0 = now_ns();
	child = fork();
	if (child < 0) {
		perror("runstat: fork");
		return 2;
	}
	if (child == 0) {
		int e;

		setpgid(0, 0);
		close(pipefd[0]);
		redirect(in, 0, O_RDONLY);
		redirect(out, 1, O_WRONLY | O_CREAT | O_TRUNC);
		redirect(err, 2, O_WRONLY | O_CREAT | O_TRUNC);
		execvp(argv[optind], argv + optind);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	setpgid(child, child);
	if (timeout) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		alarm(timeout);
	}
	do
		w = wait4(child, &status, 0, &ru);
	while (w < 0 && errno == EINTR);
	t1 = now_ns();
	if (have_model)
		ulpt_model_end(&model);
	alarm(0);
	if (w < 0) {
		perror("runstat: wait4");
		return 2;
	}
	{
		int e = 0;

		if (read(pipefd[0], &e, sizeof(e)) == (ssize_t)sizeof(e))
			snprintf(st, sizeof(st), "exec-failed:%d", e);
		else if (timed_out)
			snprintf(st, sizeof(st), "timeout");
		else if (WIFSIGNALED(status))
			snprintf(st, sizeof(st), "signal:%d", WTERMSIG(status));
		else
			snprintf(st, sizeof(st), "exit:%d", WEXITSTATUS(status));
	}
	/* Whatever the command left behind in its group goes too. */
	kill(-child, SIGKILL);
	printf("runstat wall_ns=%lld status=%s maxrss_kb=%ld", t1 - t0, st, ru.ru_maxrss);
	if (have_model)
		printf(" model_cycles=%llu model_insns=%llu model_deliveries=%llu model_kernel_entries=%llu"
		       " model_log_records=%llu",
		       (unsigned long long)model.cycles,
		       (unsigned long long)(model.insns_user + model.insns_kernel),
		       (unsigned long long)model.deliveries, (unsigned long long)model.kernel_entries,
		       (unsigned long long)model.log_records);
	if (out) {
		unsigned long long h;
		long long n;

		hash_file(out, &h, &n);
		printf(" hash=%016llx bytes=%lld", h, n);
	}
	if (err) {
		char note[241];

		note_of(err, note, sizeof(note));
		printf(" note=%s", note);
	}
	printf("\n");
	return 0;
}
