#include "report_axis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_num.h"

void report_axis_init(report_axis *a, int log) {
  memset(a, 0, sizeof *a);
  a->log = log;
  a->dmin = INFINITY;
  a->dmax = -INFINITY;
  a->lo = 0;
  a->hi = 1;
}

void report_axis_add1(report_axis *a, double v) {
  if (!isfinite(v)) {
    a->n_nonfinite++;
    return;
  }
  a->n_finite++;
  if (a->log && v <= 0) {
    a->n_nonpos++;
    return;
  }
  if (v < a->dmin) a->dmin = v;
  if (v > a->dmax) a->dmax = v;
}

void report_axis_add(report_axis *a, const double *v, size_t n) {
  for (size_t i = 0; i < n; i++) report_axis_add1(a, v[i]);
}

void report_axis_set_ticks(report_axis *a, const double *t, size_t n) {
  a->n_ticks = 0;
  for (size_t i = 0; i < n && a->n_ticks < REPORT_AXIS_MAX_TICKS; i++) {
    if (!isfinite(t[i]) || (a->log && t[i] <= 0)) continue;
    a->ticks[a->n_ticks++] = t[i];
    report_axis_add1(a, t[i]);
    a->n_finite--; /* ticks are not data */
  }
  a->explicit_ticks = a->n_ticks > 0;
}

/* The step of 1, 2 or 5 times a power of ten nearest to x (in ratio), so a
 * span divided by 5 gets about 5 intervals (4 to 9 after rounding out). */
static double nice_step(double x) {
  double p = pow(10, floor(log10(x)));
  double m = x / p;
  double s = m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10;
  return s * p;
}

static void finish_linear(report_axis *a) {
  double lo = a->dmin, hi = a->dmax;
  if (!(lo <= hi)) {
    a->no_data = 1;
    lo = 0, hi = 1;
  } else if (lo == hi) {
    /* One value (or all equal): a window of +-10% around it, or [-1, 1]
     * around 0, so the point sits mid-axis with readable ticks. */
    double w = lo != 0 ? fabs(lo) * 0.1 : 1;
    lo -= w, hi += w;
  }
  if (a->explicit_ticks) {
    a->lo = lo, a->hi = hi;
    return;
  }
  /* Guard against a span that overflows (e.g. -1e308..1e308). */
  double span = hi / 2 - lo / 2;
  double step = nice_step(span * 2 / 5);
  if (!isfinite(step) || step <= 0) step = 1;
  double klo = floor(lo / step), khi = ceil(hi / step);
  if (khi - klo > REPORT_AXIS_MAX_TICKS - 1) khi = klo + REPORT_AXIS_MAX_TICKS - 1;
  a->lo = klo * step;
  a->hi = khi * step;
  if (!(a->lo < a->hi) || !isfinite(a->lo) || !isfinite(a->hi)) a->lo = lo, a->hi = hi;
  a->n_ticks = 0;
  for (double k = klo; k <= khi && a->n_ticks < REPORT_AXIS_MAX_TICKS; k++) {
    double t = k * step;
    if (fabs(t) < step * 1e-9) t = 0; /* no "-0" or 1e-17 labels */
    if (a->tight && (t < lo - step * 1e-9 || t > hi + step * 1e-9)) continue;
    a->ticks[a->n_ticks++] = t;
  }
  if (a->tight) a->lo = lo, a->hi = hi;
}

static void finish_log(report_axis *a) {
  int have_pos = a->dmin <= a->dmax;
  a->no_data = !have_pos && a->n_nonpos == 0;
  a->clamped = a->n_nonpos > 0;
  /* Floor for non-positive values: requested, else a decade below the
   * smallest positive value, so clamped points sit visibly under the data. */
  double fl = a->floor_req > 0 ? a->floor_req
              : have_pos      ? pow(10, floor(log10(a->dmin)) - 1)
                              : REPORT_AXIS_DEFAULT_FLOOR;
  a->floor = fl;
  double lmin, lmax;
  if (have_pos) {
    lmin = floor(log10(a->dmin));
    lmax = ceil(log10(a->dmax));
  } else {
    lmin = lmax = floor(log10(fl));
  }
  if (a->clamped) {
    double lf = floor(log10(fl));
    if (lf < lmin) lmin = lf;
    if (lf > lmax) lmax = lf;
  }
  /* Below 1e-300 / above 1e300 the decade arithmetic is no longer exact;
   * nothing a parity report plots lives there. */
  if (lmin < -300) lmin = -300;
  if (lmax > 300) lmax = 300;
  if (lmax <= lmin) {
    lmin -= 1;
    lmax += 1;
  }
  a->lo = pow(10, lmin);
  a->hi = pow(10, lmax);
  if (a->clamped && a->floor < a->lo) a->floor = a->lo;
  if (a->explicit_ticks) return;
  double ndec = lmax - lmin;
  a->n_ticks = 0;
  if (ndec <= 2) {
    static const double mult[] = {1, 2, 5};
    for (double d = lmin; d <= lmax; d++)
      for (int m = 0; m < 3; m++) {
        double t = mult[m] * pow(10, d);
        if (t <= a->hi * (1 + 1e-12) && a->n_ticks < REPORT_AXIS_MAX_TICKS) a->ticks[a->n_ticks++] = t;
      }
    return;
  }
  double k = ceil(ndec / 8);
  for (double d = ceil(lmin / k) * k; d <= lmax && a->n_ticks < REPORT_AXIS_MAX_TICKS; d += k)
    a->ticks[a->n_ticks++] = pow(10, d);
}

void report_axis_finish(report_axis *a) {
  if (a->log) finish_log(a);
  else finish_linear(a);
  if (a->explicit_ticks) {
    /* The range must contain the explicit ticks (already folded into
     * dmin/dmax) and leave a margin so end ticks do not sit on the frame. */
    if (a->log) {
      double lmin = log10(a->dmin <= a->dmax ? a->dmin : a->lo);
      double lmax = log10(a->dmin <= a->dmax ? a->dmax : a->hi);
      if (a->clamped) lmin = fmin(lmin, log10(a->floor));
      double pad = lmax > lmin ? (lmax - lmin) * 0.08 : 0.5;
      a->lo = pow(10, lmin - pad);
      a->hi = pow(10, lmax + pad);
      if (a->clamped) a->floor = fmax(a->floor, a->lo);
    } else {
      double pad = (a->hi - a->lo) * 0.08;
      a->lo -= pad;
      a->hi += pad;
    }
  }
}

double report_axis_frac(const report_axis *a, double v) {
  if (!isfinite(v)) return NAN;
  double f;
  if (a->log) {
    if (v <= 0) v = a->floor > 0 ? a->floor : a->lo;
    f = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
  } else {
    f = (v - a->lo) / (a->hi - a->lo);
  }
  if (!(f >= 0)) f = 0; /* also catches a NaN from a degenerate range */
  if (f > 1) f = 1;
  return f;
}

void report_axis_format(const report_axis *a, double t, char out[40]) {
  if (a->log && t > 0) {
    double l = log10(t);
    double r = round(l);
    if (fabs(l - r) < 1e-9 && (r < -2 || r > 3)) {
      snprintf(out, 40, "1e%d", (int)r);
      return;
    }
  }
  report_num_format(out, t, 6);
}
