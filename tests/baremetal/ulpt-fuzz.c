/*
 * CPU differential fuzzer (no kernel): a seeded generator of random user-mode instruction
 * sequences that touch memory in the ways docs/spec.md R-ACC-1 lists (MOV of each width,
 * MOVZX/MOVSX, MOVBE, MOVNTI, SSE/AVX and x87 moves, FNSTENV/FNSAVE, FXSAVE/FXRSTOR,
 * XSAVE/XRSTOR, string instructions with and without REP in both directions, PUSH/POP/CALL/
 * RET, locked and unlocked read-modify-writes, CMPXCHG8B/16B), unaligned and straddling
 * 128-byte lines and pages, stores to the table's view (R-COH-1) and to byte bounds
 * (R-BND-2). Each sequence is machine code written into an executable buffer and run at
 * CPL 3 with the stack in the data area; its result is the architectural state (GPRs,
 * arithmetic flags and DF, vector registers, the FXSAVE image) and the data area's contents.
 * The checker implements the spec's rule itself (it does not call target-ulpt/ulpt-core.c,
 * which is freestanding and could be linked in: an independent implementation is the
 * stronger oracle).
 *
 * The kernel command line (-append) says what to do:
 *   seed=N count=N start=N   the generator's seed, how many sequences, the first one's index
 *                            (sequence i depends on the seed and i only: start=i count=1
 *                            replays one)
 *   mode=ref                 oracle 1: prints "h INDEX HASH" per sequence. On a CPU with ULPT,
 *                            ULPT is on with a table that allows everything (entries with
 *                            only software bits, rights on pages no sequence touches); the
 *                            host compares the lines with the same image's on -cpu max.
 *   mode=check               oracles 2-4, on -cpu ulpt: each sequence runs four times:
 *                            unrestricted (the reference); with random rights (page and line
 *                            rights, byte bounds, malformed entries and directories) and a
 *                            handler that checks every delivery against this file's own
 *                            implementation of the spec's rule (kind, first denied byte,
 *                            start, size, reason, entry words, rip, rsp, RCX/RSI/RDI of a
 *                            string iteration) and lets it through (PERMIT, sometimes with
 *                            STEP, whose after event it checks, sometimes STEP alone, which
 *                            must repeat the delivery): the result must equal the
 *                            reference's and no denied access may go undelivered; with the
 *                            same rights and a handler that skips each faulting instruction:
 *                            the result must equal an unrestricted run of the code with those
 *                            instructions made NOPs (so a faulting instruction did nothing:
 *                            R-ACC-1, R-DEL-1).
 *   mode=msr                 oracle 5: random ULPT MSR values (each must be accepted or
 *                            #GP as section 3 says, and read back), UIRET with random frames,
 *                            bad stacks, at CPL 0 and in compatibility mode, and a denied read
 *                            in compatibility mode (escalated): the spec's exception.
 *   inject=1                 (check) the checker's copy of the table differs from the table
 *                            in one line right: the run must report failures (a self-test);
 *   inject=2                 the checker ignores the sequences' stores to the view: the same;
 *   inject=3                 the checker takes no byte as open (bounds ignored): the same;
 *   inject=4                 the checker ignores the sequences' stores to the bounds: the same.
 *   noview                   (check) no stores to the view in the sequences;
 *   nonx                     (check) the code page never NX (one sequence in five has it:
 *                            every fetch delivers, the fetch first, each REP iteration's).
 *   nolog                    (check) no LOG entries. Otherwise a third of the entries have LOG,
 *                            a third of the sequences run with a count table (spec 6.3) and a
 *                            third with a ring (6.2): the accesses that only LOG entries deny
 *                            must complete undelivered, and at the end of a run each line's
 *                            read and write counters must equal the checker's count of the
 *                            logged accesses of the positions that completed (kinds a permit
 *                            let through excluded), or the ring must hold their records, each
 *                            once, in the order of the positions (start, kind, reason, size,
 *                            VAL, RIP; the value is not checked).
 *   nobounds                 no byte bounds. Otherwise (spec 4.5) two thirds of the entries
 *                            with line rights (fewer of the others, which must restrict
 *                            nothing: R-BND-3) point BOUNDS at one of NBND arrays in the
 *                            shadow page above the data area (one in twelve at the view,
 *                            which opens nothing), whose lines' (lo, hi) lean to the whole
 *                            line, hi above 128, lo >= hi, and ranges that cut the sequence's
 *                            accesses or leave one open in part. In mode=check the sequences
 *                            store to the arrays (most stores aimed, once the table is known,
 *                            at the pair of a line that a later access reads), and the
 *                            checker's copy follows them from the next instruction on. It
 *                            judges each access byte by byte (R-BND-1): the first byte of a
 *                            line denied for its kind that the line's bounds leave closed is
 *                            the violation's addr, an access logs only if it has one, page
 *                            rights and fetch are never opened. The summary counts the
 *                            accesses that bounds opened and those whose addr they moved.
 * The image ends with "fuzz: ..." summary lines and exits 0 when nothing failed.
 */
#include <cpuid.h>
#include <stddef.h>
#include "bm.h"

/* --- layout -------------------------------------------------------------------------- */
#define DATA 0x700000ull                 /* the data area: 4 pages, the stack inside it */
#define DATA_PAGES 4
#define DATA_SIZE (DATA_PAGES * PAGE)
#define SHADOW_FIRST (DATA - PAGE)       /* pages whose rights are random: one either side */
#define SHADOW_PAGES (DATA_PAGES + 2)
#define CODE 0x680000ull                 /* the sequence's code */
#define CODE_MAX 0x8000
#define STKADJ 0xc000                    /* frames land 48 KiB below RSP, in the MiB below */
#define MAXINS 512
#define MAXT 14                          /* templates per sequence */

#define FL_MASK 0xed5ull                 /* CF PF AF ZF SF OF DF */

/*
 * Byte bounds (spec 4.5): NBND arrays of 64 bytes in the shadow page above the data area,
 * which the sequences touch only with their stores to the bounds. Its rights are random as
 * the other shadow pages' are: the CPU's reads of the bounds ignore them (R-BND-2), the
 * sequences' stores do not. One more array lies in the view (the data pages' own entries):
 * never read, it opens nothing.
 */
#define BND_PAGE (DATA + DATA_SIZE)
#define NBND 4
static const uint16_t bnd_off[NBND] = { 0x000, 0x0c0, 0x7c0, 0xfc0 };
#define BND_VIEW (VIEW_BASE + (DATA >> 12) * 16)

