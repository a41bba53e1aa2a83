/*
 * stress: the agent's stress run (tests/suites/stress.sh, `make stress`). Correct code that
 * keeps every part of the agent busy at once, for a fixed time, and counts exactly what it did,
 * so that what ulpt-watch reports can be compared with it:
 *
 *   stress run SECONDS [THREADS [native|heap|heap-nofork]]
 *     THREADS workers (default 4) each own 64 slots and, from a random generator seeded by
 *     their number, allocate (malloc, calloc, realloc, memalign, posix_memalign,
 *     aligned_alloc, valloc, malloc(0)), resize, verify and free blocks of 0 to 70,000 bytes,
 *     and hand blocks to the next worker, which verifies and frees them. Every block holds a
 *     pattern of its own (no byte of it looks like a pointer) written with 8-byte and 1-byte
 *     stores and checked in full before it is freed or resized (the kept prefix after a
 *     realloc, the zeroes of calloc, each pointer's alignment, malloc_usable_size): a wrong
 *     block, a lost byte or another block's data is a failure.
 *     A sender thread queues real-time signals to the workers; the handler allocates a block
 *     of HANDLER_SIZE, fills, checks and frees it. At the end every signal sent is handled.
 *     About every 150 ms a worker forks; the child checks its worker's blocks, makes 200
 *     operations of its own, leaks one block of CHILD_LEAK bytes and leaves with _exit(0);
 *     every other child instead executes this program ("exec-child", under ulpt-watch
 *     --follow-exec the agent comes along), which runs two threads of operations, leaks one
 *     block of EXEC_LEAK bytes and exits 0.
 *     At the end the main thread leaks LEAK_DIRECT blocks (from one call site), and a list: a
 *     head (another site) and LEAK_NODES nodes that only it reaches (indirect leaks); it
 *     keeps 3 blocks reachable from a global (no leak). The leaked sizes are above any size
 *     the workers free, so their slots are new memory no stale pointer can reach.
 *     Output: one line "stress: NAME=VALUE ..." of exact counts (below), then "stress: ok"
 *     (exit 0) or "stress: FAILED ..." (exit 1). Counts of the main flow and of the signal
 *     handler are apart: under --heap a handler that interrupts the agent gets the agent's
 *     own memory (heap.c), so only the main flow's counts are exact there.
 *     Every 8 operations a worker also parks a block it allocated for the handler, which
 *     verifies and frees it, every other one after growing it with realloc (a free and a
 *     realloc in a handler that may interrupt the agent).
 *     "native": the handler allocates nothing, for a run without the agent (glibc's malloc
 *     called from a handler that interrupted it waits for its own lock); "heap": nothing is
 *     parked (under --heap a handler that interrupts the agent is not watched: the reads of a
 *     parked block would not be exactly countable); "heap-nofork": as heap, without forks
 *     (a write permitted just before another thread forks can be delivered again when the
 *     fork's copy-on-write fault ends its permit, docs/spec.md R-RET-2).
 *   stress exec-child          (run by run's children)
 *   stress forks N             3 threads allocate and take signals while the main thread forks
 *                              N children that allocate, free and _exit (5 s each at most)
 *   stress maps                mmaps single pages until the kernel's mapping limit refuses
 *                              one, then allocates and frees with the limit reached
 *   stress as                  maps 1 MiB until the address space (ulimit -v) refuses, then
 *                              allocates and frees with the limit reached
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS   16
#define SLOTS         64
#define MAILBOX       16
#define MAX_SIZE      70000
#define HANDLER_SIZE  200           /* 25 words: 25 writes, 25 reads per handler call */
#define CHILD_LEAK    80000
#define EXEC_LEAK     85000
#define LEAK_DIRECT   6
#define LEAK_NODES    5
#define CHILD_OPS     200
#define FORK_EVERY_NS 150000000ll
#ifndef STUCK_WAIT
#define STUCK_WAIT    500           /* 10 ms each: 5 s */
#endif

