/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_X86_ULPT_TABLE_H
#define _ASM_X86_ULPT_TABLE_H

#include <uapi/asm/ulpt.h>

struct mm_struct;
struct vm_area_struct;

#ifdef CONFIG_X86_USER_PAGE_TABLES
struct ulpt_mm;

struct ulpt_mm *ulpt_mm_alloc(void);
struct ulpt_mm *ulpt_mm_copy(struct ulpt_mm *old);
void ulpt_mm_free(struct ulpt_mm *u);
void ulpt_mm_clear(struct ulpt_mm *u, unsigned long start, unsigned long end);
unsigned long ulpt_view_map(struct mm_struct *mm);
bool ulpt_vma_is_view(struct vm_area_struct *vma);
#endif

#endif /* _ASM_X86_ULPT_TABLE_H */
