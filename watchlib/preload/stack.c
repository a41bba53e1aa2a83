/*
 * The stack depot: the stacks of malloc and free, each kept once, and the backtraces of
 * errors. Runs with in_agent set, so what libunwind allocates comes from watchlib's memory.
 *
 * A capture at malloc and free walks the stack with a cache of each return address's unwind
 * rule, as memcheck's CFI cache and the kernel's ORC unwinder do: the CFA is RSP + n or
 * RBP + n, the return address is at CFA - 8, RBP is kept or saved at CFA + k. The rule comes
 * from libunwind stepping that frame (its CFI, .eh_frame) at the address's first walk; then a
 * frame costs a table lookup and a load. The frames are libunwind's: a frame whose rule the
 * cache cannot hold (a DW_CFA expression, a CFA on another register, a step libunwind fails)
 * sends the capture to libunwind's own unw_backtrace, as does a stack other than the
 * thread's (a signal's alternate stack, a coroutine's). Every load of a walk is within the
 * thread's stack, from the capture's own frame up: a bad frame ends the walk there.
 *
 * A stack is found in the depot by a hash of its frames, with no lock.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>
#include "stack.h"

extern void *__libc_stack_end;

#define DEPOT_SLOTS_MIN (1u << 12)  /* the hash table doubles from here, at half full */
#define DEPOT_WORDS  (64u << 20)
#define AGENT_FRAMES 8              /* the agent's own, at most, before the program's */
#define MAX_CONTEXT  255            /* --malloc-context-size's largest */
#define HASH_SEED    0xcbf29ce484222325ull
#define HASH_MUL     0x9e3779b97f4a7c15ull

/* The depot's table: each stack's hash, frames and offset in words (0: an empty slot). A
 * larger one replaces it whole; the old one stays, for lookups under way. */
struct dslot {
	uint64_t h;
	uint32_t id, n;
};

struct dtab {
	uint32_t mask, used;
	struct dslot slot[];
};

static struct {
	volatile int lock;          /* taken to add a stack */
	struct dtab *tab;
	uintptr_t *words;           /* [n, hash, pc0, pc1, ...] */
	uint32_t top;
} d;

static unsigned context = 30;   /* --malloc-context-size */

static uint64_t pcs_hash(const uintptr_t *pcs, int n)
{
	uint64_t h = HASH_SEED;

	for (int i = 0; i < n; i++)
		h = (h ^ pcs[i]) * HASH_MUL;
	return h;
}

/* The id of the stack of n frames and hash h in t, or 0. As compiler-rt's stack depot, stacks
 * are told apart by their 64-bit hash: two differing in one frame never share it, others
 * with a chance of 2^-64. A slot is written once, its id last; t is at most half full. */
static inline uint32_t depot_find(const struct dtab *t, int n, uint64_t h)
{
	for (uint32_t i = (uint32_t)(h >> 32) & t->mask;; i = (i + 1) & t->mask) {
		const struct dslot *s = &t->slot[i];
		uint32_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);

		if (!id)
			return 0;
		if (__atomic_load_n(&s->h, __ATOMIC_RELAXED) == h &&
		    __atomic_load_n(&s->n, __ATOMIC_RELAXED) == (uint32_t)n)
			return id;
	}
}

static void depot_link(struct dtab *t, uint64_t h, uint32_t n, uint32_t id)
{
	uint32_t i = (uint32_t)(h >> 32) & t->mask;

	while (t->slot[i].id)
		i = (i + 1) & t->mask;
	t->slot[i].h = h;
	t->slot[i].n = n;
	__atomic_store_n(&t->slot[i].id, id, __ATOMIC_RELEASE);
	t->used++;
}

/* Doubles the table (its pages are touched at random: it starts small, so that a program
 * with few allocation sites does not pay a large table in resident memory). */
static int depot_grow(void)
{
	struct dtab *o = d.tab;
	uint32_t n = o ? (o->mask + 1) * 2 : DEPOT_SLOTS_MIN;
	struct dtab *t = wl_mem_reserve(sizeof(*t) + n * sizeof(struct dslot));

	if (!t)
		return -1;
	t->mask = n - 1;
	for (uint32_t i = 0; o && i <= o->mask; i++)
		if (o->slot[i].id)
			depot_link(t, o->slot[i].h, o->slot[i].n, o->slot[i].id);
	__atomic_store_n(&d.tab, t, __ATOMIC_RELEASE);
	return 0;
}