struct block {
	unsigned char *p;
	size_t size;
	uint64_t seed;
};

/* Counts of the main flow (the worker's own code). */
struct counts {
	uint64_t ops, allocs, frees, reallocs, mallocs, callocs, memaligns, posix_memaligns,
		 aligned_allocs, vallocs, zero_allocs, handoffs, reads, writes, forks, execs, parks;
};

struct worker {
	int id;
	pthread_t th;
	uint64_t rng;
	struct block slot[SLOTS];
	struct counts c;
	/* Blocks handed to this worker by the previous one. */
	pthread_mutex_t mlock;
	struct block mail[MAILBOX];
	int nmail;
	/* Signals: sent by the sender (counted when queued), handled by the handler. */
	volatile uint64_t sent, handled, h_allocs, h_reads, h_writes, h_frees, h_reallocs;
	struct block *volatile parked;      /* a block the main flow left for the handler to free */
	struct block park;                  /* its record */
	uint64_t failures;
};

static struct worker workers[MAX_WORKERS];
static int nworkers = 4;
static volatile int stop_sending, stop_working;
static int64_t next_fork_ns;
static uint64_t fork_failures;
static int in_child;                /* a forked child: no mailbox (its lock may be held) */
static char self_exe[4096];
static int sig;
static int nofork;                  /* run: no forks (heap-nofork) */
static int native;                  /* the handler allocates nothing (glibc's malloc is no
				     * signal handler's: it may wait for its own lock) */
static int parking = 1;             /* the main flow parks blocks the handler frees */
static __thread struct worker *me;
void *kept[3];                      /* reachable at exit: not leaks */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Byte j of a block with seed s; the last byte of each aligned word has its top bit set, so
 * no word of a pattern is a user-space pointer (the leak check must not see one). */
static inline uint8_t pat(uint64_t s, size_t j)
{
	uint8_t b = (uint8_t)((s >> (8 * (j & 7))) + j * 0x9d);

	return (j & 7) == 7 ? (uint8_t)(b | 0x80) : b;
}

static inline uint64_t pat_word(uint64_t s, size_t j)
{
	uint64_t w = 0;

	for (int k = 7; k >= 0; k--)
		w = w << 8 | pat(s, j + (size_t)k);
	return w;
}

/* Writes the pattern to [p, p + n): 8-byte stores, then single bytes; adds the stores. */
static void fill(unsigned char *p, size_t n, uint64_t s, uint64_t *writes)
{
	size_t j = 0;

	for (; j + 8 <= n; j += 8)
		*(volatile uint64_t *)(p + j) = pat_word(s, j);
	for (; j < n; j++)
		*(volatile uint8_t *)(p + j) = pat(s, j);
	*writes += n / 8 + n % 8;
}

/* Checks [p, p + n) against the pattern (zeroes if zero): 1 if right; adds the loads. */
static int verify(const unsigned char *p, size_t n, uint64_t s, int zero, uint64_t *reads)
{
	size_t j = 0;
	int ok = 1;

	for (; j + 8 <= n; j += 8)
		if (*(const volatile uint64_t *)(p + j) != (zero ? 0 : pat_word(s, j)))
			ok = 0;
	for (; j < n; j++)
		if (*(const volatile uint8_t *)(p + j) != (zero ? 0 : pat(s, j)))
			ok = 0;
	*reads += n / 8 + n % 8;
	return ok;
}

static size_t pick_size(uint64_t r)
{
	unsigned k = (unsigned)(r % 100);

	r >>= 8;
	if (k < 2)
		return 0;
	if (k < 88)
		return 1 + r % 256;
	if (k < 99)
		return 257 + r % 3800;
	return 4097 + r % (MAX_SIZE - 4096);
}

static void fail(struct worker *w, const char *what, size_t size)
{
	if (w->failures++ < 5)
		fprintf(stderr, "stress: worker %d: %s (size %zu)\n", w->id, what, size);
}

