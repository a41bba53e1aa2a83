/*
 * dlopens NAME...: dlopen each library by its soname, as CPython's imports do. The dynamic
 * loader copies the path it finds in its cache (a heap block) and measures it with its own
 * strlen, whose whole-chunk reads go past the string's block; ulpt-watch --check must not
 * report them. Prints "dlopens: ok N" with the number of libraries loaded.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int n = 0;

	for (int i = 1; i < argc; i++)
		n += dlopen(argv[i], RTLD_NOW | RTLD_LOCAL) != NULL;
	printf("dlopens: ok %d\n", n);
	return 0;
}
