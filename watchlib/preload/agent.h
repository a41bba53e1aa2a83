/*
 * The ulpt-watch agent: the shared object ulpt-watch puts in LD_PRELOAD. It reads its
 * configuration from ULPT_WATCH_OPTIONS (set by the tool; options.inc), watches what it is asked
 * to, replaces the program's malloc family for --heap and --check, and writes its results to
 * the file its result option names (TAB-separated records written by agent.c and report.c,
 * read by watchlib/cli/report.c; their table is results.inc).
 *
 * Files: agent.c (start, configuration, results), ../common/ (shared with the tool: options.c,
 * the settings' one parser; results.c, the result records), heap.c (the allocator: red zones,
 * quarantine, the malloc family), fault.c (the fault handler, general registers only),
 * strmem.c (libc's memory and string functions, checked against the blocks), wcsmem.c (the
 * wide ones and the multibyte converters; strmem.h between them),
 * stack.c (the stack depot: backtraces at malloc, free and errors, each kept once),
 * symbolize.c (symbols with libelf and libdw), report.c (error reports), leak.c (the
 * leak check at exit), suppress.c (the suppressions file's rules), cxx.c (C++'s operator new
 * and delete), signals.c (the program's own handlers of the library's signals), gdb.c
 * (ulpt-gdb's side), count.c (--heap's count table).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef WL_AGENT_H
#define WL_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "wl-internal.h"
#include "options.h"
#include "results.h"

enum heap_mode { HEAP_OFF, HEAP_WATCH, HEAP_CHECK };

/* The arena every block of --heap and --check comes from. Each block is end-aligned to a line;
 * with --check a red-zone line before it is its left red zone and the previous slot's right
 * one (with --redzone=exact the denied bytes before it in its first line are, when there are
 * some; large blocks have more lines on both sides; heap.c):
 *   [red zone | slack | user bytes ..............][red zone | slack | next block ...]
 * owner[] maps every line of the arena to the block whose slot holds it. */
#define LINE_SHIFT      7
#define LINE_BYTES      (1u << LINE_SHIFT)
#define ARENA_BYTES     (64ull << 30)
#define MAX_BLOCKS      (1u << 26)

enum blk_state { BLK_NONE, BLK_LIVE, BLK_FREED };

/* The allocating family, which must match the releasing one (cxx.c): malloc (and calloc,
 * realloc, memalign...) with free, new with delete, new[] with delete[]. */
enum alloc_how { HOW_MALLOC, HOW_NEW, HOW_NEW_ARRAY };

struct blk {
	uintptr_t user;             /* the pointer the program got */
	size_t size;                /* what it asked for */
	uint32_t first_line;        /* the slot: red zone line first_line, block lines after it */
	uint32_t lines;             /* the slot's lines, its red zones included */
	uint32_t alloc_stack, free_stack;     /* stack depot ids (0: none) */
	pid_t alloc_tid, free_tid;
	uint8_t state;
	uint8_t overflowed;         /* an overflow of it was reported: its canary says no more */
	uint8_t how;                /* enum alloc_how: what allocated it */
	uint32_t next;              /* quarantine and free-list link */
};

struct agent {
	enum heap_mode heap;
	unsigned heap_kinds;        /* WL_READ | WL_WRITE denied on heap blocks (--heap) */
	int heap_log;               /* --heap's (--precise's) accesses go to an access log */
	pid_t log_tid;              /* the thread that has it (the main thread) */
	int heap_count;             /* --heap's accesses go to a count table (count.c) */
	struct ulpt_count *count_table;     /* its entries for the arena's lines, from line 0 */
	void *count_base;           /* what ulpt_count_start takes: the table's for address 0 */
	unsigned align;             /* 0: auto (the size's own alignment, 8 to 16) */
	int redzone_exact;          /* --redzone=exact: no red-zone line where the slack serves */
	int precise;                /* --precise: lines holding bytes outside a block are denied */
	int bounds;                 /* --bounds on ULPT: partial lines denied, the block's bytes
	                               in them opened by the CPU's byte bounds (heap.c) */
	int verbose;
	int leaks;                  /* 0 none, 1 definite (direct), 2 all (indirect too) */
	int gen_suppressions;
	uint64_t suppressed;        /* reports a suppression rule matched */
	uint64_t leak_ns;           /* the leak check's own time at the end, its report included */
	int result_fd;
	int log_fd;                 /* log_file, or -1 (reports to stderr) */
	pid_t pid;                  /* the process that writes the results */
	char *arena;
	uint32_t *owner;            /* per arena line: block id, 0 for none */
	struct blk *blocks;
	uint64_t heap_reads, heap_writes, heap_allocs;
	uint64_t errors;
	uint64_t faults, hits, false_faults, handler_ticks;   /* heap faults (watch.c counts its own) */
	uintptr_t libc_text[2][2];  /* libc's and the dynamic loader's code: [lo, hi) */
	uintptr_t self_text[2];     /* the agent's own code */
	uintptr_t self_data[2];     /* and its writable data (never a leak check's root) */
	int ready;
};
extern struct agent ag WL_HIDDEN;

