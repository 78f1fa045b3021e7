/* The dd tier of oracle_vjp: one work item's state and steps in double-word
 * arithmetic (oracle_vjp.h; the layout in oracle_vjp_internal.h).  The
 * per-column arithmetic runs as `omp simd` loops over the columns, each
 * column getting the scalar sequence of operations oracle_vjp.h gives
 * whatever the vector width (every operation is a correctly rounded
 * binary64 one, oracle_dd_arith.h).  The sums over columns (dQ, dK, dg,
 * dbeta) are taken afterwards from per-(i, c) terms, column after column,
 * in the order the header states. */
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "oracle_dd_arith.h"
#include "oracle_dd_rows.h"
#include "oracle_vjp_internal.h"




void orc_vdd_init(orc_vdd *w) {
  memset(w, 0, sizeof *w);
  orc_vars_init(&w->mp);
}

void orc_vdd_clear(orc_vdd *w) {
  gdn_free(w->buf);
  orc_vars_clear(&w->mp);
  orc_vdd_init(w);
}

int orc_vdd_alloc(orc_vdd *w, const gdn_shape *s, int64_t K, int64_t ns, gdn_error *e) {
  orc_vdd_clear(w);
  const int64_t G = s->Hv / s->Hk, Dk = s->Dk, Dv = s->Dv, nck = (s->T + K - 1) / K;
  const size_t st = (size_t)(G * Dk * Dv), kd = (size_t)(Dk * Dv);
  const size_t nd = 2 * st * (size_t)(2 + nck + K) + 8 * kd + 12 * (size_t)Dv + (size_t)G;
  const size_t nq = (size_t)(7 * Dk + G * Dv + 5 * G);
  w->buf = gdn_calloc(nd + 2 * nq, sizeof(double), "oracle_vjp_dd workspace", e);
  if (!w->buf) return e ? e->code : GDN_ERR_NOMEM;
  int rc = orc_vars_alloc(&w->mp, (size_t)(VDD_MP + 2 * Dk), ORACLE_DD_PREP_PREC,
                          "oracle_vjp_dd preparation", e);
  if (rc) {
    orc_vdd_clear(w);
    return rc;
  }
  double *x = w->buf;
  w->Dk = Dk, w->Dv = Dv, w->G = G, w->K = K, w->nck = nck, w->ns = ns, w->st = st, w->kd = kd;
  w->h = x, x += 2 * st;
  w->S = x, x += 2 * st;
  w->ck = x, x += 2 * st * (size_t)nck;
  w->seg = x, x += 2 * st * (size_t)K;
  double **t4[] = {&w->tQ, &w->t1, &w->t2, &w->tg};
  for (int i = 0; i < 4; i++) *t4[i] = x, x += 2 * kd;
  w->cv = x, x += 12 * (size_t)Dv;
  w->beta = x, x += G;
  orc_dd *q = (orc_dd *)x;
  orc_dd **dk[] = {&w->Kp, &w->Qp, &w->dK, &w->dQ, &w->sK, &w->sQ, &w->row};
  for (size_t i = 0; i < sizeof dk / sizeof dk[0]; i++) *dk[i] = q, q += Dk;
  w->dv = q, q += G * Dv;
  orc_dd **g5[] = {&w->dg, &w->db, &w->sg, &w->sb, &w->a};
  for (int i = 0; i < 5; i++) *g5[i] = q, q += G;
  w->Km = w->mp.v + VDD_MP;
  w->Qm = w->Km + Dk;
  return GDN_OK;
}

/* Column vectors (Dv each): 0, 1 kv (hi, lo); 2, 3 vm; 4, 5 delta; 6, 7 dd;
 * 8, 9 e; 10 v; 11 do. */
static inline double *cvec(const orc_vdd *w, int k) { return w->cv + (size_t)k * (size_t)w->Dv; }

static orc_dd dd_of(orc_vdd *w, mpfr_srcptr x) {
  orc_dd r;
  orc_dd_of_mpfr(x, w->mp.v[5], &r.hi, &r.lo);
  return r;
}

