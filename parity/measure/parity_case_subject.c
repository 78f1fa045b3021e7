#include "parity_case_subject.h"

#include <jansson.h>
#include <string.h>

#include "gdn_alloc.h"
#include "parity_upstream.h"

static const char *implementation(const parity_subject_run *s) {
  return s->ext ? json_string_value(json_object_get(s->ext->attrs, "implementation")) : NULL;
}

static int is_scan(const parity_subject_run *s) {
  const char *im = implementation(s);
  return im && !strcmp(im, "scan");
}

/* The case's subject: a judged external output of this case, measured
 * against the reference, not a stock scan; the worst o rel_fro on ties. */
static size_t pick_subject(const input_ctx *x, const parity_case_result *r) {
  size_t w = SIZE_MAX;
  for (size_t i = 0; i < r->n_subjects && i < x->n_subj; i++) {
    const parity_subject_result *m = &r->subjects[i];
    if (!x->subj[i].ext || m->other_case || !x->subj[i].out || is_scan(&x->subj[i]) ||
        !(m->has_vs_ref & (1u << PARITY_T_O)))
      continue;
    if (w == SIZE_MAX || m->vs_ref[PARITY_T_O].rel_fro > r->subjects[w].vs_ref[PARITY_T_O].rel_fro) w = i;
  }
  return w;
}

/* What upstream's own test compares it with: the fixture's stock scan
 * output (implementation "scan", one device), else our baseline. */
static size_t pick_against(const input_ctx *x) {
  for (size_t i = 0; i < x->n_subj; i++)
    if (is_scan(&x->subj[i]) && x->subj[i].out && (!x->subj[i].ext->devices || x->subj[i].ext->devices == 1))
      return i;
  return x->baseline;
}

int parity_case_subject_measure(const input_ctx *x, parity_case_result *r, gdn_error *e) {
  size_t si = pick_subject(x, r);
  if (si == SIZE_MAX) return GDN_OK;
  size_t ai = pick_against(x);
  const parity_subject_run *s = &x->subj[si], *a = &x->subj[ai];
  if (!a->out) return GDN_OK;
  r->subject = si;
  r->subject_against = ai;
  parity_vals xs[PARITY_T_N], rs[PARITY_T_N];
  size_t ns[PARITY_T_N];
  double rf[PARITY_T_N] = {0};
  unsigned mask = 0;
  for (int t = 0; t < PARITY_T_N; t++) {
    const parity_tensor *pt = &parity_tensors[t];
    xs[t] = parity_tensor_get(pt, s->out, s->grads);
    rs[t] = parity_tensor_get(pt, a->out, a->grads);
    ns[t] = (size_t)parity_tensor_numel(pt, &x->in->shape);
    if (!(s->present & a->present & (1u << t))) continue;
    /* an ht of one state per document (parity_docstate.h) has no row-end state to compare */
    if (t == PARITY_T_HT && ((s->ext && s->ext->ht_docs) || (a->ext && a->ext->ht_docs))) continue;
    int64_t dims[4];
    pt->dims(&x->in->shape, dims);
    int rc = parity_metrics_compute_v(xs[t], rs[t], dims, s->out_dtype[t], &r->subject_vs[t], e);
    if (rc) return rc;
    rf[t] = r->subject_vs[t].rel_fro;
    mask |= 1u << t;
  }
  r->subject_vs_mask = mask;
  parity_upstream_evaluate(xs, rs, ns, rf, mask, r->upstream);
  if (!x->ref || !r->profile.n) return GDN_OK;
  if (!(r->subject_profile = gdn_calloc((size_t)r->profile.n, sizeof(double), "subject profile", e)))
    return e ? e->code : GDN_ERR_NOMEM;
  int64_t od[4];
  parity_tensors[PARITY_T_O].dims(&x->in->shape, od);
  parity_profile_o_v(parity_vals_o(s->out), parity_vals_o(&x->ref->out), od, x->block, r->subject_profile);
  return GDN_OK;
}
