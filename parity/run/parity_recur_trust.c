/* Whether a non-GDN fixture's stored /oracle stands as check's reference
 * (parity_recur_check.h). */
#include "parity_recur_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fix_oracle_check.h"

enum { SPOT_COLS = 4 };

/* in restricted to the value columns cols[0..n): v and h0 sliced; q, k,
 * beta (and the per-channel gate, which acts on the key axis) as they are. */
static int slice_columns(const gdn_inputs *in, const int64_t *cols, int64_t n, gdn_inputs *out, gdn_error *e) {
  gdn_shape s = in->shape;
  s.Dv = n;
  int rc = gdn_inputs_alloc(out, &s, in->h0 != NULL, e);
  if (rc) return rc;
  const gdn_shape *S = &in->shape;
  memcpy(out->q, in->q, gdn_shape_numel_qk(S) * sizeof *in->q);
  memcpy(out->k, in->k, gdn_shape_numel_qk(S) * sizeof *in->k);
  memcpy(out->g, in->g, gdn_shape_numel_gate(S) * sizeof *in->g);
  memcpy(out->beta, in->beta, gdn_shape_numel_gate(S) * sizeof *in->beta);
  for (int64_t r = 0; r < S->B * S->T * S->Hv; r++)
    for (int64_t c = 0; c < n; c++) out->v[r * n + c] = in->v[r * S->Dv + cols[c]];
  for (int64_t r = 0; in->h0 && r < S->B * S->Hv * S->Dk; r++)
    for (int64_t c = 0; c < n; c++) out->h0[r * n + c] = in->h0[r * S->Dv + cols[c]];
  return gdn_inputs_copy_settings(out, in, e);
}

/* max |a_sub - r| / max |r| over rows of `stride` values, columns cols. */
static void spot_acc(const double *a, const double *r, int64_t rows, int64_t stride, const int64_t *cols, int64_t n,
                     double *num, double *den) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < n; c++) {
      const double d = fabs(a[i * stride + cols[c]] - r[i * n + c]);
      *num = d > *num || d != d ? d : *num;
      if (fabs(r[i * n + c]) > *den) *den = fabs(r[i * n + c]);
    }
}

int parity_recur_spot_fold(const parity_recur_check_opts *o, const fix_fixture *fx, double acc[4], int64_t *ncols,
                           gdn_error *e) {
  const gdn_shape *S = &fx->inputs.shape;
  int64_t n = S->Dv < SPOT_COLS ? S->Dv : SPOT_COLS, cols[SPOT_COLS];
  for (int64_t c = 0; c < n; c++) cols[c] = (2 * c + 1) * S->Dv / (2 * n);
  gdn_inputs sub;
  gdn_inputs_init(&sub);
  gdn_outputs r;
  gdn_outputs_init(&r);
  oracle_config oc;
  oracle_config_init(&oc);
  oc.prec = o->oracle_bits;
  int rc = slice_columns(&fx->inputs, cols, n, &sub, e);
  if (!rc) rc = o->rec->oracle(&sub, &fx->chgate, &oc, &r, NULL, e);
  if (!rc) {
    spot_acc(fx->oracle.out.o, r.o, S->B * S->T * S->Hv, S->Dv, cols, n, &acc[0], &acc[1]);
    spot_acc(fx->oracle.out.ht, r.ht, S->B * S->Hv * S->Dk, S->Dv, cols, n, &acc[2], &acc[3]);
    *ncols = n;
  }
  gdn_outputs_clear(&r);
  gdn_inputs_clear(&sub);
  return rc;
}

int parity_recur_trust_gate(const fix_fixture *fx, char *why, size_t n) {
  const fix_oracle *s = &fx->oracle;
  why[0] = '\0';
  if (!s->present) return 0;
  if (!s->fresh)
    snprintf(why, n, "stale (its inputs_sha256 does not match the inputs)");
  else if (s->problem_fresh != 1)
    snprintf(why, n, "%s",
             s->problem_fresh == 0 ? "stale: an attribute that changes the answer (scale, l2norm_in_kernel, shape, "
                                     "h0) changed since it was computed (problem_sha256 differs)"
                                   : "freshness unknown: no problem_sha256 (gdn-fixture regen --force records it)");
  else
    return fix_oracle_check(&s->out, s->precision_bits, s->certified_bits, GDN_DTYPE_F32, why, n) == FIX_ORACLE_OK;
  return 0;
}

void parity_recur_trust_finish(parity_recur_trust *t, const double acc[4], int64_t ncols) {
  const double a = acc[1] > 0 ? acc[0] / acc[1] : acc[0] > 0 ? INFINITY : 0,
               b = acc[3] > 0 ? acc[2] / acc[3] : acc[2] > 0 ? INFINITY : 0;
  t->spot_rel = isnan(a) || isnan(b) ? INFINITY : a > b ? a : b;
  t->spot_columns = ncols;
  /* both round to binary64: agreement is ~1e-16; 2^-40 sees any edited
   * or mis-scaled value (as GDN's check: parity_cli.c) */
  t->trusted = t->spot_rel <= 0x1p-40;
  if (!t->trusted)
    snprintf(t->why, sizeof t->why, "spot check failed: %lld recomputed state columns differ from it by %.3g "
             "(normwise)", (long long)t->spot_columns, t->spot_rel);
}

int parity_recur_oracle_trust(const parity_recur_check_opts *o, const fix_fixture *fx, parity_recur_trust *t,
                              gdn_error *e) {
  memset(t, 0, sizeof *t);
  if (!parity_recur_trust_gate(fx, t->why, sizeof t->why)) return GDN_OK;
  double acc[4] = {0, 0, 0, 0};
  int64_t ncols = 0;
  const int rc = parity_recur_spot_fold(o, fx, acc, &ncols, e);
  if (!rc) parity_recur_trust_finish(t, acc, ncols);
  return rc;
}
