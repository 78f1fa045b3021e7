#include "parity_padding.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gdn_alloc.h"
#include "gdn_shape.h"
#include "parity_json.h"

int64_t parity_padding_tokens(const gdn_inputs *in) {
  if (!in->seg) return 0;
  int64_t n = 0;
  for (int64_t i = 0; i < in->shape.B * in->shape.T; i++) n += in->seg[i] == 0;
  return n;
}

int64_t parity_padding_rows_ending(const gdn_inputs *in) {
  if (!in->seg) return 0;
  int64_t n = 0;
  for (int64_t b = 0; b < in->shape.B; b++) n += in->seg[(b + 1) * in->shape.T - 1] == 0;
  return n;
}

/* The output's own copy of its outputs with o at every padding token
 * replaced by the reference's (ht copied as it is). */
static int mask_o(const gdn_inputs *in, const double *ref_o, parity_external *x, gdn_error *e) {
  const gdn_outputs *src = x->out;
  if (!src->o || !ref_o)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "output %s: o or the reference's o is not held as binary64",
                         x->name);
  gdn_outputs *m = gdn_malloc(sizeof *m, "an output masked at padding", e);
  if (!m) return GDN_ERR_NOMEM;
  gdn_outputs_init(m);
  int rc = gdn_outputs_alloc(m, &src->shape, src->dtype, e);
  if (rc) {
    gdn_free(m);
    return rc;
  }
  const size_t row = (size_t)(in->shape.Hv * in->shape.Dv), nt = (size_t)(in->shape.B * in->shape.T);
  for (size_t t = 0; t < nt; t++)
    memcpy(m->o + t * row, (in->seg[t] == 0 ? ref_o : src->o) + t * row, row * sizeof(double));
  if (src->ht) memcpy(m->ht, src->ht, (size_t)gdn_shape_numel_state(&src->shape) * sizeof(double));
  else {
    gdn_free(m->ht);
    m->ht = NULL;
  }
  x->owned_out = m;
  x->out = m;
  return GDN_OK;
}

static const char *attr(const parity_external *x, const char *k) {
  return json_string_value(json_object_get(x->attrs, k));
}

/* The row of the table (parity_padding.h) for one output. */
static int apply_one(const gdn_inputs *in, const parity_reference *ref, parity_external *x, int64_t npad,
                     int64_t rows_end, gdn_error *e) { /* ref NULL: the attrs only, o left unmasked */
  const int zeroed = attr(x, "padding") != NULL, last_doc = attr(x, "final_state") != NULL;
  char pnote[200], fnote[240];
  int rc = GDN_OK;
  if (zeroed) {
    snprintf(pnote, sizeof pnote, "judged at the %" PRId64 " padding tokens: the output declares padding zeroed "
             "(the oracle's k = v = g = 0)", npad);
  } else {
    snprintf(pnote, sizeof pnote, "not judged at the %" PRId64 " padding tokens (segment id 0): the output "
             "declares no padding convention (padding zeroed would judge them)", npad);
    rc = ref ? mask_o(in, ref->out.o, x, e) : GDN_OK;
  }
  if (!x->has_ht) snprintf(fnote, sizeof fnote, "no ht given");
  else if (zeroed)
    snprintf(fnote, sizeof fnote, "ht judged as the state after each row's last token, which is the end of its "
             "last document (padding zeroed declared)");
  else if (last_doc)
    snprintf(fnote, sizeof fnote, "ht judged as the state at the end of each row's last document (final_state "
             "last_document declared)");
  else if (!rows_end)
    snprintf(fnote, sizeof fnote, "ht judged as the state at the end of each row's last document (no row ends "
             "in padding)");
  else {
    snprintf(fnote, sizeof fnote, "ht not judged: %" PRId64 " row(s) end in padding and the output declares "
             "neither padding zeroed nor final_state last_document, so which state it holds is unknown",
             rows_end);
    x->has_ht = 0;
  }
  snprintf(x->final_note, sizeof x->final_note, "%s", fnote);
  if (!rc && (parity_json_set(x->attrs, "padding_judged", json_string(pnote)) ||
              parity_json_set(x->attrs, "final_state_judged", json_string(fnote))))
    rc = gdn_error_set(e, GDN_ERR_NOMEM, "out of memory recording the padding of output %s", x->name);
  return rc;
}

int parity_padding_apply(const gdn_inputs *in, const parity_reference *ref, parity_external *ext, size_t n,
                         gdn_error *e) {
  const int64_t npad = parity_padding_tokens(in);
  if (!npad || !n) return GDN_OK;
  if (!ref || !ref->out.o)
    return gdn_error_set(e, GDN_ERR_INTERNAL, "judging outputs at padding tokens needs the reference's o");
  const int64_t rows_end = parity_padding_rows_ending(in);
  int rc = GDN_OK;
  for (size_t i = 0; !rc && i < n; i++) rc = apply_one(in, ref, &ext[i], npad, rows_end, e);
  return rc;
}

int parity_padding_note(const gdn_inputs *in, parity_external *ext, size_t n, gdn_error *e) {
  const int64_t npad = parity_padding_tokens(in);
  if (!npad || !n) return GDN_OK;
  const int64_t rows_end = parity_padding_rows_ending(in);
  int rc = GDN_OK;
  for (size_t i = 0; !rc && i < n; i++) rc = apply_one(in, NULL, &ext[i], npad, rows_end, e);
  return rc;
}

int parity_padding_masks(const parity_external *x) { return json_object_get(x->attrs, "padding") == NULL; }
