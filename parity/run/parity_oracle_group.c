#include "parity_oracle_group.h"
#include "gdn_clock.h"

#include <inttypes.h>
#include <string.h>

void parity_group_oracle_init(parity_group_oracle *go, const gdn_shape *whole, parity_oracle_tier requested,
                              int bits, int grads) {
  memset(go, 0, sizeof *go);
  go->whole = *whole;
  go->requested = requested;
  go->bits = bits;
  go->grads = grads;
  go->tier = parity_oracle_resolve(requested, whole, bits);
  go->grad_tier = grads ? parity_oracle_resolve_grads(requested, whole, bits) : PARITY_ORACLE_NONE;
  oracle_tally_init(&go->fwd);
  oracle_tally_init(&go->vjp);
}

void parity_group_oracle_clear(parity_group_oracle *go) {
  oracle_tally_clear(&go->fwd);
  oracle_tally_clear(&go->vjp);
}

/* The group's tally into the merged one (the first group's is taken). */
static int tally_fold(oracle_tally *sum, oracle_tally *one, gdn_error *e) {
  if (sum->tier == 0) {
    *sum = *one;
    oracle_tally_init(one);
    return GDN_OK;
  }
  int rc = oracle_tally_merge(sum, one, e);
  oracle_tally_clear(one);
  return rc;
}

/* The tiers' configurations as the whole run's reference has them
 * (parity_oracle.c), the dd samples placed at value head v0 of the run. */
static oracle_dd_config dd_config(const parity_group_oracle *go, int64_t v0) {
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  cfg.sample_prec = go->bits;
  cfg.sample_columns = PARITY_ORACLE_DD_SAMPLE;
  cfg.head0 = v0, cfg.whole_hv = go->whole.Hv;
  return cfg;
}

static oracle_vjp_dd_config vjp_dd_config(const parity_group_oracle *go, int64_t v0) {
  oracle_vjp_dd_config cfg;
  oracle_vjp_dd_config_init(&cfg);
  cfg.sample_prec = go->bits;
  cfg.sample_columns = PARITY_ORACLE_DD_SAMPLE;
  cfg.head0 = v0, cfg.whole_hv = go->whole.Hv;
  return cfg;
}

static oracle_config mpfr_config(const parity_group_oracle *go) {
  oracle_config cfg;
  oracle_config_init(&cfg);
  cfg.prec = go->bits;
  return cfg;
}

static oracle_vjp_config vjp_config(const parity_group_oracle *go) {
  oracle_vjp_config cfg;
  oracle_vjp_config_init(&cfg);
  cfg.prec = go->bits;
  return cfg;
}

/* The group's forward into r->out, its tally into *t (empty on entry):
 * every head of the group here (a streamed run deals whole groups). */
static int run_forward(const parity_group_oracle *go, const gdn_inputs *in, int64_t v0, parity_reference *r,
                       oracle_tally *t, gdn_error *e) {
  if (go->tier == PARITY_ORACLE_DD) {
    const oracle_dd_config cfg = dd_config(go, v0);
    return oracle_run_dd_part(in, &cfg, NULL, &r->out, t, e);
  }
  const oracle_config cfg = mpfr_config(go);
  return oracle_run_part(in, &cfg, NULL, &r->out, t, e);
}

static int run_vjp(const parity_group_oracle *go, const gdn_inputs *in, int64_t v0, const gdn_cotangents *ct,
                   parity_reference *r, oracle_tally *t, gdn_error *e) {
  int rc;
  if (go->grad_tier == PARITY_ORACLE_DD) {
    const oracle_vjp_dd_config cfg = vjp_dd_config(go, v0);
    rc = oracle_vjp_dd_part(in, ct, &cfg, NULL, &r->grads, t, e);
  } else {
    const oracle_vjp_config cfg = vjp_config(go);
    rc = oracle_vjp_part(in, ct, &cfg, NULL, &r->grads, t, e);
  }
  if (!rc) r->has_grads = 1;
  return rc;
}

int parity_group_oracle_compute(const parity_group_oracle *go, const gdn_inputs *in, int64_t k0,
                                const gdn_cotangents *ct, parity_reference *r, parity_group_tally *gt,
                                gdn_error *e) {
  parity_reference_clear(r);
  r->requested = go->requested;
  r->tier = go->tier;
  r->grad_tier = go->grad_tier;
  if (go->tier == PARITY_ORACLE_NONE) return GDN_OK;
  const int64_t v0 = k0 * (go->whole.Hv / go->whole.Hk); /* the group's first value head */
  double t0 = gdn_clock_seconds();
  int rc = go->vjp_only ? GDN_OK : run_forward(go, in, v0, r, &gt->fwd, e);
  gt->seconds[0] = gdn_clock_seconds() - t0;
  if (rc || !go->grads || go->grad_tier == PARITY_ORACLE_NONE) return rc;
  if (!ct) return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle by head group: gradients asked for without cotangents");
  t0 = gdn_clock_seconds();
  rc = run_vjp(go, in, v0, ct, r, &gt->vjp, e);
  gt->seconds[1] = gdn_clock_seconds() - t0;
  return rc;
}

