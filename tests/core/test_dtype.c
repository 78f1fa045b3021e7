#include <check.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "gdn_dtype.h"
#include "../check_runner.h"

START_TEST(ulp_values) {
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F32, 1.0) == ldexp(1, -23));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F32, 1.5) == ldexp(1, -23));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F32, 0.999) == ldexp(1, -24));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F32, -2.0) == ldexp(1, -22));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F64, 1.0) == ldexp(1, -52));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_BF16, 1.0) == ldexp(1, -7));
  /* Subnormal range: spacing is the smallest subnormal. */
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F32, 0.0) == ldexp(1, -149));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F32, ldexp(1, -140)) == ldexp(1, -149));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_F64, 0.0) == ldexp(1, -1074));
  ck_assert(gdn_dtype_ulp(GDN_DTYPE_BF16, 0.0) == ldexp(1, -133));
}
END_TEST

/* The definition gdn_dtype_ulp implements from the exponent bits:
 * 2^(max(floor(log2|r|), emin) - p + 1), with frexp and ldexp. */
static double ulp_by_frexp(gdn_dtype t, double r) {
  int p = gdn_dtype_precision(t), emin = gdn_dtype_emin(t), e = emin;
  if (r != 0.0) {
    int ex;
    frexp(r, &ex);
    e = ex - 1 < emin ? emin : ex - 1;
  }
  return ldexp(1.0, e - p + 1);
}

START_TEST(ulp_matches_definition) {
  /* Every binary64 exponent, both signs, the smallest and largest
   * significands, for the three dtypes (binary64 subnormals included). */
  static const gdn_dtype ts[3] = {GDN_DTYPE_F32, GDN_DTYPE_BF16, GDN_DTYPE_F64};
  int checked = 0;
  for (int i = 0; i < 3; i++)
    for (int ex = -1074; ex <= 1023; ex++)
      for (int s = 0; s < 4; s++) {
        double r = ldexp(s & 1 ? 1.9999999999999998 : 1.0, ex);
        if (s & 2) r = -r;
        if (!isfinite(r) || r == 0) continue;
        ck_assert_msg(gdn_dtype_ulp(ts[i], r) == ulp_by_frexp(ts[i], r), "dtype %d r %a", i, r);
        checked++;
      }
  ck_assert_int_gt(checked, 3 * 4 * 2000);
  /* Negative control: the definition tells neighbouring binades apart. */
  ck_assert(ulp_by_frexp(GDN_DTYPE_F32, 1.0) != gdn_dtype_ulp(GDN_DTYPE_F32, 2.0));
  ck_assert(isinf(gdn_dtype_ulp(GDN_DTYPE_F32, NAN)) && isinf(gdn_dtype_ulp(GDN_DTYPE_F64, -INFINITY)));
}
END_TEST

START_TEST(ulp_distance_matches_definition) {
  /* |x - r| / ulp(r) by the frexp definition, for r across every binade
   * (subnormal binary64 ulps included) and x at several relative offsets,
   * so products that overflow and quotients that underflow are covered. */
  static const gdn_dtype ts[3] = {GDN_DTYPE_F32, GDN_DTYPE_BF16, GDN_DTYPE_F64};
  static const double off[5] = {0x1.8p-52, 0x1.3p-20, 0.37, 3.0, 0x1p900};
  int checked = 0, nonzero = 0;
  for (int i = 0; i < 3; i++)
    for (int ex = -1074; ex <= 1023; ex += 3)
      for (int j = 0; j < 5; j++) {
        double r = ldexp(1.2345678901234567, ex);
        double x = r + r * off[j];
        if (!isfinite(r) || !isfinite(x)) continue;
        double want = x == r ? 0.0 : fabs(x - r) / ulp_by_frexp(ts[i], r);
        ck_assert_msg(gdn_dtype_ulp_distance(ts[i], x, r) == want, "dtype %d x %a r %a", i, x, r);
        checked++;
        nonzero += want > 0;
      }
  ck_assert_int_gt(checked, 3 * 600);
  ck_assert_int_gt(nonzero, checked / 2);
}
END_TEST

/* The distance by its definition (gdn_dtype.h): NaN anywhere -> inf,
 * x == r -> 0, one infinite -> inf, else |x - r| / ulp(r) with the frexp
 * ulp.  wrong_p: the negative control, one significand bit short. */
static double distance_by_definition(gdn_dtype t, double x, double r, int wrong_p) {
  if (isnan(x) || isnan(r)) return INFINITY;
  if (x == r) return 0.0;
  if (!isfinite(x) || !isfinite(r)) return INFINITY;
  return fabs(x - r) / (ulp_by_frexp(t, r) * (wrong_p ? 2 : 1));
}

