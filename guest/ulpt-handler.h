/*
 * The entry stub of a ULPT user-level handler for guest programs: RSP points at the frame
 * (docs/spec.md section 6); save what a C function may clobber, call HANDLER(frame), UIRET.
 *   ULPT_HANDLER_ENTRY(entry_name, c_handler)   then pass entry_name to ARCH_ULPT_SET_HANDLER
 */
#ifndef ULPT_HANDLER_H
#define ULPT_HANDLER_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ULPT_HANDLER_ENTRY(entry, handler)                                                   \
    void entry(void);                                                                        \
    void handler(uint64_t *frame);                                                           \
    asm(".text\n.globl " #entry "\n" #entry ":\n"                                            \
        "push %rax\npush %rcx\npush %rdx\npush %rsi\npush %rdi\n"                            \
        "push %r8\npush %r9\npush %r10\npush %r11\n"                                         \
        "lea 72(%rsp), %rdi\nsub $8, %rsp\ncall " #handler "\nadd $8, %rsp\n"                \
        "pop %r11\npop %r10\npop %r9\npop %r8\npop %rdi\npop %rsi\npop %rdx\npop %rcx\npop %rax\n" \
        ".byte 0xf3, 0x0f, 0x01, 0xec\n")

/* A /proc/meminfo field in kB ("MemFree", "MemTotal"), or -1. */
static inline long ulpt_meminfo_kb(const char *field)
{
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    FILE *f = fopen("/proc/meminfo", "r");

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, field, n) && line[n] == ':' && sscanf(line + n + 1, "%ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* Free memory in kB, or -1 (for leak checks). */
static inline long ulpt_mem_free_kb(void) { return ulpt_meminfo_kb("MemFree"); }
#endif
