/* parity_kappa: the decays' condition measure (parity_kappa.h says what is
 * computed and how it is rounded). */
#include "parity_kappa.h"

#include <math.h>

static float token_g(const gdn_inputs *in, int64_t b, int64_t t, int64_t h) {
  return gdn_inputs_token_kind(in, b, t) == GDN_TOKEN_PAD ? 0.0f : gdn_inputs_g(in, b, t, h);
}

/* One (b, h) row: adds m_i^2 to *sq and returns the row's ht measure. */
static double row_kappa(const gdn_inputs *in, int64_t b, int64_t h, int64_t C, double *sq) {
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
    *sq += m * m;
    const double w = exp((double)g); /* the decay of token t applies to everything before it */
    A = w * A + m;
    B = w * B + 1;
  }
  return T ? A / B : 0;
}

parity_kappa parity_kappa_g(const gdn_inputs *in, int64_t C) {
  parity_kappa k = {0, 0};
  if (C < 1) return (parity_kappa){NAN, NAN};
  const gdn_shape *S = &in->shape;
  double sq = 0;
  for (int64_t b = 0; b < S->B; b++)
    for (int64_t h = 0; h < S->Hv; h++) {
      double r = row_kappa(in, b, h, C, &sq);
      if (r > k.ht || isnan(r)) k.ht = isnan(k.ht) ? k.ht : r;
    }
  const double n = (double)(S->B * S->T * S->Hv);
  k.o = n > 0 ? sqrt(sq / n) : 0;
  return k;
}