/* The id of a stack of n > 0 frames, added if new (under the depot's lock). */
static __attribute__((noinline)) uint32_t depot_add(const uintptr_t *pcs, int n, uint64_t h)
{
	const struct dtab *t = __atomic_load_n(&d.tab, __ATOMIC_ACQUIRE);
	uint32_t id;

	if (t && (id = depot_find(t, n, h)))
		return id;
	spin(&d.lock);
	if (!d.words) {
		d.words = wl_mem_reserve(DEPOT_WORDS * sizeof(uintptr_t));
		d.top = 1;
	}
	id = 0;
	if (!d.words)
		goto out;
	if ((!d.tab || (d.tab->used + 1) * 2 > d.tab->mask + 1) && depot_grow() < 0 &&
	    (!d.tab || d.tab->used + 1 > d.tab->mask))
		goto out;               /* no room: the table keeps an empty slot */
	if ((id = depot_find(d.tab, n, h)))
		goto out;
	if (d.top + n + 2 <= DEPOT_WORDS) {
		id = d.top;
		d.words[id] = (uintptr_t)n;
		d.words[id + 1] = h;
		memcpy(&d.words[id + 2], pcs, n * sizeof(*pcs));
		d.top += n + 2;
		depot_link(d.tab, h, (uint32_t)n, id);
	}
out:
	unspin(&d.lock);
	return id;
}

/* The id of a stack (n frames, hash h), added if new: the first slot looked at here. */
static inline uint32_t depot_put(const uintptr_t *pcs, int n, uint64_t h)
{
	const struct dtab *t = __atomic_load_n(&d.tab, __ATOMIC_ACQUIRE);
	const struct dslot *s;
	uint32_t id;

	if (__builtin_expect(t != NULL, 1)) {
		s = &t->slot[(uint32_t)(h >> 32) & t->mask];
		if (__atomic_load_n(&s->h, __ATOMIC_RELAXED) == h &&
		    __atomic_load_n(&s->n, __ATOMIC_RELAXED) == (uint32_t)n &&
		    (id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE)))
			return id;
	}
	if (n <= 0)
		return 0;
	return depot_add(pcs, n, h);
}

const uintptr_t *stack_get(uint32_t id, int *n)
{
	if (!id || !d.words)
		return NULL;
	*n = (int)d.words[id];
	return &d.words[id + 2];
}

unsigned stack_context(void)
{
	return context;
}

/*
 * fork: a thread inside libunwind holds its mutexes (its memory pools'), and one in the depot,
 * a report or the symbols holds the agent's; a forked child would find them held forever and
 * hang at its first allocation. So a fork (heap.c's atfork handlers, through report.c) closes
 * a gate that libunwind's callers here wait at, waits for those under way, then takes the
 * locks. A backtrace nested in one (a signal handler's) does not wait: its thread is the one
 * the fork waits for. A walk by the rule cache alone takes no lock but the depot's.
 */
static int fork_gate, unwinding;
static __thread int my_unwinding __attribute__((tls_model("initial-exec")));

static void unwind_enter(void)
{
	if (my_unwinding++)
		return;
	for (;;) {
		__atomic_add_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&fork_gate, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&fork_gate, __ATOMIC_ACQUIRE))
			__builtin_ia32_pause();
	}
}

static void unwind_leave(void)
{
	if (!--my_unwinding)
		__atomic_sub_fetch(&unwinding, 1, __ATOMIC_RELEASE);
}

void stack_fork_gate(void)
{
	__atomic_add_fetch(&fork_gate, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&unwinding, __ATOMIC_SEQ_CST) > (my_unwinding ? 1 : 0))
		__builtin_ia32_pause();
}

void stack_fork_lock(void)
{
	spin(&d.lock);
}

void stack_fork_unlock(void)
{
	unspin(&d.lock);
}

void stack_fork_ungate(int child)
{
	if (child) {
		/* Threads that were unwinding or waiting at the gate are not in the child. */
		__atomic_store_n(&unwinding, my_unwinding ? 1 : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fork_gate, 0, __ATOMIC_RELEASE);
	} else {
		__atomic_sub_fetch(&fork_gate, 1, __ATOMIC_RELEASE);
	}
}

static int in_agent_code(uintptr_t pc)
{
	return pc - ag.self_text[0] < ag.self_text[1] - ag.self_text[0];
}

/* --- the rule cache -------------------------------------------------------------------------
 * Each rule is in rules, a hash table of return addresses that only grows (a larger one
 * replaces it whole, the old one stays for walks under way). Those the walk's loop applies
 * itself (CFA = RSP + n, or the end of the stack) are also in fast, at the
 * slot their address's low 16 bits name, unless another took it first: a load and a
 * compare find them. An entry is written before its key, which publishes it. */
enum rule_kind { R_SP, R_BP, R_SIGNAL, R_END, R_UNWIND };