/* --- random numbers ---------------------------------------------------------------- */
struct rng { uint64_t s; };
static uint64_t rnext(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static unsigned rn(struct rng *r, unsigned n) { return n ? (unsigned)(rnext(r) % n) : 0; }

/* A BOUNDS address for an entry: one of the arrays, now and then the view. */
static uint64_t bnd_addr(struct rng *r)
{
    return rn(r, 12) == 0 ? BND_VIEW : BND_PAGE + bnd_off[rn(r, NBND)];
}

/* --- the state a sequence starts from and ends with (fuzz_enter / fuzz_exit) ---------- */
struct fst {
    uint64_t gpr[16];                    /* by encoding: rax rcx rdx rbx rsp rbp rsi rdi r8.. */
    uint64_t rflags, pad;
    uint8_t vec[16][32];                 /* ymm (xmm without AVX) */
    uint8_t fx[512];                     /* FXSAVE image at the end */
} __attribute__((aligned(64)));
struct fst fuzz_in, fuzz_out;
uint64_t fuzz_saved_rsp, fuzz_code_ptr = CODE;
uint8_t fuzz_have_avx;
uint32_t fuzz_mxcsr = 0x1f80;
uint64_t fuzz_log[64];                   /* RCX after REPE/REPNE CMPS/SCAS */

_Static_assert(__builtin_offsetof(struct fst, vec) == 144, "fst layout");
_Static_assert(__builtin_offsetof(struct fst, fx) == 656, "fst layout");

#define VLOAD(i) "vmovdqu " #i "*32+144(%rdi), %ymm" #i "\n"
#define XLOAD(i) "movdqu " #i "*32+144(%rdi), %xmm" #i "\n"
#define VSAVE(i) "vmovdqu %ymm" #i ", fuzz_out+144+" #i "*32\n"
#define XSAVE_(i) "movdqu %xmm" #i ", fuzz_out+144+" #i "*32\n"
#define ALL16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
asm(".text\n"
    ".globl fuzz_enter\n"
    "fuzz_enter:\n"                      /* void fuzz_enter(struct fst *in), at CPL 3 */
    "push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
    "mov %rsp, fuzz_saved_rsp\n"
    "fxrstor64 656(%rdi)\n"             /* x87 and MXCSR: all defined, registers too */
    /* The last x87 instruction and operand pointers (FNSTENV, FNSAVE and FXSAVE store them)
       are left by earlier runs: set them here, the same every run. */
    "flds fuzz_mxcsr\n"
    "fstp %st(0)\n"
    "cmpb $0, fuzz_have_avx\n"
    "je 1f\n"
    ALL16(VLOAD)
    "jmp 2f\n"
    "1:\n"
    ALL16(XLOAD)
    "2:\n"
    "pushq 128(%rdi)\n"
    "popfq\n"
    "mov 32(%rdi), %rsp\n"
    "mov 0(%rdi), %rax\n mov 8(%rdi), %rcx\n mov 16(%rdi), %rdx\n mov 24(%rdi), %rbx\n"
    "mov 40(%rdi), %rbp\n mov 48(%rdi), %rsi\n"
    "mov 64(%rdi), %r8\n mov 72(%rdi), %r9\n mov 80(%rdi), %r10\n mov 88(%rdi), %r11\n"
    "mov 96(%rdi), %r12\n mov 104(%rdi), %r13\n mov 112(%rdi), %r14\n mov 120(%rdi), %r15\n"
    "mov 56(%rdi), %rdi\n"
    "jmp *fuzz_code_ptr\n"
    ".globl fuzz_exit\n"
    "fuzz_exit:\n"                       /* the sequence jumps here */
    "mov %rax, fuzz_out+0\n mov %rcx, fuzz_out+8\n mov %rdx, fuzz_out+16\n mov %rbx, fuzz_out+24\n"
    "mov %rsp, fuzz_out+32\n mov %rbp, fuzz_out+40\n mov %rsi, fuzz_out+48\n mov %rdi, fuzz_out+56\n"
    "mov %r8, fuzz_out+64\n mov %r9, fuzz_out+72\n mov %r10, fuzz_out+80\n mov %r11, fuzz_out+88\n"
    "mov %r12, fuzz_out+96\n mov %r13, fuzz_out+104\n mov %r14, fuzz_out+112\n mov %r15, fuzz_out+120\n"
    "mov fuzz_saved_rsp, %rsp\n"
    "pushfq\n"
    "popq fuzz_out+128\n"
    "cld\n"
    "cmpb $0, fuzz_have_avx\n"
    "je 1f\n"
    ALL16(VSAVE)
    "jmp 2f\n"
    "1:\n"
    ALL16(XSAVE_)
    "2:\n"
    "fxsave64 fuzz_out+656\n"
    "pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
    "ret\n"
    /* The ULPT handler's entry: all 16 GPRs saved by encoding below the frame (g[4] is a
       placeholder), DF cleared for C, fuzz_handler(g, frame), then UIRET. */
    ".globl fuzz_hentry\n"
    "fuzz_hentry:\n"
    "push %r15; push %r14; push %r13; push %r12; push %r11; push %r10; push %r9; push %r8\n"
    "push %rdi; push %rsi; push %rbp; push %rsp; push %rbx; push %rdx; push %rcx; push %rax\n"
    "mov %rsp, %rdi\n"
    "lea 128(%rsp), %rsi\n"
    "cld\n"
    "call fuzz_handler\n"
    "pop %rax; pop %rcx; pop %rdx; pop %rbx; add $8, %rsp; pop %rbp; pop %rsi; pop %rdi\n"
    "pop %r8; pop %r9; pop %r10; pop %r11; pop %r12; pop %r13; pop %r14; pop %r15\n"
    ".byte 0xf3, 0x0f, 0x01, 0xec\n");
void fuzz_enter(struct fst *in);
extern char fuzz_exit[], fuzz_hentry[];
void ulpt_handler(uint64_t *f) { (void)f; }   /* bm.h's; this image uses fuzz_hentry */

/* --- templates and the instruction list ------------------------------------------------ */
enum tmpl {
    T_SETUP, T_MOV_LD, T_MOV_ST, T_MOV_STI, T_MOVX, T_ALU, T_CMP, T_XCHG, T_CMPXCHG, T_XADD,
    T_UNARY, T_SHIFT, T_BT, T_CX8, T_CX16, T_SSE_LD, T_SSE_ST, T_AVX_LD, T_AVX_ST, T_X87_LD,
    T_X87_ST, T_X87_ENV, T_FXSAVE, T_FXRSTOR, T_XSAVE, T_XRSTOR, T_MOVBE, T_MOVNTI, T_STR, T_PUSH, T_POP, T_CALL,
    T_RET, T_LOG, T_VIEW, T_BND, T_END, T_NTMPL
};
static const char *const tname[T_NTMPL] = {
    "setup", "mov-load", "mov-store", "mov-store-imm", "movzx/sx", "alu-rmw", "cmp/test",
    "xchg", "cmpxchg", "xadd", "inc/dec/not/neg", "shift", "bts/btr/btc", "cmpxchg8b",
    "cmpxchg16b", "sse-load", "sse-store", "avx-load", "avx-store", "x87-load", "x87-store",
    "x87-env", "fxsave", "fxrstor", "xsave", "xrstor", "movbe", "movnti", "string", "push", "pop", "call", "ret",
    "log", "view-store", "bounds-store", "end",
};

enum { K_R = ULPT_KIND_R, K_W = ULPT_KIND_W };
struct acc { uint64_t addr; uint16_t size; uint8_t kind, stack; };  /* stack: addr is RSP-relative */
enum { S_MOVS = 1, S_STOS, S_LODS, S_CMPS, S_SCAS };
struct ins {
    uint32_t off;
    uint8_t len, tmpl, nacc, ordered, locked, is_call, sets_rsp, notexec;
    struct acc a[2];
    int32_t rsp_delta;
    uint64_t rsp_before;
    /* strings */
    uint8_t sop, esz, df, rep;           /* rep: 0 none, 1 REP/REPE, 2 REPNE */
    int8_t log;                          /* fuzz_log slot of RCX after, or -1 */
    uint32_t cnt_imm_off;                /* code offset of the count's imm32 */
    uint64_t rsi0, rdi0, rcx0;
    uint64_t iters;                      /* iterations done (from the reference run) */
    /* a store to the view: the entry of shadow page vpage, word vword, becomes vval */
    uint8_t is_view, vpage, vword;
    uint64_t vval;
    /* a store to the bounds: the bytes of a[0] become vval's low bytes */
    uint8_t is_bnd;
};
static int g_view;                        /* generate view stores (mode=check) */
static int g_inject;                      /* the checker's self-test (inject=) */
/*
 * Bounds. Their own random stream (brng, per sequence), so that a seed's sequences and tables
 * are what they were without them, plus the bounds.
 */
static int g_bnd, g_bstore;               /* bounds (not nobounds); stores to them (check) */
static struct rng brng;
static uint8_t bnd_init[PAGE];            /* BND_PAGE at the start of a run */
static struct ins ins[MAXINS];
static uint8_t data_init[DATA_SIZE];     /* the data area's contents at the start */
static int nins;
static uint8_t *cp;
static uint64_t g_rsp;                   /* the generator's RSP */
static int nlog;
static struct { int avx, movbe, cx16, sse41, xsave; } feat;

static void b1(uint8_t x) { *cp++ = x; }
static void b4(uint32_t x) { for (int i = 0; i < 4; i++) b1((uint8_t)(x >> (8 * i))); }
static uint32_t coff(void) { return (uint32_t)((uint64_t)cp - CODE); }

static struct ins *begin(int t)
{
    struct ins *in = &ins[nins];
    *in = (struct ins){ .off = coff(), .tmpl = (uint8_t)t, .rsp_before = g_rsp, .log = -1 };
    return in;
}
static void end(struct ins *in) { in->len = (uint8_t)(coff() - in->off); nins++; }

/* mov $imm32, %r32 (zero-extends), a setup instruction of its own. */
static uint32_t set_reg(int r, uint32_t v)
{
    struct ins *in = begin(T_SETUP);
    if (r >= 8) b1(0x41);
    b1((uint8_t)(0xb8 + (r & 7)));
    uint32_t at = coff();
    b4(v);
    if (r == 4) { in->sets_rsp = 1; g_rsp = v; in->rsp_delta = 0; }
    end(in);
    return at;
}

/* A memory operand [base + index * scale + disp] for linear address addr. */
struct mem { int base, index, scale; int32_t disp; int mod; };
static int pick_reg(struct rng *r, int a, int b)
{
    int x;
    do x = (int)rn(r, 16); while (x == 4 || x == a || x == b);
    return x;
}
static void setup_mem(struct rng *r, uint64_t addr, struct mem *m, int avoid)
{
    m->base = pick_reg(r, avoid, -1);
    m->index = -1;
    m->scale = 0;
    unsigned form = rn(r, 4);
    m->disp = form == 0 ? 0 : form == 1 ? (int32_t)rn(r, 256) - 128 : (int32_t)rn(r, 0x2000) - 0x1000;
    m->mod = m->disp == 0 && (m->base & 7) != 5 ? 0 : form == 1 || (m->disp >= -128 && m->disp < 128 && rn(r, 2)) ? 1 : 2;
    if (m->mod == 1 && (m->disp < -128 || m->disp > 127)) m->mod = 2;
    uint64_t iv = 0;
    if (rn(r, 3) == 0) {
        m->index = pick_reg(r, avoid, m->base);
        m->scale = (int)rn(r, 4);
        iv = rn(r, 64);
        set_reg(m->index, (uint32_t)iv);
    }
    set_reg(m->base, (uint32_t)(addr - (int64_t)m->disp - (iv << m->scale)));
}
/* Legacy prefixes, REX, opcode bytes, ModRM/SIB/disp for reg field `reg` and memory m. */
static void emit_mem_op(const uint8_t *pfx, int npfx, int w, int force_rex, const uint8_t *op,
                        int nop, int reg, const struct mem *m)
{
    for (int i = 0; i < npfx; i++) b1(pfx[i]);
    int rex = (w ? 8 : 0) | (reg >= 8 ? 4 : 0) | (m->index >= 8 ? 2 : 0) | (m->base >= 8 ? 1 : 0);
    if (rex || force_rex) b1((uint8_t)(0x40 | rex));
    for (int i = 0; i < nop; i++) b1(op[i]);
    int sib = m->index >= 0 || (m->base & 7) == 4;
    b1((uint8_t)(m->mod << 6 | (reg & 7) << 3 | (sib ? 4 : (m->base & 7))));
    if (sib)
        b1((uint8_t)((m->index >= 0 ? m->scale : 0) << 6 | (m->index >= 0 ? m->index & 7 : 4) << 3 | (m->base & 7)));
    if (m->mod == 1) b1((uint8_t)m->disp);
    else if (m->mod == 2) b4((uint32_t)m->disp);
}

/* An address for an access of `size`: often across a line or a page boundary. */
static uint64_t pick_addr(struct rng *r, unsigned size, unsigned align)
{
    int64_t a;
    unsigned how = rn(r, 10);
    if (how < 4)
        a = (int64_t)(DATA + rn(r, DATA_SIZE / 128) * 128) + (int64_t)rn(r, 2 * size + 1) - size;
    else if (how < 6)
        a = (int64_t)(DATA + rn(r, DATA_PAGES + 1) * PAGE) + (int64_t)rn(r, 2 * size + 1) - size;
    else
        a = (int64_t)(DATA + rn(r, DATA_SIZE));
    if (a < (int64_t)DATA) a = DATA;
    if (a > (int64_t)(DATA + DATA_SIZE - size)) a = DATA + DATA_SIZE - size;
    if (align) a &= ~(int64_t)(align - 1);
    return (uint64_t)a;
}

static void acc1(struct ins *in, uint8_t kind, uint64_t addr, unsigned size)
{
    in->a[in->nacc++] = (struct acc){ addr, (uint16_t)size, kind, 0 };
}
static void acc_rmw(struct ins *in, uint64_t addr, unsigned size, int locked)
{
    in->locked = (uint8_t)locked;
    in->ordered = 1;
    acc1(in, locked ? K_W : K_R, addr, size);
    acc1(in, locked ? K_R : K_W, addr, size);
}
static void acc_stack(struct ins *in, uint8_t kind, int64_t rel, unsigned size)
{
    in->a[in->nacc++] = (struct acc){ (uint64_t)rel, (uint16_t)size, kind, 1 };
}

static const unsigned szs[4] = { 1, 2, 4, 8 };
/* Operand-size prefix and REX.W for size; byte ops use the 8-bit opcode (op - 1). */
static int size_pfx(unsigned size, uint8_t *pfx, int *w)
{
    *w = size == 8;
    if (size == 2) { pfx[0] = 0x66; return 1; }
    return 0;
}

static void gen_simple_mem(struct rng *r, int t)
{
    unsigned size = szs[rn(r, 4)];
    uint8_t pfx[3];
    int w, np = size_pfx(size, pfx, &w);
    int reg = pick_reg(r, -1, -1);
    uint64_t addr = pick_addr(r, size, 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(t);
    uint8_t op[3];
    int lock = rn(r, 2);
    switch (t) {
    case T_MOV_LD:
        op[0] = size == 1 ? 0x8a : 0x8b;
        emit_mem_op(pfx, np, w, size == 1, op, 1, reg, &m);
        acc1(in, K_R, addr, size);
        break;
    case T_MOV_ST:
        op[0] = size == 1 ? 0x88 : 0x89;
        emit_mem_op(pfx, np, w, size == 1, op, 1, reg, &m);
        acc1(in, K_W, addr, size);
        break;
    case T_MOV_STI:
        op[0] = size == 1 ? 0xc6 : 0xc7;
        emit_mem_op(pfx, np, w, 0, op, 1, 0, &m);
        if (size == 1) b1((uint8_t)rnext(r));
        else if (size == 2) { b1((uint8_t)rnext(r)); b1((uint8_t)rnext(r)); }
        else b4((uint32_t)rnext(r));
        acc1(in, K_W, addr, size);
        break;
    case T_CMP: {
        static const uint8_t cmpop[] = { 0x38, 0x3a, 0x84 };
        op[0] = (uint8_t)(cmpop[rn(r, 3)] + (size != 1));
        emit_mem_op(pfx, np, w, size == 1, op, 1, reg, &m);
        acc1(in, K_R, addr, size);
        break;
    }
    case T_ALU: {
        unsigned aop = rn(r, 7);   /* add or adc sbb and sub xor: (aop) << 3 */
        if (rn(r, 2)) {
            op[0] = (uint8_t)((aop << 3) + (size != 1));
            if (lock) b1(0xf0);
            emit_mem_op(pfx, np, w, size == 1, op, 1, reg, &m);
        } else {
            int imm8 = size == 1 || rn(r, 2);
            op[0] = size == 1 ? 0x80 : imm8 ? 0x83 : 0x81;
            if (lock) b1(0xf0);
            emit_mem_op(pfx, np, w, 0, op, 1, (int)aop, &m);
            if (imm8) b1((uint8_t)rnext(r));
            else if (size == 2) { b1((uint8_t)rnext(r)); b1((uint8_t)rnext(r)); }
            else b4((uint32_t)rnext(r));
        }
        acc_rmw(in, addr, size, lock);
        break;
    }
    case T_XCHG:
        op[0] = size == 1 ? 0x86 : 0x87;
        emit_mem_op(pfx, np, w, size == 1, op, 1, reg, &m);
        acc_rmw(in, addr, size, 1);
        break;
    case T_CMPXCHG:
    case T_XADD:
        op[0] = 0x0f;
        op[1] = (uint8_t)((t == T_CMPXCHG ? 0xb0 : 0xc0) + (size != 1));
        if (lock) b1(0xf0);
        emit_mem_op(pfx, np, w, size == 1, op, 2, reg, &m);
        acc_rmw(in, addr, size, lock);
        break;
    case T_UNARY: {
        static const int un[4][2] = { { 0xfe, 0 }, { 0xfe, 1 }, { 0xf6, 2 }, { 0xf6, 3 } };
        unsigned u = rn(r, 4);
        op[0] = (uint8_t)(un[u][0] + (size != 1));
        if (lock) b1(0xf0);
        emit_mem_op(pfx, np, w, 0, op, 1, un[u][1], &m);
        acc_rmw(in, addr, size, lock);
        break;
    }
    case T_SHIFT: {
        unsigned s = rn(r, 8);
        if (s == 6) s = 4;
        int byimm = rn(r, 2);
        op[0] = (uint8_t)((byimm ? 0xc0 : 0xd0) + (size != 1));
        emit_mem_op(pfx, np, w, 0, op, 1, (int)s, &m);
        if (byimm) b1((uint8_t)rn(r, 70));
        acc_rmw(in, addr, size, 0);
        break;
    }
    default:
        break;
    }
    end(in);
}

static void gen_bt(struct rng *r)
{
    unsigned size = szs[1 + rn(r, 3)];
    uint8_t pfx[2];
    int w, np = size_pfx(size, pfx, &w);
    uint64_t addr = pick_addr(r, size, 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(T_BT);
    int lock = rn(r, 2);
    const uint8_t op[2] = { 0x0f, 0xba };
    if (lock) b1(0xf0);
    emit_mem_op(pfx, np, w, 0, op, 2, 5 + (int)rn(r, 3), &m);
    b1((uint8_t)rn(r, 256));
    acc_rmw(in, addr, size, lock);
    end(in);
    /* BTS/BTR/BTC leave OF SF AF PF undefined (QEMU's values depend on where its
       translation blocks begin, which a delivery changes): cmp %eax, %eax defines them. */
    in = begin(T_SETUP);
    b1(0x39);
    b1(0xc0);
    end(in);
}

static void gen_cx(struct rng *r, int t)
{
    unsigned size = t == T_CX16 ? 16 : 8;
    uint64_t addr = pick_addr(r, size, t == T_CX16 ? 16 : 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(t);
    int lock = rn(r, 2);
    const uint8_t op[2] = { 0x0f, 0xc7 };
    if (lock) b1(0xf0);
    emit_mem_op(NULL, 0, t == T_CX16, 0, op, 2, 1, &m);
    acc_rmw(in, addr, size, lock);
    end(in);
}

static void gen_movx(struct rng *r)
{
    static const uint8_t o[4] = { 0xb6, 0xb7, 0xbe, 0xbf };
    unsigned k = rn(r, 5);
    int reg = pick_reg(r, -1, -1);
    unsigned size = k == 4 ? 4 : (o[k] & 1) ? 2 : 1;
    uint64_t addr = pick_addr(r, size, 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(T_MOVX);
    if (k == 4) {
        const uint8_t op[1] = { 0x63 };
        emit_mem_op(NULL, 0, 1, 0, op, 1, reg, &m);
    } else {
        const uint8_t op[2] = { 0x0f, o[k] };
        emit_mem_op(NULL, 0, rn(r, 2), 0, op, 2, reg, &m);
    }
    acc1(in, K_R, addr, size);
    end(in);
}

static void gen_movbe_nti(struct rng *r, int t)
{
    unsigned size = t == T_MOVNTI ? 4u << rn(r, 2) : szs[1 + rn(r, 3)];
    uint8_t pfx[2];
    int w, np = size_pfx(size, pfx, &w);
    int reg = pick_reg(r, -1, -1);
    uint64_t addr = pick_addr(r, size, 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(t);
    if (t == T_MOVNTI) {
        const uint8_t op[2] = { 0x0f, 0xc3 };
        emit_mem_op(NULL, 0, size == 8, 0, op, 2, reg, &m);
        acc1(in, K_W, addr, size);
    } else {
        int st = rn(r, 2);
        const uint8_t op[3] = { 0x0f, 0x38, (uint8_t)(0xf0 + st) };
        emit_mem_op(pfx, np, w, 0, op, 3, reg, &m);
        acc1(in, st ? K_W : K_R, addr, size);
    }
    end(in);
}

/* SSE: { prefix (0 none), opcode, size, kind, align, extra imm byte } */
static const struct { uint8_t pfx, op0, op1, op2, size, kind, align, imm; } sse[] = {
    { 0, 0x0f, 0x10, 0, 16, K_R, 0, 0 },    /* movups */
    { 0, 0x0f, 0x11, 0, 16, K_W, 0, 0 },
    { 0xf3, 0x0f, 0x6f, 0, 16, K_R, 0, 0 }, /* movdqu */
    { 0xf3, 0x0f, 0x7f, 0, 16, K_W, 0, 0 },
    { 0, 0x0f, 0x28, 0, 16, K_R, 16, 0 },   /* movaps */
    { 0, 0x0f, 0x29, 0, 16, K_W, 16, 0 },
    { 0x66, 0x0f, 0x6f, 0, 16, K_R, 16, 0 },/* movdqa */
    { 0x66, 0x0f, 0x7f, 0, 16, K_W, 16, 0 },
    { 0xf3, 0x0f, 0x7e, 0, 8, K_R, 0, 0 },  /* movq */
    { 0x66, 0x0f, 0xd6, 0, 8, K_W, 0, 0 },
    { 0x66, 0x0f, 0x6e, 0, 4, K_R, 0, 0 },  /* movd */
    { 0x66, 0x0f, 0x7e, 0, 4, K_W, 0, 0 },
    { 0xf3, 0x0f, 0x10, 0, 4, K_R, 0, 0 },  /* movss */
    { 0xf3, 0x0f, 0x11, 0, 4, K_W, 0, 0 },
    { 0xf2, 0x0f, 0x10, 0, 8, K_R, 0, 0 },  /* movsd */
    { 0xf2, 0x0f, 0x11, 0, 8, K_W, 0, 0 },
    { 0, 0x0f, 0x16, 0, 8, K_R, 0, 0 },     /* movhps */
    { 0, 0x0f, 0x17, 0, 8, K_W, 0, 0 },
    { 0x66, 0x0f, 0x3a, 0x20, 1, K_R, 0, 1 },  /* pinsrb */
    { 0x66, 0x0f, 0x3a, 0x14, 1, K_W, 0, 1 },  /* pextrb */
    { 0x66, 0x0f, 0x3a, 0x15, 2, K_W, 0, 1 },  /* pextrw */
    { 0x66, 0x0f, 0xc4, 0, 2, K_R, 0, 1 },     /* pinsrw */
};
static void gen_sse(struct rng *r)
{
    unsigned i = rn(r, sizeof(sse) / sizeof(sse[0]));
    if (!feat.sse41 && sse[i].op1 == 0x3a) i = 0;
    uint64_t addr = pick_addr(r, sse[i].size, sse[i].align);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(sse[i].kind == K_R ? T_SSE_LD : T_SSE_ST);
    uint8_t pfx[1] = { sse[i].pfx };
    uint8_t op[3] = { sse[i].op0, sse[i].op1, sse[i].op2 };
    emit_mem_op(pfx, sse[i].pfx ? 1 : 0, 0, 0, op, sse[i].op2 ? 3 : 2, (int)rn(r, 16), &m);
    if (sse[i].imm) b1((uint8_t)rn(r, 8));
    acc1(in, sse[i].kind, addr, sse[i].size);
    end(in);
}

/* AVX: VEX3 vmovdqu/vmovups (L=1: 32 bytes, L=0: 16). */
static void gen_avx(struct rng *r)
{
    int st = rn(r, 2), l = rn(r, 2), ups = rn(r, 2);
    unsigned size = l ? 32 : 16;
    uint64_t addr = pick_addr(r, size, 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(st ? T_AVX_ST : T_AVX_LD);
    int reg = (int)rn(r, 16);
    b1(0xc4);
    b1((uint8_t)((reg >= 8 ? 0 : 0x80) | (m.index >= 8 ? 0 : 0x40) | (m.base >= 8 ? 0 : 0x20) | 1));
    b1((uint8_t)(0x78 | (l << 2) | (ups ? 0 : 2)));   /* W0 vvvv=1111 L pp (F3 = 2) */
    b1(ups ? (uint8_t)(st ? 0x11 : 0x10) : (uint8_t)(st ? 0x7f : 0x6f));
    int sib = m.index >= 0 || (m.base & 7) == 4;
    b1((uint8_t)(m.mod << 6 | (reg & 7) << 3 | (sib ? 4 : (m.base & 7))));
    if (sib)
        b1((uint8_t)((m.index >= 0 ? m.scale : 0) << 6 | (m.index >= 0 ? m.index & 7 : 4) << 3 | (m.base & 7)));
    if (m.mod == 1) b1((uint8_t)m.disp);
    else if (m.mod == 2) b4((uint32_t)m.disp);
    acc1(in, st ? K_W : K_R, addr, size);
    end(in);
}

/* x87: { opcode, /digit, size, kind } */
static const struct { uint8_t op, digit, size, kind; } x87[] = {
    { 0xd9, 0, 4, K_R }, { 0xdd, 0, 8, K_R }, { 0xdb, 5, 10, K_R },      /* fld m32/m64/m80 */
    { 0xdf, 0, 2, K_R }, { 0xdb, 0, 4, K_R }, { 0xdf, 5, 8, K_R },       /* fild */
    { 0xd8, 0, 4, K_R }, { 0xdc, 1, 8, K_R },                            /* fadd m32, fmul m64 */
    { 0xd9, 3, 4, K_W }, { 0xdd, 3, 8, K_W }, { 0xdb, 7, 10, K_W },      /* fstp */
    { 0xd9, 2, 4, K_W }, { 0xdd, 2, 8, K_W },                            /* fst */
    { 0xdf, 3, 2, K_W }, { 0xdb, 3, 4, K_W }, { 0xdf, 7, 8, K_W },       /* fistp */
    { 0xd9, 7, 2, K_W }, { 0xdd, 7, 2, K_W },                            /* fnstcw, fnstsw */
    { 0xd9, 6, 28, K_W }, { 0xdd, 6, 108, K_W },                         /* fnstenv, fnsave */
};
static void gen_x87(struct rng *r)
{
    unsigned i = rn(r, sizeof(x87) / sizeof(x87[0]));
    uint64_t addr = pick_addr(r, x87[i].size, 0);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    struct ins *in = begin(x87[i].size >= 28 ? T_X87_ENV : x87[i].kind == K_R ? T_X87_LD : T_X87_ST);
    const uint8_t op[1] = { x87[i].op };
    emit_mem_op(NULL, 0, 0, 0, op, 1, x87[i].digit, &m);
    acc1(in, x87[i].kind, addr, x87[i].size);
    end(in);
}

/* FXSAVE, then FXRSTOR of the same image (random bytes would #GP on MXCSR). */
static void gen_fxsave(struct rng *r)
{
    uint64_t addr = pick_addr(r, 512, 16);
    struct mem m;
    setup_mem(r, addr, &m, -1);
    int w = rn(r, 2);
    const uint8_t op[2] = { 0x0f, 0xae };
    struct ins *in = begin(T_FXSAVE);
    emit_mem_op(NULL, 0, w, 0, op, 2, 0, &m);
    acc1(in, K_W, addr, 512);
    end(in);
    if (rn(r, 2)) {
        in = begin(T_FXRSTOR);
        emit_mem_op(NULL, 0, w, 0, op, 2, 1, &m);
        acc1(in, K_R, addr, 512);
        end(in);
    }
}

/* XSAVE of x87|SSE|AVX components, then XRSTOR of the same image: the access is the legacy
   area and the header, and the AVX state when saved (R-ACC-1), 64-byte aligned. */
static void gen_xsave(struct rng *r)
{
    unsigned mask = 1 + rn(r, 7), size = mask & 4 ? 832 : 576;
    uint64_t addr = pick_addr(r, size, 64);
    struct mem m;
    do setup_mem(r, addr, &m, 0); while (m.base == 2 || m.index == 2);
    set_reg(0, mask);                    /* EDX:EAX: the components */
    set_reg(2, 0);
    int w = rn(r, 2);
    const uint8_t op[2] = { 0x0f, 0xae };
    struct ins *in = begin(T_XSAVE);
    emit_mem_op(NULL, 0, w, 0, op, 2, 4, &m);
    acc1(in, K_W, addr, size);
    /* XSAVE also reads XSTATE_BV (to keep the bits of components not saved), an 8-byte
       read of its own at offset 512, after the whole area's write check and before any
       write (R-ACC-1). */
    acc1(in, K_R, addr + 512, 8);
    in->ordered = 1;
    end(in);
    if (rn(r, 2)) {
        /* XRSTOR #GPs unless the header is clean (XSTATE_BV within XCR0, XCOMP_BV and the
           reserved bytes 0): XSAVE leaves the bits and bytes it does not save as they were. */
        for (unsigned i = 512; i < 576; i++) data_init[addr - DATA + i] = 0;
        in = begin(T_XRSTOR);
        emit_mem_op(NULL, 0, w, 0, op, 2, 5, &m);
        acc1(in, K_R, addr, size);
        end(in);
    }
}

/* String instructions, with or without REP, either direction. */
static void gen_str(struct rng *r)
{
    static const uint8_t sop_code[6] = { 0, 0xa4, 0xaa, 0xac, 0xa6, 0xae };
    unsigned sop = 1 + rn(r, 5), esz = szs[rn(r, 4)];
    unsigned rep = rn(r, 4) ? 1 : 0;
    if ((sop == S_CMPS || sop == S_SCAS) && rep && rn(r, 2)) rep = 2;
    uint64_t cnt = rep ? (rn(r, 4) ? rn(r, 12) : rn(r, 48)) : 1;
    int df = rn(r, 3) == 0;
    uint64_t span = (cnt ? cnt : 1) * esz;
    uint64_t lo = DATA + (df ? span - esz : 0), hi = DATA + DATA_SIZE - (df ? esz : span);
    uint64_t rsi = lo + rn(r, (unsigned)(hi - lo + 1)), rdi = lo + rn(r, (unsigned)(hi - lo + 1));
    if (rn(r, 3) == 0) { rsi &= ~(uint64_t)(esz - 1); rdi &= ~(uint64_t)(esz - 1); }
    if (rsi < lo) rsi += esz;
    if (rdi < lo) rdi += esz;
    set_reg(6, (uint32_t)rsi);
    set_reg(7, (uint32_t)rdi);
    uint32_t cimm = set_reg(1, (uint32_t)(rep ? cnt : rnext(r)));
    struct ins *in = begin(T_SETUP);
    b1(df ? 0xfd : 0xfc);
    end(in);
    in = begin(T_STR);
    if (rep) b1(rep == 2 ? 0xf2 : 0xf3);
    if (esz == 2) b1(0x66);
    if (esz == 8) b1(0x48);
    b1((uint8_t)(sop_code[sop] + (esz != 1)));
    in->sop = (uint8_t)sop;
    in->esz = (uint8_t)esz;
    in->df = (uint8_t)df;
    in->rep = (uint8_t)rep;
    in->rsi0 = rsi;
    in->rdi0 = rdi;
    in->rcx0 = rep ? cnt : 1;
    in->iters = rep ? cnt : 1;
    in->cnt_imm_off = cimm;
    in->ordered = 0;
    int logit = rep && (sop == S_CMPS || sop == S_SCAS) && nlog < 64;
    if (logit) in->log = (int8_t)nlog;
    end(in);
    if (logit) {                         /* mov %rcx, fuzz_log[slot] */
        in = begin(T_LOG);
        b1(0x48); b1(0x89); b1(0x0c); b1(0x25);
        b4((uint32_t)(uint64_t)&fuzz_log[nlog]);
        end(in);
        nlog++;
    }
}

/* The accesses of iteration j of a string instruction. */
static int str_accs(const struct ins *in, uint64_t j, struct acc *a)
{
    int64_t step = in->df ? -(int64_t)in->esz : (int64_t)in->esz;
    uint64_t s = in->rsi0 + (uint64_t)(step * (int64_t)j), d = in->rdi0 + (uint64_t)(step * (int64_t)j);
    int n = 0;
    switch (in->sop) {
    case S_MOVS: a[n++] = (struct acc){ s, in->esz, K_R, 0 }; a[n++] = (struct acc){ d, in->esz, K_W, 0 }; break;
    case S_STOS: a[n++] = (struct acc){ d, in->esz, K_W, 0 }; break;
    case S_LODS: a[n++] = (struct acc){ s, in->esz, K_R, 0 }; break;
    case S_CMPS: a[n++] = (struct acc){ s, in->esz, K_R, 0 }; a[n++] = (struct acc){ d, in->esz, K_R, 0 }; break;
    case S_SCAS: a[n++] = (struct acc){ d, in->esz, K_R, 0 }; break;
    }
    return n;
}

static void ensure_stack(struct rng *r)
{
    if (g_rsp < DATA + 0x100 || g_rsp > DATA + DATA_SIZE - 0x100 || rn(r, 16) == 0) {
        uint64_t v = DATA + 0x100 + rn(r, DATA_SIZE - 0x200);
        v = rn(r, 4) ? v & ~7ull : v;
        set_reg(4, (uint32_t)v);
    }
}

static void gen_push(struct rng *r)
{
    ensure_stack(r);
    unsigned k = rn(r, 7);
    struct mem m;
    uint64_t addr = 0;
    unsigned msz = rn(r, 3) ? 8 : 2;
    if (k == 3) {
        addr = pick_addr(r, msz, 0);
        setup_mem(r, addr, &m, -1);
    }
    struct ins *in = begin(T_PUSH);
    unsigned size = 8;
    int reg = pick_reg(r, -1, -1);
    switch (k) {
    case 0: if (reg >= 8) b1(0x41); b1((uint8_t)(0x50 + (reg & 7))); break;
    case 1: b1(0x6a); b1((uint8_t)rnext(r)); break;
    case 2: b1(0x68); b4((uint32_t)rnext(r)); break;
    case 3: {
        uint8_t pfx[1] = { 0x66 };
        const uint8_t op[1] = { 0xff };
        emit_mem_op(pfx, msz == 2, 0, 0, op, 1, 6, &m);
        size = msz;
        acc1(in, K_R, addr, msz);
        break;
    }
    case 4: b1(0x9c); break;                                              /* pushfq */
    case 5: b1(0x66); if (reg >= 8) b1(0x41); b1((uint8_t)(0x50 + (reg & 7))); size = 2; break;
    case 6: b1(0x66); b1(0x6a); b1((uint8_t)rnext(r)); size = 2; break;   /* pushw imm8 */
    }
    acc_stack(in, K_W, -(int64_t)size, size);
    in->rsp_delta = -(int32_t)size;
    g_rsp -= size;
    end(in);
}

static void gen_pop(struct rng *r)
{
    ensure_stack(r);
    unsigned k = rn(r, 4);
    unsigned size = (k & 1) ? 2 : 8;
    struct mem m;
    uint64_t addr = 0;
    if (k >= 2) {
        addr = pick_addr(r, size, 0);
        setup_mem(r, addr, &m, -1);
    }
    struct ins *in = begin(T_POP);
    int reg = pick_reg(r, -1, -1);
    acc_stack(in, K_R, 0, size);
    if (k < 2) {
        if (size == 2) b1(0x66);
        if (reg >= 8) b1(0x41);
        b1((uint8_t)(0x58 + (reg & 7)));
    } else {
        uint8_t pfx[1] = { 0x66 };
        const uint8_t op[1] = { 0x8f };
        emit_mem_op(pfx, size == 2, 0, 0, op, 1, 0, &m);
        acc1(in, K_W, addr, size);
    }
    in->rsp_delta = (int32_t)size;
    g_rsp += size;
    end(in);
}

/* call T; jmp over; T: ret [imm16]. Executed: call, ret, jmp. */
static void gen_call(struct rng *r)
{
    ensure_stack(r);
    unsigned imm = rn(r, 3) ? 0 : rn(r, 24);
    struct ins *c = begin(T_CALL);
    b1(0xe8); b4(2);
    acc_stack(c, K_W, -8, 8);
    c->rsp_delta = -8;
    c->is_call = 1;
    g_rsp -= 8;
    uint32_t joff = coff();
    b1(0xeb); b1(imm ? 3 : 1);
    end(c);
    c->len = 5;
    struct ins *t = begin(T_RET);
    if (imm) { b1(0xc2); b1((uint8_t)imm); b1(0); } else b1(0xc3);
    acc_stack(t, K_R, 0, 8);
    t->rsp_delta = 8 + (int32_t)imm;
    g_rsp += 8 + imm;
    end(t);
    struct ins *j = &ins[nins++];
    *j = (struct ins){ .off = joff, .len = 2, .tmpl = T_SETUP, .rsp_before = g_rsp, .log = -1 };
}

/* A store to the view (R-COH-1): one word of a shadow page's entry changes, from the next
   instruction on. movabs $entry, %b; movabs $value, %a; mov %a, (%b). */
static void gen_view(struct rng *r)
{
    static const int regs[] = { 0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 14, 15 };
    int a = regs[rn(r, 12)], b;
    do b = regs[rn(r, 12)]; while (b == a);
    unsigned p = rn(r, SHADOW_PAGES), w = rn(r, 2);
    uint64_t v = 0;
    unsigned k = rn(r, 8);
    if (w == 0) {
        v = k < 2 ? 0 : k < 6 ? 1 + rn(r, 7) : k < 7 ? rnext(r) & ULPT_PAGE_SW_MASK : 1ull << (3 + rn(r, 53));
        /* BOUNDS from the view store: at an array (a single bit of 49:9 would point anywhere,
           unmapped memory included), with or without page rights. */
        if ((k == 7 && v >> 9 && !(v >> 50)) || (k < 6 && g_bnd && rn(&brng, 3) == 0))
            v = (k == 7 ? 0 : v) | (g_bnd ? ULPT_BOUNDS_FIELD(bnd_addr(&brng)) : 0);
    } else if (k >= 2)
        for (unsigned l = 0; l < 64; l++)
            if (rn(r, 8) == 0) v |= 1ull << l;
    uint64_t ea = VIEW_BASE + ((SHADOW_FIRST + p * PAGE) >> 12) * 16 + 8 * w;
    struct ins *in = begin(T_SETUP);
    b1((uint8_t)(0x48 | (b >= 8))); b1((uint8_t)(0xb8 + (b & 7)));
    b4((uint32_t)ea); b4((uint32_t)(ea >> 32));
    end(in);
    in = begin(T_SETUP);
    b1((uint8_t)(0x48 | (a >= 8))); b1((uint8_t)(0xb8 + (a & 7)));
    b4((uint32_t)v); b4((uint32_t)(v >> 32));
    end(in);
    in = begin(T_VIEW);
    b1((uint8_t)(0x48 | (a >= 8 ? 4 : 0) | (b >= 8 ? 1 : 0)));
    b1(0x89);
    b1((uint8_t)((a & 7) << 3 | (b & 7)));
    acc1(in, K_W, ea, 8);
    in->is_view = 1;
    in->vpage = (uint8_t)p;
    in->vword = (uint8_t)w;
    in->vval = v;
    end(in);
}

/* The data accesses of instruction k as generated (a string instruction's: of a random
   iteration; the stack's at the generator's RSP). */
static int gen_accs(struct rng *r, int k, struct acc *a)
{
    int na = 0;
    if (ins[k].is_view) return 0;
    if (ins[k].sop) return str_accs(&ins[k], rn(r, (unsigned)ins[k].rcx0 + 1), a);
    for (; na < ins[k].nacc; na++) {
        a[na] = ins[k].a[na];
        if (a[na].stack) a[na].addr += ins[k].rsp_before;
    }
    return na;
}
/* The bytes [*s, *e) (line offsets) of an access of the sequence so far in a line with index
   `line`; 0 if it has none there. */
static int bnd_seg(struct rng *r, unsigned line, unsigned *s, unsigned *e)
{
    unsigned c[16][2], n = 0;
    for (int k = 0; k < nins && n < 16; k++) {
        struct acc a[2];
        int na = gen_accs(r, k, a);
        for (int i = 0; i < na && n < 16; i++)
            for (uint64_t x = a[i].addr; x < a[i].addr + a[i].size && n < 16; x = (x | 127) + 1) {
                uint64_t end = (x | 127) + 1 < a[i].addr + a[i].size ? (x | 127) + 1 : a[i].addr + a[i].size;
                if ((x >> 7 & 31) != line) continue;
                c[n][0] = (unsigned)(x & 127);
                c[n++][1] = (unsigned)((end - 1) & 127) + 1;
            }
    }
    if (!n) return 0;
    n = rn(r, n);
    *s = c[n][0];
    *e = c[n][1];
    return 1;
}
/* Where an access begins or ends in the line, +-1: bounds that cut it. */
static unsigned bnd_cut(struct rng *r, unsigned line)
{
    unsigned s, e;
    if (!bnd_seg(r, line, &s, &e)) return rn(r, 129);
    unsigned v = (rn(r, 2) ? s : e) + rn(r, 3);
    return v ? v - 1 : 0;
}
/* A line's (lo, hi), biased to the cases R-BND-1 names. */
static void bnd_pair(struct rng *r, unsigned line, uint8_t *lo, uint8_t *hi)
{
    unsigned k = rn(r, 16), l, h, s, e;
    if (k < 2) { l = 0; h = 128; }                              /* the whole line */
    else if (k < 4) { l = rn(r, 2) ? 0 : bnd_cut(r, line); h = 129 + rn(r, 127); } /* hi > 128 */
    else if (k < 6) { l = rn(r, 256); h = rn(r, l + 1); }       /* lo >= hi: none */
    else if (k < 7) { l = 0; h = 0; }
    else if (k < 10 && bnd_seg(r, line, &s, &e) && e - s > 1) {
        l = rn(r, 2) ? s : rn(r, s + 1);                        /* an access open in part: */
        h = s + 1 + rn(r, e - s - 1);                           /* its first closed byte */
    } else if (k < 14) {                                        /* cutting the accesses */
        l = rn(r, 3) ? bnd_cut(r, line) : 0;
        h = rn(r, 3) ? bnd_cut(r, line) : 128;
    } else { l = rn(r, 256); h = rn(r, 256); }
    *lo = (uint8_t)l;
    *hi = (uint8_t)h;
}
/* The arrays of the sequence (after its code: they cut its accesses). */
static void bnd_fill(struct rng *r)
{
    for (unsigned i = 0; i < PAGE; i += 8) *(uint64_t *)&bnd_init[i] = rnext(r);
    for (unsigned a = 0; a < NBND; a++)
        for (unsigned l = 0; l < 32; l++)
            bnd_pair(r, l, &bnd_init[bnd_off[a] + 2 * l], &bnd_init[bnd_off[a] + 2 * l + 1]);
}

/* A store to the bounds at addr: its address (disp32) and value in the code and in ins. */
static void bnd_store_at(struct rng *r, struct ins *in, uint64_t addr)
{
    uint8_t *c = (uint8_t *)CODE + in->cnt_imm_off, v[4];
    unsigned size = in->a[0].size, line = (unsigned)((addr - BND_PAGE) & 63) / 2;
    bnd_pair(r, line, &v[0], &v[1]);
    bnd_pair(r, line + 1, &v[2], &v[3]);
    if (size == 1 && (addr & 1)) v[0] = v[1];
    *(uint32_t *)c = (uint32_t)addr;
    in->a[0].addr = addr;
    in->vval = 0;
    for (unsigned i = 0; i < size; i++) {
        c[4 + i] = v[i];
        in->vval |= (uint64_t)v[i] << 8 * i;
    }
}
/* A plain store to the bounds (R-BND-2: it applies from the next access on, with no view
   store or invalidation): mov $imm, disp32 of 1, 2 or 4 bytes into an array. An absolute
   address, so that bnd_aim can move it without changing the sequence's registers. */
static void gen_bnd(struct rng *r)
{
    unsigned size = 1u << rn(r, 3), line = rn(r, size == 4 ? 31 : 32);
    uint64_t addr = BND_PAGE + bnd_off[rn(r, NBND)] + 2 * line + (size == 1 ? rn(r, 2) : 0);
    struct ins *in = begin(T_BND);
    if (size == 2) b1(0x66);
    b1(size == 1 ? 0xc6 : 0xc7);
    b1(0x04);                            /* ModRM, SIB: disp32 alone */
    b1(0x25);
    in->cnt_imm_off = coff();
    b4(0);
    for (unsigned i = 0; i < size; i++) b1(0);
    acc1(in, K_W, addr, size);
    in->is_bnd = 1;
    end(in);
    bnd_store_at(r, in, addr);
}

static void gen_one(struct rng *r)
{
    unsigned w = rn(r, 100);
    if (g_view && rn(r, 25) == 0) { gen_view(r); return; }
    if (w < 10) gen_simple_mem(r, T_MOV_LD);
    else if (w < 20) gen_simple_mem(r, T_MOV_ST);
    else if (w < 24) gen_simple_mem(r, T_MOV_STI);
    else if (w < 27) gen_movx(r);
    else if (w < 35) gen_simple_mem(r, T_ALU);
    else if (w < 37) gen_simple_mem(r, T_CMP);
    else if (w < 40) gen_simple_mem(r, T_XCHG);
    else if (w < 43) gen_simple_mem(r, T_CMPXCHG);
    else if (w < 45) gen_simple_mem(r, T_XADD);
    else if (w < 47) gen_simple_mem(r, T_UNARY);
    else if (w < 49) gen_simple_mem(r, T_SHIFT);
    else if (w < 50) gen_bt(r);
    else if (w < 52) gen_cx(r, T_CX8);
    else if (w < 54) gen_cx(r, feat.cx16 ? T_CX16 : T_CX8);
    else if (w < 60) gen_sse(r);
    else if (w < 64) { if (feat.avx) gen_avx(r); else gen_sse(r); }
    else if (w < 68) gen_x87(r);
    else if (w < 69) { if (rn(r, 2) && feat.xsave) gen_xsave(r); else gen_fxsave(r); }
    else if (w < 71) { if (feat.movbe) gen_movbe_nti(r, T_MOVBE); else gen_movbe_nti(r, T_MOVNTI); }
    else if (w < 72) gen_movbe_nti(r, T_MOVNTI);
    else if (w < 84) gen_str(r);
    else if (w < 91) gen_push(r);
    else if (w < 96) gen_pop(r);
    else gen_call(r);
}

/* Sequence i of the campaign: code at CODE, ins[], the start state in fuzz_in, the data. */
static uint64_t g_seed;
static struct rng seq_rng(uint64_t i, uint64_t stream)
{
    struct rng r = { g_seed * 0x2545f4914f6cdd1dull ^ (i + 1) * 0x9e3779b97f4a7c15ull ^ stream * 0xd1b54a32d192ed03ull };
    rnext(&r);
    return r;
}
static uint8_t data_ref[DATA_SIZE];
static void print_data_diff(void)
{
    int n = 0;
    for (unsigned i = 0; i < DATA_SIZE && n < 8; i++)
        if (((uint8_t *)DATA)[i] != data_ref[i]) {
            bm_printf("#   data %lx: %02x/%02x (initially %02x)\n", DATA + i, data_ref[i], ((uint8_t *)DATA)[i], data_init[i]);
            n++;
        }
}

static void generate(uint64_t i)
{
    struct rng r = seq_rng(i, 0);
    cp = (uint8_t *)CODE;
    nins = 0;
    nlog = 0;
    for (unsigned k = 0; k < 16; k++) {
        uint64_t v = rnext(&r);
        unsigned how = rn(&r, 4);
        fuzz_in.gpr[k] = how == 0 ? v & 0xff : how == 1 ? (uint32_t)v : v;
    }
    g_rsp = DATA + 0x200 + rn(&r, DATA_SIZE - 0x400);
    if (rn(&r, 4)) g_rsp &= ~7ull;
    fuzz_in.gpr[4] = g_rsp;
    fuzz_in.rflags = 0x2 | (rnext(&r) & FL_MASK);
    for (unsigned k = 0; k < 16; k++)
        for (unsigned j = 0; j < 32; j += 8)
            *(uint64_t *)&fuzz_in.vec[k][j] = rnext(&r);
    /* The x87 state: FNINIT's control word, random registers (an empty register's contents
       too: QEMU computes with them), random valid tags. */
    for (unsigned j = 0; j < 512; j++) fuzz_in.fx[j] = 0;
    *(uint16_t *)&fuzz_in.fx[0] = 0x37f;
    fuzz_in.fx[4] = (uint8_t)rnext(&r);
    *(uint32_t *)&fuzz_in.fx[24] = fuzz_mxcsr;
    for (unsigned k = 0; k < 8; k++) {
        *(uint64_t *)&fuzz_in.fx[32 + 16 * k] = rnext(&r);
        *(uint16_t *)&fuzz_in.fx[40 + 16 * k] = (uint16_t)(0x3fff + rn(&r, 64) - 32) | (uint16_t)(rn(&r, 2) << 15);
    }
    for (unsigned c = 0; c < DATA_SIZE; c += 64) {
        unsigned style = rn(&r, 4);
        for (unsigned j = 0; j < 64; j += 8) {
            uint64_t v = rnext(&r);
            if (style == 1) v &= 0x0101010101010101ull;
            if (style == 2) v = 0;
            *(uint64_t *)&data_init[c + j] = v;
        }
    }
    brng = seq_rng(i, 6);
    unsigned n = 1 + rn(&r, MAXT);
    for (unsigned k = 0; k < n && nins < MAXINS - 16 && coff() < CODE_MAX - 64; k++) {
        gen_one(&r);
        if (g_bstore && rn(&brng, 6) == 0) gen_bnd(&brng);
    }
    bnd_fill(&brng);
    struct ins *e = begin(T_END);
    b1(0xe9);
    b4((uint32_t)((uint64_t)fuzz_exit - ((uint64_t)cp + 4)));
    end(e);
}

/* --- the table: random rights on the shadow pages ------------------------------------- */
struct pshadow { uint64_t w0, w1; int malformed; };
static struct pshadow shadow[SHADOW_PAGES];
static int mib_malformed;
static uint64_t *l1_entry7, l1_saved;

/* The code page's entry: NX (with random line rights, which never affect a fetch). */
static int code_nx, g_nx, g_log;
static uint64_t nlogged, nringed; /* sequences run with a count table, with a ring */
static uint64_t code_w0, code_w1;
static void table_apply(void)
{
    for (unsigned p = 0; p < SHADOW_PAGES; p++) {
        volatile uint64_t *e = ulpt_phys_entry(SHADOW_FIRST + p * PAGE);
        e[0] = shadow[p].w0;
        e[1] = shadow[p].w1;
    }
    volatile uint64_t *e = ulpt_phys_entry(CODE);
    e[0] = code_nx ? code_w0 : 0;
    e[1] = code_nx ? code_w1 : 0;
    flush_tlb();
}
static void table_clear(void)
{
    for (unsigned p = 0; p < SHADOW_PAGES; p++)
        shadow[p] = (struct pshadow){ 0, 0, 0 };
    code_nx = 0;
    mib_malformed = 0;
    *l1_entry7 = l1_saved;
    table_apply();
}
/* all_allow: entries that restrict nothing (software bits only). */
static void table_random(struct rng *r, int all_allow)
{
    for (unsigned p = 0; p < SHADOW_PAGES; p++) {
        struct pshadow *s = &shadow[p];
        unsigned k = rn(r, 100);
        *s = (struct pshadow){ 0, 0, 0 };
        if (all_allow) {
            if (k < 50) s->w0 = rnext(r) & ULPT_PAGE_SW_MASK;
            continue;
        }
        if (k < 20) continue;
        if (k < 28) { s->w0 = rnext(r) & ULPT_PAGE_SW_MASK; continue; }
        if (k < 45) s->w0 = 1 + rn(r, 7);
        if (k >= 40 && k < 95) {
            unsigned dens = 1 + rn(r, 6);
            for (unsigned l = 0; l < 64; l++)
                if (rn(r, 16) < dens) s->w1 |= 1ull << l;
            if (rn(r, 4) == 0) s->w1 &= rn(r, 2) ? ULPT_LINES_NR_ALL : ULPT_LINES_NW_ALL;
        }
        if (rn(r, 3) == 0) s->w0 |= rnext(r) & ULPT_PAGE_SW_MASK;
        if (k >= 95) {
            /* A reserved bit: 7:3 or 55:50 (bit 8 is LOG, 49:9 BOUNDS; spec 4.3). */
            unsigned bit = rn(r, 11);
            s->w0 |= 1ull << (bit < 5 ? 3 + bit : 50 + bit - 5);
            s->malformed = 1;
        }
    }
    mib_malformed = 0;
    *l1_entry7 = l1_saved;
    if (!all_allow && rn(r, 40) == 0) {
        mib_malformed = 1 + rn(r, 2);
        *l1_entry7 = mib_malformed == 1 ? l1_saved | 1ull << (1 + rn(r, 11))
                                        : 0xfd00000000ull | ULPT_DIR_P;   /* not RAM */
    }
    table_apply();
}

/* BOUNDS on some entries (their own stream, as the arrays'): most that deny a line, fewer
   that deny none (R-BND-3: those restrict nothing), malformed ones too. */
static void table_bounds(struct rng *r, int all_allow)
{
    for (unsigned p = 0; p < SHADOW_PAGES; p++)
        if (rn(r, 100) < (shadow[p].w1 ? 65u : all_allow ? 40u : 15u))
            shadow[p].w0 |= ULPT_BOUNDS_FIELD(bnd_addr(r));
}

/*
 * Most stores to the bounds go where they matter, once the table is known: at the pair of a
 * line that a later access touches and that its page's entry denies for its kind, in the
 * array that entry points at (a random store would seldom be read).
 */
static void bnd_aim(struct rng *r)
{
    for (int k = 0; k < nins; k++) {
        uint64_t cand[16];
        unsigned n = 0;
        if (!ins[k].is_bnd || rn(r, 5) == 0) continue;
        for (int q = k + 1; q < nins && n < 16; q++) {
            struct acc a[2];
            int na = gen_accs(r, q, a);
            for (int i = 0; i < na && n < 16; i++)
                for (uint64_t x = a[i].addr; x < a[i].addr + a[i].size && n < 16; x = (x | 127) + 1) {
                    uint64_t pg = x & ~(PAGE - 1), b;
                    unsigned line = (unsigned)(x >> 7 & 31);
                    if (pg < SHADOW_FIRST || pg >= SHADOW_FIRST + SHADOW_PAGES * PAGE) continue;
                    const struct pshadow *sp = &shadow[(pg - SHADOW_FIRST) / PAGE];
                    b = ULPT_BOUNDS_ADDR(sp->w0);
                    if (!sp->malformed && b >= BND_PAGE && b < BND_PAGE + PAGE &&
                        (sp->w1 >> (2 * line + (a[i].kind == K_W)) & 1))
                        cand[n++] = b + 2 * line;
                }
        }
        if (!n) continue;
        uint64_t pair = cand[rn(r, n)];
        unsigned size = ins[k].a[0].size;
        bnd_store_at(r, &ins[k], size == 1 ? pair + rn(r, 2) : size == 4 && (pair & 63) == 62 ? pair - 2 : pair);
    }
}

/* The spec's rule (R-TBL-1, R-TBL-2, section 6), independently of target-ulpt. */
static int cnx;                          /* the checker's copy of code_nx */
struct dec { uint64_t addr, w0, w1; unsigned reason; };
/*
 * The run's count table (spec 6.3), or none: with it, an access whose every denied part lies
 * in a LOG entry (not malformed) is counted, not delivered (R-LOG-1, R-CNT-1), and a
 * violation reports the first byte an entry without LOG denies. The table covers the shadow
 * pages and one page either side (an access may start there and straddle in).
 */
static int clog;                         /* 0 none, C_COUNT or C_RING */
enum { C_COUNT = 1, C_RING };
#define CNT_FIRST (SHADOW_FIRST - PAGE)
#define CNT_LINES ((SHADOW_PAGES + 2) * 32)
static uint64_t cnt_table[CNT_LINES * 2] __attribute__((aligned(4096)));
static uint64_t cnt_expect[CNT_LINES * 2];
/*
 * The ring (6.2) of a run with C_RING, above the data's MiB, and the records the checker
 * expects: appended per position in next_pos, compared position by position (the order of
 * one instruction's records is the order QEMU makes its accesses in, so as a set).
 */
#define RING_BASE 0x800000ull
#define RING_SHIFT 14
#define EXP_MAX 8192
struct erec { uint64_t start, info, rip; };
static struct erec rexp[EXP_MAX];
static uint32_t rexp_pos[EXP_MAX];        /* the position each record belongs to */
static unsigned nrexp, npos;
static uint64_t ring_used;                /* slots to clear before the next run */

/*
 * The checker's copy of BND_PAGE (the bounds the sequence's stores have made so far), and
 * the open bytes of a line (4.5): [lo, min(hi, 128)) of the two bytes at BOUNDS + 2 line,
 * none without BOUNDS or with bounds in the view (R-BND-2). ign_bnd: as if no entry had
 * bounds (the counters of what bounds changed); inject=3 does so throughout (a self-test).
 */
static uint8_t cbnd[PAGE];
static int ign_bnd;
static void open_range(uint64_t w0, unsigned line, unsigned *lo, unsigned *hi)
{
    uint64_t b = (w0 >> 9 & ((1ull << 41) - 1)) << 6;     /* word 0 49:9 = address 46:6 */
    *lo = *hi = 0;
    if (!b || ign_bnd || g_inject == 3 || (b >= VIEW_BASE && b < VIEW_BASE + (1ull << 39)))
        return;
    if (b < BND_PAGE || b + 64 > BND_PAGE + PAGE) {
        bm_printf("Bail out! BOUNDS %lx: the generator points only at its arrays\n", b);
        bm_exit(1);
    }
    *lo = cbnd[b - BND_PAGE + 2 * line];
    *hi = cbnd[b - BND_PAGE + 2 * line + 1];
    if (*hi > 128) *hi = 128;
}

enum { J_ALLOWED, J_VIOLATION, J_LOGGED };
static int judge(const struct pshadow *sh, int mibbad, unsigned kind, uint64_t start,
                 unsigned size, struct dec *d)
{
    if (kind == ULPT_KIND_X) {           /* fetches: NX of the code page only, never logged */
        if (cnx && start >> 12 == CODE >> 12) {
            *d = (struct dec){ start, code_w0, code_w1, ULPT_REASON_PAGE };
            return J_VIOLATION;
        }
        return J_ALLOWED;
    }
    int any = 0;
    struct dec first = { 0 };
    for (uint64_t a = start; a < start + size;) {
        uint64_t pend = (a & ~(PAGE - 1)) + PAGE, cend = pend < start + size ? pend : start + size;
        uint64_t pg = a & ~(PAGE - 1);
        struct dec pd = { 0 };
        int denied = 0, logs = 0;
        if (pg >> 20 == DATA >> 20 && mibbad) {
            pd = (struct dec){ a, 0, 0, ULPT_REASON_MALFORMED };
            denied = 1;
        } else if (pg >= SHADOW_FIRST && pg < SHADOW_FIRST + SHADOW_PAGES * PAGE) {
            const struct pshadow *s = &sh[(pg - SHADOW_FIRST) / PAGE];
            logs = clog && !s->malformed && (s->w0 & ULPT_LOG);
            if (s->malformed) {
                pd = (struct dec){ a, 0, 0, ULPT_REASON_MALFORMED };
                denied = 1;
            } else if (s->w0 & kind) {
                pd = (struct dec){ a, s->w0, s->w1, ULPT_REASON_PAGE };
                denied = 1;
            } else {
                /* R-BND-1: the first byte of a denied line that its bounds leave closed. */
                for (uint64_t b = a; b < cend && !denied; b = (b | 127) + 1) {
                    unsigned line = (unsigned)((b >> 7) & 31), lo, hi;
                    if (!(s->w1 >> (2 * line + (kind == K_W)) & 1)) continue;
                    open_range(s->w0, line, &lo, &hi);
                    uint64_t lend = (b | 127) + 1 < cend ? (b | 127) + 1 : cend;
                    for (uint64_t x = b; x < lend && !denied; x++)
                        if ((x & 127) < lo || (x & 127) >= hi) {
                            pd = (struct dec){ x, s->w0, s->w1, ULPT_REASON_LINE };
                            denied = 1;
                        }
                }
            }
        }
        if (denied && !logs) {
            *d = pd;
            return J_VIOLATION;
        }
        if (denied && !any) {
            first = pd;
            any = 1;
        }
        a = cend;
    }
    *d = first;
    return any ? J_LOGGED : J_ALLOWED;
}
/* The spec's rule (R-TBL-1, R-TBL-2, section 6): is the access delivered? */
static int decide(const struct pshadow *sh, int mibbad, unsigned kind, uint64_t start,
                  unsigned size, struct dec *d)
{
    return judge(sh, mibbad, kind, start, size, d) == J_VIOLATION;
}

/* --- the checker (runs in the handler at CPL 3, and at the end of a run) ------------- */
/* The failures: code and name, one table. */
#define FAILURES(X) \
    X(F_NONE, "none") X(F_SPURIOUS, "spurious-delivery") X(F_MISSED, "missed-delivery") \
    X(F_FRAME, "frame-mismatch") X(F_UNKNOWN_RIP, "delivery-at-unknown-rip") \
    X(F_BACKWARD, "delivery-went-backwards") X(F_AFTER_MISSING, "after-event-missing") \
    X(F_AFTER_FRAME, "after-event-frame") X(F_REPEAT, "step-alone-not-repeated") \
    X(F_LOOP, "delivery-loop") X(F_STRREGS, "string-registers-at-delivery") \
    X(F_PERMIT_STATE, "permit-result-differs (oracle 4)") \
    X(F_SKIP_STATE, "skip-result-differs (oracle 3)") \
    X(F_REF_DELIVERY, "delivery-in-unrestricted-run") X(F_STATUS, "in-handler-left-set") \
    X(F_TRAP, "unexpected-exception") X(F_REF_TRAP, "exception-in-reference") \
    X(F_MSR, "msr-rule") X(F_UIRET, "uiret-rule") X(F_INJECT_MISSED, "inject-not-detected") \
    X(F_COUNT, "count-table-differs (R-CNT-1)") X(F_RING, "log-records-differ (R-LOG-1..3)")
#define F_CODE(code, name) code,
#define F_NAME(code, name) name,
enum { FAILURES(F_CODE) F_NCODES };
static const char *const fname[F_NCODES] = { FAILURES(F_NAME) };
struct failrec { int code, k; uint64_t j, want[8], got[8]; };
static struct failrec fail;
static int fail_set;
static void failed(int code, int k, uint64_t j, const uint64_t *want, const uint64_t *got)
{
    if (fail_set) return;
    fail_set = 1;
    fail.code = code;
    fail.k = k;
    fail.j = j;
    for (int i = 0; i < 8; i++) {
        fail.want[i] = want ? want[i] : 0;
        fail.got[i] = got ? got[i] : 0;
    }
}

enum { M_REF, M_PERMIT, M_SKIP };
static int hmode;
static struct rng hrng;
static int cur_k;                       /* position: instruction, iteration, kinds permitted */
static uint64_t cur_j;
static unsigned cur_perm;
static int64_t rsp_shift;
static struct pshadow cshadow[SHADOW_PAGES];   /* the checker's view of the table */
static struct pshadow cshadow_init[SHADOW_PAGES];  /* ... at the start of a run */
static int cmib;
static int pending_after, repeat_pending, loops;
static uint64_t after_want[8], repeat_want[8];
static int nskip;
static struct { int k; uint64_t done; } skips[MAXINS];
static uint64_t ndeliv, nafter;
static int dump, g_verbose;
static struct { int mode; uint64_t f[8]; uint64_t rcx; } dlog[64];
static int ndlog;

/* The iterations of a string instruction: REPE/REPNE CMPS/SCAS stop where the data says, the
   reference run's (a permitted run must do the same); a run that skips instructions may
   compare other data: its own count, logged after the instruction (until then, RCX's start). */
static uint64_t iters_of(const struct ins *in)
{
    if (!in->sop) return 1;
    if (in->log >= 0 && hmode == M_SKIP) return in->rcx0 - fuzz_log[in->log];
    return in->iters;
}

static int accs_of(int k, uint64_t j, struct acc *a)
{
    const struct ins *in = &ins[k];
    int x = 0;
    if (cnx) {                           /* the fetch comes first (each iteration's, too) */
        a[0] = (struct acc){ CODE + in->off, 0, ULPT_KIND_X, 0 };
        x = 1;
    }
    if (in->sop) return j < iters_of(in) ? x + str_accs(in, j, a + x) : x;
    for (int i = 0; i < in->nacc; i++) {
        a[x + i] = in->a[i];
        if (a[x + i].stack) {
            a[x + i].addr = in->rsp_before + (uint64_t)rsp_shift + a[x + i].addr;
            a[x + i].stack = 0;
        }
    }
    return x + in->nacc;
}
/* Positions of an instruction: its iterations, and with the code page NX at least one (the
   fetch of a string instruction with RCX 0). */
static uint64_t positions_of(const struct ins *in)
{
    uint64_t n = iters_of(in);
    return n == 0 && cnx ? 1 : n;
}

/* The first access of (k, j) that a kind outside perm is denied for; -1 if none. */
static int first_denied(int k, uint64_t j, unsigned perm, struct acc *a, int n, struct dec *d)
{
    (void)k; (void)j;
    for (int i = 0; i < n; i++)
        if (!(a[i].kind & perm) && decide(cshadow, cmib, a[i].kind, a[i].addr, a[i].size, &d[i]))
            return i;
    return -1;
}

/* What bounds did in the permitted runs (each completed access once): accesses they opened
   (allowed, or logged instead of delivered), and ones whose first denied byte they moved. */
static uint64_t nbopen, nbmoved, nbstores;
static int skipping;                     /* next_pos of an instruction the handler skipped */

/* Leave the current position: everything it did had to be delivered. */
static void next_pos(void)
{
    struct acc a[3];
    struct dec d[3];
    int n = accs_of(cur_k, cur_j, a);
    for (int x = 0; hmode == M_PERMIT && x < n; x++) {
        struct dec d1, d0;
        if (a[x].kind == ULPT_KIND_X) continue;
        int r1 = judge(cshadow, cmib, a[x].kind, a[x].addr, a[x].size, &d1);
        ign_bnd = 1;
        int r0 = judge(cshadow, cmib, a[x].kind, a[x].addr, a[x].size, &d0);
        ign_bnd = 0;
        if (r1 != r0) nbopen++;
        else if (r1 != J_ALLOWED && d1.addr != d0.addr) nbmoved++;
    }
    int i = first_denied(cur_k, cur_j, cur_perm, a, n, d);
    if (i >= 0) {
        uint64_t w[8] = { d[i].addr, a[i].kind, a[i].addr, a[i].size, d[i].reason, cur_perm, 0, 0 };
        failed(F_MISSED, cur_k, cur_j, w, NULL);
    }
    /* It completed: each logged access of a kind not let through adds one (R-CNT-1). */
    for (int x = 0; clog && x < n; x++) {
        uint64_t line = (a[x].addr - CNT_FIRST) >> 7;
        int again = 0;                   /* the same kind and bytes: one access (R-LOG-2) */
        for (int y = 0; y < x; y++)
            again |= a[y].kind == a[x].kind && a[y].addr == a[x].addr && a[y].size == a[x].size;
        if (again || (a[x].kind & cur_perm) ||
            judge(cshadow, cmib, a[x].kind, a[x].addr, a[x].size, &d[x]) != J_LOGGED)
            continue;
        if (clog == C_COUNT && a[x].addr >= CNT_FIRST && line < CNT_LINES)
            cnt_expect[line * 2 + (a[x].kind == K_W)]++;
        if (clog == C_RING && nrexp < EXP_MAX) {
            /* A write to RAM has its value (VAL); the value itself is not checked. */
            uint64_t info = a[x].kind | (uint64_t)d[x].reason << 8 |
                            (uint64_t)(a[x].size < 0xffff ? a[x].size : 0xffff) << 16 |
                            (a[x].kind == K_W ? ULPT_REC_VAL : 0) | ULPT_REC_V;
            rexp[nrexp] = (struct erec){ a[x].addr, info, CODE + ins[cur_k].off };
            rexp_pos[nrexp++] = npos;
        }
    }
    npos++;
    cur_perm = 0;
    loops = 0;
    if (ins[cur_k].is_view && g_inject != 2) {  /* the new entry holds from the next instruction */
        struct pshadow *v = &cshadow[ins[cur_k].vpage];
        if (ins[cur_k].vword) v->w1 = ins[cur_k].vval;
        else v->w0 = ins[cur_k].vval;
        v->malformed = (v->w0 & ULPT_PAGE_RSVD_MASK) != 0;
    }
    if (ins[cur_k].is_bnd && !skipping && g_inject != 4) {    /* from the next access on (R-BND-2) */
        for (unsigned i = 0; i < ins[cur_k].a[0].size; i++)
            cbnd[ins[cur_k].a[0].addr - BND_PAGE + i] = (uint8_t)(ins[cur_k].vval >> 8 * i);
        nbstores += hmode == M_PERMIT;
    }
    if (cur_j + 1 < positions_of(&ins[cur_k])) {
        cur_j++;
        return;
    }
    cur_j = 0;
    if (ins[cur_k].sets_rsp) rsp_shift = 0;
    cur_k++;
    while (cur_k < nins && (ins[cur_k].notexec || positions_of(&ins[cur_k]) == 0)) {
        if (ins[cur_k].sets_rsp) rsp_shift = 0;
        cur_k++;
    }
}
static void start_pos(void)
{
    cur_k = 0; cur_j = 0; cur_perm = 0; rsp_shift = 0;
    while (cur_k < nins && positions_of(&ins[cur_k]) == 0) cur_k++;
}
/* Exec order: the index of the instruction at code offset off, from the current one on. */
static int find_ins(uint64_t rip)
{
    for (int k = cur_k; k < nins; k++)
        if (CODE + ins[k].off == rip && !ins[k].notexec) return k;
    return -1;
}
static uint64_t next_rip(int k, uint64_t j)
{
    if (j + 1 < iters_of(&ins[k])) return CODE + ins[k].off;
    for (int n = k + 1; n < nins; n++)
        if (!ins[n].notexec) return CODE + ins[n].off;
    return (uint64_t)fuzz_exit;
}

void fuzz_handler(uint64_t *g, uint64_t *f);
void fuzz_handler(uint64_t *g, uint64_t *f)
{
    uint64_t info = f[ULPT_FRAME_INFO];
    if (dump && ndlog < 64) {
        dlog[ndlog].mode = hmode;
        for (int i = 0; i < 8; i++) dlog[ndlog].f[i] = f[i];
        dlog[ndlog].rcx = g[1];
        ndlog++;
    }
    if (hmode == M_REF) {
        failed(F_REF_DELIVERY, -1, 0, NULL, f);
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        return;
    }
    if (ULPT_INFO_REASON(info) == ULPT_REASON_AFTER) {
        nafter++;
        if (!pending_after || f[0] != after_want[0] || info != after_want[1] || f[2] != after_want[2] ||
            f[3] != after_want[3] || f[4] != after_want[4] || f[6] != after_want[6] || f[7] != after_want[7])
            failed(pending_after ? F_AFTER_FRAME : F_SPURIOUS, cur_k, cur_j, after_want, f);
        pending_after = 0;
        /* The instruction completed: move on (a REP iteration or the instruction). */
        next_pos();
        return;
    }
    ndeliv++;
    int k = find_ins(f[ULPT_FRAME_RIP]);
    if (k < 0) {
        failed(F_UNKNOWN_RIP, cur_k, cur_j, NULL, f);
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        return;
    }
    struct ins *in = &ins[k];
    uint64_t j = 0;
    if (in->sop && in->rep) {
        j = in->rcx0 - g[1];
        if (j >= positions_of(in)) {
            failed(F_STRREGS, k, j, NULL, f);
            f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
            return;
        }
    }
    if (in->sop) {
        int64_t step = (in->df ? -(int64_t)in->esz : (int64_t)in->esz) * (int64_t)j;
        int uses_si = in->sop == S_MOVS || in->sop == S_LODS || in->sop == S_CMPS;
        int uses_di = in->sop != S_LODS;
        if ((uses_si && g[6] != in->rsi0 + (uint64_t)step) || (uses_di && g[7] != in->rdi0 + (uint64_t)step)) {
            uint64_t w[8] = { in->rsi0 + (uint64_t)step, in->rdi0 + (uint64_t)step, g[1] };
            uint64_t got[8] = { g[6], g[7], g[1] };
            failed(F_STRREGS, k, j, w, got);
        }
    }
    if (pending_after) {
        /* Only another access of the same instruction may come first (R-RET-3). */
        if (k != cur_k || j != cur_j)
            failed(F_AFTER_MISSING, cur_k, cur_j, after_want, f);
        pending_after = 0;
    }
    if (repeat_pending) {
        /* STEP alone let nothing through: the instruction (iteration) faults again, with
           nothing permitted, at its first denied access. */
        repeat_pending = 0;
        if (k != cur_k || j != cur_j || f[ULPT_FRAME_RSP] != repeat_want[ULPT_FRAME_RSP] ||
            f[ULPT_FRAME_RFLAGS] != repeat_want[ULPT_FRAME_RFLAGS])
            failed(F_REPEAT, k, j, repeat_want, f);
    }
    if (k < cur_k || (k == cur_k && j < cur_j)) {
        failed(F_BACKWARD, k, j, NULL, f);
    } else {
        if (k != cur_k || j != cur_j) loops = 0;
        while (cur_k < k || (cur_k == k && cur_j < j))
            next_pos();
    }
    if (++loops > 8) {
        failed(F_LOOP, k, j, NULL, f);
        f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
        return;
    }
    /* What the spec says this delivery is: the first denied access in check order (the
       order of a read-modify-write is the rule's; other instructions' accesses in any). */
    struct acc a[3];
    struct dec d[3];
    int n = accs_of(k, j, a), match = -1;
    uint64_t want[8] = { 0 };
    for (int i = 0; i < n; i++) {
        if (a[i].kind & cur_perm) continue;
        if (!decide(cshadow, cmib, a[i].kind, a[i].addr, a[i].size, &d[i])) continue;
        want[0] = d[i].addr;
        want[1] = a[i].kind | cur_perm << 4 | d[i].reason << 8 | (uint64_t)a[i].size << 16;
        want[2] = d[i].w0;
        want[3] = d[i].w1;
        want[4] = CODE + in->off;
        want[5] = f[5];
        want[6] = in->rsp_before + (uint64_t)rsp_shift;
        want[7] = a[i].addr;
        int same = 1;
        for (int w = 0; w < 8; w++) same &= want[w] == f[w];
        if (same) { match = i; break; }
        if (in->ordered || a[i].kind == ULPT_KIND_X) break;
    }
    if (match < 0)
        failed(want[1] ? F_FRAME : F_SPURIOUS, k, j, want, f);
    if (hmode == M_SKIP) {
        skips[nskip].k = k;
        skips[nskip].done = j;
        nskip++;
        if (in->sop && in->rep) g[1] = 0;
        f[ULPT_FRAME_RIP] = CODE + in->off + in->len;
        rsp_shift -= in->rsp_delta;
        if (in->is_call) {
            ins[k + 1].notexec = 1;
            rsp_shift -= ins[k + 1].rsp_delta;
        }
        cur_j = positions_of(in) - 1;
        cur_perm = 7;
        skipping = 1;
        next_pos();
        skipping = 0;
        loops = 0;
        return;
    }
    unsigned how = rn(&hrng, 10);
    if (how == 0 && loops < 3) {           /* STEP alone: the same delivery again */
        repeat_pending = 1;
        for (int i = 0; i < 8; i++) repeat_want[i] = f[i];
        f[ULPT_FRAME_INFO] |= ULPT_INFO_STEP;
        cur_perm = 0;
        return;
    }
    cur_perm |= ULPT_INFO_KIND(info);
    f[ULPT_FRAME_INFO] |= ULPT_INFO_PERMIT;
    if (how < 4) {
        f[ULPT_FRAME_INFO] |= ULPT_INFO_STEP;
        pending_after = 1;
        for (int i = 0; i < 8; i++) after_want[i] = f[i];
        after_want[1] = (info & 0xffff00ffull) | (uint64_t)ULPT_REASON_AFTER << 8;
        after_want[4] = next_rip(k, j);
        after_want[6] = in->rsp_before + (uint64_t)rsp_shift + (uint64_t)(int64_t)in->rsp_delta;
        if (in->sop && j + 1 < iters_of(in)) after_want[6] = in->rsp_before + (uint64_t)rsp_shift;
        if (in->sets_rsp) after_want[6] = ins[k + 1].rsp_before;   /* mov $imm, %esp */
    }
}

/* --- running --------------------------------------------------------------------------- */
struct result { uint64_t vector, rip, error, cr2, hash, dhash; };
static uint64_t fnv(uint64_t h, const void *p, unsigned n)
{
    const uint8_t *s = p;
    for (unsigned i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}
static void user_run(void *unused) { (void)unused; fuzz_enter(&fuzz_in); }
static int have_ulpt;

/* R-LOG-1..3: the ring holds exactly the expected records, position by position. */
static void ring_check(void)
{
    volatile uint64_t *ring = (volatile uint64_t *)RING_BASE;
    uint64_t index = rdmsr(MSR_ULPT_LOG_INDEX);
    if (nrexp == EXP_MAX || index > 1u << RING_SHIFT) return;    /* too many to check */
    if (index != nrexp) {
        uint64_t w[8] = { 0, 0, nrexp }, g[8] = { 0, 0, index };
        failed(F_RING, -1, 0, w, g);
        return;
    }
    for (unsigned i = 0; i < nrexp;) {
        unsigned e = i;
        while (e < nrexp && rexp_pos[e] == rexp_pos[i]) e++;
        for (unsigned x = i; x < e; x++) {   /* each expected record once in [i, e) */
            int found = 0;
            for (unsigned y = i; y < e && !found; y++) {
                volatile uint64_t *r = ring + (uint64_t)y * (ULPT_REC_SIZE / 8);
                uint64_t info = r[ULPT_REC_INFO];
                if (r[ULPT_REC_START] == rexp[x].start && info == rexp[x].info &&
                    r[ULPT_REC_RIP] == rexp[x].rip) {
                    r[ULPT_REC_INFO] = info | 1ull << 62;      /* taken (bit 62 is 0 in a record) */
                    found = 1;
                }
            }
            if (!found) {
                volatile uint64_t *r = ring + (uint64_t)x * (ULPT_REC_SIZE / 8);
                uint64_t w[8] = { rexp[x].start, rexp[x].info, rexp[x].rip, x };
                uint64_t g[8] = { r[ULPT_REC_START], r[ULPT_REC_INFO] & ~(1ull << 62), r[ULPT_REC_RIP], x };
                failed(F_RING, -1, 0, w, g);
                return;
            }
        }
        i = e;
    }
}

static void run_seq(int mode, struct result *res)
{
    for (unsigned i = 0; i < sizeof(fuzz_out); i++) ((uint8_t *)&fuzz_out)[i] = 0;
    for (unsigned i = 0; i < 64; i++) fuzz_log[i] = 0;
    uint8_t *d = (uint8_t *)DATA;
    for (unsigned i = 0; i < DATA_SIZE; i++) d[i] = data_init[i];
    hmode = mode;
    if (g_verbose > 1) bm_printf("# run mode %d\n", mode);
    pending_after = repeat_pending = loops = 0;
    nskip = 0;
    for (int k = 0; k < nins; k++) ins[k].notexec = 0;
    for (unsigned p = 0; p < SHADOW_PAGES; p++) cshadow[p] = cshadow_init[p];
    for (unsigned i = 0; i < PAGE; i++) ((uint8_t *)BND_PAGE)[i] = cbnd[i] = bnd_init[i];
    start_pos();
    if (have_ulpt) wrmsr(MSR_ULPT_STATUS, 0);
    int counting = have_ulpt && clog == C_COUNT && mode != M_REF;
    int ringing = have_ulpt && clog == C_RING && mode != M_REF;
    for (unsigned i = 0; i < CNT_LINES * 2; i++) cnt_table[i] = cnt_expect[i] = 0;
    for (uint64_t i = 0; i < ring_used * ULPT_REC_SIZE / 8; i++) ((volatile uint64_t *)RING_BASE)[i] = 0;
    ring_used = 0;
    nrexp = npos = 0;
    if (have_ulpt) {
        wrmsr(MSR_ULPT_LOG_BASE, counting ? (uint64_t)cnt_table - (CNT_FIRST >> 7) * ULPT_CNT_SIZE :
                                 ringing ? RING_BASE : 0);
        wrmsr(MSR_ULPT_LOG_CTL, counting ? ULPT_LOG_CTL_COUNT : ringing ? RING_SHIFT : 0);
        wrmsr(MSR_ULPT_LOG_INDEX, 0);
    }
    uint64_t v = run_user_default(user_run, NULL);
    *res = (struct result){ v, 0, 0, 0, 0, 0 };
    if (v != 0x80) {
        res->rip = last_trap.rip;
        res->error = last_trap.error;
        res->cr2 = last_trap.cr2;
    } else {
        fuzz_out.rflags &= FL_MASK;
        res->hash = fnv(0xcbf29ce484222325ull, &fuzz_out, sizeof(fuzz_out));
        res->hash = fnv(res->hash, fuzz_log, sizeof(fuzz_log));
    }
    res->dhash = fnv(0xcbf29ce484222325ull, d, DATA_SIZE);
    if (have_ulpt && (rdmsr(MSR_ULPT_STATUS) & ULPT_STATUS_IN_HANDLER)) {
        wrmsr(MSR_ULPT_STATUS, 0);
        if (v == 0x80) failed(F_STATUS, -1, 0, NULL, NULL);
    }
    if (mode != M_REF && v == 0x80) {
        if (pending_after) failed(F_AFTER_MISSING, cur_k, cur_j, after_want, NULL);
        while (cur_k < nins) next_pos();
        for (unsigned i = 0; counting && i < CNT_LINES * 2; i++)
            if (cnt_table[i] != cnt_expect[i]) {
                uint64_t w[8] = { CNT_FIRST + (i / 2) * 128, i % 2, cnt_expect[i] };
                uint64_t g[8] = { CNT_FIRST + (i / 2) * 128, i % 2, cnt_table[i] };
                failed(F_COUNT, -1, 0, w, g);
                break;
            }
        if (ringing) ring_check();
    }
    if (ringing) {
        ring_used = rdmsr(MSR_ULPT_LOG_INDEX);
        if (ring_used > 1u << RING_SHIFT) ring_used = 1u << RING_SHIFT;
    }
    if (have_ulpt) wrmsr(MSR_ULPT_LOG_BASE, 0);
}
static int same(const struct result *a, const struct result *b)
{
    return a->vector == b->vector && a->rip == b->rip && a->error == b->error &&
           a->cr2 == b->cr2 && a->hash == b->hash && a->dhash == b->dhash;
}

/* --- the campaign ---------------------------------------------------------------------- */
static int prefix_eq(const char *a, const char *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}
static uint64_t arg(const char *name, uint64_t def)
{
    const char *c = bm_cmdline();
    unsigned n = 0;
    while (name[n]) n++;
    for (const char *p = c; *p; p++) {
        if ((p == c || p[-1] == ' ') && prefix_eq(p, name, n) && p[n] == '=') {
            uint64_t v = 0;
            for (p += n + 1; *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
            return v;
        }
    }
    return def;
}
static int has_word(const char *w)
{
    const char *c = bm_cmdline();
    unsigned n = 0;
    while (w[n]) n++;
    for (const char *p = c; *p; p++)
        if ((p == c || p[-1] == ' ') && prefix_eq(p, w, n) && (p[n] == ' ' || !p[n]))
            return 1;
    return 0;
}

#define MAXDISTINCT 64
static struct { int code, tmpl; unsigned kind; uint64_t seq, count; } distinct[MAXDISTINCT];
static int ndistinct, nfail_total;

static void print_ins(int k)
{
    if (k < 0 || k >= nins) return;
    bm_printf(" insn %d %s at +%x:", k, tname[ins[k].tmpl], ins[k].off);
    for (int i = 0; i < ins[k].len; i++) bm_printf(" %02x", ((uint8_t *)CODE)[ins[k].off + i]);
}
static void report(uint64_t seq, const char *run)
{
    int tm = fail.k >= 0 && fail.k < nins ? ins[fail.k].tmpl : -1;
    unsigned kind = fail.code == F_MISSED ? (unsigned)fail.want[1] : (unsigned)(fail.got[1] & 7);
    nfail_total++;
    int i;
    for (i = 0; i < ndistinct; i++)
        if (distinct[i].code == fail.code && distinct[i].tmpl == tm && distinct[i].kind == kind) break;
    if (i == ndistinct && ndistinct < MAXDISTINCT)
        distinct[ndistinct++] = (typeof(distinct[0])){ fail.code, tm, kind, seq, 0 };
    if (i < MAXDISTINCT) distinct[i].count++;
    if (nfail_total > 40) return;
    bm_printf("# FAIL seed=%lu seq=%lu run=%s: %s", g_seed, seq, run, fname[fail.code]);
    print_ins(fail.k);
    bm_printf(" iter %lu\n#   want", fail.j);
    for (int w = 0; w < 8; w++) bm_printf(" %lx", fail.code == F_PERMIT_STATE || fail.code == F_SKIP_STATE ? (w < 6 ? fail.want[w] : 0) : fail.want[w]);
    bm_printf("\n#   got ");
    for (int w = 0; w < 8; w++) bm_printf(" %lx", fail.code == F_PERMIT_STATE || fail.code == F_SKIP_STATE ? (w < 6 ? fail.got[w] : 0) : fail.got[w]);
    bm_printf("\n");
}

/* Where two results' states differ (fuzz_out copies). */
static struct fst out_a;
static void print_diff(const struct fst *a, const struct fst *b)
{
    bm_printf("#   differs:");
    for (int i = 0; i < 16; i++)
        if (a->gpr[i] != b->gpr[i]) bm_printf(" r%d %lx/%lx", i, a->gpr[i], b->gpr[i]);
    if (a->rflags != b->rflags) bm_printf(" rflags %lx/%lx", a->rflags, b->rflags);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 32; j += 8)
            if (*(const uint64_t *)&a->vec[i][j] != *(const uint64_t *)&b->vec[i][j])
                bm_printf(" ymm%d.%d %lx/%lx", i, j / 8, *(const uint64_t *)&a->vec[i][j], *(const uint64_t *)&b->vec[i][j]);
    for (int j = 0; j < 512; j += 8)
        if (*(const uint64_t *)&a->fx[j] != *(const uint64_t *)&b->fx[j])
            bm_printf(" fx+%d %lx/%lx", j, *(const uint64_t *)&a->fx[j], *(const uint64_t *)&b->fx[j]);
    bm_printf("\n");
}

static void set_features(void)
{
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);
    feat.cx16 = c >> 13 & 1;
    feat.sse41 = c >> 19 & 1;
    feat.movbe = c >> 22 & 1;
    int xsave = c >> 26 & 1, avx = c >> 28 & 1;
    __cpuid_count(7, 0, a, b, c, d);
    have_ulpt = d >> ULPT_CPUID_EDX_BIT & 1;
    uint64_t cr0, cr4;
    asm volatile("mov %%cr0, %0" : "=r"(cr0));
    cr0 = (cr0 & ~4ull) | 2 | 32;          /* EM off, MP, NE */
    asm volatile("mov %0, %%cr0" :: "r"(cr0));
    asm volatile("mov %%cr4, %0" : "=r"(cr4));
    cr4 |= 1u << 9 | 1u << 10;            /* OSFXSR, OSXMMEXCPT */
    if (xsave) cr4 |= 1u << 18;           /* OSXSAVE */
    asm volatile("mov %0, %%cr4" :: "r"(cr4));
    if (xsave && avx) {
        asm volatile("xsetbv" :: "c"(0), "a"(7), "d"(0));
        feat.avx = 1;
        feat.xsave = !has_word("noxsave");
    }
    fuzz_have_avx = (uint8_t)feat.avx;
}

/* Debugging (dump=1): the unrestricted run's state before instruction k (the code cut
   there by a jump to the exit). */
static void state_before(int k)
{
    static uint8_t save[5];
    uint8_t *at = (uint8_t *)CODE + ins[k].off;
    for (int i = 0; i < 5; i++) save[i] = at[i];
    at[0] = 0xe9;
    *(uint32_t *)(at + 1) = (uint32_t)((uint64_t)fuzz_exit - ((uint64_t)at + 5));
    struct result r;
    wrmsr(MSR_ULPT_CTL, 0);
    run_seq(M_REF, &r);
    wrmsr(MSR_ULPT_CTL, ULPT_CTL_EN);
    for (int i = 0; i < 5; i++) at[i] = save[i];
    bm_printf("# before insn %d: rflags %lx rsp %lx rcx %lx\n", k, fuzz_out.rflags, fuzz_out.gpr[4], fuzz_out.gpr[1]);
}

static void check_campaign(uint64_t start, uint64_t count, int inject)
{
    uint64_t ndel = 0, nskipped = 0, nreftrap = 0, nnx = 0;
    int verbose = (int)arg("verbose", 0);
    g_verbose = verbose;
    dump = (int)arg("dump", 0);
    for (uint64_t s = start; s < start + count; s++) {
        if (verbose) bm_printf("# seq %lu\n", s);
        generate(s);
        ndlog = 0;
        if (dump)
            for (int k = 0; k < nins; k++) { bm_printf("#"); print_ins(k); bm_printf(" rsp %lx\n", ins[k].rsp_before); }
        static uint8_t code_copy[CODE_MAX];
        unsigned clen = coff();
        for (unsigned i = 0; i < clen; i++) code_copy[i] = ((uint8_t *)CODE)[i];
        struct result ref, per, skp, nop;
        fail_set = 0;
        table_clear();
        for (unsigned p = 0; p < SHADOW_PAGES; p++) cshadow_init[p] = shadow[p];
        cmib = 0;
        /* The unrestricted runs with ULPT off: the sequence's view stores are plain stores. */
        wrmsr(MSR_ULPT_CTL, 0);
        run_seq(M_REF, &ref);
        wrmsr(MSR_ULPT_CTL, ULPT_CTL_EN);
        if (fail_set) { report(s, "reference"); continue; }
        if (ref.vector != 0x80 && ++nreftrap <= 3 && verbose) {
            bm_printf("# seq %lu: the unrestricted run ends with vector %lu at %lx (error %lx)", s, ref.vector,
                      ref.rip, ref.error);
            for (int k = 0; k < nins; k++)
                if (CODE + ins[k].off == ref.rip) print_ins(k);
            bm_printf("\n");
        }
        for (unsigned i = 0; i < DATA_SIZE; i++) data_ref[i] = ((uint8_t *)DATA)[i];
        for (int k = 0; k < nins; k++)
            if (ins[k].log >= 0) ins[k].iters = ins[k].rcx0 - fuzz_log[ins[k].log];
        struct rng tr = seq_rng(s, 1);
        table_random(&tr, 0);
        if (g_nx) {                     /* sometimes the code page is NX: fetches deliver */
            struct rng nr = seq_rng(s, 4);
            if (rn(&nr, 5) == 0) {
                code_nx = 1;
                code_w0 = ULPT_NX | (rn(&nr, 2) ? rnext(&nr) & ULPT_PAGE_SW_MASK : 0) |
                          (rn(&nr, 3) == 0 ? ULPT_NR | ULPT_NW : 0);
                code_w1 = rn(&nr, 2) ? rnext(&nr) : 0;
                table_apply();
                nnx++;
            }
        }
        cnx = code_nx;
        /* LOG on some entries; a count table in a third of the sequences, a ring in a third
           (without either, LOG changes nothing: R-LOG-1). */
        struct rng lr = seq_rng(s, 5);
        clog = g_log ? (int)rn(&lr, 3) : 0;
        for (unsigned p = 0; g_log && p < SHADOW_PAGES; p++)
            if (rn(&lr, 3) == 0) shadow[p].w0 |= ULPT_LOG;
        struct rng br = seq_rng(s, 7);
        if (g_bnd) table_bounds(&br, 0);
        if (g_bstore) {                 /* before the runs that the check compares */
            struct rng ar = seq_rng(s, 8);
            bnd_aim(&ar);
            for (unsigned i = 0; i < clen; i++) code_copy[i] = ((uint8_t *)CODE)[i];
        }
        table_apply();
        nlogged += clog == C_COUNT;
        nringed += clog == C_RING;
        for (unsigned p = 0; p < SHADOW_PAGES; p++) cshadow_init[p] = shadow[p];
        cmib = mib_malformed;
        if (inject == 1) {              /* the checker's copy differs in one line right */
            unsigned p = 1 + rn(&tr, DATA_PAGES);
            cshadow_init[p].w1 ^= 1ull << rn(&tr, 64);
            if (cshadow_init[p].malformed || cmib) { cshadow_init[p].malformed = 0; cmib = 0; cshadow_init[p].w0 &= 7; }
        }
        hrng = seq_rng(s, 2);
        out_a = fuzz_out;
        ndlog = 0;
        if (dump) {                     /* before the run: it may not end */
            for (unsigned p = 0; p < SHADOW_PAGES; p++)
                bm_printf("# page %lx: %lx %lx%s\n", SHADOW_FIRST + p * PAGE, shadow[p].w0, shadow[p].w1,
                          shadow[p].malformed ? " malformed" : "");
            bm_printf("# mib malformed %d\n", cmib);
            for (unsigned b = 0; b < NBND; b++) {
                bm_printf("# bounds %lx:", BND_PAGE + bnd_off[b]);
                for (unsigned l = 0; l < 32; l++)
                    bm_printf(" %u-%u", bnd_init[bnd_off[b] + 2 * l], bnd_init[bnd_off[b] + 2 * l + 1]);
                bm_printf("\n");
            }
        }
        run_seq(M_PERMIT, &per);
        if (dump) {
            static struct pshadow keep[SHADOW_PAGES];
            for (unsigned p = 0; p < SHADOW_PAGES; p++) keep[p] = shadow[p];
            int keepmib = mib_malformed;
            static struct fst keep_out;
            keep_out = fuzz_out;
            table_clear();
            for (int i = 0; i < ndlog; i++)
                for (int k = 0; k < nins; k++)
                    if (CODE + ins[k].off == dlog[i].f[ULPT_FRAME_RIP]) { state_before(k); break; }
            if (dump > 1)
                for (int k = 0; k < nins; k++) state_before(k);
            for (unsigned p = 0; p < SHADOW_PAGES; p++) shadow[p] = keep[p];
            mib_malformed = keepmib;
            *l1_entry7 = keepmib ? *l1_entry7 : l1_saved;
            table_apply();
            fuzz_out = keep_out;
            for (int i = 0; i < ndlog; i++) {
                bm_printf("# delivery (mode %d):", dlog[i].mode);
                for (int w = 0; w < 8; w++) bm_printf(" %lx", dlog[i].f[w]);
                bm_printf(" rcx %lx\n", dlog[i].rcx);
            }
        }
        if (!fail_set && !same(&per, &ref)) {
            failed(F_PERMIT_STATE, -1, 0, &ref.vector, &per.vector);
            report(s, "permit");
            if (nfail_total <= 40) { print_diff(&out_a, &fuzz_out); print_data_diff(); }
            continue;
        }
        if (fail_set) { report(s, "permit"); continue; }
        ndel += ndeliv;
        ndeliv = 0;
        if (code_nx) continue;          /* a handler cannot skip every instruction */
        table_apply();                  /* the permitted run's view stores changed it */
        run_seq(M_SKIP, &skp);
        if (fail_set) { report(s, "skip"); continue; }
        static struct fst out_skip;
        out_skip = fuzz_out;
        static uint8_t data_skip[DATA_SIZE];
        for (unsigned i = 0; i < DATA_SIZE; i++) data_skip[i] = ((uint8_t *)DATA)[i];
        nskipped += (uint64_t)nskip;
        /* The same code with the skipped instructions made NOPs (a string instruction: its
           count made the iterations it had done), unrestricted. */
        int ns = nskip;
        for (int i = 0; i < ns; i++) {
            struct ins *in = &ins[skips[i].k];
            if (in->sop && in->rep) {
                *(uint32_t *)(CODE + in->cnt_imm_off) = (uint32_t)skips[i].done;
            } else {
                for (int b = 0; b < in->len; b++) ((uint8_t *)CODE)[in->off + b] = 0x90;
            }
        }
        uint64_t saved_iters[MAXINS];
        for (int k = 0; k < nins; k++) saved_iters[k] = ins[k].iters;
        table_clear();
        wrmsr(MSR_ULPT_CTL, 0);
        run_seq(M_REF, &nop);
        wrmsr(MSR_ULPT_CTL, ULPT_CTL_EN);
        for (int k = 0; k < nins; k++) ins[k].iters = saved_iters[k];
        int skipdiff = !fail_set && !same(&skp, &nop);
        if (skipdiff)
            failed(F_SKIP_STATE, ns ? skips[0].k : -1, (uint64_t)ns, &nop.vector, &skp.vector);
        for (unsigned i = 0; i < clen; i++) ((uint8_t *)CODE)[i] = code_copy[i];
        if (fail_set) report(s, "skip/nop");
        if (skipdiff && nfail_total <= 40) {
            print_diff(&fuzz_out, &out_skip);
            for (unsigned i = 0, n = 0; i < DATA_SIZE && n < 6; i++)
                if (data_skip[i] != ((uint8_t *)DATA)[i]) {
                    bm_printf("#   data %lx: %02x/%02x\n", DATA + i, ((uint8_t *)DATA)[i], data_skip[i]);
                    n++;
                }
            for (int i = 0; i < ns; i++) { bm_printf("#   skipped"); print_ins(skips[i].k); bm_printf(" after %lu\n", skips[i].done); }
        }
    }
    bm_printf("fuzz: mode check seed %lu sequences %lu deliveries %lu after-events %lu skipped %lu "
              "reference-exceptions %lu code-nx %lu counted %lu logged %lu bounds-opened %lu "
              "bounds-moved %lu bounds-stores %lu\n", g_seed, count, ndel, nafter, nskipped, nreftrap, nnx,
              nlogged, nringed, nbopen, nbmoved, nbstores);
    (void)inject;
}

static void ref_campaign(uint64_t start, uint64_t count)
{
    for (uint64_t s = start; s < start + count; s++) {
        generate(s);
        struct result res;
        fail_set = 0;
        if (have_ulpt) {
            struct rng tr = seq_rng(s, 1);
            table_random(&tr, 1);
            struct rng br = seq_rng(s, 7);
            if (g_bnd) table_bounds(&br, 1);
            /* Rights on pages no sequence touches: the page above the data area. */
            shadow[SHADOW_PAGES - 1] = (struct pshadow){ 7, ~0ull, 0 };
            table_apply();
        }
        run_seq(M_REF, &res);
        if (fail_set) report(s, "ref");
        bm_printf("h %lu %lx %lx %lx %lx\n", s, res.vector, res.rip, res.hash, res.dhash);
    }
    bm_printf("fuzz: mode ref seed %lu sequences %lu ulpt %d\n", g_seed, count, have_ulpt);
}

/* Oracle 5: random MSR values, UIRET frames, UIRET at CPL 0 and in bad states. */
extern char fz_uiret_insn[];
asm(".text\n.globl fz_uiret\nfz_uiret:\n"        /* rdi = rsp for the UIRET */
    "mov %rsp, %rax\n mov %rdi, %rsp\n"
    ".globl fz_uiret_insn\nfz_uiret_insn: .byte 0xf3, 0x0f, 0x01, 0xec\n"
    "mov %rax, %rsp\n ret\n"
    ".globl fz_landing\nfz_landing: int $0x80\n");
extern char fz_landing[];
void fz_uiret(uint64_t rsp);
static uint64_t uiret_rsp;
static void user_uiret(void *unused) { (void)unused; fz_uiret(uiret_rsp); }

/*
 * Compatibility mode (CS.L = 0) at CPL 3: a 32-bit user code segment added to a copy of the
 * GDT. fz_compat(insn) far-returns into 32-bit code at compat_uiret (UIRET) or compat_load
 * (a read of *fz_compat_addr): both must trap, UIRET with #GP (#UD with EN 0), the read of a
 * denied page with the escalated #PF (R-DEL-1: violations in compatibility mode escalate).
 */
#define COMPAT_SEL (9 * 8 + 3)
static uint64_t gdt_copy[16] __attribute__((aligned(16)));
uint32_t fz_compat_addr;
asm(".text\n.globl fz_compat\nfz_compat:\n"          /* rdi = the 32-bit code's address */
    "pushq $" "75" "\n pushq %rdi\n lretq\n"
    ".code32\n"
    ".globl compat_uiret\ncompat_uiret: .byte 0xf3, 0x0f, 0x01, 0xec\n ud2\n"
    ".globl compat_load\ncompat_load: movl fz_compat_addr, %eax\n movl (%eax), %eax\n ud2\n"
    ".code64\n");
extern char compat_uiret[], compat_load[];
void fz_compat(void *code);
static void user_compat(void *code) { fz_compat(code); }
static int compat_ready;
static void compat_setup(void)
{
    struct { uint16_t limit; uint64_t base; } __attribute__((packed)) g;
    asm volatile("sgdt %0" : "=m"(g));
    for (unsigned i = 0; i <= g.limit / 8u && i < 16; i++) gdt_copy[i] = ((uint64_t *)g.base)[i];
    gdt_copy[9] = 0x00cffa000000ffffull;                    /* 32-bit code, DPL 3 */
    g.base = (uint64_t)gdt_copy;
    g.limit = sizeof(gdt_copy) - 1;
    asm volatile("lgdt %0" :: "m"(g));
    compat_ready = 1;
}
_Static_assert(COMPAT_SEL == 75, "the selector in fz_compat");

static void msr_campaign(uint64_t start, uint64_t count)
{
    uint64_t ncompat = 0;
    unsigned a, b, c, d;
    __cpuid(0x80000008, a, b, c, d);
    unsigned maxphys = a & 0xff;             /* MAXPHYADDR */
    (void)b; (void)c; (void)d;
    compat_setup();
    static const uint32_t msrs[6] = { MSR_ULPT_CTL, MSR_ULPT_ROOT, MSR_ULPT_VIEW, MSR_ULPT_HANDLER,
                                      MSR_ULPT_STKADJ, MSR_ULPT_STATUS };
    uint64_t nmsr = 0, nuiret = 0;
    static uint64_t ustack[512] __attribute__((aligned(64)));
    for (uint64_t s = start; s < start + count; s++) {
        struct rng r = seq_rng(s, 3);
        fail_set = 0;
        for (int t = 0; t < 8; t++) {
            uint32_t msr = msrs[rn(&r, 6)];
            uint64_t v = rnext(&r);
            switch (rn(&r, 6)) {
            case 0: v &= 0xfffull; break;
            case 1: v &= 0x0000fffffffff000ull; break;
            case 2: v = 1ull << rn(&r, 64); break;
            case 3: v &= 0x00007ffffffff000ull; break;
            case 4: v = (uint64_t)(int64_t)(int32_t)v; break;
            }
            uint64_t old = 0, now = 0;
            try_rdmsr(msr, &old);
            int ok = try_wrmsr(msr, v) == 0;
            try_rdmsr(msr, &now);
            int want = (msr == MSR_ULPT_CTL && (v & ~1ull) == 0) ||
                       (msr == MSR_ULPT_ROOT && (v & 0xfff) == 0 && v >> maxphys == 0) ||
                       (msr == MSR_ULPT_VIEW && (v == 0 || ((v & 0xfff) == 0 && v <= (1ull << 47) - ULPT_VIEW_SIZE))) ||
                       (msr == MSR_ULPT_HANDLER && (uint64_t)((int64_t)(v << 16) >> 16) == v) ||
                       (msr == MSR_ULPT_STKADJ && v >> 16 == 0) ||
                       (msr == MSR_ULPT_STATUS && v >> 1 == 0);
            nmsr++;
            if (ok != want || now != (ok ? v : old)) {
                uint64_t w[8] = { msr, v, (uint64_t)want, want ? v : old };
                uint64_t gt[8] = { msr, v, (uint64_t)ok, now };
                failed(F_MSR, -1, 0, w, gt);
            }
        }
        /* UIRET at CPL 0: #GP (ULPT enabled) or #UD; the fixup returns -1. */
        nuiret++;
        if (kernel_uiret() != -1 || (last_trap.vector != 13 && last_trap.vector != 6))
            failed(F_UIRET, -1, 0, NULL, NULL);
        /* UIRET at CPL 3 with a random frame, in or out of the handler, EN on or off. */
        uint64_t en = rn(&r, 4) != 0, inh = rn(&r, 4) != 0;
        wrmsr(MSR_ULPT_CTL, 0);
        wrmsr(MSR_ULPT_ROOT, ulpt_root_pa());
        wrmsr(MSR_ULPT_VIEW, VIEW_BASE);
        wrmsr(MSR_ULPT_HANDLER, (uint64_t)fuzz_hentry);
        wrmsr(MSR_ULPT_STATUS, inh);
        wrmsr(MSR_ULPT_CTL, en);
        uint64_t *fr = &ustack[256];
        for (int i = 0; i < 8; i++) fr[i] = rnext(&r);
        unsigned ripk = rn(&r, 4);
        fr[ULPT_FRAME_RIP] = ripk == 0 ? (uint64_t)fz_landing : ripk == 1 ? 0x0000800000000000ull : fr[4];
        fr[ULPT_FRAME_RSP] = (uint64_t)&ustack[128];
        if (rn(&r, 2)) fr[ULPT_FRAME_RFLAGS] &= ~0x100ull;      /* TF half the time */
        fr[ULPT_FRAME_RFLAGS] &= ~0x400ull;   /* DF 0: the trap path's C code needs it */
        unsigned rspk = rn(&r, 5);
        uiret_rsp = rspk == 0 ? 0x40000000ull - 32 : rspk == 1 ? 0xfffffffffffff000ull : (uint64_t)fr;
        fail_set = fail_set ? fail_set : 0;
        hmode = M_REF;
        uint64_t v = run_user_default(user_uiret, NULL);
        nuiret++;
        /* What the spec says: #UD without EN; #GP out of the handler; #PF reading an unmapped
           frame (1 GiB and up is not mapped), #GP for a non-canonical RSP; #GP for a
           non-canonical rip; else the return (rip fz_landing: int $0x80; else #PF/#GP/#DB at
           a random rip). */
        int bad = 0;
        if (!en) bad = v != 6;
        else if (!inh) bad = v != 13;
        else if (rspk == 0) bad = v != 14;
        else if (rspk == 1) bad = v != 13 && v != 14;
        else if (ripk == 1) bad = v != 13;
        else if (ripk == 0) bad = v != 0x80 && v != 1;
        else bad = v == 0x80 && 0;
        if (!en || !inh || rspk < 2 || ripk == 1) {
            uint64_t st = rdmsr(MSR_ULPT_STATUS);
            if (st != inh) bad = 1;         /* nothing changed on a faulting UIRET */
        }
        if (bad) {
            uint64_t w[8] = { en, inh, rspk, ripk, fr[4], uiret_rsp };
            uint64_t gt[8] = { v, last_trap.rip, last_trap.error, rdmsr(MSR_ULPT_STATUS) };
            failed(F_UIRET, -1, 0, w, gt);
        }
        /* Compatibility mode: UIRET, and a read of a page denying reads. */
        en = rn(&r, 4) != 0;
        inh = rn(&r, 2);
        ulpt_clear_all();
        ulpt_enable((uint64_t)fuzz_hentry);
        wrmsr(MSR_ULPT_STATUS, inh);
        wrmsr(MSR_ULPT_CTL, en);
        hmode = M_REF;
        int fs0 = fail_set;
        v = run_user_default(user_compat, compat_uiret);
        ncompat++;
        if (v != (en ? 13u : 6u) || last_trap.rip != (uint64_t)compat_uiret || rdmsr(MSR_ULPT_STATUS) != inh) {
            uint64_t w[8] = { en, inh, en ? 13 : 6, (uint64_t)compat_uiret };
            uint64_t gt[8] = { en, inh, v, last_trap.rip, rdmsr(MSR_ULPT_STATUS) };
            failed(F_UIRET, -1, 0, w, gt);
        }
        wrmsr(MSR_ULPT_STATUS, 0);
        wrmsr(MSR_ULPT_CTL, ULPT_CTL_EN);
        uint64_t pg = DATA + rn(&r, DATA_PAGES) * PAGE;
        fz_compat_addr = (uint32_t)(pg + rn(&r, PAGE - 4));
        unsigned how = rn(&r, 3);
        ulpt_kset(pg, how == 0 ? ULPT_NR : how == 1 ? 0 : 1ull << 50,   /* 50: reserved */
                  how == 1 ? ULPT_LINE_NR((fz_compat_addr >> 7) & 31) : 0);
        v = run_user_default(user_compat, compat_load);
        ncompat++;
        if (v != 14 || last_trap.error != 0x105 || last_trap.cr2 != fz_compat_addr || fail_set != fs0) {
            uint64_t w[8] = { how, fz_compat_addr, 14, 0x105, fz_compat_addr };
            uint64_t gt[8] = { how, fz_compat_addr, v, last_trap.error, last_trap.cr2 };
            fail_set = fs0;
            failed(F_UIRET, -2, 0, w, gt);
        }
        ulpt_kset(pg, 0, 0);
        wrmsr(MSR_ULPT_CTL, 0);
        wrmsr(MSR_ULPT_STATUS, 0);
        if (fail_set) report(s, "msr");
    }
    bm_printf("fuzz: mode msr seed %lu rounds %lu msr-writes %lu uirets %lu compat-mode %lu\n", g_seed, count,
              nmsr, nuiret, ncompat);
}

void tests(void)
{
    g_seed = arg("seed", 1);
    uint64_t count = arg("count", 100), start = arg("start", 0);
    set_features();
    /* The L1 entry of the data area's MiB (root[0] -> L2[0] -> L1[7]). */
    uint64_t *root = (uint64_t *)ulpt_root_pa();
    uint64_t *l2 = (uint64_t *)(root[0] & ULPT_DIR_ADDR_MASK);
    uint64_t *l1 = (uint64_t *)(l2[0] & ULPT_DIR_ADDR_MASK);
    l1_entry7 = &l1[DATA >> 20];
    l1_saved = *l1_entry7;
    bm_printf("# fuzz: seed %lu start %lu count %lu ulpt %d avx %d\n", g_seed, start, count, have_ulpt, feat.avx);
    int inject = (int)arg("inject", 0);
    g_inject = inject;
    g_bnd = !has_word("nobounds");
    if (has_word("mode=msr")) {
        if (!have_ulpt) { bm_printf("Bail out! mode=msr needs -cpu ulpt\n"); bm_exit(1); }
        msr_campaign(start, count);
    } else if (has_word("mode=check")) {
        if (!have_ulpt) { bm_printf("Bail out! mode=check needs -cpu ulpt\n"); bm_exit(1); }
        g_view = !has_word("noview");
        g_nx = !has_word("nonx");
        g_log = !has_word("nolog");
        g_bstore = g_bnd;
        ulpt_clear_all();
        ulpt_enable((uint64_t)fuzz_hentry);
        wrmsr(MSR_ULPT_STKADJ, STKADJ);
        check_campaign(start, count, inject);
    } else {
        if (have_ulpt) {
            ulpt_clear_all();
            ulpt_enable((uint64_t)fuzz_hentry);
            wrmsr(MSR_ULPT_STKADJ, STKADJ);
        }
        ref_campaign(start, count);
    }
    bm_printf("fuzz: failures %d distinct %d\n", nfail_total, ndistinct);
    for (int i = 0; i < ndistinct; i++)
        bm_printf("fuzz: distinct %s %s kind %u first seq %lu count %lu\n", fname[distinct[i].code],
                  distinct[i].tmpl >= 0 ? tname[distinct[i].tmpl] : "-", distinct[i].kind,
                  distinct[i].seq, distinct[i].count);
    bm_exit(nfail_total != 0);
}
