/*
 * mismatch CASE: one release of a heap block by the wrong family, for ulpt-watch --check.
 * Prints on stderr "mismatch: CASE block=0xADDR pair=ALLOC/FREE" (underscores for blanks in
 * the family names), then releases it; --check must report one alloc-dealloc-mismatch at the
 * block, with ASan's pair of names, the allocation's stack and the release's, both in main.
 * "variants" allocates and releases with every operator new and delete correctly (plain,
 * array, nothrow, aligned, sized, aligned sized): no error. Natively every case exits 0
 * (glibc does not notice).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

static void say(const char *c, const void *b, const char *pair)
{
	std::fprintf(stderr, "mismatch: %s block=%p pair=%s\n", c, b, pair);
}

struct alignas(64) wide {
	char c[64];
};

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	char *volatile p;

	if (!std::strcmp(c, "malloc-delete")) {
		p = static_cast<char *>(std::malloc(10));
		say(c, p, "malloc/operator_delete");
		delete p;
	} else if (!std::strcmp(c, "malloc-delete-array")) {
		p = static_cast<char *>(std::malloc(10));
		say(c, p, "malloc/operator_delete_[]");
		delete[] p;
	} else if (!std::strcmp(c, "new-free")) {
		p = new char;
		say(c, p, "operator_new/free");
		std::free(p);
	} else if (!std::strcmp(c, "new-delete-array")) {
		p = new char;
		say(c, p, "operator_new/operator_delete_[]");
		delete[] p;
	} else if (!std::strcmp(c, "new-array-delete")) {
		p = new char[10];
		say(c, p, "operator_new_[]/operator_delete");
		delete p;
	} else if (!std::strcmp(c, "new-array-free")) {
		p = new char[10];
		say(c, p, "operator_new_[]/free");
		std::free(p);
	} else if (!std::strcmp(c, "variants")) {
		char *a = new char, *b = new char[7];
		char *n = new (std::nothrow) char, *m = new (std::nothrow) char[7];
		wide *w = new wide, *v = new wide[3];
		wide *x = new (std::nothrow) wide, *y = new (std::nothrow) wide[2];
		*a = *b = *n = *m = 1;
		w->c[0] = v[2].c[63] = x->c[1] = y[1].c[0] = 2;
		if (((unsigned long)w | (unsigned long)v | (unsigned long)x | (unsigned long)y) & 63)
			std::fprintf(stderr, "mismatch: misaligned\n");
		delete a;
		delete[] b;
		operator delete(n, std::nothrow);
		operator delete[](m, std::nothrow);
		delete w;                       /* sized, aligned */
		delete[] v;
		operator delete(x, std::align_val_t(64), std::nothrow);
		operator delete[](y, std::align_val_t(64));
		char *s = static_cast<char *>(operator new(40));
		operator delete(s, 40);         /* sized */
		char *t = static_cast<char *>(operator new[](40));
		operator delete[](t, 40);
		std::printf("mismatch: variants ok\n");
	} else {
		std::fprintf(stderr, "usage: mismatch CASE (see the source)\n");
		return 2;
	}
	return 0;
}