struct rule {
	uintptr_t key;              /* the return address; EXACT: an interrupted instruction's */
	int32_t off;                /* R_SP, R_BP: CFA - RSP, CFA - RBP */
	int32_t bp;                 /* RBP is saved at CFA + bp (0: kept) */
	uint8_t kind;
};
#define EXACT           ((uintptr_t)1 << 63)

struct rtab {
	uint32_t mask, used;
	struct rule r[];
};

#define FAST_SLOTS      (1u << 16)
#define END_OFF         ((uintptr_t)1 << 62)    /* takes the walk past any stack's end */
static uintptr_t fast[2 * FAST_SLOTS];          /* keys, then their CFA - RSP */

static struct {
	volatile int lock;          /* taken to add a rule */
	struct rtab *tab;
	char *scratch;              /* the probes' copy of a frame, and zeroes */
} rc;

#define RULES_MIN       (1u << 12)
#define WINDOW_MAX      (256u << 10)            /* the largest frame a rule is made for */
#define SCRATCH_ZERO    (WINDOW_MAX + (64u << 10))
#define SCRATCH_BYTES   (SCRATCH_ZERO + (64u << 10))

static uint32_t rule_hash(uintptr_t key, uint32_t mask)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

static const struct rule *rule_find(uintptr_t key)
{
	const struct rtab *t = __atomic_load_n(&rc.tab, __ATOMIC_ACQUIRE);

	if (!t)
		return NULL;
	for (uint32_t i = rule_hash(key, t->mask);; i = (i + 1) & t->mask) {
		uintptr_t k = __atomic_load_n(&t->r[i].key, __ATOMIC_ACQUIRE);
		if (k == key)
			return &t->r[i];
		if (!k)
			return NULL;
	}
}

static struct rule *rule_slot(struct rtab *t, uintptr_t key)
{
	uint32_t i = rule_hash(key, t->mask);

	while (t->r[i].key && t->r[i].key != key)
		i = (i + 1) & t->mask;
	return &t->r[i];
}

/* Adds r (under rc.lock): the table's copy, or NULL without memory. */
static const struct rule *rule_add(const struct rule *r)
{
	struct rtab *t = rc.tab;
	struct rule *e;

	if (!t || (t->used + 1) * 2 > t->mask + 1) {
		uint32_t n = t ? (t->mask + 1) * 2 : RULES_MIN;
		struct rtab *g = wl_mem_reserve(sizeof(*g) + n * sizeof(struct rule));

		if (!g)
			return NULL;
		g->mask = n - 1;
		for (uint32_t i = 0; t && i <= t->mask; i++)
			if (t->r[i].key) {
				*rule_slot(g, t->r[i].key) = t->r[i];
				g->used++;
			}
		__atomic_store_n(&rc.tab, g, __ATOMIC_RELEASE);
		t = g;
	}
	e = rule_slot(t, r->key);
	e->off = r->off;
	e->bp = r->bp;
	e->kind = r->kind;
	__atomic_store_n(&e->key, r->key, __ATOMIC_RELEASE);
	t->used++;
	if ((r->kind == R_SP || r->kind == R_END) && !(r->key & EXACT)) {
		uint32_t h = (uint16_t)r->key;
		if (!fast[h]) {
			fast[FAST_SLOTS + h] = r->kind == R_SP ? (uintptr_t)(intptr_t)r->off : END_OFF;
			__atomic_store_n(&fast[h], r->key, __ATOMIC_RELEASE);
		}
	}
	return e;
}

/* A walk off the fast path: the stack's bounds, and the last frame whose pc, RSP and RBP are
 * known (RBP is followed only when a rule needs it; exact: its pc is an interrupted one). */
struct walk {
	uintptr_t lo, hi;
	uintptr_t cp_pc, cp_sp, cp_bp;
	int cp_exact;
};

static int rd(const struct walk *w, uintptr_t a, uintptr_t *v)
{
	if (a < w->lo || a > w->hi - sizeof(uintptr_t) || (a & 7))
		return -1;
	*v = *(const uintptr_t *)a;
	return 0;
}

/* RBP in the frame whose RSP is sp: the walk again from the known frame, each frame on the
 * way keeping RBP or saving it at CFA + bp. That frame becomes the known one. */
