/* oracle_part: runs on a subset of heads, and tallies (oracle_part.h).
 *
 * The certificates are assembled from the merged accumulators by the same
 * functions (orc_acc_bits, orc_acc_normwise) and the same rules as
 * oracle_run.c and oracle_run_dd.c assemble them from their workers';
 * test_oracle_part.c holds the two to the same certificate, field by
 * field, on every tier, form and split it runs. */
#include "oracle_part.h"

#include <math.h>
#include <string.h>

#include "gdn_alloc.h"
#include "oracle_internal.h"

static int run_part(const gdn_inputs *in, const void *cfg, int dd, const unsigned char *heads,
                    gdn_outputs *out, oracle_tally *tally, gdn_error *e) {
  if (!tally) {
    if (out) gdn_outputs_clear(out);
    return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: tally missing (NULL)");
  }
  int rc = cfg ? GDN_OK : gdn_error_set(e, GDN_ERR_INTERNAL, "oracle: config missing (NULL)");
  if (!rc) {
    if (dd)
      rc = oracle_tally_alloc(tally, ORACLE_TALLY_DD, ORACLE_DD_BITS, 0, e);
    else if (!(rc = oracle_config_validate(cfg, 1, e)))
      rc = oracle_tally_alloc(tally, ORACLE_TALLY_MPFR, (int)((const oracle_config *)cfg)->prec, -1, e);
  }
  if (rc) {
    if (out) gdn_outputs_clear(out);
    return rc;
  }
  if (dd) {
    oracle_dd_certificate c;
    rc = orc_run_dd(in, cfg, out, &c, heads, tally, e);
  } else {
    oracle_certificate c;
    rc = orc_run_mpfr(in, cfg, out, &c, heads, tally, e);
  }
  if (rc) orc_tally_drop(tally);
  return rc;
}

int oracle_run_part(const gdn_inputs *in, const oracle_config *cfg, const unsigned char *heads,
                    gdn_outputs *out, oracle_tally *tally, gdn_error *e) {
  return run_part(in, cfg, 0, heads, out, tally, e);
}

int oracle_run_dd_part(const gdn_inputs *in, const oracle_dd_config *cfg, const unsigned char *heads,
                       gdn_outputs *out, oracle_tally *tally, gdn_error *e) {
  return run_part(in, cfg, 1, heads, out, tally, e);
}

static int min2(int a, int b) { return a < b ? a : b; }

/* oracle_run.c's assembly (its `if (cert)` block). */
int oracle_tally_certificate(const oracle_tally *t, const oracle_config *cfg, oracle_certificate *cert,
                             gdn_error *e) {
  memset(cert, 0, sizeof *cert);
  int rc = orc_tally_same_kind(t, ORACLE_TALLY_MPFR, (int)cfg->prec, "certificate", e);
  orc_acc a[2];
  orc_acc_init(&a[0]);
  orc_acc_init(&a[1]);
  if (!rc && !(rc = orc_tally_get(t, 0, &a[0], e)) && !(rc = orc_tally_get(t, 1, &a[1], e))) {
    cert->precision_bits = (int)cfg->prec;
    cert->check_bits = (int)(cfg->check_prec ? cfg->check_prec : cfg->prec + 64);
    cert->certified_o = orc_acc_bits(&a[0], &cert->floor_o);
    cert->certified_ht = orc_acc_bits(&a[1], &cert->floor_ht);
    cert->certified_bits = min2(cert->certified_o, cert->certified_ht);
  }
  orc_acc_clear(&a[0]);
  orc_acc_clear(&a[1]);
  return rc;
}

/* oracle_run_dd.c's assembly (after its failure check). */
int oracle_tally_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_dd_config *cfg,
                                oracle_dd_certificate *cert, gdn_error *e) {
  memset(cert, 0, sizeof *cert);
  int rc = orc_tally_same_kind(t, ORACLE_TALLY_DD, ORACLE_DD_BITS, "dd certificate", e);
  const int64_t ns = cfg->sample_columns < s->Dv ? cfg->sample_columns : s->Dv;
  orc_acc a[4];
  for (int i = 0; i < 4; i++) orc_acc_init(&a[i]);
  for (int i = 0; i < 4 && !rc; i++) rc = orc_tally_get(t, i, &a[i], e);
  if (!rc) {
    cert->precision_bits = ORACLE_DD_BITS;
    cert->check_bits = (int)cfg->sample_prec;
    cert->sample_columns = ns;
    cert->sampled_columns = s->B * s->Hv * ns;
    cert->total_columns = s->B * s->Hv * s->Dv;
    cert->guaranteed_o = orc_acc_bits(&a[2], NULL);
    cert->guaranteed_ht = orc_acc_bits(&a[3], NULL);
    cert->guaranteed_bits = min2(cert->guaranteed_o, cert->guaranteed_ht);
    cert->guaranteed_normwise = min2(orc_acc_normwise(&a[2]), orc_acc_normwise(&a[3]));
    cert->bound_violations = (int64_t)t->v[0];
    if (ns > 0) {
      cert->certified_o = orc_acc_bits(&a[0], &cert->floor_o);
      cert->certified_ht = orc_acc_bits(&a[1], &cert->floor_ht);
      cert->certified_bits = min2(cert->certified_o, cert->certified_ht);
      cert->normwise_bits = min2(orc_acc_normwise(&a[0]), orc_acc_normwise(&a[1]));
    }
  }
  for (int i = 0; i < 4; i++) orc_acc_clear(&a[i]);
  return rc;
}