/* K (and r, 1/ss of k) for token t; Q too when with_q. */
void orc_vdd_prep_token(orc_vdd *w, const gdn_inputs *in, int64_t t, int with_q) {
  mpfr_ptr tmp = w->mp.v[6];
  for (int q = 0; q < 1 + with_q; q++) {
    mpfr_t *X = q ? w->Qm : w->Km;
    orc_prep_row(&w->prep, q ? gdn_inputs_q(in, w->b, t, w->kh) : gdn_inputs_k(in, w->b, t, w->kh), X, q);
    orc_dd *D = q ? w->Qp : w->Kp;
    for (int64_t i = 0; i < w->Dk; i++) D[i] = dd_of(w, X[i]);
    mpfr_ui_div(tmp, 1, w->prep.ss, MPFR_RNDN);
    if (q) w->rq = dd_of(w, w->prep.inv), w->iq = dd_of(w, tmp);
    else w->rk = dd_of(w, w->prep.inv), w->ik = dd_of(w, tmp);
  }
}

static int gates(orc_vdd *w, const gdn_inputs *in, int64_t t) {
  mpfr_ptr A = w->mp.v[7];
  for (int64_t jj = 0; jj < w->G; jj++) {
    const int64_t j = w->kh * w->G + jj;
    mpfr_set_flt(A, gdn_inputs_g(in, w->b, t, j), MPFR_RNDN);
    mpfr_exp(A, A, MPFR_RNDN);
    w->a[jj] = dd_of(w, A);
    if (!isfinite(w->a[jj].hi)) return 0;
    w->beta[jj] = gdn_inputs_beta(in, w->b, t, j);
  }
  return 1;
}

/* Value head jj of the set X: h = a h in place (h' of the header) and
 * kv = h'^T K into column vector 0; then vm = v - kv (vector 1) and
 * delta = beta vm (vector 2).  v is loaded into vector 10. */
static void decay_dot(orc_vdd *w, const gdn_inputs *in, int64_t t, double *X, int64_t jj) {
  const int64_t Dv = w->Dv;
  const orc_dd a = w->a[jj];
  const double beta = w->beta[jj];
  double *restrict kh = cvec(w, 0), *restrict kl = cvec(w, 1), *restrict vv = cvec(w, 10);
  double *restrict mh = cvec(w, 2), *restrict ml = cvec(w, 3), *restrict eh = cvec(w, 4),
                   *restrict el = cvec(w, 5);
  const float *v = gdn_inputs_v(in, w->b, t, w->kh * w->G + jj);
  for (int64_t c = 0; c < Dv; c++) vv[c] = (double)v[c];
  for (int64_t i = 0; i < w->Dk; i++) {
    double *restrict rh = X + (size_t)((jj * w->Dk + i) * Dv), *restrict rl = rh + w->st;
    orc_dd_rows_scale(rh, rl, a, Dv);
    orc_dd_rows_dot(rh, rl, w->Kp[i], i == 0, kh, kl, Dv);
  }
#pragma omp simd
  for (int64_t c = 0; c < Dv; c++) {
    orc_dd m = orc_dd_add_d(orc_dd_neg((orc_dd){kh[c], kl[c]}), vv[c]);
    orc_dd d = orc_dd_mul_d(m, beta);
    mh[c] = m.hi, ml[c] = m.lo, eh[c] = d.hi, el[c] = d.lo;
  }
}

static void fstep(orc_vdd *w, const gdn_inputs *in, int64_t t, double *X) {
  const int64_t Dv = w->Dv;
  for (int64_t jj = 0; jj < w->G; jj++) {
    decay_dot(w, in, t, X, jj);
    const double *restrict dh = cvec(w, 4), *restrict dl = cvec(w, 5);
    for (int64_t i = 0; i < w->Dk; i++) {
      double *restrict rh = X + (size_t)((jj * w->Dk + i) * Dv), *restrict rl = rh + w->st;
      const orc_dd Ki = w->Kp[i];
#pragma omp simd
      for (int64_t c = 0; c < Dv; c++) {
        orc_dd h = orc_dd_add((orc_dd){rh[c], rl[c]}, orc_dd_mul(Ki, (orc_dd){dh[c], dl[c]}));
        rh[c] = h.hi, rl[c] = h.lo;
      }
    }
  }
}

