/* parity_recur_step: one step of the progress line (parity_progress.h) for
 * an oracle run of a recurrence's check (parity_recur_check.h), or for a
 * meter over several (fix_regen_meter.h): named "WHAT of FILE.h5TAIL" (the
 * path's last part), advancing inside the run through the callback it
 * hands back, and erased when it ends, before the check prints anything. */
#ifndef PARITY_RECUR_STEP_H
#define PARITY_RECUR_STEP_H

#include "oracle.h"
#include "parity_progress.h"

/* Begins the step on line p (NULL: no line, returns NULL); else writes the
 * oracle's callback into *op and returns op. */
const oracle_progress *parity_recur_step_begin(parity_progress *p, const char *path, const char *what,
                                               const char *tail, oracle_progress *op);
/* Ends it and erases the line (p NULL: nothing). */
void parity_recur_step_end(parity_progress *p);

#endif
