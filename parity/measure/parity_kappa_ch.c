/* parity_kappa_ch: kappa_G per key channel (parity_kappa_ch.h says what is
 * computed and how it is rounded). */
#include "parity_kappa_ch.h"

#include <math.h>
#include <stdlib.h>

#include "gdn_alloc.h"

/* One (b, h, d) row: adds sum m_i^2 to *sq, returns the row's ht measure. */
static double row_kappa(const gdn_chgate *gate, const gdn_shape *s, int64_t b, int64_t h, int64_t d, int64_t C,
                        int64_t L, double *sq) {
  double A = 0, B = 0, sc = 0;
  float G = 0, Gp = 0; /* float32 on purpose: the kernel's rounding */
  for (int64_t t = 0; t < s->T; t++) {
    const float g = gdn_chgate_row(gate->g, s, b, t, h)[d];
    const int first = t % L % C == 0;
    G = first ? g : G + g;
    sc = first ? exp((double)G) : exp((double)G - (double)Gp) * (sc + 1);
    Gp = G;
    const double m = fabs((double)G) / (1 + 1 / sc);
    *sq += m * m;
    const double w = exp((double)g);
    A = w * A + m;
    B = w * B + 1;
  }
  return s->T ? A / B : 0;
}

/* NaN wins; otherwise the larger. */
static int worse(double a, double b) { return isnan(a) ? !isnan(b) : a > b; }

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return isnan(a) ? (isnan(b) ? 0 : 1) : isnan(b) ? -1 : (a > b) - (a < b);
}

void parity_kappa_ch_acc_init(parity_kappa_ch_acc *a) { *a = (parity_kappa_ch_acc){0, 0, NULL, NULL}; }

void parity_kappa_ch_acc_clear(parity_kappa_ch_acc *a) {
  gdn_free(a->sq);
  gdn_free(a->ht);
  parity_kappa_ch_acc_init(a);
}

int parity_kappa_ch_acc_add(parity_kappa_ch_acc *a, const gdn_inputs *in, const gdn_chgate *gate, int64_t C, int64_t D,
                         gdn_error *e) {
  const gdn_shape *s = &in->shape;
  if (C < 1 || D < 1)
    return gdn_error_set(e, GDN_ERR_INPUT, "kappa per channel: chunk size %lld or devices %lld < 1", (long long)C,
                         (long long)D);
  if (!gate->g || gate->shape.B != s->B || gate->shape.T != s->T || gate->shape.Hv != s->Hv ||
      gate->shape.Dk != s->Dk)
    return gdn_error_set(e, GDN_ERR_INPUT, "kappa per channel: the gate's shape is not the inputs' (B, T, Hv, Dk)");
  if (a->sq && a->Dk != s->Dk)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "kappa per channel: a group of Dk %lld after Dk %lld", (long long)s->Dk,
                         (long long)a->Dk);
  if (!a->sq) {
    a->Dk = s->Dk;
    a->sq = gdn_calloc((size_t)s->Dk + 1, sizeof *a->sq, "kappa per channel", e);
    a->ht = gdn_calloc((size_t)s->Dk + 1, sizeof *a->ht, "kappa per channel", e);
    if (!a->sq || !a->ht) return parity_kappa_ch_acc_clear(a), GDN_ERR_NOMEM;
  }
  a->n += (double)(s->B * s->T * s->Hv);
  if (s->T == 0) return GDN_OK;
  const int64_t L = s->T / D > 0 ? s->T / D : s->T, Ce = C < L ? C : L;
  for (int64_t d = 0; d < s->Dk; d++)
    for (int64_t h = 0; h < s->Hv; h++)
      for (int64_t b = 0; b < s->B; b++) {
        const double r = row_kappa(gate, s, b, h, d, Ce, L, &a->sq[d]);
        if (worse(r, a->ht[d])) a->ht[d] = r;
      }
  return GDN_OK;
}

int parity_kappa_ch_acc_finish(const parity_kappa_ch_acc *a, parity_kappa_ch *out, gdn_error *e) {
  *out = (parity_kappa_ch){0, 0, 0, 0, 0};
  if (!a->sq || a->Dk == 0 || a->n == 0) return GDN_OK;
  double *k = gdn_calloc((size_t)a->Dk, sizeof *k, "kappa per channel", e);
  if (!k) return GDN_ERR_NOMEM;
  for (int64_t d = 0; d < a->Dk; d++) {
    const double o = sqrt(a->sq[d] / a->n), ht = a->ht[d];
    k[d] = worse(ht, o) ? ht : o;
    if (d == 0 || worse(k[d], out->worst)) *out = (parity_kappa_ch){k[d], d, o, ht, 0};
  }
  qsort(k, (size_t)a->Dk, sizeof *k, cmp_double);
  out->median = k[(a->Dk - 1) / 2];
  gdn_free(k);
  return GDN_OK;
}

int parity_kappa_channels(const gdn_inputs *in, const gdn_chgate *gate, int64_t C, int64_t D, parity_kappa_ch *out,
                          gdn_error *e) {
  *out = (parity_kappa_ch){0, 0, 0, 0, 0};
  parity_kappa_ch_acc a;
  parity_kappa_ch_acc_init(&a);
  int rc = parity_kappa_ch_acc_add(&a, in, gate, C, D, e);
  if (!rc) rc = parity_kappa_ch_acc_finish(&a, out, e);
  parity_kappa_ch_acc_clear(&a);
  return rc;
}