static void copy_set(orc_vdd *w, double *dst, const double *src) { memcpy(dst, src, 2 * w->st * sizeof(double)); }

/* First sweep; 0 on overflow (then *bad_t is the token). */
int orc_vdd_begin(orc_vdd *w, const gdn_inputs *in, const gdn_cotangents *ct, int64_t b, int64_t kh,
                     int64_t *bad_t) {
  const gdn_shape *s = &in->shape;
  w->b = b, w->kh = kh;
  orc_prep_setup(&w->prep, in, w->mp.v);
  w->scale = dd_of(w, w->prep.scale);
  memset(w->h, 0, 4 * w->st * sizeof(double)); /* h and S, hi and lo */
  for (int64_t jj = 0; jj < w->G; jj++) {
    const float *h0 = gdn_inputs_h0(in, b, kh * w->G + jj);
    const float *dht = ct->dht ? ct->dht + (b * s->Hv + kh * w->G + jj) * s->Dk * s->Dv : NULL;
    for (int64_t x = 0; x < s->Dk * s->Dv; x++) { /* (i, c) row-major, as h0 */
      if (h0) w->h[jj * (int64_t)w->kd + x] = h0[x];
      if (dht) w->S[jj * (int64_t)w->kd + x] = dht[x];
    }
  }
  for (int64_t t = 0; t < s->T; t++) {
    if (t % w->K == 0) copy_set(w, w->ck + 2 * w->st * (size_t)(t / w->K), w->h);
    orc_vdd_prep_token(w, in, t, 0);
    if (!gates(w, in, t)) return *bad_t = t, 0;
    fstep(w, in, t, w->h);
  }
  return 1;
}

void orc_vdd_segment(orc_vdd *w, const gdn_inputs *in, int64_t m) {
  const int64_t t0 = m * w->K, n = in->shape.T - t0 < w->K ? in->shape.T - t0 : w->K;
  copy_set(w, w->seg, w->ck + 2 * w->st * (size_t)m);
  for (int64_t i = 0; i + 1 < n; i++) {
    double *nx = w->seg + 2 * w->st * (size_t)(i + 1);
    copy_set(w, nx, w->seg + 2 * w->st * (size_t)i);
    orc_vdd_prep_token(w, in, t0 + i, 0);
    gates(w, in, t0 + i); /* finite: the first sweep checked */
    fstep(w, in, t0 + i, nx);
  }
}

static struct {
  int64_t b, kh, jj, col, t;
  double rel;
} plant = {0, 0, 0, -1, 0, 0.0};

void oracle_vjp_dd_test_plant(int64_t b, int64_t kh, int64_t jj, int64_t col, int64_t t, double rel) {
  plant.b = b, plant.kh = kh, plant.jj = jj, plant.col = col, plant.t = t, plant.rel = rel;
}

static void maybe_plant(orc_vdd *w, int64_t t) {
  if (plant.col < 0 || w->b != plant.b || w->kh != plant.kh || t != plant.t) return;
  double *xh = w->S + (size_t)(plant.jj * w->Dk * w->Dv + plant.col), *xl = xh + w->st;
  orc_dd x = orc_dd_add_d((orc_dd){*xh, *xl}, plant.rel * *xh);
  *xh = x.hi, *xl = x.lo;
}

/* Passes B and C of value head jj (oracle_vjp.h's per-column steps), the
 * terms of the sums over columns left in tQ, t1, t2, tg and the columns'
 * dd in vectors 6, 7; h' is the set P (decay_dot ran on it). */
