/*
 * libulpt: User Level Page Tables for programs.
 *
 * A program denies read, write or execute rights on its own pages, and read or write rights
 * on 128-byte lines within them; an access that breaks a denial calls the program's handler,
 * a plain C function, in the faulting thread. Two backends give the same API:
 *   ULPT      the ULPT CPU extension through the Linux arch_prctl API (docs/linux-api.md):
 *             a rights change is one store, a fault reaches the handler without the kernel;
 *   mprotect  any Linux: mprotect() and SIGSEGV, page granularity only.
 *
 * Every function returns 0 (or a value >= 0) on success and a negative errno on failure.
 * See the manual pages in libulpt/man for each function.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef LIBULPT_ULPT_H
#define LIBULPT_ULPT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ULPTINLINE
#define ULPTINLINE static inline
#endif

#define ULPT_PAGE_SIZE  4096u
#define ULPT_LINE_SIZE  128u

/* Rights to deny, and the kind of a faulting access. */
#define ULPT_DENY_R     1u      /* loads (and the read of a read-modify-write) */
#define ULPT_DENY_W     2u      /* stores */
#define ULPT_DENY_X     4u      /* instruction fetch (pages only) */
#define ULPT_DENY_RW    (ULPT_DENY_R | ULPT_DENY_W)
#define ULPT_DENY_LOG   0x100u  /* with the rights above: the page's denied reads and writes are
                                   logged, not delivered, in threads with an access log
                                   (ulpt_log_start); a page property (see ulpt_log_start(3)) */
#define ULPT_PAGE_MASK_ (7u | ULPT_DENY_LOG)     /* what a page's word 0 holds */

enum ulpt_backend {
	ULPT_BACKEND_AUTO = 0,      /* ULPT if the CPU and kernel have it, else mprotect */
	ULPT_BACKEND_ULPT = 1,
	ULPT_BACKEND_MPROTECT = 2,
};

/* Why an access was denied. */
enum ulpt_reason {
	ULPT_REASON_PAGE_RIGHTS = 1,
	ULPT_REASON_LINE_RIGHTS = 2,
	ULPT_REASON_MALFORMED_ENTRY = 3,
	ULPT_REASON_KERNEL = 4,     /* mprotect backend with userfaultfd: a system call wrote the
	                               page (ulpt_set_handler(3)); never on ULPT */
};

/* What the handler decides. */
enum ulpt_action {
	ULPT_RETRY = 0,     /* the handler changed the rights: run the instruction again */
	ULPT_PERMIT,        /* let the access through once; the rights stay as they are */
	ULPT_SKIP,          /* do not run the instruction: continue at fault->next_ip */
	ULPT_DEFAULT,       /* give up: the process gets the default SIGSEGV behaviour */
	ULPT_PERMIT_STEP,   /* as ULPT_PERMIT, and once that instruction has completed, call the
	                       handler again with the same record and fault->after = 1 (its return
	                       value is ignored): a watchpoint reads the value just written. */
};
/*
 * ULPT_PERMIT_STEP, the second call ("after-call"):
 * - ULPT backend: the CPU delivers an after event once the instruction has completed
 *   (docs/spec.md R-RET-4), with no signal, TF or kernel entry; the after-call runs once the
 *   handler has returned, with every register saved and faults delivered as usual (as in a
 *   signal handler); the program's own TF (a debugger) is left alone. mprotect backend: the
 *   instruction runs out of line (a copy in a trampoline of the thread's, followed by a read of
 *   a guard page; calls and returns are done on the context; other control transfers, or
 *   without capstone, it is single-stepped with RFLAGS.TF), and the after-call runs in the
 *   library's SIGSEGV (or SIGTRAP) handler, so it must be async-signal-safe there. In every
 *   call the handler must not touch memory whose rights it denies;
 * - an instruction that faults again before it completes (a read-modify-write denied for read
 *   and for write) calls the handler for each fault as usual; the after-call happens once, with
 *   the record of the last fault whose decision was ULPT_PERMIT_STEP (a later plain ULPT_PERMIT
 *   or ULPT_RETRY keeps it; a later ULPT_SKIP cancels it: the instruction never completes);
 * - on the mprotect backend ulpt_init installs a SIGTRAP handler that passes every trap that
 *   is not its own to the handler the program had before; ulpt_fini puts that one back.
 */

