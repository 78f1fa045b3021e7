/* Plot scaling on edge data (report_axis, report_svg): all zeros, NaN, a
 * single point, 1e-30..1e3, negative and zero values on log axes.  No
 * crash, the tick values a reader expects, finite coordinates only. */
#include <check.h>
#include <math.h>
#include <strings.h>

#include "report_axis.h"
#include "report_svg.h"
#include "svg_check.h"
#include "../check_runner.h"
#include "../check_text.h"

/* Ticks equal to want[] up to 1e-9 relative (pow/log10 rounding). */
static void ticks_are(const report_axis *a, const double *want, size_t n) {
  ck_assert_msg(a->n_ticks == n, "%zu ticks, want %zu", a->n_ticks, n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(fabs(a->ticks[i] - want[i]) <= 1e-9 * fmax(fabs(want[i]), 1e-300) ||
                      (want[i] == 0 && a->ticks[i] == 0),
                  "tick %zu = %.17g, want %.17g", i, a->ticks[i], want[i]);
  ck_assert(a->lo < a->hi && isfinite(a->lo) && isfinite(a->hi));
}

static void close_to(double got, double want) {
  ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want) + 1e-300, "%.17g != %.17g", got, want);
}

static report_axis axis_of(int log, const double *v, size_t n) {
  report_axis a;
  report_axis_init(&a, log);
  report_axis_add(&a, v, n);
  report_axis_finish(&a);
  return a;
}

START_TEST(linear_ticks) {
  double v[] = {0, 0.3, 1};
  report_axis a = axis_of(0, v, 3);
  ticks_are(&a, (double[]){0, 0.2, 0.4, 0.6, 0.8, 1.0}, 6);
  /* Negative to positive: ticks include an exact 0, not -2.7e-17. */
  double w[] = {-3.2, 7.9};
  a = axis_of(0, w, 2);
  ticks_are(&a, (double[]){-4, -2, 0, 2, 4, 6, 8}, 7);
  ck_assert(a.ticks[2] == 0 && !signbit(a.ticks[2]));
}
END_TEST

START_TEST(linear_edge) {
  /* All zeros: [-1, 1] around the value. */
  double z[] = {0, 0, 0};
  report_axis a = axis_of(0, z, 3);
  ticks_are(&a, (double[]){-1, -0.5, 0, 0.5, 1}, 5);
  /* One point: a +-10% window, whole steps. */
  double one[] = {5};
  a = axis_of(0, one, 1);
  ticks_are(&a, (double[]){4.4, 4.6, 4.8, 5.0, 5.2, 5.4, 5.6}, 7);
  close_to(a.lo, 4.4);
  close_to(a.hi, 5.6);
  /* Only NaN and infinities: a default range, flagged. */
  double bad[] = {NAN, INFINITY, -INFINITY};
  a = axis_of(0, bad, 3);
  ck_assert(a.no_data);
  ck_assert_uint_eq(a.n_nonfinite, 3);
  ticks_are(&a, (double[]){0, 0.2, 0.4, 0.6, 0.8, 1}, 6);
  /* The whole double range: finite ticks, no overflow. */
  double huge[] = {-1.7e308, 1.7e308};
  a = axis_of(0, huge, 2);
  ck_assert(isfinite(a.lo) && isfinite(a.hi) && a.lo < a.hi);
  for (size_t i = 0; i < a.n_ticks; i++) ck_assert(isfinite(a.ticks[i]));
  /* Tight: the range is the data's (a sequence 0..4096), ticks inside. */
  report_axis t;
  report_axis_init(&t, 0);
  t.tight = 1;
  report_axis_add(&t, (double[]){0, 4096}, 2);
  report_axis_finish(&t);
  ticks_are(&t, (double[]){0, 1000, 2000, 3000, 4000}, 5);
  ck_assert(t.lo == 0 && t.hi == 4096);
}
END_TEST