static int bp_at(struct walk *w, uintptr_t sp, uintptr_t *bp)
{
	uintptr_t p = w->cp_pc, s = w->cp_sp, b = w->cp_bp;

	if (s != sp && w->cp_exact)
		return -1;
	while (s < sp) {
		const struct rule *r = rule_find(p);
		if (!r || r->kind != R_SP)
			return -1;
		s += (uintptr_t)(intptr_t)r->off;
		if ((r->bp && rd(w, s + r->bp, &b) < 0) || rd(w, s - 8, &p) < 0)
			return -1;
	}
	if (s != sp)
		return -1;
	if (s != w->cp_sp)
		*w = (struct walk){ w->lo, w->hi, p, s, b, 0 };
	*bp = b;
	return 0;
}

/* libunwind's step from one frame: its caller's pc and CFA (its RSP), where the return
 * address was, where RBP was (kept: still in the context). */
struct obs {
	int ret, sig, bp_kept;
	uintptr_t pc, cfa, bp, ra_at, bp_at;
};

#define GREG(r)         (offsetof(ucontext_t, uc_mcontext.gregs) + (r) * sizeof(greg_t))

static void observe(uintptr_t pc, uintptr_t sp, uintptr_t bp, int exact, struct obs *o)
{
	unw_context_t uc;
	unw_cursor_t c;
	unw_save_loc_t l;
	unw_word_t v;

	memset(o, 0, sizeof(*o));
	o->ret = -1;
	unw_getcontext(&uc);
	/* The other registers point at zeroes: a rule on them reads nothing of the program's. */
	for (int g = REG_R8; g <= REG_RCX; g++)
		uc.uc_mcontext.gregs[g] = (greg_t)(rc.scratch + SCRATCH_ZERO + (32u << 10));
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)bp;
	if (unw_init_local2(&c, &uc, exact ? UNW_INIT_SIGNAL_FRAME : 0) < 0)
		return;
	o->ret = unw_step(&c);
	o->sig = unw_is_signal_frame(&c) > 0;
	if (o->ret <= 0)
		return;
	if (unw_get_reg(&c, UNW_REG_IP, &v) < 0)
		goto bad;
	o->pc = v;
	if (unw_get_reg(&c, UNW_REG_SP, &v) < 0)
		goto bad;
	o->cfa = v;
	if (unw_get_reg(&c, UNW_X86_64_RBP, &v) < 0)
		goto bad;
	o->bp = v;
	if (unw_get_save_loc(&c, UNW_X86_64_RIP, &l) < 0 || l.type != UNW_SLT_MEMORY)
		goto bad;
	o->ra_at = l.u.addr;
	if (unw_get_save_loc(&c, UNW_X86_64_RBP, &l) < 0 || l.type != UNW_SLT_MEMORY)
		goto bad;
	o->bp_at = l.u.addr;
	o->bp_kept = l.u.addr == (uintptr_t)&uc.uc_mcontext.gregs[REG_RBP];
	return;
bad:
	o->ret = -1;
}

/* Whether step o from RSP sp and RBP bp is a frame of rule r. */
static int fits(const struct obs *o, const struct rule *r, uintptr_t sp, uintptr_t bp)
{
	return o->ret > 0 && !o->sig && o->ra_at == o->cfa - 8 &&
	       o->cfa == (r->kind == R_SP ? sp : bp) + (uintptr_t)(intptr_t)r->off &&
	       (r->bp ? !o->bp_kept && o->bp_at == o->cfa + (uintptr_t)(intptr_t)r->bp : o->bp_kept);
}

/*
 * The rule of frame pc (at RSP sp, RBP bp) from libunwind's steps: one from the frame as it
 * is, then, to tell which register the CFA is on, one with RSP moved onto a copy of the frame
 * in the scratch area and, if the CFA did not follow, one with RBP moved there. A rule on
 * anything else (another register, memory) does not follow either: R_UNWIND. The moved
 * steps read the copy where the real one read the frame, and the real memory where it did.
 */
static void rule_make(const struct walk *w, uintptr_t pc, uintptr_t sp, uintptr_t bp, int exact,
		      struct rule *r)
{
	struct obs a, b;
	uintptr_t win, k, v;
	char *copy = rc.scratch;

