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
/*
 * May a ULPT event be delivered to the handler now (R-DEL-1)? Else a
 * violation escalates and an after event is dropped.
 */
static inline bool ulpt_can_deliver(CPUX86State *env)
{
    return env->ulpt.handler && !(env->ulpt.status & ULPT_STATUS_IN_HANDLER) &&
           (env->hflags & HF_CS64_MASK) && (env->hflags & HF_CPL_MASK) == 3;
}

/* How a permitted instruction's block ends: helper_ulpt_next_tb's `how`. */
#define ULPT_NEXT_TF         1  /* translated with TF: trap after it */
#define ULPT_NEXT_RECHECK_TF 2  /* it may have changed TF: trap if now set */
#define ULPT_NEXT_LOOKUP     4  /* it may go on to the next block directly */

/* Every exception or interrupt delivery: ends a permit and any frame access. */
void ulpt_event(CPUX86State *env);

#endif /* ULPT_DELIVER_H */
