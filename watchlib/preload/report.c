/*
 * The reports, in the format Valgrind's and ASan's users read: kind, access, address, the
 * block, where it was allocated and freed; their frames come from the stack depot (stack.c)
 * and the symboliser (symbolize.c). Runs with in_agent set, so what it allocates comes from
 * watchlib's memory.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "stack.h"

static uint32_t seen[4096];         /* (kind, ip) of errors reported (hashed), to report each once */
static volatile int report_lock;

/* A fork waits for the backtraces under way, then holds every lock of theirs (stack.c). */
void report_fork_lock(void)
{
	stack_fork_gate();
	spin(&report_lock);
	symbolize_lock();
	stack_fork_lock();
}

void report_fork_unlock(int child)
{
	stack_fork_unlock();
	symbolize_unlock();
	unspin(&report_lock);
	stack_fork_ungate(child);
}

/* Appends formatted text to a buffer that goes out in one write. */
struct out {
	char *buf;
	size_t cap, n;
};

/* A result record (watchlib/common/results.inc) appended to o: PUT_RESULT(o, frame, ...). */
#define PUT_RESULT(o, type, ...) do { \
	if ((o)->n < (o)->cap) \
		(o)->n += WL_RESULT_FORMAT((o)->buf + (o)->n, (o)->cap - (o)->n, type, __VA_ARGS__); \
} while (0)

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (o->n >= o->cap)
		return;
	va_start(ap, fmt);
	r = vsnprintf(o->buf + o->n, o->cap - o->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		o->n += (size_t)r < o->cap - o->n ? (size_t)r : o->cap - o->n - 1;
}

/* A report's frames, symbolised before it is printed (a suppression rule may match them):
 * under the report's lock, so static. Room for the access's and two depot stacks
 * (--malloc-context-size frames each), made at the first report; until then (or without
 * the memory) the frames of 16-frame stacks. */
struct sym {
	uintptr_t pc;
	const char *what;           /* "access", "free", "alloc" */
	int exact;                  /* pc is the instruction, not a return address */
	char fn[256], loc[512], mod[256], file[512];
};
static struct sym syms_min[3 * MAX_FRAMES], *syms = syms_min;
static const char *names_min[3 * 3 * MAX_FRAMES], **names = names_min;
static int nsyms, maxsyms = 3 * MAX_FRAMES;

/* A report's text: a line of each of its frames at most. */
#define OUT_MIN 8192
static char human_min[OUT_MIN], rec_min[OUT_MIN];
static struct out human = { human_min, OUT_MIN, 0 }, rec = { rec_min, OUT_MIN, 0 };

static void report_room(void)
{
	int want = MAX_FRAMES + 2 * (int)stack_context();
	size_t cap = OUT_MIN + (size_t)want * 1024;
	struct sym *s;
	const char **nm;
	char *h, *r;

	if (want <= maxsyms)
		return;
	s = wl_mem_alloc((size_t)want * sizeof(*s));
	nm = wl_mem_alloc(3 * (size_t)want * sizeof(*nm));
	h = wl_mem_alloc(cap);
	r = wl_mem_alloc(cap);
	if (!s || !nm || !h || !r) {
		wl_mem_free(s);
		wl_mem_free(nm);
		wl_mem_free(h);
		wl_mem_free(r);
		return;
	}
	syms = s;
	names = nm;
	maxsyms = want;
	human = (struct out){ h, cap, 0 };
	rec = (struct out){ r, cap, 0 };
}

/* The frames symbolised so far, by pc (and whether it is exact, not a return address): a
 * leak report repeats the same callers in group after group, and each DWARF lookup is slow
 * in an emulator. Only frames in a known module are kept (a library loaded later may yet
 * cover the others). Under the report's lock, or at the end from one thread. */
#define SYM_CACHE 4096
static struct sym *sym_cache[SYM_CACHE];

static struct sym **sym_slot(uintptr_t pc, int exact)
{
	uint32_t i = (uint32_t)(((pc << 1 | (unsigned)exact) * 0x9e3779b97f4a7c15ull) >> 52);

	for (int k = 0; k < SYM_CACHE; k++, i = (i + 1) & (SYM_CACHE - 1)) {
		struct sym *c = sym_cache[i];
		if (!c || (c->pc == pc && c->exact == exact))
			return &sym_cache[i];
	}
	return NULL;
}

