/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
#ifndef _UAPI_ASM_X86_ULPT_H
#define _UAPI_ASM_X86_ULPT_H

#include <linux/types.h>

/*
 * User Level Page Tables (ULPT): the table as a process sees it through its
 * view, the frame the CPU gives the handler, and the arch_prctl() API
 * (ARCH_ULPT_* in <asm/prctl.h>). See Documentation/x86/ulpt.rst.
 */

/* The view: the entry of the page at address va is the 16 bytes at view + (va >> 12) * 16 */
#define ULPT_VIEW_SIZE		0x8000000000ULL	/* 2^39: 16 bytes per page of 2^47 */
#define ULPT_ENTRY_SIZE		16

/* Leaf entry word 0 (page rights) and word 1 (two bits per 128-byte line). */
#define ULPT_NR			0x1ULL
#define ULPT_NW			0x2ULL
#define ULPT_NX			0x4ULL
#define ULPT_LOG		0x100ULL /* denied reads and writes are logged, not delivered */
#define ULPT_LINE_NR(i)		(1ULL << (2 * (i)))
#define ULPT_LINE_NW(i)		(1ULL << (2 * (i) + 1))

/*
 * The frame the CPU writes for the handler: 64 bytes at the handler's RSP, read back by
 * UIRET. The macros are the architecture's (token-identical to the ULPT ABI header, so
 * both may be included).
 */
struct ulpt_frame {
	__u64 addr;		/* first denied byte of the access */
	__u64 info;		/* ULPT_INFO_*: kind, kinds let through, reason, size, PERMIT */
	__u64 entry0;		/* the leaf entry as read: page rights */
	__u64 entry1;		/* line rights */
	__u64 rip;		/* the faulting instruction */
	__u64 rflags;
	__u64 rsp;
	__u64 start;		/* first byte of the access: it is [start, start + size) */
};

#define ULPT_KIND_R            1u
#define ULPT_KIND_W            2u
#define ULPT_KIND_X            4u
#define ULPT_REASON_PAGE       1u
#define ULPT_REASON_LINE       2u
#define ULPT_REASON_MALFORMED  3u
#define ULPT_REASON_AFTER      4u      /* an after event (ULPT_INFO_STEP) */
#define ULPT_REASON_FULL       5u      /* the access log is full where the record would go */
#define ULPT_REASON_LOG        6u      /* records wait in the log; frame word 2 = the index */
#define ULPT_INFO_KIND(i)      ((unsigned int)(i) & 7u)
#define ULPT_INFO_PERMITTED(i) ((unsigned int)((i) >> 4) & 7u)
#define ULPT_INFO_REASON(i)    ((unsigned int)((i) >> 8) & 0xffu)
#define ULPT_INFO_SIZE(i)      ((unsigned int)((i) >> 16) & 0xffffu)   /* bytes; 0 for a fetch */
#define ULPT_INFO_PERMIT       0x100000000ULL
#define ULPT_INFO_STEP         0x200000000ULL  /* set by the handler: an after event follows */
#define ULPT_INFO_TRAP         0x400000000ULL  /* after event: a TF trap waits for UIRET */

/*
 * si_code of the SIGSEGV for a violation (as in asm-generic/siginfo.h, which C
 * libraries do not include).
 */
#ifndef SEGV_ULPTERR
#define SEGV_ULPTERR		11
#endif

/* ARCH_ULPT_ENABLE */
struct ulpt_enable {
	__u64 flags;		/* in: 0 */
	__u64 view;		/* out: address of the view */
	__u64 view_size;	/* out: ULPT_VIEW_SIZE */
};

/*
 * The access log: 2^size_shift records of ULPT_REC_SIZE bytes, a ring written by the CPU
 * for the thread's logged accesses (ULPT_LOG entries). ULPT_LOG_CTL's fields and the
 * record's words (ULPT_REC_* indexes) are the architecture's.
 */
#define ULPT_LOG_CTL_SIZE_MASK 0x1full        /* log2 of the number of records */
#define ULPT_LOG_MAX_SHIFT     24
#define ULPT_LOG_CTL_THRESH_SHIFT 32          /* bits 63:32: the log event's threshold */
#define ULPT_LOG_CTL_COUNT     0x20ull        /* a count table: SIZE and THRESH 0 */
#define ULPT_LOG_CTL_RSVD_MASK 0x00000000ffffffc0ull
#define ULPT_LOG_ALIGN         32ull          /* ULPT_LOG_BASE alignment */
#define ULPT_REC_SIZE          32             /* bytes per record */
#define ULPT_REC_START         0              /* word index: first byte of the access */
#define ULPT_REC_INFO          1              /* kind, reason, size, VAL, V */
#define ULPT_REC_RIP           2
#define ULPT_REC_VALUE         3              /* the bytes written, with ULPT_REC_VAL */
#define ULPT_REC_VAL           0x100000000ULL /* info: value holds the bytes written */
#define ULPT_REC_V             0x8000000000000000ULL /* info: the slot holds a record */

struct ulpt_log_record {
	__u64 start;		/* first byte of the access */
	__u64 info;		/* ULPT_INFO_KIND, _REASON, _SIZE; ULPT_REC_VAL, ULPT_REC_V */
	__u64 rip;		/* the instruction that made it */
	__u64 value;		/* with ULPT_REC_VAL: the first min(size, 8) bytes written */
};

/*
 * The count table (ULPT_LOG_COUNT): instead of appending a record, the CPU adds one to the
 * read or write counter of the access's 128-byte line, the struct ulpt_count at
 * base + (start >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE (ULPT_CNT_* word indexes).
 */
#define ULPT_LINE_SHIFT        7      /* 128-byte lines */
#define ULPT_CNT_SIZE          16
#define ULPT_CNT_READ          0              /* word index of the read counter */
#define ULPT_CNT_WRITE         1              /* and of the write counter */

struct ulpt_count {
	__u64 reads;
	__u64 writes;
};

/* ARCH_ULPT_SET_LOG and ARCH_ULPT_GET_LOG: the calling thread's log */
#define ULPT_LOG_COUNT		0x1ULL	/* flags: the log is a count table, not a ring */
struct ulpt_log {
	__u64 base;		/* ULPT_LOG_ALIGN-aligned: the records or count table; 0: none */
	__u32 size_shift;	/* 2^size_shift records, at most ULPT_LOG_MAX_SHIFT; 0 counting */
	__u32 thresh;		/* log event at this many records waiting; 0: none */
	__u64 index;		/* the write index: records appended (or additions) so far */
	__u64 flags;		/* 0, or ULPT_LOG_COUNT */
};

/* ARCH_ULPT_GET_STATE */
#define ULPT_STATE_ENABLED	0x1ULL	/* the process has a table */
#define ULPT_STATE_IN_HANDLER	0x2ULL	/* this thread is in its handler */
struct ulpt_state {
	__u64 flags;
	__u64 view;
	__u64 view_size;
	__u64 handler;		/* this thread's handler, 0 if none */
	__u64 stack_adjust;	/* bytes skipped below RSP before the frame */
	__u64 table_bytes;	/* memory used by the process's table */
};

#endif /* _UAPI_ASM_X86_ULPT_H */
