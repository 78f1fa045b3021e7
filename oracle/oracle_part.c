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

static int n_acc(int tier) {
  return tier >= ORACLE_TALLY_VJP ? GDN_GRADS_N : tier == ORACLE_TALLY_DD ? 4 : 2;
}

static const char *tier_name(int tier) {
  return tier == ORACLE_TALLY_MPFR ? "mpfr"
         : tier == ORACLE_TALLY_DD ? "dd"
         : tier == ORACLE_TALLY_VJP ? "vjp"
         : tier == ORACLE_TALLY_VJP_DD ? "vjp dd"
                                       : "empty";
}

size_t oracle_tally_size(int tier, int cap) {
  if (tier < ORACLE_TALLY_MPFR || tier > ORACLE_TALLY_VJP_DD || cap < 1 || cap > ORACLE_PREC_MAX)
    return 0;
  return 1 + 2 * (size_t)n_acc(tier) * ((size_t)cap + 1);
}

void oracle_tally_init(oracle_tally *t) {
  memset(t, 0, sizeof *t);
  t->failed_head = -1;
}

void oracle_tally_clear(oracle_tally *t) {
  gdn_free(t->v);
  oracle_tally_init(t);
}

/* Every magnitude zero (m = 0, e = 0: orc_acc's empty value). */
int oracle_tally_alloc(oracle_tally *t, int tier, int cap, int64_t violations, gdn_error *e) {
  oracle_tally_clear(t);
  size_t n = oracle_tally_size(tier, cap);
  if (!n)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle tally: tier %d with %d buckets is not a tally", tier,
                         cap);
  if (!(t->v = gdn_calloc(n, sizeof(double), "oracle tally", e))) return e ? e->code : GDN_ERR_NOMEM;
  t->tier = tier, t->cap = cap, t->n = n;
  t->v[0] = (double)violations;
  return GDN_OK;
}

static double *mag_at(const oracle_tally *t, int a, int i) {
  return t->v + 1 + 2 * ((size_t)a * ((size_t)t->cap + 1) + (size_t)i);
}

void orc_tally_put(oracle_tally *t, int a, const orc_acc *acc) {
  double *p = mag_at(t, a, 0);
  p[0] = acc->rmax.m, p[1] = (double)acc->rmax.e;
  for (int k = 0; k < t->cap && k < acc->cap; k++) {
    p = mag_at(t, a, 1 + k);
    p[0] = acc->dmax[k].m, p[1] = (double)acc->dmax[k].e;
  }
}

int orc_tally_get(const oracle_tally *t, int a, orc_acc *acc, gdn_error *e) {
  int rc = orc_acc_alloc(acc, t->cap, "oracle tally accumulator", e);
  if (rc) return rc;
  const double *p = mag_at(t, a, 0);
  acc->rmax = (orc_mag){p[0], (long)p[1]};
  for (int k = 0; k < t->cap; k++) {
    p = mag_at(t, a, 1 + k);
    acc->dmax[k] = (orc_mag){p[0], (long)p[1]};
  }
  return GDN_OK;
}

static int same_kind(const oracle_tally *a, int tier, int cap, const char *what, gdn_error *e) {
  if (a->tier == tier && a->cap == cap && a->v) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle tally: %s: a %s tally of %d buckets where %s of %d is expected",
                       what, tier_name(a->tier), a->cap, tier_name(tier), cap);
}

/* Accumulator by accumulator through orc_acc_merge (the max of
 * magnitudes the workers' merge takes). */
int oracle_tally_merge(oracle_tally *dst, const oracle_tally *src, gdn_error *e) {
  int rc = same_kind(src, dst->tier, dst->cap, "merge", e);
  if (rc) return rc;
  orc_acc x, y;
  orc_acc_init(&x);
  orc_acc_init(&y);
  for (int a = 0; a < n_acc(dst->tier) && !rc; a++) {
    if (!(rc = orc_tally_get(dst, a, &x, e)) && !(rc = orc_tally_get(src, a, &y, e))) {
      orc_acc_merge(&x, &y);
      orc_tally_put(dst, a, &x);
    }
  }
  orc_acc_clear(&x);
  orc_acc_clear(&y);
  if (!rc) dst->v[0] = dst->v[0] < 0 || src->v[0] < 0 ? -1.0 : dst->v[0] + src->v[0];
  return rc;
}

gdn_shape orc_block_shape(const gdn_shape *s, const unsigned char *heads) {
  gdn_shape b = *s;
  if (!heads) return b;
  int64_t n = 0;
  for (int64_t h = 0; h < s->B * s->Hv; h++) n += heads[h] != 0;
  b.B = 1;
  b.Hv = n > 0 ? n : 1;
  return b;
}

/* A failed run's tally holds partial sums nobody may merge: cleared, but
 * the failing item stays named (failed_head) for the caller's message. */
static void tally_drop(oracle_tally *t) {
  int64_t f = t->failed_head;
  oracle_tally_clear(t);
  t->failed_head = f;
}

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
  if (rc) tally_drop(tally);
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
  int rc = same_kind(t, ORACLE_TALLY_MPFR, (int)cfg->prec, "certificate", e);
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
  int rc = same_kind(t, ORACLE_TALLY_DD, ORACLE_DD_BITS, "dd certificate", e);
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
  if ((rc = orc_vjp_run(in, ct, cfg, out, &c, items, tally, e))) tally_drop(tally);
  return rc;
}

/* oracle_vjp.c's assembly (its `if (cert)` block). */
int oracle_tally_vjp_certificate(const oracle_tally *t, const oracle_vjp_config *cfg,
                                 oracle_vjp_certificate *cert, gdn_error *e) {
  memset(cert, 0, sizeof *cert);
  int rc = same_kind(t, ORACLE_TALLY_VJP, (int)cfg->prec, "vjp certificate", e);
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
  if ((rc = orc_vjp_dd_run(in, ct, cfg, out, &c, items, tally, e))) tally_drop(tally);
  return rc;
}

/* oracle_vjp_dd.c's fill_cert. */
int oracle_tally_vjp_dd_certificate(const oracle_tally *t, const gdn_shape *s, const oracle_vjp_dd_config *cfg,
                                    oracle_vjp_dd_certificate *cert, gdn_error *e) {
  memset(cert, 0, sizeof *cert);
  int rc = same_kind(t, ORACLE_TALLY_VJP_DD, ORACLE_DD_BITS, "vjp dd certificate", e);
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