/* A fault, as the handler sees it. */
struct ulpt_fault {
	uintptr_t addr;     /* first denied byte */
	uintptr_t start;    /* first byte of the access: it covers [start, start + size) */
	size_t size;        /* bytes; 0 for a fetch, and on mprotect if not decoded */
	unsigned kind;      /* ULPT_DENY_R, _W or _X: the kind of access */
	unsigned reason;    /* enum ulpt_reason */
	uintptr_t ip;       /* the faulting instruction */
	uint64_t entry[2];  /* ULPT: the table entry as read (page word, line word); mprotect:
	                       { the page's denied rights, 0 } */
	pid_t tid;          /* the faulting thread */
	uintptr_t next_ip;  /* ULPT_SKIP: where to continue (the handler sets it); in the
	                       after-call: where the program goes on (the handler may change
	                       it, with every register as the program's there) */
	int after;          /* 1 in the second call after ULPT_PERMIT_STEP, else 0 */
	uint64_t rflags;    /* after-call: the program's RFLAGS as it goes on (TF set: a debugger
	                       single-steps it); the handler may clear TF. mprotect backend, first
	                       call: its RFLAGS at the fault. Else 0 */
};

typedef enum ulpt_action (*ulpt_handler_t)(struct ulpt_fault *fault, void *arg);

/* Handler flags. */
#define ULPT_HANDLER_GPR_ONLY  1u   /* the handler was compiled with -mgeneral-regs-only: the
                                       entry stub saves no vector state (cheaper) */

int ulpt_init(enum ulpt_backend backend);
int ulpt_fini(void);
int ulpt_backend(void);
const char *ulpt_backend_name(int backend);
int ulpt_set_handler(ulpt_handler_t handler, void *arg, unsigned flags);
int ulpt_protect(void *addr, size_t len, unsigned deny);
int ulpt_protect_lines(void *addr, size_t len, unsigned deny);
int ulpt_get(const void *addr, unsigned *page_deny, unsigned *line_deny);
int ulpt_protect_line_word(void *addr, uint64_t word);

/* Byte bounds (docs/spec.md 4.5, ulpt_page_bounds(3)): for line i of a page, bytes
 * [line[i][0], line[i][1]) of the line (offsets 0..128; hi above 128 counts as 128; lo >= hi:
 * none) stay open when the line is denied. */
struct ulpt_bounds { uint8_t line[32][2]; } __attribute__((aligned(64)));
int ulpt_protect_bounds(void *addr, const struct ulpt_bounds *b);
/* Points the page that holds addr at b only if it has no bounds (-EBUSY if it has): for a
 * component that shares pages with another that may have given them bounds of its own. */
int ulpt_claim_bounds(void *addr, const struct ulpt_bounds *b);

/* Memory libulpt mapped for itself (its fault records, the mprotect backend's alternate signal
 * stack, the out-of-line page): 1 and the first such range that overlaps [lo, hi) in *rlo and
 * *rhi, 0 if none does, -EINVAL for lo > hi or a NULL pointer. For a tool that walks the
 * process's memory (a leak checker's roots) and must leave libulpt's own out. */
int ulpt_owned(uintptr_t lo, uintptr_t hi, uintptr_t *rlo, uintptr_t *rhi);

/* --- inline fast paths -------------------------------------------------------------------
 * On the ULPT backend a page's entry is two words in the table view: word 0 the page rights
 * and the address of its byte bounds, word 1 two bits per line (bit 2i: no read of line i,
 * bit 2i+1: no write). These functions are a store, a load, or a load and a store there, and
 * call the general functions otherwise. */
struct ulpt_lib_state_ {
	volatile uint64_t *view;    /* the table view, or NULL when the backend is not ULPT */
	int backend;                /* enum ulpt_backend, 0 before ulpt_init */
};
extern struct ulpt_lib_state_ ulpt_lib_state_;

#define ULPT_VA_LIMIT_  (1ull << 47)    /* the table covers addresses below this */
/* Word 0 bits 49:9: bits 46:6 of the address of the page's bounds (the ABI's ULPT_BOUNDS_MASK).
 * The rights stores below keep them: a program sets bounds once and changes rights often. */
#define ULPT_BOUNDS_MASK_  0x0003fffffffffe00ull

ULPTINLINE volatile uint64_t *ulpt_entry_(const void *addr)
{
	return ulpt_lib_state_.view + ((uintptr_t)addr >> 12) * 2;
}

/* Sets the denied rights of the page that holds addr (any address in it), keeping its bounds:
 * a load and a store of word 0 (see ulpt_line_deny about concurrent changes of one page). */
