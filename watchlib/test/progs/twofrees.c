/*
 * twofrees: two double frees from two call sites, and the same site's double free twice more.
 * ulpt-watch --check must report two errors (one per site: repeats are reported once).
 */
#include <stdlib.h>

static void __attribute__((noinline)) twice(void *p)
{
	free(p);
	free(p);                /* site 1 */
}

int main(void)
{
	char *a = malloc(10), *b = malloc(20);

	free(a);
	free(a);                /* site 2 */
	twice(b);
	for (int i = 0; i < 2; i++)
		twice(malloc(30));
	return 0;
}
