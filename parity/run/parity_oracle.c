#include "parity_oracle.h"

#include <math.h>
#include <stdio.h>

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "gdn_alloc.h"
#include "oracle.h"
#include "parity_metrics.h"
#include "parity_dist.h"
#include "oracle_vjp.h"
#include "gdn_clock.h"

double parity_oracle_mpfr_cost(const gdn_shape *s, int bits) {
  double macs = 3.0 * (double)s->B * (double)s->Hv * (double)s->T * (double)s->Dk * (double)s->Dv;
  int limbs = (bits + 63) / 64 + (bits + 64 + 63) / 64;
  return macs * (double)limbs / 5.0;
}

parity_oracle_tier parity_oracle_resolve(parity_oracle_tier t, const gdn_shape *s, int bits) {
  if (t != PARITY_ORACLE_AUTO) return t;
  return parity_oracle_mpfr_cost(s, bits) <= PARITY_ORACLE_AUTO_MPFR_MACS ? PARITY_ORACLE_MPFR
                                                                          : PARITY_ORACLE_DD;
}

parity_oracle_tier parity_oracle_resolve_grads(parity_oracle_tier requested, const gdn_shape *s, int bits) {
  if (requested != PARITY_ORACLE_AUTO) return requested;
  return (1.0 + PARITY_ORACLE_VJP_COST) * parity_oracle_mpfr_cost(s, bits) <= PARITY_ORACLE_AUTO_MPFR_MACS
             ? PARITY_ORACLE_MPFR
             : PARITY_ORACLE_DD;
}

void parity_reference_init(parity_reference *r) {
  memset(r, 0, sizeof *r);
  r->normwise_bits = r->guaranteed_bits = -1;
  r->bound_violations = -1;
  gdn_outputs_init(&r->out);
  gdn_grads_init(&r->grads);
  r->grad_normwise_bits = -1;
}

void parity_reference_clear(parity_reference *r) {
  if (!r->borrowed) gdn_outputs_clear(&r->out);
  gdn_grads_clear(&r->grads);
  gdn_free(r->ht_docs);
  parity_reference_init(r);
}

void parity_reference_borrow(parity_reference *r, const gdn_outputs *out) {
  if (!r->borrowed) gdn_outputs_clear(&r->out);
  r->out = *out;
  r->borrowed = 1;
}

int parity_reference_take_dd(parity_reference *r, const oracle_dd_certificate *cert, gdn_error *e) {
  r->precision_bits = cert->precision_bits;
  r->check_bits = cert->check_bits;
  r->certified_bits = cert->certified_bits;
  r->normwise_bits = cert->normwise_bits;
  r->guaranteed_bits = cert->guaranteed_bits;
  r->bound_violations = cert->bound_violations;
  r->sampled_columns = cert->sampled_columns;
  r->total_columns = cert->total_columns;
  if (cert->bound_violations <= 0) return GDN_OK;
  /* The sampled MPFR columns fell outside the dd tier's own proven error
   * bound: the reference cannot be trusted, so nothing is judged against it. */
  return gdn_error_set(e, GDN_ERR_INTERNAL,
                       "dd oracle: %" PRId64 " sampled element%s exceeded the tier's error bound; "
                       "the reference is not trustworthy (rerun with --oracle mpfr)",
                       cert->bound_violations, cert->bound_violations == 1 ? "" : "s");
}

void parity_reference_take_mpfr(parity_reference *r, const oracle_certificate *cert, const gdn_shape *s) {
  r->precision_bits = cert->precision_bits;
  r->check_bits = cert->check_bits;
  r->certified_bits = cert->certified_bits;
  r->total_columns = s->B * s->Hv * s->Dv;
  r->sampled_columns = r->total_columns; /* the MPFR tier certifies every column */
}

int parity_reference_compute(parity_reference *r, const gdn_inputs *in, parity_oracle_tier tier,
                             int bits, gdn_error *e) {
  return parity_reference_compute_progress(r, in, tier, bits, NULL, e);
}

int parity_reference_compute_progress(parity_reference *r, const gdn_inputs *in, parity_oracle_tier tier,
                                      int bits, const oracle_progress *progress, gdn_error *e) {
  parity_reference_clear(r);
  r->requested = tier;
  r->tier = tier;
  if (tier == PARITY_ORACLE_NONE) return GDN_OK;
  if (!in) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: inputs missing (NULL)");
  const gdn_shape *s = &in->shape;
  r->mpfr_cost = parity_oracle_mpfr_cost(s, bits);
  r->tier = parity_oracle_resolve(tier, s, bits);
  double t0 = gdn_clock_seconds();
  int rc;
  if (r->tier == PARITY_ORACLE_DD) {
    oracle_dd_config cfg;
    oracle_dd_config_init(&cfg);
    cfg.sample_prec = bits;
    cfg.sample_columns = PARITY_ORACLE_DD_SAMPLE;
    cfg.progress = progress;
    oracle_dd_certificate cert;
    if ((rc = parity_dist_oracle_dd(in, &cfg, &r->out, &cert, e))) return rc; /* dealt under mpirun */
    if ((rc = parity_reference_take_dd(r, &cert, e))) {
      gdn_outputs_clear(&r->out); /* nothing is judged against it */
      return rc;
    }
  } else {
    oracle_config cfg;
    oracle_config_init(&cfg);
    cfg.prec = bits;
    cfg.progress = progress;
    oracle_certificate cert;
    if ((rc = parity_dist_oracle_mpfr(in, &cfg, &r->out, &cert, e))) return rc; /* dealt under mpirun */
    parity_reference_take_mpfr(r, &cert, s);
  }
  r->form = "token";
  r->seconds = gdn_clock_seconds() - t0;
  return GDN_OK;
}

