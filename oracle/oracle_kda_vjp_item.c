/* One work item of oracle_kda_vjp: first sweep, segments, reverse steps
 * (oracle_kda_vjp.h gives every operation; the order is oracle_vjp_item.c's
 * with the decay per row). */
#include "oracle_exp.h"
#include "oracle_kda_vjp_internal.h"

enum { KVJP_SCALARS = 10, KVJP_PREP = 5 };

void orc_kvjp_init(orc_kvjp *w) {
  orc_vars_init(&w->vars);
  w->Dk = w->Dv = w->G = w->K = w->nck = w->nc = w->c0 = 0;
  w->st = 0;
}

void orc_kvjp_clear(orc_kvjp *w) {
  orc_vars_clear(&w->vars);
  orc_kvjp_init(w);
}

int orc_kvjp_alloc(orc_kvjp *w, mpfr_prec_t p, const gdn_shape *s, int64_t K, int64_t nc, gdn_error *e) {
  orc_kvjp_clear(w);
  const int64_t G = s->Hv / s->Hk, Dk = s->Dk, Dv = s->Dv, nck = (s->T + K - 1) / K;
  const size_t st = (size_t)(G * nc * Dk);
  const size_t n = st * (size_t)(2 + nck + K) + (size_t)(7 * Dk + G * nc + 2 * G * Dk + 2 * G) + KVJP_SCALARS +
                   KVJP_PREP;
  int rc = orc_vars_alloc(&w->vars, n, p, "oracle_kda_vjp workspace", e);
  if (rc) return rc;
  mpfr_t *x = w->vars.v;
  w->Dk = Dk, w->Dv = Dv, w->G = G, w->K = K, w->nck = nck, w->nc = nc, w->st = st;
  w->h = x, x += st;
  w->S = x, x += st;
  w->ck = x, x += st * (size_t)nck;
  w->seg = x, x += st * (size_t)K;
  mpfr_t **rows[] = {&w->Kp, &w->Qp, &w->hp, &w->dK, &w->dQ, &w->dk, &w->dq};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) *rows[i] = x, x += Dk;
  w->dv = x, x += G * nc;
  w->dg = x, x += G * Dk;
  w->a = x, x += G * Dk;
  w->dbeta = x, x += G;
  w->beta = x, x += G;
  mpfr_ptr *sc[KVJP_SCALARS] = {&w->kv, &w->delta, &w->vm, &w->dd, &w->t1, &w->t2, &w->kr, &w->kss, &w->qr, &w->qss};
  for (int i = 0; i < KVJP_SCALARS; i++) *sc[i] = x[i];
  return GDN_OK;
}

static void copy_set(const orc_kvjp *w, mpfr_t *dst, mpfr_t *src) {
  for (size_t i = 0; i < w->st; i++) mpfr_set(dst[i], src[i], MPFR_RNDN);
}

static void prep_token(orc_kvjp *w, const gdn_inputs *in, int64_t t, int with_q) {
  orc_prep_row(&w->prep, gdn_inputs_k(in, w->b, t, w->kh), w->Kp, 0);
  mpfr_set(w->kr, w->prep.inv, MPFR_RNDN);
  mpfr_set(w->kss, w->prep.ss, MPFR_RNDN);
  if (!with_q) return;
  orc_prep_row(&w->prep, gdn_inputs_q(in, w->b, t, w->kh), w->Qp, 1);
  mpfr_set(w->qr, w->prep.inv, MPFR_RNDN);
  mpfr_set(w->qss, w->prep.ss, MPFR_RNDN);
}

/* a = exp(g_t) per channel and beta, for the item's value heads. */
static void gates(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t t) {
  for (int64_t jj = 0; jj < w->G; jj++) {
    const int64_t j = w->kh * w->G + jj;
    const float *g = gdn_chgate_row(gate->g, &in->shape, w->b, t, j);
    for (int64_t i = 0; i < w->Dk; i++) orc_exp_flt(w->a[jj * w->Dk + i], g[i]); /* mpfr_exp's value */
    mpfr_set_flt(w->beta[jj], gdn_inputs_beta(in, w->b, t, j), MPFR_RNDN);
  }
}

/* h'_i = a_i h_i into w->hp and kv = h'^T K (oracle_vjp's decay_dot with a
 * per row). */
static void decay_dot(orc_kvjp *w, mpfr_t *hc, mpfr_t *a) {
  mpfr_t *K = w->Kp, *hp = w->hp;
  mpfr_mul(hp[0], hc[0], a[0], MPFR_RNDN);
  mpfr_mul(w->kv, hp[0], K[0], MPFR_RNDN);
  for (int64_t i = 1; i < w->Dk; i++) {
    mpfr_mul(hp[i], hc[i], a[i], MPFR_RNDN);
    mpfr_mul(w->t1, hp[i], K[i], MPFR_RNDN);
    mpfr_add(w->kv, w->kv, w->t1, MPFR_RNDN);
  }
}