	r->kind = R_UNWIND;
	if (bp < sp || bp >= w->hi)
		bp = (uintptr_t)(rc.scratch + SCRATCH_ZERO + (32u << 10));     /* not a frame's */
	observe(pc, sp, bp, exact, &a);
	if (a.ret == 0) {
		r->kind = R_END;                /* libunwind's last frame (_start, clone3) */
		return;
	}
	if (a.ret < 0)
		return;
	if (a.sig) {
		uintptr_t rip, rsp, rbp;
		/* A signal frame: the interrupted registers in the ucontext at RSP. */
		if (!rd(w, sp + GREG(REG_RIP), &rip) && !rd(w, sp + GREG(REG_RSP), &rsp) &&
		    !rd(w, sp + GREG(REG_RBP), &rbp) && rip == a.pc && rsp == a.cfa && rbp == a.bp)
			r->kind = R_SIGNAL;
		return;
	}
	if (a.cfa <= sp || a.cfa > w->hi || (a.cfa & 7) || a.ra_at != a.cfa - 8 ||
	    a.cfa - sp > WINDOW_MAX)
		return;
	k = a.bp_kept ? 0 : a.bp_at - a.cfa;
	if (!a.bp_kept && (a.bp_at < sp || a.bp_at > a.cfa - 16 || (a.bp_at & 7)))
		return;
	r->bp = (int32_t)k;
	win = a.cfa - sp + 16 < w->hi - sp ? a.cfa - sp + 16 : w->hi - sp;
	memcpy(copy, (const void *)sp, win);
	r->kind = R_SP;
	r->off = (int32_t)(a.cfa - sp);
	observe(pc, (uintptr_t)copy, bp, exact, &b);
	if (!fits(&b, r, (uintptr_t)copy, bp)) {
		r->kind = R_UNWIND;
		if (b.ret > 0 && b.cfa == a.cfa && bp >= sp && bp < a.cfa && !rd(w, bp, &v)) {
			r->kind = R_BP;
			r->off = (int32_t)(a.cfa - bp);
			observe(pc, sp, (uintptr_t)copy + (bp - sp), exact, &b);
			if (!fits(&b, r, sp, (uintptr_t)copy + (bp - sp)))
				r->kind = R_UNWIND;
		}
	}
	memset(copy, 0, win);
}

/*
 * A rule is made with every signal blocked: a signal handler that allocates would otherwise
 * find rc.lock taken by the frame it interrupted, or libunwind's own lock. libunwind blocks
 * them itself around each lookup of a pc's unwind table and each lock it takes, two system
 * calls a time, several a rule (9,600 in a run of sqlite3 under --check); inside this block,
 * sigprocmask answers those without a system call (stack_quiet_sigmask). The block is taken
 * at a capture's first new rule and kept to the capture's end: a capture that meets new code
 * often makes several (perl under --check: 949 rules in 1,217 captures off the fast path).
 */
static __thread int quiet __attribute__((tls_model("initial-exec")));
static __thread sigset_t quiet_mask, quiet_saved __attribute__((tls_model("initial-exec")));

/* A mask as the kernel keeps it: the first 64 signals, without those never blocked (SIGKILL,
 * SIGSTOP, and glibc's own two, 32 and 33). Cheap: libunwind calls sigprocmask thousands of
 * times a run (16,000 in perl's under --check). */
static uint64_t kmask(const sigset_t *set)
{
	uint64_t w;

	memcpy(&w, set, sizeof(w));
	return w & ~(1ull << (SIGKILL - 1) | 1ull << (SIGSTOP - 1) | 1ull << 31 | 1ull << 32);
}

static void quiet_begin(void)
{
	sigset_t all;
	uint64_t w;

	if (quiet++)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &quiet_saved);
	/* The mask now in force, as the kernel would report it. */
	w = kmask(&all);
	memset(&quiet_mask, 0, sizeof(quiet_mask));
	memcpy(&quiet_mask, &w, sizeof(w));
}

static void quiet_end(void)
{
	if (!--quiet)
		pthread_sigmask(SIG_SETMASK, &quiet_saved, NULL);
}

int stack_quiet_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (!quiet)
		return 0;
	/* A query, blocking more, or setting the mask in force leave it as it is. */
	if (set && how != SIG_BLOCK && !(how == SIG_SETMASK && kmask(set) == kmask(&quiet_mask)))
		return 0;
	if (old)
		*old = quiet_mask;
	return 1;
}

enum { S_NEXT, S_SIGNAL, S_STOP, S_DROP, S_UNWIND };

struct regs {
	uintptr_t pc, sp;
};

/* The step from the frame at pc (its return address; exact: the instruction a signal
 * interrupted) and RSP sp, off the fast path: its caller's pc and RSP. S_SIGNAL: it was a
 * signal's frame, pc is the interrupted instruction; S_DROP: pc is no code address (as in
 * libunwind's trace, the walk ends without it); S_UNWIND: libunwind walks the stack. */