/* in restricted to the value columns cols[0..n) (q, k, g, beta, seg as they are). */
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

/* ||a_sub - r|| and ||r|| into acc, a the full tensor, rows of `stride`
 * values of which cols[0..n) are taken, and r holding those n per row:
 * exact sums (parity_rel_acc), so a run by head group adds its groups'
 * rows and finds the whole run's value. */
static void sub_acc(parity_rel_acc *acc, const double *a, const double *r, int64_t rows, int64_t stride,
                    const int64_t *cols, int64_t n) {
  double x[64];
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t c = 0; c < n; c++) x[c] = a[i * stride + cols[c]];
    parity_rel_acc_add(acc, x, r + i * n, (size_t)n);
  }
}

int64_t parity_reference_spot_part(const gdn_inputs *in, const gdn_outputs *stored, int64_t ncols, parity_rel_acc *ro,
                                   parity_rel_acc *rh, gdn_error *e) {
  const gdn_shape *S = &in->shape;
  int64_t n = ncols < S->Dv ? ncols : S->Dv, cols[64];
  if (n > 64) n = 64;
  for (int64_t c = 0; c < n; c++) cols[c] = (2 * c + 1) * S->Dv / (2 * n);
  gdn_inputs sub;
  gdn_inputs_init(&sub);
  gdn_outputs r;
  gdn_outputs_init(&r);
  int rc = slice_columns(in, cols, n, &sub, e);
  if (!rc) rc = gdn_outputs_alloc(&r, &sub.shape, GDN_DTYPE_F64, e);
  if (!rc) {
    oracle_dd_config cfg;
    oracle_dd_config_init(&cfg);
    cfg.sample_columns = 0; /* the dd values only: the check is against the stored MPFR values */
    oracle_dd_certificate cert;
    rc = oracle_run_dd(&sub, &cfg, &r, &cert, e);
  }
  if (!rc) {
    sub_acc(ro, stored->o, r.o, S->B * S->T * S->Hv, S->Dv, cols, n);
    sub_acc(rh, stored->ht, r.ht, S->B * S->Hv * S->Dk, S->Dv, cols, n);
  }
  gdn_outputs_clear(&r);
  gdn_inputs_clear(&sub);
  return rc ? -rc : n;
}

double parity_reference_spot_rel(const parity_rel_acc *ro, const parity_rel_acc *rh) {
  const double a = parity_rel_acc_value(ro), b = parity_rel_acc_value(rh);
  const double rel = a > b ? a : b;
  return isnan(rel) || isnan(a) || isnan(b) ? INFINITY : rel;
}

int parity_reference_spot_check(const gdn_inputs *in, const gdn_outputs *stored, int64_t ncols, double *rel,
                                int64_t *checked, gdn_error *e) {
  parity_rel_acc *acc = gdn_calloc(2, sizeof *acc, "spot check sums", e);
  if (!acc) return e ? e->code : GDN_ERR_NOMEM;
  parity_rel_acc_init(&acc[0]);
  parity_rel_acc_init(&acc[1]);
  const int64_t n = parity_reference_spot_part(in, stored, ncols, &acc[0], &acc[1], e);
  if (n >= 0) {
    *rel = parity_reference_spot_rel(&acc[0], &acc[1]);
    *checked = n;
  }
  gdn_free(acc);
  return n < 0 ? (int)-n : GDN_OK;
}
int parity_reference_compute_grads(parity_reference *r, const gdn_inputs *in, const gdn_cotangents *ct,
                                   parity_oracle_tier requested, int bits, gdn_error *e) {
  gdn_grads_clear(&r->grads);
  r->has_grads = 0;
  r->grad_tier = parity_oracle_resolve_grads(requested, &in->shape, bits);
  if (r->grad_tier == PARITY_ORACLE_NONE) return GDN_OK;
  double t0 = gdn_clock_seconds();
  int rc;
  if (r->grad_tier == PARITY_ORACLE_DD) {
    oracle_vjp_dd_config cfg;
    oracle_vjp_dd_config_init(&cfg);
    cfg.sample_prec = bits;
    cfg.sample_columns = PARITY_ORACLE_DD_SAMPLE;
    oracle_vjp_dd_certificate cert;
    if ((rc = parity_dist_oracle_vjp_dd(in, ct, &cfg, &r->grads, &cert, e))) return rc; /* dealt under mpirun */
    r->grad_certified_bits = cert.certified_bits;
    r->grad_normwise_bits = cert.normwise_bits;
  } else {
    oracle_vjp_config cfg;
    oracle_vjp_config_init(&cfg);
    cfg.prec = bits;
    oracle_vjp_certificate cert;
    if ((rc = parity_dist_oracle_vjp(in, ct, &cfg, &r->grads, &cert, e))) return rc; /* dealt under mpirun */
    r->grad_certified_bits = cert.certified_bits;
  }
  r->has_grads = 1;
  r->grad_seconds = gdn_clock_seconds() - t0;
  return GDN_OK;
}