/* A new block in b by one of the allocating calls, filled. */
static void alloc_one(struct worker *w, struct block *b, uint64_t r)
{
	static const size_t aligns[] = { 16, 32, 64, 128, 256, 512, 4096 };
	size_t n = pick_size(r >> 16), al = 0;
	unsigned how = (unsigned)(r % 100);
	void *p = NULL;
	int zero = 0;

	if (!n) {
		p = malloc(0);
		if (!p)
			fail(w, "malloc(0) returned NULL", 0);
		w->c.zero_allocs++;
	} else if (how < 45) {
		p = malloc(n);
		w->c.mallocs++;
	} else if (how < 60) {
		p = calloc(1, n);
		zero = 1;
		w->c.callocs++;
	} else if (how < 72) {
		al = aligns[(r >> 8) % 7];
		p = memalign(al, n);
		w->c.memaligns++;
	} else if (how < 84) {
		al = aligns[(r >> 8) % 7];
		if (posix_memalign(&p, al, n))
			p = NULL;
		w->c.posix_memaligns++;
	} else if (how < 96) {
		al = aligns[(r >> 8) % 5];
		n = (n + al - 1) & ~(al - 1);
		p = aligned_alloc(al, n);
		w->c.aligned_allocs++;
	} else {
		al = 4096;
		p = valloc(n);
		w->c.vallocs++;
	}
	w->c.allocs++;
	if (!p) {
		fail(w, "allocation returned NULL", n);
		b->p = NULL;
		return;
	}
	if (al && (uintptr_t)p % al)
		fail(w, "misaligned block", n);
	if (malloc_usable_size(p) < n)
		fail(w, "malloc_usable_size below the size", n);
	if (zero && !verify(p, n, 0, 1, &w->c.reads))
		fail(w, "calloc's block not zero", n);
	b->p = p;
	b->size = n;
	b->seed = next(&w->rng) | 1;
	fill(b->p, n, b->seed, &w->c.writes);
}

static void free_one(struct worker *w, struct block *b)
{
	if (!verify(b->p, b->size, b->seed, 0, &w->c.reads))
		fail(w, "block changed before free", b->size);
	free(b->p);
	w->c.frees++;
	b->p = NULL;
}

static void realloc_one(struct worker *w, struct block *b, uint64_t r)
{
	size_t n = 1 + (r >> 8) % (r & 1 ? 4096 : MAX_SIZE), keep = n < b->size ? n : b->size;
	unsigned char *q;

	if (!verify(b->p, b->size, b->seed, 0, &w->c.reads))
		fail(w, "block changed before realloc", b->size);
	q = realloc(b->p, n);
	w->c.reallocs++;
	w->c.allocs++;
	w->c.frees++;
	if (!q) {
		fail(w, "realloc returned NULL", n);
		free(b->p);
		b->p = NULL;
		return;
	}
	if (!verify(q, keep, b->seed, 0, &w->c.reads))
		fail(w, "realloc lost the block's bytes", n);
	b->p = q;
	b->size = n;
	fill(q, n, b->seed, &w->c.writes);
}

/* Hands b to the next worker (if its mailbox has room). */
static int hand_off(struct worker *w, struct block *b)
{
	struct worker *to = &workers[(w->id + 1) % nworkers];
	int done = 0;

	pthread_mutex_lock(&to->mlock);
	if (to->nmail < MAILBOX) {
		to->mail[to->nmail++] = *b;
		done = 1;
	}
	pthread_mutex_unlock(&to->mlock);
	if (done) {
		b->p = NULL;
		w->c.handoffs++;
	}
	return done;
}

/* Verifies and frees what the previous worker handed over. */
static void drain_mail(struct worker *w)
{
	struct block got[MAILBOX];
	int n;

	pthread_mutex_lock(&w->mlock);
	n = w->nmail;
	memcpy(got, w->mail, sizeof(got[0]) * (size_t)n);
	w->nmail = 0;
	pthread_mutex_unlock(&w->mlock);
	for (int i = 0; i < n; i++)
		free_one(w, &got[i]);
}