static int slow_step(struct walk *w, int exact, struct regs *g, int *quieted)
{
	uintptr_t key = g->pc | (exact ? EXACT : 0), cfa, bp = 0, nb = 0, pc;
	const struct rule *r;
	int known = exact;          /* the caller's RBP is known: it becomes the known frame */

	if (g->pc < 0x4000)
		return S_DROP;
	if (!(r = rule_find(key))) {
		struct rule m = { .key = key };

		if (!rc.scratch || bp_at(w, g->sp, &bp) < 0)
			return S_UNWIND;
		if (!*quieted) {
			quiet_begin();      /* ended by the capture (capture_slow) */
			*quieted = 1;
		}
		unwind_enter();
		spin(&rc.lock);
		if (!(r = rule_find(key))) {
			rule_make(w, g->pc, g->sp, bp, exact, &m);
			r = rule_add(&m);
		}
		unspin(&rc.lock);
		unwind_leave();
		if (!r)
			return S_UNWIND;
	}
	switch (r->kind) {
	case R_SP:
		cfa = g->sp + (uintptr_t)(intptr_t)r->off;
		if (known && bp_at(w, g->sp, &bp) < 0)
			return S_UNWIND;
		break;
	case R_BP:
		if (bp_at(w, g->sp, &bp) < 0)
			return S_UNWIND;
		cfa = bp + (uintptr_t)(intptr_t)r->off;
		if (cfa <= g->sp)
			return S_STOP;
		known = 1;
		break;
	case R_SIGNAL: {
		uintptr_t rip, rsp, rbp;
		if (rd(w, g->sp + GREG(REG_RIP), &rip) < 0 || rd(w, g->sp + GREG(REG_RSP), &rsp) < 0 ||
		    rd(w, g->sp + GREG(REG_RBP), &rbp) < 0 || rsp <= g->sp || rsp > w->hi)
			return S_STOP;
		*w = (struct walk){ w->lo, w->hi, rip, rsp, rbp, 1 };
		g->pc = rip;
		g->sp = rsp;
		return S_SIGNAL;
	}
	case R_END:
		return S_STOP;
	default:
		return S_UNWIND;
	}
	if (cfa > w->hi || rd(w, cfa - 8, &pc) < 0 ||
	    (known && r->bp && rd(w, cfa + r->bp, &nb) < 0))
		return S_STOP;
	if (known)
		*w = (struct walk){ w->lo, w->hi, pc, cfa, r->bp ? nb : bp, 0 };
	g->pc = pc;
	g->sp = cfa;
	return S_NEXT;
}

/* This thread's stack, [lo, hi): the main thread's from the loader's start of it down to
 * its limit, another's as pthread made it. */
struct tstack {
	uintptr_t lo, size;
};
static __thread struct tstack tstack __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) int stack_bounds(uintptr_t sp)
{
	struct tstack *t = &tstack;
	uintptr_t hi;

	if (t->lo)
		return -1;              /* known, and sp is not on it */
	t->lo = 1;                  /* (none found: size 0) */
	if (agent_tid() == getpid()) {
		struct rlimit rl;
		uintptr_t size = 8u << 20;

		if (!getrlimit(RLIMIT_STACK, &rl))
			size = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1ul << 30) ? 1ul << 30 :
			       rl.rlim_cur;
		hi = ((uintptr_t)__libc_stack_end | 4095) + 1;
		t->lo = hi - size;
		t->size = size;
	} else {
		pthread_attr_t a;
		void *addr;
		size_t size;

		if (pthread_getattr_np(pthread_self(), &a))
			return -1;
		if (!pthread_attr_getstack(&a, &addr, &size) && addr) {
			t->lo = (uintptr_t)addr;
			t->size = size;
		}
		pthread_attr_destroy(&a);
	}
	return sp - t->lo < t->size ? 0 : -1;
}

/* The caller's stack by libunwind's own walk (the cache's fallback), after the agent's
 * frames, in out (room for context frames): its count. */
static int unwind_frames(uintptr_t *out)
{
	void *pcs[AGENT_FRAMES + MAX_CONTEXT];
	int n, i = 0, k = 0;

	unwind_enter();
	n = unw_backtrace(pcs, AGENT_FRAMES + context);
	unwind_leave();

	while (i < n && in_agent_code((uintptr_t)pcs[i]))
		i++;
	while (i < n && k < (int)context)
		out[k++] = (uintptr_t)pcs[i++];
	return k;
}

/* Test hooks (watchlib/test/wl-stack.c, through dlsym): while verifying, each capture is
 * made again by libunwind's own walk and the two compared frame by frame. */
static int verifying;
static struct {
	volatile int lock;
	unsigned long count[4];     /* captures, by the cache's walk, by libunwind's, mismatches */
	int n[2];                   /* the first mismatch: the walk's frames, libunwind's */
	uintptr_t bad[2][64];
} vf;

