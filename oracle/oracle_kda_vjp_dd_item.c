/* The dd tier of oracle_kda_vjp: one work item's state and steps in
 * double-word arithmetic (oracle_kda_vjp.h).  The GDN dd VJP's item
 * (oracle_vjp_dd_item.c) with the decay per row of the state: the buffers
 * are its orc_vdd's (orc_vdd_alloc: states, checkpoints, the per-(i, c)
 * terms, the column vectors, the prepared rows) and its preparation
 * (orc_vdd_prep_token, orc_vdd_prep_back), the row loops
 * oracle_dd_rows.h's, the arithmetic oracle_dd_arith.h's; added are the
 * per-channel decays a and the per-channel sums dg (main and sample).  The
 * per-column arithmetic runs as `omp simd` loops over the columns, each
 * column getting the scalar sequence of operations whatever the vector
 * width. */
#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "oracle_dd_arith.h"
#include "oracle_dd_rows.h"
#include "oracle_exp.h"
#include "oracle_kda_vjp_dd_internal.h"

void orc_kvdd_init(orc_kvdd *w) {
  orc_vdd_init(&w->v);
  w->a = w->dg = w->sg = NULL;
}

void orc_kvdd_clear(orc_kvdd *w) {
  orc_vdd_clear(&w->v);
  gdn_free(w->a);
  orc_kvdd_init(w);
}

