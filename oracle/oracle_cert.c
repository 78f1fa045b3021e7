/* Agreement in bits (oracle.h): the certificate's accumulator and the
 * comparison of two binary64 results. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "oracle_internal.h"

static const orc_mag MAG_ZERO = {0.0, 0};

/* |x| with a directed rounding of its significand to 53 bits: MPFR_RNDA
 * rounds the magnitude up, MPFR_RNDZ down. */
static orc_mag mag_of_mpfr(mpfr_srcptr x, mpfr_rnd_t rnd) {
  if (mpfr_zero_p(x)) return MAG_ZERO;
  long e;
  double m = fabs(mpfr_get_d_2exp(&e, x, rnd));
  if (m >= 1.0) { /* a rounding that carried into the next binade */
    m *= 0.5;
    e++;
  }
  return (orc_mag){m, e};
}

static orc_mag mag_of_double(double x) {
  if (x == 0.0) return MAG_ZERO;
  int e;
  double m = fabs(frexp(x, &e));
  return (orc_mag){m, e};
}

static int mag_cmp(orc_mag a, orc_mag b) {
  if (a.m == 0.0 || b.m == 0.0) return (a.m != 0.0) - (b.m != 0.0);
  if (a.e != b.e) return a.e < b.e ? -1 : 1;
  return (a.m > b.m) - (a.m < b.m);
}

/* floor(log2(num / den)) for nonzero magnitudes: num/den = (mn/md) 2^(en-ed)
 * with mn/md in (1/2, 2), so the floor is en - ed, less 1 when mn < md. */
static long flog2_ratio(orc_mag num, orc_mag den) {
  return (num.e - den.e) - (num.m < den.m ? 1 : 0);
}

static int clamp_bits(long b, int cap) { return b < 0 ? 0 : b > cap ? cap : (int)b; }

void orc_acc_init(orc_acc *a) {
  a->cap = 0;
  a->rmax = MAG_ZERO;
  a->dmax = NULL;
}

int orc_acc_alloc(orc_acc *a, int cap, const char *what, gdn_error *e) {
  orc_acc_clear(a);
  a->dmax = gdn_calloc(cap > 0 ? (size_t)cap : 1, sizeof(orc_mag), what, e);
  if (!a->dmax) return e ? e->code : GDN_ERR_NOMEM;
  for (int k = 0; k < cap; k++) a->dmax[k] = MAG_ZERO;
  a->cap = cap;
  return GDN_OK;
}

void orc_acc_clear(orc_acc *a) {
  gdn_free(a->dmax);
  orc_acc_init(a);
}

void orc_acc_add(orc_acc *a, mpfr_srcptr x, mpfr_srcptr r, mpfr_ptr d) {
  orc_mag rm = mag_of_mpfr(r, MPFR_RNDZ);
  if (mag_cmp(rm, a->rmax) > 0) a->rmax = rm;
  if (mpfr_equal_p(x, r)) return;
  /* Exact whenever x and r agree to >= 1 bit (oracle.h); otherwise rounded
   * away from zero, which can only understate the agreement. */
  mpfr_sub(d, x, r, MPFR_RNDA);
  orc_mag dm = mag_of_mpfr(d, MPFR_RNDA);
  long rel;
  if (mpfr_zero_p(r)) {
    rel = -1; /* log2(0 / |d|) = -inf: judged against tau alone */
  } else {
    /* Compare |r| with |d| scaled to r's exponent (exact: only the exponent
     * changes, to one that r itself has). */
    long er = mpfr_get_exp(r), ed = mpfr_get_exp(d);
    mpfr_mul_2si(d, d, er - ed, MPFR_RNDN);
    rel = (er - ed) - (mpfr_cmpabs(r, d) < 0 ? 1 : 0);
  }
  if (rel >= a->cap) return;
  int k = rel < 0 ? 0 : (int)rel;
  if (mag_cmp(dm, a->dmax[k]) > 0) a->dmax[k] = dm;
}