static void symbolize_cached(struct sym *y)
{
	struct sym **slot = sym_slot(y->pc, y->exact);

	if (slot && *slot) {
		memcpy(y->fn, (*slot)->fn, sizeof(y->fn));
		memcpy(y->loc, (*slot)->loc, sizeof(y->loc));
		memcpy(y->mod, (*slot)->mod, sizeof(y->mod));
		return;
	}
	symbolize(y->pc, y->exact, y->fn, sizeof(y->fn), y->loc, sizeof(y->loc), y->mod,
		  sizeof(y->mod));
	if (slot && y->mod[0] && (*slot = wl_mem_alloc(sizeof(**slot))))
		memcpy(*slot, y, sizeof(*y));
}

static void collect(const char *what, const uintptr_t *pcs, int n, int first_exact)
{
	for (int i = 0; i < n && nsyms < maxsyms; i++) {
		struct sym *y = &syms[nsyms++];
		char *colon;

		y->pc = pcs[i];
		y->what = what;
		y->exact = i == 0 && first_exact;
		symbolize_cached(y);
		memcpy(y->file, y->loc, sizeof(y->file));     /* same size */
		colon = strrchr(y->file, ':');
		if (colon)
			*colon = 0;             /* "file:line": the file */
	}
}

static void collect_depot(const char *what, uint32_t id)
{
	int n;
	const uintptr_t *pcs = stack_get(id, &n);

	if (pcs)
		collect(what, pcs, n, 0);
}

static void print_frames(struct out *human, struct out *rec, const char *what)
{
	for (int i = 0, k = 0; i < nsyms; i++) {
		const struct sym *y = &syms[i];
		if (strcmp(y->what, what))
			continue;
		put(human, "    #%d 0x%lx in %s %s\n", k++, (unsigned long)y->pc, y->fn, y->loc);
		PUT_RESULT(rec, frame, .stack = what, .pc = y->pc, .function = y->fn,
			   .location = y->loc);
	}
}

/* Whether a rule of the suppressions file matches a frame of the report. */
static int suppressed(const char *kind)
{
	int n = 0;

	for (int i = 0; i < nsyms; i++) {
		names[n++] = syms[i].fn;
		names[n++] = syms[i].mod;
		names[n++] = syms[i].file;
	}
	return suppress_match(kind, names, n);
}

/* gen_suppressions: a rule for this report, by its first frame (the access, or where a
 * leaked block was allocated): the function, or for one without a name its module+offset. */
static void gen_rule(struct out *human, const char *kind)
{
	const char *pick = NULL;

	if (!ag.gen_suppressions)
		return;
	if (nsyms && strcmp(syms[0].fn, "?"))
		pick = syms[0].fn;
	else if (nsyms && strcmp(syms[0].file, "?"))
		pick = syms[0].file;
	if (pick)
		put(human, "Suppression rule for this report (for a --suppressions file):\n%s:^%s$\n\n",
		    kind, pick);
	else
		put(human, "Suppression rule for this report: none (its first frame has no name)\n\n");
}

static const char *kind_name(enum err_kind k)
{
	switch (k) {
	case ERR_OVERFLOW: return "heap-overflow";
	case ERR_UAF: return "use-after-free";
	case ERR_DOUBLE_FREE: return "double-free";
	case ERR_INVALID_FREE: return "invalid-free";
	case ERR_MISMATCH: return "alloc-dealloc-mismatch";
	case ERR_BAD_USABLE: return "bad-malloc_usable_size";
	}
	return "?";
}

