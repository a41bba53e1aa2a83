/*
 * A small program for ulpt-gdb's README tutorial: 1,000 scores, updated from a list of moves;
 * player 18 never moved, yet ends with 100 points. Which code wrote that? GDB has 4 hardware
 * watchpoints; ulpt-gdb watches all 1,000 scores and stops at each write.
 *   ulpt-gdb -q --args build/examples/scores
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

#define PLAYERS 1000

int scores[PLAYERS];

struct move {
	int player, points;
};

static const struct move moves[] = { { 3, 10 }, { 17, 7 } };

static void add(const struct move *m)
{
	scores[m->player] += m->points;
}

/* The bug: the bonus goes to the next player. */
static void bonus(int player)
{
	scores[player + 1] += 100;
}

int main(void)
{
	for (unsigned i = 0; i < sizeof(moves) / sizeof(moves[0]); i++)
		add(&moves[i]);
	bonus(17);
	printf("scores[17] = %d, scores[18] = %d\n", scores[17], scores[18]);
	return 0;
}
