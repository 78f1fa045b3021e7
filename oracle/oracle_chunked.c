/* MaxText's chunked form for one work item (b, j), every step in MPFR; the
 * steps and their roundings are those listed in oracle.h. */
#include "gdn_alloc.h"
#include "oracle_internal.h"

#define R MPFR_RNDN

enum { CHK_SCALARS = 2, CHK_PREP = 5 };

void orc_chk_init(orc_chk *w) {
  orc_vars_init(&w->vars);
  w->Dk = w->Dv = w->C = 0;
}

int orc_chk_alloc(orc_chk *w, mpfr_prec_t p, int64_t Dk, int64_t Dv, int64_t C, gdn_error *e) {
  orc_chk_clear(w);
  /* Counts in size_t with overflow checks: C is the user's chunk size
   * (capped at T by the caller), and C^2 must fit. */
  size_t c = (size_t)C, dk = (size_t)Dk, dv = (size_t)Dv, cc, cdk, cdv, dkdv, n;
  if (gdn_mul_size(c, c, &cc) || gdn_mul_size(c, dk, &cdk) || gdn_mul_size(c, dv, &cdv) ||
      gdn_mul_size(dk, dv, &dkdv) || cc > SIZE_MAX / 64 || cdk > SIZE_MAX / 64 ||
      cdv > SIZE_MAX / 64 || dkdv > SIZE_MAX / 64)
    return gdn_error_set(e, GDN_ERR_NOMEM,
                         "oracle chunked form: workspace for chunk %lld, Dk %lld, Dv %lld "
                         "overflows the address space",
                         (long long)C, (long long)Dk, (long long)Dv);
  /* 13 terms, each below SIZE_MAX / 64: the sum cannot wrap. */
  n = 5 * cdk + dk + 4 * cdv + 4 * cc + dkdv + 3 * c + CHK_SCALARS + CHK_PREP;
  int rc = orc_vars_alloc(&w->vars, n, p, "oracle chunked-form workspace", e);
  if (rc) return rc;
  mpfr_t *x = w->vars.v;
  w->Dk = Dk, w->Dv = Dv, w->C = C;
  w->Q = x, x += cdk;
  w->K = x, x += cdk;
  w->Kb = x, x += cdk;
  w->Kbg = x, x += cdk;
  w->W = x, x += cdk;
  w->Qg = x, x += dk;
  w->V = x, x += cdv;
  w->U = x, x += cdv;
  w->Vn = x, x += cdv;
  w->O = x, x += cdv;
  w->E = x, x += cc;
  w->L = x, x += cc;
  w->A = x, x += cc;
  w->P = x, x += cc;
  w->h = x, x += dkdv;
  w->beta = x, x += c;
  w->G = x, x += c;
  w->eG = x, x += c;
  w->t = x[0], w->acc = x[1];
  return GDN_OK;
}

void orc_chk_clear(orc_chk *w) {
  orc_vars_clear(&w->vars);
  orc_chk_init(w);
}

void orc_chk_begin(orc_chk *w, const gdn_inputs *in, int64_t b, int64_t j) {
  w->b = b, w->j = j, w->kh = gdn_inputs_key_head(in, j);
  orc_prep_setup(&w->prep, in, w->vars.v + (w->vars.n - CHK_PREP));
  const float *h0 = gdn_inputs_h0(in, b, j);
  for (int64_t i = 0; i < w->Dk * w->Dv; i++) {
    if (h0)
      mpfr_set_flt(w->h[i], h0[i], R);
    else
      mpfr_set_zero(w->h[i], 1);
  }
}

/* acc = dot(x, y) over n terms with strides sx, sy: products rounded, sum
 * left to right from the first product. */
static void dot(mpfr_ptr acc, mpfr_ptr t, const mpfr_t *x, int64_t sx, const mpfr_t *y, int64_t sy,
                int64_t n) {
  mpfr_mul(acc, x[0], y[0], R);
  for (int64_t i = 1; i < n; i++) {
    mpfr_mul(t, x[i * sx], y[i * sy], R);
    mpfr_add(acc, acc, t, R);
  }
}