static void verify(const uintptr_t *pcs, int n, int unwound)
{
	uintptr_t ref[MAX_CONTEXT];
	int m = unwind_frames(ref), same = m == n;

	for (int i = 0; same && i < n; i++)
		same = pcs[i] == ref[i];
	spin(&vf.lock);
	vf.count[0]++;
	vf.count[unwound ? 2 : 1]++;
	if (!same && !vf.count[3]++) {
		vf.n[0] = n < 64 ? n : 64;
		vf.n[1] = m < 64 ? m : 64;
		memcpy(vf.bad[0], pcs, vf.n[0] * sizeof(*pcs));
		memcpy(vf.bad[1], ref, vf.n[1] * sizeof(*ref));
	}
	unspin(&vf.lock);
}

void ulpt_watch_stack_verify(int on)
{
	__atomic_store_n(&verifying, on, __ATOMIC_RELEASE);
}

/* The counts so far, and the first mismatch's two stacks (up to max frames each). */
void ulpt_watch_stack_verified(unsigned long count[4], uintptr_t *a, int *na, uintptr_t *b,
			       int *nb, int max)
{
	spin(&vf.lock);
	memcpy(count, vf.count, sizeof(vf.count));
	*na = vf.n[0] < max ? vf.n[0] : max;
	*nb = vf.n[1] < max ? vf.n[1] : max;
	memcpy(a, vf.bad[0], *na * sizeof(*a));
	memcpy(b, vf.bad[1], *nb * sizeof(*b));
	unspin(&vf.lock);
}

/*
 * The fast path's loops, in assembly: GCC makes 16 instructions a frame of the program's loop
 * in C, these 12 (a lookup: the slot its pc's low 16 bits name, a compare; an add, a bound, a
 * load; the frame recorded at end[i] and hashed). The agent's frames come first (a: its
 * code's start, len: its length), walked and not kept; at the program's first frame a
 * becomes the hash's multiplier, and the program's are recorded until i (from -context)
 * reaches 0. st: F_DONE, F_MISS (pc has no rule at hand; a program's pc is recorded) or
 * F_END (past the stack's end in the agent's frames).
 */
enum { F_DONE, F_MISS, F_END };

#define WALK_LOOPS \
	"3:	mov -8(%[sp]), %[pc]\n" \
	"4:	mov %[pc], %[k]\n" \
	"	sub %[a], %[k]\n" \
	"	cmp %[len], %[k]\n" \
	"	jae 5f\n" \
	"	movzwl %w[pc], %k[k]\n" \
	"	cmp %[pc], (%[tab],%[k],8)\n" \
	"	jne 7f\n" \
	"	add %c[offs](%[tab],%[k],8), %[sp]\n" \
	"	cmp %[sp], %[hi]\n" \
	"	jae 3b\n" \
	"	mov %[stop], %k[st]\n" \
	"	jmp 9f\n" \
	"5:	movabs %[mul], %[a]\n" \
	"	jmp 2f\n" \
	"1:	mov -8(%[sp]), %[pc]\n" \
	"2:	movzwl %w[pc], %k[k]\n" \
	"	mov %[pc], (%[end],%[i],8)\n" \
	"	xor %[pc], %[h]\n" \
	"	imul %[a], %[h]\n" \
	"	add $1, %[i]\n" \
	"	je 9f\n" \
	"	cmp %[pc], (%[tab],%[k],8)\n" \
	"	jne 7f\n" \
	"	add %c[offs](%[tab],%[k],8), %[sp]\n" \
	"	cmp %[sp], %[hi]\n" \
	"	jae 1b\n" \
	"	jmp 9f\n" \
	"7:	mov %[miss], %k[st]\n" \
	"9:\n"
#define WALK_OPERANDS \
	: [pc] "+r"(pc), [sp] "+r"(sp), [h] "+r"(h), [i] "+r"(i), [k] "=&r"(k), \
	  [st] "+r"(st), [a] "+r"(a) \
	: [len] "r"(len), [end] "r"(end), [tab] "r"(fast), [hi] "r"(hi), \
	  [offs] "i"(FAST_SLOTS * sizeof(uintptr_t)), [mul] "i"(HASH_MUL), \
	  [stop] "i"(F_END), [miss] "i"(F_MISS) \
	: "cc", "memory"

static inline uint32_t capture_end(uintptr_t *pcs, int n, uint64_t h, int unwound)
{
	if (__builtin_expect(verifying, 0))
		verify(pcs, n, unwound);
	return depot_put(pcs, n, h);
}

static uint32_t unwind_capture(uintptr_t *pcs)
{
	int n = unwind_frames(pcs);

	return capture_end(pcs, n, pcs_hash(pcs, n), 1);
}

/* The walk on from a frame the fast loops have no rule for (pc at sp; fp: stack_capture's
 * frame), in slow steps and the fast loops by turns. */
