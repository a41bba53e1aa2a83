/*
 * badargs CASE: a bad argument to the malloc family, as memcheck's and ASan's tests make
 * them. Prints "badargs: CASE block=0xADDR result=R errno=E" on stdout after the call (R: the
 * returned pointer's being NULL, or the returned number), the block (or 0) on stderr first:
 *   calloc-overflow       calloc(SIZE_MAX / 2, 3): NULL, ENOMEM, one warning
 *   reallocarray-overflow reallocarray(p, SIZE_MAX / 2, 3): NULL, ENOMEM, one warning
 *   malloc-huge           malloc(2^60): NULL, ENOMEM, one warning
 *   memalign-bad          memalign(3, 8): NULL, EINVAL
 *   aligned-alloc-bad     aligned_alloc(24, 48): NULL, EINVAL
 *   posix-memalign-bad    posix_memalign(&p, 4, 8): returns EINVAL (not a multiple of void *)
 *   usable-size-foreign   malloc_usable_size(p + 1) for a block p of 16: 0, one
 *                         bad-malloc_usable_size error naming the block
 *   realloc-foreign       realloc(p + 8, 40) for a block p of 32: NULL, an invalid-free
 * Natively the overflow and alignment cases behave the same; usable-size-foreign and
 * realloc-foreign are undefined there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void done(const char *c, long r, int e)
{
	printf("badargs: %s result=%ld errno=%s\n", c, r, e == ENOMEM ? "ENOMEM" :
	       e == EINVAL ? "EINVAL" : e ? "other" : "0");
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	char *volatile p = malloc(32), *volatile q;
	size_t volatile big = SIZE_MAX / 2;

	fprintf(stderr, "badargs: %s block=%p\n", c, (void *)p);
	errno = 0;
	if (!strcmp(c, "calloc-overflow")) {
		q = calloc(big, 3);
		done(c, q != NULL, errno);
	} else if (!strcmp(c, "reallocarray-overflow")) {
		q = reallocarray(p, big, 3);
		done(c, q != NULL, errno);
	} else if (!strcmp(c, "malloc-huge")) {
		q = malloc((size_t)1 << 60);
		done(c, q != NULL, errno);
	} else if (!strcmp(c, "memalign-bad")) {
		q = memalign(3, 8);
		done(c, q != NULL, errno);
	} else if (!strcmp(c, "aligned-alloc-bad")) {
		q = aligned_alloc(24, 48);
		done(c, q != NULL, errno);
	} else if (!strcmp(c, "posix-memalign-bad")) {
		void *r = NULL;
		int e = posix_memalign(&r, 4, 8);
		done(c, e, e);
	} else if (!strcmp(c, "usable-size-foreign")) {
		done(c, (long)malloc_usable_size(p + 1), errno);
	} else if (!strcmp(c, "realloc-foreign")) {
		q = realloc(p + 8, 40);
		done(c, q != NULL, errno);
	} else {
		fprintf(stderr, "usage: badargs CASE (see the source)\n");
		return 2;
	}
	return 0;
}
