#include "parity_packing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_shape.h"
#include "parity_json.h"

int64_t parity_packing_boundaries(const gdn_inputs *in) {
  if (!in->seg) return 0;
  const int64_t T = in->shape.T;
  int64_t n = 0;
  for (int64_t b = 0; b < in->shape.B; b++)
    for (int64_t t = 1; t < T; t++) {
      int32_t c = in->seg[b * T + t];
      n += c != 0 && c != in->seg[b * T + t - 1];
    }
  return n;
}

/* Both maxima are exact; the one division rounds (binary64).  A NaN in o
 * makes the error NaN (fmax would hide it), so it is carried explicitly. */
double parity_packing_err(const double *o, const double *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs(o[i] - ref[i]);
    if (isnan(d)) return NAN;
    if (d > num) num = d;
    if (fabs(ref[i]) > den) den = fabs(ref[i]);
  }
  return den > 0 ? num / den : num;
}

int parity_packing_decide(const double err[2]) {
  if (isnan(err[0]) || isnan(err[1])) return -1;
  if (err[GDN_PACKING_LEAK] * PARITY_PACKING_DECISIVE <= err[GDN_PACKING_RESET] && err[GDN_PACKING_RESET] > 0)
    return GDN_PACKING_LEAK;
  if (err[GDN_PACKING_RESET] * PARITY_PACKING_DECISIVE <= err[GDN_PACKING_LEAK] && err[GDN_PACKING_LEAK] > 0)
    return GDN_PACKING_RESET;
  return -1;
}

/* parity_packing_err over the documents' tokens only: a padding token's o
 * is a convention (parity_padding.h), not a packing. */
static double err_documents(const gdn_inputs *in, const double *o, const double *ref) {
  const size_t row = (size_t)(in->shape.Hv * in->shape.Dv), nt = (size_t)(in->shape.B * in->shape.T);
  double num = 0, den = 0;
  for (size_t t = 0; t < nt; t++) {
    if (in->seg[t] == 0) continue;
    for (size_t i = t * row; i < (t + 1) * row; i++) {
      double d = fabs(o[i] - ref[i]);
      if (isnan(d)) return NAN;
      if (d > num) num = d;
      if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
  }
  return den > 0 ? num / den : num;
}

int parity_packing_record(parity_external *x, const double err[2], int declared, gdn_error *e) {
  int m = parity_packing_decide(err);
  x->packing_matched = m;
  x->packing_mismatch = m >= 0 && m != declared;
  if (x->packing_mismatch)
    snprintf(x->packing_note, sizeof x->packing_note,
             "matches packing %s, not the fixture's %s: %s", gdn_packing_name(m), gdn_packing_name(declared),
             m == GDN_PACKING_LEAK ? "the implementation carries state across document boundaries"
                                   : "the implementation restarts the state at every document boundary");
  json_t *je = json_object();
  if (!je || parity_json_set(je, "leak", parity_json_real(err[GDN_PACKING_LEAK])) ||
      parity_json_set(je, "reset", parity_json_real(err[GDN_PACKING_RESET]))) {
    json_decref(je);
    je = NULL;
  }
  /* parity_json_set steals je (and fails on NULL) */
  int bad = parity_json_set(x->attrs, "packing_err", je) ||
            parity_json_set(x->attrs, "packing_matched", json_string(m < 0 ? "indistinguishable" : gdn_packing_name(m))) ||
            (x->packing_mismatch && parity_json_set(x->attrs, "packing_verdict", json_string(x->packing_note)));
  /* the output's own declaration (schema v2 attribute packing) against what it computes */
  const char *decl = json_string_value(json_object_get(x->attrs, "packing"));
  if (!bad && decl && m >= 0 && strcmp(decl, gdn_packing_name(m))) {
    char note[160];
    snprintf(note, sizeof note, "declares packing %s but computes %s", decl, gdn_packing_name(m));
    bad = parity_json_set(x->attrs, "packing_declared", json_string(note));
  }
  return bad ? gdn_error_set(e, GDN_ERR_NOMEM, "out of memory recording the packing of output %s", x->name) : GDN_OK;
}

int parity_packing_match(const gdn_inputs *in, const parity_reference *ref, parity_oracle_tier tier, int bits,
                         parity_external *ext, size_t n, gdn_error *e) {
  if (!n || !ref || !ref->out.o || parity_packing_boundaries(in) == 0) return GDN_OK;
  gdn_inputs other;
  gdn_inputs_init(&other);
  parity_reference alt;
  parity_reference_init(&alt);
  gdn_inputs view = *in; /* the kernel inputs without the prelude: the oracle never reads it */
  view.prelude = NULL;
  int rc = gdn_inputs_copy(&other, &view, e);
  if (!rc) {
    other.packing = in->packing == GDN_PACKING_LEAK ? GDN_PACKING_RESET : GDN_PACKING_LEAK;
    rc = parity_reference_compute(&alt, &other, tier, bits, e);
  }
  for (size_t i = 0; !rc && i < n; i++) {
    double err[2];
    err[in->packing] = err_documents(in, ext[i].out->o, ref->out.o);
    err[other.packing] = err_documents(in, ext[i].out->o, alt.out.o);
    rc = parity_packing_record(&ext[i], err, in->packing, e);
  }
  parity_reference_clear(&alt);
  gdn_inputs_clear(&other);
  return rc;
}
