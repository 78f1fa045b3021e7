#include "parity_packing_group.h"

#include <math.h>
#include <string.h>

#include "parity_packing.h"

void parity_packing_acc_init(parity_packing_acc *a) { memset(a, 0, sizeof *a); }

/* The order of err_documents (parity_packing.c): tokens, then the row. */
void parity_packing_acc_add(parity_packing_acc *a, int p, const gdn_inputs *in, const double *o, const double *ref) {
  const size_t row = (size_t)(in->shape.Hv * in->shape.Dv), nt = (size_t)(in->shape.B * in->shape.T);
  double num = a->num[p], den = a->den[p];
  for (size_t t = 0; t < nt && !a->nan[p]; t++) {
    if (in->seg[t] == 0) continue;
    for (size_t i = t * row; i < (t + 1) * row; i++) {
      const double d = fabs(o[i] - ref[i]);
      if (isnan(d)) {
        a->nan[p] = 1;
        break;
      }
      if (d > num) num = d;
      if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
  }
  a->num[p] = num, a->den[p] = den;
}

void parity_packing_acc_err(const parity_packing_acc *a, double err[2]) {
  for (int p = 0; p < 2; p++) err[p] = a->nan[p] ? NAN : a->den[p] > 0 ? a->num[p] / a->den[p] : a->num[p];
}

int parity_packing_group_other(const gdn_inputs *in, parity_oracle_tier tier, int bits, parity_reference *alt,
                               gdn_error *e) {
  gdn_inputs other;
  gdn_inputs_init(&other);
  gdn_inputs view = *in; /* the kernel inputs without the prelude: the oracle never reads it */
  view.prelude = NULL;
  int rc = gdn_inputs_copy(&other, &view, e);
  if (!rc) {
    other.packing = in->packing == GDN_PACKING_LEAK ? GDN_PACKING_RESET : GDN_PACKING_LEAK;
    rc = parity_reference_compute(alt, &other, tier, bits, e);
  }
  gdn_inputs_clear(&other);
  return rc;
}

int parity_packing_group_add(const gdn_inputs *in, const parity_reference *ref, parity_oracle_tier tier, int bits,
                             const double *const *o, size_t n, parity_packing_acc *acc, gdn_error *e) {
  if (!n || !ref || !ref->out.o || parity_packing_boundaries(in) == 0) return GDN_OK;
  parity_reference alt;
  parity_reference_init(&alt);
  const int p = (int)in->packing, q = in->packing == GDN_PACKING_LEAK ? GDN_PACKING_RESET : GDN_PACKING_LEAK;
  int rc = parity_packing_group_other(in, tier, bits, &alt, e);
  for (size_t i = 0; !rc && i < n; i++) {
    parity_packing_acc_add(&acc[i], p, in, o[i], ref->out.o);
    parity_packing_acc_add(&acc[i], q, in, o[i], alt.out.o);
  }
  parity_reference_clear(&alt);
  return rc;
}

int parity_packing_group_record(const gdn_inputs *in, const parity_packing_acc *acc, parity_external *ext, size_t n,
                                gdn_error *e) {
  if (!n || parity_packing_boundaries(in) == 0) return GDN_OK;
  int rc = GDN_OK;
  for (size_t i = 0; !rc && i < n; i++) {
    double err[2];
    parity_packing_acc_err(&acc[i], err);
    rc = parity_packing_record(&ext[i], err, in->packing, e);
  }
  return rc;
}
