/*
 * ulpt-model: run a command as the measured region of modeled time (docs/spec.md 11.1), on
 * a machine started with -cpu ulpt,ulpt-model=on (scripts/ulpt-run --model).
 *
 *   ulpt-model [-o FILE] [--] CMD [ARGS...]
 *   ulpt-model --available
 *
 * The region opens before CMD is started and closes once it has ended: its fork and exec,
 * everything it runs, the kernel's work for it and whatever else the machine does meanwhile.
 * The counts go to standard error as one line, or with -o to FILE as a JSON object. The exit
 * status is CMD's (128+N if signal N ended it), 127 if it could not be run, 2 for a usage
 * error, when the machine does not model time, or when CMD closed the region itself (the
 * region is the machine's, one at a time: a measurement inside CMD, such as a program's own
 * ulpt_model_end(), ends this one, and its counts are not CMD's). --available: status 0 if it
 * does, else 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ulpt.h>

static const char *const names[] = {
	"cycles", "insns_user", "insns_kernel", "deliveries", "returns", "returns_permit",
	"after_events", "view_stores", "remote_syncs", "escalations", "kernel_entries",
	"log_records", "log_events", "bounds_reads",
};

static void usage(void)
{
	fprintf(stderr, "usage: ulpt-model [-o FILE] [--] CMD [ARGS...] | ulpt-model --available\n");
	exit(2);
}

static int report(const struct ulpt_model *m, const char *out)
{
	const uint64_t *f = (const uint64_t *)m;
	FILE *o;

	if (!out) {
		fprintf(stderr, "ulpt-model: %llu modeled cycles: %llu instructions at CPL 3, %llu "
			"at CPL 0, %llu deliveries, %llu UIRETs (%llu with PERMIT or STEP), %llu "
			"after events, %llu view stores, %llu remote syncs, %llu escalations, %llu "
			"kernel entries, %llu log records, %llu log events, %llu bounds reads\n",
			(unsigned long long)m->cycles, (unsigned long long)m->insns_user,
			(unsigned long long)m->insns_kernel, (unsigned long long)m->deliveries,
			(unsigned long long)m->returns, (unsigned long long)m->returns_permit,
			(unsigned long long)m->after_events, (unsigned long long)m->view_stores,
			(unsigned long long)m->remote_syncs, (unsigned long long)m->escalations,
			(unsigned long long)m->kernel_entries, (unsigned long long)m->log_records,
			(unsigned long long)m->log_events, (unsigned long long)m->bounds_reads);
		return 0;
	}
	o = fopen(out, "w");
	if (!o) {
		fprintf(stderr, "ulpt-model: %s: %s\n", out, strerror(errno));
		return -1;
	}
	fputc('{', o);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fprintf(o, "%s\"%s\": %llu", i ? ", " : "", names[i], (unsigned long long)f[i]);
	fputs("}\n", o);
	if (fclose(o)) {
		fprintf(stderr, "ulpt-model: %s: %s\n", out, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	struct ulpt_model m;
	int i = 1, st, code;
	pid_t pid;

	_Static_assert(sizeof(names) / sizeof(names[0]) == sizeof(m) / sizeof(uint64_t),
		       "a name per field");
	if (argc == 2 && !strcmp(argv[1], "--available"))
		return ulpt_model_available() ? 0 : 1;
	if (i < argc && !strcmp(argv[i], "-o")) {
		if (i + 1 >= argc || !argv[i + 1][0])
			usage();
		out = argv[i + 1];
		i += 2;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc || argv[i][0] == '-')
		usage();
	if (!ulpt_model_available()) {
		fprintf(stderr, "ulpt-model: this machine does not model time "
			"(start it with -cpu ulpt,ulpt-model=on: ulpt-run --model)\n");
		return 2;
	}
	fflush(NULL);
	ulpt_model_begin();
	pid = fork();
	if (pid == 0) {
		execvp(argv[i], argv + i);
		fprintf(stderr, "ulpt-model: %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		ulpt_model_end(NULL);
		fprintf(stderr, "ulpt-model: cannot run %s: %s\n", argv[i], strerror(errno));
		return 127;
	}
	code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (ulpt_model_end(&m)) {
		fprintf(stderr, "ulpt-model: no counts: %s closed the measured region itself "
			"(a measurement inside it; regions do not nest)\n", argv[i]);
		return 2;
	}
	if (report(&m, out))
		return 2;
	return code;
}
