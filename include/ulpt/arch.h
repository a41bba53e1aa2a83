/*
 * The ULPT ABI: the architectural constants, table and frame layout and
 * UIRET encoding that docs/spec.md defines, in one place. Freestanding C with
 * no dependencies, shared by the QEMU model (target-ulpt/ulpt-arch.h links
 * here), libulpt, the bare-metal tests and the guest programs. The kernel's
 * <asm/ulpt.h> defines the same names token for token.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_ARCH_H
#define ULPT_ARCH_H

/* Enumeration (spec 2): CPUID.(EAX=07H,ECX=0):EDX[bit 6]. */
#define ULPT_CPUID_LEAF        0x7u
#define ULPT_CPUID_SUBLEAF     0x0u
#define ULPT_CPUID_EDX_BIT     6u

/* MSRs (spec 3). */
#define MSR_ULPT_CTL           0x990u
#define MSR_ULPT_ROOT          0x991u
#define MSR_ULPT_VIEW          0x992u
#define MSR_ULPT_HANDLER       0x993u
#define MSR_ULPT_STKADJ        0x994u
#define MSR_ULPT_STATUS        0x995u
#define MSR_ULPT_LOG_BASE      0x996u
#define MSR_ULPT_LOG_CTL       0x997u
#define MSR_ULPT_LOG_INDEX     0x998u
#define MSR_ULPT_FIRST         MSR_ULPT_CTL
#define MSR_ULPT_LAST          MSR_ULPT_LOG_INDEX

#define ULPT_CTL_EN            (1ull << 0)
#define ULPT_STATUS_IN_HANDLER (1ull << 0)
#define ULPT_STKADJ_MASK       0xffffull

/* The access log (spec 6.2): ULPT_LOG_CTL's fields and the record layout. */
#define ULPT_LOG_CTL_SIZE_MASK 0x1full        /* log2 of the records */
#define ULPT_LOG_MAX_SHIFT     24
/* Bits 63:32 of ULPT_LOG_CTL: the log event's threshold. */
#define ULPT_LOG_CTL_THRESH_SHIFT 32
/* Bit 5: the log is a count table (spec 6.3); SIZE and THRESH are then 0. */
#define ULPT_LOG_CTL_COUNT     0x20ull
#define ULPT_LOG_CTL_RSVD_MASK 0x00000000ffffffc0ull
#define ULPT_LOG_ALIGN         32ull          /* ULPT_LOG_BASE alignment */
#define ULPT_REC_SIZE          32             /* bytes per record */
/* Word indexes in a record; info's bits as the frame's, and VAL, V. */
#define ULPT_REC_START         0              /* first byte of the access */
#define ULPT_REC_INFO          1              /* kind, reason, size, VAL, V */
#define ULPT_REC_RIP           2
#define ULPT_REC_VALUE         3              /* bytes written, with VAL */
#define ULPT_REC_VAL           0x100000000ULL /* value holds the bytes */
/* info: the slot holds a record. */
#define ULPT_REC_V             0x8000000000000000ULL
/*
 * The count table (spec 6.3): a line's read and write counters, 8 bytes
 * each, at LOG_BASE + (start >> ULPT_LINE_SHIFT) * ULPT_CNT_SIZE.
 */
#define ULPT_CNT_SIZE          16
#define ULPT_CNT_READ          0              /* the read counter's word */
#define ULPT_CNT_WRITE         1              /* the write counter's word */

/* Table geometry (spec 4.1). */
#define ULPT_VA_BITS           47
#define ULPT_PAGE_SHIFT        12
#define ULPT_LINE_SHIFT        7      /* 128-byte lines */
#define ULPT_LINES_PER_PAGE    32
#define ULPT_LEAF_SHIFT        8      /* 256 16-byte entries per leaf */
#define ULPT_DIR_SHIFT         9      /* 512 8-byte entries per directory */
#define ULPT_ENTRY_SIZE        16
#define ULPT_VIEW_SIZE         0x8000000000ULL /* 2^39: 16 B per page of 2^47 */

/* Directory entries (spec 4.2). */
#define ULPT_DIR_P             (1ull << 0)
#define ULPT_DIR_ADDR_MASK     0x000ffffffffff000ull
#define ULPT_DIR_RSVD_MASK     (~(ULPT_DIR_ADDR_MASK | ULPT_DIR_P))

/*
 * Leaf word 0, page rights (spec 4.3). The entry macros and the view size are
 * also in the kernel's <asm/ulpt.h>: keep the definitions token-identical so
 * both may be included.
 */
#define ULPT_NR                0x1ULL
#define ULPT_NW                0x2ULL
#define ULPT_NX                0x4ULL
/* Word 0 bit 8: denied reads and writes are logged (spec 6.2). */
#define ULPT_LOG               0x100ULL
#define ULPT_PAGE_SW_MASK      0xff00000000000000ull /* for software */
/*
 * Word 0 bits 49:9, BOUNDS: bits 46:6 of the linear address of the page's
 * byte bounds (spec 4.5), 64 bytes: lo and hi of line i at bytes 2i, 2i+1.
 */
#define ULPT_BOUNDS_MASK       0x0003fffffffffe00ull
#define ULPT_BOUNDS_ADDR(w0)   (((w0) & ULPT_BOUNDS_MASK) >> 3)
#define ULPT_BOUNDS_FIELD(va)  (((va) & 0x00007fffffffffc0ull) << 3)
#define ULPT_BOUNDS_SIZE       64
#define ULPT_PAGE_RSVD_MASK \
    (~(ULPT_PAGE_SW_MASK | ULPT_NR | ULPT_NW | ULPT_NX | ULPT_LOG | \
       ULPT_BOUNDS_MASK))
