/* The exclusive-prefix schedules of kern_affine_prefix (kern_prefix.h).
 *
 * 1. Work and pairing, D = 1 .. 130 and a few larger D: the compositions and
 *    rounds each schedule reports equal the formulas
 *      sequential        D - 1 compositions, D - 1 rounds
 *      Hillis-Steele     sum_{k: 2^k < D} (D - 2^k), ceil(log2 D) rounds
 *      associative scan  2D - popcount(D) - 1 - floor(log2 D) compositions,
 *                        2L - 1 rounds if D's two leading bits are 10, else
 *                        2L (L = floor(log2 D))
 *    and the traced pairs are exactly the schedule's: for the associative
 *    scan, an independent transcription of JAX's recursive `_scan` (out of
 *    place, on index intervals, one round per non-empty combine call) must
 *    produce the same (earlier interval, later interval) combinations in the
 *    same rounds, and every schedule must end with position r holding the
 *    composition of exactly 0 .. r.
 * 2. In float64, on random contractive pairs, the three schedules agree with
 *    an exact-order long double left fold to round-off, broken_compose does
 *    not.
 * 3. In float64, the affine-prefix kernel agrees with the stock scan for
 *    every D = 1 .. 64 in every schedule (three shapes: padding, grouped
 *    heads, h0 / no h0, C = 1, 4, 16), and beyond (D = 100 .. 129, C = 1).
 *    Bound 1e-13 as test_agree_f64; measured < 2e-15.
 * 4. In float32 the schedules differ from each other by round-off only
 *    (<= 48 u32, the float32 bound of test_f32_vs_f64), and do differ
 *    (the order of composition is visible in the bits). */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "gdn_alloc.h"
#include "kern_prefix.h"
#include "kern_test_util.h"
#include "../check_runner.h"

#define MAXD 1100

/* ---- 1. counts and pairing ---- */

static int64_t ilog2(int64_t d) {
  int64_t l = 0;
  while ((d >> (l + 1)) > 0) l++;
  return l;
}
static int64_t popcount(int64_t d) {
  int64_t c = 0;
  for (; d; d &= d - 1) c++;
  return c;
}

typedef struct iv {
  int64_t lo, hi;
} iv;
typedef struct combo {
  int64_t round;
  iv e, l;
} combo;

/* JAX's _scan, transcribed: elems is a list of intervals; returns the scan.
 * Every combine call with at least one pair is one round. */
static int64_t jax_round;
static combo *jax_log;
static int64_t jax_n;
static void jax_combine(const iv *a, const iv *b, int64_t n, iv *out) {
  if (n == 0) return;
  jax_round++;
  for (int64_t i = 0; i < n; i++) {
    ck_assert(a[i].hi + 1 == b[i].lo);
    jax_log[jax_n].round = jax_round;
    jax_log[jax_n].e = a[i];
    jax_log[jax_n].l = b[i];
    jax_n++;
    out[i].lo = a[i].lo;
    out[i].hi = b[i].hi;
  }
}
static void jax_scan(const iv *elems, int64_t num, iv *res) {
  if (num < 2) {
    for (int64_t i = 0; i < num; i++) res[i] = elems[i];
    return;
  }
  /* reduced = combine(elems[0:-1:2], elems[1::2]) */
  int64_t nr = num / 2;
  iv *ea = malloc((size_t)nr * sizeof *ea), *eb = malloc((size_t)nr * sizeof *eb);
  iv *red = malloc((size_t)nr * sizeof *red), *odd = malloc((size_t)nr * sizeof *odd);
  for (int64_t i = 0; i < nr; i++) {
    ea[i] = elems[2 * i];
    eb[i] = elems[2 * i + 1];
  }
  jax_combine(ea, eb, nr, red);
  jax_scan(red, nr, odd);
  /* even = combine(odd[0:-1] or odd, elems[2::2]) */
  int64_t ne = (num - 1) / 2; /* len(elems[2::2]) */
  iv *even = malloc((size_t)(ne + 1) * sizeof *even), *x2 = malloc((size_t)(ne + 1) * sizeof *x2);
  for (int64_t i = 0; i < ne; i++) x2[i] = elems[2 + 2 * i];
  jax_combine(odd, x2, ne, even + 1); /* odd[0:ne]: all of odd for odd num, odd[0:-1] for even */
  even[0] = elems[0];
  for (int64_t i = 0; i <= ne; i++) res[2 * i] = even[i];
  for (int64_t i = 0; i < nr; i++) res[2 * i + 1] = odd[i];
  free(ea);
  free(eb);
  free(red);
  free(odd);
  free(even);
  free(x2);
}

