/*
 * User-level delivery and the end of a permit (ulpt-deliver.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ULPT_DELIVER_H
#define ULPT_DELIVER_H

#include "ulpt-qemu.h"

/*
 * A violation for the handler, with the faulting instruction's state
 * restored: push the frame, enter the handler.
 */
void ulpt_deliver(CPUX86State *env);
/* Every exception or interrupt delivery: ends a permit and any frame access. */
void ulpt_event(CPUX86State *env);

#endif /* ULPT_DELIVER_H */