/* A block for the signal handler to verify and free (the main flow allocated it). */
static void park(struct worker *w)
{
	size_t n = 24 + (size_t)(w->c.ops >> 3) % 200;
	unsigned char *p = malloc(n);

	w->c.allocs++;
	w->c.mallocs++;
	w->c.parks++;
	if (!p) {
		fail(w, "allocation returned NULL", n);
		return;
	}
	w->park = (struct block){ p, n, next(&w->rng) | 1 };
	fill(p, n, w->park.seed, &w->c.writes);
	__atomic_store_n(&w->parked, &w->park, __ATOMIC_RELEASE);
}

/* One operation on a random slot. */
static void op(struct worker *w)
{
	uint64_t r = next(&w->rng);
	struct block *b = &w->slot[r % SLOTS];
	unsigned k = (unsigned)(r >> 6) % 100;

	r >>= 13;
	w->c.ops++;
	if (!b->p)
		alloc_one(w, b, r);
	else if (k < 40)
		free_one(w, b);
	else if (k < 70)
		realloc_one(w, b, r);
	else if (k < 85 || in_child || !hand_off(w, b)) {
		if (!verify(b->p, b->size, b->seed, 0, &w->c.reads))
			fail(w, "block changed", b->size);
	}
	if ((w->c.ops & 15) == 0 && !in_child)
		drain_mail(w);
	if ((w->c.ops & 7) == 0 && parking && !in_child && !__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE))
		park(w);
}

/* Out of line, so that its pointer is in no frame the leak check scans afterwards. */
__attribute__((noinline)) static void leak_one(size_t n, uint64_t *writes)
{
	unsigned char *p = malloc(n);

	if (p)
		fill(p, n, 0x5eed, writes);
	__asm__ volatile("" ::: "memory");
}

/* Clears the stack below the caller's frame, where stale pointers of the calls before stay. */
__attribute__((noinline)) static void scrub(void)
{
	volatile char junk[32768];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0;
}

/* A forked child: checks its worker's blocks (the parent's, copied), makes its own
 * operations, leaks one block and leaves by _exit, which runs the agent's leak check; or
 * executes exec-child. Exit status 0 when everything checked out. */
static void child(struct worker *w, int do_exec)
{
	uint64_t dummy = 0;
	int bad = 0;

	for (int i = 0; i < SLOTS; i++)
		if (w->slot[i].p && !verify(w->slot[i].p, w->slot[i].size, w->slot[i].seed, 0, &dummy))
			bad = 1;
	w->failures = 0;
	in_child = 1;
	for (int i = 0; i < CHILD_OPS; i++)
		op(w);
	for (int i = 0; i < SLOTS; i++)
		if (w->slot[i].p)
			free_one(w, &w->slot[i]);
	if (w->failures)
		bad = 1;
	if (do_exec && !bad) {
		char *argv[] = { "stress", "exec-child", NULL };
		execv(self_exe, argv);
		_exit(3);
	}
	leak_one(CHILD_LEAK, &dummy);
	scrub();
	_exit(bad);
}