/* Runs the kernel's prefix on D trivial pairs with a trace; converts the
 * trace to intervals (checking each composition joins adjacent ranges) and
 * checks the final prefix.  Returns the combos in *log. */
static void kernel_trace(kern_prefix sched, int64_t D, kern_prefix_stats *st, combo *log) {
  gdn_error e;
  gdn_error_init(&e);
  double *A = calloc((size_t)D, sizeof *A), *B = calloc((size_t)D, sizeof *B);
  size_t nw = kern_prefix_work_elems_f64(sched, D, 1, 1, KERN_MATMUL_IEEE);
  double *w = gdn_malloc(nw * sizeof *w, "work", &e);
  for (int64_t r = 0; r < D; r++) {
    A[r] = 0.5;
    B[r] = 1.0;
  }
  int64_t cap = 3 * (int64_t)D * 11; /* > D ceil(log2 D) for D <= 1100 */
  st->trace = malloc((size_t)(3 * cap) * sizeof(int64_t));
  st->trace_cap = cap;
  kern_prefix_inclusive_f64(sched, 0, KERN_MATMUL_IEEE, D, 1, 1, A, B, w, st);
  ck_assert(st->compositions <= cap);
  iv *cur = malloc((size_t)D * sizeof *cur);
  for (int64_t r = 0; r < D; r++) cur[r] = (iv){r, r};
  for (int64_t c = 0; c < st->compositions; c++) {
    int64_t rd = st->trace[3 * c], l = st->trace[3 * c + 1], ea = st->trace[3 * c + 2];
    ck_assert_msg(cur[ea].hi + 1 == cur[l].lo, "%s D=%ld: composition %ld joins [%ld,%ld] and "
                  "[%ld,%ld]", kern_prefix_name(sched), (long)D, (long)c, (long)cur[ea].lo,
                  (long)cur[ea].hi, (long)cur[l].lo, (long)cur[l].hi);
    log[c].round = rd;
    log[c].e = cur[ea];
    log[c].l = cur[l];
    cur[l].lo = cur[ea].lo;
  }
  for (int64_t r = 0; r < D; r++) ck_assert(cur[r].lo == 0 && cur[r].hi == r);
  free(cur);
  free(st->trace);
  st->trace = NULL;
  gdn_free(w);
  free(A);
  free(B);
}

static int combo_cmp(const void *x, const void *y) {
  const combo *a = x, *b = y;
  if (a->round != b->round) return a->round < b->round ? -1 : 1;
  if (a->l.lo != b->l.lo) return a->l.lo < b->l.lo ? -1 : 1;
  return a->e.lo < b->e.lo ? -1 : a->e.lo > b->e.lo;
}