void parity_group_tally_init(parity_group_tally *gt) {
  oracle_tally_init(&gt->fwd);
  oracle_tally_init(&gt->vjp);
  gt->seconds[0] = gt->seconds[1] = 0;
}

void parity_group_tally_clear(parity_group_tally *gt) {
  oracle_tally_clear(&gt->fwd);
  oracle_tally_clear(&gt->vjp);
}

int parity_group_oracle_fold(parity_group_oracle *go, parity_group_tally *gt, gdn_error *e) {
  int rc = gt->fwd.tier ? tally_fold(&go->fwd, &gt->fwd, e) : GDN_OK;
  if (!rc && gt->vjp.tier) rc = tally_fold(&go->vjp, &gt->vjp, e);
  go->seconds += gt->seconds[0];
  go->grad_seconds += gt->seconds[1];
  return rc;
}

int parity_group_oracle_run(parity_group_oracle *go, const gdn_inputs *in, int64_t k0, const gdn_cotangents *ct,
                            parity_reference *r, gdn_error *e) {
  parity_group_tally gt;
  parity_group_tally_init(&gt);
  int rc = parity_group_oracle_compute(go, in, k0, ct, r, &gt, e);
  if (!rc) rc = parity_group_oracle_fold(go, &gt, e);
  parity_group_tally_clear(&gt);
  return rc;
}

static int finish_forward(const parity_group_oracle *go, parity_reference *r, gdn_error *e) {
  const gdn_shape *s = &go->whole;
  int rc;
  if (go->tier == PARITY_ORACLE_DD) {
    const oracle_dd_config cfg = dd_config(go, 0);
    oracle_dd_certificate cert;
    if ((rc = oracle_tally_dd_certificate(&go->fwd, s, &cfg, &cert, e))) return rc;
    return parity_reference_take_dd(r, &cert, e);
  }
  const oracle_config cfg = mpfr_config(go);
  oracle_certificate cert;
  if ((rc = oracle_tally_certificate(&go->fwd, &cfg, &cert, e))) return rc;
  parity_reference_take_mpfr(r, &cert, s);
  return GDN_OK;
}

static int finish_vjp(const parity_group_oracle *go, parity_reference *r, gdn_error *e) {
  int rc;
  if (go->grad_tier == PARITY_ORACLE_DD) {
    const oracle_vjp_dd_config cfg = vjp_dd_config(go, 0);
    oracle_vjp_dd_certificate cert;
    if ((rc = oracle_tally_vjp_dd_certificate(&go->vjp, &go->whole, &cfg, &cert, e))) return rc;
    r->grad_certified_bits = cert.certified_bits;
    r->grad_normwise_bits = cert.normwise_bits;
  } else {
    const oracle_vjp_config cfg = vjp_config(go);
    oracle_vjp_certificate cert;
    if ((rc = oracle_tally_vjp_certificate(&go->vjp, &cfg, &cert, e))) return rc;
    r->grad_certified_bits = cert.certified_bits;
  }
  r->has_grads = 1;
  return GDN_OK;
}

int parity_group_oracle_finish(parity_group_oracle *go, parity_reference *r, gdn_error *e) {
  if (go->vjp_only && go->grads_stored) return GDN_OK; /* parity_stored_grads_take, by the caller */
  if (go->vjp_only) { /* parity_reference_compute_grads's fields beside a stored forward */
    r->grad_tier = go->grad_tier;
    if (!go->grads || go->grad_tier == PARITY_ORACLE_NONE) return GDN_OK;
    int rc = finish_vjp(go, r, e);
    r->grad_seconds = go->grad_seconds;
    return rc;
  }
  parity_reference_clear(r);
  r->requested = go->requested;
  r->tier = go->tier;
  r->grad_tier = go->grad_tier;
  if (go->tier == PARITY_ORACLE_NONE) return GDN_OK;
  r->mpfr_cost = parity_oracle_mpfr_cost(&go->whole, go->bits);
  r->form = "token";
  r->seconds = go->seconds;
  int rc = finish_forward(go, r, e);
  if (!rc && go->grads && go->grad_tier != PARITY_ORACLE_NONE) {
    rc = finish_vjp(go, r, e);
    r->grad_seconds = go->grad_seconds;
  }
  return rc;
}
