/* parity_kappa: the decays' condition measure (parity_kappa.h says what is
 * computed and how it is rounded). */
#include "parity_kappa.h"

#include <math.h>

static float token_g(const gdn_inputs *in, int64_t b, int64_t t, int64_t h) {
  return gdn_inputs_token_kind(in, b, t) == GDN_TOKEN_PAD ? 0.0f : gdn_inputs_g(in, b, t, h);
}

/* One (b, h) row: adds m_i^2 to *sq and returns the row's ht measure. */
static double row_kappa(const gdn_inputs *in, int64_t b, int64_t h, int64_t C, parity_xsum *sq) {
  const int64_t T = in->shape.T;
  double A = 0, B = 0, s = 0;
  float G = 0, Gp = 0; /* float32 on purpose: the stock algorithm's rounding */
  for (int64_t t = 0; t < T; t++) {
    const float g = token_g(in, b, t, h);
    const int first = t % C == 0;
    G = first ? g : G + g;
    s = first ? exp((double)G) : exp((double)G - (double)Gp) * (s + 1);
    Gp = G;
    const double m = fabs((double)G) / (1 + 1 / s); /* |G| s / (1 + s), also for s = 0 or inf */
    parity_xsum_add(sq, m * m);
    const double w = exp((double)g); /* the decay of token t applies to everything before it */
    A = w * A + m;
    B = w * B + 1;
  }
  return T ? A / B : 0;
}

void parity_kappa_acc_init(parity_kappa_acc *a) {
  parity_xsum_init(&a->sq);
  a->ht = 0;
  a->n = 0;
  a->bad = 0;
}

/* ht's maximum as the whole pass keeps it: a NaN, once met, stays. */
static void ht_max(double *k, double r) {
  if (r > *k || isnan(r)) *k = isnan(*k) ? *k : r;
}

void parity_kappa_acc_add(parity_kappa_acc *a, const gdn_inputs *in, int64_t C) {
  if (C < 1) {
    a->bad = 1;
    return;
  }
  const gdn_shape *S = &in->shape;
  for (int64_t b = 0; b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) ht_max(&a->ht, row_kappa(in, b, h, C, &a->sq));
  a->n += S->B * S->T * S->Hv;
}

void parity_kappa_acc_merge(parity_kappa_acc *a, const parity_kappa_acc *b) {
  parity_xsum_merge(&a->sq, &b->sq);
  ht_max(&a->ht, b->ht);
  a->n += b->n;
  a->bad |= b->bad;
}

parity_kappa parity_kappa_acc_value(const parity_kappa_acc *a) {
  if (a->bad) return (parity_kappa){NAN, NAN};
  const double sq = parity_xsum_value(&a->sq);
  return (parity_kappa){a->n > 0 ? sqrt(sq / (double)a->n) : 0, a->ht};
}

parity_kappa parity_kappa_g(const gdn_inputs *in, int64_t C) {
  static __thread parity_kappa_acc a; /* 32 KiB: not on the stack */
  parity_kappa_acc_init(&a);
  parity_kappa_acc_add(&a, in, C);
  return parity_kappa_acc_value(&a);
}
