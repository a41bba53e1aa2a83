/*
 * For the bench's LeakSanitizer runs (LD_PRELOAD=liblsan.so.0:lsan-init.so): starts
 * LeakSanitizer's runtime from a constructor. Preloaded alone (not linked into the program
 * with -fsanitize=leak, where .preinit_array starts it), GCC 12's liblsan starts at its first
 * malloc, and a program whose first call it intercepts is another (bzip2's and perl's signal,
 * sqlite3's) calls a null pointer: SIGSEGV before main's first line.
 * SPDX-License-Identifier: MIT
 */
void __lsan_init(void);

__attribute__((constructor)) static void start_lsan(void)
{
	__lsan_init();
}
