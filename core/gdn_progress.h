/* gdn_progress: one line on a terminal saying what runs, how far the run
 * is, and the time left (gdn-parity's runs, parity_progress.h, and
 * gdn-fixture regen's oracle).
 *
 * Written to stderr only when stderr is a terminal (isatty) and the run is
 * not --quiet: CI logs, pipes and files never see it.  The line is redrawn
 * in place ("\r", erase to end of line) at the start of every step and
 * erased before the run prints anything else (gdn_progress_clear), so the
 * table on stdout is unchanged.  Pure libc (isatty, clock_gettime): in
 * core/ so that every command's main can draw it.  The time left is the last step's time
 * times the steps left: the steps after the oracle are kernel cases of
 * about one cost each, which a mean over the (long) oracle step would
 * overstate many times; a guide, not a promise.  Progress never changes a
 * result.
 */
#ifndef GDN_PROGRESS_H
#define GDN_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct gdn_progress {
  FILE *f;  /* NULL: off */
  int64_t total, done;
  double t0;  /* start, seconds (monotonic) */
  double t_step, last; /* this step's start; the last step's seconds (< 0: none yet) */
  int shown;  /* a line is on the terminal */
  char what[96];  /* the running step's name */
  double t_draw;  /* when the line was last drawn */
} gdn_progress;

/* On only when `enabled` and `f` is a terminal. */
void gdn_progress_init(gdn_progress *p, FILE *f, int enabled);
/* `n` more steps to come (callers add their steps as they learn them). */
void gdn_progress_add(gdn_progress *p, int64_t n);
/* Step done+1 of total starts: `what` runs. */
void gdn_progress_begin(gdn_progress *p, const char *what);
/* The step ended. */
void gdn_progress_end(gdn_progress *p);
/* Within the running step: `done` of `total` units of its work are done
 * (the oracle's token-columns).  Redraws the line with the step's share and
 * its own time left, at most every quarter second (and when done ==
 * total): the oracle reports about a thousand times a run. */
void gdn_progress_part(gdn_progress *p, int64_t done, int64_t total);
/* gdn_progress_part as an oracle_progress callback (arg: the
 * gdn_progress). */
void gdn_progress_oracle(void *arg, int64_t done, int64_t total);
/* Erase the line (before other output, and at the end of the run). */
void gdn_progress_clear(gdn_progress *p);

/* The line's text: "[3/9] what | 1:02 elapsed, ~2:04 left" (left = last x
 * (total - done); "?" while last < 0, before any step ended), truncated to
 * fit n bytes.  Pure: the tested core. */
void gdn_progress_format(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                            double last, const char *what);

/* The line within a step: "[2/6] oracle 37% | 1:02 elapsed, ~1:45 left
 * in this step", the step's time left estimated as its elapsed time
 * `step` x (1 - frac) / frac ("?" while frac is 0).  Pure. */
void gdn_progress_format_part(char *buf, size_t n, int64_t done, int64_t total, double elapsed,
                                 double step, double frac, const char *what);

#endif
