/* The double-word token recurrence for one work item (b, j, column block).
 *
 * Each loop over the block's columns is an `omp simd` loop: its iterations
 * are independent columns, every operation in it is a correctly rounded
 * binary64 operation (oracle_dd_arith.h), so a vector lane computes exactly
 * what a scalar iteration would -- the block and the vector width never
 * change a bit.  The reduction over the state rows (the dots kv and o) is
 * the outer loop, left to right from row 0, as in the MPFR token form.
 *
 * Memory traffic per token: two passes over the block's state (16 bytes a
 * word pair, read and written), the row vectors K and Q broadcast, the
 * per-column accumulators (a few KB) staying in L1.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <gmp.h>

#include "gdn_alloc.h"
#include "oracle_dd_arith.h"
#include "oracle_dd_rows.h"
#include "oracle_internal.h"

enum { DD_PREP = 5, DD_SCALARS = 2 };

void orc_ddw_init(orc_ddw *w) {
  w->buf = NULL;
  w->hh = w->hl = w->Kh = w->Kl = w->Qh = w->Ql = NULL;
  w->xh = w->xl = w->oh = w->ol = w->v = NULL;
  w->E = w->s2 = w->sa = w->sS = w->n2 = w->qa = w->sO = w->bo = NULL;
  w->knorm = w->qnorm = 0;
  w->ah = w->al = w->beta = w->sh = w->sl = 0;
  w->Dk = w->ncmax = 0;
  w->b = w->j = w->kh = w->c0 = w->nc = 0;
  orc_vars_init(&w->mp);
  w->A = w->tmp = NULL;
}

int orc_ddw_alloc(orc_ddw *w, int64_t Dk, int64_t ncmax, gdn_error *e) {
  orc_ddw_clear(w);
  size_t n = (size_t)(2 * Dk * ncmax + 4 * Dk + 13 * ncmax);
  w->buf = gdn_calloc(n, sizeof(double), "oracle dd workspace", e);
  if (!w->buf) return e ? e->code : GDN_ERR_NOMEM;
  /* the buffer carved in this order: the state, the key and query rows,
   * then the column vectors (values and the bound's sums) */
  double *p = w->buf;
  double **state[] = {&w->hh, &w->hl}, **rows[] = {&w->Kh, &w->Kl, &w->Qh, &w->Ql};
  double **cols[] = {&w->xh, &w->xl, &w->oh, &w->ol, &w->v,  &w->E,  &w->s2,
                     &w->sa, &w->sS, &w->n2, &w->qa, &w->sO, &w->bo};
  for (size_t k = 0; k < sizeof state / sizeof state[0]; k++) *state[k] = p, p += Dk * ncmax;
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) *rows[k] = p, p += Dk;
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) *cols[k] = p, p += ncmax;
  int rc = orc_vars_alloc(&w->mp, DD_SCALARS + DD_PREP, ORACLE_DD_PREP_PREC,
                          "oracle dd preparation", e);
  if (rc) {
    gdn_free(w->buf);
    orc_ddw_init(w);
    return rc;
  }
  w->Dk = Dk;
  w->ncmax = ncmax;
  w->A = w->mp.v[0];
  w->tmp = w->mp.v[1];
  return GDN_OK;
}

void orc_ddw_clear(orc_ddw *w) {
  gdn_free(w->buf);
  orc_vars_clear(&w->mp);
  orc_ddw_init(w);
}

void orc_dd_of_mpfr(mpfr_srcptr x, mpfr_ptr tmp, double *hi, double *lo) {
  double h = mpfr_get_d(x, MPFR_RNDN);
  if (!isfinite(h)) {
    *hi = h, *lo = 0;
    return;
  }
  mpfr_sub_d(tmp, x, h, MPFR_RNDN); /* exact: a multiple of ulp(x) below ulp_53(x) */
  orc_dd r = orc_dd_fast_two_sum(h, mpfr_get_d(tmp, MPFR_RNDN));
  *hi = r.hi, *lo = r.lo;
}

void orc_ddw_begin(orc_ddw *w, const gdn_inputs *in, int64_t b, int64_t j, int64_t c0, int64_t nc) {
  const gdn_shape *s = &in->shape;
  w->b = b, w->j = j, w->kh = gdn_inputs_key_head(in, j), w->c0 = c0, w->nc = nc;
  orc_prep_setup(&w->prep, in, w->mp.v + (w->mp.n - DD_PREP));
  orc_dd_of_mpfr(w->prep.scale, w->tmp, &w->sh, &w->sl);
  const float *h0 = gdn_inputs_h0(in, b, j);
  for (int64_t c = 0; c < nc; c++) w->E[c] = 0.0; /* h0 is exact */
  for (int64_t i = 0; i < w->Dk; i++)
    for (int64_t c = 0; c < nc; c++) {
      w->hh[i * nc + c] = h0 ? (double)h0[i * s->Dv + c0 + c] : 0.0;
      w->hl[i * nc + c] = 0.0;
    }
}