START_TEST(ulp_inline_edge_cases) {
  /* The inline gdn_ulp_distance (gdn_ulp.h, the metrics' loops) against the
   * out-of-line wrapper and the definition, bit for bit (so -0 would show),
   * on every pair of edge values: zeros, binary64 and float32 subnormals and
   * minima, 1, the largest float32 and binary64, infinities, NaN, and the
   * neighbours of each finite one. */
  static const gdn_dtype ts[3] = {GDN_DTYPE_F32, GDN_DTYPE_BF16, GDN_DTYPE_F64};
  double v[64];
  int nv = 0;
  const double base[] = {0.0, 0x1p-1074, 0x1p-1022 - 0x1p-1074, DBL_MIN, FLT_TRUE_MIN, FLT_MIN, 1.0,
                         FLT_MAX, DBL_MAX, INFINITY};
  for (size_t i = 0; i < sizeof base / sizeof *base; i++) {
    v[nv++] = base[i], v[nv++] = -base[i];
    if (isfinite(base[i]) && base[i] < DBL_MAX) v[nv++] = nextafter(base[i], INFINITY);
  }
  v[nv++] = NAN;
  int checked = 0, wrong = 0;
  for (int k = 0; k < 3; k++) {
    gdn_ulp_fmt f = gdn_dtype_ulp_fmt(ts[k]);
    ck_assert(f.p == gdn_dtype_precision(ts[k]) && f.emin == gdn_dtype_emin(ts[k]));
    for (int i = 0; i < nv; i++)
      for (int j = 0; j < nv; j++) {
        double a = gdn_ulp_distance(f, v[i], v[j]), b = gdn_dtype_ulp_distance(ts[k], v[i], v[j]);
        double want = distance_by_definition(ts[k], v[i], v[j], 0);
        ck_assert_msg(memcmp(&a, &want, sizeof a) == 0 && memcmp(&b, &want, sizeof b) == 0,
                      "dtype %d x %a r %a: inline %a wrapper %a definition %a", k, v[i], v[j], a, b, want);
        double bad = distance_by_definition(ts[k], v[i], v[j], 1);
        wrong += memcmp(&a, &bad, sizeof a) != 0;
        checked++;
      }
  }
  ck_assert_int_eq(checked, 3 * nv * nv);
  /* Negative control: the definition one bit short disagrees on many pairs. */
  ck_assert_int_gt(wrong, checked / 4);
}
END_TEST

START_TEST(ulp_distance) {
  /* The float32 neighbour of 1 is exactly 1 ULP away; a correctly rounded
   * value of an exact reference is at most 0.5 ULP away. */
  ck_assert(gdn_dtype_ulp_distance(GDN_DTYPE_F32, 1.0 + ldexp(1, -23), 1.0) == 1.0);
  double r = 1.0 / 3.0;
  double d = gdn_dtype_ulp_distance(GDN_DTYPE_F32, (double)(float)r, r);
  ck_assert(d > 0 && d <= 0.5);
  ck_assert(gdn_dtype_ulp_distance(GDN_DTYPE_F32, 2.0, 2.0) == 0.0);
  ck_assert(isinf(gdn_dtype_ulp_distance(GDN_DTYPE_F32, NAN, 1.0)));
  ck_assert(isinf(gdn_dtype_ulp_distance(GDN_DTYPE_F32, INFINITY, 1.0)));
  ck_assert(gdn_dtype_ulp_distance(GDN_DTYPE_F32, INFINITY, INFINITY) == 0.0);
}
END_TEST

START_TEST(parse_names) {
  gdn_dtype t;
  gdn_error e;
  gdn_error_init(&e);
  ck_assert_int_eq(gdn_dtype_parse("bfloat16", &t, NULL, &e), GDN_OK);
  ck_assert_int_eq(t, GDN_DTYPE_BF16);
  ck_assert_str_eq(gdn_dtype_name(t), "bfloat16");
  ck_assert_int_eq(gdn_dtype_parse("float16", &t, "--dtype", &e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "'float16'"));
  ck_assert(gdn_dtype_unit_roundoff(GDN_DTYPE_F32) == ldexp(1, -24));
  ck_assert(gdn_dtype_unit_roundoff(GDN_DTYPE_BF16) == ldexp(1, -8));
}
END_TEST

CKR_MAIN("dtype", "dtype", 0, ulp_values, ulp_distance, ulp_matches_definition, ulp_distance_matches_definition,
    ulp_inline_edge_cases, parse_names)