/* x a binary64 value whose error is at most bound (>= 0).  The truth r
 * then has |r| >= |x| - bound =: lo (taken rounded down), so the element
 * agrees to at least floor(log2(lo / bound)) bits relatively, and max |r|
 * is at least the max of lo: with lo for |r| and bound for |x - r| the
 * rule of orc_acc_add can only understate. */
void orc_acc_add_d(orc_acc *a, double x, double bound) {
  double lo = fabs(x) - bound;
  lo = lo > 0 ? nextafter(lo, 0.0) : 0.0;
  orc_mag lm = mag_of_double(lo);
  if (mag_cmp(lm, a->rmax) > 0) a->rmax = lm;
  if (bound == 0.0) return;
  orc_mag bm = mag_of_double(bound);
  long rel = lo == 0.0 ? -1 : flog2_ratio(lm, bm);
  if (rel >= a->cap) return;
  int k = rel < 0 ? 0 : (int)rel;
  if (mag_cmp(bm, a->dmax[k]) > 0) a->dmax[k] = bm;
}

void orc_acc_merge(orc_acc *dst, const orc_acc *src) {
  if (mag_cmp(src->rmax, dst->rmax) > 0) dst->rmax = src->rmax;
  for (int k = 0; k < dst->cap && k < src->cap; k++)
    if (mag_cmp(src->dmax[k], dst->dmax[k]) > 0) dst->dmax[k] = src->dmax[k];
}

/* bits_e >= b (1 <= b <= cap) iff rel_e >= b or floor(log2(tau / d_e)) >= b.
 * The elements with rel_e <= b - 1 are those of buckets 0 .. b-1, and the
 * tau branch is non-increasing in d_e, so only the largest d of those
 * buckets (a running maximum) needs testing.  The condition is monotone in
 * b; the answer is the last b for which it holds. */
int orc_acc_bits(const orc_acc *a, double *tau) {
  if (tau) {
    *tau = 0.0;
    if (a->rmax.m != 0.0) {
      mpfr_t t;
      mpfr_init2(t, 53);
      mpfr_set_d(t, a->rmax.m, MPFR_RNDN);
      mpfr_mul_2si(t, t, a->rmax.e - ORACLE_TAU_BITS, MPFR_RNDN);
      *tau = mpfr_get_d(t, MPFR_RNDN);
      mpfr_clear(t);
    }
  }
  orc_mag run = MAG_ZERO;
  for (int b = 1; b <= a->cap; b++) {
    if (mag_cmp(a->dmax[b - 1], run) > 0) run = a->dmax[b - 1];
    if (run.m == 0.0) continue;
    if (a->rmax.m == 0.0 || flog2_ratio(a->rmax, run) - ORACLE_TAU_BITS < b) return b - 1;
  }
  return a->cap;
}

/* floor(log2(rmax / max |x - r|)) clamped to [0, cap]: rmax is rounded
 * down and every dmax up, so it can only understate.  Elements dropped
 * from the buckets (agreeing to >= cap bits) have |x - r| <= 2^-cap rmax
 * and cannot lower it below cap. */
int orc_acc_normwise(const orc_acc *a) {
  orc_mag dm = MAG_ZERO;
  for (int k = 0; k < a->cap; k++)
    if (mag_cmp(a->dmax[k], dm) > 0) dm = a->dmax[k];
  if (dm.m == 0.0) return a->cap;
  if (a->rmax.m == 0.0) return 0;
  return clamp_bits(flog2_ratio(a->rmax, dm), a->cap);
}

/* --- oracle_bits_agreed ---------------------------------------------------- */

/* Any difference of two binary64 numbers is a multiple of 2^-1074 below
 * 2^1025: 2099 bits hold it exactly. */
enum { EXACT_DIFF_PREC = 2200 };

/* floor(log2(|a| / |d|)), a a nonzero finite binary64, d a nonzero MPFR
 * number; s scratch at d's precision, am scratch at 53 bits. */