static void fstep(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t t, mpfr_t *X) {
  gates(w, in, gate, t);
  for (int64_t jj = 0; jj < w->G; jj++) {
    const float *v = gdn_inputs_v(in, w->b, t, w->kh * w->G + jj);
    for (int64_t c = 0; c < w->nc; c++) {
      mpfr_t *hc = orc_kvjp_col(X, w, jj, c);
      decay_dot(w, hc, w->a + jj * w->Dk);
      mpfr_set_flt(w->t2, v[w->c0 + c], MPFR_RNDN);
      mpfr_sub(w->delta, w->t2, w->kv, MPFR_RNDN);
      mpfr_mul(w->delta, w->delta, w->beta[jj], MPFR_RNDN);
      for (int64_t i = 0; i < w->Dk; i++) {
        mpfr_mul(w->t1, w->Kp[i], w->delta, MPFR_RNDN);
        mpfr_add(hc[i], w->hp[i], w->t1, MPFR_RNDN);
      }
    }
  }
}

void orc_kvjp_begin(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, int64_t b,
                    int64_t kh, int64_t c0) {
  const gdn_shape *s = &in->shape;
  w->b = b, w->kh = kh, w->c0 = c0;
  orc_prep_setup(&w->prep, in, w->vars.v + (w->vars.n - KVJP_PREP));
  for (int64_t jj = 0; jj < w->G; jj++) {
    const float *h0 = gdn_inputs_h0(in, b, kh * w->G + jj);
    const float *dht = ct->dht ? ct->dht + (b * s->Hv + kh * w->G + jj) * s->Dk * s->Dv : NULL;
    for (int64_t c = 0; c < w->nc; c++)
      for (int64_t i = 0; i < w->Dk; i++) {
        mpfr_ptr x = orc_kvjp_col(w->h, w, jj, c)[i], y = orc_kvjp_col(w->S, w, jj, c)[i];
        if (h0) mpfr_set_flt(x, h0[i * s->Dv + c0 + c], MPFR_RNDN);
        else mpfr_set_zero(x, 1);
        if (dht) mpfr_set_flt(y, dht[i * s->Dv + c0 + c], MPFR_RNDN);
        else mpfr_set_zero(y, 1);
      }
  }
  for (int64_t t = 0; t < s->T; t++) {
    if (t % w->K == 0) copy_set(w, w->ck + (size_t)(t / w->K) * w->st, w->h);
    prep_token(w, in, t, 0);
    fstep(w, in, gate, t, w->h);
  }
}

void orc_kvjp_segment(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, int64_t m) {
  const int64_t t0 = m * w->K, n = in->shape.T - t0 < w->K ? in->shape.T - t0 : w->K;
  copy_set(w, w->seg, w->ck + (size_t)m * w->st);
  for (int64_t i = 0; i + 1 < n; i++) {
    mpfr_t *nx = w->seg + (size_t)(i + 1) * w->st;
    copy_set(w, nx, w->seg + (size_t)i * w->st);
    prep_token(w, in, t0 + i, 0);
    fstep(w, in, gate, t0 + i, nx);
  }
}

/* oracle_vjp_item.c's prep_back: dx = r (dX - ((x . dX) / ss) x) with the L2
 * norm; dX (times scale for q) without. */
static void prep_back(orc_kvjp *w, const float *x, mpfr_t *dX, mpfr_srcptr r, mpfr_srcptr ss, int is_q, mpfr_t *dx) {
  const int64_t Dk = w->Dk;
  if (!w->prep.l2norm) {
    for (int64_t i = 0; i < Dk; i++) {
      if (is_q) mpfr_mul(dx[i], dX[i], w->prep.scale, MPFR_RNDN);
      else mpfr_set(dx[i], dX[i], MPFR_RNDN);
    }
    return;
  }
  mpfr_mul_d(w->t2, dX[0], (double)x[0], MPFR_RNDN);
  for (int64_t i = 1; i < Dk; i++) {
    mpfr_mul_d(w->t1, dX[i], (double)x[i], MPFR_RNDN);
    mpfr_add(w->t2, w->t2, w->t1, MPFR_RNDN);
  }
  mpfr_div(w->t2, w->t2, ss, MPFR_RNDN);
  for (int64_t i = 0; i < Dk; i++) {
    mpfr_mul_d(w->t1, w->t2, (double)x[i], MPFR_RNDN);
    mpfr_sub(w->t1, dX[i], w->t1, MPFR_RNDN);
    mpfr_mul(dx[i], w->t1, r, MPFR_RNDN);
  }
}

