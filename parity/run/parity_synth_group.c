#include "parity_synth_group.h"

#include "gdn_synth.h"

int parity_synth_group_load(void *ctx, int64_t k0, int64_t k1, gdn_inputs *in, gdn_cotangents *ct, gdn_error *e) {
  const parity_synth_spec *sp = ctx;
  int rc = gdn_synth_generate_heads(in, &sp->shape, k0, k1, &sp->synth, e);
  if (!rc) rc = gdn_synth_segments(in, sp->synth.seed, sp->documents, e); /* per token: every group's the same */
  in->packing = sp->packing;
  if (rc || !ct) return rc;
  if ((rc = gdn_cotangents_alloc(ct, &in->shape, 1, e))) return rc;
  gdn_cotangents_synth_heads(ct, sp->shape.Hv, k0 * (sp->shape.Hv / sp->shape.Hk), sp->synth.seed);
  return GDN_OK;
}
