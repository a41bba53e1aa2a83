/*
 * Preloaded by scripts/bench under lua5.4 in phase 3: Lua seeds its string hash from time(NULL)
 * (luai_makeseed), so two runs a second apart make different numbers of heap accesses. With
 * the clock fixed, every tool runs the same program, and `--heap`'s two deliveries can be
 * compared count for count. Only time() is fixed; the program's output does not depend on it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <time.h>

time_t time(time_t *t)
{
	if (t)
		*t = 1000000000;
	return 1000000000;
}