void orc_chk_chunk(orc_chk *w, const gdn_inputs *in, int64_t t0, int64_t n) {
  const int64_t Dk = w->Dk, Dv = w->Dv, C = w->C, b = w->b, j = w->j;
  mpfr_ptr t = w->t, acc = w->acc;
#define M2(X, r, c, ld) ((X)[(r) * (ld) + (c)])

  /* Rows: prepared q, k; v, beta exact; G = cumsum(g) within the chunk. */
  for (int64_t i = 0; i < n; i++) {
    orc_prep_row(&w->prep, gdn_inputs_k(in, b, t0 + i, w->kh), w->K + i * Dk, 0);
    orc_prep_row(&w->prep, gdn_inputs_q(in, b, t0 + i, w->kh), w->Q + i * Dk, 1);
    const float *v = gdn_inputs_v(in, b, t0 + i, j);
    for (int64_t c = 0; c < Dv; c++) mpfr_set_flt(M2(w->V, i, c, Dv), v[c], R);
    mpfr_set_flt(w->beta[i], gdn_inputs_beta(in, b, t0 + i, j), R);
    mpfr_set_flt(w->G[i], gdn_inputs_g(in, b, t0 + i, j), R);
    if (i > 0) mpfr_add(w->G[i], w->G[i - 1], w->G[i], R);
    mpfr_exp(w->eG[i], w->G[i], R);
  }
  /* E_ij = exp(G_i - G_j) on and below the diagonal only. */
  for (int64_t i = 0; i < n; i++) {
    mpfr_set_ui(M2(w->E, i, i, C), 1, R);
    for (int64_t jj = 0; jj < i; jj++) {
      mpfr_sub(t, w->G[i], w->G[jj], R);
      mpfr_exp(M2(w->E, i, jj, C), t, R);
    }
  }
  /* Kb = beta .* K;  L = (Kb K^T) .* E, strictly lower. */
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < Dk; k++) mpfr_mul(M2(w->Kb, i, k, Dk), w->beta[i], M2(w->K, i, k, Dk), R);
  for (int64_t i = 0; i < n; i++)
    for (int64_t jj = 0; jj < i; jj++) {
      dot(acc, t, w->Kb + i * Dk, 1, w->K + jj * Dk, 1, Dk);
      mpfr_mul(M2(w->L, i, jj, C), acc, M2(w->E, i, jj, C), R);
    }
  /* A = (I + L)^-1 by forward substitution: (I + L) A = I gives, for
   * i > j, A_ij = -sum_{m=j}^{i-1} L_im A_mj; the m = j term is L_ij A_jj =
   * L_ij (exact). */
  for (int64_t i = 0; i < n; i++) {
    mpfr_set_ui(M2(w->A, i, i, C), 1, R);
    for (int64_t jj = 0; jj < i; jj++) {
      mpfr_set(acc, M2(w->L, i, jj, C), R);
      for (int64_t m = jj + 1; m < i; m++) {
        mpfr_mul(t, M2(w->L, i, m, C), M2(w->A, m, jj, C), R);
        mpfr_add(acc, acc, t, R);
      }
      mpfr_neg(M2(w->A, i, jj, C), acc, R);
    }
  }
  /* V <- beta .* V (in place);  U = A V;  Kbg = Kb .* exp(G);  W = A Kbg. */
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < Dv; c++) mpfr_mul(M2(w->V, i, c, Dv), M2(w->V, i, c, Dv), w->beta[i], R);
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < Dv; c++) dot(M2(w->U, i, c, Dv), t, w->A + i * C, 1, w->V + c, Dv, i + 1);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < Dk; k++) mpfr_mul(M2(w->Kbg, i, k, Dk), M2(w->Kb, i, k, Dk), w->eG[i], R);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < Dk; k++) dot(M2(w->W, i, k, Dk), t, w->A + i * C, 1, w->Kbg + k, Dk, i + 1);

  /* The scan body with carry h. */
  for (int64_t i = 0; i < n; i++) {
    for (int64_t k = 0; k < Dk; k++) mpfr_mul(w->Qg[k], M2(w->Q, i, k, Dk), w->eG[i], R);
    for (int64_t c = 0; c < Dv; c++) dot(M2(w->O, i, c, Dv), t, w->Qg, 1, w->h + c, Dv, Dk);
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < Dv; c++) {
      dot(acc, t, w->W + i * Dk, 1, w->h + c, Dv, Dk);
      mpfr_sub(M2(w->Vn, i, c, Dv), M2(w->U, i, c, Dv), acc, R);
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t jj = 0; jj <= i; jj++) {
      dot(acc, t, w->Q + i * Dk, 1, w->K + jj * Dk, 1, Dk);
      mpfr_mul(M2(w->P, i, jj, C), acc, M2(w->E, i, jj, C), R);
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < Dv; c++) {
      dot(acc, t, w->P + i * C, 1, w->Vn + c, Dv, i + 1);
      mpfr_add(M2(w->O, i, c, Dv), M2(w->O, i, c, Dv), acc, R);
    }
  /* K <- K .* exp(G_last - G) (in place: K is not needed after P), then
   * h' = exp(G_last) h + K^T v_new. */
  for (int64_t jj = 0; jj < n; jj++)
    for (int64_t k = 0; k < Dk; k++)
      mpfr_mul(M2(w->K, jj, k, Dk), M2(w->K, jj, k, Dk), M2(w->E, n - 1, jj, C), R);
  for (int64_t k = 0; k < Dk; k++)
    for (int64_t c = 0; c < Dv; c++) {
      dot(acc, t, w->K + k, Dk, w->Vn + c, Dv, n);
      mpfr_mul(t, w->eG[n - 1], M2(w->h, k, c, Dv), R);
      mpfr_add(M2(w->h, k, c, Dv), t, acc, R);
    }
#undef M2
}
