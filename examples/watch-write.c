/*
 * Deny writes to a buffer, catch a write in a handler, print its address and let it through.
 * Runs unchanged on a ULPT CPU (ULPT backend) and on any Linux (mprotect backend):
 *   cc watch-write.c $(pkg-config --cflags --libs libulpt) && ./watch-write
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ulpt.h>

static char buffer[4096] __attribute__((aligned(4096)));

static enum ulpt_action on_write(struct ulpt_fault *f, void *arg)
{
	(void)arg;
	printf("write of %zu bytes at %p (buffer + %ld) by the instruction at %#lx\n",
	       f->size, (void *)f->start, (long)((char *)f->start - buffer), (unsigned long)f->ip);
	return ULPT_PERMIT;                 /* let this write through; the buffer stays watched */
}

int main(void)
{
	int r = ulpt_init(ULPT_BACKEND_AUTO);

	if (r < 0) {
		fprintf(stderr, "ulpt_init: %s\n", strerror(-r));
		return 1;
	}
	printf("backend: %s\n", ulpt_backend_name(ulpt_backend()));
	if ((r = ulpt_set_handler(on_write, NULL, 0)) < 0 ||
	    (r = ulpt_protect(buffer, sizeof(buffer), ULPT_DENY_W)) < 0) {
		fprintf(stderr, "libulpt: %s\n", strerror(-r));
		return 1;
	}
	buffer[100] = 'x';                  /* caught, printed, let through */
	printf("buffer[100] = '%c'\n", buffer[100]);
	return 0;
}
