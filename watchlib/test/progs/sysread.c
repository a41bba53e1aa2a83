/*
 * A system call writes into a watched heap block: read(2) from a pipe into a block under
 * --heap=w. The data must arrive (on mprotect the kernel's copy into a page denied writes
 * failed with EFAULT) and the kernel's write is one write (mprotect with userfaultfd; ULPT
 * does not check the kernel's accesses, R-ACC-2), beside the program's own store.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	static char msg[300];
	char *b = malloc(400);
	int fd[2];

	if (!b || pipe(fd) != 0)
		return 2;
	for (int i = 0; i < 300; i++)
		msg[i] = (char)('a' + i % 26);
	if (write(fd[1], msg, 300) != 300)
		return 2;
	if (read(fd[0], b + 50, 300) != 300) {
		perror("sysread: read");
		return 1;
	}
	b[0] = 1;                                   /* the program's own write */
	if (memcmp(b + 50, msg, 300) != 0)
		return 1;
	/* write(2) from a static buffer: the program's output is not a heap block. */
	return write(1, "sysread: ok\n", 12) == 12 ? 0 : 3;
}