START_TEST(log_ticks) {
  /* 33 decades: every 5th decade, at multiples of 5. */
  double v[] = {1e-30, 2.5e-12, 1e3};
  report_axis a = axis_of(1, v, 3);
  ticks_are(&a, (double[]){1e-30, 1e-25, 1e-20, 1e-15, 1e-10, 1e-5, 1}, 7);
  close_to(a.lo, 1e-30);
  close_to(a.hi, 1e3);
  ck_assert(!a.clamped);
  /* Three decades: one tick each. */
  double w[] = {2e-8, 3e-6};
  a = axis_of(1, w, 2);
  ticks_are(&a, (double[]){1e-8, 1e-7, 1e-6, 1e-5}, 4);
  /* Less than a decade: 1-2-5 ticks. */
  double s[] = {3e-7};
  a = axis_of(1, s, 1);
  ticks_are(&a, (double[]){1e-7, 2e-7, 5e-7, 1e-6}, 4);
  /* A single exact decade still gets a range around it. */
  double d[] = {1e-7};
  a = axis_of(1, d, 1);
  ck_assert(a.lo < 1e-7 && a.hi > 1e-7);
}
END_TEST

START_TEST(log_zeros_negatives) {
  /* Zeros and negatives on a log axis: counted, drawn at a floor one
   * decade under the smallest positive value. */
  double v[] = {0, -1, 1e-7, 3e-6, NAN};
  report_axis a = axis_of(1, v, 5);
  ck_assert(a.clamped);
  ck_assert_uint_eq(a.n_nonpos, 2);
  ck_assert_uint_eq(a.n_nonfinite, 1);
  close_to(a.floor, 1e-8);
  ticks_are(&a, (double[]){1e-8, 1e-7, 1e-6, 1e-5}, 4);
  ck_assert(report_axis_frac(&a, 0) == 0);
  ck_assert(report_axis_frac(&a, -5) == 0);
  ck_assert(isnan(report_axis_frac(&a, NAN)));
  ck_assert(isnan(report_axis_frac(&a, INFINITY)));
  ck_assert(report_axis_frac(&a, 1e9) == 1); /* clamped to the frame */
  close_to(report_axis_frac(&a, 1e-7), 1.0 / 3.0);
  /* All zeros: the default floor, a sane range around it. */
  double z[] = {0, 0};
  a = axis_of(1, z, 2);
  ck_assert(a.clamped && !a.no_data);
  close_to(a.floor, REPORT_AXIS_DEFAULT_FLOOR);
  ck_assert(a.lo < a.floor && a.floor < a.hi);
  ck_assert_uint_ge(a.n_ticks, 2);
  /* A requested floor is honoured. */
  report_axis r;
  report_axis_init(&r, 1);
  r.floor_req = 1e-12;
  report_axis_add(&r, (double[]){0, 1e-6}, 2);
  report_axis_finish(&r);
  close_to(r.floor, 1e-12);
  close_to(r.lo, 1e-12);
  /* Nothing at all. */
  a = axis_of(1, NULL, 0);
  ck_assert(a.no_data && a.lo > 0 && a.lo < a.hi);
}
END_TEST

START_TEST(explicit_ticks) {
  report_axis a;
  report_axis_init(&a, 1);
  report_axis_set_ticks(&a, (double[]){1, 2, 4, 8, 0, NAN}, 6); /* 0, NaN dropped on log */
  report_axis_finish(&a);
  ticks_are(&a, (double[]){1, 2, 4, 8}, 4);
  ck_assert(a.lo < 1 && a.hi > 8); /* end ticks not on the frame */
  ck_assert_uint_eq(a.n_finite, 0); /* ticks are not data */
}
END_TEST