ULPTINLINE int ulpt_page_deny(void *addr, unsigned deny)
{
	if (ulpt_lib_state_.view && (uintptr_t)addr < ULPT_VA_LIMIT_ && !(deny & ~ULPT_PAGE_MASK_)) {
		volatile uint64_t *w = ulpt_entry_(addr);

		*w = (*w & ULPT_BOUNDS_MASK_) | deny;
		return 0;
	}
	return ulpt_protect((void *)((uintptr_t)addr & ~(uintptr_t)(ULPT_PAGE_SIZE - 1)),
			    ULPT_PAGE_SIZE, deny);
}

/* Sets the denied rights (ULPT_DENY_R, _W) of the 128-byte line that holds addr: a load and a
 * store of the page's line word (no locked instruction: cheaper). Other threads that change
 * lines of the same page at the same time must synchronise with the caller, with a lock or
 * with their own locked instructions on the view. */
ULPTINLINE int ulpt_line_deny(void *addr, unsigned deny)
{
	if (ulpt_lib_state_.view && (uintptr_t)addr < ULPT_VA_LIMIT_ && !(deny & ~3u)) {
		volatile uint64_t *w = &ulpt_entry_(addr)[1];
		unsigned shift = 2 * (((uintptr_t)addr >> 7) & 31);

		*w = (*w & ~(3ull << shift)) | (uint64_t)deny << shift;
		return 0;
	}
	return ulpt_protect_lines((void *)((uintptr_t)addr & ~(uintptr_t)(ULPT_LINE_SIZE - 1)),
				  ULPT_LINE_SIZE, deny);
}

/* Sets the rights of all 32 lines of the page that holds addr from one line word: bits 2i and
 * 2i+1 deny reads and writes of line i (ULPT_DENY_R, ULPT_DENY_W shifted by 2i). One store on
 * the ULPT backend; on the mprotect backend the page gets the union of its lines' rights (see
 * ulpt_protect_line_word). For tools that compute a page's lines at once (watchpoints, heap
 * red zones). */
ULPTINLINE int ulpt_page_lines(void *addr, uint64_t word)
{
	if (ulpt_lib_state_.view && (uintptr_t)addr < ULPT_VA_LIMIT_) {
		ulpt_entry_(addr)[1] = word;
		return 0;
	}
	return ulpt_protect_line_word(addr, word);
}

/* The rights denied on the page that holds addr (page rights only, with ULPT_DENY_LOG), or a
 * negative errno. */
ULPTINLINE int ulpt_page_rights(const void *addr)
{
	unsigned page;
	int r;

	if (ulpt_lib_state_.view && (uintptr_t)addr < ULPT_VA_LIMIT_)
		return (int)(ulpt_entry_(addr)[0] & ULPT_PAGE_MASK_);
	r = ulpt_get(addr, &page, NULL);
	return r < 0 ? r : (int)page;
}

/* Points the page that holds addr at the bounds b (NULL: none), keeping its rights: a load and
 * a store of word 0, the field being b's address bits 46:6. b stays the caller's: it must stay
 * valid and 64-byte aligned while set, and a plain store to its bytes applies to the next
 * access. 0, or -EINVAL (b misaligned or not below 2^47, addr not covered), -ENOSYS before
 * ulpt_init. */
ULPTINLINE int ulpt_page_bounds(void *addr, const struct ulpt_bounds *b)
{
	if (ulpt_lib_state_.view && (uintptr_t)addr < ULPT_VA_LIMIT_ &&
	    !((uintptr_t)b & ~(uintptr_t)(ULPT_VA_LIMIT_ - 64))) {
		volatile uint64_t *w = ulpt_entry_(addr);

		*w = (*w & ~ULPT_BOUNDS_MASK_) | (uint64_t)(uintptr_t)b << 3;
		return 0;
	}
	return ulpt_protect_bounds(addr, b);
}

/*
 * The access log (docs/spec.md 6.2, ulpt_log_start(3)). A thread with a log has the denied
 * reads and writes of ULPT_DENY_LOG pages recorded in a ring of its own instead of delivered
 * to the handler: the access completes and fn gets the records later, in batches, when
 * thresh of them wait (thresh 0: never), when the ring is full, at ulpt_log_drain and at
 * ulpt_log_stop; or on a consumer thread (ulpt_log_consumer_start). The ULPT backend has the
 * CPU append them; the mprotect backend emulates it with the same ring. fn never sees a
 * record twice, and no record is dropped.
 */
