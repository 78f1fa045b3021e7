#include "parity_stream_docstate.h"

#include <inttypes.h>
#include <string.h>

#include "gdn_alloc.h"
#include "parity_dist.h"
#include "parity_docstate.h"
#include "parity_kappa_model.h"
#include "parity_tensor.h"

/* A group's oracle as its owner found it (parity_sweep_stream.c's ref_head). */
typedef struct docs_head {
  int rc;
  gdn_error err;
  int tier, cap;
  double seconds;
} docs_head;

void parity_stream_docstate_init(parity_stream_docstate *d) {
  memset(d, 0, sizeof *d);
  parity_spill_tensor_init(&d->ref);
  parity_spill_tensor_init(&d->model);
  parity_group_oracle_init(&d->go, &d->rows, PARITY_ORACLE_NONE, 0, 0);
}

static void tallies_clear(parity_stream_docstate *d) {
  for (int64_t g = 0; d->gt && g < d->p->n_groups; g++) parity_group_tally_clear(&d->gt[g]);
}

void parity_stream_docstate_clear(parity_stream_docstate *d) {
  tallies_clear(d);
  gdn_free(d->gt);
  gdn_free(d->head);
  gdn_free(d->counts);
  parity_spill_tensor_close(&d->ref);
  parity_spill_tensor_close(&d->model);
  parity_group_oracle_clear(&d->go);
  parity_stream_docstate_init(d);
}

int parity_stream_docstate_open(parity_stream_docstate *d, int on, const gdn_inputs *seg_in,
                                const parity_stream_plan *p, gdn_error *e) {
  parity_stream_docstate_clear(d);
  d->p = p;
  if (!on) return GDN_OK;
  gdn_inputs probe = *seg_in; /* the whole shape's heads; only the ids and the packing are read */
  probe.shape = p->whole;
  int rc = parity_docstate_shape(&probe, &d->rows, e);
  if (rc) return rc;
  d->on = 1;
  d->reset = seg_in->seg && seg_in->packing == GDN_PACKING_RESET;
  d->counts = gdn_calloc((size_t)p->n_groups, sizeof *d->counts, "per-document states' sizes", e);
  d->gt = d->counts ? gdn_calloc((size_t)p->n_groups, sizeof *d->gt, "per-document tallies", e) : NULL;
  d->head = d->gt ? gdn_calloc((size_t)p->n_groups, sizeof *d->head, "per-document oracle heads", e) : NULL;
  if (!d->head) return e ? e->code : GDN_ERR_NOMEM;
  for (int64_t g = 0; g < p->n_groups; g++) {
    int64_t k0, k1;
    gdn_shape gs;
    parity_stream_group(p, g, &k0, &k1, &gs);
    gs.B = d->rows.B;
    d->counts[g] = parity_tensor_numel(&parity_tensors[PARITY_T_HT], &gs);
    if ((size_t)d->counts[g] > d->most) d->most = (size_t)d->counts[g];
    parity_group_tally_init(&d->gt[g]);
  }
  return GDN_OK;
}

void parity_stream_docstate_begin(parity_stream_docstate *d, parity_oracle_tier tier, int bits) {
  if (!d->on) return;
  tallies_clear(d);
  memset(d->head, 0, (size_t)d->p->n_groups * sizeof *d->head);
  parity_group_oracle_clear(&d->go);
  parity_group_oracle_init(&d->go, &d->rows, tier, bits, 0);
  parity_spill_tensor_close(&d->ref);
  parity_spill_tensor_init(&d->ref); /* opened by a group's owner, its error exchanged (no rank returns alone) */
}

void parity_stream_docstate_group(parity_stream_docstate *d, int64_t g, const gdn_inputs *in, int64_t k0) {
  if (!d->on) return;
  docs_head *hd = &d->head[g];
  gdn_inputs x;
  gdn_inputs_init(&x);
  parity_reference r;
  parity_reference_init(&r);
  hd->rc = parity_docstate_rows(in, &x, &hd->err);
  if (!hd->rc) hd->rc = parity_group_oracle_compute(&d->go, &x, k0, NULL, &r, &d->gt[g], &hd->err);
  if (!hd->rc && d->ref.f.fd < 0)
    hd->rc = parity_spill_tensor_open(&d->ref, "per-document states", d->counts, d->p->n_groups, &hd->err);
  if (!hd->rc) hd->rc = parity_spill_tensor_write(&d->ref, g, parity_vals_f64(r.out.ht), &hd->err);
  if (hd->rc) gdn_error_prefix(&hd->err, "the oracle's per-document final states: ");
  hd->tier = d->gt[g].fwd.tier, hd->cap = d->gt[g].fwd.cap;
  hd->seconds = d->gt[g].seconds[0];
  parity_reference_clear(&r);
  gdn_inputs_clear(&x);
}

/* Group g's head and tally from its owner to every rank, folded. */
static int share_one(parity_stream_docstate *d, int64_t g, gdn_error *e) {
  const int owner = (int)(g % parity_dist_size());
  docs_head hd = d->head[g];
  int rc = parity_dist_size() > 1 ? parity_dist_bcast(&hd, sizeof hd, owner, e) : GDN_OK;
  if (!rc && hd.rc) *e = hd.err, rc = hd.rc;
  oracle_tally *t = &d->gt[g].fwd;
  if (!rc && hd.tier && parity_dist_size() > 1) {
    if (parity_dist_rank() != owner) rc = oracle_tally_alloc(t, hd.tier, hd.cap, 0, e);
    if (!rc) rc = parity_dist_bcast(t->v, t->n * sizeof *t->v, owner, e);
  }
  d->gt[g].seconds[0] = hd.seconds;
  return rc ? rc : parity_group_oracle_fold(&d->go, &d->gt[g], e);
}

int parity_stream_docstate_finish(parity_stream_docstate *d, gdn_error *e) {
  if (!d->on) return GDN_OK;
  int rc = GDN_OK;
  for (int64_t g = 0; g < d->p->n_groups && !rc; g++) rc = share_one(d, g, e);
  parity_reference r;
  parity_reference_init(&r);
  if (!rc) rc = parity_group_oracle_finish(&d->go, &r, e);
  d->tier = r.tier;
  d->certified_bits = r.certified_bits;
  parity_reference_clear(&r);
  return rc;
}

int parity_stream_docstate_model(parity_stream_docstate *d, int64_t g, const gdn_inputs *in, int64_t k0,
                                 int64_t chunk, const kern_config *cfg, gdn_error *e) {
  if (!d->on) return GDN_OK;
  parity_model m;
  parity_model_init(&m);
  const int64_t v0 = k0 * (d->p->whole.Hv / d->p->whole.Hk);
  int rc = parity_docstate_model(in, chunk, cfg, v0, &m, e);
  if (!rc && d->model.f.fd < 0) rc = parity_spill_tensor_open(&d->model, "per-document model", d->counts, d->p->n_groups, e);
  if (!rc) rc = parity_spill_tensor_write(&d->model, g, parity_vals_f64(m.s[PARITY_T_HT]), e);
  parity_model_clear(&m);
  return rc;
}
