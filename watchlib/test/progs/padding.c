/*
 * padding MODE: every one-byte overflow and underflow of small blocks, for ulpt-watch --check.
 * For each size 1..32 and each alignment (malloc's own, and posix_memalign's 16, 32 and 64),
 * one block per side: MODE read reads block[size] (after) or block[-1] (before), write writes
 * it; then the block is freed. Each access is its own instruction, and each free its own call
 * (a macro expands one site per case), since the checker reports an instruction's error once.
 * Before each access it prints on stderr
 *     padding: addr=0xADDR size=N align=A side=after|before
 * --check --precise must report every one (256) at the access, reads and writes alike;
 * --check must report every write, at the access where it reaches a red-zone line and at free
 * (by the canary) where it stays in the block's open lines. Run natively, read exits 0;
 * write corrupts glibc's heap headers and aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile char sink;
static int wr;

static char *get(size_t n, size_t align)
{
	void *p = NULL;

	if (!align)
		return malloc(n);
	return posix_memalign(&p, align, n) ? NULL : p;
}

static void say(const volatile char *a, int n, int align, const char *side)
{
	fprintf(stderr, "padding: addr=%p size=%d align=%d side=%s\n", (const void *)a, n, align,
		side);
}

#define SITE(n, al, off, side) do { \
		char *b = get(n, al); \
		volatile char *a = b + (off); \
		say(a, n, al, side); \
		if (wr) \
			*a = 'x'; \
		else \
			sink = *a; \
		free(b); \
	} while (0)
#define CASE(n, al) SITE(n, al, n, "after"); SITE(n, al, -1, "before")
#define SIZES8(b, al) CASE(b + 1, al); CASE(b + 2, al); CASE(b + 3, al); CASE(b + 4, al); \
	CASE(b + 5, al); CASE(b + 6, al); CASE(b + 7, al); CASE(b + 8, al)
#define SIZES(al) SIZES8(0, al); SIZES8(8, al); SIZES8(16, al); SIZES8(24, al)

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "read") && strcmp(mode, "write")) {
		fprintf(stderr, "usage: padding read|write\n");
		return 2;
	}
	wr = !strcmp(mode, "write");
	SIZES(0);
	SIZES(16);
	SIZES(32);
	SIZES(64);
	return 0;
}
