/* The token-level recurrence for one work item (b, j, block of columns).
 *
 * Columns of the Dk x Dv state evolve independently, so an item holds only
 * its columns; the per-token conversions and the L2 norm of q and k are done
 * once per token and shared by the block's columns.  Within a column the
 * state is contiguous (h + c Dk), so the three passes over it read adjacent
 * MPFR numbers.
 */
#include "gdn_alloc.h"
#include "oracle_internal.h"

enum { TOK_SCALARS = 6, TOK_PREP = 5 };

void orc_tok_init(orc_tok *w) {
  orc_vars_init(&w->vars);
  w->Dk = w->ncmax = 0;
  w->h = w->K = w->Q = w->v = w->o = NULL;
}

int orc_tok_alloc(orc_tok *w, mpfr_prec_t p, int64_t Dk, int64_t ncmax, gdn_error *e) {
  orc_tok_clear(w);
  size_t n = (size_t)(ncmax * Dk + 2 * Dk + 2 * ncmax + TOK_SCALARS + TOK_PREP);
  int rc = orc_vars_alloc(&w->vars, n, p, "oracle token-form workspace", e);
  if (rc) return rc;
  mpfr_t *x = w->vars.v;
  w->Dk = Dk;
  w->ncmax = ncmax;
  w->h = x, x += ncmax * Dk;
  w->K = x, x += Dk;
  w->Q = x, x += Dk;
  w->v = x, x += ncmax;
  w->o = x, x += ncmax;
  w->a = x[0], w->beta = x[1], w->kv = x[2], w->delta = x[3], w->t = x[4], w->t2 = x[5];
  return GDN_OK;
}

void orc_tok_clear(orc_tok *w) {
  orc_vars_clear(&w->vars);
  orc_tok_init(w);
}

void orc_tok_begin(orc_tok *w, const gdn_inputs *in, int64_t b, int64_t j, int64_t c0, int64_t nc) {
  const gdn_shape *s = &in->shape;
  w->b = b, w->j = j, w->kh = gdn_inputs_key_head(in, j), w->c0 = c0, w->nc = nc;
  orc_prep_setup(&w->prep, in, w->vars.v + (w->vars.n - TOK_PREP));
  const float *h0 = gdn_inputs_h0(in, b, j);
  for (int64_t c = 0; c < nc; c++)
    for (int64_t i = 0; i < w->Dk; i++) {
      if (h0)
        mpfr_set_flt(orc_tok_h(w, i, c), h0[i * s->Dv + c0 + c], MPFR_RNDN);
      else
        mpfr_set_zero(orc_tok_h(w, i, c), 1);
    }
}

void orc_tok_step(orc_tok *w, const gdn_inputs *in, int64_t t) {
  const int64_t Dk = w->Dk, nc = w->nc, b = w->b, j = w->j;
  mpfr_t *K = w->K, *Q = w->Q;
  mpfr_ptr a = w->a, beta = w->beta, kv = w->kv, delta = w->delta, tt = w->t, t2 = w->t2;

  /* Packed documents (gdn_inputs.h): padding is the step with k = v = 0 and
   * g = 0 (a = exp(0) = 1, exact); a reset zeroes the decay, so h * a = 0
   * exactly and the token starts from the zero state. */
  const int kind = gdn_inputs_token_kind(in, b, t);
  if (kind == GDN_TOKEN_PAD)
    for (int64_t i = 0; i < Dk; i++) mpfr_set_zero(K[i], 1);
  else
    orc_prep_row(&w->prep, gdn_inputs_k(in, b, t, w->kh), K, 0);
  orc_prep_row(&w->prep, gdn_inputs_q(in, b, t, w->kh), Q, 1);
  if (kind == GDN_TOKEN_PAD) {
    mpfr_set_ui(a, 1, MPFR_RNDN);
  } else {
    mpfr_set_flt(a, gdn_inputs_g(in, b, t, j), MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
  }
  if (kind == GDN_TOKEN_RESET) mpfr_set_zero(a, 1);
  mpfr_set_flt(beta, gdn_inputs_beta(in, b, t, j), MPFR_RNDN);
  const float *vrow = gdn_inputs_v(in, b, t, j) + w->c0;
  for (int64_t c = 0; c < nc; c++) {
    if (kind == GDN_TOKEN_PAD) mpfr_set_zero(w->v[c], 1);
    else mpfr_set_flt(w->v[c], vrow[c], MPFR_RNDN);
  }

  for (int64_t c = 0; c < nc; c++) {
    mpfr_t *hc = w->h + c * Dk;
    /* h *= a fused with kv = h^T k: one pass over the column. */
    mpfr_mul(hc[0], hc[0], a, MPFR_RNDN);
    mpfr_mul(kv, hc[0], K[0], MPFR_RNDN);
    for (int64_t i = 1; i < Dk; i++) {
      mpfr_mul(hc[i], hc[i], a, MPFR_RNDN);
      mpfr_mul(tt, hc[i], K[i], MPFR_RNDN);
      mpfr_add(kv, kv, tt, MPFR_RNDN);
    }
    mpfr_sub(delta, w->v[c], kv, MPFR_RNDN);
    mpfr_mul(delta, delta, beta, MPFR_RNDN);
    /* h += k delta fused with o = h^T (scale q): the second pass. */
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