struct ulpt_log_rec {
	uintptr_t start;    /* first byte of the access: it covers [start, start + size) */
	size_t size;        /* bytes (65535 for a larger access); mprotect: 0 if not decoded */
	unsigned kind;      /* ULPT_DENY_R or ULPT_DENY_W */
	unsigned reason;    /* ULPT_REASON_PAGE_RIGHTS or ULPT_REASON_LINE_RIGHTS */
	uintptr_t ip;       /* the instruction */
	uint64_t value;     /* has_value: the first min(size, 8) bytes written, zero-extended */
	int has_value;      /* value holds the bytes written (writes only) */
};

typedef void (*ulpt_log_fn)(const struct ulpt_log_rec *recs, size_t n, void *arg);

int ulpt_log_start(unsigned size_shift, unsigned thresh, ulpt_log_fn fn, void *arg);
int ulpt_log_drain(void);
int ulpt_log_stop(void);
/* A drain that reads the ring itself (ulpt_log_peek, ulpt_log_consume below) instead of the
 * batches of fn, for consumers that keep the per-record cost to a few instructions: called
 * wherever fn would be, it consumes what waits and returns how many it consumed. It runs in
 * the ULPT handler without the vector state saved: build it -mgeneral-regs-only. NULL goes
 * back to fn. */
struct ulpt_log_ring;
typedef size_t (*ulpt_log_raw_fn)(struct ulpt_log_ring *ring, void *arg);
int ulpt_log_set_raw(ulpt_log_raw_fn raw, void *arg);
int ulpt_log_consumer_start(void);
int ulpt_log_consumer_stop(void);

/* The ring itself, for reading records without the callback: 2^size_shift slots, a record as
 * the CPU writes it (docs/spec.md 6.2), consumed in order from head. One consumer at a time:
 * the calling thread, which the library's own drains (at a full ring, at the threshold) only
 * interrupt at an access to a logged page; not while a consumer thread runs. */
struct ulpt_log_slot {
	uint64_t start;
	uint64_t info;      /* bits 2:0 kind, 15:8 reason, 31:16 size, 32 value valid, 63 valid */
	uint64_t ip;
	uint64_t value;
};
struct ulpt_log_ring {
	struct ulpt_log_slot *slots;
	uint64_t mask;      /* slots - 1 */
	uint64_t head;      /* the next record to read */
};
#define ULPT_LOG_VAL_   (1ull << 32)
#define ULPT_LOG_V_     (1ull << 63)

/* The calling thread's ring, or NULL without a log. */
struct ulpt_log_ring *ulpt_log_ring(void);

/* The oldest record not consumed, or NULL. */
ULPTINLINE struct ulpt_log_slot *ulpt_log_peek(struct ulpt_log_ring *r)
{
	struct ulpt_log_slot *s = &r->slots[__atomic_load_n(&r->head, __ATOMIC_RELAXED) & r->mask];

	return (__atomic_load_n(&s->info, __ATOMIC_ACQUIRE) & ULPT_LOG_V_) ? s : NULL;
}

/* Frees the slot ulpt_log_peek returned, once read, and moves on. Between the two, an access
 * to a logged page may drain the ring under the reader: ulpt_log_next has no such gap. */
ULPTINLINE void ulpt_log_consume(struct ulpt_log_ring *r, struct ulpt_log_slot *s)
{
	__atomic_store_n(&s->info, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELAXED);
}

/* Takes the next record into *rec: 1, or 0 if none waits. */
ULPTINLINE int ulpt_log_next(struct ulpt_log_ring *r, struct ulpt_log_rec *rec)
{
	struct ulpt_log_slot *s = ulpt_log_peek(r);
	uint64_t info;

	if (!s)
		return 0;
	info = s->info;
	rec->start = s->start;
	rec->size = (size_t)(info >> 16 & 0xffff);
	rec->kind = (unsigned)(info & 7);
	rec->reason = (unsigned)(info >> 8 & 0xff);
	rec->ip = s->ip;
	rec->value = s->value;
	rec->has_value = (info & ULPT_LOG_VAL_) != 0;
	ulpt_log_consume(r, s);
	return 1;
}

/*
 * The count table (docs/spec.md 6.3, ulpt_count_start(3)): the log of a tool that only counts.
 * A thread with a count table has each denied read and write of a ULPT_DENY_LOG page counted
 * instead of delivered: the access completes and one is added, atomically, to the read or the
 * write counter of the 128-byte line that holds its first byte (a read-modify-write adds to
 * both), with nothing to drain. The counters of the line at addr are the struct ulpt_count at
 * base + (addr >> 7) * 16; the caller maps the part of the table for the lines it logs, and
 * may share one table between threads. The ULPT backend has the CPU add; the mprotect backend
 * emulates it.
 */