static void check_counts(int64_t D) {
  combo *log = malloc((size_t)(33 * D + 8) * sizeof *log);
  kern_prefix_stats st = {0, 0, NULL, 0};
  /* sequential */
  kernel_trace(KERN_PREFIX_SEQUENTIAL, D, &st, log);
  ck_assert_int_eq(st.compositions, D - 1);
  ck_assert_int_eq(st.rounds, D - 1);
  for (int64_t c = 0; c < st.compositions; c++)
    ck_assert(log[c].round == c + 1 && log[c].l.hi == c + 1);
  /* Hillis-Steele */
  kernel_trace(KERN_PREFIX_HILLIS_STEELE, D, &st, log);
  int64_t want = 0, rounds = 0;
  for (int64_t s = 1; s < D; s *= 2) {
    want += D - s;
    rounds++;
  }
  ck_assert_int_eq(st.compositions, want);
  ck_assert_int_eq(st.rounds, rounds);
  ck_assert_int_eq(rounds, D > 1 ? ilog2(D - 1) + 1 : 0); /* ceil(log2 D) */
  for (int64_t c = 0; c < st.compositions; c++) { /* round k: r <- r - 2^(k-1) */
    int64_t s = (int64_t)1 << (log[c].round - 1);
    ck_assert(log[c].l.hi - s == log[c].e.hi && log[c].l.hi >= s);
  }
  /* associative scan: against JAX's recursion */
  kernel_trace(KERN_PREFIX_ASSOCIATIVE_SCAN, D, &st, log);
  int64_t L = ilog2(D);
  int64_t wantc = D == 0 ? 0 : 2 * D - popcount(D) - 1 - L;
  int64_t wantr = D < 2 ? 0 : 2 * L - (((D >> (L - 1)) & 1) == 0 ? 1 : 0);
  ck_assert_msg(st.compositions == wantc && st.rounds == wantr,
                "associative-scan D=%ld: %ld compositions, %ld rounds; formulas %ld, %ld",
                (long)D, (long)st.compositions, (long)st.rounds, (long)wantc, (long)wantr);
  iv *el = calloc((size_t)D, sizeof *el), *res = calloc((size_t)D, sizeof *res);
  for (int64_t r = 0; r < D; r++) el[r] = (iv){r, r};
  jax_log = malloc((size_t)(33 * D + 8) * sizeof *jax_log);
  jax_n = 0;
  jax_round = 0;
  jax_scan(el, D, res);
  for (int64_t r = 0; r < D; r++) ck_assert(res[r].lo == 0 && res[r].hi == r);
  ck_assert_int_eq(jax_n, st.compositions);
  ck_assert_int_eq(jax_round, st.rounds);
  qsort(jax_log, (size_t)jax_n, sizeof *jax_log, combo_cmp);
  qsort(log, (size_t)st.compositions, sizeof *log, combo_cmp);
  for (int64_t c = 0; c < jax_n; c++)
    ck_assert_msg(jax_log[c].round == log[c].round && jax_log[c].e.lo == log[c].e.lo &&
                      jax_log[c].e.hi == log[c].e.hi && jax_log[c].l.lo == log[c].l.lo &&
                      jax_log[c].l.hi == log[c].l.hi,
                  "associative-scan D=%ld: combination %ld differs from JAX's", (long)D, (long)c);
  free(jax_log);
  free(el);
  free(res);
  free(log);
}

START_TEST(counts_and_pairing) {
  for (int64_t D = 1; D <= 130; D++) check_counts(D);
  static const int64_t big[] = {255, 256, 257, 383, 384, 1000, 1024, 1025};
  for (int i = 0; i < 8; i++) check_counts(big[i]);
  /* the diagrams of kern_prefix.h */
  kern_prefix_stats st = {0, 0, NULL, 0};
  combo log[64];
  kernel_trace(KERN_PREFIX_ASSOCIATIVE_SCAN, 8, &st, log);
  ck_assert(st.compositions == 11 && st.rounds == 5);
  kernel_trace(KERN_PREFIX_ASSOCIATIVE_SCAN, 5, &st, log);
  ck_assert(st.compositions == 5 && st.rounds == 3);
  /* D = 5 round 3 (even step of level 0): x2 = x1.x2, x4 = x3.x4 */
  ck_assert(log[3].round == 3 && log[3].l.lo == 2 && log[3].e.hi == 1);
  ck_assert(log[4].round == 3 && log[4].l.lo == 4 && log[4].e.hi == 3);
}
END_TEST

/* ---- 2. random pairs in float64 ---- */

/* C = A2 A1, D = A2 B1 + B2 in long double */
static void ld_compose(int dk, int dv, const long double *A2, const long double *B2,
                       const long double *A1, const long double *B1, long double *A,
                       long double *B) {
  for (int i = 0; i < dk; i++) {
    for (int j = 0; j < dk; j++) {
      long double s = 0;
      for (int p = 0; p < dk; p++) s += A2[i * dk + p] * A1[p * dk + j];
      A[i * dk + j] = s;
    }
    for (int j = 0; j < dv; j++) {
      long double s = 0;
      for (int p = 0; p < dk; p++) s += A2[i * dk + p] * B1[p * dv + j];
      B[i * dv + j] = s + B2[i * dv + j];
    }
  }
}