START_TEST(labels) {
  report_axis lg, ln;
  report_axis_init(&lg, 1);
  report_axis_init(&ln, 0);
  char t[40];
  struct {
    const report_axis *a;
    double v;
    const char *want;
  } cases[] = {{&lg, 1e-30, "1e-30"}, {&lg, 0.01, "0.01"}, {&lg, 1000, "1000"}, {&lg, 1e4, "1e4"},
               {&lg, 2e-7, "2e-7"},   {&lg, 1, "1"},       {&ln, 0.5, "0.5"},   {&ln, 0, "0"},
               {&ln, -2, "-2"},       {&ln, 4096, "4096"}, {&lg, 1e300, "1e300"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    report_axis_format(cases[i].a, cases[i].v, t);
    ck_assert_str_eq(t, cases[i].want);
  }
}
END_TEST

/* Draws one plot of the given data and checks the SVG text. */
static void draw_checked(const double *x, const double *y, size_t n, int ylog) {
  report_axis ax, ay;
  report_axis_init(&ax, 0);
  report_axis_init(&ay, ylog);
  report_axis_add(&ax, x, n);
  report_axis_add(&ay, y, n);
  report_axis_finish(&ax);
  report_axis_finish(&ay);
  report_buf b;
  report_buf_init(&b);
  report_plot p;
  report_plot_begin(&p, &b, "svg-test", "a <test> plot", 700, 300, &ax, &ay, "t (tokens)",
                    "error");
  report_plot_series(&p, x, y, n, 0, 1, "series <1>");
  report_plot_series(&p, x, y, n, 1, 0, "series 2");
  report_plot_hline(&p, y[0], 2, "reference");
  report_plot_vline(&p, x[0], "r=1", "seam \"1\"");
  report_plot_legend(&p, 3, REPORT_LEGEND_SEAM, "a legend name much longer than the column allows");
  report_plot_end(&p);
  ck_assert_int_eq(b.err.code, GDN_OK);
  size_t bad = svg_bad_coordinate(b.data, b.len);
  ck_assert_msg(bad == 0, "non-finite coordinate at: %.60s", b.data + bad - 1);
  ck_assert_msg(!svg_has_nan_text(b.data, b.len), "\"nan\" in the SVG");
  ck_assert(!svg_contains_ci(b.data, b.len, "inf\""));
  /* Names were escaped. */
  CKT_HAS_ALL(b.data, "a &lt;test&gt; plot", "series &lt;1&gt;");
  ck_assert_ptr_null(strstr(b.data, "<test>"));
  ck_assert(!strncmp(b.data, "<svg ", 5));
  ck_assert(!strcmp(b.data + b.len - 7, "</svg>\n"));
  report_buf_clear(&b);
}

START_TEST(svg_edge_data) {
  double x[] = {0, 64, 128, 192, 256, 320};
  double zeros[] = {0, 0, 0, 0, 0, 0};
  double nans[] = {NAN, NAN, NAN, NAN, NAN, NAN};
  double mixed[] = {1e-7, NAN, 3e-7, INFINITY, 0, -INFINITY};
  double span[] = {1e-30, 1e-20, 1e-10, 1, 1e3, 5e2};
  double neg[] = {-1e-7, -3, 0, 2e-7, 1e-6, -0.0};
  for (int log = 0; log < 2; log++) {
    draw_checked(x, zeros, 6, log);
    draw_checked(x, nans, 6, log);
    draw_checked(x, mixed, 6, log);
    draw_checked(x, span, 6, log);
    draw_checked(x, neg, 6, log);
    draw_checked(x, span, 1, log); /* a single point */
  }
  /* A non-finite x is skipped, not drawn at 0. */
  double xb[] = {0, NAN, 2};
  draw_checked(xb, span, 3, 1);
}
END_TEST

START_TEST(isolated_point_visible) {
  double x[] = {0, 1, 2}, y[] = {NAN, 5e-7, NAN};
  report_axis ax, ay;
  report_axis_init(&ax, 0);
  report_axis_init(&ay, 1);
  report_axis_add(&ax, x, 3);
  report_axis_add(&ay, y, 3);
  report_axis_finish(&ax);
  report_axis_finish(&ay);
  report_buf b;
  report_buf_init(&b);
  report_plot p;
  report_plot_begin(&p, &b, "s", "s", 700, 300, &ax, &ay, "x", "y");
  report_plot_series(&p, x, y, 3, 0, 0, "one");
  report_plot_end(&p);
  /* No polyline can be drawn (no two neighbours), so a marker must be, and
   * the two NaNs are marked on the top edge. */
  ck_assert_ptr_null(strstr(b.data, "<polyline"));
  ck_assert_ptr_nonnull(strstr(b.data, "<circle"));
  ck_assert_uint_eq(p.n_nonfinite_drawn, 2);
  ck_assert_ptr_nonnull(strstr(b.data, "one: not a number"));
  report_buf_clear(&b);
}
END_TEST

CKR_MAIN("plot", "plot", 0, linear_ticks, linear_edge, log_ticks, log_zeros_negatives, explicit_ticks, labels,
    svg_edge_data, isolated_point_visible)
