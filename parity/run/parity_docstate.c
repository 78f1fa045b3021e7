#include "parity_docstate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_documents.h"
#include "parity_json.h"

int parity_docstate_declared(const parity_external *x) {
  const char *fs = json_string_value(json_object_get(x->attrs, "final_state"));
  return fs && !strcmp(fs, "per_document");
}

/* The tokens [*t0, d->last] of d's row that decide its final state under
 * the packing (parity_docstate.h), and whether it starts from the row's h0. */
static void doc_span(const gdn_inputs *in, const gdn_document *d, int64_t *t0, int *from_h0) {
  const int reset = in->seg && in->packing == GDN_PACKING_RESET;
  *t0 = reset ? d->first : 0;
  *from_h0 = *t0 == 0;
}

/* Token t of row b of `in` into token u of row r of `x` (same heads). */
static void copy_token(gdn_inputs *x, int64_t r, int64_t u, const gdn_inputs *in, int64_t b, int64_t t) {
  const gdn_shape *s = &in->shape, *xs = &x->shape;
  const size_t qk = (size_t)(s->Hk * s->Dk), v = (size_t)(s->Hv * s->Dv), g = (size_t)s->Hv;
  const int64_t src = b * s->T + t, dst = r * xs->T + u;
  memcpy(x->q + dst * (int64_t)qk, in->q + src * (int64_t)qk, qk * sizeof(float));
  memcpy(x->k + dst * (int64_t)qk, in->k + src * (int64_t)qk, qk * sizeof(float));
  memcpy(x->v + dst * (int64_t)v, in->v + src * (int64_t)v, v * sizeof(float));
  memcpy(x->g + dst * (int64_t)g, in->g + src * (int64_t)g, g * sizeof(float));
  memcpy(x->beta + dst * (int64_t)g, in->beta + src * (int64_t)g, g * sizeof(float));
  x->seg[dst] = in->seg ? in->seg[src] : 1;
}

/* The rows' shape: B the documents, T the longest span (at least 1). */
static gdn_shape rows_shape(const gdn_inputs *in, const gdn_document *docs, int64_t n) {
  int64_t T = 1;
  for (int64_t j = 0; j < n; j++) {
    int64_t t0;
    int h0;
    doc_span(in, &docs[j], &t0, &h0);
    if (docs[j].last - t0 + 1 > T) T = docs[j].last - t0 + 1;
  }
  gdn_shape s = in->shape;
  s.B = n, s.T = T;
  return s;
}

/* The N rows whose final states are the documents' (parity_docstate.h):
 * row n is document n's span, then padding (zeroed: segment id 0). */
static int build_rows(const gdn_inputs *in, const gdn_document *docs, int64_t n, gdn_inputs *x, gdn_error *e) {
  const gdn_shape s = rows_shape(in, docs, n);
  int rc;
  if ((rc = gdn_inputs_alloc(x, &s, in->h0 != NULL, e)) || (rc = gdn_inputs_alloc_seg(x, e))) return rc;
  x->l2norm_in_kernel = in->l2norm_in_kernel;
  x->has_scale = in->has_scale;
  x->scale = in->scale;
  x->bf16_mask = in->bf16_mask;
  x->packing = in->packing;
  const size_t st = (size_t)(s.Hv * s.Dk * s.Dv);
  for (int64_t j = 0; j < n; j++) {
    int64_t t0;
    int from_h0;
    doc_span(in, &docs[j], &t0, &from_h0);
    for (int64_t t = t0; t <= docs[j].last; t++) copy_token(x, j, t - t0, in, docs[j].row, t);
    if (in->h0 && from_h0) memcpy(x->h0 + (size_t)j * st, in->h0 + (size_t)docs[j].row * st, st * sizeof(float));
  }
  return GDN_OK;
}

/* The documents of `in` (at least one), owned by the caller. */
static int list_docs(const gdn_inputs *in, gdn_document **docs, int64_t *n, gdn_error *e) {
  int rc = gdn_documents_list(in, docs, n, e);
  if (!rc && !*n) rc = gdn_error_set(e, GDN_ERR_INPUT, "per-document final states: the inputs hold no document");
  return rc;
}

int parity_docstate_rows(const gdn_inputs *in, gdn_inputs *rows, gdn_error *e) {
  gdn_document *docs = NULL;
  int64_t n = 0;
  int rc = list_docs(in, &docs, &n, e);
  if (!rc) rc = build_rows(in, docs, n, rows, e);
  gdn_free(docs);
  return rc;
}

int parity_docstate_shape(const gdn_inputs *in, gdn_shape *rows, gdn_error *e) {
  gdn_document *docs = NULL;
  int64_t n = 0;
  int rc = list_docs(in, &docs, &n, e);
  if (!rc) *rows = rows_shape(in, docs, n);
  gdn_free(docs);
  return rc;
}