START_TEST(random_pairs_f64) {
  enum { dk = 3, dv = 2 };
  gdn_error e;
  gdn_error_init(&e);
  uint64_t st = 99;
  static const int64_t Ds[] = {2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64, 100};
  for (int di = 0; di < 12; di++) {
    const int64_t D = Ds[di];
    double *A0 = malloc((size_t)(D * dk * dk) * sizeof(double)), *B0 = malloc((size_t)(D * dk * dv) * sizeof(double));
    for (int64_t x = 0; x < D * dk * dk; x++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      A0[x] = ((double)(st >> 11) / 9007199254740992.0 - 0.5) * 0.6; /* ||A|| < 1 */
    }
    for (int64_t x = 0; x < D * dk * dv; x++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      B0[x] = (double)(st >> 11) / 9007199254740992.0 - 0.5;
    }
    /* exact-order reference: left fold in long double */
    long double *RA = malloc((size_t)(D * dk * dk) * sizeof(long double));
    long double *RB = malloc((size_t)(D * dk * dv) * sizeof(long double));
    for (int64_t x = 0; x < dk * dk; x++) RA[x] = A0[x];
    for (int64_t x = 0; x < dk * dv; x++) RB[x] = B0[x];
    for (int64_t r = 1; r < D; r++) {
      long double a2[dk * dk], b2[dk * dv];
      for (int x = 0; x < dk * dk; x++) a2[x] = A0[r * dk * dk + x];
      for (int x = 0; x < dk * dv; x++) b2[x] = B0[r * dk * dv + x];
      ld_compose(dk, dv, a2, b2, RA + (r - 1) * dk * dk, RB + (r - 1) * dk * dv, RA + r * dk * dk,
                 RB + r * dk * dv);
    }
    for (int sc = 0; sc < 3; sc++)
      for (int broken = 0; broken < 2; broken++) {
        double *A = malloc((size_t)(D * dk * dk) * sizeof(double)), *B = malloc((size_t)(D * dk * dv) * sizeof(double));
        memcpy(A, A0, (size_t)(D * dk * dk) * sizeof(double));
        memcpy(B, B0, (size_t)(D * dk * dv) * sizeof(double));
        double *w = gdn_malloc(kern_prefix_work_elems_f64((kern_prefix)sc, D, dk, dv,
                                                          KERN_MATMUL_IEEE) * sizeof(double),
                               "w", &e);
        kern_prefix_inclusive_f64((kern_prefix)sc, broken, KERN_MATMUL_IEEE, D, dk, dv, A, B, w,
                                  NULL);
        double num = 0, den = 0;
        for (int64_t x = 0; x < D * dk * dk; x++) {
          num += (double)((A[x] - RA[x]) * (A[x] - RA[x]));
          den += (double)(RA[x] * RA[x]);
        }
        for (int64_t x = 0; x < D * dk * dv; x++) {
          num += (double)((B[x] - RB[x]) * (B[x] - RB[x]));
          den += (double)(RB[x] * RB[x]);
        }
        double rel = sqrt(num / den);
        if (!broken)
          ck_assert_msg(rel <= 1e-14, "%s D=%ld: %.3g", kern_prefix_name((kern_prefix)sc),
                        (long)D, rel);
        else if (D >= 3)
          ck_assert_msg(rel >= 1e-2, "%s D=%ld broken: only %.3g",
                        kern_prefix_name((kern_prefix)sc), (long)D, rel);
        gdn_free(w);
        free(A);
        free(B);
      }
    free(A0);
    free(B0);
    free(RA);
    free(RB);
  }
}
END_TEST

/* ---- 3. the kernel, float64, every D ---- */

#define BOUND64 1e-13

static double worst64;

static void kernel_every_d(gdn_shape s, int64_t C, int h0, int l2norm, int64_t Dlo,
                           int64_t Dhi) {
  gdn_inputs in = kt_inputs(s, 41 + (uint64_t)C, h0, l2norm, 0.05f);
  gdn_outputs scan = kt_outputs(), aff = kt_outputs();
  kern_config c = kt_cfg(GDN_DTYPE_F64, C, 1);
  kt_run_ok(K_SCAN, &in, &c, &scan);
  ck_assert(gdn_shape_chunks(&s, C) >= Dhi);
  kern_affine_seams sm;
  kern_affine_seams_init(&sm);
  for (int64_t D = Dlo; D <= Dhi; D++)
    for (int sc = 0; sc < 3; sc++) {
      c = kt_cfg(GDN_DTYPE_F64, C, D);
      c.prefix = (kern_prefix)sc;
      gdn_error e;
      gdn_error_init(&e);
      ck_assert_int_eq(kern_affine_prefix_seams(&in, &c, &aff, &sm, &e), GDN_OK);
      double ro = kt_rel_o(&aff, &scan), rh = kt_rel_ht(&aff, &scan);
      ck_assert_msg(ro <= BOUND64 && rh <= BOUND64, "%s C=%ld D=%ld: o %.3g ht %.3g",
                    kern_prefix_name((kern_prefix)sc), (long)C, (long)D, ro, rh);
      worst64 = fmax(worst64, fmax(ro, rh));
      int64_t want = sc == 0 ? D - 1 : 0;
      if (sc == 1) want = 2 * D - popcount(D) - 1 - ilog2(D);
      if (sc == 2)
        for (int64_t st = 1; st < D; st *= 2) want += D - st;
      ck_assert_int_eq(sm.prefix_compositions, want);
    }
  kern_affine_seams_clear(&sm);
  gdn_outputs_clear(&scan);
  gdn_outputs_clear(&aff);
  gdn_inputs_clear(&in);
}