/* A VJP part that cannot start leaves no gradients behind either. */
static int vjp_part_refused(gdn_grads *out, int rc) {
  if (out) gdn_grads_clear(out);
  return rc;
}

int oracle_vjp_part(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_config *cfg,
                    const unsigned char *items, gdn_grads *out, oracle_tally *tally, gdn_error *e) {
  int rc = !tally || !cfg ? gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp: tally or config missing (NULL)")
                          : oracle_vjp_config_validate(cfg, 1, e);
  if (!rc) rc = oracle_tally_alloc(tally, ORACLE_TALLY_VJP, (int)cfg->prec, -1, e);
  if (rc) return vjp_part_refused(out, rc);
  oracle_vjp_certificate c;
  if ((rc = orc_vjp_run(in, ct, cfg, out, &c, items, tally, e))) orc_tally_drop(tally);
  return rc;
}

/* oracle_vjp.c's assembly (its `if (cert)` block). */
int oracle_tally_vjp_certificate(const oracle_tally *t, const oracle_vjp_config *cfg,
                                 oracle_vjp_certificate *cert, gdn_error *e) {
  memset(cert, 0, sizeof *cert);
  int rc = orc_tally_same_kind(t, ORACLE_TALLY_VJP, (int)cfg->prec, "vjp certificate", e);
  orc_acc a;
  orc_acc_init(&a);
  if (!rc) {
    cert->precision_bits = (int)cfg->prec;
    cert->check_bits = (int)(cfg->check_prec ? cfg->check_prec : cfg->prec + 64);
    cert->certified_bits = (int)cfg->prec;
  }
  for (int ti = 0; !rc && ti < GDN_GRADS_N; ti++) {
    if ((rc = orc_tally_get(t, ti, &a, e))) break;
    cert->certified[ti] = orc_acc_bits(&a, &cert->floor[ti]);
    if (cert->certified[ti] < cert->certified_bits) cert->certified_bits = cert->certified[ti];
  }
  orc_acc_clear(&a);
  if (rc) memset(cert, 0, sizeof *cert);
  return rc;
}

int oracle_vjp_dd_part(const gdn_inputs *in, const gdn_cotangents *ct, const oracle_vjp_dd_config *cfg,
                       const unsigned char *items, gdn_grads *out, oracle_tally *tally, gdn_error *e) {
  int rc = !tally ? gdn_error_set(e, GDN_ERR_INTERNAL, "oracle_vjp_dd: tally missing (NULL)")
                  : oracle_tally_alloc(tally, ORACLE_TALLY_VJP_DD, ORACLE_DD_BITS, -1, e);
  if (rc) return vjp_part_refused(out, rc);
  oracle_vjp_dd_certificate c;
  if ((rc = orc_vjp_dd_run(in, ct, cfg, out, &c, items, tally, e))) orc_tally_drop(tally);
  return rc;
}

/* oracle_vjp_dd.c's fill_cert. */
int oracle_tally_vjp_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_vjp_dd_config *cfg,
                                    oracle_vjp_dd_certificate *cert, gdn_error *e) {
  memset(cert, 0, sizeof *cert);
  int rc = orc_tally_same_kind(t, ORACLE_TALLY_VJP_DD, ORACLE_DD_BITS, "vjp dd certificate", e);
  if (rc) return rc;
  const int64_t ns = cfg->sample_columns < s->Dv ? cfg->sample_columns : s->Dv;
  cert->precision_bits = ORACLE_DD_BITS;
  cert->check_bits = (int)cfg->sample_prec;
  cert->sample_columns = ns;
  cert->sampled_columns = s->B * s->Hv * ns;
  cert->total_columns = s->B * s->Hv * s->Dv;
  if (ns == 0) return GDN_OK;
  cert->certified_bits = cert->normwise_bits = ORACLE_DD_BITS;
  orc_acc a;
  orc_acc_init(&a);
  for (int ti = 0; !rc && ti < GDN_GRADS_N; ti++) {
    if ((rc = orc_tally_get(t, ti, &a, e))) break;
    cert->certified[ti] = orc_acc_bits(&a, NULL);
    int nb = orc_acc_normwise(&a);
    if (cert->certified[ti] < cert->certified_bits) cert->certified_bits = cert->certified[ti];
    if (nb < cert->normwise_bits) cert->normwise_bits = nb;
  }
  orc_acc_clear(&a);
  if (rc) memset(cert, 0, sizeof *cert);
  return rc;
}
