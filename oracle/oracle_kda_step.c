/* One token of the KDA recurrence for one work item (oracle_kda.h): the GDN
 * token form's step (oracle_token.c) with a decay per row of the state.
 * The workspace is the GDN form's (orc_tok) plus Dk numbers for the
 * per-channel decays a_i (orc_kda_step's `a`). */
#include "oracle_exp.h"
#include "oracle_kda_internal.h"

void orc_kda_step(orc_tok *w, mpfr_t *a, const gdn_inputs *in, const gdn_chgate *gate, int64_t t) {
  const int64_t Dk = w->Dk, nc = w->nc, b = w->b, j = w->j;
  mpfr_t *K = w->K, *Q = w->Q;
  mpfr_ptr beta = w->beta, kv = w->kv, delta = w->delta, tt = w->t, t2 = w->t2;

  orc_prep_row(&w->prep, gdn_inputs_k(in, b, t, w->kh), K, 0);
  orc_prep_row(&w->prep, gdn_inputs_q(in, b, t, w->kh), Q, 1);
  const float *g = gdn_chgate_row(gate->g, &in->shape, b, t, j);
  for (int64_t i = 0; i < Dk; i++) orc_exp_flt(a[i], g[i]); /* mpfr_exp's value (oracle_exp.h) */
  mpfr_set_flt(beta, gdn_inputs_beta(in, b, t, j), MPFR_RNDN);
  const float *vrow = gdn_inputs_v(in, b, t, j) + w->c0;
  for (int64_t c = 0; c < nc; c++) mpfr_set_flt(w->v[c], vrow[c], MPFR_RNDN);

  for (int64_t c = 0; c < nc; c++) {
    mpfr_t *hc = w->h + c * Dk;
    /* h_i *= a_i fused with kv = h^T k (the GDN step's order) */
    mpfr_mul(hc[0], hc[0], a[0], MPFR_RNDN);
    mpfr_mul(kv, hc[0], K[0], MPFR_RNDN);
    for (int64_t i = 1; i < Dk; i++) {
      mpfr_mul(hc[i], hc[i], a[i], MPFR_RNDN);
      mpfr_mul(tt, hc[i], K[i], MPFR_RNDN);
      mpfr_add(kv, kv, tt, MPFR_RNDN);
    }
    mpfr_sub(delta, w->v[c], kv, MPFR_RNDN);
    mpfr_mul(delta, delta, beta, MPFR_RNDN);
    mpfr_ptr oc = w->o[c];
    mpfr_mul(tt, K[0], delta, MPFR_RNDN);
    mpfr_add(hc[0], hc[0], tt, MPFR_RNDN);
    mpfr_mul(oc, hc[0], Q[0], MPFR_RNDN);
    for (int64_t i = 1; i < Dk; i++) {
      mpfr_mul(tt, K[i], delta, MPFR_RNDN);
      mpfr_add(hc[i], hc[i], tt, MPFR_RNDN);
      mpfr_mul(t2, hc[i], Q[i], MPFR_RNDN);
      mpfr_add(oc, oc, t2, MPFR_RNDN);
    }
  }
}