/* C = 4, T = 254 pads to 64 chunks; grouped heads (Hk = 1, Hv = 2), h0, L2 norm */
START_TEST(kernel_f64_c4) { kernel_every_d((gdn_shape){1, 254, 1, 2, 4, 3}, 4, 1, 1, 1, 64); }
END_TEST
/* C = 1, B = 2, Hk = 2, Hv = 4, no h0, prenormalised; and D beyond 64 */
START_TEST(kernel_f64_c1) {
  kernel_every_d((gdn_shape){2, 70, 2, 4, 3, 5}, 1, 0, 0, 1, 64);
  kernel_every_d((gdn_shape){1, 129, 1, 1, 2, 2}, 1, 1, 1, 100, 129);
  fprintf(stderr, "prefix float64: worst disagreement with the scan %.3g (bound %.0e)\n", worst64,
          BOUND64);
}
END_TEST
/* C = 16, T = 1030: 65 chunks, the last padded; Dk = Dv = 8 */
START_TEST(kernel_f64_c16) { kernel_every_d((gdn_shape){1, 1030, 1, 1, 8, 8}, 16, 1, 1, 1, 64); }
END_TEST

/* ---- 4. float32: round-off only, but visible ---- */
#define U32 5.9604644775390625e-08
START_TEST(schedules_f32) {
  gdn_inputs in = kt_inputs((gdn_shape){1, 1024, 1, 2, 16, 16}, 17, 1, 1, 0.002f);
  gdn_outputs ref, x[3];
  gdn_outputs_init(&ref);
  for (int i = 0; i < 3; i++) gdn_outputs_init(&x[i]);
  kern_config c = kt_cfg(GDN_DTYPE_F64, 16, 1);
  kt_run_ok(K_SCAN, &in, &c, &ref);
  static const int64_t Ds[] = {3, 5, 8, 13, 16, 31, 32, 33, 64};
  int distinct = 0;
  double worst = 0;
  for (int di = 0; di < 9; di++) {
    for (int sc = 0; sc < 3; sc++) {
      c = kt_cfg(GDN_DTYPE_F32, 16, Ds[di]);
      c.prefix = (kern_prefix)sc;
      kt_run_ok(K_AFFINE, &in, &c, &x[sc]);
      double ro = kt_rel_o(&x[sc], &ref), rh = kt_rel_ht(&x[sc], &ref);
      ck_assert_msg(ro <= 48 * U32 && rh <= 48 * U32, "%s D=%ld: o %.3g ht %.3g",
                    kern_prefix_name((kern_prefix)sc), (long)Ds[di], ro, rh);
      worst = fmax(worst, fmax(ro, rh));
    }
    for (int a = 0; a < 3; a++)
      for (int b = a + 1; b < 3; b++) {
        double d = fmax(kt_rel_o(&x[a], &x[b]), kt_rel_ht(&x[a], &x[b]));
        ck_assert(d <= 48 * U32);
        distinct += d > 0;
      }
  }
  fprintf(stderr, "prefix float32: worst vs float64 scan %.2f u32; %d of 27 schedule pairs differ "
          "in the bits\n", worst / U32, distinct);
  ck_assert(distinct > 0);
  gdn_outputs_clear(&ref);
  for (int i = 0; i < 3; i++) gdn_outputs_clear(&x[i]);
  gdn_inputs_clear(&in);
}
END_TEST

CKR_MAIN("prefix", "prefix", 240, counts_and_pairing, random_pairs_f64, kernel_f64_c4, kernel_f64_c1, kernel_f64_c16,
    schedules_f32)
