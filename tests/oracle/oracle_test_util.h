/* Helpers shared by the oracle tests (header-only, static). */
#ifndef ORACLE_TEST_UTIL_H
#define ORACLE_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn_grads.h"
#include "gdn_synth.h"
#include "oracle.h"

#include "../check_runner.h"
#include "../test_util_alloc.h"
#include "../test_util_synth.h"

static inline oracle_config otu_cfg(long prec, oracle_form form, int64_t chunk) {
  oracle_config c;
  oracle_config_init(&c);
  c.prec = prec;
  c.form = form;
  c.chunk = chunk;
  return c;
}

/* The oracle's forward runs by tier, for the tests that treat the tiers
 * alike: cfg is an oracle_config or, for OTU_DD, an oracle_dd_config; cert
 * an oracle_certificate, an oracle_dd_certificate, or unused (OTU_MPFR). */
typedef enum { OTU_MPFR, OTU_MPFR_CERTIFIED, OTU_DD } otu_tier;

static const char *const otu_tier_calls[] = {"oracle_run", "oracle_run_certified", "oracle_run_dd"};

static inline int otu_run_tier(otu_tier tier, const gdn_inputs *in, const void *cfg, gdn_outputs *out, void *cert,
                               gdn_error *e) {
  switch (tier) {
  case OTU_MPFR: return oracle_run(in, cfg, out, e);
  case OTU_MPFR_CERTIFIED: return oracle_run_certified(in, cfg, out, cert, e);
  default: return oracle_run_dd(in, cfg, out, cert, e);
  }
}

/* otu_run_tier into `out` (initialised here), failing the test on any
 * error. */
static inline void otu_run_tier_ok(otu_tier tier, const gdn_inputs *in, const void *cfg, gdn_outputs *out,
                                   void *cert) {
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  int rc = otu_run_tier(tier, in, cfg, out, cert, &e);
  ck_assert_msg(rc == GDN_OK, "%s: %s", otu_tier_calls[tier], e.msg);
}

/* Runs the oracle and fails the test on any error. */
static inline void otu_run(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out) {
  otu_run_tier_ok(OTU_MPFR, in, cfg, out, NULL);
  ck_assert_int_eq(out->dtype, GDN_DTYPE_F64);
}

static inline void otu_run_cert(const gdn_inputs *in, const oracle_config *cfg, gdn_outputs *out,
                                oracle_certificate *cert) {
  otu_run_tier_ok(OTU_MPFR_CERTIFIED, in, cfg, out, cert);
}

static inline void otu_run_dd(const gdn_inputs *in, const oracle_dd_config *cfg, gdn_outputs *out,
                              oracle_dd_certificate *cert) {
  otu_run_tier_ok(OTU_DD, in, cfg, out, cert);
}

/* Normwise agreement of one tensor: floor(log2(max|r| / max|x - r|)), 999
 * when equal.  Binary64 differences of close values are exact (Sterbenz), so
 * this is exact for the cases the tests use it on. */
static inline int otu_norm_bits1(const double *x, const double *r, size_t n) {
  double M = 0, D = 0;
  for (size_t i = 0; i < n; i++) {
    if (fabs(r[i]) > M) M = fabs(r[i]);
    if (fabs(x[i] - r[i]) > D) D = fabs(x[i] - r[i]);
  }
  if (D == 0) return 999;
  if (M == 0) return 0;
  return (int)floor(log2(M / D));
}

static inline int otu_norm_bits(const gdn_outputs *x, const gdn_outputs *r) {
  int a = otu_norm_bits1(x->o, r->o, gdn_shape_numel_v(&r->shape));
  int b = otu_norm_bits1(x->ht, r->ht, gdn_shape_numel_state(&r->shape));
  return a < b ? a : b;
}

