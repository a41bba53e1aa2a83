/*
 * heapxx: C++ new/delete under --heap=rw: a known number of allocations, known reads and writes.
 *
 *   allocations made by main: 14
 *     new int[64], new Obj, a std::vector<int>(100), a 100-character std::string,
 *     and 10 x new int (each deleted at once)
 *   reads by main:  276 = 64 + 2 + 100 + 100 + 10
 *   writes by main: 176 = 64 + 2 + 100 + 10
 * Every counted access is one load or one store through a volatile pointer (the vector's and
 * the string's own stores, clearing and filling them, are not counted: the counts are
 * at least the numbers above). libstdc++ allocates its exception emergency pool before main,
 * and stdout's buffer comes from malloc: the allocations are 14 and a few more.
 * Exit status 0 and "heapxx: ok" when every value read back is right.
 */
#include <cstdio>
#include <string>
#include <vector>

#define ALLOCATIONS 14
#define READS 276
#define WRITES 176

struct Obj {
	long x, y;
};

int main()
{
	int bad = 0;

	volatile int *a = new int[64];                      // 1
	for (int i = 0; i < 64; i++)                        // W 64
		a[i] = i * 3;
	for (int i = 0; i < 64; i++)                        // R 64
		bad |= a[i] != i * 3;

	Obj *o = new Obj;                                   // 2
	volatile long *ox = &o->x, *oy = &o->y;
	*ox = 11;                                           // W 2
	*oy = 22;
	bad |= *ox + *oy != 33;                             // R 2

	std::vector<int> v(100);                            // 3
	volatile int *vp = v.data();
	for (int i = 0; i < 100; i++)                       // W 100
		vp[i] = i;
	for (int i = 0; i < 100; i++)                       // R 100
		bad |= vp[i] != i;

	std::string s(100, 'x');                            // 4
	volatile const char *sp = s.data();
	for (int i = 0; i < 100; i++)                       // R 100
		bad |= sp[i] != 'x';

	for (int i = 0; i < 10; i++) {                      // 5 .. 14
		volatile int *p = new int;
		*p = i;                                         // W 10
		bad |= *p != i;                                 // R 10
		delete p;
	}

	delete o;
	delete[] a;
	std::printf("heapxx: %s allocations=%d reads=%d writes=%d\n", bad ? "FAILED" : "ok",
		    ALLOCATIONS, READS, WRITES);
	return bad;
}