/* One column's reverse step; hc the state before t, Sc its adjoint slot. */
static void rcol(orc_kvjp *w, int64_t jj, int64_t c, mpfr_t *hc, mpfr_t *Sc, float vtc, float dotc) {
  const int64_t Dk = w->Dk;
  mpfr_t *K = w->Kp, *Q = w->Qp, *hp = w->hp, *a = w->a + jj * Dk, *dg = w->dg + jj * Dk;
  decay_dot(w, hc, a);
  mpfr_set_flt(w->t2, vtc, MPFR_RNDN);
  mpfr_sub(w->vm, w->t2, w->kv, MPFR_RNDN);
  mpfr_mul(w->delta, w->vm, w->beta[jj], MPFR_RNDN);
  for (int64_t i = 0; i < Dk; i++) {
    mpfr_mul(w->t1, K[i], w->delta, MPFR_RNDN);
    mpfr_add(w->t1, hp[i], w->t1, MPFR_RNDN); /* h_t,ic */
    mpfr_mul_d(w->t1, w->t1, (double)dotc, MPFR_RNDN);
    mpfr_add(w->dQ[i], w->dQ[i], w->t1, MPFR_RNDN);
    mpfr_mul_d(w->t1, Q[i], (double)dotc, MPFR_RNDN);
    mpfr_add(Sc[i], Sc[i], w->t1, MPFR_RNDN);
    mpfr_mul(w->t1, K[i], Sc[i], MPFR_RNDN);
    if (i == 0) mpfr_set(w->dd, w->t1, MPFR_RNDN);
    else mpfr_add(w->dd, w->dd, w->t1, MPFR_RNDN);
    mpfr_mul(w->t1, Sc[i], w->delta, MPFR_RNDN);
    mpfr_add(w->dK[i], w->dK[i], w->t1, MPFR_RNDN);
  }
  mpfr_mul(w->t1, w->dd, w->vm, MPFR_RNDN);
  mpfr_add(w->dbeta[jj], w->dbeta[jj], w->t1, MPFR_RNDN);
  mpfr_ptr dv = w->dv[jj * w->nc + c];
  mpfr_mul(dv, w->dd, w->beta[jj], MPFR_RNDN);
  mpfr_neg(w->vm, dv, MPFR_RNDN); /* e_c, exact */
  for (int64_t i = 0; i < Dk; i++) {
    mpfr_mul(w->t1, hp[i], w->vm, MPFR_RNDN);
    mpfr_add(w->dK[i], w->dK[i], w->t1, MPFR_RNDN);
    mpfr_mul(w->t1, K[i], w->vm, MPFR_RNDN);
    mpfr_add(Sc[i], Sc[i], w->t1, MPFR_RNDN); /* S' */
    mpfr_mul(w->t1, Sc[i], hp[i], MPFR_RNDN);
    mpfr_add(dg[i], dg[i], w->t1, MPFR_RNDN);
    mpfr_mul(Sc[i], Sc[i], a[i], MPFR_RNDN);
  }
}

void orc_kvjp_rstep(orc_kvjp *w, const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, int64_t t) {
  const gdn_shape *s = &in->shape;
  prep_token(w, in, t, 1);
  gates(w, in, gate, t);
  for (int64_t i = 0; i < w->Dk; i++) mpfr_set_zero(w->dK[i], 1), mpfr_set_zero(w->dQ[i], 1);
  mpfr_t *prev = w->seg + (size_t)(t % w->K) * w->st;
  for (int64_t jj = 0; jj < w->G; jj++) {
    const int64_t j = w->kh * w->G + jj;
    const float *v = gdn_inputs_v(in, w->b, t, j);
    const float *dot = ct->d_o + ((w->b * s->T + t) * s->Hv + j) * s->Dv;
    for (int64_t i = 0; i < w->Dk; i++) mpfr_set_zero(w->dg[jj * w->Dk + i], 1);
    mpfr_set_zero(w->dbeta[jj], 1);
    for (int64_t c = 0; c < w->nc; c++)
      rcol(w, jj, c, orc_kvjp_col(prev, w, jj, c), orc_kvjp_col(w->S, w, jj, c), v[w->c0 + c], dot[w->c0 + c]);
  }
  prep_back(w, gdn_inputs_k(in, w->b, t, w->kh), w->dK, w->kr, w->kss, 0, w->dk);
  prep_back(w, gdn_inputs_q(in, w->b, t, w->kh), w->dQ, w->qr, w->qss, 1, w->dq);
}