static inline int otu_identical(const gdn_outputs *x, const gdn_outputs *r) {
  return !memcmp(x->o, r->o, gdn_shape_numel_v(&r->shape) * sizeof(double)) &&
         !memcmp(x->ht, r->ht, gdn_shape_numel_state(&r->shape) * sizeof(double));
}

/* The hand-worked case of test_oracle_exact's scalar_state, allocated and
 * filled: Dk = Dv = 1, T = 2, g = 0, scale = 1/2, h0 = 0, no L2 norm;
 * (k, v, beta, q) = (1, 2, 1/2, 1) then (1/2, 3, 1/4, 2): o = (1/2, 21/16),
 * ht = 21/16 exactly. */
static inline void otu_scalar_state(gdn_inputs *in) {
  gdn_shape s = {1, 2, 1, 1, 1, 1};
  gdn_error e;
  gdn_error_init(&e);
  gdn_inputs_init(in);
  ck_assert_int_eq(gdn_inputs_alloc(in, &s, 0, &e), GDN_OK);
  const float k[] = {1, 0.5f}, v[] = {2, 3}, beta[] = {0.5f, 0.25f}, q[] = {1, 2};
  memcpy(in->k, k, sizeof k);
  memcpy(in->v, v, sizeof v);
  memcpy(in->beta, beta, sizeof beta);
  memcpy(in->q, q, sizeof q);
  in->has_scale = 1;
  in->scale = 0.5;
}

/* An outputs object holding something, to see an error path clear it. */
static inline void otu_filled(gdn_outputs *out) {
  gdn_shape s = {1, 1, 1, 1, 1, 1};
  gdn_error e;
  gdn_error_init(&e);
  gdn_outputs_init(out);
  ck_assert_int_eq(gdn_outputs_alloc(out, &s, GDN_DTYPE_F32, &e), GDN_OK);
}

static inline void otu_assert_cleared(const gdn_outputs *out) {
  ck_assert_ptr_null(out->o);
  ck_assert_ptr_null(out->ht);
  ck_assert_int_eq(out->shape.T, 0);
}

/* What allocation n failing must leave: GDN_ERR_NOMEM, a message that says
 * out of memory in the oracle or its outputs, the outputs cleared. */
static inline void otu_assert_nomem(int rc, long n, const gdn_error *e, const gdn_outputs *out) {
  ck_assert_msg(rc == GDN_ERR_NOMEM, "allocation %ld failing: code %d (%s)", n, rc, e->msg);
  ck_assert_msg(strstr(e->msg, "out of memory") && (strstr(e->msg, "oracle") || strstr(e->msg, "output")),
                "allocation %ld failing: message '%s'", n, e->msg);
  otu_assert_cleared(out);
}

/* Runs plain and certified (certified only, with certified_only); both
 * must fail with `code` and a message containing `needle`, leaving `out`
 * cleared though it held results, and the certificate zeroed. */
static inline void otu_expect_error(const gdn_inputs *in, const oracle_config *cfg, int code,
                                    const char *needle, int certified_only) {
  for (int cert_mode = certified_only; cert_mode < 2; cert_mode++) {
    gdn_error e;
    gdn_error_init(&e);
    gdn_outputs out;
    otu_filled(&out);
    oracle_certificate cert;
    memset(&cert, 0x5a, sizeof cert);
    int rc = cert_mode ? oracle_run_certified(in, cfg, &out, &cert, &e) : oracle_run(in, cfg, &out, &e);
    ck_assert_msg(rc == code, "expected code %d for '%s', got %d (%s)", code, needle, rc, e.msg);
    ck_assert_int_eq(e.code, code);
    ck_assert_msg(strstr(e.msg, needle), "message '%s' does not name '%s'", e.msg, needle);
    otu_assert_cleared(&out);
    if (cert_mode) ck_assert(cert.certified_bits == 0 && cert.check_bits == 0 && cert.floor_o == 0);
    gdn_outputs_clear(&out);
  }
}

