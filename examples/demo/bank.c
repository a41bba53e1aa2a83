/*
 * A small program for ulpt-watch's demo and the README tutorial: who writes to `balance`?
 * Two functions change it, a third only reads it, and its neighbours in memory are busy too.
 *   ulpt-watch -v -w balance -- build/examples/bank
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>

long history[8];                /* busy neighbours: same line as balance, never reported */
long balance = 100;
long fees;

static void deposit(long amount)
{
	history[0]++;
	balance += amount;
}

static void charge_fee(void)
{
	fees += 2;
	balance -= 2;
}

static long report(void)
{
	history[1]++;
	return balance;
}

int main(void)
{
	for (int day = 0; day < 3; day++) {
		deposit(10 * (day + 1));
		if (day == 1)
			charge_fee();
	}
	printf("balance %ld after %ld deposits, fees %ld\n", report(), history[0], fees);
	return 0;
}
