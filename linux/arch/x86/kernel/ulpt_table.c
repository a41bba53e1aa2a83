// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables: the table of an address space and its view.
 *
 * The kernel owns a radix tree per address space. Its directories are
 * kernel memory that only the CPU walks; its leaves are also mapped into
 * the process at the view, where one store changes the rights of a page.
 * A leaf is allocated when the view page that holds it is first touched,
 * so a table costs memory in proportion to the address space it restricts.
 * Table pages are charged to the process's memory cgroup.
 */
#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/slab.h>
#include <asm/ulpt.h>
#include <asm/ulpt_table.h>

/* Table generations: a thread's handler belongs to the table it was set for */
static atomic64_t ulpt_last_gen = ATOMIC64_INIT(0);

static u64 *ulpt_alloc_table(struct ulpt_mm *u)
{
	struct page *page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);

	if (!page)
		return NULL;
	u->pages++;
	return page_address(page);
}

static u64 *ulpt_dir_next(u64 entry)
{
	return __va(entry & ULPT_DIR_ADDR);
}

/* The leaf covering va, allocating the path to it if asked. Call with u->lock held. */
static u64 *ulpt_leaf(struct ulpt_mm *u, unsigned long va, bool alloc)
{
	u64 *table = u->root;
	int level;

	for (level = 0; level < ULPT_DIR_LEVELS; level++) {
		u64 *e = &table[(va >> ULPT_DIR_SHIFT(level)) & (ULPT_DIR_ENTRIES - 1)];

		if (!(*e & ULPT_DIR_P)) {
			u64 *next;

			if (!alloc)
				return NULL;
			next = ulpt_alloc_table(u);
			if (!next)
				return NULL;
			/* The CPU walks the tree in physical memory: publish a zeroed table. */
			WRITE_ONCE(*e, __pa(next) | ULPT_DIR_P);
		}
		table = ulpt_dir_next(*e);
	}
	return table;
}

/* Free a table of this level and everything below it. */
static void ulpt_free_level(u64 *table, int level)
{
	int i;

	if (level < ULPT_DIR_LEVELS) {
		for (i = 0; i < ULPT_DIR_ENTRIES; i++)
			if (table[i] & ULPT_DIR_P)
				ulpt_free_level(ulpt_dir_next(table[i]), level + 1);
	}
	free_page((unsigned long)table);
}

/* Copy a subtree; NULL when out of memory (what was copied is freed). */
static u64 *ulpt_copy_level(struct ulpt_mm *dst, u64 *src, int level)
{
	u64 *table = ulpt_alloc_table(dst);
	int i;

	if (!table)
		return NULL;
	if (level == ULPT_DIR_LEVELS) {
		memcpy(table, src, PAGE_SIZE);
		return table;
	}
	for (i = 0; i < ULPT_DIR_ENTRIES; i++) {
		u64 e = READ_ONCE(src[i]);
		u64 *copy;

		if (!(e & ULPT_DIR_P))
			continue;
		copy = ulpt_copy_level(dst, ulpt_dir_next(e), level + 1);
		if (!copy) {
			ulpt_free_level(table, level);
			return NULL;
		}
		table[i] = __pa(copy) | ULPT_DIR_P;
	}
	return table;
}

/* Zero the entries of [start, end) below a table, skipping absent subtrees. */
static void ulpt_clear_level(u64 *table, int level, unsigned long base,
			     unsigned long start, unsigned long end)
{
	unsigned long span, i, first, last;

	if (level == ULPT_DIR_LEVELS) {
		first = (max(start, base) - base) >> PAGE_SHIFT;
		last = (min(end, base + ULPT_LEAF_SPAN) - base) >> PAGE_SHIFT;
		if (last > first)
			memset((u8 *)table + first * ULPT_ENTRY_SIZE, 0,
			       (last - first) * ULPT_ENTRY_SIZE);
		return;
	}
	span = 1UL << ULPT_DIR_SHIFT(level);
	for (i = 0; i < ULPT_DIR_ENTRIES; i++) {
		unsigned long lo = base + i * span, hi = lo + span;

		if (hi <= start || lo >= end || !(table[i] & ULPT_DIR_P))
			continue;
		ulpt_clear_level(ulpt_dir_next(table[i]), level + 1, lo, start, end);
	}
}