/* One forward allocation-failure sweep (otu_alloc_sweep): the run, the
 * undisturbed outputs and certified bits, the attempt's outputs. */
typedef struct otu_sweep {
  otu_tier tier;
  const gdn_inputs *in;
  const void *cfg;
  const gdn_outputs *ref;
  int ref_bits;
  gdn_outputs out;
  union {
    oracle_certificate mp;
    oracle_dd_certificate dd;
  } cert;
} otu_sweep;

/* Outputs holding something and a certificate of garbage: a failure must
 * clear the one and zero the other. */
static inline void otu_sweep_prepare(void *p) {
  otu_sweep *w = p;
  otu_filled(&w->out);
  memset(&w->cert, 0x5a, sizeof w->cert);
}

static inline int otu_sweep_run(void *p, gdn_error *e) {
  otu_sweep *w = p;
  return otu_run_tier(w->tier, w->in, w->cfg, &w->out, &w->cert, e);
}

static inline void otu_sweep_failed(void *p, long n, int rc, const gdn_error *e) {
  otu_sweep *w = p;
  otu_assert_nomem(rc, n, e, &w->out);
  if (w->tier == OTU_MPFR) return;
  static const unsigned char zero[sizeof w->cert];
  const size_t size = w->tier == OTU_DD ? sizeof w->cert.dd : sizeof w->cert.mp;
  ck_assert_msg(!memcmp(&w->cert, zero, size), "allocation %ld failing: the certificate is not zeroed", n);
}

static inline void otu_sweep_succeeded(void *p) {
  otu_sweep *w = p;
  ck_assert(otu_identical(&w->out, w->ref));
  if (w->tier != OTU_MPFR)
    ck_assert_int_eq(w->tier == OTU_DD ? w->cert.dd.certified_bits : w->cert.mp.certified_bits, w->ref_bits);
  gdn_outputs_clear(&w->out);
}

/* Every allocation of a forward run failing in turn (tua_sweep): each
 * failure GDN_ERR_NOMEM naming what (otu_assert_nomem), the outputs
 * cleared, the certificate zeroed byte for byte; the run that succeeds
 * equals `ref`, certified to ref_bits; `live` (gmp_count_util.h's
 * gcu_live, or NULL) back where it was after each.  Returns the sites. */
static inline long otu_alloc_sweep(otu_tier tier, const gdn_inputs *in, const void *cfg, const gdn_outputs *ref,
                                   int ref_bits, long (*live)(void)) {
  otu_sweep w = {.tier = tier, .in = in, .cfg = cfg, .ref = ref, .ref_bits = ref_bits};
  const tua_ops ops = {otu_sweep_prepare, otu_sweep_run, otu_sweep_failed, otu_sweep_succeeded, live, 1000};
  return tua_sweep(&ops, &w);
}

/* Gates of 800 (exp overflows binary64) at (b 1, value head 1, t 5) and
 * (b 1, value head 2, t 2) of a B = 2, Hv >= 3 input; the whole dd run must
 * refuse them naming the first in (b, j) order, with `out` cleared.  `e`
 * keeps that message, for a run by parts or by ranks to be compared with. */
static inline void otu_plant_dd_overflow(gdn_inputs *in, gdn_error *e) {
  const gdn_shape *S = &in->shape;
  in->g[(1 * S->T + 5) * S->Hv + 1] = 800.0f;
  in->g[(1 * S->T + 2) * S->Hv + 2] = 800.0f;
  oracle_dd_config cfg;
  oracle_dd_config_init(&cfg);
  gdn_outputs out;
  otu_filled(&out);
  oracle_dd_certificate c;
  gdn_error_init(e);
  ck_assert_int_eq(oracle_run_dd(in, &cfg, &out, &c, e), GDN_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(e->msg, "b=1, value head 1, token t=5"));
  otu_assert_cleared(&out);
}

static inline void otu_run_suite(Suite *su) {
  if (ckr_run(su)) exit(1);
}

#endif