static __attribute__((noinline)) uint32_t capture_slow(uintptr_t *pcs, uintptr_t *fp,
						       uintptr_t pc, uintptr_t sp, uint64_t h,
						       intptr_t i, uintptr_t hi)
{
	uintptr_t *end = pcs + context, *o, a, len, k;
	struct walk w = { (uintptr_t)(fp + 2), hi, fp[1], (uintptr_t)(fp + 2), fp[0], 0 };
	struct regs g;
	int st, s, quieted = 0;
	uint32_t id;

	for (;;) {
		int prog = i != -(intptr_t)context;

		o = end + i;
		g = (struct regs){ pc, sp };
		s = slow_step(&w, 0, &g, &quieted);
		while (s == S_SIGNAL && prog && g.pc >= 0x4000 && o != end) {
			*o++ = g.pc;            /* the interrupted instruction */
			h = (h ^ g.pc) * HASH_MUL;
			if (o != end)
				s = slow_step(&w, 1, &g, &quieted);
		}
		if (s == S_DROP && prog) {
			o--;
			h = pcs_hash(pcs, (int)(o - pcs));
		}
		i = o - end;
		pc = g.pc;
		sp = g.sp;
		if (s == S_UNWIND || (s == S_SIGNAL && !prog)) {
			id = unwind_capture(pcs);
			goto out;
		}
		if (s != S_NEXT || o == end)
			break;
		st = F_DONE;
		if (prog) {
			a = HASH_MUL;
			len = 0;
			__asm__ volatile("	jmp 2f\n" WALK_LOOPS WALK_OPERANDS);
		} else {
			a = ag.self_text[0];
			len = ag.self_text[1] - a;
			__asm__ volatile("	jmp 4f\n" WALK_LOOPS WALK_OPERANDS);
		}
		if (st != F_MISS)
			break;
	}
	id = capture_end(pcs, (int)(context + i), h, 0);
out:
	if (quieted)
		quiet_end();
	return id;
}

static __attribute__((noinline)) int stack_bounds(uintptr_t sp);

/* The stack of the caller of the agent's entry point (malloc, free): the agent's own frames,
 * the first ones, are walked and left out. */
uint32_t stack_capture(void)
{
	uintptr_t pcs[MAX_CONTEXT], *end = pcs + context, *fp = __builtin_frame_address(0);
	uintptr_t pc = fp[1], sp = (uintptr_t)(fp + 2), hi, k, a, len;
	uint64_t h = HASH_SEED;
	intptr_t i = -(intptr_t)context;
	int st = F_DONE;

	if (!context)
		return 0;
	if (sp - tstack.lo >= tstack.size && stack_bounds(sp) < 0)
		return unwind_capture(pcs);
	hi = tstack.lo + tstack.size;
	a = ag.self_text[0];
	len = ag.self_text[1] - a;
	__asm__ volatile("	jmp 4f\n" WALK_LOOPS WALK_OPERANDS);
	if (__builtin_expect(st != F_DONE, 0))
		return st == F_MISS ? capture_slow(pcs, fp, pc, sp, h, i, hi) :
		       capture_end(pcs, 0, h, 0);
	return capture_end(pcs, (int)(context + i), h, 0);
}

/* Frames of the current stack from the frame whose pc is `from` (or just after it, for an
 * interrupted instruction) on; the first is reported as `from` itself. */
int stack_from(uintptr_t from, uintptr_t *out, int max)
{
	void *pcs[64];
	int n, i, k = 0;

	unwind_enter();
	n = unw_backtrace(pcs, 64);
	unwind_leave();

	if (!from) {
		/* A bad free: from the caller of the agent's free on. */
		for (i = 0; i < n && in_agent_code((uintptr_t)pcs[i]); i++)
			;
		for (; i < n && k < max; i++)
			out[k++] = (uintptr_t)pcs[i];
		return k;
	}
	for (i = 0; i < n; i++)
		if ((uintptr_t)pcs[i] >= from && (uintptr_t)pcs[i] <= from + 16)
			break;
	if (i == n)
		i = 0;
	out[k++] = from;
	for (i++; i < n && k < max; i++)
		out[k++] = (uintptr_t)pcs[i];
	return k;
}

/* libunwind's caches per thread: its global ones take a lock that blocks and restores every
 * signal, two system calls, at each frame it has not cached yet. */
void stack_init(unsigned frames)
{
	context = frames < MAX_CONTEXT ? frames : MAX_CONTEXT;
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	fast[0] = 1;                /* not 0: a pc of 0 must miss */
	rc.scratch = wl_mem_reserve(SCRATCH_BYTES);
}