/* sum_i x_i^2 exactly: x = m 2^e with m < 2^24 an integer and e >= -149,
 * so x^2 = m^2 2^(2e) is an integer multiple of 2^-298 below 2^256; the
 * sum is accumulated as such an integer in SQ_LIMBS 64-bit limbs (least
 * significant first), 86 bits of headroom for carries.  Returns the
 * number of limbs in use. */
enum { SQ_LIMBS = 10, SQ_SHIFT = 298 };
_Static_assert(sizeof(mp_limb_t) == sizeof(uint64_t) && GMP_NAIL_BITS == 0,
               "the exact sum of squares assumes 64-bit GMP limbs without nails");

static mp_size_t sum_squares(const float *x, int64_t n, mp_limb_t acc[SQ_LIMBS]) {
  for (int q = 0; q < SQ_LIMBS; q++) acc[q] = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], sizeof u);
    uint32_t ef = (u >> 23) & 0xffu, mf = u & 0x7fffffu;
    if (ef == 0 && mf == 0) continue;
    uint64_t m = ef ? (mf | 0x800000u) : mf;
    int k = 2 * (ef ? (int)ef - 150 : -149) + SQ_SHIFT; /* >= 0 (inputs are finite) */
    unsigned __int128 v = (unsigned __int128)(m * m) << (k & 63);
    int l = k >> 6;
    uint64_t lo = (uint64_t)v, carry = (uint64_t)(v >> 64);
    acc[l] += lo;
    carry += acc[l] < lo; /* carry < 2^47 + 1: no overflow */
    for (int q = l + 1; carry && q < SQ_LIMBS; q++) {
      acc[q] += carry;
      carry = acc[q] < carry;
    }
  }
  mp_size_t used = SQ_LIMBS;
  while (used > 0 && acc[used - 1] == 0) used--;
  return used;
}

/* An upper bound on ||X||_2 of a prepared row: the hi words' sum of
 * squares, rounded n times (relative error < n 2^-53), with room for the
 * lo words (2^-52) and the square root's rounding. */
static double row_norm(const double *Xh, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s = fma(Xh[i], Xh[i], s);
  return sqrt(s * (1.0 + (double)(n + 4) * 0x1p-52)) * (1.0 + 0x1p-51);
}

/* K (is_q == 0) or Q as double-word from the float row x. */
static void prep_row(orc_ddw *w, const float *x, double *restrict Xh, double *restrict Xl, int is_q) {
  const int64_t Dk = w->Dk;
  orc_dd r;
  if (w->prep.l2norm) {
    /* r = (ss + eps)^-1/2 (times scale for q): ss exact, then three
     * 128-bit roundings, then to double-word (u^2). */
    mp_limb_t acc[SQ_LIMBS];
    mp_size_t used = sum_squares(x, Dk, acc);
    mpz_t z;
    mpfr_ptr ss = w->prep.ss, inv = w->prep.inv;
    mpfr_set_z_2exp(ss, mpz_roinit_n(z, acc, used), -SQ_SHIFT, MPFR_RNDN);
    mpfr_add(ss, ss, w->prep.eps, MPFR_RNDN);
    mpfr_rec_sqrt(inv, ss, MPFR_RNDN);
    if (is_q) mpfr_mul(inv, inv, w->prep.scale, MPFR_RNDN);
    orc_dd_of_mpfr(inv, w->tmp, &r.hi, &r.lo);
  } else if (is_q) {
    r = (orc_dd){w->sh, w->sl};
  } else {
    for (int64_t i = 0; i < Dk; i++) Xh[i] = (double)x[i], Xl[i] = 0.0; /* exact */
    return;
  }
  /* X_i = r x_i: DWTimesFP3, 2u^2 (exact when r is a binary64). */
#pragma omp simd
  for (int64_t i = 0; i < Dk; i++) {
    orc_dd p = orc_dd_mul_d(r, (double)x[i]);
    Xh[i] = p.hi, Xl[i] = p.lo;
  }
}

/* Constants of the running bound (u = 2^-53, u2 = u^2).  EPS_KQ bounds the
 * relative error of each prepared K_i, Q_i (3u^2 + 2^-124: the 128-bit
 * roundings, the double-word rounding of the factor, DWTimesFP3); EPS_A
 * that of a (u^2 + 2^-128).  SAFE (1 + 2^-7) covers what the bound leaves
 * out: the roundings of the bound's own binary64 arithmetic (a relative
 * 2^-30 at most for sums of up to 2^20 terms), hi words standing for
 * double-word values (2^-53), and the second-order terms (u^4). */