static void maybe_fork(struct worker *w)
{
	int64_t t = now_ns(), due = __atomic_load_n(&next_fork_ns, __ATOMIC_RELAXED);
	uint64_t n;
	pid_t pid;
	int st;

	if (nofork || t < due || !__atomic_compare_exchange_n(&next_fork_ns, &due, t + FORK_EVERY_NS, 0,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	n = w->c.forks++;
	if (n & 1)
		w->c.execs++;
	pid = fork();
	if (pid == 0)
		child(w, (int)(n & 1));
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		__atomic_add_fetch(&fork_failures, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "stress: worker %d: child %d failed (status 0x%x)\n", w->id, (int)pid,
			pid > 0 ? st : -1);
	}
}

static void on_signal(int s)
{
	struct worker *w = me;
	uint64_t reads = 0, writes = 0;
	int e = errno;
	unsigned char *p;

	(void)s;
	if (!w)
		return;
	if (native) {
		w->handled++;
		return;
	}
	p = malloc(HANDLER_SIZE);
	if (p) {
		fill(p, HANDLER_SIZE, w->handled + 1, &writes);
		if (!verify(p, HANDLER_SIZE, w->handled + 1, 0, &reads))
			w->failures++;
		free(p);
		w->h_allocs++;
		w->h_reads += reads;
		w->h_writes += writes;
	} else {
		w->failures++;
	}
	struct block *b = __atomic_exchange_n(&w->parked, NULL, __ATOMIC_ACQ_REL);
	if (b) {
		unsigned char *q = b->p;

		/* every other one grown first: a realloc in a handler that may interrupt the agent */
		if (w->h_frees & 1) {
			q = realloc(b->p, b->size + 64);
			if (q)
				w->h_reallocs++;
			else
				q = b->p, w->failures++;
		}
		if (!verify(q, b->size, b->seed, 0, &reads))
			w->failures++;
		free(q);
		w->h_frees++;
		w->h_reads += reads;
	}
	w->handled++;
	errno = e;
}

/* New threads start with the signal blocked (the main thread and the sender keep it so). */
static void block_signal(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The thread's signals: blocked until it knows its worker (created with it blocked). */
static void take_signals(struct worker *w)
{
	sigset_t set;

	me = w;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void *work(void *arg)
{
	struct worker *w = arg;

	take_signals(w);
	while (!__atomic_load_n(&stop_working, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 64; i++)
			op(w);
		maybe_fork(w);
	}
	/* Every signal queued to this thread is taken before it ends; a parked block left is
	 * freed by the main flow. */
	while (w->handled != __atomic_load_n(&w->sent, __ATOMIC_ACQUIRE))
		sched_yield();
	struct block *b = __atomic_exchange_n(&w->parked, NULL, __ATOMIC_ACQ_REL);
	if (b)
		free_one(w, b);
	for (int i = 0; i < SLOTS; i++)
		if (w->slot[i].p)
			free_one(w, &w->slot[i]);
	return NULL;
}

static void *send_signals(void *arg)
{
	struct timespec gap = { 0, 300000 };
	unsigned k = 0;

	(void)arg;
	while (!__atomic_load_n(&stop_sending, __ATOMIC_RELAXED)) {
		struct worker *w = &workers[k++ % (unsigned)nworkers];
		if (!pthread_kill(w->th, sig))
			__atomic_add_fetch(&w->sent, 1, __ATOMIC_RELEASE);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

/* Leaks LEAK_DIRECT blocks from one site, and a head with LEAK_NODES nodes behind it. */
__attribute__((noinline)) static void leak_direct(uint64_t *bytes, uint64_t *writes)
{
	for (int i = 0; i < LEAK_DIRECT; i++) {
		leak_one(90000 + 1000 * (size_t)i, writes);
		*bytes += 90000 + 1000 * (size_t)i;
	}
}

__attribute__((noinline)) static void *list_node(size_t n, void *next_node, uint64_t *writes)
{
	void **p = malloc(n);

	if (p) {
		*(void *volatile *)p = next_node;
		++*writes;
	}
	return p;
}

__attribute__((noinline)) static void leak_list(uint64_t *head_bytes, uint64_t *node_bytes,
						 uint64_t *writes)
{
	void *list = NULL;

	for (int i = 0; i < LEAK_NODES; i++) {
		list = list_node(97000 + 1000 * (size_t)i, list, writes);
		*node_bytes += 97000 + 1000 * (size_t)i;
	}
	void **head = malloc(96000);
	if (head) {
		*(void *volatile *)head = list;
		++*writes;
	}
	*head_bytes += 96000;
	__asm__ volatile("" ::: "memory");
}

static int run(int seconds)
{
	static char outbuf[1 << 16];
	struct sigaction sa;
	pthread_t sender;
	struct counts t = { 0 };
	uint64_t sent = 0, handled = 0, h_allocs = 0, h_reads = 0, h_writes = 0, h_frees = 0, h_reallocs = 0;
	uint64_t failures = 0;
	uint64_t leak_bytes = 0, head_bytes = 0, node_bytes = 0, main_writes = 0;
	int64_t t0 = now_ns();
	ssize_t n;

	/* stdout's buffer is no heap block: the heap's counts are the program's own. */
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 2;
	self_exe[n] = 0;
	sig = SIGRTMIN + 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	next_fork_ns = t0 + FORK_EVERY_NS / 2;
	for (int i = 0; i < nworkers; i++) {
		workers[i].id = i;
		workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pthread_mutex_init(&workers[i].mlock, NULL);
	}
	block_signal();
	for (int i = 0; i < nworkers; i++)
		if (pthread_create(&workers[i].th, NULL, work, &workers[i]))
			return 2;
	if (pthread_create(&sender, NULL, send_signals, NULL))
		return 2;
	while (now_ns() - t0 < (int64_t)seconds * 1000000000ll) {
		struct timespec nap = { 0, 20000000 };
		nanosleep(&nap, NULL);
	}
	__atomic_store_n(&stop_sending, 1, __ATOMIC_RELAXED);
	pthread_join(sender, NULL);
	__atomic_store_n(&stop_working, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i].th, NULL);
	/* What is left in the mailboxes: freed by the main thread (its counts are worker 0's). */
	me = NULL;
	for (int i = 0; i < nworkers; i++)
		drain_mail(&workers[i]);
	for (int i = 0; i < nworkers; i++) {
		struct worker *w = &workers[i];
		uint64_t *a = (uint64_t *)&w->c, *s = (uint64_t *)&t;
		for (size_t k = 0; k < sizeof(t) / sizeof(uint64_t); k++)
			s[k] += a[k];
		sent += w->sent;
		handled += w->handled;
		h_allocs += w->h_allocs;
		h_reads += w->h_reads;
		h_writes += w->h_writes;
		h_frees += w->h_frees;
		h_reallocs += w->h_reallocs;
		failures += w->failures;
	}
	/* Blocks kept to the end, reachable from a global: no leak. */
	for (int i = 0; i < 3; i++) {
		kept[i] = malloc(100 + (size_t)i);
		fill(kept[i], 100 + (size_t)i, 7, &main_writes);
	}
	leak_direct(&leak_bytes, &main_writes);
	leak_list(&head_bytes, &node_bytes, &main_writes);
	scrub();
	t.allocs += 3 + LEAK_DIRECT + 1 + LEAK_NODES;
	t.writes += main_writes;
	printf("stress: seconds=%d threads=%d ops=%llu allocs=%llu frees=%llu reallocs=%llu "
	       "mallocs=%llu callocs=%llu memaligns=%llu posix_memaligns=%llu aligned_allocs=%llu "
	       "vallocs=%llu zero_allocs=%llu handoffs=%llu reads=%llu writes=%llu "
	       "signals_sent=%llu signals_handled=%llu handler_allocs=%llu handler_reads=%llu "
	       "handler_writes=%llu handler_size=%d parks=%llu handler_frees=%llu handler_reallocs=%llu forks=%llu execs=%llu fork_failures=%llu "
	       "child_leak=%d exec_leak=%d leaked_direct=%d leaked_direct_bytes=%llu "
	       "leaked_indirect=%d leaked_indirect_bytes=%llu kept=3 failures=%llu\n",
	       seconds, nworkers, (unsigned long long)t.ops, (unsigned long long)t.allocs,
	       (unsigned long long)t.frees, (unsigned long long)t.reallocs,
	       (unsigned long long)t.mallocs, (unsigned long long)t.callocs,
	       (unsigned long long)t.memaligns, (unsigned long long)t.posix_memaligns,
	       (unsigned long long)t.aligned_allocs, (unsigned long long)t.vallocs,
	       (unsigned long long)t.zero_allocs, (unsigned long long)t.handoffs,
	       (unsigned long long)t.reads, (unsigned long long)t.writes,
	       (unsigned long long)sent, (unsigned long long)handled, (unsigned long long)h_allocs,
	       (unsigned long long)h_reads, (unsigned long long)h_writes, HANDLER_SIZE,
	       (unsigned long long)t.parks, (unsigned long long)h_frees, (unsigned long long)h_reallocs,
	       (unsigned long long)t.forks, (unsigned long long)t.execs,
	       (unsigned long long)fork_failures, CHILD_LEAK, EXEC_LEAK, LEAK_DIRECT + 1,
	       (unsigned long long)(leak_bytes + head_bytes), LEAK_NODES,
	       (unsigned long long)node_bytes, (unsigned long long)failures);
	if (failures || fork_failures || sent != handled) {
		printf("stress: FAILED (%llu check failures, %llu children failed, %llu of %llu "
		       "signals handled)\n", (unsigned long long)failures,
		       (unsigned long long)fork_failures, (unsigned long long)handled,
		       (unsigned long long)sent);
		return 1;
	}
	printf("stress: ok\n");
	return 0;
}

static void *exec_thread(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 500; i++)
		op(w);
	for (int i = 0; i < SLOTS; i++)
		if (w->slot[i].p)
			free_one(w, &w->slot[i]);
	return NULL;
}

/* The program a forked child executes: two threads of operations, one leak of EXEC_LEAK. */
static int exec_child(void)
{
	uint64_t dummy = 0;

	nworkers = 2;
	for (int i = 0; i < 2; i++) {
		workers[i].id = i;
		workers[i].rng = 0x1234567ull * (uint64_t)(i + 7);
		pthread_mutex_init(&workers[i].mlock, NULL);
	}
	if (pthread_create(&workers[1].th, NULL, exec_thread, &workers[1]))
		return 2;
	exec_thread(&workers[0]);
	pthread_join(workers[1].th, NULL);
	drain_mail(&workers[0]);
	drain_mail(&workers[1]);
	leak_one(EXEC_LEAK, &dummy);
	scrub();
	return workers[0].failures || workers[1].failures ? 1 : 0;
}

/* Threads that allocate and take signals while the main thread forks n children, each of
 * which allocates, frees and leaves: a child that does not end within 5 s is stuck (a lock
 * another thread held at the fork, held forever in the child) and is killed. */
static void *churn(void *arg)
{
	struct worker *w = arg;

	take_signals(w);
	while (!__atomic_load_n(&stop_working, __ATOMIC_RELAXED))
		for (int i = 0; i < 16; i++)
			op(w);
	while (w->handled != __atomic_load_n(&w->sent, __ATOMIC_ACQUIRE))
		sched_yield();
	return NULL;
}

static int forks(int n)
{
	struct sigaction sa;
	pthread_t sender;
	int stuck = 0, failed = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sig = SIGRTMIN + 1;
	sigaction(sig, &sa, NULL);
	block_signal();
	for (int i = 0; i < nworkers; i++) {
		workers[i].id = i;
		workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		pthread_mutex_init(&workers[i].mlock, NULL);
		if (pthread_create(&workers[i].th, NULL, churn, &workers[i]))
			return 2;
	}
	if (pthread_create(&sender, NULL, send_signals, NULL))
		return 2;
	for (int k = 0; k < n; k++) {
		int st = 0, waited = 0;
		pid_t pid = fork(), r = 0;

		if (pid == 0) {
			for (int i = 0; i < 20; i++)
				free(malloc(24 + (size_t)i));
			_exit(0);
		}
		if (pid < 0)
			return 2;
		while ((r = waitpid(pid, &st, WNOHANG)) == 0 && waited++ < STUCK_WAIT) {
			struct timespec nap = { 0, 10000000 };
			nanosleep(&nap, NULL);
		}
		if (r == 0) {
			if (stuck++ < 5)
				fprintf(stderr, "stress: forks: child %d (fork %d) stuck\n", (int)pid, k);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		} else if (r != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			failed++;
		}
	}
	__atomic_store_n(&stop_sending, 1, __ATOMIC_RELAXED);
	pthread_join(sender, NULL);
	__atomic_store_n(&stop_working, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i].th, NULL);
	printf("stress: forks: %d children, %d stuck, %d failed\n", n, stuck, failed);
	return stuck || failed ? 1 : 0;
}

/* With a limit reached (mappings, address space): 2000 blocks of every size, filled, checked
 * and freed; a NULL is counted in *got, not a failure. 1 if every block held its bytes. */
static int blocks_at_limit(size_t *got)
{
	uint64_t writes = 0, reads = 0;
	int ok = 1;

	for (int round = 0; round < 2000; round++) {
		size_t sz = 1 + (size_t)round * 37 % 70000;
		unsigned char *p = malloc(sz);
		if (!p)
			continue;
		(*got)++;
		fill(p, sz, (uint64_t)round | 1, &writes);
		if (!verify(p, sz, (uint64_t)round | 1, 0, &reads))
			ok = 0;
		free(p);
	}
	return ok;
}

/* Single pages, alternately readable and not (so that no two merge), until mmap fails. */
static int maps(void)
{
	size_t cap = 1 << 20, n = 0, got = 0;
	void **v = mmap(NULL, cap * sizeof(void *), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok, e = 0;

	if (v == MAP_FAILED)
		return 2;
	while (n < cap) {
		void *p = mmap(NULL, 4096, n & 1 ? PROT_READ : PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			e = errno;
			break;
		}
		v[n++] = p;
	}
	printf("stress: maps: %zu mappings made, then: %s\n", n, strerror(e));
	fflush(stdout);
	/* With the limit reached: blocks of every size, filled, checked and freed. */
	ok = blocks_at_limit(&got);
	for (size_t i = 0; i < n; i++)
		munmap(v[i], 4096);
	printf("stress: maps: %zu of 2000 blocks allocated with it reached: %s\n", got,
	       ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}

/* Mappings of 1 MiB until the address space (ulimit -v) refuses one, then blocks of every
 * size with it reached: filled, checked and freed (a NULL is counted, not a failure). */
static int address_space(void)
{
	size_t cap = 1 << 20, n = 0, got = 0;
	void **v = mmap(NULL, cap * sizeof(void *), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int ok, e = 0;

	if (v == MAP_FAILED)
		return 2;
	while (n < cap) {
		void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			e = errno;
			break;
		}
		v[n++] = p;
	}
	printf("stress: as: %zu MiB mapped, then: %s\n", n, strerror(e));
	fflush(stdout);
	ok = blocks_at_limit(&got);
	for (size_t i = 0; i < n; i++)
		munmap(v[i], 1 << 20);
	printf("stress: as: %zu of 2000 blocks allocated with it reached: %s\n", got,
	       ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "run")) {
		char *end;
		long s = strtol(argv[2], &end, 10);
		if (*end || s < 0 || s > 1000000)
			goto usage;
		if (argc >= 4) {
			long t = strtol(argv[3], &end, 10);
			if (*end || t < 1 || t > MAX_WORKERS)
				goto usage;
			nworkers = (int)t;
		}
		if (argc >= 5 && strcmp(argv[4], "native") && strcmp(argv[4], "heap") &&
		    strcmp(argv[4], "heap-nofork"))
			goto usage;
		nofork = argc >= 5 && !strcmp(argv[4], "heap-nofork");
		native = argc >= 5 && !strcmp(argv[4], "native");
		parking = argc < 5;
		return run((int)s);
	}
	if (argc == 2 && !strcmp(argv[1], "exec-child"))
		return exec_child();
	if (argc == 3 && !strcmp(argv[1], "forks")) {
		nworkers = 3;
		return forks(atoi(argv[2]));
	}
	if (argc == 2 && !strcmp(argv[1], "maps"))
		return maps();
	if (argc == 2 && !strcmp(argv[1], "as"))
		return address_space();
usage:
	fprintf(stderr, "usage: stress run SECONDS [THREADS [native|heap|heap-nofork]] | exec-child | forks N | maps | as\n");
	return 2;
}