/* This thread is inside the agent (its own accesses and allocations are not the program's). */
extern __thread int in_agent __attribute__((tls_model("initial-exec"))) WL_HIDDEN;

static inline int in_arena(uintptr_t a)
{
	return ag.arena && a - (uintptr_t)ag.arena < ARENA_BYTES;
}

/* With --precise, --redzone=exact or byte bounds a block's partial first and last lines are
 * denied: with bounds the CPU lets the block's own bytes there through; otherwise every
 * access to them is decided byte by byte in the fault handler. Without any of them they are
 * open and their bytes outside the block hold canaries (heap.c). */
static inline int exact_lines(void)
{
	return ag.precise || ag.redzone_exact || ag.bounds;
}

static inline uint32_t line_of(uintptr_t a)
{
	return (uint32_t)((a - (uintptr_t)ag.arena) >> LINE_SHIFT);
}

/* The id of the slot (live, freed or free) that holds arena address a, or 0: owner[] is
 * written before a block's address is handed out (heap.c). */
static inline uint32_t slot_id_of(uintptr_t a)
{
	return in_arena(a) ? __atomic_load_n(&ag.owner[line_of(a)], __ATOMIC_ACQUIRE) : 0;
}

/* agent.c */
void agent_init(void) WL_HIDDEN;
void agent_write(const char *s, size_t n) WL_HIDDEN;       /* to the result file */
pid_t agent_tid(void) WL_HIDDEN;                           /* gettid(), cached */
void agent_halt(void) WL_HIDDEN;        /* after a report: ends the process if halt_on_error */
/* The process's end (canaries, leaks, results), once: the status error_exitcode asks for, or
 * -1 for the program's own. */
int agent_finish(void) WL_HIDDEN;
int agent_err_fd(void) WL_HIDDEN;       /* where reports go: the log file or stderr */
char *agent_read_file(const char *path) WL_HIDDEN;         /* whole, in watchlib's memory */
/* One line: a reservation of bytes of address space for what failed (RLIMIT_AS, usually). */
void agent_no_space(const char *what, unsigned long long bytes) WL_HIDDEN;
struct maps_entry {
	unsigned long lo, hi, dev, ino;
	char *perms, *path;         /* into the line */
};
int agent_maps_line(char *line, struct maps_entry *e) WL_HIDDEN;   /* one of /proc/self/maps */
const char *agent_watch_name(int id) WL_HIDDEN;            /* -v's name of a watch, or NULL */

/* heap.c */
int heap_init(void) WL_HIDDEN;            /* -1: its address space (said why) */
void heap_set_lines(uint32_t first, uint32_t n, unsigned deny) WL_HIDDEN;
void heap_lock(void) WL_HIDDEN;
void heap_unlock(void) WL_HIDDEN;
void heap_flush_deferred(void) WL_HIDDEN;  /* the frees signal handlers made in the agent */
uint32_t heap_nblocks(void) WL_HIDDEN;          /* block ids in use are below this */
uint32_t heap_bump_line(void) WL_HIDDEN;        /* arena lines in use are below this */
/* For C++'s operators (cxx.c): whether the agent serves allocations now (else they go to
 * libstdc++'s own operators), an allocation of a family, and its release by one. */
int heap_serves(void) WL_HIDDEN;
void *heap_new(size_t n, size_t align, enum alloc_how how) WL_HIDDEN;
void heap_delete(void *p, enum alloc_how how) WL_HIDDEN;

/* gdb.c: ulpt-gdb's entry points (exported: its GDB extension calls them in the program),
 * and the after-call whose watch hits are being made (fault.c sets it). */
void ulpt_gdb_ready(void);
struct gdb_after {
	struct ulpt_fault *f;       /* the after-call's record, or NULL outside one */
	int stepping;               /* its hits end a debugger's single step (gdb.c) */
};
extern __thread struct gdb_after gdb_after __attribute__((tls_model("initial-exec"))) WL_HIDDEN;
int gdb_step_fault(const struct ulpt_fault *f) WL_HIDDEN;
void gdb_step_end(struct ulpt_fault *f) WL_HIDDEN;
int gdb_queue_signal(int sig, int take) WL_HIDDEN;    /* its batches' signal (signals.c) */

