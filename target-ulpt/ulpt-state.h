/*
 * ULPT per-CPU state, embedded in CPUX86State (included from
 * target/i386/cpu.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_STATE_H
#define ULPT_STATE_H

/* Cleared on reset (lives before end_reset_fields). */
typedef struct UlptState {
    /* The MSRs of docs/spec.md section 3. */
    uint64_t ctl, root, view, handler, stkadj, status;
    uint64_t log_base, log_ctl, log_index;
    /*
     * The access log (ulpt-log.c): records of the instruction in progress,
     * written into their slots without V (R-LOG-2). log_staged is read by
     * the generated code at each instruction start: non-zero, the previous
     * instruction has completed and its records are published.
     */
    uint32_t log_staged;
    /* RIP of the instruction in progress, stored by the generated code. */
    uint64_t log_rip;
    struct UlptLogStaged {
        uint64_t *host;             /* the slot's info word in host memory */
        uint64_t info;              /* the info word to publish, V set */
        uint64_t start;             /* the access [start, start + len), */
        uint32_t len;               /* for parts of one access */
        uintptr_t ra;
        uint8_t kind;
        uint8_t size;               /* a write's bytes to read back, or 0 */
        bool count;                 /* host: a counter to add one to (6.3) */
    } log_stage[64];
    /*
     * Wide accesses probed whole (ulpt-probe.c) and logged, not their parts:
     * one per kind ([0] reads, [1] writes), as CMPXCHG16B probes both.
     */
    uint64_t log_cover_start[2], log_cover_size[2];
    uint8_t log_retry;  /* runs again after a walk to the slot or counter */
    uint8_t bounds_retry;   /* runs again after a walk to a line's bounds */
    /*
     * The violation being delivered (set at the faulting access, used by
     * delivery).
     */
    uint64_t fault_addr, fault_info, fault_entry0, fault_entry1, fault_start;
    /*
     * Kinds the permitted instruction may violate, valid while
     * HF_ULPT_PERMIT is set.
     */
    uint32_t permit_kinds;
    /*
     * UIRET was asked for an after event (ULPT_INFO_STEP): the frame words
     * it carries (addr, info, entry0, entry1, start), valid while
     * HF_ULPT_PERMIT is set.
     */
    bool step;
    uint64_t step_addr, step_info, step_entry0, step_entry1, step_start;
    /* UIRET ran with TF set and let an instruction through: its trap waits. */
    bool uiret_tf;
    /* Delivery or UIRET is accessing the frame: not ULPT-checked. */
    bool frame_access;
    /* Set by every ULPT fill: paging allowed the access (paging_first). */
    bool paging_ok;
    /*
     * A view store is being re-executed alone so that other CPUs can be
     * synced after it.
     */
    bool sync_step;
    /*
     * Entries were installed for compatibility-mode code: view stores flush
     * that index too.
     */
    bool user32;
} UlptState;

/* Counters for `info ulpt`; kept across reset. */
typedef struct UlptStats {
    uint64_t walks, checks, violations, deliveries, escalations, returns,
             view_stores, remote_syncs, after_events, log_records, log_events,
             log_full, bounds_reads;
    /*
     * For modeled time (ulpt-model.c): UIRETs that asked for PERMIT or STEP,
     * entries into the kernel from CPL 3 (exceptions, interrupts, SYSCALL),
     * and the instructions executed at CPL 3 and at CPL 0-2 (counted by the
     * translated code only with the model on).
     */
    uint64_t returns_permit, kernel_entries, insns_user, insns_kernel;
} UlptStats;

/*
 * Modeled time's parameters: the -cpu properties ulpt-model,
 * ulpt-model-kernel, ulpt-model-cpi and the ulpt-model-EVENT charges in
 * cycles (docs/spec.md 11.1).
 */
/* Their defaults in cycles; docs/spec.md 11.1 gives the source of each. */
#define ULPT_MODEL_DEFAULT_DELIVER      230
#define ULPT_MODEL_DEFAULT_UIRET        90
#define ULPT_MODEL_DEFAULT_UIRET_PERMIT 90
#define ULPT_MODEL_DEFAULT_VIEW_STORE   100
#define ULPT_MODEL_DEFAULT_REMOTE_SYNC  6000
#define ULPT_MODEL_DEFAULT_ESCALATE     0
#define ULPT_MODEL_DEFAULT_KENTRY       230
#define ULPT_MODEL_DEFAULT_LOG_RECORD   8
#define ULPT_MODEL_DEFAULT_BOUNDS       2
typedef struct UlptModelConfig {
    bool enabled;
    bool kernel;
    char *cpi;
    uint64_t deliver, uiret, uiret_permit, view_store, remote_sync, escalate,
             kentry, log_record, bounds;
} UlptModelConfig;

/*
 * TLB entry extension (TARGET_PAGE_ENTRY_EXTRA): what ULPT installed the
 * entry for, the page walk's prot before ULPT took rights out of it, and the
 * ULPT entry.
 */
enum {
    ULPT_TLB_NONE = 0,   /* ordinary entry */
    ULPT_TLB_LINES,      /* line rights: TLB_CHECK kinds go to ulpt_tlb_check */
    ULPT_TLB_ONCE,       /* sub-page entry for one permitted access */
    ULPT_TLB_VIEW,       /* a page of the table view */
};
#define ULPT_TLB_ENTRY_EXTRA \
    uint8_t ulpt_kind;       \
    uint16_t ulpt_prot;      \
    uint64_t ulpt_page;      \
    uint64_t ulpt_lines;

#endif /* ULPT_STATE_H */
