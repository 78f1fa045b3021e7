/* A fixture's stored gradient oracle (parity_stored_grads.h). */
#include "parity_stored_grads.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fix_slab.h"
#include "gdn_alloc.h"
#include "gdn_chgrads.h"
#include "oracle_kda_vjp.h"
#include "oracle_vjp.h"
#include "parity_metrics.h"

int parity_stored_grads_usable(const fix_oracle *orc, char *why, size_t n) {
  if (!orc->has_grads) return 0;
  if (!orc->grads_fresh) {
    snprintf(why, n, "stale: computed for other cotangents or another problem (grad_problem_sha256 differs)");
    return 0;
  }
  if (orc->grads_certified_bits < PARITY_STORED_GRADS_MIN_BITS) {
    snprintf(why, n, "certified to %lld bits, under the %d a binary64 reference needs",
             (long long)orc->grads_certified_bits, PARITY_STORED_GRADS_MIN_BITS);
    return 0;
  }
  return 1;
}

/* Where each gradient's heads lie, in gdn_grad_id order. */
static const fix_axes grad_axes[GDN_GRADS_N] = {FIX_AXES_QK,   FIX_AXES_QK,   FIX_AXES_V,
                                                FIX_AXES_GATE, FIX_AXES_GATE, FIX_AXES_STATE};

/* A per-channel array's (B, T, Hv, Dk) slab: the gate layout's, each
 * head's Dk channels moved as one element of Dk es bytes. */
static void extract_channels(const gdn_shape *s, const fix_slab *sl, const void *x, void *dst, size_t es) {
  fix_slab_extract(s, sl, FIX_AXES_GATE, x, dst, (size_t)s->Dk * es);
}

/* Key head sl of in, its gate (NULL: GDN's) and ct into sub, sgate and
 * sct (allocated here). */
static int slice(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct, const fix_slab *sl,
                 gdn_inputs *sub, gdn_chgate *sgate, gdn_cotangents *sct, gdn_error *e) {
  const gdn_shape *s = &in->shape, gs = fix_slab_shape(s, sl);
  int rc = gdn_inputs_alloc(sub, &gs, in->h0 != NULL, e);
  if (!rc) rc = gdn_inputs_copy_settings(sub, in, e);
  if (!rc) rc = gdn_cotangents_alloc(sct, &gs, ct->dht != NULL, e);
  if (!rc && gate) rc = gdn_chgate_alloc(sgate, &gs, e);
  if (rc) return rc;
  if (gate) extract_channels(s, sl, gate->g, sgate->g, sizeof *gate->g);
  fix_slab_extract(s, sl, FIX_AXES_QK, in->q, sub->q, 4);
  fix_slab_extract(s, sl, FIX_AXES_QK, in->k, sub->k, 4);
  fix_slab_extract(s, sl, FIX_AXES_V, in->v, sub->v, 4);
  fix_slab_extract(s, sl, FIX_AXES_GATE, in->g, sub->g, 4);
  fix_slab_extract(s, sl, FIX_AXES_GATE, in->beta, sub->beta, 4);
  if (in->h0) fix_slab_extract(s, sl, FIX_AXES_STATE, in->h0, sub->h0, 4);
  fix_slab_extract(s, sl, FIX_AXES_V, ct->d_o, sct->d_o, 4);
  if (ct->dht) fix_slab_extract(s, sl, FIX_AXES_STATE, ct->dht, sct->dht, 4);
  return GDN_OK;
}

/* Elements of tensor id (pc: dg per channel, gdn_chgrads.h). */
static size_t numel(const gdn_shape *s, int pc, gdn_grad_id id) {
  return pc ? gdn_chgrads_numel(s, id) : gdn_grads_numel(s, id);
}

/* The largest normwise difference of stored's slab sl from r (pc: dg per
 * channel). */
static int compare(const gdn_shape *s, int pc, const fix_slab *sl, const gdn_grads *stored, const gdn_grads *r,
                   double *rel, gdn_error *e) {
  const gdn_shape gs = fix_slab_shape(s, sl);
  size_t most = 0;
  for (int id = 0; id < GDN_GRADS_N; id++)
    if (numel(&gs, pc, (gdn_grad_id)id) > most) most = numel(&gs, pc, (gdn_grad_id)id);
  parity_rel_acc *acc = gdn_malloc(sizeof *acc, "spot check sums", e);
  double *x = acc ? gdn_malloc(most * sizeof *x, "spot check slab", e) : NULL;
  int rc = acc && x ? GDN_OK : GDN_ERR_NOMEM;
  *rel = 0;
  for (int id = 0; id < GDN_GRADS_N && !rc; id++) {
    const double *src = gdn_grads_tensor_c(stored, (gdn_grad_id)id);
    if (pc && id == GDN_GRAD_DG) extract_channels(s, sl, src, x, 8);
    else fix_slab_extract(s, sl, grad_axes[id], src, x, 8);
    parity_rel_acc_init(acc);
    parity_rel_acc_add(acc, x, gdn_grads_tensor_c(r, (gdn_grad_id)id), numel(&gs, pc, (gdn_grad_id)id));
    const double v = parity_rel_acc_value(acc);
    if (isnan(v) || v > *rel) *rel = isnan(v) ? INFINITY : v;
  }
  gdn_free(x);
  gdn_free(acc);
  return rc;
}

int parity_stored_grads_spot(const gdn_inputs *in, const gdn_chgate *gate, const gdn_cotangents *ct,
                             const gdn_grads *stored, int64_t kh, double *rel, gdn_error *e) {
  const fix_slab sl = {kh, kh + 1};
  gdn_inputs sub;
  gdn_chgate sgate;
  gdn_cotangents sct;
  gdn_grads r;
  gdn_inputs_init(&sub);
  gdn_chgate_init(&sgate);
  gdn_cotangents_init(&sct);
  gdn_grads_init(&r);
  int rc = slice(in, gate, ct, &sl, &sub, &sgate, &sct, e);
  if (!rc) {
    oracle_vjp_dd_config cfg;
    oracle_vjp_dd_config_init(&cfg);
    cfg.sample_columns = 0; /* the dd values only: the check is against the stored certified values */
    oracle_vjp_dd_certificate cert;
    rc = gate ? oracle_kda_vjp_dd(&sub, &sgate, &sct, &cfg, &r, &cert, e)
              : oracle_vjp_dd(&sub, &sct, &cfg, &r, &cert, e);
  }
  if (!rc) rc = compare(&in->shape, gate != NULL, &sl, stored, &r, rel, e);
  gdn_grads_clear(&r);
  gdn_cotangents_clear(&sct);
  gdn_chgate_clear(&sgate);
  gdn_inputs_clear(&sub);
  return rc;
}

void parity_stored_grads_take(const fix_oracle *orc, parity_reference *ref) {
  ref->has_grads = 1;
  ref->grads_from_fixture = 1;
  ref->grad_tier = orc->grads_tier_dd ? PARITY_ORACLE_DD : PARITY_ORACLE_MPFR;
  ref->grad_certified_bits = (int)orc->grads_certified_bits;
  ref->grad_normwise_bits = (int)orc->grads_normwise_bits;
  snprintf(ref->grad_sha256, sizeof ref->grad_sha256, "%s", orc->grad_problem_sha256);
}

void parity_stored_grads_note(char *note, size_t n, const char *why) {
  snprintf(note, n, "stored /oracle/grads not used: %s; recomputed", why);
}
