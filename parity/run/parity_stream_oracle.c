#include "parity_stream_oracle.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fix_oracle_check.h"
#include "gdn_alloc.h"
#include "parity_dist.h"
#include "parity_dist_merge.h"

void parity_stored_oracle_init(parity_stored_oracle *so) {
  memset(so, 0, sizeof *so);
  so->bad_at = -1;
}

void parity_stored_oracle_clear(parity_stored_oracle *so) {
  gdn_free(so->acc);
  parity_stored_oracle_init(so);
}

/* The whole check's words for a stored /oracle it does not use. */
static void not_used(parity_stored_oracle *so, int fresh, const char *why, int with_note) {
  if (!fresh) snprintf(so->warning, sizeof so->warning, "the stored /oracle is stale (inputs changed); computing a fresh one");
  else snprintf(so->warning, sizeof so->warning, "the stored /oracle is not trusted (%s); computing a fresh one", why);
  if (with_note)
    snprintf(so->note, sizeof so->note, "stored /oracle not used: %s; recomputed",
             !fresh ? "stale (its inputs_sha256 does not match the inputs)" : why);
}

int parity_stored_oracle_open(parity_stored_oracle *so, const fix_fixture *meta, parity_oracle_tier tier,
                              gdn_dtype judged, gdn_error *e) {
  parity_stored_oracle_clear(so);
  const fix_oracle *fo = &meta->oracle;
  if (!(so->present = fo->present)) return GDN_OK;
  so->precision_bits = fo->precision_bits, so->certified_bits = fo->certified_bits;
  so->attrs = *fo;
  gdn_outputs_init(&so->attrs.out); /* the attributes only: the data stays the file's */
  gdn_grads_init(&so->attrs.grads);
  so->judged = judged;
  char why[256] = "";
  if (fo->fresh && fo->problem_fresh != 1)
    snprintf(why, sizeof why, "%s",
             fo->problem_fresh == 0
                 ? "stale: an attribute that changes the answer (scale, l2norm_in_kernel, shape, h0, segments) "
                   "changed since it was computed (problem_sha256 differs)"
                 : "freshness unknown: written before problem_sha256, its hash covers the inputs only, not the "
                   "attributes (gdn-fixture regen --force records it)");
  int chk = FIX_ORACLE_INVALID;
  if (fo->fresh && fo->problem_fresh == 1) { /* the attributes' rows of the table: no values read */
    gdn_outputs none;
    gdn_outputs_init(&none);
    chk = fix_oracle_check(&none, so->precision_bits, so->certified_bits, judged, why, sizeof why);
  }
  if (chk == FIX_ORACLE_WEAK) so->weak = 1, snprintf(so->weak_why, sizeof so->weak_why, "%s", why);
  if (tier == PARITY_ORACLE_NONE) { /* never used; the whole check warns of what it found */
    if (fo->fresh && chk != FIX_ORACLE_OK) not_used(so, 1, why, 0);
    else if (!fo->fresh) not_used(so, 0, why, 0);
    return GDN_OK;
  }
  if (chk == FIX_ORACLE_INVALID) {
    not_used(so, fo->fresh, why, 1);
    return GDN_OK;
  }
  so->candidate = 1;
  so->acc = gdn_calloc(2, sizeof *so->acc, "spot check sums", e);
  if (!so->acc) return e ? e->code : GDN_ERR_NOMEM;
  parity_rel_acc_init(&so->acc[0]);
  parity_rel_acc_init(&so->acc[1]);
  return GDN_OK;
}

/* The first non-finite element of a slab of n values whose rows of `row`
 * values are rows of heads [v0, v0 + h) of the whole run's `hv` (a row
 * per (lead index, head)), as a whole index; -1 for none. */
static int64_t first_bad(const double *x, int64_t n, int64_t per_head, int64_t h, int64_t v0, int64_t hv, double *v) {
  for (int64_t i = 0; i < n; i++) {
    if (isfinite(x[i])) continue;
    const int64_t lead = i / (h * per_head), hl = i / per_head % h, inner = i % per_head;
    *v = x[i];
    return (lead * hv + v0 + hl) * per_head + inner;
  }
  return -1;
}

int parity_stored_oracle_group(parity_stored_oracle *so, const gdn_inputs *in, const gdn_outputs *slab, int64_t v0,
                               int64_t whole_hv, gdn_error *e) {
  if (!so->candidate) return GDN_OK;
  const gdn_shape *s = &slab->shape;
  if (!slab->o || !slab->ht)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "the stored /oracle's slab of value heads from %lld was not read",
                         (long long)v0);
  double v = 0;
  int64_t at = first_bad(slab->o, (int64_t)gdn_shape_numel_v(s), s->Dv, s->Hv, v0, whole_hv, &v);
  int ht = 0;
  if (at < 0 && (at = first_bad(slab->ht, (int64_t)gdn_shape_numel_state(s), s->Dk * s->Dv, s->Hv, v0, whole_hv, &v)) >= 0)
    ht = 1;
  /* the least index over the groups, o before ht */
  if (at >= 0 && (so->bad_at < 0 || (so->bad_ht && !ht) || (so->bad_ht == ht && at < so->bad_at)))
    so->bad_at = at, so->bad_ht = ht, so->bad_v = v;
  if (so->bad_at >= 0 || so->weak) return GDN_OK; /* the spot check is not reached */
  const int64_t n = parity_reference_spot_part(in, slab, 4, &so->acc[0], &so->acc[1], e);
  if (n < 0) return (int)-n;
  so->spot_cols = n;
  return GDN_OK;
}