static void rhead(orc_vdd *w, const gdn_cotangents *ct, int64_t t, const double *P, int64_t jj) {
  const gdn_shape *s = &ct->shape;
  const int64_t Dv = w->Dv, kd = (int64_t)w->kd;
  const orc_dd a = w->a[jj];
  const double beta = w->beta[jj];
  double *restrict dot = cvec(w, 11), *restrict ddh = cvec(w, 6), *restrict ddl = cvec(w, 7);
  double *restrict xh = cvec(w, 8), *restrict xl = cvec(w, 9);
  const double *restrict deh = cvec(w, 4), *restrict del = cvec(w, 5);
  const float *d = ct->d_o + ((w->b * s->T + t) * s->Hv + w->kh * w->G + jj) * s->Dv;
  for (int64_t c = 0; c < Dv; c++) dot[c] = (double)d[c];
  for (int64_t i = 0; i < w->Dk; i++) {
    const double *restrict ph = P + (size_t)((jj * w->Dk + i) * Dv), *restrict pl = ph + w->st;
    double *restrict sh = w->S + (ph - P), *restrict sl = sh + w->st;
    double *restrict qh = w->tQ + i * Dv, *restrict ql = qh + kd, *restrict uh = w->t1 + i * Dv,
                     *restrict ul = uh + kd;
    const orc_dd Ki = w->Kp[i], Qi = w->Qp[i];
#pragma omp simd
    for (int64_t c = 0; c < Dv; c++) {
      const orc_dd delta = {deh[c], del[c]};
      orc_dd ht = orc_dd_add((orc_dd){ph[c], pl[c]}, orc_dd_mul(Ki, delta));
      orc_dd tq = orc_dd_mul_d(ht, dot[c]);
      orc_dd S = orc_dd_add((orc_dd){sh[c], sl[c]}, orc_dd_mul_d(Qi, dot[c]));
      orc_dd p = orc_dd_mul(Ki, S);
      orc_dd dd = i ? orc_dd_add((orc_dd){ddh[c], ddl[c]}, p) : p;
      orc_dd u = orc_dd_mul(S, delta);
      qh[c] = tq.hi, ql[c] = tq.lo, sh[c] = S.hi, sl[c] = S.lo;
      ddh[c] = dd.hi, ddl[c] = dd.lo, uh[c] = u.hi, ul[c] = u.lo;
    }
  }
#pragma omp simd
  for (int64_t c = 0; c < Dv; c++) { /* dv = beta dd;  e = -dv */
    orc_dd dv = orc_dd_mul_d((orc_dd){ddh[c], ddl[c]}, beta);
    xh[c] = -dv.hi, xl[c] = -dv.lo;
  }
  for (int64_t i = 0; i < w->Dk; i++) {
    const double *restrict ph = P + (size_t)((jj * w->Dk + i) * Dv), *restrict pl = ph + w->st;
    double *restrict sh = w->S + (ph - P), *restrict sl = sh + w->st;
    double *restrict vh = w->t2 + i * Dv, *restrict vl = vh + kd, *restrict gh = w->tg + i * Dv,
                     *restrict gl = gh + kd;
    const orc_dd Ki = w->Kp[i];
#pragma omp simd
    for (int64_t c = 0; c < Dv; c++) {
      const orc_dd hp = {ph[c], pl[c]}, ec = {xh[c], xl[c]};
      orc_dd v2 = orc_dd_mul(hp, ec);
      orc_dd S = orc_dd_add((orc_dd){sh[c], sl[c]}, orc_dd_mul(Ki, ec));
      orc_dd g = orc_dd_mul(S, hp);
      S = orc_dd_mul(S, a);
      vh[c] = v2.hi, vl[c] = v2.lo, gh[c] = g.hi, gl[c] = g.lo, sh[c] = S.hi, sl[c] = S.lo;
    }
  }
}

/* The sums over value head jj's columns, column by column (c ascending;
 * within a column: dbeta, then dQ_i, dK_i's two terms, dg over i
 * ascending), each column into the sample's accumulators or the main ones;
 * and dv. */