#define DD_U2 0x1p-106
#define EPS_KQ (3 * DD_U2 + 0x1p-124)
#define EPS_A (DD_U2 + 0x1p-128)
#define SAFE (1.0 + 0x1p-7)
/* Subnormal results: every double-word operation may then err by up to
 * ~2^-1074 absolutely; a column-token takes fewer than 16 Dk of them. */
#define DD_TINY 0x1p-1070

/* The token's operands in double words: the decay a (its exp in MPFR,
 * rounded once), K and Q prepared (prep_row), their norms, beta and the
 * columns' v.  Returns 1 when a is not finite. */
static int ddw_token_load(orc_ddw *w, const gdn_inputs *in, int64_t t) {
  const int64_t Dk = w->Dk, nc = w->nc, b = w->b, j = w->j;

  /* Packed documents, as the MPFR token step (oracle_token.c): padding has
   * k = v = 0 and a = exp(0) = 1; a reset has a = 0 (exact in dd, and the
   * bound's rho = 0: the zero state carries no error). */
  const int kind = gdn_inputs_token_kind(in, b, t);
  mpfr_set_flt(w->A, kind == GDN_TOKEN_PAD ? 0.0f : gdn_inputs_g(in, b, t, j), MPFR_RNDN);
  mpfr_exp(w->A, w->A, MPFR_RNDN);
  if (kind == GDN_TOKEN_RESET) mpfr_set_zero(w->A, 1);
  orc_dd_of_mpfr(w->A, w->tmp, &w->ah, &w->al);
  if (!isfinite(w->ah)) return 1;
  if (kind == GDN_TOKEN_PAD)
    for (int64_t i = 0; i < Dk; i++) w->Kh[i] = w->Kl[i] = 0.0;
  else
    prep_row(w, gdn_inputs_k(in, b, t, w->kh), w->Kh, w->Kl, 0);
  prep_row(w, gdn_inputs_q(in, b, t, w->kh), w->Qh, w->Ql, 1);
  w->knorm = row_norm(w->Kh, Dk) * (1.0 + EPS_KQ);
  w->qnorm = row_norm(w->Qh, Dk) * (1.0 + EPS_KQ);
  w->beta = (double)gdn_inputs_beta(in, b, t, j);
  const float *vrow = gdn_inputs_v(in, b, t, j) + w->c0;
  for (int64_t c = 0; c < nc; c++) w->v[c] = kind == GDN_TOKEN_PAD ? 0.0 : (double)vrow[c];

  return 0;
}

/* One row's term of x = h^T k with the bound's three sums riding along
 * (binary64, hi words): n2 += h^2, ab += |h| |k|, and from the second row
 * on sx += |x| (pass 1: kv with s2, sa, sS; pass 2: o with n2, qa, sO). */
static inline void ddw_row_dot_bound(const double *restrict rh, const double *restrict rl, orc_dd k, int first,
                                     double *restrict xh, double *restrict xl, double *restrict n2,
                                     double *restrict ab, double *restrict sx, int64_t nc) {
  const double ak = fabs(k.hi);
  if (first) {
#pragma omp simd
    for (int64_t c = 0; c < nc; c++) {
      orc_dd p = orc_dd_mul((orc_dd){rh[c], rl[c]}, k);
      xh[c] = p.hi, xl[c] = p.lo;
      n2[c] = rh[c] * rh[c];
      ab[c] = fabs(rh[c]) * ak;
    }
  } else {
#pragma omp simd
    for (int64_t c = 0; c < nc; c++) {
      orc_dd x = orc_dd_add((orc_dd){xh[c], xl[c]}, orc_dd_mul((orc_dd){rh[c], rl[c]}, k));
      xh[c] = x.hi, xl[c] = x.lo;
      n2[c] = fma(rh[c], rh[c], n2[c]);
      ab[c] = fma(fabs(rh[c]), ak, ab[c]);
      sx[c] += fabs(x.hi);
    }
  }
}

/* Pass 1 and delta: h *= a, kv = h^T K, delta = beta (v - kv); the bound's
 * sums s2, sa, sS ride along. */
static void ddw_pass_kv(orc_ddw *w) {
  const int64_t Dk = w->Dk, nc = w->nc;
  double *restrict hh = w->hh, *restrict hl = w->hl;
  double *restrict xh = w->xh, *restrict xl = w->xl;
  double *restrict s2 = w->s2, *restrict sa = w->sa, *restrict sS = w->sS;
  const double *restrict v = w->v;
  const orc_dd a = {w->ah, w->al};
  const double beta = w->beta;
  /* Pass 1: h *= a and kv = h^T K, one row at a time, as two loops over
   * the row (oracle_dd_rows.h says why); the split changes no operation
   * and no order per column. */
  for (int64_t i = 0; i < Dk; i++) {
    double *restrict rh = hh + i * nc, *restrict rl = hl + i * nc;
    orc_dd_rows_scale(rh, rl, a, nc);
    ddw_row_dot_bound(rh, rl, (orc_dd){w->Kh[i], w->Kl[i]}, i == 0, xh, xl, s2, sa, sS, nc);
  }
  /* delta = beta (v - kv).  The bound's kv error goes to sS (now the whole
   * bound on |kv computed - K^T h' computed|, before the factor beta). */
#pragma omp simd
  for (int64_t c = 0; c < nc; c++) {
    orc_dd d = orc_dd_mul_d(orc_dd_add_d(orc_dd_neg((orc_dd){xh[c], xl[c]}), v[c]), beta);
    xh[c] = d.hi, xl[c] = d.lo;
    sS[c] = (EPS_KQ + 4 * DD_U2) * sa[c] + 3 * DD_U2 * sS[c];
  }
}