/* Leaf word 1, line rights: bit 2i denies reads of line i, bit 2i+1 writes. */
#define ULPT_LINE_NR(i)        (1ULL << (2 * (i)))
#define ULPT_LINE_NW(i)        (1ULL << (2 * (i) + 1))
#define ULPT_LINES_NR_ALL      0x5555555555555555ull
#define ULPT_LINES_NW_ALL      0xaaaaaaaaaaaaaaaaull

/* Access kinds (spec 6). */
#define ULPT_KIND_R            1u
#define ULPT_KIND_W            2u
#define ULPT_KIND_X            4u

/* Reasons (frame info bits 15:8). */
#define ULPT_REASON_PAGE       1u
#define ULPT_REASON_LINE       2u
#define ULPT_REASON_MALFORMED  3u
/* Not a violation: a STEP instruction completed (R-RET-4). */
#define ULPT_REASON_AFTER      4u
/* The access log is full where this access's record would go (R-LOG-4). */
#define ULPT_REASON_FULL       5u
/* Not a violation: records wait (R-LOG-5); frame word 2: the write index. */
#define ULPT_REASON_LOG        6u

/* Delivery frame (spec 6): 8 words at the handler's RSP. */
#define ULPT_FRAME_SIZE        64
#define ULPT_FRAME_ADDR        0
#define ULPT_FRAME_INFO        1
#define ULPT_FRAME_ENTRY0      2
#define ULPT_FRAME_ENTRY1      3
#define ULPT_FRAME_RIP         4
#define ULPT_FRAME_RFLAGS      5
#define ULPT_FRAME_RSP         6
/* The first byte of the access (ADDR is its first denied byte). */
#define ULPT_FRAME_START       7
#define ULPT_FRAME_WORDS       8

#define ULPT_INFO_KIND(i)      ((unsigned int)(i) & 7u)
#define ULPT_INFO_PERMITTED(i) ((unsigned int)((i) >> 4) & 7u)
#define ULPT_INFO_REASON(i)    ((unsigned int)((i) >> 8) & 0xffu)
/* The size of the access in bytes; 0 for a fetch. */
#define ULPT_INFO_SIZE(i)      ((unsigned int)((i) >> 16) & 0xffffu)
#define ULPT_INFO_PERMIT       0x100000000ULL
/* Set by the handler: an after event follows (R-RET-4). */
#define ULPT_INFO_STEP         0x200000000ULL
/* After event: a TF trap waits for its UIRET (R-RET-4). */
#define ULPT_INFO_TRAP         0x400000000ULL

/* #PF error code bit of an escalated violation (spec 6.1). */
#define ULPT_PF_ERROR_BIT      (1u << 8)

/*
 * UIRET is encoded F3 0F 01 EC. Assemblers lack the mnemonic, so code emits
 * the instruction as data: `.long ULPT_UIRET_INSN` (its four bytes, read as
 * a little-endian word; the same constant in C and in assembly).
 */
#define ULPT_UIRET_INSN        0xec010ff3

/*
 * Modeled time (spec 11.1, QEMU's -cpu ...,model=on): CPUID with EAX =
 * ULPT_MODEL_LEAF and ECX = an operation. QUERY returns the signature in EBX
 * (and the version in EAX, the number of fields in ECX, whether a region is
 * open in EDX bit 0); BEGIN opens the measured region; END closes it (EAX 1,
 * or 0 if none was open); READ + F returns field F of the last closed region
 * in EDX:EAX, with EBX 1 (0: no such field or no region yet).
 */
#define ULPT_MODEL_LEAF        0x4c505400u
#define ULPT_MODEL_SIGNATURE   0x54504c55u  /* "ULPT" */
#define ULPT_MODEL_VERSION     1u
#define ULPT_MODEL_QUERY       0u
#define ULPT_MODEL_BEGIN       1u
#define ULPT_MODEL_END         2u
#define ULPT_MODEL_READ        0x100u
/* The fields of a region. */
#define ULPT_MODEL_F_CYCLES         0   /* the modeled cycles */
#define ULPT_MODEL_F_INSNS_USER     1   /* instructions executed at CPL 3 */
#define ULPT_MODEL_F_INSNS_KERNEL   2   /* ... at CPL 0-2 */
#define ULPT_MODEL_F_DELIVERIES     3   /* deliveries, after events included */
#define ULPT_MODEL_F_RETURNS        4   /* UIRETs */
#define ULPT_MODEL_F_RETURNS_PERMIT 5   /* UIRETs with PERMIT or STEP */
#define ULPT_MODEL_F_AFTER_EVENTS   6   /* after events (R-RET-4) */
#define ULPT_MODEL_F_VIEW_STORES    7   /* stores to the view */
#define ULPT_MODEL_F_REMOTE_SYNCS   8   /* syncs of other CPUs (a view store) */
#define ULPT_MODEL_F_ESCALATIONS    9   /* violations escalated to the kernel */
#define ULPT_MODEL_F_KERNEL_ENTRIES 10  /* entries into the kernel from CPL 3 */
#define ULPT_MODEL_F_LOG_RECORDS    11  /* records appended to access logs */
#define ULPT_MODEL_F_LOG_EVENTS     12  /* log events (R-LOG-5) */
#define ULPT_MODEL_F_BOUNDS_READS   13  /* lines' bounds read (R-BND-2) */
#define ULPT_MODEL_NFIELDS          14

#endif /* ULPT_ARCH_H */
