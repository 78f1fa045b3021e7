/* parity_progress: one line on a terminal saying what runs, how far the run
 * is, and the time left.
 *
 * Written to stderr only when stderr is a terminal (isatty) and the run is
 * not --quiet: CI logs, pipes and files never see it.  The line is redrawn
 * in place ("\r", erase to end of line) at the start of every step and
 * erased before the run prints anything else (parity_progress_clear), so the
 * table on stdout is unchanged.  The time left is the last step's time
 * times the steps left: the steps after the oracle are kernel cases of
 * about one cost each, which a mean over the (long) oracle step would
 * overstate many times; a guide, not a promise.  Progress never changes a
 * result.
 */
#ifndef PARITY_PROGRESS_H
#define PARITY_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct parity_progress {
  FILE *f;  /* NULL: off */
  int64_t total, done;
  double t0;  /* start, seconds (monotonic) */
  double t_step, last; /* this step's start; the last step's seconds (< 0: none yet) */
  int shown;  /* a line is on the terminal */
  char what[96];  /* the running step's name */
  double t_draw;  /* when the line was last drawn */
} parity_progress;

/* On only when `enabled` and `f` is a terminal. */
void parity_progress_init(parity_progress *p, FILE *f, int enabled);
/* `n` more steps to come (callers add their steps as they learn them). */
void parity_progress_add(parity_progress *p, int64_t n);
/* Step done+1 of total starts: `what` runs. */
void parity_progress_begin(parity_progress *p, const char *what);
/* The step ended. */
void parity_progress_end(parity_progress *p);
/* Within the running step: `done` of `total` units of its work are done
 * (the oracle's token-columns).  Redraws the line with the step's share and
 * its own time left, at most every quarter second (and when done ==
 * total): the oracle reports about a thousand times a run. */
void parity_progress_part(parity_progress *p, int64_t done, int64_t total);
/* parity_progress_part as an oracle_progress callback (arg: the
 * parity_progress). */
void parity_progress_oracle(void *arg, int64_t done, int64_t total);
/* Erase the line (before other output, and at the end of the run). */
void parity_progress_clear(parity_progress *p);

/* The line's text: "[3/9] what | 1:02 elapsed, ~2:04 left" (left = last x
 * (total - done); "?" while last < 0, before any step ended), truncated to
 * fit n bytes.  Pure: the tested core. */
void parity_progress_format(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                            double last, const char *what);

/* The line within a step: "[2/6] oracle 37% | 1:02 elapsed, ~1:45 left
 * in this step", the step's time left estimated as its elapsed time
 * `step` x (1 - frac) / frac ("?" while frac is 0).  Pure. */
void parity_progress_format_part(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                                 double step, double frac, const char *what);

#endif