/* Pass 2: h += K delta^T and o = h^T Q; the bound's sums n2, qa, sO ride
 * along. */
static void ddw_pass_o(orc_ddw *w) {
  const int64_t Dk = w->Dk, nc = w->nc;
  double *restrict hh = w->hh, *restrict hl = w->hl;
  const double *restrict xh = w->xh, *restrict xl = w->xl;
  double *restrict oh = w->oh, *restrict ol = w->ol;
  double *restrict n2 = w->n2, *restrict qa = w->qa, *restrict sO = w->sO;
  /* Pass 2: h += K delta^T, then o = h^T Q with the updated row (two
   * loops, as above). */
  for (int64_t i = 0; i < Dk; i++) {
    const orc_dd Ki = {w->Kh[i], w->Kl[i]};
    double *restrict rh = hh + i * nc, *restrict rl = hl + i * nc;
#pragma omp simd
    for (int64_t c = 0; c < nc; c++) {
      orc_dd h = orc_dd_add((orc_dd){rh[c], rl[c]}, orc_dd_mul(Ki, (orc_dd){xh[c], xl[c]}));
      rh[c] = h.hi, rl[c] = h.lo;
    }
    ddw_row_dot_bound(rh, rl, (orc_dd){w->Qh[i], w->Ql[i]}, i == 0, oh, ol, n2, qa, sO, nc);
  }
}

/* The running bound E and o's bound bo, per column. */
static void ddw_bound(orc_ddw *w) {
  const int64_t Dk = w->Dk, nc = w->nc;
  const double *restrict xh = w->xh, *restrict s2 = w->s2, *restrict sS = w->sS;
  const double *restrict n2 = w->n2, *restrict qa = w->qa, *restrict sO = w->sO;
  const double beta = w->beta;
  /* The bound (oracle.h): E' = rho E + l, with rho = a max(1, |1 - beta
   * ||K||^2|) the factor's 2-norm and l the step's local error
   *   m (EPS_A + 4u^2) ||h'|| + (EPS_KQ + 8u^2) ||K|| |delta|
   *     + beta ||K|| B_kv + 3u^2 ||h_new||,
   * B_kv (in sS) the kv bound; o's bound is ||Q|| E' + its own dot,
   * (EPS_KQ + 4u^2) sum |Q h_new| + 3u^2 (partial sums of o). */
  double kb = beta * w->knorm * w->knorm;
  const double m = kb <= 2.0 ? 1.0 : (kb - 1.0) * (1.0 + 0x1p-50);
  const double rho = w->ah * m * (1.0 + 0x1p-50), kn = w->knorm, qn = w->qnorm;
  const double tiny = 16.0 * (double)Dk * DD_TINY;
  double *restrict E = w->E, *restrict bo = w->bo;
#pragma omp simd
  for (int64_t c = 0; c < nc; c++) {
    double ad = fabs(xh[c]);
    double l = m * (EPS_A + 4 * DD_U2) * sqrt(s2[c]) + (EPS_KQ + 8 * DD_U2) * kn * ad +
               beta * kn * sS[c] + 3 * DD_U2 * sqrt(n2[c]);
    E[c] = rho * E[c] + SAFE * l + tiny;
    bo[c] = SAFE * (qn * E[c] + (EPS_KQ + 4 * DD_U2) * qa[c] + 3 * DD_U2 * sO[c]) + tiny;
  }
}

int orc_ddw_step(orc_ddw *w, const gdn_inputs *in, int64_t t) {
  if (ddw_token_load(w, in, t)) return 1;
  double *restrict s2 = w->s2, *restrict sa = w->sa, *restrict sS = w->sS;
  double *restrict n2 = w->n2, *restrict qa = w->qa, *restrict sO = w->sO;
  for (int64_t c = 0; c < w->nc; c++) s2[c] = sa[c] = sS[c] = n2[c] = qa[c] = sO[c] = 0.0;
  ddw_pass_kv(w);
  ddw_pass_o(w);
  ddw_bound(w);
  return 0;
}