/* One rank's findings, as they travel (parity_stored_oracle_merge). */
typedef struct stored_part {
  int64_t bad_at, bad_ht, spot_cols;
  double bad_v;
  parity_rel_acc acc[2];
} stored_part;

/* The least first bad index (o before ht), the spot sums (exact) and the
 * columns of another rank's groups folded into so. */
static int stored_fold(void *ctx, int rank, const void *part, size_t n, gdn_error *e) {
  parity_stored_oracle *so = ctx;
  (void)rank;
  stored_part p;
  if (n != sizeof p) return gdn_error_set(e, GDN_ERR_INTERNAL, "merging the stored /oracle's checks: %zu bytes", n);
  memcpy(&p, part, sizeof p);
  const int ht = (int)p.bad_ht;
  if (p.bad_at >= 0 && (so->bad_at < 0 || (so->bad_ht && !ht) || (so->bad_ht == ht && p.bad_at < so->bad_at)))
    so->bad_at = p.bad_at, so->bad_ht = ht, so->bad_v = p.bad_v;
  parity_rel_acc_merge(&so->acc[0], &p.acc[0]);
  parity_rel_acc_merge(&so->acc[1], &p.acc[1]);
  if (p.spot_cols > so->spot_cols) so->spot_cols = p.spot_cols;
  return GDN_OK;
}

int parity_stored_oracle_merge(parity_stored_oracle *so, int status, gdn_error *e) {
  if (parity_dist_size() == 1 || !so->candidate) return status;
  stored_part *p = gdn_calloc(1, sizeof *p, "the stored /oracle's checks", e);
  if (!p && !status) status = GDN_ERR_NOMEM;
  if (p) {
    p->bad_at = so->bad_at, p->bad_ht = so->bad_ht, p->spot_cols = so->spot_cols, p->bad_v = so->bad_v;
    p->acc[0] = so->acc[0], p->acc[1] = so->acc[1];
  }
  const int rc = parity_dist_allmerge(status, p, p ? sizeof *p : 0, stored_fold, so, e);
  gdn_free(p);
  return rc;
}

void parity_stored_oracle_take(const fix_oracle *fo, const gdn_shape *whole, parity_reference *ref) {
  ref->tier = ref->requested = fo->tier_dd ? PARITY_ORACLE_DD : PARITY_ORACLE_MPFR;
  ref->form = "token";
  ref->precision_bits = (int)fo->precision_bits;
  ref->certified_bits = (int)fo->certified_bits;
  ref->total_columns = whole->B * whole->Hv * whole->Dv;
  ref->from_fixture = 1;
  if (fo->tier_dd) { /* regen --oracle dd: the certificate it stored (bound violations refused it) */
    ref->check_bits = (int)fo->check_bits;
    ref->normwise_bits = (int)fo->normwise_bits;
    ref->guaranteed_bits = (int)fo->guaranteed_bits;
    ref->bound_violations = 0;
    ref->sampled_columns = fo->sampled_columns;
    return;
  }
  ref->normwise_bits = ref->guaranteed_bits = -1;
  ref->bound_violations = -1;
  ref->sampled_columns = ref->total_columns; /* regen certifies all */
}

void parity_stored_oracle_finish(parity_stored_oracle *so, const gdn_shape *whole, parity_reference *ref,
                                 int *trusted) {
  *trusted = 0;
  if (!so->candidate) return;
  char why[256];
  if (so->bad_at >= 0)
    snprintf(why, sizeof why, "/oracle/%s[%zu] is not finite (%g)", so->bad_ht ? "ht" : "o", (size_t)so->bad_at,
             so->bad_v);
  else if (so->weak)
    snprintf(why, sizeof why, "%s", so->weak_why);
  else {
    const double rel = parity_reference_spot_rel(&so->acc[0], &so->acc[1]);
    if (!(rel <= 0x1p-40)) {
      snprintf(why, sizeof why,
               "spot check failed: %lld recomputed state columns differ from it by %.3g (normwise)",
               (long long)so->spot_cols, rel);
    } else {
      *trusted = 1;
      parity_stored_oracle_take(&so->attrs, whole, ref);
      ref->spot_columns = so->spot_cols;
      ref->spot_rel = rel;
      return;
    }
  }
  not_used(so, 1, why, 1);
}
