#include "gdn_outputs.h"

#include <string.h>

#include "gdn_alloc.h"

void gdn_outputs_init(gdn_outputs *out) { memset(out, 0, sizeof *out); }

void gdn_outputs_clear(gdn_outputs *out) {
  int f32_ok = out->f32_ok;
  const double *code_base = out->code_base;
  gdn_free(out->o);
  gdn_free(out->o32);
  gdn_ocode_clear(&out->oc);
  gdn_free(out->ht);
  gdn_outputs_init(out);
  out->f32_ok = f32_ok;
  out->code_base = code_base;
}

int gdn_outputs_alloc(gdn_outputs *out, const gdn_shape *s, gdn_dtype dtype, gdn_error *e) {
  int rc = gdn_shape_validate(s, e);
  if (rc) return rc;
  gdn_outputs_clear(out);
  if (!(out->o = gdn_calloc(gdn_shape_numel_v(s), sizeof(double), "output o", e)) ||
      !(out->ht = gdn_calloc(gdn_shape_numel_state(s), sizeof(double), "output ht", e))) {
    gdn_outputs_clear(out);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  out->shape = *s;
  out->dtype = dtype;
  return GDN_OK;
}