int parity_docstate_sets(const gdn_inputs *in, int n_outputs, int *sets, gdn_error *e) {
  gdn_shape r;
  int rc = parity_docstate_shape(in, &r, e);
  if (rc) return rc;
  const double B = (double)in->shape.B, T = (double)in->shape.T, Dk = (double)in->shape.Dk;
  const double x = PARITY_DOCSTATE_SETS * (double)r.B * (double)r.T / (B * T) +
                   (n_outputs + 6.0) * (double)r.B * Dk / (B * (T + Dk));
  *sets = x >= 1e9 ? 1000000000 : (int)ceil(x);
  return GDN_OK;
}

int parity_docstate_model(const gdn_inputs *in, int64_t chunk, const kern_config *cfg, int64_t head0,
                          parity_model *m, gdn_error *e) {
  gdn_inputs x;
  gdn_inputs_init(&x);
  int rc = parity_docstate_rows(in, &x, e);
  if (!rc) rc = parity_model_compute_layouts(m, &x, NULL, chunk, 0x1p-24, cfg, head0, NULL, 0, e);
  if (rc) gdn_error_prefix(e, "the error model of the per-document final states: ");
  gdn_inputs_clear(&x);
  return rc;
}

int parity_docstate_model_apply(const parity_model *m, const parity_reference *ref, const parity_external *x,
                                int64_t chunk, parity_metrics *mt, gdn_error *e) {
  if (!m->s[PARITY_T_HT] || !ref->ht_docs || ref->n_docs != x->n_docs)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "output %s: the per-document model or states are missing", x->name);
  gdn_shape s = ref->out.shape;
  s.B = x->n_docs;
  const parity_tensor *pt = &parity_tensors[PARITY_T_HT];
  int64_t dims[4], bl[4];
  pt->dims(&s, dims);
  pt->blocks(&s, chunk, bl);
  return parity_metrics_model_v(parity_vals_f64(x->ht_docs), parity_vals_f64(ref->ht_docs), m->s[PARITY_T_HT], dims,
                                bl, GDN_DTYPE_F32, mt, e);
}

/* The oracle's per-document states into ref (ht_docs, n_docs, docs_*). */
static int compute_states(const gdn_inputs *in, parity_reference *ref, int bits, gdn_error *e) {
  gdn_inputs x;
  gdn_inputs_init(&x);
  parity_reference alt;
  parity_reference_init(&alt);
  int rc = parity_docstate_rows(in, &x, e);
  if (!rc && !(rc = parity_reference_compute(&alt, &x, ref->tier, bits, e))) {
    ref->ht_docs = alt.out.ht; /* taken: (n, Hv, Dk, Dv) */
    alt.out.ht = NULL;
    ref->n_docs = x.shape.B;
    ref->docs_tier = alt.tier;
    ref->docs_certified_bits = alt.certified_bits;
  }
  if (rc) gdn_error_prefix(e, "the oracle's per-document final states: ");
  parity_reference_clear(&alt);
  gdn_inputs_clear(&x);
  return rc;
}

int parity_docstate_note(int reset, int64_t n_docs, parity_oracle_tier tier, int certified_bits, parity_external *x,
                         gdn_error *e) {
  snprintf(x->final_note, sizeof x->final_note,
           "ht judged per_document (%" PRId64 " documents): each against the oracle's state at its document's "
           "last token (%s; %s oracle, %d bits certified), by every rule that judges ht",
           n_docs,
           reset ? "packing reset: each document from zero, the row's first from h0"
                 : "packing leak: the state carried from the row's start",
           parity_oracle_tier_name(tier), certified_bits);
  if (parity_json_set(x->attrs, "final_state_judged", json_string(x->final_note)))
    return gdn_error_set(e, GDN_ERR_NOMEM, "out of memory recording the final state of output %s", x->name);
  return GDN_OK;
}

/* The count check (the loader makes it too), then the note. */
static int note_one(const gdn_inputs *in, const parity_reference *ref, parity_external *x, gdn_error *e) {
  if (x->n_docs != ref->n_docs)
    return gdn_error_set(e, GDN_ERR_INPUT,
                         "/outputs/%s/ht holds %" PRId64 " states; the output declares final_state per_document "
                         "and the segment ids hold %" PRId64 " documents",
                         x->name, x->n_docs, ref->n_docs);
  const int reset = in->seg && in->packing == GDN_PACKING_RESET;
  return parity_docstate_note(reset, ref->n_docs, ref->docs_tier, ref->docs_certified_bits, x, e);
}

int parity_docstate_apply(const gdn_inputs *in, parity_reference *ref, int bits, parity_external *ext, size_t n,
                          gdn_error *e) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += parity_docstate_declared(&ext[i]) && ext[i].ht_docs;
  if (!k) return GDN_OK;
  if (!ref || ref->tier == PARITY_ORACLE_NONE)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "per-document final states need the reference");
  int rc = ref->ht_docs ? GDN_OK : compute_states(in, ref, bits, e);
  for (size_t i = 0; !rc && i < n; i++)
    if (parity_docstate_declared(&ext[i]) && ext[i].ht_docs) rc = note_one(in, ref, &ext[i], e);
  return rc;
}