static void rsum(orc_vdd *w, int64_t jj) {
  const int64_t Dv = w->Dv, kd = (int64_t)w->kd;
  const double beta = w->beta[jj];
  const double *ddh = cvec(w, 6), *ddl = cvec(w, 7), *mh = cvec(w, 2), *ml = cvec(w, 3);
  for (int64_t c = 0; c < Dv; c++) {
    const int sample = c >= w->s0 && c < w->s0 + w->ns;
    orc_dd *dK = sample ? w->sK : w->dK, *dQ = sample ? w->sQ : w->dQ;
    orc_dd *dg = sample ? &w->sg[jj] : &w->dg[jj], *db = sample ? &w->sb[jj] : &w->db[jj];
    const orc_dd dd = {ddh[c], ddl[c]};
    *db = orc_dd_add(*db, orc_dd_mul(dd, (orc_dd){mh[c], ml[c]}));
    w->dv[jj * Dv + c] = orc_dd_mul_d(dd, beta);
    for (int64_t i = 0; i < w->Dk; i++) {
      const int64_t x = i * Dv + c;
      dQ[i] = orc_dd_add(dQ[i], (orc_dd){w->tQ[x], w->tQ[kd + x]});
      dK[i] = orc_dd_add(dK[i], (orc_dd){w->t1[x], w->t1[kd + x]});
      dK[i] = orc_dd_add(dK[i], (orc_dd){w->t2[x], w->t2[kd + x]});
    }
    for (int64_t i = 0; i < w->Dk; i++) {
      const int64_t x = i * Dv + c;
      *dg = orc_dd_add(*dg, (orc_dd){w->tg[x], w->tg[kd + x]});
    }
  }
}

/* dx = r (dX - ((x . dX) iss) x), or the no-norm rule; into out (binary64). */
void orc_vdd_prep_back(const orc_vdd *w, const float *x, const orc_dd *dX, orc_dd r, orc_dd iss, int is_q,
                       int l2, double *out) {
  if (!l2) {
    for (int64_t i = 0; i < w->Dk; i++) out[i] = is_q ? orc_dd_mul(dX[i], w->scale).hi : dX[i].hi;
    return;
  }
  orc_dd p = orc_dd_mul_d(dX[0], (double)x[0]);
  for (int64_t i = 1; i < w->Dk; i++) p = orc_dd_add(p, orc_dd_mul_d(dX[i], (double)x[i]));
  p = orc_dd_mul(p, iss);
  for (int64_t i = 0; i < w->Dk; i++) {
    orc_dd t = orc_dd_add(dX[i], orc_dd_neg(orc_dd_mul_d(p, (double)x[i])));
    out[i] = orc_dd_mul(t, r).hi;
  }
}

/* Token t backwards; the per-token gradients go to `out` except the sample
 * partials, which stay in sK, sQ, sg, sb, dv for the certificate. */
void orc_vdd_rstep(orc_vdd *w, const gdn_inputs *in, const gdn_cotangents *ct, gdn_grads *out, int64_t t) {
  const gdn_shape *s = &in->shape;
  orc_vdd_prep_token(w, in, t, 1);
  gates(w, in, t);
  const orc_dd z = {0, 0};
  for (int64_t i = 0; i < w->Dk; i++) w->dK[i] = w->dQ[i] = w->sK[i] = w->sQ[i] = z;
  double *prev = w->seg + 2 * w->st * (size_t)(t % w->K); /* used once: becomes h' */
  for (int64_t jj = 0; jj < w->G; jj++) {
    const int64_t j = w->kh * w->G + jj, gt = (w->b * s->T + t) * s->Hv + j;
    w->dg[jj] = w->db[jj] = w->sg[jj] = w->sb[jj] = z;
    decay_dot(w, in, t, prev, jj);
    rhead(w, ct, t, prev, jj);
    rsum(w, jj);
    out->dg[gt] = orc_dd_add(w->dg[jj], w->sg[jj]).hi;
    out->dbeta[gt] = orc_dd_add(w->db[jj], w->sb[jj]).hi;
    for (int64_t c = 0; c < w->Dv; c++) out->dv[gt * s->Dv + c] = w->dv[jj * w->Dv + c].hi;
  }
  maybe_plant(w, t);
  const int64_t qk = ((w->b * s->T + t) * s->Hk + w->kh) * s->Dk;
  const int l2 = in->l2norm_in_kernel != 0;
  for (int64_t i = 0; i < w->Dk; i++) w->row[i] = orc_dd_add(w->dK[i], w->sK[i]);
  orc_vdd_prep_back(w, gdn_inputs_k(in, w->b, t, w->kh), w->row, w->rk, w->ik, 0, l2, out->dk + qk);
  for (int64_t i = 0; i < w->Dk; i++) w->row[i] = orc_dd_add(w->dQ[i], w->sQ[i]);
  orc_vdd_prep_back(w, gdn_inputs_q(in, w->b, t, w->kh), w->row, w->rq, w->iq, 1, l2, out->dq + qk);
}