static long flog2_ratio_mp(double a, mpfr_srcptr d, mpfr_ptr s, mpfr_ptr am) {
  int ea;
  frexp(a, &ea);
  long ed = mpfr_get_exp(d);
  mpfr_mul_2si(s, d, (long)ea - ed, MPFR_RNDN); /* exact */
  mpfr_set_d(am, a, MPFR_RNDN);
  return ((long)ea - ed) - (mpfr_cmpabs(am, s) < 0 ? 1 : 0);
}

static int tensor_bits(const double *x, const double *r, size_t n, int cap, mpfr_ptr mx,
                       mpfr_ptr mr, mpfr_ptr d, mpfr_ptr s, mpfr_ptr am) {
  double M = 0.0; /* max |r| over finite r: exact, no rounding */
  for (size_t i = 0; i < n; i++)
    if (isfinite(r[i]) && fabs(r[i]) > M) M = fabs(r[i]);
  int bits = cap;
  for (size_t i = 0; i < n && bits > 0; i++) {
    double xi = x[i], ri = r[i];
    if (isnan(xi) || isnan(ri)) return 0;
    if (xi == ri) continue;
    if (!isfinite(xi) || !isfinite(ri)) return 0;
    long rel = LONG_MIN / 2, A = LONG_MIN / 2; /* -inf */
    double ax = fabs(xi), ar = fabs(ri);
    /* Sterbenz: same sign and r/2 <= x <= 2r make x - r exact.  (2|.| is
     * exact or overflows to inf, which keeps the comparison right.) */
    if (ri != 0.0 && signbit(xi) == signbit(ri) && ax <= 2.0 * ar && ar <= 2.0 * ax) {
      orc_mag dm = mag_of_double(xi - ri);
      rel = flog2_ratio(mag_of_double(ri), dm);
      if (M != 0.0) A = flog2_ratio(mag_of_double(M), dm) - ORACLE_TAU_BITS;
    } else {
      mpfr_set_d(mx, xi, MPFR_RNDN);
      mpfr_set_d(mr, ri, MPFR_RNDN);
      mpfr_sub(d, mx, mr, MPFR_RNDN); /* exact at EXACT_DIFF_PREC */
      if (ri != 0.0) rel = flog2_ratio_mp(ri, d, s, am);
      if (M != 0.0) A = flog2_ratio_mp(M, d, s, am) - ORACLE_TAU_BITS;
    }
    int b = clamp_bits(rel > A ? rel : A, cap);
    if (b < bits) bits = b;
  }
  return bits;
}

/* The outputs' layout: Hk does not enter it (a grouped run and its
 * repeat-interleaved equivalent are comparable). */
static int same_output_shape(const gdn_shape *a, const gdn_shape *b) {
  return a->B == b->B && a->T == b->T && a->Hv == b->Hv && a->Dk == b->Dk && a->Dv == b->Dv;
}

int oracle_bits_agreed(const gdn_outputs *x, const gdn_outputs *r, int cap_bits) {
  if (!x || !r || cap_bits < 0 || !x->o || !x->ht || !r->o || !r->ht ||
      !same_output_shape(&x->shape, &r->shape))
    return -1;
  mpfr_t mx, mr, d, s, am;
  mpfr_init2(mx, 53);
  mpfr_init2(mr, 53);
  mpfr_init2(am, 53);
  mpfr_init2(d, EXACT_DIFF_PREC);
  mpfr_init2(s, EXACT_DIFF_PREC);
  int bo = tensor_bits(x->o, r->o, gdn_shape_numel_v(&x->shape), cap_bits, mx, mr, d, s, am);
  int bh = tensor_bits(x->ht, r->ht, gdn_shape_numel_state(&x->shape), cap_bits, mx, mr, d, s, am);
  mpfr_clear(mx);
  mpfr_clear(mr);
  mpfr_clear(am);
  mpfr_clear(d);
  mpfr_clear(s);
  return bo < bh ? bo : bh;
}