int orc_kvdd_alloc(orc_kvdd *w, const gdn_shape *s, int64_t K, int64_t ns, gdn_error *e) {
  orc_kvdd_clear(w);
  int rc = orc_vdd_alloc(&w->v, s, K, ns, e);
  if (rc) return rc;
  const size_t n = (size_t)(s->Hv / s->Hk * s->Dk);
  if (!(w->a = gdn_calloc(3 * n, sizeof(orc_dd), "oracle_kda_vjp_dd channels", e))) {
    orc_kvdd_clear(w);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  w->dg = w->a + n, w->sg = w->dg + n;
  return GDN_OK;
}

static inline double *cvec(const orc_vdd *w, int k) { return w->cv + (size_t)k * (size_t)w->Dv; }

static orc_dd dd_of(orc_vdd *w, mpfr_srcptr x) {
  orc_dd r;
  orc_dd_of_mpfr(x, w->mp.v[5], &r.hi, &r.lo);
  return r;
}

/* a_i = exp(g_ti) at 128 bits rounded to double-word, per channel; beta.
 * 0 when a decay overflows binary64. */
static int gates(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t t) {
  orc_vdd *v = &w->v;
  mpfr_ptr A = v->mp.v[7];
  for (int64_t jj = 0; jj < v->G; jj++) {
    const int64_t j = v->kh * v->G + jj;
    const float *g = gdn_chgate_row(gate->g, &in->shape, v->b, t, j);
    for (int64_t i = 0; i < v->Dk; i++) {
      orc_exp_flt(A, g[i]); /* mpfr_exp's value (oracle_exp.h) */
      orc_dd *ai = &w->a[jj * v->Dk + i];
      *ai = dd_of(v, A);
      if (!isfinite(ai->hi)) return 0;
    }
    v->beta[jj] = gdn_inputs_beta(in, v->b, t, j);
  }
  return 1;
}

/* Value head jj of the set X: h = Diag(a) h in place (h') and kv = h'^T K
 * into column vector 0; vm = v - kv (vector 1), delta = beta vm (vector 2);
 * v into vector 10. */
static void decay_dot(orc_kvdd *w, const gdn_inputs *in, int64_t t, double *X, int64_t jj) {
  orc_vdd *v = &w->v;
  const int64_t Dv = v->Dv;
  const double beta = v->beta[jj];
  double *restrict kh = cvec(v, 0), *restrict kl = cvec(v, 1), *restrict vv = cvec(v, 10);
  double *restrict mh = cvec(v, 2), *restrict ml = cvec(v, 3), *restrict eh = cvec(v, 4), *restrict el = cvec(v, 5);
  const float *vin = gdn_inputs_v(in, v->b, t, v->kh * v->G + jj);
  for (int64_t c = 0; c < Dv; c++) vv[c] = (double)vin[c];
  for (int64_t i = 0; i < v->Dk; i++) {
    double *restrict rh = X + (size_t)((jj * v->Dk + i) * Dv), *restrict rl = rh + v->st;
    orc_dd_rows_scale(rh, rl, w->a[jj * v->Dk + i], Dv);
    orc_dd_rows_dot(rh, rl, v->Kp[i], i == 0, kh, kl, Dv);
  }
#pragma omp simd
  for (int64_t c = 0; c < Dv; c++) {
    orc_dd m = orc_dd_add_d(orc_dd_neg((orc_dd){kh[c], kl[c]}), vv[c]);
    orc_dd d = orc_dd_mul_d(m, beta);
    mh[c] = m.hi, ml[c] = m.lo, eh[c] = d.hi, el[c] = d.lo;
  }
}

static void fstep(orc_kvdd *w, const gdn_inputs *in, int64_t t, double *X) {
  orc_vdd *v = &w->v;
  const int64_t Dv = v->Dv;
  for (int64_t jj = 0; jj < v->G; jj++) {
    decay_dot(w, in, t, X, jj);
    const double *restrict dh = cvec(v, 4), *restrict dl = cvec(v, 5);
    for (int64_t i = 0; i < v->Dk; i++) {
      double *restrict rh = X + (size_t)((jj * v->Dk + i) * Dv), *restrict rl = rh + v->st;
      const orc_dd Ki = v->Kp[i];
#pragma omp simd
      for (int64_t c = 0; c < Dv; c++) {
        orc_dd h = orc_dd_add((orc_dd){rh[c], rl[c]}, orc_dd_mul(Ki, (orc_dd){dh[c], dl[c]}));
        rh[c] = h.hi, rl[c] = h.lo;
      }
    }
  }
}

static void copy_set(const orc_vdd *w, double *dst, const double *src) {
  memcpy(dst, src, 2 * w->st * sizeof(double));
}

int orc_kvdd_begin(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, int64_t b,
                   int64_t kh, int64_t *bad_t) {
  orc_vdd *v = &w->v;
  const gdn_shape *s = &in->shape;
  v->b = b, v->kh = kh;
  orc_prep_setup(&v->prep, in, v->mp.v);
  v->scale = dd_of(v, v->prep.scale);
  memset(v->h, 0, 4 * v->st * sizeof(double)); /* h and S, hi and lo */
  for (int64_t jj = 0; jj < v->G; jj++) {
    const float *h0 = gdn_inputs_h0(in, b, kh * v->G + jj);
    const float *dht = ct->dht ? ct->dht + (b * s->Hv + kh * v->G + jj) * s->Dk * s->Dv : NULL;
    for (int64_t x = 0; x < s->Dk * s->Dv; x++) { /* (i, c) row-major, as h0 */
      if (h0) v->h[jj * (int64_t)v->kd + x] = h0[x];
      if (dht) v->S[jj * (int64_t)v->kd + x] = dht[x];
    }
  }
  for (int64_t t = 0; t < s->T; t++) {
    if (t % v->K == 0) copy_set(v, v->ck + 2 * v->st * (size_t)(t / v->K), v->h);
    orc_vdd_prep_token(v, in, t, 0);
    if (!gates(w, in, gate, t)) return *bad_t = t, 0;
    fstep(w, in, t, v->h);
  }
  return 1;
}

void orc_kvdd_segment(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t m) {
  orc_vdd *v = &w->v;
  const int64_t t0 = m * v->K, n = in->shape.T - t0 < v->K ? in->shape.T - t0 : v->K;
  copy_set(v, v->seg, v->ck + 2 * v->st * (size_t)m);
  for (int64_t i = 0; i + 1 < n; i++) {
    double *nx = v->seg + 2 * v->st * (size_t)(i + 1);
    copy_set(v, nx, v->seg + 2 * v->st * (size_t)i);
    orc_vdd_prep_token(v, in, t0 + i, 0);
    gates(w, in, gate, t0 + i); /* finite: the first sweep checked */
    fstep(w, in, t0 + i, nx);
  }
}

static struct {
  int64_t b, kh, jj, col, t;
  double rel;
} plant = {0, 0, 0, -1, 0, 0.0};

void oracle_kda_vjp_dd_test_plant(int64_t b, int64_t kh, int64_t jj, int64_t col, int64_t t, double rel) {
  plant.b = b, plant.kh = kh, plant.jj = jj, plant.col = col, plant.t = t, plant.rel = rel;
}

static void maybe_plant(orc_vdd *w, int64_t t) {
  if (plant.col < 0 || w->b != plant.b || w->kh != plant.kh || t != plant.t) return;
  double *xh = w->S + (size_t)(plant.jj * w->Dk * w->Dv + plant.col), *xl = xh + w->st;
  orc_dd x = orc_dd_add_d((orc_dd){*xh, *xl}, plant.rel * *xh);
  *xh = x.hi, *xl = x.lo;
}

/* Value head jj's per-column steps (oracle_kda_vjp.h), the terms of the
 * sums over columns left in tQ, t1, t2, tg and the columns' dd in vectors
 * 6, 7; h' is the set P (decay_dot ran on it). */
static void rhead(orc_kvdd *w, const gdn_cotangents *ct, int64_t t, const double *P, int64_t jj) {
  orc_vdd *v = &w->v;
  const gdn_shape *s = &ct->shape;
  const int64_t Dv = v->Dv, kd = (int64_t)v->kd;
  const double beta = v->beta[jj];
  double *restrict dot = cvec(v, 11), *restrict ddh = cvec(v, 6), *restrict ddl = cvec(v, 7);
  double *restrict xh = cvec(v, 8), *restrict xl = cvec(v, 9);
  const double *restrict deh = cvec(v, 4), *restrict del = cvec(v, 5);
  const float *d = ct->d_o + ((v->b * s->T + t) * s->Hv + v->kh * v->G + jj) * s->Dv;
  for (int64_t c = 0; c < Dv; c++) dot[c] = (double)d[c];
  for (int64_t i = 0; i < v->Dk; i++) {
    const double *restrict ph = P + (size_t)((jj * v->Dk + i) * Dv), *restrict pl = ph + v->st;
    double *restrict sh = v->S + (ph - P), *restrict sl = sh + v->st;
    double *restrict qh = v->tQ + i * Dv, *restrict ql = qh + kd, *restrict uh = v->t1 + i * Dv,
                     *restrict ul = uh + kd;
    const orc_dd Ki = v->Kp[i], Qi = v->Qp[i];
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
  for (int64_t i = 0; i < v->Dk; i++) {
    const double *restrict ph = P + (size_t)((jj * v->Dk + i) * Dv), *restrict pl = ph + v->st;
    double *restrict sh = v->S + (ph - P), *restrict sl = sh + v->st;
    double *restrict vh = v->t2 + i * Dv, *restrict vl = vh + kd, *restrict gh = v->tg + i * Dv,
                     *restrict gl = gh + kd;
    const orc_dd Ki = v->Kp[i], ai = w->a[jj * v->Dk + i];
#pragma omp simd
    for (int64_t c = 0; c < Dv; c++) {
      const orc_dd hp = {ph[c], pl[c]}, ec = {xh[c], xl[c]};
      orc_dd v2 = orc_dd_mul(hp, ec);
      orc_dd S = orc_dd_add((orc_dd){sh[c], sl[c]}, orc_dd_mul(Ki, ec));
      orc_dd g = orc_dd_mul(S, hp);
      S = orc_dd_mul(S, ai);
      vh[c] = v2.hi, vl[c] = v2.lo, gh[c] = g.hi, gl[c] = g.lo, sh[c] = S.hi, sl[c] = S.lo;
    }
  }
}

/* The sums over value head jj's columns, column by column (c ascending;
 * within a column: dbeta, then dQ_i, dK_i's two terms, dg_i over i
 * ascending), each column into the sample's accumulators or the main ones;
 * and dv. */
static void rsum(orc_kvdd *w, int64_t jj) {
  orc_vdd *v = &w->v;
  const int64_t Dv = v->Dv, Dk = v->Dk, kd = (int64_t)v->kd;
  const double beta = v->beta[jj];
  const double *ddh = cvec(v, 6), *ddl = cvec(v, 7), *mh = cvec(v, 2), *ml = cvec(v, 3);
  for (int64_t c = 0; c < Dv; c++) {
    const int sample = c >= v->s0 && c < v->s0 + v->ns;
    orc_dd *dK = sample ? v->sK : v->dK, *dQ = sample ? v->sQ : v->dQ;
    orc_dd *dg = (sample ? w->sg : w->dg) + jj * Dk, *db = sample ? &v->sb[jj] : &v->db[jj];
    const orc_dd dd = {ddh[c], ddl[c]};
    *db = orc_dd_add(*db, orc_dd_mul(dd, (orc_dd){mh[c], ml[c]}));
    v->dv[jj * Dv + c] = orc_dd_mul_d(dd, beta);
    for (int64_t i = 0; i < Dk; i++) {
      const int64_t x = i * Dv + c;
      dQ[i] = orc_dd_add(dQ[i], (orc_dd){v->tQ[x], v->tQ[kd + x]});
      dK[i] = orc_dd_add(dK[i], (orc_dd){v->t1[x], v->t1[kd + x]});
      dK[i] = orc_dd_add(dK[i], (orc_dd){v->t2[x], v->t2[kd + x]});
      dg[i] = orc_dd_add(dg[i], (orc_dd){v->tg[x], v->tg[kd + x]});
    }
  }
}

void orc_kvdd_rstep(orc_kvdd *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                    gdn_grads *out, int64_t t) {
  orc_vdd *v = &w->v;
  const gdn_shape *s = &in->shape;
  const int64_t Dk = v->Dk;
  orc_vdd_prep_token(v, in, t, 1);
  gates(w, in, gate, t);
  const orc_dd z = {0, 0};
  for (int64_t i = 0; i < Dk; i++) v->dK[i] = v->dQ[i] = v->sK[i] = v->sQ[i] = z;
  double *prev = v->seg + 2 * v->st * (size_t)(t % v->K); /* used once: becomes h' */
  for (int64_t jj = 0; jj < v->G; jj++) {
    const int64_t j = v->kh * v->G + jj, gt = (v->b * s->T + t) * s->Hv + j;
    v->db[jj] = v->sb[jj] = z;
    for (int64_t i = 0; i < Dk; i++) w->dg[jj * Dk + i] = w->sg[jj * Dk + i] = z;
    decay_dot(w, in, t, prev, jj);
    rhead(w, ct, t, prev, jj);
    rsum(w, jj);
    for (int64_t i = 0; i < Dk; i++) out->dg[gt * Dk + i] = orc_dd_add(w->dg[jj * Dk + i], w->sg[jj * Dk + i]).hi;
    out->dbeta[gt] = orc_dd_add(v->db[jj], v->sb[jj]).hi;
    for (int64_t c = 0; c < v->Dv; c++) out->dv[gt * s->Dv + c] = v->dv[jj * v->Dv + c].hi;
  }
  maybe_plant(v, t);
  const int64_t qk = ((v->b * s->T + t) * s->Hk + v->kh) * s->Dk;
  const int l2 = in->l2norm_in_kernel != 0;
  for (int64_t i = 0; i < Dk; i++) v->row[i] = orc_dd_add(v->dK[i], v->sK[i]);
  orc_vdd_prep_back(v, gdn_inputs_k(in, v->b, t, v->kh), v->row, v->rk, v->ik, 0, l2, out->dk + qk);
  for (int64_t i = 0; i < Dk; i++) v->row[i] = orc_dd_add(v->dQ[i], v->sQ[i]);
  orc_vdd_prep_back(v, gdn_inputs_q(in, v->b, t, v->kh), v->row, v->rq, v->iq, 1, l2, out->dq + qk);
}