/* fault.c */
enum ulpt_action agent_fault(struct ulpt_fault *f, void *arg) WL_HIDDEN;
/* --heap with the access log: the records since the last drain, counted as faults are. */
void heap_log_records(const struct ulpt_log_rec *r, size_t n, void *arg) WL_HIDDEN;
size_t heap_log_raw(struct ulpt_log_ring *r, void *arg) WL_HIDDEN;
/* --check --precise's: the errors in the log's records, reported at the next heap_log_sync. */
size_t heap_check_log_raw(struct ulpt_log_ring *r, void *arg) WL_HIDDEN;
extern uint64_t async_unsure WL_HIDDEN;
/* Before a block's state changes (malloc with --check, free, realloc), at fork and at exit:
 * the log's records, counted against the blocks as they were when the accesses were made, and
 * --check --precise's errors found there reported. */
void heap_log_sync(void) WL_HIDDEN;
/* Around the agent's own accesses to watched blocks (begin 1, then 0): the program's records
 * before them are counted, theirs are dropped (the log's threshold events included), as their
 * faults are not counted. */
void heap_log_own(int begin) WL_HIDDEN;
/* count.c: --heap's count table. heap_count_init maps it (with every delivery: the program
 * sees the same address space); heap_count_start gives the calling thread its share (0, or a
 * negative errno); heap_count_take adds up and clears the counters of block id's slot, with
 * the heap's lock held unless to is COUNT_OWN; heap_count_finish takes every line's, at the
 * end, into the agent's totals. */
enum count_to {
	COUNT_BLOCK,                /* the block's: its lines' counts are hits, the rest false */
	COUNT_FALSE,                /* a freed or new slot's: all false faults */
	COUNT_OWN,                  /* the agent's own accesses: dropped */
};
int heap_count_init(void) WL_HIDDEN;
int heap_count_start(void) WL_HIDDEN;
void heap_count_take(uint32_t id, enum count_to to) WL_HIDDEN;
void heap_count_false(uint32_t first, uint32_t n) WL_HIDDEN;   /* lines of no block's */
void heap_count_finish(void) WL_HIDDEN;
/* signals.c: the agent's stand-in for the fatal signals' SIG_DFL (--check). */
void signals_init(void) WL_HIDDEN;
/* strmem.c: the checked memory and string functions. */
void strmem_init(void) WL_HIDDEN;

/* report.c: error kinds, and what the after-call of an error does. */
enum err_kind { ERR_OVERFLOW = 1, ERR_UAF, ERR_DOUBLE_FREE, ERR_INVALID_FREE, ERR_MISMATCH,
		ERR_BAD_USABLE };
struct err {
	enum err_kind kind;
	unsigned access;            /* WL_READ, WL_WRITE, or 0 for a free */
	uintptr_t addr;
	size_t size;
	uintptr_t ip;
	pid_t tid;
	uint32_t block;             /* 0: none */
	const char *found;          /* NULL: at the access; "free", "realloc", "exit": by the canary */
	const char *fn;             /* the libc function the range was given to (strmem.c), or the
				     * call a pointer was given to (access 0: NULL for free) */
	const char *pair;           /* a mismatch's "malloc vs operator delete", or NULL */
};
/* fault.c: the error of an access [s, e) (0: none; ip is the instruction, 0 for a range given
 * to a libc function; reads_only allows libc's chunked reads) and the address to report. */
enum err_kind heap_classify(uintptr_t s, uintptr_t e, uintptr_t ip, int reads_only,
			    uint32_t *bid) WL_HIDDEN;
uintptr_t heap_bad_byte(enum err_kind k, uint32_t bid, uintptr_t s) WL_HIDDEN;
/* stack.c: the stack of the caller of malloc or free (up to frames of it, as
 * --malloc-context-size says): a depot id, 0 if none. */
void stack_init(unsigned frames) WL_HIDDEN;
uint32_t stack_capture(void) WL_HIDDEN;
/* A fork's wait for the backtraces under way and the report's locks, and their release (in
 * the parent, or in the child: child 1); heap.c's atfork handlers. */
void report_fork_lock(void) WL_HIDDEN;
void report_fork_unlock(int child) WL_HIDDEN;
void report_error(struct err *e) WL_HIDDEN;
void heap_check_canaries(void) WL_HIDDEN;      /* every live block's, at exit */
void report_hit(const struct wl_hit *h, void *arg) WL_HIDDEN;
/* A group of lost blocks (count of them, bytes in all, first one of them, their allocation
 * stack): reported unless a rule suppresses it (then 1). And the total, after them. */
int report_leak(uint32_t stack, uint32_t first, uint64_t bytes, uint64_t count, int indirect) WL_HIDDEN;
void report_leak_summary(uint64_t bytes, uint64_t objects) WL_HIDDEN;

/* leak.c: the leak check, at the process's end. */
void leak_check(void) WL_HIDDEN;

/* suppress.c: the rules of the suppressions file; whether one of kind matches one of names
 * (each frame's function, module and source file). */
int suppress_load(const char *path, char *err, size_t errlen) WL_HIDDEN;
int suppress_match(const char *kind, const char *const *names, int n) WL_HIDDEN;

#endif