struct ulpt_count {
	uint64_t reads;
	uint64_t writes;
};

/* In a thread with an access log the table takes its place, and its memory (the log's records
 * go to its callback first). */
int ulpt_count_start(void *base);
int ulpt_count_stop(void);

/* The base of a table whose first entry is the line that holds lo (a table at `table' for
 * the lines from lo on): what ulpt_count_start takes. */
ULPTINLINE void *ulpt_count_base(void *table, const void *lo)
{
	return (void *)((uintptr_t)table - ((uintptr_t)lo >> 7) * sizeof(struct ulpt_count));
}

/* The counters of the line that holds addr, in the table at base. Read them with a load, or
 * take them (read and clear) with __atomic_exchange_n: no addition is lost. */
ULPTINLINE struct ulpt_count *ulpt_count_line(void *base, const void *addr)
{
	return (struct ulpt_count *)((uintptr_t)base +
				     ((uintptr_t)addr >> 7) * sizeof(struct ulpt_count));
}

/*
 * Modeled time (docs/spec.md 11.1, ulpt_model_begin(3)). On QEMU's -cpu ulpt,ulpt-model=on
 * (scripts/ulpt-run --model) the machine counts the instructions it executes and the ULPT
 * events, and prices them in modeled cycles; a program marks the region it measures. The
 * region is the whole machine's (every CPU, the kernel included), one at a time. Elsewhere
 * the calls return -ENOTSUP and change nothing. Header-only: a CPUID with the model's leaf.
 */
struct ulpt_model {
	uint64_t cycles;            /* instructions x CPI + the events' charges */
	uint64_t insns_user;        /* instructions executed at CPL 3 */
	uint64_t insns_kernel;      /* ... at CPL 0 */
	uint64_t deliveries;        /* ULPT deliveries, after events included */
	uint64_t returns;           /* UIRETs */
	uint64_t returns_permit;    /* UIRETs with PERMIT or STEP */
	uint64_t after_events;      /* after events (ULPT_PERMIT_STEP) */
	uint64_t view_stores;       /* rights changes through the view */
	uint64_t remote_syncs;      /* other CPUs synced after a view store */
	uint64_t escalations;       /* violations that went to the kernel */
	uint64_t kernel_entries;    /* exceptions, interrupts and system calls from CPL 3 */
	uint64_t log_records;       /* records appended to access logs, and counter additions */
	uint64_t log_events;        /* log events (a threshold of records reached) */
	uint64_t bounds_reads;      /* lines' byte bounds read (ulpt_page_bounds) */
};

/* The CPUID interface; the same values as include/ulpt/arch.h's ULPT_MODEL_*. */
#define ULPT_MODEL_LEAF_      0x4c505400u
#define ULPT_MODEL_SIGNATURE_ 0x54504c55u
#define ULPT_MODEL_NFIELDS_   14u

ULPTINLINE uint32_t ulpt_model_op_(uint32_t op, uint32_t *b, uint32_t *d)
{
	uint32_t a = ULPT_MODEL_LEAF_, c = op;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(*b), "+c"(c), "=d"(*d) :: "memory");
	return a;
}

/* 1 if the machine models time, else 0. */
ULPTINLINE int ulpt_model_available(void)
{
	uint32_t b, d;

	ulpt_model_op_(0, &b, &d);
	return b == ULPT_MODEL_SIGNATURE_;
}

/* Opens the measured region (a region already open starts again here): 0 or -ENOTSUP. */
ULPTINLINE int ulpt_model_begin(void)
{
	uint32_t b, d;

	if (!ulpt_model_available())
		return -ENOTSUP;
	ulpt_model_op_(1, &b, &d);
	return 0;
}

/* Closes the region and, if m is not NULL, fills *m with its counts: 0, -ENOTSUP, or -EINVAL
 * when no region is open. */
ULPTINLINE int ulpt_model_end(struct ulpt_model *m)
{
	uint64_t *f = (uint64_t *)m;
	uint32_t b, d;

	if (!ulpt_model_available())
		return -ENOTSUP;
	if (ulpt_model_op_(2, &b, &d) != 1)
		return -EINVAL;
	for (uint32_t i = 0; m && i < ULPT_MODEL_NFIELDS_; i++) {
		uint32_t a = ulpt_model_op_(0x100u + i, &b, &d);
		f[i] = b == 1 ? (uint64_t)d << 32 | a : 0;
	}
	return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* LIBULPT_ULPT_H */
