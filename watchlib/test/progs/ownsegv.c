/*
 * ownsegv: a program with its own SIGSEGV and SIGTRAP handlers, installed in main (after the
 * agent started): it catches a write to a page it made read-only (and makes it writable), and
 * a raise(SIGTRAP). Under ulpt-watch -w counter it must keep both, and the watch must still
 * count: expected "ownsegv: ok (segv 1, trap 1)" and counter's 100 writes.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int counter;
static volatile int segvs, traps;
static char *page;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	if ((char *)si->si_addr >= page && (char *)si->si_addr < page + 4096) {
		segvs++;
		mprotect(page, 4096, PROT_READ | PROT_WRITE);
		return;
	}
	_exit(99);
}

static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	signal(SIGTRAP, on_trap);
	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 100; i++)
		((volatile int *)&counter)[0] = i;
	page[10] = 1;
	raise(SIGTRAP);
	printf("ownsegv: %s (segv %d, trap %d)\n", segvs == 1 && traps == 1 ? "ok" : "FAILED", segvs,
	       traps);
	return 0;
}
