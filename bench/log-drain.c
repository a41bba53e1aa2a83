/*
 * The lean drain of bench/primitives' logged stores (ulpt_log_set_raw(3)): it reads each
 * record's start in place and frees the slot, as a consumer that sums or counts does. Its own
 * file, built -mgeneral-regs-only as the raw drain's contract asks (it runs in the handler
 * without the vector state saved), so that ulpt_log_peek and ulpt_log_consume inline into it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>
#include <stdint.h>
#include <ulpt.h>

size_t bench_log_drain(struct ulpt_log_ring *r, void *arg);

size_t bench_log_drain(struct ulpt_log_ring *r, void *arg)
{
	struct ulpt_log_slot *s;
	uint64_t sum = 0;
	size_t n = 0;

	while ((s = ulpt_log_peek(r))) {
		sum += s->start;
		ulpt_log_consume(r, s);
		n++;
	}
	*(volatile uint64_t *)arg += sum;
	return n;
}
