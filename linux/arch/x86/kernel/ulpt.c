// SPDX-License-Identifier: GPL-2.0
/*
 * User Level Page Tables (ULPT): a process removes access rights from its
 * own pages with single stores into a table the CPU checks, and handles the
 * violations at CPL 3. See Documentation/x86/ulpt.rst.
 */
#include <linux/cpufeature.h>
#include <linux/init.h>
#include <linux/printk.h>

static __init int setup_disable_ulpt(char *arg)
{
	setup_clear_cpu_cap(X86_FEATURE_ULPT);
	pr_info("x86: 'noulpt' specified, disabling User Level Page Tables\n");
	return 1;
}
__setup("noulpt", setup_disable_ulpt);