static int seen_before(const struct err *e)
{
	/* By where it happened; an error found at exit has no stack: by its address. */
	uintptr_t where = e->ip ? e->ip : e->addr;
	uint32_t key = (uint32_t)(where * 2654435761u) ^ (uint32_t)e->kind ^ (e->access << 8);
	uint32_t i = key & 4095;

	if (!key)
		key = 1;
	for (int probes = 0; probes < 4096; probes++, i = (i + 1) & 4095) {
		uint32_t v = __atomic_load_n(&seen[i], __ATOMIC_RELAXED);
		if (v == key)
			return 1;
		if (!v && __atomic_compare_exchange_n(&seen[i], &v, key, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
			return 0;
	}
	return 0;
}

void report_error(struct err *e)
{
	uintptr_t pcs[MAX_FRAMES];
	const struct blk *b = e->block ? &ag.blocks[e->block] : NULL;
	const char *acc = e->access == WL_WRITE ? "write" : e->access == WL_READ ? "read" :
			  e->fn ? e->fn : "free";
	int n;

	/* A bad free or a canary found at free: from the caller of free on; at exit: none. */
	int at_access = e->access && !e->found;
	int logged = e->found && !strcmp(e->found, "log");
	if (logged) {
		/* From the access log: its RIP, then the stack of the call that drained it. */
		pcs[0] = e->ip;
		n = 1 + stack_from(0, pcs + 1, MAX_FRAMES - 1);
	} else {
		n = e->found && !strcmp(e->found, "exit") ? 0 :
		    stack_from(at_access ? e->ip : 0, pcs, MAX_FRAMES);
		if (!at_access && n)
			e->ip = pcs[0];    /* its caller, before telling errors apart by ip */
	}
	if (e->kind == ERR_OVERFLOW && b)
		ag.blocks[e->block].overflowed = 1;    /* one bug, one report (heap.c's canaries) */
	if (seen_before(e))
		return;
	int freed = b && (b->state == BLK_FREED || e->kind == ERR_DOUBLE_FREE);

	spin(&report_lock);
	report_room();
	nsyms = 0;
	collect("access", pcs, n, (at_access || logged) && !e->fn);
	if (freed)
		collect_depot("free", b->free_stack);
	if (b)
		collect_depot("alloc", b->alloc_stack);
	if (suppressed(kind_name(e->kind))) {
		__atomic_add_fetch(&ag.suppressed, 1, __ATOMIC_RELAXED);
		unspin(&report_lock);
		return;
	}
	__atomic_add_fetch(&ag.errors, 1, __ATOMIC_RELAXED);
	human.n = rec.n = 0;
	put(&human, "==%d== ERROR: ulpt-watch: %s%s%s%s on address 0x%lx at pc 0x%lx thread %d\n",
	    (int)getpid(), kind_name(e->kind), e->pair ? " (" : "", e->pair ? e->pair : "",
	    e->pair ? ")" : "", (unsigned long)e->addr, (unsigned long)e->ip, (int)e->tid);
	if (e->access)
		put(&human, "%s of size %zu at 0x%lx thread %d%s%s\n",
		    e->access == WL_WRITE ? "WRITE" : "READ", e->size, (unsigned long)e->addr,
		    (int)e->tid, e->fn ? " in " : "", e->fn ? e->fn : "");
	else
		put(&human, "%s of 0x%lx thread %d\n", e->fn ? e->fn : "free", (unsigned long)e->addr,
		    (int)e->tid);
	if (logged)
		put(&human, "found in the access log (asynchronous): the first frame is the access, "
			    "the others where the log was drained\n");
	else if (e->found)
		put(&human, "found at %s: the block's canary (the bytes next to it) was changed\n",
		    e->found);
	PUT_RESULT(&rec, error, .kind = kind_name(e->kind), .access = acc, .address = e->addr,
		   .size = e->size, .ip = e->ip, .block = b ? b->user : 0,
		   .block_size = b ? b->size : 0, .found = e->found ? e->found : "access",
		   .objects = 1, .pair = e->pair);
	/* The first frame is the faulting instruction itself, but the caller's return address for
	 * a range given to a libc function. */
	print_frames(&human, &rec, "access");
	if (b) {
		uintptr_t end = b->user + b->size;
		int before = e->addr < b->user, after = e->addr >= end;

		put(&human, "0x%lx is located %lu bytes %s %zu-byte region [0x%lx,0x%lx)\n",
		    (unsigned long)e->addr,
		    (unsigned long)(before ? b->user - e->addr : e->addr - (after ? end : b->user)),
		    before ? "before" : after ? "after" : "inside", b->size, (unsigned long)b->user,
		    (unsigned long)end);
		if (freed) {
			put(&human, "freed by thread %d here:\n", (int)b->free_tid);
			print_frames(&human, &rec, "free");
		}
		put(&human, "allocated by thread %d here:\n", (int)b->alloc_tid);
		print_frames(&human, &rec, "alloc");
	} else {
		put(&human, "0x%lx is not the start of a block this process allocated\n",
		    (unsigned long)e->addr);
	}
	put(&human, "\n");
	gen_rule(&human, kind_name(e->kind));
	PUT_RESULT(&rec, end, );
	if (write(agent_err_fd(), human.buf, human.n) < 0) {
		/* nothing to do: stderr is gone */
	}
	agent_write(rec.buf, rec.n);
	unspin(&report_lock);
	agent_halt();               /* halt_on_error: this was the first */
}

/* Leaks, in LeakSanitizer's format: a header before the first group, one paragraph per group
 * of lost blocks with their allocation stack, a summary line. Called at the process's end
 * only (leak.c), from one thread. */
int report_leak(uint32_t stack, uint32_t first, uint64_t bytes, uint64_t count, int indirect)
{
	static int header;
	const struct blk *b = &ag.blocks[first];

	report_room();
	nsyms = 0;
	collect_depot("alloc", stack);
	if (suppressed("leak")) {
		ag.suppressed++;
		return 1;
	}
	human.n = rec.n = 0;
	if (!header++)
		put(&human, "==%d== ERROR: ulpt-watch: detected memory leaks\n\n", (int)getpid());
	put(&human, "%s leak of %llu byte(s) in %llu object(s) allocated from:\n",
	    indirect ? "Indirect" : "Direct", (unsigned long long)bytes, (unsigned long long)count);
	PUT_RESULT(&rec, error, .kind = "leak", .access = indirect ? "indirect" : "direct",
		   .address = b->user, .size = bytes, .ip = 0, .block = b->user,
		   .block_size = b->size, .found = "exit", .objects = count);
	print_frames(&human, &rec, "alloc");
	if (!nsyms)
		put(&human, stack_context() ? "    (no stack: allocated before the agent took the heap)\n" :
		    "    (no stack: --malloc-context-size=0)\n");
	put(&human, "\n");
	gen_rule(&human, "leak");
	PUT_RESULT(&rec, end, );
	if (!indirect)
		ag.errors++;            /* a definite leak is an error (error_exitcode) */
	if (write(agent_err_fd(), human.buf, human.n) < 0) {
		/* stderr is gone */
	}
	agent_write(rec.buf, rec.n);
	return 0;
}

void report_leak_summary(uint64_t bytes, uint64_t objects)
{
	char line[160];
	int n;

	if (!objects)
		return;
	n = snprintf(line, sizeof(line), "SUMMARY: ulpt-watch: %llu byte(s) leaked in %llu "
		     "allocation(s).\n\n", (unsigned long long)bytes, (unsigned long long)objects);
	if (n > 0 && write(agent_err_fd(), line, (size_t)n) < 0) {
		/* stderr is gone */
	}
}

/* -v: one line per watchpoint hit. */
void report_hit(const struct wl_hit *h, void *arg)
{
	char buf[OUT_MIN], fn[256], loc[512];
	struct out o = { buf, sizeof(buf), 0 };

	(void)arg;
	in_agent++;
	symbolize(h->ip, 1, fn, sizeof(fn), loc, sizeof(loc), NULL, 0);
	in_agent--;
	const char *name = agent_watch_name(h->id);
	if (name)
		put(&o, "ulpt-watch: %s: %s of %zu bytes at 0x%lx", name,
		    h->kind == WL_WRITE ? "write" : "read", h->size, (unsigned long)h->addr);
	else
		put(&o, "ulpt-watch: watch %d: %s of %zu bytes at 0x%lx", h->id,
		    h->kind == WL_WRITE ? "write" : "read", h->size, (unsigned long)h->addr);
	if (h->kind == WL_WRITE && (h->value_len == 1 || h->value_len == 2 || h->value_len == 4 ||
				    h->value_len == 8)) {
		/* An integer-sized value: as a (little-endian, signed) number. */
		int64_t ov = 0, nv = 0;
		for (size_t i = h->value_len; i-- > 0;) {
			ov = (int64_t)((uint64_t)ov << 8 | h->old_value[i]);
			nv = (int64_t)((uint64_t)nv << 8 | h->new_value[i]);
		}
		unsigned sh = 64 - 8 * (unsigned)h->value_len;
		if (sh) {
			ov = (int64_t)((uint64_t)ov << sh) >> sh;
			nv = (int64_t)((uint64_t)nv << sh) >> sh;
		}
		put(&o, ", %lld -> %lld", (long long)ov, (long long)nv);
	} else if (h->kind == WL_WRITE && h->value_len) {
		put(&o, ", 0x");
		for (size_t i = h->value_len; i-- > 0;)
			put(&o, "%02x", h->old_value[i]);
		put(&o, " -> 0x");
		for (size_t i = h->value_len; i-- > 0;)
			put(&o, "%02x", h->new_value[i]);
	}
	put(&o, ", by %s (%s) thread %d\n", fn, loc, (int)h->tid);
	if (write(agent_err_fd(), o.buf, o.n) < 0) {
		/* stderr is gone */
	}
}
