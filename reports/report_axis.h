/* report_axis: the scale of one plot axis, computed from the data it must
 * show, and its tick marks.
 *
 * Robust to the data reports see: zeros and negatives on a log axis (drawn
 * at a stated floor and counted), NaN and infinities (counted, never part of
 * the range), a single value, all-equal values, and values spanning tens of
 * decades.  The range and every tick are finite, lo < hi, and on a log axis
 * lo > 0, so the mapped coordinates are always finite.
 *
 * Linear ticks: steps of 1, 2 or 5 x 10^k, about 5 intervals, range widened
 * to whole steps.  Log ticks: one per decade, or every k-th decade (k the
 * smallest that leaves at most 8 labels) at multiples of k; with at most two
 * decades, 2 and 5 times each decade too.  Explicit ticks (device counts,
 * sequence lengths) replace the automatic ones.
 */
#ifndef REPORT_AXIS_H
#define REPORT_AXIS_H

#include <stddef.h>

#define REPORT_AXIS_MAX_TICKS 64
/* Floor of a log axis with no positive data at all. */
#define REPORT_AXIS_DEFAULT_FLOOR 1e-20

typedef struct report_axis {
  int log;            /* 1: log10 scale */
  double floor_req;   /* log: requested floor (0: automatic) */
  int tight;          /* linear: range = data range (e.g. 0..T), ticks inside it */
  /* data seen by report_axis_add */
  double dmin, dmax;  /* finite values (linear) / positive finite values (log) */
  size_t n_finite, n_nonfinite, n_nonpos;
  /* result of report_axis_finish */
  double lo, hi;      /* the drawn range */
  double floor;       /* log: where values <= 0 are drawn (= lo when clamping) */
  int clamped;        /* log: some value <= 0 is drawn at the floor */
  int no_data;        /* no finite (log: positive or zero) value: a default range */
  size_t n_ticks;
  double ticks[REPORT_AXIS_MAX_TICKS];
  int explicit_ticks;
} report_axis;

void report_axis_init(report_axis *a, int log);
/* Accumulate data (any values, non-finite included). */
void report_axis_add(report_axis *a, const double *v, size_t n);
void report_axis_add1(report_axis *a, double v);
/* Use these tick values (sorted, <= REPORT_AXIS_MAX_TICKS; on a log axis the
 * non-positive ones are dropped); the range covers them and the data. */
void report_axis_set_ticks(report_axis *a, const double *t, size_t n);
/* Computes lo, hi, floor and the ticks. */
void report_axis_finish(report_axis *a);

/* Position of v in [0, 1] along the axis (clamped to the range; on a log
 * axis v <= 0 maps to the floor).  Non-finite v gives NaN: the caller draws
 * a marker instead of a coordinate. */
double report_axis_frac(const report_axis *a, double v);

/* The label of a tick value: decades of a log axis outside 0.01..1000 as
 * "1e-30", "1e4"; everything else as a short number ("0.5", "2", "1000").
 * C locale. */
void report_axis_format(const report_axis *a, double t, char out[40]);

#endif