/* A new, empty table with its own generation. */
struct ulpt_mm *ulpt_mm_alloc(void)
{
	struct ulpt_mm *u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);

	if (!u)
		return NULL;
	mutex_init(&u->lock);
	u->gen = atomic64_inc_return(&ulpt_last_gen);
	u->root = ulpt_alloc_table(u);
	if (!u->root) {
		kfree(u);
		return NULL;
	}
	return u;
}

/* A copy of a table, for fork: same view address, same generation. */
struct ulpt_mm *ulpt_mm_copy(struct ulpt_mm *old)
{
	struct ulpt_mm *u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);

	if (!u)
		return NULL;
	mutex_init(&u->lock);
	u->view = old->view;
	u->gen = old->gen;
	mutex_lock(&old->lock);
	u->root = ulpt_copy_level(u, old->root, 0);
	mutex_unlock(&old->lock);
	if (!u->root) {
		kfree(u);
		return NULL;
	}
	return u;
}

/* Free a table no CPU can walk any more. */
void ulpt_mm_free(struct ulpt_mm *u)
{
	ulpt_free_level(u->root, 0);
	kfree(u);
}

/* Lift every restriction on [start, end). */
void ulpt_mm_clear(struct ulpt_mm *u, unsigned long start, unsigned long end)
{
	if (start >= ULPT_VA_LIMIT)
		return;
	end = min(end, ULPT_VA_LIMIT);
	mutex_lock(&u->lock);
	ulpt_clear_level(u->root, 0, 0, start, end);
	mutex_unlock(&u->lock);
}

static vm_fault_t ulpt_view_fault(const struct vm_special_mapping *sm,
				  struct vm_area_struct *vma, struct vm_fault *vmf)
{
	struct ulpt_mm *u = READ_ONCE(vma->vm_mm->context.ulpt);
	unsigned long va;
	u64 *leaf;

	if (!u || vmf->address < u->view || vmf->address - u->view >= ULPT_VIEW_SIZE)
		return VM_FAULT_SIGBUS;
	/* A view page holds one leaf: the entries of ULPT_LEAF_SPAN of address space. */
	va = ((vmf->address - u->view) >> PAGE_SHIFT) << ULPT_LEAF_SHIFT;
	mutex_lock(&u->lock);
	leaf = ulpt_leaf(u, va, true);
	mutex_unlock(&u->lock);
	if (!leaf)
		return VM_FAULT_OOM;
	return vmf_insert_pfn(vma, vmf->address & PAGE_MASK, __pa(leaf) >> PAGE_SHIFT);
}

static int ulpt_view_mremap(const struct vm_special_mapping *sm, struct vm_area_struct *new_vma)
{
	return -EINVAL;		/* the CPU knows the view by its address */
}

static const struct vm_special_mapping ulpt_view_mapping = {
	.name = "[ulpt]",
	.fault = ulpt_view_fault,
	.mremap = ulpt_view_mremap,
};

bool ulpt_vma_is_view(struct vm_area_struct *vma)
{
	return vma_is_special_mapping(vma, &ulpt_view_mapping);
}

/* Shared, so that stores reach the leaves (no copy on write); a child gets its own leaves. */
#define ULPT_VIEW_FLAGS (VM_READ | VM_WRITE | VM_SHARED | VM_MAYREAD | VM_MAYWRITE | \
			 VM_MAYSHARE | VM_PFNMAP | VM_IO | VM_DONTDUMP | VM_WIPEONFORK)

/*
 * Map a view into mm; the caller publishes the table with it. Returns the
 * view's address, or an error value. Call with mmap_lock held for writing.
 */
unsigned long ulpt_view_map(struct mm_struct *mm)
{
	struct vm_area_struct *vma;
	unsigned long addr;

	addr = get_unmapped_area(NULL, 0, ULPT_VIEW_SIZE, 0, 0);
	if (IS_ERR_VALUE(addr))
		return addr;
	vma = _install_special_mapping(mm, addr, ULPT_VIEW_SIZE, ULPT_VIEW_FLAGS,
				       &ulpt_view_mapping);
	if (IS_ERR(vma))
		return PTR_ERR(vma);
	return addr;
}
