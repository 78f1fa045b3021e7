/* Gradients with a per-channel dg (gdn_chgrads.h). */
#include "gdn_chgrads.h"

#include "gdn_alloc.h"
#include "gdn_chgate.h"

size_t gdn_chgrads_numel(const gdn_shape *s, gdn_grad_id id) {
  return id == GDN_GRAD_DG ? gdn_chgate_numel(s) : gdn_grads_numel(s, id);
}

int gdn_chgrads_alloc(gdn_grads *g, const gdn_shape *s, gdn_dtype dtype, gdn_error *e) {
  int rc = gdn_grads_alloc(g, s, dtype, e);
  if (rc) return rc;
  gdn_free(g->dg);
  g->dg = gdn_calloc(gdn_chgate_numel(s), sizeof(double), "per-channel gate gradient dg", e);
  if (!g->dg) {
    gdn_grads_clear(g);
    return e ? e->code : GDN_ERR_NOMEM;
  }
  return GDN_OK;
}
