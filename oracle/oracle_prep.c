/* The per-token preparation of q and k shared by both forms (oracle.h). */
#include "oracle_internal.h"

void orc_prep_setup(orc_prep *c, const gdn_inputs *in, mpfr_t *five) {
  c->Dk = in->shape.Dk;
  c->l2norm = in->l2norm_in_kernel != 0;
  c->scale = five[0];
  c->eps = five[1];
  c->ss = five[2];
  c->inv = five[3];
  c->t = five[4];
  if (in->has_scale) {
    mpfr_set_d(c->scale, in->scale, MPFR_RNDN);
  } else {
    /* Dk^-1/2 correctly rounded: Dk itself is exact in 64 bits (it may not
     * be at p = 24), so take the reciprocal square root of that. */
    mpfr_t dk;
    mpfr_init2(dk, 64);
    mpfr_set_si(dk, (long)in->shape.Dk, MPFR_RNDN); /* long is 64 bits (LP64) */
    mpfr_rec_sqrt(c->scale, dk, MPFR_RNDN);
    mpfr_clear(dk);
  }
  mpfr_set_d(c->eps, 1e-6, MPFR_RNDN); /* the binary64 literal, as Python's */
}

void orc_prep_row(const orc_prep *c, const float *x, mpfr_t *X, int is_q) {
  const int64_t Dk = c->Dk;
  for (int64_t i = 0; i < Dk; i++) mpfr_set_flt(X[i], x[i], MPFR_RNDN); /* exact: p >= 24 */
  if (c->l2norm) {
    mpfr_sqr(c->ss, X[0], MPFR_RNDN);
    for (int64_t i = 1; i < Dk; i++) {
      mpfr_sqr(c->t, X[i], MPFR_RNDN);
      mpfr_add(c->ss, c->ss, c->t, MPFR_RNDN);
    }
    mpfr_add(c->ss, c->ss, c->eps, MPFR_RNDN);
    mpfr_rec_sqrt(c->inv, c->ss, MPFR_RNDN);
    /* q's two factors are combined first: one product per element. */
    if (is_q) mpfr_mul(c->inv, c->inv, c->scale, MPFR_RNDN);
    for (int64_t i = 0; i < Dk; i++) mpfr_mul(X[i], X[i], c->inv, MPFR_RNDN);
  } else if (is_q) {
    for (int64_t i = 0; i < Dk; i++) mpfr_mul(X[i], X[i], c->scale, MPFR_RNDN);
  }
}

gdn_shape orc_block_shape(const gdn_shape *s, const unsigned char *heads) {
  gdn_shape b = *s;
  if (!heads) return b;
  int64_t n = 0;
  for (int64_t h = 0; h < s->B * s->Hv; h++) n += heads[h] != 0;
  b.B = 1;
  b.Hv = n > 0 ? n : 1;
  return b;
}
