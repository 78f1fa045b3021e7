/* oracle_tally: the accumulators of a part's certificate as binary64
 * numbers that travel and merge exactly (the layout: oracle_part.h).  Below
 * the runners (oracle_run.c, oracle_run_dd.c, oracle_vjp.c,
 * oracle_vjp_dd.c), which fill a tally, and oracle_part.c, which allocates,
 * merges and certifies one: neither calls the other for it. */
#include "oracle_part.h"

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

void orc_tally_drop(oracle_tally *t) {
  const int64_t f = t->failed_head;
  oracle_tally_clear(t);
  t->failed_head = f;
}

int orc_tally_same_kind(const oracle_tally *a, int tier, int cap, const char *what, gdn_error *e) {
  if (a->tier == tier && a->cap == cap && a->v) return GDN_OK;
  return gdn_error_set(e, GDN_ERR_INTERNAL, "oracle tally: %s: a %s tally of %d buckets where %s of %d is expected",
                       what, tier_name(a->tier), a->cap, tier_name(tier), cap);
}

/* Accumulator by accumulator through orc_acc_merge (the max of
 * magnitudes the workers' merge takes). */
int oracle_tally_merge(oracle_tally *dst, const oracle_tally *src, gdn_error *e) {
  int rc = orc_tally_same_kind(src, dst->tier, dst->cap, "merge", e);
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
